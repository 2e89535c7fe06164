"""Physically consistent inertial parameters: checks, constrained estimation, plausibility.

A link's 10 inertial parameters ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (mass [kg],
first moment ``h = m c`` [kg m], inertia ``I`` about the link frame origin [kg m^2], in the
regressor's order) are physically consistent, i.e. some non-negative mass density realises them,
exactly when the pseudo-inertia ::

    J = [[Sigma, h], [h^T, m]],    Sigma = 0.5 tr(I) 1 - I   (= integral of x x^T dm)

is positive semidefinite (Wensing, Kim, Slotine, RA-L 2017). That implies ``m >= 0``, an inertia
about the centre of mass that is positive semidefinite and the triangle inequalities.

:func:`solve_consistent` estimates standard parameters ``pi`` (p,) from accumulated base normal
equations, minimising the weighted residual ``sum_j w_j ||W_j K pi - tau_j||^2`` (``W_j`` joint
j's base regressor rows, ``K`` the base projection) subject to, per link, ``D J D >= margin 1``
(``D = diag(1/(L sqrt(M)) x3, 1/sqrt(M))``: ``J`` in units of the link's mass scale ``M`` [kg]
and length scale ``L`` [m]), friction coefficients and armatures ``>= 0`` and optional bounds,
as a semidefinite program (Sousa and Cortesao, IJRR 2014) solved by CLARABEL through cvxpy.
The least-squares part is compressed first (:func:`compress`): ``G = sum_j w_j G_j = R^T R``,
``c = R^-T b``, so the residual is ``||R K pi - c||^2 + const`` whatever the number of samples.
From the Gram matrices this is exact to about ``cond(G_s) eps`` relative (``G_s`` the column-scaled
``G``); above :data:`GRAM_CONDITION_LIMIT` the caller passes triangular factors of the regressor
instead (:class:`~robot_dynid.estimation.estimators.QRAccumulator`, :func:`compress_factors`).
Only ``K pi`` is identified; the standard parameters are made unique by a prior (CAD or URDF
inertials) or, without one, by a small regulariser of the unidentified directions.

:func:`check_plausibility` judges any identified base parameters: negative friction, and
whether some consistent standard set maps onto them (if not: how far, in standard deviations,
the nearest consistent set is and which base parameters differ most).

cvxpy is imported only inside the functions that solve a program, so the rest of robot_dynid
works without it; :class:`SolverUnavailableError` says how to install it. The plausibility check
first looks for a consistent standard set mapping onto the values without a solver (the prior moved
by the least-squares correction, :func:`_consistent_preimage`); only when that finds none does it
import cvxpy and solve its program.

Bounds file (:func:`load_constraints`, YAML; every key optional)::

    margin: 1.0e-6                  # of the scaled pseudo-inertia, see DEFAULT_MARGIN
    total_mass: [15.0, 20.0]        # kg, sum of the link masses
    links:
      panda_joint3:                 # the link joint panda_joint3 moves: the joint name, the
                                    # link name (URDF child link, <joint>_link for DH robots)
                                    # or link<j> (1-based)
        mass: [2.0, 4.0]            # kg
        com_box: [[-0.1, -0.1, -0.2], [0.1, 0.1, 0.0]]   # m, min and max corner of the
                                                        # centre of mass, in the link frame
    friction_nonnegative: true      # Coulomb/viscous coefficients >= 0 (nonnegative_friction)
    armature_nonnegative: true
"""
from __future__ import annotations

import dataclasses
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError, message_line
from robot_dynid.estimation.estimators import (RANK_TOLERANCE, Estimator, LeastSquaresAccumulator,
                                               check_overdetermined, column_scales)
from robot_dynid.estimation.identification_options import DEFAULT_PRIOR_WEIGHT, PRIOR_MODES
from robot_dynid.model import friction_models
from robot_dynid.model.base_parameters import BaseParameters
from robot_dynid.model.link_inertials import link_names, pseudo_inertia
from robot_dynid.model.regressor import N_INERTIAL, Regressor, inertia_matrix
from robot_dynid.model.robot_description import build_pinocchio_model
from robot_dynid.yaml_files import read_yaml

__all__ = ["DEFAULT_MARGIN", "DEFAULT_DELTA", "NULL_SPACE_WEIGHT", "TIE_BREAK_WEIGHT", "BAND_FLOOR",
           "DEFAULT_MASS_SCALE", "LENGTH_FLOOR", "NOISE_FLOOR", "ACTIVE_SLACK", "CONSISTENT_DISTANCE", "STD_FLOOR",
           "N_OFFENDERS", "PREIMAGE_TOLERANCE", "PREIMAGE_ITERATIONS", "PREIMAGE_FLOOR", "SOLVER_TOLERANCE",
           "nonnegative_friction", "INSTALL_HINT", "SolverUnavailableError", "cvxpy_available", "warm_up_solver",
           "LinkConsistency", "ParameterLayout", "link_consistency", "ConsistencyConstraints", "load_constraints",
           "GRAM_CONDITION_LIMIT",
           "scaled_gram_condition", "CompressedLeastSquares", "compress", "compress_factors", "ConsistentResult",
           "solve_consistent", "ConsistentSolver", "BodyFit", "solve_consistent_body", "PlausibilityReport",
           "check_plausibility"]

logger = logging.getLogger(__name__)

#: Default ``margin`` of ``D J D >= margin 1`` (``J`` in units of the link's mass and length
#: scales). Far below any real link (a rod of radius r and length L has a smallest scaled
#: eigenvalue of about (r/L)^2 / 4, 1e-3 for r/L = 0.06) and far above the solver's tolerance
#: (about 1e-8), so a returned J is positive definite despite rounding.
DEFAULT_MARGIN = 1e-6
#: Two-step mode: the prior may cost up to this fraction of the best consistent weighted
#: residual sum of squares (1 %: the torque RMS grows by at most 0.5 %).
DEFAULT_DELTA = 0.01
#: No prior: weight of ``||N^T x||^2`` (N: the directions the data do not see, x in link
#: scales) relative to the weakest curvature the data resolve. It makes the standard
#: parameters unique (the consistent analogue of the minimum-norm least-squares solution);
#: orthogonal to the residual, it moves what the data resolve only where a link sits on its
#: consistency bound (measured: < 0.02 std of the unconstrained fit when that is consistent).
NULL_SPACE_WEIGHT = 1e-3
#: Second program: weight of the residual relative to the band, so that it decides only
#: what the prior leaves open (friction and offsets have no prior).
TIE_BREAK_WEIGHT = 1e-2
#: Floor of the residual band, in noise variances: at most sqrt(1e-2) = 0.1 std of change
#: in any direction the data resolve (the whole band when delta = 0, i.e. without a prior);
#: thinner bands leave CLARABEL too thin a feasible set when constraints bind.
BAND_FLOOR = 1e-2
#: Link scales used when nothing better is known: mass [kg]; the length is the distance from
#: the link's joint to the next one, at least LENGTH_FLOOR [m] (the last link: LENGTH_FLOOR).
DEFAULT_MASS_SCALE = 1.0
LENGTH_FLOOR = 0.1
#: Noise variance floor, as a fraction of the mean square (weighted) torque: noise-free data
#: would otherwise divide by zero.
NOISE_FLOOR = 1e-10
#: A constraint counts as active when its slack is below this, in scaled units: the scaled
#: pseudo-inertia's smallest eigenvalue above the margin (relative to its largest when that
#: exceeds 1), a friction coefficient or armature in its variable scale, a mass in M.
ACTIVE_SLACK = 1e-5
#: Base parameters within this distance [std] of a consistent set count as consistent: a tenth
#: of a standard deviation is statistically nothing, and it leaves room for the solver's
#: accuracy in std units, which for a well-determined parameter of a long recording (a tiny
#: std) reached 0.02 std on a fit that is consistent by construction.
CONSISTENT_DISTANCE = 0.1
#: :func:`check_plausibility` floors each std at this fraction of the larger of the value and
#: the base parameter's magnitude for links of the scales M, L (noise-free fits have std ~ 0,
#: which no solver resolves).
STD_FLOOR = 1e-6
#: Offenders listed by :func:`check_plausibility`.
N_OFFENDERS = 3
#: :func:`_consistent_preimage`: largest residual of the preimage (relative to the largest value) and
#: smallest eigenvalue above the margin of its scaled pseudo-inertias.
PREIMAGE_TOLERANCE = 1e-9
#: :func:`_consistent_preimage`: alternating projections at most, and the eigenvalue floor [1] above the margin
#: its projection raises the scaled pseudo-inertias to.
PREIMAGE_ITERATIONS = 200
PREIMAGE_FLOOR = 3e-3
#: CLARABEL's gap and feasibility tolerances (its defaults are 1e-8, which left poorly excited
#: directions 1e-3 of their scale off on noise-free data; 1e-10 often ended optimal_inaccurate).
SOLVER_TOLERANCE = 1e-9


def nonnegative_friction(name: str) -> dict[str, str]:
    """``{coefficient: unit}`` of the coefficients of friction model ``name`` that must be ``>= 0`` (the registry's
    ``nonnegative`` coefficients, :mod:`robot_dynid.model.friction_models`): Coulomb and viscous levels always,
    arctan's ``fs`` too (the friction level just above zero speed). Free: stribeck_cbrt's ``fs`` (a correction of
    either sign), polynomial ``f3, f4`` (shape terms, often negative) and every drift coefficient (friction falls
    as a joint warms)."""
    return {entry.name: entry.unit for entry in friction_models.shape(name).coefficients if entry.nonnegative}


INSTALL_HINT = ("needs cvxpy with the CLARABEL solver: pip install cvxpy, or pip install "
                '"robot-dynid[consistent]"')


class SolverUnavailableError(IdentificationError):
    """cvxpy (or its CLARABEL solver) is not installed."""


def _require_cvxpy():
    """The cvxpy module, or SolverUnavailableError saying how to install it."""
    try:
        import cvxpy
    except ImportError:
        raise SolverUnavailableError(f"physical consistency {INSTALL_HINT}") from None
    if "CLARABEL" not in cvxpy.installed_solvers():
        raise SolverUnavailableError(f"physical consistency {INSTALL_HINT} (cvxpy is there, "
                                     "CLARABEL is not: pip install clarabel)")
    return cvxpy


