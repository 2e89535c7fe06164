"""The plausibility check's solver-free certificate: base values that a consistent standard set maps onto are
found consistent without cvxpy (not even imported); the others still go to the program."""
import subprocess
import sys

import numpy as np

from robot_dynid.estimation.physical_consistency import (ConsistencyConstraints, ParameterLayout, check_plausibility,
                                                         pseudo_inertia)
from robot_dynid.experiment.simulation import default_friction, plausible_parameters
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file


def ur5():
    robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
    regressor = Regressor(robot, friction_model("coulomb_viscous"))
    base = compute_base_parameters(regressor)
    true = np.concatenate([plausible_parameters(robot, seed=3), default_friction(regressor, seed=3)])
    return robot, base, true, ParameterLayout.from_regressor(regressor)


def test_consistent_values_are_certified_without_cvxpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)        # import cvxpy raises ImportError
    robot, base, true, layout = ur5()
    values = base.projection @ true
    std = 0.01 * np.abs(values) + 1e-4
    prior = true[:60] * np.random.default_rng(2).uniform(0.8, 1.2, 60)     # a CAD prior 20 % off
    for given in (prior, true[:60]):
        report = check_plausibility(values, std, base, layout, prior=given)
        assert report.consistent is True, report.messages
        assert report.messages[-1] == ("base parameters are physically consistent (a consistent standard set maps "
                                       "onto them)")
        assert report.distance_std < 1e-6


def test_the_certificate_is_a_consistent_preimage():
    """Independent of the certificate's code: some standard set with J >= 0 maps onto the values, checked with
    link_inertials.pseudo_inertia and the base projection."""
    from robot_dynid.estimation.physical_consistency import _consistent_preimage, _physical_scales, _prior_vector
    robot, base, true, layout = ur5()
    values = base.projection @ true
    constraints = ConsistencyConstraints(margin=0.0)
    prior, mask = _prior_vector(true[:60] * 1.1, layout)
    standard = _consistent_preimage(values, base, layout, _physical_scales(layout, prior, mask, constraints), prior,
                                    mask, constraints)
    np.testing.assert_allclose(base.projection @ standard, values, rtol=1e-9, atol=1e-12)
    for link in range(6):
        assert np.linalg.eigvalsh(pseudo_inertia(standard[10 * link:10 * link + 10]))[0] > 0.0
    assert np.all(standard[60:] >= 0.0)


def test_inconsistent_values_and_bounds_still_go_to_the_program(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)
    robot, base, true, layout = ur5()
    values = base.projection @ true
    std = 0.01 * np.abs(values) + 1e-4
    values[base.names.index("Izz6")] = -1.0          # the last link's Izz alone: no consistent set gives it
    report = check_plausibility(values, std, base, layout)
    assert report.consistent is None and "not checked" in report.messages[-1]
    bounded = ConsistencyConstraints(margin=0.0, total_mass=(1.0, 2.0))
    report = check_plausibility(base.projection @ true, std, base, layout, constraints=bounded)
    assert report.consistent is None and "not checked" in report.messages[-1]


def test_identify_on_consistent_data_does_not_import_cvxpy(tmp_path):
    """robot-dynid's pipeline end to end in a new process: a model identified from noise-free data of a consistent
    arm passes the plausibility check with cvxpy never imported."""
    script = """
import sys
import numpy as np
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.simulation import SimulatedRobot, default_friction, plausible_parameters
from robot_dynid.experiment.trajectories import FourierTrajectory, time_grid
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.recording import Recording
robot = load_robot(find_package_file("config", "robots", "ur5.yaml"))
regressor = Regressor(robot, friction_model("coulomb_viscous"))
true = np.concatenate([plausible_parameters(robot, seed=3), default_friction(regressor, seed=3)])
rng = np.random.default_rng(1)
scale = 0.3 * robot.limit_arrays().velocity[:, None]
trajectory = FourierTrajectory(robot.joint_names, 8.0, np.zeros(6), rng.normal(size=(6, 4)) * scale,
                               rng.normal(size=(6, 4)) * scale)
t = time_grid(16.0, dt=0.005)
q, qd, qdd = trajectory.evaluate(t)
tau = SimulatedRobot(regressor, true, 0.0).torques(q, qd, qdd, rng=0)
recording = Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, source="test")
model = identify([recording], robot, IdentificationSettings(friction=regressor.friction))
plausibility = model.metrics["plausibility"]
assert plausibility["consistent"] is True, plausibility
print("cvxpy" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "False"
