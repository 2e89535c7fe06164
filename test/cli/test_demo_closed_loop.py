"""robot-dynid demo --closed-loop: the ROS demo's identification on MuJoCo (the 16 s test plan), then a 2 s held-out
motion through the feedforward node into controlled arms. Checked against what the physics and the definitions
fix, not against the demo's own numbers: feed-forward shrinks the error on the joints gravity loads, the PD alone
supplies the same torque the feed-forward arms get from both, the default gains are critically damped at 5 Hz,
the payload is fixed and served at the stamp sent with both, the path's latency is positive and short. Not
collected without mujoco or ROS 2 (test/conftest.py)."""
import json
import math

import numpy as np
import pytest
import yaml

from robot_dynid.cli import main
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from short_plan import write_short_plan


def test_closed_loop_demo_reports_tracking_latency_and_goals(tmp_path, capsys):
    pytest.importorskip("rclpy")
    robot = load_robot(find_package_file("config", "robots", "er3a_mujoco.yaml"))
    write_short_plan(robot, tmp_path / "plan.yaml", seed=3)
    (tmp_path / "short.yaml").write_text(yaml.safe_dump(
        {"experiment_runner": {"ros__parameters": {"plan_file": str(tmp_path / "plan.yaml"), "start_delay": 1.0}}}))
    out = tmp_path / "demo"
    assert main(["demo", "--closed-loop", "--closed-loop-duration", "2", "--out", str(out), "--seed", "3",
                 "--params-file", str(tmp_path / "short.yaml"), "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)["closed_loop"]
    assert "goals (issue 34)" in captured.err and "forward path latency" in captured.err
    assert json.loads((out / "report" / "closed_loop.json").read_text()) == result
    page = (out / "report" / "closed_loop.html").read_text()
    assert "closed_loop_nominal.png" in page and (out / "report" / "closed_loop_warmup.png").is_file()
    assert result["units"]["error"] == "rad" and result["joint_names"] == list(robot.joint_names)

    gains = result["gains"]       # kp = I w^2, kd = 2 zeta I w: kp / kd = w / (2 zeta) on every joint
    np.testing.assert_allclose(np.array(gains["kp"]) / np.array(gains["kd"]), 2 * math.pi * 5.0 / 2.0, rtol=1e-9)
    runs = result["runs"]
    gravity = [result["joint_names"].index(name) for name in result["gravity_joints"]]
    assert {"j2", "j3"} <= set(result["gravity_joints"]) and "j1" not in result["gravity_joints"]
    pd, forward = np.array(runs["baselines/pd"]["rms_error"]), np.array(runs["nominal/forward"]["rms_error"])
    trajectory = np.array(runs["nominal/trajectory"]["rms_error"])
    assert np.all(pd[gravity] > 3.0 * forward[gravity]) and np.all(pd[gravity] > 5.0 * trajectory[gravity])
    # the same motion needs the same torque, from the PD alone or mostly from the feed-forward
    np.testing.assert_allclose(runs["nominal/forward"]["rms_torque"][1:3], runs["baselines/pd"]["rms_torque"][1:3],
                               rtol=0.05)
    assert np.all(np.array(runs["nominal/trajectory"]["rms_feedback"])[gravity]
                  < 0.2 * np.array(runs["baselines/pd"]["rms_feedback"])[gravity])

    payload = result["payload"]
    assert payload["mass"] == 2.0 and 0.8 < payload["sent"] <= payload["answered"] < 1.5
    assert payload["served"] == pytest.approx(payload["sent"] + 0.1, abs=0.005)     # the stamp sent with both
    latency = result["latency"]
    assert latency["matched"] > 0.5 * result["cycles"]["references_per_second"] * 2.0
    assert 0.0 <= latency["delivered"]["p50"] <= latency["applied"]["p50"] < 0.02
    assert result["cycles"]["integrated"] >= 2000 and result["cycles"]["skipped"] == 0
    assert len(result["goals"]) == 9 and all(isinstance(goal["passed"], bool) for goal in result["goals"])