def cvxpy_available() -> bool:
    """True when cvxpy and CLARABEL can be imported (no error)."""
    try:
        _require_cvxpy()
    except SolverUnavailableError:
        return False
    return True


def warm_up_solver() -> bool:
    """Import cvxpy and solve a small semidefinite problem with CLARABEL, so that the first consistency or
    plausibility check of a long-running process does not pay for cvxpy's imports and first-solve setup (about a
    second); False, nothing done, where the solver is missing."""
    if not cvxpy_available():
        return False
    cp = _require_cvxpy()
    matrix = cp.Variable((2, 2), symmetric=True)
    cp.Problem(cp.Minimize(cp.sum_squares(matrix - np.eye(2))), [matrix >> 0]).solve(solver="CLARABEL")
    return True


# ---------------------------------------------------------------------------------------------
# Pseudo-inertia and per-link checks (pseudo_inertia itself: robot_dynid.model.link_inertials)


#: ``vec(J) = _PSEUDO_INERTIA_MAP @ link_parameters`` (row-major vec), for the programs.
_PSEUDO_INERTIA_MAP = np.column_stack([pseudo_inertia(e).ravel() for e in np.eye(N_INERTIAL)])
_PSEUDO_INERTIA_INVERSE = np.linalg.pinv(_PSEUDO_INERTIA_MAP)      # (10, 16): a symmetric J back to its parameters


@dataclass(frozen=True)
class LinkConsistency:
    """Consistency figures of one link's inertial parameters.

    Attributes
    ----------
    link : str
        The joint that moves the link.
    mass : float
        [kg].
    com : ndarray, shape (3,)
        Centre of mass [m] in the link frame (NaN unless ``mass > 0``).
    min_eigenvalue : float
        Smallest eigenvalue of the pseudo-inertia ``J`` (mixed units: kg m^2 unless the
        mass is the smaller); ``>= 0`` iff consistent.
    central_moments : ndarray, shape (3,)
        Principal moments of the inertia about the centre of mass [kg m^2], ascending
        (NaN unless ``mass > 0``).
    triangle : bool
        The central moments satisfy ``a + b >= c`` for every ordering (a rigid body's do).
    consistent : bool
        ``J`` positive semidefinite (``min_eigenvalue >= -1e-12 max|J|``, rounding).
    """

    link: str
    mass: float
    com: np.ndarray
    min_eigenvalue: float
    central_moments: np.ndarray
    triangle: bool
    consistent: bool

    def to_dict(self) -> dict:
        return {"link": self.link, "mass": self.mass, "com": self.com.tolist(),
                "min_eigenvalue": self.min_eigenvalue,
                "central_moments": self.central_moments.tolist(), "triangle": self.triangle,
                "consistent": self.consistent}


def _link_consistency(name: str, parameters: np.ndarray) -> LinkConsistency:
    J = pseudo_inertia(parameters)
    min_eigenvalue = float(np.linalg.eigvalsh(J)[0])
    mass = float(parameters[0])
    com = np.full(3, np.nan)
    moments = np.full(3, np.nan)
    if mass > 0.0:
        com = parameters[1:4] / mass
        central = (inertia_matrix(parameters[4:])
                   - mass * (com @ com * np.eye(3) - np.outer(com, com)))
        moments = np.linalg.eigvalsh(central)
    slack = 1e-12 * max(float(np.abs(J).max()), 1e-300)
    triangle = bool(moments[0] + moments[1] >= moments[2] - slack)
    return LinkConsistency(name, mass, com, min_eigenvalue, moments, triangle,
                           min_eigenvalue >= -slack)


# ---------------------------------------------------------------------------------------------
# Parameter layout and constraints


def _row_unit(unit: str, row, robot) -> str:
    """``unit`` of a rotary drive quantity (``N m``, ``N m s/rad``, ``kg m^2``) as it is for the friction or
    armature row ``row``: motors and revolute joints keep it, a prismatic joint's is linear (``N``,
    ``N s/m``, ``kg``)."""
    if row.kind != "joint" or not robot.prismatic[row.index]:
        return unit
    return {"N m": "N", "N m s/rad": "N s/m", "kg m^2": "kg"}[unit]


@dataclass(frozen=True, eq=False)
class ParameterLayout:
    """Where the standard parameters sit: each link's 10 inertial ones first (link ``i`` at
    ``10 i`` to ``10 i + 9``), then friction, armature and offsets, as :class:`Regressor` orders them.

    Attributes
    ----------
    standard_names : tuple of str
        The ``p`` standard parameter names.
    link_names : tuple of str
        Per link, the joint that moves it.
    link_aliases : tuple of tuple of str
        Per link, the names a bounds file may use: joint name, ``link<j>`` and the link's name
        (:func:`robot_dynid.model.link_inertials.link_names`: the URDF child link, ``<joint>_link``
        for DH robots).
    nonnegative : tuple of int
        Standard indices that must be ``>= 0``: friction coefficients (see
        :func:`nonnegative_friction`) and armatures.
    nonnegative_units : tuple of str
        Their units, for messages.
    armature : tuple of int
        The armature indices among them.
    length_scales : ndarray, shape (n,)
        ``L`` per link [m]: distance from its joint to the next one, at least LENGTH_FLOOR.
    """

    standard_names: tuple[str, ...]
    link_names: tuple[str, ...]
    link_aliases: tuple[tuple[str, ...], ...]
    nonnegative: tuple[int, ...]
    nonnegative_units: tuple[str, ...]
    armature: tuple[int, ...]
    length_scales: np.ndarray

    @property
    def n_links(self) -> int:
        return len(self.link_names)

    @property
    def n_parameters(self) -> int:
        return len(self.standard_names)

    @classmethod
    def from_regressor(cls, regressor: Regressor) -> "ParameterLayout":
        """The layout of ``regressor``'s parameters, with length scales from its robot."""
        if not isinstance(regressor, Regressor):
            raise DynIdError(f"regressor must be a Regressor, got {type(regressor).__name__}")
        robot, n, p = regressor.robot, regressor.n_joints, regressor.n_parameters
        names = regressor.parameter_names
        required = nonnegative_friction(regressor.friction.name)
        coefficients = regressor.friction.coefficient_names  # row by row (joints, motors) in theta
        start = regressor.slices["friction"].start
        nonnegative = [(start + row_index * len(coefficients) + c, _row_unit(required[name], row, robot))
                       for row_index, row in enumerate(regressor.friction_rows)
                       for c, name in enumerate(coefficients) if name in required]
        armature = tuple(range(p)[regressor.slices["armature"]])
        nonnegative += [(index, _row_unit("kg m^2", row, robot))
                        for index, row in zip(armature, regressor.armature_rows)]
        aliases = tuple(tuple(dict.fromkeys([joint, f"link{j + 1}", link]))
                        for j, (joint, link) in enumerate(zip(robot.joint_names, link_names(robot))))
        model = build_pinocchio_model(robot)
        lengths = np.array([np.linalg.norm(model.jointPlacements[j + 1].translation)
                            if j < n else 0.0 for j in range(1, n + 1)])
        return cls(standard_names=names, link_names=tuple(robot.joint_names),
                   link_aliases=aliases,
                   nonnegative=tuple(index for index, _ in nonnegative),
                   nonnegative_units=tuple(unit for _, unit in nonnegative), armature=armature,
                   length_scales=np.maximum(lengths, LENGTH_FLOOR))

    def link_label(self, link: int) -> str:
        """``"link 3 (panda_joint3)"``."""
        return f"link {link + 1} ({self.link_names[link]})"


def link_consistency(standard, layout: ParameterLayout) -> tuple[LinkConsistency, ...]:
    """Per link: mass, centre of mass, smallest eigenvalue of ``J``, central principal
    moments, triangle inequalities and whether ``J >= 0``.

    Parameters
    ----------
    standard : array_like, shape (p,) or (10 n,)
        Standard parameters (only the inertial ones are read).
    layout : ParameterLayout
    """
    standard = np.asarray(standard, dtype=float)
    n = layout.n_links
    if standard.shape not in ((layout.n_parameters,), (N_INERTIAL * n,)):
        raise DynIdError(f"standard parameters must have shape ({layout.n_parameters},) or "
                         f"({N_INERTIAL * n},), got {standard.shape}")
    return tuple(_link_consistency(name, standard[N_INERTIAL * i:N_INERTIAL * (i + 1)])
                 for i, name in enumerate(layout.link_names))


def _check_range(value, what: str, lower_bound: float = 0.0) -> tuple[float, float]:
    """``[lo, hi]`` with ``lower_bound <= lo <= hi`` (hi may be inf)."""
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise DynIdError(f"{what} must be [lo, hi], got {value!r}") from None
    if not (math.isfinite(lo) and lower_bound <= lo <= hi) or math.isnan(hi):
        raise DynIdError(f"{what} must be [lo, hi] with {lower_bound:g} <= lo <= hi, "
                         f"got {value!r}")
    return lo, hi


