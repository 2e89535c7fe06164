"""``robot-dynid demo --drift``: a cold start with friction that drifts, and what the feed-forward makes of it.

The simulated ER3A's friction falls from a cold start as the thesis measured, a double exponential in running time
(every friction coefficient times ``1 + 0.4 exp(-t / 240 s) + 0.3 exp(-t / 40 s)``: the thesis's time constants
of tens of minutes compressed about six times, so that a run of 10 min shows the whole warm-up). The arm runs a
random excitation from the cold start; three feed-forwards answer every sample:

- static: a model identified on the warm arm (no drift), as served today;
- drift model: a model with ``drift: time`` (both time constants) identified on an earlier cold start, served at
  the running time of :class:`~robot_dynid.model.friction_state.WarmupClock` (the feedforward node's core);
- tracked: the static model with its friction tracked online
  (:class:`~robot_dynid.estimation.friction_tracking.OnlineFrictionTracking`, the identifier's ``track_friction``
  mode), the model in use swapped whenever a tracked model passes the gate.

The demo runs these cores in-process (the ROS graph would take the 10 min in real time; the nodes' paths are
covered by the ROS tests) and prints the feed-forward error against the simulator's noise-free torques over time;
``--json`` prints ``feedforward_error: {static, drift_model, tracked}``: the RMS over joints and samples [N m] of
the last third of the run.
"""
from __future__ import annotations

__all__ = ["COLD_EXCESS", "WARMUP_TIME_CONSTANT", "COLD_EXCESS_2", "WARMUP_TIME_CONSTANT_2", "DURATION", "RATE",
           "CHUNK", "REPORT_EVERY", "motion", "run_drift"]

#: The drift: amplitudes [1] of the warm friction and time constants [s] (compressed).
COLD_EXCESS, WARMUP_TIME_CONSTANT, COLD_EXCESS_2, WARMUP_TIME_CONSTANT_2 = 0.4, 240.0, 0.3, 40.0
DURATION, RATE, CHUNK = 600.0, 50.0, 10         # s, Hz, samples per feed-forward request
REPORT_EVERY = 60.0                             # s, rows of the printed table


def motion(robot, seed, duration=DURATION):
    """(t, q, qd, qdd) of a random excitation (8 s period, repeated) for ``duration`` [s] at RATE."""
    import numpy as np
    from robot_dynid.experiment.excitation import random_excitation
    trajectory = random_excitation(robot, harmonics=4, period=8.0, amplitude_fraction=0.4, seed=seed)
    t = np.arange(0.0, duration, 1.0 / RATE)
    return (t, *trajectory.evaluate(t % float(np.max(trajectory.period))))


