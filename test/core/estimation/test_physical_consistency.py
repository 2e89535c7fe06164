"""Physical consistency: pseudo-inertia, consistent identification (SDP), plausibility checks.

A 7-DOF arm (config/robots/panda.yaml) with Coulomb + viscous friction: p = 70 inertial + 14
friction standard parameters, 57 base parameters. The true parameters are consistent
(``plausible_parameters``: cylinders and spheres) with positive friction (``default_friction``).
"""
import sys

import numpy as np
import pytest

from robot_dynid.errors import DataError, IdentificationError
from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.physical_consistency import (DEFAULT_DELTA, ConsistencyConstraints, ParameterLayout,
                                                         SolverUnavailableError,
                                                         check_plausibility, compress,
                                                         link_consistency, load_constraints,
                                                         pseudo_inertia, solve_consistent)
from robot_dynid.experiment.simulation import (SimulatedRobot, default_friction,
                                               plausible_parameters)
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.reports.tables import format_consistency

SPRING_JOINT = 1        # panda_joint2, the shoulder: gravity torques there can mimic a spring
SPRING = 5.0            # N m/rad


@pytest.fixture(scope="module")
def arm():
    robot = load_robot(find_package_file("config", "robots", "panda.yaml"))
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    base = compute_base_parameters(regressor)
    true = np.concatenate([plausible_parameters(robot, seed=3), default_friction(regressor, seed=3)])
    lower, upper = (np.array([limit.position[i] for limit in robot.limits]) for i in (0, 1))
    return {"robot": robot, "regressor": regressor, "base": base, "true": true,
            "layout": ParameterLayout.from_regressor(regressor), "centre": 0.5 * (lower + upper),
            "velocity": np.array([limit.velocity for limit in robot.limits])}


def motion(arm, seed, amplitude, duration, speed=1.0):
    """A 3-harmonic Fourier trajectory about the middle of the joint ranges; ``amplitude`` is
    the velocity scale as a fraction of the limits, ``speed`` compresses time."""
    rng = np.random.default_rng(seed)
    n = arm["robot"].n_joints
    scale = amplitude * speed * arm["velocity"][:, None] / np.sqrt(3)
    trajectory = FourierTrajectory(arm["robot"].joint_names, period=8.0 / speed, q0=arm["centre"],
                                   a=rng.normal(size=(n, 3)) * scale, b=rng.normal(size=(n, 3)) * scale)
    return trajectory.evaluate(time_grid(duration / speed, dt=0.01))


def robot_torques(arm, states, noise_std=0.0, spring=0.0, seed=0):
    """The simulator's torques plus an unmodelled spring -k (q_j - q0) on SPRING_JOINT."""
    q, qd, qdd = states
    tau = SimulatedRobot(arm["regressor"], arm["true"], noise_std).torques(q, qd, qdd, rng=seed)
    tau[:, SPRING_JOINT] -= spring * (q[:, SPRING_JOINT] - arm["centre"][SPRING_JOINT])
    return tau


def accumulate(arm, states, tau):
    base = arm["base"]
    accumulator = LeastSquaresAccumulator(arm["robot"].n_joints, base.rank)
    return accumulator.add(base.select(arm["regressor"].compute(*states)), tau)


def link_scales(arm):
    """Per standard inertial parameter the link's scale [kg, kg m, kg m^2]: the true mass M and
    the length L of :attr:`ParameterLayout.length_scales`."""
    mass = arm["true"][0:70:10]
    length = arm["layout"].length_scales
    return np.column_stack([mass, *[mass * length] * 3, *[mass * length**2] * 6]).ravel()


def assert_physically_consistent(standard, scales):
    """Each link: m > 0 and principal moments about the centre of mass that are >= 0 and satisfy
    the triangle inequalities (equivalent to J >= 0, checked without the module's code)."""
    for link in range(7):
        m, h, (xx, xy, yy, xz, yz, zz) = standard[10 * link], standard[10 * link + 1:10 * link + 4], \
            standard[10 * link + 4:10 * link + 10]
        assert m > 0.0, f"link {link + 1}: mass {m}"
        c = h / m
        central = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) - m * (c @ c * np.eye(3) - np.outer(c, c))
        a, b, d = np.linalg.eigvalsh(central)
        slack = 1e-9 * scales[10 * link + 4]
        assert a >= -slack and a + b >= d - slack, f"link {link + 1}: central moments {a, b, d}"


