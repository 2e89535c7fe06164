"""Recordings with what real hardware does to them, for the real-world regression tier.

The package's simulator stamps on an exact grid, adds white noise of one size and computes torques with the
identifier's own regressor, so it cannot show what real recordings do to defaults, checks and standard
deviations. Here the torques come from pinocchio's RNEA (:mod:`rnea_reference`, not the regressor) plus exact
Coulomb and viscous friction, ``fc sgn(qd) + fv qd`` at the true velocity, and a recording can have, each
switched on by :class:`Effects`:

- friction that is not a sign at low speed (pre-sliding: ``fc tanh(qd / v_p)``, no model's Coulomb term);
- torque noise of a different size per joint, white or AR(1) in time (``e_k = rho e_{k-1} + sqrt(1 - rho^2)
  w_k``: the marginal std stays the one given), and an unmodelled torque (a ripple in the joint angle);
- positions quantised by the encoder's step, velocities recorded with noise, differenced from the quantised
  positions as coarse drivers do, or not recorded at all;
- stamps that are receive times (the samples measured on the sensor's uniform clock, stamped with a jitter) or
  jittered measurement instants stamped exactly, and dropped samples;
- rows whose values repeat the previous row's (a logger reading the same state twice), motor currents
  instead of torques;
- a payload rigidly fixed to the last link (added to its inertial parameters before RNEA).

Motion with rests (:func:`with_rests`): any trajectory ``f`` is played on a warped clock, ``q(t) = f(w(t))``, with
``w' = s(t)`` falling smoothly from 1 to 0 (a quintic step) into each dwell, 0 during it and back: the arm
creeps into a true rest and out of it, and reversals of ``f`` inside the motion stay passages through zero
velocity while moving. Derivatives are exact: ``qd = f'(w) s``, ``qdd = f''(w) s^2 + f'(w) s'``.

Everything is seeded; :class:`Truth` keeps what the recording hides (true states at the recorded samples,
noise-free torques and their parts, the links, the friction), so a test judges against it.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from rnea_reference import rnea_torques
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory
from robot_dynid.recordings.recording import Recording


@dataclasses.dataclass(frozen=True)
class Effects:
    """What the recording suffers (defaults: nothing but white noise of 1 % of each joint's RMS torque).

    Attributes
    ----------
    noise : float or array_like (n,)
        [N m] torque noise std per joint; None: ``noise_fraction`` of each joint's RMS torque.
    noise_fraction : float or array_like (n,)
        Noise std as a fraction of each joint's own RMS torque (when ``noise`` is None), one for all or per joint.
    rho : float
        AR(1) coefficient of the torque noise in time (0: white).
    ripple : float or array_like (n,)
        [N m] amplitude of an unmodelled torque ``ripple sin(ripple_periods q)`` (cogging-like).
    ripple_periods : float
        Ripple periods per radian of joint travel.
    quantum : float
        [rad] encoder step; positions are rounded to it (0: exact).
    velocity : {"recorded", "differenced", None}
        Velocities recorded with ``velocity_noise`` [rad/s] white noise, differenced from the (quantised)
        recorded positions over one step of the sensor's clock, or not recorded.
    velocity_noise : float or array_like (n,)
        [rad/s] std of the recorded velocities' noise.
    stamps : {"grid", "receive", "measured"}
        grid: exact; receive: samples on the sensor's uniform clock, stamps jittered by ``jitter`` steps
        (uniform, +-); measured: sampling instants jittered, stamps exact.
    jitter : float
        Half-width of the uniform stamp (or instant) jitter, in steps.
    drop : float
        Fraction of samples lost, chosen at random.
    repeat : float
        Fraction of rows that repeat the previous row's values under their own stamp (a logger that read a
        state the driver had not yet updated).
    torque_constant : float or array_like (n,) or None
        [N m/A] at the joint (k_t times the gear ratio): efforts recorded as currents ``tau / k``.
    presliding : float
        [rad/s] ``v_p`` of a Coulomb friction ``fc tanh(qd / v_p)`` that builds up over the first few ``v_p`` of
        speed, as pre-sliding and stiction do (0: ``fc sgn(qd)``).
    """

    noise: object = None
    noise_fraction: float = 0.01
    rho: float = 0.0
    ripple: object = 0.0
    ripple_periods: float = 6.0
    quantum: float = 0.0
    velocity: str | None = "recorded"
    velocity_noise: object = 0.0
    stamps: str = "grid"
    jitter: float = 0.0
    drop: float = 0.0
    repeat: float = 0.0
    torque_constant: object = None
    presliding: float = 0.0


@dataclasses.dataclass(frozen=True)
class Truth:
    """What the recording hides, at its samples (rows of the recording, after drops and repeats).

    ``time`` (N,) [s] true instants; ``q``, ``qd``, ``qdd`` (N, n) true states; ``rigid`` (N, n) [N m] RNEA
    torques (payload included); ``friction`` (N, n) [N m]; ``tau`` (N, n) [N m] noise-free total (with the
    unmodelled ripple); ``links`` (10 n,) link parameters (the payload's not added); ``coulomb``,
    ``viscous`` (n,) [N m], [N m s/rad]; ``noise_std`` (n,) [N m]; ``payload`` as given.
    """

    time: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    rigid: np.ndarray
    friction: np.ndarray
    tau: np.ndarray
    links: np.ndarray
    coulomb: np.ndarray
    viscous: np.ndarray
    noise_std: np.ndarray
    payload: tuple | None


@dataclasses.dataclass(frozen=True)
class Simulated:
    recording: Recording
    truth: Truth


def excitation(robot, seed=0, period=10.0, harmonics=5, amplitude=0.15):
    """A random Fourier excitation, speeds about ``amplitude`` of each joint's velocity limit, starting from
    the zero pose's neighbourhood (different seeds: different trajectories)."""
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    scale = amplitude * robot.limit_arrays().velocity[:, None] / np.sqrt(harmonics)
    return FourierTrajectory(robot.joint_names, period=period, q0=np.zeros(n),
                             a=rng.normal(0.0, 1.0, (n, harmonics)) * scale,
                             b=rng.normal(0.0, 1.0, (n, harmonics)) * scale)


def _smoothstep(x):
    """Quintic step ``S(x) = 10 x^3 - 15 x^4 + 6 x^5`` on [0, 1], its derivative and its integral from 0."""
    x = np.clip(x, 0.0, 1.0)
    return (10 * x**3 - 15 * x**4 + 6 * x**5, 30 * x**2 - 60 * x**3 + 30 * x**4, 2.5 * x**4 - 3 * x**5 + x**6)


@dataclasses.dataclass(frozen=True)
class WarpedMotion:
    """``trajectory`` played on a clock that stops for each rest (module docstring).

    ``rests``: (start [s], ramp [s], dwell [s]) per rest, in time order, not overlapping: the clock's speed falls
    from 1 to 0 over ``ramp`` from ``start``, stays 0 for ``dwell``, and rises back over ``ramp``.
    """

    trajectory: object
    rests: tuple

    def evaluate(self, t):
        """(q, qd, qdd) at ``t`` (N,) [s]: each (N, n) [rad, rad/s, rad/s^2]."""
        t = np.asarray(t, dtype=float)
        w, s, ds = self.clock(t)
        q, f1, f2 = self.trajectory.evaluate(w)
        return q, f1 * s[:, None], f2 * (s**2)[:, None] + f1 * ds[:, None]

    def clock(self, t):
        """(w, w', w'') at ``t``: the warped time [s], its rate [1] and the rate's derivative [1/s]."""
        t = np.asarray(t, dtype=float)
        w, s, ds = t.copy(), np.ones_like(t), np.zeros_like(t)
        for start, ramp, dwell in self.rests:
            down, down_rate, down_area = _smoothstep((t - start) / ramp)
            up, up_rate, up_area = _smoothstep((t - start - ramp - dwell) / ramp)
            s += up - down
            ds += (up_rate - down_rate) / ramp
            # integral of S((u - start) / ramp) du from 0 to t: ramp * area within the step, then 1 per second
            lost = ramp * down_area + np.clip(t - start - ramp, 0.0, None)
            given = ramp * up_area + np.clip(t - start - 2 * ramp - dwell, 0.0, None)
            w += given - lost
        return w, s, ds


def with_rests(trajectory, rests):
    """``trajectory`` with the rests ``rests``: (start [s], ramp [s], dwell [s]) each (:class:`WarpedMotion`)."""
    return WarpedMotion(trajectory, tuple(tuple(map(float, rest)) for rest in rests))


def _per_joint(value, n, name):
    value = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} must be finite")
    return value


