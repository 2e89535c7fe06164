"""Base (identifiable) parameters: which columns of the regressor are independent.

With ``Y`` the (N, n, p) standard regressor, a column is either zero (its parameter has no effect),
independent, or a fixed linear combination of others. With ``independent`` the indices of a
maximal independent set and ``dependent`` the rest::

    Y[..., dependent] = Y[..., independent] @ beta                  (beta: (r, p - r))
    Y @ pi = Y[..., independent] @ (pi[independent] + beta @ pi[dependent])

so the ``r`` base parameters are ``pi_base = K @ pi`` with ``K[:, independent] = 1`` and
``K[:, dependent] = beta``, and ``Y_base = Y[..., independent]``.

:func:`compute_base_parameters` finds them numerically from random states (structural rank, not
the excitation of one trajectory): the regressor is stacked from states drawn uniformly over the
joint limits, its columns are scaled to unit norm, and

1. QR with column pivoting (:func:`_pivoted_qr_diagonal`, numpy only) gives the rank ``r`` from the
   gap in ``|diag(R)|`` (entries below ``tolerance * |R[0, 0]|`` are zero); an SVD must give the same rank,
   otherwise the tolerance sits in a spread of singular values and
   :class:`~robot_dynid.errors.IdentificationError` is raised;
2. the independent set is chosen greedily in a preference order (a column is dependent when
   it is a combination of the columns before it, as reduced row echelon form does): links base
   to tip, within a link ``Ixx, Ixy, Ixz, Iyz, Izz, Iyy, mx, my, mz, m``, then friction,
   armature and offset columns. Like Khalil's grouping rules this keeps the earlier link's
   inertias and regroups ``Iyy``, ``mz`` and ``m`` of later links into them with small
   coefficients (``Izz1R = Izz1 + 0.0729 m2 + ...``) instead of the reverse with large ones.
   Its count must equal ``r``;
3. ``beta = R11^-1 R12`` from the QR of the scaled columns ordered (independent, dependent),
   unscaled, with entries below 1e-10 set to zero.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DynIdError, IdentificationError, ModelFileError
from robot_dynid.model.regressor import N_INERTIAL, Regressor

__all__ = ["DEFAULT_TOLERANCE", "BETA_ZERO", "ZERO_COLUMN", "LINK_PREFERENCE", "BaseParameters", "random_states",
           "compute_base_parameters"]

logger = logging.getLogger(__name__)

DEFAULT_TOLERANCE = 1e-8
#: Entries of ``beta`` below this (in the parameters' units ratio) are rounding noise.
BETA_ZERO = 1e-10
#: Columns whose norm is below this fraction of the largest are zero columns.
ZERO_COLUMN = 1e-12
#: Order in which a link's parameters are preferred as independent (indices into
#: ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``).
LINK_PREFERENCE = (4, 5, 7, 8, 9, 6, 1, 2, 3, 0)


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """A set of base parameters of a regressor.

    Parameters
    ----------
    standard_names : tuple of str
        Names of the ``p`` standard parameters (``Regressor.parameter_names``).
    independent : tuple of int
        Indices of the ``r`` independent standard parameters, ascending.
    dependent : tuple of int
        Indices of the other ``p - r``, ascending (zero columns included).
    beta : ndarray, shape (r, p - r)
        ``Y[..., dependent] = Y[..., independent] @ beta``.
    names : tuple of str
        Base parameter names: the independent parameter's name, with ``R`` appended when
        dependent parameters are regrouped into it.
    """

    standard_names: tuple[str, ...]
    independent: tuple[int, ...]
    dependent: tuple[int, ...]
    beta: np.ndarray
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        for field in ("standard_names", "independent", "dependent", "names"):
            object.__setattr__(self, field, tuple(getattr(self, field)))
        p = len(self.standard_names)
        independent = tuple(int(i) for i in self.independent)
        dependent = tuple(int(i) for i in self.dependent)
        object.__setattr__(self, "independent", independent)
        object.__setattr__(self, "dependent", dependent)
        if sorted(independent + dependent) != list(range(p)):
            raise DynIdError(f"independent {independent} and dependent {dependent} must split "
                             f"the {p} standard parameters 0..{p - 1}")
        for name, indices in (("independent", independent), ("dependent", dependent)):
            if list(indices) != sorted(indices):
                raise DynIdError(f"{name} indices must be ascending, got {indices}")
        beta = np.array(self.beta, dtype=float).reshape(len(independent), len(dependent))
        beta.setflags(write=False)
        object.__setattr__(self, "beta", beta)
        if len(self.names) != len(independent):
            raise DynIdError(f"names has {len(self.names)} entries, expected the rank "
                             f"{len(independent)}")

    @property
    def rank(self) -> int:
        """Number of base parameters ``r``."""
        return len(self.independent)

    @property
    def projection(self) -> np.ndarray:
        """``K`` (r, p) with ``pi_base = K @ pi_standard``."""
        K = np.zeros((self.rank, len(self.standard_names)))
        K[:, list(self.independent)] = np.eye(self.rank)
        K[:, list(self.dependent)] = self.beta
        return K

    def companions(self, index: int) -> tuple[int, ...]:
        """Indices (ascending) of the standard parameters that share a base parameter with standard
        parameter ``index``: the data identify only such combinations, never how they split. Empty
        when ``index`` stands alone in its base parameter, or in none (a zero column)."""
        K = self.projection
        rows = np.flatnonzero(K[:, index])
        return tuple(int(i) for i in np.flatnonzero(np.any(K[rows] != 0.0, axis=0)) if i != index)

    def rows_of(self, index: int) -> tuple[int, ...]:
        """Base parameters (row indices) whose expression holds standard parameter ``index``."""
        return tuple(int(row) for row in np.flatnonzero(self.projection[:, index]))

    def select(self, Y: np.ndarray) -> np.ndarray:
        """Base regressor columns ``Y[..., independent]``, (..., p) -> (..., r), C-ordered.

        (``np.take``: fancy indexing ``Y[..., columns]`` returns an array whose last axis is
        not the contiguous one, on which the accumulator's BLAS products are slower.)
        """
        Y = np.asarray(Y)
        if Y.shape[-1] != len(self.standard_names):
            raise DynIdError(f"regressor has {Y.shape[-1]} columns, expected "
                             f"{len(self.standard_names)} standard parameters")
        return np.take(Y, self.independent, axis=-1)

    def expressions(self, digits: int = 4) -> tuple[str, ...]:
        """Each base parameter as a sum of standard ones, e.g. ``"Izz1 + 0.0729 m2 - 0.27 mx2"``.

        Parameters
        ----------
        digits : int
            Significant digits of the coefficients.
        """
        expressions = []
        for row, index in enumerate(self.independent):
            terms = [self.standard_names[index]]
            for column, dependent in enumerate(self.dependent):
                coefficient = self.beta[row, column]
                if coefficient == 0.0:
                    continue
                sign = "-" if coefficient < 0 else "+"
                magnitude = f"{abs(coefficient):.{digits}g}"
                factor = "" if magnitude == "1" else magnitude + " "
                terms.append(f"{sign} {factor}{self.standard_names[dependent]}")
            expressions.append(" ".join(terms))
        return tuple(expressions)

    def to_dict(self) -> dict:
        """Plain lists (YAML/JSON friendly); inverse of :meth:`from_dict`."""
        return {"standard_names": list(self.standard_names),
                "independent": list(self.independent), "dependent": list(self.dependent),
                "beta": self.beta.tolist(), "names": list(self.names)}

    @classmethod
    def from_dict(cls, data: dict, label: str = "") -> "BaseParameters":
        """Rebuild from :meth:`to_dict` output; missing or unknown keys, entries that do not make
        a structure, or a non-finite ``beta`` raise ModelFileError, its message prefixed with
        ``label`` (where the structure sits in a file, e.g. ``base_parameters.structure``)."""
        where = f"{label}: " if label else ""
        keys = ("standard_names", "independent", "dependent", "beta", "names")
        if not isinstance(data, dict) or set(data) != set(keys):
            found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
            raise ModelFileError(f"{where}base parameters need exactly the keys {keys}, got {found}")
        try:
            base = cls(**data)
        except (DynIdError, ValueError, TypeError) as error:
            raise ModelFileError(f"{where}invalid base parameters: {error}") from None
        validators.array(base.beta, f"{label}.beta" if label else "beta", ModelFileError)
        return base


def random_states(regressor: Regressor, n_samples: int, rng: np.random.Generator) -> dict:
    """States uniform over the limits: q in [lower, upper], ``|qd|`` <= velocity limit,
    ``|qdd|`` <= acceleration limit; temperature [deg C] or elapsed [s] when the friction model
    drifts. Returns keyword arguments for :meth:`Regressor.compute`."""
    n = regressor.n_joints
    lower, upper, velocity, acceleration, _ = regressor.robot.limit_arrays()
    states = {"q": rng.uniform(lower, upper, (n_samples, n)),
              "qd": rng.uniform(-velocity, velocity, (n_samples, n)),
              "qdd": rng.uniform(-acceleration, acceleration, (n_samples, n))}
    friction = regressor.friction
    if friction.drift == "temperature":
        reference = friction.reference_temperature
        states["temperature"] = rng.uniform(reference - 10.0, reference + 40.0, (n_samples, n))
    elif friction.drift == "time":
        states["elapsed"] = rng.uniform(0.0, 5.0 * friction.warmup_time_constant, n_samples)
    return states


def _preference_order(n_parameters: int, n_joints: int) -> np.ndarray:
    """Standard parameter indices, most preferred as independent first."""
    inertial = [N_INERTIAL * link + local for link in range(n_joints) for local in LINK_PREFERENCE]
    return np.array(inertial + list(range(N_INERTIAL * n_joints, n_parameters)))


def _pivoted_qr_diagonal(matrix: np.ndarray) -> np.ndarray:
    """``|diag(R)|`` of the QR decomposition of ``matrix`` with column pivoting (Businger and Golub).

    Householder reflections, each step taking the remaining column of largest norm (the first of equal ones),
    the norms recomputed at every step rather than downdated. Numpy has no pivoted QR, and scipy.linalg's
    (LAPACK's dgeqp3) would weigh on every command's start (BENCHMARKS.md, start-up). Only this diagonal is
    used, for the rank from its gap; where norms tie, the pivots, and so the diagonal below the gap, may differ
    from dgeqp3's (its norms are downdated), the rank does not: the independent columns are chosen in preference
    order, not by pivoting.
    """
    rows = np.array(np.transpose(matrix), dtype=float, order="C")       # one row per column: contiguous
    n_columns, n_rows = rows.shape
    diagonal = np.zeros(min(n_rows, n_columns))
    for step in range(len(diagonal)):
        block = rows[step:, step:]
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        pivot = int(np.argmax(norms))
        if norms[pivot] == 0.0:
            break
        block[[0, pivot]] = block[[pivot, 0]]
        diagonal[step] = norms[pivot]
        reflector = block[0].copy()
        reflector[0] += np.copysign(norms[pivot], reflector[0])
        reflector /= np.linalg.norm(reflector)
        rest = block[1:]
        rest -= np.outer(2.0 * (rest @ reflector), reflector)
    return diagonal


def compute_base_parameters(regressor: Regressor, n_samples: int = 200, seed: int = 0,
                            tolerance: float | None = None) -> BaseParameters:
    """Base parameters of ``regressor`` from random states (see the module docstring).

    Parameters
    ----------
    regressor : Regressor
    n_samples : int
        Random states stacked; ``n_samples * n`` must be at least ``p``.
    seed : int
        Seed of the random states.
    tolerance : float, optional
        Relative rank tolerance on the unit-norm-scaled columns, in (0, 1); default 1e-8.

    Raises
    ------
    IdentificationError
        QR and SVD disagree on the rank, or the left-to-right choice finds a different count.
    """
    if not isinstance(regressor, Regressor):
        raise DynIdError(f"regressor must be a Regressor, got {type(regressor).__name__}")
    p, n = regressor.n_parameters, regressor.n_joints
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
            or n_samples * n < p:
        raise DynIdError(f"n_samples must be an integer with n_samples * n_joints >= p = {p}, "
                         f"got {n_samples!r}")
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    if not 0.0 < tolerance < 1.0:
        raise DynIdError(f"tolerance must be in (0, 1), got {tolerance!r}")
    states = random_states(regressor, int(n_samples), np.random.default_rng(seed))
    W = regressor.compute(**states).reshape(n_samples * n, p)
    norms = np.linalg.norm(W, axis=0)
    nonzero = np.flatnonzero(norms > ZERO_COLUMN * norms.max())
    scaled = W[:, nonzero] / norms[nonzero]

    diagonal = _pivoted_qr_diagonal(scaled)
    rank = int(np.sum(diagonal > tolerance * diagonal[0]))
    singular_values = np.linalg.svd(scaled, compute_uv=False)
    svd_rank = int(np.sum(singular_values > tolerance * singular_values[0]))
    if svd_rank != rank:
        raise IdentificationError(
            f"rank from QR ({rank}) and SVD ({svd_rank}) disagree at tolerance {tolerance:g}: "
            "the regressor has near-dependent columns; change the tolerance or n_samples")
    if rank < len(diagonal):
        logger.debug("base parameters: rank %d of %d, |R| gap %.3g -> %.3g", rank, p,
                     diagonal[rank - 1], diagonal[rank])

    rank_of = np.argsort(_preference_order(p, n))
    scan = np.argsort(rank_of[nonzero], kind="stable")
    R_scan = np.linalg.qr(scaled[:, scan], mode="r")
    keep = np.zeros(len(nonzero), dtype=bool)
    keep[scan] = np.abs(np.diag(R_scan)) > tolerance
    if int(keep.sum()) != rank:
        raise IdentificationError(
            f"the preference-order selection finds {int(keep.sum())} independent columns, "
            f"pivoted QR finds {rank} (tolerance {tolerance:g}); change the tolerance or "
            "n_samples")
    independent = nonzero[keep]
    dependent = np.setdiff1d(np.arange(p), independent)
    ordered = np.concatenate([scaled[:, keep], scaled[:, ~keep]], axis=1)
    R_ordered = np.linalg.qr(ordered, mode="r")
    beta_scaled = np.linalg.solve(R_ordered[:rank, :rank], R_ordered[:rank, rank:])
    beta = np.zeros((rank, p - rank))
    dependent_nonzero = np.searchsorted(dependent, nonzero[~keep])
    beta[:, dependent_nonzero] = (beta_scaled / norms[independent][:, None]
                                  * norms[nonzero[~keep]][None, :])
    beta[np.abs(beta) < BETA_ZERO] = 0.0
    standard_names = regressor.parameter_names
    names = tuple(standard_names[index] + ("R" if beta[row].any() else "")
                  for row, index in enumerate(independent))
    logger.info("%d base parameters of %d standard (%d zero columns)", rank, p,
                p - len(nonzero))
    return BaseParameters(standard_names=standard_names, independent=tuple(independent),
                          dependent=tuple(dependent), beta=beta, names=names)
