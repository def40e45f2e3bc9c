"""Batches keep each repository's isolation: the synthesized state machine on moto's interpreter (as
test_state_machine_on_moto.py runs it, its fixtures reused), the Map's child execution evaluating a batch of
repositories in one invocation.

- One repository whose evaluation raises inside the batch leaves no report (failed, "stored no report") and the
  batch's other repositories are evaluated in the same invocation.
- A batch whose invocation runs short of time stops before the repository it cannot finish, and the child execution
  evaluates what it left in invocations of their own, skipping the repositories the batch reported (never twice).
- A batch whose invocation crashed: test_state_machine_on_moto.test_a_crashed_worker_is_reported_failed_and_the_others_finish.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

# Imported before any test patches evaluate_step.run_work_item: the handler binds the name when first imported, and a
# patch in force then would stay in it for every later test of the process (the demo's, say).
import ecr_retention.handlers.evaluate  # noqa: F401
from ecr_retention.services import evaluate_step
from support.lambda_stack import FakeContext
from tests.integration.workflow.test_state_machine_on_moto import (
    World,
    deleted_tags,
    names,
    outcomes,
)
from tests.integration.workflow.test_state_machine_on_moto import synthesized as synthesized
from tests.integration.workflow.test_state_machine_on_moto import world as world

pytestmark = pytest.mark.slow


def evaluated_names(world: World) -> list[list[str]]:
    return [names(event) for handler, event in world.router.invocations if handler == "evaluate"]


def test_a_repository_that_raises_inside_a_batch_fails_alone(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate = evaluate_step.run_work_item

    def raising_for_app(*args: Any, **kwargs: Any) -> Any:
        if kwargs["repository"] == "app":
            raise RuntimeError("a defect in app's evaluation")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(evaluate_step, "run_work_item", raising_for_app)

    execution = world.run({"trigger": "schedule"})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert outcomes(report) == [("app", "failed"), ("team-a/api", "ok")]
    [failed] = [r for r in report["repositories"] if r["repositoryName"] == "app"]
    assert "raised RuntimeError: a defect in app's evaluation" in failed["error"]  # its failed report, stored
    assert deleted_tags(report, "team-a/api") == {"v1", "v2", "v3"}
    assert world.tags("app") == {"v1", "v2", "v3", "v4"}  # nothing of app deleted
    assert world.tags("team-a/api") == {"v4"}
    assert evaluated_names(world) == [["app", "team-a/api"]]  # one invocation: the batch went on


def test_a_batch_short_of_time_leaves_the_rest_to_invocations_of_their_own(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    remaining = {"ms": 600_000}
    monkeypatch.setattr(FakeContext, "get_remaining_time_in_millis", lambda self: remaining["ms"])
    evaluate = evaluate_step.run_work_item

    def slow_app(*args: Any, **kwargs: Any) -> Any:
        report = evaluate(*args, **kwargs)
        if kwargs["repository"] == "app":  # app took all but a minute of the invocation
            remaining["ms"] = 60_000
        return report

    monkeypatch.setattr(evaluate_step, "run_work_item", slow_app)

    def every_invocation_starts_afresh(handler: str, event: dict[str, Any]) -> bool:
        remaining["ms"] = 600_000
        return False  # crashes nothing

    world.router.crash = every_invocation_starts_afresh

    execution = world.run({"trigger": "schedule"})

    assert execution["status"] == "SUCCEEDED", execution
    report = world.report(execution)
    assert json.loads(execution["output"])["outcome"] == "ok"
    assert outcomes(report) == [("app", "ok"), ("team-a/api", "ok")]
    assert deleted_tags(report, "app") == {"v1", "v3"}
    assert deleted_tags(report, "team-a/api") == {"v1", "v2", "v3"}
    assert world.tags("app") == {"v2", "v4"}
    assert world.tags("team-a/api") == {"v4"}
    # The batch stopped after app; its child execution gave each repository of the batch an invocation of its own:
    # app's found app's report and did nothing, team-a/api's evaluated it.
    assert evaluated_names(world) == [["app", "team-a/api"], ["app"], ["team-a/api"]]
    events = world.event_types(execution)
    assert "MapRunSucceeded" in events
    assert events[-1] == "ExecutionSucceeded"
