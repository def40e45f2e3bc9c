"""The in-use layout the bucket policy binds at any scale (docs/security.md): this account's clusters write
`in-use/<cluster>.json`, a spoke's clusters `in-use/<account>/<cluster>.json`. A cluster is its account and its name:
the run reads both layouts, a spoke's manifest is the spoke's cluster `<account>/<name>` (never this account's of the
same name), and a manifest of a cluster the rules file lists nowhere is named, since the bucket no longer lists the
clusters."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ecr_retention.domain.config import Safety
from ecr_retention.domain.in_use.index import inventory_blockers
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.manifest import read_inventory, spoke_account_of_source

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
FRESH = "2026-11-30T05:00:00Z"
STALE = "2026-11-28T05:00:00Z"
SPOKE = "210987654321"


def document(source: str, cluster: str, generated_at: str = FRESH, image: str = "app:1.0") -> tuple[str, bytes]:
    entry: dict[str, Any] = {
        "image": f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/{image}",
        "namespace": "default",
        "workload": "Deployment/app",
        "container": "app",
        "source": "pod",
    }
    body = {"schemaVersion": 1, "cluster": cluster, "generatedAt": generated_at, "complete": True, "images": [entry]}
    return source, json.dumps(body).encode()


def safety(clusters: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> Safety:
    return Safety(clusters=clusters, optional_clusters=optional)


def test_a_spoke_clusters_manifest_under_its_account_stands_for_the_spokes_cluster() -> None:
    inventory = read_inventory([document(f"in-use/{SPOKE}/payments.json", "payments")])
    assert list(inventory.standing) == [ClusterId(SPOKE, "payments")]
    assert inventory.manifests == ()
    assert inventory.problems == {}
    assert spoke_account_of_source(f"in-use/{SPOKE}/payments.json") == SPOKE
    assert spoke_account_of_source("in-use/payments.json") is None
    assert spoke_account_of_source("in-use/team/payments.json") is None


def test_this_accounts_cluster_and_a_spokes_of_one_name_are_two_clusters_both_protecting() -> None:
    inventory = read_inventory(
        [
            document("in-use/payments.json", "payments", image="app:old"),
            document(f"in-use/{SPOKE}/payments.json", "payments", image="app:new"),
        ]
    )
    assert inventory.problems == {}
    assert sorted(map(str, inventory.standing)) == ["210987654321/payments", "payments"]
    assert sorted(image.image.rsplit("/", 1)[1] for read in inventory.protecting for image in read.manifest.images) == [
        "app:new",
        "app:old",
    ]
    check = inventory_blockers(safety(optional=("payments",)), inventory, NOW)
    assert check.blocked == ()
    assert check.warnings == (
        "cluster 210987654321/payments: an in-use manifest of a cluster in neither safety.clusters nor "
        "safety.optional_clusters; its images still protect, but nothing expects it (docs/security.md); it is account "
        "210987654321's cluster payments, not this account's payments (in-use/payments.json): each protects its own "
        "images and neither stands for the other; the safety lists name the spoke's as 210987654321/payments "
        "(docs/rules.md)",
    )


def test_a_spoke_cluster_named_like_an_expected_one_cannot_stand_in_for_its_stale_manifest() -> None:
    """A spoke writes in-use/<its account>/prod.json, fresh; this account's prod exporter stopped hours ago."""
    inventory = read_inventory(
        [document("in-use/prod.json", "prod", generated_at=STALE), document(f"in-use/{SPOKE}/prod.json", "prod")]
    )
    check = inventory_blockers(safety(clusters=("prod",)), inventory, NOW)
    assert check.blocked == ("cluster prod: in-use manifest is 2d old, older than inventory_max_age 6h",)


def test_an_expected_spoke_cluster_is_named_with_its_account_and_needs_its_own_manifest() -> None:
    inventory = read_inventory([document("in-use/prod.json", "prod")])
    check = inventory_blockers(safety(clusters=("prod", f"{SPOKE}/prod")), inventory, NOW)
    assert check.blocked == (f"cluster {SPOKE}/prod: no in-use manifest",)


def test_two_spoke_folders_for_one_cluster_name_are_two_clusters_not_a_problem() -> None:
    inventory = read_inventory(
        [
            document(f"in-use/{SPOKE}/payments.json", "payments"),
            document("in-use/345678901234/payments.json", "payments"),
        ]
    )
    assert inventory.problems == {}
    assert sorted(map(str, inventory.standing)) == ["210987654321/payments", "345678901234/payments"]
    listed = safety(optional=(f"{SPOKE}/payments", "345678901234/payments"))
    assert inventory_blockers(listed, inventory, NOW) == inventory_blockers(listed, read_inventory([]), NOW)


def test_a_manifest_of_a_cluster_in_neither_safety_list_is_named_and_still_protects() -> None:
    inventory = read_inventory(
        [
            document("in-use/prod.json", "prod"),
            document("in-use/staging.json", "staging"),
            document(f"in-use/{SPOKE}/rogue.json", "rogue"),
            document("in-use/aws-123456789012-eu-west-1.json", "aws-123456789012-eu-west-1"),
        ]
    )
    check = inventory_blockers(safety(clusters=("prod",), optional=("staging",)), inventory, NOW)
    assert check.blocked == ()
    assert check.warnings == (
        f"cluster {SPOKE}/rogue: an in-use manifest of a cluster in neither safety.clusters nor "
        "safety.optional_clusters; its images still protect, but nothing expects it (docs/security.md)",
    )
    assert ClusterId(SPOKE, "rogue") in {read.cluster for read in inventory.protecting}
