"""`ecr-retention tag` on the realistic registry: the images of this registry that run in prod (pinned by digest
or resolved by the exporter) each get a `deployed-prod-<unix seconds>` tag of their own, once, with the
byte-identical manifest, in a mutable repository and in the IMMUTABLE `release/payments` alike; a dry run tags
nothing; tag-only references and other registries' images are left alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.pipeline_harness import Pipeline, run_cli, write_rules
from support.realistic_registry import BUCKET

PREFIX = "deployed-prod-"
# prod's manifest: app's rollout from v1.0.5 to v1.0.11 and payments v3.2.0 resolved by the exporter, the canary on
# payments v3.1.0 pinned by digest. Two images in each repository: each needs a tag of its own.
DEPLOYED = ("app v1.0.5", "app v1.0.11", "payments v3.1.0", "payments v3.2.0")


def marks(pipeline: Pipeline) -> dict[str, list[str]]:
    state = pipeline.state()
    return {
        label: [
            tag
            for tag in state[pipeline.seeded.repository_of(label)][pipeline.seeded.digest(label)].get("imageTags", [])
            if tag.startswith(PREFIX)
        ]
        for label in DEPLOYED
    }


def test_tag_gives_each_deployed_image_a_mark_of_its_own_once(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = str(write_rules(tmp_path, dry_run=False))
    before = pipeline.state()

    dry = run_cli(
        pipeline.recorder, capsys, "tag", "--config", rules, "--bucket", BUCKET, "--dry-run", "--format", "json"
    )
    assert dry.code == 0
    assert [e["status"] for e in json.loads(dry.stdout)["entries"]] == ["would-tag"] * len(DEPLOYED)
    assert pipeline.recorder.mutating() == []
    assert pipeline.state() == before

    tagged = run_cli(pipeline.recorder, capsys, "tag", "--config", rules, "--bucket", BUCKET, "--format", "json")

    report = json.loads(tagged.stdout)
    assert {(pipeline.seeded.label_of(e["imageDigest"]), e["status"]) for e in report["entries"]} == {
        (label, "tagged") for label in DEPLOYED
    }
    assert tagged.code == 0
    placed = marks(pipeline)
    assert all(len(tags) == 1 for tags in placed.values()), placed
    for repository in ("app", "release/payments"):  # no two images of a repository share a mark
        shared = [tags[0] for label, tags in placed.items() if pipeline.seeded.repository_of(label) == repository]
        assert len(set(shared)) == 2, placed
    assert {e["tag"] for e in report["entries"]} == {tags[0] for tags in placed.values()}
    after = pipeline.state()
    for repository, details in before.items():
        assert sorted(after[repository]) == sorted(details), repository  # same digests: manifests byte for byte
        for digest, detail in details.items():
            if pipeline.seeded.label_of(digest) not in DEPLOYED:
                assert after[repository][digest] == detail
    assert any("platform/runtime:3.0.0 has no resolved digest" in note for note in report["notes"])
    assert not any("redis" in entry["imageDigest"] for entry in report["entries"])

    pipeline.recorder.clear()
    again = run_cli(pipeline.recorder, capsys, "tag", "--config", rules, "--bucket", BUCKET, "--format", "json")

    assert again.code == 0
    assert [e["status"] for e in json.loads(again.stdout)["entries"]] == ["already-tagged"] * len(DEPLOYED)
    assert pipeline.recorder.of("PutImage") == []
    assert marks(pipeline) == placed
