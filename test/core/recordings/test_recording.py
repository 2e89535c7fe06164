"""Recording: validation, NaN cleaning, selection by stage / cycle, joint reordering, segments."""
import dataclasses
import logging
import re

import numpy as np
import pytest

from robot_dynid.errors import DataError
from robot_dynid.recordings.recording import Dropped, GatheredRows, Recording, hand_over
from robot_dynid.recordings.stages import check_stage_label, stage_kind

JOINTS = ("shoulder", "elbow", "wrist")


def make_recording(n_samples=12, **changes):
    rng = np.random.default_rng(7)
    fields = dict(joint_names=JOINTS, time=0.5 + 0.01 * np.arange(n_samples),
                  q=rng.standard_normal((n_samples, 3)), qd=rng.standard_normal((n_samples, 3)),
                  tau=rng.standard_normal((n_samples, 3)))
    fields.update(changes)
    return Recording(**fields)


def test_fields_are_read_only_float_arrays_and_elapsed_starts_at_zero():
    recording = make_recording(time=[2.0, 2.5, 4.0] + list(range(5, 14)))
    assert recording.n_samples == 12 and recording.n_joints == 3
    np.testing.assert_array_equal(recording.elapsed[:3], [0.0, 0.5, 2.0])
    with pytest.raises(ValueError, match="read-only"):
        recording.q[0, 0] = 1.0
    assert recording.qdd is None and recording.temperature is None


def test_a_recording_made_from_another_shares_arrays_no_one_can_change_and_copies_the_rest():
    """dataclasses.replace (every pipeline step) re-validates the fields: arrays that are read-only down to the data
    they own are kept (an hour at 1 kHz was copied 90 times, 3 s), a read-only view of a writable array is not:
    writing to that array must not change the recording."""
    recording = make_recording()
    derived = dataclasses.replace(recording, source="derived")
    assert derived.q is recording.q and derived.time is recording.time
    assert dataclasses.replace(recording, q=recording.q[:, :]).q.base is recording.q
    writable = np.array(recording.q)
    view = writable.view()
    view.setflags(write=False)
    guarded = dataclasses.replace(recording, q=view)
    writable[0, 0] += 1.0
    assert guarded.q[0, 0] == recording.q[0, 0] and guarded.q is not view


def test_arrays_handed_over_are_shared_and_no_one_writes_to_them_again():
    """A reader's own arrays (a view of a larger buffer included) handed over become the recording's, read-only
    down to the buffer: no copy of an hour of samples; the buffer cannot change them afterwards."""
    buffer = np.random.default_rng(3).standard_normal((20, 3))
    q, tau, time = buffer[:12], np.ones((12, 3)), 0.01 * np.arange(12)
    hand_over(q, tau, time, None)
    recording = Recording.from_arrays(joint_names=JOINTS, time=time, q=q, tau=tau)
    assert np.shares_memory(recording.q, buffer) and recording.tau is tau and recording.time is time
    with pytest.raises(ValueError, match="read-only"):
        buffer[0, 0] = 1.0


@pytest.mark.parametrize("capacity", [0, 5, 37, 100])
def test_gathered_rows_equal_the_concatenated_chunks_whatever_the_capacity(capacity):
    """Chunks of uneven sizes (an empty one among them) gathered into arrays made for ``capacity`` rows: too few
    (grown on the way), exact, or too many give the concatenation, dtypes and trailing shapes kept."""
    rng = np.random.default_rng(5)
    sizes = [7, 0, 1, 13, 16]
    chunks = [dict(time=rng.standard_normal(size), q=rng.standard_normal((size, 3)),
                   cycle=rng.integers(-1, 9, size)) for size in sizes]
    gathered = GatheredRows(capacity)
    assert gathered.columns() == {}
    for chunk in chunks:
        gathered.add(**chunk)
    columns = gathered.columns()
    assert gathered.rows == 37 and gathered.capacity >= 37 and set(columns) == {"time", "q", "cycle"}
    for name, column in columns.items():
        expected = np.concatenate([chunk[name] for chunk in chunks])
        assert column.dtype == expected.dtype and column.shape == expected.shape
        np.testing.assert_array_equal(column, expected, err_msg=name)
    if capacity >= 37:
        assert gathered.capacity == capacity        # made once, never grown


def test_gathered_rows_refuse_chunks_unlike_the_first():
    gathered = GatheredRows(10)
    gathered.add(time=np.zeros(2), q=np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"^a chunk's columns must have as many rows as each other, got "
                                         r"\{'time': 2, 'q': 3\}$"):
        gathered.add(time=np.zeros(2), q=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"^a chunk has columns \['time'\], the first one had \['q', 'time'\]$"):
        gathered.add(time=np.zeros(2))
    with pytest.raises(ValueError, match=r"^column 'q' holds float64 rows of shape \(3,\), a chunk gives float64 "
                                         r"rows of shape \(2,\)$"):
        gathered.add(time=np.zeros(2), q=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"^column 'time' holds float64 rows of shape \(\), a chunk gives <U4"):
        gathered.add(time=np.array(["rest", "rest"]), q=np.zeros((2, 3)))
    assert gathered.rows == 2


