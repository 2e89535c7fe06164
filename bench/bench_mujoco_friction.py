"""Each friction model on MuJoCo's friction loss: held-out feed-forward error of the identified model and of the
true parameters in the model's family (docs/simulation.md quotes the table).

    .venv/bin/python bench/bench_mujoco_friction.py [--quick]

MuJoCo (1 kHz, semi-implicit Euler) moves config/robots/er3a_mujoco.yaml (armature, damping, friction loss)
along three 10 s random rest-to-rest excitations (seeds 11, 12, 13, 60 % of the joint ranges) under
computed-torque tracking; the applied torques with 0.3 N m of noise, sampled at 500 Hz, and the positions and
velocities (accelerations derived as from a bag) identify each friction model with armature. The held-out motion
is the demo's (robot_dynid.cli.demo.held_out_motion: another random excitation, 8 s); the reference torques are
MuJoCo's inverse dynamics along it. Needs mujoco (pip install "robot-dynid[sim]").
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from robot_dynid.cli.demo import held_out_motion
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.experiment.excitation import random_excitation
from robot_dynid.experiment.mujoco_engine import MUJOCO_REVERSAL_LEAD, MujocoArm, MujocoRobot
from robot_dynid.experiment.trajectories import time_grid
from robot_dynid.model.friction import friction_model
from robot_dynid.model.robot_loader import load_robot
from robot_dynid.package_files import find_package_file
from robot_dynid.recordings.pipeline import complete_derivatives
from robot_dynid.recordings.recording import Recording

RATE = 500.0
NOISE = 0.3
MODELS = (("coulomb_viscous", {}), ("stribeck_cbrt", {}), ("arctan", {}), ("polynomial", {}),
          ("coulomb_viscous_lead", {"reversal_lead": 0.005}),
          ("coulomb_viscous_lead", {"reversal_lead": MUJOCO_REVERSAL_LEAD}),
          ("coulomb_viscous_lead", {"reversal_lead": 0.015}))


def record(robot, seeds):
    """A recording of MuJoCo following one random excitation per seed, each from rest to rest."""
    simulator = MujocoRobot(robot, friction_model("coulomb_viscous"), seed=0, noise_std=NOISE)
    parts = []
    for seed in seeds:
        arm = MujocoArm(simulator, RATE, seed=seed, max_lag=100.0)
        excitation = random_excitation(robot, harmonics=5, period=10.0, amplitude_fraction=0.6, seed=seed)
        points = time_grid(10.0, dt=0.01)
        arm.follower.command(robot.joint_names, points, *excitation.evaluate(points), start_time=0.2,
                             received_time=0.0)
        samples = arm.advance(10.6)
        parts.append(complete_derivatives(Recording.from_arrays(
            robot.joint_names, samples.time + 20.0 * len(parts), samples.q, samples.qd,
            tau=samples.measured_torque)))
    return parts


def run(quick: bool = False):
    started = time.monotonic()
    robot = load_robot(find_package_file("config", "robots", "er3a_mujoco.yaml"))
    recordings = record(robot, (11,) if quick else (11, 12, 13))
    _, q, qd, qdd = held_out_motion(robot)
    rows = []
    for name, constants in MODELS:
        friction = friction_model(name, **constants)
        engine = MujocoRobot(robot, friction, seed=0)
        truth = engine.torques(q, qd, qdd, noise=False)
        model = identify(recordings, robot, IdentificationSettings(friction=friction, armature=True))
        identified = np.sqrt(np.mean((model.torque(q, qd, qdd) - truth) ** 2, axis=0))
        family = np.sqrt(np.mean((engine.model_torques(q, qd, qdd) - truth) ** 2, axis=0))
        label = name + (f" ({constants['reversal_lead'] * 1e3:g} ms)" if constants else "")
        rows.append((label, identified, family))
    lines = ["| friction model | identified: RMS error per joint [N m] | all joints | true parameters: per joint "
             "[N m] | all joints |", "| --- | --- | --- | --- | --- |"]
    for label, identified, family in rows:
        lines.append(f"| {label} | {' '.join(f'{value:.3f}' for value in identified)} | "
                     f"{np.sqrt(np.mean(identified**2)):.3f} | {' '.join(f'{value:.3f}' for value in family)} | "
                     f"{np.sqrt(np.mean(family**2)):.3f} |")
    text = "\n".join(lines)
    return {"markdown": f"{text}\n\n({len(recordings)} excitation(s), {time.monotonic() - started:.0f} s)"}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one excitation instead of three")
    print(run(parser.parse_args().quick)["markdown"])
