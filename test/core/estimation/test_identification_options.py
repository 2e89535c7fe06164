"""The identification options' table as the core uses it: settings_from_options checks every value against it,
in validators' wording, naming the option as the caller knows it (messages written out by hand)."""
import pytest

from robot_dynid.errors import DynIdError
from robot_dynid.estimation.identification import IdentificationSettings, settings_from_options
from robot_dynid.estimation.identification_options import OPTION_DEFAULTS, OPTIONS


@pytest.mark.parametrize("options, message", [
    ({"forgetting": 1.5}, "forgetting must be finite and in (0, 1] [1], got 1.5"),
    ({"forgetting": 0.0}, "forgetting must be finite and in (0, 1] [1], got 0.0"),
    ({"method": "lasso"}, "method must be one of ['ols', 'wls', 'rls'], got 'lasso'"),
    ({"armature": "yes"}, "armature must be true or false, got 'yes'"),
    ({"friction": 3}, "friction must be a string, got 3"),
    ({"sign_sharpness": 2e6}, "sign_sharpness must be finite and in (0, 1e+06] [s/rad], got 2000000.0"),
    ({"stribeck_velocity": 0.0}, "stribeck_velocity must be finite and in (0, 100] [rad/s], got 0.0"),
    ({"reversal_lead": 0.2}, "reversal_lead must be finite and in [0, 0.1] [s], got 0.2"),
    ({"dead_band": -0.1}, "dead_band must be finite and >= 0 [rad/s], got -0.1"),
    ({"lowpass": -5.0}, "lowpass must be finite and >= 0 [Hz], got -5.0"),
    ({"prior_weight": "often"}, "prior_weight must be finite and > 0 [1 (or auto)], got 'often'"),
    ({"friction_side": "wrist"}, "friction_side must be one of ['auto', 'joint', 'motor', 'both'], got 'wrist'"),
    ({"prior_mode": "strong"}, "prior_mode must be one of ['two_step', 'regularised', 'none'], got 'strong'"),
])
def test_a_value_outside_its_option_is_refused_naming_it(er3a_robot, options, message):
    with pytest.raises(DynIdError) as refused:
        settings_from_options(options, er3a_robot)
    assert str(refused.value) == message
    with pytest.raises(DynIdError) as labelled:
        settings_from_options(options, er3a_robot, label=lambda name: f"parameter {name}")
    assert str(labelled.value) == "parameter " + message


def test_the_defaults_are_the_settings_defaults_and_pass_their_own_checks(er3a_robot):
    assert settings_from_options(dict(OPTION_DEFAULTS), er3a_robot) == settings_from_options({}, er3a_robot)
    assert settings_from_options({}, er3a_robot).forgetting == IdentificationSettings().forgetting == 1.0
    for name, option in OPTIONS.items():
        assert option.check(option.default) == option.default, name


def test_empty_and_zero_mean_none_where_the_table_says_so(er3a_robot):
    """The node gives '' for a file it has none of; ``lowpass`` 0 is no filter."""
    options = {"bounds_file": "", "lowpass": 0.0, "consistent": True, "method": "wls"}
    settings = settings_from_options(options, er3a_robot)
    assert settings.lowpass is None and settings.consistency.constraints is None
    assert settings_from_options({"prior_weight": "auto", "prior_mode": "regularised", "consistent": True},
                                 er3a_robot).consistency.prior_weight == "auto"


def test_the_descriptions_state_interval_and_unit():
    assert OPTIONS["forgetting"].describe().endswith("; in (0, 1] [1]")
    assert OPTIONS["dead_band"].describe().endswith("; >= 0 [rad/s]")
    assert OPTIONS["prior_weight"].describe().endswith("; > 0 or auto [1]; not given: 100")
    assert OPTIONS["method"].describe().endswith("; one of ['ols', 'wls', 'rls']")
    assert "one of" not in OPTIONS["method"].describe(choices=False)
