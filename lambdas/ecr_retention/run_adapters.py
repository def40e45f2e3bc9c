"""What a run works through (ports.py): the adapters each workflow step's service (services/targets_step.py,
evaluate_step.py, report_step.py) and the CLI's run (services/run.py) take; each function's wiring builds its own
(handlers/wiring/). Apart from the services, so that a step loads none of the others' modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from ecr_retention.clock import utc_now
from ecr_retention.domain.errors import InputError
from ecr_retention.registries import PrunedRegistry, Registries

if TYPE_CHECKING:
    from ecr_retention.ports import LeaseStore, Notifier, Registry, RunBucket
    from ecr_retention.services.report import Renderers


@dataclass(frozen=True)
class Adapters:
    """What a run works through (ports.py); the wiring builds each function's own (handlers/wiring/)."""

    registry: Registry  # the home Region's: the functions' own (the CLI's: the standard AWS configuration's)
    bucket: RunBucket
    notifier: Notifier | None = None
    leases: LeaseStore | None = None
    clock: Callable[[], datetime] = utc_now
    # This deployment's sentinel role (SENTINEL_ROLE_ARN, `run --sentinel-role`): the only writer whose records of
    # removals/ the in-use check counts. None: unknown, so it counts none (services/removals.py).
    sentinel_role: str | None = None
    # How the report step renders the page, the sheet and the SNS texts (report_renderers.py, handed in by the
    # report step's wiring and the CLI): no service imports a renderer. None: a step that reports nothing (the targets
    # and evaluate steps), so that its function never loads the report's models and renderers.
    renderers: Renderers | None = field(default=None, kw_only=True)
    # The registries of the other Regions the deployment prunes (PRUNED_REGIONS; `run --region`), in that order.
    other_registries: tuple[Registry, ...] = field(default=(), kw_only=True)

    @property
    def registries(self) -> Registries:
        """Every registry the run prunes, the home Region's first (registries.py: the one collection of them)."""
        return Registries.of(self.registry, self.other_registries)

    def keyed(self, key: str | None) -> PrunedRegistry:
        """The registry of a work item (its `region` is the registry's key: None for the home Region's). A Region the
        run does not prune is bad input: its repositories would be evaluated with another registry's rules and
        replication."""
        registries = self.registries
        found = registries.home if key is None else registries.in_region(key)
        if found is None:
            raise InputError(f"Region {key} is not one this deployment prunes ({', '.join(registries.regions)})")
        return found
