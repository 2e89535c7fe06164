"""Cylinder configuration (``C.yaml``) and identification results (``cylinders.yaml``), both SI.

Configuration (:func:`load_cylinder_config`)::

    cylinders:
      - name: boom                 # as in the data (CSV column suffix, message name)
        piston_mass: 4.595         # m [kg]
        damping: 2000.0            # c [N s/m]
        area_a: 1.2566e-3          # cap-side piston area [m^2]
        area_b: 8.765e-4           # rod-side annulus area [m^2]
        load: 100.0                # optional constant external load F_L [N] (data column load.<name> wins)
        attachment: ...            # optional, see robot_dynid.hydraulics.attachment

Values that fit the SI ranges below only after a unit conversion are rejected with the unit
they look like: areas above :data:`MAX_AREA` (1 m^2: a 1.1 m bore) look like mm^2 (or cm^2),
a piston mass above :data:`MAX_PISTON_MASS` is not a piston; ``area_b`` may not exceed ``area_a``.

Results (:func:`save_cylinder_results`, :func:`load_cylinder_results`): schema
``robot_dynid/cylinder_results`` version 1, one entry per cylinder with the estimates, their
standard deviations, the residual RMS, the RLS convergence, the known cylinder data and the
attachment (so that ``robot-dynid identify --cylinders`` needs nothing else); docs/data_formats.md.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import yaml

from robot_dynid import __version__, validators
from robot_dynid.errors import DataError
from robot_dynid.estimation.estimators import estimator
from robot_dynid.hydraulics.attachment import CylinderAttachment, attachment_from_dict
from robot_dynid.hydraulics.cylinder import (CONVERGENCE_BAND, HYDRAULIC_PARAMETER_NAMES,
                                             HYDRAULIC_PARAMETER_UNITS, CylinderIdentification,
                                             CylinderParameters, HydraulicCylinder)
from robot_dynid.joint_names import unique_names
from robot_dynid.yaml_files import read_yaml

__all__ = ["SCHEMA", "SCHEMA_VERSION", "MAX_AREA", "MAX_PISTON_MASS", "CylinderConfig", "CylinderResult",
           "config_to_dict", "cylinder_config_from_dict", "load_cylinder_config", "results_to_dict",
           "save_cylinder_results", "load_cylinder_results"]

SCHEMA = "robot_dynid/cylinder_results"
SCHEMA_VERSION = 1
MAX_AREA = 1.0             # m^2
MAX_PISTON_MASS = 1e4      # kg
_FIELDS = ("stiffness", "fc", "fv", "fs")
_CYLINDER_KEYS = ("piston_mass", "damping", "area_a", "area_b")
_UNITS = {"piston_mass": "kg", "damping": "N s/m", "area_a": "m^2", "area_b": "m^2", "load": "N"}


@dataclass(frozen=True)
class CylinderConfig:
    """One configured cylinder: ``name``, known data ``cylinder``, constant ``load`` [N] or None,
    ``attachment`` (:class:`~robot_dynid.hydraulics.attachment.CylinderAttachment`) or None."""

    name: str
    cylinder: HydraulicCylinder
    load: float | None = None
    attachment: CylinderAttachment | None = None


@dataclass(frozen=True)
class CylinderResult:
    """One identified cylinder, as stored in a results file.

    ``parameters`` (K [N/m], fc [N], fv [N s/m], fs [N (s/m)^(1/3)]) with ``std`` (4,) in that
    order; ``residual_rms`` [N]; ``method`` ``"rls"``/``"ls"``; ``forgetting`` mu (RLS);
    ``n_samples``; ``convergence_samples`` and ``convergence_time`` [s] (RLS: until every estimate
    stays within ``max(2 % |final|, 1 std)``, else None); ``config`` the cylinder's configuration.
    """

    config: CylinderConfig
    parameters: CylinderParameters
    std: np.ndarray
    residual_rms: float
    method: str
    n_samples: int
    forgetting: float | None = None
    convergence_samples: int | None = None
    convergence_time: float | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @classmethod
    def from_identification(cls, config: CylinderConfig, identification: CylinderIdentification,
                            sample_interval: float, forgetting: float | None = None) -> "CylinderResult":
        """From :func:`~robot_dynid.hydraulics.cylinder.identify_cylinder`'s result;
        ``sample_interval`` [s] turns the convergence sample count into a time."""
        samples = identification.convergence_samples
        return cls(config=config, parameters=identification.parameters, std=np.asarray(identification.std),
                   residual_rms=float(identification.residual_rms), method=identification.method,
                   n_samples=int(identification.n_samples),
                   forgetting=None if estimator(identification.method).batch else float(forgetting or 1.0),
                   convergence_samples=samples,
                   convergence_time=None if samples is None else float(samples * sample_interval))

    def to_dict(self) -> dict:
        """Plain YAML/JSON entry (see docs/data_formats.md)."""
        entry = {"name": self.name, "method": self.method}
        if self.forgetting is not None:
            entry["forgetting"] = self.forgetting
        entry["n_samples"] = self.n_samples
        entry.update({field: float(value) for field, value in zip(_FIELDS, self.parameters.as_array())})
        entry["std"] = {field: float(value) for field, value in zip(_FIELDS, self.std)}
        entry["residual_rms"] = float(self.residual_rms)
        if self.convergence_samples is not None:
            entry["convergence"] = {"samples": int(self.convergence_samples), "time": self.convergence_time,
                                    "band": CONVERGENCE_BAND}
        entry["cylinder"] = config_to_dict(self.config)
        return entry


def config_to_dict(config: CylinderConfig) -> dict:
    """A configuration entry of :func:`load_cylinder_config`'s format (without ``name``)."""
    entry = {key: float(getattr(config.cylinder, key)) for key in _CYLINDER_KEYS}
    if config.load is not None:
        entry["load"] = float(config.load)
    if config.attachment is not None:
        entry["attachment"] = config.attachment.to_dict()
    return entry


