"""The fleet's results database: a recording's validation motion and a model's wear indicators kept and read back;
a database of schema version 1 upgraded in place with its results reusable; one of an unknown version refused in
one line."""
import datetime
import sqlite3

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.estimation.wear import reference_conditions, wear_indicators
from robot_dynid.fleet.manifest import FleetEntry
from robot_dynid.fleet.run import EntryResult, reference_motions, store_wear_indicators
from robot_dynid.fleet.store import FleetStore
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from simulated_fleet import arm_links, COULOMB, ROBOT, VISCOUS


@pytest.fixture(scope="module")
def model():
    robot = load_robot(ROBOT)
    friction = friction_model("coulomb_viscous")
    base = compute_base_parameters(Regressor(robot, friction))
    standard = np.concatenate([arm_links(robot, 0), np.column_stack([COULOMB, VISCOUS]).ravel()])
    return DynamicModel(robot, friction, False, False, base, base.projection @ standard, np.full(base.rank, 0.01))


def _entry(robot_id, day):
    return FleetEntry(robot_id, datetime.datetime(2026, 3, day, 6, tzinfo=datetime.timezone.utc), f"/{robot_id}.csv")


def _motion(scale, samples=5):
    q = scale * np.arange(samples * 6, dtype=float).reshape(samples, 6)
    return q, 2 * q, 3 * q


def test_validation_motions_are_kept_and_the_earliest_recordings_is_the_reference(tmp_path, model):
    with FleetStore(tmp_path / "fleet.sqlite") as store:
        results = []
        for robot_id, day, motion in (("r2", 9, _motion(1.0)), ("r1", 16, _motion(2.0)), ("r3", 2, None)):
            entry = _entry(robot_id, day)
            model_id = store.add_model(f"content-{robot_id}", "settings", "identified", model=model,
                                       model_file=f"{robot_id}.yaml", validation_motion=motion)
            store.set_recording(entry, "robot.yaml", "settings", f"content-{robot_id}", "identified", "", model_id)
            results.append(EntryResult(entry, "identified"))
        names, q, qd, qdd = store.validation_motion(1)
        assert names == model.joint_names
        np.testing.assert_array_equal(np.stack([q, qd, qdd]), np.stack(_motion(1.0)))
        assert store.validation_motion(3) is None
        motions = reference_motions(store, results)
    (q, qd, qdd, source), = motions.values()
    np.testing.assert_array_equal(q, _motion(1.0)[0])        # r2's (9 March) before r1's (16 March); r3 has none
    assert source == "validation stage of r2 2026-03-09T06:00:00Z"


def test_wear_indicators_are_kept_per_model_with_their_units(tmp_path, model):
    from robot_dynid.fleet.changes import analyse_fleet, FleetRecord
    with FleetStore(tmp_path / "fleet.sqlite") as store:
        records = []
        for day in (2, 9):
            entry = _entry("r1", day)
            model_id = store.add_model(f"content-{day}", "settings", "identified", model=model)
            store.set_recording(entry, "robot.yaml", "settings", f"content-{day}", "identified", "", model_id)
            records.append(FleetRecord("r1", entry.key[1], entry.data, "identified", "", model))
        store_wear_indicators(store, analyse_fleet({"r1": records}))
    expected = wear_indicators(model, reference_conditions(model.robot))
    with sqlite3.connect(tmp_path / "fleet.sqlite") as database:
        rows = database.execute("SELECT name, unit, value, std, reference FROM wear_indicators WHERE model_id = 2 "
                                "ORDER BY position").fetchall()
    assert [row[0] for row in rows] == list(expected.names) and {row[1] for row in rows} == {"N m"}
    np.testing.assert_allclose([row[2:4] for row in rows], np.column_stack([expected.values, expected.std]))
    assert {row[4] for row in rows} == {expected.reference_key}


def test_a_version_1_database_is_upgraded_in_place_and_its_results_reused(tmp_path, model):
    path = tmp_path / "fleet.sqlite"
    with FleetStore(path) as store:
        store.add_model("content", "settings", "identified", model=model, model_file="m.yaml")
    with sqlite3.connect(path) as database:            # what robot-dynid before wear indicators left behind
        database.execute("DROP TABLE validation_motions")
        database.execute("DROP TABLE wear_indicators")
        database.execute("PRAGMA user_version = 1")
    with FleetStore(path) as store:
        assert store.cached("content", "settings")["model_file"] == "m.yaml"
        assert store.validation_motion(1) is None
    with sqlite3.connect(path) as database:
        assert database.execute("PRAGMA user_version").fetchone()[0] == 2
        tables = {row[0] for row in database.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"validation_motions", "wear_indicators"} <= tables


def test_a_database_of_an_unknown_version_is_refused_in_one_line(tmp_path):
    path = tmp_path / "fleet.sqlite"
    with sqlite3.connect(path) as database:
        database.execute("PRAGMA user_version = 3")
    with pytest.raises(DataError, match=r"fleet.sqlite: a fleet database of schema version 3; this robot-dynid reads "
                                        r"versions 1 and 2 \(give another --out folder\)$"):
        FleetStore(path)
