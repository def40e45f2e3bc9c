"""`python app.py` as operators and CI run it: no Docker, no AWS, cdk-nag on, and one clear line for a bad rules
file or context value. Bundling is skipped here (tests/infra/test_lambda_asset.py bundles for real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app.py"


def run_app(rules_file: Path, outdir: Path, **context: object) -> subprocess.CompletedProcess[str]:
    # The CDK CLI passes cdk.json's context and `-c key=value` to the app this way.
    context = {"config": str(rules_file), "aws:cdk:bundling-stacks": [], **context}
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir)}
    return subprocess.run(
        [sys.executable, str(APP)], env=env, cwd=APP.parent, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.slow
def test_app_synthesizes_the_stack_under_cdk_nag(tmp_path: Path, minimal_rules_text: str) -> None:
    rules_file = tmp_path / "retention.yaml"
    rules_file.write_text(minimal_rules_text)

    result = run_app(rules_file, tmp_path / "cdk.out")

    assert result.returncode == 0, result.stderr
    template = json.loads((tmp_path / "cdk.out" / "EcrRetention.template.json").read_text())
    assert set(template["Outputs"]) == {
        "InventoryBucketName",
        "ReportTopicArn",
        "OperationsTopicArn",
        "ExporterRoleArn",
        "StateMachineArn",
        "SentinelFunctionArn",
        "CollectorRoleArn",
        "CollectorFunctionName",
    }
    assert json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())  # cdk-nag ran


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        pytest.param(
            "version: 1\nsafety: {clusters: [prod], max_delete_fraction: 2}\n"
            "policies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n",
            "safety.max_delete_fraction",
            id="invalid-field",
        ),
        pytest.param(
            "version: 1\ndry_run: no\nsafety: {clusters: [prod]}\n"
            "policies: [{repositories: [app], rules: [{delete: {untagged: true}}]}]\n",
            "dry_run: should be a boolean, not a string ('no': write true or false)",
            id="yaml-1.1-boolean",
        ),
        pytest.param(None, "no such file", id="missing-file"),
    ],
)
def test_app_rejects_a_bad_rules_file_with_one_line(tmp_path: Path, rules: str | None, expected: str) -> None:
    rules_file = tmp_path / "retention.yaml"
    if rules is not None:
        rules_file.write_text(rules)

    result = run_app(rules_file, tmp_path / "cdk.out")

    assert result.returncode == 2
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert str(rules_file) in result.stderr
    assert expected in result.stderr
    assert not (tmp_path / "cdk.out" / "EcrRetention.template.json").exists()


@pytest.mark.slow
def test_app_rejects_a_bad_context_value_with_one_line(tmp_path: Path, minimal_rules_text: str) -> None:
    rules_file = tmp_path / "retention.yaml"
    rules_file.write_text(minimal_rules_text)

    result = run_app(rules_file, tmp_path / "cdk.out", mapConcurrency="0")

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: cdk context: mapConcurrency: '0': input should be greater than or equal to 1"
    ], result.stderr
    assert not (tmp_path / "cdk.out" / "EcrRetention.template.json").exists()


@pytest.mark.slow
def test_app_refuses_a_cluster_the_rules_file_neither_expects_nor_lists_as_optional(
    tmp_path: Path, minimal_rules_text: str
) -> None:
    rules_file = tmp_path / "retention.yaml"
    rules_file.write_text(minimal_rules_text)

    result = run_app(
        rules_file, tmp_path / "cdk.out", eksClusters=["arn:aws:eks:eu-west-1:123456789012:cluster/payments"]
    )

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: cdk.json eksClusters: cluster payments is in neither safety.clusters nor safety.optional_clusters of "
        f"{rules_file}; list it in one of them (optional: read and protects, never blocks)"
    ], result.stderr
    assert not (tmp_path / "cdk.out" / "EcrRetention.template.json").exists()
