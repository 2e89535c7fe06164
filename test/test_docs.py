"""The README and the documentation pages: every relative link names a file of the repository (the Sphinx build,
`make docs`, checks the links between pages, not the README's), and the README stays what it is meant to be."""
import re

import pytest

from repo_paths import REPO

PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
GENERATED = {(REPO / "docs" / "reference" / name).resolve() for name in ("commands.md", "nodes.md")}
"""The pages `make docs` writes (tools/reference_pages.py; git-ignored): a fresh clone has them only after it, so a
link to one counts when it names one of them (`make test` alone on a fresh clone failed here)."""
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_names_a_file(page):
    missing = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists() and (page.parent / path).resolve() not in GENERATED:
            missing.append(target)
    assert missing == [], f"{page.name}: links to files that do not exist: {missing}"


def test_the_readme_says_what_the_package_is_the_two_commands_and_where_the_rest_lives():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.*)$", text, flags=re.M)
    assert headings[0] == "Two commands" and "Documentation" in headings
    assert "make demo" in text and "make test" in text and "make docs" in text
    assert "test-artifacts/screenshots/" in text
    # the references live in the site, generated: no per-node parameter table or per-command option list here
    assert "| parameter |" not in text and "--joint-states-topic" not in text
