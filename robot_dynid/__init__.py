"""robot_dynid: dynamic identification of robot arms and hydraulic actuators.

Symbols used across the package (SI units, radians):

- ``n``: number of actuated joints; ``N``: number of samples.
- ``q`` (N, n) joint positions [rad]; ``qd`` (N, n) velocities [rad/s];
  ``qdd`` (N, n) accelerations [rad/s^2]; ``tau`` (N, n) joint torques [N m].
- ``Y`` regressor, ``tau = Y(q, qd, qdd) @ pi``. Batches are (N, n, p); when stacked
  to a 2-D system the order is sample-major: row ``k * n + j`` is sample k, joint j.
- Inertial parameters per link, in pinocchio's order, about the link frame origin and
  expressed in the link frame: ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
  ([kg, kg m, kg m, kg m, kg m^2 x 6]).

The core modules (everything outside :mod:`robot_dynid.nodes`) import no ROS package;
the nodes are thin adapters from messages and parameters to core calls.
"""
# The ROS build installs the generated robot_dynid.msg / robot_dynid.srv next to these
# modules; extend_path also finds them when this package is imported from a source tree.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

__version__ = "0.1.0"
