"""Progress of the loops that take seconds (per-cycle fits, cross-verification, the prior weight's search): the
core takes a :data:`Progress` callback and the command line passes one that draws a bar on a terminal
(``robot_dynid.cli.options.progress``); the default draws nothing."""
from __future__ import annotations

from typing import Callable, Iterable

__all__ = ["no_progress", "Progress"]


def no_progress(iterable, description="", total=None):
    """The default :data:`Progress`: ``iterable`` itself."""
    return iterable


Progress = Callable[..., Iterable]
"""``progress(iterable, description, total)`` wraps a loop (e.g. in a progress bar); default: no bar."""