def _ar1(rng, shape, rho):
    white = rng.normal(0.0, 1.0, shape)
    if rho == 0.0:
        return white
    noise = np.empty(shape)
    noise[0] = white[0]
    scale = np.sqrt(1.0 - rho**2)
    for k in range(1, shape[0]):
        noise[k] = rho * noise[k - 1] + scale * white[k]
    return noise


def payload_links(links, payload):
    """``links`` (10 n,) with ``payload = (mass [kg], com (3,) [m], inertia about the com (3, 3) [kg m^2])``, all in
    the last link's frame, added to the last link's parameters (pinocchio's own inertia algebra)."""
    import pinocchio as pin
    if payload is None:
        return np.asarray(links, dtype=float)
    mass, com, inertia = payload
    body = pin.Inertia(float(mass), np.asarray(com, dtype=float), np.asarray(inertia, dtype=float))
    links = np.array(links, dtype=float)
    links[-10:] += body.toDynamicParameters()
    return links


def default_friction(robot):
    """``(coulomb [N m], viscous [N m s/rad])`` (n,) of :func:`simulate` by default: 2 % and 1 % of each joint's effort
    limit (100 N m where it has none)."""
    limits = robot.limit_arrays()
    effort = np.where(np.isfinite(limits.effort), limits.effort, 100.0)
    return 0.02 * effort, 0.01 * effort


