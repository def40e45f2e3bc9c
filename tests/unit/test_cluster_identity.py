"""A cluster is its account and its name (SPEC "Who is a cluster", docs/safety.md §29): a spoke account's manifest,
`in-use/<account>/<name>.json`, never satisfies, replaces or un-suspects a cluster of this account of the same name; it
only adds protection. Each test is a probe of the security review of 2026-12-04 (H1 a-e, L1) that failed before.

Given the bucket's keys as the pipeline lists them (read through read_inventory_from_bucket, as every run, the
tagger and the sentinel read them), when the run, the tagger or the sentinel reads them, then this account's `prod`
is judged by its own manifest only."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ecr_retention.domain.config import Safety, parse_config
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.in_use.index import inventory_blockers
from ecr_retention.domain.in_use.memory import reading_warnings, remember
from ecr_retention.domain.in_use.references import pulled_references
from ecr_retention.domain.inventory.manifest import Inventory
from ecr_retention.domain.limits import SizeLimit
from ecr_retention.domain.planning.run import plan_registry
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.loading import load_config, load_manifests, load_snapshots
from ecr_retention.services import inventory as bucket_inventory
from ecr_retention.services.inventory import inventory_objects, read_inventory_from_bucket
from ecr_retention.services.tagger import tag_deployed
from support.fakes import FakeRegistry, MemoryBucket

ROOT = Path(__file__).resolve().parents[2]
SPOKE = "210987654321"
OTHER_SPOKE = "345678901234"
ACCOUNT = "123456789012"
REGION = "eu-west-1"
HOST = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com"
NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
FRESH = "2026-11-30T05:52:00Z"
GRACE = timedelta(days=7)


def manifest(cluster: str, *images: str, generated_at: str = FRESH, digests: bool = True) -> bytes:
    """A manifest naming `images` (repository:tag of this registry), each resolved to a digest named after it."""
    entries: list[dict[str, Any]] = [
        {
            "image": f"{HOST}/{image}",
            **({"digest": digest_of(image)} if digests else {}),
            "namespace": "shop",
            "workload": f"Deployment/{image.split(':')[0]}",
            "container": "main",
            "source": "pod",
        }
        for image in images
    ]
    body = {"schemaVersion": 1, "cluster": cluster, "generatedAt": generated_at, "complete": True, "images": entries}
    return json.dumps(body).encode()


def digest_of(image: str) -> str:
    return "sha256:" + image.encode().hex().ljust(64, "0")[:64]


def from_bucket(objects: dict[str, bytes]) -> Inventory:
    return read_inventory_from_bucket(MemoryBucket(objects=dict(objects)))


def safety(clusters: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> Safety:
    return Safety(clusters=clusters, optional_clusters=optional)


# (a) A spoke's prod never satisfies this account's missing expected prod.


def test_a_spokes_prod_does_not_satisfy_this_accounts_missing_expected_prod() -> None:
    inventory = from_bucket({f"in-use/{SPOKE}/prod.json": manifest("prod", "app:spoke")})
    check = inventory_blockers(safety(clusters=("prod",)), inventory, NOW)
    assert check.blocked == ("cluster prod: no in-use manifest",)
    (warning,) = check.warnings  # the spoke's is named as the other cluster it is, and how to list it
    assert f"it is account {SPOKE}'s cluster prod, not this account's prod" in warning
    assert f"the safety lists name the spoke's as {SPOKE}/prod" in warning


def test_plan_on_the_examples_keeps_prods_six_images_when_only_a_spokes_prod_is_there() -> None:
    """The review's end-to-end probe: examples/in-use/prod.json gone, a spoke's in-use/<spoke>/prod.json present
    (fresh, complete, naming one unrelated image). Before, the run was not blocked and the 6 images this account's
    prod runs went from keep to delete."""
    config = load_config(ROOT / "retention.yaml")
    snapshot = load_snapshots(ROOT / "examples" / "snapshot.json")[0]
    examples = ROOT / "examples" / "in-use"
    spoke_prod = manifest("prod", "unrelated:1.0")
    dev_only = from_bucket({"in-use/dev.json": (examples / "dev.json").read_bytes()})
    unexpected = config.model_copy(update={"safety": config.safety.model_copy(update={"clusters": ()})})
    kept_for_prod = {  # what prod's manifest alone keeps: removed when nothing protects it and nothing blocks
        decision.image_digest
        for repository in plan_registry(unexpected, snapshot, dev_only, NOW).repositories
        for decision in repository.images
        if decision.action != "keep"
    } - {
        decision.image_digest
        for repository in plan_registry(config, snapshot, load_manifests(examples), NOW).repositories
        for decision in repository.images
        if decision.action != "keep"
    }
    assert len(kept_for_prod) == 6

    inventory = from_bucket(
        {"in-use/dev.json": (examples / "dev.json").read_bytes(), f"in-use/{SPOKE}/prod.json": spoke_prod}
    )
    plan = plan_registry(config, snapshot, inventory, NOW)

    assert "cluster prod: no in-use manifest" in plan.blocked
    actions = {
        decision.image_digest: decision.action for repository in plan.repositories for decision in repository.images
    }
    assert {actions[digest] for digest in kept_for_prod} == {"keep"}


def test_an_offline_directory_reads_a_spokes_subfolder_as_the_spokes_cluster(tmp_path: Path) -> None:
    (tmp_path / SPOKE).mkdir()
    (tmp_path / SPOKE / "prod.json").write_bytes(manifest("prod", "app:spoke"))
    inventory = load_manifests(tmp_path)
    assert [str(read.cluster) for read in inventory.protecting] == [f"{SPOKE}/prod"]
    assert inventory_blockers(safety(clusters=("prod",)), inventory, NOW).blocked == (
        "cluster prod: no in-use manifest",
    )


# (b) The tagger tags this account's prod images, not a spoke's.


TAGGING = """
version: 1
safety: {clusters: [prod]}
tagging:
  - clusters: [prod]
    tag_prefix: deployed-prod-
