"""ComputeFeedforward across processes: latency of 1 and 1000 points, split into transport and compute.

Setup (real processes over DDS on loopback, ROS_DOMAIN_ID 150..199):

- the feedforward node, installed executable, parameters of ``config/feedforward.yaml`` with
  ``model_file`` set to a model artifact of the UR5 (6 DOF, coulomb_viscous friction, 48 base
  parameters, values from ``simulation.simulation_parameters``);
- baselines in a second process (``ros_bench.py services``): an empty ``std_srvs/Trigger`` (the
  bare round trip) and a ``ComputeFeedforward`` that echoes the request with efforts = positions
  (the round trip of the same payload, message conversion included, no model);
- baselines in this process: ``compute_feedforward`` on the request's flat arrays (validation +
  ``DynamicModel.torque``, what the node calls) and ``DynamicModel.torque`` alone, on the same
  points; and the client's own
  message conversion (``serialize_message`` of the request + ``deserialize_message`` of the
  response, the conversions rclpy does inside every call), which a C++ client would not pay.

The client is this process, with rclpy's EventsExecutor (the least client-side overhead; the node
spins rclpy's default single-threaded executor). Each round calls the node, the echo and the
trigger and runs the in-process baselines in turn, so that all see the same load. Times are wall
times from ``call_async`` to the response [ms]. The client, like the node and the echo service,
moves the objects alive before timing out of the garbage collector's reach (``gc.freeze()``).

Cross-check (AssertionError): the node's efforts equal ``DynamicModel.torque`` in this process to
1e-9 (relative to the largest torque), in the joint order of the request; the echo returns the
positions it was sent.
"""
from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import machine
import ros_bench

NAME = "feedforward"
CONFIG = machine.REPOSITORY / "config" / "feedforward.yaml"
FRICTION = "coulomb_viscous"
ONE_POINT_GOAL = 2.0           # [ms] p99 of one point
MANY_POINTS = 1000
MANY_POINTS_GOAL = 20.0        # [ms] p99 of MANY_POINTS points
AGREEMENT = 1e-9


def make_model(directory: Path, seed: int = 5):
    """UR5 with coulomb_viscous friction as a saved model artifact: (model, path)."""
    import numpy as np
    from robot_dynid.model.base_parameters import compute_base_parameters
    from robot_dynid.model.dynamic_model import DynamicModel
    from robot_dynid.experiment.simulation import simulation_parameters
    regressor = machine.ur5_regressor(FRICTION)
    base = compute_base_parameters(regressor)
    theta = simulation_parameters(regressor, seed=seed)
    model = DynamicModel(regressor.robot, regressor.friction, False, False, base,
                         base.projection @ theta, np.zeros(base.rank), method="ols",
                         provenance={"source": "bench_feedforward.py (simulation_parameters)"})
    return model, model.save(directory / "model.yaml")


def feedforward_request(joint_names, q, qd, qdd):
    """ComputeFeedforward.Request of the rows of q, qd, qdd (N, n) [rad, rad/s, rad/s^2]."""
    from robot_dynid.nodes.feedforward import float64_array
    from robot_dynid.srv import ComputeFeedforward
    return ComputeFeedforward.Request(joint_names=list(joint_names), positions=float64_array(q),
                                      velocities=float64_array(qd), accelerations=float64_array(qdd))


def response_efforts(response, shape):
    """The response's efforts [N m] as an array of ``shape`` (N, n)."""
    import numpy as np
    return np.frombuffer(response.efforts, dtype=np.float64).reshape(shape)


def _round_trip(graph, client, request) -> float:
    """Wall time [s] from ``call_async`` to the response (raises TimeoutError after 10 s)."""
    return _call(graph, client, request)[0]


def _call(graph, client, request) -> tuple[float, object]:
    """(wall time [s] from call_async to the response, the response)."""
    clock = time.perf_counter()
    future = client.call_async(request)
    graph.executor.spin_until_future_complete(future, timeout_sec=10.0)
    seconds = time.perf_counter() - clock
    if not future.done():
        raise TimeoutError(f"no response from {client.srv_name} within 10 s")
    return seconds, future.result()


def _timed(function, *arguments) -> float:
    """Wall time [s] of ``function(*arguments)``."""
    clock = time.perf_counter()
    function(*arguments)
    return time.perf_counter() - clock


def _check_node(graph, client, request, expected):
    """The node's response to ``request``; its efforts must equal ``expected`` (N, n) [N m]."""
    import numpy as np
    _, response = _call(graph, client, request)
    machine.require(response.success, f"feedforward node: {response.message}")
    effort = response_efforts(response, expected.shape)
    error = np.abs(effort - expected).max() / np.abs(expected).max()
    machine.require(error < AGREEMENT, f"node efforts differ from DynamicModel.torque by "
                    f"{error:.1e} (relative), {len(expected)} points")
    return response


def _check_echo(graph, client, request, positions):
    import numpy as np
    _, response = _call(graph, client, request)
    echoed = response_efforts(response, positions.shape)
    machine.require(np.array_equal(echoed, positions),
                    "the echo service did not return the positions it was sent")


