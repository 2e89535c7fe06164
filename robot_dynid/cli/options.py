"""Argument groups shared by several subcommands, and the objects they build."""
from __future__ import annotations

import argparse
import math
import sys

from robot_dynid.errors import DynIdError
from robot_dynid.recordings.stages import MAX_SELECTED_CYCLES

__all__ = ["MODEL_STRUCTURE_OPTIONS", "ROBOT_HELP", "STAGE_HELP", "CYCLES_HELP", "add_robot_argument",
           "add_stage_argument", "add_cycles_argument", "add_model_structure_arguments", "add_option_arguments",
           "option_values", "settings_from_args", "add_speed_threshold_argument", "add_data_arguments",
           "add_reading_arguments", "add_raw_argument", "conditioning_from_args", "model_conditioning", "read_data",
           "add_cylinders_argument", "load_cylinders", "subtract_cylinders", "positive_number", "number_in",
           "non_negative_number", "output_file", "output_directory", "add_stage_detection_arguments",
           "bag_topics_from_args", "add_torque_check_argument", "read_validation_data", "parse_cycles", "progress"]


MODEL_STRUCTURE_OPTIONS = ("friction", "friction_drift", "dead_band", "sign_sharpness", "stribeck_velocity",
                           "reversal_lead", "armature", "friction_side", "offset")
"""The identification options that define the regressor's columns (:func:`add_model_structure_arguments`)."""
ROBOT_HELP = "robot description (YAML DH table or URDF reference; see docs/robot_description.md)"
STAGE_HELP = ("use only samples of this stage kind (repeatable), e.g. excitation: by the recording's stage markers "
              "(bag) or stage column (CSV); without them, the stages of joint states are detected from the motion: "
              "rest, friction (one joint at constant speed) and excitation (two or more joints moving, warm-up and "
              "validation included); robot-dynid stages lists them")
CYCLES_HELP = (f"use only these cycles, pooled: e.g. 3,9,16 or 0-5, at most {MAX_SELECTED_CYCLES} (needs stage "
               "markers or a cycle column: cycles cannot be detected from the motion)")


def add_robot_argument(parser, default=None):
    """``--robot R.yaml``, the robot description, in every subcommand that takes one; required unless
    ``default`` says what is used without it."""
    parser.add_argument("--robot", required=default is None, default=None, metavar="R.yaml",
                        help=ROBOT_HELP if default is None else f"{ROBOT_HELP} (default: {default})")


def add_stage_argument(parser, default="all"):
    """``--stage NAME`` (repeatable): the stage kinds whose samples a subcommand uses; ``default`` says which
    without it (the subcommand applies it)."""
    parser.add_argument("--stage", action="append", metavar="NAME", help=f"{STAGE_HELP} (default: {default})")


def add_cycles_argument(parser):
    """``--cycles LIST``: the cycles whose samples a subcommand uses (a count of cycles is ``--cycle-count``)."""
    parser.add_argument("--cycles", type=parse_cycles, metavar="LIST", help=CYCLES_HELP)


def add_model_structure_arguments(parser):
    """``--robot`` and the identification options of :data:`MODEL_STRUCTURE_OPTIONS`."""
    group = parser.add_argument_group("model structure")
    add_robot_argument(group)
    add_option_arguments(group, MODEL_STRUCTURE_OPTIONS)


class _CheckedOption(argparse.Action):
    """Stores the value of an identification option checked by :meth:`Option.check
    <robot_dynid.estimation.identification_options.Option.check>`; a refused one is the parser's one-line error
    in its wording, naming the argument (``--forgetting must be finite and in (0, 1] [1], got 1.5``)."""

    def __init__(self, option_strings, dest, option=None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.option = option

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, self.option.check(values, self.option.cli_flag))
        except DynIdError as error:
            parser.error(str(error))


def _number_type(option):
    """argparse type of a number option: a float, or one of its words (``auto``)."""
    def parse(text):
        return text if text in option.words else float(text)
    parse.__name__ = " or ".join(("number",) + option.words)       # argparse: "invalid number value: 'x'"
    return parse


