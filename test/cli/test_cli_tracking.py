"""robot-dynid report --tracking: the friction of a model tracked over a bag, plotted against time."""
import json

import numpy as np
import pytest

from robot_dynid.cli import main
from robot_dynid.experiment.simulation import SimulatedRobot, simulation_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.bag_io import BagWriter
from tracked_arm import stepped_viscous, tracked_model

RATE, DURATION, STEP_AT, NOISE = 100.0, 40.0, 10.0, 0.05       # Hz, s, s, N m


def test_report_tracking_follows_a_viscous_step_recorded_in_a_bag(tmp_path, capsys):
    robot_file = find_package_file("config", "robots", "er3a.yaml")
    robot = load_robot(robot_file)
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    parameters = simulation_parameters(regressor, seed=1)
    model_file = tracked_model(robot, regressor, parameters, NOISE).save(tmp_path / "model.yaml")
    stepped, viscous = stepped_viscous(regressor, parameters, 1.3)
    t = np.arange(0.0, DURATION, 1.0 / RATE)
    w = np.linspace(0.5, 1.1, robot.n_joints)
    arrays = robot.limit_arrays()
    lower, upper = arrays.lower, arrays.upper
    amplitude = np.minimum(0.4 * (upper - lower), 0.3 * arrays.velocity / w)
    q = (lower + upper) / 2 + amplitude * np.sin(w * t[:, None])
    qd, qdd = amplitude * w * np.cos(w * t[:, None]), -amplitude * w ** 2 * np.sin(w * t[:, None])
    after = t >= STEP_AT
    tau = SimulatedRobot(regressor, parameters, NOISE).torques(q, qd, qdd, rng=3)
    tau[after] = SimulatedRobot(regressor, stepped, NOISE).torques(q[after], qd[after], qdd[after], rng=4)
    bag = tmp_path / "operation"
    with BagWriter(bag) as writer:
        for k in range(t.size):
            writer.write_joint_state(round((100.0 + t[k]) * 1e9), robot.joint_names, q[k], qd[k], tau[k])
    out = tmp_path / "tracking"
    assert main(["report", "--robot", str(robot_file), "--model", str(model_file), "--data", str(bag),
                 "--out", str(out), "--tracking", "--tracking-forgetting", "0.999", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (out / "tracking.png").stat().st_size > 0 and result["figure"] == str(out / "tracking.png")
    time, tracked = np.array(result["time"]), np.array(result["values"])
    fv = [result["names"].index(f"fv{k}") for k in range(1, robot.n_joints + 1)]
    before = time < STEP_AT
    np.testing.assert_allclose(tracked[before][-1, fv], parameters[viscous], rtol=0.05)
    np.testing.assert_allclose(tracked[-1, fv], stepped[viscous], rtol=0.05)


@pytest.mark.parametrize("value, shown", [("1.5", "1.5"), ("0", "0.0"), ("nan", "nan"), ("abc", "'abc'")])
def test_a_tracking_forgetting_outside_0_1_is_refused_before_any_work(value, shown, capsys):
    """The forgetting factor mu weighs a sample k updates old by mu^k: 0 forgets everything, above 1 grows without
    bound; the parser refuses it in one line naming the argument and the interval."""
    with pytest.raises(SystemExit, match="2"):
        main(["report", "--robot", "any.yaml", "--data", "any.csv", "--tracking", "--tracking-forgetting", value])
    assert (f"argument --tracking-forgetting: the value must be finite and in (0, 1] [1], got {shown}"
            in capsys.readouterr().err)
