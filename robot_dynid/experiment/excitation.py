"""Excitation design: random and optimised Fourier excitations within a robot's limits.

:func:`optimize_excitation` designs a :class:`~robot_dynid.experiment.trajectories.FourierTrajectory`
minimising a criterion of the base regressor subject to the limits (see its docstring);
:func:`optimize_payload_excitation` the short one of a payload identification: a criterion of the
payload's ten regressor columns (:class:`~robot_dynid.model.payload.PayloadRegressor`), mostly the
wrist joints moving, the others held at a pose.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import TrajectoryError
from robot_dynid.experiment.trajectories import FourierTrajectory, fourier_basis
from robot_dynid.experiment.trajectory_checks import TrajectoryCheck, check_trajectory
from robot_dynid.joint_names import index_in

__all__ = ["HOME_MARGIN", "home_pose", "scaled_fourier", "MAX_HARMONICS", "MAX_PERIOD", "MAX_STARTS", "MAX_ITERATIONS",
           "MAX_GRID", "random_excitation", "CRITERIA", "OptimizationProgress", "ExcitationDesign",
           "criterion_and_gradient", "optimize_excitation", "PAYLOAD_WRIST_JOINTS", "DEFAULT_PAYLOAD_DURATION",
           "MAX_PAYLOAD_DURATION", "optimize_payload_excitation"]

logger = logging.getLogger(__name__)


#: Joints at least this fraction [1] of their range inside their limits in the default pose.
HOME_MARGIN = 0.05


def home_pose(lower, upper) -> np.ndarray:
    """The default home pose [rad] (n,): zeros, moved at least :data:`HOME_MARGIN` of each joint's range
    inside its limits ``lower``, ``upper`` (n,)."""
    margin = HOME_MARGIN * (upper - lower)
    return np.clip(np.zeros_like(lower), lower + margin, upper - margin)


def _rest_to_rest_projection(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project coefficients (n, L) onto ``sum_l a_l = 0`` (qd(0) = 0) and ``sum_l l b_l = 0``
    (qdd(0) = 0), the rest-to-rest conditions of a Fourier trajectory (also at every period)."""
    orders = np.arange(1, a.shape[1] + 1)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - np.outer(b @ orders, orders) / (orders @ orders)
    return a, b


def scaled_fourier(robot, period: float, a, b, amplitude_fraction: float = 0.5,
                   n_grid: int = 400) -> FourierTrajectory:
    """Fourier trajectory of the given coefficient shapes scaled to a fraction of the limits.

    Joint j's coefficients are multiplied by the largest factor that keeps its excursion within
    ``amplitude_fraction`` of the half range around the middle of its range and its peak speed
    and acceleration within ``amplitude_fraction`` of its limits (on a grid of ``n_grid``
    points per period); ``q0`` centres the excursion in the range.

    Parameters
    ----------
    robot : RobotDescription
    period : float
        [s].
    a, b : array_like, shape (n, L)
        Coefficient shapes (any scale), rows in ``robot.joint_names`` order.
    amplitude_fraction : float
        In (0, 1].
    n_grid : int
        Grid points per period used for the extremes.
    """
    if not 0.0 < amplitude_fraction <= 1.0:
        raise TrajectoryError(f"amplitude_fraction must be in (0, 1], got {amplitude_fraction!r}")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    lower, upper, velocity, acceleration, _ = robot.limit_arrays()
    t = np.linspace(0.0, period, n_grid, endpoint=False)
    q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = fourier_basis(t, 2.0 * np.pi / period, a.shape[1])
    shape_q, shape_qd = q_a @ a.T + q_b @ b.T, qd_a @ a.T + qd_b @ b.T
    shape_qdd = qdd_a @ a.T + qdd_b @ b.T
    half_width = 0.5 * (shape_q.max(axis=0) - shape_q.min(axis=0))
    tiny = np.finfo(float).tiny
    factor = amplitude_fraction * np.min([
        0.5 * (upper - lower) / np.maximum(half_width, tiny),
        velocity / np.maximum(np.abs(shape_qd).max(axis=0), tiny),
        acceleration / np.maximum(np.abs(shape_qdd).max(axis=0), tiny)], axis=0)
    centre = 0.5 * (shape_q.max(axis=0) + shape_q.min(axis=0))
    q0 = 0.5 * (upper + lower) - factor * centre
    return FourierTrajectory(robot.joint_names, float(period), q0, a * factor[:, None],
                             b * factor[:, None])


