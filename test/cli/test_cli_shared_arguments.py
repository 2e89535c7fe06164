"""Arguments shared by several subcommands mean the same in each (one helper adds each, as in ros2cli):
``--robot`` a robot description, ``--stage`` stage kinds, ``--cycles`` a list of cycles (never a count: that is
``protocol --cycle-count``), and every identification option its one table row."""
import argparse
import json

import pytest

from robot_dynid import __version__
from robot_dynid.cli import build_parser, main
from robot_dynid.cli.protocol import _FORMER_CYCLES_GOES_IN
from robot_dynid.estimation.identification_options import OPTIONS
from robot_dynid.package_files import find_package_file

ER3A = str(find_package_file("config", "robots", "er3a.yaml"))


def subcommands(parser, path=()):
    """(command path, parser) of every subcommand and action, nested ones included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from subcommands(sub, path + (name,))


def actions_of(flag):
    """{command path: the argparse action of ``flag``} over every subcommand that has it."""
    return {path: action for path, sub in subcommands(build_parser()) for action in sub._actions
            if flag in action.option_strings}


def meaning(action):
    return (type(action).__name__, action.dest, action.type, action.nargs, action.metavar, action.choices)


@pytest.mark.parametrize("flag, commands", [
    ("--robot", {("base-parameters",), ("identify",), ("stages",), ("report",), ("fleet",),
                 ("excitation", "check"), ("excitation", "optimize"), ("protocol",), ("demo",)}),
    ("--stage", {("identify",), ("validate",), ("report",), ("payload", "identify"), ("hydraulic", "identify")}),
    ("--cycles", {("identify",), ("validate",), ("payload", "identify"), ("hydraulic", "identify")}),
])
def test_a_shared_argument_means_the_same_in_every_subcommand(flag, commands):
    found = {path: action for path, action in actions_of(flag).items() if action.help != argparse.SUPPRESS}
    assert set(found) == commands
    meanings = {meaning(action) for action in found.values()}
    assert len(meanings) == 1, meanings
    helps = {action.help.split(" (default: ")[0] for action in found.values()}
    assert len(helps) == 1, helps


def test_cycles_is_a_list_of_cycles_wherever_it_is_given():
    for path, action in actions_of("--cycles").items():
        if action.help != argparse.SUPPRESS:
            parse = action.type
            assert (parse("3,9,16"), parse("0-2")) == ([3, 9, 16], [0, 1, 2]), path


def test_protocols_former_cycles_counts_cycles_with_a_warning_naming_the_release_it_goes_in(capsys):
    """CONTRIBUTING.md's deprecation rule: ``protocol --cycles N``, renamed ``--cycle-count N``, still works in the
    release that renamed it and says, once, its replacement and the release it goes in."""
    code = main(["protocol", "--robot", ER3A, "--cycles", "2", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and json.loads(captured.out)["cycles"] == 2
    warning = ("WARNING robot_dynid.cli.protocol: protocol --cycles 2 is renamed --cycle-count 2 (--cycles is a list "
               "of cycles in identify, validate, payload and hydraulic); --cycles goes in robot-dynid 0.2.0\n")
    assert captured.err.count(warning) == 1
    assert build_parser().parse_args(["protocol", "--robot", "r.yaml", "--cycle-count", "24"]).cycle_count == 24


def test_protocols_former_cycles_and_cycle_count_together_are_one_error_line(capsys):
    assert main(["protocol", "--robot", ER3A, "--cycles", "2", "--cycle-count", "3"]) == 2
    assert capsys.readouterr().err == ("robot-dynid protocol: error: --cycles N is the former spelling of "
                                       "--cycle-count N: give --cycle-count alone\n")


def test_the_former_cycles_is_gone_by_the_release_its_warning_names():
    """Fails once the version reaches that release: then ``protocol --cycles`` is removed."""
    def release(text):
        return tuple(int(part) for part in text.split("."))
    assert release(__version__) < release(_FORMER_CYCLES_GOES_IN)


# arguments that share a flag with an identification option but are another subcommand's own: hydraulic identify's
# --method chooses the cylinders' estimator (every registered name, default rls)
OWN = {("hydraulic", "identify"): {"--method"}}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_an_identification_option_is_the_same_argument_in_every_subcommand(name):
    flag = OPTIONS[name].cli_flag
    found = {path: action for path, action in actions_of(flag).items() if flag not in OWN.get(path, ())}
    assert found, f"{name} is an argument of no subcommand"
    assert len({(action.dest, action.default, type(action).__name__) for action in found.values()}) == 1
    for path, action in found.items():
        assert action.dest == name and action.default == OPTIONS[name].default, path
        assert set(action.choices or ()) <= set(OPTIONS[name].choices or ()), path
        # one help, but a subcommand that allows fewer choices describes only those
        allowed = tuple(action.choices) if action.choices else None
        assert OPTIONS[name].describe(choices=False, allowed=allowed).replace("%", "%%") in action.help, path
        left_out = set(OPTIONS[name].choices or ()) - set(action.choices or OPTIONS[name].choices or ())
        assert not any(f"{choice}: " in action.help for choice in left_out), (path, action.help)


def test_report_takes_every_identification_option_identify_takes():
    flags = {path: {action.option_strings[0] for action in sub._actions if action.option_strings}
             for path, sub in subcommands(build_parser())}
    options = {option.cli_flag for option in OPTIONS.values()}
    assert options <= flags[("identify",)] and options <= flags[("report",)]


def test_the_torque_check_can_be_turned_off_wherever_it_runs():
    """Every command that checks recorded torques takes --no-torque-check (predict reads none: it has nothing
    to check)."""
    commands = {("identify",), ("validate",), ("report",), ("payload", "identify"), ("fleet",)}
    assert set(actions_of("--no-torque-check")) == commands


@pytest.mark.parametrize("arguments, command", [
    (["identify", "--robot", "r.yaml", "--data", "d.csv", "--out", "m.yaml", "--no-such-option"], "identify"),
    (["payload", "identify", "--model", "m.yaml", "--data", "d.csv", "--out", "p.yaml", "--bogus", "1"],
     "payload identify"),
    (["validate", "--model", "m.yaml", "--data", "d.csv", "--method", "ols"], "validate"),
])
def test_an_argument_a_subcommand_does_not_know_is_its_error_pointing_to_its_help(arguments, command, capsys):
    with pytest.raises(SystemExit) as exit_code:
        main(arguments)
    assert exit_code.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(f"robot-dynid {command}: error: unrecognized arguments: ")
    assert error.endswith(f" (see robot-dynid {command} --help)\n") and error.count("\n") == 1
