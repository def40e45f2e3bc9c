"""Hostile input, generated: whatever a rules file, a manifest or a snapshot holds, the answer is a valid
object or one clear line (InputError, exit 2) — never a traceback, and never a manifest that protects less
than it says without being reported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecr_retention.cli import main
from ecr_retention.domain.config import parse_config
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import read_inventory

FUZZ = settings(
    max_examples=300,
    derandomize=True,  # the same examples on every machine and in CI
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

KEYS = [
    "version", "dry_run", "safety", "min_age", "max_delete_fraction", "inventory_max_age", "clusters",
    "tagging", "namespaces", "tag_prefix", "policies", "repositories", "rules", "keep", "delete", "tags",
    "untagged", "tag_in_repositories", "newest", "pulled_within", "older_than", "not_pulled_within",
    "keep_newest", "archive", "description",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1d", "30d", "999999999w", "-1d", "0s", "6h", "*", "v*", "", "app", "prod", "1e309"]),
    st.text(max_size=20),
)
VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), children, max_size=5),
    ),
    max_leaves=30,
)
VALID = {
    "version": 1,
    "safety": {"clusters": ["prod"]},
    "policies": [{"repositories": ["app"], "rules": [{"delete": {"untagged": True, "older_than": "1d"}}]}],
}


def refusal(action: Callable[[], object]) -> str | None:
    """The InputError's message when the action refuses its input, else None."""
    try:
        action()
    except InputError as error:
        return str(error)
    return None


def mutated(base: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    """The valid rules file with one value replaced deep inside it."""
    document = json.loads(json.dumps(base))
    node: Any = document
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node
    if isinstance(node, dict):
        node[path[-1]] = value
    return document


@FUZZ
@given(document=VALUES)
def test_any_yaml_document_is_a_rules_file_or_one_line(document: Any) -> None:
    text = yaml.safe_dump(document, allow_unicode=True)
    message = refusal(lambda: parse_config(text, "fuzz.yaml"))
    assert message is None or ("\n" not in message and message.startswith("fuzz.yaml"))


@FUZZ
@given(
    path=st.lists(st.sampled_from(["safety", "policies", "tagging", *KEYS]), min_size=1, max_size=3),
    value=VALUES,
)
def test_a_valid_rules_file_with_one_hostile_value_is_valid_or_one_line(path: list[str], value: Any) -> None:
    message = refusal(lambda: parse_config(yaml.safe_dump(mutated(VALID, path, value)), "fuzz.yaml"))
    assert message is None or "\n" not in message


@FUZZ
@given(text=st.text(max_size=400))
def test_any_text_is_a_rules_file_or_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    rules = tmp_path / "retention.yaml"
    rules.write_text(text, encoding="utf-8", errors="surrogatepass")
    code = main(["validate", str(rules)])
    err = capsys.readouterr().err
    assert code in (0, 2)
    if code == 2:
        assert err.count("\n") == 1, err
        assert "Traceback" not in err


MANIFEST_KEYS = ["schemaVersion", "cluster", "generatedAt", "complete", "images", "image", "digest", "namespace",
                 "workload", "container", "source"]  # fmt: skip


@FUZZ
@given(
    document=st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=3), st.dictionaries(st.sampled_from(MANIFEST_KEYS), children, max_size=7)
        ),
        max_leaves=25,
    )
)
def test_a_manifest_is_read_whole_or_reported_never_half(document: Any) -> None:
    body = json.dumps(document, allow_nan=True).encode()
    inventory = read_inventory([("in-use/prod.json", body)])
    assert len(inventory.protecting) + len(inventory.problems) == 1
    if inventory.problems:
        assert all("\n" not in problem for problem in inventory.problems.values())
    else:
        [read] = inventory.protecting
        assert len(read.manifest.images) == len(document["images"])


VALID_MANIFEST = {
    "schemaVersion": 1,
    "cluster": "prod",
    "generatedAt": "2026-11-30T05:00:00Z",
    "complete": True,
    "images": [
        {"image": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:v1", "namespace": "prod",
         "workload": "Deployment/app", "container": "app", "source": "pod"}
    ],
}  # fmt: skip


@FUZZ
@given(
    key=st.sampled_from(MANIFEST_KEYS),
    in_image=st.booleans(),
    value=st.one_of(SCALARS, st.just("__drop__")),
)
def test_a_valid_manifest_with_one_hostile_field_is_read_exactly_or_reported(
    key: str, in_image: bool, value: Any
) -> None:
    document = json.loads(json.dumps(VALID_MANIFEST))
    target = document["images"][0] if in_image else document
    if value == "__drop__":
        target.pop(key, None)
    else:
        target[key] = value
    inventory = read_inventory([("in-use/prod.json", json.dumps(document, allow_nan=True).encode())])
    assert len(inventory.protecting) + len(inventory.problems) == 1
    for manifest in (read.manifest for read in inventory.protecting):  # read: every entry is there, as written
        assert len(manifest.images) == len(document["images"])
        assert manifest.complete is document["complete"]


@FUZZ
@given(
    document=st.dictionaries(
        st.sampled_from(["registryId", "region", "repositories"]),
        st.recursive(
            SCALARS,
            lambda children: st.one_of(
                st.lists(children, max_size=3),
                st.dictionaries(
                    st.sampled_from(
                        ["repositoryName", "imageDetails", "imageDigest", "imageTags", "imagePushedAt", "manifests"]
                    ),
                    children,
                    max_size=5,
                ),
            ),
            max_leaves=25,
        ),
        max_size=3,
    )
)
def test_any_snapshot_document_validates_or_fails_with_one_line(tmp_path: Path, document: Any) -> None:
    from ecr_retention.loading import load_snapshots

    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document, allow_nan=True))
    message = refusal(lambda: load_snapshots(path)[0])
    assert message is None or "\n" not in message
