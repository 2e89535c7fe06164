"""robot-dynid hydraulic identify on CSV and bag files, --stage/--cycles by stage markers or CSV columns, --json,
bad input.

Expected values: the paper's Table V converted to SI in this file (fv x 1000, fs x 10), not the code's own.
"""
import json
import math

import numpy as np
import pytest
import yaml

from robot_dynid.cli import main
from robot_dynid.hydraulics.cylinder import CylinderParameters, HydraulicCylinder, simulate_cylinder
from robot_dynid.recordings.bag_files import ensure_type
from robot_dynid.recordings.bag_io import BagWriter

AREA_A = math.pi * 0.020**2
AREA_B = AREA_A - math.pi * 0.011**2
TRUTH = {"boom": (3000.0, 20.77, 7.83 * 1000, -15.15 * 10), "stick": (3000.0, 8.73, 2.23 * 1000, -5.18 * 10)}
MASS = {"boom": 4.595, "stick": 1.937}
RATE = 50.0
NOISE = 1e3     # Pa
T0_NS = 1_700_000_000_000_000_000


def config(tmp_path, cylinders=("boom", "stick")):
    path = tmp_path / "C.yaml"
    path.write_text(yaml.safe_dump({"cylinders": [
        {"name": name, "piston_mass": MASS[name], "damping": 2000.0, "area_a": AREA_A, "area_b": AREA_B}
        for name in cylinders]}))
    return path


def simulate(duration=252.0, seed=0):
    """Per cylinder (time, x [m], xd [m/s], p_a, p_b [Pa], load [N])."""
    rng = np.random.default_rng(seed)
    time = np.arange(0.0, duration, 1.0 / RATE)
    omegas, amplitudes = np.array([0.05, 0.3, 2.3]), np.array([0.006, 0.02, 0.005])
    phase = np.multiply.outer(time, omegas)
    x, xd, xdd = np.sin(phase) @ amplitudes, np.cos(phase) @ (amplitudes * omegas), \
        -np.sin(phase) @ (amplitudes * omegas**2)
    data = {}
    for name, truth in TRUTH.items():
        load = 100.0 + 20.0 * np.sin(0.7 * time)
        pressures = simulate_cylinder(HydraulicCylinder(MASS[name], 2000.0, AREA_A, AREA_B),
                                      CylinderParameters(*truth), x, xd, xdd, load=load)
        data[name] = (time, x, xd, pressures.p_a + NOISE * rng.normal(size=time.size),
                      pressures.p_b + NOISE * rng.normal(size=time.size), load)
    return data


def write_csv(path, data, columns=("x", "pa", "pb", "load"), scale=None):
    time = next(iter(data.values()))[0]
    index = {"x": 1, "xd": 2, "pa": 3, "pb": 4, "load": 5}
    header, blocks = ["time"], [time]
    for name, values in data.items():
        for column in columns:
            header.append(f"{column}.{name}")
            blocks.append(values[index[column]] * (scale or {}).get(column, 1.0))
    np.savetxt(path, np.column_stack(blocks), delimiter=",", header=",".join(header), comments="")
    return path


def check_results(path, tolerance=0.05):
    results = yaml.safe_load(path.read_text())
    assert results["schema"] == "robot_dynid/cylinder_results"
    for entry in results["cylinders"]:
        truth = TRUTH[entry["name"]]
        for key, expected in zip(("fc", "fv", "fs"), truth[1:]):
            assert entry[key] == pytest.approx(expected, rel=tolerance), (entry["name"], key)
            assert abs(entry[key] - expected) < 3.0 * entry["std"][key]
        assert entry["residual_rms"] == pytest.approx(NOISE * math.hypot(AREA_A, AREA_B), rel=0.1)
    return results


@pytest.fixture(scope="module")
def data():
    return simulate()


