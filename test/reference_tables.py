"""The source papers' robot and trajectory tables that tests compare against.

Copies of the project's shared/reference/*.yaml (values as printed in the papers), kept in
test/data/reference so that the tests run from any clone.
"""
import pathlib

import yaml

REFERENCE_DIRECTORY = pathlib.Path(__file__).resolve().parent / "data" / "reference"


def reference_file(name):
    return REFERENCE_DIRECTORY / name


def reference_table(name):
    return yaml.safe_load(reference_file(name).read_text())
