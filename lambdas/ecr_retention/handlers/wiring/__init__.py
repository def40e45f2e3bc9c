"""What each function is wired to: one module per function (wiring/evaluate.py, wiring/sentinel.py, ...), from that
function's settings, building only the adapters it uses; here, what they share. Each handler takes its wiring as a
keyword argument (tests hand in their own) and otherwise builds it once per cold start, as the first thing its first
invocation does: an environment or rules file that is wrong fails that invocation before any work, whatever its event
(settings are never read at import).

A module per function, so that a function's cold start builds its own settings model and wiring class only, not the
six others' (handlers/settings.py holds what their settings share)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from ecr_retention.aws.clients import client
from ecr_retention.domain.config import check_pruned_regions
from ecr_retention.handlers.settings import RulesSettings
from ecr_retention.loading import load_config

# Each builder imports the adapters it builds, so that a function loads only its own at its cold start: the
# collector's accounts (ECS, Lambda, Scheduler) and manifest store, the run's adapters (run_adapters, which the
# collector, the push function and the tagger never use), the report step's renderers, the push function's starter.
if TYPE_CHECKING:
    from ecr_retention.aws.ecr_registry import EcrRegistry
    from ecr_retention.aws.s3_bucket import S3Bucket
    from ecr_retention.domain.config import RetentionConfig
    from ecr_retention.ports import LeaseStore, Notifier, Registry
    from ecr_retention.run_adapters import Adapters
    from ecr_retention.services.report import Renderers

Wiring = TypeVar("Wiring")
# What each function's wiring module built once per cold start, to be forgotten (forget_cold_start).
_COLD_STARTS: list[Callable[[], None]] = []


def once_per_cold_start(build: Callable[[], Wiring]) -> Callable[[], Wiring]:
    """The function's wiring, built on the first call and kept: a Lambda container keeps it between invocations."""
    built = lru_cache(maxsize=1)(build)
    _COLD_STARTS.append(built.cache_clear)
    return built


def forget_cold_start() -> None:
    """What a new container starts with: nothing built (the tests and the demo change the environment)."""
    for forget in _COLD_STARTS:
        forget()


@dataclass(frozen=True)
class RunWiring:
    """A function of the pruning workflow: the rules file, and the adapters of a run."""

    config: RetentionConfig
    adapters: Adapters


def registry_of(settings: RulesSettings) -> EcrRegistry:
    from ecr_retention.aws.ecr_registry import EcrRegistry

    registry_id = settings.registry_id or client("sts").get_caller_identity()["Account"]
    return EcrRegistry(client("ecr"), registry_id, settings.region)


def other_registries(settings: RulesSettings, home: Registry) -> tuple[Registry, ...]:
    """The registries of the deployment's other Regions, each through a client of its own Region (the same account)."""
    from ecr_retention.aws.ecr_registry import EcrRegistry

    return tuple(EcrRegistry(client("ecr", region), home.registry_id, region) for region in settings.pruned_regions[1:])


def rules_of(settings: RulesSettings) -> RetentionConfig:
    """The rules file, whose policies may name only Regions the deployment prunes."""
    config = load_config(settings.rules_file)
    check_pruned_regions(config, settings.pruned_regions, str(settings.rules_file))
    return config


def bucket_of(settings: RulesSettings) -> S3Bucket:
    from ecr_retention.aws.s3_bucket import S3Bucket

    return S3Bucket(settings.bucket_name, client("s3"))


def run_wiring(
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

    config = rules_of(settings)
    registry = registry_of(settings)
    adapters = Adapters(
        registry=registry,
        bucket=bucket_of(settings),
        notifier=notifier,
        leases=leases,
        sentinel_role=sentinel_role,
        renderers=renderers,
        other_registries=other_registries(settings, registry),
    )
    return RunWiring(config, adapters)