@pytest.mark.parametrize("method", ["rls", "ls"])
def test_csv_identifies_table_v_friction(tmp_path, data, method, capsys):
    csv = write_csv(tmp_path / "bench.csv", data)
    out = tmp_path / "cylinders.yaml"
    assert main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(csv),
                 "--method", method, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "boom" in printed and "residual RMS [N]" in printed
    results = check_results(out)
    assert all(entry["method"] == method for entry in results["cylinders"])
    curve = np.loadtxt(tmp_path / "cylinders_stribeck.csv", delimiter=",", skiprows=1)
    header = (tmp_path / "cylinders_stribeck.csv").read_text().splitlines()[0]
    assert header == "velocity,friction.boom,friction.stick"
    # the curve at +-10 mm/s is the paper's friction law there: fc + fv v + fs cbrt(v)
    v = 0.01
    expected = 20.77 + 7830.0 * v - 151.5 * v ** (1 / 3)
    assert np.interp(v, curve[:, 0], curve[:, 1]) == pytest.approx(expected, rel=0.02)
    assert np.interp(-v, curve[:, 0], curve[:, 1]) == pytest.approx(-expected, rel=0.02)


def write_bag(bag, data, unmodelled_load=None, stages=()):
    """HydraulicCylinderState of ``data`` (both cylinders per message), the cap-side pressures raised by
    ``unmodelled_load`` (N,) [N] that the messages' external_load leaves out, and ExperimentStage markers
    ``stages``: (kind, cycle, start [s], end [s])."""
    with BagWriter(bag) as writer:
        msgtype = "robot_dynid/msg/HydraulicCylinderState"
        ensure_type(writer.typestore, msgtype)
        message_class = writer.typestore.types[msgtype]
        time = data["boom"][0]
        extra = np.zeros(time.size) if unmodelled_load is None else unmodelled_load / AREA_A   # [Pa]
        for k in range(time.size):
            stamp = T0_NS + int(round(time[k] * 1e9))
            names = list(data) if k % 2 else list(data)[::-1]          # the order changes between messages
            rows = [data[name] for name in names]
            writer.write("/hydraulic_cylinder_states", msgtype, message_class(
                header=writer.header(stamp), name=names,
                position=np.array([row[1][k] for row in rows]), velocity=np.array([row[2][k] for row in rows]),
                pressure_a=np.array([row[3][k] + extra[k] for row in rows]),
                pressure_b=np.array([row[4][k] for row in rows]),
                external_load=np.array([row[5][k] for row in rows])), stamp)
        for kind, cycle, start, end in stages:
            writer.write_stage(T0_NS + int(round(start * 1e9)), kind, cycle, True)
            writer.write_stage(T0_NS + int(round(end * 1e9)), kind, cycle, False)
    return bag


def test_bag_and_json(tmp_path, data, capsys):
    bag = write_bag(tmp_path / "bag", data)
    out = tmp_path / "cylinders.yaml"
    assert main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(bag),
                 "--json", "--out", str(out), "--curve", str(tmp_path / "curve.csv")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["results_file"] == str(out) and printed["curve_file"] == str(tmp_path / "curve.csv")
    assert [entry["name"] for entry in printed["cylinders"]] == ["boom", "stick"]
    results = check_results(out)
    assert printed["cylinders"] == results["cylinders"]
    assert all(entry["convergence"]["samples"] > 0 for entry in results["cylinders"])


