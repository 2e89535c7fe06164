"""The motion between the points of a ``trajectory_msgs/JointTrajectory``, as ros2_control's
joint_trajectory_controller interpolates it, and points added on it.

Between two points ``a`` and ``b`` (``T = t_b - t_a``, ``s = t - t_a``) the interpolation follows the fields
``b`` carries:

- positions only, linear: ``q = q_a + (q_b - q_a) s / T``, ``qd = (q_b - q_a) / T``, ``qdd = 0``;
- with velocities, cubic Hermite: ``q = q_a + v_a s + c2 s^2 + c3 s^3`` with
  ``c2 = (3 (q_b - q_a) - (2 v_a + v_b) T) / T^2``, ``c3 = (2 (q_a - q_b) + (v_a + v_b) T) / T^3``;
- with velocities and accelerations, quintic: ``c0 = q_a``, ``c1 = v_a``, ``c2 = a_a / 2``,
  ``c3 = (20 (q_b - q_a) - (8 v_b + 12 v_a) T - (3 a_a - a_b) T^2) / (2 T^3)``,
  ``c4 = (30 (q_a - q_b) + (14 v_b + 16 v_a) T + (3 a_a - 2 a_b) T^2) / (2 T^4)``,
  ``c5 = (12 (q_b - q_a) - 6 (v_a + v_b) T - (a_a - a_b) T^2) / (2 T^5)``.

A point inserted at time ``t`` of a segment with the segment's own ``(q, qd, qdd)`` there (:func:`points_at`)
leaves the motion unchanged: the polynomial of each half is the one of degree at most five that matches the
same values at its ends, the original's restriction.
"""
from __future__ import annotations

import numpy as np

__all__ = ["N_COEFFICIENTS", "segment_coefficients", "hold_coefficients", "evaluate", "points_at"]

N_COEFFICIENTS = 6
_POWERS = np.arange(N_COEFFICIENTS)


def segment_coefficients(duration: float, start, end) -> np.ndarray:
    """Power-basis coefficients (n, 6) in ``s = t - t_a`` of the segment of ``duration`` [s] from ``start`` to
    ``end``, each ``(q, qd or None, qdd or None)`` of (n,) arrays; ``end``'s fields choose linear, cubic or
    quintic interpolation (module docstring)."""
    qa, va, aa = start
    qb, vb, ab = end
    T = duration
    c = np.zeros((qa.size, N_COEFFICIENTS))
    c[:, 0] = qa
    if vb is None:
        c[:, 1] = (qb - qa) / T
    elif ab is None:
        c[:, 1] = va
        c[:, 2] = (3.0 * (qb - qa) - (2.0 * va + vb) * T) / T**2
        c[:, 3] = (2.0 * (qa - qb) + (va + vb) * T) / T**3
    else:
        c[:, 1] = va
        c[:, 2] = 0.5 * aa
        c[:, 3] = (20.0 * (qb - qa) - (8.0 * vb + 12.0 * va) * T - (3.0 * aa - ab) * T**2) / (2.0 * T**3)
        c[:, 4] = (30.0 * (qa - qb) + (14.0 * vb + 16.0 * va) * T + (3.0 * aa - 2.0 * ab) * T**2) / (2.0 * T**4)
        c[:, 5] = (12.0 * (qb - qa) - 6.0 * (va + vb) * T - (aa - ab) * T**2) / (2.0 * T**5)
    return c


def hold_coefficients(positions: np.ndarray) -> np.ndarray:
    """Coefficients (n, 6) of resting at ``positions`` (n,) [rad]."""
    c = np.zeros((positions.size, N_COEFFICIENTS))
    c[:, 0] = positions
    return c


def evaluate(coefficients: np.ndarray, s: np.ndarray):
    """``(q, qd, qdd)`` [rad, rad/s, rad/s^2], each (N, n), of ``coefficients`` (N, n, 6) at ``s`` (N,) [s] from
    their segments' origins."""
    s = np.asarray(s, dtype=float)[:, None, None]
    c = coefficients
    q = np.sum(c * s**_POWERS, axis=-1)
    qd = np.sum(c[..., 1:] * _POWERS[1:] * s**_POWERS[:-1], axis=-1)
    qdd = np.sum(c[..., 2:] * (_POWERS[2:] * _POWERS[1:-1]) * s**_POWERS[:-2], axis=-1)
    return q, qd, qdd


def points_at(times, positions, velocities, accelerations, at):
    """The points' motion at ``at`` (K,) [s], each strictly between the first and the last of ``times`` (M,)
    [s, increasing]: ``(q, qd, qdd)`` (K, m) [rad, rad/s, rad/s^2], ``qd`` None when ``velocities`` is (the
    points carry positions only) and ``qdd`` None when ``accelerations`` is; ``positions`` etc. (M, m)."""
    times = np.asarray(times, dtype=float)
    at = np.asarray(at, dtype=float).reshape(-1)
    segment = np.searchsorted(times, at, side="right") - 1
    if at.size and (segment.min() < 0 or segment.max() >= times.size - 1 or np.any(at <= times[0])):
        raise ValueError(f"points_at: every time must lie strictly inside [{times[0]:g}, {times[-1]:g}] s")

    def field(values, k):
        return None if values is None else values[k]

    coefficients = np.array([segment_coefficients(
        times[k + 1] - times[k], (positions[k], field(velocities, k), field(accelerations, k)),
        (positions[k + 1], field(velocities, k + 1), field(accelerations, k + 1))) for k in segment])
    q, qd, qdd = evaluate(coefficients.reshape(at.size, positions.shape[1], N_COEFFICIENTS), at - times[segment])
    return q, None if velocities is None else qd, None if accelerations is None else qdd