def test_wrong_shape_names_the_field_and_both_shapes():
    with pytest.raises(DataError, match=r"^tau must have shape \(12 samples, 3 joints\), got \(12, 2\)$"):
        make_recording(tau=np.zeros((12, 2)))
    with pytest.raises(DataError, match=r"^q must have shape \(12 samples, 3 joints\), got \(11, 3\)$"):
        make_recording(q=np.zeros((11, 3)))
    with pytest.raises(DataError, match=r"stage has shape \(3,\), expected \(12,\)"):
        make_recording(stage=["rest"] * 3)


def test_time_must_increase_strictly_naming_first_offending_sample():
    time = 0.01 * np.arange(12)
    time[7] = time[6]
    with pytest.raises(DataError, match=r"time\[7\] = 0\.06 s <= time\[6\] = 0\.06 s"):
        make_recording(time=time)


def test_non_finite_values_are_rejected_by_the_constructor():
    qd = np.zeros((12, 3))
    qd[4, 1] = np.nan
    with pytest.raises(DataError, match=r"^qd must be finite, got nan at sample 4, joint elbow; build the recording "
                                        r"with Recording.from_arrays to drop such samples$"):
        make_recording(qd=qd)


def test_joint_names_must_be_unique():
    with pytest.raises(DataError, match=re.escape("<arrays>: joint_names lists joint(s) ['elbow'] more than once")):
        make_recording(joint_names=("elbow", "elbow", "wrist"))


@pytest.mark.parametrize("label", ["rest", "friction", "custom", "custom:lift", ""])
def test_valid_stage_labels(label):
    check_stage_label(label)


@pytest.mark.parametrize("label", ["Rest", "custom:", "lift", "friction:1"])
def test_invalid_stage_labels_are_rejected(label):
    with pytest.raises(DataError, match="unknown stage label"):
        make_recording(stage=[label] * 12)


def test_stage_kind_strips_custom_names():
    assert stage_kind("custom:lift") == "custom"
    assert stage_kind("warmup") == "warmup"


def test_cycle_must_be_integer_and_at_least_minus_one():
    with pytest.raises(DataError, match=r"cycle\[3\] = -2"):
        make_recording(cycle=[0, 0, 0, -2] + [0] * 8)
    with pytest.raises(DataError, match="cycle must hold integers"):
        make_recording(cycle=np.full(12, 0.5))


def test_from_arrays_drops_rows_with_nan_or_inf_in_any_field(caplog):
    n_samples = 10
    time = np.arange(n_samples, dtype=float)
    q = np.arange(3 * n_samples, dtype=float).reshape(n_samples, 3)
    tau = np.ones((n_samples, 3))
    temperature = np.full((n_samples, 3), 25.0)
    time[1] = np.nan
    q[3, 2] = np.inf
    tau[3, 0] = np.nan
    tau[6, 1] = -np.inf
    temperature[8, 0] = np.nan
    stage = ["rest"] * 5 + ["friction"] * 5
    with caplog.at_level(logging.WARNING, logger="robot_dynid.recordings.recording"):
        recording = Recording.from_arrays(JOINTS, time, q, tau=tau, temperature=temperature,
                                          stage=stage, cycle=np.arange(n_samples),
                                          dropped={"earlier": Dropped(2, 0.5)})
    kept = [0, 2, 4, 5, 7, 9]
    np.testing.assert_array_equal(recording.time, kept)
    np.testing.assert_array_equal(recording.q[:, 0], [3.0 * k for k in kept])
    np.testing.assert_array_equal(recording.cycle, kept)
    assert recording.stage.tolist() == ["rest"] * 3 + ["friction"] * 3
    assert recording.n_dropped == 2 + 4
    # per reason, the first field found non-finite in each row (q before tau before temperature)
    assert {reason: (entry.count, entry.first_time) for reason, entry in recording.dropped.items()
            if reason != "non-finite time"} == {"earlier": (2, 0.5), "non-finite q": (1, 3.0),
                                                "non-finite tau": (1, 6.0), "non-finite temperature": (1, 8.0)}
    assert recording.dropped["non-finite time"].count == 1      # its time is NaN: no first time
    assert "dropped 4 of 10 samples" in caplog.text


def test_from_arrays_with_every_row_bad_raises():
    with pytest.raises(DataError, match="all 2 samples of run.csv hold NaN or inf"):
        Recording.from_arrays(("a",), [0.0, 1.0], [[np.nan], [np.inf]], source="run.csv")


