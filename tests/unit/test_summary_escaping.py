"""The SNS summary (the e-mail people read) escapes what comes from outside as the CLI tables do: a manifest's
workload and namespace, an image string, a registry's tag or error text cannot forge lines or reorder what is read
(`Deployment/x\\nOutcome: ok\\u202e`). The summary's own line breaks stay line breaks."""

from __future__ import annotations

import json
import re
from typing import Any

from ecr_retention.aws.sns_notifier import SnsNotifier
from ecr_retention.domain.inventory.manifest import read_inventory
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.reporting.run_report import report_of_plan
from ecr_retention.domain.reporting.summary import failure_summary, render_summary
from support.builders import HOST, NOW, config, digest, image, repository, snapshot

FORGED_WORKLOAD = "Deployment/x\nOutcome: ok\u202e"
FORGED_NAMESPACE = "prod\r\n\u2028team"
FORGED_TAG = "v0\nOutcome: ok"
# What must never reach the e-mail raw: C0 (but the summary's own \n), DEL, C1, separators and bidirectional controls.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def manifest_document() -> bytes:
    """An in-use manifest as a collector (or anyone who can write in-use/) stores it: the strict reader accepts
    these strings, since a workload and a namespace have no pattern."""
    return json.dumps(
        {
            "schemaVersion": 1,
            "cluster": "prod",
            "generatedAt": NOW.isoformat(),
            "complete": True,
            "images": [
                {
                    "image": f"{HOST}/app@{digest('a')}",
                    "digest": digest("a"),
                    "namespace": FORGED_NAMESPACE,
                    "workload": FORGED_WORKLOAD,
                    "container": "web\u202e",
                    "source": "pod",
                }
            ],
        }
    ).encode()


def forged_summary() -> str:
    cfg = config([{"delete": {"tags": ["*"], "older_than": "30d"}}], clusters=["prod"])
    snap = snapshot(repository("app", image("a", "v1", status="ARCHIVED"), image("b", FORGED_TAG)))
    inventory = read_inventory([("in-use/prod.json", manifest_document())])
    assert not inventory.problems  # the manifest is read: its images are protected, its strings shown
    report = report_of_plan(plan_registry(cfg, snap, inventory, NOW), run_id="r-1", manifests=())
    _, body = render_summary(report)
    return body


def test_a_forged_workload_in_a_manifest_stays_on_its_line_of_the_summary() -> None:
    body = forged_summary()

    [archived_line] = [line for line in body.splitlines() if "used by" in line]
    assert "Deployment/x\\nOutcome: ok\\u202e" in archived_line
    assert "prod\\r\\n\\u2028team" in archived_line
    assert [line for line in body.splitlines() if line.startswith("Outcome:")] == ["Outcome: ok"]
    assert not UNSAFE.search(body)


def test_a_forged_tag_from_the_registry_stays_on_its_line_of_the_summary() -> None:
    body = forged_summary()

    [deleted_line] = [line for line in body.splitlines() if "v0" in line]
    assert "v0\\nOutcome: ok" in deleted_line
    assert deleted_line.startswith("  ")  # a line of the list of deletions, not a line of its own


def test_the_published_message_is_the_escaped_summary() -> None:
    published: list[dict[str, Any]] = []

    class Client:
        def publish(self, **request: Any) -> None:
            published.append(request)

    body = forged_summary()
    SnsNotifier("arn:aws:sns:eu-west-1:123456789012:reports", Client()).publish("subject", body, {"outcome": "ok"})

    [request] = published
    assert request["Message"] == body
    assert not UNSAFE.search(request["Message"])


def test_the_failure_summary_escapes_the_error_text() -> None:
    _, body = failure_summary("r-1", "AccessDenied\nOutcome: ok\u202e")

    assert body == "Run r-1 failed before its report was stored:\n  AccessDenied\\nOutcome: ok\\u202e\n"