def with_true_accelerations(simulated: Simulated, shift: float = 0.0, source: str | None = None) -> Recording:
    """The recording of ``simulated`` with the true accelerations at its samples (for a test not about
    differentiation), its stamps shifted by ``shift`` [s] and named ``source`` (default its own)."""
    recording, truth = simulated.recording, simulated.truth
    return Recording.from_arrays(recording.joint_names, recording.time + shift, recording.q, recording.qd, truth.qdd,
                                 recording.tau, source=recording.source if source is None else source)


def model_off(robot, links, friction, fraction: float = 0.05, seed: int = 7):
    """An arm's model (DynamicModel, friction ``friction``) whose every link's ten parameters are those of ``links``
    (10 n,) off by ``+-fraction`` (signs drawn from ``seed``), with :func:`default_friction`'s Coulomb and viscous
    coefficients exact (``friction`` must be coulomb_viscous on the joints) and std 1e-3."""
    from robot_dynid.model.base_parameters import compute_base_parameters
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.model.regressor import Regressor
    base = compute_base_parameters(Regressor(robot, friction))
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], robot.n_joints)
    wrong = (np.asarray(links, dtype=float).reshape(-1, 10) * (1.0 + fraction * signs)[:, None]).ravel()
    standard = np.concatenate([wrong, np.ravel(np.column_stack(default_friction(robot)))])
    return DynamicModel(robot, friction, False, False, base, base.projection @ standard, np.full(base.rank, 1e-3),
                        standard=standard)


