"""Paths of the repository that tests read: wherever a test file sits, it takes them from here."""
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
"""The repository's root (the directory of setup.py and package.xml)."""
TEST_DATA = REPO / "test" / "data"
"""Recordings, robots and reference tables that only the tests use."""
ROBOTS = REPO / "config" / "robots"
"""The robot descriptions the package ships."""
