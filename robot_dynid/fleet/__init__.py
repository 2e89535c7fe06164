"""Fleets: many robots' recordings identified as Dask tasks, kept in a database, watched for change.

- :mod:`~robot_dynid.fleet.manifest`: the manifest (which recording, which robot, when);
- :mod:`~robot_dynid.fleet.tasks`: what a worker runs (fingerprint, identification, report);
- :mod:`~robot_dynid.fleet.run`: the client side: clusters, submitting, reusing, storing;
- :mod:`~robot_dynid.fleet.store`: the SQLite results database;
- :mod:`~robot_dynid.fleet.changes`: change detection with the multiple comparisons controlled;
- :mod:`~robot_dynid.fleet.page`: the fleet page.

Above ``estimation`` and ``reports``; only ``cli`` imports it. Dask is imported by ``run`` only.
"""
