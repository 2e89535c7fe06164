"""Accelerations of a reference that carries only positions and velocities (a JointState reference stream).

A controller's reference topic often gives the desired positions [rad] and velocities [rad/s] of each cycle but no
accelerations, so a feed-forward of it lacks the inertial torque ``M(q) qdd``. :class:`ReferenceAcceleration`
estimates them causally from the velocities it has seen: over the references of the last ``window`` seconds (by
their header stamps, so jittered delivery does not matter) a least-squares polynomial in time, of degree 2 where
three or more references are in the window (1 with two), evaluated at the newest stamp, so the estimate does not lag
the reference. A reference trajectory is smooth and noise-free, which is what makes the extrapolation to the
window's end accurate: for ``qd = A sin(w t)`` the error is about ``A w^4 window^2 / 12`` at most.

The estimate restarts (zero until a second reference arrives) after a gap in the stamps longer than ``max_gap``
(the reference stream stopped) or a stamp that does not advance (a stream restarted or replayed); a reference with
another joint set is the caller's business (one instance per joint order).

:func:`lead_state` moves a reference ``lead`` = L seconds on (:meth:`ReferenceAcceleration.ahead`: the fit's
acceleration at L): the state a command computed now should be for when it is applied L later (a forward command
controller applies it at its next update, after the transport).
"""
from __future__ import annotations

import collections

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError

__all__ = ["MAX_WINDOW", "MAX_LEAD", "ReferenceAcceleration", "lead_state"]

#: Longest estimation window [s]: a reference's acceleration older than this is not its acceleration now.
MAX_WINDOW = 1.0
#: Longest lead [s] of :func:`lead_state`: a few controller periods; further the extrapolation is not the plan.
MAX_LEAD = 0.02


def lead_state(positions: np.ndarray, velocities: np.ndarray, accelerations, lead: float, later=None):
    """A reference's state ``lead`` = L [s] on, ``(q, qd, qdd)`` [rad, rad/s, rad/s^2] (arrays of one shape): with
    the accelerations ``a0`` now and ``aL`` at L (``later``; None: ``a0``), linear between them,
    ``q + qd L + (2 a0 + aL) L^2 / 6``, ``qd + (a0 + aL) L / 2``, ``aL``; ``accelerations`` empty: zero."""
    if not lead:
        return positions, velocities, accelerations
    accelerations = np.asarray(accelerations, dtype=float)
    if accelerations.size == 0:
        return positions + velocities * lead, velocities, accelerations
    later = accelerations if later is None else np.asarray(later, dtype=float)
    return (positions + (velocities + (2.0 * accelerations + later) * lead / 6.0) * lead,
            velocities + 0.5 * (accelerations + later) * lead, later)


class ReferenceAcceleration:
    """Causal accelerations [rad/s^2] of a stream of reference velocities (module docstring).

    Parameters
    ----------
    n_joints : int
        Length of each velocity vector.
    window : float
        [s] in (0, :data:`MAX_WINDOW`]: the references within this time of the newest one are fitted.
    max_gap : float
        [s] > 0: a step between stamps longer than this restarts the estimate (default 0.1 s).
    """

    def __init__(self, n_joints: int, window: float, max_gap: float = 0.1) -> None:
        self.n_joints = validators.count(n_joints, "n_joints", DynIdError, minimum=1)
        self.window = validators.in_range(window, "reference acceleration window", DynIdError, "s", 0.0, MAX_WINDOW,
                                          allow_minimum=False)
        self.max_gap = validators.positive(max_gap, "reference acceleration max_gap", DynIdError, "s")
        self._stamps: collections.deque[float] = collections.deque()
        self._velocities: collections.deque[np.ndarray] = collections.deque()
        self._slope = np.zeros((2, n_joints))     # the last fit's d/dt at the newest stamp and its rate [1/s]

    def reset(self) -> None:
        """Forget every reference seen (the next estimate is zero)."""
        self._stamps.clear()
        self._velocities.clear()
        self._slope = np.zeros((2, self.n_joints))

    def update(self, stamp: float, velocities) -> np.ndarray:
        """Add the reference stamped ``stamp`` [s] with ``velocities`` (n_joints,) [rad/s]; the acceleration
        estimate at ``stamp`` (n_joints,) [rad/s^2] (zeros until two references are in the window)."""
        stamp = validators.number(stamp, "reference stamp [s]", DataError)
        velocities = validators.array(velocities, "reference velocities", shape=(self.n_joints,), unit="rad/s")
        if self._stamps and not (0.0 < stamp - self._stamps[-1] <= self.max_gap):
            self.reset()
        self._stamps.append(stamp)
        self._velocities.append(velocities)
        while stamp - self._stamps[0] > self.window:
            self._stamps.popleft()
            self._velocities.popleft()
        count = len(self._stamps)
        if count < 2:
            self._slope = np.zeros((2, self.n_joints))
            return self._slope[0]
        # time relative to the newest stamp, scaled to the window: a well-conditioned Vandermonde system
        tau = (np.fromiter(self._stamps, float, count) - stamp) / self.window
        degree = 2 if count >= 3 else 1
        basis = np.vander(tau, degree + 1, increasing=True)
        coefficients = np.linalg.lstsq(basis, np.array(self._velocities), rcond=None)[0]
        self._slope = np.array([coefficients[1], 2.0 * coefficients[2] / self.window if degree == 2
                                else np.zeros(self.n_joints)]) / self.window
        return self._slope[0]      # d/dt of the fit at the newest stamp (tau = 0)

    def ahead(self, lead: float) -> np.ndarray:
        """The last estimate's fit at the newest stamp plus ``lead`` [s]: accelerations (n_joints,) [rad/s^2]."""
        return self._slope[0] + self._slope[1] * lead