def _checked_number(value, field: str, unit: str, allow_zero: bool) -> float:
    return validators.positive(value, f"{field}", DataError, unit=unit, allow_zero=allow_zero)


def _cylinder_from_dict(entry: dict, where: str) -> tuple[HydraulicCylinder, float | None]:
    values = {}
    for key in _CYLINDER_KEYS:
        values[key] = _checked_number(entry[key], f"{where}.{key}", _UNITS[key],
                                      allow_zero=key in ("piston_mass", "damping"))
    for key in ("area_a", "area_b"):
        area = values[key]
        if area >= MAX_AREA:
            bore = 2.0 * math.sqrt(area * 1e-6 / math.pi)
            raise DataError(f"{where}.{key} = {area:g} m^2 is a bore of {2.0 * math.sqrt(area / math.pi):.3g} m: "
                            f"it looks like mm^2 ({area:g} mm^2 = {area * 1e-6:.4g} m^2, a {bore * 1e3:.3g} mm "
                            f"bore) or cm^2; give m^2")
    if values["area_b"] > values["area_a"]:
        raise DataError(f"{where}.area_b = {values['area_b']:g} m^2 exceeds area_a = {values['area_a']:g} m^2: "
                        "the rod-side annulus is the piston area less the rod's; are they swapped?")
    if values["piston_mass"] > MAX_PISTON_MASS:
        raise DataError(f"{where}.piston_mass = {values['piston_mass']:g} kg is above {MAX_PISTON_MASS:g} kg: "
                        "check its unit (kg; grams?)")
    load = entry.get("load")
    if load is not None:
        load = validators.number(load, f"{where}.load [N]", DataError)
    return HydraulicCylinder(**values), load


def cylinder_config_from_dict(data, source: str = "cylinder configuration") -> list[CylinderConfig]:
    """Cylinders from the parsed ``C.yaml`` (module docstring); ``source`` names it in errors."""
    validators.known_keys(data, source, ("cylinders",), (), DataError)
    entries = data["cylinders"]
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{source}: 'cylinders' must be a non-empty list, got {entries!r}")
    configs = []
    for index, entry in enumerate(entries):
        where = f"{source}: cylinders[{index}]"
        validators.known_keys(entry, where, ("name",) + _CYLINDER_KEYS, ("load", "attachment"), DataError)
        name = entry["name"]
        if not isinstance(name, str) or not name.strip() or any(char in name for char in ", \t"):
            raise DataError(f"{where}.name must be a non-empty string without spaces or commas, got {name!r}")
        where = f"{source}: cylinder {name!r}"
        unique_names([config.name for config in configs] + [name], f"{source}: cylinders", "cylinder")
        cylinder, load = _cylinder_from_dict(entry, where)
        attachment = None if entry.get("attachment") is None else \
            attachment_from_dict(entry["attachment"], f"{where}.attachment")
        configs.append(CylinderConfig(name=name, cylinder=cylinder, load=load, attachment=attachment))
    return configs


