"""Where the stack's events may come from (docs/security.md "Events are checked for where they came from").

Every rule of the deployment on ECR's, S3's and STS's events (the push trigger's, the sentinel's and its guards', the
tagger's, and each other Region's forwarding rules) matches only events whose `account` is this deployment's: the
stack's own account, as a deploy-time token when the stack names none. No rule of the deployment legitimately sees
another account's events: it prunes this account's registries only, a spoke's exporter writes into this account's
bucket (S3 tells the bucket owner, this account), the break-glass role and the bucket are this account's, and the
forwarders run in this account too. A default event bus that admits other accounts (an organisation-wide bus policy,
common in shared-services accounts) would otherwise hand their genuine ECR events to the functions as this registry's.

The functions check again (handlers/push.py, services/sentinel.py, handlers/guard.py): a rule edited by hand, or an
event put through another path, is refused with one warning line.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_events as events

# A rule in this state also matches read-only management events. Real PolicyExecutionEvents are marked
# `readOnly: true`, and EventBridge documents read-only CloudTrail events as delivered only to rules in this state
# (those not named Describe/Get/List "may" arrive without it): the state that is certain is the right one, and the
# lifecycle rule's pattern is narrow (one source, one event name), so it matches nothing more.
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail-management.html
ALL_MANAGEMENT_EVENTS = "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"


def from_this_account(rule: events.Rule) -> events.Rule:
    """The rule, narrowed to the events of its stack's account (merged into its pattern)."""
    rule.add_event_pattern(account=[Stack.of(rule).account])
    return rule


def with_read_only_events(rule: events.Rule) -> events.Rule:
    """The rule, in the state that also delivers read-only CloudTrail management events (CfnRule's State; the L2
    Rule knows only enabled or disabled)."""
    cfn_rule = rule.node.default_child
    assert isinstance(cfn_rule, events.CfnRule)
    cfn_rule.add_property_override("State", ALL_MANAGEMENT_EVENTS)
    return rule
