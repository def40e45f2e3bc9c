"""The ecr-retention distribution as a user gets it: the files git tracks, built into a wheel (and an sdist) as from
a fresh clone, installed into a fresh virtual environment. Offline: the build uses this environment's setuptools (no isolated build
environment to download), and an installation takes its dependencies from this environment's site-packages through
a view of it that holds only the distributions the wheel requires, never from the package index."""

from __future__ import annotations

import email
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

REPOSITORY = Path(__file__).resolve().parents[2]

# pip without the index, without the version check, with no configuration of this machine's user.
OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CONFIG_FILE": os.devnull}


def export_tree(repository: Path, out: Path) -> Path:
    """The files git tracks in `repository`, as the working tree has them, copied to `out`: what a fresh clone holds
    (with uncommitted edits), without untracked or ignored files (a .venv, build output, caches). Symbolic links stay
    links (lambdas/ecr_retention/cdk -> ../../infra)."""
    listed = subprocess.run(
        ["git", "-C", str(repository), "ls-files", "-z"], check=True, capture_output=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = repository / name, out / name
        if not source.is_symlink() and not source.exists():  # deleted in the working tree, not yet in the index
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return out


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of the project in `source`, written to `out`. `source` is a git work tree (the repository: its
    tracked files are built, as from a fresh clone) or a plain project directory (an unpacked sdist)."""
    out.mkdir(parents=True, exist_ok=True)
    with _project(source) as project:
        _pip(
            *("wheel", "--no-deps", "--no-build-isolation", "--check-build-dependencies"),
            *("--wheel-dir", str(out), str(project)),
        )
    return _one(out, "*.whl")


def build_sdist(source: Path, out: Path) -> Path:
    """The source distribution of the project in `source` (as build_wheel takes it), written to `out`, through the
    build backend's PEP 517 hook (what `python -m build --sdist` calls)."""
    out.mkdir(parents=True, exist_ok=True)
    script = "import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])"
    with _project(source) as project:
        _run([sys.executable, "-c", script, str(out)], cwd=project)
    return _one(out, "*.tar.gz")


@contextmanager
def _project(source: Path) -> Iterator[Path]:
    """`source` to build from: a git work tree's tracked files exported to a temporary directory (so that neither its
    untracked files reach the build nor the build's leftovers reach it), any other directory as it is."""
    if not (source / ".git").exists():  # a worktree's .git is a file
        yield source
        return
    with tempfile.TemporaryDirectory(prefix="ecr-retention-tree-") as directory:
        yield export_tree(source, Path(directory))


def unpack_sdist(sdist: Path, out: Path) -> Path:
    """The project directory inside `sdist`, extracted under `out`."""
    with tarfile.open(sdist) as archive:
        archive.extractall(out, filter="data")
    (project,) = out.iterdir()
    return project


@dataclass(frozen=True)
class Installation:
    """A virtual environment holding the wheel, its dependencies visible from this environment."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.root / "bin" / "ecr-retention"

    def run(self, *arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`ecr-retention ARGUMENTS` as a user's shell runs it: the installed script, this process's environment
        (the tests' fake AWS credentials) without the paths that would lead back to the repository."""
        environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run(
            [str(self.script), *arguments], cwd=cwd, env=environment, capture_output=True, text=True, check=False
        )


def install(wheel: Path, root: Path, *, extras: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> Installation:
    """A fresh virtual environment at `root` with `wheel` installed without its dependencies, which come from a view
    of this environment's site-packages that holds only what the wheel requires (with `extras`), less the
    distributions `without` names: what `pip install "ecr-retention[EXTRAS]"` would install, offline."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    installation = Installation(root)
    _pip("--python", str(installation.python), "install", "--no-deps", "--no-compile", str(wheel))
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = (name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(metadata_name))
    needed = dependency_closure(metadata.get_all("Requires-Dist") or [], extras) - {
        _normalized(name) for name in without
    }
    view = site_packages_view(root / "view", needed)
    # A path that a .pth file adds is searched after the environment's own site-packages, and the .pth files in it
    # (the repository's editable installation among them) are not run.
    site_packages = Path(_ask(installation.python, "import sysconfig; print(sysconfig.get_path('purelib'))"))
    (site_packages / "dependencies.pth").write_text(f"{view}\n")
    return installation


def dependency_closure(requirements: list[str], extras: tuple[str, ...] = ()) -> set[str]:
    """The normalized names of the distributions that `requirements` (Requires-Dist lines, with `extras` selected)
    bring in, transitively, as this environment has them installed."""
    found: set[str] = set()
    pending = [(Requirement(line), frozenset(extras)) for line in requirements]
    while pending:
        requirement, selected = pending.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in ("", *selected)
        ):
            continue
        name = _normalized(requirement.name)
        if name in found:
            continue
        found.add(name)
        wanted = frozenset(requirement.extras)
        pending.extend((Requirement(line), wanted) for line in importlib.metadata.requires(name) or [])
    return found


def site_packages_view(out: Path, distributions: set[str]) -> Path:
    """A directory of links to the entries of this environment's site-packages that `distributions` installed
    (their packages, modules and .dist-info directories)."""
    site_packages = Path(sysconfig.get_path("purelib"))
    out.mkdir(parents=True)
    for entry in sorted({top for name in distributions for top in _top_level_entries(name)}):
        if (site_packages / entry).exists() and not entry.endswith(".pth") and entry != "__pycache__":
            (out / entry).symlink_to(site_packages / entry)
    return out


def _top_level_entries(distribution: str) -> set[str]:
    """The names directly in site-packages that `distribution` installed (packages, modules, its .dist-info)."""
    files = importlib.metadata.distribution(distribution).files or []
    return {file.parts[0] for file in files if file.parts and file.parts[0] != ".."}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _ask(python: Path, code: str) -> str:
    return subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def _pip(*arguments: str) -> None:
    _run([sys.executable, "-m", "pip", *arguments], environment={**os.environ, **OFFLINE_PIP})


def _run(command: list[str], *, cwd: Path | None = None, environment: dict[str, str] | None = None) -> None:
    """`command`, or an error that carries its output (a build's reason to fail is in it)."""
    completed = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stdout}{completed.stderr}"
        )


def _one(directory: Path, pattern: str) -> Path:
    (found,) = directory.glob(pattern)
    return found
