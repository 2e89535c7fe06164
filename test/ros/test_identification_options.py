"""Every identification option of the table through both faces, as scikit-learn's common estimator tests run
every estimator: the command line's parser (default, a value outside its interval refused naming the option,
its choices) and the identifier node's declared descriptor (description with the unit, range = interval,
read-only), in this process.

The intervals and units the table must hold are written out here (EXPECTED), so that a change of the table
is a change of this test too; an option added to the table without a row here fails the first test.
"""
import math

import pytest
from rclpy.parameter import Parameter

from robot_dynid.cli import build_parser
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.identification_options import OPTIONS
from robot_dynid.nodes.identifier import IdentifierNode

# name: (command line flag, unit, interval (minimum, maximum, minimum included) or None, declared by the node)
EXPECTED = {
    "friction": ("--friction", None, None, True),
    "friction_drift": ("--friction-drift", None, None, True),
    "dead_band": ("--dead-band", "rad/s", (0.0, None, True), True),
    "sign_sharpness": ("--sign-sharpness", "s/rad", (0.0, 1e6, False), True),
    "stribeck_velocity": ("--stribeck-velocity", "rad/s", (0.0, 100.0, False), True),
    "reversal_lead": ("--reversal-lead", "s", (0.0, 0.1, True), True),
    "min_speed": ("--min-speed", "rad/s", (0.0, None, True), True),
    "armature": ("--armature", None, None, True),
    "friction_side": ("--friction-side", None, None, True),
    "offset": ("--offset", None, None, True),
    "method": ("--method", None, None, True),
    "forgetting": ("--forgetting", "1", (0.0, 1.0, False), True),
    "lowpass": ("--lowpass", "Hz", (0.0, None, True), False),
    "check_torque_scale": ("--no-torque-check", None, None, True),
    "file_offsets": ("--file-offsets", None, None, False),
    "consistent": ("--consistent", None, None, True),
    "bounds_file": ("--bounds", None, None, True),
    "prior_mode": ("--prior-mode", None, None, True),
    "prior_weight": ("--prior-weight", "1", (0.0, None, False), False),
}
REQUIRED = ["identify", "--robot", "r.yaml", "--data", "d.csv", "--out", "m.yaml"]


def test_the_table_holds_the_expected_options():
    assert list(OPTIONS) == list(EXPECTED)
    for name, (flag, unit, interval, node) in EXPECTED.items():
        option = OPTIONS[name]
        actual = None if not option.bounded else (option.minimum, option.maximum, option.allow_minimum)
        assert (option.cli_flag, option.unit, actual, option.node) == (flag, unit, interval, node), name


def parse(*arguments):
    return build_parser().parse_args(REQUIRED + list(arguments))


def refused(capsys, *arguments) -> str:
    """The one-line error of parsing ``arguments`` (exit 2)."""
    with pytest.raises(SystemExit) as exit_code:
        parse(*arguments)
    assert exit_code.value.code == 2
    return capsys.readouterr().err


def outside(option) -> list[float]:
    """Values just outside the option's interval, and NaN."""
    values = [math.nan]
    if option.minimum is not None:
        values.append(option.minimum if not option.allow_minimum else option.minimum - 1.0)
    if option.maximum is not None:
        values.append(option.maximum * 2.0 + 1.0)
    return values


@pytest.mark.parametrize("name", list(OPTIONS))
def test_every_option_through_the_command_line(capsys, name):
    option = OPTIONS[name]
    flag = EXPECTED[name][0]
    assert getattr(parse(), name) == option.default
    if option.kind is bool:
        assert getattr(parse(flag), name) is (not option.default)
    elif option.choices is not None:
        for choice in option.choices:
            assert getattr(parse(flag, choice), name) == choice
        error = refused(capsys, flag, "no_such_choice")
        assert f"argument {flag}: invalid choice: 'no_such_choice'" in error, error
    elif option.kind is str:
        assert getattr(parse(flag, "bounds.yaml"), name) == "bounds.yaml"
    else:
        for value in outside(option):
            error = refused(capsys, flag, repr(value))
            assert error.startswith(f"robot-dynid identify: error: {flag} must be finite and "), error
            assert f"[{option.unit}" in error and error.endswith(f", got {value!r} (see robot-dynid identify --help)\n")
        for word in option.words:
            assert getattr(parse(flag, word), name) == word
        inside = option.maximum if option.maximum is not None else option.minimum + 1.0
        assert getattr(parse(flag, repr(inside)), name) == inside


def test_forgetting_outside_zero_one_is_refused_before_any_file_is_read(capsys):
    """``identify --forgetting`` was not checked at all (a factor of 1.5 made RLS diverge)."""
    assert refused(capsys, "--forgetting", "1.5").splitlines() == [
        "robot-dynid identify: error: --forgetting must be finite and in (0, 1] [1], got 1.5 "
        "(see robot-dynid identify --help)"]
    assert "--forgetting must be finite and in (0, 1] [1], got 0.0" in refused(capsys, "--forgetting", "0")
    assert parse("--forgetting", "0.99").forgetting == 0.99


@pytest.fixture(scope="module")
def identifier(context):
    node = IdentifierNode(context=context)
    yield node
    node.destroy_node()


@pytest.mark.parametrize("name", list(OPTIONS))
def test_every_option_through_the_identifier_nodes_descriptor(identifier, name):
    option = OPTIONS[name]
    if not EXPECTED[name][3]:
        assert not identifier.has_parameter(name)
        return
    descriptor = identifier.describe_parameter(name)
    assert descriptor.read_only
    assert descriptor.description.startswith(option.help)
    unit, interval = EXPECTED[name][1:3]
    if unit is not None:
        assert f"[{unit}]" in descriptor.description, descriptor.description
    if interval is None:
        assert not descriptor.floating_point_range and not descriptor.integer_range
    else:
        [actual] = descriptor.floating_point_range
        minimum, maximum, _ = interval
        assert (actual.from_value, actual.to_value) == (minimum, math.inf if maximum is None else maximum)
    for choice in option.choices or ():
        assert repr(choice) in descriptor.description
    default = "" if option.default is None else option.default
    assert identifier.get_parameter(name).value == default


@pytest.mark.parametrize("name", [name for name, option in OPTIONS.items() if option.node and not option.bounded
                                  and option.kind is str and option.choices])
def test_a_choice_the_node_does_not_know_is_refused_naming_the_parameter(context, name):
    with pytest.raises(DynIdError) as error:
        IdentifierNode(context=context, parameter_overrides=[Parameter(name, value="no_such_choice")])
    assert str(error.value) == (f"parameter {name} must be one of {list(OPTIONS[name].choices)}, "
                                "got 'no_such_choice'")


def test_the_node_refuses_an_open_bound_with_the_interval(context):
    """rclpy's range includes both ends; the open end of (0, 1] is refused by the option's check."""
    with pytest.raises(DynIdError, match=r"^parameter forgetting must be finite and in \(0, 1\] \[1\], got 0.0$"):
        IdentifierNode(context=context, parameter_overrides=[Parameter("forgetting", value=0.0)])
