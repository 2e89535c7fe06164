"""The hydraulic_identifier node from its installed executable, over real DDS, fed simulated cylinders.

Two cylinders of the curtain-wall arm (Tables IV and V in SI; areas and stiffness assumed as in
test/core/hydraulics/test_cylinder.py) follow the three-sine excitation of
test/core/hydraulics/test_online.py at 50 Hz with 1 kPa pressure noise; HydraulicCylinderState
messages carry both, in the reverse of the configured order. Expected: the published estimates within 5 % of
the paper's values, the results file written by ~/save and again at SIGINT with the convergence of robot-dynid
hydraulic identify's results, bad messages skipped without stopping the node.
"""
import math
import os
import pathlib
import sys
import time

import numpy as np
import pytest
import yaml
from rcl_interfaces.srv import GetParameters
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

from reference_tables import reference_table
from robot_dynid.hydraulics.cylinder import (CylinderParameters, HydraulicCylinder, simulate_cylinder,
                                             sinusoidal_displacement)
from robot_dynid.hydraulics.cylinder_results import load_cylinder_results
from robot_dynid.msg import HydraulicCylinderEstimates, HydraulicCylinderState, IdentificationStatus
from ros_graph import start_node, stop_node

AREA_A = math.pi * 0.020**2
AREA_B = AREA_A - math.pi * 0.011**2
STIFFNESS = 3000.0
LOAD = 100.0
RATE = 50.0
NOISE = 1e3   # Pa
JOINTS = {"boom": 1, "wrist": 6}
EXCITATION = dict(amplitude=(0.006, 0.02, 0.005), angular_frequency=(0.05, 0.3, 2.3))
DURATION = 60.0   # s


def table_v(joint):
    table = reference_table("curtain_wall_arm.yaml")["cylinders"]
    row = table["stribeck_table_V"][joint - 1]
    cylinder = HydraulicCylinder(table["piston_mass_kg"][joint - 1], table["damping_c"] * 1000.0, AREA_A, AREA_B)
    return cylinder, CylinderParameters(STIFFNESS, row["fc"], row["fv"] * 1000.0, row["fs"] * 10.0)


@pytest.fixture(scope="module")
def node(tmp_path_factory, graph):
    directory = tmp_path_factory.mktemp("hydraulic_identifier")
    config = {"cylinders": [{"name": name, "piston_mass": table_v(joint)[0].piston_mass, "damping": 2000.0,
                             "area_a": AREA_A, "area_b": AREA_B, "load": LOAD} for name, joint in JOINTS.items()]}
    (directory / "c.yaml").write_text(yaml.safe_dump(config))
    process = start_node("hydraulic_identifier", "-p", f"cylinders_file:={directory / 'c.yaml'}",
                         "-p", f"results_file:={directory / 'results.yaml'}", "-p", "publish_period:=0.2",
                         "-p", "velocity_scale:=0.01", "-p", "queue_depth:=5000", log_path=directory / "node.log")
    yield graph, process, directory
    stop_node(process)


def messages():
    """HydraulicCylinderState per sample, both cylinders (wrist first), stamped from 1000 s."""
    t = np.arange(0.0, DURATION, 1.0 / RATE)
    x, xd, xdd = sinusoidal_displacement(t, **EXCITATION)
    rng = np.random.default_rng(7)
    pressures = {}
    for name, joint in JOINTS.items():
        cylinder, truth = table_v(joint)
        simulated = simulate_cylinder(cylinder, truth, x, xd, xdd, load=LOAD)
        pressures[name] = (simulated.p_a + NOISE * rng.normal(size=t.size),
                           simulated.p_b + NOISE * rng.normal(size=t.size))
    names = ["wrist", "boom"]
    for k in range(t.size):
        message = HydraulicCylinderState(name=names, position=[x[k]] * 2, velocity=[xd[k]] * 2,
                                         pressure_a=[pressures[n][0][k] for n in names],
                                         pressure_b=[pressures[n][1][k] for n in names])
        stamp = 1000.0 + t[k]
        message.header.stamp.sec = math.floor(stamp)
        message.header.stamp.nanosec = round((stamp - math.floor(stamp)) * 1e9)
        yield k, message


