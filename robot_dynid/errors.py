"""Exceptions raised by the core. Each message names the offending field, joint or column."""


class DynIdError(ValueError):
    """Base class of every error robot_dynid raises on bad input."""


class RobotDescriptionError(DynIdError):
    """A robot description (YAML or URDF) is malformed or physically suspicious."""


class DataError(DynIdError):
    """Recorded data (CSV, bag, arrays) is missing a field, joint or column, or is inconsistent."""


class IdentificationError(DynIdError):
    """The data cannot identify the requested model (rank deficiency, poor excitation)."""


class TrajectoryError(DynIdError):
    """A trajectory or protocol description is malformed or violates the robot's limits."""


class PayloadError(DynIdError):
    """A payload (a body fixed to the last link) is malformed, not physically consistent, or at an unknown frame."""


class ModelFileError(DynIdError):
    """A model artifact file is malformed or of an unsupported schema version."""
