"""Exceptions raised by the core. Each message names the offending field, joint or column."""

__all__ = ["DynIdError", "RobotDescriptionError", "DataError", "IdentificationError", "TrajectoryError", "PayloadError",
           "ModelFileError", "message_line", "one_line"]


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


def message_line(error: BaseException) -> str:
    """The message of ``error`` on one line: its whitespace and line breaks collapsed to single spaces; ``""`` for a
    message that cannot be shown (its ``__str__`` fails)."""
    try:
        return " ".join(str(error).split())
    except Exception:                   # a message whose __str__ fails
        return ""


def one_line(error: BaseException, limit: int | None = None) -> str:
    """``error`` as one line (:func:`message_line`), of at most ``limit`` characters (None: all): its message for a
    :class:`DynIdError` (written for the user), else its type and message (``RecursionError: maximum recursion depth
    exceeded``); a message that cannot be shown gives the type alone."""
    text = message_line(error)
    if not isinstance(error, DynIdError):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."
