"""What decides a fleet identification's result besides the recording: :class:`TaskOptions`.

Light on imports (the ``fleet`` command's parser takes its defaults from here): what runs the tasks is
:mod:`robot_dynid.fleet.tasks`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING

from robot_dynid import __version__
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.identification_options import OPTION_DEFAULTS
from robot_dynid.estimation.quality_gate import GATE_DEFAULTS, GATE_RANGES, check_gate_bound
from robot_dynid.recordings.bag_layout import DEFAULT_JOINT_STATES_TOPIC

__all__ = ["READING_DEFAULTS", "TaskOptions"]

if TYPE_CHECKING:
    from robot_dynid.model.robot_description import RobotDescription

READING_DEFAULTS = {"joint_states_topic": DEFAULT_JOINT_STATES_TOPIC, "effort_topic": None, "resample": None,
                    "derive": False}
"""How recordings are read (:func:`~robot_dynid.recordings.pipeline.run`)."""


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """Everything but the recording that decides a fleet identification's result.

    Attributes
    ----------
    identification : dict
        Options of :func:`~robot_dynid.estimation.identification.settings_from_options`.
    reading : dict
        Options of :data:`READING_DEFAULTS`.
    max_holdout_rsd, max_condition : float
        The quality gate [1] (defaults those of the identifier node).
    holdout_fraction : float
        [1] last part of the selected samples held out of the fit to judge it, in (0, 1) (:data:`GATE_RANGES`).
    report : bool
        Also make the recording's report (HTML, figures).
    """

    identification: dict = dataclasses.field(default_factory=dict)
    reading: dict = dataclasses.field(default_factory=dict)
    max_holdout_rsd: float = GATE_DEFAULTS["max_holdout_rsd"]
    max_condition: float = GATE_DEFAULTS["max_condition"]
    holdout_fraction: float = GATE_DEFAULTS["holdout_fraction"]
    report: bool = True

    def __post_init__(self):
        unknown = sorted(set(self.reading) - set(READING_DEFAULTS))
        if unknown:
            raise DynIdError(f"unknown reading option(s) {unknown}; known: {sorted(READING_DEFAULTS)}")
        for name in GATE_RANGES:
            check_gate_bound(name, getattr(self, name))

    def for_entry(self, torque_check: bool) -> "TaskOptions":
        """These options for a manifest row whose ``torque_check`` column says whether its torques are checked
        (false turns the check off whatever the options say)."""
        if torque_check:
            return self
        return dataclasses.replace(self, identification={**self.identification, "check_torque_scale": False})

    def settings_key(self, robot: RobotDescription, stage: str | None) -> str:
        """SHA-256 (hex) of what, besides the data, decides the result: the robot description (its
        contract form, whatever file it came from), the stage, these options with their defaults
        filled in, and the robot-dynid version."""
        content = {"robot": robot.to_dict(), "stage": stage,
                   "identification": {**OPTION_DEFAULTS, **self.identification},
                   "reading": {**READING_DEFAULTS, **self.reading},
                   "gate": [self.max_holdout_rsd, self.max_condition, self.holdout_fraction],
                   "report": self.report, "version": __version__}
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
