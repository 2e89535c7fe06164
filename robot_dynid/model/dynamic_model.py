"""The identified dynamic model and its artifact file.

A :class:`DynamicModel` computes ``tau = Y_base(q, qd, qdd[, temperature, elapsed]) @ theta``
with ``Y_base`` the base-parameter columns of the full regressor. It round-trips through a
YAML artifact (schema ``robot_dynid/model``) holding the robot description, friction model and
constants, the base parameters (names, expressions as linear combinations of standard parameters,
values, standard deviations), metrics and provenance.

A model may also know its standard parameters (``standard``, e.g. from a physically consistent
fit); the base parameters stay what :meth:`DynamicModel.torque` evaluates, and must be the
standard parameters' projection. Such a model is written as schema version 2, which adds
``standard_parameters`` (every standard parameter by name, friction, armature and offsets
included) and ``links`` (per link: name, joint, mass [kg], centre of mass [m] in the link frame,
inertia about the centre of mass [kg m^2] in the link frame's axes as ``[ixx, ixy, ixz, iyy,
iyz, izz]``, derived from ``standard_parameters`` and checked against them on loading). A model
without standard parameters is written as version 1, as before, so older readers still load it;
both versions are read.

A model may carry a payload (:class:`~robot_dynid.model.payload.Payload`: a tool or load fixed to a
frame of the last link), which :meth:`DynamicModel.torque` includes. Its file then has a ``payload``
section (``frame``, ``mass`` [kg], ``com`` [m] in the frame, ``inertia`` [kg m^2] about the centre of
mass in the frame's axes, ``[ixx, ixy, ixz, iyy, iyz, izz]``) after the parameters, in either schema
version; a model without one is written as before, byte for byte. Readers older than payloads refuse
a file with one (an unknown key) rather than serve torques without it.

Standard deviations: the table's ``std`` is the one a fit reports (``base_parameters.uncertainty.std_method``,
one of :data:`STD_METHODS`: ``white``, ``per_joint`` or ``block``, see docs/estimation.md), with the white-noise
std beside it in each row (``white_std``) and ``interval_dof``, the degrees of freedom of the t quantile of its
intervals (null: normal). A file without ``uncertainty`` (written before it existed) has white-noise std; such a
model is written back as it was.

Writing is deterministic: the same model gives the same bytes. Only finite models exist: values
and standard deviations must be finite (std >= 0), and loading checks every field of the file
(types, shapes, finiteness, consistency of the table with the structure and of the structure
with the robot and friction model), raising one :class:`ModelFileError` line that names the field
(``model.yaml: base_parameters.table[3].value is nan``). ``metrics`` and ``provenance`` are free
mappings, kept as they are; the robot's ``name`` is free text.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import pathlib

import numpy as np
import yaml

from robot_dynid import validators
from robot_dynid.errors import DynIdError, ModelFileError
from robot_dynid.joint_names import index_in
from robot_dynid.model.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.model import friction_models
from robot_dynid.model.friction import DRIFT_MODES, FrictionModel
from robot_dynid.model.link_inertials import link_inertials, link_names
from robot_dynid.model.payload import Payload, frame_placement
from robot_dynid.model.regressor import FRICTION_SIDES, N_INERTIAL, Regressor
from robot_dynid.input_files import read_text
from robot_dynid.model.robot_description import LimitArrays, LinkInertial, RobotDescription
from robot_dynid.model.robot_loader import robot_from_dict
from robot_dynid.stored_columns import is_stored, piece_ranges, spill
from robot_dynid.yaml_files import load_yaml, plain_data

__all__ = ["SCHEMA", "SCHEMA_VERSION", "SCHEMA_VERSIONS", "METHODS", "STD_METHODS", "STANDARD_STD_FRACTION",
           "LINKS_RTOL", "INERTIAL_PARAMETER_ORDER", "UNITS", "LIMITS_OF_MOTION_SAMPLES", "LIMITS_OF_MOTION_SEED",
           "PeakTorques", "DynamicModel"]

SCHEMA = "robot_dynid/model"
#: The version written for a model with standard parameters; one without is written as version 1.
SCHEMA_VERSION = 2
SCHEMA_VERSIONS = (1, 2)
METHODS = ("ols", "wls", "rls")
"""What ``model.method`` may say: the names of the estimation methods
(:data:`robot_dynid.estimation.estimators.ESTIMATORS`, a layer above, which registers each of these)."""
STD_METHODS = ("white", "per_joint", "block")
"""What a model's std may be (:mod:`robot_dynid.estimation.covariance`, a layer above, which computes each):
white noise of one size, per-joint noise white in time, or robust (a jackknife over time blocks)."""
#: Standard parameters must project onto the base values within this fraction of each value's
#: std (plus rounding: 1e-9 of the projection's terms).
STANDARD_STD_FRACTION = 1e-3
#: Tolerance of the ``links`` entries against the standard parameters they derive from: relative,
#: absolute (times 1e-3) for values below 1e-3.
LINKS_RTOL = 1e-9
INERTIAL_PARAMETER_ORDER = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
#: The ``units`` section: fixed (model files are SI); loading checks it is exactly this.
UNITS = {
    "angle": "rad", "length": "m", "mass": "kg", "torque": "N m", "time": "s", "temperature": "deg C",
    "inertial_parameter_order": list(INERTIAL_PARAMETER_ORDER),
    "inertial_parameters_about": "link frame origin, expressed in the link frame",
}
_TOP_LEVEL_KEYS = ("schema", "schema_version", "units", "robot", "model", "base_parameters", "metrics",
                   "provenance")
_TOP_LEVEL_KEYS_V2 = ("schema", "schema_version", "units", "robot", "model", "base_parameters",
                      "standard_parameters", "links", "metrics", "provenance")
_LINK_KEYS = ("name", "joint", "mass", "com", "inertia")
_MODEL_KEYS = ("friction", "armature", "offset", "method", "joint_names")
_STRUCTURE_KEYS = ("standard_names", "independent", "dependent", "beta", "names")
_TABLE_KEYS = ("name", "expression", "value", "std", "relative_std")
_UNCERTAINTY_KEYS = ("std_method", "interval_dof")


#: Positions sampled by :meth:`DynamicModel.torque_at_limits_of_motion` (uniform within the position
#: limits, from a fixed seed: a model always gives the same peaks).
LIMITS_OF_MOTION_SAMPLES = 256
LIMITS_OF_MOTION_SEED = 0


@dataclasses.dataclass(frozen=True)
class PeakTorques:
    """The largest torque magnitude a model gives at the limits of motion, per joint, and where.

    Attributes
    ----------
    torque : ndarray, shape (n,)
        ``max |tau_j|`` [N m] found, joint j in the model's joint order.
    q, qd, qdd : ndarray, shape (n, n)
        Row j: a state [rad, rad/s, rad/s^2] within the limits at which the model gives
        ``|tau_j| = torque[j]``.
    """

    torque: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


@dataclasses.dataclass(frozen=True)
class DynamicModel:
    """An identified model: robot, regressor structure, base parameters and their estimates.

    Attributes
    ----------
    robot : RobotDescription
    friction : FrictionModel
    armature, offset : bool
        Whether the regressor has rotor-inertia columns ``Ia_j qdd_j`` and torque offsets.
    base : BaseParameters
    values : ndarray, shape (r,)
        Base parameter estimates, each in the SI unit of its leading standard parameter.
    std : ndarray, shape (r,)
        Their standard deviations (same units), finite and >= 0.
    method : str
        One of :data:`METHODS`: ``"ols"``, ``"wls"`` or ``"rls"``.
    metrics : dict
        Diagnostics from identification (residual RMS [N m], RSD, condition number, ...).
    provenance : dict
        Data source, selected segments, date, package version.
    standard : ndarray, shape (p,) or None
        Standard parameters in ``base.standard_names`` order (inertial parameters about each link
        frame origin, friction, armature, offsets), when known (e.g. from a physically consistent
        fit); their projection ``base.projection @ standard`` must equal ``values`` within
        :data:`STANDARD_STD_FRACTION` of ``std``, and each link's mass must be >= 0 (0 only with
        a zero first moment).
    friction_side : {"joint", "motor", "both"} or None
        Where friction and armature act (:class:`Regressor`); None: ``"motor"`` with a
        transmission, else ``"joint"``. Stored resolved.
    payload : Payload or None
        A body fixed to a frame of the last link, included in :meth:`torque`; the frame must be one
        of the robot's (:func:`~robot_dynid.model.payload.payload_frames`).
    std_method : str
        Which std ``std`` is, one of :data:`STD_METHODS` (``"white"`` for files without it).
    white_std : ndarray, shape (r,) or None
        The white-noise std beside it (None: unknown, or ``std`` itself is white).
    interval_dof : int or None
        Degrees of freedom of the t quantile of intervals ``value +- q std`` (a ``block`` std: blocks - 1);
        None: the normal quantile.
    """

    robot: RobotDescription
    friction: FrictionModel
    armature: bool
    offset: bool
    base: BaseParameters
    values: np.ndarray
    std: np.ndarray
    method: str = "ols"
    metrics: dict = dataclasses.field(default_factory=dict)
    provenance: dict = dataclasses.field(default_factory=dict)
    standard: np.ndarray | None = None
    friction_side: str | None = None
    payload: Payload | None = None
    std_method: str = "white"
    white_std: np.ndarray | None = None
    interval_dof: int | None = None

    def __post_init__(self):
        """Raises ModelFileError, naming the field as the artifact does, for values or std of the
        wrong shape, non-finite or (std) negative, an unknown method, base parameters that are
        not those of this robot's regressor, or standard parameters that are not finite, not a
        body's or do not project onto the values."""
        try:
            object.__setattr__(self, "friction_side", self.regressor.friction_side)
        except DynIdError as error:
            raise ModelFileError(f"model.friction_side: {error}") from None
        shape, axes, names = (self.base.rank,), ("base parameters",), self.base.names
        values = validators.array(self.values, "values", ModelFileError, shape=shape, axes=axes, columns=names)
        std = validators.array(self.std, "std", ModelFileError, shape=shape, axes=axes, columns=names, minimum=0.0)
        validators.text(self.method, "model.method", ModelFileError, METHODS)
        expected = self.regressor.parameter_names
        for index, (name, wanted) in enumerate(itertools.zip_longest(self.base.standard_names, expected)):
            if name != wanted:
                raise ModelFileError(
                    f"base_parameters.structure.standard_names[{index}] is {name!r}, but the regressor of this "
                    f"robot, friction model, armature and offset has {wanted!r} there ({len(expected)} parameters)")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "std", std)
        validators.text(self.std_method, "base_parameters.uncertainty.std_method", ModelFileError, STD_METHODS)
        if self.white_std is not None:
            object.__setattr__(self, "white_std", validators.array(
                self.white_std, "white_std", ModelFileError, shape=shape, axes=axes, columns=names, minimum=0.0))
        if self.interval_dof is None and self.std_method == "block":
            raise ModelFileError("base_parameters.uncertainty.interval_dof is None, but a block std has one (the "
                                 "number of blocks - 1): give an integer >= 1")
        if self.interval_dof is not None:
            if self.std_method != "block":
                raise ModelFileError(f"base_parameters.uncertainty.interval_dof is {self.interval_dof!r}, but only a "
                                     f"block std has one (std_method is {self.std_method!r}): give null")
            dof = _integer(self.interval_dof, "base_parameters.uncertainty.interval_dof", minimum=1)
            object.__setattr__(self, "interval_dof", dof)
        if self.standard is not None:
            object.__setattr__(self, "standard", self._checked_standard(np.asarray(self.standard, dtype=float)))
        if self.payload is not None:
            if not isinstance(self.payload, Payload):
                raise ModelFileError(f"payload must be a Payload, got {type(self.payload).__name__}")
            try:
                frame_placement(self.robot, self.payload.frame)
            except DynIdError as error:
                raise ModelFileError(f"payload.frame: {error}") from None

    def _checked_standard(self, standard: np.ndarray) -> np.ndarray:
        names = self.base.standard_names
        standard = validators.array(standard, "standard_parameters", ModelFileError, shape=(len(names),),
                                    axes=("standard parameters",), columns=names)
        try:
            link_inertials(self.robot, standard)
        except DynIdError as error:
            raise ModelFileError(f"standard_parameters: {error}") from None
        projection = self.base.projection
        projected = projection @ standard
        tolerance = STANDARD_STD_FRACTION * self.std + 1e-9 * (np.abs(projection) @ np.abs(standard))
        excess = np.abs(projected - self.values) - tolerance
        if (excess > 0.0).any():
            row = int(np.argmax(excess))
            raise ModelFileError(
                f"standard_parameters do not project onto the base parameters: they give {self.base.names[row]} = "
                f"{float(projected[row])!r}, base_parameters.table[{row}].value is {float(self.values[row])!r} (std "
                f"{float(self.std[row])!r}); they must agree within {STANDARD_STD_FRACTION:g} std")
        return standard

    @functools.cached_property
    def regressor(self) -> Regressor:
        return Regressor(self.robot, self.friction, armature=self.armature, offset=self.offset,
                         friction_side=self.friction_side)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.robot.joint_names

    def with_payload(self, payload: Payload | None, metrics: dict | None = None) -> "DynamicModel":
        """This model with ``payload`` attached in place of any it has (None: detached);
        ``metrics["payload"]`` becomes ``metrics`` (the payload's identification summary) or is removed."""
        kept = {key: value for key, value in self.metrics.items() if key != "payload"}
        if payload is not None and metrics is not None:
            kept["payload"] = metrics
        return dataclasses.replace(self, payload=payload, metrics=kept)

    def without_payload(self) -> "DynamicModel":
        """The arm alone: this model with its payload (and its summary in ``metrics``) removed."""
        return self.with_payload(None)

    @functools.cached_property
    def payload_parameters(self) -> np.ndarray | None:
        """The payload's ten parameters (10,) about the last link frame origin, in its axes, or None."""
        return None if self.payload is None else self.payload.link_parameters(self.robot)

    @functools.cached_property
    def links(self) -> tuple[tuple[str, LinkInertial], ...] | None:
        """Per link, its name (the URDF child link, ``"<joint>_link"`` for DH robots) and its
        mass [kg], centre of mass [m] and inertia about it [kg m^2] in its link frame, from the
        standard parameters; None without them."""
        if self.standard is None:
            return None
        return tuple(zip(link_names(self.robot), link_inertials(self.robot, self.standard)))

    @functools.cached_property
    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper position limits [rad], each (n,) in joint order; -inf and inf for URDF
        continuous joints, which turn without end."""
        return self.robot.limit_arrays(unbounded_continuous=True)[:2]

    def torque(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """Joint torques [N m] predicted by the model.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (N, n) or (n,)
            Joint positions [rad], velocities [rad/s], accelerations [rad/s^2], in
            ``joint_names`` order.
        temperature : array_like, shape (N, n) or (n,), optional
            Joint temperatures [deg C]; required by friction drift "temperature".
        elapsed : array_like, shape (N,) or scalar, optional
            Running time since a cold start [s]; required by friction drift "time".

        Returns
        -------
        ndarray, shape (N, n) or (n,) matching the input; a StoredColumn where an input is one (a long
        recording's fields: :mod:`robot_dynid.stored_columns`), computed a piece at a time.
        """
        if any(map(is_stored, (q, qd, qdd, temperature))):
            return spill((self.torque(np.asarray(q[start:stop]), np.asarray(qd[start:stop]),
                                      np.asarray(qdd[start:stop]),
                                      None if temperature is None else np.asarray(temperature[start:stop]),
                                      None if elapsed is None else np.asarray(elapsed)[start:stop])
                          for start, stop in piece_ranges(len(q))), len(self.joint_names))
        arrays = [validators.array(array, name, ndim=(1, 2), finite=False)
                  for name, array in zip(("q", "qd", "qdd"), (q, qd, qdd))]
        single = arrays[0].ndim == 1
        n = len(self.joint_names)
        shape = (n,) if single else (arrays[0].shape[0], n)
        axes = ("joints",) if single else ("samples", "joints")
        arrays = [np.atleast_2d(validators.array(array, name, shape=shape, axes=axes, finite=False))
                  for name, array in zip(("q", "qd", "qdd"), arrays)]
        if temperature is not None:
            temperature = np.atleast_2d(np.asarray(temperature, dtype=float))
        if elapsed is not None:
            elapsed = np.atleast_1d(np.asarray(elapsed, dtype=float))
        # Regressor.torque goes chunk by chunk, so a long recording never holds its whole regressor.
        tau = self.regressor.torque(self.torque_parameters(), *arrays, temperature=temperature, elapsed=elapsed)
        return tau[0] if single else tau

    def torque_parameters(self) -> np.ndarray:
        """The parameters (p,) that :meth:`torque` multiplies the standard regressor by: the base values at
        their independent columns, 0 elsewhere (``Y_base @ values = Y @ these``, without copying the base
        columns out of ``Y``), plus the payload's ten parameters on the last link's."""
        standard = np.zeros(self.regressor.n_parameters)
        standard[list(self.base.independent)] = self.values
        if self.payload is not None:        # linear in the last link's ten parameters: add the payload's
            last = self.regressor.slices["inertial"].stop
            standard[last - N_INERTIAL:last] += self.payload_parameters
        return standard

    def friction_torque(self, joint: str, speed) -> np.ndarray | None:
        """The friction torque [N m] of ``joint`` at speeds ``speed`` (M,) [rad/s], the others at rest:
        the friction columns of the regressor times their base values (warm, for a time drift); None
        without friction or when it drifts with temperature."""
        regressor = self.regressor
        friction = regressor.slices["friction"]
        if friction.stop == friction.start or self.friction.needs_temperature:
            return None
        j, = index_in(self.joint_names, [joint], "friction torque", "the model")
        speed = np.asarray(speed, dtype=float)
        standard = np.zeros(regressor.n_parameters)
        standard[friction] = self.torque_parameters()[friction]
        qd = np.zeros((speed.size, self.robot.n_joints))
        qd[:, j] = speed
        zeros = np.zeros_like(qd)
        elapsed = np.full(speed.size, 1e9) if self.friction.needs_elapsed else None
        return regressor.torque(standard, zeros, qd, zeros, elapsed=elapsed)[:, j]

    def torque_at_limits_of_motion(self, limits: LimitArrays | None = None,
                                   samples: int = LIMITS_OF_MOTION_SAMPLES) -> PeakTorques:
        """The largest ``|tau_j|`` [N m] the model gives with every joint at its velocity and
        acceleration limits, positions within the position limits.

        Positions: ``samples`` points uniform within the position limits (a fixed seed);
        velocities: every joint at ``+-`` its velocity limit, the signs drawn per point;
        accelerations: every joint at ``+-`` its acceleration limit with the signs that make
        ``|tau_j|`` largest. The torque is linear in ``qdd``, ``tau(q, qd, qdd) = b + M qdd`` (``M``
        with the armature), so that maximum over the box ``|qdd_k| <= a_k`` is exact:
        ``|b_j| + sum_k |M_jk| a_k``; over positions and velocities it is the largest of the
        samples. Friction that drifts is taken at its reference temperature, or cold (elapsed 0).

        Parameters
        ----------
        limits : LimitArrays, optional
            Limits of the model's joints in its order (e.g. of the robot a node is configured
            for); default the model's own robot's.
        samples : int
            Number of sampled positions (and velocity sign patterns).
        """
        limits = self.robot.limit_arrays() if limits is None else limits
        n = len(self.joint_names)
        rng = np.random.default_rng(LIMITS_OF_MOTION_SEED)
        q = rng.uniform(limits.lower, limits.upper, (samples, n))
        qd = rng.choice((-1.0, 1.0), (samples, n)) * limits.velocity
        # per point: qdd = 0, then a_k e_k for each joint k
        qdd = np.concatenate([np.zeros((1, n)), np.diag(limits.acceleration)])
        states = samples * (n + 1)
        drift = {}
        if self.friction.needs_temperature:
            drift["temperature"] = np.full((states, n), self.friction.reference_temperature)
        if self.friction.needs_elapsed:
            drift["elapsed"] = np.zeros(states)
        tau = self.torque(np.repeat(q, n + 1, axis=0), np.repeat(qd, n + 1, axis=0), np.tile(qdd, (samples, 1)),
                          **drift).reshape(samples, n + 1, n)
        bias = tau[:, 0]                                # (samples, n): b_j at qdd = 0
        inertia = tau[:, 1:] - bias[:, None, :]         # (samples, k, j): M_jk a_k
        peaks = np.abs(bias) + np.abs(inertia).sum(axis=1)
        best = np.argmax(peaks, axis=0)                 # per joint j, the point of its peak
        joints = np.arange(n)
        signs = np.where(bias[best, joints] < 0.0, -1.0, 1.0)[:, None] * \
            np.where(inertia[best, :, joints] < 0.0, -1.0, 1.0)
        return PeakTorques(torque=peaks[best, joints], q=q[best], qd=qd[best], qdd=signs * limits.acceleration)

    def holding_torque(self, limits: LimitArrays | None = None, samples: int = LIMITS_OF_MOTION_SAMPLES) -> np.ndarray:
        """The largest ``|tau_j|`` [N m] per joint (n,) the model gives holding still (``qd = qdd = 0``) at
        ``samples`` positions uniform within the position limits (the sample of
        :meth:`torque_at_limits_of_motion`): gravity, offsets and friction at rest."""
        limits = self.robot.limit_arrays() if limits is None else limits
        n = len(self.joint_names)
        q = np.random.default_rng(LIMITS_OF_MOTION_SEED).uniform(limits.lower, limits.upper, (samples, n))
        drift = {}
        if self.friction.needs_temperature:
            drift["temperature"] = np.full((samples, n), self.friction.reference_temperature)
        if self.friction.needs_elapsed:
            drift["elapsed"] = np.zeros(samples)
        return np.abs(self.torque(q, np.zeros((samples, n)), np.zeros((samples, n)), **drift)).max(axis=0)

    def parameter_table(self) -> list[dict]:
        """One row per base parameter: name, expression, value, std (of :attr:`std_method`), relative std [1]
        (inf or nan where the value is 0), and the white-noise std when the model keeps it (``white_std``)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.abs(self.std / self.values)
        white = [None] * self.base.rank if self.white_std is None else self.white_std
        return [
            {"name": name, "expression": expression, "value": float(value), "std": float(std),
             "relative_std": float(rel), **({} if white_std is None else {"white_std": float(white_std)})}
            for name, expression, value, std, rel, white_std in zip(
                self.base.names, self.base.expressions(), self.values, self.std, relative, white
            )
        ]

    @property
    def uncertainty_record(self) -> dict | None:
        """``base_parameters.uncertainty`` of the file: ``std_method`` and ``interval_dof``; None for a white std
        without a white std beside it (as files were before)."""
        if self.std_method == "white" and self.white_std is None:
            return None
        return {"std_method": self.std_method, "interval_dof": self.interval_dof}

    def to_dict(self) -> dict:
        """The artifact as plain data: version 2 with ``standard_parameters`` and ``links`` when
        the standard parameters are known, else version 1; a ``payload`` section when it has one."""
        data = {
            "schema": SCHEMA,
            "schema_version": 1 if self.standard is None else SCHEMA_VERSION,
            "units": plain_data(UNITS),
            "robot": self.robot.to_dict(),
            "model": {
                "friction": self.friction.to_dict(),
                "armature": bool(self.armature),
                "offset": bool(self.offset),
                "method": self.method,
                "joint_names": list(self.joint_names),
                # written with a transmission only: files of robots without one keep their bytes
                **({} if self.robot.transmission is None else {"friction_side": self.friction_side}),
            },
            "base_parameters": {
                "structure": self.base.to_dict(),
                # relative std is undefined where a value is 0: null, not .inf / .nan
                "table": [{**row, "relative_std": row["relative_std"] if math.isfinite(row["relative_std"])
                           else None} for row in self.parameter_table()],
                **({} if self.uncertainty_record is None else {"uncertainty": self.uncertainty_record}),
            },
            "metrics": plain_data(self.metrics),
            "provenance": plain_data(self.provenance),
        }
        if self.standard is not None:
            data.update({
                "standard_parameters": dict(zip(self.base.standard_names, self.standard.tolist())),
                "links": [{"name": name, "joint": joint, **inertial.to_dict()}
                          for joint, (name, inertial) in zip(self.joint_names, self.links)],
            })
        if self.payload is not None:
            data["payload"] = self.payload.to_dict()
        order = _TOP_LEVEL_KEYS if self.standard is None else _TOP_LEVEL_KEYS_V2
        return {key: data[key] for key in _with_payload_key(order) if key in data}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, width=1000)

    def save(self, path) -> pathlib.Path:
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_yaml())
        return path

    @classmethod
    def from_standard(cls, robot: RobotDescription, standard, friction: FrictionModel = FrictionModel(),
                      armature: bool = False, offset: bool = False, std=None, **fields) -> "DynamicModel":
        """The model of known standard parameters (CAD or datasheet values, a simulator's truth):
        ``standard`` (p,) in the order of :attr:`Regressor.parameter_names` of ``robot`` with ``friction``,
        ``armature`` and ``offset`` (friction_side from ``fields``); its base parameters are computed, their
        values projected from ``standard``, their ``std`` zero unless given (one value for all, or (r,)).
        ``fields``: any other attribute (``method``, ``provenance``, ``payload``, ...)."""
        regressor = Regressor(robot, friction, armature, offset, friction_side=fields.get("friction_side"))
        standard = validators.array(standard, "standard", DynIdError, shape=(regressor.n_parameters,),
                                    axes=("standard parameters",))
        base = compute_base_parameters(regressor)
        std = np.zeros(base.rank) if std is None else np.full(base.rank, std) if np.ndim(std) == 0 else std
        return cls(robot, friction, armature, offset, base, base.projection @ standard, std, standard=standard,
                   **fields)

    @classmethod
    def from_dict(cls, data, source="<dict>") -> "DynamicModel":
        """The model of an artifact's parsed YAML (see :meth:`to_dict`).

        Raises
        ------
        ModelFileError
            One line, starting with ``source``, naming the first field that is missing, unknown,
            of the wrong type or shape, non-finite or inconsistent (e.g.
            ``base_parameters.table[3].value is nan``).
        """
        try:
            return cls._from_checked_dict(data)
        except DynIdError as error:
            raise ModelFileError(f"{source}: {error}") from None

    @classmethod
    def _from_checked_dict(cls, data) -> "DynamicModel":
        version = _mapping(data, "").get("schema_version")
        if type(version) is not int or version not in SCHEMA_VERSIONS:
            raise ModelFileError(f"schema_version {version!r} is not supported "
                                 f"(this robot_dynid reads {' and '.join(map(str, SCHEMA_VERSIONS))})")
        data = _mapping(data, "", _TOP_LEVEL_KEYS if version == 1 else _TOP_LEVEL_KEYS_V2, optional=("payload",))
        if data["schema"] != SCHEMA:
            raise ModelFileError(f"schema is {data['schema']!r}, expected {SCHEMA!r}")
        _expect(data["units"], UNITS, "units")
        robot = robot_from_dict(data["robot"], source="robot")
        model = _mapping(data["model"], "model")
        validators.known_keys(model, "model", _MODEL_KEYS, ("friction_side",), ModelFileError)
        friction = _friction(model["friction"], "model.friction")
        armature, offset = (_flag(model[key], f"model.{key}") for key in ("armature", "offset"))
        method = _text(model["method"], "model.method", choices=METHODS)
        joint_names = _list(model["joint_names"], "model.joint_names", robot.n_joints, _text)
        for index, (name, robot_name) in enumerate(zip(joint_names, robot.joint_names)):
            if name != robot_name:
                raise ModelFileError(f"model.joint_names[{index}] is {name!r} but robot.joints[{index}]"
                                     f"{'.name' if robot.urdf is None else ''} is {robot_name!r}")
        parameters = _mapping(data["base_parameters"], "base_parameters", ("structure", "table"),
                              optional=("uncertainty",))
        base = _structure(parameters["structure"], "base_parameters.structure")
        values, std, white_std = _table(parameters["table"], "base_parameters.table", base.rank)
        std_method, interval_dof = "white", None
        if "uncertainty" in parameters:
            uncertainty = _mapping(parameters["uncertainty"], "base_parameters.uncertainty", _UNCERTAINTY_KEYS)
            std_method = _text(uncertainty["std_method"], "base_parameters.uncertainty.std_method",
                               choices=STD_METHODS)
            interval_dof = uncertainty["interval_dof"]
        standard = None
        if version >= 2:
            named = _mapping(data["standard_parameters"], "standard_parameters", base.standard_names)
            standard = np.array([_number(named[name], _field("standard_parameters", name))
                                 for name in base.standard_names])
            links = _list(data["links"], "links", robot.n_joints, _link)
        # constructing checks the structure against the robot's regressor, before the table is
        # compared with the structure (a wrong standard name would show in the expressions first)
        friction_side = _text(model["friction_side"], "model.friction_side", choices=FRICTION_SIDES) \
            if "friction_side" in model else None
        payload = None
        if "payload" in data:
            try:
                payload = Payload.from_dict(data["payload"], "payload")
            except DynIdError as error:
                raise ModelFileError(str(error)) from None
        loaded = cls(robot, friction, armature, offset, base, values, std, method=method,
                     metrics=_mapping(data["metrics"], "metrics"),
                     provenance=_mapping(data["provenance"], "provenance"), standard=standard,
                     friction_side=friction_side, payload=payload, std_method=std_method, white_std=white_std,
                     interval_dof=interval_dof)
        _check_table_names(parameters["table"], "base_parameters.table", base)
        if standard is not None:
            _check_links(links, loaded)
        return loaded

    @classmethod
    def from_yaml(cls, text: str, source="<text>") -> "DynamicModel":
        """The model of an artifact's YAML text; ModelFileError as :meth:`from_dict`, and for text that is not
        YAML or beyond the limits of :func:`~robot_dynid.yaml_files.load_yaml` (size, nesting, aliases,
        integers beyond the float range)."""
        return cls.from_dict(load_yaml(text, str(source), ModelFileError, "model artifact"), source=source)

    @classmethod
    def load(cls, path) -> "DynamicModel":
        """The model of an artifact file; ModelFileError (naming the file) when it cannot be read (missing,
        not a regular file, above :data:`~robot_dynid.input_files.MAX_TEXT_BYTES`, not UTF-8) or as
        :meth:`from_yaml`."""
        path = pathlib.Path(path)
        return cls.from_yaml(read_text(path, "model file", ModelFileError), source=str(path))


