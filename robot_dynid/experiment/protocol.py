"""The thesis's identification experiment as a reference trajectory (METHODS.md section 7).

A test is ``cycles`` identical cycles; each starts and ends at rest in the home pose and runs:

1. REST (optional): hold the home pose for ``rest_duration``.
   CYLINDER (optional, hydraulic arms): for each cylinder of a :class:`CylinderStage` in turn,
   the hydraulic paper's rod excitation ``x = A sin(w t)`` as motion of the cylinder's joint,
   the other joints held at home, entered and left at rest through amplitude ramps: with a
   constant moment arm ``r`` [m/rad], ``q = center + (A / r) sin(w t)``
   (:class:`~robot_dynid.experiment.trajectories.RampedSine`); for a cylinder attached at two points
   (moment arm varying with the pose) the joint motion whose displacement is exactly
   ``x_c + A sin(w t)``, found by inverting the attachment geometry
   (:class:`~robot_dynid.experiment.trajectories.CylinderSine`).
2. EXCITATION: each of ``excitation_count`` Fourier excitations for ``excitation_periods`` periods (distinct
   excitations identify what one motion leaves poorly excited, docs/excitation.md), then cycloidal moves of
   every joint across ``cycloid_range_fraction`` of its range, all joints up together, then all
   down, each joint as fast as its speed and acceleration limits allow (joints that finish early
   hold, so all finish together).
3. FRICTION: one joint at a time, from its friction pose (the other joints held), back and forth
   at each fraction of its velocity limit in turn, equal time per level
   (:class:`~robot_dynid.experiment.trajectories.VelocityLadder`); each stroke ramps up, cruises at the
   requested speed and ramps down.
4. WARMUP: ``warmup_duration`` in all, every joint oscillating between two poses
   ``warmup_range_fraction`` of its range apart at about ``warmup_speed_fraction`` of its speed
   limit, then back to the home pose.
5. VALIDATION (optional): a given trajectory.

:func:`build_payload_protocol` plans the other experiment, a payload identification after a tool
change: per cycle an optional REST and a PAYLOAD stage playing a payload excitation.

Stages are joined by quintic rest-to-rest transitions at ``transition_speed_fraction`` of the
limits, labelled as part of the stage they lead into. The plan lists every stage and sub-stage
as a :class:`~robot_dynid.recordings.stages.StageInterval` (the one stage model: kind, start and end
time, joint, speed_fraction, direction, cycle and as label the sub-stage name) and
:meth:`ProtocolPlan.sample` gives the reference ``(t, q, qd, qdd, stage labels, cycle)`` that an
experiment runner sends and a simulated robot follows. Cycles are 0-based, as in
``ExperimentStage.msg``.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import pathlib
from dataclasses import dataclass

import numpy as np
import yaml

from robot_dynid import validators
from robot_dynid.errors import TrajectoryError
from robot_dynid.experiment.excitation import home_pose as default_home_pose, random_excitation
from robot_dynid.experiment.trajectories import (CycloidalMove, CylinderSine, FourierTrajectory, Hold, Parallel,
                                                 PointToPoint, RampedSine, Repeat, Sequence, Trajectory,
                                                 VelocityLadder, cycloidal_duration, ladder_ramp,
                                                 max_ladder_speed, trajectory_from_dict)
from robot_dynid.experiment.trajectory_checks import check_trajectory
from robot_dynid.joint_names import index_in
from robot_dynid.recordings.stages import STAGE_KINDS, StageInterval
from robot_dynid.yaml_files import read_yaml

__all__ = ["SCHEMA", "SCHEMA_VERSION", "DEFAULT_SPEED_FRACTIONS", "STAGE_COLUMNS", "MAX_CYCLES",
           "MAX_EXCITATION_PERIODS", "MAX_EXCITATION_COUNT", "MAX_SPEED_LEVELS", "MAX_LEVEL_DURATION",
           "MAX_STAGE_DURATION", "MAX_PLAN_STAGES", "MAX_PLAN_SAMPLES", "ProtocolPlan", "ProtocolSettings",
           "CylinderExcitation", "CylinderStage", "cylinder_stage_from_dict", "load_cylinder_stage",
           "CYLINDER_DISPLACEMENT_TOLERANCE", "build_protocol", "build_payload_protocol", "save_plan", "plan_from_dict",
           "load_plan", "load_friction_poses"]

logger = logging.getLogger(__name__)

SCHEMA = "robot_dynid/protocol_plan"
SCHEMA_VERSION = 1
DEFAULT_SPEED_FRACTIONS = (0.05, 0.2, 0.4, 0.6, 0.8, 1.0)
STAGE_COLUMNS = ("cycle", "kind", "name", "joint", "speed_fraction", "direction", "start", "end")
_LEVEL_DURATION_STEP = 0.5

# Maxima of the settings: generous for real tests, and each bounds the work and memory of a plan (every
# stage row of every cycle is an object; runners sample the whole plan).
MAX_CYCLES = 1000
"""Cycles per test: the thesis runs 24 of about 5 minutes; 1000 such cycles are three and a half days."""
MAX_EXCITATION_PERIODS = 100
"""Excitation periods per cycle (the thesis plays 2)."""
MAX_EXCITATION_COUNT = 20
"""Distinct excitations per cycle."""
MAX_SPEED_LEVELS = 50
"""Friction speed levels (the thesis uses 6)."""
MAX_LEVEL_DURATION = 600.0
"""[s] per friction speed level (the automatic one is a few seconds); 600 s makes about a thousand strokes."""
MAX_STAGE_DURATION = 3600.0
"""[s] of the warmup and rest stages and of the other durations of :class:`ProtocolSettings` (the
thesis warms up for 180 s)."""
MAX_PLAN_STAGES = 1_000_000
"""Stage rows of all cycles of a plan (``cycles`` times the rows of one cycle; the default plan has a few
hundred per cycle)."""
MAX_PLAN_SAMPLES = 10_000_000
"""Samples of :meth:`ProtocolPlan.sample` (q, qd, qdd of 6 joints: 1.4 GB); 28 hours at 100 Hz."""


def _stage_row(stage: StageInterval) -> list:
    """A plan stage as its file row, in :data:`STAGE_COLUMNS` order."""
    return [stage.cycle, stage.kind, stage.label, stage.joint,
            None if stage.speed_fraction is None else float(stage.speed_fraction),
            stage.direction, float(stage.start_time), float(stage.end_time)]


def _stage_from_row(row) -> StageInterval:
    """A plan stage from its file row (:func:`_stage_row`)."""
    cycle, kind, name, joint, speed_fraction, direction, start, end = row
    return StageInterval(kind, start, end, joint, speed_fraction, direction, cycle, name)


@dataclass(frozen=True, eq=False)
class ProtocolPlan:
    """A test of ``cycles`` identical cycles.

    Attributes
    ----------
    robot_name : str
    joint_names : tuple of str
    cycle_trajectory : Trajectory
        One cycle, starting and ending at rest in the home pose.
    cycles : int
    cycle_stages : tuple of StageInterval
        Sub-stages of cycle 0; cycle c's are shifted by ``c * cycle_duration``.
    settings : dict
        The arguments the plan was built with (provenance).
    notes : tuple of str
        Adjustments made while building (e.g. speeds reduced to fit a joint's range).
    """

    robot_name: str
    joint_names: tuple
    cycle_trajectory: Trajectory
    cycles: int
    cycle_stages: tuple
    settings: dict
    notes: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        if tuple(self.cycle_trajectory.joint_names) != self.joint_names:
            raise TrajectoryError(f"plan trajectory joints {list(self.cycle_trajectory.joint_names)}"
                                  f" differ from joint_names {list(self.joint_names)}")
        validators.count(self.cycles, "cycles", TrajectoryError, maximum=MAX_CYCLES)
        if self.cycles * len(self.cycle_stages) > MAX_PLAN_STAGES:
            raise TrajectoryError(f"{self.cycles} cycles of {len(self.cycle_stages)} stages each are more than "
                                  f"{MAX_PLAN_STAGES} stages in all: fewer cycles or shorter friction levels")
        _check_rows(self.cycle_stages, self.cycle_trajectory.duration)
        object.__setattr__(self, "_trajectory", Repeat(self.cycle_trajectory, self.cycles,
                                                       tolerance=1e-9))
        stages = tuple(row.shifted(cycle, cycle * self.cycle_duration)
                       for cycle in range(self.cycles) for row in self.cycle_stages)
        object.__setattr__(self, "_stages", stages)
        object.__setattr__(self, "_starts", np.array([row.start_time for row in stages]))

    @property
    def trajectory(self) -> Trajectory:
        """The whole test as one trajectory."""
        return self._trajectory

    @property
    def stages(self) -> tuple[StageInterval, ...]:
        """Every sub-stage of every cycle, in time order."""
        return self._stages

    @property
    def cycle_duration(self) -> float:
        return self.cycle_trajectory.duration

    @property
    def duration(self) -> float:
        return self.cycles * self.cycle_duration

    def stage_index(self, t) -> np.ndarray:
        """Index into :attr:`stages` of the sub-stage playing at each time ``t`` (M,) [s]."""
        return np.clip(np.searchsorted(self._starts, np.asarray(t, float), side="right") - 1,
                       0, len(self._stages) - 1)

    def stage_durations(self) -> dict:
        """Total duration [s] per stage kind in one cycle."""
        totals: dict = {}
        for row in self.cycle_stages:
            totals[row.kind] = totals.get(row.kind, 0.0) + row.duration
        return totals

    def sample(self, rate_hz: float):
        """The reference at ``rate_hz`` from ``t = 0`` to the end (inclusive when on the grid).

        Returns
        -------
        t : ndarray, shape (N,)
            [s] from the start of the test.
        q, qd, qdd : ndarray, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        labels : ndarray of str, shape (N,)
            Stage kind of each sample.
        cycle : ndarray of int, shape (N,)
            0-based cycle of each sample.
        """
        validators.positive(rate_hz, "rate_hz", TrajectoryError, "Hz")
        samples = self.duration * rate_hz
        if not samples < MAX_PLAN_SAMPLES:
            raise TrajectoryError(f"the plan of {self.duration:.6g} s at {rate_hz:g} Hz is {samples:.4g} samples, more "
                                  f"than {MAX_PLAN_SAMPLES}: a lower rate or fewer cycles")
        count = int(math.floor(samples + 1e-9)) + 1
        t = np.arange(count) / float(rate_hz)
        q, qd, qdd = self.trajectory.evaluate(t)
        index = self.stage_index(t)
        labels = np.array([row.kind for row in self._stages])[index]
        cycle = np.array([row.cycle for row in self._stages], dtype=np.int64)[index]
        return t, q, qd, qdd, labels, cycle

    def to_dict(self) -> dict:
        """File form (see ``docs/excitation.md``); stage rows of cycle 0 only."""
        return {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "units": {"angle": "rad", "time": "s", "speed_fraction": "1"},
            "robot": self.robot_name, "joints": list(self.joint_names), "cycles": self.cycles,
            "cycle_duration": float(self.cycle_duration), "settings": self.settings,
            "notes": list(self.notes), "stage_columns": list(STAGE_COLUMNS),
            "cycle_stages": [_stage_row(row) for row in self.cycle_stages],
            "cycle_trajectory": self.cycle_trajectory.to_dict(),
        }


def _check_rows(rows, duration: float) -> None:
    if not rows:
        raise TrajectoryError("a plan needs at least one stage")
    expected = 0.0
    for index, row in enumerate(rows):
        if row.kind not in STAGE_KINDS:
            raise TrajectoryError(f"stage {index}: kind {row.kind!r} is not one of {STAGE_KINDS}")
        if abs(row.start_time - expected) > 1e-6 or row.end_time < row.start_time:
            raise TrajectoryError(f"stage {index} ({row.kind}/{row.label}) spans [{row.start_time:g}, "
                                  f"{row.end_time:g}] s; expected to start at {expected:g} s")
        expected = row.end_time
    if abs(expected - duration) > 1e-6:
        raise TrajectoryError(f"stages end at {expected:g} s but the cycle lasts {duration:g} s")


# --------------------------------------------------------------------------- building

@dataclass(frozen=True)
class ProtocolSettings:
    """Durations and fractions of :func:`build_protocol` (see its docstring)."""

    cycles: int = 24
    excitation_periods: int = 2
    excitation_count: int = 1
    speed_fractions: tuple = DEFAULT_SPEED_FRACTIONS
    friction_level_duration: float | None = None
    friction_range_fraction: float = 0.9
    friction_acceleration_fraction: float = 0.9
    friction_min_plateau: float = 0.3
    jerk_duration: float = 0.1
    cycloid_range_fraction: float = 0.9
    warmup_duration: float = 180.0
    warmup_range_fraction: float = 0.8
    warmup_speed_fraction: float = 0.8
    transition_speed_fraction: float = 0.5
    rest_duration: float = 0.0
    continuity_tolerance: float = 1e-3
    check_dt: float = 0.01

    def __post_init__(self) -> None:
        for name, maximum in (("cycles", MAX_CYCLES), ("excitation_periods", MAX_EXCITATION_PERIODS),
                              ("excitation_count", MAX_EXCITATION_COUNT)):
            validators.count(getattr(self, name), name, TrajectoryError, maximum=maximum)
        fractions = tuple(self.speed_fractions)
        if not fractions or len(fractions) > MAX_SPEED_LEVELS:
            raise TrajectoryError(f"speed_fractions must hold 1 to {MAX_SPEED_LEVELS} fractions in (0, 1], got "
                                  f"{len(fractions)}")
        object.__setattr__(self, "speed_fractions", tuple(
            validators.fraction(f, f"speed_fractions[{index}]", TrajectoryError) for index, f in enumerate(fractions)))
        for name in ("friction_range_fraction", "friction_acceleration_fraction",
                     "cycloid_range_fraction", "warmup_range_fraction", "warmup_speed_fraction",
                     "transition_speed_fraction"):
            validators.fraction(getattr(self, name), name, TrajectoryError)
        for name in ("friction_min_plateau", "jerk_duration", "warmup_duration", "rest_duration"):
            validators.in_range(getattr(self, name), name, TrajectoryError, "s", 0.0, MAX_STAGE_DURATION)
        validators.positive(self.continuity_tolerance, "continuity_tolerance", TrajectoryError, allow_zero=True)
        if self.friction_level_duration is not None:
            validators.in_range(self.friction_level_duration, "friction_level_duration", TrajectoryError, "s", 0.0,
                                MAX_LEVEL_DURATION, allow_minimum=False)
        validators.in_range(self.check_dt, "check_dt", TrajectoryError, "s", 0.0, 1.0, allow_minimum=False)


class _CycleBuilder:
    """Appends segments and their stage rows, tracking time and the current pose."""

    def __init__(self, robot, settings: ProtocolSettings, home: np.ndarray):
        self.names = tuple(robot.joint_names)
        self.settings = settings
        self.lower, self.upper, self.velocity, self.acceleration, _ = robot.limit_arrays()
        self.pose = home.copy()
        self.time = 0.0
        self.segments: list[Trajectory] = []
        self.rows: list[StageInterval] = []

    def add(self, trajectory: Trajectory, kind: str, name: str, joint=None, speed_fraction=None,
            direction=0) -> None:
        self.add_rows(trajectory, [(kind, name, joint, speed_fraction, direction,
                                    0.0, trajectory.duration)])

    def add_rows(self, trajectory: Trajectory, rows) -> None:
        """Append ``trajectory`` with sub-stage rows ``(kind, name, joint, fraction, direction,
        start, end)`` whose times are relative to the trajectory's start."""
        self.segments.append(trajectory)
        for kind, name, joint, fraction, direction, start, end in rows:
            self.rows.append(StageInterval(kind, self.time + start, self.time + end, joint, fraction,
                                           int(direction), 0, name))
        self.time += trajectory.duration
        self.pose = trajectory.boundary_states()[1][0]

    def transition_duration(self, start, target) -> float:
        fraction = self.settings.transition_speed_fraction
        return PointToPoint.shortest_duration(start, target, fraction * self.velocity,
                                              fraction * self.acceleration)

    def move_to(self, target, kind: str, joint=None) -> None:
        if np.max(np.abs(np.asarray(target) - self.pose)) > 1e-9:
            duration = self.transition_duration(self.pose, target)
            self.add(PointToPoint(self.names, self.pose, target, duration), kind, "transition",
                     joint)

    def sequence(self) -> Sequence:
        return Sequence(self.segments, tolerance=self.settings.continuity_tolerance)


def _check_pose(pose, robot, what: str) -> np.ndarray:
    lower, upper = robot.limit_arrays()[:2]
    pose = validators.array(pose, what, TrajectoryError, shape=(robot.n_joints,), axes=("joints",),
                            columns=robot.joint_names, unit="rad")
    outside = np.nonzero((pose < lower) | (pose > upper))[0]
    if outside.size:
        j = outside[0]
        raise TrajectoryError(f"{what}: joint {robot.joint_names[j]} at {pose[j]:.6g} rad is "
                              f"outside its limits [{lower[j]:.6g}, {upper[j]:.6g}]")
    return pose


def _excitations(robot, excitation, count: int) -> list:
    """The cycle's Fourier excitations: ``excitation`` (one, or a sequence of them), else ``count`` random safe
    ones (5 harmonics, 10 s, half the limits, seeds 0 to count - 1); each over the robot's joints in order."""
    if excitation is None:
        excitations = [random_excitation(robot, harmonics=5, period=10.0, amplitude_fraction=0.5, seed=seed)
                       for seed in range(count)]
    else:
        excitations = [excitation] if isinstance(excitation, Trajectory) else list(excitation)
        if count not in (1, len(excitations)):
            raise TrajectoryError(f"excitation_count {count} with {len(excitations)} excitation(s) given: give "
                                  "that many, or leave the count at 1")
    for index, given in enumerate(excitations):
        where = "excitation" if len(excitations) == 1 else f"excitation {index}"
        if not isinstance(given, FourierTrajectory):
            raise TrajectoryError(f"{where} must be a FourierTrajectory, got {type(given).__name__}")
        if tuple(given.joint_names) != tuple(robot.joint_names):
            raise TrajectoryError(f"{where} joints {list(given.joint_names)} must be the robot's joints in order "
                                  f"{list(robot.joint_names)}")
    return excitations


def _excitation_stage(builder: _CycleBuilder, robot, excitations) -> None:
    settings = builder.settings
    for index, excitation in enumerate(excitations):
        check = check_trajectory(robot, excitation, dt=min(settings.check_dt, excitation.duration / 2000.0),
                                 tolerance=settings.continuity_tolerance)
        if not check.ok:
            where = "excitation" if len(excitations) == 1 else f"excitation {index}"
            raise TrajectoryError(f"{where}: " + "; ".join(v.describe() for v in check.violations))
        builder.move_to(excitation.start_pose, "excitation")
        builder.add(Repeat(excitation, settings.excitation_periods,
                           tolerance=settings.continuity_tolerance), "excitation", "fourier")
    middle, half = 0.5 * (builder.upper + builder.lower), 0.5 * (builder.upper - builder.lower)
    low = middle - settings.cycloid_range_fraction * half
    builder.move_to(low, "excitation")
    span = 2.0 * settings.cycloid_range_fraction * half
    for direction in (1, -1):
        parts = [CycloidalMove((name,), [builder.pose[j]], [direction * span[j]],
                               cycloidal_duration([span[j]], [builder.velocity[j]],
                                                  [builder.acceleration[j]]))
                 for j, name in enumerate(builder.names)]
        builder.add(Parallel(parts, builder.names), "excitation", "cycloidal", None, 1.0,
                    direction)


def _ladder_speeds(builder: _CycleBuilder, joint: int, stroke: float, notes: list) -> list:
    settings = builder.settings
    acceleration = settings.friction_acceleration_fraction * builder.acceleration[joint]
    cap = max_ladder_speed(stroke, acceleration, settings.jerk_duration,
                           settings.friction_min_plateau) * (1.0 - 1e-9)
    speeds = []
    for fraction in settings.speed_fractions:
        requested = fraction * builder.velocity[joint]
        if requested > cap:
            note = (f"friction: joint {builder.names[joint]} reaches {cap:.4g} rad/s "
                    f"({cap / builder.velocity[joint]:.3f} of its limit) instead of "
                    f"{fraction:g} of it: its {stroke:.4g} rad stroke is too short to ramp up, "
                    f"cruise {settings.friction_min_plateau:g} s and ramp down")
            if note not in notes:
                logger.warning(note)
                notes.append(note)
        speeds.append(min(requested, cap))
    return speeds


def _auto_level_duration(builder: _CycleBuilder, speeds_per_joint) -> float:
    settings = builder.settings
    longest = 0.0
    for joint, speeds in enumerate(speeds_per_joint):
        acceleration = settings.friction_acceleration_fraction * builder.acceleration[joint]
        for speed in speeds:
            ramp, _ = ladder_ramp(speed, acceleration, settings.jerk_duration)
            longest = max(longest, 2.0 * (2.0 * ramp + settings.friction_min_plateau))
    return _LEVEL_DURATION_STEP * math.ceil(longest / _LEVEL_DURATION_STEP - 1e-9)


def _friction_ladders(builder: _CycleBuilder, poses: dict, notes: list) -> list:
    """One VelocityLadder per joint; with an automatic level duration, the shortest (in steps of
    0.5 s) for which every joint's ladder fits."""
    settings = builder.settings
    middle, half = 0.5 * (builder.upper + builder.lower), 0.5 * (builder.upper - builder.lower)
    stroke = 2.0 * settings.friction_range_fraction * half
    speeds = [_ladder_speeds(builder, j, stroke[j], notes) for j in range(len(builder.names))]
    automatic = settings.friction_level_duration is None
    duration = _auto_level_duration(builder, speeds) if automatic \
        else settings.friction_level_duration
    for _ in range(200):
        try:
            ladders = []
            for j, name in enumerate(builder.names):
                pose = poses[name].copy()
                pose[j] = middle[j] - settings.friction_range_fraction * half[j]
                ladders.append(VelocityLadder(
                    builder.names, pose, name, speeds[j], duration, stroke[j],
                    settings.friction_acceleration_fraction * builder.acceleration[j],
                    settings.jerk_duration, settings.friction_min_plateau))
            return ladders
        except TrajectoryError as error:
            if not automatic:
                raise TrajectoryError(f"friction stage: {error}") from None
            duration += _LEVEL_DURATION_STEP
    raise TrajectoryError("friction stage: no level duration up to "
                          f"{duration:g} s fits every joint's ladder")


def _friction_stage(builder: _CycleBuilder, ladders) -> None:
    for j, ladder in enumerate(ladders):
        builder.move_to(ladder.pose, "friction", ladder.joint)
        rows = [("friction", "stroke" if stroke.direction else "hold", ladder.joint,
                 float(stroke.speed / builder.velocity[j]), stroke.direction, stroke.start,
                 stroke.end)
                for stroke in ladder.strokes]
        builder.add_rows(ladder, rows)


def _warmup_stage(builder: _CycleBuilder, home: np.ndarray) -> None:
    settings = builder.settings
    middle, half = 0.5 * (builder.upper + builder.lower), 0.5 * (builder.upper - builder.lower)
    low = middle - settings.warmup_range_fraction * half
    span = 2.0 * settings.warmup_range_fraction * half
    lead_in = builder.transition_duration(builder.pose, low)
    lead_out = builder.transition_duration(low, home)
    oscillation = settings.warmup_duration - lead_in - lead_out
    speed = settings.warmup_speed_fraction
    parts = []
    for j, name in enumerate(builder.names):
        shortest = cycloidal_duration([span[j]], [speed * builder.velocity[j]],
                                      [speed * builder.acceleration[j]])
        pairs = math.floor(oscillation / (2.0 * shortest) + 1e-9)
        if pairs < 1:
            raise TrajectoryError(
                f"warmup: warmup_duration {settings.warmup_duration:g} s leaves {oscillation:.3g} s "
                f"for oscillating after the transitions; joint {name} needs at least "
                f"{2.0 * shortest:.3g} s for one stroke up and back")
        stroke_time = oscillation / (2 * pairs)
        up = CycloidalMove((name,), [low[j]], [span[j]], stroke_time)
        down = CycloidalMove((name,), [low[j] + span[j]], [-span[j]], stroke_time)
        parts.append(Repeat(Sequence([up, down]), pairs, tolerance=1e-9))
    builder.move_to(low, "warmup")
    builder.add(Parallel(parts, builder.names, tolerance=1e-9), "warmup", "oscillation", None,
                speed)
    builder.move_to(home, "warmup")


# --------------------------------------------------------------------------- cylinder stage

_MAX_AMPLITUDE = 0.5       # [m]: a larger rod amplitude is a unit mistake (millimetres)


@dataclass(frozen=True)
class CylinderExcitation:
    """One cylinder of a :class:`CylinderStage`.

    Attributes
    ----------
    name : str
        The cylinder's name (as in HydraulicCylinderState and the cylinder configuration).
    joint : str
        The joint it drives.
    moment_arm : float or None
        r [m/rad] (the cylinder configuration's ``attachment.moment_arm``), ``dx = r dq``
        (constant-moment-arm approximation); positive when extending the rod turns the joint
        positively. Nonzero. None for a cylinder attached at two points (``displacement`` given).
    center : float or None
        Joint position [rad] the sine oscillates about; None: the middle of the joint's range.
    displacement : callable or None
        Two-point cylinders: ``x = displacement(q)`` [m] (N,) at configurations ``q`` (N, n) [rad]
        (e.g. :meth:`robot_dynid.hydraulics.attachment.CylinderGeometry.displacement`); the stage moves
        ``joint`` so that ``x`` follows the sine exactly.
    """

    name: str
    joint: str
    moment_arm: float | None
    center: float | None = None
    displacement: object = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for field in ("name", "joint"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise TrajectoryError(f"cylinder {field} must be a non-empty string, got {getattr(self, field)!r}")
        if (self.moment_arm is None) == (self.displacement is None):
            raise TrajectoryError(f"cylinder {self.name}: give a moment_arm [m/rad] or, for a cylinder attached at "
                                  "two points, its displacement function, not both")
        if self.displacement is None:
            arm = validators.number(self.moment_arm, f"cylinder {self.name}: moment_arm", TrajectoryError)
            if arm == 0.0:
                raise TrajectoryError(f"cylinder {self.name}: moment_arm must not be 0 [m/rad]")
            object.__setattr__(self, "moment_arm", arm)
        elif not callable(self.displacement):
            raise TrajectoryError(f"cylinder {self.name}: displacement must be a function of q, got "
                                  f"{type(self.displacement).__name__}")
        if self.center is not None:
            object.__setattr__(self, "center", validators.number(self.center, f"cylinder {self.name}: center",
                                                                 TrajectoryError))


@dataclass(frozen=True)
class CylinderStage:
    """The hydraulic paper's cylinder excitation ``x = A sin(w t)``, one cylinder after the other.

    Each cylinder's joint moves ``q = center + (A / r) sin(w tau)`` for ``cycles`` periods
    ``2 pi / w``, between ramps of ``ramp_duration`` (:class:`RampedSine`); the paper uses
    ``A = 6 mm``, ``w = 0.05 rad/s`` and samples at 50 Hz.

    Attributes
    ----------
    amplitude : float
        A [m] of the rod displacement (> 0, at most 0.5 m).
    angular_frequency : float
        w [rad/s] (> 0).
    cylinders : tuple of CylinderExcitation
    cycles : int
        Periods of the pure sine per cylinder (>= 1).
    ramp_duration : float or None
        [s] of each ramp; None: half a period ``pi / w``.
    """

    amplitude: float
    angular_frequency: float
    cylinders: tuple
    cycles: int = 1
    ramp_duration: float | None = None

    def __post_init__(self) -> None:
        amplitude = validators.positive(self.amplitude, "cylinder stage amplitude", TrajectoryError, "m")
        if amplitude > _MAX_AMPLITUDE:
            raise TrajectoryError(f"cylinder stage amplitude {amplitude:g} m is larger than {_MAX_AMPLITUDE:g} m "
                                  "(millimetres?)")
        object.__setattr__(self, "amplitude", amplitude)
        object.__setattr__(self, "angular_frequency", validators.positive(
            self.angular_frequency, "cylinder stage angular_frequency", TrajectoryError, "rad/s"))
        object.__setattr__(self, "cycles", validators.count(self.cycles, "cylinder stage cycles", TrajectoryError))
        if self.ramp_duration is None:
            object.__setattr__(self, "ramp_duration", math.pi / self.angular_frequency)
        object.__setattr__(self, "ramp_duration", validators.positive(
            self.ramp_duration, "cylinder stage ramp_duration", TrajectoryError, "s"))
        cylinders = tuple(self.cylinders)
        if not cylinders or not all(isinstance(c, CylinderExcitation) for c in cylinders):
            raise TrajectoryError("cylinder stage cylinders must be a non-empty list of cylinders")
        for field in ("name", "joint"):
            values = [getattr(c, field) for c in cylinders]
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                raise TrajectoryError(f"cylinder stage: {field} {repeated[0]!r} appears more than once")
        object.__setattr__(self, "cylinders", cylinders)

    @property
    def period(self) -> float:
        """``2 pi / w`` [s]."""
        return 2.0 * math.pi / self.angular_frequency

    def joint_amplitude(self, cylinder: CylinderExcitation) -> float:
        """``A / r`` [rad], signed by the moment arm (constant-moment-arm cylinders)."""
        return self.amplitude / cylinder.moment_arm

    def to_dict(self) -> dict:
        """File form (:func:`cylinder_stage_from_dict`); a two-point cylinder's moment_arm is null."""
        return {"amplitude": self.amplitude, "angular_frequency": self.angular_frequency, "cycles": self.cycles,
                "ramp_duration": self.ramp_duration,
                "cylinders": [{"name": c.name, "joint": c.joint, "moment_arm": c.moment_arm,
                               **({} if c.center is None else {"center": c.center})} for c in self.cylinders]}


def cylinder_stage_from_dict(data, cylinders, source: str = "<dict>") -> CylinderStage:
    """A :class:`CylinderStage` from its file form and the cylinders to excite.

    ``{amplitude: A [m], angular_frequency: w [rad/s] | frequency: f [Hz], cycles: [1],
    ramp_duration: [s], centers: {cylinder name: joint position [rad]}}``: exactly one of
    ``angular_frequency`` and ``frequency``; ``cycles`` (default 1), ``ramp_duration`` (default
    half a period) and ``centers`` (default the middle of each joint's range) are optional.
    Unknown keys, and centers of cylinders not in ``cylinders``, are errors.

    Parameters
    ----------
    data : dict
    cylinders : sequence of CylinderExcitation
        Name, joint and moment arm of each cylinder (from the cylinder configuration), in the
        order they are excited; their ``center`` is replaced by the file's.
    source : str
        Where ``data`` came from, for messages.
    """
    try:
        validators.known_keys(data, source, ("amplitude",), ("angular_frequency", "frequency", "cycles",
                                                             "ramp_duration", "centers"), TrajectoryError)
        given = [key for key in ("angular_frequency", "frequency") if key in data]
        if len(given) != 1:
            raise TrajectoryError(f"{source}: give exactly one of angular_frequency [rad/s] and frequency [Hz], "
                                  f"got {given or 'neither'}")
        if "frequency" in data:
            angular = 2.0 * math.pi * validators.positive(data["frequency"], f"{source}: frequency",
                                                          TrajectoryError, "Hz")
        else:
            angular = data["angular_frequency"]
        centers = data.get("centers") or {}
        names = [cylinder.name for cylinder in cylinders]
        if not isinstance(centers, dict):
            raise TrajectoryError(f"{source}: centers must map cylinder names {names} to joint positions [rad], "
                                  f"got {centers!r}")
        index_in(names, list(centers), f"{source}: centers", "the configuration", kind="cylinder",
                 error=TrajectoryError)
        cylinders = tuple(dataclasses.replace(cylinder, center=centers.get(cylinder.name, cylinder.center))
                          for cylinder in cylinders)
        return CylinderStage(data["amplitude"], angular, cylinders, data.get("cycles", 1), data.get("ramp_duration"))
    except TrajectoryError as error:
        message = str(error)
        raise TrajectoryError(message if message.startswith(source) else f"{source}: {message}") from None


def load_cylinder_stage(path, cylinders) -> CylinderStage:
    """Read a cylinder stage file (YAML, :func:`cylinder_stage_from_dict`) for ``cylinders``."""
    return cylinder_stage_from_dict(read_yaml(path, TrajectoryError, "cylinder stage file"), cylinders, str(path))


def _cylinder_stage(builder: _CycleBuilder, stage: CylinderStage, home: np.ndarray) -> None:
    """One :class:`RampedSine` (constant moment arm) or :class:`CylinderSine` (two points) per cylinder,
    from a transition to its center pose."""
    for cylinder in stage.cylinders:
        j, = index_in(builder.names, [cylinder.joint], f"cylinder stage: cylinder {cylinder.name}", "the robot",
                      error=TrajectoryError)
        center = home.copy()
        center[j] = 0.5 * (builder.lower[j] + builder.upper[j]) if cylinder.center is None else cylinder.center
        if cylinder.displacement is None:
            amplitude = np.zeros(len(builder.names))
            amplitude[j] = stage.joint_amplitude(cylinder)
            sine = RampedSine(builder.names, center, amplitude, stage.angular_frequency, stage.cycles,
                              stage.ramp_duration)
        else:
            sine = _two_point_cylinder_sine(builder, stage, cylinder, center, j)
            center = sine.center
        builder.move_to(center, "cylinder", cylinder.joint)
        ramp, steady = sine.ramp_duration, sine.sine_duration
        builder.add_rows(sine, [("cylinder", "ramp", cylinder.joint, None, 0, 0.0, ramp),
                                ("cylinder", "sine", cylinder.joint, None, 0, ramp, ramp + steady),
                                ("cylinder", "ramp", cylinder.joint, None, 0, ramp + steady, sine.duration)])


#: Largest error [m] of the displacement the fitted joint motion of a two-point cylinder makes.
CYLINDER_DISPLACEMENT_TOLERANCE = 1e-9
_JOINT_GRID = 4001        # joint positions sampled across the range to find where x reaches x_c -+ A


def _two_point_cylinder_sine(builder: _CycleBuilder, stage: CylinderStage, cylinder: CylinderExcitation,
                             center: np.ndarray, j: int) -> CylinderSine:
    """The :class:`CylinderSine` moving joint ``j`` so that ``cylinder.displacement`` is exactly
    ``x_c + A sin(w t)`` about ``x_c = x(center)``.

    ``x(q_j)`` is sampled across the joint's limits (the other joints at ``center``); on the interval
    around ``center[j]`` where it is strictly monotonic and spans ``x_c -+ A`` (1 % margin), ``q_j`` as a
    function of ``x`` is fitted by Chebyshev series of rising degree until it reproduces ``x`` within
    :data:`CYLINDER_DISPLACEMENT_TOLERANCE`.

    Raises
    ------
    TrajectoryError
        The displacement range is not reachable within the joint's limits (naming cylinder, joint and
        the reachable range), or the geometry is too irregular to invert.
    """
    amplitude, where = stage.amplitude, f"cylinder stage: cylinder {cylinder.name} (joint {cylinder.joint})"

    def displacement(values):
        poses = np.tile(center, (np.size(values), 1))
        poses[:, j] = values
        x = np.asarray(cylinder.displacement(poses), dtype=float).reshape(-1)
        if x.shape != (poses.shape[0],) or not np.all(np.isfinite(x)):
            raise TrajectoryError(f"{where}: the displacement function must give one finite x [m] per pose")
        return x

    half = _JOINT_GRID // 2
    grid = np.concatenate([np.linspace(builder.lower[j], center[j], half),
                           np.linspace(center[j], builder.upper[j], half)[1:]])
    x = displacement(grid)
    k = half - 1                      # grid[k] == center[j]
    x_center = float(x[k])
    step = np.sign(np.diff(x))
    direction = step[min(k, step.size - 1)]
    low = high = k
    while low > 0 and step[low - 1] == direction:
        low -= 1
    while high < step.size and step[high] == direction:
        high += 1
    reach = sorted((float(x[low]), float(x[high])))
    margin = 0.01 * amplitude
    if direction == 0 or reach[0] > x_center - amplitude - margin or reach[1] < x_center + amplitude + margin:
        raise TrajectoryError(f"{where}: x = {x_center:.4g} -+ {amplitude:g} m is not reachable moving the joint "
                              f"within its limits [{builder.lower[j]:g}, {builder.upper[j]:g}] from {center[j]:g}: "
                              f"it reaches x in [{reach[0]:.4g}, {reach[1]:.4g}] m; lower the amplitude or move "
                              "the center")
    domain = (x_center - amplitude - margin, x_center + amplitude + margin)
    inside = grid[low:high + 1]
    lo, hi = np.interp(domain, x[low:high + 1][::int(direction)], inside[::int(direction)])
    fine = np.linspace(min(lo, hi), max(lo, hi), 2001)
    fine_x = displacement(fine)
    for degree in range(8, 61, 4):
        series = np.polynomial.Chebyshev.fit(fine_x, fine, degree, domain=domain)
        error = np.max(np.abs(displacement(series(fine_x)) - fine_x))
        if error <= CYLINDER_DISPLACEMENT_TOLERANCE:
            break
    else:
        raise TrajectoryError(f"{where}: the attachment geometry cannot be inverted to "
                              f"{CYLINDER_DISPLACEMENT_TOLERANCE:g} m (best {error:.3g} m)")
    center = center.copy()
    center[j] = float(series(x_center))
    return CylinderSine(builder.names, center, cylinder.joint, x_center, amplitude, stage.angular_frequency,
                        stage.cycles, stage.ramp_duration, series.coef.tolist(), domain)


def _validated_poses(poses, robot) -> dict:
    if not isinstance(poses, dict):
        raise TrajectoryError(f"friction_poses must be a mapping {{joint name: pose}}, got "
                              f"{type(poses).__name__}")
    index_in(robot.joint_names, list(poses), "friction_poses", f"robot {robot.name!r}", error=TrajectoryError)
    return {name: _check_pose(pose, robot, f"friction_poses[{name}]") for name, pose in poses.items()}


def build_protocol(robot, cycles: int = 24, excitation: FourierTrajectory | None = None,
                   excitation_periods: int = 2, friction_poses: dict | None = None,
                   speed_fractions=DEFAULT_SPEED_FRACTIONS,
                   friction_level_duration: float | None = None, warmup_duration: float = 180.0,
                   warmup_range_fraction: float = 0.8, warmup_speed_fraction: float = 0.8,
                   rest_duration: float = 0.0, validation: Trajectory | None = None,
                   home_pose=None, cylinder_stage: CylinderStage | None = None, **options) -> ProtocolPlan:
    """Plan the thesis's experiment for a robot (see the module docstring).

    Parameters
    ----------
    robot : RobotDescription
    cycles : int
        Number of identical cycles (thesis: 24 of about 5 minutes).
    excitation : FourierTrajectory or sequence of them, optional
        Rest-to-rest excitation(s) over ``robot.joint_names``, played one after the other; default
        ``excitation_count`` :func:`~robot_dynid.experiment.excitation.random_excitation` s (5 harmonics, 10 s,
        half the limits, seeds 0, 1, ...).
    excitation_periods : int
        Periods of each excitation per cycle.
    friction_poses : dict, optional
        ``{joint name: pose (n,) [rad]}``: the pose of the other joints while that joint runs
        its friction test (its own entry is replaced by its stroke start); default the home pose.
    speed_fractions : sequence of float
        Friction speed levels as fractions of each joint's velocity limit.
    friction_level_duration : float, optional
        Time per speed level [s]; default the shortest (a multiple of 0.5 s) that gives every
        joint at every level at least one stroke each way with a plateau of
        ``friction_min_plateau``.
    warmup_duration : float
        [s] of the warmup stage, transitions included (0: no warmup).
    warmup_range_fraction, warmup_speed_fraction : float
        Warmup poses ``middle -+ fraction * half range``; oscillation at up to this fraction of
        the speed and acceleration limits.
    rest_duration : float
        [s] of the optional rest stage at the start of each cycle (0: none).
    validation : Trajectory, optional
        Played at the end of each cycle; must be rest-to-rest.
    home_pose : array_like, shape (n,), optional
        Start and end of every cycle [rad]; default zeros moved at least 5 % of the range
        inside the limits.
    cylinder_stage : CylinderStage, optional
        Hydraulic arms: the cylinder excitation, played after the rest stage and before the
        excitation stage of every cycle (the paper identifies the cylinders first).
    **options
        Other fields of :class:`ProtocolSettings`: ``excitation_count`` (1: distinct default excitations per
        cycle), ``friction_range_fraction`` (0.9, stroke
        length over the range), ``friction_acceleration_fraction`` (0.9), ``friction_min_plateau``
        (0.3 s), ``jerk_duration`` (0.1 s), ``cycloid_range_fraction`` (0.9),
        ``transition_speed_fraction`` (0.5), ``continuity_tolerance`` (1e-3, largest jump at
        a junction and largest boundary qd, qdd of the excitation), ``check_dt`` (0.01 s).

    Returns
    -------
    ProtocolPlan

    Raises
    ------
    TrajectoryError
        A setting out of range, a pose outside the limits, a stage that does not fit, or a
        limit violated anywhere in the cycle (naming joint and stage).
    """
    settings = _protocol_settings(
        options, cycles=cycles, excitation_periods=excitation_periods, speed_fractions=speed_fractions,
        friction_level_duration=friction_level_duration, warmup_duration=warmup_duration,
        warmup_range_fraction=warmup_range_fraction, warmup_speed_fraction=warmup_speed_fraction,
        rest_duration=rest_duration)
    home = _home(robot, home_pose)
    excitations = _excitations(robot, excitation, settings.excitation_count)
    settings = dataclasses.replace(settings, excitation_count=len(excitations))
    poses = {name: home.copy() for name in robot.joint_names}
    poses.update(_validated_poses(friction_poses or {}, robot))
    notes: list = []
    builder = _CycleBuilder(robot, settings, home)
    _add_stages(builder, robot, home, excitations, poses, cylinder_stage, validation, notes)
    cycle = builder.sequence()
    _check_cycle(robot, cycle, builder.rows, settings)
    recorded = _recorded_settings(settings, builder.rows, home, excitations, cylinder_stage)
    plan = ProtocolPlan(robot.name, robot.joint_names, cycle, settings.cycles,
                        tuple(builder.rows), recorded, tuple(notes))
    logger.info("protocol for %s: %d cycles of %.1f s (%s)", robot.name, plan.cycles, plan.cycle_duration,
                ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in plan.stage_durations().items()))
    return plan


def _protocol_settings(options: dict, **arguments) -> ProtocolSettings:
    """:class:`ProtocolSettings` of :func:`build_protocol`'s arguments and ``options``, unknown options refused."""
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(ProtocolSettings)})
    if unknown:
        raise TrajectoryError(f"unknown protocol option(s) {unknown}")
    return ProtocolSettings(**arguments, **options)


