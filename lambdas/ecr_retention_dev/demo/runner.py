"""`ecr-retention demo`: seed an emulated registry, deploy twice (dry run, then for real), show and check it all.

1. The emulator starts and the registry is seeded (demo/registry.py), with an ECS service and a Lambda function
   that use two of its images; the stack's resources are created: the inventory bucket with the in-use manifests
   of the two clusters that run the exporter, the report topic with an SQS queue subscribed to it, and the lease
   table; the third cluster, dev, has nothing installed (demo/agentless.py).
2. First deployment, `dry_run: true`: the AWS inventory collector on its schedule (it writes the ECS and Lambda
   manifest, and dev's through dev's API), the tagger, then one sweep (targets -> evaluate per repository ->
   report). The plan is shown abridged: `ecr-retention plan` over a snapshot of the registry taken just before the
   sweep; then the two images ECS and Lambda use, as this plan and as a plan without the collector's manifest
   decide them.
3. Second deployment, `dry_run: false`: the collector, the tagger, then the sweep that deletes and archives, and
   restores the in-use image a native pull-time rule archived (the demo waits until ECR, here the emulator, has
   finished the restore); the SNS message the subscribed queue received.
4. The verification (demo/verify.py), read back from the emulator.
5. Something else deletes what runs (demo/native_policy.py): a teammate's native lifecycle policy on app takes the
   image dev runs; the emulator applies it and routes ECR's events to the sentinel, whose alert the subscribed queue
   receives; a dry-run sweep reports the reference in-use-missing; checked by demo/verify.py too. After
   --empty-manifest the emptied manifest stays, and both say the in-use memory speaks for its cluster; skipped after
   --delete-manifest (the real run was blocked).
Each sweep's JSON report, page and sheet are read back from the emulator's bucket, where the report step wrote them,
into the output directory; the last lines name the two pages.
"""

from __future__ import annotations

import json
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import boto3

from ecr_retention.aws.ecr_registry import EcrRegistry
from ecr_retention.domain.durations import humanize_age
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.inspector import inspector_words
from ecr_retention.domain.inventory.manifest import InUseManifest, manifest_json, manifest_key, parse_manifest
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Decision, Plan, RepositoryPlan
from ecr_retention.domain.planning.plan_parts import Reason, ReplicaRegistry
from ecr_retention.domain.reporting.report import ImageEntry
from ecr_retention.domain.reporting.run_report import RegionTotals, RunReport
from ecr_retention.domain.reporting.summary import replica_text
from ecr_retention.loading import load_config, load_manifests
from ecr_retention.services.snapshot import MemoryManifestCache, snapshot_registry
from ecr_retention.tables import COLUMNS, format_rows, plan_summary_lines, printable, render_plan_table, row
from ecr_retention_dev.demo.agentless import AGENTLESS_CLUSTER, AgentlessCluster, serving_agentless_cluster
from ecr_retention_dev.demo.native_policy import native_policy_step
from ecr_retention_dev.demo.pipeline import Deployment, Invocation, Sweep, deployed
from ecr_retention_dev.demo.registry import (
    ARCHIVED_AGO,
    BUCKET,
    EDGE,
    REPLICA_CLUSTER,
    REPLICA_REGION,
    DemoRegistry,
    rules_text,
    seed_other_region,
    seed_registry,
)
from ecr_retention_dev.demo.server import Emulator, running_emulator
from ecr_retention_dev.demo.verify import (
    Check,
    OtherRegion,
    Verification,
    other_region_checks,
    plan_without_source,
    read_state,
    verify,
)
from ecr_retention_dev.emulator.seeding import MotoEcr
from ecr_retention_dev.emulator.workloads import MotoWorkloads
from ecr_retention_dev.scenario import (
    LEASE_TABLE,
    QUEUE,
    REGION,
    TOPIC,
    create_inventory_bucket,
    create_lease_table,
    create_topic_with_queue,
)

ROWS_PER_REPOSITORY = 4
# The reasons shown first in the abridged plan, one row each, so that every repository shows its variety.
SHOWN_FIRST = ("delete-rule", "in-use", "keep-rule", "referrer", "index-child", "min-age", "keep-newest")
DRY_RULES, LIVE_RULES = "retention.yaml", "retention-live.yaml"
# The emulator finishes a restore this long after it started (ECR: up to 20 minutes); the demo waits at most
# RESTORE_WAIT for the restored image to be ACTIVE.
RESTORE_DELAY, RESTORE_WAIT = timedelta(seconds=2), 30.0

