"""hydraulic_identifier node: identifies hydraulic cylinders' stiffness and friction online.

Subscribes robot_dynid/HydraulicCylinderState (SI: rod position [m], velocity [m/s], chamber
pressures [Pa], external load [N]; cylinders matched by name) on ``hydraulic_topic`` and runs
recursive least squares with forgetting per cylinder on every sample
(:mod:`robot_dynid.hydraulics.online`: causal x'', regressor row, RLS update, std from
``sigma^2 P``, convergence). Every ``publish_period`` s it publishes HydraulicCylinderEstimates
(K, fc, fv, fs and their standard deviations, residual RMS, samples, converged per cylinder) on
``hydraulic_estimates_topic`` and an IdentificationStatus on ``hydraulic_status_topic``.

The cylinders' known data come from ``cylinders_file`` (the cylinder configuration of
``robot-dynid hydraulic identify``) or, when it is '', from the parallel arrays
``cylinder_names``, ``piston_masses`` [kg], ``damping`` [N s/m], ``areas_a``, ``areas_b`` [m^2] and
``loads`` [N] (used when a message carries no external_load; empty: 0).

A message that cannot be used (array lengths differing from the names, an unknown or duplicate
cylinder name, NaN/inf, pressures that look like bar or MPa, positions like mm, a stamp not after
the cylinder's previous one) is skipped, counted by reason, warned about at once the first time a
reason occurs and then at most every 5 s, and listed in the status warnings; the node never
stops on bad input. Numeric parameters are checked at start against the intervals their descriptions
state (one line naming the parameter, exit 2). Set while the node runs (``ros2 param set``), the
convergence test (``convergence_window``, ``convergence_band``, ``min_samples``), ``publish_period`` and
``results_file`` (the next save) are live; the other settings shape the estimator's state, and the
cylinders, topics and QoS are read at start (read-only).

``~/save`` (std_srvs/Trigger) writes the estimates to ``results_file`` (the results file of
``robot-dynid hydraulic identify``, convergence included: :meth:`OnlineHydraulicIdentifier.results`); so
does shutting down (Ctrl-C, SIGTERM), when any cylinder has samples.
"""
from __future__ import annotations

import math
from datetime import datetime

import rclpy.logging
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.estimators import RECURSIVE_METHOD
from robot_dynid.hydraulics.cylinder_results import (cylinder_config_from_dict, load_cylinder_config,
                                                     save_cylinder_results)
from robot_dynid.hydraulics.online import LIVE_SETTINGS, N_PARAMETERS, OnlineHydraulicIdentifier, OnlineSettings
from robot_dynid.msg import HydraulicCylinderEstimates, HydraulicCylinderState, IdentificationStatus
from robot_dynid.nodes.node_runtime import (MAX_TIMER_PERIOD, MIN_TIMER_PERIOD, NodeParameter, ParameterTable,
                                            declare_table, in_range, integer_in, qos_parameter, readable_file_path,
                                            seconds, set_period, spin_node, subscription_qos, timer_period,
                                            writable_file_path)
from robot_dynid.recordings.recording import DropCounter, describe_dropped

__all__ = ["MAX_MIN_SAMPLES", "MAX_QUEUE_DEPTH", "SETTINGS", "ARRAYS", "WARNING_PERIOD", "PARAMETERS",
           "HydraulicIdentifierNode", "log", "results_path", "PARAMETER_FIELDS", "configs_from_arrays", "main"]

