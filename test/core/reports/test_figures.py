"""Figures read at a glance: the text-collision check itself on figures made to collide, and the fleet and
closed-loop figures drawn with realistic names (7 joints named like a PR2's arm, robot ids like a plant's),
checked by conftest's figures_keep_their_text_apart."""
import datetime

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
from figure_text import text_collisions  # noqa: E402
from robot_dynid.reports import figures  # noqa: E402

JOINTS = ("r_shoulder_pan_joint", "r_shoulder_lift_joint", "r_upper_arm_roll_joint", "r_elbow_flex_joint",
          "r_forearm_roll_joint", "r_wrist_flex_joint", "r_wrist_roll_joint")
PARAMETERS = tuple(f"{kind}{j}" for j in range(1, 8) for kind in ("fc", "fv", "Izz", "mx", "my"))
ROBOTS = tuple(f"cell-{cell:02d}-robot-{arm:02d}" for cell in range(1, 4) for arm in range(1, 5))


def _figure(**keywords):
    plt = figures.pyplot()
    return plt.subplots(**keywords)


def test_the_check_finds_text_on_text_off_the_figure_and_in_another_panel_and_not_in_a_hidden_one():
    figure, (left, right) = _figure(ncols=2, figsize=(4, 2))
    left.text(0.5, 0.5, "first", transform=left.transAxes)
    left.text(0.5, 0.5, "second", transform=left.transAxes)
    figure.text(0.98, 0.5, "beyond the edge")
    left.set_ylabel("a label", labelpad=200)
    right.set_title("right panel")
    found = text_collisions(figure)
    assert any("'first' overlaps 'second'" in line for line in found), found
    assert any("'beyond the edge' leaves the figure" in line for line in found), found
    assert any("'a label' leaves the figure" in line for line in found), found
    assert not any("right panel" in line for line in found), found
    figures.pyplot().close(figure)

    figure, (left, right) = _figure(ncols=2, figsize=(6, 3))
    right.set_ylabel("a long label that runs into the left panel", labelpad=60)
    assert any("runs into the panel" in line for line in text_collisions(figure))
    right.set_visible(False)
    assert text_collisions(figure) == []
    figures.pyplot().close(figure)


def _dates(count, start=datetime.datetime(2018, 3, 2), step_days=1.0):
    return [start + datetime.timedelta(days=step_days * k) for k in range(count)]


@pytest.mark.parametrize("count, step_days", [(2, 400.0), (9, 1.0), (30, 7.0)])
def test_trend_and_wear_figures_of_a_robot(tmp_path, count, step_days):
    rng = np.random.default_rng(count)
    times = _dates(count, step_days=step_days)
    trend = [(name, "N m" if name.startswith("fc") else "kg m^2", times, rng.normal(1.0, 0.1, count),
              np.full(count, 0.02), rng.random(count) > 0.7, (1.0, 0.02)) for name in PARAMETERS[:12]]
    path = figures.trend_figure(trend, tmp_path / "trend.png",
                                f"{ROBOTS[-1]}: friction, named and flagged base parameters (+-2 std; red: "
                                "flagged; they depend on the trajectory)")
    assert path.is_file()
    band = np.r_[np.nan, np.full(count - 1, 0.1)]
    wear = [(f"{joint} friction at +0.5 of its speed limit", "friction torque", "N m", times,
             rng.normal(2.0, 0.1, count), np.full(count, 0.03), 2.0, band, 0.3, rng.random(count) > 0.8)
            for joint in JOINTS]
    path = figures.wear_trend_figure(wear, tmp_path / "wear.png",
                                     f"{ROBOTS[-1]}: wear indicators (+-2 estimation std; grey: 95 % of an unchanged "
                                     "robot's recordings; dotted: practical threshold; red: wear)")
    assert path.is_file()


def test_spread_figure_names_many_far_robots_once_each(tmp_path):
    rng = np.random.default_rng(3)
    deviation = np.abs(rng.normal(0.0, 1.0, (len(ROBOTS), len(PARAMETERS))))
    far = np.zeros_like(deviation, bool)
    far[:6, 10:14] = True            # six robots far on the same neighbouring parameters: labels would pile up
    deviation[far] = 8.0
    path = figures.spread_figure(PARAMETERS, ROBOTS, deviation, far, tmp_path / "spread.png", 3.5)
    assert path.is_file()


def test_tracking_error_figure_of_seven_joints(tmp_path):
    time = np.linspace(0.0, 20.0, 2001)
    curves = {label: np.abs(np.sin(time[:, None] + np.arange(7))) * scale
              for label, scale in (("PD alone", 1e-2), ("PD + identified feed-forward", 1e-3),
                                   ("PD + true-parameter feed-forward", 5e-4))}
    path = figures.tracking_error_figure(time, curves, JOINTS, tmp_path / "tracking.png",
                                         events={"2 kg payload attached and served": 10.0})
    assert path.is_file()
