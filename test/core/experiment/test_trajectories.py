"""Trajectory families: closed-form values, derivatives against finite differences, files."""
import math

import numpy as np
import pytest
import yaml

from robot_dynid.errors import TrajectoryError
from robot_dynid.experiment.trajectories import (ConstantVelocityMove, CycloidalMove,
                                                 FourierTrajectory, Hold, Parallel, PointToPoint,
                                                 Repeat, Sequence, SineSumTrajectory,
                                                 VelocityLadder, cycloidal_duration,
                                                 dump_trajectory, load_trajectory, save_trajectory,
                                                 time_grid, trajectory_from_dict)
from robot_dynid.package_files import find_package_file
from reference_tables import reference_file

TWO = ("a", "b")


def fourier_per_joint_period():
    rng = np.random.default_rng(1)
    return FourierTrajectory(TWO, [4.0, 8.0], [0.1, -0.2], rng.normal(size=(2, 3)),
                             rng.normal(size=(2, 3)))


def families():
    p2p = PointToPoint(TWO, [0.0, 1.0], [0.5, 0.2], 2.0)
    hold = Hold(TWO, [0.5, 0.2], 0.7)
    cycloid = CycloidalMove(TWO, [0.5, 0.2], [-1.0, 0.4], 1.5)
    return {
        "fourier": fourier_per_joint_period(),
        "sine_sum": SineSumTrajectory(TWO, 3.0, [[0.2, -0.1], [0.05, 0.3]], [0.1, 0.0]),
        "hold": hold,
        "cycloidal": cycloid,
        "point_to_point": p2p,
        "constant_velocity": ConstantVelocityMove(TWO, [0.0, 0.1], [0.8, -0.3], 0.6, 0.5, 0.15),
        "constant_velocity_constant_ramp": ConstantVelocityMove(TWO, [0.0, 0.1], [0.8, -0.3],
                                                                0.6, 0.5, 0.0),
        "constant_velocity_cosine_ramp": ConstantVelocityMove(TWO, [0.0, 0.1], [0.8, -0.3], 0.6,
                                                              0.5, 0.25),
        "velocity_ladder": VelocityLadder(TWO, [-0.5, 0.3], "a", [0.2, 1.0], 4.0, 1.2, 6.0),
        "sequence": Sequence([p2p, hold, cycloid]),
        "parallel": Parallel([CycloidalMove(("b",), [0.0], [1.0], 1.0),
                              PointToPoint(("a",), [0.3], [-0.3], 2.5)], TWO),
        "repeat": Repeat(Sequence([CycloidalMove(TWO, [0, 0], [1, -1], 1.0),
                                   CycloidalMove(TWO, [1, -1], [-1, 1], 1.0)]), 3),
    }


@pytest.mark.parametrize("name", sorted(families()))
def test_analytic_derivatives_match_finite_differences(name):
    trajectory = families()[name]
    step = 1e-6
    t = np.random.default_rng(0).uniform(2 * step, trajectory.duration - 2 * step, 400)
    q, qd, qdd = trajectory.evaluate(t)
    q_plus, qd_plus, _ = trajectory.evaluate(t + step)
    q_minus, qd_minus, _ = trajectory.evaluate(t - step)
    assert q.shape == qd.shape == qdd.shape == (400, 2)
    scale_qd = max(1.0, np.abs(qd).max())
    scale_qdd = max(1.0, np.abs(qdd).max())
    np.testing.assert_allclose((q_plus - q_minus) / (2 * step), qd, atol=1e-6 * scale_qd)
    np.testing.assert_allclose((qd_plus - qd_minus) / (2 * step), qdd, atol=1e-5 * scale_qdd)


def test_fourier_acceleration_has_the_harmonic_order_factor():
    """Only harmonic l = 3: q = q0 + a/(3 wf) sin(3 wf t), so qdd = -3 wf a sin(3 wf t); the
    thesis's misprinted formula (no factor l) would give -wf a sin(3 wf t)."""
    period, amplitude = 5.0, 0.7
    wf = 2 * math.pi / period
    trajectory = FourierTrajectory(("j",), period, [0.2], [[0.0, 0.0, amplitude]],
                                   [[0.0, 0.0, 0.0]])
    t = np.linspace(0.0, period, 50)
    q, qd, qdd = trajectory.evaluate(t)
    np.testing.assert_allclose(q[:, 0], 0.2 + amplitude / (3 * wf) * np.sin(3 * wf * t), atol=1e-12)
    np.testing.assert_allclose(qd[:, 0], amplitude * np.cos(3 * wf * t), atol=1e-12)
    np.testing.assert_allclose(qdd[:, 0], -3 * wf * amplitude * np.sin(3 * wf * t), atol=1e-12)


