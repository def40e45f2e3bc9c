"""The stacks that bring another pruned Region's ECR events to the home Region (docs/regions.md).

ECR's events reach EventBridge in the Region of the registry only, and the push trigger's and the sentinel's rules are
in the home Region, with the functions. So for each pruned Region other than the home one the app creates a small stack
in that Region (EcrRetentionEvents-<region>, same account): one rule per pattern of the home rules (the push trigger's,
the sentinel's, built by the same functions), each targeting the home Region's default event bus. The CDK gives the
rules one role, which may events:PutEvents on exactly that bus and nothing else. A forwarded event keeps its own `region`, and the home
rules match by source, detail-type and detail, never by Region, so the home functions see it as they see their own.
The stack also registers, in its Region's registry, the pull-time update exclusions of the home roles that read
manifests there (infra/pull_time_exclusions.py), so it is deployed after the home stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from ecr_retention.cdk import constants
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.event_provenance import from_this_account, with_read_only_events
from ecr_retention.cdk.pull_time_exclusions import RegionalPullTimeExclusions
from ecr_retention.cdk.push_trigger import push_event_pattern
from ecr_retention.cdk.retention import EcrRetention
from ecr_retention.cdk.sentinel import READ_ONLY_RULES, event_pattern, watched_events
from ecr_retention.domain.config import RetentionConfig

PUSHED = "Pushed"


def forwarded_events(
    config: RetentionConfig, settings: DeploySettings, region: str
) -> dict[str, tuple[events.EventPattern, str]]:
    """The home Region's ECR rules, by name, with what each tells: the push trigger's (its repository filter narrowed
    to the policies that apply in `region`; none when the push trigger is off or no policy applies there) and the
    sentinel's."""
    forwarded: dict[str, tuple[events.EventPattern, str]] = {}
    if settings.push_trigger_enabled:
        repository_filter = settings.push_repository_filter(config, region)
        if repository_filter != []:
            forwarded[PUSHED] = (
                push_event_pattern(repository_filter),
                "an image was pushed to a repository a policy manages",
            )
    for name, (pattern, what) in watched_events(settings.cloud_trail_management_events).items():
        forwarded[name] = (event_pattern(pattern), what)
    return forwarded


def home_event_bus_arn(scope: Construct, home_region: str) -> str:
    """arn:<partition>:events:<home>:<account>:event-bus/default, in this stack's partition and account."""
    return Stack.of(scope).format_arn(
        service="events", region=home_region, resource="event-bus", resource_name="default"
    )


class RegionForwarderStack(Stack):
    """One pruned Region's ECR events, forwarded to the home Region's default event bus."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        home_region: str,
        forwarded: Mapping[str, tuple[events.EventPattern, str]],
        excluded_roles: Mapping[str, str],
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.home_region = home_region
        self.home_bus = events.EventBus.from_event_bus_arn(self, "HomeBus", home_event_bus_arn(self, home_region))
        # One role for every rule (the CDK would make one per rule): events:PutEvents on the home bus only, assumed
        # only by EventBridge for a rule of this account in this Region (aws:SourceAccount, aws:SourceArn: EventBridge's
        # cross-service confused deputy prevention), so that no rule elsewhere can be given it.
        self.role = iam.Role(
            self,
            "ForwardToHome",
            assumed_by=iam.ServicePrincipal("events.amazonaws.com").with_conditions(forwarder_trust_conditions(self)),
            description=f"ecr-retention: put this Region's ECR events on {home_region}'s default event bus",
        )
        self.home_bus.grant_put_events_to(self.role)
        self.rules = {name: self._rule(name, pattern, what) for name, (pattern, what) in forwarded.items()}
        # This Region's registry excludes the home roles that read manifests here from pull-time updates, as the home
        # Region's does (infra/pull_time_exclusions.py).
        self.exclusions = RegionalPullTimeExclusions(self, "PullTimeExclusions", role_names=excluded_roles)

    def _rule(self, name: str, pattern: events.EventPattern, what: str) -> events.Rule:
        """This account's events only (infra/event_provenance.py); the lifecycle rule also delivers read-only events."""
        rule = events.Rule(
            self,
            name,
            description=f"ecr-retention: to the home Region's ({self.home_region}) default event bus: {what}",
            event_pattern=pattern,
            targets=[targets.EventBus(self.home_bus, role=self.role)],
        )
        return from_this_account(with_read_only_events(rule) if name in READ_ONLY_RULES else rule)


def forwarder_trust_conditions(stack: Stack) -> dict[str, Any]:
    """EventBridge, for a rule of the stack's account and Region (on its default bus: rule/<name>)."""
    return {
        "StringEquals": {"aws:SourceAccount": stack.account},
        "ArnLike": {"aws:SourceArn": stack.format_arn(service="events", resource="rule", resource_name="*")},
    }


def forwarder_stacks(scope: Construct, home: EcrRetention) -> list[RegionForwarderStack]:
    """A forwarding stack for each pruned Region but the home one (none for a single-Region deployment), in `scope`
    (the app), each deployed after `home`'s stack."""
    pruned = home.pruned_regions
    if pruned.home is None or not pruned.several:
        return []
    stacks = [
        RegionForwarderStack(
            scope,
            f"{constants.FORWARDER_STACK_PREFIX}{region}",
            home_region=pruned.home,
            forwarded=forwarded_events(home.config, home.settings, region),
            excluded_roles=home.exclusions.role_names,
            env=cdk.Environment(region=region),
            description=constants.FORWARDER_STACK_DESCRIPTION,
            tags=dict(constants.STACK_TAGS),
        )
        for region in pruned.others
    ]
    for stack in stacks:
        # Its exclusions name the home stack's roles: deployed after them (cdk deploy --all orders it).
        stack.add_stack_dependency(Stack.of(home), "its pull-time exclusions name the home stack's roles")
    return stacks
