"""``coulomb_viscous_lead`` (friction that reverses ahead of the velocity): ``fc sgn(v + tau_r a) + fv v``.

``a = qdd`` [rad/s^2], ``tau_r = reversal_lead`` [s]: the Coulomb sign is that of the velocity ``tau_r`` ahead.
When a joint decelerates towards a reversal its friction flips before the velocity crosses zero, as stick-slip
does and as MuJoCo's friction loss does (its constraint flips at ``v + a / b = 0``, ``1 / b = 9.5 ms`` with its
default solver settings); with ``tau_r = 0`` it is ``coulomb_viscous``. docs/simulation.md measures the models
on MuJoCo.
"""
import numpy as np

from robot_dynid.model.friction_models import FrictionShape
from robot_dynid.model.friction_models.coulomb_viscous import COULOMB, VISCOUS

__all__ = ["SHAPE"]

SHAPE = FrictionShape("coulomb_viscous_lead", "fc sgn(v + tau_r a) + fv v", (COULOMB, VISCOUS),
                      lambda model, v, scale, a: [np.sign(v + model.reversal_lead * a), v],
                      constants=("reversal_lead",), compiled="sign_viscous_lead", mujoco=("fc", "fv", ()))
