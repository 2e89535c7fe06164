"""The identified dynamic model and its artifact file.

A :class:`DynamicModel` computes ``tau = Y_base(q, qd, qdd[, temperature, elapsed]) @ theta``
with ``Y_base`` the base-parameter columns of the full regressor. It round-trips through a
YAML artifact (schema ``robot_dynid/model``, version :data:`SCHEMA_VERSION`) holding the robot
description, friction model and constants, the base parameters (names, expressions as linear
combinations of standard parameters, values, standard deviations), metrics and provenance.
Writing is deterministic: the same model gives the same bytes.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib

import numpy as np
import yaml

from robot_dynid.base_parameters import BaseParameters
from robot_dynid.errors import DataError, ModelFileError
from robot_dynid.friction import FrictionModel
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import RobotDescription, robot_from_dict

SCHEMA = "robot_dynid/model"
SCHEMA_VERSION = 1
INERTIAL_PARAMETER_ORDER = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
_TOP_LEVEL_KEYS = {
    "schema", "schema_version", "units", "robot", "model", "base_parameters", "metrics", "provenance",
}


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
        Their standard deviations (same units); NaN when unknown.
    method : str
        ``"ols"``, ``"wls"`` or ``"rls"``.
    metrics : dict
        Diagnostics from identification (residual RMS [N m], RSD, condition number, ...).
    provenance : dict
        Data source, selected segments, date, package version.
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

    def __post_init__(self):
        values = np.asarray(self.values, dtype=float)
        std = np.asarray(self.std, dtype=float)
        if values.shape != (self.base.rank,):
            raise ModelFileError(
                f"base parameter values have shape {values.shape}, expected ({self.base.rank},)"
            )
        if std.shape != values.shape:
            raise ModelFileError(f"base parameter std has shape {std.shape}, expected {values.shape}")
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "std", std)

    @functools.cached_property
    def regressor(self) -> Regressor:
        return Regressor(self.robot, self.friction, armature=self.armature, offset=self.offset)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.robot.joint_names

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
        ndarray, shape (N, n) or (n,) matching the input.
        """
        q = np.asarray(q, dtype=float)
        single = q.ndim == 1
        arrays = [np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, qd, qdd)]
        n = len(self.joint_names)
        for name, array in zip(("q", "qd", "qdd"), arrays):
            if array.ndim != 2 or array.shape[1] != n or array.shape[0] != arrays[0].shape[0]:
                raise DataError(
                    f"{name} has shape {np.shape(array)}, expected (N, {n}) for joints {list(self.joint_names)}"
                )
        if temperature is not None:
            temperature = np.atleast_2d(np.asarray(temperature, dtype=float))
        if elapsed is not None:
            elapsed = np.atleast_1d(np.asarray(elapsed, dtype=float))
        # Y_base @ values = Y[..., independent] @ values = Y @ (values at the independent
        # columns, 0 elsewhere): the same sum without copying the base columns out of Y (the
        # copy took 0.5 of the 1.4 ms of 1000 points of a 6-joint arm); Regressor.torque goes
        # chunk by chunk, so a long recording never holds its whole regressor.
        standard = np.zeros(self.regressor.n_parameters)
        standard[list(self.base.independent)] = self.values
        tau = self.regressor.torque(standard, *arrays, temperature=temperature, elapsed=elapsed)
        return tau[0] if single else tau

    def parameter_table(self) -> list[dict]:
        """One row per base parameter: name, expression, value, std, relative std [1]."""
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.abs(self.std / self.values)
        return [
            {"name": name, "expression": expression, "value": float(value), "std": float(std),
             "relative_std": float(rel)}
            for name, expression, value, std, rel in zip(
                self.base.names, self.base.expressions(), self.values, self.std, relative
            )
        ]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "units": {
                "angle": "rad", "length": "m", "mass": "kg", "torque": "N m", "time": "s",
                "temperature": "deg C",
                "inertial_parameter_order": list(INERTIAL_PARAMETER_ORDER),
                "inertial_parameters_about": "link frame origin, expressed in the link frame",
            },
            "robot": self.robot.to_dict(),
            "model": {
                "friction": self.friction.to_dict(),
                "armature": bool(self.armature),
                "offset": bool(self.offset),
                "method": self.method,
                "joint_names": list(self.joint_names),
            },
            "base_parameters": {
                "structure": self.base.to_dict(),
                "table": self.parameter_table(),
            },
            "metrics": _plain(self.metrics),
            "provenance": _plain(self.provenance),
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, width=1000)

    def save(self, path) -> pathlib.Path:
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_yaml())
        return path

    @classmethod
    def from_dict(cls, data, source="<dict>") -> "DynamicModel":
        if not isinstance(data, dict):
            raise ModelFileError(f"{source}: a model file holds a mapping, got {type(data).__name__}")
        unknown = set(data) - _TOP_LEVEL_KEYS
        if unknown:
            raise ModelFileError(f"{source}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOP_LEVEL_KEYS)}")
        if data.get("schema") != SCHEMA:
            raise ModelFileError(f"{source}: schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ModelFileError(
                f"{source}: schema_version {data.get('schema_version')!r} is not supported "
                f"(this robot_dynid reads {SCHEMA_VERSION})"
            )
        try:
            model = data["model"]
            table = data["base_parameters"]["table"]
            base = BaseParameters.from_dict(data["base_parameters"]["structure"])
            robot = robot_from_dict(data["robot"], source=f"{source}: robot")
            friction = FrictionModel.from_dict(model["friction"])
            values = [row["value"] for row in table]
            std = [row.get("std", float("nan")) for row in table]
            names = [row["name"] for row in table]
            armature, offset, method = bool(model["armature"]), bool(model["offset"]), model["method"]
        except KeyError as missing:
            raise ModelFileError(f"{source}: missing key {missing}") from None
        if tuple(names) != tuple(base.names):
            missing = [name for name in base.names if name not in names]
            extra = [name for name in names if name not in base.names]
            raise ModelFileError(
                f"{source}: base_parameters.table does not match base_parameters.structure: "
                f"missing {missing}, unexpected {extra}" + ("" if missing or extra else ", order differs")
            )
        return cls(robot, friction, armature, offset, base, np.array(values, float), np.array(std, float),
                   method=method, metrics=data.get("metrics") or {}, provenance=data.get("provenance") or {})

    @classmethod
    def from_yaml(cls, text: str, source="<text>") -> "DynamicModel":
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ModelFileError(f"{source}: not valid YAML: {error}") from None
        return cls.from_dict(data, source=source)

    @classmethod
    def load(cls, path) -> "DynamicModel":
        path = pathlib.Path(path)
        return cls.from_yaml(path.read_text(), source=str(path))


def _plain(value):
    """Convert numpy scalars and arrays to plain Python for a deterministic YAML dump."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
