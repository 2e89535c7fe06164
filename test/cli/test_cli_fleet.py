"""robot-dynid fleet on a real Dask cluster: a scheduler and two workers started as separate processes on
loopback (test/dask_cluster.py), a simulated fleet of four UR5 arms whose torques come from pinocchio's RNEA
with hand-written friction (test/simulated_fleet.py).

Arm 1's elbow (joint 3) friction rises by 40 % in week 3. The first run sees weeks 1 and 2 (no change
yet) and a truncated recording; the second a longer manifest with week 3. Expected values come from
the simulation: which arm and joint wear, by how much, and which recordings are new. Every arm runs the same
excitation each week here, so the parameters' comparison (the evidence under the verdicts) flags the same
change; test/core/fleet/test_changes.py has fleets whose trajectories differ.
"""
import html
import json
import re
import shutil
import sqlite3

import numpy as np
import pytest
import yaml

import robot_dynid.fleet.run as fleet_run
from dask_cluster import DaskTestCluster, free_port
from robot_dynid.cli import main
from robot_dynid.reports.html import referenced_files
from simulated_fleet import COULOMB, ROBOT, VISCOUS, Wear, write_fleet, write_manifest

WORN = Wear(arm=1, joint=2, rise=0.4, week=2)
WORN_FRICTION = {"fc3", "fv3"}          # elbow_joint: Coulomb and viscous
RATE = 100.0                             # Hz; 16 s a recording


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with DaskTestCluster(workers=2, log_directory=tmp_path_factory.mktemp("dask_logs")) as started:
        yield started


