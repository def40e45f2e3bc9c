"""The plan's JSON document (`ecr-retention plan --format json`, Plan.document): the plan, each repository with its
summary. Apart from plan.py, so that the functions that plan or report a run (the evaluate and report steps) build
neither model at their cold start: only the CLI writes the document."""

from pydantic import computed_field

from ecr_retention.domain.planning.plan import Plan, RepositoryPlan, RepositorySummary


class RepositoryPlanDocument(RepositoryPlan):
    """A repository's plan in the plan's JSON document: its fields, then its summary (last, as it always was). Only
    the document adds the summary: a repository's plan stored or sent elsewhere (a worker's result) has none."""

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form: mypy cannot type it
    @property
    def summary(self) -> RepositorySummary:
        return super().summary


class PlanDocument(Plan):
    """The plan's JSON document (`Plan.document`): the plan, each repository with its summary."""

    repositories: tuple[RepositoryPlanDocument, ...]
