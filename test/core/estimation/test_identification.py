"""The identification pipeline: chunking, segment selection, RLS versus batch, bad data named."""
import numpy as np
import pytest

from robot_dynid.errors import DynIdError, IdentificationError
from robot_dynid.estimation.identification import IdentificationSettings, identify, settings_from_options
from robot_dynid.estimation.identification_options import OPTIONS
from robot_dynid.estimation.validation import validate_model
from robot_dynid.experiment.simulation import SimulatedRobot, plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording
from robot_dynid.reports.tables import format_model_summary

NOISE = 0.2  # N m
FRICTION = friction_model("coulomb_viscous")


@pytest.fixture(scope="module")
def robot():
    return load_robot(find_package_file("config", "robots", "ur5.yaml"))


def motion(robot, seed, duration=16.0, dt=0.01):
    rng = np.random.default_rng(seed)
    scale = 0.1 * np.array([lim.velocity for lim in robot.limits])[:, None]
    trajectory = FourierTrajectory(robot.joint_names, period=8.0, q0=np.zeros(6),
                                   a=rng.normal(size=(6, 4)) * scale, b=rng.normal(size=(6, 4)) * scale)
    t = time_grid(duration, dt=dt)
    return (t, *trajectory.evaluate(t))


def simulator(robot, coulomb):
    inertial = plausible_parameters(robot, seed=2)
    friction = np.column_stack([coulomb, np.full(6, 1.0)]).ravel()
    return SimulatedRobot(Regressor(robot, FRICTION), np.concatenate([inertial, friction]), np.full(6, NOISE))


def recording(robot, sim, seed, **labels):
    t, q, qd, qdd = motion(robot, seed)
    return Recording.from_arrays(robot.joint_names, t, q, qd, qdd, sim.torques(q, qd, qdd, rng=seed), **labels)


def test_chunk_size_does_not_change_the_estimate(robot):
    data = recording(robot, simulator(robot, np.full(6, 2.0)), seed=1)
    small = identify(data, robot, IdentificationSettings(friction=FRICTION, chunk_size=97))
    large = identify(data, robot, IdentificationSettings(friction=FRICTION, chunk_size=100000))
    np.testing.assert_allclose(small.values, large.values, rtol=1e-9, atol=1e-12)


def test_rls_with_forgetting_one_agrees_with_batch_least_squares(robot):
    data = recording(robot, simulator(robot, np.full(6, 2.0)), seed=1)
    batch = identify(data, robot, IdentificationSettings(friction=FRICTION, method="ols"))
    rls = identify(data, robot, IdentificationSettings(friction=FRICTION, method="rls"), base=batch.base)
    np.testing.assert_allclose(rls.values, batch.values, rtol=1e-5, atol=1e-6 * np.abs(batch.values).max())
    np.testing.assert_allclose(rls.std, batch.std, rtol=0.05)


def test_cycles_are_identified_separately_or_pooled(robot):
    cold, warm = np.full(6, 3.0), np.full(6, 2.0)
    first = recording(robot, simulator(robot, cold), seed=1, cycle=np.zeros(1601, int),
                      stage=np.full(1601, "excitation"))
    second = recording(robot, simulator(robot, warm), seed=2, cycle=np.ones(1601, int),
                       stage=np.full(1601, "excitation"))
    columns = (np.vstack([getattr(first, f), getattr(second, f)]) for f in ("q", "qd", "qdd", "tau"))
    both = Recording.from_arrays(robot.joint_names, np.concatenate([first.time, second.time + 20.0]), *columns,
                                 cycle=np.concatenate([first.cycle, second.cycle]),
                                 stage=np.concatenate([first.stage, second.stage]))
    settings = IdentificationSettings(friction=FRICTION)

    def coulomb(cycles):
        model = identify(both.select(stage="excitation", cycles=cycles), robot, settings)
        return model.values[[model.base.names.index(f"fc{j + 1}") for j in range(6)]]

    np.testing.assert_allclose(coulomb([0]), cold, atol=0.05)
    np.testing.assert_allclose(coulomb([1]), warm, atol=0.05)
    pooled = coulomb([0, 1])
    assert np.all((pooled > warm + 0.1) & (pooled < cold - 0.1)), pooled


