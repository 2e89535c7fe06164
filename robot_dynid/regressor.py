"""The dynamic regressor ``tau = Y(q, qd, qdd) @ theta`` of a serial arm of revolute joints.

``theta`` (p,) holds, in this order (names in :attr:`Regressor.parameter_names`):

1. 10 inertial parameters per link ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
   ([kg, kg m x 3, kg m^2 x 6]) about the origin of the link frame and expressed in it (see
   :mod:`robot_dynid.robot_description`: DH frame ``i``, or the URDF child link frame);
2. friction coefficients, joint by joint, as :attr:`FrictionModel.coefficient_names`;
3. optionally a rotor inertia (armature) ``Ia_j`` [kg m^2] per joint, torque ``Ia_j qdd_j``;
4. optionally a constant torque offset ``off_j`` [N m] per joint.

:meth:`Regressor.compute` evaluates the rigid-body part for all samples at once with a
vectorised Newton-Euler recursion over arrays of length ``N`` (samples last). The pinocchio model
serves only as the kinematic description, so DH and URDF robots share one code path: each joint
frame is turned by a constant rotation so that its axis is ``z``, and the kinematics become a
chain of constant frame changes (previous link frame -> joint frame at ``q = 0``, ``Rz(q)``,
joint frame -> link frame), applied with their zero entries skipped. In link frame ``i``, with
the link's angular velocity ``w``, angular acceleration ``dw`` and origin acceleration ``a``
(gravity entering as ``-g``), the wrench of link ``i`` about the frame origin is linear in its
parameters ``(m, h = m c, I)``::

    f = m a + (S(dw) + S(w) S(w)) h
    n = I dw + w x (I w) + h x a

and joint ``j <= i`` sees ``tau_j += l . f + u . n``, where ``(l, u) = (r x z_j, z_j)`` is the
unit twist of joint ``j`` expressed in link frame ``i`` (``r`` the origin of joint ``j``). The
twists are carried along with the same frame changes, so the cost is ``O(n^2)`` array
operations of length ``N``. :meth:`Regressor.compute_one` calls pinocchio's
``computeJointTorqueRegressor`` and maps its joint-frame parameters to the link frames with
:func:`inertia_parameter_map`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.linalg

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.friction import FrictionModel
from robot_dynid.robot_description import (RobotDescription, build_pinocchio_model,
                                           link_frame_placements)

logger = logging.getLogger(__name__)

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
N_INERTIAL = len(INERTIAL_NAMES)
#: Samples processed at once by :meth:`Regressor.compute`; bounds the work arrays to about
#: 30 n chunk doubles besides the output (n = 6: 29 MB).
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
        inertia = _symmetric_from_vector(basis[4:])
        moved = rotation @ first_moment
        new_inertia = (rotation @ inertia @ rotation.T
                       + mass * (translation @ translation * np.eye(3)
                                 - np.outer(translation, translation))
                       + 2.0 * (moved @ translation) * np.eye(3)
                       - np.outer(moved, translation) - np.outer(translation, moved))
        columns.append(np.concatenate([[mass], moved + mass * translation,
                                       _vector_from_symmetric(new_inertia)]))
    return np.array(columns).T


def _symmetric_from_vector(values: np.ndarray) -> np.ndarray:
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
#: as cos(pi/2) = 6e-17 [1 or m]), so transforms of DH rows become sparse.
_ROUNDING_RESIDUE = 1e-14


class _ConstantMap:
    """A constant matrix applied to stacked component arrays, skipping zero entries."""

    def __init__(self, matrix: np.ndarray) -> None:
        matrix = np.where(np.abs(matrix) < _ROUNDING_RESIDUE, 0.0, matrix)
        self.rows = tuple(tuple((int(s), float(row[s])) for s in np.flatnonzero(row))
                          for row in matrix)

    def __call__(self, vectors: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``matrix @ vectors`` over the first axis of ``vectors`` (s, ...); ``out`` must not
        share memory with ``vectors``."""
        if out is None:
            out = np.empty((len(self.rows),) + vectors.shape[1:])
        scratch = np.empty(vectors.shape[1:])
        for target, row in zip(out, self.rows):
            if not row:
                target.fill(0.0)
                continue
            (first, coefficient), rest = row[0], row[1:]
            np.multiply(vectors[first], coefficient, out=target)
            for s, coefficient in rest:
                np.multiply(vectors[s], coefficient, out=scratch)
                target += scratch
        return out


