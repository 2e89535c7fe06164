"""robot-dynid report and compare on a simulated multi-cycle test recorded as a bag with stage markers."""
import contextlib
import io
import json

import numpy as np
import pytest

from robot_dynid.cli import main
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.csv_io import write_csv
from robot_dynid.reports.html import referenced_files
from simulated_test import simulate_test, write_test_bag
import torque_cases
from torque_cases import write_description

ROBOT_FILE = find_package_file("config", "robots", "er3a.yaml")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    robot = load_robot(ROBOT_FILE)
    plan, recording, _, _, _ = simulate_test(robot, cycles=3, speed_fractions=(0.2, 0.6), noise=0.2,
                                             drift=(0.5, 6.0, 0.5, 1.5))
    return write_test_bag(tmp_path_factory.mktemp("report") / "bag", plan, recording)


def test_report_writes_a_page_whose_references_exist_and_whose_figures_are_not_blank(bag, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", "--robot", str(ROBOT_FILE), "--data", str(bag), "--out", str(out), "--warm-cycles", "1",
                 "--pool", "0,1"]) == 0
    printed = capsys.readouterr().out
    assert f"report written to {out / 'index.html'}" in printed
    assert "stamps of " in printed and "uniform 100 Hz grid" in printed      # the simulator's stamps are k / f
    page = (out / "index.html").read_text()
    assert "stamps of " in page
    # the verdict first, after the title: the simulator's wrists (noise 0.2 N m on torques of about 1 N m) have a
    # held-out RSD above 0.2, and as high in training: noise, not a poor fit
    assert page.index('<p id="verdict"') < page.index("<p>robot ")
    assert "verdict: not good enough on 3 of 6 joints: as poor in training (noise, or an effect the model lacks) " \
           "on j4, j5, j6 (held-out RSD up to" in printed, printed
    assert "(noise, or an effect the model lacks)" in printed and "does not carry over" not in printed
    targets = referenced_files(page)
    assert {"torque_identification.png", "torque_held_out.png", "parameters_per_cycle.png", "cross_verification.png",
            "friction_speed.png", "friction_time.png", "model.yaml"} <= set(targets)
    for target in targets:
        assert (out / target).is_file(), target
    import matplotlib.image
    for target in (t for t in targets if t.endswith(".png")):
        pixels = matplotlib.image.imread(out / target)
        assert pixels.shape[0] > 300 and pixels.shape[1] > 300, target
        # non-trivial: many distinct colours, and more than a few percent of the pixels not white
        assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50, target
        assert np.mean(np.any(pixels[..., :3] < 0.9, axis=-1)) > 0.03, target

    summary = json.loads((out / "summary.json").read_text())
    assert summary["held_out_cycles"] == [2]          # the last cycle, held out automatically
    assert [fit["segment"] for fit in summary["torque_fits"]] == ["identification", f"held-out {bag.name}"]
    model = DynamicModel.load(out / "model.yaml")
    assert summary["condition_number"] == pytest.approx(model.metrics["condition_number"])
    cycles = summary["cycles"]
    assert cycles["cycles"] == ["cycle 0", "cycle 1", "cycle 2"] and cycles["skipped"] == 1
    values = np.array(cycles["values"])
    np.testing.assert_allclose(cycles["statistics"]["mean"], values.mean(axis=0))
    np.testing.assert_allclose(cycles["warm_statistics"]["min"], values[1:].min(axis=0))
    assert summary["cross_verification"]["fitted"] == ["cycle 0", "cycle 1", "cycle 2", "cycles 0,1 pooled", "model"]
    levels = {(s["joint"], round(s["speed_fraction"], 3), s["direction"]) for s in summary["friction"]["segments"]}
    assert len(levels) == 6 * 2 * 2
    assert len(summary["friction_drift"]) == 6 and all(d["fit"] is None for d in summary["friction_drift"])