def add_option_arguments(parser, names, choices=None):
    """The arguments of the identification options ``names``
    (:data:`~robot_dynid.estimation.identification_options.OPTIONS`) on ``parser`` (a parser or an argument
    group): a bool one a switch (``--armature``; ``--no-torque-check`` for one on by default), one with choices
    argparse's choices, a number checked against its interval as it is parsed, each with its help, unit and
    default. ``choices``: {name: the choices this subcommand allows}, a subset of the option's."""
    from robot_dynid.estimation.identification_options import OPTIONS
    for name in names:
        option = OPTIONS[name]
        text = option.describe(choices=False, allowed=(choices or {}).get(name)).replace("%", "%%")
        if option.kind is bool:
            parser.add_argument(option.cli_flag, dest=name, action="store_false" if option.default else "store_true",
                                help=f"do not {text}" if option.default else text)
            continue
        if option.default is not None:
            text += " (default: %(default)s)"
        if option.choices is not None:
            parser.add_argument(option.cli_flag, dest=name, default=option.default,
                                choices=(choices or {}).get(name, option.choices), help=text)
        else:
            parser.add_argument(option.cli_flag, dest=name, default=option.default, action=_CheckedOption,
                                option=option, type=_number_type(option) if option.kind is float else str,
                                metavar=name.upper(), help=text)


def option_values(args):
    """The identification options among the parsed arguments ``args``, by name."""
    from robot_dynid.estimation.identification_options import OPTIONS
    return {name: getattr(args, name) for name in OPTIONS if hasattr(args, name)}


def settings_from_args(args, robot):
    """Identification settings of the parsed arguments: those that are identification options
    (:func:`option_values`) go to the same builder the identifier node uses."""
    from robot_dynid.estimation.identification_options import OPTIONS
    from robot_dynid.estimation.identification import settings_from_options
    return settings_from_options(option_values(args), robot, label=lambda name: OPTIONS[name].cli_flag)


def add_speed_threshold_argument(parser):
    """``--speed-threshold`` [rad/s] of the relative RMSD (validate, report)."""
    from robot_dynid.estimation.analysis_defaults import DEFAULT_SPEED_THRESHOLD
    parser.add_argument("--speed-threshold", type=positive_number("a speed > 0 [rad/s]"),
                        default=DEFAULT_SPEED_THRESHOLD, metavar="RAD_S",
                        help="samples of a joint slower than this do not count for its relative RMSD "
                             "(default: %(default)s rad/s)")


def add_data_arguments(parser, several=False):
    """``--data`` (repeatable with ``several``: files read, differentiated and checked one by one) and
    the reading options."""
    group = parser.add_argument_group("recorded data")
    group.add_argument("--data", required=True, metavar="FILE", action="append" if several else "store",
                       help="rosbag2 directory (MCAP or sqlite3) or CSV file (see docs/data_formats.md for the columns)"
                            + ("; repeat for several recordings, each read, differentiated and trimmed on its "
                               "own and then stacked" if several else ""))
    add_reading_arguments(group)