MAX_MIN_SAMPLES = 10_000_000
MAX_QUEUE_DEPTH = 100_000    # messages [1] a subscription may hold (memory)
SETTINGS = (  # (field of OnlineSettings, description, unit, check)
    ("forgetting", "RLS forgetting factor mu in (0, 1]; memory about 1 / (1 - mu) samples", None,
     in_range(None, 0.0, 1.0, allow_minimum=False)),
    ("initial_covariance", "RLS initial covariance P0 (identity times this) on the scaled columns, in (0, 1e12]",
     None, in_range(None, 0.0, 1e12, allow_minimum=False)),
    ("displacement_scale", "typical rod displacement |x|, the column scale of K, in (0, 10]", "m",
     in_range("m", 0.0, 10.0, allow_minimum=False)),
    ("velocity_scale", "typical rod speed |x'|, the column scale of fv (and of fs), in (0, 10]", "m/s",
     in_range("m/s", 0.0, 10.0, allow_minimum=False)),
    ("acceleration_window", "window of the causal derivative of the velocity giving x'', in (0, 10]", "s",
     in_range("s", 0.0, 10.0, allow_minimum=False)),
    ("max_gap", "a longer gap between two samples of a cylinder restarts the derivative, in (0, 3600]", "s",
     in_range("s", 0.0, 3600.0, allow_minimum=False)),
    ("convergence_window", "the estimate must have stayed in its band this long to be converged, in (0, 86400]",
     "s", in_range("s", 0.0, 86400.0, allow_minimum=False)),
    ("convergence_band", "relative half-width of the convergence band (the std is its floor), in (0, 1]", None,
     in_range(None, 0.0, 1.0, allow_minimum=False)),
    ("min_samples", f"samples before a cylinder can count as converged, in {N_PARAMETERS + 1}..{MAX_MIN_SAMPLES}",
     None, integer_in(N_PARAMETERS + 1, MAX_MIN_SAMPLES)),
)
ARRAYS = (  # (parameter, description, unit, the curtain-wall arm's values in config/hydraulic_identifier.yaml)
    ("cylinder_names", "cylinder names, as in HydraulicCylinderState", None, [f"cylinder_{k}" for k in range(1, 7)]),
    ("piston_masses", "moving mass m of piston and rod per cylinder (the arm's: Table IV)", "kg",
     [4.595, 4.914, 2.324, 1.937, 1.729, 1.705]),
    ("damping", "damping c per cylinder (the arm's: 2 N s/mm, as printed)", "N s/m", [2000.0] * 6),
    ("areas_a", "cap-side piston area A_a per cylinder (the arm's: assumed)", "m^2",
     [3.1172e-3, 3.1172e-3, 1.9635e-3, 1.2566e-3, 1.2566e-3, 1.2566e-3]),
    ("areas_b", "rod-side annulus area A_b per cylinder (the arm's: assumed)", "m^2",
     [2.0994e-3, 2.0994e-3, 1.3477e-3, 8.7650e-4, 8.7650e-4, 8.7650e-4]),
    ("loads", "external load F_L per cylinder when a message has none; unset or empty: 0", "N", [0.0] * 6),
)
WARNING_PERIOD = 5.0   # s between repeated warnings about skipped messages

PARAMETERS = ParameterTable("hydraulic_identifier", notes=(
    "Online RLS identification of hydraulic cylinders' stiffness K [N/m] and Stribeck friction fc [N], fv [N s/m], "
    "fs [N (s/m)^(1/3)] from robot_dynid/msg/HydraulicCylinderState (SI).",
    "The cylinders below are the six of the hydraulic curtain-wall arm (the hydraulic paper, "
    "shared/reference/curtain_wall_arm.yaml): piston masses from Table IV; damping c = 2 N s/mm = 2000 N s/m for "
    "every cylinder, as printed. The paper prints no areas: those below are ASSUMED standard bore/rod sizes, not "
    "data: 63/36 mm for joints 1-2, 50/28 mm for joint 3, 40/22 mm for joints 4-6 (A_a = pi/4 bore^2, A_b = A_a - "
    "pi/4 rod^2). Replace them with the real cylinders' areas, or set cylinders_file to a cylinder configuration "
    "(C.yaml)."), rows=(
    NodeParameter("cylinders_file", "", "cylinder configuration (YAML: cylinders: [{name, piston_mass, damping, "
                  "area_a, area_b, load}], the C.yaml of robot-dynid hydraulic identify); when set, it replaces the "
                  "arrays below; '' = the arrays", check=readable_file_path),
    *(NodeParameter(name, Parameter.Type.STRING_ARRAY if name == "cylinder_names" else Parameter.Type.DOUBLE_ARRAY,
                    description, unit, example=example, in_config=name != "loads")
      for name, description, unit, example in ARRAYS),
    *(NodeParameter(name, getattr(OnlineSettings(), name), f"{description}; " + (
        "live: applies to the next convergence check" if name in LIVE_SETTINGS else
        "read at start: the estimator's state is built with it"), unit, check, live=name in LIVE_SETTINGS)
      for name, description, unit, check in SETTINGS),
    NodeParameter("hydraulic_topic", "hydraulic_cylinder_states", "robot_dynid/msg/HydraulicCylinderState input"),
    qos_parameter("qos", "hydraulic_topic"),
    NodeParameter("queue_depth", 100, f"subscription queue depth (2 s at 50 Hz), in 1..{MAX_QUEUE_DEPTH}", "1",
                  integer_in(1, MAX_QUEUE_DEPTH)),
    NodeParameter("hydraulic_estimates_topic", "hydraulic_estimates",
                  "robot_dynid/msg/HydraulicCylinderEstimates output"),
    NodeParameter("hydraulic_status_topic", "hydraulic_identification_status",
                  "robot_dynid/msg/IdentificationStatus output"),
    NodeParameter("publish_period", 1.0, f"period of the estimates and status, in [{MIN_TIMER_PERIOD:g}, "
                  f"{MAX_TIMER_PERIOD:g}]; live: the next comes one new period after the set", "s", timer_period,
                  live=True),
    NodeParameter("results_file", "", "results file (YAML, the format of robot-dynid hydraulic identify) written by "
                  "~/save and at shutdown; '' = cylinder_results_<date>_<time>.yaml in the current directory; live: "
                  "applies to the next save", check=writable_file_path, live=True),
))
"""The hydraulic_identifier's parameters (:class:`~robot_dynid.nodes.node_runtime.ParameterTable`)."""


