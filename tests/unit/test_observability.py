"""The manifest-age metric: one datapoint per expected cluster that has a manifest, with its Cluster dimension."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.handlers.observability import record_manifest_ages
from support.builders import NOW


def manifest(cluster: str, age: timedelta) -> tuple[str, bytes]:
    body = {
        "schemaVersion": 1,
        "cluster": cluster,
        "generatedAt": (NOW - age).isoformat(),
        "complete": True,
        "images": [],
    }
    return f"in-use/{cluster}.json", json.dumps(body).encode()


def test_each_expected_cluster_with_a_manifest_publishes_its_age(capsys: pytest.CaptureFixture[str]) -> None:
    inventory = read_inventory(
        [manifest("prod", timedelta(hours=1)), manifest("staging", timedelta(hours=9))]  # staging: not expected
    )

    record_manifest_ages(
        {m.cluster: m.generated_at for m in inventory.manifests}, ["prod", "dev"], NOW
    )  # dev: no manifest

    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(d["Cluster"], d["InUseManifestAgeSeconds"]) for d in documents] == [("prod", [3600.0])]
    [definition] = documents[0]["_aws"]["CloudWatchMetrics"]
    assert definition == {
        "Namespace": "EcrRetention",
        "Dimensions": [["service", "Cluster"]],
        "Metrics": [{"Name": "InUseManifestAgeSeconds", "Unit": "Seconds"}],
    }


def test_a_manifest_from_the_future_is_age_zero(capsys: pytest.CaptureFixture[str]) -> None:
    inventory = read_inventory([manifest("prod", -timedelta(minutes=5))])

    record_manifest_ages({m.cluster: m.generated_at for m in inventory.manifests}, ["prod"], NOW)

    [document] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert document["InUseManifestAgeSeconds"] == [0.0]
