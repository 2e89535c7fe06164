"""``robot-dynid demo --closed-loop``: does the served feed-forward make a controlled arm track better?

After the ROS demo's identification on MuJoCo (:func:`robot_dynid.cli.demo.identify_in_graph`), one held-out
motion (a random rest-to-rest excitation, ``--closed-loop-duration`` s, 40 % of the joint ranges, seed 7) is
played through the node graph of :class:`~robot_dynid.nodes.demo_graph.ClosedLoopGraph`: the reference goes to the
feedforward node, its feed-forward to sim_robot arms in ``mode: control`` (MuJoCo under a 1 kHz joint-space PD
with the default gains, :mod:`robot_dynid.experiment.closed_loop`). Each run starts a fresh graph (7 in all), and the
runs compared with each other have the same two arms (the same load on the one process: a run of four arms was
seen at 100 % CPU, the reference stream at half its rate):

- nominal, the identified model served: arms with PD + the forward command (the feedforward node's
  ``command_topic``: positions and velocities of a 1 kHz JointState reference, accelerations estimated by the node
  over :data:`REFERENCE_ACCELERATION_WINDOW`, its ``reference_acceleration_window``, each command the torque of its
  reference :data:`COMMAND_LEAD` after the stamp, its ``command_lead``: the controller applies it at its next
  cycle) and PD + the efforts of streamed trajectory chunks (0.5 s ahead, every 20 ms; the node's
  ``trajectory_out_topic``, accelerations included);
- baselines (:data:`BASELINES`): PD alone, and the forward command applied :data:`LATE_DELAY` late;
- true parameters: the same two feed-forward paths, the model of the simulator's true parameters in the
  identified model's family (the best that family does);
- nominal, repeated: the nominal forward and trajectory arms again, for the payload recovery's floor (the same
  measure between two real-time runs of one graph, no payload);
- payload: the nominal model; halfway through, a :data:`PAYLOAD_MASS` kg body is fixed to both arms
  (sim_robot ``~/attach_payload``) and served (the feedforward node's ``~/set_payload``) at one stamp, the
  requests sent :data:`PAYLOAD_NOTICE` s ahead (a grasp's time is known when the gripper is commanded);
- warm-up, static and drift: both arms start cold (``~/reset_warmup`` at the start) with friction
  ``1 + 0.4 exp(-t / (D / 2)) + 0.3 exp(-t / (D / 8))`` times the warm one (``D`` the motion's duration),
  served the identified (warm, static) model, then a ``drift: time`` model identified on an earlier cold
  start of MuJoCo (core only, computed-torque tracking; :func:`cold_start_model`).

It prints RMS and peak tracking error per joint [mrad] and the RMS torque [N m] of every run, the goals of issue 34
with what was measured, and the forward path's latency (reference stamp to the cycle applying its feed-forward);
writes ``report/closed_loop.html`` (tables and figures) and ``report/closed_loop.json``; ``--json`` prints the
document of :func:`closed_loop_summary` under ``closed_loop`` on stdout.
"""
from __future__ import annotations

import math

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.closed_loop import (
    ControlSettings, feedforward_latency, gravity_joints, pd_gains, recovery_time, tracking_metrics,
    true_parameter_model, windowed_rms)
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.mujoco_engine import MUJOCO_MIN_SPEED, MUJOCO_REVERSAL_LEAD, MujocoArm, MujocoRobot
from robot_dynid.experiment.trajectories import time_grid
from robot_dynid.model.feedforward import compute_feedforward
from robot_dynid.model.friction import friction_model
from robot_dynid.model.payload import Payload, default_frame
from robot_dynid.model.reference_acceleration import ReferenceAcceleration, lead_state
from robot_dynid.recordings.recording import Recording
from robot_dynid.reports import html
from robot_dynid.reports.tables import format_table

__all__ = ["MIN_DURATION", "MAX_DURATION", "POINT_PERIOD", "SETTLE", "REFERENCE_RATE",
           "REFERENCE_ACCELERATION_WINDOW", "COMMAND_LEAD", "BASELINES", "LATE_DELAY", "PAYLOAD_MASS", "PAYLOAD_OFFSET",
           "PAYLOAD_NOTICE", "WARMUP_EXCESS",
           "RECOVERY_FACTOR", "RECOVERY_GOAL", "RECOVERY_WINDOW", "RECOVERY_HOLD", "GOALS", "check_duration",
           "demo_payload", "warmup_of", "cold_start_model", "scenarios", "run_closed_loop", "closed_loop_summary",
           "nominal_latency", "print_closed_loop", "goal_rows", "write_closed_loop_page"]

