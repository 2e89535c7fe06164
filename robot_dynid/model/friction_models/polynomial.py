"""``polynomial``: ``f1 sgn(v) + f2 v + f3 v|v| + f4 v^3``; ``f3``, ``f4`` are shape terms, often negative (free in
the physical-consistency constraints)."""
import numpy as np

from robot_dynid.model.friction_models import Coefficient, FrictionShape

__all__ = ["SHAPE"]

SHAPE = FrictionShape(
    "polynomial", "f1 sgn(v) + f2 v + f3 v|v| + f4 v^3",
    (Coefficient("f1", "N m", True, lambda torque, velocity: 0.03 * torque),
     Coefficient("f2", "N m s/rad", True, lambda torque, velocity: 0.03 * torque / velocity),
     Coefficient("f3", "N m s^2/rad^2", False, lambda torque, velocity: -0.005 * torque / velocity**2),
     Coefficient("f4", "N m s^3/rad^3", False, lambda torque, velocity: 0.002 * torque / velocity**3)),
    lambda model, v, scale, a: [np.sign(v), v, v * np.abs(v), v**3], mujoco=("f1", "f2", ()))
