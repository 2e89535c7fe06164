"""``tanh``: ``fc tanh(v / vs) + fv v``, a smooth Coulomb level (``vs = stribeck_velocity`` [rad/s]).

The worked example of docs/friction_models.md: saved as ``robot_dynid/model/friction_models/tanh.py`` it is one
more model everywhere (``--friction tanh``, model files, the feed-forward node, consistency bounds, the simulator);
kept here, a test registers it (``friction_models.register(SHAPE)``) and checks that it is.
"""
import numpy as np

from robot_dynid.model.friction_models import Coefficient, FrictionShape

SHAPE = FrictionShape(
    "tanh", "fc tanh(v / vs) + fv v",
    (Coefficient("fc", "N m", True, lambda torque, velocity: 0.03 * torque),
     Coefficient("fv", "N m s/rad", True, lambda torque, velocity: 0.03 * torque / velocity)),
    lambda model, v, scale, a: [np.tanh(v / (model.stribeck_velocity * scale)), v],
    constants=("stribeck_velocity",))