Write = Callable[[str], None]


@dataclass(frozen=True)
class Tampering:
    """What the demo does to one cluster's manifest right before the real sweep, as an adversary or a broken
    collector could: `delete` it, or replace it with an `empty`, complete, fresh one. The in-use memory the dry run
    recorded must keep everything the cluster runs protected, and the report must say why."""

    action: Literal["delete", "empty"]
    cluster: str


def run_demo(
    *,
    out: Path | None,
    keep_running: bool,
    write: Write = print,
    wait: Callable[[], None] | None = None,
    tampering: Tampering | None = None,
) -> int:
    """Exit code 0 when the verification held, 1 otherwise."""
    clock = time.monotonic()
    directory = prepare_directory(out)
    with running_emulator(REGION) as emulator, serving_agentless_cluster(emulator.endpoint) as agentless:
        emulator.fidelity.activation_delay = RESTORE_DELAY
        write(f"ecr-retention demo: the whole pipeline against moto in server mode at {emulator.endpoint}")
        write("(in this process: no AWS account, no network, no Docker; your AWS configuration is not read)")
        demo = Demo(emulator, directory, write, agentless)
        registry = demo.seed()
        announced, plan, without_collector = demo.dry_run(registry)
        verification = demo.live_run(registry, announced, without_collector, tampering)
        sentinel = demo.native_policy(registry, tampering)
        write("")
        write(
            f"Files: {directory} (rules, in-use manifests, snapshot.json, plan.txt, plan.json, "
            "reports/: each run's JSON report, page and sheet)"
        )
        for label, page in demo.pages.items():
            write(f"Report page ({label}): {page}")
        write(
            f"Replay the plan offline: ecr-retention plan --config {directory / DRY_RULES} "
            f"--snapshot {directory / 'snapshot.json'} --manifests {directory / 'in-use'} "
            f"--now {plan.generated_at:%Y-%m-%dT%H:%M:%SZ}"
        )
        write(f"Done in {time.monotonic() - clock:.1f} s.")
        if keep_running:
            show_endpoint(emulator, directory, demo.live_run_id, write)
            (wait or wait_for_interrupt)()
    return 0 if verification.ok and sentinel.ok else 1


def prepare_directory(out: Path | None) -> Path:
    if out is None:
        return Path(tempfile.mkdtemp(prefix="ecr-retention-demo-"))
    if out.exists() and not out.is_dir():
        raise InputError(f"--out: {out} is not a directory")
    if not out.parent.is_dir():
        raise InputError(f"--out: directory {out.parent} does not exist")
    out.mkdir(exist_ok=True)
    return out.resolve()