def test_dropped_samples_are_counted_in_the_model(robot):
    t, q, qd, qdd = motion(robot, 3)
    tau = simulator(robot, np.full(6, 2.0)).torques(q, qd, qdd, rng=3)
    tau[[10, 20, 30], 2] = np.nan
    q[40, 0] = np.inf
    model = identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot,
                     IdentificationSettings(friction=FRICTION))
    assert model.metrics["n_dropped"] == 4
    assert model.metrics["n_samples"] == len(t) - 4


def test_a_joint_that_never_moves_is_named(robot):
    t, q, qd, qdd = motion(robot, 4)
    q[:, 5], qd[:, 5], qdd[:, 5] = 0.3, 0.0, 0.0
    tau = simulator(robot, np.full(6, 2.0)).torques(q, qd, qdd, rng=4)
    with pytest.raises(IdentificationError, match=r"fc6"):
        identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot,
                 IdentificationSettings(friction=FRICTION))


def test_no_model_with_a_non_finite_value_is_made(robot):
    """One torque of 1e300 (read without a robot check) overflows the normal equations: the error names
    a parameter and the cause instead of writing a model holding NaN."""
    t, q, qd, qdd = motion(robot, 3)
    tau = simulator(robot, np.full(6, 2.0)).torques(q, qd, qdd, rng=3)
    tau[100, 2] = 1e300
    with pytest.raises(IdentificationError,
                       match=r"identification gave a non-finite (value|standard deviation) for parameter \w+ "
                             r".*the torques of joint 3 hold values too large"):
        identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot,
                 IdentificationSettings(friction=FRICTION))


def test_one_builder_of_settings_for_the_command_line_and_the_node(robot):
    """The identifier node's parameters and the CLI's options are the same mapping."""
    settings = settings_from_options({"friction": "stribeck_cbrt", "friction_drift": "time", "dead_band": 0.01,
                                      "armature": True, "offset": True, "method": "wls", "consistent": True,
                                      "prior_mode": "none", "bounds_file": "", "lowpass": 0.0}, robot)
    friction = settings.friction
    assert (friction.name, friction.drift, friction.dead_band) == ("stribeck_cbrt", "time", 0.01)
    assert (settings.armature, settings.offset, settings.method, settings.lowpass) == (True, True, "wls", None)
    assert settings.consistency is not None and not settings.consistency.use_prior
    assert settings_from_options({}, robot) == IdentificationSettings(friction=friction_model("coulomb_viscous"))
    with pytest.raises(DynIdError, match=r"unknown identification option\(s\) \['armatures'\]"):
        settings_from_options({"armatures": True}, robot)
    with pytest.raises(DynIdError, match="not rls"):
        settings_from_options({"method": "rls", "consistent": True}, robot)
    with pytest.raises(DynIdError, match="^--bounds bounds the consistent fit: give --consistent with it"):
        settings_from_options({"bounds_file": "bounds.yaml"}, robot, label=lambda name: OPTIONS[name].cli_flag)


def test_a_dead_band_at_or_above_a_joint_velocity_limit_is_refused_naming_the_joint(er3a_robot):
    """ER3A's velocity limits (its robot file): j1 and j2 4.0143 rad/s, j3 4.3633, j4 and j5 5.5851, j6 7.3304.
    A dead band at or above a joint's limit zeroes that joint's friction columns over all of its motion."""
    er3a = er3a_robot
    with pytest.raises(DynIdError) as refused:
        settings_from_options({"dead_band": 4.2}, er3a, label=lambda option: f"parameter {option}")
    message = str(refused.value)
    assert message.startswith("parameter dead_band = 4.2 rad/s is at or above the velocity limit of joint(s) "
                              "j1 (4.0143 rad/s), j2 (4.0143 rad/s):"), message
    assert "j3" not in message and "\n" not in message
    with pytest.raises(DynIdError, match=r"dead_band = 4.0143 rad/s is at or above .* j1 \(4.0143"):
        settings_from_options({"dead_band": 4.0143}, er3a)
    with pytest.raises(DynIdError, match=r"dead_band must be finite and >= 0 \[rad/s\], got inf"):
        settings_from_options({"dead_band": float("inf")}, er3a)
    assert settings_from_options({"dead_band": 4.0}, er3a).friction.dead_band == 4.0