def add_reading_arguments(group, only=None):
    """The reading options (bag topics, resampling, derivatives) into ``group``; ``only``: the destinations of
    those to add (a command that takes some of them, as ``fleet``), in this order."""
    from robot_dynid.recordings.bag_layout import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_STAGE_TOPIC
    from robot_dynid.recordings.conditioning import (ACCELERATION_NOISE_FRACTION, MAX_DERIVATIVE_WINDOW,
                                                     MAX_GIVEN_WINDOW, MIN_WINDOW_SAMPLES, REST_DWELL,
                                                     VELOCITY_AT_REST)
    arguments = [
        ("--joint-states-topic", dict(default=DEFAULT_JOINT_STATES_TOPIC, help="bag only (default: %(default)s)")),
        ("--motor-states-topic", dict(
            default=None, metavar="TOPIC",
            help="bag only, instead of the joint states: a JointState named by the robot's transmission motors, "
                 "position [rad], velocity [rad/s] and effort [N m] at the motor, turned into joint values through "
                 "the transmission (q = T^-1 qm, tau = T^T tau_m); '' = never (default: the recorder's "
                 "/motor_states when the bag has messages on it and the robot has a transmission)")),
        ("--effort-topic", dict(
            default=None, help="bag only: a second JointState topic whose effort field holds the torques [N m] "
                               "(default: the effort of --joint-states-topic)")),
        ("--current-topic", dict(
            default=None,
            help="bag only, instead of --effort-topic: a JointState topic whose effort field holds motor currents "
                 "[A], turned into joint torques with each joint's torque_constant [N m/A] and gear_ratio from the "
                 "robot description, or, with a transmission, named by motor and turned into motor torques by its "
                 "torque_constants [N m/A] and joint torques by T^T (the recorder's current_topic: /motor_currents)")),
        ("--stage-topic", dict(
            default=DEFAULT_STAGE_TOPIC,
            help="bag only: robot_dynid/msg/ExperimentStage markers (default: %(default)s)")),
        ("--resample", dict(
            type=positive_number("a rate > 0 [Hz]"), default=None, metavar="HZ",
            help="put the samples on a uniform grid at HZ first: positions by cubic spline, velocities, torques and "
                 "temperatures linearly, never across gaps (default: use the recorded stamps as they are; "
                 "derivatives are fitted in them, jitter and lost samples included); at most 10000 Hz and 10 times "
                 "the recording's rate")),
        ("--derive", dict(
            action="store_true",
            help="derive velocities and accelerations from the positions even where the data carry them (a "
                 "driver's velocity may be a coarse difference or filtered with a lag; at rest a derived velocity "
                 "is noise, set to 0, see --velocity-at-rest)")),
        ("--velocity-at-rest", dict(
            choices=VELOCITY_AT_REST, default="auto",
            help=f"a joint is at rest where its position stays within its noise for {REST_DWELL:g} s or more "
                 "(never at a reversal or a slow creep); there auto sets derived velocities to 0 (noise would flip "
                 "the sign of Coulomb friction) and uses recorded ones as measured, zero sets both to 0, measured "
                 "neither (default: %(default)s)")),
        ("--accelerations-from", dict(
            choices=("velocities", "positions"), default="velocities",
            help="where the data carry velocities, derive the accelerations from them (a first derivative: less "
                 "noise than a second one of positions sampled at 100 Hz) or from the positions (precise encoders "
                 "with noisy driver velocities) (default: %(default)s)")),
        ("--derivative-window", dict(
            type=positive_number("a window > 0 [s]"), default=None, metavar="S",
            help="window [s] of the local polynomial fits that derive what the data lack (accelerations from "
                 "recorded velocities, else velocities and accelerations from positions); at most "
                 f"{MAX_GIVEN_WINDOW:g} s (default: the shortest that keeps the acceleration noise below "
                 f"{100 * ACCELERATION_NOISE_FRACTION:g} %% of its RMS, from {MIN_WINDOW_SAMPLES} samples to "
                 f"{MAX_DERIVATIVE_WINDOW:g} s, printed)")),
    ]
    for flag, keywords in arguments:
        if only is None or flag[2:].replace("-", "_") in only:
            group.add_argument(flag, **keywords)


def add_raw_argument(parser):
    """``--raw`` of the commands that evaluate a model on data (validate, predict, report --model)."""
    parser.add_argument("--raw", action="store_true",
                        help="read the data with this command's own reading options (--resample, --derive, "
                             "--derivative-window, --velocity-at-rest, --accelerations-from; no low-pass) instead of "
                             "conditioning them as the model's training data were (recorded in the model)")


def conditioning_from_args(args, lowpass=None):
    """The :class:`~robot_dynid.recordings.conditioning.Conditioning` of the reading options, with ``lowpass``
    [Hz]."""
    from robot_dynid.recordings.conditioning import Conditioning
    return Conditioning(resample=args.resample, derive=args.derive, derivative_window=args.derivative_window,
                        velocity_at_rest=args.velocity_at_rest, lowpass=lowpass,
                        accelerations_from_positions=args.accelerations_from == "positions")


