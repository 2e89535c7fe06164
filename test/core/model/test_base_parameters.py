"""Base parameters: literature counts, the regrouping identity, Khalil's 2R expressions."""
import os

import numpy as np
import pytest

from robot_dynid.errors import DynIdError, IdentificationError, ModelFileError
from robot_dynid.model.base_parameters import BaseParameters, compute_base_parameters, random_states
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot, robot_from_dict
from repo_paths import ROBOTS


def regressor_of(name, **options):
    return Regressor(load_robot(os.path.join(ROBOTS, name + ".yaml")), **options)


@pytest.mark.parametrize("name, count", [
    ("puma560", 36),            # inertial base parameters of the PUMA 560 (gravity on)
    ("ur5", 36),
    ("ur5_urdf", 36),
    ("panda", 43),              # 7-DOF Panda arm, inertial only
    ("curtain_wall_arm", 18),   # planar 6R with gravity in the plane: 3 per link
])
def test_base_parameter_counts_match_the_literature(name, count):
    assert compute_base_parameters(regressor_of(name)).rank == count


def _states(regressor, n_samples, seed):
    rng = np.random.default_rng(seed)
    n = regressor.n_joints
    return (rng.uniform(-3, 3, (n_samples, n)), rng.uniform(-2, 2, (n_samples, n)),
            rng.uniform(-5, 5, (n_samples, n)))


@pytest.mark.parametrize("name", ["puma560", "panda", "ur5_urdf"])
def test_base_regressor_reproduces_the_full_model(name):
    regressor = regressor_of(name, friction=friction_model("coulomb_viscous"), armature=True,
                             offset=True)
    base = compute_base_parameters(regressor, seed=1)
    Y = regressor.compute(*_states(regressor, 30, seed=2))     # states not used for the base
    parameters = np.random.default_rng(3).normal(size=regressor.n_parameters)
    np.testing.assert_allclose(base.select(Y) @ (base.projection @ parameters), Y @ parameters,
                               rtol=0, atol=1e-8 * np.abs(Y @ parameters).max())
    np.testing.assert_allclose(Y[..., list(base.dependent)],
                               base.select(Y) @ base.beta, rtol=0, atol=1e-8 * np.abs(Y).max())


def planar_2r_modified(l1):
    joint = {"d": 0.0, "position_limits": [-3.0, 3.0], "velocity_limit": 2.0,
             "acceleration_limit": 5.0}
    return robot_from_dict({"name": "planar", "dh_convention": "modified",
                            "gravity": [0.0, -9.81, 0.0],
                            "joints": [dict(joint, name="j1", a=0.0, alpha=0.0),
                                       dict(joint, name="j2", a=l1, alpha=0.0)]})


def test_planar_2r_base_parameters_are_khalils():
    # Khalil & Dombre: ZZ1R = ZZ1 + a2^2 M2, MX1R = MX1 + a2 M2, MY1, ZZ2, MX2, MY2
    base = compute_base_parameters(Regressor(planar_2r_modified(0.3)))
    expressions = dict(zip(base.names, base.expressions()))
    assert expressions == {"mx1R": "mx1 + 0.3 m2", "my1": "my1", "Izz1R": "Izz1 + 0.09 m2",
                           "mx2": "mx2", "my2": "my2", "Izz2": "Izz2"}


def test_first_joint_armature_regroups_with_the_first_inertia():
    regressor = Regressor(planar_2r_modified(0.3), armature=True)
    base = compute_base_parameters(regressor)
    expressions = dict(zip(base.names, base.expressions()))
    assert expressions["Izz1R"] == "Izz1 + 0.09 m2 + Ia1"
    assert expressions["Ia2"] == "Ia2"


def test_expressions_print_signs_and_unit_coefficients():
    base = BaseParameters(standard_names=("a", "b", "c", "d"), independent=(0, 2),
                          dependent=(1, 3), beta=[[1.0, -0.123456], [0.0, -1.0]],
                          names=("aR", "cR"))
    assert base.expressions(digits=3) == ("a + b - 0.123 d", "c - d")
    np.testing.assert_array_equal(base.projection, [[1, 1, 0, -0.123456], [0, 0, 1, -1]])


def test_dict_round_trip_and_errors():
    base = compute_base_parameters(Regressor(planar_2r_modified(0.3)))
    again = BaseParameters.from_dict(base.to_dict())
    assert again.to_dict() == base.to_dict()
    data = base.to_dict()
    data.pop("names")
    with pytest.raises(ModelFileError, match=r"base parameters need exactly the keys"):
        BaseParameters.from_dict(data)
    data = base.to_dict()
    data["dependent"] = data["dependent"][1:]
    with pytest.raises(ModelFileError, match=r"invalid base parameters: independent .* and "
                                             r"dependent .* must split the 20 standard"):
        BaseParameters.from_dict(data)


def test_invalid_arguments_are_rejected():
    regressor = regressor_of("puma560")
    with pytest.raises(IdentificationError, match=r"rank from QR \(36\) and SVD \(\d+\) "
                                                  r"disagree at tolerance 0.3"):
        compute_base_parameters(regressor, tolerance=0.3)
    with pytest.raises(DynIdError, match=r"n_samples must be an integer with n_samples \* "
                                         r"n_joints >= p = 60, got 5"):
        compute_base_parameters(regressor, n_samples=5)
    with pytest.raises(DynIdError, match=r"tolerance must be in \(0, 1\), got 2"):
        compute_base_parameters(regressor, tolerance=2)
    with pytest.raises(DynIdError, match=r"regressor has 3 columns, expected 60"):
        compute_base_parameters(regressor).select(np.zeros((2, 3)))


