"""A protocol plan's stages are the one stage model (recordings.stages.StageInterval): its file rows keep
their format, and its markers pair back into the same stages."""
import numpy as np
import yaml

from robot_dynid.experiment.protocol import ProtocolPlan, load_plan, save_plan
from robot_dynid.experiment.schedule import stage_events
from robot_dynid.experiment.trajectories import Hold, PointToPoint, Sequence
from robot_dynid.recordings.stages import StageInterval, stage_intervals

JOINTS = ("j1", "j2")


def two_stage_plan(cycles=2):
    """A 1 s hold, then a 2 s stroke of j2 at 0.3 of its speed limit, per cycle."""
    home, up = np.zeros(2), np.array([0.0, 0.5])
    trajectory = Sequence([Hold(JOINTS, home, 1.0), PointToPoint(JOINTS, home, up, 1.0),
                           PointToPoint(JOINTS, up, home, 1.0)])
    stages = (StageInterval("rest", 0.0, 1.0, None, None, 0, 0, "hold"),
              StageInterval("friction", 1.0, 3.0, "j2", 0.3, 1, 0, "stroke"))
    return ProtocolPlan("two", JOINTS, trajectory, cycles, stages, {})


def test_the_plan_file_rows_keep_their_columns_and_values(tmp_path):
    path = tmp_path / "plan.yaml"
    save_plan(two_stage_plan(), path)
    data = yaml.safe_load(path.read_text())
    assert data["stage_columns"] == ["cycle", "kind", "name", "joint", "speed_fraction", "direction", "start", "end"]
    assert data["cycle_stages"] == [[0, "rest", "hold", None, None, 0, 0.0, 1.0],
                                    [0, "friction", "stroke", "j2", 0.3, 1, 1.0, 3.0]]
    assert load_plan(path).stages == two_stage_plan().stages


def test_later_cycles_are_the_stages_shifted_by_the_cycle_duration():
    stages = two_stage_plan().stages
    assert stages[2:] == (StageInterval("rest", 3.0, 4.0, None, None, 0, 1, "hold"),
                          StageInterval("friction", 4.0, 6.0, "j2", 0.3, 1, 1, "stroke"))
    assert stages[3].duration == 2.0


def test_the_plans_markers_pair_back_into_its_stages():
    """Markers carry no 'not given' speed: the rest stage comes back with speed_fraction 0."""
    plan = two_stage_plan()
    paired = stage_intervals(list(stage_events(plan)))
    expected = [StageInterval(s.kind, s.start_time, s.end_time, s.joint, s.speed_fraction or 0.0, s.direction,
                              s.cycle, s.label) for s in plan.stages]
    assert paired == expected