@pytest.mark.parametrize("columns, scale, cylinders, message", [
    (("x", "pa", "pb", "load"), {"pa": 1e-6, "pb": 1e-6}, ("boom", "stick"),
     r"column pa.boom of cylinder 'boom' peaks at .* Pa, below 10000 Pa .*: it looks like MPa or bar"),
    (("x", "pa", "pb", "load"), {"pa": 1e-2, "pb": 1e-2}, ("boom", "stick"), r"pa.boom .* it looks like bar \("),
    (("x", "pa", "pb", "load"), {"x": 1000.0}, ("boom", "stick"),
     r"column x.boom of cylinder 'boom' exceeds 5 m .* it looks like mm"),
    (("x", "pa", "load"), None, ("boom", "stick"),
     r"bench.csv is missing column\(s\) \['pb.boom'\]; cylinder 'boom' needs \['x.boom', 'pa.boom', 'pb.boom'\] "
     r"\(x \[m\], pa and pb \[Pa\]\)$"),
    (("x", "pa", "pb"), None, ("boom",),
     r"bench.csv lists unknown cylinder\(s\) \['stick'\]; the configuration has \['boom'\]$"),
])
def test_bad_input_is_one_line_naming_the_cylinder(tmp_path, data, capsys, columns, scale, cylinders, message):
    csv = write_csv(tmp_path / "bench.csv", data, columns, scale)
    status = main(["hydraulic", "identify", "--config", str(config(tmp_path, cylinders)), "--data", str(csv),
                   "--out", str(tmp_path / "c.yaml")])
    error = capsys.readouterr().err
    assert status == 2 and len(error.strip().splitlines()) == 1
    assert __import__("re").search(message, error), error


def test_pressures_in_bar_and_areas_in_mm2(tmp_path, data, capsys):
    csv = write_csv(tmp_path / "bench.csv", {"boom": data["boom"]})
    bad = yaml.safe_load(config(tmp_path, ("boom",)).read_text())
    bar = write_csv(tmp_path / "bar.csv", {"boom": data["boom"]}, scale={"pa": 1e-5, "pb": 1e-5})
    assert main(["hydraulic", "identify", "--config", str(config(tmp_path, ("boom",))), "--data", str(bar),
                 "--out", str(tmp_path / "c.yaml")]) == 2
    bad["cylinders"][0]["area_a"] = AREA_A * 1e6
    (tmp_path / "mm.yaml").write_text(yaml.safe_dump(bad))
    assert main(["hydraulic", "identify", "--config", str(tmp_path / "mm.yaml"), "--data", str(csv),
                 "--out", str(tmp_path / "c.yaml")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert "looks like" in errors[0] and "area_a = 1256.64 m^2" in errors[1] and "looks like mm^2" in errors[1]
    with pytest.raises(SystemExit, match="2"):
        main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(csv),
              "--forgetting", "1.5", "--out", str(tmp_path / "c.yaml")])
    assert "--forgetting must be finite and in (0, 1] [1], got 1.5" in capsys.readouterr().err


def deviations(path):
    """Largest relative deviation of fc, fv, fs from the truth over the cylinders of a results file."""
    entries = yaml.safe_load(path.read_text())["cylinders"]
    return max(abs(entry[key] / expected - 1.0) for entry in entries
               for key, expected in zip(("fc", "fv", "fs"), TRUTH[entry["name"]][1:]))


@pytest.fixture(scope="module")
def staged():
    """Two cycles of a warm-up (40 s) then the cylinder stage (126 s, one period of the 0.05 rad/s sine); during
    the warm-ups the cylinders push a load of 400 + 300 sin(1.3 t) N [N] that the data do not report.
    Returns the data, that load, and the warm-up samples."""
    data = simulate(duration=332.0, seed=3)
    k = np.round(data["boom"][0] * RATE).astype(int)
    warmup = (k < 2000) | ((k >= 8300) & (k < 10300))          # [0, 40) and [166, 206) s
    return data, np.where(warmup, 400.0 + 300.0 * np.sin(1.3 * data["boom"][0]), 0.0), warmup