MAX_HARMONICS = 20
"""Harmonics of a designed Fourier excitation: the thesis uses 5; one SLSQP iteration over the 6 (2 L + 1)
coefficients of 6 joints and the 3 x 6 x 2 x 20 L constraints takes seconds at L = 20, over a minute at L = 50."""
MAX_PERIOD = 3600.0
"""[s] of a designed Fourier excitation's period (the thesis uses 10 s to 20 s)."""
MAX_STARTS = 1000
"""Random starts of :func:`optimize_excitation`."""
MAX_ITERATIONS = 100_000
"""SLSQP iterations per start of :func:`optimize_excitation`."""
MAX_GRID = 100_000
"""Constraint times and objective samples per period of :func:`optimize_excitation`."""


def _check_fourier_arguments(harmonics, period) -> None:
    validators.count(harmonics, "harmonics (rest to rest needs two)", TrajectoryError, minimum=2,
                     maximum=MAX_HARMONICS)
    validators.in_range(period, "period", TrajectoryError, "s", 0.0, MAX_PERIOD, allow_minimum=False)


def random_excitation(robot, harmonics: int = 5, period: float = 10.0,
                      amplitude_fraction: float = 0.5, seed=0) -> FourierTrajectory:
    """Random rest-to-rest Fourier trajectory within a fraction of the limits.

    Coefficients are drawn from a standard normal distribution (``numpy.random.default_rng
    (seed)``), projected onto the rest-to-rest conditions ``sum_l a_l = 0`` and
    ``sum_l l b_l = 0`` (needs ``harmonics >= 2``) and scaled by :func:`scaled_fourier`.

    Parameters
    ----------
    robot : RobotDescription
    harmonics : int
        ``L`` (>= 2).
    period : float
        [s].
    amplitude_fraction : float
        In (0, 1].
    seed : int or numpy.random.Generator
    """
    _check_fourier_arguments(harmonics, period)
    rng = np.random.default_rng(seed)
    shape = (robot.n_joints, int(harmonics))
    a, b = _rest_to_rest_projection(rng.standard_normal(shape), rng.standard_normal(shape))
    return scaled_fourier(robot, period, a, b, amplitude_fraction)


# --------------------------------------------------------------------------- optimisation

CRITERIA = ("cond", "logdet", "frobenius")
_STEP_Q = 1e-6
_STEP_QD = 1e-6
_STEP_QDD = 1.0


@dataclass(frozen=True)
class OptimizationProgress:
    """Passed to the ``progress`` callback of :func:`optimize_excitation` after each iteration.

    ``start`` is 0-based out of ``n_starts``; ``value`` the criterion of the current iterate
    (see :attr:`ExcitationDesign.value`); ``elapsed`` [s] since the optimisation began.
    """

    start: int
    n_starts: int
    iteration: int
    value: float
    best_value: float
    elapsed: float


@dataclass(frozen=True, eq=False)
class ExcitationDesign:
    """Result of :func:`optimize_excitation`.

    Attributes
    ----------
    trajectory : FourierTrajectory
        The design, one period long.
    criterion : str
        ``"cond"``, ``"logdet"`` or ``"frobenius"``.
    value, initial_value : float
        Criterion of the design and of the random start it was optimised from: ``cond`` and
        ``frobenius`` as ratios [1], ``logdet`` as ``-log det(W^T W / rows)`` of the base
        regressor ``W`` on the objective samples.
    condition_number : float
        Condition number of the column-scaled base regressor of the design (of the payload's ten
        columns for a payload design).
    n_base_parameters : int
        Columns of the base regressor (10 for a payload design).
    speed_fractions : ndarray, shape (n,)
        Peak ``|qd|`` over each joint's velocity limit, on the dense check grid.
    check : TrajectoryCheck
        Check on a grid 10 times denser than the constraint grid (no violations).
    shrink : float
        Factor applied to the amplitudes after the optimisation to clear violations found on
        the dense grid (1: none needed).
    elapsed : float
        Wall time [s].
    n_starts, n_evaluations, n_iterations : int
        Starts run, criterion evaluations (with or without gradient) and SLSQP iterations,
        all starts together.
    start_values : tuple of (float, float)
        ``(initial, final)`` criterion of every start.
    """

    trajectory: FourierTrajectory
    criterion: str
    value: float
    initial_value: float
    condition_number: float
    n_base_parameters: int
    speed_fractions: np.ndarray
    check: TrajectoryCheck
    shrink: float
    elapsed: float
    n_starts: int
    n_evaluations: int
    n_iterations: int
    start_values: tuple

    def to_dict(self) -> dict:
        """Summary (without the trajectory) for reports and JSON output."""
        return {"criterion": self.criterion, "value": float(self.value),
                "initial_value": float(self.initial_value),
                "condition_number": float(self.condition_number),
                "n_base_parameters": self.n_base_parameters,
                "speed_fractions": dict(zip(self.trajectory.joint_names,
                                            (float(f) for f in self.speed_fractions))),
                "shrink": float(self.shrink), "elapsed": float(self.elapsed),
                "n_starts": self.n_starts, "n_evaluations": self.n_evaluations,
                "n_iterations": self.n_iterations,
                "start_values": [[float(a), float(b)] for a, b in self.start_values]}