def held_out_rms(arm, base_values):
    """RMS error [N m] on a different trajectory at twice the speed against the robot's noise-free
    torques (spring included: the model should predict what the robot does)."""
    states = motion(arm, seed=7, amplitude=0.15, duration=8.0, speed=2.0)
    truth = robot_torques(arm, states, spring=SPRING)
    predicted = arm["base"].select(arm["regressor"].compute(*states)) @ base_values
    return float(np.sqrt(np.mean((predicted - truth) ** 2)))


@pytest.fixture(scope="module")
def spring_data(arm):
    """Short (8 s), poorly exciting data with 0.5 N m noise and the unmodelled spring."""
    states = motion(arm, seed=1, amplitude=0.1, duration=8.0)
    accumulator = accumulate(arm, states, robot_torques(arm, states, 0.5, SPRING, seed=1))
    return accumulator, accumulator.solve("ols", parameter_names=arm["base"].names)


def test_pseudo_inertia_of_known_bodies():
    # a point mass m at c: J = m [c; 1] [c; 1]^T (the second moment of a single point)
    m, c = 2.0, np.array([0.1, -0.2, 0.3])
    inertia = m * (c @ c * np.eye(3) - np.outer(c, c))
    point = [m, *(m * c), inertia[0, 0], inertia[0, 1], inertia[1, 1], inertia[0, 2], inertia[1, 2], inertia[2, 2]]
    np.testing.assert_allclose(pseudo_inertia(point), m * np.outer([*c, 1.0], [*c, 1.0]), atol=1e-15)
    # a solid box a x b x d centred at the origin: Sigma = m diag(a^2, b^2, d^2) / 12
    a, b, d = 0.3, 0.2, 0.1
    box = [m, 0, 0, 0, m * (b**2 + d**2) / 12, 0, m * (a**2 + d**2) / 12, 0, 0, m * (a**2 + b**2) / 12]
    np.testing.assert_allclose(pseudo_inertia(box), np.diag([m * a**2 / 12, m * b**2 / 12, m * d**2 / 12, m]),
                               atol=1e-15)


def test_link_consistency_reports_the_violation(arm):
    standard = arm["true"].copy()
    report = link_consistency(standard, arm["layout"])
    assert all(link.consistent and link.triangle and link.min_eigenvalue > 0 for link in report)
    np.testing.assert_allclose(report[2].mass, standard[20])
    # link 3's Izz above Ixx + Iyy: no mass distribution has it
    standard[29] = standard[24] + standard[26] + 0.01
    link = link_consistency(standard, arm["layout"])[2]
    assert not link.consistent and not link.triangle and link.min_eigenvalue < 0
    assert link.link == "panda_joint3"


def test_noise_free_data_and_the_exact_prior_give_the_true_standard_parameters(arm):
    """Noise-free torques fit exactly; the true parameters are the unique consistent set with zero
    residual and zero distance to the prior. Tolerance 1e-6 of each link's scale (friction: 1e-6
    relative; residual: 1e-6 of each joint's torque RMS): far above CLARABEL's 1e-9 tolerance, far
    below any physical difference."""
    states = motion(arm, seed=2, amplitude=0.3, duration=20.0)
    tau = robot_torques(arm, states)
    result = solve_consistent(accumulate(arm, states, tau), arm["base"], arm["layout"], prior=arm["true"])
    assert result.mode == "two_step"
    np.testing.assert_allclose(result.standard[:70], arm["true"][:70], rtol=0, atol=1e-6 * link_scales(arm).max())
    np.testing.assert_allclose(result.standard[:70] / link_scales(arm), arm["true"][:70] / link_scales(arm),
                               rtol=0, atol=1e-6)
    np.testing.assert_allclose(result.standard[70:], arm["true"][70:], rtol=1e-6)
    assert np.all(result.residual_rms <= 1e-6 * np.sqrt(np.mean(tau**2, axis=0))), result.residual_rms


