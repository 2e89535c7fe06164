"""The coupled-wrist ER3A (config/robots/er3a_coupled_wrist.yaml) as the tests write its motor side: the
transmission's rows written out by hand from the robot file (qm6 = 50 (q5 + q6), ...), never through
Transmission's own arithmetic, so that a test of the reading or the identification checks it."""
import numpy as np

from robot_dynid.package_files import find_package_file

COUPLED = find_package_file("config", "robots", "er3a_coupled_wrist.yaml")
MOTORS = ("m1", "m2", "m3", "m4", "m5", "m6")
T0_NS = 1_700_000_000_000_000_000
"""[ns] the first stamp of the tests' bags."""


def motor_from_joint(x):
    """Motor-side positions, velocities or accelerations of joint-side ones (N, 6), row by row of the robot file."""
    x1, x2, x3, x4, x5, x6 = x.T
    return np.column_stack([121 * x1, 121 * x2, 101 * x3, 75.48 * x4, 81 * x5, 50 * (x5 + x6)])


def joint_torques(taum):
    """tau = T^T taum written out: motor 6 loads joints 5 and 6."""
    m1, m2, m3, m4, m5, m6 = taum.T
    return np.column_stack([121 * m1, 121 * m2, 101 * m3, 75.48 * m4, 81 * m5 + 50 * m6, 50 * m6])


def motor_torques(tau):
    """taum with tau = T^T taum, solved by hand from the last row up."""
    tau1, tau2, tau3, tau4, tau5, tau6 = tau.T
    return np.column_stack([tau1 / 121, tau2 / 121, tau3 / 101, tau4 / 75.48, (tau5 - tau6) / 81, tau6 / 50])
