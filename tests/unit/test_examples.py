"""The committed example registry is what examples/generate.py produces, and it plans as documented."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.timestamps import parse_timestamp
from ecr_retention.loading import load_config, load_manifests, load_snapshots

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def test_committed_examples_match_the_generator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("generate_examples", EXAMPLES / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    for name in ("snapshot.json", "in-use/prod.json", "in-use/dev.json"):
        assert (tmp_path / name).read_text() == (EXAMPLES / name).read_text(), (
            f"run python examples/generate.py ({name})"
        )


def test_example_plan_keeps_what_the_seeds_lost() -> None:
    plan = plan_registry(
        load_config(ROOT / "retention.yaml"),
        load_snapshots(EXAMPLES / "snapshot.json")[0],
        load_manifests(EXAMPLES / "in-use"),
        parse_timestamp("2026-11-30T06:00:00Z"),
    )
    by_tag = {
        (repo.repository_name, tag): decision
        for repo in plan.repositories
        for decision in repo.images
        for tag in decision.image_tags
    }
    assert by_tag[("app", "dev")].action == "keep"  # seed 002
    assert by_tag[("docker.io/library/nginx", "1.14.2")].action == "keep"  # seed 000
    assert by_tag[("docker.io/library/nginx", "1.14.2")].main_reason.kind == "in-use"
    assert by_tag[("sandbox/experiments", "try-0")].main_reason.kind == "no-policy"
    assert not plan.blocked
    assert sum(1 for repo in plan.repositories for d in repo.images if d.action == "delete") > 100