def test_spring_and_poor_excitation_make_ols_inconsistent_and_the_consistent_fit_is_not(arm, spring_data):
    accumulator, ols = spring_data
    report = check_plausibility(ols.theta, ols.std, arm["base"], arm["layout"])
    assert report.consistent is False
    assert report.messages[-2].startswith("base parameters are not physically consistent: nearest "
                                          "consistent set differs by")
    assert report.distance_std > 1.0 and report.offenders
    result = solve_consistent(accumulator, arm["base"], arm["layout"])
    assert result.mode == "no_prior"
    assert_physically_consistent(result.standard, link_scales(arm))
    assert np.all(result.standard[70:] >= 0.0), result.standard[70:]
    np.testing.assert_allclose(result.base_values, arm["base"].projection @ result.standard)
    # the constrained fit costs residual, but little: the fit is still as good as the noise allows
    assert result.weighted_rss >= result.best_weighted_rss
    np.testing.assert_allclose(result.residual_rms, 0.5, rtol=0.1)
    again = check_plausibility(result.base_values, result.base_std, arm["base"], arm["layout"])
    assert again.consistent is True, again.messages


def test_consistent_models_predict_another_trajectory_at_twice_the_speed_better(arm, spring_data):
    accumulator, ols = spring_data
    rms_ols = held_out_rms(arm, ols.theta)
    without_prior = solve_consistent(accumulator, arm["base"], arm["layout"])
    assert held_out_rms(arm, without_prior.base_values) < 0.8 * rms_ols
    # a CAD-like prior 30 % off, both ways of using it
    rng = np.random.default_rng(5)
    prior = arm["true"][:70] * rng.uniform(0.7, 1.3, 70)
    for mode in ("two_step", "regularised"):
        result = solve_consistent(accumulator, arm["base"], arm["layout"], prior=prior, mode=mode)
        assert result.mode == mode
        assert_physically_consistent(result.standard, link_scales(arm))
        assert held_out_rms(arm, result.base_values) < 0.8 * rms_ols, mode


def test_when_ols_is_consistent_the_consistent_fit_is_ols(arm):
    """Well-exciting data (60 s, 0.4 of the velocity limits), 0.05 N m noise, no spring."""
    states = motion(arm, seed=4, amplitude=0.4, duration=60.0)
    accumulator = accumulate(arm, states, robot_torques(arm, states, 0.05, seed=4))
    ols = accumulator.solve("ols", parameter_names=arm["base"].names)
    assert check_plausibility(ols.theta, ols.std, arm["base"], arm["layout"]).consistent is True
    result = solve_consistent(accumulator, arm["base"], arm["layout"])
    np.testing.assert_array_less(np.abs(result.base_values - ols.theta), 0.05 * ols.std)
    assert abs(result.residual_increase) < 1e-2
    np.testing.assert_allclose(result.base_std, ols.uncertainty.white_std, rtol=1e-6)    # both white-noise std


def test_plausibility_names_a_hand_made_infeasible_inertia_and_negative_friction(arm):
    base = arm["base"]
    values = base.projection @ arm["true"]
    std = 0.01 * np.abs(values) + 1e-3
    izz7, fv2 = base.names.index("Izz7"), base.names.index("fv2")
    values[izz7] = -10 * std[izz7] - 0.01  # Izz of the last link alone: must be >= 0
    values[fv2] = -0.12
    report = check_plausibility(values, std, base, arm["layout"])
    assert report.consistent is False
    assert report.offenders[0][0] == "Izz7" and report.offenders[0][1] < -5.0
    assert report.negative == (("fv2", -0.12),)
    assert report.messages[0].startswith("negative friction: fv2 = -0.12 N m s/rad")
    assert any(message.startswith("base parameters are not physically consistent") and "Izz7 (-" in message
               for message in report.messages)
    assert report.to_dict()["offenders"][0]["name"] == "Izz7"


def test_compressed_residual_equals_the_stacked_residual(arm):
    """(R, c, constant) against sum_j w_j ||W_j beta - tau_j||^2 from the stacked data, for the
    least-squares beta, the truth and an arbitrary beta, with joint weights."""
    states = motion(arm, seed=6, amplitude=0.3, duration=6.0)
    tau = robot_torques(arm, states, 0.3, SPRING, seed=6)
    Y = arm["base"].select(arm["regressor"].compute(*states))
    accumulator = accumulate(arm, states, tau)
    weights = np.random.default_rng(0).uniform(0.5, 3.0, 7)
    compressed = compress(accumulator.gram_, accumulator.moment_, accumulator.torque_square_sum_, weights)
    W = (Y * np.sqrt(weights)[None, :, None]).reshape(-1, arm["base"].rank)
    target = (tau * np.sqrt(weights)).reshape(-1)
    least_squares = np.linalg.lstsq(W, target, rcond=None)[0]
    for beta in (least_squares, arm["base"].projection @ arm["true"],
                 np.random.default_rng(1).normal(size=arm["base"].rank)):
        direct = np.sum((W @ beta - target) ** 2)
        np.testing.assert_allclose(compressed.residual(beta), direct, rtol=1e-9)
    np.testing.assert_allclose(compressed.constant, np.sum((W @ least_squares - target) ** 2), rtol=1e-6)
    np.testing.assert_allclose(compressed.R.T @ compressed.R, W.T @ W, rtol=1e-9, atol=1e-9 * np.abs(W.T @ W).max())


