"""The sentinel's alert on a change of the inventory bucket's own guards or a use of the break-glass role
(domain/sentinel/guard_events.py): one alert per delivered call on the report topic, marked like the sentinel's other alerts."""

from __future__ import annotations

from dataclasses import dataclass

from ecr_retention.domain.sentinel.alert import ALERT_ATTRIBUTES
from ecr_retention.domain.sentinel.guard_events import GuardCall, GuardKind, guard_body, guard_subject
from ecr_retention.ports import Notifier


@dataclass(frozen=True)
class GuardAlerted:
    kind: GuardKind
    event_id: str
    refused: bool

    def summary(self) -> dict[str, object]:
        return {"guard": self.kind, "eventId": self.event_id, "refused": self.refused, "alerted": True}


def alert_guard_call(call: GuardCall, *, notifier: Notifier) -> GuardAlerted:
    notifier.publish(guard_subject(call), guard_body(call), ALERT_ATTRIBUTES)
    return GuardAlerted(call.kind, call.event_id, refused=call.error_code is not None)