_GRAM_CONDITION_LIMIT = 1e6


def _singular_system(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Singular values (descending), right singular vectors and, when computed, left ones.

    From ``eigh(matrix^T matrix)`` (r x r) when the matrix is well enough conditioned for the
    squared spectrum (cond < 1e6); an SVD of the tall matrix otherwise. The small eigenproblem
    is far cheaper than the SVD, above all with multi-threaded BLAS on a loaded machine.
    Returns ``(s, V, U)`` with ``U`` None on the eigenvalue path (``U = matrix V / s``).
    """
    eigenvalues, V = np.linalg.eigh(matrix.T @ matrix)
    s = np.sqrt(np.clip(eigenvalues[::-1], 0.0, None))
    if s[-1] > s[0] / _GRAM_CONDITION_LIMIT:
        return s, V[:, ::-1], None
    U, s, Vt = np.linalg.svd(matrix, full_matrices=False)
    return s, Vt.T, U


def _spectral_gradient(matrix, s, V, U, weights) -> np.ndarray:
    """``U diag(weights) V^T`` (the gradient of a function of the singular values with
    ``dJ/ds = weights``), with ``U = matrix V / s`` when ``U`` is None."""
    if U is None:
        return matrix @ ((V * (weights / s)) @ V.T)
    return (U * weights) @ V.T


def criterion_and_gradient(W: np.ndarray, criterion: str) -> tuple[float, np.ndarray]:
    """Optimised criterion ``J`` of a stacked base regressor and its gradient ``dJ/dW``.

    With ``s_i`` the singular values of the column-scaled ``Ws = W D^-1``
    (``D = diag(||W_c||)``) and ``sigma_i`` those of ``W``:

    - ``"cond"``: ``J = log(s_max / s_min)`` (the condition number is ``exp(J)``);
    - ``"frobenius"``: ``J = log(||Ws||_F ||Ws^+||_F) = log sqrt(sum s^2 sum s^-2)``;
    - ``"logdet"``: ``J = -log det(W^T W / rows) = -sum log(sigma_i^2 / rows)``.

    ``dJ/dWs = U diag(dJ/ds) V^T`` (``Ws = U diag(s) V^T``) and, through the scaling,
    ``dJ/dW_c = (G_c - (G_c . Ws_c) Ws_c) / D_c`` with ``G = dJ/dWs``.

    Parameters
    ----------
    W : ndarray, shape (rows, r)
        Sample-major stacked base regressor.
    criterion : str

    Returns
    -------
    J : float
        ``inf`` (with a zero gradient) when ``W`` is rank deficient.
    gradient : ndarray, shape (rows, r)
    """
    if criterion == "logdet":
        sigma, V, U = _singular_system(W)
        if sigma[-1] <= 0.0:
            return math.inf, np.zeros_like(W)
        value = -float(np.sum(np.log(sigma**2 / W.shape[0])))
        return value, _spectral_gradient(W, sigma, V, U, -2.0 / sigma)
    norms = np.linalg.norm(W, axis=0)
    if np.any(norms == 0.0):
        return math.inf, np.zeros_like(W)
    scaled = W / norms
    s, V, U = _singular_system(scaled)
    if s[-1] <= 0.0:
        return math.inf, np.zeros_like(W)
    weights = np.zeros_like(s)
    if criterion == "cond":
        value = math.log(s[0] / s[-1])
        weights[0], weights[-1] = 1.0 / s[0], -1.0 / s[-1]
    else:
        sum_square, sum_inverse = np.sum(s**2), np.sum(s**-2.0)
        value = 0.5 * math.log(sum_square) + 0.5 * math.log(sum_inverse)
        weights = s / sum_square - s**-3.0 / sum_inverse
    gradient = _spectral_gradient(scaled, s, V, U, weights)
    gradient = (gradient - np.sum(gradient * scaled, axis=0) * scaled) / norms
    return value, gradient


def _reported(value: float, criterion: str) -> float:
    return value if criterion == "logdet" else math.exp(value)


class _FourierProblem:
    """Criterion of a common-period Fourier design as a function of its coefficients.

    Decision vector ``x = [q0 (n), a (n, L) row-major, b (n, L) row-major]``; ``columns(q, qd, qdd)``
    gives the design matrix (N, n, r) of states (N, n): the base regressor, or a payload's columns.
    """

    def __init__(self, columns, names, period, harmonics, n_samples, criterion):
        self.columns, self.criterion = columns, criterion
        self.names, self.period, self.harmonics = tuple(names), float(period), int(harmonics)
        self.n = len(self.names)
        times = (np.arange(n_samples) + 0.5) * self.period / n_samples
        self.basis = fourier_basis(times, 2.0 * np.pi / self.period, self.harmonics)
        self.n_evaluations = 0
        self._last_value = None   # (x, value) of the last value() call

    def split(self, x):
        n, L = self.n, self.harmonics
        return x[:n], x[n:n + n * L].reshape(n, L), x[n + n * L:].reshape(n, L)

    def join(self, q0, a, b):
        return np.concatenate([q0, np.ravel(a), np.ravel(b)])

    def trajectory(self, x) -> FourierTrajectory:
        q0, a, b = self.split(x)
        return FourierTrajectory(self.names, self.period, q0, a, b)

    def states(self, x):
        q0, a, b = self.split(x)
        q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = self.basis
        return q0 + q_a @ a.T + q_b @ b.T, qd_a @ a.T + qd_b @ b.T, qdd_a @ a.T + qdd_b @ b.T

    def base_regressor(self, q, qd, qdd) -> np.ndarray:
        return self.columns(q, qd, qdd)

    def value(self, x) -> float:
        W = self.base_regressor(*self.states(x))
        self.n_evaluations += 1
        value = criterion_and_gradient(W.reshape(-1, W.shape[-1]), self.criterion)[0]
        self._last_value = (np.array(x, dtype=float), value)
        return value

    def value_at(self, x) -> float:
        """:meth:`value`, taken from the last evaluation when that was at ``x`` (SLSQP calls its
        callback with the iterate it has just evaluated)."""
        if self._last_value is not None and np.array_equal(self._last_value[0], x):
            return self._last_value[1]
        return self.value(x)

    def gradient(self, x) -> np.ndarray:
        return self.value_and_gradient(x)[1]

    def value_and_gradient(self, x):
        """``J`` and ``dJ/dx``: ``dJ/dW`` contracted with finite differences of the regressor
        in each joint's q, qd and qdd (qdd enters linearly), chained through the basis."""
        q, qd, qdd = self.states(x)
        samples, n = q.shape
        direction = np.where(qd >= 0.0, 1.0, -1.0)
        blocks = [(q, qd, qdd)]
        for j in range(n):
            step = np.zeros(n)
            step[j] = 1.0
            blocks.append((q + _STEP_Q * step, qd, qdd))
            blocks.append((q, qd + _STEP_QD * step * direction[:, j:j + 1], qdd))
            blocks.append((q, qd, qdd + _STEP_QDD * step))
        stacked = [np.concatenate(parts) for parts in zip(*blocks)]
        Y = self.base_regressor(*stacked).reshape(len(blocks), samples, n, -1)
        self.n_evaluations += 1
        value, gradient = criterion_and_gradient(Y[0].reshape(samples * n, -1), self.criterion)
        if not math.isfinite(value):
            return value, np.zeros_like(x)
        gradient = gradient.reshape(samples, n, -1)
        sensitivity = np.einsum("bknr,knr->bk", Y[1:] - Y[0], gradient).reshape(n, 3, samples)
        g_q = sensitivity[:, 0].T / _STEP_Q
        g_qd = sensitivity[:, 1].T * direction / _STEP_QD
        g_qdd = sensitivity[:, 2].T / _STEP_QDD
        q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = self.basis
        grad_a = (q_a.T @ g_q + qd_a.T @ g_qd + qdd_a.T @ g_qdd).T
        grad_b = (q_b.T @ g_q + qd_b.T @ g_qd + qdd_b.T @ g_qdd).T
        return value, self.join(g_q.sum(axis=0), grad_a, grad_b)


def _linear_constraints(problem: _FourierProblem, robot, n_grid: int, limit_fraction: float,
                        start_pose, held=None):
    """``A_ub x <= c_ub`` (limits on the grid) and ``A_eq x = c_eq`` (rest at t = 0, start pose).

    Positions within ``middle -+ limit_fraction * half range``, ``|qd|`` and ``|qdd|`` within
    ``limit_fraction`` of their limits at ``n_grid`` times per period; ``sum_l a_l = 0`` and
    ``sum_l l b_l = 0`` per joint (rest at t = 0 and so at every period); optionally
    ``q0 - sum_l b_l / (wf l) = start_pose``. A joint of ``held`` (index -> pose [rad]) instead
    stays at its pose: ``q0 = pose``, ``a = b = 0``.
    """
    held = {} if held is None else held
    n, L = problem.n, problem.harmonics
    wf = 2.0 * np.pi / problem.period
    lower, upper, velocity, acceleration, _ = robot.limit_arrays(problem.names)
    middle, half = 0.5 * (upper + lower), 0.5 * (upper - lower)
    times = np.arange(n_grid) * problem.period / n_grid
    q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = fourier_basis(times, wf, L)
    rows, bounds = [], []
    size = n + 2 * n * L
    for j in (j for j in range(n) if j not in held):
        def block(basis_a, basis_b, offset):
            matrix = np.zeros((n_grid, size))
            matrix[:, j] = offset
            matrix[:, n + j * L:n + (j + 1) * L] = basis_a
            matrix[:, n + n * L + j * L:n + n * L + (j + 1) * L] = basis_b
            return matrix

        position = block(q_a, q_b, 1.0)
        speed = block(qd_a, qd_b, 0.0)
        accel = block(qdd_a, qdd_b, 0.0)
        reach = limit_fraction * half[j]
        for matrix, bound in ((position, middle[j] + reach), (-position, reach - middle[j]),
                              (speed, limit_fraction * velocity[j]),
                              (-speed, limit_fraction * velocity[j]),
                              (accel, limit_fraction * acceleration[j]),
                              (-accel, limit_fraction * acceleration[j])):
            rows.append(matrix)
            bounds.append(np.full(n_grid, bound))
    equalities, targets = [], []
    orders = np.arange(1, L + 1)
    for j, pose in held.items():
        for column in (j, *range(n + j * L, n + (j + 1) * L), *range(n + n * L + j * L, n + n * L + (j + 1) * L)):
            row = np.zeros(size)
            row[column] = 1.0
            equalities.append(row)
            targets.append(float(pose) if column == j else 0.0)
    for j in (j for j in range(n) if j not in held):
        row = np.zeros(size)
        row[n + j * L:n + (j + 1) * L] = 1.0
        equalities.append(row)
        targets.append(0.0)
        row = np.zeros(size)
        row[n + n * L + j * L:n + n * L + (j + 1) * L] = orders
        equalities.append(row)
        targets.append(0.0)
        if start_pose is not None:
            row = np.zeros(size)
            row[j] = 1.0
            row[n + n * L + j * L:n + n * L + (j + 1) * L] = -1.0 / (wf * orders)
            equalities.append(row)
            targets.append(float(start_pose[j]))
    return np.vstack(rows), np.concatenate(bounds), np.array(equalities), np.array(targets)


def _shrunk(trajectory: FourierTrajectory, factor: float) -> FourierTrajectory:
    """Amplitudes times ``factor`` about the start pose: positions become convex combinations of
    the start pose and the original positions (so stay within the limits), ``q(0)``, rest at
    the ends are kept, speeds and accelerations scale by ``factor``."""
    start = trajectory.start_pose
    a, b = factor * trajectory.a, factor * trajectory.b
    orders = np.arange(1, trajectory.harmonics + 1)
    q0 = start + np.sum(b / (trajectory.angular_frequency[:, None] * orders), axis=1)
    return FourierTrajectory(trajectory.joint_names, trajectory.period, q0, a, b,
                             trajectory.duration)


def _checked_design(robot, trajectory: FourierTrajectory, n_points: int):
    """Dense check; shrink the amplitudes by 1 % steps until no violation remains."""
    factor = 1.0
    for _ in range(100):
        candidate = trajectory if factor == 1.0 else _shrunk(trajectory, factor)
        check = check_trajectory(robot, candidate, n_points=n_points, tolerance=1e-6)
        if check.ok:
            return candidate, check, factor
        logger.info("dense check of the optimised excitation: %s; shrinking amplitudes to %.2f",
                    check.violations[0].describe(), factor * 0.99)
        factor *= 0.99
    raise TrajectoryError("optimised excitation still violates the limits after shrinking its "
                          "amplitudes to %.2f: %s" % (factor, check.violations[0].describe()))


def _iteration_callback(problem, start, n_starts, state, criterion, began, time_limit, progress):
    """SLSQP callback reporting progress and enforcing the time limit, for every supported scipy.

    From scipy 1.16 SLSQP passes an ``OptimizeResult`` with ``x`` and ``fun`` to a callback whose
    one parameter is named ``intermediate_result``; older scipy passes the iterate ``xk`` alone,
    whose criterion is then taken from the problem. The iterate is kept in ``state["x"]``. At the
    time limit it raises StopIteration: scipy >= 1.16 ends the run with that iterate as its result,
    older scipy lets the exception out of ``minimize`` (see :func:`_run_slsqp`)."""
    def callback(intermediate_result):
        if isinstance(intermediate_result, np.ndarray):
            x = np.array(intermediate_result, dtype=float)
            value = float(problem.value_at(x))
        else:
            x = np.array(intermediate_result.x, dtype=float)
            value = float(intermediate_result.fun)
        state["iteration"] += 1
        state["x"] = x
        state["best"] = min(state["best"], value)
        elapsed = time.monotonic() - began
        logger.info("start %d/%d iteration %d: %s %.6g", start + 1, n_starts, state["iteration"],
                    criterion, _reported(value, criterion))
        if progress is not None:
            progress(OptimizationProgress(start, n_starts, state["iteration"],
                                          _reported(value, criterion),
                                          _reported(state["best"], criterion), elapsed))
        if time_limit is not None and elapsed > time_limit:
            raise StopIteration

    return callback


def _run_slsqp(problem, x0, constraints, callback, state, max_iterations):
    """``(x, message)`` of one SLSQP run from ``x0``. When the callback stops it at the time limit,
    the iterate it was last called with is the result, whichever scipy ran."""
    try:
        from scipy.optimize import minimize
        result = minimize(problem.value, x0, jac=problem.gradient, method="SLSQP",
                          constraints=constraints, callback=callback,
                          options={"maxiter": int(max_iterations), "ftol": 1e-7})
    except StopIteration:     # scipy < 1.16: the callback's StopIteration is not caught
        return state["x"], "stopped at the time limit"
    return result.x, result.message


def optimize_excitation(robot, harmonics: int = 5, period: float = 10.0,
                        criterion: str = "cond", friction=None, seed=0, n_starts: int = 2,
                        n_grid: int | None = None, n_samples: int | None = None,
                        limit_fraction: float = 0.95, max_iterations: int = 200,
                        time_limit: float | None = None, start_pose=None, armature: bool = False,
                        progress=None) -> ExcitationDesign:
    """Optimise a rest-to-rest Fourier excitation for identification.

    Minimises, over the coefficients ``q0, a, b`` of a :class:`FourierTrajectory` with one
    base frequency ``wf = 2 pi / period``, a criterion of the base regressor ``W`` (the
    columns of :class:`~robot_dynid.model.regressor.Regressor` kept by
    :func:`~robot_dynid.model.base_parameters.compute_base_parameters`, which uses random states)
    stacked over ``n_samples`` times per period: see :func:`criterion_and_gradient`. The
    gradient is analytic in ``W`` and uses finite differences of the regressor in each joint's
    q, qd, qdd (``3 n + 1`` regressor batches per gradient).

    The constraints are linear in the coefficients (q, qd, qdd are): positions, speeds and
    accelerations within ``limit_fraction`` of the limits at ``n_grid`` times per period,
    ``qd = qdd = 0`` at ``t = 0`` (and so at every period) and optionally ``q(0) =
    start_pose``; scipy's SLSQP handles them as dense linear constraints. Each of ``n_starts``
    starts is a random rest-to-rest trajectory at 60 % of ``limit_fraction`` of the limits
    (:func:`random_excitation`, generator ``numpy.random.default_rng(seed)``), so the result is
    deterministic for a given seed. The best design is re-checked with :func:`check_trajectory`
    on ``10 n_grid + 1`` points against the full limits; where a violation appears between
    grid points the amplitudes shrink by 1 % steps until none remains.

    Parameters
    ----------
    robot : RobotDescription
    harmonics : int
        ``L`` (>= 2).
    period : float
        [s].
    criterion : {"cond", "logdet", "frobenius"}
    friction : FrictionModel, optional
        Friction columns of the regressor (default none); drift columns are left out (within
        one period they are collinear with the base columns).
    seed : int
    n_starts : int
        Random starts (>= 1).
    n_grid : int, optional
        Constraint times per period; default ``max(100, 20 L)``.
    n_samples : int, optional
        Objective samples per period; default ``max(100, 20 L)``.
    limit_fraction : float
        In (0, 1].
    max_iterations : int
        SLSQP iterations per start.
    time_limit : float, optional
        Wall time [s] after which the running start stops at its current iterate and no new
        start begins.
    start_pose : array_like, shape (n,), optional
        Required ``q(0)`` [rad].
    armature : bool
        Include rotor-inertia columns in the regressor.
    progress : callable, optional
        Called with an :class:`OptimizationProgress` after every iteration.

    Returns
    -------
    ExcitationDesign
    """
    from robot_dynid.model.base_parameters import compute_base_parameters    # here: pinocchio costs a --help 0.1 s
    from robot_dynid.model.friction import FrictionModel
    from robot_dynid.model.regressor import Regressor
    _check_design_arguments(criterion, harmonics, period, n_starts, max_iterations, limit_fraction, time_limit)
    friction = FrictionModel() if friction is None else friction
    if friction.drift != "none":
        logger.info("excitation design leaves out the %s drift columns of the friction model",
                    friction.drift)
        friction = dataclasses.replace(friction, drift="none")
    if start_pose is not None:
        start_pose = validators.array(start_pose, "start_pose", TrajectoryError, shape=(robot.n_joints,),
                                      axes=("joints",), columns=robot.joint_names, unit="rad")
    regressor = Regressor(robot, friction, armature=armature)
    base = compute_base_parameters(regressor, seed=seed)
    logger.info("excitation design for %s: %d base parameters", robot.name, base.rank)
    return _design(robot, lambda q, qd, qdd: base.select(regressor.compute(q, qd, qdd)), base.rank, harmonics, period,
                   criterion, seed, n_starts, n_grid, n_samples, limit_fraction, max_iterations, time_limit,
                   start_pose, None, progress)


def _check_design_arguments(criterion, harmonics, period, n_starts, max_iterations, limit_fraction,
                            time_limit) -> None:
    validators.text(criterion, "criterion", TrajectoryError, CRITERIA)
    _check_fourier_arguments(harmonics, period)
    for name, value, maximum in (("n_starts", n_starts, MAX_STARTS), ("max_iterations", max_iterations,
                                                                      MAX_ITERATIONS)):
        validators.count(value, name, TrajectoryError, maximum=maximum)
    if not (isinstance(limit_fraction, (int, float)) and 0.0 < limit_fraction <= 1.0):
        raise TrajectoryError(f"limit_fraction must be in (0, 1], got {limit_fraction!r}")
    if time_limit is not None:
        validators.positive(time_limit, "time_limit", TrajectoryError, "s", allow_zero=True)


def _design(robot, columns, n_columns: int, harmonics, period, criterion, seed, n_starts, n_grid, n_samples,
            limit_fraction, max_iterations, time_limit, start_pose, held, progress,
            duration: float | None = None) -> ExcitationDesign:
    """The optimisation of :func:`optimize_excitation` for a design matrix ``columns(q, qd, qdd)`` (N, n,
    ``n_columns``), joints ``held`` (index -> pose [rad]) kept still; the trajectory lasts ``duration``
    [s] (whole periods; default one period)."""
    n_grid = max(100, 20 * int(harmonics)) if n_grid is None else n_grid
    n_samples = max(100, 20 * int(harmonics)) if n_samples is None else n_samples
    for name, value in (("n_grid", n_grid), ("n_samples", n_samples)):
        validators.count(value, name, TrajectoryError, minimum=4, maximum=MAX_GRID)
    began = time.monotonic()
    rng = np.random.default_rng(seed)
    problem = _FourierProblem(columns, robot.joint_names, period, harmonics, n_samples, criterion)
    A_ub, c_ub, A_eq, c_eq = _linear_constraints(problem, robot, n_grid, limit_fraction,
                                                 start_pose, held)
    constraints = [{"type": "ineq", "fun": lambda x: c_ub - A_ub @ x, "jac": lambda x: -A_ub},
                   {"type": "eq", "fun": lambda x: A_eq @ x - c_eq, "jac": lambda x: A_eq}]
    logger.info("excitation design for %s: %d columns, %d harmonics, period %g s, "
                "%d inequality and %d equality constraints, criterion %s", robot.name, n_columns,
                harmonics, period, A_ub.shape[0], A_eq.shape[0], criterion)
    best = None
    start_values, n_iterations = [], 0
    for start in range(n_starts):
        if time_limit is not None and start > 0 and time.monotonic() - began > time_limit:
            break
        initial = random_excitation(robot, harmonics, period, 0.6 * limit_fraction, rng)
        x0 = problem.join(initial.q0, initial.a, initial.b)
        if start_pose is not None:
            x0[:problem.n] += start_pose - initial.start_pose
        for joint, pose in (held or {}).items():
            q0, a, b = problem.split(x0)
            q0[joint], a[joint], b[joint] = pose, 0.0, 0.0
            x0 = problem.join(q0, a, b)
        initial_value = problem.value(x0)
        state = {"iteration": 0, "best": math.inf}
        callback = _iteration_callback(problem, start, n_starts, state, criterion, began,
                                       time_limit, progress)
        x, message = _run_slsqp(problem, x0, constraints, callback, state, max_iterations)
        n_iterations += state["iteration"]
        final_value = problem.value(x)
        start_values.append((_reported(initial_value, criterion),
                             _reported(final_value, criterion)))
        logger.info("start %d/%d: %s %.6g -> %.6g (%s)", start + 1, n_starts, criterion,
                    start_values[-1][0], start_values[-1][1], message)
        if best is None or final_value < best[0]:
            best = (final_value, initial_value, x)
    trajectory, check, shrink = _checked_design(robot, problem.trajectory(best[2]),
                                                10 * n_grid + 1)
    final_x = problem.join(trajectory.q0, trajectory.a, trajectory.b)
    final_value = problem.value(final_x)
    W = problem.base_regressor(*problem.states(final_x))
    condition = math.exp(criterion_and_gradient(W.reshape(-1, W.shape[-1]), "cond")[0])
    if duration is not None:
        trajectory = dataclasses.replace(trajectory, duration=duration)
    design = ExcitationDesign(
        trajectory=trajectory, criterion=criterion, value=_reported(final_value, criterion),
        initial_value=_reported(best[1], criterion), condition_number=condition,
        n_base_parameters=n_columns,
        speed_fractions=np.array([joint.qd_fraction for joint in check.joints]), check=check,
        shrink=shrink, elapsed=time.monotonic() - began, n_starts=len(start_values),
        n_evaluations=problem.n_evaluations, n_iterations=n_iterations,
        start_values=tuple(start_values))
    logger.info("excitation design: %s %.6g (from %.6g), cond %.4g, %.1f s", criterion,
                design.value, design.initial_value, condition, design.elapsed)
    return design


#: Joints a payload design moves by default: the last ones (the wrist), at most this many.
PAYLOAD_WRIST_JOINTS = 3
#: [s] of a payload excitation (industrial controllers identify a load in about a minute), and its maximum.
DEFAULT_PAYLOAD_DURATION = 60.0
MAX_PAYLOAD_DURATION = 3600.0


def optimize_payload_excitation(robot, duration: float = DEFAULT_PAYLOAD_DURATION, period: float = 10.0,
                                harmonics: int = 5, frame: str | None = None, moving_joints=None, pose=None,
                                criterion: str = "cond", seed=0, n_starts: int = 2, n_grid: int | None = None,
                                n_samples: int | None = None, limit_fraction: float = 0.95,
                                max_iterations: int = 200, time_limit: float | None = None,
                                progress=None) -> ExcitationDesign:
    """Optimise a short rest-to-rest Fourier excitation for a payload identification.

    As :func:`optimize_excitation`, with the design matrix the payload's ten regressor columns at
    ``frame`` (:class:`~robot_dynid.model.payload.PayloadRegressor`: what ``robot-dynid payload identify``
    fits, the arm's model fixed) and only ``moving_joints`` moving; every other joint is held at its
    entry of ``pose``. The trajectory repeats its period for ``duration`` (whole periods).

    Parameters
    ----------
    robot : RobotDescription
    duration : float
        [s], in (0, :data:`MAX_PAYLOAD_DURATION`]; rounded to a whole number of periods (at least one).
    period, harmonics, criterion, seed, n_starts, n_grid, n_samples, limit_fraction, max_iterations,
    time_limit, progress
        As in :func:`optimize_excitation`.
    frame : str, optional
        Payload frame (:func:`~robot_dynid.model.payload.payload_frames`); default the last link.
    moving_joints : sequence of str, optional
        Joints that move; default the last :data:`PAYLOAD_WRIST_JOINTS` (the wrist).
    pose : array_like, shape (n,), optional
        [rad] where the other joints stay (their entries; the moving joints' are ignored); default
        :func:`home_pose`.

    Returns
    -------
    ExcitationDesign
        Its trajectory lasts the whole ``duration``.
    """
    _check_design_arguments(criterion, harmonics, period, n_starts, max_iterations, limit_fraction, time_limit)
    validators.in_range(duration, "duration", TrajectoryError, "s", 0.0, MAX_PAYLOAD_DURATION, allow_minimum=False)
    names = tuple(robot.joint_names)
    if moving_joints is None:
        moving_joints = names[-min(PAYLOAD_WRIST_JOINTS, len(names)):]
    if isinstance(moving_joints, str) or not moving_joints:
        raise TrajectoryError(f"moving joints must be a non-empty list of joints of robot {robot.name!r} "
                              f"{list(names)}, got {moving_joints!r}")
    index_in(names, list(moving_joints), "moving joints", f"robot {robot.name!r}", error=TrajectoryError)
    lower, upper = robot.limit_arrays()[:2]
    if pose is None:
        pose = home_pose(lower, upper)
    pose = validators.array(pose, "pose", TrajectoryError, shape=(robot.n_joints,), axes=("joints",),
                            columns=robot.joint_names, unit="rad")
    held = {j: float(pose[j]) for j, name in enumerate(names) if name not in moving_joints}
    outside = [j for j, value in held.items() if not lower[j] <= value <= upper[j]]
    if outside:
        j = outside[0]
        raise TrajectoryError(f"pose: joint {names[j]} at {pose[j]:.6g} is outside its limits "
                              f"[{lower[j]:.6g}, {upper[j]:.6g}]")
    periods = max(1, round(duration / period))
    if abs(periods * period - duration) > 1e-9:
        logger.info("payload excitation: %d periods of %g s = %g s instead of %g s", periods, period,
                    periods * period, duration)
    from robot_dynid.model.payload import PayloadRegressor
    columns = PayloadRegressor(robot, frame)
    return _design(robot, columns.compute, 10, harmonics, period, criterion, seed, n_starts, n_grid, n_samples,
                   limit_fraction, max_iterations, time_limit, None, held, progress,
                   duration=float(periods * period))