def model_conditioning(args, model):
    """How data a model is evaluated on are conditioned: as its training data were (its provenance), or with
    ``--raw`` as read with this command's options; models that record nothing get the options'.

    Raises DataError when a reading option is given without ``--raw`` for a model that records its conditioning
    (the option would be silently ignored otherwise)."""
    from robot_dynid.errors import DataError
    from robot_dynid.recordings.conditioning import Conditioning, conditioning_from_provenance
    if getattr(args, "raw", False):
        return Conditioning(resample=args.resample, derive=args.derive, derivative_window=args.derivative_window,
                            velocity_at_rest=args.velocity_at_rest,
                            accelerations_from_positions=args.accelerations_from == "positions")
    recorded = conditioning_from_provenance(model.provenance)
    if recorded is None:
        return conditioning_from_args(args)
    given = [option for option, value in (("--resample", args.resample), ("--derive", args.derive),
                                          ("--derivative-window", args.derivative_window),
                                          ("--velocity-at-rest", args.velocity_at_rest != "auto"),
                                          ("--accelerations-from", args.accelerations_from != "velocities")) if value]
    if given:
        raise DataError(f"{', '.join(given)}: the data are conditioned as the model's training data were "
                        f"({recorded.describe()}); give --raw to read them with this command's options instead")
    return recorded


def read_data(args, robot, path=None, conditioning=None, *, stage=None, cycles=None, trim=0.0, adjust=None,
              choose_window=None):
    """The recording at ``path`` (default ``--data``) through the reading pipeline
    (:func:`~robot_dynid.recordings.pipeline.run`: read, checked against ``robot``, resampled, differentiated and
    conditioned as ``conditioning`` says, by default as the reading options say, then ``adjust``, then
    ``trim`` [s] and the samples of ``stage`` and ``cycles``, detected with ``--rest-threshold``; the derivative
    window by ``choose_window`` where none is given); its :class:`~robot_dynid.recordings.pipeline.Reading`."""
    from robot_dynid.recordings.pipeline import run
    return run(args.data if path is None else path, robot, conditioning or conditioning_from_args(args), stage=stage,
               cycles=cycles, trim=trim, rest_threshold=getattr(args, "rest_threshold", None), adjust=adjust,
               choose_window=choose_window, **bag_topics_from_args(args, robot))


def add_cylinders_argument(parser, what="the fit"):
    """``--cylinders`` of a hydraulic arm (identify, validate): the results file of ``hydraulic identify``
    whose cylinders' internal torques :func:`subtract_cylinders` subtracts before ``what``."""
    parser.add_argument("--cylinders", metavar="cylinders.yaml", default=None,
                        help="hydraulic arm, two-stage: the results of robot-dynid hydraulic identify (cylinders with "
                             "attachments); the recordings' tau [N m] are the cylinders' hydraulic torques, from which "
                             "each cylinder's identified inertia, damping, stiffness and friction are subtracted "
                             f"through its moment arms [m] before {what}")


def load_cylinders(args):
    """The cylinder results of ``--cylinders``, or None without it."""
    from robot_dynid.hydraulics.cylinder_results import load_cylinder_results
    return None if args.cylinders is None else load_cylinder_results(args.cylinders)


def subtract_cylinders(recording, robot, cylinders):
    """``recording`` with, for a hydraulic arm (``cylinders``, from :func:`load_cylinders`), the cylinders' internal
    torques subtracted (:func:`~robot_dynid.hydraulics.two_stage.subtract_cylinder_torques`)."""
    if cylinders is None:
        return recording
    from robot_dynid.hydraulics.two_stage import subtract_cylinder_torques
    return subtract_cylinder_torques(recording, robot, cylinders)


