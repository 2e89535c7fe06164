"""Reports of identified models: :mod:`~robot_dynid.reports.tables` (the text tables the CLI prints)."""
