"""``stribeck_cbrt`` (linearised Stribeck): ``fc sgn(v) + fv v + fs cbrt(v)``; ``fs`` is a correction of either
sign (free in the physical-consistency constraints)."""
import numpy as np

from robot_dynid.model.friction_models import Coefficient, FrictionShape
from robot_dynid.model.friction_models.coulomb_viscous import COULOMB, VISCOUS

__all__ = ["CUBE_ROOT", "SHAPE"]

CUBE_ROOT = Coefficient("fs", "N m (s/rad)^(1/3)", False, lambda torque, velocity: -0.01 * torque / np.cbrt(velocity))

SHAPE = FrictionShape("stribeck_cbrt", "fc sgn(v) + fv v + fs cbrt(v)", (COULOMB, VISCOUS, CUBE_ROOT),
                      lambda model, v, scale, a: [np.sign(v), v, np.cbrt(v)], mujoco=("fc", "fv", ()))