def test_stage_and_cycles_select_the_cylinder_stages_of_a_bag(tmp_path, capsys, staged):
    data, unmodelled, _ = staged
    last = data["boom"][0][-1]
    bag = write_bag(tmp_path / "bag", data, unmodelled, stages=[
        ("warmup", 0, 0.0, 40.0), ("cylinder", 0, 40.0, 166.0), ("warmup", 1, 166.0, 206.0),
        ("cylinder", 1, 206.0, last)])

    def identify(name, *options):
        out = tmp_path / f"{name}.yaml"
        status = main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(bag),
                       *options, "--out", str(out)])
        return status, out

    status, selected = identify("selected", "--stage", "cylinder")
    assert status == 0
    results = check_results(selected)
    # a sample on a boundary belongs to the stage starting there: 2 x 126 s at 50 Hz
    assert [entry["n_samples"] for entry in results["cylinders"]] == [2 * 6300] * 2
    assert results["provenance"]["segments"] == {"stage": ["cylinder"], "cycles": "all"}
    status, everything = identify("everything")
    assert status == 0 and deviations(everything) > 0.5      # the unmodelled load lands in the friction
    status, second = identify("second", "--stage", "cylinder", "--cycles", "1")
    assert status == 0
    assert [entry["n_samples"] for entry in yaml.safe_load(second.read_text())["cylinders"]] == [6300] * 2
    assert deviations(second) < 0.05
    capsys.readouterr()

    status, _ = identify("friction", "--stage", "friction")
    error = capsys.readouterr().err
    assert status == 2 and len(error.strip().splitlines()) == 1
    assert "cylinder 'boom' with stage in ['friction']" in error and "available stages: ['cylinder', 'warmup']" in error
    plain = write_bag(tmp_path / "plain", {name: tuple(values[:500] for values in data[name]) for name in data})
    assert main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(plain),
                 "--stage", "cylinder", "--out", str(tmp_path / "c.yaml")]) == 2
    assert "no stage markers: topic '/experiment_stage' has no messages" in capsys.readouterr().err


def test_stage_and_cycle_columns_select_the_cylinder_stages_of_a_csv(tmp_path, capsys, staged):
    """The labels of the bag test as CSV columns, set from the sample index (the unmodelled load in pa)."""
    data, unmodelled, warmup = staged
    time = data["boom"][0]
    loaded = {name: (values[0], values[1], values[2], values[3] + unmodelled / AREA_A, *values[4:])
              for name, values in data.items()}
    numbers = write_csv(tmp_path / "numbers.csv", loaded).read_text().splitlines()
    stage = np.where(warmup, "warmup", "cylinder")
    cycle = np.where(time < 166.0 - 0.5 / RATE, 0, 1)
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("\n".join([numbers[0] + ",stage,cycle"] + [
        f"{line},{label},{index}" for line, label, index in zip(numbers[1:], stage, cycle)]) + "\n")

    def identify(name, csv, *options):
        out = tmp_path / f"{name}.yaml"
        status = main(["hydraulic", "identify", "--config", str(config(tmp_path)), "--data", str(csv),
                       *options, "--out", str(out)])
        return status, out

    status, selected = identify("selected", labelled, "--stage", "cylinder")
    assert status == 0
    results = check_results(selected)
    assert [entry["n_samples"] for entry in results["cylinders"]] == [2 * 6300] * 2
    status, everything = identify("everything", labelled)
    assert status == 0 and deviations(everything) > 0.5
    status, second = identify("second", labelled, "--stage", "cylinder", "--cycles", "1")
    assert status == 0
    assert [entry["n_samples"] for entry in yaml.safe_load(second.read_text())["cylinders"]] == [6300] * 2
    assert deviations(second) < 0.05
    capsys.readouterr()

    assert identify("unlabelled", tmp_path / "numbers.csv", "--cycles", "1")[0] == 2
    error = capsys.readouterr().err
    assert "numbers.csv, cylinder 'boom' has no cycle labels; cannot select cycles [1]" in error
    lines = labelled.read_text().splitlines()
    lines[5] = lines[5].replace(",cylinder,", ",cylindre,").replace(",warmup,", ",warmpu,")
    labelled.write_text("\n".join(lines) + "\n")
    assert identify("misspelt", labelled, "--stage", "cylinder")[0] == 2
    error = capsys.readouterr().err
    assert "labelled.csv, line 6: column 'stage'" in error and len(error.strip().splitlines()) == 1
