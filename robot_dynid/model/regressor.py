"""The dynamic regressor ``tau = Y(q, qd, qdd) @ theta`` of a serial arm of revolute and prismatic joints.

``theta`` (p,) holds, in this order (names in :attr:`Regressor.parameter_names`):

1. 10 inertial parameters per link ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
   ([kg, kg m x 3, kg m^2 x 6]) about the origin of the link frame and expressed in it (see
   :mod:`robot_dynid.model.robot_description`: DH frame ``i``, or the URDF child link frame);
2. friction coefficients, row by row, as :attr:`FrictionModel.coefficient_names`: a row is a joint
   (``fc3``: friction on the joint's velocity, in its torque) or, with a transmission
   (:mod:`robot_dynid.model.transmission`), a motor (``fc_m3``: friction on the motor velocity
   ``qdm = T qd`` [rad/s], motor torque [N m] mapped to the joints by ``T^T``); ``friction_side``
   chooses joints, motors or both;
3. optionally a rotor inertia (armature) per joint, ``Ia_j`` [kg m^2 or kg] with torque
   ``Ia_j qdd_j``, or, with a transmission, per motor, ``Ia_m<k>`` [kg m^2] with torques
   ``T^T (Ia qddm)``;
4. optionally a constant torque offset ``off_j`` [N m or N] per joint.

A prismatic joint's ``q`` is in m, its "torque" a force [N], its friction coefficients N and N s/m.

:meth:`Regressor.compute` evaluates the rigid-body part with a Newton-Euler recursion compiled
in C (``robot_dynid/_regressor_kernel.c``), four samples at a time. The pinocchio model serves
only as the kinematic description, so DH and URDF robots share one code path: each joint frame
is turned by a constant rotation so that its axis is ``z``, and the kinematics become a chain of
constant frame changes (previous link frame -> joint frame at ``q = 0``, ``Rz(q)``, joint frame
-> link frame). In link frame ``i``, with the link's angular velocity ``w``, angular
acceleration ``dw`` and origin acceleration ``a`` (gravity entering as ``-g``), the wrench of
link ``i`` about the frame origin is linear in its parameters ``(m, h = m c, I)``::

    f = m a + (S(dw) + S(w) S(w)) h
    n = I dw + w x (I w) + h x a

and joint ``j <= i`` sees ``tau_j += l . f + u . n``, where ``(l, u) = (r x z_j, z_j)`` is the
unit twist of joint ``j`` expressed in link frame ``i`` (``r`` the origin of joint ``j``). The
twists are carried along with the same frame changes, so the cost is ``O(n^2)`` per sample. A
prismatic joint translates its frame by ``q z`` instead of turning it, and its unit twist is
``(z, 0)``.
:meth:`Regressor.compute_one` (online use) runs the same kernel on one sample; :meth:`Regressor.online`
gives an :class:`OnlineRegressor` that does so into reused buffers without checking its inputs.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from robot_dynid import _online_kernel, _regressor_kernel, validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.friction import FRICTION_SIDES, FrictionModel
from robot_dynid.model.joint_chains import joint_motion_subspace
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model, link_frame_placements

__all__ = ["INERTIAL_NAMES", "N_INERTIAL", "DEFAULT_CHUNK_SIZE", "inertia_parameter_map", "inertia_matrix", "DriveRow",
           "Regressor", "OnlineRegressor"]

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
N_INERTIAL = len(INERTIAL_NAMES)
_STATE_UNITS = ("rad or m", "rad/s or m/s", "rad/s^2 or m/s^2")
"""Units of q, qd, qdd: revolute joints' and prismatic joints'."""

#: Samples processed at once by :meth:`Regressor.compute` and :meth:`Regressor.torque`; bounds
#: the work arrays besides the output (friction columns; torque's regressor buffer).
DEFAULT_CHUNK_SIZE = 20000


def inertia_parameter_map(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """Linear map of the 10 inertial parameters from frame A to frame B.

    Parameters
    ----------
    rotation : ndarray, shape (3, 3)
        Orientation of frame A in frame B.
    translation : ndarray, shape (3,)
        Origin of frame A in frame B [m] (``x_B = rotation @ x_A + translation``).

    Returns
    -------
    ndarray, shape (10, 10)
        ``M`` with ``pi_B = M @ pi_A``, both in the order ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz,
        Iyz, Izz]`` about the frame's origin. From ``h_B = R h_A + m p`` and the parallel-axis
        theorem, with ``u = R h_A``:
        ``I_B = R I_A R^T + m (|p|^2 1 - p p^T) + 2 (u . p) 1 - u p^T - p u^T``.
    """
    rotation = np.asarray(rotation, dtype=float)
    translation = np.asarray(translation, dtype=float)
    columns = []
    for basis in np.eye(N_INERTIAL):
        mass, first_moment = basis[0], basis[1:4]
        inertia = inertia_matrix(basis[4:])
        moved = rotation @ first_moment
        new_inertia = (rotation @ inertia @ rotation.T
                       + mass * (translation @ translation * np.eye(3)
                                 - np.outer(translation, translation))
                       + 2.0 * (moved @ translation) * np.eye(3)
                       - np.outer(moved, translation) - np.outer(translation, moved))
        columns.append(np.concatenate([[mass], moved + mass * translation,
                                       _vector_from_symmetric(new_inertia)]))
    return np.array(columns).T


def inertia_matrix(values: np.ndarray) -> np.ndarray:
    """The symmetric 3 x 3 inertia [kg m^2] of its six values in pinocchio's order ``Ixx, Ixy, Iyy, Ixz, Iyz,
    Izz`` (a link's standard parameters 4 to 9)."""
    xx, xy, yy, xz, yz, zz = values
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _vector_from_symmetric(matrix: np.ndarray) -> np.ndarray:
    return np.array([matrix[0, 0], matrix[0, 1], matrix[1, 1], matrix[0, 2], matrix[1, 2],
                     matrix[2, 2]])


def _rotation_z_to(axis: np.ndarray) -> np.ndarray:
    """A rotation ``C`` with ``C @ [0, 0, 1] = axis`` (unit)."""
    z = np.array([0.0, 0.0, 1.0])
    cross = np.cross(z, axis)
    sine, cosine = np.linalg.norm(cross), float(z @ axis)
    if sine < 1e-12:
        return np.eye(3) if cosine > 0.0 else np.diag([1.0, -1.0, -1.0])
    return pin.exp3(cross / sine * np.arctan2(sine, cosine))


#: Entries of constant transforms below this are set to zero (they are rounding residue such
#: as cos(pi/2) = 6e-17 [1 or m]), so that a frame change without translation is recognised.
_ROUNDING_RESIDUE = 1e-14


def _frame_change(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """The 13 doubles of a constant frame change from A to B for the kernel: ``[identity flag,
    r (row-major), p]`` with ``r = R^T`` (``v_B = r v_A``), B having orientation ``R`` and
    origin ``p`` [m] in A."""
    rotation = np.where(np.abs(rotation) < _ROUNDING_RESIDUE, 0.0, rotation)
    translation = np.where(np.abs(translation) < _ROUNDING_RESIDUE, 0.0, translation)
    identity = np.array_equal(rotation, np.eye(3)) and not translation.any()
    return np.concatenate([[float(identity)], rotation.T.ravel(), translation])


def _chain_from_model(model: pin.Model) -> tuple[np.ndarray, np.ndarray]:
    """Kinematics as constant frame changes, with every joint turned to rotate about (or slide
    along) ``z``: previous link frame (world for joint 1) -> joint frame ``i`` at ``q_i = 0``,
    then ``Rz(q_i)`` (or ``Tz(q_i)``), then joint frame ``i`` -> link frame ``i``.

    Returns
    -------
    chain : ndarray, shape (n, 2, 13)
        Per joint the two frame changes as :func:`_frame_change` packs them.
    prismatic : ndarray, shape (n,)
        1.0 for a prismatic joint, 0.0 for a revolute one.
    """
    link_frames = link_frame_placements(model)
    changes, prismatic = [], []
    previous_turn = np.eye(3)
    previous_link = pin.SE3.Identity()
    for joint_id in range(1, model.njoints):
        joint = model.joints[joint_id]
        if joint.nq != 1 or joint.nv != 1:
            raise DynIdError(f"joint {model.names[joint_id]!r} is {joint.shortname()}; "
                             "only revolute and prismatic joints with one coordinate are supported")
        if model.parents[joint_id] != joint_id - 1:
            raise DynIdError(f"joint {model.names[joint_id]!r} does not follow joint "
                             f"{model.names[joint_id - 1]!r}; the model must be a serial chain")
        motion = joint_motion_subspace(model, joint_id)
        linear, angular = np.linalg.norm(motion[:3]), np.linalg.norm(motion[3:])
        if linear < 1e-12 and abs(angular - 1.0) < 1e-9:
            axis, slides = motion[3:], False
        elif angular < 1e-12 and abs(linear - 1.0) < 1e-9:
            axis, slides = motion[:3], True
        else:
            raise DynIdError(f"joint {model.names[joint_id]!r} is neither a revolute nor a prismatic joint")
        prismatic.append(float(slides))
        turn = pin.SE3(_rotation_z_to(axis), np.zeros(3))
        # turned joint frame in the previous turned joint frame, then in the previous link frame
        placement = (pin.SE3(previous_turn, np.zeros(3)).inverse()
                     * model.jointPlacements[joint_id] * turn)
        joint_in_link = previous_link.inverse() * placement
        link = turn.inverse() * link_frames[joint_id - 1]
        changes.append([_frame_change(joint_in_link.rotation, joint_in_link.translation),
                        _frame_change(link.rotation, link.translation)])
        previous_turn, previous_link = turn.rotation, link
    return np.array(changes), np.array(prismatic)


class DriveRow(NamedTuple):
    """A row of the friction or armature columns: a joint (``kind`` "joint") or a motor ("motor").

    ``index`` is 0-based among the joints or motors, ``name`` the joint's or motor's name, and
    ``label`` what parameter names append to the coefficient: ``"3"`` for joint 3, ``"_m3"`` for
    motor 3 (1-based).
    """

    kind: str
    index: int
    name: str

    @property
    def label(self) -> str:
        return f"{self.index + 1}" if self.kind == "joint" else f"_m{self.index + 1}"


class Regressor:
    """Regressor ``Y`` with ``tau = Y @ theta`` for a robot, friction model and options.

    Parameters
    ----------
    robot : RobotDescription
        Kinematics, joint order and gravity.
    friction : FrictionModel
        Friction columns per joint (``FrictionModel()`` = none).
    armature : bool
        Add a rotor inertia per joint (column ``qdd_j`` in joint ``j``), or per motor with a
        transmission and ``friction_side`` other than ``"joint"`` (column ``T[r, j] qddm_r``).
    offset : bool
        Add a torque offset ``off_j`` per joint (column 1 in joint ``j``).
    friction_side : {"joint", "motor", "both"} or None
        Where friction acts: on the joints' velocities, the motors' (``qdm = T qd``, mapped by
        ``T^T``; needs the robot's transmission) or both. None: ``"motor"`` when the robot has a
        transmission, else ``"joint"``.
    chunk_size : int
        Samples evaluated at once by :meth:`compute` (bounds the work memory).

    Attributes
    ----------
    model : pinocchio.Model
        The kinematic model (:func:`build_pinocchio_model`), zero inertias; :meth:`compute`
        reads only its joint placements, axes, link frames and gravity.
    one_point_torque : callable or None
        For joint-side coulomb_viscous(_lead) friction without drift, the one-point feed-forward in one
        compiled call (``OneSample.torque`` of ``robot_dynid._regressor_kernel``: the point checked against its
        bounds and put in model order, the regressor, ``Y @ parameters`` summed left to right, the torques
        checked and put back in request order), which :mod:`robot_dynid.model.feedforward` calls; None for
        other models.
    """

    def __init__(self, robot: RobotDescription, friction: FrictionModel = FrictionModel(),
                 armature: bool = False, offset: bool = False, friction_side: str | None = None,
                 chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        if not isinstance(robot, RobotDescription):
            raise DynIdError(f"robot must be a RobotDescription, got {type(robot).__name__}")
        if not isinstance(friction, FrictionModel):
            raise DynIdError(f"friction must be a FrictionModel, got {type(friction).__name__}")
        for name, value in (("armature", armature), ("offset", offset)):
            if not isinstance(value, (bool, np.bool_)):
                raise DynIdError(f"{name} must be True or False, got {value!r}")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) \
                or chunk_size < 1:
            raise DynIdError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        self.robot = robot
        self.friction = friction
        self.armature = bool(armature)
        self.offset = bool(offset)
        self.chunk_size = int(chunk_size)
        if robot.n_joints > _regressor_kernel.MAX_JOINTS:
            raise DynIdError(f"robot {robot.name!r} has {robot.n_joints} joints; the regressor "
                             f"takes at most {_regressor_kernel.MAX_JOINTS}")
        transmission = robot.transmission
        if friction_side is None:
            friction_side = "joint" if transmission is None else "motor"
        validators.text(friction_side, "friction_side", DynIdError, FRICTION_SIDES)
        if friction_side != "joint" and transmission is None:
            raise DynIdError(f"friction_side {friction_side!r} needs motors: robot {robot.name!r} has no "
                             "transmission (add transmission.motor_from_joint to its description)")
        self.friction_side = friction_side
        self.model = build_pinocchio_model(robot)
        self._chain, self._prismatic = _chain_from_model(self.model)
        self._gravity = np.array(self.model.gravity.linear, dtype=float)
        n = robot.n_joints
        joint_rows = [DriveRow("joint", j, name) for j, name in enumerate(robot.joint_names)]
        motor_rows = [] if transmission is None else [DriveRow("motor", r, name)
                                                      for r, name in enumerate(transmission.motor_names)]
        T = None if transmission is None else transmission.motor_from_joint
        blocks = {"joint": (joint_rows, np.eye(n), np.ones(n), np.arange(n)),
                  "motor": (motor_rows, T, None if T is None else transmission.gear_ratios,
                            None if T is None else transmission.main_joints)}
        sides = ("joint", "motor") if friction_side == "both" else (friction_side,)
        self.friction_rows = tuple(row for side in sides for row in blocks[side][0])
        self._friction_map = np.ascontiguousarray(np.vstack([blocks[side][1] for side in sides]))
        self._velocity_scale = np.concatenate([blocks[side][2] for side in sides])
        self._temperature_joint = np.concatenate([blocks[side][3] for side in sides])
        armature_side = "joint" if friction_side == "joint" else "motor"
        self.armature_rows = tuple(blocks[armature_side][0]) if self.armature else ()
        self._armature_map = np.ascontiguousarray(blocks[armature_side][1] if self.armature else np.zeros((0, n)))
        self._inertial = slice(0, N_INERTIAL * n)
        start = N_INERTIAL * n
        self._friction = slice(start, start + friction.n_coefficients * len(self.friction_rows))
        start = self._friction.stop
        self._armature = slice(start, start + len(self.armature_rows))
        start = self._armature.stop
        self._offset = slice(start, start + (n if self.offset else 0))
        self._online_by_thread: dict[int, OnlineRegressor] = {}     # compute_one's buffers, one set per thread
        kernel = self._compiled_one_sample()
        self._one_sample = None if kernel is None else kernel.compute
        self.one_point_torque = None if kernel is None else kernel.torque

    def _compiled_one_sample(self, states=None, columns=None):
        """The kernel's OneSample for joint-side friction without drift whose model declares a compiled path
        (:attr:`FrictionShape.compiled`: coulomb_viscous and its lead variant): ``compute`` is
        compute_one's call (it reads and checks the states in C and returns the regressor, or None where it
        cannot: the checked path then runs), ``torque`` the one-point feed-forward's, ``fill(out)`` the regressor
        of the sample in ``states`` (3, 1, n) into ``out`` (OnlineRegressor's); ``states`` and the friction
        ``columns`` (1, n, 2) are its buffers (new ones by default). None for other friction models."""
        friction = self.friction
        if not (self.friction_side == "joint" and friction.drift == "none" and friction.shape.compiled):
            return None
        n = self.n_joints
        states = np.zeros((3, 1, n)) if states is None else states
        columns = np.zeros((1, n, 2)) if columns is None else columns
        lead = friction.shape.compiled == "sign_viscous_lead"
        return _regressor_kernel.one_sample(self._chain, self._prismatic, self._gravity, states[0], states[1],
                                            states[2], columns, self._friction_map, self._armature_map,
                                            self.offset, lead, float(friction.reversal_lead) if lead else 0.0,
                                            float(friction.dead_band), np.empty, np.ndarray)

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints

    @property
    def n_parameters(self) -> int:
        """Number of parameters ``p``."""
        return self._offset.stop

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of the ``p`` parameters, joint and motor indices 1-based (``"m1"``, ...,
        ``"fc1"`` (joint 1), ``"fc_m1"`` (motor 1), ``"Ia_m6"``, ``"off1"``)."""
        joints = range(1, self.n_joints + 1)
        names = [f"{name}{j}" for j in joints for name in INERTIAL_NAMES]
        names += [f"{name}{row.label}" for row in self.friction_rows for name in self.friction.coefficient_names]
        names += [f"Ia{row.label}" for row in self.armature_rows]
        if self.offset:
            names += [f"off{j}" for j in joints]
        return tuple(names)

    @property
    def parameter_units(self) -> tuple[str, ...]:
        """The SI unit of each of :attr:`parameter_names`: ``kg``, ``kg m``, ``kg m^2`` for a link's inertial
        parameters; a friction coefficient's from its model (:mod:`robot_dynid.model.friction_models`), in N and m
        where a joint row's joint is prismatic; an armature ``kg m^2`` (``kg`` on a prismatic joint); an offset
        ``N m`` (``N``)."""
        prismatic = self.robot.prismatic
        linear = {0: "kg", 1: "kg m", 2: "kg m", 3: "kg m"}
        units = [linear.get(k, "kg m^2") for _ in range(self.n_joints) for k in range(N_INERTIAL)]

        def on_joint(unit, row):
            moves = row.kind == "joint" and prismatic[row.index]
            return unit.replace("N m", "N").replace("rad", "m") if moves else unit
        units += [on_joint(self.friction.coefficient_unit(name), row)
                  for row in self.friction_rows for name in self.friction.coefficient_names]
        units += ["kg" if row.kind == "joint" and prismatic[row.index] else "kg m^2" for row in self.armature_rows]
        if self.offset:
            units += ["N" if moves else "N m" for moves in prismatic]
        return tuple(units)

    def parameter_unit(self, name: str) -> str:
        """The SI unit of a standard parameter, or of a base parameter by its leading standard parameter
        (``Izz2R`` -> ``Izz2``'s ``kg m^2``)."""
        names = self.parameter_names
        standard = name if name in names else name[:-1] if name.endswith("R") and name[:-1] in names else None
        if standard is None:
            raise DynIdError(f"no parameter {name!r} in this regressor")
        return self.parameter_units[names.index(standard)]

    @property
    def prismatic(self) -> tuple[bool, ...]:
        return self.robot.prismatic

    @property
    def slices(self) -> dict[str, slice]:
        """Where each group sits in ``theta``: ``inertial``, ``friction``, ``armature``,
        ``offset``."""
        return {"inertial": self._inertial, "friction": self._friction,
                "armature": self._armature, "offset": self._offset}

    def _check_states(self, q, qd, qdd, one: bool = False):
        n, names = self.n_joints, self.robot.joint_names
        shape, axes = ((n,), ("joints",)) if one else ((None, n), ("samples", "joints"))
        arrays = [np.ascontiguousarray(validators.array(value, name, shape=shape, axes=axes, columns=names, unit=unit))
                  for name, value, unit in zip(("q", "qd", "qdd"), (q, qd, qdd), _STATE_UNITS)]
        if not arrays[0].shape == arrays[1].shape == arrays[2].shape:
            raise DataError(f"q, qd and qdd must have the same shape, got {arrays[0].shape}, "
                            f"{arrays[1].shape} and {arrays[2].shape}")
        return arrays

    def compute(self, q, qd, qdd, temperature=None, elapsed=None, out=None) -> np.ndarray:
        """Regressor for N samples at once.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (N, n)
            Joint positions [rad], velocities [rad/s], accelerations [rad/s^2].
        temperature : array_like, shape (N, n), optional
            Joint temperatures [deg C], for friction drift ``"temperature"``.
        elapsed : array_like, shape (N,), optional
            Time since the cold start [s], for friction drift ``"time"``.
        out : ndarray, shape (N, n, p), optional
            A C-ordered float64 array to write the result into (every entry is overwritten),
            e.g. a buffer reused across the chunks of a long recording.

        Returns
        -------
        ndarray, shape (N, n, p)
            ``Y[k, j, c]`` multiplies parameter ``c`` in the torque of joint ``j`` at sample
            ``k`` [N m per parameter unit], C order (each sample's ``(n, p)`` block is
            contiguous).
        """
        q, qd, qdd = self._check_states(q, qd, qdd)
        shape = q.shape + (self.n_parameters,)
        if out is None:
            out = np.empty(shape)
        elif not (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == np.float64
                  and out.flags.c_contiguous and out.flags.writeable):
            raise DataError(f"out must be a writeable C-ordered float64 array of shape "
                            f"{shape}, got {getattr(out, 'dtype', type(out).__name__)} "
                            f"{getattr(out, 'shape', '')}")
        for start in range(0, shape[0], self.chunk_size):
            chunk = slice(start, min(start + self.chunk_size, shape[0]))
            self._evaluate(q[chunk], qd[chunk], qdd[chunk],
                           None if temperature is None else np.asarray(temperature)[chunk],
                           None if elapsed is None else np.asarray(elapsed)[chunk], out[chunk])
        return out

    def drive_velocities(self, qd) -> np.ndarray:
        """Velocities of the friction rows (N, R): joint rows ``qd_j``, motor rows ``qdm = T qd`` [rad/s] (or the
        accelerations of accelerations)."""
        if self.friction_side == "joint":
            return np.asarray(qd, dtype=float)
        return np.asarray(qd, dtype=float) @ self._friction_map.T

    def _evaluate(self, q, qd, qdd, temperature, elapsed, out) -> None:
        """The kernel on checked, C-contiguous states (N, n) into ``out`` (N, n, p)."""
        _regressor_kernel.regressor(self._chain, self._prismatic, self._gravity, q, qd, qdd,
                                    self._friction_columns(qd, qdd, temperature, elapsed), self._friction_map,
                                    self._armature_map, self.offset, out)

    def normal_equations(self, columns, q, qd, qdd, tau, gram, moment, torque_square_sum, temperature=None,
                         elapsed=None) -> None:
        """Add the normal equations of columns ``columns`` of ``Y`` to per-joint sums, never forming ``Y``.

        With ``Y_j = Y[:, j, columns]`` (N, r), joint j's rows: ``gram[j] += Y_j^T Y_j``,
        ``moment[j] += Y_j^T tau[:, j]``, ``torque_square_sum[j] += tau[:, j]^T tau[:, j]``; equal to
        forming ``Y`` with :meth:`compute` and multiplying, up to rounding. The kernel accumulates
        ``TILE_SAMPLES`` rows at a time from an L1-resident tile (``robot_dynid/_regressor_kernel.c``);
        the friction columns are evaluated ``chunk_size`` samples at a time.

        Parameters
        ----------
        columns : sequence of int, length r
            Ascending column indices of ``Y`` (e.g. ``BaseParameters.independent``).
        q, qd, qdd, temperature, elapsed
            As in :meth:`compute`.
        tau : array_like, shape (N, n)
            Joint torques [N m].
        gram : ndarray, shape (n, r, r)
            Added to in place (C-ordered float64), as ``moment`` (n, r) and ``torque_square_sum`` (n,)
            [N^2 m^2].
        """
        q, qd, qdd = self._check_states(q, qd, qdd)
        tau = np.ascontiguousarray(validators.array(tau, "tau", shape=q.shape, axes=("samples", "joints"),
                                                    columns=self.robot.joint_names, unit="N m"))
        columns = np.asarray(columns, dtype=float)
        n, r = self.n_joints, columns.size
        for name, array, shape in (("gram", gram, (n, r, r)), ("moment", moment, (n, r)),
                                   ("torque_square_sum", torque_square_sum, (n,))):
            if not (isinstance(array, np.ndarray) and array.shape == shape and array.dtype == np.float64
                    and array.flags.c_contiguous and array.flags.writeable):
                raise DataError(f"{name} must be a writeable C-ordered float64 array of shape {shape}, got "
                                f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}")
        for start in range(0, q.shape[0], self.chunk_size):
            chunk = slice(start, min(start + self.chunk_size, q.shape[0]))
            friction = self._friction_columns(qd[chunk], qdd[chunk],
                                              None if temperature is None else np.asarray(temperature)[chunk],
                                              None if elapsed is None else np.asarray(elapsed)[chunk])
            _regressor_kernel.normal_equations(self._chain, self._prismatic, self._gravity, q[chunk], qd[chunk],
                                               qdd[chunk], friction, self._friction_map, self._armature_map,
                                               self.offset, columns, tau[chunk], gram, moment, torque_square_sum)

    def _friction_columns(self, qd, qdd, temperature, elapsed) -> np.ndarray:
        """The friction columns (N, R, f) of the friction rows, C-ordered, as :meth:`_evaluate` passes them."""
        if self.friction_side == "joint":
            friction = self.friction.columns(qd, temperature=temperature, elapsed=elapsed, qdd=qdd)
        else:
            friction = self.friction.columns(
                self.drive_velocities(qd), elapsed=elapsed, velocity_scale=self._velocity_scale,
                temperature=None if temperature is None else np.asarray(temperature)[:, self._temperature_joint],
                qdd=self.drive_velocities(qdd))
        return np.ascontiguousarray(friction, dtype=float)

    def compute_one(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """Regressor of one sample (for online use), by the same kernel as :meth:`compute`, bit for bit.

        Without temperature or elapsed time, the states are read and checked in compiled code where the
        friction's columns are compiled too (joint-side coulomb_viscous and coulomb_viscous_lead without
        drift), else converted once and run through this thread's :class:`OnlineRegressor`; anything
        either cannot take goes the checked path, which says what is wrong.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,)
            [rad], [rad/s], [rad/s^2].
        temperature : array_like, shape (n,), optional
            [deg C].
        elapsed : float, optional
            [s].

        Returns
        -------
        ndarray, shape (n, p)
        """
        if temperature is None and elapsed is None and self.friction.drift == "none":
            if self._one_sample is not None:
                Y = self._one_sample(q, qd, qdd)
                if Y is not None:
                    return Y
            # one conversion and one finiteness test for the three states, then the trusted path of this
            # thread (bit for bit the same kernel calls); anything else gets _check_states' message
            try:
                states = np.array((q, qd, qdd), dtype=float)
            except (TypeError, ValueError):
                states = None
            if states is not None and states.shape == (3, self.n_joints) and np.isfinite(states).all():
                online = self._online_by_thread.get(threading.get_ident())
                if online is None:
                    online = self._online_by_thread.setdefault(threading.get_ident(), OnlineRegressor(self))
                return online.compute(states[0], states[1], states[2]).copy()
        q, qd, qdd = self._check_states(q, qd, qdd, one=True)
        out = np.empty((1, self.n_joints, self.n_parameters))
        self._evaluate(q[None], qd[None], qdd[None],
                       None if temperature is None else np.asarray(temperature, dtype=float)[None],
                       None if elapsed is None else np.atleast_1d(np.asarray(elapsed, dtype=float)),
                       out)
        return out[0]

    def online(self) -> "OnlineRegressor":
        """A :class:`OnlineRegressor` of this regressor: one sample at a time into reused buffers,
        inputs trusted (the online estimators' per-sample call)."""
        return OnlineRegressor(self)

    def torque(self, parameters, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """Joint torques ``Y @ parameters``.

        Parameters
        ----------
        parameters : array_like, shape (p,)
            In the order of :attr:`parameter_names`.
        q, qd, qdd, temperature, elapsed
            As in :meth:`compute`.

        Returns
        -------
        ndarray, shape (N, n)
            Joint torques [N m].
        """
        parameters = validators.array(parameters, "parameters", shape=(self.n_parameters,), axes=("parameters",),
                                      finite=False)
        q, qd, qdd = self._check_states(q, qd, qdd)
        torques = np.empty(q.shape)
        buffer = np.empty((min(self.chunk_size, q.shape[0]),) + q.shape[1:] + parameters.shape)
        for start in range(0, q.shape[0], self.chunk_size):
            chunk = slice(start, min(start + self.chunk_size, q.shape[0]))
            Y = buffer[:chunk.stop - chunk.start]
            self._evaluate(q[chunk], qd[chunk], qdd[chunk],
                           None if temperature is None else np.asarray(temperature)[chunk],
                           None if elapsed is None else np.asarray(elapsed)[chunk], Y)
            torques[chunk] = Y @ parameters
        return torques


class OnlineRegressor:
    """One sample's regressor at a time, into buffers reused from call to call, inputs trusted.

    Made by :meth:`Regressor.online`. :meth:`compute` runs what :meth:`Regressor.compute_one` runs
    (friction columns, then the compiled kernel on one sample), bit for bit, without checking or
    converting its inputs and without allocating the result: for callers that produced the states
    themselves (the online estimators). For joint-side coulomb_viscous and coulomb_viscous_lead friction
    without drift the columns and the regressor are one compiled call (``OneSample.fill``); for drive-side
    ones the columns are compiled (``_online_kernel.sign_friction``, numpy's arithmetic).
    Not for concurrent use: one instance per thread.

    Attributes
    ----------
    regressor : Regressor
    Y : ndarray, shape (n, p)
        The last result; :meth:`compute` overwrites it.
    states : ndarray, shape (3, 1, n)
        The sample's q, qd, qdd [rad, rad/s, rad/s^2]: :meth:`compute` writes it, a caller that gathers a
        sample in place writes it and calls :meth:`compute_states`.
    """

    def __init__(self, regressor: Regressor) -> None:
        self.regressor = regressor
        n, p = regressor.n_joints, regressor.n_parameters
        self.states = np.zeros((3, 1, n))
        self._q, self._qd, self._qdd = self.states            # (1, n) each, C-contiguous
        self._out = np.zeros((1, n, p))
        self.Y = self._out[0]
        rows = len(regressor.friction_rows)
        self._friction = np.zeros((1, rows, regressor.friction.n_coefficients))
        self._joint_side = regressor.friction_side == "joint"
        self._drive_map = regressor._friction_map.T
        self._velocity_scale = 1.0 if self._joint_side else regressor._velocity_scale
        friction = regressor.friction
        self._sign_friction = friction.drift == "none" and friction.shape.compiled is not None
        self._lead = friction.shape.compiled == "sign_viscous_lead"
        self._scale = None if self._joint_side else np.ascontiguousarray(regressor._velocity_scale, dtype=float)
        self._kernel_arguments = (regressor._chain, regressor._prismatic, regressor._gravity, self._q, self._qd,
                                  self._qdd, self._friction, regressor._friction_map, regressor._armature_map,
                                  regressor.offset, self._out)
        kernel = regressor._compiled_one_sample(self.states, self._friction)
        self._fill = None if kernel is None else kernel.fill    # sign-type joint friction: one compiled call

    def compute(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """The regressor of one sample, as :meth:`Regressor.compute_one` gives it.

        Parameters
        ----------
        q, qd, qdd : ndarray, shape (n,)
            [rad], [rad/s], [rad/s^2] in the robot's joint order, finite (not checked).
        temperature : ndarray, shape (n,), optional
            [deg C], where the friction drifts with temperature.
        elapsed : float, optional
            [s] since the cold start, where the friction drifts with time.

        Returns
        -------
        ndarray, shape (n, p)
            :attr:`Y`, overwritten by the next call.
        """
        self._q[0] = q
        self._qd[0] = qd
        self._qdd[0] = qdd
        return self.compute_states(temperature, elapsed)

    def compute_states(self, temperature=None, elapsed=None) -> np.ndarray:
        """The regressor of the sample in :attr:`states` (finite, not checked), as :meth:`compute` gives it;
        ``temperature``, ``elapsed`` as there. Returns :attr:`Y`."""
        if self._fill is not None:      # friction that does not drift: no temperature, no elapsed time
            self._fill(self.Y)
            return self.Y
        regressor = self.regressor
        if temperature is not None:
            temperature = np.asarray(temperature, dtype=float)[None]
            if not self._joint_side:
                temperature = temperature[:, regressor._temperature_joint]
        if elapsed is not None:
            elapsed = np.atleast_1d(np.asarray(elapsed, dtype=float))
        if self._sign_friction:
            v, a = ((self._qd, self._qdd) if self._joint_side else
                    (self._qd @ self._drive_map, self._qdd @ self._drive_map if self._lead else None))
            _online_kernel.sign_friction(v, a if self._lead else None, regressor.friction.reversal_lead,
                                         regressor.friction.dead_band, self._scale, self._friction)
        elif self._joint_side:
            regressor.friction.trusted_columns(self._qd, self._qdd, 1.0, temperature, elapsed, self._friction)
        else:
            regressor.friction.trusted_columns(self._qd @ self._drive_map, self._qdd @ self._drive_map,
                                               self._velocity_scale, temperature, elapsed, self._friction)
        _regressor_kernel.regressor(*self._kernel_arguments)
        return self.Y
