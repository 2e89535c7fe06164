"""``coulomb_viscous``: ``fc sgn(v) + fv v`` (``sgn(0) = 0``)."""
import numpy as np

from robot_dynid.model.friction_models import Coefficient, FrictionShape

__all__ = ["COULOMB", "VISCOUS", "SHAPE"]

COULOMB = Coefficient("fc", "N m", True, lambda torque, velocity: 0.03 * torque)
VISCOUS = Coefficient("fv", "N m s/rad", True, lambda torque, velocity: 0.03 * torque / velocity)

SHAPE = FrictionShape("coulomb_viscous", "fc sgn(v) + fv v", (COULOMB, VISCOUS),
                      lambda model, v, scale, a: [np.sign(v), v],
                      compiled="sign_viscous", mujoco=("fc", "fv", ()))
