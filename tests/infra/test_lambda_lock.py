"""The Lambda asset is installed from a full lock (requirements-lambda.txt, `make lock`): every distribution pinned
with the sha256 of its wheel for the functions' platform, installed with --require-hashes --no-deps, and the asset hash
covers the lock (issue 43, security review L2: 24 of 36 distributions were resolved at synthesis, unpinned and unhashed,
under a hash of requirements.txt's text). Offline: the bundling itself is tests/infra/test_lambda_asset.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecr_retention.cdk import constants, lambda_asset
from ecr_retention.domain.errors import InputError

# What the lock is made from (tools/lock_lambda.py): the repository's, not the package's.
REQUIREMENTS_FILE = Path(__file__).resolve().parents[2] / "requirements.txt"

PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)")
LOCKED = re.compile(r"^([a-z0-9-]+)==(\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.MULTILINE)


def pins(text: str) -> dict[str, str]:
    found = (PIN.match(line.strip()) for line in text.splitlines() if not line.lstrip().startswith("#"))
    return {lambda_asset.normalized(match[1]): match[2] for match in found if match}


def locked(text: str) -> dict[str, str]:
    return {name: version for name, version, _ in LOCKED.findall(text)}


def test_the_lock_pins_every_requirement_at_its_version_with_a_hash() -> None:
    requirements = pins(REQUIREMENTS_FILE.read_text())
    lock_text = lambda_asset.LOCK_FILE.read_text()
    lock = locked(lock_text)
    assert len(requirements) == 12
    assert {name: lock.get(name) for name in requirements} == requirements
    # Every distribution of the lock has its hash (a line without one would make pip refuse the whole lock).
    entries = [line for line in lock_text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(entries) == len(lock) >= 30, entries


def test_the_lock_is_for_the_functions_runtime_and_architecture() -> None:
    lambda_asset.check_lock(constants.LAMBDA_ARCHITECTURE, constants.LAMBDA_PYTHON_VERSION)
    other = "arm64" if constants.LAMBDA_ARCHITECTURE == "x86_64" else "x86_64"
    with pytest.raises(InputError) as raised:
        lambda_asset.check_lock(other, constants.LAMBDA_PYTHON_VERSION)
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith("requirements-lambda.txt: locked for manylinux2014_"), str(raised.value)
    assert str(raised.value).endswith("; run `make lock`")


def test_a_missing_lock_stops_synthesis_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^missing.txt: missing; run `make lock` \(docs/deploy.md\)$"):
        lambda_asset.check_lock("x86_64", "3.13", tmp_path / "missing.txt")


def test_bundling_installs_exactly_the_lock_with_hashes_and_resolves_nothing() -> None:
    command = lambda_asset.pip_command("/tmp/out", "x86_64", "3.13")
    assert {"--require-hashes", "--no-deps"} <= set(command)
    assert command[command.index("--requirement") + 1] == str(lambda_asset.LOCK_FILE)
    assert str(REQUIREMENTS_FILE) not in command


def test_the_asset_hash_changes_when_the_lock_changes(tmp_path: Path) -> None:
    rules = Path(constants.DEFAULT_RULES_FILE).read_bytes()
    lock = lambda_asset.LOCK_FILE.read_text()
    [first_hash] = re.findall(r"sha256:([0-9a-f]{64})", lock)[:1]
    changed = tmp_path / "requirements-lambda.txt"
    changed.write_text(lock.replace(first_hash, "0" * 64, 1))
    same = tmp_path / "same.txt"
    same.write_text(lock)

    def hashed(lock_file: Path | None) -> str:
        return lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=True, lock_file=lock_file)

    assert hashed(same) == hashed(None)
    assert hashed(changed) != hashed(None)


def test_the_asset_hash_changes_with_the_eks_clusters_the_asset_ships() -> None:
    rules = Path(constants.DEFAULT_RULES_FILE).read_bytes()
    arns = [(), ("arn:aws:eks:eu-west-1:123456789012:cluster/a",), ("arn:aws:eks:eu-west-1:123456789012:cluster/b",)]
    hashes = {lambda_asset.asset_hash(rules, "x86_64", "3.13", bytecode=True, eks_cluster_arns=each) for each in arns}
    assert len(hashes) == 3
