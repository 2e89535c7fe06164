"""Bag directories on disk, below reading (bag_io) and repairing (bag_recovery) them: the storage plugins
and metadata version robot_dynid writes, the typestores of the ROS distros with robot_dynid's message types, the
recorder's directory lock and closing reserve, and the checks of a bag's files before anything opens them."""
from __future__ import annotations

import os
from pathlib import Path

from rosbags.rosbag2 import StoragePlugin
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.input_files import check_directory_files
from robot_dynid.package_files import package_file_candidates
from robot_dynid.yaml_files import read_yaml

try:
    import fcntl
except ImportError:     # not POSIX: no recording lock
    fcntl = None

__all__ = ["PACKAGE_NAME", "ROS_DISTROS", "DEFAULT_DISTRO", "STORAGE_PLUGINS", "BAG_METADATA_VERSION",
           "interface_definition_text", "make_typestore", "ensure_type", "check_bag_files", "lock_bag_directory",
           "bag_being_recorded", "CLOSING_RESERVE", "RESERVE_FILE"]

PACKAGE_NAME = "robot_dynid"
ROS_DISTROS = {
    "humble": Stores.ROS2_HUMBLE,
    "iron": Stores.ROS2_IRON,
    "jazzy": Stores.ROS2_JAZZY,
    "kilted": Stores.ROS2_KILTED,
}
DEFAULT_DISTRO = "jazzy"
STORAGE_PLUGINS = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
BAG_METADATA_VERSION = 8


def interface_definition_text(type_name: str) -> str:
    """Text of a robot_dynid message definition (.msg).

    Looked up where :mod:`robot_dynid.package_files` finds shipped files: the pip-installed
    package data ``robot_dynid/package_data/msg/``, the source tree ``<repo>/msg/`` and
    ``<prefix>/share/robot_dynid/msg/`` for every prefix of ``AMENT_PREFIX_PATH``.

    Parameters
    ----------
    type_name : str
        ``"ExperimentStage"`` or ``"robot_dynid/msg/ExperimentStage"``.

    Raises
    ------
    DynIdError
        The definition is in none of the places (all paths tried are named).
    """
    name = type_name.rsplit("/", 1)[-1]
    tried = package_file_candidates("msg", f"{name}.msg")
    for path in tried:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise DynIdError(f"definition of message {type_name!r} not found; tried "
                     f"{[str(path) for path in tried]}")


def _distro_store(distro: str | None) -> Stores:
    if distro is None:
        environment = os.environ.get("ROS_DISTRO", "")
        distro = environment if environment in ROS_DISTROS else DEFAULT_DISTRO
    validators.text(distro, "ROS distro", DynIdError, list(ROS_DISTROS))
    return ROS_DISTROS[distro]


def make_typestore(distro: str | None = None):
    """rosbags typestore with the standard types of a ROS 2 distro; robot_dynid's messages are
    added on first use by :func:`ensure_type`.

    Parameters
    ----------
    distro : str, optional
        ``"humble"``, ``"iron"``, ``"jazzy"`` or ``"kilted"``; default ``$ROS_DISTRO`` when it is
        one of these, else ``"jazzy"``. The standard messages used here (JointState, Header)
        are the same in all of them.
    """
    return get_typestore(_distro_store(distro))


def ensure_type(typestore, msgtype: str) -> None:
    """Register a ``robot_dynid/msg/*`` type from its .msg text unless ``typestore`` has it.

    Raises
    ------
    DataError
        ``msgtype`` is neither in the typestore nor a robot_dynid message.
    """
    if msgtype in typestore.types:
        return
    if not msgtype.startswith(f"{PACKAGE_NAME}/msg/"):
        raise DataError(f"message type {msgtype!r} is not in the typestore and not a "
                        f"{PACKAGE_NAME} message")
    typestore.register(get_types_from_msg(interface_definition_text(msgtype), msgtype))


def check_bag_files(path) -> None:
    """DataError unless every file of bag directory ``path`` is a regular file (no FIFO or device that
    rosbags would block on or read without end) and its metadata.yaml, if any, is within the limits of
    :func:`~robot_dynid.yaml_files.read_yaml` (size, nesting, aliases)."""
    path = Path(path)
    if path.is_dir():
        check_directory_files(path, "bag", DataError)
        if (path / "metadata.yaml").exists():
            read_yaml(path / "metadata.yaml", DataError, "bag metadata")


def lock_bag_directory(path) -> int | None:
    """Mark bag directory ``path`` as being recorded by this process: an exclusive advisory
    ``flock`` on the directory, held while the returned descriptor is open (``os.close`` it when
    the bag is closed); the kernel drops it when the process ends, killed or not. None where
    ``flock`` does not exist.

    Raises
    ------
    DataError
        Another process holds the lock (records into ``path``).
    """
    if fcntl is None:
        return None
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise DataError(f"bag {path} is being recorded by another process") from None
    return descriptor


def bag_being_recorded(path) -> bool:
    """Whether a live process holds bag directory ``path``'s :func:`lock_bag_directory` lock."""
    if fcntl is None or not Path(path).is_dir():
        return False
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)      # also releases the shared lock taken
    return False


CLOSING_RESERVE = 256 * 1024
"""Bytes a :class:`BagWriter` holds on its file system while recording, in the file
:data:`RESERVE_FILE` of the bag directory, and releases to finish the bag (storage index,
metadata.yaml) when the disk is full: enough for an MCAP bag of about 2,000 chunks (2 GB)."""
RESERVE_FILE = ".closing_reserve"