def _add_stages(builder: _CycleBuilder, robot, home: np.ndarray, excitations, poses: dict,
                cylinder_stage: CylinderStage | None, validation: Trajectory | None, notes: list) -> None:
    """One cycle's stages in order (rest, cylinder, excitation, friction, warmup, validation), back to ``home``."""
    settings = builder.settings
    if settings.rest_duration > 0.0:
        builder.add(Hold(builder.names, home, settings.rest_duration), "rest", "hold")
    if cylinder_stage is not None:
        _cylinder_stage(builder, cylinder_stage, home)
    _excitation_stage(builder, robot, excitations)
    _friction_stage(builder, _friction_ladders(builder, poses, notes))
    if settings.warmup_duration > 0.0:
        _warmup_stage(builder, home)
    if validation is not None:
        _validation_stage(builder, validation)
    builder.move_to(home, builder.rows[-1].kind)


def _validation_stage(builder: _CycleBuilder, validation: Trajectory) -> None:
    if tuple(validation.joint_names) != builder.names:
        raise TrajectoryError(f"validation joints {list(validation.joint_names)} must be the "
                              f"robot's joints in order {list(builder.names)}")
    builder.move_to(validation.boundary_states()[0][0], "validation")
    builder.add(validation, "validation", "validation")


def _recorded_settings(settings: ProtocolSettings, rows, home: np.ndarray, excitations,
                       cylinder_stage: CylinderStage | None) -> dict:
    """The settings a plan records: ``settings`` as plain data, the level duration used, the home pose [rad], the
    excitations and the cylinder stage."""
    recorded = dataclasses.asdict(settings)
    recorded["speed_fractions"] = list(settings.speed_fractions)
    recorded["friction_level_duration"] = _level_duration(rows)
    recorded["home_pose"] = [float(x) for x in home]
    recorded["excitation"] = (excitations[0].to_dict() if len(excitations) == 1
                              else [excitation.to_dict() for excitation in excitations])
    recorded["cylinder_stage"] = None if cylinder_stage is None else cylinder_stage.to_dict()
    return recorded


