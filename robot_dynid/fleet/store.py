"""The fleet's results database: an embedded SQLite file (``DIR/fleet.sqlite``), schema in docs/fleets.md.

Tables:

- ``models``: one row per identification made, keyed by ``(content_hash, settings_hash)``: status
  (``identified`` / ``failed``), reason, the model file (relative to DIR), the report folder, wall
  time [s], worker, peak memory [bytes], when;
- ``parameters``: the base parameters of each identified model: name, value and std (SI, the unit
  of the leading standard parameter), in the model's order;
- ``metrics``: named figures of each model, per joint where they are (joint NULL otherwise):
  ``condition_number``, ``n_samples``, ``holdout_rsd``, ``rsd``, ``residual_rms`` [N m],
  ``noise_std`` [N m];
- ``recordings``: one row per manifest entry ``(robot_id, recorded_at)``: its data path, robot
  description, stage, content hash, settings hash, status and reason, and the model it was
  identified into (``model_id``, NULL when it failed before one was made);
- ``validation_motions`` (schema 2): the motion of a recording's validation stage, where it has one (joint
  names, q [rad], qd [rad/s], qdd [rad/s^2] as JSON arrays), the wear indicators' reference motion;
- ``wear_indicators`` (schema 2): each identified model's wear indicators under the last analysis's reference
  conditions (:mod:`robot_dynid.estimation.wear`): name, kind, joint, unit, value and estimation std.

A database of schema version 1 (before wear indicators) is upgraded in place by adding the two tables: its
results stay reusable.

A result is reused when a recording's content hash and settings hash are already in ``models``
(and its status was not a failure marked for retrying), so a second run identifies only new or
changed recordings.
"""
from __future__ import annotations

import datetime
import json
import pathlib
import sqlite3
from typing import Iterable

import numpy as np

from robot_dynid.errors import DataError

__all__ = ["SCHEMA_VERSION", "UPGRADABLE_VERSIONS", "SCHEMA", "PER_JOINT_METRICS", "FleetStore"]