def test_exact_data_flag_no_parameter_as_poorly_excited_and_an_unexcited_one_is_named(robot):
    """Noise-free torques of a robot whose products of inertia and lateral first moments are exactly 0:
    those base parameters come out 0 +- 1e-8, which std / |value| called poorly excited; judged by the
    torque their std moves, none is. With noise and joint 6 nearly still (a thousandth of its excitation),
    its viscous friction fv6 is unexcited: flagged and its joint named."""
    regressor = Regressor(robot, FRICTION)
    inertial = plausible_parameters(robot, seed=2).reshape(6, 10)
    inertial[:, [1, 2, 5, 7, 8]] = 0.0                       # mx, my, Ixy, Ixz, Iyz
    truth = np.concatenate([inertial.ravel(), np.column_stack([np.full(6, 2.0), np.full(6, 1.0)]).ravel()])
    t, q, qd, qdd = motion(robot, 1)
    exact = identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, regressor.torque(truth, q, qd, qdd)),
                     robot, IdentificationSettings(friction=FRICTION))
    zeros = np.flatnonzero(exact.base.projection @ truth == 0.0)
    with np.errstate(divide="ignore"):
        assert zeros.size >= 5 and np.all(exact.std[zeros] / np.abs(exact.values[zeros]) > 1.0)  # the old rule
    assert exact.metrics["poorly_excited"] == [] and exact.metrics["warnings"] == []

    rng = np.random.default_rng(1)
    scale = 0.1 * np.array([lim.velocity for lim in robot.limits])[:, None]
    a, b = rng.normal(size=(6, 4)) * scale, rng.normal(size=(6, 4)) * scale
    a[5] *= 1e-3
    b[5] *= 1e-3
    q, qd, qdd = FourierTrajectory(robot.joint_names, period=8.0, q0=np.zeros(6), a=a, b=b).evaluate(t)
    tau = regressor.torque(truth, q, qd, qdd) + np.random.default_rng(0).normal(0.0, NOISE, q.shape)
    noisy = identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot,
                     IdentificationSettings(friction=FRICTION))
    flagged = {entry["name"]: entry for entry in noisy.metrics["poorly_excited"]}
    assert "fv6" in flagged and flagged["fv6"]["joint"] == "wrist_3_joint", flagged
    assert not {f"f{kind}{j}" for kind in "cv" for j in range(1, 6)} & set(flagged), flagged
    assert "fv6 (" in noisy.metrics["warnings"][0] and "wrist_3_joint" in noisy.metrics["warnings"][0]


def test_a_training_residual_below_the_normal_equations_resolution_is_printed_as_computed(robot):
    """Torques with 1.4e-8 N m of noise: the residual of the accumulated normal equations cancels to 0 or to
    rounding noise at that level; the summary prints the residual of the model's own predictions (numpy)."""
    regressor = Regressor(robot, FRICTION)
    truth = np.concatenate([plausible_parameters(robot, seed=2), np.tile([2.0, 1.0], 6)])
    t, q, qd, qdd = motion(robot, 1)
    tau = regressor.torque(truth, q, qd, qdd) + np.random.default_rng(2).normal(0.0, 1.4e-8, q.shape)
    model = identify(Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau), robot,
                     IdentificationSettings(friction=FRICTION))
    expected = np.sqrt(np.mean((model.torque(q, qd, qdd) - tau) ** 2, axis=0))
    assert np.all((expected > 1.2e-8) & (expected < 1.6e-8))
    printed = format_model_summary(model).splitlines()
    for joint, value in zip(robot.joint_names, expected):
        row = next(line for line in printed if line.startswith(joint + " "))
        assert float(row.split()[1]) == pytest.approx(value, rel=1e-3), row
        assert row.split()[1] == f"{value:.4g}"


def test_a_few_validation_samples_beyond_the_identified_range_are_counted_not_rounded_to_zero_percent(robot):
    """3 of 1601 held-out samples faster than the identified speed of joint 1 (0.19 %, which ':.0%' printed as 0%)
    are counted; 40 of 1601 (2.5 %) get a percentage with their count."""
    data = recording(robot, simulator(robot, np.full(6, 2.0)), seed=1)
    model = identify(data, robot, IdentificationSettings(friction=FRICTION))
    for rows, share in (([100, 200, 300], "3 of 1601 validation samples"),
                        (range(100, 140), "2% (40 of 1601) of the validation samples")):
        qd = data.qd.copy()
        qd[list(rows), 0] = 1.5 * np.abs(data.qd[:, 0]).max()
        held_out = Recording.from_arrays(robot.joint_names, data.time, data.q, qd, data.qdd, data.tau)
        warnings = validate_model(model, [held_out]).warnings
        assert len(warnings) == 1 and warnings[0].startswith(f"shoulder_pan_joint: {share} move faster than the "
                                                             "model was identified on"), warnings