class HydraulicIdentifierNode(Node):
    def __init__(self, **node_options):
        """``node_options``: rclpy Node keyword arguments, e.g. ``context`` (one process, several nodes)."""
        super().__init__("hydraulic_identifier", **node_options)
        values = declare_table(self, PARAMETERS, apply={
            **{name: self.settings_setter(name) for name in LIVE_SETTINGS},
            "publish_period": lambda value: set_period(self.publish_timer, value),
            "results_file": lambda value: setattr(self, "results_file", results_path(value))})
        settings = OnlineSettings(**{name: values[name] for name, _, _, _ in SETTINGS})
        cylinders_file, topic = values["cylinders_file"], values["hydraulic_topic"]
        arrays = {name: values[name] for name, _, _, _ in ARRAYS}
        qos = subscription_qos(values["qos"], values["queue_depth"])
        self.results_file = results_path(values["results_file"])
        self.configs = {config.name: config for config in (load_cylinder_config(cylinders_file) if cylinders_file
                                                           else configs_from_arrays(**arrays))}
        self.identifier = OnlineHydraulicIdentifier(
            {name: config.cylinder for name, config in self.configs.items()}, settings,
            {name: config.load for name, config in self.configs.items() if config.load is not None})
        self.dropped = DropCounter()
        self.last_warning = {}
        estimates_topic = values["hydraulic_estimates_topic"]
        self.estimates_publisher = self.create_publisher(HydraulicCylinderEstimates, estimates_topic, 10)
        self.status_publisher = self.create_publisher(IdentificationStatus, values["hydraulic_status_topic"], 10)
        self.create_subscription(HydraulicCylinderState, topic, self.on_state, qos)
        self.create_service(Trigger, "~/save", self.on_save)
        self.publish_timer = self.create_timer(values["publish_period"], self.publish)
        self.get_logger().info(
            f"identifying cylinders {list(self.identifier.names)} ({cylinders_file or 'parameters'}) by RLS, "
            f"forgetting {settings.forgetting:g}; {topic} ({self.get_parameter('qos').value}) -> {estimates_topic}; "
            f"results to {self.results_file}")

    def settings_setter(self, name):
        """The :func:`declare` apply of the setting ``name`` of :data:`LIVE_SETTINGS`."""
        return lambda value: self.identifier.retune(**{name: value})

    def on_state(self, msg):
        stamp = seconds(msg.header.stamp)
        for reason in self.identifier.add(stamp, msg.name, msg.position, msg.velocity, msg.pressure_a,
                                          msg.pressure_b, msg.external_load):
            self.skip(reason, stamp)

    def skip(self, reason, stamp):
        """Count what was not used; warn at once for a new reason, then at most every WARNING_PERIOD."""
        self.dropped.add(reason, stamp)
        now = self.get_clock().now().nanoseconds * 1e-9
        if now - self.last_warning.get(reason, -math.inf) >= WARNING_PERIOD:
            self.last_warning[reason] = now
            self.get_logger().warning(f"HydraulicCylinderState stamped {stamp:.6f} s not used: {reason} "
                                      f"({self.dropped.counts[reason].count} so far)")

    def publish(self):
        estimates = self.identifier.estimates()
        stamps = [estimate.stamp for estimate in estimates.values() if not math.isnan(estimate.stamp)]
        header = Header()
        if stamps:
            header.stamp.sec = math.floor(max(stamps))
            header.stamp.nanosec = min(round((max(stamps) - header.stamp.sec) * 1e9), 999_999_999)
        else:
            header.stamp = self.get_clock().now().to_msg()
        values = list(estimates.values())
        self.estimates_publisher.publish(HydraulicCylinderEstimates(
            header=header, name=list(estimates),
            **{field: [float(e.parameters[i]) for e in values] for i, field in enumerate(PARAMETER_FIELDS)},
            **{f"{field}_std": [float(e.std[i]) for e in values] for i, field in enumerate(PARAMETER_FIELDS)},
            residual_rms=[float(e.residual_rms) for e in values], samples=[e.samples for e in values],
            converged=[e.converged for e in values]))
        self.status_publisher.publish(self.status(estimates))

    def status(self, estimates):
        used = sum(e.samples for e in estimates.values())
        converged = [name for name, e in estimates.items() if e.converged]
        if used == 0:
            state, message = IdentificationStatus.STATE_IDLE, "waiting for HydraulicCylinderState"
        elif len(converged) == len(estimates):
            state, message = IdentificationStatus.STATE_CONVERGED, "every cylinder converged"
        else:
            state = IdentificationStatus.STATE_COLLECTING
            message = f"converged: {converged or 'none'} of {list(estimates)}"
        relative = [e.std[i] / abs(e.parameters[i]) for e in estimates.values() for i in range(len(e.std))
                    if math.isfinite(e.std[i]) and e.parameters[i] != 0.0]
        idle = [name for name, e in estimates.items() if e.samples == 0]
        warnings = ([f"no samples yet of {idle}"] if idle and used else []) + (
            [f"messages not used: {describe_dropped(self.dropped.counts)}"] if self.dropped.counts else [])
        return IdentificationStatus(
            header=Header(stamp=self.get_clock().now().to_msg()), state=state, method=RECURSIVE_METHOD,
            samples_used=used, samples_dropped=self.dropped.total, progress=len(converged) / len(estimates),
            condition_number=0.0, max_relative_std=float(max(relative, default=0.0)), warnings=warnings,
            message=message)

    def save(self):
        """Write the results file; return (success, message)."""
        results = self.identifier.results(self.configs)
        if not results:
            return False, f"nothing to write to {self.results_file}: no cylinder has more than 4 samples yet"
        try:
            save_cylinder_results(self.results_file, results, {"source": f"hydraulic_identifier node {self.get_name()}"
                                                               f" (online RLS)"})
        except (DynIdError, OSError) as error:
            return False, f"could not write {self.results_file}: {error}"
        return True, f"wrote {self.results_file}: " + ", ".join(
            f"{result.name} ({result.n_samples} samples)" for result in results)

    def on_save(self, request, response):
        response.success, response.message = self.save()
        log(self.get_logger(), response.success, response.message)
        return response

    def close(self):
        """At shutdown: write the results file (the node's /rosout context is gone, so log directly)."""
        log(rclpy.logging.get_logger(f"robot_dynid.{self.get_name()}"), *self.save())


