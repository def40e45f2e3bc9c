"""The sentinel's EventBridge rules in the emulator: ECR's events routed as the stack routes them.

The stack's rules (infra) match `ecr_retention.layout`'s patterns on the default bus and invoke the sentinel function.
Here the same patterns are rules of moto's EventBridge, each with one SQS queue as its target, standing for the
function: what the queue receives is what EventBridge would have invoked the function with, and `delivered()` hands
each one over as the Lambda event.

moto's EventBridge is used as it is, not a matcher of our own: it matches everything these patterns use (exact strings
in lists, nested `detail` keys; tests/integration/emulator/test_sentinel_routing.py holds each pattern against the
events it must and must not match), and its PutEvents accepts `aws.*` sources, which AWS refuses to anyone but the
service itself; the emulator puts ECR's events as ECR would emit them. What moto gets wrong is the delivered event's
envelope: its default input template leaves out `account` (and would add its own `ingestion-time`): on delivery the
envelope is written back in EventBridge's fields and order, `account` being the rule's account.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ecr_retention import layout

PUT_EVENTS_BATCH = 10  # PutEvents takes at most 10 entries
ENVELOPE = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")

# The sentinel's rules as infra/sentinel.py creates them (ImageDeleted, ImageArchived, LifecycleAction: the same layout
# patterns); its ApiCall rule only with a trail (the context flag cloudTrailManagementEvents, off by default).
SENTINEL_RULES: dict[str, dict[str, object]] = {
    "ecr-retention-sentinel-image-deleted": layout.IMAGE_DELETED_PATTERN,
    "ecr-retention-sentinel-image-archived": layout.IMAGE_ARCHIVED_PATTERN,
    "ecr-retention-sentinel-lifecycle-action": layout.LIFECYCLE_ACTION_PATTERN,
}
API_CALL_RULE = ("ecr-retention-sentinel-api-call", layout.API_CALL_PATTERN)


class EventRoutingError(RuntimeError):
    """EventBridge refused an event the emulator put."""


@dataclass
class EventRoutes:
    """Rules on the emulator's default bus whose target is one queue; `emit` puts events as their source would,
    `delivered` returns what the rules delivered, as the target function receives it."""

    events: Any  # an EventBridge client of the emulator
    sqs: Any
    queue_name: str = "ecr-retention-sentinel-deliveries"
    rules: Mapping[str, Mapping[str, object]] = field(default_factory=lambda: dict(SENTINEL_RULES))
    queue_url: str = ""
    account: str = ""

    def create(self, *, api_calls: bool = False) -> EventRoutes:
        """The queue and the rules (`api_calls`: also the rule that needs a CloudTrail trail)."""
        self.queue_url = self.sqs.create_queue(QueueName=self.queue_name)["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        queue_arn = attributes["Attributes"]["QueueArn"]
        self.account = queue_arn.split(":")[4]
        rules = {**self.rules, **(dict([API_CALL_RULE]) if api_calls else {})}
        for name, pattern in rules.items():
            self.events.put_rule(Name=name, EventPattern=json.dumps(pattern), State="ENABLED")
            self.events.put_targets(Rule=name, Targets=[{"Id": "sentinel", "Arn": queue_arn}])
        self.rules = rules
        return self

    def emit(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Put events on the default bus (PutEvents, 10 entries a call) as their source emits them."""
        entries = [put_events_entry(event) for event in events]
        for start in range(0, len(entries), PUT_EVENTS_BATCH):
            answer = self.events.put_events(Entries=entries[start : start + PUT_EVENTS_BATCH])
            if answer.get("FailedEntryCount"):
                failed = [entry for entry in answer["Entries"] if "ErrorCode" in entry]
                raise EventRoutingError(f"PutEvents refused {len(failed)} events: {failed[0]}")

    def delivered(self) -> list[dict[str, Any]]:
        """Every event the rules delivered since the last call, in the order received, as the function's event."""
        received: list[dict[str, Any]] = []
        while True:
            messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return received
            for message in messages:
                received.append(as_delivered(json.loads(message["Body"]), self.account))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def put_events_entry(event: Mapping[str, Any]) -> dict[str, Any]:
    """The PutEvents entry that makes EventBridge deliver this event (its own id and account aside)."""
    return {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event["detail"]),
        "Resources": list(event.get("resources", [])),
        "Time": datetime.fromisoformat(str(event["time"]).replace("Z", "+00:00")),
    }


def as_delivered(event: Mapping[str, Any], account: str) -> dict[str, Any]:
    """What moto delivered, in EventBridge's envelope: its fields in their order, `account` the rule's."""
    return {key: account if key == "account" else event[key] for key in ENVELOPE}