@pytest.mark.parametrize("name", ["puma560", "ur5", "ur5_urdf", "panda", "curtain_wall_arm", "er3a_coupled_wrist"])
def test_pivoted_qr_rank_is_lapacks(name):
    # base_parameters' own pivoted QR (no scipy at a command's start): the rank LAPACK's dgeqp3 gives
    import scipy.linalg
    from robot_dynid.model.base_parameters import _pivoted_qr_diagonal
    regressor = regressor_of(name, friction=friction_model("coulomb_viscous"), armature=True, offset=True)
    n = regressor.n_joints
    W = regressor.compute(**random_states(regressor, 200, np.random.default_rng(0))).reshape(200 * n, -1)
    norms = np.linalg.norm(W, axis=0)
    scaled = W[:, norms > 1e-12 * norms.max()] / norms[norms > 1e-12 * norms.max()]
    ours = _pivoted_qr_diagonal(scaled)
    lapacks = np.abs(np.diag(scipy.linalg.qr(scaled, mode="economic", pivoting=True)[1]))
    for tolerance in (1e-10, 1e-8, 1e-4):
        assert np.sum(ours > tolerance * ours[0]) == np.sum(lapacks > tolerance * lapacks[0])
    assert np.sum(ours > 1e-8 * ours[0]) == compute_base_parameters(regressor).rank


def test_pivoted_qr_diagonal_of_a_full_rank_matrix_is_lapacks():
    import scipy.linalg
    from robot_dynid.model.base_parameters import _pivoted_qr_diagonal
    matrix = np.random.default_rng(4).normal(size=(40, 9)) * np.arange(1, 10)
    np.testing.assert_allclose(_pivoted_qr_diagonal(matrix),
                               np.abs(np.diag(scipy.linalg.qr(matrix, mode="economic", pivoting=True)[1])),
                               rtol=1e-12)
    np.testing.assert_array_equal(_pivoted_qr_diagonal(np.zeros((4, 3))), np.zeros(3))
    np.testing.assert_allclose(_pivoted_qr_diagonal(np.ones((5, 3))), [np.sqrt(5.0), 0.0, 0.0], atol=1e-15)


def scipy_base_parameters(regressor, n_samples=200, seed=0, tolerance=1e-8):
    """The base parameters as base_parameters chose them with scipy.linalg (pivoted QR for the rank, QR and a
    triangular solve for beta) until it used numpy alone."""
    import scipy.linalg
    from robot_dynid.model.base_parameters import _preference_order
    p, n = regressor.n_parameters, regressor.n_joints
    W = regressor.compute(**random_states(regressor, n_samples, np.random.default_rng(seed))).reshape(-1, p)
    norms = np.linalg.norm(W, axis=0)
    nonzero = np.flatnonzero(norms > 1e-12 * norms.max())
    scaled = W[:, nonzero] / norms[nonzero]
    diagonal = np.abs(np.diag(scipy.linalg.qr(scaled, mode="economic", pivoting=True)[1]))
    rank = int(np.sum(diagonal > tolerance * diagonal[0]))
    scan = np.argsort(np.argsort(_preference_order(p, n))[nonzero], kind="stable")
    keep = np.zeros(len(nonzero), dtype=bool)
    keep[scan] = np.abs(np.diag(scipy.linalg.qr(scaled[:, scan], mode="economic")[1])) > tolerance
    R = scipy.linalg.qr(np.concatenate([scaled[:, keep], scaled[:, ~keep]], axis=1), mode="economic")[1]
    beta = np.zeros((rank, p - rank))
    dependent = np.setdiff1d(np.arange(p), nonzero[keep])
    beta[:, np.searchsorted(dependent, nonzero[~keep])] = (
        scipy.linalg.solve_triangular(R[:rank, :rank], R[:rank, rank:]) / norms[nonzero[keep]][:, None]
        * norms[nonzero[~keep]][None, :])
    beta[np.abs(beta) < 1e-10] = 0.0
    return tuple(nonzero[keep]), beta


@pytest.mark.parametrize("name", ["puma560", "ur5", "ur5_urdf", "panda", "curtain_wall_arm", "er3a_coupled_wrist",
                                  "ur5_on_linear_track"])
@pytest.mark.parametrize("options", [{}, {"friction": "coulomb_viscous", "armature": True, "offset": True}])
def test_the_base_parameters_are_those_scipy_chose(name, options):
    # the same independent columns (so names) and coefficients as with scipy.linalg, where norms tie too
    # (bit for bit with numpy and scipy on one LAPACK; across builds to rounding)
    options = dict(options, friction=friction_model(options.get("friction", "none")))
    regressor = regressor_of(name, **options)
    base = compute_base_parameters(regressor)
    independent, beta = scipy_base_parameters(regressor)
    assert base.independent == independent
    np.testing.assert_allclose(base.beta, beta, rtol=1e-12, atol=1e-15)