MIN_DURATION, MAX_DURATION = 1.0, 60.0
POINT_PERIOD = 0.01         # s between the trajectory's points (quintic between them)
SETTLE = 1.0                # s from the graph's start to the motion's (the arms hold the start pose)
REFERENCE_RATE = 1000.0     # Hz of the JointState reference into the feedforward node
REFERENCE_ACCELERATION_WINDOW = 0.01    # s: the feedforward node's reference_acceleration_window (10 references)
COMMAND_LEAD = 0.001        # s: the feedforward node's command_lead, one cycle of the 1 kHz controller
BASELINES = "baselines"     # the run of the arms with PD alone and with the late forward command
LATE_DELAY = 0.02           # s: the late forward command
PAYLOAD_MASS = 2.0          # kg, a 10 cm cube 5 cm out along the last frame's z
PAYLOAD_OFFSET = 0.05       # m
PAYLOAD_NOTICE = 0.1        # s between the payload requests and their stamp (when it is fixed and served)
WARMUP_EXCESS = (0.4, 0.3)  # the cold excesses of the warm-up (the --drift demo's)
RECOVERY_FACTOR = 1.5       # the payload goal: back within 1.5x of the unloaded error ...
RECOVERY_GOAL = 0.2         # ... in under 0.2 s
RECOVERY_WINDOW = 0.05      # s of the centred RMS the recovery compares
RECOVERY_HOLD = 0.5         # s the error must stay within for the recovery to count
GOALS = {"reduction": 5.0, "identified_over_true": 1.3, "recovery_time": RECOVERY_GOAL, "drift_over_static": 0.5}


def check_duration(value: float) -> float:
    if not MIN_DURATION <= value <= MAX_DURATION:
        raise DataError(f"--closed-loop-duration must be in [{MIN_DURATION:g}, {MAX_DURATION:g}] s, got {value:g}")
    return float(value)


def demo_payload(robot) -> Payload:
    """:data:`PAYLOAD_MASS` kg, a 10 cm cube centred :data:`PAYLOAD_OFFSET` m along z of the last link frame."""
    moment = PAYLOAD_MASS * (0.1**2 + 0.1**2) / 12.0
    inertia = (moment, 0.0, 0.0, moment, 0.0, moment)
    return Payload(default_frame(robot), PAYLOAD_MASS, (0.0, 0.0, PAYLOAD_OFFSET), inertia)


def warmup_of(duration: float) -> dict:
    """sim_robot's warm-up parameters for a motion of ``duration`` [s]."""
    return {"cold_excess": WARMUP_EXCESS[0], "warmup_time_constant": duration / 2.0,
            "cold_excess_2": WARMUP_EXCESS[1], "warmup_time_constant_2": duration / 8.0}


def cold_start_model(robot, friction_name: str, seed: int, noise: float, duration: float):
    """A ``drift: time`` model identified on MuJoCo from a cold start: the arm (computed-torque tracking, 1 kHz)
    follows a random excitation (10 s period, half the ranges) for ``max(20, 6 t_w)`` s from cold with the warm-up
    of :func:`warmup_of`, sampled at 200 Hz with ``noise`` [N m]; identified with armature and the drift's time
    constants."""
    warmup = warmup_of(duration)
    simulator = MujocoRobot(robot, friction_model(friction_name, reversal_lead=MUJOCO_REVERSAL_LEAD), seed=seed,
                            noise_std=noise, **warmup)
    length = max(20.0, 6.0 * warmup["warmup_time_constant"])
    arm = MujocoArm(simulator, 200.0, seed=seed + 20, max_lag=length + 1.0)
    excitation = random_excitation(robot, harmonics=5, period=10.0, amplitude_fraction=0.5, seed=seed + 20)
    points = time_grid(length, dt=POINT_PERIOD)
    arm.follower.command(robot.joint_names, points, *excitation.evaluate(points % 10.0), start_time=0.0)
    samples = arm.advance(length)
    recording = Recording.from_arrays(robot.joint_names, samples.time, samples.q, samples.qd, samples.qdd,
                                      samples.measured_torque, source="MuJoCo from a cold start")
    drifting = friction_model(friction_name, reversal_lead=MUJOCO_REVERSAL_LEAD, drift="time",
                              warmup_time_constant=warmup["warmup_time_constant"],
                              warmup_time_constant_2=warmup["warmup_time_constant_2"])
    return identify(recording, robot, IdentificationSettings(friction=drifting, armature=True,
                                                             check_torque_scale=False, min_speed=MUJOCO_MIN_SPEED),
                    provenance={"data_source": f"MuJoCo, {length:g} s from a cold start"})