def _check_box(value, what: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    try:
        lower, upper = (tuple(float(v) for v in corner) for corner in value)
    except (TypeError, ValueError):
        lower = upper = ()
    if len(lower) != 3 or len(upper) != 3 or not all(map(math.isfinite, lower + upper)) \
            or any(lo > hi for lo, hi in zip(lower, upper)):
        raise DynIdError(f"{what} must be [[x0, y0, z0], [x1, y1, z1]] [m] with finite "
                         f"x0 <= x1, y0 <= y1, z0 <= z1, got {value!r}")
    return lower, upper


@dataclass(frozen=True, eq=False)
class ConsistencyConstraints:
    """Constraints of the consistent estimate besides ``J >= 0``.

    Attributes
    ----------
    margin : float
        ``D J D >= margin 1`` per link, ``J`` in units of the link's mass and length scales
        (default :data:`DEFAULT_MARGIN`).
    link_mass : dict of int to (float, float)
        Mass range [kg] per link index (0-based).
    total_mass : (float, float) or None
        Range of the sum of the link masses [kg].
    com_box : dict of int to ((x0, y0, z0), (x1, y1, z1))
        Per link index, box [m] in the link frame that holds the centre of mass
        (``x0 m <= mx <= x1 m``, ... : linear because ``m > 0``).
    friction_nonnegative, armature_nonnegative : bool
        Sign constraints (see :func:`nonnegative_friction`).
    """

    margin: float = DEFAULT_MARGIN
    link_mass: dict = field(default_factory=dict)
    total_mass: tuple | None = None
    com_box: dict = field(default_factory=dict)
    friction_nonnegative: bool = True
    armature_nonnegative: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.margin, bool) or not isinstance(self.margin, (int, float)) \
                or not 0.0 <= self.margin < 1.0:
            raise DynIdError(f"margin must be a number in [0, 1), got {self.margin!r}")
        object.__setattr__(self, "link_mass", {
            int(link): _check_range(value, f"link_mass[{link}] [kg]")
            for link, value in dict(self.link_mass).items()})
        if self.total_mass is not None:
            object.__setattr__(self, "total_mass",
                               _check_range(self.total_mass, "total_mass [kg]"))
        object.__setattr__(self, "com_box", {
            int(link): _check_box(value, f"com_box[{link}]")
            for link, value in dict(self.com_box).items()})
        for name in ("friction_nonnegative", "armature_nonnegative"):
            validators.flag(getattr(self, name), name, DynIdError)

    def check_links(self, layout: ParameterLayout) -> None:
        """DynIdError naming a link index beyond the robot's."""
        for what in ("link_mass", "com_box"):
            bad = [link for link in getattr(self, what) if not 0 <= link < layout.n_links]
            if bad:
                raise DynIdError(f"{what} names link index {bad[0]}; the robot has links "
                                 f"0..{layout.n_links - 1}")


def load_constraints(path, layout: ParameterLayout) -> ConsistencyConstraints:
    """Read a bounds file (schema in the module docstring).

    Raises
    ------
    DataError
        One line naming the file and key: unreadable or not YAML, an unknown key or link,
        a range that is not ``[lo, hi]`` with ``0 <= lo <= hi``, a malformed box.
    """
    data = read_yaml(path, what="bounds file")
    data = {} if data is None else data
    keys = ("margin", "total_mass", "links", "friction_nonnegative", "armature_nonnegative")
    if not isinstance(data, dict) or set(map(str, data)) - set(keys):
        found = sorted(set(map(str, data)) - set(keys)) if isinstance(data, dict) \
            else type(data).__name__
        raise DataError(f"{path}: a bounds file is a mapping of {list(keys)}, got {found}")
    lookup = {alias: link for link, aliases in enumerate(layout.link_aliases)
              for alias in aliases}
    link_mass, com_box = {}, {}
    links = data.get("links") or {}
    if not isinstance(links, dict):
        raise DataError(f"{path}: links must map link names to bounds, got {links!r}")
    for name, bounds in links.items():
        if str(name) not in lookup:
            raise DataError(f"{path}: links.{name} is not a link of the robot; use a joint "
                            f"name {list(layout.link_names)}, its link's name or link<j>")
        if not isinstance(bounds, dict) or set(map(str, bounds)) - {"mass", "com_box"}:
            raise DataError(f"{path}: links.{name} must be a mapping with mass and/or "
                            f"com_box, got {bounds!r}")
        link = lookup[str(name)]
        if link in link_mass or link in com_box:
            raise DataError(f"{path}: links.{name} names {layout.link_label(link)} a second time")
        try:
            if "mass" in bounds:
                link_mass[link] = _check_range(bounds["mass"], f"links.{name}.mass [kg]")
            if "com_box" in bounds:
                com_box[link] = _check_box(bounds["com_box"], f"links.{name}.com_box")
        except DynIdError as error:
            raise DataError(f"{path}: {error}") from None
    options = {key: data[key] for key in ("margin", "friction_nonnegative",
                                          "armature_nonnegative") if key in data}
    try:
        return ConsistencyConstraints(link_mass=link_mass, com_box=com_box,
                                      total_mass=data.get("total_mass"), **options)
    except DynIdError as error:
        raise DataError(f"{path}: {error}") from None


# ---------------------------------------------------------------------------------------------
# Compression of the least-squares problem


#: [1] Largest condition number of the column-scaled Gram matrix ``G_s = D^-1 G D^-1`` (``= cond(W_s)^2``,
#: ``D = diag(sqrt(diag G))``) from which the compression is formed: its eigendecomposition loses about
#: ``cond(G_s) eps`` relative, 2e-11 at the limit (the scaled regressor's condition number then 316). Above
#: it :func:`~robot_dynid.estimation.identification.identify` compresses triangular factors of the regressor
#: instead (a second pass over the data, error about ``cond(W_s) eps``).
GRAM_CONDITION_LIMIT = 1e5


def scaled_gram_condition(gram, joint_weights=None) -> float:
    """Condition number of ``G_s`` (see :data:`GRAM_CONDITION_LIMIT`) of ``G = sum_j w_j G_j``,
    ``gram`` (n, r, r), ``joint_weights`` (n,) (ones by default); zero columns are left out, inf when
    singular."""
    gram = np.asarray(gram, dtype=float)
    G = np.einsum("j,jpq->pq", _joint_weights(joint_weights, gram.shape[0]), gram)
    used = np.flatnonzero(np.diag(G) > 0.0)
    if not used.size:
        return math.inf
    scales = np.sqrt(np.diag(G)[used])
    eigenvalues = np.linalg.eigvalsh(G[np.ix_(used, used)] / np.outer(scales, scales))
    return float(eigenvalues[-1] / eigenvalues[0]) if eigenvalues[0] > 0.0 else math.inf


@dataclass(frozen=True)
class CompressedLeastSquares:
    """``sum_j w_j ||W_j beta - tau_j||^2 = ||R beta - c||^2 + constant`` for base values beta.

    Attributes
    ----------
    R : ndarray, shape (m, r)
        ``R^T R = G = sum_j w_j G_j`` on the ``m`` directions the data resolve (m < r when
        the data are rank deficient: the rest carry no information).
    c : ndarray, shape (m,)
        ``R^-T b``, ``b = sum_j w_j W_j^T tau_j``.
    constant : float
        The smallest weighted residual sum of squares (the least-squares fit's), >= 0.
    inverse_gram : ndarray, shape (r, r)
        ``G^-1`` on the resolved directions.
    unresolved : ndarray of bool, shape (r,)
        Base parameters with a component in the unresolved directions.
    """

    R: np.ndarray
    c: np.ndarray
    constant: float
    inverse_gram: np.ndarray
    unresolved: np.ndarray

    def residual(self, base_values) -> float:
        """Weighted residual sum of squares of ``base_values`` (r,)."""
        return float(np.sum((self.R @ base_values - self.c) ** 2) + self.constant)


def compress(gram, moment, torque_square_sum, joint_weights=None,
             rank_tolerance: float = RANK_TOLERANCE) -> CompressedLeastSquares:
    """Compress accumulated per-joint normal equations into ``(R, c, constant)``.

    With the column scales ``d = sqrt(diag G)`` and ``G / (d d^T) = V diag(lam) V^T``:
    ``R = diag(sqrt(lam)) V^T diag(d)``, ``c = diag(1/sqrt(lam)) V^T (b / d)``, keeping
    ``sqrt(lam) > rank_tolerance sqrt(lam_max)``; robust to a near-singular ``G``, unlike a
    Cholesky factor.

    Parameters
    ----------
    gram : array_like, shape (n, r, r)
        ``G_j = W_j^T W_j`` (``LeastSquaresAccumulator.gram_``).
    moment : array_like, shape (n, r)
        ``W_j^T tau_j``.
    torque_square_sum : array_like, shape (n,)
        ``tau_j^T tau_j`` [N^2 m^2].
    joint_weights : array_like, shape (n,), optional
        ``w_j`` (e.g. ``1 / sigma_j^2`` for WLS); ones by default.
    rank_tolerance : float
        Relative singular value below which a direction is unresolved.
    """
    gram = np.asarray(gram, dtype=float)
    moment = np.asarray(moment, dtype=float)
    torque_square_sum = np.asarray(torque_square_sum, dtype=float)
    n = torque_square_sum.shape[0] if torque_square_sum.ndim == 1 else -1
    if gram.ndim != 3 or gram.shape[0] != n or gram.shape[1] != gram.shape[2] \
            or moment.shape != gram.shape[:2]:
        raise DataError(f"normal equations must be gram (n, r, r), moment (n, r) and "
                        f"torque_square_sum (n,), got {gram.shape}, {moment.shape} and "
                        f"{torque_square_sum.shape}")
    weights = _joint_weights(joint_weights, n)
    G = np.einsum("j,jpq->pq", weights, gram)
    b = weights @ moment
    scales = column_scales(np.diag(G).copy())
    eigenvalues, vectors = np.linalg.eigh(G / np.outer(scales, scales))
    keep = eigenvalues > rank_tolerance**2 * max(eigenvalues[-1], 0.0)
    root = np.sqrt(eigenvalues[keep])
    kept = vectors[:, keep]
    R = (root[:, None] * kept.T) * scales[None, :]
    c = (kept.T @ (b / scales)) / root
    inverse_gram = ((kept / root**2) @ kept.T) / np.outer(scales, scales)
    constant = max(float(weights @ torque_square_sum - c @ c), 0.0)
    unresolved = np.any(np.abs(vectors[:, ~keep]) > 1e-4, axis=1)
    return CompressedLeastSquares(R, c, constant, inverse_gram, unresolved)


