"""ComputeFeedforward across processes: latency of 1 and 1000 points, split into transport and compute.

Setup (real processes over DDS on loopback, ROS_DOMAIN_ID 150..199):

- the feedforward node, installed executable, parameters of ``config/feedforward.yaml`` with
  ``model_file`` set to a model artifact of the UR5 (6 DOF, coulomb_viscous friction, 48 base
  parameters, values from ``simulation.simulation_parameters``);
- baselines in a second process (``ros_bench.py services``): an empty ``std_srvs/Trigger`` (the
  bare round trip) and a ``ComputeFeedforward`` that echoes the request with efforts = positions
  (the round trip of the same payload, message conversion included, no model);
- in this process: ``compute_feedforward`` on the request's flat arrays with the limits the node
  admitted the model with (what the node calls: checks, reordering, torque; one point takes the
  path with bounds and joint order derived once per joint order), its checked path alone
  (``_checked_feedforward``: what every request ran before, checks on arrays) and the baseline
  ``DynamicModel.torque`` alone (the bare torque evaluation), on the same points; and the client's own
  message conversion (``serialize_message`` of the request + ``deserialize_message`` of the
  response, the conversions rclpy does inside every call), which a C++ client would not pay;
- the topic path, one point per message: a second feedforward node (the same parameters and
  ``reference_topic``, so its reference path on a thread of its own) takes a ``JointState`` reference and
  publishes the ``Float64MultiArray`` effort; timed from ``publish`` to the effort's arrival in
  this process, ping-pong, against the relay of the services process (JointState in, its
  positions out as Float64MultiArray, no model) timed in the same rounds.

The client is this process, with rclpy's EventsExecutor (the least client-side overhead; the node
and the services process spin it too, ``spin_node(low_latency=True)``). Each round calls the node,
the echo and the trigger, in an order rotated every round (:func:`rotated`: the first call of a
round meets this client's caches cold), then runs the in-process baselines, so that all see the
same load; the topic rounds alternate the same way. Times are wall
times from ``call_async`` to the response [ms]. The client, like the node and the echo service,
moves the objects alive before timing out of the garbage collector's reach (``gc.freeze()``).

Cross-check (AssertionError): the node's efforts, from the service and from the topic, equal
``DynamicModel.torque`` in this process to 1e-9 (relative to the largest torque), in the joint
order of the request (of the model, on the topic); the echo returns the positions it was sent.
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
TRIGGER_GOAL = 1.5             # one point's p99 at most this times the empty Trigger's p99 (same run)
TORQUE_GOAL = 2.0              # one point's compute_feedforward p50 under this times DynamicModel.torque's
TOPIC_ROUNDS = 2000
BLOCKS = 5                     # the one-point rounds' p99 ratio is also shown per block: its spread within a run
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
    from robot_dynid.nodes.node_runtime import float64_array
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


class TopicPingPong:
    """Publish a one-point ``JointState`` on ``reference`` and wait for the ``Float64MultiArray`` on
    ``command``: wall time [s] and the data received."""

    def __init__(self, graph, reference: str, command: str, names, positions, velocities):
        from rclpy.task import Future
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        self.graph, self.future_type = graph, Future
        self.publisher = graph.node.create_publisher(JointState, reference, 10)
        graph.node.create_subscription(Float64MultiArray, command, self.on_command, 10)
        self.message = JointState(name=list(names), position=[float(v) for v in positions],
                                  velocity=[float(v) for v in velocities])
        self.future = None
        self.command = command

    def on_command(self, msg):
        if self.future is not None and not self.future.done():
            self.future.set_result(msg.data)

    def ready(self) -> bool:
        return self.publisher.get_subscription_count() >= 1 and \
            self.graph.node.count_publishers(self.command) >= 1

    def __call__(self):
        self.future = self.future_type()
        clock = time.perf_counter()
        self.publisher.publish(self.message)
        self.graph.executor.spin_until_future_complete(self.future, timeout_sec=10.0)
        seconds = time.perf_counter() - clock
        if not self.future.done():
            raise TimeoutError(f"no message on {self.command} within 10 s")
        return seconds, self.future.result()


def rotated(calls: dict, round_index: int) -> list:
    """The (name, call) pairs of ``calls`` starting at the ``round_index``-th (modulo their number): over
    the rounds each call comes first, second, ... equally often. The first round trip of a round meets this
    client's caches cold after the in-process timings, so in a fixed order it is slower than the others
    for reasons of the client's alone (see the notes)."""
    items = list(calls.items())
    shift = round_index % len(items)
    return items[shift:] + items[:shift]


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
    from robot_dynid.model.feedforward import FIELDS, _checked_feedforward, admit_model, compute_feedforward
    from robot_dynid.srv import ComputeFeedforward

    domain_id = ros_bench.setup_ros_environment()
    machine_description = machine.describe_machine()
    rounds = {1: 30 if quick else 10_000, MANY_POINTS: 5 if quick else 200}
    warm_up = 3 if quick else 20
    directory = Path(tempfile.mkdtemp(prefix="robot_dynid_bench_feedforward_"))
    model, model_file = make_model(directory)
    limits = admit_model(model)         # config/feedforward.yaml's margins are the defaults
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
    topic_node, topic_exit = None, None
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
        first = {}                       # (path, points) -> list of bool: the first call of its round
        ticks_before = ros_bench.machine_cpu_ticks()
        for n, n_rounds in rounds.items():
            response = _check_node(graph, clients["node"], requests[n], expected[n])
            _check_echo(graph, clients["echo"], requests[n], states[n][0][:, order])
            arrays = [getattr(requests[n], field) for field in FIELDS]    # array.array('d'), as the node passes them
            q, qd, qdd = states[n]
            response_bytes = serialize_message(response)

            def client_conversion(request=requests[n], data=response_bytes):
                serialize_message(request)
                deserialize_message(data, ComputeFeedforward.Response)

            round_trips = {
                "node": lambda request=requests[n]: _round_trip(graph, clients["node"], request),
                "echo": lambda request=requests[n]: _round_trip(graph, clients["echo"], request),
                "trigger": lambda: _round_trip(graph, clients["trigger"], trigger_request),
            }
            in_process = {
                "compute_feedforward": lambda arrays=arrays: _timed(
                    lambda: compute_feedforward(model, names, *arrays, limits=limits)),
                "checked": lambda arrays=arrays: _timed(
                    lambda: _checked_feedforward(model, names, *arrays, None, None, limits)),
                "torque": lambda q=q, qd=qd, qdd=qdd: _timed(model.torque, q, qd, qdd),
                "client": lambda: _timed(client_conversion),
            }
            for round_index in range(warm_up + n_rounds):
                for place, (path, call) in enumerate(rotated(round_trips, round_index) + list(in_process.items())):
                    seconds = call()
                    if round_index >= warm_up:
                        latency.setdefault((path, n), []).append(seconds)
                        first.setdefault((path, n), []).append(place == 0)
        steal = ros_bench.steal_percent(ticks_before, ros_bench.machine_cpu_ticks())
        node_exit = ros_bench.stop_node(node)
        topic_node = ros_bench.start_node(
            "feedforward", "--params-file", str(CONFIG), "-p", f"model_file:={model_file}",
            "-p", "reference_topic:=bench_ff_reference", "-p", "command_topic:=bench_ff_command",
            "-p", "reference_timeout:=60.0", log_path=directory / "topic_node.log")
        one_q, one_qd, _ = (a[0] for a in states[1])
        pings = {"topic_node": TopicPingPong(graph, "bench_ff_reference", "bench_ff_command",
                                             names, one_q[order], one_qd[order]),
                 "topic_relay": TopicPingPong(graph, "bench_reference", "bench_command",
                                              names, one_q[order], one_qd[order])}
        for ping in pings.values():
            graph.spin_until(ping.ready, what=f"the subscriber and publisher of {ping.command}")
        topic_expected = model.torque(one_q, one_qd, np.zeros_like(one_q))
        _, effort = pings["topic_node"]()
        error = np.abs(np.asarray(effort) - topic_expected).max() / np.abs(topic_expected).max()
        machine.require(error < AGREEMENT, f"topic efforts differ from DynamicModel.torque by {error:.1e}")
        topic_rounds = 30 if quick else TOPIC_ROUNDS
        for round_index in range(warm_up + topic_rounds):
            for path, ping in rotated(pings, round_index):
                seconds, _ = ping()
                if round_index >= warm_up:
                    latency.setdefault((path, 1), []).append(seconds)
    finally:
        graph.close()
        node_exit = ros_bench.stop_node(node)
        if topic_node is not None:
            topic_exit = ros_bench.stop_node(topic_node)
        ros_bench.stop_node(services)
    shutil.rmtree(directory, ignore_errors=True)
    stats = {key: ros_bench.percentiles(np.array(values) * 1e3) for key, values in latency.items()}

    one, many = stats[("node", 1)], stats[("node", MANY_POINTS)]
    blocks = [np.percentile(node_block, 99) / np.percentile(trigger_block, 99) for node_block, trigger_block in
              zip(np.array_split(latency[("node", 1)], BLOCKS), np.array_split(latency[("trigger", 1)], BLOCKS))]
    trigger = stats[("trigger", 1)]
    trigger_first = np.array(first[("trigger", 1)])
    trigger_seconds = np.array(latency[("trigger", 1)]) * 1e3
    trigger_places = {place: ros_bench.percentiles(trigger_seconds[mask])
                      for place, mask in (("first", trigger_first), ("later", ~trigger_first))}
    in_process = stats[("compute_feedforward", 1)]["p50"] / stats[("torque", 1)]["p50"]
    checked_ratio = stats[("checked", 1)]["p50"] / stats[("torque", 1)]["p50"]
    topic, relay = stats[("topic_node", 1)], stats[("topic_relay", 1)]
    without_client = ros_bench.percentiles(
        (np.array(latency[("node", MANY_POINTS)]) - np.array(latency[("client", MANY_POINTS)])) * 1e3)
    goals = (
        machine.Goal("one point in process: `compute_feedforward` / bare `DynamicModel.torque` (p50)",
                     f"< {TORQUE_GOAL:g}x", f"{in_process:.2f}x ({1e3 * stats[('compute_feedforward', 1)]['p50']:.0f} "
                     f"vs {1e3 * stats[('torque', 1)]['p50']:.0f} us; the checked path alone {checked_ratio:.2f}x)",
                     in_process < TORQUE_GOAL),
        machine.Goal("one point, round trip p99 / empty Trigger round trip p99 (same run)", f"<= {TRIGGER_GOAL:g}x",
                     f"{one['p99'] / trigger['p99']:.2f}x ({one['p99']:.2f} vs {trigger['p99']:.2f} ms; in {BLOCKS} "
                     f"consecutive blocks of the rounds {min(blocks):.2f}x to {max(blocks):.2f}x)",
                     one["p99"] <= TRIGGER_GOAL * trigger["p99"]),
        machine.Goal("one point, round trip p99", f"< {ONE_POINT_GOAL:g} ms",
                     f"{one['p99']:.2f} ms (p50 {one['p50']:.2f}, max {one['max']:.1f})",
                     one["p99"] < ONE_POINT_GOAL),
        machine.Goal("topic path, reference in -> effort out (one point)", "info",
                     f"p50 {topic['p50']:.3f} ms, p99 {topic['p99']:.3f} ms ({topic['p50'] / relay['p50']:.2f}x / "
                     f"{topic['p99'] / relay['p99']:.2f}x the relay without a model)", None),
        machine.Goal(f"{MANY_POINTS:,} points, round trip p99", f"< {MANY_POINTS_GOAL:g} ms",
                     f"{many['p99']:.1f} ms (p50 {many['p50']:.1f}, max {many['max']:.1f})",
                     many["p99"] < MANY_POINTS_GOAL),
        machine.Goal(f"{MANY_POINTS:,} points, round trip less this client's own message "
                     "conversion in the same round (what a client with free conversion would see)",
                     "info", f"p50 {without_client['p50']:.1f} ms, p99 {without_client['p99']:.1f} ms",
                     None),
        machine.Goal("empty Trigger round trip, first call of its round / later calls (why the order rotates)",
                     "info", f"p50 {trigger_places['first']['p50']:.3f} / {trigger_places['later']['p50']:.3f} ms, "
                     f"p99 {trigger_places['first']['p99']:.3f} / {trigger_places['later']['p99']:.3f} ms", None),
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
                                "(validation + torque), the node's limits"),
        ("checked", "in process: its checked path alone (`_checked_feedforward`, every request before)"),
        ("torque", "baseline in process: `DynamicModel.torque` on arrays (bare torque evaluation)"),
        ("client", "in process: the client's message conversion (request out, response in)"),
    ]
    rows = []
    for n in rounds:
        for key, label in labels:
            s = stats[(key, n)]
            rows.append([f"{n:,}", label, f"{s['p50']:.3f}", f"{s['p99']:.3f}", f"{s['max']:.2f}",
                         f"{s['p50'] / stats[('trigger', 1)]['p50']:.2f}x", f"{s['n']:,}"])
    rows.append(["1", "topic: feedforward node, `JointState` reference in -> `Float64MultiArray` effort out",
                 f"{topic['p50']:.3f}", f"{topic['p99']:.3f}", f"{topic['max']:.2f}",
                 f"{topic['p50'] / stats[('trigger', 1)]['p50']:.2f}x", f"{topic['n']:,}"])
    rows.append(["1", "baseline: topic relay (JointState in, positions out), 2nd process",
                 f"{relay['p50']:.3f}", f"{relay['p99']:.3f}", f"{relay['max']:.2f}",
                 f"{relay['p50'] / stats[('trigger', 1)]['p50']:.2f}x", f"{relay['n']:,}"])
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
        + f"\nCross-check: node efforts (service and topic) equal `DynamicModel.torque` in this process to "
          f"{AGREEMENT:g} (relative); feedforward node exit codes {node_exit} and {topic_exit} (topic) after "
          f"SIGINT. The topic rows come from a second node started after the service rounds (with "
          f"`reference_topic` its reference path runs on a thread of its own), {topic_rounds:,} ping-pong rounds. Load "
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
        "The topic rows are the node's whole reference path: with `reference_topic` its callback group runs on a "
        "single-threaded executor on a thread of its own (node_runtime.CallbackGroupExecutor). Before, the node "
        "spun on rclpy's MultiThreadedExecutor, and the path's p50 varied from 1 to 72 ms and its p99 up to "
        "1.5 s between runs (the relay under 1 ms in the same rounds): a 30-line rclpy relay node on a "
        "MultiThreadedExecutor, pinged every 2 ms, had p99 105-540 ms and a 12-52 % CPU share, against p99 2 ms "
        "and 2 % on a SingleThreadedExecutor, in the same minute (2026-11-27, Kilted).",
        "The order of the round trips within a round matters: the first one meets this client's caches cold "
        "after the in-process timings (the empty Trigger's p50 and p99 when first and when later are in the table "
        "above). Until source d601dd4 every round called the node first, the echo and the Trigger after it, which "
        "weighed on the node alone: 14 runs of source 67b2aff and 5 of 68a9574 (2026-11-27, 21:13-22:06 UTC) gave a "
        "one-point p99 ratio of 1.35-1.82x (median 1.53x); in two runs with the order reversed (Trigger first, "
        "node last; the node timed inside as below) the ratio was 1.25 and 1.18x and the echo's p99 1.02-1.04x the "
        "Trigger's, against 1.15-1.21x in the fixed order. The order now rotates every round: 8 runs of the same "
        "code (2026-11-27, 23:40-23:45 UTC, nothing else running; the run above aside) gave 1.27, 1.28, 1.28, "
        "1.33, 1.37, 1.38, 1.40 and 1.43x (5 blocks of each: 1.19-1.48x).",
        "What the node adds to the echo is its Python per request, run with cold caches (the node sleeps between "
        "requests): `on_compute` timed inside the node (perf_counter_ns around its parts; one run, 23:39 UTC) "
        "took 23 us p50 and 72 us p99, of which "
        "`compute_feedforward` 13 / 42 us (2.4 us in a hot loop: one compiled call for this friction model), the "
        "response's float64 array 4 / 22 us and the rest (the served model, the friction state, the field setters) "
        "6 / 19 us; before the compiled call (source 67b2aff) it was 49-67 us p50, 94-169 us p99. The rest of the "
        "node's share is rclpy's dispatch and the conversion of a larger response than the echo's.",
        "The p99 and max of every path rise with the load of the machine (other processes "
        "preempting the client, the node or the DDS threads) and with CPU steal (on this virtual "
        "machine, about 1 % when idle and 10-30 % in some runs); compare them with the empty "
        "Trigger's, which has no work of ours in it.",
    )
    return machine.BenchmarkResult(
        name=NAME, title=f"ComputeFeedforward across processes (UR5, 6 DOF, {FRICTION})",
        goals=goals, details=details, notes=notes, machine=machine_description, quick=quick,
        values={"stats_ms": {f"{k[0]}_{k[1]}": v for k, v in stats.items()},
                "node_exit": node_exit, "topic_exit": topic_exit, "steal_percent": steal})


if __name__ == "__main__":
    sys.exit(machine.benchmark_main(run, __doc__.splitlines()[0]))