def scenarios(sim: dict, duration: float, payload: Payload) -> list:
    """The runs: ``(name, model key, {arm: sim_robot parameters}, events)``."""
    def arm(path, **extra):
        topics = {"pd": ("joint_trajectory", ""), "forward": ("joint_trajectory", "feedforward_effort"),
                  "trajectory": ("trajectory_with_effort", "")}[path]
        return {**sim, "command_topic": topics[0], "feedforward_topic": topics[1], **extra}

    both = {"forward": arm("forward"), "trajectory": arm("trajectory")}
    cold = {name: {**parameters, **warmup_of(duration)} for name, parameters in both.items()}
    reset = [(0.0, "cold start", lambda graph: graph.reset_warmup())]
    return [("nominal", "identified", both, []),
            (BASELINES, "identified", {"pd": arm("pd"), "late": arm("forward", feedforward_delay=LATE_DELAY)}, []),
            ("true parameters", "true", both, []),
            ("nominal, repeated", "identified", both, []),
            ("payload", "identified", both, [(duration / 2.0 - PAYLOAD_NOTICE, "payload",
                                              lambda graph: graph.attach_payload(payload, PAYLOAD_NOTICE))]),
            ("warm-up, static model", "identified", cold, reset),
            ("warm-up, drift model", "drift", cold, reset)]


def run_closed_loop(identified, out, duration: float, namespace: str = "") -> dict:
    """The closed-loop runs after the graph's identification ``identified``
    (:class:`~robot_dynid.cli.demo.GraphIdentification`); prints the tables; returns :func:`closed_loop_summary`'s
    document. The page and its figures go to ``out / "report"``."""
    from robot_dynid.nodes.demo_graph import ClosedLoopGraph
    model, simulator = identified.model, identified.simulator
    robot = model.robot
    parameters = identified.sim_parameters
    directory = out / "closed_loop"
    directory.mkdir(parents=True, exist_ok=True)
    models = {"identified": model.save(directory / "identified.yaml"),
              "true": true_parameter_model(model, simulator.parameters).save(directory / "true_parameters.yaml")}
    print("\n5. closed loop: identifying a drift model on an earlier cold start of MuJoCo (core only) ...", flush=True)
    drift = cold_start_model(robot, parameters["friction"], parameters["seed"], parameters["noise_std"], duration)
    models["drift"] = drift.save(directory / "drift.yaml")
    trajectory = random_excitation(robot, harmonics=4, period=duration, amplitude_fraction=0.4, seed=7)
    times = time_grid(duration, dt=POINT_PERIOD)
    q, qd, qdd = trajectory.evaluate(times)
    payload = demo_payload(robot)
    sim = {"robot_file": identified.robot_file, "engine": "mujoco", "friction": parameters["friction"],
           "seed": parameters["seed"], "noise_std": parameters["noise_std"], "timestep": parameters["timestep"],
           "rate": 100.0, "batch_period": 0.01, "initial_positions": [float(value) for value in q[0]]}
    runs = {}
    for name, model_key, arms, events in scenarios(sim, duration, payload):
        print(f"   {name}: the feedforward node serving {models[model_key].name}, arms {', '.join(arms)} ...",
              flush=True)
        with ClosedLoopGraph({"model_file": str(models[model_key]), "robot_file": identified.robot_file,
                              "reference_acceleration_window": REFERENCE_ACCELERATION_WINDOW,
                              "command_lead": COMMAND_LEAD}, arms,
                             namespace=f"{namespace.strip('/')}/closed_loop".strip("/")) as graph:
            runs[name] = graph.run(robot.joint_names, times, q, qd, qdd, SETTLE, REFERENCE_RATE, events)
    result = closed_loop_summary(simulator, model, runs, duration, payload, q)
    print_closed_loop(result)
    write_closed_loop_page(out / "report", result, runs)
    return result