def _field(path: str, key) -> str:
    """``path.key``, or ``path[key]`` for a list index."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


_number = functools.partial(validators.number, error=ModelFileError)
_integer = functools.partial(validators.count, error=ModelFileError, minimum=0)
_flag = functools.partial(validators.flag, error=ModelFileError)
_text = functools.partial(validators.text, error=ModelFileError)


def _mapping(value, path: str, keys=None, optional=()) -> dict:
    """``value`` if it is a mapping (with exactly ``keys``, and any of ``optional``, when given)."""
    if keys is None:
        return validators.mapping_of(value, path or "a model file", ModelFileError)
    return validators.known_keys(value, path, keys, optional, ModelFileError)


def _with_payload_key(keys: tuple) -> tuple:
    """The top-level keys in file order with ``payload`` after the parameters (before ``metrics``)."""
    at = keys.index("metrics")
    return keys[:at] + ("payload",) + keys[at:]


def _list(value, path: str, length=None, item=None) -> list:
    """``value`` if it is a list (of ``length`` entries when given), each entry passed through
    ``item(entry, path[i])`` when given."""
    validators.entries(value, path, ModelFileError, length)
    return value if item is None else [item(entry, _field(path, index)) for index, entry in enumerate(value)]


def _expect(value, expected, path: str) -> None:
    """``value`` equals ``expected`` (mappings, lists and strings), else the first difference is named."""
    if isinstance(expected, dict):
        for key, entry in _mapping(value, path, tuple(expected)).items():
            _expect(entry, expected[key], _field(path, key))
    elif isinstance(expected, list):
        for index, entry in enumerate(_list(value, path, len(expected))):
            _expect(entry, expected[index], _field(path, index))
    elif _text(value, path) != expected:
        raise ModelFileError(f"{path} is {value!r}, expected {expected!r}")


def _friction(data, path: str) -> FrictionModel:
    """The friction model of ``data``: every field of :class:`FrictionModel`, nothing else."""
    fields = FrictionModel().to_dict()
    choices = {"name": friction_models.names(), "drift": DRIFT_MODES}
    _mapping(data, path)
    validators.known_keys(data, path, tuple(fields), ("reversal_lead", "warmup_time_constant_2"), ModelFileError)
    for key, value in data.items():
        if key in choices:
            _text(value, _field(path, key), choices=choices[key])
        else:
            _number(value, _field(path, key))
    try:
        return FrictionModel.from_dict(data)
    except DynIdError as error:
        raise ModelFileError(f"{path}: {error}") from None


def _structure(data, path: str) -> BaseParameters:
    """The base parameter structure of ``data`` (see :meth:`BaseParameters.to_dict`)."""
    data = _mapping(data, path, _STRUCTURE_KEYS)
    for key, item in (("standard_names", _text), ("names", _text), ("independent", _integer),
                      ("dependent", _integer)):
        _list(data[key], _field(path, key), item=item)
    beta = _field(path, "beta")
    for index, row in enumerate(_list(data["beta"], beta, len(data["independent"]))):
        row = _list(row, _field(beta, index), len(data["dependent"]))
        if not all(type(entry) is float and math.isfinite(entry) for entry in row):    # r x (p - r): fast path
            _list(row, _field(beta, index), item=_number)                              # names the bad entry
    return BaseParameters.from_dict(data, label=path)


def _table(rows, path: str, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Values, std and white std (None when no row has one) of the base parameter table ``rows`` (``rank``
    rows), every field's type checked; relative_std a number >= 0, or null where the value is 0; white_std
    in every row or in none."""
    values, std, white_std = np.zeros(rank), np.zeros(rank), np.zeros(rank)
    rows = _list(rows, path, rank)
    with_white = bool(rows) and isinstance(rows[0], dict) and "white_std" in rows[0]
    for index, row in enumerate(rows):
        where = _field(path, index)
        row = _mapping(row, where, _TABLE_KEYS + (("white_std",) if with_white else ()))
        _text(row["name"], f"{where}.name")
        _text(row["expression"], f"{where}.expression")
        values[index] = _number(row["value"], f"{where}.value")
        std[index] = validators.positive(row["std"], f"{where}.std", ModelFileError, allow_zero=True)
        if with_white:
            white_std[index] = validators.positive(row["white_std"], f"{where}.white_std", ModelFileError,
                                                   allow_zero=True)
        if not (row["relative_std"] is None and values[index] == 0.0):
            if _number(row["relative_std"], f"{where}.relative_std") < 0.0:
                raise ModelFileError(f"{where}.relative_std is {row['relative_std']!r}; it must be >= 0")
    return values, std, white_std if with_white else None