def test_without_cvxpy_the_error_says_how_to_install_it(arm, spring_data, monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # import cvxpy raises ImportError
    accumulator, ols = spring_data
    with pytest.raises(SolverUnavailableError, match=r'pip install cvxpy, or pip install "robot-dynid\[consistent\]"'):
        solve_consistent(accumulator, arm["base"], arm["layout"])
    report = check_plausibility(ols.theta, ols.std, arm["base"], arm["layout"])
    assert report.consistent is None and report.distance_std is None
    assert "not checked" in report.messages[-1] and "pip install cvxpy" in report.messages[-1]
    values = ols.theta.copy()
    values[arm["base"].names.index("fc3")] = -1.0
    assert check_plausibility(values, ols.std, arm["base"], arm["layout"]).consistent is False


def test_bounds_file_is_read_and_its_bounds_hold(arm, spring_data, tmp_path):
    accumulator, _ = spring_data
    path = tmp_path / "bounds.yaml"
    path.write_text("total_mass: [10.0, 30.0]\n"
                    "links:\n"
                    "  panda_joint2: {mass: [3.0, 3.5], com_box: [[-0.1, -0.3, -0.1], [0.1, 0.0, 0.1]]}\n"
                    "  link7: {mass: [0.5, 1.0]}\n")
    constraints = load_constraints(path, arm["layout"])
    assert constraints.link_mass == {1: (3.0, 3.5), 6: (0.5, 1.0)}
    result = solve_consistent(accumulator, arm["base"], arm["layout"], constraints=constraints)
    masses = result.standard[0:70:10]
    assert 3.0 - 1e-6 <= masses[1] <= 3.5 + 1e-6 and 0.5 - 1e-6 <= masses[6] <= 1.0 + 1e-6
    assert 10.0 - 1e-6 <= masses.sum() <= 30.0 + 1e-6
    com = result.standard[11:14] / masses[1]
    assert np.all(com >= np.array([-0.1, -0.3, -0.1]) - 1e-6) and np.all(com <= np.array([0.1, 0.0, 0.1]) + 1e-6)
    assert_physically_consistent(result.standard, link_scales(arm))


@pytest.mark.parametrize("text, message", [
    ("links:\n  panda_joint3: {mass: [4.0, 2.0]}\n", r"links\.panda_joint3\.mass \[kg\] must be \[lo, hi\]"),
    ("links:\n  elbow: {mass: [1.0, 2.0]}\n", r"links\.elbow is not a link of the robot"),
    ("links:\n  panda_joint3: {com_box: [[0, 0], [1, 1]]}\n", r"links\.panda_joint3\.com_box must be"),
    ("links:\n  panda_joint3: {inertia: 1}\n", r"links\.panda_joint3 must be a mapping with mass"),
    ("total_mas: [1, 2]\n", r"total_mas"),
    ("total_mass: [-1, 2]\n", r"total_mass \[kg\] must be \[lo, hi\] with 0 <= lo <= hi"),
    ("margin: 2\n", r"margin must be a number in \[0, 1\)"),
    ("links:\n  panda_joint3: {mass: [1, 2]}\n  link3: {com_box: [[0, 0, 0], [1, 1, 1]]}\n",
     r"links\.link3 names link 3 \(panda_joint3\) a second time"),
])
def test_bad_bounds_files_are_one_line_naming_the_key(arm, tmp_path, text, message):
    path = tmp_path / "bounds.yaml"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as error:
        load_constraints(path, arm["layout"])
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_bounds_no_fit_satisfies_are_named(arm, spring_data):
    accumulator, _ = spring_data
    constraints = ConsistencyConstraints(link_mass={1: (4.0, 5.0), 2: (4.0, 5.0)}, total_mass=(1.0, 6.0))
    with pytest.raises(IdentificationError, match=r"no consistent parameters satisfy the bounds: the "
                                                  r"links' mass lower bounds add up to 8 kg, above "
                                                  r"total_mass's upper bound 6 kg"):
        solve_consistent(accumulator, arm["base"], arm["layout"], constraints=constraints)


@pytest.mark.parametrize("name, nonnegative", [
    ("coulomb_viscous", ("fc", "fv")),       # Coulomb and viscous levels
    ("stribeck_cbrt", ("fc", "fv")),         # the cube-root correction has either sign
    ("arctan", ("fc", "fv", "fs")),          # fs: the friction just above zero speed
    ("polynomial", ("f1", "f2")),            # v|v| and v^3 shape terms have either sign
])
def test_sign_constrained_friction_coefficients(arm, name, nonnegative):
    layout = ParameterLayout.from_regressor(Regressor(arm["robot"], friction_model(name, drift="temperature"),
                                                      armature=True))
    names = {layout.standard_names[i] for i in layout.nonnegative}
    assert names == {f"{c}{j}" for c in nonnegative + ("Ia",) for j in range(1, 8)}


def test_bounds_file_names_urdf_links_by_their_link_name(tmp_path):
    robot = load_robot(find_package_file("config", "robots", "ur5_urdf.yaml"))
    layout = ParameterLayout.from_regressor(Regressor(robot))
    path = tmp_path / "bounds.yaml"
    path.write_text("links:\n  upper_arm_link: {mass: [7.0, 9.0]}\n  wrist_3_joint: {mass: [0.1, 0.3]}\n")
    assert load_constraints(path, layout).link_mass == {1: (7.0, 9.0), 5: (0.1, 0.3)}


def test_the_cost_of_the_consistent_fit_is_told_apart_between_the_constraints_and_the_prior(arm, spring_data):
    """On the spring data the constraints cost residual. Without a prior that is the whole cost (the null-space
    regulariser costs nothing the data see); with a prior 30 % off in two-step mode the constraints' part is the
    same, and the prior takes the whole band the mode allows: delta = 1 % of the best consistent weighted
    residual sum of squares, i.e. delta (N n - r + constraints' part) noise variances. The summary line says so."""
    accumulator, _ = spring_data
    without_prior = solve_consistent(accumulator, arm["base"], arm["layout"])
    assert without_prior.residual_increase > 5.0
    assert without_prior.constraint_increase == pytest.approx(without_prior.residual_increase, rel=1e-2)
    prior = arm["true"][:70] * np.random.default_rng(5).uniform(0.7, 1.3, 70)
    result = solve_consistent(accumulator, arm["base"], arm["layout"], prior=prior)
    assert result.constraint_increase == pytest.approx(without_prior.residual_increase, rel=1e-2)
    dof = accumulator.n_samples * arm["robot"].n_joints - arm["base"].rank
    prior_part = result.residual_increase - result.constraint_increase
    assert prior_part == pytest.approx(DEFAULT_DELTA * (dof + result.constraint_increase), rel=0.05)
    text = format_consistency({"prior": "robot description", "mode": "two_step", "active": [],
                               "residual_increase": result.residual_increase,
                               "constraint_increase": result.constraint_increase, "prior_increase": prior_part})
    assert text == (f"physically consistent fit (prior: robot description, two_step): its residual is "
                    f"{result.residual_increase:.3g} noise variances above plain least squares: "
                    f"{result.constraint_increase:.3g} from the constraints (active: none), {prior_part:.3g} "
                    "from the prior")


def test_an_inaccurate_solver_status_is_said_once_with_whether_the_result_passes_the_check(monkeypatch, caplog):
    """Tolerances of 1e-16 are beyond CLARABEL's reach on a body fit: it ends ``optimal_inaccurate`` (a real
    solver run, not a stand-in). One warning says so, and that the body's pseudo-inertia (checked here with
    numpy's eigenvalues) is positive semidefinite. The data's body is not consistent (Izz above Ixx + Iyy), so
    the solver runs: a consistent least-squares fit is returned without one."""
    import robot_dynid.estimation.physical_consistency as physical_consistency
    from robot_dynid.model.link_inertials import pseudo_inertia
    monkeypatch.setattr(physical_consistency, "SOLVER_TOLERANCE", 1e-16)
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(2000, 6, 10))
    body = np.array([2.0, 0.02, -0.04, 0.16, 0.02, 0.001, 0.03, -0.002, 0.0005, 0.2])
    fit = physical_consistency.solve_consistent_body(LeastSquaresAccumulator(6, 10).add(Y, Y @ body), 2.0, 0.1)
    assert fit.status == "optimal_inaccurate"
    said = [record.getMessage() for record in caplog.records if "optimal_inaccurate" in record.getMessage()]
    assert said == ["consistent body: the solver (CLARABEL) ended optimal_inaccurate, short of its tolerances; the "
                    "result passes the check (pseudo-inertia positive semidefinite)"]
    assert np.linalg.eigvalsh(pseudo_inertia(fit.parameters))[0] >= -1e-12


