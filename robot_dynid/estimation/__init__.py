"""Estimation: from recordings and a model structure to identified parameters.

- :mod:`~robot_dynid.estimation.estimators`: OLS, WLS, the bounded-memory accumulator, RLS, and
  the registry of methods (``ESTIMATORS``).
- :mod:`~robot_dynid.estimation.identification`: the pipeline shared by ``robot-dynid identify``
  and the identifier node (settings, several recordings, parallel filtering, offsets).
- :mod:`~robot_dynid.estimation.streaming`: the same on a live stream, stage by stage, with its
  quality gate.
- :mod:`~robot_dynid.estimation.physical_consistency`: consistent standard parameters (a
  semidefinite program) and the plausibility check.
- :mod:`~robot_dynid.estimation.metrics`, :mod:`~robot_dynid.estimation.validation`: fit and
  held-out metrics.
"""