def _link(data, path: str) -> dict:
    """A ``links`` entry with every field's type and shape checked."""
    data = _mapping(data, path, _LINK_KEYS)
    for key in ("name", "joint"):
        _text(data[key], _field(path, key))
    _number(data["mass"], _field(path, "mass"))
    for key, length in (("com", 3), ("inertia", 6)):
        _list(data[key], _field(path, key), length, _number)
    return data


def _check_links(links: list[dict], model: DynamicModel) -> None:
    """The (type-checked) ``links`` entries are those of the model's standard parameters."""
    for index, (entry, joint, (name, inertial)) in enumerate(zip(links, model.joint_names, model.links)):
        where = _field("links", index)
        for key, expected in (("name", name), ("joint", joint)):
            if entry[key] != expected:
                raise ModelFileError(f"{where}.{key} is {entry[key]!r}, expected {expected!r}")
        for key, expected in inertial.to_dict().items():
            found = np.atleast_1d(np.asarray(entry[key], dtype=float))
            expected = np.atleast_1d(expected)
            wrong = np.abs(found - expected) > LINKS_RTOL * np.maximum(np.abs(expected), 1e-3)
            if wrong.any():
                at = f"{where}.{key}" + (f"[{int(np.argmax(wrong))}]" if key != "mass" else "")
                raise ModelFileError(f"{at} is {float(found[np.argmax(wrong)])!r}, but standard_parameters give "
                                     f"{float(expected[np.argmax(wrong)])!r}")


def _check_table_names(rows: list, path: str, base: BaseParameters) -> None:
    """Each row of the (type-checked) table names the structure's base parameter and gives its
    expression."""
    for index, (row, name, expression) in enumerate(zip(rows, base.names, base.expressions())):
        where = _field(path, index)
        if row["name"] != name:
            raise ModelFileError(f"{where}.name is {row['name']!r} but base_parameters.structure.names[{index}] "
                                 f"is {name!r}")
        if row["expression"] != expression:
            raise ModelFileError(f"{where}.expression is {row['expression']!r}, but base_parameters.structure "
                                 f"gives {expression!r}")
