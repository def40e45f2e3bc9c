"""The parts of a plan that a repository report holds too: an image's reasons (Reason) and the registries its
deletions reach (ReplicaRegistry). Apart from the plan's own models (plan.py: Decision, RepositoryPlan, Plan) so that
the report step, which reads repository reports and never a plan, builds none of those at its cold start
(tests/unit/test_handler_imports.py)."""

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass as pydantic_dataclass

from ecr_retention.domain.planning.plan_model import PlanModel
from ecr_retention.domain.planning.reasons import ReasonKind


@pydantic_dataclass(
    frozen=True, slots=True, kw_only=True, config=ConfigDict(alias_generator=to_camel, populate_by_name=True)
)
class Reason:
    """Why a plan decides what it does for an image: the reason's kind, the rule that gave it (if a rule did) and its
    words. Validated as a model is, but held in slots: a plan and a run report hold one or more per image, and a
    model's per-instance dict and set of the fields given were most of a reason's memory."""

    kind: ReasonKind
    rule: str | None = None
    detail: str


class ReplicaRegistry(PlanModel):
    """A registry that a repository's deletions reach through delete replication."""

    registry_id: str
    region: str
    # The expected clusters (safety.clusters) whose manifests reference images of that registry: none means
    # that what runs there is protected only by manifests nobody requires to be fresh, or by none.
    expected_clusters: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.region} ({self.registry_id})"