class _FrameChange:
    """Constant change from frame A to frame B, B having orientation ``R`` and origin ``p``
    in A: motions and unit twists are re-expressed in B."""

    def __init__(self, rotation: np.ndarray, translation: np.ndarray) -> None:
        translation = np.where(np.abs(translation) < _ROUNDING_RESIDUE, 0.0, translation)
        self.translation = translation
        self.rotate = _ConstantMap(rotation.T)
        twist = np.zeros((6, 6))
        twist[:3, :3] = rotation.T
        twist[:3, 3:] = -rotation.T @ pin.skew(translation)
        twist[3:, 3:] = rotation.T
        self.move_twists = _ConstantMap(twist)

    @staticmethod
    def make(rotation: np.ndarray, translation: np.ndarray) -> "_FrameChange | None":
        """None for the identity."""
        if np.abs(rotation - np.eye(3)).max() < _ROUNDING_RESIDUE \
                and np.abs(translation).max() < _ROUNDING_RESIDUE:
            return None
        return _FrameChange(rotation, translation)

    def move_motion(self, motion: np.ndarray) -> np.ndarray:
        """``motion`` (3 components, (w, dw, a), N) of frame A -> of frame B, in B."""
        if self.translation.any():
            motion = motion.copy()
            (wx, dwx, ax), (wy, dwy, ay), (wz, dwz, az) = motion
            px, py, pz = self.translation
            # a_B = a_A + dw x p + w x (w x p) = a_A + dw x p + w (w . p) - p |w|^2
            w_dot_p = px * wx + py * wy + pz * wz
            w_squared = wx * wx + wy * wy + wz * wz
            for a_r, w_r, p_r, (dw_s, p_t), (dw_t, p_s) in (
                    (ax, wx, px, (dwy, pz), (dwz, py)),
                    (ay, wy, py, (dwz, px), (dwx, pz)),
                    (az, wz, pz, (dwx, py), (dwy, px))):
                a_r += w_r * w_dot_p
                if p_r:
                    a_r -= p_r * w_squared
                if p_t:
                    a_r += p_t * dw_s
                if p_s:
                    a_r -= p_s * dw_t
        return self.rotate(motion)


@dataclass(frozen=True)
class _Chain:
    """Kinematics as constant frame changes, with every joint turned to rotate about ``z``:
    previous link frame (world for joint 1) -> joint frame ``i`` at ``q_i = 0`` (``to_joint``),
    then ``Rz(q_i)``, then joint frame ``i`` -> link frame ``i`` (``to_link``); None is the
    identity."""

    to_joint: tuple[_FrameChange | None, ...]
    to_link: tuple[_FrameChange | None, ...]
    gravity: np.ndarray         # (3,) [m/s^2] in the world frame


def _chain_from_model(model: pin.Model) -> _Chain:
    link_frames = link_frame_placements(model)
    to_joint, to_link = [], []
    previous_turn = np.eye(3)
    previous_link = pin.SE3.Identity()
    for joint_id in range(1, model.njoints):
        joint = model.joints[joint_id]
        if joint.nq != 1 or joint.nv != 1:
            raise DynIdError(f"joint {model.names[joint_id]!r} is {joint.shortname()}; "
                             "only revolute joints with one coordinate are supported")
        if model.parents[joint_id] != joint_id - 1:
            raise DynIdError(f"joint {model.names[joint_id]!r} does not follow joint "
                             f"{model.names[joint_id - 1]!r}; the model must be a serial chain")
        joint_data = joint.createData()
        joint.calc(joint_data, np.zeros(1))
        motion = np.array(joint_data.S).ravel()
        if np.linalg.norm(motion[:3]) > 1e-12 or abs(np.linalg.norm(motion[3:]) - 1.0) > 1e-9:
            raise DynIdError(f"joint {model.names[joint_id]!r} is not a revolute joint")
        turn = pin.SE3(_rotation_z_to(motion[3:]), np.zeros(3))
        # turned joint frame in the previous turned joint frame, then in the previous link frame
        placement = (pin.SE3(previous_turn, np.zeros(3)).inverse()
                     * model.jointPlacements[joint_id] * turn)
        joint_in_link = previous_link.inverse() * placement
        link = turn.inverse() * link_frames[joint_id - 1]
        to_joint.append(_FrameChange.make(joint_in_link.rotation, joint_in_link.translation))
        to_link.append(_FrameChange.make(link.rotation, link.translation))
        previous_turn, previous_link = turn.rotation, link
    return _Chain(to_joint=tuple(to_joint), to_link=tuple(to_link),
                  gravity=np.array(model.gravity.linear, dtype=float))