policies:
  - repositories: ["*"]
    rules: [{delete: {untagged: true}}]
"""


def test_the_tagger_tags_this_accounts_prod_images_not_a_spokes() -> None:
    registry = FakeRegistry(registry_id=ACCOUNT, region=REGION)
    old = NOW - timedelta(days=3)
    ours = registry.add_image("app", tags=["1.0"], pushed_at=old, seed="ours")
    theirs = registry.add_image("app", tags=["0.9"], pushed_at=old, seed="theirs")

    def naming(digest: str) -> bytes:
        body = json.loads(manifest("prod", "app:x"))
        body["images"][0]["image"] = f"{HOST}/app@{digest}"
        body["images"][0].pop("digest")
        return json.dumps(body).encode()

    inventory = from_bucket({"in-use/prod.json": naming(ours), f"in-use/{SPOKE}/prod.json": naming(theirs)})

    report = tag_deployed(parse_config(TAGGING), inventory, registry=registry, run_id="t", now=NOW, dry_run=True)

    assert [entry.image_digest for entry in report.entries] == [ours]


def test_a_tagging_rule_names_a_spokes_cluster_with_its_account() -> None:
    rules = parse_config(TAGGING.replace("clusters: [prod]\n    tag", f"clusters: ['{SPOKE}/prod']\n    tag"))
    assert [str(cluster) for cluster in rules.tagging[0].clusters] == [f"{SPOKE}/prod"]


# (c) A suspect reading of this account's prod is not hidden by a healthy spoke prod, nor by a misfiled manifest.


def remembered(objects: dict[str, bytes], at: datetime = NOW) -> Inventory:
    """The inventory of `objects` with the memory a run at `at` would leave after reading them."""
    before = from_bucket(objects)
    return Inventory(memory=remember(None, before, at, GRACE, resolved={}, registries=[]))


def running_for(inventory: Inventory, cluster: str) -> set[str]:
    """The workloads of `cluster` that the sentinel counts as running, with why (a remembered one says so)."""
    pulled = pulled_references(
        inventory,
        now=NOW,
        safety=Safety(clusters=(), in_use_grace=GRACE),
        registry=RegistryCoordinates(ACCOUNT, REGION),
    )
    return {
        f"{reference.image} {workload.remembered or 'current'}"
        for reference in pulled
        for workload in reference.workloads
        if workload.cluster == cluster
    }


def with_objects(inventory: Inventory, objects: dict[str, bytes]) -> Inventory:
    """The inventory of `objects` now, with the memory of `inventory`."""
    return replace(from_bucket(objects), memory=inventory.memory)


def test_this_accounts_emptied_prod_is_suspect_even_with_a_healthy_spoke_prod() -> None:
    ten = [f"app:1.{n}" for n in range(10)]
    earlier = remembered({"in-use/prod.json": manifest("prod", *ten, generated_at="2026-11-30T04:00:00Z")})
    now = with_objects(
        earlier,
        {
            "in-use/prod.json": manifest("prod"),
            f"in-use/{SPOKE}/prod.json": manifest("prod", "spoke:1.0"),
        },
    )
    running = running_for(now, "prod")
    assert len(running) == 10
    assert all("prod's manifest now reports 0 images; by the in-use memory prod ran it" in each for each in running)
    assert running_for(now, f"{SPOKE}/prod") == {"spoke:1.0 current"}


def test_a_misfiled_manifest_declaring_prod_does_not_stand_in_for_prods_missing_one() -> None:
    earlier = remembered({"in-use/prod.json": manifest("prod", "app:1.0", generated_at="2026-11-30T04:00:00Z")})
    now = with_objects(earlier, {f"in-use/{SPOKE}/payments.json": manifest("prod", "other:1.0")})
    running = running_for(now, "prod")
    assert len(running) == 1
    assert "prod's manifest is missing; by the in-use memory prod ran it 2h ago" in next(iter(running))


def test_the_memory_records_a_spokes_reading_as_the_spokes_cluster() -> None:
    memory = remembered(
        {"in-use/prod.json": manifest("prod", "app:1.0"), f"in-use/{SPOKE}/prod.json": manifest("prod", "a:1", "b:1")}
    ).memory
    assert memory is not None
    assert {cluster: readings.last.references for cluster, readings in memory.clusters.items()} == {
        "prod": 1,
        f"{SPOKE}/prod": 2,
    }
    assert sorted({image.cluster for image in memory.images}) == ["210987654321/prod", "prod"]


# (d) The warning about a spoke's cluster named like ours never advises deleting our manifest.


def test_a_spokes_cluster_named_like_ours_is_named_as_another_cluster_never_as_ours_to_delete() -> None:
    inventory = from_bucket(
        {"in-use/prod.json": manifest("prod", "app:1.0"), f"in-use/{SPOKE}/prod.json": manifest("prod", "app:2.0")}
    )
    check = inventory_blockers(safety(clusters=("prod",)), inventory, NOW)
    assert check.blocked == ()
    (warning,) = check.warnings
    assert warning.startswith(f"cluster {SPOKE}/prod: an in-use manifest of a cluster in neither safety.clusters")
    assert "not this account's prod (in-use/prod.json)" in warning
    assert "delete" not in warning


def test_a_spokes_cluster_listed_with_its_account_and_ours_are_both_expected_without_a_warning() -> None:
    inventory = from_bucket(
        {"in-use/prod.json": manifest("prod", "app:1.0"), f"in-use/{SPOKE}/prod.json": manifest("prod", "app:2.0")}
    )
    assert inventory_blockers(safety(clusters=("prod", f"{SPOKE}/prod")), inventory, NOW).warnings == ()


# (e) L1: two spokes sharing a name do not block; an unlisted spoke's broken file warns; each spoke folder is capped.


def test_two_spokes_sharing_a_cluster_name_do_not_block() -> None:
    inventory = from_bucket(
        {
            f"in-use/{SPOKE}/payments.json": manifest("payments", "a:1"),
            f"in-use/{OTHER_SPOKE}/payments.json": manifest("payments", "b:1"),
        }
    )
    assert inventory.problems == {}  # before: "cluster payments already has a manifest in ...", blocking every run
    listed = safety(clusters=("prod",), optional=(f"{SPOKE}/payments", f"{OTHER_SPOKE}/payments"))
    assert inventory_blockers(listed, inventory, NOW).blocked == ("cluster prod: no in-use manifest",)


def test_a_broken_file_of_an_unlisted_spoke_cluster_warns_instead_of_blocking() -> None:
    inventory = from_bucket({"in-use/prod.json": manifest("prod", "app:1.0"), f"in-use/{SPOKE}/x.json": b"{"})
    check = inventory_blockers(safety(clusters=("prod",)), inventory, NOW)
    assert check.blocked == ()
    (warning,) = check.warnings
    assert warning.startswith(f"in-use/{SPOKE}/x.json: unreadable in-use manifest of cluster {SPOKE}/x, a spoke")
    assert "\n" not in warning


@pytest.mark.parametrize(
    ("key", "listed"),
    [
        (f"in-use/{SPOKE}/x.json", (f"{SPOKE}/x",)),  # a listed spoke cluster: fail closed
        ("in-use/x.json", ()),  # this account's layout: fail closed, listed or not
    ],
)
def test_a_broken_file_of_a_listed_spoke_cluster_or_of_this_account_still_blocks(
    key: str, listed: tuple[str, ...]
) -> None:
    inventory = from_bucket({key: b"{"})
    check = inventory_blockers(safety(optional=listed), inventory, NOW)
    assert len(check.blocked) == 1
    assert check.blocked[0].startswith(f"{key}: unreadable in-use manifest: ")


def test_a_spoke_folder_is_read_up_to_its_cap_and_the_rest_warns_or_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bucket_inventory, "SPOKE_FOLDER_FILES", 2)
    objects = {f"in-use/{SPOKE}/c{n}.json": manifest(f"c{n}", f"app:{n}") for n in range(4)}
    objects["in-use/prod.json"] = manifest("prod", "app:1.0")
    objects[f"in-use/{OTHER_SPOKE}/c9.json"] = manifest("c9", "app:9")  # another folder: its own count
    inventory = from_bucket(objects)

    assert sorted(map(str, inventory.standing)) == [f"{SPOKE}/c0", f"{SPOKE}/c1", f"{OTHER_SPOKE}/c9", "prod"]
    assert sorted(inventory.problems) == [f"in-use/{SPOKE}/c2.json", f"in-use/{SPOKE}/c3.json"]
    unlisted = inventory_blockers(safety(clusters=("prod",)), inventory, NOW)
    assert unlisted.blocked == ()
    assert any(f"in-use/{SPOKE}/c3.json: unreadable in-use manifest of cluster" in each for each in unlisted.warnings)
    assert (
        "is over the cap of a spoke account's folder (2 manifests, 256 MiB)"
        in inventory.problems[f"in-use/{SPOKE}/c3.json"]
    )
    listed = inventory_blockers(safety(clusters=("prod", f"{SPOKE}/c3")), inventory, NOW)
    assert [line.split(":")[0] for line in listed.blocked] == [f"in-use/{SPOKE}/c3.json"]


def test_a_spoke_folder_is_capped_by_size_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bucket_inventory, "SPOKE_FOLDER", SizeLimit("spoke folder", 100))
    inventory = from_bucket({f"in-use/{SPOKE}/c{n}.json": manifest(f"c{n}", f"app:{n}") for n in range(3)})
    assert [str(cluster) for cluster in inventory.standing] == [f"{SPOKE}/c0"]
    assert sorted(inventory.problems) == [f"in-use/{SPOKE}/c1.json", f"in-use/{SPOKE}/c2.json"]


# Deliver 6: a reading whose content changed under the same generatedAt is a new reading.


def test_a_manifest_emptied_under_the_same_generated_at_is_a_drop() -> None:
    ten = [f"app:1.{n}" for n in range(10)]
    earlier = remembered({"in-use/prod.json": manifest("prod", *ten)})
    emptied = with_objects(earlier, {"in-use/prod.json": manifest("prod")})
    assert emptied.memory is not None

    (warning,) = reading_warnings(emptied.memory, emptied, NOW, GRACE)
    assert warning.startswith("cluster prod: now reports 0 images, it reported 10 images at 2026-11-30T05:52:00Z")

    after = remember(emptied.memory, emptied, NOW, GRACE, resolved={}, registries=[])
    readings = after.clusters["prod"]
    assert (readings.last.references, readings.previous and readings.previous.references) == (0, 10)
    again = with_objects(Inventory(memory=after), {"in-use/prod.json": manifest("prod")})
    assert reading_warnings(after, again, NOW, GRACE) == (warning,)  # read again unchanged: the same reading


def test_a_manifest_that_lost_most_references_under_the_same_generated_at_lets_the_memory_speak() -> None:
    ten = [f"app:1.{n}" for n in range(10)]
    earlier = remembered({"in-use/prod.json": manifest("prod", *ten)})
    cut = with_objects(earlier, {"in-use/prod.json": manifest("prod", *ten[:4])})
    running = running_for(cut, "prod")
    remembered_only = {each for each in running if "by the in-use memory" in each}
    assert len(remembered_only) == 6  # the six it dropped (the four it still names run, as read now)
    assert all("prod's manifest now names 4 of its last 10 references" in each for each in remembered_only)


def test_an_offline_copy_of_the_bucket_keeps_a_spokes_manifest_under_its_account(tmp_path: Path) -> None:
    """`snapshot --bucket --manifests DIR` copies the inventory for an offline plan: a spoke's key keeps its account
    (DIR/<account>/prod.json), so the plan reads it as the pipeline does, not as this account's prod."""
    bucket = MemoryBucket(
        objects={"in-use/prod.json": manifest("prod", "app:1.0"), f"in-use/{SPOKE}/prod.json": manifest("prod", "b:1")}
    )
    objects = inventory_objects(bucket)
    assert sorted(objects) == [f"{SPOKE}/prod.json", "prod.json"]
    for name, body in objects.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(body)
    offline, online = load_manifests(tmp_path), read_inventory_from_bucket(bucket)
    assert sorted(map(str, offline.standing)) == sorted(map(str, online.standing)) == [f"{SPOKE}/prod", "prod"]


