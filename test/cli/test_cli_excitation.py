"""robot-dynid excitation check / optimize and robot-dynid protocol, called in-process."""
import json
import math

import numpy as np
import pytest
import yaml

from robot_dynid.cli import main
from robot_dynid.experiment.protocol import load_plan
from robot_dynid.experiment.trajectories import FourierTrajectory, load_trajectory
from robot_dynid.experiment.trajectory_checks import check_trajectory
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file

ER3A = str(find_package_file("config", "robots", "er3a.yaml"))
THESIS = str(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
WALKER = str(find_package_file("config", "trajectories", "walker_table_1.yaml"))
CURTAIN_WALL_ARM = find_package_file("config", "robots", "curtain_wall_arm.yaml")
CYLINDER = {"piston_mass": 4.595, "damping": 2000.0, "area_a": 1.2566e-3, "area_b": 8.765e-4}     # kg, N s/m, m^2


def write_robot(path, n_joints, velocity=3.0, acceleration=10.0, limit=2.5):
    joints = [{"name": f"j{i + 1}", "a": 0.4, "alpha": 0.0, "d": 0.0,
               "position_limits": [-limit, limit], "velocity_limit": velocity,
               "acceleration_limit": acceleration} for i in range(n_joints)]
    path.write_text(yaml.safe_dump({
        "name": "planar", "dh_convention": "standard",
        "base": {"a": 0.0, "alpha": math.pi / 2, "d": 0.0, "theta": 0.0}, "joints": joints}))
    return str(path)


def test_check_prints_a_table_and_passes_the_thesis_trajectory(capsys):
    assert main(["excitation", "check", "--robot", ER3A, "--trajectory", THESIS]) == 0
    out = capsys.readouterr().out
    assert "OK: within all limits, rest to rest" in out
    for name in ("j1", "j6"):
        assert name in out


def test_check_json_reports_the_walker_start_acceleration(tmp_path, capsys):
    robot = write_robot(tmp_path / "walker.yaml", 7, velocity=20.0, acceleration=50.0, limit=6.5)
    code = main(["excitation", "check", "--robot", robot, "--trajectory", WALKER, "--json"])
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    kinds = {v["kind"] for v in report["violations"]}
    assert "start_acceleration" in kinds and "start_velocity" not in kinds
    assert len(report["joints"]) == 7


def test_check_errors_are_one_line_with_exit_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("type: fourier\njoints: [j1]\nperiod: 1\nq0: [0]\na: [[1]]\nb: [[1]]\nwf: 3\n")
    assert main(["excitation", "check", "--robot", ER3A, "--trajectory", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "unknown key(s) ['wf'] in a fourier trajectory" in err


def test_optimize_writes_a_design_within_the_limits(tmp_path, capsys):
    robot_path = write_robot(tmp_path / "planar.yaml", 2)
    out = tmp_path / "design.yaml"
    code = main(["excitation", "optimize", "--robot", robot_path, "--harmonics", "3",
                 "--period", "4", "--criterion", "frobenius", "--starts", "1",
                 "--iterations", "15", "--seed", "2", "--out", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    assert "start 1/1 iteration 1:" in captured.err
    assert "peak speed / velocity limit per joint" in captured.out
    design = load_trajectory(out)
    assert isinstance(design, FourierTrajectory) and design.harmonics == 3
    assert check_trajectory(load_robot(robot_path), design, n_points=4001, tolerance=1e-6).ok
    reported = {line.split()[0]: float(line.split()[1])
                for line in captured.out.splitlines() if line.startswith("  j")}
    check = check_trajectory(load_robot(robot_path), design, n_points=601)
    for joint in check.joints:
        assert reported[joint.name] == pytest.approx(joint.qd_fraction, abs=2e-3)


def test_protocol_prints_stages_and_writes_a_plan(tmp_path, capsys):
    out = tmp_path / "plan.yaml"
    code = main(["protocol", "--robot", ER3A, "--cycle-count", "3", "--excitation", THESIS,
                 "--warmup-duration", "60", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "er3a: 3 cycles of" in text and "warmup" in text and "stroke" in text
    plan = load_plan(out)
    assert plan.cycles == 3
    assert plan.stage_durations()["warmup"] == pytest.approx(60.0)
    fourier = [row for row in plan.cycle_stages if row.label == "fourier"]
    excitation = load_trajectory(THESIS)
    t = np.array([fourier[0].start_time + 3.3])
    np.testing.assert_allclose(plan.trajectory.evaluate(t)[0][0],
                               excitation.evaluate(np.array([3.3]))[0][0], atol=1e-12)


def test_protocol_rejects_an_excitation_for_other_joints(capsys):
    assert main(["protocol", "--robot", ER3A, "--excitation", WALKER]) == 2
    assert "excitation joints" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["excitation", "--help"], ["excitation", "check", "--help"],
                                  ["excitation", "optimize", "--help"], ["protocol", "--help"]])
def test_every_subcommand_has_help(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: robot-dynid" in capsys.readouterr().out


def write_cylinders(path, attachments):
    """A cylinder file at ``path``: one cylinder of :data:`CYLINDER` per ``(name, attachment or None)``."""
    path.write_text(yaml.safe_dump({"cylinders": [{"name": name, **CYLINDER, **({} if attachment is None else {
        "attachment": attachment})} for name, attachment in attachments]}))
    return path


def cylinder_protocol(tmp_path, attachments, amplitude):
    """``robot-dynid protocol`` arguments for the curtain-wall arm with the cylinders of ``attachments``
    (tmp_path/c.yaml) and a one-cycle cylinder stage of ``amplitude`` [m] at 0.5 rad/s, written to
    tmp_path/plan.yaml."""
    stage = tmp_path / "s.yaml"
    stage.write_text(yaml.safe_dump({"amplitude": amplitude, "angular_frequency": 0.5, "cycles": 1}))
    return ["protocol", "--robot", CURTAIN_WALL_ARM, "--cycle-count", "1", "--warmup-duration", "0",
            "--speed-fractions", "0.5", "--cylinders", write_cylinders(tmp_path / "c.yaml", attachments),
            "--cylinder-stage", stage, "--out", tmp_path / "plan.yaml"]


def test_protocol_plays_the_cylinder_stage_of_the_configured_cylinders(tmp_path, capsys):
    """Moment arms come from the cylinder configuration; the joint amplitude is A / r."""
    arguments = cylinder_protocol(tmp_path, [("boom", {"joint": "j2", "moment_arm": 0.12}), ("spare", None)], 0.006)
    assert main([str(a) for a in arguments]) == 0, capsys.readouterr().err
    plan = load_plan(tmp_path / "plan.yaml")
    sine = next(row for row in plan.stages if row.kind == "cylinder" and row.label == "sine")
    assert sine.joint == "j2" and sine.duration == pytest.approx(2 * math.pi / 0.5)
    q = plan.trajectory.evaluate(np.linspace(sine.start_time, sine.end_time, 201))[0][:, 1]
    assert np.ptp(q) == pytest.approx(2 * 0.006 / 0.12, rel=1e-6)
    assert "cylinder" in capsys.readouterr().out
    assert main([str(a) for a in arguments[:-4]]) == 2
    assert "--cylinders and --cylinder-stage go together" in capsys.readouterr().err


def test_protocol_plans_a_cylinder_attached_at_two_points_and_refuses_one_across_two_joints_or_unknown_links(
        tmp_path, capsys):
    """The rod displacement of the planned motion, from the attachment points, is x_c + A sin(w t). A link the
    robot lacks is named (it was a bare ValueError, reported as an internal error)."""
    from robot_dynid.hydraulics.attachment import CylinderGeometry, attachment_from_dict

    robot = load_robot(CURTAIN_WALL_ARM)
    attachment = {"base": {"link": "j1", "point": [0.0, -0.2, 0.0]}, "rod": {"link": "j2", "point": [-0.6, 0.1, 0.0]},
                  "reference_length": 0.5}
    arguments = cylinder_protocol(tmp_path, [("boom", attachment)], 0.01)
    assert main([str(a) for a in arguments]) == 0, capsys.readouterr().err
    plan = load_plan(tmp_path / "plan.yaml")
    sine = next(row for row in plan.stages if row.kind == "cylinder" and row.label == "sine")
    assert sine.joint == "j2"
    tau = np.linspace(0.0, sine.duration, 201)
    x = CylinderGeometry(robot, [attachment_from_dict(attachment)], ["boom"]).displacement(
        plan.trajectory.evaluate(sine.start_time + tau)[0])[:, 0]
    np.testing.assert_allclose(x, x[0] + 0.01 * np.sin(0.5 * tau), rtol=0, atol=1e-6)
    attachment["base"]["link"] = "world"
    write_cylinders(tmp_path / "c.yaml", [("boom", attachment)])
    assert main([str(a) for a in arguments]) == 2
    assert ("cylinder 'boom' joins links 'world' and 'j2', between which joints ['j1', 'j2'] all change its length"
            in capsys.readouterr().err)
    attachment["base"]["link"] = "elbow"
    write_cylinders(tmp_path / "c.yaml", [("boom", attachment)])
    (tmp_path / "plan.yaml").unlink()
    assert main([str(a) for a in arguments]) == 2
    error = capsys.readouterr().err
    assert ("cylinder 'boom': attachment lists unknown joint(s) ['elbow']; robot 'curtain_wall_arm' has "
            "['j1', 'j2', 'j3', 'j4', 'j5', 'j6']") in error, error
    assert "internal error" not in error and not (tmp_path / "plan.yaml").exists()
