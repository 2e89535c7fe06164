"""Reading a recording: one pipeline, whose steps each live here, one function each, and run in this order.

1. :func:`read`: the file's samples as written (:func:`~robot_dynid.recordings.data_files.read_file`: CSV or
   rosbag2), the robot's joints, motor-side columns turned into joint values;
2. :func:`check_and_drop`: the timing of the stamps as read is kept (``stamp_quality``), the time unit is checked
   and, against the robot, unit mistakes are errors and implausible samples are dropped and counted
   (:mod:`~robot_dynid.recordings.data_checks`); stamps that are receive times jittering about the sensor's
   uniform clock are replaced by that clock (:func:`retime`, :mod:`~robot_dynid.recordings.time_base`), said in
   the stamp report;
3. :func:`resample`: onto a uniform grid when asked (derivatives the conditioning re-derives are dropped first);
4. :func:`differentiate`: velocities and accelerations the data lack, by local polynomial fits in the stamps,
   runs between gaps on their own;
5. :func:`condition_at_rest`: velocity 0 where a joint stands still (derived velocities by default); the
   recording's ``conditioning`` records the settings and what they gave;
6. :func:`select`: the trimmed recording's stages and cycles (its labels, else detected from the motion).

:func:`run` calls them in this order, with, between steps 5 and 6, an ``adjust`` of the caller's (a layer
above: a check of the torques, hydraulic cylinders' torques subtracted); :func:`read_recording` is steps 1 to 5,
:func:`condition` steps 3 to 5 of a recording in hand. Stages are selected last, not before resampling and
differentiating: the derivative windows at a stage's edges reach into its neighbours (selecting first would change
the derivatives and so every result), and stages detected from the motion need the velocities.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.recordings.conditioning import (MIN_WINDOW_SAMPLES, REST_DWELL, REST_TEXT,
                                                 Conditioning, derivative_plan, describe_rest, stationary_mask)
from robot_dynid.recordings.data_checks import check_samples, check_time_unit
from robot_dynid.recordings.data_files import StageTable, read_file, stage_table
from robot_dynid.recordings.recording import DropCounter, Recording, hand_over
from robot_dynid.recordings.signal_processing import (differentiate as differentiate_samples, gap_starts,
                                                      median_step, resample_uniform, window_samples_for)
from robot_dynid.recordings.stage_detection import StageSelection, select_stages
from robot_dynid.recordings.stamp_quality import recording_stamp_quality
from robot_dynid.stored_columns import column_pieces, is_stored, spill
from robot_dynid.recordings.time_base import choose_time_base

__all__ = ["DERIVATIVE_WINDOW", "SHORT_RUN", "MAX_RESAMPLE_RATE", "MAX_RESAMPLE_FACTOR", "Reading", "run", "read",
           "check_and_drop", "retime", "resample", "differentiate", "condition_at_rest", "zero_at_rest", "select",
           "read_recording", "condition", "read_stage_table", "derivative_window_samples", "complete_derivatives",
           "resample_recording"]

logger = logging.getLogger(__name__)

DERIVATIVE_WINDOW = 0.05  # s, local polynomial window for derivatives that were not recorded
# ... but never fewer than conditioning.MIN_WINDOW_SAMPLES samples: 50 Hz recordings, as of hydraulic arms, get 0.14 s.
SHORT_RUN = "in a run between gaps shorter than the derivative window"
MAX_RESAMPLE_RATE = 10_000.0
"""[Hz] of :func:`resample_recording` (``--resample``): above the joint-state rate of arm drivers (1 kHz for
most)."""
MAX_RESAMPLE_FACTOR = 10
"""Most samples :func:`resample_recording` makes per recorded sample: a rate beyond ten times the recording's
adds memory, not information."""


@dataclasses.dataclass(frozen=True, eq=False)
class Reading:
    """What :func:`run` gives.

    Attributes
    ----------
    recording : Recording
        After step 5 (and the caller's ``adjust``): every sample, conditioned, with ``stamp_quality``.
    selection : StageSelection
        Step 6: the selected samples, the stages detected from the motion (or None) and the note saying so.
    """

    recording: Recording
    selection: StageSelection


def run(path, robot=None, conditioning: Conditioning | None = None, *, joint_names=None, stage=None, cycles=None,
        trim: float = 0.0, rest_threshold=None, adjust=None, choose_window=None, **bag_topics) -> Reading:
    """The recording at ``path`` through the six steps (module docstring), in order.

    Parameters
    ----------
    path : str or Path
        A rosbag2 directory (or its .mcap / .db3 file) or a ``.csv`` file.
    robot : RobotDescription, optional
        Joints to read (unless ``joint_names``), samples checked against it, velocity limits for detection.
    conditioning : Conditioning, optional
        Steps 3 to 5; default: the recorded stamps, derivatives only where missing, velocities as measured.
    joint_names : sequence of str, optional
        Joints to read; default ``robot``'s, or all in the file.
    stage, cycles, trim, rest_threshold
        Step 6 (:func:`select`).
    adjust : callable, optional
        ``adjust(recording) -> Recording`` between steps 5 and 6.
    choose_window : callable, optional
        ``choose_window(recording, conditioning, estimates) -> (window [s], record) or None`` between steps 3 and
        4 where ``conditioning`` gives no derivative window (a layer above: cross-validation of the identification,
        :func:`robot_dynid.estimation.derivative_window.window_chooser`); the window is then the conditioning's,
        the record kept in ``conditioning["derivative_window_choice"]``. ``estimates``: a dict for the noise and
        motion estimates of the recording's derivative plans
        (:func:`~robot_dynid.recordings.conditioning.derivative_plan`), which step 4 uses again.
    **bag_topics
        joint_states_topic, motor_states_topic, effort_topic, stage_topic, ... (bags only;
        :func:`robot_dynid.recordings.bag_io.read_bag`).
    """
    if conditioning is None:
        conditioning = Conditioning(velocity_at_rest="measured")
    recording = read(path, robot, joint_names, **bag_topics)
    recording = check_and_drop(recording, robot)
    stamps = recording.stamp_quality
    recording = resample(recording, conditioning)
    estimates = {}      # the recording's noise and motion estimates, for the window choice and step 4
    choice = None if choose_window is None or conditioning.derivative_window is not None else \
        choose_window(recording, conditioning, estimates)
    if choice is not None:
        window, record = choice
        conditioning = dataclasses.replace(conditioning, derivative_window=window)
        recording = dataclasses.replace(recording, conditioning={**recording.conditioning,
                                                                 "derivative_window_choice": record})
    recording = differentiate(recording, conditioning, estimates)
    recording = condition_at_rest(recording, conditioning)
    recording = dataclasses.replace(recording, stamp_quality=stamps)
    if adjust is not None:
        recording = adjust(recording)
    velocity_limits = None if robot is None else robot.limit_arrays(recording.joint_names).velocity
    return Reading(recording, select(recording, stage, cycles, trim=trim, velocity_limits=velocity_limits,
                                     rest_threshold=rest_threshold))


def read(path, robot=None, joint_names=None, **bag_topics) -> Recording:
    """Step 1: the samples of the file at ``path``, joints ``joint_names`` (default ``robot``'s, or all), motor-side
    columns turned into joint values through ``robot``'s transmission."""
    if joint_names is None and robot is not None:
        joint_names = robot.joint_names
    return read_file(path, joint_names, None if robot is None else robot.transmission, **bag_topics)


def check_and_drop(recording: Recording, robot=None, time_base: bool = True) -> Recording:
    """Step 2: ``recording`` with the timing of its stamps as read (``stamp_quality``:
    :func:`robot_dynid.recordings.stamp_quality.recording_stamp_quality`), its time unit checked and, with a
    ``robot``, its implausible samples dropped and counted (unit mistakes are errors:
    :func:`robot_dynid.recordings.data_checks.check_samples`); then, with ``time_base``, on the clock its samples
    were taken on (:func:`retime`), said in the stamp report."""
    as_read = recording
    if robot is None:
        check_time_unit(recording.time, recording.source)
    else:
        recording = check_samples(recording, robot)
    base = choose_time_base(recording.time, recording.q) if time_base else None
    stamps = recording_stamp_quality(as_read, "" if base is None else base.describe())
    recording = dataclasses.replace(recording, stamp_quality=stamps)
    return recording if base is None else retime(recording, base)


def retime(recording: Recording, base) -> Recording:
    """``recording`` on the clock ``base`` chose (:func:`robot_dynid.recordings.time_base.choose_time_base`: the
    nominal grid its receive-time stamps jitter about, or its stamps), the choice in ``conditioning["time_base"]``."""
    if base.kind == "grid":
        logger.info("%s: %s", recording.source, base.describe())
    return dataclasses.replace(recording, time=base.time,
                               conditioning={**recording.conditioning, "time_base": base.to_dict()})


def resample(recording: Recording, conditioning: Conditioning) -> Recording:
    """Step 3: without the derivatives ``conditioning`` derives again (all with ``derive``, accelerations with
    ``accelerations_from_positions``), on a uniform grid of ``conditioning.resample`` [Hz] when it is set
    (:func:`resample_recording`)."""
    if conditioning.derive:
        recording = dataclasses.replace(recording, qd=None, qdd=None)
    elif conditioning.accelerations_from_positions:
        recording = dataclasses.replace(recording, qdd=None)
    if conditioning.resample is None:
        return recording
    return resample_recording(recording, conditioning.resample, conditioning.derivative_window or DERIVATIVE_WINDOW)


def differentiate(recording: Recording, conditioning: Conditioning, estimates: dict | None = None) -> Recording:
    """Step 4: the velocities and accelerations ``recording`` lacks (:func:`complete_derivatives`, with
    ``conditioning``'s window and source of accelerations; ``estimates``: its derivative plans' noise and motion
    estimates, kept from the window choice)."""
    return complete_derivatives(recording, conditioning.derivative_window,
                                accelerations_from_positions=conditioning.accelerations_from_positions,
                                estimates=estimates)


def condition_at_rest(recording: Recording, conditioning: Conditioning) -> Recording:
    """Step 5: velocity 0 where a joint stands still for the velocities ``conditioning.velocity_at_rest`` zeroes
    (:func:`zero_at_rest`); ``recording.conditioning`` gets the settings, the rule, the fraction at rest per joint
    and what steps 3 and 4 recorded there."""
    recording, at_rest = zero_at_rest(recording, conditioning)
    applied = dict(recording.conditioning)
    if at_rest is not None:
        applied["at_rest"] = dict(zip(recording.joint_names, map(float, np.mean(at_rest, axis=0))))
        note = describe_rest(at_rest, recording.joint_names)
        if note:
            logger.info("%s: %s", recording.source, note)
    applied["rest_rule"] = (f"at rest: position within its noise for {REST_DWELL:g} s or more; "
                            f"{REST_TEXT[conditioning.velocity_at_rest]}")
    applied["settings"] = conditioning.to_dict()
    return dataclasses.replace(recording, conditioning=applied)


def zero_at_rest(recording: Recording, conditioning: Conditioning) -> tuple[Recording, np.ndarray | None]:
    """``(recording with velocity 0 where a joint stands still, the rest mask (N, n))`` for the velocities
    ``conditioning.velocity_at_rest`` zeroes (derived ones by default, recorded ones kept as measured:
    :meth:`~robot_dynid.recordings.conditioning.Conditioning.zeroes`;
    :func:`~robot_dynid.recordings.conditioning.stationary_mask`); the mask is None where nothing is zeroed."""
    derived = recording.conditioning.get("derivatives", {}).get("qd") == "positions"
    if recording.qd is None or not conditioning.zeroes(recorded=not derived):
        return recording, None
    at_rest = stationary_mask(recording.time, recording.q)
    if at_rest.any() and is_stored(recording.qd):
        qd = spill((np.where(at_rest[start:stop], 0.0, piece) for start, stop, piece in recording.qd.pieces()),
                   recording.n_joints)
        recording = dataclasses.replace(recording, qd=qd)
    elif at_rest.any():
        qd = recording.qd.copy()
        qd[at_rest] = 0.0
        hand_over(qd)
        recording = dataclasses.replace(recording, qd=qd)
    return recording, at_rest


def select(recording: Recording, stage=None, cycles=None, *, trim: float = 0.0, velocity_limits=None,
           rest_threshold=None) -> StageSelection:
    """Step 6: ``recording`` without ``trim`` [s] at its start and end, then its samples of ``stage`` and ``cycles``
    (:func:`robot_dynid.recordings.stage_detection.select_stages`: by its labels, else detected from the motion
    with ``velocity_limits`` [rad/s] and ``rest_threshold`` [rad/s]); None keeps all."""
    if trim:
        recording = recording.time_window(recording.time[0] + trim, recording.time[-1] - trim)
    return select_stages(recording, stage, cycles, velocity_limits=velocity_limits, rest_threshold=rest_threshold)


def read_recording(path, joint_names=None, derivative_window=None, robot=None, resample=None, derive=False,
                   conditioning: Conditioning | None = None, **bag_topics) -> Recording:
    """Read ``path``: a rosbag2 directory (or its .mcap / .db3 file) or a ``.csv`` file, conditioned.

    The recording carries the timing of its stamps as read, before resampling (``stamp_quality``:
    :func:`robot_dynid.recordings.stamp_quality.stamp_quality`).

    Parameters
    ----------
    joint_names : sequence of str, optional
        Joints to read; default ``robot``'s, or all in the file.
    derivative_window : float, optional
        [s] window of the local polynomial fits that derive velocities [rad/s] and accelerations
        [rad/s^2] not recorded (JointState has no accelerations), in the samples' own stamps
        (:func:`complete_derivatives`); None: chosen by rate and noise
        (:mod:`robot_dynid.recordings.conditioning`).
    robot : RobotDescription, optional
        Check the samples against it (:func:`robot_dynid.recordings.data_checks.check_samples`): unit
        mistakes are errors, implausible samples are dropped and counted.
    resample : float, optional
        [Hz] put the samples on a uniform grid first (:func:`resample_recording`).
    derive : bool
        Derive velocities and accelerations from the positions even where the file has them.
    conditioning : Conditioning, optional
        All of the above at once (and velocity 0 at rest, accelerations from positions); given, it
        replaces ``derivative_window``, ``resample`` and ``derive``. Without it, velocities are kept
        as measured at rest.
    **bag_topics
        joint_states_topic, motor_states_topic, effort_topic, stage_topic, ... (bags only;
        :func:`robot_dynid.recordings.bag_io.read_bag`).

    The returned recording's ``conditioning`` says what was done (:func:`condition`), its
    ``stamp_quality`` how its stamps were as read.
    """
    if conditioning is None:
        conditioning = Conditioning(resample=resample, derive=derive, derivative_window=derivative_window,
                                    velocity_at_rest="measured")
    return run(path, robot, conditioning, joint_names=joint_names, **bag_topics).recording


def condition(recording: Recording, conditioning: Conditioning) -> Recording:
    """Steps 3 to 5 of a recording in hand: ``recording`` resampled, differentiated and with velocity 0 at rest as
    ``conditioning`` says; its ``conditioning`` attribute holds the settings and what they gave (the derivative
    plan, the fraction at rest per joint)."""
    return condition_at_rest(differentiate(resample(recording, conditioning), conditioning), conditioning)


def read_stage_table(path, joint_names, velocity_limits, rest_threshold=None,
                     derivative_window=DERIVATIVE_WINDOW, robot=None, resample=None,
                     **bag_topics) -> StageTable:
    """Stages of the recording at ``path``: from its markers, its stage column, or detected.

    Parameters
    ----------
    path : str or Path
        As :func:`read_recording`.
    joint_names : sequence of str
        Joints to read (detection uses their velocities).
    velocity_limits : array_like, shape (n,)
        [rad/s] of ``joint_names``, in that order (for detection; friction speeds are
        reported as fractions of them).
    rest_threshold : float or array_like, shape (n,), optional
        [rad/s]; default :func:`robot_dynid.recordings.stage_detection.default_rest_threshold`.
    derivative_window, robot, resample, **bag_topics
        As :func:`read_recording` (``stage_topic`` names the markers' topic).
    """
    recording = read_recording(path, joint_names, derivative_window, robot=robot, resample=resample,
                               **bag_topics)
    return stage_table(recording, path, velocity_limits, rest_threshold, **bag_topics)


def derivative_window_samples(recording: Recording, window: float = DERIVATIVE_WINDOW) -> int:
    """Odd number of samples of a ``window`` [s] at the recording's median step, at least
    :data:`MIN_WINDOW_SAMPLES`."""
    samples = window_samples_for(window, median_step(recording.time))
    if samples < MIN_WINDOW_SAMPLES:
        logger.info("%s: at %.3g Hz a %g s derivative window holds too few samples; using %d samples",
                    recording.source, 1.0 / median_step(recording.time), window, MIN_WINDOW_SAMPLES)
    return max(samples, MIN_WINDOW_SAMPLES)


def _runs(recording: Recording, window_samples: int) -> list[slice]:
    """The rows of each run between gaps (:func:`robot_dynid.recordings.signal_processing.gap_starts`), as slices
    (a run's arrays are views)."""
    breaks = gap_starts(recording.time, window_samples) + 1
    if breaks.size:
        logger.warning("%s: %d gap(s) in the stamps longer than half the %d-sample derivative window "
                       "(first after %.6f s); derivatives restart after each", recording.source, breaks.size,
                       window_samples, recording.time[breaks[0] - 1])
    edges = [0, *breaks.tolist(), recording.n_samples]
    return [slice(start, stop) for start, stop in zip(edges[:-1], edges[1:])]


def _length(run: slice) -> int:
    return run.stop - run.start


def complete_derivatives(recording: Recording, window: float | None = DERIVATIVE_WINDOW,
                         accelerations_from_positions: bool = False, estimates: dict | None = None) -> Recording:
    """Fill missing qd / qdd by local polynomial fits in the samples' own stamps: accelerations from the
    recorded velocities where there are (a quadratic fit), else velocities and accelerations from the
    positions (a cubic fit); with ``accelerations_from_positions``, accelerations from the positions always.

    ``window`` [s] (None: chosen by rate and noise, :func:`robot_dynid.recordings.conditioning.derivative_plan`).
    The stamps may jitter and messages may be lost (:func:`robot_dynid.recordings.signal_processing.differentiate`).
    A step longer than half the window (:func:`robot_dynid.recordings.signal_processing.gap_starts`: a paused
    recording, a burst of lost messages) splits the recording into runs, each differentiated on
    its own; runs shorter than the window are dropped and counted in ``dropped``. The recording's
    ``conditioning["derivatives"]`` describes the fit (:class:`~robot_dynid.recordings.conditioning.DerivativePlan`);
    ``estimates``: :func:`~robot_dynid.recordings.conditioning.derivative_plan`'s, for windows tried on one recording.
    """
    if recording.qd is not None and recording.qdd is not None:
        return recording
    if recording.n_samples < 2:
        raise DataError(f"{recording.source}: {recording.n_samples} sample(s); derivatives need a window of them")
    missing = [name for name in ("qd", "qdd") if getattr(recording, name) is None]
    from_velocities = recording.qd is not None and not accelerations_from_positions
    if window is None:
        if recording.n_samples < MIN_WINDOW_SAMPLES:
            raise DataError(f"{recording.source}: {recording.n_samples} samples; derivatives need a window of "
                            f"{MIN_WINDOW_SAMPLES}")
        plan = derivative_plan(recording.time, recording.q, recording.qd if from_velocities else None,
                               estimates=estimates)
        samples = plan.window
    else:
        samples = derivative_window_samples(recording, window)
    runs = _runs(recording, samples)
    kept = [run for run in runs if _length(run) >= samples]
    if not kept:
        raise DataError(f"{recording.source}: no run of samples between gaps in the stamps holds the "
                        f"{samples}-sample derivative window ({samples * median_step(recording.time):.3g} s at "
                        f"{median_step(recording.time):g} s per sample; longest run {max(map(_length, runs))} "
                        "samples)")
    if window is not None:
        plan = derivative_plan(recording.time, recording.q, recording.qd if from_velocities else None,
                               window_seconds=samples * median_step(recording.time), estimates=estimates)
    whole = len(runs) == 1
    stored = is_stored(recording.q)
    values = {} if whole or stored else {name: np.zeros_like(recording.q) for name in missing}  # dropped runs: 0
    pieces = {name: [] for name in missing}     # stored: each run's derivatives (or zeros), in order
    uniform = True
    for run in kept:
        if from_velocities:     # the accelerations are the velocities' first derivative
            derived = differentiate_samples(recording.qd[run], recording.time[run], window_samples=samples,
                                            polyorder=2, orders=(1,))
            fitted = {"qdd": derived.qd}
        else:
            derived = differentiate_samples(recording.q[run], recording.time[run], window_samples=samples,
                                            orders=tuple(1 if name == "qd" else 2 for name in missing))
            fitted = {name: getattr(derived, name) for name in missing}
        for name, array in fitted.items():
            if whole:
                values[name] = array
            elif stored:
                pieces[name].append((run.start, array))
            else:
                values[name][run] = array
        uniform &= derived.uniform
    if stored and not whole:
        values = {name: _stored_runs(runs, dict(pieces[name]), recording.n_joints) for name in missing}
    hand_over(*values.values())     # made here, written no more: the recording shares them
    if "derivative_window_choice" in recording.conditioning:
        plan = dataclasses.replace(plan, how="chosen by cross-validation of the fit")
    logger.info("%s: %s (%s stamps)", recording.source, plan.describe(recording.joint_names),
                "uniform" if uniform else "non-uniform")
    completed = dataclasses.replace(recording, **values, conditioning={
        **recording.conditioning, "derivatives": plan.to_dict(recording.joint_names)})
    if len(kept) == len(runs):
        return completed
    dropped = DropCounter(recording.dropped)
    for run in runs:
        if _length(run) < samples:
            dropped.add(SHORT_RUN, float(recording.time[run.start]), _length(run))
    rows = np.concatenate([np.arange(run.start, run.stop) for run in kept])
    return dataclasses.replace(completed.take(rows), dropped=dropped.counts)


def _stored_runs(runs: list[slice], derived: dict, n_joints: int):
    """A StoredColumn of each run's derivatives in ``derived`` (first row -> values), zeros for the runs not in it."""
    def pieces():
        for run in runs:
            if run.start in derived:
                yield from (piece for _, _, piece in column_pieces(derived[run.start]))
            else:
                yield np.zeros((_length(run), n_joints))
    return spill(pieces(), n_joints)


def resample_recording(recording: Recording, rate: float, window: float = DERIVATIVE_WINDOW) -> Recording:
    """The recording on a uniform grid of ``rate`` [Hz].

    Positions are interpolated by a cubic spline through the samples (not-a-knot), recorded
    velocities, accelerations, torques and temperatures linearly; each new sample takes the stage
    and cycle of the last recorded sample at or before it. Gaps (as :func:`complete_derivatives`
    finds them with a ``window`` [s] derivative window) are not bridged: each run gets its own
    grid, starting at its first stamp. Choose a rate near the recording's: resampling below it
    without a low-pass filter aliases noise. DataError for a rate above :data:`MAX_RESAMPLE_RATE` or one
    that would make more than :data:`MAX_RESAMPLE_FACTOR` samples per recorded sample.
    """
    rate = validators.in_range(rate, "resample rate", DataError, "Hz", 0.0, MAX_RESAMPLE_RATE, allow_minimum=False)
    breaks = gap_starts(recording.time, derivative_window_samples(recording, window)) + 1
    covered = sum(run[-1] - run[0] for run in np.split(recording.time, breaks) if run.size)
    if covered * rate > MAX_RESAMPLE_FACTOR * recording.n_samples:
        raise DataError(f"{recording.source}: resampling {recording.n_samples} samples at {rate:g} Hz would make "
                        f"{covered * rate:.4g}, more than {MAX_RESAMPLE_FACTOR} times as many: a rate near the "
                        f"recording's ({1.0 / median_step(recording.time):.4g} Hz)")
    original = 1.0 / median_step(recording.time)
    if rate < 0.9 * original:
        logger.warning("%s: resampling at %g Hz, below the recording's %.4g Hz, aliases what lies between "
                       "%g and %.4g Hz", recording.source, rate, original, rate / 2, original / 2)
    linear = {field: getattr(recording, field) for field in ("qd", "qdd", "tau", "temperature")
              if getattr(recording, field) is not None}
    samples = resample_uniform(recording.time, rate, cubic={"q": recording.q}, linear=linear, breaks=breaks)
    dropped = DropCounter(recording.dropped)
    dropped.add("in a run of fewer than 2 samples between gaps (not resampled)", count=samples.n_lost)
    logger.info("%s: %d samples resampled to %d at %g Hz (positions: cubic spline; %s: linear)",
                recording.source, recording.n_samples, samples.time.size, rate, ", ".join(linear) or "nothing else")
    labels = {name: None if getattr(recording, name) is None else getattr(recording, name)[samples.source]
              for name in ("stage", "cycle")}
    return Recording(joint_names=recording.joint_names, time=samples.time, **samples.values, **labels,
                     source=recording.source, dropped=dropped.counts,
                     conditioning={**recording.conditioning, "resampled_hz": rate})