def fleet(args, capsys):
    """Run ``robot-dynid fleet ... --json``: (exit code, parsed JSON or None, stderr)."""
    code = main(["fleet", "--robot", str(ROBOT), *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


@pytest.fixture(scope="module")
def worn_runs(cluster, tmp_path_factory):
    """Both runs on the worn fleet: (first summary, second summary, out dir, identification tasks per run)."""
    directory = tmp_path_factory.mktemp("worn_fleet")
    rows = write_fleet(directory, arms=4, weeks=3, wear=WORN, rate=RATE)
    whole = (directory / "arm0_week0.csv").read_bytes()
    (directory / "truncated.csv").write_bytes(whole[:len(whole) // 3])     # cut in the middle of a row
    truncated = ("arm3", "2026-03-20T08:00:00+00:00", "truncated.csv")
    out = directory / "out"
    summaries, tasks = [], []
    for run, manifest_rows in enumerate((rows[:8] + [truncated], rows + [truncated])):
        manifest = write_manifest(directory / f"fleet{run}.csv", manifest_rows)
        before = cluster.tasks_run("identify_entry")
        code = main(["fleet", "--robot", str(ROBOT), "--manifest", str(manifest), "--scheduler", cluster.address,
                     "--no-reports", "--json", "--out", str(out)])
        assert code == 0
        summaries.append(json.loads((out / "summary.json").read_text()))
        tasks.append(cluster.tasks_run("identify_entry") - before)
    return summaries[0], summaries[1], out, tasks


def test_unchanged_weeks_flag_nothing_and_the_truncated_recording_fails_alone(worn_runs):
    first, _, _, tasks = worn_runs
    assert tasks[0] == 9                                       # 8 recordings and the truncated one, each a task
    assert first["run"]["identified"] == 8 and first["run"]["failed"] == 1
    assert [failure["data"].rsplit("/", 1)[-1] for failure in first["failed"]] == ["truncated.csv"]
    assert "truncated.csv, line" in first["failed"][0]["reason"]
    assert first["verdicts"] == {f"arm{k}": f"arm{k}: no change beyond the fleet's spread (2 recordings)"
                                 for k in range(4)}
    assert first["verdicts"]["arm3"] == first["robots"]["arm3"]["verdict"]
    assert first["wear"]["tests"] == 4 * 1 * 32                 # 4 arms x 1 compared week x 32 indicators
    assert {robot: entry["parameters"]["flagged"] for robot, entry in first["robots"].items()} == \
        {f"arm{k}": [] for k in range(4)}
    assert first["parameters"]["tests"] == 4 * 1 * 48           # 4 arms x 1 compared week x 48 base parameters
    assert all(not entry["parameters"]["far_from_median"] for entry in first["robots"].values())


def test_second_run_identifies_only_the_new_week_and_flags_the_worn_arm_and_joint(worn_runs):
    _, second, _, tasks = worn_runs
    assert tasks[1] == 4                                        # week 3's four recordings; the rest from the database
    assert second["run"]["reused"] == 9 and second["run"]["identified"] == 4
    findings = second["robots"]["arm1"]["wear"]["findings"]
    assert {(finding["joint"], finding["kind"]) for finding in findings} == {("elbow_joint", "friction")}
    for finding in findings:         # 40 % of the simulated Coulomb and viscous friction at the reference speed
        expected = WORN.rise * (COULOMB[WORN.joint] + VISCOUS[WORN.joint] * finding["speed"])
        assert abs(finding["change"] - expected) <= 3 * finding["combined_std"] and finding["unit"] == "N m"
        assert finding["since"].startswith("2026-03-16")
    strongest = findings[0]
    assert second["verdicts"]["arm1"] == (f"arm1: elbow_joint friction {strongest['change_percent']:+.0f} % at "
                                          f"{strongest['speed']:.3g} rad/s ({strongest['change']:+.3g} N m) since "
                                          "2026-03-16")
    assert all(second["verdicts"][f"arm{k}"].startswith(f"arm{k}: no change beyond") for k in (0, 2, 3))
    flagged = {robot: set(entry["parameters"]["flagged"]) for robot, entry in second["robots"].items()}
    assert flagged == {"arm0": set(), "arm1": WORN_FRICTION, "arm2": set(), "arm3": set()}
    elbow = {entry["parameter"]: entry for entry in second["robots"]["arm1"]["parameters"]["friction"]["elbow_joint"]}
    for name in WORN_FRICTION:
        assert elbow[name]["flagged"] and elbow[name]["latest_at"].startswith("2026-03-16")
        assert elbow[name]["change_percent"] == pytest.approx(100 * WORN.rise, abs=5.0)
    assert set(second["robots"]["arm1"]["parameters"]["far_from_median"]) == WORN_FRICTION
    assert second["wear"]["correction"].startswith("Holm") and second["parameters"]["correction"].startswith("Holm")


def test_the_printed_summary_names_each_robots_flagged_parameters_and_those_far_from_the_median(
        worn_runs, cluster, tmp_path, capsys):
    _, _, out, _ = worn_runs
    copy = shutil.copytree(out, tmp_path / "out")          # the database: every recording is taken from it
    assert main(["fleet", "--robot", str(ROBOT), "--manifest", str(out.parent / "fleet1.csv"), "--scheduler",
                 cluster.address, "--no-reports", "--out", str(copy)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("13 recordings: 0 identified, 13 taken from the database, 1 failed\n")
    rows = dict(line.strip().split(": ", 1) for line in printed.split("\nparameters (evidence: ")[1].splitlines()[1:]
                if line.startswith("  "))
    assert rows == {"arm0": "nothing flagged", "arm1": rows["arm1"], "arm2": "nothing flagged",
                    "arm3": "nothing flagged"}
    flagged, far = rows["arm1"].split("; far from the fleet median: ")
    assert set(flagged.split(", ")) == set(far.split(", ")) == WORN_FRICTION


def test_a_given_baseline_model_is_every_robots_reference(worn_runs, cluster, capsys):
    """--baseline MODEL (arm 1's first week, as written by the second run) on the same manifest: nothing is
    identified again, every identified recording of arm 1 is compared with that model, its own first week
    flags nothing and week 3 flags the worn elbow's friction, as against its own first week."""
    _, second, out, _ = worn_runs
    first_week = next(entry["model"] for entry in second["robots"]["arm1"]["recordings"]
                      if entry["recorded_at"].startswith("2026-03-02"))
    manifest = out.parent / "fleet1.csv"
    before = cluster.tasks_run("identify_entry")
    code, summary, _ = fleet(["--manifest", str(manifest), "--scheduler", cluster.address, "--no-reports",
                              "--baseline", str(out / first_week), "--out", str(out)], capsys)
    assert code == 0 and cluster.tasks_run("identify_entry") == before
    arm1 = summary["robots"]["arm1"]
    assert arm1["baseline"] == "model given" and set(arm1["parameters"]["flagged"]) == WORN_FRICTION
    flags = {entry["recorded_at"][:10]: set(entry["flagged_parameters"]) for entry in arm1["recordings"]
             if "flagged_parameters" in entry}
    assert flags == {"2026-03-02": set(), "2026-03-09": set(), "2026-03-16": WORN_FRICTION}
    wear = {entry["recorded_at"][:10]: {name.split(" at ")[0] for name in entry["wear_flagged"]}
            for entry in arm1["recordings"]}
    assert wear == {"2026-03-02": set(), "2026-03-09": set(), "2026-03-16": {"elbow_joint friction"}}
    assert arm1["verdict"].startswith("arm1: elbow_joint friction +") and arm1["verdict"].endswith("since 2026-03-16")


def test_database_holds_every_recording_and_each_models_parameters(worn_runs):
    _, _, out, _ = worn_runs
    with sqlite3.connect(out / "fleet.sqlite") as database:
        statuses = dict(database.execute("SELECT status, count(*) FROM recordings GROUP BY status").fetchall())
        assert statuses == {"identified": 12, "failed": 1}
        model_id, model_file = database.execute(
            "SELECT m.model_id, m.model_file FROM recordings r JOIN models m ON m.model_id = r.model_id "
            "WHERE r.robot_id = 'arm1' AND r.recorded_at LIKE '2026-03-16%'").fetchone()
        rows = database.execute("SELECT name, value, std FROM parameters WHERE model_id = ? ORDER BY position",
                                (model_id,)).fetchall()
        metrics = {(name, joint) for name, joint in database.execute(
            "SELECT name, joint FROM metrics WHERE model_id = ?", (model_id,))}
    table = yaml.safe_load((out / model_file).read_text())["base_parameters"]["table"]
    assert [row[0] for row in rows] == [entry["name"] for entry in table]
    np.testing.assert_allclose([row[1:] for row in rows], [[entry["value"], entry["std"]] for entry in table])
    assert {("condition_number", None), ("holdout_rsd", None), ("rsd", "elbow_joint")} <= metrics
    with sqlite3.connect(out / "fleet.sqlite") as database:
        assert database.execute("PRAGMA user_version").fetchone()[0] == 2
        friction = database.execute(
            "SELECT value, unit FROM wear_indicators WHERE model_id = ? AND name = 'elbow_joint friction at 0.315 "
            "rad/s'", (model_id,)).fetchone()
    assert friction[1] == "N m" and friction[0] == pytest.approx((1 + WORN.rise) * (COULOMB[2] + VISCOUS[2] * 0.315),
                                                                 rel=0.05)


def test_fleet_page_leads_with_the_verdicts_and_shows_every_robot_and_its_figures(worn_runs):
    _, second, out, _ = worn_runs
    page = (out / "index.html").read_text()
    assert page.index('<p id="verdict"') < page.index("Wear verdicts") < page.index("Evidence per robot") \
        < page.index("Parameters (evidence)")
    # the first line names the worn arm (the fixture wears arm1's elbow friction) among the robots changed; the page
    # may be the one of the run against a given baseline (test_a_given_baseline_model_is_every_robots_reference
    # writes to the same folder), where the others differ from that baseline too
    verdict = page[page.index('<p id="verdict"'):page.index("</p>", page.index('<p id="verdict"'))]
    assert re.search(r"\d of 4 robots changed: .*arm1: elbow_joint friction \+\d+ %", verdict), verdict
    assert html.escape(second["verdicts"]["arm1"]) in page and "figures/wear_arm1.png" in page
    assert all(f"arm{k}" in page for k in range(4)) and "truncated.csv" in page
    # recordings named relative to the page (the fleet's folder is the page's parent), never by the machine's path
    assert "<td class=text>../truncated.csv</td>" in page and str(out.parent) not in page
    for target in referenced_files(page):
        assert (out / target).is_file(), target


def test_an_unchanged_fleet_flags_nothing(cluster, tmp_path, capsys):
    rows = write_fleet(tmp_path, arms=4, weeks=3, wear=None, rate=RATE)
    code, summary, _ = fleet(["--manifest", str(write_manifest(tmp_path / "fleet.csv", rows)), "--scheduler",
                              cluster.address, "--no-reports", "--out", str(tmp_path / "out")], capsys)
    assert code == 0
    assert summary["wear"]["tests"] == 4 * 2 * 32 and summary["parameters"]["tests"] == 4 * 2 * 48
    assert summary["verdicts"] == {f"arm{k}": f"arm{k}: no change beyond the fleet's spread (3 recordings)"
                                   for k in range(4)}
    assert {robot: (entry["parameters"]["flagged"], entry["parameters"]["far_from_median"])
            for robot, entry in summary["robots"].items()} == {f"arm{k}": ([], []) for k in range(4)}


def test_a_local_cluster_writes_each_recordings_report_linked_from_the_page(tmp_path, capsys):
    rows = write_fleet(tmp_path, arms=1, weeks=2, wear=None, rate=RATE)
    out = tmp_path / "out"
    code, summary, _ = fleet(["--manifest", str(write_manifest(tmp_path / "fleet.csv", rows)), "--workers", "1",
                              "--out", str(out)], capsys)
    assert code == 0 and summary["run"]["identified"] == 2
    reports = [record["report"] for record in summary["robots"]["arm0"]["recordings"]]
    page = (out / "index.html").read_text()
    for report in reports:
        assert f"{report}/index.html" in referenced_files(page)
        assert "Measured against model torque" in (out / report / "index.html").read_text()
        for target in referenced_files((out / report / "index.html").read_text()):
            assert (out / report / target).is_file()


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fleet_run, "CONNECT_TIMEOUT", 2.0)
    rows = write_fleet(tmp_path, arms=1, weeks=1, rate=RATE)
    address = f"tcp://127.0.0.1:{free_port()}"
    code, _, err = fleet(["--manifest", str(write_manifest(tmp_path / "fleet.csv", rows)), "--scheduler", address,
                          "--out", str(tmp_path / "out")], capsys)
    assert code == 2
    assert err.count("\n") == 1 and f"cannot reach the Dask scheduler at {address}" in err


@pytest.mark.parametrize("argv", [
    ["fleet", "--manifest", "m.yaml", "--output", "out", "--level", "1"],
    ["fleet", "--manifest", "m.yaml", "--output", "out", "--holdout-fraction", "1"],
    ["compare", "a.yaml", "b.yaml", "--level", "1"],
])
def test_a_level_or_fraction_of_one_is_refused_by_the_parser(argv, capsys):
    """A significance level or a held-out fraction lies in the open interval (0, 1): 1 would flag every change or
    hold out every sample. `compare --level` took any positive number and failed later."""
    with pytest.raises(SystemExit, match="2"):
        main(argv)
    err = capsys.readouterr().err
    assert f"argument {argv[-2]}: the value must be finite and in (0, 1)" in err and "got 1.0" in err


def test_a_local_cluster_run_prints_no_dask_log_and_no_traceback(tmp_path):
    """In its own process, as a user runs it: stderr holds no Dask INFO line (about 30 before) and no worker
    traceback at shutdown; with --verbose Dask's INFO lines are back."""
    import subprocess
    import sys
    rows = write_fleet(tmp_path, arms=1, weeks=2, wear=None, rate=RATE)
    manifest = write_manifest(tmp_path / "fleet.csv", rows)
    script = ("import sys; from robot_dynid.cli import main; sys.exit(main(sys.argv[1:]))")
    command = [sys.executable, "-c", script, "fleet", "--robot", str(ROBOT), "--manifest", str(manifest),
               "--workers", "1", "--out", str(tmp_path / "out")]
    quiet = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert quiet.returncode == 0, quiet.stderr
    assert "distributed" not in quiet.stderr and "Traceback" not in quiet.stderr, quiet.stderr
    verbose = subprocess.run(command[:3] + ["--verbose"] + command[3:-1] + [str(tmp_path / "out2")],
                             capture_output=True, text=True, timeout=600)
    assert verbose.returncode == 0 and "distributed" in verbose.stderr, verbose.stderr


def test_the_fleet_page_reads_in_a_browser(worn_runs):
    """The worn fleet's page in chromium: every image loads, every link names a file that exists, no console
    error, and the verdict naming the worn arm is in the first screen; screenshots in test-artifacts/screenshots/."""
    from browser_pages import open_page
    _, _, out, _ = worn_runs
    visit = open_page(out / "index.html", "fleet")
    assert visit.console_errors == [] and visit.failed_requests == []
    assert visit.broken_images == [] and visit.missing_links == []
    assert visit.verdict_in_first_screen, visit.screenshot
    assert "arm1: elbow_joint friction +" in visit.verdict_text