def compress_factors(factors, joint_weights=None,
                     rank_tolerance: float = RANK_TOLERANCE) -> CompressedLeastSquares:
    """:func:`compress` from per-joint triangular factors instead of Gram matrices (no squaring of the
    condition number).

    ``F = QR([sqrt(w_j) F_j]_j) = [[T, z], [0, rho]]``; with the column scales ``d`` (``d_c`` the norm of
    column c of ``T``, = ``sqrt(G_cc)``) and ``T / d = U diag(s) V^T``: ``R = diag(s) V^T diag(d)``,
    ``c = U^T z`` on the directions kept (``s > rank_tolerance s_max``), the rest of ``U^T z`` joining
    ``constant = rho^2``: the same (R, c, constant) as :func:`compress` up to rounding.

    Parameters
    ----------
    factors : array_like, shape (n, r + 1, r + 1)
        Per joint ``[[R_j, z_j], [0, rho_j]]`` with ``||W_j x - tau_j||^2 = ||R_j x - z_j||^2 + rho_j^2``
        (:meth:`~robot_dynid.estimation.estimators.QRAccumulator.factors`).
    joint_weights, rank_tolerance
        As in :func:`compress`.
    """
    factors = np.asarray(factors, dtype=float)
    if factors.ndim != 3 or factors.shape[1] != factors.shape[2] or factors.shape[1] < 1:
        raise DataError(f"factors must have shape (n, r + 1, r + 1), got {factors.shape}")
    n, r = factors.shape[0], factors.shape[1] - 1
    weights = _joint_weights(joint_weights, n)
    stacked = (np.sqrt(weights)[:, None, None] * factors).reshape(n * (r + 1), r + 1)
    import scipy.linalg                               # here: it costs a command's start 0.2 s
    triangle = scipy.linalg.qr(stacked, mode="r", check_finite=False)[0][:r + 1]
    T, z = triangle[:r, :r], triangle[:r, r]
    rho2 = float(triangle[r, r] ** 2) if triangle.shape[0] > r else 0.0
    scales = column_scales(np.sum(T**2, axis=0))
    left, singular_values, right_t = np.linalg.svd(T / scales)
    keep = singular_values > rank_tolerance * max(singular_values[0], 0.0)
    rotated = left.T @ z
    R = (singular_values[keep, None] * right_t[keep]) * scales[None, :]
    kept = right_t[keep].T
    inverse_gram = ((kept / singular_values[keep] ** 2) @ kept.T) / np.outer(scales, scales)
    unresolved = np.any(np.abs(right_t[~keep].T) > 1e-4, axis=1)
    constant = rho2 + float(np.sum(rotated[~keep] ** 2))
    return CompressedLeastSquares(R, rotated[keep], constant, inverse_gram, unresolved)


def _joint_weights(joint_weights, n: int) -> np.ndarray:
    if joint_weights is None:
        return np.ones(n)
    return validators.array(joint_weights, "joint_weights", DynIdError, shape=(n,), axes=("joints",), minimum=0.0,
                            allow_minimum=False)


# ---------------------------------------------------------------------------------------------
# The programs


def _prior_vector(prior, layout: ParameterLayout) -> tuple[np.ndarray, np.ndarray]:
    """Prior values (p,) (0 where absent) and the mask of given entries."""
    p = layout.n_parameters
    values = np.full(p, np.nan)
    if prior is not None:
        prior = np.asarray(prior, dtype=float)
        if prior.shape not in ((p,), (N_INERTIAL * layout.n_links,)):
            raise DynIdError(f"prior must have shape ({p},) or ({N_INERTIAL * layout.n_links},) "
                             f"(inertial only; NaN = no prior), got {prior.shape}")
        if np.any(np.isinf(prior)):
            raise DynIdError(f"prior holds inf at {layout.standard_names[np.isinf(prior).argmax()]}")
        values[:prior.size] = prior
    mask = ~np.isnan(values)
    return np.where(mask, values, 0.0), mask


def _physical_scales(layout: ParameterLayout, prior: np.ndarray, mask: np.ndarray,
                     constraints: ConsistencyConstraints) -> np.ndarray:
    """Scales (10 n,) ``[M, M L x3, M L^2 x6]`` per link: ``M`` the prior's mass, else the
    middle of its mass range, else of total_mass / n, else DEFAULT_MASS_SCALE; ``L`` from
    the layout."""
    n = layout.n_links
    masses = np.full(n, DEFAULT_MASS_SCALE)
    if constraints.total_mass is not None and math.isfinite(constraints.total_mass[1]):
        masses[:] = max(sum(constraints.total_mass) / (2 * n), 1e-3)
    for link, (lo, hi) in constraints.link_mass.items():
        masses[link] = max(0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * lo, 1e-3)
    prior_mass = prior[0:N_INERTIAL * n:N_INERTIAL]
    given = mask[0:N_INERTIAL * n:N_INERTIAL] & (prior_mass > 0.0)
    masses[given] = prior_mass[given]
    length = layout.length_scales
    return np.column_stack([masses, *[masses * length] * 3,
                            *[masses * length**2] * 6]).ravel()


def _variable_scales(physical: np.ndarray, design: np.ndarray) -> np.ndarray:
    """Scales (p,) of ``pi = scales * x``: physical for inertial parameters; for the others,
    so that their columns of ``design`` (rows, p) have the median norm of the inertial ones."""
    norms = np.linalg.norm(design, axis=0)
    inertial = norms[:physical.size] * physical
    target = np.median(inertial[inertial > 0.0]) if np.any(inertial > 0.0) else 1.0
    rest = norms[physical.size:]
    matched = np.divide(target, rest, out=np.ones_like(rest), where=rest > 0.0)
    return np.concatenate([physical, matched])


def _constraint_list(cp, x, layout: ParameterLayout, scales: np.ndarray,
                     constraints: ConsistencyConstraints) -> list:
    """cvxpy constraints on the scaled parameters ``x = pi / scales``."""
    result = []
    for link in range(layout.n_links):
        block = x[N_INERTIAL * link:N_INERTIAL * (link + 1)]
        J = cp.reshape(_PSEUDO_INERTIA_MAP @ block, (4, 4), order="C")
        result.append(J >> constraints.margin * np.eye(4))
    nonnegative = [index for index in layout.nonnegative
                   if (constraints.armature_nonnegative if index in layout.armature
                       else constraints.friction_nonnegative)]
    if nonnegative:
        result.append(x[nonnegative] >= 0.0)
    mass = scales[0:N_INERTIAL * layout.n_links:N_INERTIAL]
    for link, (lo, hi) in constraints.link_mass.items():
        result.append(mass[link] * x[N_INERTIAL * link] >= lo)
        if math.isfinite(hi):
            result.append(mass[link] * x[N_INERTIAL * link] <= hi)
    if constraints.total_mass is not None:
        total = mass @ x[0:N_INERTIAL * layout.n_links:N_INERTIAL]
        result.append(total >= constraints.total_mass[0])
        if math.isfinite(constraints.total_mass[1]):
            result.append(total <= constraints.total_mass[1])
    for link, (lower, upper) in constraints.com_box.items():
        start = N_INERTIAL * link
        length = scales[start + 1] / scales[start]
        h, m = x[start + 1:start + 4], x[start]
        result += [length * h >= np.array(lower) * m, length * h <= np.array(upper) * m]
    return result