def closed_loop_summary(simulator, model, runs: dict, duration: float, payload: Payload, q) -> dict:
    """The numbers of the runs: per-run metrics, ratios, the goals, latency and cycles (a JSON document)."""
    joints = list(model.joint_names)
    kp, kd = pd_gains(simulator, ControlSettings())
    gravity = gravity_joints(simulator, q)
    metrics = {}
    for name, run in runs.items():
        for arm, samples in run.arms.items():
            metrics[f"{name}/{arm}"] = tracking_metrics(samples, 0.0, duration)
    error = {key: value.rms_error for key, value in metrics.items()}

    def overall(key):
        return float(np.sqrt(np.mean(error[key] ** 2)))

    nominal, loaded, repeated = runs["nominal"], runs["payload"], runs.get("nominal, repeated")
    event = loaded.events.get("payload_at", loaded.events.get("payload_done", math.nan))
    carrying = [j for j, flag in enumerate(gravity) if flag]
    latency = nominal_latency(nominal, model, joints)
    forward = nominal.arms["forward"]
    moving = (forward.time >= 0.0) & (forward.time < duration)
    ages = forward.feedforward_age[moving]
    cycles = {"control_rate": ControlSettings().control_rate, "integrated": int(forward.time.size),
              "skipped": int(sum(run.skipped for run in runs.values())),
              "without_feedforward": int(np.isnan(ages).sum()),
              "feedforward_age": {"p50": float(np.nanpercentile(ages, 50)), "p99": float(np.nanpercentile(ages, 99)),
                                  "max": float(np.nanmax(ages))},
              "references_per_second": float(np.sum((nominal.reference_stamps >= 0.0)
                                                    & (nominal.reference_stamps < duration)) / duration),
              "longest_reference_gap": float(np.max(np.diff(nominal.reference_stamps), initial=0.0)),
              "cpu_fraction": float(nominal.cpu / nominal.wall)}
    paths, goals = {}, []
    for path in ("forward", "trajectory"):
        reduction = error[f"{BASELINES}/pd"] / error[f"nominal/{path}"]
        over_true = error[f"nominal/{path}"] / error[f"true parameters/{path}"]
        drift = overall(f"warm-up, drift model/{path}") / overall(f"warm-up, static model/{path}")
        recovery, floor = (math.nan if run is None else recovery_time(
            run.arms[path], nominal.arms[path], event, carrying, RECOVERY_FACTOR, RECOVERY_WINDOW, RECOVERY_HOLD,
            duration) for run in (loaded, repeated))
        paths[path] = {"reduction": reduction.tolist(), "identified_over_true": over_true.tolist(),
                       "drift_over_static": drift, "recovery_time": recovery, "recovery_floor": floor,
                       "drift_over_static_per_joint": (error[f"warm-up, drift model/{path}"]
                                                       / error[f"warm-up, static model/{path}"]).tolist()}
        goals += [
            {"goal": "PD alone / identified", "path": path,
             "target": f">= {GOALS['reduction']:g} on {', '.join(joints[j] for j in carrying)}",
             "measured": float(min(reduction[carrying])), "passed": bool(np.all(reduction[carrying]
                                                                                >= GOALS["reduction"]))},
            {"goal": "identified / true parameters", "path": path,
             "target": f"<= {GOALS['identified_over_true']:g} on the same joints",
             "measured": float(max(over_true[carrying])),
             "passed": bool(np.all(over_true[carrying] <= GOALS["identified_over_true"]))},
            {"goal": f"payload served: within {RECOVERY_FACTOR:g}x of unloaded after", "path": path,
             "target": f"< {GOALS['recovery_time']:g} s", "measured": recovery,
             "passed": recovery < GOALS["recovery_time"]},
            {"goal": "warm-up: drift model / static", "path": path, "target": f"<= {GOALS['drift_over_static']:g}",
             "measured": drift, "passed": drift <= GOALS["drift_over_static"]}]
    goals.append({"goal": "missed controller cycles", "path": "forward", "target": "0 skipped, 0 without feed-forward",
                  "measured": cycles["skipped"] + cycles["without_feedforward"],
                  "passed": cycles["skipped"] + cycles["without_feedforward"] == 0})
    paths["forward"]["late_over_timely"] = (error[f"{BASELINES}/late"] / error["nominal/forward"]).tolist()
    return {"robot": model.robot.name, "joint_names": joints, "duration": duration,
            "units": {"error": "rad", "torque": "N m", "time": "s", "kp": "N m/rad", "kd": "N m s/rad"},
            "gains": {"kp": kp.tolist(), "kd": kd.tolist(), "control_rate": ControlSettings().control_rate,
                      "bandwidth": ControlSettings().bandwidth, "damping_ratio": ControlSettings().damping_ratio},
            "gravity_joints": [joints[j] for j in carrying],
            "runs": {key: value.to_dict() for key, value in metrics.items()}, "paths": paths,
            "payload": {**payload.to_dict(), "sent": loaded.events.get("payload", math.nan),
                        "answered": loaded.events.get("payload_done", math.nan), "served": event},
            "late_delay": LATE_DELAY, "latency": latency, "cycles": cycles, "goals": goals}


