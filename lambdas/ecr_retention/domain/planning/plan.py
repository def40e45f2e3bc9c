"""A plan: for every image, keep, delete, archive or restore, with every reason."""

from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from ecr_retention.domain.planning.plan_model import PlanModel, slot_writer
from ecr_retention.domain.planning.plan_parts import Reason, ReplicaRegistry
from ecr_retention.domain.planning.reasons import PROTECTION_ORDER, ReasonKind
from ecr_retention.domain.registry.coordinates import RegistryCoordinates
from ecr_retention.domain.timestamps import UtcDatetime

if TYPE_CHECKING:
    from ecr_retention.domain.planning.plan_document import PlanDocument

# restore: an ARCHIVED image that an in-use manifest names goes back to standard storage. It removes nothing: it
# is never a removal candidate, never counts toward max_delete_fraction, and survives a blocked run.
Action = Literal["keep", "delete", "archive", "restore"]
# With safety.quarantine, a deletion passes through the archive: the image enters quarantine (archived instead of
# deleted), waits there (archived, kept), and leaves it for good (deleted once archived longer than the quarantine).
QuarantineStage = Literal["enters", "waits", "leaves"]
REMOVALS: tuple[Action, ...] = ("delete", "archive")


class Decision(PlanModel):
    image_digest: str
    image_tags: tuple[str, ...]
    image_pushed_at: UtcDatetime
    image_size_in_bytes: int | None = None
    action: Action
    reasons: tuple[Reason, ...]

    @classmethod
    def planned(  # positional: called once per image
        cls,
        image_digest: str,
        image_tags: tuple[str, ...],
        image_pushed_at: datetime,
        image_size_in_bytes: int | None,
        action: Action,
        reasons: tuple[Reason, ...],
    ) -> "Decision":
        """The planner's decision, from parts of a validated snapshot and reasons it built, not validated again (the
        push time is aware UTC already): the instance unpickling would restore from a validated decision's state,
        every field set, its slots written directly rather than through __setstate__. The decisions of a plan share
        that one set of field names (pydantic's own set per instance is most of a decision's memory; model_copy
        copies the set before it adds to it). model_construct makes the same instance, but searches every field's
        aliases and default on each call: the 100,000 decisions of one repository took 0.47 s so, 0.60 s with
        model_construct, 0.66 s validated (CPU, GC off, medians of 5 alternated rounds); through __setstate__ 0.10 s
        of bare construction, 0.05 s with the slots written directly."""
        decision = _new_instance(cls)
        _set_instance_dict(
            decision,
            {
                "image_digest": image_digest,
                "image_tags": image_tags,
                "image_pushed_at": image_pushed_at,
                "image_size_in_bytes": image_size_in_bytes,
                "action": action,
                "reasons": reasons,
            },
        )
        _set_fields_set(decision, _DECISION_FIELDS)
        _set_extra(decision, None)
        _set_private(decision, None)
        return decision

    @property
    def removes(self) -> bool:
        """Deleted or archived; a restore and a keep leave the image in the repository."""
        return self.action in REMOVALS

    @property
    def quarantine_stage(self) -> QuarantineStage | None:
        """Where the image stands in the quarantine, read from the reason the quarantine gave; None outside it (a
        blocked or skipped run's kept image is not waiting: it goes nowhere this run)."""
        main = self.main_reason
        if main.kind != "quarantine":
            return None
        return "enters" if self.action == "archive" else "leaves" if self.action == "delete" else "waits"

    @property
    def main_reason(self) -> Reason:
        return main_reason_of(self.action, self.reasons)


_DECISION_FIELDS = set(Decision.model_fields)


# What BaseModel.__setstate__ writes, without its Python frame and its state dict.
_new_instance = object.__new__
_set_instance_dict = slot_writer(BaseModel, "__dict__")
_set_fields_set = slot_writer(BaseModel, "__pydantic_fields_set__")
_set_extra = slot_writer(BaseModel, "__pydantic_extra__")
_set_private = slot_writer(BaseModel, "__pydantic_private__")


def main_reason_of(action: Action, reasons: tuple[Reason, ...]) -> Reason:
    """The one reason a summary names for an action (a Decision's, or one side of a rules diff's change)."""
    if len(reasons) == 1:  # most images: each rule below names the only reason, found without a scan
        return reasons[0]
    if action == "restore":
        return _first_reason(reasons, "in-use") or reasons[0]
    if action in REMOVALS:  # a quarantine names the rule it stands in for, and what it does instead
        return _first_reason(reasons, "quarantine") or _first_reason(reasons, "delete-rule") or reasons[0]
    return sorted(reasons, key=_protection_rank)[0]


def _first_reason(reasons: tuple[Reason, ...], kind: ReasonKind) -> Reason | None:
    return next((reason for reason in reasons if reason.kind == kind), None)


def _protection_rank(reason: Reason) -> int:
    """Where a kept image's reason stands in PROTECTION_ORDER; a kind it does not list comes last."""
    return PROTECTION_ORDER.index(reason.kind) if reason.kind in PROTECTION_ORDER else len(PROTECTION_ORDER)


class RepositorySummary(PlanModel):
    images: int
    kept: int
    deleted: int
    archived: int
    restored: int  # among the kept: in-use images restored from archive (or, in dry run, that would be)
    bytes_reclaimed: int


class RepositoryPlan(PlanModel):
    repository_name: str
    policy: str | None = Field(default=None, description="The policy that applies, e.g. policies[0].")
    skipped: str | None = None
    # Every deletion here also deletes in these registries (replication rules with deleteReplication).
    deletion_replicates_to: tuple[ReplicaRegistry, ...] = ()
    images: tuple[Decision, ...]

    @property
    def summary(self) -> RepositorySummary:
        actions = Counter(d.action for d in self.images)
        return RepositorySummary(
            images=len(self.images),
            kept=len(self.images) - actions["delete"] - actions["archive"],
            deleted=actions["delete"],
            archived=actions["archive"],
            restored=actions["restore"],
            bytes_reclaimed=sum(d.image_size_in_bytes or 0 for d in self.images if d.action == "delete"),
        )


class Plan(PlanModel):
    generated_at: UtcDatetime
    dry_run: bool
    registry_id: str | None = None
    region: str | None = None
    blocked: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    repositories: tuple[RepositoryPlan, ...]

    @property
    def registry(self) -> RegistryCoordinates:
        """The registry planned: its account and Region (a plan does not keep its replication rules)."""
        return RegistryCoordinates(self.registry_id, self.region)

    @property
    def has_problems(self) -> bool:
        """Blocked or any repository skipped: the CLI exits 1."""
        return bool(self.blocked) or any(repo.skipped for repo in self.repositories)

    def to_json_dict(self) -> dict[str, object]:
        return self.document().model_dump(mode="json", by_alias=True)

    def document(self) -> "PlanDocument":
        """The plan as `plan --format json` writes it: each repository with its summary. The models are shared,
        not copied, so that pydantic's own encoder writes the document of a large plan."""
        from ecr_retention.domain.planning.plan_document import PlanDocument, RepositoryPlanDocument

        repositories = tuple(RepositoryPlanDocument.model_construct(**dict(repo)) for repo in self.repositories)
        return PlanDocument.model_construct(**{**dict(self), "repositories": repositories})