def test_fourier_start_pose_is_not_the_offset():
    period = 10.0
    wf = 2 * math.pi / period
    trajectory = FourierTrajectory(("j",), period, [0.5], [[0.0, 0.0]], [[0.3, -0.4]])
    expected = 0.5 - 0.3 / wf + 0.4 / (2 * wf)
    assert trajectory.start_pose[0] == pytest.approx(expected)
    assert trajectory.evaluate(np.array([0.0]))[0][0, 0] == pytest.approx(expected)


def test_thesis_table_4_1_starts_at_rest_in_the_zero_pose():
    """Thesis: the optimised trajectory starts at q = 0 at rest; the table is printed with 4
    decimals, so the start is zero only to about 1e-4."""
    trajectory = load_trajectory(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    assert trajectory.harmonics == 5 and trajectory.period[0] == 10.0
    start, end = trajectory.boundary_states()
    np.testing.assert_allclose(start, 0.0, atol=1e-3)
    np.testing.assert_allclose(end, start, atol=1e-9)


def test_thesis_file_matches_the_printed_table_transposed():
    printed = yaml.safe_load(open(reference_file("er3a_thesis.yaml")))["excitation_table_4_1"]
    trajectory = load_trajectory(find_package_file("config", "trajectories", "er3a_table_4_1.yaml"))
    np.testing.assert_array_equal(trajectory.a, np.array(printed["a"]).T)
    np.testing.assert_array_equal(trajectory.b, np.array(printed["b"]).T)
    np.testing.assert_array_equal(trajectory.q0, printed["q0"])


def test_sine_sum_starts_with_a_jerk_free_but_nonzero_speed():
    trajectory = SineSumTrajectory(("j",), 2.0, [[0.3, 0.1]])
    wf = math.pi
    start, _ = trajectory.boundary_states()
    assert start[0, 0] == 0.0
    assert start[1, 0] == pytest.approx(0.3 * wf + 0.1 * 2 * wf)


def test_cycloidal_move_closed_form_peaks():
    move = CycloidalMove(("j",), [0.2], [1.5], 2.0)
    q, qd, qdd = move.evaluate(np.array([0.0, 0.5, 1.0, 2.0]))
    assert q[-1, 0] == pytest.approx(1.7)
    assert qd[2, 0] == pytest.approx(2 * 1.5 / 2.0)
    assert qdd[1, 0] == pytest.approx(2 * math.pi * 1.5 / 4.0)
    np.testing.assert_allclose([qd[0, 0], qdd[0, 0], qd[-1, 0], qdd[-1, 0]], 0.0, atol=1e-12)


def test_cycloidal_duration_respects_the_binding_limit():
    # speed-bound: 2 d / v = 2 s; acceleration-bound: sqrt(2 pi d / a) = sqrt(2 pi) s
    assert cycloidal_duration([2.0], [2.0], [2.0]) == pytest.approx(math.sqrt(2 * math.pi))
    assert cycloidal_duration([2.0], [1.0], [100.0]) == pytest.approx(4.0)


def test_point_to_point_shortest_duration_reaches_but_keeps_the_limits():
    start, end = np.array([0.0, 1.0]), np.array([2.0, 0.5])
    velocity, acceleration = np.array([1.0, 1.0]), np.array([100.0, 100.0])
    duration = PointToPoint.shortest_duration(start, end, velocity, acceleration)
    assert duration == pytest.approx(1.875 * 2.0 / 1.0)
    move = PointToPoint(TWO, start, end, duration)
    t = time_grid(duration, n_points=20001)
    q, qd, qdd = move.evaluate(t)
    assert np.abs(qd[:, 0]).max() == pytest.approx(1.0, rel=1e-6)
    assert np.abs(qdd[:, 0]).max() == pytest.approx(10 / math.sqrt(3) * 2.0 / duration**2, rel=1e-6)
    np.testing.assert_allclose(q[-1], end)


def test_constant_velocity_move_plateau_displacement_and_peak_acceleration():
    move = ConstantVelocityMove(TWO, [0.0, 1.0], [0.8, -0.4], 1.0, 0.5, 0.1)
    plateau_start, plateau_end = move.plateau
    t = np.linspace(plateau_start, plateau_end, 50)
    _, qd, qdd = move.evaluate(t)
    np.testing.assert_allclose(qd, np.tile([0.8, -0.4], (50, 1)), atol=1e-12)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    start, end = move.boundary_states()
    np.testing.assert_allclose(end[0], [0.8 * 1.5, 1.0 - 0.4 * 1.5], atol=1e-12)
    np.testing.assert_allclose(end[1:], 0.0, atol=1e-12)
    _, _, qdd = move.evaluate(time_grid(move.duration, n_points=20001))
    assert np.abs(qdd[:, 0]).max() == pytest.approx(0.8 / (0.5 - 0.1), rel=1e-6)


def test_velocity_ladder_equal_time_per_level_and_plateau_speeds():
    ladder = VelocityLadder(TWO, [-0.5, 0.3], "a", [0.2, 1.0, 2.0], 3.0, 1.5, 8.0,
                            jerk_duration=0.05, min_plateau=0.2)
    assert ladder.duration == pytest.approx(9.0)
    for level, speed in enumerate([0.2, 1.0, 2.0]):
        parts = [s for s in ladder.strokes if s.level == level]
        assert sum(s.end - s.start for s in parts) == pytest.approx(3.0)
        moving = [s for s in parts if s.direction != 0]
        assert [s.direction for s in moving] == [1, -1] * (len(moving) // 2)
        for stroke in moving:
            t = np.linspace(*stroke.plateau, 7)
            _, qd, _ = ladder.evaluate(t)
            np.testing.assert_allclose(qd[:, 0], stroke.direction * speed, atol=1e-9)
            np.testing.assert_allclose(qd[:, 1], 0.0, atol=1e-12)
    q, _, _ = ladder.evaluate(time_grid(ladder.duration, n_points=5001))
    assert q[:, 0].min() >= -0.5 - 1e-9 and q[:, 0].max() <= -0.5 + 1.5 + 1e-9
    np.testing.assert_allclose(q[-1], [-0.5, 0.3], atol=1e-9)


def test_velocity_ladder_that_does_not_fit_names_joint_and_level():
    with pytest.raises(TrajectoryError, match=r"joint a: level 1 at 3 rad/s does not fit"):
        VelocityLadder(TWO, [0.0, 0.0], "a", [0.5, 3.0], 2.0, 0.5, 4.0)


def test_sequence_plays_segments_in_turn():
    first = PointToPoint(TWO, [0, 0], [1, 1], 1.0)
    second = Hold(TWO, [1, 1], 0.5)
    sequence = Sequence([first, second])
    assert sequence.duration == 1.5
    np.testing.assert_array_equal(sequence.segment_index([0.0, 0.99, 1.0, 1.5]), [0, 0, 1, 1])
    q, _, _ = sequence.evaluate(np.array([0.5, 1.2]))
    np.testing.assert_allclose(q[0], first.evaluate(np.array([0.5]))[0][0])
    np.testing.assert_allclose(q[1], [1.0, 1.0])


def test_sequence_rejects_a_jump_naming_segment_and_joint():
    with pytest.raises(TrajectoryError,
                       match=r"segments\[0\] -> segments\[1\] is discontinuous: joint b q jumps by 0.5"):
        Sequence([Hold(TWO, [0, 0], 1.0), Hold(TWO, [0, 0.5], 1.0)])


def test_sequence_rejects_mismatched_joints():
    with pytest.raises(TrajectoryError, match=r"segments\[1\] has joints \['b', 'a'\]"):
        Sequence([Hold(TWO, [0, 0], 1.0), Hold(("b", "a"), [0, 0], 1.0)])


def test_parallel_pads_the_shorter_part_with_a_hold():
    parallel = Parallel([CycloidalMove(("b",), [0.0], [1.0], 1.0),
                         CycloidalMove(("a",), [0.0], [2.0], 3.0)], TWO)
    assert parallel.duration == 3.0
    q, qd, qdd = parallel.evaluate(np.array([2.0]))
    assert q[0, 1] == 1.0 and qd[0, 1] == 0.0 and qdd[0, 1] == 0.0
    assert q[0, 0] == pytest.approx(2.0 * (2 / 3 - math.sin(4 * math.pi / 3) / (2 * math.pi)))


def test_parallel_rejects_a_short_part_that_does_not_end_at_rest():
    with pytest.raises(TrajectoryError, match=r"parts\[0\] ends at 1 s before 3 s but not at rest"):
        Parallel([SineSumTrajectory(("b",), 1.0, [[0.1]]), Hold(("a",), [0.0], 3.0)], TWO)


def test_repeat_is_periodic_and_checks_its_junction():
    body = Sequence([CycloidalMove(("j",), [0], [1], 1.0), CycloidalMove(("j",), [1], [-1], 1.0)])
    repeated = Repeat(body, 3)
    t = np.array([0.3, 2.3, 4.3, 6.0])
    np.testing.assert_allclose(repeated.evaluate(t)[0][:3, 0], body.evaluate(np.array([0.3]))[0][0, 0])
    assert repeated.evaluate(t)[0][3, 0] == pytest.approx(0.0)
    with pytest.raises(TrajectoryError, match=r"repeat: the end does not join the start: joint j q"):
        Repeat(CycloidalMove(("j",), [0], [1], 1.0), 2)


def test_non_periodic_trajectories_reject_times_outside_their_duration():
    with pytest.raises(TrajectoryError, match=r"t must lie within \[0, 2\] s of this point_to_point"):
        PointToPoint(("j",), [0], [1], 2.0).evaluate(np.array([2.5]))
    fourier = FourierTrajectory(("j",), 2.0, [0.0], [[0.1, -0.1]], [[0.0, 0.0]])
    np.testing.assert_allclose(fourier.evaluate(np.array([2.5]))[0],
                               fourier.evaluate(np.array([0.5]))[0], atol=1e-12)


@pytest.mark.parametrize("name", sorted(families()))
def test_file_round_trip(name, tmp_path):
    trajectory = families()[name]
    path = tmp_path / "t.yaml"
    save_trajectory(trajectory, path)
    loaded = load_trajectory(path)
    assert type(loaded) is type(trajectory)
    assert loaded.to_dict() == trajectory.to_dict()
    t = np.linspace(0.0, trajectory.duration, 97)
    for original, copy in zip(trajectory.evaluate(t), loaded.evaluate(t)):
        np.testing.assert_array_equal(original, copy)
    assert dump_trajectory(loaded) == path.read_text()


def test_fourier_shape_error_names_field_and_shapes():
    printed = {"type": "fourier", "joints": ["j1", "j2", "j3"], "period": 10.0,
               "q0": [0, 0, 0], "a": [[0.1, 0.2, 0.3]] * 2, "b": [[0.1, 0.2, 0.3]] * 3}
    with pytest.raises(TrajectoryError,
                       match=r"^T.yaml: fourier: a must have shape \(3 joints, harmonics\), got \(2, 3\)$"):
        trajectory_from_dict(printed, "T.yaml")


@pytest.mark.parametrize("data, message", [
    ({"type": "fourier", "joints": ["j"], "period": 1, "q0": [0], "a": [[1]], "b": [[1]],
      "omega": 2}, r"unknown key\(s\) \['omega'\] in a fourier trajectory"),
    ({"type": "spline", "joints": ["j"]}, r"trajectory type must be one of \[.*\], got 'spline'"),
    ({"type": "hold", "joints": ["j"], "pose": [0]}, r"missing key\(s\) \['duration'\] in a hold"),
    ({"type": "hold", "pose": [0], "duration": 1}, r"missing key 'joints' in a hold"),
    ({"type": "hold", "joints": ["j", "j"], "pose": [0, 0], "duration": 1},
     r"joint_names lists joint\(s\) \['j'\] more than once"),
    ({"type": "hold", "joints": ["j"], "pose": [0], "duration": -1},
     r"hold: duration must be finite and > 0, got -1"),
    ({"type": "fourier", "joints": ["j"], "period": [1, 2], "q0": [0], "a": [[1]], "b": [[1]]},
     r"period must have shape \(1 joint,\), got \(2,\)$"),
    ({"type": "sequence", "joints": ["j"],
      "segments": [{"type": "hold", "pose": [0], "duration": 1},
                   {"type": "hold", "pose": [0, 1], "duration": 1}]},
     r"<dict>.segments\[1\]: hold: pose must have shape \(1 joint,\), got \(2,\)$"),
])
def test_validation_messages(data, message):
    with pytest.raises(TrajectoryError, match=message):
        trajectory_from_dict(data)


def test_time_grid_includes_both_ends():
    np.testing.assert_allclose(time_grid(1.0, dt=0.3), [0.0, 0.3, 0.6, 0.9, 1.0])
    assert time_grid(2.0, n_points=5)[-1] == 2.0
    with pytest.raises(TrajectoryError, match="give exactly one of n_points and dt"):
        time_grid(1.0)


def test_grids_and_ladders_have_documented_maxima():
    """A grid (what every check and simulation samples) and a friction ladder level (one segment per stroke)
    are refused above their maxima before anything is allocated or built."""
    from robot_dynid.experiment.trajectories import MAX_GRID_POINTS, MAX_LADDER_STROKES, time_grid
    assert MAX_GRID_POINTS == 10_000_000 and MAX_LADDER_STROKES == 10_000      # as docs/command_line.md states
    with pytest.raises(TrajectoryError, match=r"^a grid of 1e\+300 s at dt = 0.01 s would have 1e\+302 points, more "
                                              r"than 10000000: a larger dt$"):
        time_grid(1e300, dt=0.01)
    with pytest.raises(TrajectoryError, match=r"^n_points must be an integer in 2\.\.10000000, got 1000000000000$"):
        time_grid(1.0, n_points=10 ** 12)
    assert time_grid(99_999.99, dt=0.01).size == 10_000_000
    with pytest.raises(TrajectoryError, match=r"level 0 of 1e\+308 s at 1 rad/s would take more than 10000 strokes"):
        VelocityLadder(("a",), [0.0], "a", [1.0], 1e308, 1.0, 10.0)
