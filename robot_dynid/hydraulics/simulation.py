"""Simulated hydraulic arm: the curtain-wall arm's cylinders with the paper's friction, and noisy pressures.

Cylinder data, SI (hydraulic paper, Tables IV and V converted from mm: ``fv`` x 1000, ``fs`` x 10,
``c`` = 2 N s/mm = 2000 N s/m). Not in the paper, assumed: bore 40 mm and rod 22 mm
(``A_a`` = 1.2566e-3 m^2, ``A_b`` = 8.765e-4 m^2), stiffness ``K`` = 3000 N/m, rod-side pressure 5 bar,
pressure noise :data:`PRESSURE_NOISE` (1 kPa, 0.01 bar) per chamber. Cylinder ``j`` drives joint ``j``:
its base point sits on link ``j-1`` (the world for ``j = 1``), its rod point on link ``j``
(:func:`curtain_wall_cylinders`).

Bench excitation (stage 1, each cylinder alone against a constant load): the paper's
``x = 6 mm sin(0.05 t)`` plus two faster sines (:data:`BENCH_AMPLITUDES`, :data:`BENCH_FREQUENCIES`), speeds
up to 18 mm/s, so that ``x'``, ``cbrt x'`` and ``sgn x'`` differ over the data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import DynIdError
from robot_dynid.hydraulics.attachment import AttachmentPoint, CylinderAttachment
from robot_dynid.hydraulics.cylinder import (CylinderParameters, HydraulicCylinder, simulate_cylinder,
                                             sinusoidal_displacement)
from robot_dynid.hydraulics.cylinder_results import CylinderConfig
from robot_dynid.hydraulics.two_stage import cylinder_geometry

__all__ = ["AREA_A", "AREA_B", "DAMPING", "STIFFNESS", "PRESSURE_NOISE", "BENCH_LOAD", "BASE_RADIUS", "ROD_OFFSET",
           "BENCH_AMPLITUDES", "BENCH_FREQUENCIES", "PISTON_MASSES", "TABLE_V", "table_v_parameters",
           "curtain_wall_cylinders", "BenchRun", "simulate_bench", "hydraulic_torques"]

AREA_A = math.pi * 0.020**2
AREA_B = AREA_A - math.pi * 0.011**2
DAMPING = 2000.0            # N s/m
STIFFNESS = 3000.0          # N/m
PRESSURE_NOISE = 1e3        # Pa
BENCH_LOAD = 100.0          # N
BASE_RADIUS = 0.15          # m, base attachment point from the joint axis
ROD_OFFSET = 0.1            # m, rod attachment point beside the link's middle
BENCH_AMPLITUDES = (0.006, 0.02, 0.005)        # m
BENCH_FREQUENCIES = (0.05, 0.3, 2.3)           # rad/s
PISTON_MASSES = (4.595, 4.914, 2.324, 1.937, 1.729, 1.705)                  # kg, Table IV
TABLE_V = ((20.77, 7830.0, -151.5), (12.62, 4510.0, -115.3), (12.41, 7030.0, -119.9),
           (8.73, 2230.0, -51.8), (9.23, 4410.0, -56.0), (6.62, 3990.0, -30.1))
"""(fc [N], fv [N s/m], fs [N (s/m)^(1/3)]) of cylinders 1-6, Table V in SI."""


def table_v_parameters() -> list[CylinderParameters]:
    """True parameters of the six cylinders (:data:`TABLE_V`, stiffness :data:`STIFFNESS`)."""
    return [CylinderParameters(STIFFNESS, *row) for row in TABLE_V]


def curtain_wall_cylinders(robot) -> list[CylinderConfig]:
    """Six cylinders named ``c1``..``c6``, cylinder ``j`` across joint ``j`` of ``robot`` (its joint
    frames: link ``j-1``'s frame is at joint ``j``'s axis in standard DH). Rod point :data:`ROD_OFFSET`
    beside the middle of link ``j``; base point on link ``j-1``, :data:`BASE_RADIUS` from joint ``j``'s axis,
    a quarter turn from the rod point at q = 0 (so the moment arm stays large over the joint range).
    Reference length: the length at q = 0."""
    if robot.n_joints != len(PISTON_MASSES):
        raise DynIdError(f"the curtain-wall cylinders need a 6-joint arm, {robot.name!r} has {robot.n_joints}")
    configs = []
    names = robot.joint_names
    to_world = np.eye(3) if robot.base is None else np.array(
        [[1.0, 0.0, 0.0], [0.0, math.cos(robot.base.alpha), -math.sin(robot.base.alpha)],
         [0.0, math.sin(robot.base.alpha), math.cos(robot.base.alpha)]])
    for index, name in enumerate(names):
        row = robot.dh[index]
        rod_offset = np.array([0.5 * row.a, ROD_OFFSET])          # from joint j's axis, in link j's frame
        rod = AttachmentPoint(name, (-0.5 * row.a, ROD_OFFSET, 0.0))
        # base point a quarter turn from the rod point at q = 0, BASE_RADIUS from the axis
        angle = math.atan2(rod_offset[1], rod_offset[0]) + row.theta - 0.5 * math.pi
        point = BASE_RADIUS * np.array([math.cos(angle), math.sin(angle), 0.0])
        if index == 0:
            base = AttachmentPoint("world", tuple(float(value) for value in to_world @ point))
        else:
            base = AttachmentPoint(names[index - 1], tuple(float(value) for value in point))
        attachment = CylinderAttachment(base=base, rod=rod)
        cylinder = HydraulicCylinder(PISTON_MASSES[index], DAMPING, AREA_A, AREA_B)
        config = CylinderConfig(f"c{index + 1}", cylinder, BENCH_LOAD, attachment)
        length = cylinder_geometry(robot, [config]).displacement(np.zeros(robot.n_joints))[0, 0]
        configs.append(CylinderConfig(config.name, cylinder, BENCH_LOAD,
                                      CylinderAttachment(base=base, rod=rod, reference_length=float(length))))
    return configs


@dataclass(frozen=True)
class BenchRun:
    """One cylinder driven alone: ``time`` [s], ``x`` [m], ``xd`` [m/s], ``p_a``, ``p_b`` [Pa] (noisy),
    ``load`` [N], each (N,)."""

    name: str
    time: np.ndarray
    x: np.ndarray
    xd: np.ndarray
    p_a: np.ndarray
    p_b: np.ndarray
    load: np.ndarray


def simulate_bench(configs, parameters, duration: float = 4 * math.pi / 0.05, rate: float = 50.0,
                   noise: float = PRESSURE_NOISE, seed=0) -> list[BenchRun]:
    """Each cylinder alone along the bench excitation against its constant load (default 100 N),
    pressures with white noise of ``noise`` [Pa] per chamber; ``duration`` [s] (default two periods of
    the paper's 0.05 rad/s sine), ``rate`` [Hz]."""
    rng = np.random.default_rng(seed)
    time = np.arange(0.0, duration, 1.0 / rate)
    x, xd, xdd = sinusoidal_displacement(time, BENCH_AMPLITUDES, BENCH_FREQUENCIES)
    runs = []
    for config, truth in zip(configs, parameters):
        load = np.full(time.size, BENCH_LOAD if config.load is None else config.load)
        pressures = simulate_cylinder(config.cylinder, truth, x, xd, xdd, load=load)
        runs.append(BenchRun(config.name, time, x, xd, pressures.p_a + noise * rng.normal(size=time.size),
                             pressures.p_b + noise * rng.normal(size=time.size), load))
    return runs


def hydraulic_torques(robot, configs, parameters, q, qd, qdd, rigid_body_torque, noise: float = PRESSURE_NOISE,
                      seed=0) -> np.ndarray:
    """Joint torques [N m] (N, n) the cylinders' measured pressures give, ``sum_c r_c (p_a A_a - p_b A_b)``,
    when the arm needs ``rigid_body_torque`` (N, n) [N m] along ``q, qd, qdd`` (N, n): each cylinder's rod
    force ``F_L`` solves ``R(q)^T F_L = tau_rb``; its pressures drive the cylinder model against ``F_L``,
    plus white noise ``noise`` [Pa] per chamber."""
    rng = np.random.default_rng(seed)
    motion = cylinder_geometry(robot, configs).motion(q, qd, qdd)
    rod_forces = np.array([np.linalg.lstsq(arms.T, tau, rcond=None)[0]
                           for arms, tau in zip(motion.moment_arms, np.asarray(rigid_body_torque, dtype=float))])
    torque = np.zeros_like(np.asarray(rigid_body_torque, dtype=float))
    for index, (config, truth) in enumerate(zip(configs, parameters)):
        pressures = simulate_cylinder(config.cylinder, truth, motion.x[:, index], motion.xd[:, index],
                                      motion.xdd[:, index], load=rod_forces[:, index])
        p_a = pressures.p_a + noise * rng.normal(size=pressures.p_a.size)
        p_b = pressures.p_b + noise * rng.normal(size=pressures.p_b.size)
        force = p_a * config.cylinder.area_a - p_b * config.cylinder.area_b
        torque += motion.moment_arms[:, index, :] * force[:, None]
    return torque
