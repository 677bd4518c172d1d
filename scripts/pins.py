"""The versions of what the scripts install from PyPI, read from scripts/pyproject.toml (the one place
they are pinned): `python3 scripts/pins.py NAME…` prints each one's `name==version`,
`python3 scripts/pins.py --group bench` every requirement of that optional group."""

import argparse
import os
import tomllib

PYPROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyproject.toml")


def requirements(group=None):
    """The `name==version` requirements of the project (`group` None) or of one optional group."""
    with open(PYPROJECT, "rb") as file:
        project = tomllib.load(file)["project"]
    return project["dependencies"] if group is None else project["optional-dependencies"][group]


def pinned(name):
    """`name==version` as pinned in any group."""
    with open(PYPROJECT, "rb") as file:
        project = tomllib.load(file)["project"]
    for requirement in project["dependencies"] + sum(project["optional-dependencies"].values(), []):
        if requirement.split("==")[0] == name:
            return requirement
    raise KeyError(f"{name} is not pinned in {PYPROJECT}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="packages to print pinned")
    parser.add_argument("--group", help="print every requirement of this optional group")
    arguments = parser.parse_args()
    for requirement in (requirements(arguments.group) if arguments.group else []) + list(map(pinned, arguments.names)):
        print(requirement)


if __name__ == "__main__":
    main()