def wait_for_interrupt() -> None:
    """Until Ctrl-C or SIGTERM. The handlers are set explicitly: a shell starts background jobs with SIGINT
    ignored, and a plain KeyboardInterrupt would never come."""
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(1):
            pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class Demo:
    """The demo's steps against one emulator, writing as it goes."""

    def __init__(self, emulator: Emulator, directory: Path, write: Write, agentless: AgentlessCluster) -> None:
        self.emulator = emulator
        self.agentless = agentless
        self.directory = directory
        self.write = write
        self.ecr = emulator.client("ecr")
        self.s3 = emulator.client("s3")
        self.sqs = emulator.client("sqs")
        self.account = str(emulator.client("sts").get_caller_identity()["Account"])
        self.topic_arn = ""
        self.queue_url = ""
        self.pages: dict[str, Path] = {}  # each run's page, as the report step stored it, copied here
        self.live_run_id = ""
        self.other_ecr = emulator.client("ecr", REPLICA_REGION)
        self.other: DemoRegistry | None = None  # us-east-1, the second Region the deployment prunes

    # 1 -------------------------------------------------------------------------------------------------------

    def seed(self) -> DemoRegistry:
        """The registry, and what the CDK stack would have created around it."""
        workloads = MotoWorkloads(boto3.session.Session(), self.account, REGION, endpoint_url=self.emulator.endpoint)
        registry = seed_registry(MotoEcr(self.ecr), datetime.now(UTC).replace(microsecond=0), workloads)
        self.cover_with_inspector(registry)
        self.other = seed_other_region(registry, MotoEcr(self.other_ecr))
        self.create_stack_resources(registry)
        for name, dry_run in ((DRY_RULES, True), (LIVE_RULES, False)):
            (self.directory / name).write_text(
                rules_text(dry_run=dry_run, aws_source=registry.aws_source, inspector_source=registry.inspector_source)
            )
        self.show_seeded(registry)
        return registry

    def cover_with_inspector(self, registry: DemoRegistry) -> None:
        """Amazon Inspector's enhanced scanning covers the repositories of the ECS service's image, and counts the
        service's two tasks running it (what ListCoverage answers; the emulator serves it: moto has no ListCoverage)."""
        for workload in registry.aws_workloads:
            if workload.kind != "ECS service":
                continue
            self.emulator.inspector.cover_repository(self.account, REGION, workload.repository)
            self.emulator.inspector.cover_image(
                self.account, REGION, workload.repository, workload.digest, in_use_count=2, last_in_use_at=registry.now
            )

    def create_stack_resources(self, registry: DemoRegistry) -> None:
        """The inventory bucket with the exporters' manifests (copied here too), dev's API, the topic and its queue,
        the lease table."""
        # dev's manifest comes from the collector, through dev's API: nothing is installed there.
        agentless = [entry for entry in registry.in_use if entry.cluster == AGENTLESS_CLUSTER]
        self.agentless.publish(agentless, self.emulator.client("eks"), self.account, REGION)
        manifests = {key: body for key, body in registry.manifests() if key != manifest_key(AGENTLESS_CLUSTER)}
        create_inventory_bucket(self.s3, manifests, name=BUCKET, region=REGION)
        (self.directory / "in-use").mkdir(exist_ok=True)
        for key, body in manifests.items():
            (self.directory / key).write_bytes(body)
        self.topic_arn, self.queue_url = create_topic_with_queue(self.emulator.client("sns"), self.sqs, TOPIC)
        create_lease_table(self.emulator.client("dynamodb"), LEASE_TABLE)

    def show_seeded(self, registry: DemoRegistry) -> None:
        self.write("")
        self.write(f"1. Registry {self.account} in {REGION}: {len(registry.images)} images pushed through the ECR API")
        self.write("   " + ", ".join(f"{name} {registry.count(name)}" for name in registry.repositories))
        self.write("   (push and pull times set in the emulator: from an hour to two years ago)")
        self.write(
            "   app carries a native lifecycle policy that keeps 3 `*.*` images (it would expire the `dev` image)"
        )
        for cluster in ("prod", "dev", REPLICA_CLUSTER):
            self.write(cluster_line(registry, cluster))
        self.write(
            f"   app replicates to {REPLICA_REGION} with deleteReplication: a deletion in app here deletes there too"
        )
        for workload in registry.aws_workloads:
            image = workload.reference.removeprefix(f"{registry.host}/")
            self.write(f"   {workload.kind} {workload.name} runs {image} ({workload.detail})")
        self.write(
            f"   the rules expect prod, dev, {REPLICA_CLUSTER} and {registry.aws_source}, the collector's manifest of "
            "this account and region (safety.clusters),"
        )
        self.write(
            "   as docs/aws-inventory.md advises: a failed or stale collection blocks deletion, as a stale cluster does"
        )
        for repository, digest in registry.archived_in_use:
            self.show_archived_seed(registry, repository, digest)
        self.show_other_region(registry)
        self.write(f"   SNS topic {self.topic_arn}, with SQS queue {QUEUE} subscribed")
        self.write(f"   lease table {LEASE_TABLE}")

    def show_other_region(self, registry: DemoRegistry) -> None:
        """The second Region the deployment prunes, and what runs from it."""
        other = self.other
        assert other is not None
        self.write(
            f"   Registry {self.account} in {REPLICA_REGION}, pruned by the same deployment (regions: {REGION}, "
            f"{REPLICA_REGION}): {len(other.images)} images"
        )
        self.write("   " + ", ".join(f"{name} {other.count(name)}" for name in other.repositories))
        self.write(
            f"   its app holds the {registry.count('app')} replicas of app here and {other.count('app') - registry.count('app')} "
            "hotfix builds of its own; its own rules delete hotfixes, eu-west-1's decide the replicas"
        )
        for entry in registry.in_use:
            if entry.image.startswith(f"{other.host}/{EDGE}"):
                self.write(
                    f"   {entry.cluster} runs {entry.image.removeprefix(other.host + '/')} from {REPLICA_REGION}"
                )

    def show_archived_seed(self, registry: DemoRegistry, repository: str, digest: str) -> None:
        runs = ", ".join(
            f"{entry.cluster}'s {entry.workload}" for entry in registry.in_use_digests().get((repository, digest), [])
        )
        self.write(
            f"   {printable(registry.labelled(repository, digest))} is ARCHIVED: a native sinceImagePulled rule "
            f"archived it {humanize_age(ARCHIVED_AGO)} ago, while {runs} still runs it"
        )
        self.write(
            "   (ECR cannot see a pod that has run since it pulled; its next restart would fail, ImagePullBackOff)"
        )

    def deployment(self, rules: str) -> Deployment:
        return Deployment(
            BUCKET,
            self.topic_arn,
            LEASE_TABLE,
            self.directory / rules,
            self.account,
            REGION,
            (self.agentless.arn,),
            regions=(REGION, REPLICA_REGION),
        )

    # 2 -------------------------------------------------------------------------------------------------------

    def dry_run(self, registry: DemoRegistry) -> tuple[RunReport, Plan, Plan]:
        """The first deployment (dry_run: true). Returns its report, the plan made just before the sweep, and the
        plan of the same snapshot without the collector's manifest."""
        deployment = self.deployment(DRY_RULES)
        self.write("")
        self.write(f"2. First deployment, dry_run: true (RULES_FILE={deployment.rules_file})")
        with deployed(deployment) as functions:
            collector = functions.collector()
            self.copy_collected(registry)
            plan, without_collector = self.plan(registry)
            tagger = functions.tagger()
            sweep = functions.sweep(self.read_object)
        self.show_invocations(collector, tagger, sweep)
        report = self.stored_report(sweep, "dry-run", "dry run")
        envelope = self.received_message()
        self.write(f"   SNS subject: {envelope.get('Subject', '')}")
        self.show_plan(plan, report, len(registry.images))
        self.show_aws_workloads(registry, plan, without_collector)
        self.show_replication(registry, plan)
        self.show_archived_in_use(registry, plan)
        return report, plan, without_collector

    def copy_collected(self, registry: DemoRegistry) -> None:
        """The manifests the collector wrote (ECS and Lambda's, dev's), next to the clusters' (for the plan, and to
        replay it offline)."""
        for key in (
            manifest_key(registry.aws_source),
            manifest_key(registry.inspector_source),
            manifest_key(AGENTLESS_CLUSTER),
        ):
            (self.directory / key).write_bytes(self.read_object(BUCKET, key))

    def plan(self, registry: DemoRegistry) -> tuple[Plan, Plan]:
        """What `ecr-retention snapshot` then `ecr-retention plan` give: every image, every reason (files kept);
        and the plan of the same snapshot without the collector's manifest (demo/verify.py checks with it)."""
        snapshot = snapshot_registry(EcrRegistry(self.ecr, self.account, REGION), MemoryManifestCache())
        body = json.dumps(snapshot.model_dump(mode="json", by_alias=True, exclude_none=True), indent=1)
        (self.directory / "snapshot.json").write_text(body + "\n")
        config = load_config(self.directory / DRY_RULES)
        inventory = load_manifests(self.directory / "in-use")
        now = datetime.now(UTC)
        plan = plan_registry(config, snapshot, inventory, now)
        (self.directory / "plan.json").write_text(json.dumps(plan.to_json_dict(), indent=1) + "\n")
        (self.directory / "plan.txt").write_text(render_plan_table(plan) + "\n")
        collected = (registry.aws_source, registry.inspector_source)
        return plan, plan_without_source(config, snapshot, inventory, collected, now)

    def show_plan(self, plan: Plan, announced: RunReport, total: int) -> None:
        rows = [COLUMNS, *abridged_rows(plan)]
        self.write("")
        self.write(
            f"   The plan, {ROWS_PER_REPOSITORY} rows per repository (all {total}: {self.directory / 'plan.txt'}):"
        )
        for line in [*format_rows(rows), "", *(printable(line) for line in plan_summary_lines(plan))]:
            self.write(f"   {line}".rstrip())
        differ = removals_of_plan(plan) ^ removals_of_report(announced)
        if differ:
            self.write(f"   note: the dry run's report and this plan differ by {len(differ)} images")

    def show_aws_workloads(self, registry: DemoRegistry, plan: Plan, without_collector: Plan) -> None:
        """The images ECS and Lambda use, as this plan decides them (kept: in use, with every use the collector
        found), then as the plan of the same snapshot and rules without the collector's manifest decides them."""
        source = registry.aws_source
        keys = [(workload.repository, workload.digest) for workload in registry.aws_workloads]
        kept = decisions_of(plan, keys)
        removed = decisions_of(without_collector, keys)
        lines = format_rows(
            [
                COLUMNS,
                *(row(name, decision, plan) for name, decision in kept),
                *(row(name, decision, without_collector) for name, decision in removed),
            ]
        )
        names = " and the ".join(f"{workload.kind} {workload.name}" for workload in registry.aws_workloads)
        self.write("")
        self.write(f"   Protected by ECS and Lambda: the collector's s3://{BUCKET}/{manifest_key(source)} names the")
        self.write(f"   {names}; this plan keeps their images:")
        for line in lines[: 1 + len(kept)]:
            self.write(f"   {line}")
        for name, decision in kept:
            # The row's reason is clipped; here every use, without the source's name before each.
            uses = decision.main_reason.detail.replace(f"{source}: ", "")
            self.write(f"     {printable(registry.labelled(name, decision.image_digest))} in use by {printable(uses)}")
        self.show_inspector(registry, plan)
        self.write(f"   The same snapshot and rules without that manifest (and without {source} in safety.clusters):")
        for line in lines[1 + len(kept) :]:
            self.write(f"   {line}")

    def show_inspector(self, registry: DemoRegistry, plan: Plan) -> None:
        """Amazon Inspector's reading (inspectorInUse), a second witness of the same images, with nothing installed."""
        inspector = registry.inspector_source
        self.write(
            f"   Amazon Inspector agrees (inspectorInUse: the collector's s3://{BUCKET}/{manifest_key(inspector)}):"
        )
        key = manifest_key(inspector)
        manifest = parse_manifest(key, (self.directory / key).read_bytes())
        for entry in manifest.images:
            image = (entry.workload.removeprefix("Repository/"), entry.digest or "")
            for name, decision in decisions_of(plan, [image]):
                label = printable(registry.labelled(name, decision.image_digest))
                self.write(f"     {label}: {inspector_words(entry)}; {decision.action} in this plan")

    def show_replication(self, registry: DemoRegistry, plan: Plan) -> None:
        """The release the replica's cluster runs, as this plan decides it: kept, the destination named."""
        kept = decisions_of(plan, list(registry.replicated_in_use()))
        self.write("")
        for name, replicas in replicated_deletions(plan):
            listed = "; ".join(replica_text(replica) for replica in replicas)
            self.write(f"   Replicated deletions: {name}'s deletions also delete in {printable(listed)}")
        for line in format_rows([COLUMNS, *(row(name, decision, plan) for name, decision in kept)]):
            self.write(f"   {line}")
        for name, decision in kept:
            self.write(
                f"     {printable(registry.labelled(name, decision.image_digest))} {decision.action}: "
                f"in-use: {printable(decision.main_reason.detail)}{rules_alone_would_delete(decision)}"
            )

    def show_archived_in_use(self, registry: DemoRegistry, plan: Plan) -> None:
        """The in-use image found archived, as this plan decides it: restored, whatever the rules say."""
        found = decisions_of(plan, registry.archived_in_use)
        self.write("")
        self.write("   In use, found archived: the plan restores it (action restore; in a dry run, would restore):")
        for line in format_rows([COLUMNS, *(row(name, decision, plan) for name, decision in found)]):
            self.write(f"   {line}")

    # 3 -------------------------------------------------------------------------------------------------------

    def live_run(
        self,
        registry: DemoRegistry,
        announced: RunReport,
        without_collector: Plan,
        tampering: Tampering | None = None,
    ) -> Verification:
        deployment = self.deployment(LIVE_RULES)
        self.write("")
        self.write(f"3. Second deployment, dry_run: false (RULES_FILE={deployment.rules_file})")
        with deployed(deployment) as functions:
            collector = functions.collector()
            tagger = functions.tagger()
            if tampering is not None:
                self.tamper(tampering)
            other = self.other
            assert other is not None
            before = read_state(self.ecr, registry.repositories, datetime.now(UTC))
            before_other = read_state(self.other_ecr, other.repositories, datetime.now(UTC))
            sweep = functions.sweep(self.read_object)
        self.show_invocations(collector, tagger, sweep)
        self.wait_for_restores(registry)
        after = read_state(self.ecr, registry.repositories, datetime.now(UTC))
        after_other = read_state(self.other_ecr, other.repositories, datetime.now(UTC))
        report = self.stored_report(sweep, "live", "real run")
        if tampering is not None:
            self.show_remembered(report)
        self.live_run_id = report.run_id
        self.show_message(self.received_message())
        deleted = tampering.cluster if tampering is not None and tampering.action == "delete" else None
        verification = verify(registry, before, after, announced, report, without_collector, blocked_by=deleted)
        verification.checks += other_region_checks(
            OtherRegion(other, before_other, after_other), registry, announced, report, blocked=deleted is not None
        )
        self.show_verification(verification)
        return verification

    def tamper(self, tampering: Tampering) -> None:
        key = manifest_key(tampering.cluster)
        if tampering.action == "delete":
            self.s3.delete_object(Bucket=BUCKET, Key=key)
            self.write(f"   tamper   s3://{BUCKET}/{key} deleted before the sweep (--delete-manifest)")
            return
        empty = InUseManifest(
            schema_version=1, cluster=tampering.cluster, generated_at=datetime.now(UTC), complete=True, images=()
        )
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=manifest_json(empty))
        self.write(
            f"   tamper   s3://{BUCKET}/{key} replaced by an empty, complete, fresh manifest before the sweep "
            "(--empty-manifest)"
        )

    def show_remembered(self, report: RunReport) -> None:
        """What the in-use memory kept, in the report's words: the warnings, and each image kept only by it."""
        for warning in report.warnings:
            if "in-use memory" in warning or "unreadable" in warning:
                self.write(f"   warning  {warning}")
        for repository in report.repositories:
            for label, entries in (("kept", repository.kept_images), ("restored", repository.restored)):
                for entry, reason in kept_only_by_memory(entries):
                    tags = ",".join(entry.image_tags) or entry.image_digest[:19]
                    self.write(
                        f"   {label:<8} {repository.repository_name} {tags}: in-use [remembered]: {reason.detail}"
                    )
        for line in report.blocked:
            self.write(f"   blocked  {line}")

    def wait_for_restores(self, registry: DemoRegistry) -> None:
        """Until each in-use image found archived is ACTIVE again (the sweep started its restore), or RESTORE_WAIT."""
        ecr = EcrRegistry(self.ecr, self.account, REGION)
        started = time.monotonic()
        for repository, digest in registry.archived_in_use:
            status = None
            while time.monotonic() - started < RESTORE_WAIT:
                detail = ecr.describe_image_ids(repository, [digest]).get(digest)
                status = None if detail is None else detail.image_status
                if status != "ACTIVATING":
                    break
                time.sleep(0.25)
            self.write(
                f"   restore  {printable(registry.labelled(repository, digest))}: {status} "
                f"{time.monotonic() - started:.1f} s after the sweep (the emulator finishes a restore "
                f"{RESTORE_DELAY.total_seconds():.0f} s after it started; ECR within 20 minutes)"
            )

    def show_invocations(self, collector: Invocation, tagger: Invocation, sweep: Sweep) -> None:
        self.write(f"   collector {json.dumps(collector.result)}")
        self.write(f"   tagger   {json.dumps(tagger.result)}")
        started = sweep.targets.result
        self.write(f"   targets  {started['count']} repositories -> s3://{BUCKET}/{started['targetsKey']}")
        for item, evaluation in zip(sweep.items, sweep.evaluations, strict=True):
            where = f"{item['region']} " if "region" in item else ""
            self.write(f"   evaluate {where}{item['repository']}: {json.dumps(evaluation.result)}")
        assert sweep.report is not None
        self.write(f"   report   {json.dumps(sweep.report.result)}")
        recorded = {**collector.metrics, **tagger.metrics, **sweep.report.metrics}
        metrics = ", ".join(f"{name} {value:.0f}" for name, value in recorded.items())
        self.write(f"   metrics  EcrRetention: {metrics}")

    def stored_report(self, sweep: Sweep, name: str, label: str) -> RunReport:
        """The run's JSON report, page and sheet, read back from the bucket where the report step wrote them."""
        assert sweep.report is not None
        key = str(sweep.report.result["reportKey"]).removeprefix(f"s3://{BUCKET}/")
        (self.directory / "reports").mkdir(exist_ok=True)
        copies = {}
        for extension in ("json", "html", "csv"):
            stored = key.removesuffix(".json") + f".{extension}"
            copies[extension] = self.directory / "reports" / f"{name}-{Path(stored).name}"
            copies[extension].write_bytes(self.read_object(BUCKET, stored))
        self.write(f"   JSON report s3://{BUCKET}/{key}")
        self.write(f"     copied to {copies['json']}")
        self.write(f"   page and sheet beside it (.html, .csv), copied to {copies['html'].name}, {copies['csv'].name}")
        self.pages[label] = copies["html"]
        report = RunReport.model_validate(json.loads(copies["json"].read_bytes()))
        for line in region_totals(report):
            self.write(f"   {line}")
        return report

    def read_object(self, bucket: str, key: str) -> bytes:
        body: bytes = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return body

    def received_message(self) -> dict[str, Any]:
        """The one message the report step published, as the subscribed queue received it (SNS's envelope)."""
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        for message in messages:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        if len(messages) != 1:
            raise RuntimeError(f"the subscribed queue received {len(messages)} messages for one run, expected 1")
        envelope: dict[str, Any] = json.loads(messages[0]["Body"])
        return envelope

    def show_message(self, envelope: dict[str, Any]) -> None:
        attributes = ", ".join(
            f"{name}={value['Value']}" for name, value in sorted(envelope.get("MessageAttributes", {}).items())
        )
        self.write("")
        self.write(f"   The SNS message, as the queue subscribed to {TOPIC} received it:")
        self.write(f"   Subject: {printable(str(envelope.get('Subject', '')))}")
        self.write(f"   MessageAttributes: {attributes}")
        self.write("")
        for line in str(envelope["Message"]).rstrip("\n").split("\n"):
            self.write(printable(line))

    # 5 -------------------------------------------------------------------------------------------------------

    def native_policy(self, registry: DemoRegistry, tampering: Tampering | None) -> Verification:
        """A native lifecycle policy deletes the image dev runs; the sentinel tells (demo/native_policy.py). After
        --empty-manifest the emptied manifest stays: the sentinel and the sweep know what runs there from the in-use
        memory, and say so. Not after --delete-manifest: the real run was blocked, so the registry is not the one
        this step starts from."""
        if tampering is not None and tampering.action == "delete":
            self.write("")
            self.write(
                "5. (skipped after --delete-manifest: the real run was blocked, so the registry is not the one the "
                "sentinel's step starts from)"
            )
            return Verification(checks=[Check("sentinel step skipped", True, "the real run was blocked")])
        return native_policy_step(self, registry, DRY_RULES, emptied=tampering.cluster if tampering else None)

    # 4 -------------------------------------------------------------------------------------------------------

    def show_verification(self, verification: Verification) -> None:
        repositories = sorted({repo for repo, _ in verification.deleted | verification.archived})
        self.write("")
        self.write("4. Verification, read back from the emulator after the real run:")
        self.write(
            f"   {len(verification.deleted)} images deleted and {len(verification.archived)} archived, "
            f"in {', '.join(repositories) or 'no repository'}"
        )
        for check in verification.checks:
            self.write(f"   {'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
            for offender in check.offenders[:10]:
                self.write(f"          {printable(offender)}")
        if verification.ok:
            self.write(
                "verified: no in-use, protected, young or referenced image was deleted or archived, "
                "and the in-use image found archived runs again"
            )
        else:
            self.write("NOT VERIFIED: see the failed checks above")


def cluster_line(registry: DemoRegistry, cluster: str) -> str:
    """Where the demo's registry learns what `cluster` runs: its exporter's manifest, or (dev) its API."""
    entries = [entry for entry in registry.in_use if entry.cluster == cluster]
    if cluster == AGENTLESS_CLUSTER:
        return (
            f"   {cluster}: {len(entries)} images running, nothing installed: the collector reads its API "
            f"(eksClusters) and writes s3://{BUCKET}/in-use/{cluster}.json"
        )
    where = f" (in {REPLICA_REGION})" if cluster == REPLICA_CLUSTER else ""
    return f"   s3://{BUCKET}/in-use/{cluster}.json: {len(entries)} images running in {cluster}{where}"


def abridged_rows(plan: Plan) -> list[tuple[str, ...]]:
    """The abridged rows of every repository a policy governs."""
    return [
        row(repository.repository_name, image, plan)
        for repository in plan.repositories
        if repository.policy is not None
        for image in abridged(repository)
    ]


def removals_of_plan(plan: Plan) -> set[tuple[str, str]]:
    return {(r.repository_name, d.image_digest) for r in plan.repositories for d in r.images if d.removes}


def removals_of_report(report: RunReport) -> set[tuple[str, str]]:
    """The home Region's removals (the plan shown is of its registry)."""
    return {
        (r.repository_name, e.image_digest)
        for r in report.repositories
        if r.region in (None, report.region)
        for e in (*r.deleted, *r.archived)
    }


def region_totals(report: RunReport) -> list[str]:
    """One line per Region of the run (RunReport.regions; the run's totals when it pruned one): its repositories, and
    what was deleted, archived and kept there."""
    one = report.regions_evaluated[0] if report.repositories else report.region  # a push in another Region alone
    regions = report.regions or (RegionTotals(region=one, totals=report.totals),)
    deleted, archived = ("to delete", "to archive") if report.dry_run else ("deleted", "archived")
    return [
        f"{each.region}: {each.totals.repositories} repositories, {each.totals.deleted} {deleted}, "
        f"{each.totals.archived} {archived}, {each.totals.kept} kept"
        for each in regions
    ]


def replicated_deletions(plan: Plan) -> list[tuple[str, tuple[ReplicaRegistry, ...]]]:
    """(repository, the replicas its deletions reach), by repository name, for those whose deletions replicate."""
    reach = {
        repository.repository_name: repository.deletion_replicates_to
        for repository in plan.repositories
        if repository.deletion_replicates_to
    }
    return sorted(reach.items())


def rules_alone_would_delete(decision: Decision) -> str:
    """` (the rules alone would delete it: RULE)` when a delete rule marks the image, else nothing."""
    marked = [reason.rule or "" for reason in decision.reasons if reason.kind == "delete-rule"]
    return f" (the rules alone would delete it: {printable(marked[0])})" if marked else ""


def kept_only_by_memory(entries: Iterable[ImageEntry]) -> Iterator[tuple[ImageEntry, Reason]]:
    """The entries the in-use memory kept ("remembered") that no manifest read in this run names, with that reason."""
    for entry in entries:
        reason = next((r for r in entry.reasons if r.rule == "remembered"), None)
        if reason is not None and not any(r.kind == "in-use" and r.rule is None for r in entry.reasons):
            yield entry, reason


def abridged(repository: RepositoryPlan) -> list[Decision]:
    """A few rows that show the repository's variety: the first image of each reason kind, in plan order."""
    kinds = list(SHOWN_FIRST) + sorted({image.main_reason.kind for image in repository.images} - set(SHOWN_FIRST))
    chosen: list[Decision] = []
    for kind in kinds:
        image = next((image for image in repository.images if image.main_reason.kind == kind), None)
        if image is not None and len(chosen) < ROWS_PER_REPOSITORY:
            chosen.append(image)
    order = {image.image_digest: number for number, image in enumerate(repository.images)}
    return sorted(chosen, key=lambda image: order[image.image_digest])


def decisions_of(plan: Plan, keys: list[tuple[str, str]]) -> list[tuple[str, Decision]]:
    """The plan's decisions on these (repository, digest) keys, in their order."""
    decisions = {(r.repository_name, d.image_digest): d for r in plan.repositories for d in r.images}
    return [(key[0], decisions[key]) for key in keys if key in decisions]


def show_endpoint(emulator: Emulator, directory: Path, live_run_id: str, write: Write) -> None:
    environment = " ".join(f"{name}={value}" for name, value in emulator.cli_environment().items())
    write("")
    write(f"The emulator keeps running at {emulator.endpoint}; Ctrl-C stops it. In another shell:")
    write(f"  export {environment}")
    write("  aws ecr describe-images --repository-name app --query 'imageDetails[].imageTags'")
    write(f"  aws s3 ls s3://{BUCKET}/reports/ --recursive")
    write(f"  ecr-retention run --config {directory / DRY_RULES} --bucket {BUCKET} --region {REPLICA_REGION}")
    write(f"  ecr-retention restore --run {live_run_id} --bucket {BUCKET} --wait   # undo the real run's archives")