def load_cylinder_config(path) -> list[CylinderConfig]:
    """The cylinders of a configuration file ``C.yaml`` (module docstring), in file order.

    Raises
    ------
    DataError
        One line naming the file, the cylinder and the key: unreadable file, unknown or missing
        key, a value that is not a finite positive number, a unit mistake.
    """
    return cylinder_config_from_dict(read_yaml(path, what="cylinder configuration"), os.fspath(path))


def results_to_dict(results, provenance: dict | None = None) -> dict:
    """The results file's content for ``results`` (sequence of :class:`CylinderResult`)."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "units": {"stiffness": HYDRAULIC_PARAMETER_UNITS[0], "fc": HYDRAULIC_PARAMETER_UNITS[1],
                  "fv": HYDRAULIC_PARAMETER_UNITS[2], "fs": HYDRAULIC_PARAMETER_UNITS[3],
                  "residual_rms": "N", "convergence.time": "s", "convergence.band": "fraction of |final|"},
        "parameter_order": list(HYDRAULIC_PARAMETER_NAMES),
        "friction_model": "F_d(v) = fc sgn(v) + fv v + fs cbrt(v), v [m/s]",
        "provenance": {"created_by": f"robot_dynid {__version__}", **(provenance or {})},
        "cylinders": [result.to_dict() for result in results],
    }


def save_cylinder_results(path, results, provenance: dict | None = None) -> None:
    """Write ``results`` (sequence of :class:`CylinderResult`) as YAML to ``path`` (deterministic:
    the same results give the same bytes). ``provenance``: extra plain entries (data file, ...)."""
    text = yaml.safe_dump(results_to_dict(results, provenance), sort_keys=False, default_flow_style=False)
    with open(os.fspath(path), "w", encoding="utf-8") as handle:
        handle.write(text)


def _result_from_dict(entry, where: str) -> CylinderResult:
    validators.known_keys(entry, where, ("name", "method", "n_samples", *_FIELDS, "std", "residual_rms",
                                         "cylinder"), ("forgetting", "convergence"), DataError)
    name = entry["name"]
    config = cylinder_config_from_dict({"cylinders": [{"name": name, **(entry["cylinder"] or {})}]},
                                       where)[0] if isinstance(entry["cylinder"], dict) else None
    if config is None:
        raise DataError(f"{where}.cylinder must be a mapping")
    values = [validators.number(entry[field], f"{where}.{field}", DataError) for field in _FIELDS]
    validators.known_keys(entry["std"], f"{where}.std", _FIELDS, (), DataError)
    std = np.array([validators.positive(entry["std"][field], f"{where}.std.{field}", DataError, allow_zero=True)
                    for field in _FIELDS])
    convergence = entry.get("convergence") or {}
    validators.known_keys(convergence, f"{where}.convergence", (), ("samples", "time", "band"), DataError)
    return CylinderResult(
        config=config, parameters=CylinderParameters(*values), std=std,
        residual_rms=validators.positive(entry["residual_rms"], f"{where}.residual_rms", DataError, "N", True),
        method=str(entry["method"]), n_samples=validators.count(entry["n_samples"], f"{where}.n_samples", DataError),
        forgetting=None if entry.get("forgetting") is None else
        validators.fraction(entry["forgetting"], f"{where}.forgetting", DataError),
        convergence_samples=convergence.get("samples"), convergence_time=convergence.get("time"))


def load_cylinder_results(path) -> list[CylinderResult]:
    """The cylinders of a results file written by :func:`save_cylinder_results`.

    Raises
    ------
    DataError
        Unreadable file, another schema or version, a missing or malformed entry (named).
    """
    source = os.fspath(path)
    data = read_yaml(path, what="cylinder results file")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DataError(f"{source}: not a cylinder results file (schema {SCHEMA!r} expected, got "
                        f"{data.get('schema') if isinstance(data, dict) else data!r})")
    if data.get("version") != SCHEMA_VERSION:
        raise DataError(f"{source}: cylinder results version {data.get('version')!r}, this robot_dynid reads "
                        f"version {SCHEMA_VERSION}")
    entries = data.get("cylinders")
    if not isinstance(entries, list) or not entries:
        raise DataError(f"{source}: 'cylinders' must be a non-empty list")
    return [_result_from_dict(entry, f"{source}: cylinders[{index}]") for index, entry in enumerate(entries)]