def log(logger, success, message):
    """Info on success, else a warning (rclpy refuses two severities from one call site)."""
    if success:
        logger.info(message)
    else:
        logger.warning(message)


def results_path(value):
    """The results file of the parameter ``results_file``: itself, or for '' a new dated name."""
    return value or datetime.now().strftime("cylinder_results_%Y%m%d_%H%M%S.yaml")


PARAMETER_FIELDS = ("stiffness", "fc", "fv", "fs")
"""HydraulicCylinderEstimates fields in HYDRAULIC_PARAMETER_NAMES order (K, fc, fv, fs)."""


def configs_from_arrays(cylinder_names, piston_masses, damping, areas_a, areas_b, loads):
    """The cylinders (list of CylinderConfig) of the node's parallel array parameters, checked as
    :func:`~robot_dynid.hydraulics.cylinder_results.load_cylinder_config` checks a file."""
    names = list(cylinder_names or [])
    if not names:
        raise DynIdError("no cylinders: set cylinders_file or the parameter cylinder_names")
    arrays = {"piston_masses": piston_masses, "damping": damping, "areas_a": areas_a, "areas_b": areas_b}
    for parameter, values in {**arrays, "loads": loads}.items():
        values = list(values or [])
        if len(values) != len(names) and not (parameter == "loads" and not values):
            raise DynIdError(f"parameter {parameter} has {len(values)} values; cylinder_names has {len(names)} "
                             f"({names})")
    entries = [{"name": name, "piston_mass": piston_masses[k], "damping": damping[k], "area_a": areas_a[k],
                "area_b": areas_b[k], **({"load": loads[k]} if loads else {})} for k, name in enumerate(names)]
    return cylinder_config_from_dict({"cylinders": entries}, "parameters")


def main(args=None):
    return spin_node(HydraulicIdentifierNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