BODY = np.array([2.0, 0.02, -0.04, 0.16, 0.02, 0.001, 0.03, -0.002, 0.0005, 0.02])
"""A consistent body (2 kg, pseudo-inertia eigenvalues 2.9e-4 to 2.0): [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]."""


def body_equations(unseen=(), noise=0.05, seed=4):
    """Normal equations of 6 joints x 3000 samples of a random regressor of BODY with ``noise`` [N m], the
    columns ``unseen`` zero (directions the data leave undetermined)."""
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(3000, 6, 10))
    Y[:, :, list(unseen)] = 0.0
    return LeastSquaresAccumulator(6, 10).add(Y, Y @ BODY + rng.normal(0.0, noise, (3000, 6)))


@pytest.mark.parametrize("unseen, mass", [((), None), ((), 2.0), ((5, 7), None), ((5, 7), 2.0)],
                         ids=["all seen", "known mass", "Ixy, Ixz unseen", "unseen and known mass"])
def test_a_consistent_least_squares_body_is_the_solvers_solution_without_a_solver(monkeypatch, unseen, mass):
    """Where least squares (minimum norm where the data leave directions unseen) is strictly consistent, it is
    returned as is; the second method is CLARABEL solving the same programs (forced by declaring nothing
    consistent): equal to its accuracy (up to 1e-4 of the body's scales) in what the data see, and no worse a
    residual. Unseen, Ixy and Ixz are 0 (to round-off) in the minimum-norm fit, which BODY with them 0 still is
    (eigenvalues from 1.6e-4); CLARABEL leaves them up to 0.3 of their scale there, where its objective differs from
    the optimum's by less than its tolerance (the term that decides them weighs 1e-3 of the weakest curvature)."""
    import robot_dynid.estimation.physical_consistency as physical_consistency
    accumulator = body_equations(unseen)
    shortcut = physical_consistency.solve_consistent_body(accumulator, 2.0, 0.1, mass=mass)
    assert shortcut.status == "least squares" and shortcut.solve_time == 0.0 and not shortcut.boundary
    monkeypatch.setattr(physical_consistency, "_strictly_consistent", lambda x, margin: None)
    solved = physical_consistency.solve_consistent_body(accumulator, 2.0, 0.1, mass=mass)
    assert solved.status.startswith("optimal") and not solved.boundary
    scales = np.array([2.0, *[0.2] * 3, *[0.02] * 6])
    seen = np.setdiff1d(np.arange(10), unseen)
    np.testing.assert_allclose(shortcut.parameters[seen] / scales[seen], solved.parameters[seen] / scales[seen],
                               rtol=0, atol=1e-4)
    assert shortcut.residual_ss.sum() <= solved.residual_ss.sum() * (1.0 + 1e-12)
    if unseen:
        assert np.all(np.abs(shortcut.parameters[list(unseen)]) < 1e-12)
    if mass is not None:
        assert shortcut.parameters[0] == mass
    else:
        assert abs(shortcut.parameters[0] - BODY[0]) < 1e-3      # the data's body, to the noise


def test_a_consistent_body_fit_does_not_import_cvxpy():
    """The solver's import is about 1.4 s of a short command (``payload identify``): not paid where least squares
    is consistent (a fresh interpreter)."""
    import subprocess
    program = ("import sys, numpy as np\n"
               "from robot_dynid.estimation.estimators import LeastSquaresAccumulator\n"
               "from robot_dynid.estimation.physical_consistency import solve_consistent_body\n"
               "Y = np.random.default_rng(4).normal(size=(2000, 6, 10))\n"
               f"body = np.array({BODY.tolist()})\n"
               "fit = solve_consistent_body(LeastSquaresAccumulator(6, 10).add(Y, Y @ body), 2.0, 0.1)\n"
               "assert np.allclose(fit.parameters, body), fit.parameters\n"
               "print(sorted(name for name in sys.modules if name.split('.')[0] in ('cvxpy', 'clarabel')))\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
