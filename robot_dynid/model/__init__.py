"""The robot and its dynamic model.

- :mod:`~robot_dynid.model.robot_description`: a robot from a DH table (YAML) or a URDF
  (:mod:`~robot_dynid.model.urdf`); joint names, limits, gravity, drives, inertial data.
- :mod:`~robot_dynid.model.regressor`: ``tau = Y(q, qd, qdd) @ pi`` (the compiled kernel).
- :mod:`~robot_dynid.model.friction`, :mod:`~robot_dynid.model.friction_drift`: friction models as
  regressor columns; friction over a warm-up.
- :mod:`~robot_dynid.model.base_parameters`: the identifiable combinations.
- :mod:`~robot_dynid.model.dynamic_model`: an identified model and its YAML artifact;
  :mod:`~robot_dynid.model.link_inertials` its links' mass, centre of mass and inertia;
  :mod:`~robot_dynid.model.urdf_export` a URDF of them.
- :mod:`~robot_dynid.model.feedforward`: feed-forward torques for requests by joint name.
"""
