"""What each function is wired to: one builder per function, from that function's settings, building only the
adapters it uses. Each handler takes its wiring as a keyword argument (tests hand in their own) and otherwise
builds it once per cold start, as the first thing its first invocation does: an environment or rules file
that is wrong fails that invocation before any work, whatever its event (settings are never read at import)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from ecr_retention.aws.clients import client, default_factory
from ecr_retention.clock import utc_now
from ecr_retention.domain.config import check_pruned_regions
from ecr_retention.handlers.settings import (
    CollectorSettings,
    EvaluateSettings,
    PushSettings,
    ReportSettings,
    RulesSettings,
    SentinelSettings,
    TaggerSettings,
    TargetsSettings,
)
from ecr_retention.loading import load_config

# Each builder imports the adapters it builds, so that a function loads only its own at its cold start: the
# collector's accounts (ECS, Lambda, Scheduler) and manifest store, the run's adapters (run_adapters, which the
# collector, the push function and the tagger never use), the report step's renderers, the push function's starter.
if TYPE_CHECKING:
    from ecr_retention.aws.accounts import CollectorAccounts
    from ecr_retention.aws.ecr_registry import EcrRegistry
    from ecr_retention.aws.s3_bucket import S3Bucket
    from ecr_retention.aws.sfn_workflow import StepFunctionsStarter
    from ecr_retention.domain.config import RetentionConfig
    from ecr_retention.ports import (
        Bucket,
        ClusterAccess,
        LeaseStore,
        ManifestStore,
        Notifier,
        Registry,
    )
    from ecr_retention.registries import Registries
    from ecr_retention.run_adapters import Adapters
    from ecr_retention.services.report import Renderers
    from ecr_retention.services.sentinel import SentinelPorts


@dataclass(frozen=True)
class RunWiring:
    """A function of the pruning workflow, or the tagger: the rules file, and the adapters of a run."""

    config: RetentionConfig
    adapters: Adapters


@dataclass(frozen=True)
class TaggerWiring:
    """The tagger: the rules file, the registry whose images it tags (the home Region's) and the other pruned Regions'
    (it tags in each), the bucket of in-use manifests, and a clock (it runs no pipeline run, so it needs none of a
    run's adapters)."""

    config: RetentionConfig
    registry: Registry
    bucket: Bucket
    clock: Callable[[], datetime] = utc_now
    other_registries: tuple[Registry, ...] = field(default=(), kw_only=True)

    @property
    def registries(self) -> Registries:
        from ecr_retention.registries import Registries

        return Registries.of(self.registry, self.other_registries)


@dataclass(frozen=True)
class SentinelWiring:
    """The sentinel: the rules file (which repositories are managed, safety.restore_in_use and in_use_grace), the
    registries it confirms with and restores in (each pruned Region's: an event's Region chooses), the bucket (what runs, the manifest cache, the record of removals),
    the report topic, and a clock."""

    config: RetentionConfig
    ports: SentinelPorts
    clock: Callable[[], datetime] = utc_now


@dataclass(frozen=True)
class PushWiring:
    starter: StepFunctionsStarter
    region: str  # the home Region: a push there starts a run of the home registry; elsewhere, of that Region's
    # The rules: a push to a repository that no policy manages in its Region starts no run.
    config: RetentionConfig


def eks_clusters(accounts: CollectorAccounts) -> ClusterAccess:
    # Imported here, only when a cluster is listed: the kubernetes client adds 70 ms to a cold start (with the
    # asset's bytecode; 0.3 s without).
    from ecr_retention.aws.eks_clusters import EksClusters

    return EksClusters(accounts)


@dataclass(frozen=True)
class CollectorWiring:
    settings: CollectorSettings
    store: ManifestStore
    # Called once per invocation: assumed-role credentials last an hour, a warm container much longer.
    accounts: Callable[[], CollectorAccounts]
    # Into the eksClusters' APIs, with the invocation's accounts: a spoke's assumed role signs its clusters' tokens.
    clusters: Callable[[CollectorAccounts], ClusterAccess] = eks_clusters


def _registry(settings: RulesSettings) -> EcrRegistry:
    from ecr_retention.aws.ecr_registry import EcrRegistry

    registry_id = settings.registry_id or client("sts").get_caller_identity()["Account"]
    return EcrRegistry(client("ecr"), registry_id, settings.region)


def _other_registries(settings: RulesSettings, home: Registry) -> tuple[Registry, ...]:
    """The registries of the deployment's other Regions, each through a client of its own Region (the same account)."""
    from ecr_retention.aws.ecr_registry import EcrRegistry

    return tuple(EcrRegistry(client("ecr", region), home.registry_id, region) for region in settings.pruned_regions[1:])


def _rules(settings: RulesSettings) -> RetentionConfig:
    """The rules file, whose policies may name only Regions the deployment prunes."""
    config = load_config(settings.rules_file)
    check_pruned_regions(config, settings.pruned_regions, str(settings.rules_file))
    return config


def _bucket(settings: RulesSettings) -> S3Bucket:
    from ecr_retention.aws.s3_bucket import S3Bucket

    return S3Bucket(settings.bucket_name, client("s3"))


def _run_wiring(
    settings: RulesSettings,
    *,
    notifier: Notifier | None = None,
    leases: LeaseStore | None = None,
    sentinel_role: str | None = None,
    renderers: Renderers | None = None,
) -> RunWiring:
    """The rules file, the registry and the bucket, and the function's own adapters (a notifier, leases, the report
    step's renderers), and the sentinel whose records the in-use check counts."""
    from ecr_retention.run_adapters import Adapters

    config = _rules(settings)
    registry = _registry(settings)
    adapters = Adapters(
        registry=registry,
        bucket=_bucket(settings),
        notifier=notifier,
        leases=leases,
        sentinel_role=sentinel_role,
        renderers=renderers,
        other_registries=_other_registries(settings, registry),
    )
    return RunWiring(config, adapters)


@dataclass(frozen=True)
class TargetsWiring(RunWiring):
    """The targets step: a run's wiring, and how many batches the workflow's Map runs at once."""

    workers: int


def targets_wiring(settings: TargetsSettings) -> TargetsWiring:
    run = _run_wiring(settings)
    return TargetsWiring(run.config, run.adapters, workers=settings.map_concurrency)


def evaluate_wiring(settings: EvaluateSettings) -> RunWiring:
    from ecr_retention.aws.dynamodb_lease import DynamoDbLeases

    return _run_wiring(settings, leases=DynamoDbLeases(settings.lease_table, client("dynamodb")))


def report_wiring(settings: ReportSettings) -> RunWiring:
    # Only the report step renders: the other functions load neither the renderers nor the report's models.
    from ecr_retention.aws.sns_notifier import SnsNotifier
    from ecr_retention.report_renderers import RENDERERS

    notifier = SnsNotifier(settings.topic_arn, client("sns"))
    return _run_wiring(settings, notifier=notifier, sentinel_role=settings.sentinel_role_arn, renderers=RENDERERS)


def tagger_wiring(settings: TaggerSettings) -> TaggerWiring:
    registry, bucket = _registry(settings), _bucket(settings)
    return TaggerWiring(_rules(settings), registry, bucket, other_registries=_other_registries(settings, registry))


def sentinel_wiring(settings: SentinelSettings) -> SentinelWiring:
    from ecr_retention.aws.sns_notifier import SnsNotifier
    from ecr_retention.services.sentinel import SentinelPorts
    from ecr_retention.services.snapshot import BucketManifestCache

    bucket, registry = _bucket(settings), _registry(settings)
    ports = SentinelPorts(
        registry=registry,
        bucket=bucket,
        notifier=SnsNotifier(settings.topic_arn, client("sns")),
        cache=BucketManifestCache(bucket),
        sentinel_role=settings.sentinel_role_arn,
        other_registries=_other_registries(settings, registry),
    )
    return SentinelWiring(_rules(settings), ports)


def push_wiring(settings: PushSettings) -> PushWiring:
    from ecr_retention.aws.sfn_workflow import StepFunctionsStarter

    return PushWiring(
        StepFunctionsStarter(settings.state_machine_arn, client("stepfunctions")),
        settings.region,
        load_config(settings.rules_file),
    )


def collector_wiring(settings: CollectorSettings) -> CollectorWiring:
    from ecr_retention.aws.accounts import AwsAccounts
    from ecr_retention.aws.s3_bucket import S3Bucket
    from ecr_retention.services.aws_inventory import BucketManifestStore

    return CollectorWiring(
        settings,
        BucketManifestStore(S3Bucket(settings.bucket_name, client("s3"))),
        accounts=lambda: AwsAccounts(default_factory(), settings.role_arns),
    )


# Once per cold start: a Lambda container keeps these between invocations.


@lru_cache(maxsize=1)
def targets_at_cold_start() -> TargetsWiring:
    return targets_wiring(TargetsSettings.from_environ())


@lru_cache(maxsize=1)
def evaluate_at_cold_start() -> RunWiring:
    return evaluate_wiring(EvaluateSettings.from_environ())


@lru_cache(maxsize=1)
def report_at_cold_start() -> RunWiring:
    return report_wiring(ReportSettings.from_environ())


@lru_cache(maxsize=1)
def tagger_at_cold_start() -> TaggerWiring:
    return tagger_wiring(TaggerSettings.from_environ())


@lru_cache(maxsize=1)
def sentinel_at_cold_start() -> SentinelWiring:
    return sentinel_wiring(SentinelSettings.from_environ())


@lru_cache(maxsize=1)
def push_at_cold_start() -> PushWiring:
    return push_wiring(PushSettings.from_environ())


@lru_cache(maxsize=1)
def collector_at_cold_start() -> CollectorWiring:
    return collector_wiring(CollectorSettings.from_environ())


def forget_cold_start() -> None:
    """What a new container starts with: nothing built (the tests and the demo change the environment)."""
    for built in (
        targets_at_cold_start,
        evaluate_at_cold_start,
        report_at_cold_start,
        tagger_at_cold_start,
        sentinel_at_cold_start,
        push_at_cold_start,
        collector_at_cold_start,
    ):
        built.cache_clear()