@pytest.mark.parametrize("text", ["12345/prod", "210987654321/", "/prod", "210987654321/prod/x", "prod!"])
def test_a_cluster_that_is_neither_a_name_nor_account_slash_name_is_one_line(text: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_config(TAGGING.replace("safety: {clusters: [prod]}", f"safety: {{clusters: ['{text}']}}"))
    message = str(raised.value)
    assert message.startswith("retention.yaml: safety.clusters[0]: cluster ")
    assert "<account>/<name> (a spoke account's, 12 digits)" in message
    assert "\n" not in message


def test_a_cluster_is_written_back_as_its_text() -> None:
    rules = parse_config(TAGGING.replace("clusters: [prod]}", f"clusters: [prod, '{SPOKE}/prod']}}"))
    assert rules.safety.model_dump(mode="json")["clusters"] == ["prod", f"{SPOKE}/prod"]
    ours, theirs = rules.safety.clusters
    assert (ours.name, theirs.name, ours != theirs) == ("prod", "prod", True)  # one name, two accounts: two clusters


def test_a_flood_of_broken_files_in_a_spoke_folder_is_named_a_few_times_then_counted() -> None:
    inventory = from_bucket({f"in-use/{SPOKE}/junk{n:03d}.json": b"{" for n in range(150)})
    check = inventory_blockers(safety(), inventory, NOW)
    assert check.blocked == ()
    assert len(check.warnings) == 21
    assert check.warnings[-1] == (
        f"in-use/{SPOKE}/: 130 more unreadable files of clusters in neither safety list (docs/security.md)"
    )