def labelled_recording():
    stage = ["rest"] * 3 + ["excitation"] * 4 + ["custom:lift"] * 2 + ["custom"] * 1 + [""] * 2
    cycle = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, -1, -1]
    return make_recording(stage=stage, cycle=cycle)


def test_select_by_stage_cycle_and_custom_kind():
    recording = labelled_recording()
    np.testing.assert_array_equal(recording.select("excitation").time, recording.time[3:7])
    np.testing.assert_array_equal(recording.select("excitation", cycles=1).time,
                                  recording.time[5:7])
    np.testing.assert_array_equal(recording.select(cycles=[0]).time, recording.time[0:5])
    np.testing.assert_array_equal(recording.select("custom").time, recording.time[7:10])
    np.testing.assert_array_equal(recording.select("custom:lift").time, recording.time[7:9])
    np.testing.assert_array_equal(recording.select(["rest", "custom:lift"]).q,
                                  recording.q[[0, 1, 2, 7, 8]])


def test_empty_selection_lists_available_stages_and_cycles():
    with pytest.raises(DataError, match=r"available stages: \['', 'custom', 'custom:lift', "
                                        r"'excitation', 'rest'\], cycles: \[-1, 0, 1\]"):
        labelled_recording().select("friction")
    with pytest.raises(DataError, match="cycle in \\[7\\]"):
        labelled_recording().select(cycles=7)


def test_select_needs_labels_and_known_stage_names():
    with pytest.raises(DataError, match="has no stage labels"):
        make_recording().select("rest")
    with pytest.raises(DataError, match="has no cycle labels"):
        make_recording().select(cycles=0)
    with pytest.raises(DataError, match="unknown stage label 'frictoin'"):
        labelled_recording().select("frictoin")


def test_reorder_matches_joints_by_name_and_drops_extra_ones():
    recording = make_recording()
    reordered = recording.reorder(["wrist", "shoulder"])
    assert reordered.joint_names == ("wrist", "shoulder")
    np.testing.assert_array_equal(reordered.q, recording.q[:, [2, 0]])
    np.testing.assert_array_equal(reordered.tau[:, 1], recording.tau[:, 0])
    np.testing.assert_array_equal(reordered.time, recording.time)


def test_reorder_names_every_missing_joint():
    message = "<arrays> is missing joint(s) ['hip', 'knee']; the robot needs ['hip', 'elbow', 'knee']"
    with pytest.raises(DataError, match=re.escape(message)):
        make_recording().reorder(["hip", "elbow", "knee"])


def test_segments_are_contiguous_runs_of_stage_and_cycle():
    assert labelled_recording().segments() == [
        ("rest", 0, 0, 3), ("excitation", 0, 3, 5), ("excitation", 1, 5, 7),
        ("custom:lift", 1, 7, 9), ("custom", 1, 9, 10), ("", -1, 10, 12)]
    assert make_recording(n_samples=4).segments() == [("", -1, 0, 4)]


def test_take_and_time_window():
    recording = labelled_recording()
    np.testing.assert_array_equal(recording.take(slice(2, 5)).cycle, [0, 0, 0])
    np.testing.assert_array_equal(recording.take([1, 4]).time, recording.time[[1, 4]])
    window = recording.time_window(0.52, 0.55)
    np.testing.assert_allclose(window.time, [0.52, 0.53, 0.54])
    with pytest.raises(DataError, match=r"no samples of <arrays> in time window \[10, 11\) s"):
        recording.time_window(10, 11)
    with pytest.raises(DataError, match="is empty"):
        recording.take(np.zeros(12, dtype=bool))


def test_a_recording_made_from_another_shares_its_checked_labels_and_checks_new_ones():
    """The stage and cycle labels a recording checked (read-only) go to one made from it as they are (an hour's
    labels took 0.6 s to check and 144 MB to copy at every step of the pipeline); labels changed since are
    checked again."""
    import dataclasses
    n = 1000
    stage = np.full(n, "excitation")
    stage[:100] = "rest"
    recording = Recording(("a",), np.arange(n) * 1e-3, np.zeros((n, 1)), stage=stage, cycle=np.zeros(n, int))
    copy = dataclasses.replace(recording, source="again")
    assert copy.stage is recording.stage and copy.cycle is recording.cycle
    assert not recording.stage.flags.writeable
    changed = np.array(recording.stage)
    changed[7] = "bogus"
    with pytest.raises(DataError, match="unknown stage label 'bogus'"):
        dataclasses.replace(recording, stage=changed)
    with pytest.raises(DataError, match=r"cycle must be >= 0 or -1"):
        dataclasses.replace(recording, cycle=np.full(n, -3))