SCHEMA_VERSION = 2
UPGRADABLE_VERSIONS = (1,)
"""Versions this one reads by adding its tables."""
SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    model_id INTEGER PRIMARY KEY,
    content_hash TEXT NOT NULL,
    settings_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('identified', 'failed')),
    reason TEXT NOT NULL DEFAULT '',
    model_file TEXT,
    report_dir TEXT,
    seconds REAL,
    worker TEXT,
    peak_memory INTEGER,
    created_at TEXT NOT NULL,
    UNIQUE (content_hash, settings_hash)
);
CREATE TABLE IF NOT EXISTS parameters (
    model_id INTEGER NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    std REAL NOT NULL,
    PRIMARY KEY (model_id, name)
);
CREATE TABLE IF NOT EXISTS metrics (
    model_id INTEGER NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    joint TEXT,
    value REAL
);
CREATE INDEX IF NOT EXISTS metrics_of_model ON metrics (model_id);
CREATE TABLE IF NOT EXISTS recordings (
    robot_id TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    data TEXT NOT NULL,
    robot TEXT NOT NULL,
    stage TEXT,
    content_hash TEXT,
    settings_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('identified', 'failed')),
    reason TEXT NOT NULL DEFAULT '',
    model_id INTEGER REFERENCES models (model_id),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (robot_id, recorded_at)
);
CREATE TABLE IF NOT EXISTS validation_motions (
    model_id INTEGER PRIMARY KEY REFERENCES models (model_id) ON DELETE CASCADE,
    joint_names TEXT NOT NULL,
    q TEXT NOT NULL,
    qd TEXT NOT NULL,
    qdd TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS wear_indicators (
    model_id INTEGER NOT NULL REFERENCES models (model_id) ON DELETE CASCADE,
    reference TEXT NOT NULL,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    joint TEXT NOT NULL,
    unit TEXT NOT NULL,
    value REAL NOT NULL,
    std REAL NOT NULL,
    PRIMARY KEY (model_id, name)
);
"""
PER_JOINT_METRICS = ("rsd", "residual_rms", "noise_std")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class FleetStore:
    """The database at ``path`` (made with its tables if absent); use as a context manager."""

    def __init__(self, path) -> None:
        self.path = pathlib.Path(path)
        self.connection = sqlite3.connect(self.path)
        try:
            self.connection.execute("PRAGMA foreign_keys = ON")
            version = self.connection.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION, *UPGRADABLE_VERSIONS):
                raise DataError(f"{self.path}: a fleet database of schema version {version}; this robot-dynid "
                                f"reads versions {', '.join(map(str, UPGRADABLE_VERSIONS))} and {SCHEMA_VERSION} "
                                "(give another --out folder)")
            with self.connection:
                self.connection.executescript(SCHEMA)
                self.connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise DataError(f"{self.path}: not a fleet database ({error}); give another --out folder") from None
        except DataError:
            self.connection.close()
            raise

    def __enter__(self) -> "FleetStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def cached(self, content_hash: str, settings_hash: str) -> dict | None:
        """The ``models`` row of this content and these settings, or None."""
        cursor = self.connection.execute(
            "SELECT model_id, status, reason, model_file, report_dir, seconds, worker, peak_memory FROM models "
            "WHERE content_hash = ? AND settings_hash = ?", (content_hash, settings_hash))
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip(("model_id", "status", "reason", "model_file", "report_dir", "seconds", "worker",
                         "peak_memory"), row))

    def add_model(self, content_hash: str, settings_hash: str, status: str, reason: str = "",
                  model=None, model_file: str | None = None, report_dir: str | None = None, seconds=None,
                  worker=None, peak_memory=None, holdout_rsd=None, validation_motion=None) -> int:
        """Insert (or replace) one identification's result and, for a model, its parameters and metrics (and
        its recording's ``validation_motion`` ``(q, qd, qdd)``, in the model's joint order, where it has one);
        its ``model_id``."""
        with self.connection:
            self.connection.execute("DELETE FROM models WHERE content_hash = ? AND settings_hash = ?",
                                    (content_hash, settings_hash))
            cursor = self.connection.execute(
                "INSERT INTO models (content_hash, settings_hash, status, reason, model_file, report_dir, seconds, "
                "worker, peak_memory, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (content_hash, settings_hash, status, reason, model_file, report_dir, seconds, worker, peak_memory,
                 _now()))
            model_id = cursor.lastrowid
            if model is not None:
                self.connection.executemany(
                    "INSERT INTO parameters (model_id, position, name, value, std) VALUES (?, ?, ?, ?, ?)",
                    [(model_id, k, name, float(value), float(std))
                     for k, (name, value, std) in enumerate(zip(model.base.names, model.values, model.std))])
                self.connection.executemany("INSERT INTO metrics (model_id, name, joint, value) VALUES (?, ?, ?, ?)",
                                            list(_metric_rows(model_id, model, holdout_rsd)))
                if validation_motion is not None:
                    self.connection.execute(
                        "INSERT INTO validation_motions (model_id, joint_names, q, qd, qdd) VALUES (?, ?, ?, ?, ?)",
                        (model_id, json.dumps(list(model.joint_names)),
                         *(json.dumps(np.asarray(part, float).tolist()) for part in validation_motion)))
        return model_id

    def validation_motion(self, model_id: int) -> tuple | None:
        """``(joint_names, q, qd, qdd)`` (arrays (N, n)) of a model's recording's validation stage, or None."""
        row = self.connection.execute("SELECT joint_names, q, qd, qdd FROM validation_motions WHERE model_id = ?",
                                      (model_id,)).fetchone()
        if row is None:
            return None
        return (tuple(json.loads(row[0])), *(np.array(json.loads(part), dtype=float) for part in row[1:]))

    def set_wear_indicators(self, model_id: int, reference: str, indicators) -> None:
        """Replace a model's wear indicators with ``indicators``
        (:class:`~robot_dynid.estimation.wear.WearIndicators`) under reference conditions ``reference`` (key)."""
        with self.connection:
            self.connection.execute("DELETE FROM wear_indicators WHERE model_id = ?", (model_id,))
            self.connection.executemany(
                "INSERT INTO wear_indicators (model_id, reference, position, name, kind, joint, unit, value, std) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(model_id, reference, k, item.name, item.kind, item.joint, item.unit, float(value), float(std))
                 for k, (item, value, std) in enumerate(zip(indicators.indicators, indicators.values, indicators.std))])

    def set_recording(self, entry, robot: str, settings_hash: str, content_hash: str | None, status: str,
                      reason: str = "", model_id: int | None = None) -> None:
        """Record the outcome of manifest entry ``entry`` (:class:`~robot_dynid.fleet.manifest.FleetEntry`)."""
        robot_id, recorded_at = entry.key
        with self.connection:
            self.connection.execute(
                "INSERT OR REPLACE INTO recordings (robot_id, recorded_at, data, robot, stage, content_hash, "
                "settings_hash, status, reason, model_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (robot_id, recorded_at, entry.data, robot, entry.stage, content_hash, settings_hash, status, reason,
                 model_id, _now()))

    def parameters(self, model_id: int) -> tuple[list[str], list[float], list[float]]:
        """(names, values, std) of a model, in its order."""
        rows = self.connection.execute("SELECT name, value, std FROM parameters WHERE model_id = ? ORDER BY position",
                                       (model_id,)).fetchall()
        return [row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows]

    def recordings(self, keys: Iterable[tuple[str, str]] | None = None) -> list[dict]:
        """Rows of ``recordings`` joined with their model's file, report and timing, in (robot, time) order;
        only those of ``keys`` ((robot_id, recorded_at) pairs) when given."""
        cursor = self.connection.execute(
            "SELECT r.robot_id, r.recorded_at, r.data, r.robot, r.stage, r.content_hash, r.settings_hash, r.status, "
            "r.reason, r.model_id, m.model_file, m.report_dir, m.seconds, m.worker, m.peak_memory FROM recordings r "
            "LEFT JOIN models m ON m.model_id = r.model_id ORDER BY r.robot_id, r.recorded_at")
        names = ("robot_id", "recorded_at", "data", "robot", "stage", "content_hash", "settings_hash", "status",
                 "reason", "model_id", "model_file", "report_dir", "seconds", "worker", "peak_memory")
        wanted = None if keys is None else set(keys)
        return [dict(zip(names, row)) for row in cursor
                if wanted is None or (row[0], row[1]) in wanted]


def _metric_rows(model_id, model, holdout_rsd):
    metrics = model.metrics
    yield model_id, "condition_number", None, float(metrics.get("condition_number", float("nan")))
    yield model_id, "n_samples", None, float(metrics.get("n_samples", 0))
    if holdout_rsd is not None:
        yield model_id, "holdout_rsd", None, float(holdout_rsd)
    for name in PER_JOINT_METRICS:
        for joint, value in (metrics.get(name) or {}).items():
            yield model_id, name, joint, float(value)