def simulate(robot, motion, duration, rate, effects: Effects = Effects(), links=None, coulomb=None, viscous=None,
             payload=None, seed=0, source="real-world") -> Simulated:
    """A recording of ``robot`` following ``motion`` (``evaluate(t) -> (q, qd, qdd)``) for ``duration`` [s] at
    ``rate`` [Hz] with ``effects`` (module docstring).

    ``links`` (10 n,) default :func:`~robot_dynid.experiment.simulation.plausible_parameters` of seed 1;
    ``coulomb`` [N m] and ``viscous`` [N m s/rad] (n,) default 2 % and 1 % of each joint's effort limit (per
    rad/s); ``payload`` as :func:`payload_links`. The recording's effort column holds torques [N m], or currents
    [A] with ``effects.torque_constant``.
    """
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    links = plausible_parameters(robot, seed=1) if links is None else np.asarray(links, dtype=float)
    coulomb = default_friction(robot)[0] if coulomb is None else _per_joint(coulomb, n, "coulomb")
    viscous = default_friction(robot)[1] if viscous is None else _per_joint(viscous, n, "viscous")
    step = 1.0 / rate
    grid = np.arange(int(round(duration * rate)) + 1) * step
    instants = grid.copy()
    stamps = grid.copy()
    if effects.stamps == "receive":
        stamps = grid + rng.uniform(-effects.jitter, effects.jitter, grid.size) * step
    elif effects.stamps == "measured":
        instants = grid + rng.uniform(-effects.jitter, effects.jitter, grid.size) * step
        instants[0] = grid[0]
    elif effects.stamps != "grid":
        raise ValueError(f"stamps must be grid, receive or measured, got {effects.stamps!r}")
    q, qd, qdd = motion.evaluate(instants)
    rigid = rnea_torques(robot, payload_links(links, payload), q, qd, qdd)
    sign = np.tanh(qd / effects.presliding) if effects.presliding else np.sign(qd)
    friction = coulomb * sign + viscous * qd
    ripple = _per_joint(effects.ripple, n, "ripple") * np.sin(effects.ripple_periods * q)
    tau = rigid + friction + ripple
    if effects.noise is None:
        noise_std = effects.noise_fraction * np.sqrt(np.mean((rigid + friction)**2, axis=0))
    else:
        noise_std = _per_joint(effects.noise, n, "noise")
    measured_tau = tau + _ar1(rng, tau.shape, effects.rho) * noise_std
    measured_q = np.round(q / effects.quantum) * effects.quantum if effects.quantum else q.copy()
    if effects.velocity == "recorded":
        measured_qd = qd + rng.normal(0.0, 1.0, qd.shape) * _per_joint(effects.velocity_noise, n, "velocity_noise")
    elif effects.velocity == "differenced":
        measured_qd = np.vstack([np.zeros((1, n)), np.diff(measured_q, axis=0) / step])
    elif effects.velocity is None:
        measured_qd = None
    else:
        raise ValueError(f"velocity must be recorded, differenced or None, got {effects.velocity!r}")
    keep = np.ones(grid.size, dtype=bool)
    if effects.drop:
        lost = rng.choice(np.arange(1, grid.size - 1), int(round(effects.drop * grid.size)), replace=False)
        keep[lost] = False
    rows = np.flatnonzero(keep)
    effort_column = measured_tau
    if effects.torque_constant is not None:
        effort_column = measured_tau / _per_joint(effects.torque_constant, n, "torque_constant")
    values = [None if value is None else value[rows] for value in (measured_q, measured_qd, effort_column)]
    if effects.repeat:
        stale = rng.choice(np.arange(1, rows.size), int(round(effects.repeat * rows.size)), replace=False)
        for value in values:
            if value is not None:
                value[np.sort(stale)] = value[np.sort(stale) - 1]
    recording = Recording.from_arrays(robot.joint_names, stamps[rows], values[0], values[1], None, values[2],
                                      source=source)
    truth = Truth(instants[rows], q[rows], qd[rows], qdd[rows], rigid[rows], friction[rows], tau[rows], links,
                  coulomb, viscous, noise_std, payload)
    return Simulated(recording, truth)