def run_drift(seed: int = 0, noise: float = 0.05, duration: float = DURATION) -> dict:
    """Run the demo, print its table; return the --json document."""
    import numpy as np
    from robot_dynid.estimation.friction_tracking import OnlineFrictionTracking
    from robot_dynid.estimation.identification import IdentificationSettings, identify
    from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
    from robot_dynid.model.feedforward import compute_feedforward, feedforward_limits
    from robot_dynid.model.friction import friction_model
    from robot_dynid.model.friction_state import WarmupClock, friction_state
    from robot_dynid.model.regressor import Regressor
    from robot_dynid.model.robot_loader import load_robot
    from robot_dynid.package_files import find_package_file
    from robot_dynid.recordings.recording import Recording
    from robot_dynid.reports.tables import format_table
    robot = load_robot(find_package_file("config", "robots", "er3a.yaml"))
    friction = friction_model("coulomb_viscous")
    regressor = Regressor(robot, friction)
    truth = SimulatedRobot(regressor, simulation_parameters(regressor, seed), noise, COLD_EXCESS,
                           WARMUP_TIME_CONSTANT, COLD_EXCESS_2, WARMUP_TIME_CONSTANT_2)
    # the static model: identified on the warm arm (an hour after its cold start)
    t, q, qd, qdd = motion(robot, seed + 1, 120.0)
    warm = Recording.from_arrays(robot.joint_names, t, q, qd, qdd,
                                 truth.torques(q, qd, qdd, elapsed=t + 3600.0, rng=seed + 1), source="warm arm")
    static = identify(warm, robot, IdentificationSettings(friction=friction, check_torque_scale=False))
    # the drift model: identified on an earlier cold start, both time constants known
    t, q, qd, qdd = motion(robot, seed + 2, duration)
    cold = Recording.from_arrays(robot.joint_names, t, q, qd, qdd, truth.torques(q, qd, qdd, elapsed=t, rng=seed + 2),
                                 source="earlier cold start")
    drifting = friction_model("coulomb_viscous", drift="time", warmup_time_constant=WARMUP_TIME_CONSTANT,
                              warmup_time_constant_2=WARMUP_TIME_CONSTANT_2)
    drift_model = identify(cold, robot, IdentificationSettings(friction=drifting, check_torque_scale=False))
    # today's run from a cold start
    t, q, qd, qdd = motion(robot, seed + 3, duration)
    exact = truth.torques(q, qd, qdd, elapsed=t, noise=False)
    measured = truth.torques(q, qd, qdd, elapsed=t, rng=seed + 3)
    clock = WarmupClock(0.0)
    tracking = OnlineFrictionTracking(static, forgetting=0.999, change_fraction=0.05)
    joints = robot.joint_names
    served = {name: np.empty_like(q) for name in ("static", "drift_model", "tracked")}
    limits = {id(model): feedforward_limits(model) for model in (static, drift_model)}
    swaps = 0
    for start in range(0, t.size, CHUNK):
        rows = slice(start, min(start + CHUNK, t.size))
        flat = [x[rows].reshape(-1) for x in (q, qd, qdd)]
        state = friction_state(drift_model.friction, joints, float(t[rows][0]), clock)
        served["static"][rows] = compute_feedforward(static, joints, *flat, limits=limits[id(static)])
        served["drift_model"][rows] = compute_feedforward(drift_model, joints, *flat, elapsed=state.elapsed,
                                                          limits=limits[id(drift_model)])
        model = tracking.model
        served["tracked"][rows] = compute_feedforward(model, joints, *flat, limits=limits.setdefault(
            id(model), feedforward_limits(model)))
        for k in range(rows.start, rows.stop):
            outcome = tracking.add(t[k], q[k], qd[k], measured[k])
            swaps += bool(outcome is not None and outcome.accepted)
    errors = {name: tau - exact for name, tau in served.items()}
    table = []
    for begin in np.arange(0.0, duration, REPORT_EVERY):
        window = (t >= begin) & (t < begin + REPORT_EVERY)
        table.append((f"{begin:.0f}-{begin + REPORT_EVERY:.0f}",
                      *(f"{np.sqrt(np.mean(errors[name][window] ** 2)):.4f}" for name in served)))
    print(f"cold start of {robot.name}: friction x (1 + {COLD_EXCESS} exp(-t / {WARMUP_TIME_CONSTANT:g} s) + "
          f"{COLD_EXCESS_2} exp(-t / {WARMUP_TIME_CONSTANT_2:g} s)), noise {noise} N m; feed-forward RMS error "
          "[N m] over joints against the noise-free torques:")
    print(format_table(("running time [s]", "static model", "drift model served", "tracked"), table))
    last = t >= t[-1] - duration / 3.0
    summary = {name: float(np.sqrt(np.mean(error[last] ** 2))) for name, error in errors.items()}
    print(f"\nlast third of the run: static {summary['static']:.4f} N m, drift model {summary['drift_model']:.4f} "
          f"N m, tracked {summary['tracked']:.4f} N m ({swaps} tracked models swapped in)")
    return {"robot": robot.name, "joint_names": list(joints), "unit": "N m", "duration": duration,
            "drift": {"cold_excess": [COLD_EXCESS, COLD_EXCESS_2],
                      "time_constants": [WARMUP_TIME_CONSTANT, WARMUP_TIME_CONSTANT_2]},
            "tracked_models": swaps, "feedforward_error": summary}