def _rotate_z_transposed(vectors: np.ndarray, cosine: np.ndarray, sine: np.ndarray) -> None:
    """Apply ``Rz(q)^T`` in place to ``vectors`` (3, ..., N) (z is unchanged)."""
    x = vectors[0].copy()
    vectors[0] *= cosine
    vectors[0] += sine * vectors[1]
    vectors[1] *= cosine
    vectors[1] -= sine * x


def _rigid_body_columns(chain: _Chain, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                        out: np.ndarray) -> None:
    """Write the inertial regressor in link-frame parameters into ``out``.

    ``q``, ``qd``, ``qdd`` are (n, N) (samples last); ``out`` is a (10 n, n, N) view whose
    entry ``[c, j, k]`` multiplies parameter ``c`` in joint ``j``'s torque at sample ``k``;
    entries with ``j`` beyond the link are left untouched.
    """
    n, n_samples = q.shape
    cosines, sines = np.cos(q), np.sin(q)
    # motion[component, quantity, k]: quantities w, dw, a (origin acceleration, gravity as -g)
    motion = np.zeros((3, 3, n_samples))
    motion[:, 2] = -chain.gravity[:, None]
    twists = np.zeros((6, n, n_samples))     # (l, u) of each joint so far, in the current frame
    spare = np.empty_like(twists)
    for i in range(n):
        cosine, sine = cosines[i], sines[i]
        if chain.to_joint[i] is not None:
            motion = chain.to_joint[i].move_motion(motion)
            if i > 0:
                chain.to_joint[i].move_twists(twists[:, :i], out=spare[:, :i])
                twists, spare = spare, twists
        _rotate_z_transposed(motion, cosine, sine)
        if i > 0:
            _rotate_z_transposed(twists[0:2, :i], cosine, sine)
            _rotate_z_transposed(twists[3:5, :i], cosine, sine)
        twists[:, i] = 0.0
        twists[5, i] = 1.0
        w, dw = motion[:, 0], motion[:, 1]
        # dw_i = Rz^T dw_{i-1} + (Rz^T w_{i-1}) x z qd_i + z qdd_i ; w_i = Rz^T w_{i-1} + z qd_i
        dw[0] += qd[i] * w[1]
        dw[1] -= qd[i] * w[0]
        dw[2] += qdd[i]
        w[2] += qd[i]
        if chain.to_link[i] is not None:
            motion = chain.to_link[i].move_motion(motion)
            chain.to_link[i].move_twists(twists[:, :i + 1], out=spare[:, :i + 1])
            twists, spare = spare, twists
        _link_columns(twists[:, :i + 1], motion, out[N_INERTIAL * i:N_INERTIAL * (i + 1), :i + 1])


def _link_columns(twists: np.ndarray, motion: np.ndarray, out: np.ndarray) -> None:
    """Columns of one link's 10 parameters for the k joints of ``twists`` (6, k, N), with the
    link's ``motion`` (3, (w, dw, a), N) in its own frame; ``out`` is (10, k, N)."""
    lx, ly, lz, ux, uy, uz = twists
    (wx, dwx, ax), (wy, dwy, ay), (wz, dwz, az) = motion
    # f = m a + B h with B = S(dw) + S(w)^2 ; n = D I - S(a) h with D = L(dw) + S(w) L(w)
    wxx, wyy, wzz = wx * wx, wy * wy, wz * wz
    wxy, wxz, wyz = wx * wy, wx * wz, wy * wz
    b = ((-wyy - wzz, wxy - dwz, wxz + dwy),
         (wxy + dwz, -wxx - wzz, wyz - dwx),
         (wxz - dwy, wyz + dwx, -wxx - wyy))
    d = ((dwx, dwy - wxz, -wyz, dwz + wxy, wyy - wzz, wyz),
         (wxz, dwx + wyz, dwy, wzz - wxx, dwz - wxy, -wxz),
         (-wxy, wxx - wyy, wxy, dwx - wyz, dwy + wxz, dwz))
    # (a x u)_c = a_first u_second - a_second u_first, for c = x, y, z
    a_cross_u = ((ay, uz, az, uy), (az, ux, ax, uz), (ax, uy, ay, ux))
    scratch = np.empty(lx.shape)

    def dot3(target, first, first_factor, second, second_factor, third, third_factor):
        np.multiply(first, first_factor, out=target)
        np.multiply(second, second_factor, out=scratch)
        target += scratch
        np.multiply(third, third_factor, out=scratch)
        target += scratch

    dot3(out[0], lx, ax, ly, ay, lz, az)
    for c in range(3):
        dot3(out[1 + c], lx, b[0][c], ly, b[1][c], lz, b[2][c])
        a_first, u_second, a_second, u_first = a_cross_u[c]
        np.multiply(u_second, a_first, out=scratch)
        out[1 + c] += scratch
        np.multiply(u_first, a_second, out=scratch)
        out[1 + c] -= scratch
    for c in range(6):
        dot3(out[4 + c], ux, d[0][c], uy, d[1][c], uz, d[2][c])