def test_estimates_converge_save_and_shutdown_write_the_results(node):
    graph, process, directory = node
    estimates, statuses = [], []
    graph.node.create_subscription(HydraulicCylinderEstimates, "hydraulic_estimates", estimates.append, 10)
    graph.node.create_subscription(IdentificationStatus, "hydraulic_identification_status", statuses.append, 10)
    states = graph.node.create_publisher(HydraulicCylinderState, "hydraulic_cylinder_states", QoSProfile(depth=5000))
    graph.spin_until(lambda: states.get_subscription_count() > 0 and statuses, what="node subscribing, publishing")
    assert statuses[-1].state == IdentificationStatus.STATE_IDLE
    save = graph.node.create_client(Trigger, "hydraulic_identifier/save")
    early = graph.call(save, Trigger.Request())
    assert not early.success and "no cylinder has more than 4 samples" in early.message

    t0 = time.monotonic()
    for k, message in messages():
        states.publish(message)
        if k == 100:   # bad messages between good ones: each skipped and counted, the node keeps going
            bad = HydraulicCylinderState(name=["boom"], position=[0.0, 0.0], velocity=[0.0], pressure_a=[2e6],
                                         pressure_b=[5e5])
            states.publish(bad)
            states.publish(HydraulicCylinderState(name=["boom"], position=[0.0], velocity=[0.0], pressure_a=[20.0],
                                                  pressure_b=[0.5]))
            states.publish(HydraulicCylinderState(name=["stick"], position=[0.0], velocity=[0.0], pressure_a=[2e6],
                                                  pressure_b=[5e5]))
        if k % 25 == 0:   # 250 Hz (5 times real time), so the node keeps up on a loaded machine
            graph.spin_until(lambda: time.monotonic() > t0 + k / 250.0, what="pacing")
    total = int(DURATION * RATE)
    graph.spin_until(lambda: estimates and min(estimates[-1].samples) >= total - 1, timeout=60.0,
                     what="every sample used")
    assert process.poll() is None
    last = estimates[-1]
    assert list(last.name) == ["boom", "wrist"] and all(last.converged)
    for index, (name, joint) in enumerate(JOINTS.items()):
        expected = table_v(joint)[1].as_array()
        values = np.array([last.stiffness[index], last.fc[index], last.fv[index], last.fs[index]])
        std = np.array([last.stiffness_std[index], last.fc_std[index], last.fv_std[index], last.fs_std[index]])
        np.testing.assert_array_less(np.abs(values - expected) / np.abs(expected), 0.05)
        np.testing.assert_array_less(np.abs(values - expected), 4.0 * std)
        assert last.residual_rms[index] == pytest.approx(NOISE * math.hypot(AREA_A, AREA_B), rel=0.1)
    graph.spin_until(lambda: statuses[-1].samples_used == sum(last.samples), what="status of every sample")
    status = statuses[-1]
    assert status.state == IdentificationStatus.STATE_CONVERGED and status.samples_dropped == 3
    warnings = " ".join(status.warnings)
    for reason in ("array lengths differ from the names", "bar or MPa", "unknown cylinder(s) ['stick']"):
        assert reason in warnings
    assert "array lengths differ from the names" in (directory / "node.log").read_text()

    response = graph.call(save, Trigger.Request())
    assert response.success, response.message
    saved = {result.name: result for result in load_cylinder_results(directory / "results.yaml")}
    assert list(saved) == ["boom", "wrist"] and saved["boom"].n_samples == last.samples[0]
    assert saved["boom"].parameters.fv == pytest.approx(last.fv[0], rel=1e-6)
    assert saved["wrist"].config.cylinder.piston_mass == table_v(6)[0].piston_mass and saved["wrist"].method == "rls"
    check_convergence(directory / "results.yaml", saved)

    (directory / "results.yaml").unlink()
    assert stop_node(process) == 0, (directory / "node.log").read_text()
    at_shutdown = {result.name: result for result in load_cylinder_results(directory / "results.yaml")}
    assert at_shutdown["wrist"].parameters.fc == pytest.approx(saved["wrist"].parameters.fc, rel=1e-6)
    check_convergence(directory / "results.yaml", at_shutdown)


def check_convergence(path, results):
    """The convergence entry of robot-dynid hydraulic identify's results (schema v1): samples until the estimates
    settle, within the samples used (the published estimates converged over the last 10 s), and their time at
    the 50 Hz the messages were stamped at."""
    entries = yaml.safe_load(path.read_text())["cylinders"]
    assert [sorted(entry["convergence"]) for entry in entries] == [["band", "samples", "time"]] * 2
    for result in results.values():
        assert 0 < result.convergence_samples < result.n_samples - 10.0 * RATE
        assert result.convergence_time == pytest.approx(result.convergence_samples / RATE, rel=1e-6)


def test_started_as_the_launch_file_starts_it_with_the_installed_configuration(tmp_path, graph):
    """config/hydraulic_identifier.yaml (the curtain-wall arm's six cylinders) in a namespace, the input
    remapped outside it, best-effort QoS and use_sim_time: what the ROS graph reports."""
    namespace, driver = f"/hyd_ns_{os.getpid()}", f"/driver_{os.getpid()}/cylinders"
    config = pathlib.Path(sys.prefix) / "share" / "robot_dynid" / "config" / "hydraulic_identifier.yaml"
    process = start_node("hydraulic_identifier", "--params-file", str(config), "-r", f"__ns:={namespace}",
                         "-r", f"hydraulic_cylinder_states:={driver}", "-p", "qos:=best_effort",
                         "-p", "use_sim_time:=true", "-p", f"results_file:={tmp_path / 'r.yaml'}",
                         log_path=tmp_path / "node.log")
    try:
        graph.spin_until(lambda: (namespace, "hydraulic_identifier") in {
            (info.node_namespace, info.node_name) for info in graph.node.get_subscriptions_info_by_topic(driver)},
            what="the node subscribing (its name known)")   # the graph learns endpoint names later
        (subscription,) = graph.node.get_subscriptions_info_by_topic(driver)
        assert (subscription.node_namespace, subscription.node_name) == (namespace, "hydraulic_identifier")
        assert subscription.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        graph.spin_until(lambda: graph.node.count_publishers(f"{namespace}/hydraulic_estimates")
                         and graph.node.count_publishers(f"{namespace}/hydraulic_identification_status"),
                         what="estimates and status in the namespace")
        client = graph.node.create_client(GetParameters, f"{namespace}/hydraulic_identifier/get_parameters")
        values = graph.call(client, GetParameters.Request(names=["use_sim_time", "cylinder_names", "piston_masses"]))
        assert values.values[0].bool_value is True
        assert list(values.values[1].string_array_value) == [f"cylinder_{k}" for k in range(1, 7)]
        table = reference_table("curtain_wall_arm.yaml")["cylinders"]
        assert list(values.values[2].double_array_value) == table["piston_mass_kg"]
    finally:
        assert stop_node(process) == 0, (tmp_path / "node.log").read_text()
    assert "nothing to write" in (tmp_path / "node.log").read_text() and not (tmp_path / "r.yaml").exists()
