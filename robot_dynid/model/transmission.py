"""Drive trains: the transmission between motors and joints.

Motor positions are linear in the joint positions, ``qm = T q`` (T square and invertible: one row
per motor, one column per joint; gear ratios on the diagonal, couplings off it, e.g. a wrist whose
motor 6 turns with ``q5 + q6`` has row 6 ``[0, 0, 0, 0, N6, N6]``). Hence ``qdm = T qd``,
``qddm = T qdd`` and, by virtual work, joint torques ``tau = T^T tau_m``. A revolute joint's
entries are [rad/rad], a prismatic joint's [rad/m] (a ball screw of lead 10 mm: 628 rad/m).

Without a transmission (``T`` the identity) friction and armature live on the joint side, as
before. With one, rotor inertia ``I_m`` and friction ``f_m(qdm)`` of each motor add
``tau += T^T (I_m qddm + f_m(qdm))``: linear in ``I_m`` and the friction coefficients, so they are
more regressor columns (:class:`robot_dynid.model.regressor.Regressor`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, RobotDescriptionError
from robot_dynid.joint_names import unique_names

__all__ = ["TRANSMISSION_KEYS", "TRANSMISSION_OPTIONAL", "MAX_CONDITION", "REVOLUTE_RATIO_RANGE",
           "PRISMATIC_RATIO_RANGE", "Transmission", "transmission_from_dict", "ratio_warnings"]

#: Keys of the ``transmission:`` section of a robot description.
TRANSMISSION_KEYS = ("motor_from_joint",)
TRANSMISSION_OPTIONAL = ("motors", "torque_constants")
#: A transmission whose condition number exceeds this cannot be inverted reliably (motor-side
#: positions would map to joint positions with errors beyond 1e-6 of their size).
MAX_CONDITION = 1e8
#: Plausible gear ratios, revolute joints [rad/rad]: direct drive (1) to the largest strain-wave and multi-stage
#: planetary gears of arms (about 300), with margin. Outside it a ratio is warned about (a ratio of 0.01 or 10000
#: is a unit mistake, or the inverse given).
REVOLUTE_RATIO_RANGE = (1.0, 1000.0)
#: Prismatic joints [rad/m]: a ball screw or belt of lead 1 mm (6283 rad/m) to 1 m per turn (6.3 rad/m), with margin.
PRISMATIC_RATIO_RANGE = (1.0, 1e5)


@dataclass(frozen=True, eq=False)
class Transmission:
    """``qm = T q`` between ``m = n`` motors and the ``n`` joints of a robot.

    Parameters
    ----------
    motor_names : tuple of str, length n
        Unique; ``motor_<joint>`` by default.
    motor_from_joint : ndarray, shape (n, n)
        ``T`` [rad/rad, rad/m]: row r gives motor r's position as a combination of the joint
        positions. Invertible.
    torque_constants : tuple of float or None
        Motor torque per motor current [N m/A] per motor (non-zero; negative where the drive counts
        current against the motor's direction), to read motor currents as motor torques.
    """

    motor_names: tuple[str, ...]
    motor_from_joint: np.ndarray
    torque_constants: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        matrix = np.array(self.motor_from_joint, dtype=float)
        matrix.setflags(write=False)
        object.__setattr__(self, "motor_from_joint", matrix)
        object.__setattr__(self, "motor_names", tuple(self.motor_names))
        if self.torque_constants is not None:
            object.__setattr__(self, "torque_constants", tuple(float(k) for k in self.torque_constants))

    def __eq__(self, other) -> bool:
        return (isinstance(other, Transmission) and self.motor_names == other.motor_names
                and np.array_equal(self.motor_from_joint, other.motor_from_joint)
                and self.torque_constants == other.torque_constants)

    def __hash__(self) -> int:
        return hash((self.motor_names, self.motor_from_joint.tobytes(), self.torque_constants))

    @property
    def n_motors(self) -> int:
        return len(self.motor_names)

    @property
    def gear_ratios(self) -> np.ndarray:
        """Per motor, the entry of its row largest in magnitude [rad/rad or rad/m]: the reduction
        from its main joint (shape constants of motor-side friction scale with it)."""
        rows = self.motor_from_joint
        return np.abs(rows[np.arange(rows.shape[0]), np.argmax(np.abs(rows), axis=1)])

    @property
    def main_joints(self) -> np.ndarray:
        """Per motor, the index of the joint its row weighs most (its temperature is taken as that joint's)."""
        return np.argmax(np.abs(self.motor_from_joint), axis=1)

    def motor_from_joint_values(self, joint_values) -> np.ndarray:
        """``T x`` for joint-side positions, velocities or accelerations (N, n) -> (N, n)."""
        return np.asarray(joint_values, dtype=float) @ self.motor_from_joint.T

    def joint_from_motor_values(self, motor_values) -> np.ndarray:
        """``T^-1 x_m``: joint-side positions, velocities or accelerations from motor-side ones (N, n)."""
        return np.linalg.solve(self.motor_from_joint, np.asarray(motor_values, dtype=float).T).T

    def joint_torques(self, motor_torques) -> np.ndarray:
        """``tau = T^T tau_m`` [N m or N] from motor torques (N, n) [N m]."""
        return np.asarray(motor_torques, dtype=float) @ self.motor_from_joint

    def motor_torques_from_current(self, current) -> np.ndarray:
        """``tau_m = k_t i`` [N m] from motor currents (N, n) [A], motor order.

        Raises DataError when the transmission has no ``torque_constants``."""
        if self.torque_constants is None:
            raise DataError("the transmission has no torque_constants [N m/A]: motor currents cannot be read as "
                            "motor torques; add transmission.torque_constants to the robot description")
        return np.asarray(current, dtype=float) * np.asarray(self.torque_constants)

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"motors": list(self.motor_names),
                                "motor_from_joint": self.motor_from_joint.tolist()}
        if self.torque_constants is not None:
            data["torque_constants"] = list(self.torque_constants)
        return data


def transmission_from_dict(data: Any, joint_names: Sequence[str], label: str = "transmission") -> Transmission:
    """The ``transmission:`` section of a robot description for ``joint_names``.

    Raises
    ------
    RobotDescriptionError
        Naming the key, row and column: an unknown key, a row or column count other than the
        number of joints, a non-finite entry, a singular or ill-conditioned ``T``, motor names
        that are not unique strings, torque constants of the wrong count or zero.
    """
    validators.known_keys(data, label, TRANSMISSION_KEYS, TRANSMISSION_OPTIONAL, RobotDescriptionError)
    n = len(joint_names)
    rows = data["motor_from_joint"]
    if not isinstance(rows, list) or len(rows) != n:
        raise RobotDescriptionError(f"{label}.motor_from_joint must be a list of {n} rows (one per motor; "
                                    f"motors = joints {list(joint_names)}), got {_count(rows)}")
    matrix = np.array([validators.numbers(row, n, f"{label}.motor_from_joint[{r}]", RobotDescriptionError,
                                          "rad/rad or rad/m; one column per joint")
                       for r, row in enumerate(rows)])
    for r, row in enumerate(matrix):
        if not row.any():
            raise RobotDescriptionError(f"{label}.motor_from_joint[{r}] is all zero: motor {r + 1} would turn with "
                                        "no joint")
    condition = np.linalg.cond(matrix)
    if not condition < MAX_CONDITION:
        raise RobotDescriptionError(f"{label}.motor_from_joint is singular or nearly so (condition number "
                                    f"{condition:.3g}): joint positions cannot be found from motor positions")
    names = data.get("motors", [f"motor_{joint}" for joint in joint_names])
    if not isinstance(names, list) or len(names) != n:
        raise RobotDescriptionError(f"{label}.motors must be a list of {n} motor names, got {_count(names)}")
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise RobotDescriptionError(f"{label}.motors[{index}] must be a non-empty string, got {name!r}")
    unique_names(names, f"{label}.motors", "motor", error=RobotDescriptionError)
    constants = None
    if "torque_constants" in data:
        constants = validators.numbers(data["torque_constants"], n, f"{label}.torque_constants",
                                       RobotDescriptionError, "N m/A, one per motor")
        zero = [index for index, value in enumerate(constants) if value == 0.0]
        if zero:
            raise RobotDescriptionError(f"{label}.torque_constants[{zero[0]}] (motor {names[zero[0]]}) is 0; "
                                        "a torque constant is non-zero [N m/A]")
    return Transmission(tuple(names), matrix, constants)


def ratio_warnings(transmission: Transmission, joint_names: Sequence[str], prismatic: Sequence[bool]) -> list[str]:
    """Why gear ratios look implausible: each motor whose ratio to its main joint lies outside
    :data:`REVOLUTE_RATIO_RANGE` (or :data:`PRISMATIC_RATIO_RANGE` for a prismatic joint); empty when none does."""
    warnings = []
    for motor, ratio, joint in zip(transmission.motor_names, transmission.gear_ratios, transmission.main_joints):
        low, high = PRISMATIC_RATIO_RANGE if prismatic[joint] else REVOLUTE_RATIO_RANGE
        unit = "rad/m" if prismatic[joint] else "rad/rad"
        if not low <= ratio <= high:
            warnings.append(f"transmission: motor {motor} turns {ratio:g} {unit} of joint {joint_names[joint]}, "
                            f"outside the plausible [{low:g}, {high:g}] {unit} (the inverse ratio, or another unit?)")
    return warnings


def _count(value: Any) -> str:
    return f"{len(value)} entries" if isinstance(value, (list, tuple, Mapping)) else type(value).__name__