def positive_number(what, allow_zero=False):
    """argparse type of a finite number > 0 (>= 0 with ``allow_zero``); ``what`` says what it is in
    the error."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value > 0.0 or (allow_zero and value == 0.0))):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return parse


def number_in(unit, minimum, maximum, allow_minimum=True, allow_maximum=True):
    """argparse type of a finite number in ``[minimum, maximum]`` (the end excluded without
    ``allow_minimum`` / ``allow_maximum``) [``unit``], refused in :func:`robot_dynid.validators.in_range`'s
    wording."""
    def parse(text):
        from robot_dynid import validators
        try:
            value = float(text)
        except ValueError:
            value = text
        try:
            return validators.in_range(value, "the value", DynIdError, unit, minimum, maximum, allow_minimum,
                                       allow_maximum)
        except DynIdError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return parse


#: argparse type of a number in the open interval (0, 1): a significance level, a fraction.
open_unit_interval = number_in(None, 0.0, 1.0, allow_minimum=False, allow_maximum=False)


def non_negative_number(what):
    """argparse type of a finite number >= 0."""
    return positive_number(what, allow_zero=True)


def output_file(text):
    """argparse type of a file to write, checked before any work is done
    (:func:`robot_dynid.output_files.check_output_path`)."""
    from robot_dynid.output_files import check_output_path
    return check_output_path(text, "file", argparse.ArgumentTypeError)


def output_directory(text):
    """argparse type of a directory to write into (made if absent), checked before any work is done."""
    from robot_dynid.output_files import check_output_path
    return check_output_path(text, "directory", argparse.ArgumentTypeError, directory=True)


def add_stage_detection_arguments(parser):
    from robot_dynid.recordings.stage_detection import REST_THRESHOLD, REST_THRESHOLD_FRACTION
    group = parser.add_argument_group("stage detection (recordings without stage markers or stage column)")
    group.add_argument("--rest-threshold", type=positive_number("a speed > 0 [rad/s]"), default=None,
                       metavar="RAD_S",
                       help="speed [rad/s] below which a joint counts as at rest when stages are detected "
                            "from the motion; must lie above the velocity noise and below the slowest "
                            f"friction speed (default: {REST_THRESHOLD:g} rad/s, capped at "
                            f"{100 * REST_THRESHOLD_FRACTION:g} %% of each joint's velocity limit)")


def bag_topics_from_args(args, robot):
    """Topic options of ``read_bag`` from the arguments; motor currents are converted with
    ``robot``'s drives (with a transmission: by ``read_bag``, with the transmission that
    :func:`~robot_dynid.recordings.pipeline.read_recording` hands it)."""
    return {"joint_states_topic": args.joint_states_topic, "motor_states_topic": args.motor_states_topic,
            "effort_topic": args.effort_topic, "stage_topic": args.stage_topic, "current_topic": args.current_topic,
            "torque_from_current": robot.torque_from_current
            if args.current_topic and robot.transmission is None else None}


def add_torque_check_argument(parser):
    """``--no-torque-check`` (identify, validate, report, payload identify, fleet): the identification option
    ``check_torque_scale``."""
    add_option_arguments(parser, ("check_torque_scale",))


def read_validation_data(args, robot, cylinders, path, conditioning=None, stage=None, cycles=None, payload=None):
    """The selected samples of a held-out recording (:func:`read_data`, conditioned as ``conditioning`` says), the
    cylinders' torques subtracted (:func:`subtract_cylinders`) and, unless ``--no-torque-check``, the selected
    samples' torques checked against ``robot``'s inertial data and the model's ``payload`` as identification checks
    them (:func:`~robot_dynid.estimation.torque_scale.check_torque_scale`)."""
    from robot_dynid.estimation.torque_scale import check_torque_scale
    recording = read_data(args, robot, path, conditioning, stage=stage, cycles=cycles,
                          adjust=lambda recording: subtract_cylinders(recording, robot, cylinders)).selection.recording
    if args.check_torque_scale and recording.tau is not None:
        check_torque_scale(recording, robot, payload)
    return recording


def parse_cycles(text):
    """argparse type of a cycle list: '3,9,16' -> [3, 9, 16], ranges '3-5'; at most
    :data:`~robot_dynid.recordings.stages.MAX_SELECTED_CYCLES` cycles
    (:func:`~robot_dynid.recordings.stages.parse_cycle_list`)."""
    from robot_dynid.recordings.stages import parse_cycle_list
    return parse_cycle_list(text, error=argparse.ArgumentTypeError)


def progress(iterable, description="", total=None):
    """``iterable`` with a tqdm progress bar on stderr when it is a terminal (never in pipes, logs or
    tests)."""
    if not sys.stderr.isatty():
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=description, total=total, unit="step", leave=False, file=sys.stderr)
