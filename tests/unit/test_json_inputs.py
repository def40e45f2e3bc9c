"""JSON inputs (snapshots, lifecycle policies, in-use manifests) are read strictly: a key written twice
in one object is an error, never "the last one wins"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecr_retention.domain.errors import InputError, parse_json
from ecr_retention.domain.lifecycle.parsing import parse_policy, parse_policy_document
from ecr_retention.loading import load_manifests, load_snapshots

DIGEST = "sha256:" + "1" * 64


def test_parse_json_rejects_a_key_written_twice_in_one_object() -> None:
    with pytest.raises(InputError) as caught:
        parse_json('{"a": {"images": [1], "images": []}}', "in-use/prod.json")
    assert str(caught.value) == "in-use/prod.json: key 'images' appears twice in one object"


def test_parse_json_allows_the_same_key_in_different_objects() -> None:
    assert parse_json('[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]', "x.json") == [{"a": 1}, {"a": 2}, {"b": {"a": 3}}]


def test_snapshot_with_a_duplicate_key_is_rejected(tmp_path: Path) -> None:
    repository = json.dumps({"repositoryName": "app", "imageDetails": []})
    path = tmp_path / "snapshot.json"
    path.write_text('{"repositories": [' + repository + '], "repositories": []}')
    with pytest.raises(InputError, match=r"snapshot\.json: key 'repositories' appears twice in one object$"):
        load_snapshots(path)[0]


def test_snapshot_image_with_a_duplicate_key_is_rejected(tmp_path: Path) -> None:
    image = f'{{"imageDigest": "{DIGEST}", "imageTags": ["v1"], "imageTags": [], "imagePushedAt": 1767225600}}'
    path = tmp_path / "snapshot.json"
    path.write_text('{"repositories": [{"repositoryName": "app", "imageDetails": [' + image + "]}]}")
    with pytest.raises(InputError, match="key 'imageTags' appears twice"):
        load_snapshots(path)[0]


def test_lifecycle_policy_with_a_duplicate_key_is_rejected() -> None:
    rule = '{"rulePriority": 1, "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", '
    rule += '"countNumber": 5, "countNumber": 500}, "action": {"type": "expire"}}'
    with pytest.raises(InputError, match=r"^policy\.json: key 'countNumber' appears twice in one object$"):
        parse_policy('{"rules": [' + rule + "]}", "policy.json")


def test_get_lifecycle_policy_output_with_a_duplicate_key_is_rejected() -> None:
    text = '{"repositoryName": "app", "lifecyclePolicyText": "{}", "lifecyclePolicyText": "{}"}'
    with pytest.raises(InputError, match="key 'lifecyclePolicyText' appears twice"):
        parse_policy_document(text, "policy.json")


def test_manifest_with_a_duplicate_key_is_rejected(tmp_path: Path) -> None:
    entry = '{"image": "nginx:1", "namespace": "a", "workload": "Deployment/a", "container": "a", "source": "pod"}'
    (tmp_path / "prod.json").write_text(
        '{"schemaVersion": 1, "cluster": "prod", "generatedAt": "2026-11-30T05:00:00Z", "complete": true, '
        f'"images": [{entry}], "images": []}}'
    )
    inventory = load_manifests(tmp_path)  # an unreadable manifest is a problem that blocks the plan
    assert inventory.manifests == ()
    assert inventory.problems == {str(tmp_path / "prod.json"): "key 'images' appears twice in one object"}
