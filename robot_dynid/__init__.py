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

What most scripts need is here (:data:`API`), each name taken from the module that is its home on first use, so
``import robot_dynid`` stays light::

    import robot_dynid as rd
    model = rd.DynamicModel.load("model.yaml")
    tau = rd.compute_feedforward(model, model.joint_names, q, qd, qdd)   # flat N x n arrays [rad, rad/s, rad/s^2]

Reading a file as the command line does (checks, derivatives, stages): :func:`robot_dynid.recordings.pipeline.run`.
"""
# The ROS build installs the generated robot_dynid.msg / robot_dynid.srv next to these
# modules; extend_path also finds them when this package is imported from a source tree.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

__version__ = "0.1.0"

#: Public name -> the module that is its home; ``robot_dynid.NAME`` is that module's ``NAME``.
API = {
    "load_robot": "robot_dynid.model.robot_loader",
    "RobotDescription": "robot_dynid.model.robot_description",
    "friction_model": "robot_dynid.model.friction",
    "Regressor": "robot_dynid.model.regressor",
    "compute_base_parameters": "robot_dynid.model.base_parameters",
    "DynamicModel": "robot_dynid.model.dynamic_model",
    "Payload": "robot_dynid.model.payload",
    "load_payload": "robot_dynid.model.payload",
    "compute_feedforward": "robot_dynid.model.feedforward",
    "admit_model": "robot_dynid.model.feedforward",
    "ServedModel": "robot_dynid.model.served_model",
    "Recording": "robot_dynid.recordings.recording",
    "read_file": "robot_dynid.recordings.data_files",
    "IdentificationSettings": "robot_dynid.estimation.identification",
    "identify": "robot_dynid.estimation.identification",
    "validate_model": "robot_dynid.estimation.validation",
    "identify_payload": "robot_dynid.estimation.payload",
    "random_excitation": "robot_dynid.experiment.excitation",
    "build_protocol": "robot_dynid.experiment.protocol",
    "SimulatedRobot": "robot_dynid.experiment.simulation",
    "DynIdError": "robot_dynid.errors",
    "DataError": "robot_dynid.errors",
}
__all__ = ["API", "__version__", *API]


def __getattr__(name):
    home = API.get(name)
    if home is None:
        raise AttributeError(f"module 'robot_dynid' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(API))
