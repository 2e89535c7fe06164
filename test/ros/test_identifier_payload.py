"""The identifier node on a payload stage: the arm's model fixed (arm_model_file), a stage of kind payload of
joint states whose efforts are pinocchio's RNEA of the UR5 with a 2.8 kg tool at tool0 (0.5 % noise); the
IdentifiedModel that comes back is the arm's model with the payload attached (installed executable, DDS)."""
import dataclasses
import re

import numpy as np
import pytest

from rnea_reference import rnea_urdf_with_payload
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.simulation import plausible_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.msg import ExperimentStage, IdentificationStatus
from robot_dynid.package_files import find_package_file
from ros_graph import identifier_topics, publish_joint_states, stamped, start_identifier, stop_node

ROBOT_FILE = find_package_file("config", "robots", "ur5_urdf.yaml")
RATE = 200.0    # Hz
TOOL = ("tool0", 2.8, np.array([0.01, -0.02, 0.08]),
        np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]]))


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    directory = tmp_path_factory.mktemp("identifier_payload")
    robot = load_robot(ROBOT_FILE)
    parameters = plausible_parameters(robot, seed=1)
    model = DynamicModel.from_standard(robot, parameters, std=1e-3)
    return directory, robot, parameters, model, model.save(directory / "arm.yaml")


def marker(kind, start, seconds):
    return stamped(ExperimentStage(experiment_id="tool change", kind=kind, start=start), seconds)


def test_a_payload_stage_publishes_the_arm_model_with_the_payload(arm, graph):
    directory, robot, parameters, model, model_file = arm
    process = start_identifier("identifier_payload", "tool", directory / "node.log", "-p", f"robot_file:={ROBOT_FILE}",
                               "-p", f"arm_model_file:={model_file}", "-p", "stages:=[payload]",
                               "-p", "payload_frame:=tool0")
    try:
        states, stages, models, statuses = identifier_topics(graph, "tool")
        t = np.arange(0.0, 20.0, 1.0 / RATE)
        trajectory = dataclasses.replace(random_excitation(robot, 5, 10.0, 0.5, seed=3), duration=20.0)
        q, qd, qdd = trajectory.evaluate(t)
        tau = rnea_urdf_with_payload(robot.urdf, parameters, TOOL, q, qd, qdd)
        tau += np.random.default_rng(2).normal(size=tau.shape) * 0.005 * np.sqrt(np.mean(tau**2, axis=0))
        stages.publish(marker(ExperimentStage.KIND_PAYLOAD, True, 500.0 - 0.001))
        publish_joint_states(graph, states, robot.joint_names, 500.0 + t, q, qd, tau)
        stages.publish(marker(ExperimentStage.KIND_PAYLOAD, False, 500.0 + t[-1] + 0.001))
        graph.spin_until(lambda: models, timeout=60.0, what="an IdentifiedModel after the payload stage")
        graph.spin_until(lambda: statuses[-1].state == IdentificationStatus.STATE_CONVERGED, what="the status")
    finally:
        assert stop_node(process) == 0, (directory / "node.log").read_text()
    published = DynamicModel.from_yaml(models[0].artifact_yaml)
    payload = published.payload
    assert payload.frame == "tool0" and abs(payload.mass - TOOL[1]) < 0.01 * TOOL[1]
    assert np.linalg.norm(np.subtract(payload.com, TOOL[2])) < 0.005
    assert published.without_payload().to_yaml() == model.to_yaml()
    message = models[0]
    assert message.version == 1 and message.n_samples == published.metrics["payload"]["n_samples"] < len(t)
    assert max(message.residual_rms) < 0.05 * np.sqrt(np.mean(tau**2))
    assert re.match(r"model version 1 \(payload 2\.(79|80)\d* kg at tool0\) accepted", statuses[-1].message)
    assert statuses[-1].condition_number == pytest.approx(published.metrics["payload"]["condition_number"])
