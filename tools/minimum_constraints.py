"""Print the requirements of the minimum-versions venv (``tools/bootstrap.sh --minimum``).

    python tools/minimum_constraints.py setup.cfg requirements/python.txt > minimum.txt

Every requirement of setup.cfg's ``install_requires`` and ``extras_require`` with a lower bound
``name>=X`` becomes ``name==X``, so the venv holds exactly the oldest versions the package
declares it works with; one without a lower bound is printed as it is (pip takes the newest).
The test tools pinned in requirements/python.txt that are not requirements of the package
(pytest, mcap, ...) keep their pins. Standard library only: it runs in a fresh venv.
"""
from __future__ import annotations

import configparser
import re
import sys

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*([^;]*?)\s*(;.*)?$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(line: str):
    """``(name, specifier, marker)`` of one requirement line (PEP 508 without URLs)."""
    match = _REQUIREMENT.match(line)
    if match is None:
        raise ValueError(f"cannot parse the requirement {line!r}")
    name, _extras, specifier, marker = match.groups()
    return name, specifier.replace(" ", ""), (marker or "").lstrip(";").strip()


def declared_requirements(setup_cfg: str) -> list[str]:
    """The requirement lines of ``install_requires`` and of every extra, in order."""
    config = configparser.ConfigParser()
    if not config.read(setup_cfg):
        raise FileNotFoundError(setup_cfg)
    lines = config.get("options", "install_requires", fallback="").splitlines()
    if config.has_section("options.extras_require"):
        for _extra, value in config.items("options.extras_require"):
            lines += value.splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def floor(specifier: str) -> str | None:
    """The version of ``>=X`` in a specifier, or None when there is none."""
    floors = [part[2:] for part in specifier.split(",") if part.startswith(">=")]
    if len(floors) > 1:
        raise ValueError(f"more than one lower bound in {specifier!r}")
    return floors[0] if floors else None


def minimum_requirements(setup_cfg: str, pinned: str) -> list[str]:
    output, names = [], set()
    for line in declared_requirements(setup_cfg):
        name, specifier, marker = parse(line)
        names.add(canonical(name))
        version = floor(specifier)
        requirement = f"{name}=={version}" if version else f"{name}{specifier}"
        output.append(requirement + (f"; {marker}" if marker else ""))
    with open(pinned, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line and canonical(parse(line)[0]) not in names:
                output.append(line)
    return output


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(f"# written by tools/minimum_constraints.py from {argv[0]} (floors) and {argv[1]} (test tools)")
    print("\n".join(minimum_requirements(*argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