def _home(robot, pose) -> np.ndarray:
    """``pose`` checked against the limits, or the default home pose."""
    lower, upper = robot.limit_arrays()[:2]
    return default_home_pose(lower, upper) if pose is None else _check_pose(pose, robot, "home_pose")


def build_payload_protocol(robot, excitation: FourierTrajectory, cycles: int = 1, home_pose=None,
                           rest_duration: float = 0.0, **options) -> ProtocolPlan:
    """Plan a payload identification: per cycle an optional REST, then a PAYLOAD stage (the
    transition to the excitation's start, the excitation, ``"fourier"``, for its whole duration, and
    the transition back home), so that it is recorded, marked and segmented like the other stages.

    Parameters
    ----------
    robot : RobotDescription
    excitation : FourierTrajectory
        Rest-to-rest, over ``robot.joint_names``, e.g. from
        :func:`~robot_dynid.experiment.excitation.optimize_payload_excitation`.
    cycles : int
    home_pose : array_like, shape (n,), optional
        Start and end of every cycle [rad]; default the excitation's start pose (no transition).
    rest_duration : float
        [s] of the optional rest at the start of each cycle.
    **options
        ``transition_speed_fraction``, ``continuity_tolerance``, ``check_dt`` of :class:`ProtocolSettings`.

    Raises
    ------
    TrajectoryError
        As :func:`build_protocol`.
    """
    allowed = {"transition_speed_fraction", "continuity_tolerance", "check_dt"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TrajectoryError(f"unknown payload protocol option(s) {unknown}; allowed: {sorted(allowed)}")
    settings = ProtocolSettings(cycles=cycles, rest_duration=rest_duration, warmup_duration=0.0, **options)
    if not isinstance(excitation, FourierTrajectory):
        raise TrajectoryError(f"the payload excitation must be a FourierTrajectory, got {type(excitation).__name__}")
    if tuple(excitation.joint_names) != tuple(robot.joint_names):
        raise TrajectoryError(f"payload excitation joints {list(excitation.joint_names)} must be the robot's joints "
                              f"in order {list(robot.joint_names)}")
    check = check_trajectory(robot, excitation, dt=min(settings.check_dt, excitation.duration / 2000.0),
                             tolerance=settings.continuity_tolerance)
    if not check.ok:
        raise TrajectoryError("payload excitation: " + "; ".join(v.describe() for v in check.violations))
    home = excitation.start_pose if home_pose is None else _home(robot, home_pose)
    builder = _CycleBuilder(robot, settings, home)
    if settings.rest_duration > 0.0:
        builder.add(Hold(builder.names, home, settings.rest_duration), "rest", "hold")
    builder.move_to(excitation.start_pose, "payload")
    builder.add(excitation, "payload", "fourier")
    builder.move_to(home, "payload")
    cycle = builder.sequence()
    _check_cycle(robot, cycle, builder.rows, settings)
    recorded = {"cycles": settings.cycles, "rest_duration": settings.rest_duration,
                "transition_speed_fraction": settings.transition_speed_fraction,
                "continuity_tolerance": settings.continuity_tolerance, "check_dt": settings.check_dt,
                "home_pose": [float(x) for x in home], "payload_excitation": excitation.to_dict()}
    plan = ProtocolPlan(robot.name, robot.joint_names, cycle, settings.cycles, tuple(builder.rows), recorded)
    logger.info("payload protocol for %s: %d cycles of %.1f s", robot.name, plan.cycles, plan.cycle_duration)
    return plan


def _level_duration(rows) -> float | None:
    strokes = [row for row in rows if row.label == "stroke"]
    if not strokes:
        return None
    first = [row for row in strokes if row.joint == strokes[0].joint
             and row.speed_fraction == strokes[0].speed_fraction]
    return float(sum(row.duration for row in first))


def _check_cycle(robot, cycle: Sequence, rows, settings: ProtocolSettings) -> None:
    check = check_trajectory(robot, cycle, dt=settings.check_dt,
                             tolerance=settings.continuity_tolerance)
    if check.ok:
        return
    starts = np.array([row.start_time for row in rows])
    messages = []
    for violation in check.violations:
        row = rows[max(0, int(np.searchsorted(starts, violation.time, side="right")) - 1)]
        messages.append(f"{violation.describe()} in stage {row.kind}/{row.label}"
                        + (f" of joint {row.joint}" if row.joint else ""))
    raise TrajectoryError("protocol: " + "; ".join(messages))


# --------------------------------------------------------------------------- files

def save_plan(plan: ProtocolPlan, path) -> None:
    """Write a plan as YAML (deterministic; see ``docs/excitation.md``)."""
    text = yaml.safe_dump(plan.to_dict(), sort_keys=False, default_flow_style=None, width=100)
    pathlib.Path(path).write_text("# robot_dynid protocol plan\n" + text, encoding="utf-8")


_PLAN_KEYS = ("schema", "schema_version", "units", "robot", "joints", "cycles", "cycle_duration",
              "settings", "notes", "stage_columns", "cycle_stages", "cycle_trajectory")


def plan_from_dict(data: dict, source: str = "<dict>") -> ProtocolPlan:
    """Rebuild a plan from :meth:`ProtocolPlan.to_dict` output; rejects unknown keys."""
    if not isinstance(data, dict):
        raise TrajectoryError(f"{source}: a plan must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_PLAN_KEYS))
    missing = [key for key in _PLAN_KEYS if key not in data and key != "notes"]
    if unknown or missing:
        raise TrajectoryError(f"{source}: unknown key(s) {unknown}, missing key(s) {missing}")
    if data["schema"] != SCHEMA or data["schema_version"] != SCHEMA_VERSION:
        raise TrajectoryError(f"{source}: schema {data['schema']!r} version "
                              f"{data['schema_version']!r}; expected {SCHEMA!r} version "
                              f"{SCHEMA_VERSION}")
    if list(data["stage_columns"]) != list(STAGE_COLUMNS):
        raise TrajectoryError(f"{source}: stage_columns {data['stage_columns']!r}, expected "
                              f"{list(STAGE_COLUMNS)}")
    rows = []
    for index, row in enumerate(data["cycle_stages"]):
        if not isinstance(row, list) or len(row) != len(STAGE_COLUMNS):
            raise TrajectoryError(f"{source}: cycle_stages[{index}] must be a list "
                                  f"{list(STAGE_COLUMNS)}, got {row!r}")
        rows.append(_stage_from_row(row))
    trajectory = trajectory_from_dict(data["cycle_trajectory"], f"{source}.cycle_trajectory")
    try:
        plan = ProtocolPlan(data["robot"], tuple(data["joints"]), trajectory, data["cycles"],
                            tuple(rows), data["settings"], tuple(data.get("notes", ())))
    except TrajectoryError as error:
        raise TrajectoryError(f"{source}: {error}") from None
    if abs(plan.cycle_duration - float(data["cycle_duration"])) > 1e-6:
        raise TrajectoryError(f"{source}: cycle_duration {data['cycle_duration']!r} s differs "
                              f"from the trajectory's {plan.cycle_duration:g} s")
    return plan


def load_plan(path) -> ProtocolPlan:
    """Read a plan written by :func:`save_plan`."""
    return plan_from_dict(read_yaml(path, TrajectoryError, "protocol plan"), str(path))


def load_friction_poses(path, robot) -> dict:
    """Friction poses from YAML ``{poses: {joint: [n values in robot joint order] [rad]}}``.

    The moving joint's own value is ignored (its stroke start replaces it).
    """
    data = read_yaml(path, TrajectoryError, "friction poses file")
    if not isinstance(data, dict) or set(data) != {"poses"}:
        raise TrajectoryError(f"{path}: expected a mapping with the single key 'poses' "
                              f"{{joint name: pose}}, got {data!r}")
    try:
        return _validated_poses(data["poses"], robot)
    except TrajectoryError as error:
        raise TrajectoryError(f"{path}: {error}") from None
