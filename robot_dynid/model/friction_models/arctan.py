"""``arctan`` (smooth static model): with ``s_k(v) = (2/pi) atan(k v)`` and ``s_s(v) = (2/pi) atan(v / vs)``,
``fs s_k(v) + (fc - fs) s_s(v) + fv v = fc s_s(v) + fv v + fs (s_k(v) - s_s(v))``.

The columns are therefore ``(s_s, v, s_k - s_s)`` for ``(fc, fv, fs)``: ``fs`` is the breakaway (static) level
reached just above zero speed, ``fc`` the Coulomb level reached for ``|v| >> vs``. ``k = sign_sharpness`` [s/rad],
``vs = stribeck_velocity`` [rad/s].
"""
import math

import numpy as np

from robot_dynid.model.friction_models import Coefficient, FrictionShape
from robot_dynid.model.friction_models.coulomb_viscous import COULOMB, VISCOUS

__all__ = ["STATIC", "SHAPE"]

STATIC = Coefficient("fs", "N m", True, lambda torque, velocity: 1.3 * 0.03 * torque)


def _columns(model, v, scale, a):
    sharp = (2.0 / math.pi) * np.arctan(model.sign_sharpness / scale * v)
    stribeck = (2.0 / math.pi) * np.arctan(v / (model.stribeck_velocity * scale))
    return [stribeck, v, sharp - stribeck]


SHAPE = FrictionShape("arctan", "fc s_s(v) + fv v + fs (s_k(v) - s_s(v))", (COULOMB, VISCOUS, STATIC), _columns,
                      constants=("sign_sharpness", "stribeck_velocity"), mujoco=("fc", "fv", ("fs",)))
