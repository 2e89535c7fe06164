"""The arm the friction-tracking tests follow: the model of a simulation's parameters and the same parameters
with every viscous coefficient stepped (wear, warming)."""
import numpy as np

from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel


def tracked_model(robot, regressor, parameters, noise, **metrics) -> DynamicModel:
    """The model of standard ``parameters`` of ``regressor``'s columns: std ``1e-3 |value| + 1e-6``, residual
    RMS ``noise`` [N m] at every joint, ``metrics`` beside it."""
    base = compute_base_parameters(regressor)
    values = base.projection @ parameters
    return DynamicModel(robot, regressor.friction, False, False, base, values, 1e-3 * np.abs(values) + 1e-6,
                        metrics={"residual_rms": dict.fromkeys(robot.joint_names, noise), **metrics})


def stepped_viscous(regressor, parameters, factor):
    """(``parameters`` with every viscous coefficient times ``factor``, their indices) of a coulomb_viscous
    ``regressor`` (columns fc1, fv1, fc2, fv2, ...)."""
    viscous = np.arange(regressor.slices["friction"].start + 1, regressor.slices["friction"].stop, 2)
    stepped = np.array(parameters, dtype=float)
    stepped[viscous] *= factor
    return stepped, viscous