def nominal_latency(run, model, joints) -> dict:
    """The forward path's latency in the nominal run (:func:`feedforward_latency`), over the motion: each command
    matched to its reference through the model's own feed-forward of the references, with the accelerations the
    node estimated (the same estimator replayed over the references' header stamps and velocities) and its
    command lead (:func:`~robot_dynid.model.reference_acceleration.lead_state`)."""
    arrivals, received = run.arrivals["forward"]
    estimator = ReferenceAcceleration(len(joints), REFERENCE_ACCELERATION_WINDOW)
    now, later = (np.array(values).reshape(-1, len(joints)) for values in zip(*(
        (estimator.update(stamp, velocities), estimator.ahead(COMMAND_LEAD))
        for stamp, velocities in zip(run.reference_header_seconds, run.reference_qd))))
    inside = run.reference_stamps >= -0.1
    stamps, positions, velocities, accelerations, later = (values[inside] for values in (
        run.reference_stamps, run.reference_q, run.reference_qd, now, later))
    positions, velocities, accelerations = lead_state(positions, velocities, accelerations, COMMAND_LEAD, later)
    expected = compute_feedforward(model, joints, positions.reshape(-1), velocities.reshape(-1),
                                   accelerations.reshape(-1)) if stamps.size else np.zeros((0, len(joints)))
    moving = arrivals >= 0.0
    latency = feedforward_latency(stamps, expected, arrivals[moving], received[moving], ControlSettings().control_rate,
                                  rtol=1e-10, atol=1e-10)
    return latency.summary()


def _millirad(values) -> str:
    return " ".join(f"{1e3 * value:.3g}" for value in values)


def print_closed_loop(result: dict) -> None:
    joints = result["joint_names"]
    gains = result["gains"]
    print(f"\n   PD at {gains['control_rate']:g} Hz, bandwidth {gains['bandwidth']:g} Hz on each joint's largest "
          f"inertia: kp {np.round(gains['kp'], 1).tolist()} N m/rad, kd {np.round(gains['kd'], 2).tolist()} N m s/rad; "
          f"joints carrying gravity: {result['gravity_joints']}")
    rows = [(key, _millirad(value["rms_error"]), _millirad(value["peak_error"]),
             " ".join(f"{v:.3g}" for v in value["rms_torque"]), " ".join(f"{v:.3g}" for v in value["rms_feedback"]))
            for key, value in result["runs"].items()]
    print(f"\n   tracking over the {result['duration']:g} s motion, per joint {' '.join(joints)} (forward: the "
          "feedforward node's command_topic; trajectory: efforts of the trajectory's points):")
    print(format_table(("run/arm", "RMS error [mrad]", "peak error [mrad]", "RMS torque [N m]",
                        "RMS PD torque [N m]"), rows))
    latency, cycles = result["latency"], result["cycles"]
    print(f"\n   forward path latency, reference stamp -> controller (ms): delivered p50 "
          f"{1e3 * latency['delivered']['p50']:.2f} p99 {1e3 * latency['delivered']['p99']:.2f} max "
          f"{1e3 * latency['delivered']['max']:.2f}; applied p50 {1e3 * latency['applied']['p50']:.2f} p99 "
          f"{1e3 * latency['applied']['p99']:.2f} max {1e3 * latency['applied']['max']:.2f} ({latency['matched']} "
          f"commands matched, {latency['unmatched']} not); references {cycles['references_per_second']:.0f}/s, "
          f"longest gap {1e3 * cycles['longest_reference_gap']:.0f} ms; "
          f"feed-forward age at the cycles p50 {1e3 * cycles['feedforward_age']['p50']:.2f} ms, max "
          f"{1e3 * cycles['feedforward_age']['max']:.2f} ms; {cycles['integrated']} cycles, {cycles['skipped']} "
          f"samples skipped, {cycles['without_feedforward']} cycles without feed-forward; the process used "
          f"{100 * cycles['cpu_fraction']:.0f} % of a core")
    payload, paths = result["payload"], result["paths"]
    print(f"   payload of {payload['mass']:g} kg: requests sent {payload['sent']:.3f} s into the motion and answered "
          f"at {payload['answered']:.3f} s, stamped (fixed and served) {payload['served']:.3f} s; back within "
          f"{RECOVERY_FACTOR:g}x of the unloaded error "
          f"after {paths['forward']['recovery_time']:.3g} s (forward), {paths['trajectory']['recovery_time']:.3g} s "
          f"(trajectory); the nominal run played again, no payload: {paths['forward']['recovery_floor']:.3g} s and "
          f"{paths['trajectory']['recovery_floor']:.3g} s (what two real-time runs of one graph differ by)")
    print(f"   a feed-forward {1e3 * result['late_delay']:g} ms late: RMS error x"
          f"{' '.join(f'{v:.2f}' for v in result['paths']['forward']['late_over_timely'])} of the timely one")
    print("\n   goals (issue 34):")
    print(format_table(("goal", "path", "target", "measured", "met"), goal_rows(result)))