def test_report_json_on_a_given_model_and_compare(bag, tmp_path, capsys):
    model_file = tmp_path / "model.yaml"
    assert main(["identify", "--robot", str(ROBOT_FILE), "--data", str(bag), "--stage", "excitation",
                 "--out", str(model_file)]) == 0
    capsys.readouterr()
    assert main(["report", "--robot", str(ROBOT_FILE), "--data", str(bag), "--model", str(model_file),
                 "--out", str(tmp_path / "r"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["identified_here"] is False and summary["held_out_cycles"] == []
    assert len(summary["stamps"]) == 1 and summary["stamps"][0]["nominal_grid"] is True
    assert summary["stamps"][0]["rate"] == pytest.approx(100.0, rel=1e-4) and summary["stamps"][0]["n_gaps"] == 0
    assert not (tmp_path / "r" / "model.yaml").exists()

    model = DynamicModel.load(model_file)
    values = model.values.copy()
    values[0] += 5.0 * np.hypot(model.std[0], model.std[0])
    values[1] += 0.5 * np.hypot(model.std[1], model.std[1])
    other = DynamicModel(model.robot, model.friction, model.armature, model.offset, model.base, values, model.std)
    other.save(tmp_path / "other.yaml")
    assert main(["compare", str(model_file), str(tmp_path / "other.yaml"), "--json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    flags = {entry["name"]: entry["significant"] for entry in comparison["parameters"]}
    assert flags[model.base.names[0]] is True and flags[model.base.names[1]] is False
    assert sum(flags.values()) == 1
    assert main(["compare", str(model_file), str(tmp_path / "other.yaml"), "--out", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert f"1 significant: {model.base.names[0]}" in printed
    page = (tmp_path / "c" / "index.html").read_text()
    assert all((tmp_path / "c" / target).is_file() for target in referenced_files(page))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """torque_cases' UR5: its description, an unloaded run to identify from, another unloaded run and the loaded
    run of the first one's motion to hold out."""
    directory = tmp_path_factory.mktemp("report_runs")
    files = {"robot": write_description(torque_cases.described(), directory / "ur5_prior.yaml")}
    for name, loaded, seed in (("train", False, 2), ("other", False, 7), ("loaded", True, 2)):
        files[name] = directory / f"{name}.csv"
        write_csv(files[name], torque_cases.run(loaded, seed=seed, source=files[name].name).recording)
    return files


@pytest.fixture(scope="module")
def held_out_report(runs, tmp_path_factory, figure_check):
    """(report directory, model file, what report printed): a model of the unloaded arm reported with two held-out
    files, the other unloaded run and the loaded one (its figures checked as every test's are)."""
    directory = tmp_path_factory.mktemp("held_out_report")
    model, out, printed = directory / "model.yaml", directory / "report", io.StringIO()
    with figure_check(), contextlib.redirect_stdout(io.StringIO()):
        assert main(["identify", "--robot", str(runs["robot"]), "--data", str(runs["train"]),
                     "--out", str(model)]) == 0
    with figure_check(), contextlib.redirect_stdout(printed):
        assert main(["report", "--robot", str(runs["robot"]), "--data", str(runs["train"]), "--model", str(model),
                     "--validate", str(runs["other"]), "--validate", str(runs["loaded"]), "--out", str(out)]) == 0
    return out, model, printed.getvalue()


def test_each_held_out_file_has_its_own_table_and_figure(runs, held_out_report, capsys):
    """A model of the unloaded arm held out on another unloaded run and on the loaded run: the loaded one's
    poor fit is its own table and figure, with the numbers validate gives on that file alone, not averaged
    into one held-out number with the good file."""
    out, model, _ = held_out_report
    summary = json.loads((out / "summary.json").read_text())
    fits = summary["torque_fits"]
    assert [fit["segment"] for fit in fits] == ["identification", "held-out other.csv", "held-out loaded.csv"]
    for fit, name in zip(fits[1:], ("other", "loaded")):
        assert main(["validate", "--model", str(model), "--data", str(runs[name]), "--json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        for joint, metrics in alone["joints"].items():
            assert fit["joints"][joint]["rsd"] == pytest.approx(metrics["rsd"], rel=1e-9), (name, joint)
    # the payload's torque is what the unloaded model misses on the loaded run
    shoulder = "shoulder_lift_joint"
    assert fits[2]["joints"][shoulder]["rsd"] > 3.0 * fits[1]["joints"][shoulder]["rsd"]
    page = (out / "index.html").read_text()
    assert {"torque_held_out_1.png", "torque_held_out_2.png"} <= set(referenced_files(page))
    assert "held-out other.csv data (" in page and "held-out loaded.csv data (" in page


def test_report_takes_the_identification_options_identify_takes(runs, tmp_path):
    out = tmp_path / "report"
    assert main(["report", "--robot", str(runs["robot"]), "--data", str(runs["train"]), "--method", "wls",
                 "--friction", "coulomb_viscous", "--no-holdout", "--out", str(out)]) == 0
    model = DynamicModel.load(out / "model.yaml")
    assert model.method == "wls" and model.friction.name == "coulomb_viscous"


PR2_ARM_JOINTS = ("r_shoulder_pan_joint", "r_shoulder_lift_joint", "r_upper_arm_roll_joint", "r_elbow_flex_joint",
                  "r_forearm_roll_joint", "r_wrist_flex_joint", "r_wrist_roll_joint")


def _seven_joint_arm(directory):
    """The shipped Panda description with a PR2 arm's joint names (longer than any shipped robot's)."""
    text = find_package_file("config", "robots", "panda.yaml").read_text()
    for k, name in enumerate(PR2_ARM_JOINTS, start=1):
        text = text.replace(f"panda_joint{k}", name)
    path = directory / "seven_joints.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("arm", ["ur5", "seven_joints"])
def test_report_and_compare_figures_keep_their_text_apart_with_long_joint_names(arm, tmp_path, capsys):
    """Every figure of a report (torque fits, cycles, cross-verification, friction against speed and time) and of
    compare, for the UR5's 6 joints and a 7-joint arm with a PR2's joint names: conftest's
    figures_keep_their_text_apart fails the test on any text that leaves its figure, overlaps another text or runs
    into another panel; the page still references every figure."""
    robot_file = find_package_file("config", "robots", "ur5.yaml") if arm == "ur5" else _seven_joint_arm(tmp_path)
    robot = load_robot(robot_file)
    plan, recording, _, _, _ = simulate_test(robot, cycles=2, speed_fractions=(0.3,), noise=0.05)
    bag = write_test_bag(tmp_path / "bag", plan, recording)
    out = tmp_path / "report"
    assert main(["report", "--robot", str(robot_file), "--data", str(bag), "--out", str(out)]) == 0
    figures = {target for target in referenced_files((out / "index.html").read_text()) if target.endswith(".png")}
    assert {"torque_identification.png", "torque_held_out.png", "parameters_per_cycle.png",
            "cross_verification.png", "friction_speed.png"} <= figures
    assert main(["compare", str(out / "model.yaml"), str(out / "model.yaml"),
                 "--out", str(tmp_path / "compare")]) == 0
    assert {"parameter_differences.png", "friction_models.png"} <= set(
        referenced_files((tmp_path / "compare" / "index.html").read_text()))
    capsys.readouterr()


def test_the_report_page_reads_in_a_browser(held_out_report):
    """The report of a model held out on two files, opened in chromium: every image loads, every link names a file
    that exists, no console error, and the verdict (not good enough on the loaded file's joints) is in the first
    screen; screenshots in test-artifacts/screenshots/."""
    from browser_pages import open_page
    out, _, printed = held_out_report
    visit = open_page(out / "index.html", "report")
    assert visit.console_errors == [] and visit.failed_requests == []
    assert visit.broken_images == [] and visit.missing_links == []
    assert visit.verdict_in_first_screen, visit.screenshot
    assert visit.verdict_text.startswith("Verdict:") and visit.verdict_text[len("Verdict:"):].strip() in printed
