"""Every numeric node parameter given NaN, a negative value, zero or a huge value.

A node constructed with such a value must refuse it with one DynIdError line naming the parameter
(``parameter rate_hz must be ...``) before it creates anything that moves an arm or writes a file,
unless the value is documented as meaningful (e.g. ``status_period`` 0 = off): those are listed
under ``accepts``. The matrix constructs the real node classes in this process, in one rclpy
context (hundreds of cases in seconds); ``test_node_parameters.py`` checks, with the installed
executables in their own processes, that such a refusal is exit 2 and one line on stderr.
"""
import math

import pytest
from rclpy.parameter import Parameter

from robot_dynid.errors import DynIdError
from ros_graph import construct_node

BAD_FLOATS = {"nan": math.nan, "negative": -1.0, "zero": 0.0, "huge": 1e300}
BAD_INTEGERS = {"negative": -1, "zero": 0, "huge": 2 ** 62}


def _cases(node, parameters):
    """(node, parameter, kind, value) of every bad value of every parameter not in its ``accepts``.

    ``parameters``: {name: (type, accepts)}, type ``float`` or ``int``, accepts a tuple of the kinds
    (``nan``, ``negative``, ``zero``, ``huge``) the parameter takes as documented values.
    """
    cases = []
    for name, (kind_of_value, accepts) in parameters.items():
        bad = BAD_FLOATS if kind_of_value is float else BAD_INTEGERS
        cases += [(node, name, kind, value) for kind, value in bad.items() if kind not in accepts]
    return cases


# Each node's numeric parameters: {name: (float | int, kinds it accepts as documented values)}.
# experiment_runner
EXPERIMENT_RUNNER = {"cycles": (int, ()), "excitation_periods": (int, ()), "excitation_count": (int, ()),
                     "friction_level_duration": (float, ("zero",)), "warmup_duration": (float, ("zero",)),
                     "rate_hz": (float, ()), "window_duration": (float, ()), "lookahead": (float, ("zero",)),
                     "deviation_threshold": (float, ()), "start_tolerance": (float, ("zero",)),
                     "approach_speed_fraction": (float, ("zero",)), "max_joint_state_age": (float, ()),
                     "start_delay": (float, ("zero",)), "stop_duration": (float, ())}
# sim_robot
SIM_ROBOT = {"noise_std": (float, ("zero",)), "seed": (int, ("zero", "huge")), "cold_excess": (float, ("zero",)),
             "warmup_time_constant": (float, ()), "cold_excess_2": (float, ("zero",)),
             "warmup_time_constant_2": (float, ()), "rate": (float, ()), "batch_period": (float, ()),
             "max_lag": (float, ()), "timestep": (float, ()), "control_rate": (float, ()),
             "control_bandwidth": (float, ()), "damping_ratio": (float, ()), "feedforward_timeout": (float, ()),
             "feedforward_delay": (float, ("zero",))}
# feedforward
FEEDFORWARD = {"position_margin": (float, ("negative", "zero")), "velocity_margin": (float, ()),
               "acceleration_margin": (float, ()), "effort_margin": (float, ()), "model_effort_margin": (float, ()),
               "reference_timeout": (float, ()), "status_period": (float, ()), "max_points": (int, ()),
               "service_queue_depth": (int, ()), "cold_start_stamp": (float, ("zero",)),
               "cooling_time_constant": (float, ("zero",)), "standstill_velocity": (float, ()),
               "max_temperature_age": (float, ()), "reference_acceleration_window": (float, ("zero",)),
               "command_lead": (float, ("zero",))}
# recorder
RECORDER = {"queue_depth": (int, ()), "flush_period": (float, ()), "status_period": (float, ("zero",)),
            "min_free_space": (float, ("zero",)), "silent_topic_delay": (float, ())}
# identifier
IDENTIFIER = {"dead_band": (float, ("zero",)), "sign_sharpness": (float, ()), "stribeck_velocity": (float, ()),
              "reversal_lead": (float, ("zero",)), "min_speed": (float, ("zero",)),
              "forgetting": (float, ()), "max_samples": (int, ()), "max_holdout_rsd": (float, ()),
              "max_condition": (float, ()), "status_period": (float, ()), "stage_latency": (float, ("zero",)),
              "payload_mass": (float, ("zero",)), "derivative_window": (float, ("zero",)),
              "tracking_forgetting": (float, ()),
              "tracking_change": (float, ())}
# hydraulic_identifier
HYDRAULIC_IDENTIFIER = {name: (float, ()) for name in (
    "forgetting", "initial_covariance", "displacement_scale", "velocity_scale", "acceleration_window", "max_gap",
    "convergence_window", "convergence_band", "publish_period")} | {"min_samples": (int, ()), "queue_depth": (int, ())}

NODES = {"experiment_runner": EXPERIMENT_RUNNER, "sim_robot": SIM_ROBOT, "feedforward": FEEDFORWARD,
         "recorder": RECORDER, "identifier": IDENTIFIER, "hydraulic_identifier": HYDRAULIC_IDENTIFIER}
CASES = [case for node, parameters in NODES.items() for case in _cases(node, parameters)]


@pytest.mark.parametrize("node, parameter, kind, value", CASES,
                         ids=[f"{node}-{parameter}-{kind}" for node, parameter, kind, _ in CASES])
def test_a_bad_numeric_parameter_is_refused_naming_it(context, tmp_path, node, parameter, kind, value):
    with pytest.raises(DynIdError) as refused:
        construct_node(node, context, tmp_path, **{parameter: value})
    message = str(refused.value)
    assert f"parameter {parameter}" in message and "\n" not in message, message


@pytest.mark.parametrize("node", NODES)
def test_every_numeric_parameter_of_each_node_is_in_the_matrix(context, tmp_path, node):
    """A parameter added later without a row here would go unchecked."""
    built = construct_node(node, context, tmp_path)
    numeric = {name for name, parameter in built._parameters.items()
               if parameter.type_ in (Parameter.Type.DOUBLE, Parameter.Type.INTEGER) and name != "use_sim_time"}
    assert numeric == set(NODES[node]), (node, sorted(numeric ^ set(NODES[node])))