def goal_rows(result: dict) -> list:
    return [(goal["goal"], goal["path"], goal["target"], f"{goal['measured']:.3g}", "yes" if goal["passed"] else "NO")
            for goal in result["goals"]]


def write_closed_loop_page(directory, result: dict, runs: dict) -> None:
    """``closed_loop.html`` and ``closed_loop.json`` in ``directory`` (figures when matplotlib is there)."""
    from robot_dynid.errors import DynIdError
    directory.mkdir(parents=True, exist_ok=True)
    html.write_json(directory / "closed_loop.json", result)
    joints = result["joint_names"]
    parts = [html.paragraph(f"robot {result['robot']}; PD at {result['gains']['control_rate']:g} Hz, kp "
                            f"{np.round(result['gains']['kp'], 1).tolist()} N m/rad, kd "
                            f"{np.round(result['gains']['kd'], 2).tolist()} N m s/rad; motion of "
                            f"{result['duration']:g} s (docs/simulation.md, closed loop)"),
             html.heading("Tracking error"),
             html.table(("run/arm", *(f"RMS {j} [mrad]" for j in joints), *(f"peak {j} [mrad]" for j in joints)),
                        [(key, *(f"{1e3 * v:.3g}" for v in value["rms_error"]),
                          *(f"{1e3 * v:.3g}" for v in value["peak_error"])) for key, value in result["runs"].items()]),
             html.heading("Goals"),
             html.table(("goal", "path", "target", "measured", "met"), goal_rows(result))]
    try:
        from robot_dynid.reports.figures import tracking_error_figure
        duration = result["duration"]
        for name, labels, events in (
                ("closed_loop_nominal.png", {"PD alone": (BASELINES, "pd"),
                                             "identified, forward": ("nominal", "forward"),
                                             "true, forward": ("true parameters", "forward"),
                                             "identified, trajectory": ("nominal", "trajectory"),
                                             "payload, forward": ("payload", "forward"),
                                             "payload, trajectory": ("payload", "trajectory")},
                 {"payload served": result["payload"]["served"]}),
                ("closed_loop_warmup.png", {"static, forward": ("warm-up, static model", "forward"),
                                            "drift, forward": ("warm-up, drift model", "forward"),
                                            "static, trajectory": ("warm-up, static model", "trajectory"),
                                            "drift, trajectory": ("warm-up, drift model", "trajectory")}, {})):
            grid = np.arange(0.0, duration, 1e-3)
            curves = {}
            for label, (run, arm) in labels.items():
                samples = runs[run].arms[arm]
                error = np.array([np.interp(grid, samples.time, samples.q_desired[:, j] - samples.q[:, j])
                                  for j in range(len(joints))]).T
                curves[label] = windowed_rms(grid, error, RECOVERY_WINDOW)
            path = tracking_error_figure(grid, curves, joints, directory / name, events)
            parts.append(html.image(path, f"tracking error, RMS over {1e3 * RECOVERY_WINDOW:g} ms [rad]"))
    except DynIdError as error:
        parts.append(html.paragraph(f"no figures: {error}", note=True))
    html.write_page(directory / "closed_loop.html", f"Closed loop: {result['robot']}", parts)
    print(f"\n   closed-loop page: {directory / 'closed_loop.html'}")
