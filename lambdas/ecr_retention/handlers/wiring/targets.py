"""The targets step's wiring (handlers/targets.py): a run's, and how many batches the workflow's Map runs at once."""

from dataclasses import dataclass

from pydantic import Field

from ecr_retention import layout
from ecr_retention.handlers.settings import RulesSettings
from ecr_retention.handlers.wiring import RunWiring, once_per_cold_start, run_wiring


class TargetsSettings(RulesSettings):
    """handlers/targets.py: the Map's concurrency sizes the run's batches (workflow.repositories_per_batch)."""

    map_concurrency: int = Field(alias=layout.MAP_CONCURRENCY_VARIABLE, ge=1)


@dataclass(frozen=True)
class TargetsWiring(RunWiring):
    """The targets step: a run's wiring, and how many batches the workflow's Map runs at once."""

    workers: int


def targets_wiring(settings: TargetsSettings) -> TargetsWiring:
    run = run_wiring(settings)
    return TargetsWiring(run.config, run.adapters, workers=settings.map_concurrency)


@once_per_cold_start
def targets_at_cold_start() -> TargetsWiring:
    return targets_wiring(TargetsSettings.from_environ())
