"""The identifier node's track_friction mode over DDS (installed executable, own process): joint states of an arm
whose viscous friction is 30 % above its model's; the node publishes a tracked model with the rigid body unchanged
and the viscous friction moved toward the truth, and its status carries the tracked parameters and std."""
import numpy as np

from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from ros_graph import identifier_topics, publish_joint_states, start_identifier, stop_node

ROBOT_FILE = find_package_file("config", "robots", "er3a.yaml")
RATE, NOISE = 100.0, 0.05       # Hz, N m


def test_track_friction_publishes_a_tracked_model_and_its_status(tmp_path, graph):
    robot = load_robot(ROBOT_FILE)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(regressor, seed=1)
    base = compute_base_parameters(regressor)
    values = base.projection @ parameters
    model = DynamicModel(robot, regressor.friction, False, False, base, values, 1e-3 * np.abs(values) + 1e-6,
                         metrics={"residual_rms": dict.fromkeys(robot.joint_names, NOISE), "condition_number": 10.0,
                                  "n_samples": 1000})
    model_file = model.save(tmp_path / "arm.yaml")
    worn = parameters.copy()
    viscous = np.arange(regressor.slices["friction"].start + 1, regressor.slices["friction"].stop, 2)
    worn[viscous] *= 1.3
    process = start_identifier("tracking_identifier", "track", tmp_path / "node.log", "-p", f"robot_file:={ROBOT_FILE}",
                               "-p", f"arm_model_file:={model_file}", "-p", "track_friction:=true",
                               "-p", "tracking_forgetting:=0.995", "-p", "tracking_change:=0.1",
                               "-p", "status_period:=0.2")
    try:
        states, _, models, statuses = identifier_topics(graph, "track")
        t = np.arange(0.0, 20.0, 1.0 / RATE)
        w = np.linspace(0.6, 1.2, robot.n_joints)
        arrays = robot.limit_arrays()
        amplitude = np.minimum(0.4 * (arrays.upper - arrays.lower), 0.3 * arrays.velocity / w)
        q = (arrays.lower + arrays.upper) / 2 + amplitude * np.sin(w * t[:, None])
        qd, qdd = amplitude * w * np.cos(w * t[:, None]), -amplitude * w ** 2 * np.sin(w * t[:, None])
        tau = SimulatedRobot(regressor, worn, NOISE).torques(q, qd, qdd, rng=2)
        publish_joint_states(graph, states, robot.joint_names, 100.0 + t, q, qd, tau)
        graph.spin_until(lambda: models, timeout=60.0, what="a tracked IdentifiedModel")
        graph.spin_until(lambda: statuses[-1].tracking_updates > 0, what="a status with the tracking")
    finally:
        assert stop_node(process) == 0, (tmp_path / "node.log").read_text()
    tracked = DynamicModel.from_yaml(models[-1].artifact_yaml)
    fv = [tracked.base.names.index(f"fv{k}") for k in range(1, robot.n_joints + 1)]
    rigid = [k for k, name in enumerate(base.names) if not name.startswith(("fc", "fv"))]
    np.testing.assert_array_equal(tracked.values[rigid], values[rigid])
    moved = (tracked.values[fv] - values[fv]) / (worn[viscous] - values[fv])
    assert np.all(moved > 0.3), moved           # toward the truth by at least the change fraction's worth
    status = statuses[-1]
    assert list(status.tracked_names)[:2] == ["fc1", "fv1"] and len(status.tracked_std) == 2 * robot.n_joints
    assert all(s > 0 for s in status.tracked_std)
    assert models[0].version == 1 and models[0].robot_name == robot.name
