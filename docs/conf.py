"""Sphinx configuration of robot_dynid's documentation site (``make docs``; rosdoc2 reads rosdoc2.yaml).

The guides are the Markdown pages of docs/ (myst-parser); the API reference is the library's numpydoc
docstrings (autodoc, autosummary); the command and node references are generated at every build from the
parsers and the nodes' parameter descriptors (tools/reference_pages.py), so no copy is kept by hand.
"""
import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import reference_pages  # noqa: E402

from robot_dynid import __version__  # noqa: E402

project = "robot_dynid"
author = "robot_dynid developers"
copyright = "2026, robot_dynid developers"  # noqa: A001 (the name Sphinx reads)
release = __version__
version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "examples"]
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]
autosummary_generate = True
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
html_theme = "furo"
html_title = f"robot_dynid {version}"
html_static_path = []

reference_pages.write_pages(DOCS / "reference")