def run(quick: bool = False) -> machine.BenchmarkResult:
    """Start the processes, time the round trips and the compute, cross-check (see the module
    docstring)."""
    import numpy as np
    from std_srvs.srv import Trigger
    from rclpy.serialization import deserialize_message, serialize_message
    from robot_dynid.model.feedforward import FIELDS, compute_feedforward
    from robot_dynid.srv import ComputeFeedforward

    domain_id = ros_bench.setup_ros_environment()
    machine_description = machine.describe_machine()
    rounds = {1: 30 if quick else 2000, MANY_POINTS: 5 if quick else 200}
    warm_up = 3 if quick else 20
    directory = Path(tempfile.mkdtemp(prefix="robot_dynid_bench_feedforward_"))
    model, model_file = make_model(directory)
    rng = np.random.default_rng(20261122)
    order = rng.permutation(len(model.joint_names))          # request joints in another order
    names = [model.joint_names[i] for i in order]
    states = {n: machine.random_states(model.robot, n, rng) for n in rounds}
    requests = {n: feedforward_request(names, *(a[:, order] for a in states[n])) for n in rounds}
    expected = {n: model.torque(*states[n])[:, order] for n in rounds}

    node = ros_bench.start_node("feedforward", "--params-file", str(CONFIG),
                                "-p", f"model_file:={model_file}", log_path=directory / "node.log")
    services = ros_bench.start_helper("services", log_path=directory / "services.log")
    graph = ros_bench.EventsGraph("bench_feedforward_client")
    try:
        clients = {"node": graph.node.create_client(ComputeFeedforward, "compute_feedforward"),
                   "echo": graph.node.create_client(ComputeFeedforward, "bench_echo_feedforward"),
                   "trigger": graph.node.create_client(Trigger, "bench_trigger")}
        for client in clients.values():
            graph.spin_until(client.service_is_ready, what=f"service {client.srv_name}")
        trigger_request = Trigger.Request()
        gc.collect()        # keep this client's full collections short, as the node does
        gc.freeze()
        latency = {}                     # (path, points) -> list of seconds
        ticks_before = ros_bench.machine_cpu_ticks()
        for n, n_rounds in rounds.items():
            response = _check_node(graph, clients["node"], requests[n], expected[n])
            _check_echo(graph, clients["echo"], requests[n], states[n][0][:, order])
            arrays = [np.frombuffer(getattr(requests[n], field), dtype=np.float64)  # as the node does
                      for field in FIELDS]
            q, qd, qdd = states[n]
            response_bytes = serialize_message(response)

            def client_conversion(request=requests[n], data=response_bytes):
                serialize_message(request)
                deserialize_message(data, ComputeFeedforward.Response)

            paths = {  # each round times every path in turn, so all see the same load
                "node": lambda request=requests[n]: _round_trip(graph, clients["node"], request),
                "echo": lambda request=requests[n]: _round_trip(graph, clients["echo"], request),
                "trigger": lambda: _round_trip(graph, clients["trigger"], trigger_request),
                "compute_feedforward": lambda arrays=arrays: _timed(
                    compute_feedforward, model, names, *arrays),
                "torque": lambda q=q, qd=qd, qdd=qdd: _timed(model.torque, q, qd, qdd),
                "client": lambda: _timed(client_conversion),
            }
            for round_index in range(warm_up + n_rounds):
                for path, call in paths.items():
                    seconds = call()
                    if round_index >= warm_up:
                        latency.setdefault((path, n), []).append(seconds)
        steal = ros_bench.steal_percent(ticks_before, ros_bench.machine_cpu_ticks())
    finally:
        graph.close()
        node_exit = ros_bench.stop_node(node)
        ros_bench.stop_node(services)
    shutil.rmtree(directory, ignore_errors=True)
    stats = {key: ros_bench.percentiles(np.array(values) * 1e3) for key, values in latency.items()}

    one, many = stats[("node", 1)], stats[("node", MANY_POINTS)]
    without_client = ros_bench.percentiles(
        (np.array(latency[("node", MANY_POINTS)]) - np.array(latency[("client", MANY_POINTS)])) * 1e3)
    goals = (
        machine.Goal("one point, round trip p99", f"< {ONE_POINT_GOAL:g} ms",
                     f"{one['p99']:.2f} ms (p50 {one['p50']:.2f}, max {one['max']:.1f})",
                     one["p99"] < ONE_POINT_GOAL),
        machine.Goal(f"{MANY_POINTS:,} points, round trip p99", f"< {MANY_POINTS_GOAL:g} ms",
                     f"{many['p99']:.1f} ms (p50 {many['p50']:.1f}, max {many['max']:.1f})",
                     many["p99"] < MANY_POINTS_GOAL),
        machine.Goal(f"{MANY_POINTS:,} points, round trip less this client's own message "
                     "conversion in the same round (what a client with free conversion would see)",
                     "info", f"p50 {without_client['p50']:.1f} ms, p99 {without_client['p99']:.1f} ms",
                     None),
        machine.Goal("node / empty Trigger round trip (p50), one point", "info",
                     f"{one['p50'] / stats[('trigger', 1)]['p50']:.2f}x", None),
        machine.Goal("one point, node minus empty Trigger round trip (the node's share; the "
                     "rest is the transport's)", "info",
                     f"p50 {one['p50'] - stats[('trigger', 1)]['p50']:.2f} ms, p99 "
                     f"{one['p99'] - stats[('trigger', 1)]['p99']:.2f} ms (Trigger p99 "
                     f"{stats[('trigger', 1)]['p99']:.2f} ms)", None),
    )
    labels = [
        ("node", "feedforward node: `ComputeFeedforward` round trip"),
        ("echo", "baseline: echo `ComputeFeedforward` (same payload, no model), 2nd process"),
        ("trigger", "baseline: empty `std_srvs/Trigger` round trip, 2nd process"),
        ("compute_feedforward", "in process: `compute_feedforward` on the request's arrays "
                                "(validation + torque)"),
        ("torque", "in process: `DynamicModel.torque` on arrays"),
        ("client", "in process: the client's message conversion (request out, response in)"),
    ]
    rows = []
    for n in rounds:
        for key, label in labels:
            s = stats[(key, n)]
            rows.append([f"{n:,}", label, f"{s['p50']:.3f}", f"{s['p99']:.3f}", f"{s['max']:.2f}",
                         f"{s['p50'] / stats[('trigger', 1)]['p50']:.2f}x", f"{s['n']:,}"])
    split_rows = []
    for n in rounds:
        node_p50, echo_p50 = stats[("node", n)]["p50"], stats[("echo", n)]["p50"]
        trigger_p50 = stats[("trigger", 1)]["p50"]
        compute_p50 = stats[("compute_feedforward", n)]["p50"]
        client_p50 = stats[("client", n)]["p50"]
        split_rows.append([f"{n:,}", f"{node_p50:.3f}", f"{trigger_p50:.3f}", f"{client_p50:.3f}",
                           f"{echo_p50 - trigger_p50 - client_p50:.3f}", f"{compute_p50:.3f}",
                           f"{node_p50 - echo_p50 - compute_p50:.3f}"])
    details = (
        f"UR5, {len(model.joint_names)} joints, {FRICTION} friction, {model.base.rank} base "
        f"parameters; request joints in a permuted order; random states within the joint limits. "
        f"{warm_up} warm-up rounds not counted; ROS_DOMAIN_ID {domain_id}, loopback.\n\n"
        + machine.markdown_table(["points", "Path", "p50 [ms]", "p99 [ms]", "max [ms]",
                                  "p50 vs empty Trigger", "calls"], rows)
        + "\nWhere the round trip goes (p50 [ms]): transport = empty Trigger round trip; client "
          "conversion = the client's message conversion in process; server payload = echo minus "
          "Trigger minus client conversion (the server's conversion of request and response and "
          "moving the larger messages); compute = `compute_feedforward` in process; node rest = "
          "node minus echo minus compute (the node's own per-request Python work; negative values "
          "are noise).\n\n"
        + machine.markdown_table(["points", "node round trip", "transport", "client conversion",
                                  "server payload", "compute", "node rest"], split_rows)
        + f"\nCross-check: node efforts equal `DynamicModel.torque` in this process to "
          f"{AGREEMENT:g} (relative); feedforward node exit code {node_exit} after SIGINT. Load "
          f"average {os.getloadavg()[0]:.2f} at the end; CPU steal during the timed rounds "
          f"{steal:.1f} % of the machine's CPU time (/proc/stat: the hypervisor running other "
          f"guests on this virtual machine's cores).\n")
    notes = (
        "The client is Python (rclpy): converting the request and response between Python "
        "objects and messages is part of every round trip, in the client (client conversion) as "
        "in the server (part of server payload). The node's own work is compute plus node rest.",
        "`ComputeFeedforward` carries flat `float64[]` arrays (N points x n joints, row-major): "
        "rclpy converts each between an `array.array('d')` and the message with one copy, so "
        "1000 points cost about as much to convert as their bytes take to copy. Its first version "
        "carried `trajectory_msgs/JointTrajectoryPoint[]`, for which rclpy built one Python "
        "object per point (and its `Duration`) on every conversion: 1000 points took p50 33.5 / "
        "p99 47.8 ms (load 0.66, source eb7ef7c), 29 ms of the p50 in message conversion.",
        "The p99 and max of every path rise with the load of the machine (other processes "
        "preempting the client, the node or the DDS threads) and with CPU steal (on this virtual "
        "machine, about 1 % when idle and 10-30 % in some runs); compare them with the empty "
        "Trigger's, which has no work of ours in it.",
    )
    return machine.BenchmarkResult(
        name=NAME, title=f"ComputeFeedforward across processes (UR5, 6 DOF, {FRICTION})",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"stats_ms": {f"{k[0]}_{k[1]}": v for k, v in stats.items()},
                "node_exit": node_exit, "steal_percent": steal})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
