"""A simulated multi-cycle test (protocol plan, recording with stage and cycle labels, stage intervals)
whose friction drifts from cold to warm as a known double exponential in running time, for the
report and analysis tests."""
import numpy as np

from robot_dynid.experiment.protocol import build_protocol
from robot_dynid.experiment.schedule import stage_events
from robot_dynid.experiment.simulation import simulation_parameters
from robot_dynid.model.friction import friction_model
from robot_dynid.model.regressor import Regressor
from robot_dynid.recordings.bag_io import BagWriter
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stages import stage_intervals


def simulate_test(robot, cycles=3, speed_fractions=(0.2, 0.6), rate=100.0, noise=0.05, drift=(0.0, 1.0, 0.0, 1.0),
                  seed=0, friction="coulomb_viscous"):
    """(plan, recording, intervals, regressor, parameters) of ``cycles`` protocol cycles (one excitation
    period, friction ladders at ``speed_fractions``, no warm-up) sampled at ``rate`` [Hz] with noise of
    ``noise`` [N m]. ``drift = (b, t1, c, t2)``: every friction torque is multiplied by
    ``1 + b exp(-t / t1) + c exp(-t / t2)``, t the time since the first sample [min]."""
    plan = build_protocol(robot, cycles=cycles, excitation_periods=1, speed_fractions=list(speed_fractions),
                          warmup_duration=0.0)
    t, q, qd, qdd, labels, cycle = plan.sample(rate)
    regressor = Regressor(robot, friction_model(friction))
    parameters = simulation_parameters(regressor, seed=seed)
    Y = regressor.compute(q, qd, qdd)
    friction_part = regressor.slices["friction"]
    b, t1, c, t2 = drift
    minutes = t / 60.0
    factor = 1.0 + b * np.exp(-minutes / t1) + c * np.exp(-minutes / t2)
    tau = Y @ parameters + (Y[:, :, friction_part] @ parameters[friction_part]) * (factor - 1.0)[:, None]
    tau += np.random.default_rng(seed).normal(0.0, noise, tau.shape)
    recording = Recording.from_arrays(robot.joint_names, t, q, qd, qdd, tau, stage=labels, cycle=cycle,
                                      source="simulated test")
    return plan, recording, stage_intervals(stage_events(plan)), regressor, parameters


def write_test_bag(path, plan, recording, start=100.0):
    """Write ``recording`` and the stage markers of ``plan`` as a bag at ``path``, ``start`` [s] of ROS time
    added to every stamp (as a recorder would)."""
    with BagWriter(path) as bag:
        events = sorted(stage_events(plan), key=lambda marker: marker.stamp)
        samples = iter(range(recording.n_samples))
        k = next(samples, None)
        for marker in events:
            while k is not None and recording.time[k] < marker.stamp:
                bag.write_joint_state(round((start + recording.time[k]) * 1e9), recording.joint_names, recording.q[k],
                                      recording.qd[k], recording.tau[k])
                k = next(samples, None)
            bag.write_stage(round((start + marker.stamp) * 1e9), marker.kind, marker.cycle, marker.start,
                            experiment_id="test", label=marker.label, joint_name=marker.joint_name,
                            speed_fraction=marker.speed_fraction, direction=marker.direction)
        while k is not None:
            bag.write_joint_state(round((start + recording.time[k]) * 1e9), recording.joint_names, recording.q[k],
                                  recording.qd[k], recording.tau[k])
            k = next(samples, None)
    return path
