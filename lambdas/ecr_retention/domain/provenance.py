"""Where an event came from (docs/safety.md section 30): an event of another account than this deployment's is told in
one line and changes nothing. The stack's rules already match only this account's events (infra/event_provenance.py);
the functions check again, because a rule can be edited by hand and a bus that admits other accounts delivers their
genuine AWS events (PutEvents cannot forge an `aws.*` source, but another account's own ECR events are genuine).

Pure: the handlers and the sentinel's service read `account` from EventBridge's envelope and compare it here with the
function's own account (the registry it watches, REGISTRY_ID, which the stack sets; or the account of the invoked
function's ARN): no STS call."""

from __future__ import annotations


def foreign_event(what: str, event_id: str, account: str | None, own_account: str) -> str | None:
    """The one line that refuses an event of another account; None when it is this account's (or, outside EventBridge,
    names none: a test's or the demo's hand-made event)."""
    if account is None or account == own_account:
        return None
    return (
        f"{what} {event_id} came from account {account}, not this deployment's ({own_account}): nothing done "
        "(a rule or an event bus policy lets another account's events in; docs/security.md)"
    )


def account_of_arn(arn: str) -> str:
    """The account field of an ARN (`arn:partition:service:region:account:...`): the invoked function's own."""
    parts = arn.split(":")
    if len(parts) < 6 or not parts[4].isdigit():
        raise ValueError(f"not an ARN with an account: {arn!r}")
    return parts[4]