class Regressor:
    """Regressor ``Y`` with ``tau = Y @ theta`` for a robot, friction model and options.

    Parameters
    ----------
    robot : RobotDescription
        Kinematics, joint order and gravity.
    friction : FrictionModel
        Friction columns per joint (``FrictionModel()`` = none).
    armature : bool
        Add a rotor inertia ``Ia_j`` per joint (column ``qdd_j`` in joint ``j``).
    offset : bool
        Add a torque offset ``off_j`` per joint (column 1 in joint ``j``).
    chunk_size : int
        Samples evaluated at once by :meth:`compute` (bounds the work memory).

    Attributes
    ----------
    model : pinocchio.Model
        The kinematic model (:func:`build_pinocchio_model`), zero inertias; :meth:`compute`
        reads only its joint placements, axes, link frames and gravity.
    """

    def __init__(self, robot: RobotDescription, friction: FrictionModel = FrictionModel(),
                 armature: bool = False, offset: bool = False,
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
        self.model = build_pinocchio_model(robot)
        self._data = self.model.createData()
        self._chain = _chain_from_model(self.model)
        # pinocchio's regressor is in (non-turned) joint-frame parameters
        n = robot.n_joints
        self._pinocchio_map = scipy.linalg.block_diag(*(
            inertia_parameter_map(placement.rotation, placement.translation)
            for placement in link_frame_placements(self.model)))
        if np.array_equal(self._pinocchio_map, np.eye(N_INERTIAL * n)):
            self._pinocchio_map = None
        self._inertial = slice(0, N_INERTIAL * n)
        start = N_INERTIAL * n
        self._friction = slice(start, start + friction.n_coefficients * n)
        start = self._friction.stop
        self._armature = slice(start, start + (n if self.armature else 0))
        start = self._armature.stop
        self._offset = slice(start, start + (n if self.offset else 0))
        self._joint_index = np.arange(n)
        self._friction_index = (np.repeat(self._joint_index, friction.n_coefficients),
                                np.arange(self._friction.start, self._friction.stop))

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints

    @property
    def n_parameters(self) -> int:
        """Number of parameters ``p``."""
        return self._offset.stop

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """Names of the ``p`` parameters, joint indices 1-based (``"m1"``, ..., ``"fc1"``, ...)."""
        joints = range(1, self.n_joints + 1)
        names = [f"{name}{j}" for j in joints for name in INERTIAL_NAMES]
        names += [f"{name}{j}" for j in joints for name in self.friction.coefficient_names]
        if self.armature:
            names += [f"Ia{j}" for j in joints]
        if self.offset:
            names += [f"off{j}" for j in joints]
        return tuple(names)

    @property
    def slices(self) -> dict[str, slice]:
        """Where each group sits in ``theta``: ``inertial``, ``friction``, ``armature``,
        ``offset``."""
        return {"inertial": self._inertial, "friction": self._friction,
                "armature": self._armature, "offset": self._offset}

    def _check_states(self, q, qd, qdd, one: bool = False):
        n = self.n_joints
        arrays = [np.asarray(value, dtype=float) for value in (q, qd, qdd)]
        for name, array in zip(("q", "qd", "qdd"), arrays):
            if (one and array.shape != (n,)) or (not one and (array.ndim != 2
                                                              or array.shape[1] != n)):
                expected = f"({n},)" if one else f"(N, {n})"
                raise DataError(f"{name} must have shape {expected} in joint order "
                                f"{self.robot.joint_names}, got {array.shape}")
        if not arrays[0].shape == arrays[1].shape == arrays[2].shape:
            raise DataError(f"q, qd and qdd must have the same shape, got {arrays[0].shape}, "
                            f"{arrays[1].shape} and {arrays[2].shape}")
        for name, array in zip(("q", "qd", "qdd"), arrays):
            if not np.isfinite(array).all():
                raise DataError(f"{name} contains non-finite values")
        return arrays

    def compute(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """Regressor for N samples at once.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (N, n)
            Joint positions [rad], velocities [rad/s], accelerations [rad/s^2].
        temperature : array_like, shape (N, n), optional
            Joint temperatures [deg C], for friction drift ``"temperature"``.
        elapsed : array_like, shape (N,), optional
            Time since the cold start [s], for friction drift ``"time"``.

        Returns
        -------
        ndarray, shape (N, n, p)
            ``Y[k, j, c]`` multiplies parameter ``c`` in the torque of joint ``j`` at sample
            ``k`` [N m per parameter unit]. Stored column-major (Fortran order): each
            ``Y[:, j, c]`` is contiguous. Use ``np.ascontiguousarray`` where C order matters.
        """
        q, qd, qdd = self._check_states(q, qd, qdd)
        n_samples, n = q.shape
        Y = np.zeros((n_samples, n, self.n_parameters), order="F")
        for start in range(0, n_samples, self.chunk_size):
            stop = min(start + self.chunk_size, n_samples)
            self._inertial_columns(q[start:stop], qd[start:stop], qdd[start:stop],
                                   Y[start:stop, :, self._inertial])
        self._write_joint_columns(Y, qd, qdd, temperature, elapsed)
        return Y

    def _inertial_columns(self, q, qd, qdd, out: np.ndarray) -> None:
        _rigid_body_columns(self._chain, np.ascontiguousarray(q.T), np.ascontiguousarray(qd.T),
                            np.ascontiguousarray(qdd.T), out.transpose(2, 1, 0))

    def _write_joint_columns(self, Y: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                             temperature, elapsed) -> None:
        """Friction, armature and offset columns (each acts in its own joint only)."""
        rows, columns = self._friction_index
        if columns.size:
            values = self.friction.columns(qd, temperature=temperature, elapsed=elapsed)
            Y[:, rows, columns] = values.reshape(qd.shape[0], -1)
        joints = self._joint_index
        if self.armature:
            Y[:, joints, self._armature.start + joints] = qdd
        if self.offset:
            Y[:, joints, self._offset.start + joints] = 1.0

    def compute_one(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """Regressor of one sample (for online use), via pinocchio.

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
        q, qd, qdd = self._check_states(q, qd, qdd, one=True)
        n = self.n_joints
        joint_frame_columns = pin.computeJointTorqueRegressor(self.model, self._data, q, qd, qdd)
        Y = np.zeros((1, n, self.n_parameters))
        Y[0, :, self._inertial] = (joint_frame_columns if self._pinocchio_map is None
                                   else joint_frame_columns @ self._pinocchio_map)
        self._write_joint_columns(
            Y, qd[None], qdd[None],
            None if temperature is None else np.asarray(temperature, dtype=float)[None],
            None if elapsed is None else np.atleast_1d(np.asarray(elapsed, dtype=float)))
        return Y[0]

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
        parameters = np.asarray(parameters, dtype=float)
        if parameters.shape != (self.n_parameters,):
            raise DataError(f"parameters must have shape ({self.n_parameters},) in the order "
                            f"of parameter_names, got {parameters.shape}")
        q, qd, qdd = self._check_states(q, qd, qdd)
        torques = np.empty(q.shape)
        for start in range(0, q.shape[0], self.chunk_size):
            chunk = slice(start, min(start + self.chunk_size, q.shape[0]))
            Y = self.compute(q[chunk], qd[chunk], qdd[chunk],
                             None if temperature is None else np.asarray(temperature)[chunk],
                             None if elapsed is None else np.asarray(elapsed)[chunk])
            torques[chunk] = np.einsum("kjp,p->kj", Y, parameters)
        return torques
