"""Hydraulic actuators: :mod:`~robot_dynid.hydraulics.cylinder` (a cylinder's model, its RLS
identification and simulation)."""
