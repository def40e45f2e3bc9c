"""Reading an in-use image string against a registry: the one classification (domain/registry/coordinates.py) that
the planner's index, the in-use memory, the sentinel and the in-use check, the tagger and the diff all read through;
and a check of the source that no other module parses in-use references or matches them to replicas itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ecr_retention.domain.registry.coordinates import (
    UNKNOWN_REGISTRY,
    InOtherRegistry,
    InReachedReplica,
    InThisRegistry,
    InUnreachedReplica,
    NotAReference,
    NotEcr,
    RegistryCoordinates,
    read_reference,
    reference_into,
)
from ecr_retention.domain.registry.replication import Replica, ReplicationConfiguration
from support.builders import ACCOUNT, HOST, REGION
from support.builders import replication_rule as rule

DIGEST = "sha256:" + "b" * 64
OTHER_ACCOUNT = "210987654321"
US_HOST = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"  # a replica that receives our deletions
AP_HOST = f"{ACCOUNT}.dkr.ecr.ap-south-1.amazonaws.com"  # a replica that does not
OTHER_HOST = f"{OTHER_ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
REPLICATION = ReplicationConfiguration.model_validate(
    {"rules": [rule(("us-east-1", ACCOUNT), delete=True), rule(("ap-south-1", ACCOUNT), delete=False)]}
)
REGISTRY = RegistryCoordinates(ACCOUNT, REGION, REPLICATION)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lambdas" / "ecr_retention"
# The one module that reads an in-use image string (references.py defines the parser).
READER = "domain/registry/coordinates.py"
PARSER = "domain/registry/references.py"


def test_a_string_that_is_no_reference_is_read_with_the_parse_error() -> None:
    reading = read_reference("not a reference", REGISTRY)
    assert isinstance(reading, NotAReference)
    assert reading.image == "not a reference"
    assert str(reading.error) == "'not a reference' is not an image reference"
    assert reference_into("not a reference", REGISTRY) is None


def test_a_reference_of_another_host_is_not_ecr() -> None:
    reading = read_reference(f"ghcr.io/team/app:1.0@{DIGEST}", REGISTRY)
    assert isinstance(reading, NotEcr)
    assert (reading.reference.host, reading.reference.repository, reading.reference.digest) == (
        "ghcr.io",
        "team/app",
        DIGEST,
    )
    assert reference_into("nginx:1.27", REGISTRY) is None


def test_a_reference_of_this_registry_is_here() -> None:
    reading = read_reference(f"{HOST}/team/app:1.0", REGISTRY)
    assert isinstance(reading, InThisRegistry)
    assert reading.ecr_registry == (ACCOUNT, REGION)
    assert (reading.reference.repository, reading.reference.tag) == ("team/app", "1.0")
    assert reference_into(f"{HOST}/team/app:1.0", REGISTRY) == reading


def test_a_replica_that_receives_our_deletions_is_reached_and_named() -> None:
    reading = read_reference(f"{US_HOST}/app:1.0", REGISTRY)
    assert reading == InReachedReplica(reading.reference, (ACCOUNT, "us-east-1"), Replica(ACCOUNT, "us-east-1", True))
    assert reference_into(f"{US_HOST}/app:1.0", REGISTRY) == reading


def test_a_replica_without_delete_replication_is_not_reached() -> None:
    reading = read_reference(f"{AP_HOST}/app:1.0", REGISTRY)
    assert reading == InUnreachedReplica(
        reading.reference, (ACCOUNT, "ap-south-1"), Replica(ACCOUNT, "ap-south-1", False)
    )
    assert reference_into(f"{AP_HOST}/app:1.0", REGISTRY) is None


def test_a_registry_neither_this_one_nor_a_replica_is_another_registry() -> None:
    reading = read_reference(f"{OTHER_HOST}/app@{DIGEST}", REGISTRY)
    assert isinstance(reading, InOtherRegistry)
    assert (reading.ecr_registry, reading.reference.digest) == ((OTHER_ACCOUNT, REGION), DIGEST)
    assert reference_into(f"{OTHER_HOST}/app@{DIGEST}", REGISTRY) is None


def test_a_replica_is_of_the_same_repository_only() -> None:
    only_team = RegistryCoordinates(
        ACCOUNT,
        REGION,
        ReplicationConfiguration.model_validate({"rules": [rule(("us-east-1", ACCOUNT), prefixes=("team-",))]}),
    )
    assert isinstance(read_reference(f"{US_HOST}/team-a/api:1", only_team), InReachedReplica)
    assert isinstance(read_reference(f"{US_HOST}/web:1", only_team), InOtherRegistry)


def test_without_replication_a_destination_is_another_registry() -> None:
    assert isinstance(read_reference(f"{US_HOST}/app:1.0", RegistryCoordinates(ACCOUNT, REGION)), InOtherRegistry)


@pytest.mark.parametrize("host", [HOST, US_HOST, AP_HOST, OTHER_HOST, "123456789012.dkr-ecr.eu-central-1.on.aws"])
def test_an_unknown_registry_matches_every_ecr_reference(host: str) -> None:
    reading = read_reference(f"{host}/app:1.0", UNKNOWN_REGISTRY)
    assert isinstance(reading, InThisRegistry)
    assert reference_into(f"{host}/app:1.0", UNKNOWN_REGISTRY) == reading


def test_an_unknown_registry_still_tells_other_hosts_and_non_references_apart() -> None:
    assert isinstance(read_reference("nginx:1.27", UNKNOWN_REGISTRY), NotEcr)
    assert isinstance(read_reference("", UNKNOWN_REGISTRY), NotAReference)


def test_a_known_account_in_an_unknown_region_matches_that_account_anywhere() -> None:
    account_only = RegistryCoordinates(ACCOUNT, None)
    assert isinstance(read_reference(f"{US_HOST}/app:1", account_only), InThisRegistry)
    assert isinstance(read_reference(f"{OTHER_HOST}/app:1", account_only), InOtherRegistry)


def readers_elsewhere(package: Path) -> list[str]:
    """`path:line: name` wherever a module of the package other than the reader parses an image reference, matches
    one to a replica or to a registry itself: the names `parse_reference`, `replica_of` and `in_registry`."""
    named = {"parse_reference", "replica_of", "in_registry"}
    found: list[tuple[str, int, str]] = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        if where in (READER, PARSER):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                found.extend((where, node.lineno, alias.name) for alias in node.names if alias.name in named)
            elif isinstance(node, ast.Attribute) and node.attr in named:
                found.append((where, node.lineno, node.attr))
            elif isinstance(node, ast.Name) and node.id in named:
                found.append((where, node.lineno, node.id))
    return [f"{where}:{line}: {name}" for where, line, name in sorted(found)]


def test_in_use_references_are_read_in_one_place() -> None:
    """No module reads in-use references by itself: the planner's index, the memory, the sentinel and the tagger all
    read through read_reference. (No module of the package parses an image string for anything else today; one that
    must, a non-in-use string, would be named here with why.)"""
    assert readers_elsewhere(PACKAGE) == []


def test_the_check_finds_a_module_that_parses_by_itself(tmp_path: Path) -> None:
    module = tmp_path / "domain" / "in_use" / "index.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from ecr_retention.domain.registry.references import parse_reference\n"
        "from ecr_retention.domain.registry import coordinates\n"
        "def here(text, registry):\n"
        "    reference = parse_reference(text)\n"
        "    return reference.in_registry(None, None) or coordinates.replica_of(None, '', ('', ''))\n",
        encoding="utf-8",
    )
    assert readers_elsewhere(tmp_path) == [
        "domain/in_use/index.py:1: parse_reference",
        "domain/in_use/index.py:4: parse_reference",
        "domain/in_use/index.py:5: in_registry",
        "domain/in_use/index.py:5: replica_of",
    ]
