"""The friction models: one module per model, each declaring a :class:`FrictionShape`; this registry is where
everything else reads them (regressor columns, coefficient names and units, sign bounds, the compiled fast path,
MuJoCo's mapping, simulated values).

A model is ``tau_f = sum_c f_c * column_c(v, a)`` per joint, linear in its coefficients ``f_c``, with
``v = qd`` [rad/s], ``a = qdd`` [rad/s^2] and the shape constants of :class:`~robot_dynid.model.friction.FrictionModel`
(dead band, arctan sharpness, Stribeck velocity, reversal lead) fixed in advance.

Adding a model is one new module in this package that defines ``SHAPE`` (see ``coulomb_viscous.py``, and
docs/friction_models.md for a worked example); modules are found when this package is imported. A model defined
elsewhere (a user's own, a test's) joins with :func:`register`.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

import numpy as np

from robot_dynid.errors import DynIdError

#: Units a friction coefficient may have: a torque level or a torque per speed power.
COEFFICIENT_UNITS = ("N m", "N m s/rad", "N m s^2/rad^2", "N m s^3/rad^3", "N m (s/rad)^(1/3)")


@dataclass(frozen=True)
class Coefficient:
    """One coefficient of a friction model.

    Parameters
    ----------
    name : str
        Its name in parameter names (``fc`` -> ``fc1``, ``fc2``, ... per joint).
    unit : str
        SI unit of the coefficient (the column is then in ``N m`` per that unit), one of :data:`COEFFICIENT_UNITS`.
    nonnegative : bool
        True when a physical friction needs it ``>= 0`` (a Coulomb or viscous level); the physical-consistency
        constraints and the plausibility check bound it.
    typical : callable
        ``typical(T, v) -> value``: a plausible warm value for a joint whose torque scale is ``T`` [N m] and
        speed scale ``v`` [rad/s] (arrays), used by the simulator; the friction at full speed is a few % of ``T``.
    """

    name: str
    unit: str
    nonnegative: bool
    typical: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def __post_init__(self) -> None:
        if self.unit not in COEFFICIENT_UNITS:
            raise DynIdError(f"friction coefficient {self.name!r}: unit must be one of {COEFFICIENT_UNITS}, "
                             f"got {self.unit!r}")


@dataclass(frozen=True)
class FrictionShape:
    """What one friction model is: its coefficients and columns, and how the rest of the package treats it.

    Parameters
    ----------
    name : str
        The model's name (``--friction NAME``, the model file's ``friction.name``).
    summary : str
        The model's equation in one line (docs, ``--help``).
    coefficients : tuple of Coefficient
        In column order.
    columns : callable
        ``columns(model, v, scale, a) -> list of ndarray``: one column per coefficient, each of ``v``'s shape;
        ``model`` the :class:`~robot_dynid.model.friction.FrictionModel` (its shape constants), the speed constants
        multiplied by ``scale`` (1.0, or (n,) per column of ``v``: motor-side velocities).
    constants : tuple of str
        The :class:`~robot_dynid.model.friction.FrictionModel` constants this model reads beyond the dead band
        (written to model files only for the models that use them).
    compiled : str or None
        The C kernel's fast path for this model without drift: ``"sign_viscous"`` (columns ``sgn(v), v``),
        ``"sign_viscous_lead"`` (``sgn(v + tau_r a), v``), or None (the numpy path).
    mujoco : tuple or None
        How MuJoCo's joint friction maps onto the coefficients: ``(coefficient of the friction loss,
        coefficient of the damping, coefficients equal to the friction loss)``; None when MuJoCo cannot give the
        model's true values.
    """

    name: str
    summary: str
    coefficients: tuple[Coefficient, ...]
    columns: Callable
    constants: tuple[str, ...] = ()
    compiled: str | None = None
    mujoco: tuple | None = None

    @property
    def coefficient_names(self) -> tuple[str, ...]:
        return tuple(coefficient.name for coefficient in self.coefficients)

    def unit(self, coefficient: str) -> str:
        """The SI unit of one of this model's base coefficients."""
        for entry in self.coefficients:
            if entry.name == coefficient:
                return entry.unit
        raise DynIdError(f"friction model {self.name!r} has no coefficient {coefficient!r}; "
                         f"it has {self.coefficient_names}")


_SHAPES: dict[str, FrictionShape] = {}


def register(shape: FrictionShape) -> FrictionShape:
    """Add ``shape`` to the registry (a second model of the same name is refused)."""
    if not isinstance(shape, FrictionShape):
        raise DynIdError(f"a friction model must be a FrictionShape, got {type(shape).__name__}")
    if shape.name in _SHAPES and _SHAPES[shape.name] is not shape:
        raise DynIdError(f"friction model {shape.name!r} is already registered")
    names = shape.coefficient_names
    if len(set(names)) != len(names):
        raise DynIdError(f"friction model {shape.name!r}: coefficient names repeat: {names}")
    if shape.compiled not in (None, "sign_viscous", "sign_viscous_lead"):
        raise DynIdError(f"friction model {shape.name!r}: compiled must be None, 'sign_viscous' or "
                         f"'sign_viscous_lead', got {shape.compiled!r}")
    _SHAPES[shape.name] = shape
    return shape


def unregister(name: str) -> None:
    """Remove a model added with :func:`register` (the package's own stay)."""
    if name in _BUILT_IN:
        raise DynIdError(f"friction model {name!r} is one of the package's own")
    _SHAPES.pop(name, None)


def shape(name: str) -> FrictionShape:
    """The registered model ``name``."""
    try:
        return _SHAPES[name]
    except KeyError:
        raise DynIdError(f"friction model must be one of {names()}, got {name!r}") from None


def names() -> tuple[str, ...]:
    """The registered models' names, ``none`` first, then the package's own in module order, then added ones."""
    return tuple(_SHAPES)


def _discover() -> tuple[str, ...]:
    modules = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    order = {"none": 0, "coulomb_viscous": 1}            # the two a user meets first lead the choices
    for module in sorted(modules, key=lambda name: (order.get(name, 2), name)):
        register(importlib.import_module(f"{__name__}.{module}").SHAPE)
    return tuple(_SHAPES)


_BUILT_IN = _discover()
