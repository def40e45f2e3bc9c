"""Step 5 of the demo: something else deletes what runs, and the sentinel tells.

After the real run, a teammate puts a native lifecycle policy on `app` (PutLifecyclePolicy): the `dev` incident's
(keep the newest three `*.*` images), which takes the image `dev` runs, since it carries a version tag too. ECR's
lifecycle evaluation, run now by the emulator (`emulator.lifecycle`), expires what the policy selects and emits its
PolicyExecutionEvents; the stack's rules (`emulator.eventbridge`, layout's patterns) deliver them to the sentinel
function, which alerts on the report topic; the demo prints the alert as the subscribed queue received it. Then the
next sweep, in dry run, reports the reference as `in-use-missing`, with when and by what (the sentinel's record of
removals), and the demo prints those lines of its SNS summary. demo/verify.py checks all of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ecr_retention.tables import printable
from ecr_retention_dev.demo.pipeline import Invocation, deployed
from ecr_retention_dev.demo.registry import DemoRegistry
from ecr_retention_dev.demo.verify import Alert, Verification, read_state, verify_native_policy
from ecr_retention_dev.emulator.eventbridge import EventRoutes
from ecr_retention_dev.emulator.lifecycle import LifecycleExecution, execute_lifecycle_policy
from ecr_retention_dev.scenario import REGION, TOPIC, incident_policy

if TYPE_CHECKING:
    from ecr_retention_dev.demo.runner import Demo

REPOSITORY = "app"
# The teammate's policy: the `dev` incident's count rule alone.
TEAMMATE_POLICY = incident_policy(description="keep the last 3 releases")
MISSING_HEADING = "In-use images MISSING from the registry"  # domain/reporting/summary.py in_use_missing_lines


def native_policy_step(
    demo: Demo, registry: DemoRegistry, dry_rules: str, *, emptied: str | None = None
) -> Verification:
    """`emptied`: the cluster whose manifest --empty-manifest emptied before the real sweep (it stays empty): the
    sentinel's alert and the sweep's finding must say that the in-use memory speaks for it."""
    demo.write("")
    demo.write(
        f"5. Later, a teammate replaces the native lifecycle policy of {REPOSITORY} (PutLifecyclePolicy) with one "
        "rule: keep the 3 newest `*.*` images"
    )
    if emptied is not None:
        demo.write(
            f"   in-use/{emptied}.json is still the empty manifest of --empty-manifest: what {emptied} runs is known "
            "from the in-use memory"
        )
    routes = EventRoutes(demo.emulator.client("events"), demo.sqs).create()
    before = read_state(demo.ecr, registry.repositories, datetime.now(UTC))
    demo.ecr.put_lifecycle_policy(repositoryName=REPOSITORY, lifecyclePolicyText=TEAMMATE_POLICY)
    execution = execute_lifecycle_policy(demo.ecr, REPOSITORY, registry_id=demo.account, region=REGION)
    show_execution(demo, registry, execution)
    routes.emit(execution.events)
    delivered = routes.delivered()
    with deployed(demo.deployment(dry_rules)) as functions:
        watched = [functions.sentinel(event) for event in delivered]
        show_watched(demo, len(delivered), watched)
        alerts = received_alerts(demo)
        show_alerts(demo, alerts)
        sweep = functions.sweep(demo.read_object)
    assert sweep.report is not None
    demo.write("")
    demo.write(f"   The next sweep, dry run: report {json.dumps(sweep.report.result)}")
    report = demo.stored_report(sweep, "after-policy", "after the native policy")
    show_missing(demo, str(demo.received_message()["Message"]))
    after = read_state(demo.ecr, registry.repositories, datetime.now(UTC))
    verification = verify_native_policy(registry, before, after, execution, alerts, report, emptied=emptied)
    show_checks(demo, verification)
    return verification


def show_execution(demo: Demo, registry: DemoRegistry, execution: LifecycleExecution) -> None:
    running = users_of(registry)
    taken = [digest for digest in execution.expired if digest in running]
    demo.write(
        f"   ECR applies it (within 24 hours; the emulator now, with ecr-retention's lifecycle simulator): "
        f"{len(execution.expired)} images expired by rule 1, {len(taken)} of them in use:"
    )
    for digest in taken:
        demo.write(f"     {printable(registry.labelled(REPOSITORY, digest))} ({', '.join(running[digest])})")
    demo.write(
        f"   ECR sends {len(execution.events)} PolicyExecutionEvents (CloudTrail service events, at most 10 images "
        "each) to EventBridge"
    )


def users_of(registry: DemoRegistry) -> dict[str, list[str]]:
    """app's digests that something runs, with what runs them: clusters, the replica's cluster, ECS and Lambda."""
    users: dict[str, set[str]] = {}
    for (repository, digest), user in running_in(registry):
        if repository == REPOSITORY:
            users.setdefault(digest, set()).add(user)
    return {digest: sorted(names) for digest, names in users.items()}


def running_in(registry: DemoRegistry) -> Iterator[tuple[tuple[str, str], str]]:
    for key, entries in registry.in_use_digests().items():
        yield from ((key, f"{entry.cluster}'s {entry.workload}") for entry in entries)
    for key, entries in registry.replicated_in_use().items():
        yield from ((key, f"{entry.cluster}'s {entry.workload}, from the replica") for entry in entries)
    for workload in registry.aws_workloads:
        yield (workload.repository, workload.digest), f"{workload.kind} {workload.name}"


def show_watched(demo: Demo, delivered: int, watched: list[Invocation]) -> None:
    demo.write(f"   EventBridge: the sentinel's rule (LIFECYCLE_ACTION_PATTERN) delivered {delivered} to the function")
    for invocation in watched:
        result = invocation.result
        broken = result["broken"]
        demo.write(
            f"   sentinel recorded {result['recorded']}, broken {len(broken) if isinstance(broken, list) else 0}, "
            f"alerted {str(result['alerted']).lower()}"
        )


def received_alerts(demo: Demo) -> list[Alert]:
    """Every message the queue subscribed to the report topic holds now: the sentinel's alerts."""
    alerts: list[Alert] = []
    while True:
        messages = demo.sqs.receive_message(QueueUrl=demo.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return alerts
        for message in messages:
            envelope: dict[str, Any] = json.loads(message["Body"])
            alerts.append(Alert(str(envelope.get("Subject", "")), str(envelope["Message"])))
            demo.sqs.delete_message(QueueUrl=demo.queue_url, ReceiptHandle=message["ReceiptHandle"])


def show_alerts(demo: Demo, alerts: list[Alert]) -> None:
    """Every alert's subject, then the alert that names app:dev in full."""
    demo.write("")
    demo.write(f"   The sentinel's alerts ({len(alerts)}), as the queue subscribed to {TOPIC} received them:")
    for alert in alerts:
        demo.write(f"   Subject: {printable(alert.subject)}")
    shown = next((alert for alert in alerts if alert.names(f"{REPOSITORY}:dev")), None)
    if shown is not None:
        demo.write("")
        demo.write(f"   The alert for {REPOSITORY}:dev, in full:")
        for line in [f"Subject: {shown.subject}", "", *shown.message.rstrip("\n").split("\n")]:
            demo.write(printable(line))


def show_missing(demo: Demo, summary: str) -> None:
    """The in-use-missing lines of the sweep's SNS summary (the report's inUseMissing, the page and the sheet hold
    the same findings)."""
    demo.write("")
    demo.write("   The sweep's in-use-missing lines, as the queue subscribed to the report topic received its summary:")
    for line in section(summary.split("\n"), MISSING_HEADING) or ["(none)"]:
        demo.write(printable(line))


def section(lines: list[str], heading: str) -> list[str]:
    """The lines from the one that starts with `heading` to the next blank line."""
    start = next((n for n, line in enumerate(lines) if line.startswith(heading)), len(lines))
    end = next((n for n in range(start, len(lines)) if not lines[n].strip()), len(lines))
    return lines[start:end]


def show_checks(demo: Demo, verification: Verification) -> None:
    demo.write("")
    demo.write("   Verification, read back from the emulator:")
    for check in verification.checks:
        demo.write(f"   {'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
        for offender in check.offenders[:10]:
            demo.write(f"          {printable(offender)}")
    if verification.ok:
        demo.write(
            f"verified: the sentinel named what runs {REPOSITORY}:dev, the image and the rule; the sweep reports it "
            "missing, when and by what; nothing else changed"
        )
    else:
        demo.write("NOT VERIFIED: see the failed checks above")