def _solve(cp, problem, what: str, layout: ParameterLayout | None,
           constraints: ConsistencyConstraints | None, statuses: list | None = None) -> float:
    """Solve with CLARABEL; returns the wall time [s] and appends the status to ``statuses``. IdentificationError
    on failure (naming the likely cause of an infeasible program from ``layout`` and ``constraints`` when
    given). An ``optimal_inaccurate`` status is accepted here and said once by the caller, with whether its result
    passes the check (:func:`_say_inaccurate`)."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # cvxpy warns of optimal_inaccurate; said by the caller (_say_inaccurate)
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver="CLARABEL", tol_gap_abs=SOLVER_TOLERANCE,
                          tol_gap_rel=SOLVER_TOLERANCE, tol_feas=SOLVER_TOLERANCE)
    except cp.error.SolverError as error:
        raise IdentificationError(f"{what}: CLARABEL failed ({message_line(error)}); "
                                  "numerical trouble, e.g. torques or regressor badly scaled")
    elapsed = time.perf_counter() - start
    status = problem.status
    if status in ("infeasible", "infeasible_inaccurate"):
        cause = ("no consistent body satisfies the constraints" if layout is None
                 else _infeasibility_cause(layout, constraints))
        raise IdentificationError(f"{what}: no consistent parameters satisfy the bounds: {cause}")
    if status not in ("optimal", "optimal_inaccurate"):
        raise IdentificationError(f"{what}: CLARABEL ended with status {status!r} (numerical "
                                  "trouble: very poorly excited data or badly scaled bounds)")
    if statuses is not None:
        statuses.append(status)
    return elapsed


def _say_inaccurate(what: str, statuses, failing: Sequence[str], check: str) -> None:
    """One warning when a program of ``what`` ended ``optimal_inaccurate``: whether the result passes ``check``
    (``failing`` names what does not)."""
    if "optimal_inaccurate" not in statuses:
        return
    verdict = (f"the result passes the check ({check})" if not failing
               else f"the result fails the check ({check}): {', '.join(failing)}")
    logger.warning("%s: the solver (CLARABEL) ended optimal_inaccurate, short of its tolerances; %s", what, verdict)


def _infeasibility_cause(layout: ParameterLayout, constraints: ConsistencyConstraints) -> str:
    lows = {link: lo for link, (lo, _) in constraints.link_mass.items()}
    highs = {link: hi for link, (_, hi) in constraints.link_mass.items()}
    if constraints.total_mass is not None:
        lo, hi = constraints.total_mass
        if sum(lows.values()) > hi:
            return (f"the links' mass lower bounds add up to {sum(lows.values()):g} kg, above "
                    f"total_mass's upper bound {hi:g} kg")
        if len(highs) == layout.n_links and sum(highs.values()) < lo:
            return (f"the links' mass upper bounds add up to {sum(highs.values()):g} kg, below "
                    f"total_mass's lower bound {lo:g} kg")
    zero = [link for link, hi in highs.items() if hi == 0.0]
    if zero:
        return (f"{layout.link_label(zero[0])} has mass range [0, 0] kg; consistency needs a "
                "positive mass (margin)")
    return "check the mass ranges, total_mass and com_box entries against each other"


def _objective(cp, x, terms):
    """``||M_1 x - v_1||^2 + ||M_2 x - v_2||^2 + ...`` for (matrix, vector) terms."""
    return cp.sum_squares(cp.hstack([matrix @ x - vector for matrix, vector in terms
                                     if matrix.shape[0]]))


def _normalised(A, target):
    """``(A, target)`` scaled to a largest singular value of 1, and the scale factor."""
    factor = 1.0 / np.linalg.norm(A, 2)
    return (factor * A, factor * target), factor


def _unseen(A, given):
    """The term ``||N^T x||^2``, ``N`` a basis of the directions that neither ``A`` nor the
    prior's ``given`` entries see (x in link scales): it makes the standard parameters unique
    and, orthogonal to everything else in the objective, decides nothing the data identify."""
    import scipy.linalg                               # here: it costs a command's start 0.2 s
    null = scipy.linalg.null_space(np.vstack([A, np.eye(A.shape[1])[given]]),
                                   rcond=RANK_TOLERANCE)
    return null.T, np.zeros(null.shape[1])


@dataclass(frozen=True)
class ConsistentResult:
    """Result of :func:`solve_consistent`.

    Attributes
    ----------
    standard : ndarray, shape (p,)
        Consistent standard parameters (units of the regressor columns).
    standard_names : tuple of str
    base_values : ndarray, shape (r,)
        ``K @ standard``.
    base_std, base_covariance : ndarray, shapes (r,), (r, r)
        Approximation: the least-squares covariance ``s^2 G^-1`` (``G = sum_j w_j G_j``,
        ``s^2`` the weighted residual of this fit over ``N n - r``), which ignores the
        constraints (they can only shrink it). inf for base parameters the data do not resolve.
    base_names : tuple of str
    residual_ss : ndarray, shape (n,)
        Per-joint residual sum of squares [N^2 m^2], unweighted.
    residual_rms : ndarray, shape (n,)
        [N m].
    weighted_rss, best_weighted_rss : float
        ``sum_j w_j ||r_j||^2`` of this fit and of the unconstrained least-squares fit.
    links : tuple of LinkConsistency
    active : tuple of str
        Constraints at their bound in ``standard``, e.g. ``"pseudo-inertia of link 3
        (panda_joint3)"``, ``"fv2 >= 0"``, ``"mass of link 2 (j2) <= 3 kg"``. Without a prior,
        links can lie on the boundary in directions the data do not see.
    residual_increase : float
        ``(weighted_rss - best_weighted_rss) / s^2``, ``s^2 = best_weighted_rss / (N n - r)``:
        what the constraints (and the prior) cost, in noise variances (chi-square units);
        about 0 when the least-squares fit is consistent, up to ``delta (N n - r)`` in
        two-step mode.
    constraint_increase : float
        The part of ``residual_increase`` the constraints cost: that of the best consistent fit
        (the first program, solved in every mode). The rest, ``residual_increase -
        constraint_increase``, is the prior's (the regulariser's without a prior).
    mode : str
        ``"two_step"``, ``"regularised"`` or ``"no_prior"``.
    status : str
        CLARABEL's status of the last program.
    solve_time : float
        Wall time of the solver calls [s] (cvxpy's compilation included).
    """

    standard: np.ndarray
    standard_names: tuple[str, ...]
    base_values: np.ndarray
    base_std: np.ndarray
    base_covariance: np.ndarray
    base_names: tuple[str, ...]
    residual_ss: np.ndarray
    residual_rms: np.ndarray
    weighted_rss: float
    best_weighted_rss: float
    links: tuple[LinkConsistency, ...]
    active: tuple[str, ...]
    residual_increase: float
    constraint_increase: float
    mode: str
    status: str
    solve_time: float

    def to_dict(self) -> dict:
        """Plain lists and numbers (YAML/JSON friendly)."""
        result = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif item.name == "links":
                value = [link.to_dict() for link in value]
            elif isinstance(value, tuple):
                value = list(value)
            result[item.name] = value
        return result


def _boundary_links(standard: np.ndarray, physical: np.ndarray, n: int, margin: float) -> list:
    """Links whose scaled pseudo-inertia ``D J D`` has its smallest eigenvalue within
    ACTIVE_SLACK (relative to its largest, when above 1) of ``margin``."""
    scaled = standard[:N_INERTIAL * n] / physical
    eigenvalues = [np.linalg.eigvalsh(pseudo_inertia(scaled[N_INERTIAL * link:N_INERTIAL * (link + 1)]))
                   for link in range(n)]
    return [link for link, values in enumerate(eigenvalues)
            if values[0] < margin + ACTIVE_SLACK * max(1.0, values[-1])]


def _active_constraints(standard: np.ndarray, physical: np.ndarray, x: np.ndarray,
                        layout: ParameterLayout, constraints: ConsistencyConstraints) -> list:
    n = layout.n_links
    active = [f"pseudo-inertia of {layout.link_label(link)}"
              for link in _boundary_links(standard, physical, n, constraints.margin)]
    active += [f"{layout.standard_names[index]} >= 0" for index in layout.nonnegative
               if x[index] < ACTIVE_SLACK]
    mass = standard[0:N_INERTIAL * n:N_INERTIAL]
    mass_scale = physical[0:N_INERTIAL * n:N_INERTIAL]
    for link, bounds in constraints.link_mass.items():
        for bound, sign, relation in zip(bounds, (1.0, -1.0), (">=", "<=")):
            if math.isfinite(bound) and sign * (mass[link] - bound) < ACTIVE_SLACK * mass_scale[link]:
                active.append(f"mass of {layout.link_label(link)} {relation} {bound:g} kg")
    if constraints.total_mass is not None:
        for bound, sign, relation in zip(constraints.total_mass, (1.0, -1.0), (">=", "<=")):
            if math.isfinite(bound) and sign * (mass.sum() - bound) < ACTIVE_SLACK * mass_scale.sum():
                active.append(f"total mass {relation} {bound:g} kg")
    for link, (lower, upper) in constraints.com_box.items():
        start = N_INERTIAL * link
        length = physical[start + 1] / physical[start]
        com_scaled = x[start + 1:start + 4] / max(x[start], 1e-300)
        near = np.minimum(com_scaled - np.array(lower) / length,
                          np.array(upper) / length - com_scaled)
        if np.any(near < ACTIVE_SLACK):
            active.append(f"com_box of {layout.link_label(link)}")
    return active


def _check_inputs(base: BaseParameters, layout: ParameterLayout) -> None:
    if not isinstance(base, BaseParameters):
        raise DynIdError(f"base must be BaseParameters, got {type(base).__name__}")
    if not isinstance(layout, ParameterLayout):
        raise DynIdError(f"layout must be a ParameterLayout, got {type(layout).__name__}")
    if tuple(base.standard_names) != layout.standard_names:
        raise DynIdError("base parameters and layout name different standard parameters "
                         f"({len(base.standard_names)} and {layout.n_parameters}); build both "
                         "from the same regressor")


class _ScaledProblem(NamedTuple):
    """The weighted least-squares problem of :func:`solve_consistent` in scaled variables ``x = pi / scales``
    (:func:`_scaled_problem`); weighted residual = ``(||A x - target||^2 + constant) / factor^2``."""

    scales: np.ndarray      # (p,): pi = scales x
    fit: tuple              # (A (rows, p), target (rows,)): A scaled to a largest singular value of 1
    factor: float           # that scale factor
    constant: float         # the residual's constant part, times factor^2
    noise: float            # the noise variance sigma^2 (floored), times factor^2
    given: np.ndarray       # the indices of the prior's given entries
    closeness: tuple        # (rows, targets): the given entries of x against the prior's over the scales
    unseen: tuple           # (N^T, zeros): the directions neither the data nor the prior see (:func:`_unseen`)


def _scaled_problem(accumulator: LeastSquaresAccumulator, base: BaseParameters, layout: ParameterLayout,
                    compressed: CompressedLeastSquares, weights: np.ndarray, physical: np.ndarray,
                    prior_values: np.ndarray, mask: np.ndarray, dof: int) -> _ScaledProblem:
    """The programs' terms of :func:`solve_consistent`: the compressed residual ``R K pi - c`` in the variables
    scaled by ``physical`` (inertial) and matched column norms (the others), normalised; the noise variance; the
    prior's closeness term and the unseen directions' term."""
    n, p = layout.n_links, layout.n_parameters
    energy = float(weights @ accumulator.torque_square_sum_)
    RK = compressed.R @ base.projection
    scales = _variable_scales(physical, RK)
    # weighted residual = (||A x - target||^2 + constant) / factor^2
    fit, factor = _normalised(RK * scales, compressed.c)
    constant = compressed.constant * factor**2
    noise = max(constant / dof, NOISE_FLOOR * energy * factor**2 / (n * accumulator.n_samples))
    given = np.flatnonzero(mask)
    closeness = (np.eye(p)[given], prior_values[given] / scales[given])
    unseen = _unseen(fit[0], given)
    return _ScaledProblem(scales, fit, factor, constant, noise, given, closeness, unseen)


def _second_program(cp, x, feasible: list, scaled: _ScaledProblem, mode: str, delta: float, prior_weight: float,
                    best: float, best_x: np.ndarray, status: str, layout: ParameterLayout,
                    constraints: ConsistencyConstraints, statuses: list) -> tuple[str, str, float]:
    """``(mode used, status, solve time [s])`` of :func:`solve_consistent`'s second program, solved into ``x``:
    the regularised MAP estimate, the two-step closest to the prior within the band over the best residual
    ``best``, or without a prior the unique standard set. Where the two-step or no-prior program fails, the first
    program's ``best_x`` is kept, with a warning."""
    what = "consistent identification"
    fit, unseen, given = scaled.fit, scaled.unseen, scaled.given
    if given.size and mode == "regularised":
        used, weight = mode, math.sqrt(prior_weight * scaled.noise)
        terms = [fit, (weight * scaled.closeness[0], weight * scaled.closeness[1]), unseen]
        problem = cp.Problem(cp.Minimize(_objective(cp, x, terms)), feasible)
        solve_time = _solve(cp, problem, what, layout, constraints, statuses)
        return used, problem.status, solve_time
    used = mode if given.size else "no_prior"
    if given.size:
        band = best + delta * (best + scaled.constant) + BAND_FLOOR * scaled.noise
        tie = math.sqrt(TIE_BREAK_WEIGHT / band)
        problem = cp.Problem(
            cp.Minimize(_objective(cp, x, [scaled.closeness, (tie * fit[0], tie * fit[1]), unseen])),
            feasible + [cp.sum_squares(fit[0] @ x - fit[1]) <= band])
        step = "closest to the prior"
    else:
        weight = math.sqrt(NULL_SPACE_WEIGHT) * np.linalg.svd(fit[0], compute_uv=False)[
            fit[0].shape[0] - 1]
        problem = cp.Problem(cp.Minimize(_objective(
            cp, x, [fit, (weight * unseen[0], unseen[1])])), feasible)
        step = "unique standard set"
    solve_time = 0.0
    try:
        solve_time = _solve(cp, problem, f"{what} ({step})", layout, constraints, statuses)
        status = problem.status
    except IdentificationError as error:
        logger.warning("%s; keeping the best-residual solution", error)
        x.value = best_x
        status = f"{status} (best residual; the second program failed)"
    return used, status, solve_time


def _consistent_result(accumulator: LeastSquaresAccumulator, base: BaseParameters, layout: ParameterLayout,
                       constraints: ConsistencyConstraints, compressed: CompressedLeastSquares,
                       weights: np.ndarray, dof: int, physical: np.ndarray, scaled: _ScaledProblem,
                       solution: np.ndarray, best: float, used: str, status: str,
                       solve_time: float) -> ConsistentResult:
    """The :class:`ConsistentResult` of the scaled ``solution`` (p,): standard and base parameters, the base
    parameters' covariance from the least-squares fit's, residuals, the links' consistency, the constraints at a
    bound and the residual's increase over least squares in noise variances."""
    standard = solution * scaled.scales
    base_values = base.projection @ standard
    residual_ss = accumulator.residual_sum_of_squares(base_values)
    weighted = float(weights @ residual_ss)
    covariance = weighted / dof * compressed.inverse_gram
    noise_variance = max(compressed.constant / dof, 1e-300)
    std = np.where(compressed.unresolved, np.inf, np.sqrt(np.clip(np.diag(covariance), 0.0, None)))
    return ConsistentResult(
        standard=standard, standard_names=layout.standard_names, base_values=base_values,
        base_std=std, base_covariance=covariance, base_names=tuple(base.names),
        residual_ss=residual_ss, residual_rms=np.sqrt(residual_ss / accumulator.n_samples),
        weighted_rss=weighted, best_weighted_rss=compressed.constant,
        links=link_consistency(standard, layout),
        active=tuple(_active_constraints(standard, physical, solution, layout, constraints)),
        residual_increase=(weighted - compressed.constant) / noise_variance,
        constraint_increase=min(best / scaled.factor**2 / noise_variance,
                                (weighted - compressed.constant) / noise_variance),
        mode=used, status=status, solve_time=solve_time)


def solve_consistent(accumulator: LeastSquaresAccumulator, base: BaseParameters,
                     layout: ParameterLayout, *, joint_weights=None, prior=None,
                     constraints: ConsistencyConstraints | None = None, mode: str = "two_step",
                     delta: float = DEFAULT_DELTA,
                     prior_weight: float = DEFAULT_PRIOR_WEIGHT, factors=None) -> ConsistentResult:
    """Physically consistent standard parameters from accumulated base normal equations.

    The weighted residual ``sum_j w_j ||W_j K pi - tau_j||^2 = ||R K pi - c||^2 + const``
    (:func:`compress`) is minimised subject to ``D J_i D >= margin 1`` per link, friction and
    armature signs and the optional bounds. Variables are scaled, ``pi = s x`` (link scales
    ``M, M L, M L^2`` for inertial parameters, ``M`` the prior's mass, else 1 kg or the
    bounds' middle, ``L`` the layout's; matched column norms of ``R K`` for the others), and
    the residual term to a largest singular value of 1. Noise variance
    ``sigma^2 = const / (N n - r)`` (floored at NOISE_FLOOR of the mean square torque).

    Programs (``x0`` the prior over the link scales, ``N`` a basis of the directions that
    neither the data nor the prior see; ``||N^T x||^2`` makes ``pi`` unique and, orthogonal
    to the other terms, decides nothing they do):

    - prior, ``mode="two_step"`` (default): (1) the best consistent residual ``r*``;
      (2) ``min ||x - x0||^2 + ||N^T x||^2`` (plus TIE_BREAK_WEIGHT times the residual over
      the band, which fixes friction and offsets) subject to the constraints and
      ``residual <= r* + delta (r* + const) + BAND_FLOOR sigma^2``, i.e. within
      ``1 + delta`` of the best weighted residual sum of squares.
    - prior, ``mode="regularised"``: ``min residual / sigma^2 + prior_weight ||x - x0||^2 +
      ||N^T x||^2``: the MAP estimate under a Gaussian prior of std ``1 / sqrt(prior_weight)``
      link scales ((1) is solved too, to tell the constraints' cost from the prior's).
    - no prior: (1) as above; (2) ``min residual + NULL_SPACE_WEIGHT s_min^2 ||N^T x||^2``
      (``s_min`` the weakest curvature the data resolve): the consistent analogue of the
      minimum-norm least-squares solution. Should (2) fail numerically, (1)'s solution is
      kept (a warning is logged and ``status`` says so).

    Parameters
    ----------
    accumulator : LeastSquaresAccumulator
        Normal equations of the base regressor ``base.select(Y)`` (n joints, r parameters).
    base : BaseParameters
    layout : ParameterLayout
        From the same regressor as ``base``.
    joint_weights : array_like, shape (n,), optional
        ``w_j``; ones (OLS) by default, ``1 / sigma_j^2`` for WLS.
    prior : array_like, shape (p,) or (10 n,), optional
        CAD or URDF parameters; NaN entries (and friction, armature, offsets when only the
        10 n inertial ones are given) are not regularised.
    constraints : ConsistencyConstraints, optional
    mode : {"two_step", "regularised"}
        How the prior is used; without one always the two programs above.
    delta : float
        Two-step mode's relative residual band (>= 0).
    prior_weight : float
        Regularised mode's weight (> 0).
    factors : array_like, shape (n, r + 1, r + 1), optional
        Triangular factors of the same equations (:func:`compress_factors`), compressed instead of
        ``accumulator``'s Gram matrices (for ``G_s`` beyond :data:`GRAM_CONDITION_LIMIT`); the
        residuals are still taken from ``accumulator``.

    Raises
    ------
    SolverUnavailableError
        cvxpy or CLARABEL is not installed.
    IdentificationError
        The bounds admit no consistent parameters (naming the likely cause), or the solver
        failed.
    """
    cp = _require_cvxpy()
    constraints = _check_solve_inputs(accumulator, base, layout, constraints, mode, delta,
                                      prior_weight)
    n, p = layout.n_links, layout.n_parameters
    dof = accumulator.n_samples * n - base.rank
    weights = _joint_weights(joint_weights, n)
    compressed = compress(accumulator.gram_, accumulator.moment_, accumulator.torque_square_sum_, weights) \
        if factors is None else compress_factors(factors, weights)
    prior_values, mask = _prior_vector(prior, layout)
    physical = _physical_scales(layout, prior_values, mask, constraints)
    scaled = _scaled_problem(accumulator, base, layout, compressed, weights, physical, prior_values, mask, dof)
    fit = scaled.fit
    x = cp.Variable(p)
    feasible = _constraint_list(cp, x, layout, scaled.scales, constraints)
    what = "consistent identification"
    problem = cp.Problem(cp.Minimize(_objective(cp, x, [fit])), feasible)
    statuses = []
    solve_time = _solve(cp, problem, f"{what} (best residual)", layout, constraints, statuses)
    best_x, status = x.value.copy(), problem.status
    best = float(np.sum((fit[0] @ best_x - fit[1]) ** 2))
    used, status, second_time = _second_program(cp, x, feasible, scaled, mode, delta, prior_weight, best, best_x,
                                                status, layout, constraints, statuses)
    solve_time += second_time
    solution = np.asarray(x.value, dtype=float)
    result = _consistent_result(accumulator, base, layout, constraints, compressed, weights, dof, physical, scaled,
                                solution, best, used, status, solve_time)
    _say_inaccurate(what, statuses, [f"pseudo-inertia of {link.link} not positive semidefinite"
                                     for link in result.links if not link.consistent],
                    "every link's pseudo-inertia positive semidefinite")
    logger.info("consistent identification (%s): weighted RSS %.6g, %.3g noise variances above "
                "least squares; at a bound: %s; %.3f s", used, result.weighted_rss, result.residual_increase,
                ", ".join(result.active) or "nothing", solve_time)
    return result


@dataclass(frozen=True, eq=False)
class ConsistentSolver:
    """:func:`solve_consistent` of one model structure, estimator and prior, for any accumulated equations and
    prior weight: the fit a cross-validation calls per fold and weight
    (:mod:`~robot_dynid.estimation.consistency_check`).

    Attributes
    ----------
    base : BaseParameters
    layout : ParameterLayout
    estimator : Estimator
        Its joint weights (:meth:`~robot_dynid.estimation.estimators.Estimator.joint_weights`) from the noise of its
        ``noise_method``.
    prior : ndarray or None
    constraints : ConsistencyConstraints or None
    mode : str
    delta : float
    """

    base: BaseParameters
    layout: ParameterLayout
    estimator: Estimator
    prior: np.ndarray | None = None
    constraints: ConsistencyConstraints | None = None
    mode: str = "two_step"
    delta: float = DEFAULT_DELTA

    def __call__(self, training: LeastSquaresAccumulator, prior_weight: float, noise_std=None,
                 factors=None) -> ConsistentResult:
        """The consistent fit of ``training`` with ``prior_weight``; ``noise_std`` (n,) [N m] weighs the joints of
        a weighted estimator (default: ``training``'s noise by its noise method); ``factors`` as in
        :func:`solve_consistent`."""
        if self.estimator.weighted and noise_std is None:
            noise_std = training.solve(self.estimator.noise_method).noise_std
        return solve_consistent(training, self.base, self.layout, joint_weights=self.estimator.joint_weights(noise_std),
                                prior=self.prior, constraints=self.constraints, mode=self.mode, delta=self.delta,
                                prior_weight=prior_weight, factors=factors)

    def base_values(self, training: LeastSquaresAccumulator, prior_weight: float) -> np.ndarray:
        """The base values of :meth:`__call__`'s fit."""
        return self(training, prior_weight).base_values


@dataclass(frozen=True)
class BodyFit:
    """Result of :func:`solve_consistent_body`.

    Attributes
    ----------
    parameters : ndarray, shape (10,)
        ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` [kg, kg m, kg m^2], consistent.
    residual_ss : ndarray, shape (n,)
        Per-joint residual sum of squares of the fit [N^2 m^2].
    boundary : bool
        The body's pseudo-inertia is at its bound (singular within the margin): the data pull
        the unconstrained fit outside the consistent set.
    status : str
        CLARABEL's status of the last program.
    solve_time : float
        Wall time of the solver calls [s].
    """

    parameters: np.ndarray
    residual_ss: np.ndarray
    boundary: bool
    status: str
    solve_time: float


def solve_consistent_body(accumulator: LeastSquaresAccumulator, mass_scale: float, length_scale: float,
                          mass: float | None = None, margin: float = DEFAULT_MARGIN) -> BodyFit:
    """One rigid body's ten parameters by least squares, physically consistent (e.g. a payload).

    Minimises ``sum_j ||W_j phi - y_j||^2`` (the accumulated per-joint normal equations of ten
    columns) subject to ``D J(phi) D >= margin 1`` (``J`` the pseudo-inertia, ``D`` as in
    :func:`solve_consistent` for the body's mass scale ``M`` [kg] and length scale ``L`` [m]) and,
    with ``mass`` [kg], ``m = mass``. As :func:`solve_consistent` without a prior: compressed to
    ``||R phi - c||^2`` first (:func:`compress`), then, where the data leave directions unseen, a
    second program adds ``NULL_SPACE_WEIGHT s_min^2 ||N^T x||^2`` so that the solution is unique.

    Where the least-squares fit (the minimum-norm one where the data leave directions unseen, as the second
    program makes it) lies strictly inside the consistent set, it is the programs' solution and is returned without
    a solver (status ``"least squares"``) and without importing cvxpy.

    Raises
    ------
    SolverUnavailableError
        cvxpy or CLARABEL is not installed, and the least-squares fit is not consistent.
    IdentificationError
        No data (every torque zero), or the solver failed.
    """
    if not isinstance(accumulator, LeastSquaresAccumulator) or accumulator.n_parameters != N_INERTIAL:
        raise DynIdError(f"accumulator must be a LeastSquaresAccumulator of {N_INERTIAL} parameters (one body)")
    for name, value in (("mass_scale", mass_scale), ("length_scale", length_scale)):
        if not (isinstance(value, (int, float)) and 0.0 < value < math.inf):
            raise DynIdError(f"{name} must be a finite number > 0, got {value!r}")
    if mass is not None and not (isinstance(mass, (int, float)) and 0.0 < mass < math.inf):
        raise DynIdError(f"mass must be a finite number > 0 [kg], got {mass!r}")
    if not np.any(accumulator.torque_square_sum_ > 0.0):
        raise IdentificationError("every torque is zero: nothing to identify from")
    compressed = compress(accumulator.gram_, accumulator.moment_, accumulator.torque_square_sum_)
    scales = np.array([mass_scale, *[mass_scale * length_scale] * 3, *[mass_scale * length_scale**2] * 6])
    fit, _ = _normalised(compressed.R * scales, compressed.c)
    inside = _strictly_consistent(_least_squares_body(fit, None if mass is None else mass / mass_scale), margin)
    if inside is not None:
        return BodyFit(parameters=inside * scales, residual_ss=accumulator.residual_sum_of_squares(inside * scales),
                       boundary=False, status="least squares", solve_time=0.0)
    cp = _require_cvxpy()
    x = cp.Variable(N_INERTIAL)
    feasible = [cp.reshape(_PSEUDO_INERTIA_MAP @ x, (4, 4), order="C") >> margin * np.eye(4)]
    if mass is not None:
        feasible.append(x[0] == mass / mass_scale)
    what = "consistent body"
    problem = cp.Problem(cp.Minimize(_objective(cp, x, [fit])), feasible)
    statuses = []
    solve_time = _solve(cp, problem, f"{what} (best residual)", None, None, statuses)
    unseen = _unseen(fit[0], np.array([0]) if mass is not None else np.array([], dtype=int))
    if unseen[0].shape[0]:
        best_x = x.value.copy()
        weight = math.sqrt(NULL_SPACE_WEIGHT) * np.linalg.svd(fit[0], compute_uv=False)[fit[0].shape[0] - 1]
        problem = cp.Problem(cp.Minimize(_objective(cp, x, [fit, (weight * unseen[0], unseen[1])])), feasible)
        try:
            solve_time += _solve(cp, problem, f"{what} (unique parameters)", None, None, statuses)
        except IdentificationError as error:
            logger.warning("%s; keeping the best-residual solution", error)
            x.value = best_x
    solution = np.asarray(x.value, dtype=float)
    eigenvalues = np.linalg.eigvalsh(pseudo_inertia(solution))
    _say_inaccurate(what, statuses, [] if _link_consistency(what, solution * scales).consistent
                    else ["its pseudo-inertia is not positive semidefinite"], "pseudo-inertia positive semidefinite")
    return BodyFit(parameters=solution * scales, residual_ss=accumulator.residual_sum_of_squares(solution * scales),
                   boundary=bool(eigenvalues[0] - margin < ACTIVE_SLACK * max(eigenvalues[-1], 1.0)),
                   status=problem.status, solve_time=solve_time)


def _least_squares_body(fit, fixed_mass: float | None) -> np.ndarray:
    """The minimum-norm minimiser of ``||A x - y||^2`` (``fit = (A, y)``, x in the body's scales), with ``x[0]``
    fixed to ``fixed_mass`` when given: where ``A`` leaves directions unseen it has no component along them, as the
    second program of :func:`solve_consistent_body` asks."""
    A, y = fit
    x = np.zeros(N_INERTIAL)
    free = slice(0, None) if fixed_mass is None else slice(1, None)
    if fixed_mass is not None:
        x[0] = fixed_mass
        y = y - A[:, 0] * fixed_mass
    x[free] = np.linalg.lstsq(A[:, free], y, rcond=RANK_TOLERANCE)[0]
    return x


def _strictly_consistent(x: np.ndarray, margin: float) -> np.ndarray | None:
    """``x`` when its scaled pseudo-inertia exceeds ``margin`` by more than the active slack (no constraint of
    :func:`solve_consistent_body` binds there), else None."""
    if not np.all(np.isfinite(x)):
        return None
    eigenvalues = np.linalg.eigvalsh((_PSEUDO_INERTIA_MAP @ x).reshape(4, 4))
    return x if eigenvalues[0] - margin >= ACTIVE_SLACK * max(eigenvalues[-1], 1.0) else None


def _check_solve_inputs(accumulator, base, layout, constraints, mode, delta,
                        prior_weight) -> ConsistencyConstraints:
    """The constraints to use (defaults when None); DynIdError naming a bad argument."""
    _check_inputs(base, layout)
    if not isinstance(accumulator, LeastSquaresAccumulator) \
            or accumulator.n_parameters != base.rank or accumulator.n_joints != layout.n_links:
        raise DynIdError(f"accumulator must be a LeastSquaresAccumulator of ({layout.n_links} "
                         f"joints, {base.rank} base parameters)")
    if mode not in PRIOR_MODES:
        raise DynIdError(f"prior mode must be one of {list(PRIOR_MODES)}, got {mode!r}")
    if not (isinstance(delta, (int, float)) and 0.0 <= delta < math.inf):
        raise DynIdError(f"delta must be a finite number >= 0, got {delta!r}")
    if not (isinstance(prior_weight, (int, float)) and 0.0 < prior_weight < math.inf):
        raise DynIdError(f"prior_weight must be a finite number > 0, got {prior_weight!r}")
    constraints = ConsistencyConstraints() if constraints is None else constraints
    if not isinstance(constraints, ConsistencyConstraints):
        raise DynIdError(f"constraints must be ConsistencyConstraints, got "
                         f"{type(constraints).__name__}")
    constraints.check_links(layout)
    check_overdetermined(accumulator.n_samples, layout.n_links, base.rank)
    if not np.any(accumulator.torque_square_sum_ > 0.0):
        raise IdentificationError("every torque is zero: nothing to identify from")
    return constraints


# ---------------------------------------------------------------------------------------------
# Plausibility of identified base parameters


@dataclass(frozen=True)
class PlausibilityReport:
    """Result of :func:`check_plausibility`.

    Attributes
    ----------
    consistent : bool or None
        False when a sign is wrong or no consistent standard set maps onto the base values,
        True when one does, None when the feasibility check was skipped and no sign is wrong.
    messages : tuple of str
        One line each.
    distance_std : float or None
        ``min ||(K pi - b) / std||`` over consistent ``pi`` [std]; None when skipped.
    offenders : tuple of (str, float)
        Base parameters with their ``(b - K pi*) / std`` at the nearest consistent ``pi*``,
        largest magnitude first (only when not consistent).
    boundary_links : tuple of str
        Links whose pseudo-inertia is singular at the nearest consistent set.
    negative : tuple of (str, float)
        Base parameters that are a friction coefficient (or armature) alone and negative.
    """

    consistent: bool | None
    messages: tuple[str, ...]
    distance_std: float | None = None
    offenders: tuple[tuple[str, float], ...] = ()
    boundary_links: tuple[str, ...] = ()
    negative: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict:
        """Plain lists and numbers (JSON friendly)."""
        return {"consistent": self.consistent, "messages": list(self.messages),
                "distance_std": self.distance_std,
                "offenders": [{"name": name, "std": value} for name, value in self.offenders],
                "boundary_links": list(self.boundary_links),
                "negative": [{"name": name, "value": value} for name, value in self.negative]}


def _negative_signs(values, std, base: BaseParameters, layout: ParameterLayout):
    """(name, value) of base parameters that are one sign-constrained standard parameter and
    negative, and their messages."""
    K = base.projection
    negative, messages = [], []
    for index, unit in zip(layout.nonnegative, layout.nonnegative_units):
        rows = np.flatnonzero(K[:, index])
        if rows.size != 1 or np.count_nonzero(K[rows[0]]) != 1 or values[rows[0]] >= 0.0:
            continue
        row = rows[0]
        kind = "armature" if index in layout.armature else "friction"
        below = (f" ({-values[row] / std[row]:.1f} std below 0)"
                 if 0.0 < std[row] < math.inf else "")
        negative.append((base.names[row], float(values[row])))
        messages.append(f"negative {kind}: {base.names[row]} = {values[row]:.3g} {unit}{below}")
    return negative, messages


def _consistent_preimage(values, base: BaseParameters, layout: ParameterLayout, physical: np.ndarray,
                         prior_values: np.ndarray, prior_mask: np.ndarray,
                         constraints: ConsistencyConstraints) -> np.ndarray | None:
    """A standard set (p,) meeting ``constraints`` that the base projection maps onto ``values`` (r,), found
    without a solver, or None.

    Alternating projections in the scaled parameters ``x = pi / s`` (``s`` the link scales ``physical``, 1
    for the other parameters), at most :data:`PREIMAGE_ITERATIONS`: onto the affine set of the values,
    ``x += pinv(K S) (values - K S x)``, then each link's scaled pseudo-inertia onto the matrices whose
    eigenvalues are at least ``margin + PREIMAGE_FLOOR`` (eigenvalues raised to it) and friction and
    armature onto ``>= 0``. Starts: the prior where given, else a solid sphere of the link's mass scale and
    half its length scale about the link origin (``x = [1, 0, 0, 0, 0.1, 0, 0.1, 0, 0, 0.1]``, other
    parameters 0). A point of the affine set is returned when ``K pi`` reproduces ``values`` (to
    :data:`PREIMAGE_TOLERANCE` of the largest), every scaled pseudo-inertia exceeds ``margin`` by
    :data:`PREIMAGE_TOLERANCE` and friction and armature are not negative. A certificate only: None says
    nothing about consistency (the program decides). Not tried with mass or centre-of-mass bounds.
    """
    if constraints.link_mass or constraints.total_mass is not None or constraints.com_box:
        return None
    scales = np.concatenate([physical, np.ones(layout.n_parameters - physical.size)])
    design = base.projection * scales
    sphere = np.zeros(layout.n_parameters)
    sphere[:physical.size] = np.tile([1.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 0.1], layout.n_links)
    nonnegative = [index for index in layout.nonnegative
                   if (constraints.armature_nonnegative if index in layout.armature
                       else constraints.friction_nonnegative)]
    pseudo_inverse = np.linalg.pinv(design)
    inertial = slice(0, physical.size)
    x = np.where(prior_mask, prior_values / scales, sphere)
    for _ in range(PREIMAGE_ITERATIONS):
        x += pseudo_inverse @ (values - design @ x)
        if np.abs(design @ x - values).max() > PREIMAGE_TOLERANCE * max(float(np.abs(values).max()), 1e-300):
            return None
        blocks = (x[inertial].reshape(layout.n_links, N_INERTIAL) @ _PSEUDO_INERTIA_MAP.T).reshape(-1, 4, 4)
        eigenvalues, eigenvectors = np.linalg.eigh(blocks)
        if np.all(eigenvalues[:, 0] > constraints.margin + PREIMAGE_TOLERANCE) \
                and not (nonnegative and np.any(x[nonnegative] < 0.0)):
            return x * scales
        raised = np.maximum(eigenvalues, constraints.margin + PREIMAGE_FLOOR)
        blocks = (eigenvectors * raised[:, None, :]) @ np.swapaxes(eigenvectors, 1, 2)
        x[inertial] = (blocks.reshape(layout.n_links, 16) @ _PSEUDO_INERTIA_INVERSE.T).ravel()
        if nonnegative:
            x[nonnegative] = np.maximum(x[nonnegative], 0.0)
    return None


def check_plausibility(base_values, base_std, base: BaseParameters, layout: ParameterLayout, *,
                       constraints: ConsistencyConstraints | None = None,
                       prior=None) -> PlausibilityReport:
    """Are identified base parameters physically plausible?

    (a) Base parameters that are a friction coefficient that must be ``>= 0``
    (:func:`nonnegative_friction`) or an armature, alone, and negative. (b) A consistent standard
    set that maps onto the values found without a solver (:func:`_consistent_preimage`): they are
    consistent. Otherwise (c) with cvxpy: the nearest consistent standard set,
    ``min_pi sum_i ((K pi - b)_i / std_i)^2`` subject to
    ``J_i >= 0`` (margin 0 unless ``constraints`` say otherwise), signs and bounds; the base
    values are consistent when that distance is below :data:`CONSISTENT_DISTANCE` std. (d)
    Without cvxpy the feasibility check is skipped and a message says so.

    Parameters
    ----------
    base_values, base_std : array_like, shape (r,)
        Identified values and standard deviations (floored, see :data:`STD_FLOOR`; inf leaves
        a parameter free).
    base : BaseParameters
    layout : ParameterLayout
    constraints : ConsistencyConstraints, optional
    prior : array_like, optional
        Only used for the link mass scales (as in :func:`solve_consistent`).
    """
    _check_inputs(base, layout)
    values = validators.array(base_values, "base_values", DynIdError, shape=(base.rank,), axes=("base parameters",),
                              columns=base.names)
    std = validators.array(base_std, "base_std", DynIdError, shape=(base.rank,), axes=("base parameters",),
                           columns=base.names, finite=False, minimum=0.0)
    negative, messages = _negative_signs(values, std, base, layout)
    constraints = ConsistencyConstraints(margin=0.0) if constraints is None else constraints
    prior_values, mask = _prior_vector(prior, layout)
    physical = _physical_scales(layout, prior_values, mask, constraints)
    typical = np.abs(base.projection[:, :physical.size]) @ physical
    floor = STD_FLOOR * np.maximum(np.maximum(np.abs(values), typical), 1e-300)
    inverse_std = np.where(np.isinf(std), 0.0, 1.0 / np.maximum(std, floor))
    preimage = None if negative else _consistent_preimage(values, base, layout, physical, prior_values, mask,
                                                          constraints)
    if preimage is not None:        # consistent, shown without a solver: cvxpy is not needed (nor imported)
        messages.append("base parameters are physically consistent (a consistent standard "
                        "set maps onto them)")
        distance = float(np.linalg.norm((values - base.projection @ preimage) * inverse_std))
        return PlausibilityReport(True, tuple(messages), distance)
    if not cvxpy_available():
        messages.append("physical consistency of the inertial parameters not checked: it "
                        + INSTALL_HINT)
        return PlausibilityReport(False if negative else None, tuple(messages), negative=tuple(negative))
    cp = _require_cvxpy()
    constraints.check_links(layout)
    nearest = _nearest_consistent(cp, values, inverse_std, base, layout, physical, constraints)
    normalised = (values - base.projection @ nearest) * inverse_std
    distance = float(np.linalg.norm(normalised))
    if distance <= CONSISTENT_DISTANCE:
        if not negative:
            messages.append("base parameters are physically consistent (a consistent standard "
                            "set maps onto them)")
        return PlausibilityReport(not negative, tuple(messages), distance, negative=tuple(negative))
    return _inconsistent_report(normalised, distance, nearest, physical, base, layout, constraints, messages,
                                negative)


def _nearest_consistent(cp, values: np.ndarray, inverse_std: np.ndarray, base: BaseParameters,
                        layout: ParameterLayout, physical: np.ndarray,
                        constraints: ConsistencyConstraints) -> np.ndarray:
    """The consistent standard set (p,) nearest to the base ``values`` (r,) in their std (``inverse_std``, 0: free),
    solved with cvxpy (:func:`check_plausibility` (c)); an ``optimal_inaccurate`` status said with whether its
    pseudo-inertias pass."""
    design = base.projection * inverse_std[:, None]
    scales = _variable_scales(physical, design)
    fit, _ = _normalised(design * scales, values * inverse_std)
    x = cp.Variable(layout.n_parameters)
    problem = cp.Problem(cp.Minimize(_objective(cp, x, [fit])),
                         _constraint_list(cp, x, layout, scales, constraints))
    statuses = []
    _solve(cp, problem, "plausibility check", layout, constraints, statuses)
    nearest = np.asarray(x.value) * scales
    _say_inaccurate("plausibility check", statuses,
                    [f"pseudo-inertia of {link.link} not positive semidefinite"
                     for link in link_consistency(nearest, layout) if not link.consistent],
                    "the nearest set's pseudo-inertias positive semidefinite")
    return nearest


def _inconsistent_report(normalised: np.ndarray, distance: float, nearest: np.ndarray, physical: np.ndarray,
                         base: BaseParameters, layout: ParameterLayout, constraints: ConsistencyConstraints,
                         messages: list, negative: list) -> PlausibilityReport:
    """The report of base values ``distance`` std from the nearest consistent set ``nearest``: the worst
    offenders of the differences ``normalised`` (r,) [std] and the links whose pseudo-inertia is singular
    there."""
    order = np.argsort(-np.abs(normalised))[:N_OFFENDERS]
    offenders = tuple((base.names[i], float(normalised[i])) for i in order
                      if abs(normalised[i]) > CONSISTENT_DISTANCE)
    messages.append(f"base parameters are not physically consistent: nearest consistent set "
                    f"differs by {distance:.1f} std; worst: "
                    + ", ".join(f"{name} ({value:+.1f} std)" for name, value in offenders))
    boundary = tuple(layout.link_label(link) for link in
                     _boundary_links(nearest, physical, layout.n_links, constraints.margin))
    if boundary:
        messages.append("at the nearest consistent set the pseudo-inertia is singular for "
                        + ", ".join(boundary))
    return PlausibilityReport(False, tuple(messages), distance, offenders, boundary,
                              tuple(negative))
