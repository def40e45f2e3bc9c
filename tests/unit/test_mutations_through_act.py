"""Every change to a registry goes through services/act.py, into the ledger (docs/safety.md, "One path for every
mutation"): no module of lambdas/ outside the adapters (ecr_retention/aws/), act itself and the emulator (which *is* a
registry) touches a mutating method of the Registry port. The check reads the source: a method named as an attribute
counts whether it is called, aliased (`remove = registry.delete_images`) or handed on (`partial(registry.put_tag,
...)`), and so does its name as a string (`getattr(registry, "archive_images")`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.fakes import MUTATING

ROOT = Path(__file__).resolve().parents[2]
LAMBDAS = ROOT / "lambdas"
# Where a registry mutation may be named, relative to lambdas/: the adapters implement them, act calls them, and the
# emulator's native lifecycle policies are the registry acting on itself.
ALLOWED = ("ecr_retention/aws/", "ecr_retention/services/act.py", "ecr_retention_dev/emulator/")
# The Registry port's methods that only read. With MUTATING (tests/support/fakes.py, which the dry-run tests count),
# every method of the port is one or the other: a method added to the port must be put in one of them.
READS = frozenset(
    {
        "registry_id",
        "region",
        "repository_names",
        "describe_images",
        "describe_image_ids",
        "describe_images_by_id",
        "get_manifests",
        "lifecycle_policy",
        "replication_configuration",
        "creation_templates",
    }
)


def mutations_outside_act(lambdas: Path) -> list[str]:
    """`path:line: name` for every place under `lambdas` (a checkout's lambdas/ folder) outside ALLOWED that names a
    mutating method of the Registry port: as an attribute, an imported name or a string."""
    found = []
    for path in sorted(lambdas.rglob("*.py")):
        where = path.relative_to(lambdas).as_posix()
        if where.startswith(ALLOWED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.extend(f"{where}:{line}: {name}" for line, name in _mutations_named(tree))
    return found


def _mutations_named(tree: ast.AST) -> list[tuple[int, str]]:
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in MUTATING:
            named.append((node.lineno, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MUTATING:
            named.append((node.lineno, node.value))
        elif isinstance(node, ast.ImportFrom):
            named.extend((node.lineno, alias.name) for alias in node.names if alias.name in MUTATING)
    return sorted(named)


def registry_port_methods() -> set[str]:
    tree = ast.parse((LAMBDAS / "ecr_retention" / "ports.py").read_text(encoding="utf-8"))
    [port] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Registry"]
    return {node.name for node in port.body if isinstance(node, ast.FunctionDef)}


def test_no_module_outside_the_adapters_and_act_calls_a_registry_mutation() -> None:
    assert mutations_outside_act(LAMBDAS) == []


def test_every_method_of_the_registry_port_is_a_read_or_a_mutation() -> None:
    methods = registry_port_methods()

    assert methods - READS - MUTATING == set(), "a new Registry method: add it to READS, or to MUTATING if it changes"
    assert methods >= READS | MUTATING
    assert {"delete_images", "archive_images", "restore_images", "put_tag"} <= MUTATING


SNEAKY = """
from functools import partial
from operator import methodcaller

def heal(registry, repository, digest):
    registry.restore_images(repository, [digest])

def prune(ports, repository, digests):
    remove = ports.registry.delete_images
    remove(repository, digests)

def freeze(registry, repository, digests):
    return partial(registry.archive_images, repository, digests)

def mark(registry, repository, manifest):
    return getattr(registry, "put_tag")(repository, manifest, "keep")

def later(registry):
    return methodcaller("delete_images", "app", [])(registry)
"""
ALLOWED_USE = "def act(registry, repository, digests):\n    return registry.delete_images(repository, digests)\n"


@pytest.mark.parametrize("folder", ["ecr_retention/services", "ecr_retention/handlers", "ecr_retention_dev/demo"])
def test_the_check_finds_a_mutation_called_aliased_handed_on_or_named_by_string(tmp_path: Path, folder: str) -> None:
    for allowed in (
        "ecr_retention/aws/ecr_registry.py",
        "ecr_retention/services/act.py",
        "ecr_retention_dev/emulator/lifecycle.py",
    ):
        (tmp_path / allowed).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / allowed).write_text(ALLOWED_USE)
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / folder / "sneaky.py").write_text(SNEAKY)

    assert mutations_outside_act(tmp_path) == [
        f"{folder}/sneaky.py:{line}: {name}"
        for line, name in [
            (6, "restore_images"),
            (9, "delete_images"),
            (13, "archive_images"),
            (16, "put_tag"),
            (19, "delete_images"),
        ]
    ]


def test_the_check_finds_the_mutations_of_a_module_that_imports_one_by_name(tmp_path: Path) -> None:
    (tmp_path / "ecr_retention" / "commands").mkdir(parents=True)
    (tmp_path / "ecr_retention" / "commands" / "sneaky.py").write_text(
        "from ecr_retention.aws.ecr_registry import put_tag\n"
    )

    assert mutations_outside_act(tmp_path) == ["ecr_retention/commands/sneaky.py:1: put_tag"]
