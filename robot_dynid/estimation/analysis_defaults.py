"""Defaults of the analyses beside identification: validation, cycles, friction stages, friction tracking.

No imports, so that command parsers (``robot-dynid report``, ``validate``) read them without loading the analyses
(:mod:`~robot_dynid.estimation.validation`, :mod:`~robot_dynid.estimation.cycles`,
:mod:`~robot_dynid.estimation.friction_stages`, :mod:`~robot_dynid.estimation.friction_tracking`), which use them
from here."""

__all__ = ["DEFAULT_SPEED_THRESHOLD", "DEFAULT_WARM_CYCLES", "DEFAULT_FRICTION_SPEED", "GRAVITY_MODES",
           "DEFAULT_FORGETTING"]

DEFAULT_SPEED_THRESHOLD = 0.05
"""[rad/s] speed below which a sample does not count for the relative RMSD (validation)."""

DEFAULT_WARM_CYCLES = 5
"""The first cycles left out of the 'warm' statistics (thesis: friction settles after 5-10 cycles)."""
DEFAULT_FRICTION_SPEED = 0.6
"""[1] speed level (fraction of the velocity limit) whose friction is followed over time (thesis Table 5.6)."""
GRAVITY_MODES = ("auto", "always", "never")
"""Whether friction plateaus have gravity removed: where the robot's inertial data allow it, always, never."""
DEFAULT_FORGETTING = 0.9995
"""[1] online friction tracking's forgetting factor per update: a memory of about 2000 samples (20 s at 100 Hz)."""
