"""The sentinel (docs/sentinel.md): EventBridge rules for every removal and archive of an image (ECR Image Action DELETE
and UPDATE_STORAGE_CLASS to ARCHIVE, a native lifecycle policy's PolicyExecutionEvent) and, with a trail, the API
calls PutLifecyclePolicy and BatchDeleteImage, each delivered to one function that records, matches what runs, restores
an archived in-use image in a managed repository and alerts on the report topic.

The rules' patterns are layout.py's, which the demo's emulator routes events with too. The sentinel never deletes: its
one change to the registry is UpdateImageStorageClass, and IAM allows it only in the repositories a policy manages.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from ecr_retention import layout
from ecr_retention.cdk import access, constants, nag, queues, repository_scope
from ecr_retention.cdk.event_provenance import from_this_account, with_read_only_events
from ecr_retention.cdk.pipeline_function import PipelineFunction
from ecr_retention.cdk.repository_scope import PrunedRegions
from ecr_retention.domain.config import RetentionConfig

# Confirm what a removal broke, in any repository a workload pulls from (a reference into a repository no policy
# manages is told too): DescribeImages only.
READ_ACTIONS = ("ecr:DescribeImages",)
# The doctor on a new lifecycle policy (with a trail) snapshots the repository: index manifests not yet cached are
# read with BatchGetImage, only in the repositories a policy manages (in another one the doctor reads the cache only:
# BatchGetImage would let the sentinel read every manifest of the registry).
DOCTOR_ACTIONS = ("ecr:BatchGetImage",)
# ... and reads the policy now in force from ECR, in any repository (the event's own policy text is not trusted:
# docs/security.md "Events are checked for where they came from").
POLICY_READ_ACTIONS = ("ecr:GetLifecyclePolicy",)
# Restore an archived in-use image: only where a policy applies (as a run would).
RESTORE_ACTIONS = ("ecr:UpdateImageStorageClass",)


def event_pattern(pattern: Mapping[str, object]) -> events.EventPattern:
    """layout.py's pattern (EventBridge's JSON form) as the CDK's; a pattern without `source` matches every service."""
    detail = pattern.get("detail")
    source = pattern.get("source")
    return events.EventPattern(
        source=list(source) if isinstance(source, list) else None,
        detail_type=list(pattern["detail-type"]),  # type: ignore[call-overload]
        detail=dict(detail) if isinstance(detail, Mapping) else None,
    )


def watched_events(api_calls: bool) -> dict[str, tuple[Mapping[str, object], str]]:
    """The sentinel's rules on ECR's events (layout.py's patterns), by rule name, with what each tells: the home
    Region's rules, and those that forward another pruned Region's events to it (infra.region_forwarder)."""
    wanted: dict[str, tuple[Mapping[str, object], str]] = {
        "ImageDeleted": (layout.IMAGE_DELETED_PATTERN, "an image or a tag was deleted"),
        "ImageArchived": (layout.IMAGE_ARCHIVED_PATTERN, "an image was archived"),
        "LifecycleAction": (layout.LIFECYCLE_ACTION_PATTERN, "a native lifecycle policy acted"),
    }
    if api_calls:
        wanted["ApiCall"] = (layout.API_CALL_PATTERN, "PutLifecyclePolicy or BatchDeleteImage was called")
    return wanted


# The sentinel's rules whose events CloudTrail marks read-only (a lifecycle policy's PolicyExecutionEvent): in the
# state that certainly delivers them (infra/event_provenance.py), at home and where they are forwarded from.
READ_ONLY_RULES = frozenset({"LifecycleAction"})


# A guard rule's delivery: the whole event (`aws.events.event.json`, detail included) under layout.GUARD_DELIVERY_KEY.
GUARD_INPUT_TEMPLATE = f'{{"{layout.GUARD_DELIVERY_KEY}": <aws.events.event.json>}}'
# A guard rule in state ALL_MANAGEMENT_EVENTS (infra/event_provenance.py) also matches read-only management events
# (AssumeRole is one; so is a Get or List made as the break-glass role).


class Sentinel(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RetentionConfig,
        code: lambda_.Code,
        environment: Mapping[str, str],
        bucket: s3.IBucket,
        report_topic: sns.ITopic,
        report_topic_key: kms.IKey,
        api_calls: bool,
        regions: PrunedRegions,
        break_glass_role_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # Events the function failed on after its retries, and events EventBridge could not deliver.
        self.dead_letters = queues.dead_letter_queue(self, "SentinelDeadLetters")
        self.sentinel = PipelineFunction(
            self,
            "Sentinel",
            name="sentinel",
            description="ecr-retention: tell at once when something removes or archives an image a workload runs",
            code=code,
            environment={**environment, layout.TOPIC_ARN_VARIABLE: report_topic.topic_arn},
            dead_letter_queue=self.dead_letters,
        )
        # Its records of removals/ name its role, and it counts only records that do (services/removals.py).
        self.sentinel.function.add_environment(layout.SENTINEL_ROLE_ARN_VARIABLE, self.sentinel.role.role_arn)
        self.sentinel.function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS)
        )
        self._grant_registry(config, regions, doctor=api_calls)
        self._grant_bucket(bucket, doctor=api_calls)
        self._grant_topic(report_topic, report_topic_key)
        self.rules = self._rules(api_calls)
        if api_calls:
            self.rules.update(self._guard_rules(bucket, break_glass_role_arn))

    @property
    def function(self) -> lambda_.Function:
        return self.sentinel.function

    def _rules(self, api_calls: bool) -> dict[str, events.Rule]:
        rules = {}
        for name, (pattern, what) in watched_events(api_calls).items():
            rule = events.Rule(
                self,
                name,
                description=f"ecr-retention sentinel: {what}; tell it when a workload runs the image",
                event_pattern=event_pattern(pattern),
                targets=[self._target()],
            )
            rules[name] = from_this_account(with_read_only_events(rule) if name in READ_ONLY_RULES else rule)
        return rules

    def _target(self) -> targets.LambdaFunction:
        return targets.LambdaFunction(
            self.function,
            dead_letter_queue=self.dead_letters,
            retry_attempts=constants.DELIVERY_RETRY_ATTEMPTS,
            max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS),
        )

    def _guard_rules(self, bucket: s3.IBucket, break_glass_role_arn: str | None) -> dict[str, events.Rule]:
        """With a trail: every call that changes the inventory bucket's own guards, and (with a break-glass role) its
        assumption and every call made as it, each alerted once by the sentinel (handlers/guard.py)."""
        wanted: dict[str, tuple[dict[str, object], str, bool]] = {
            "BucketGuardChanged": (
                layout.bucket_guard_pattern(bucket.bucket_name),
                "the inventory bucket's policy, lifecycle, versioning or ownership was changed or a change tried",
                False,
            )
        }
        if break_glass_role_arn is not None:
            wanted["BreakGlassAssumed"] = (
                layout.break_glass_assumed_pattern(break_glass_role_arn),
                "the break-glass role was assumed",
                True,
            )
            wanted["BreakGlassUsed"] = (
                layout.break_glass_used_pattern(break_glass_role_arn),
                "a call was made as the break-glass role",
                True,
            )
        rules = {}
        for name, (pattern, what, read_only_too) in wanted.items():
            rule = events.Rule(
                self,
                name,
                description=f"ecr-retention sentinel: {what}; alert",
                event_pattern=event_pattern(pattern),
                targets=[self._target()],
            )
            cfn_rule = rule.node.default_child
            assert isinstance(cfn_rule, events.CfnRule)
            cfn_rule.add_property_override("Targets.0.InputTransformer", {"InputTemplate": GUARD_INPUT_TEMPLATE})
            rules[name] = from_this_account(with_read_only_events(rule) if read_only_too else rule)
        return rules

    def _grant_registry(self, config: RetentionConfig, regions: PrunedRegions, *, doctor: bool) -> None:
        role = self.sentinel.role
        every_repository = regions.everywhere([access.ALL_REPOSITORIES])
        access.grant_ecr(role, self, (*READ_ACTIONS, *(POLICY_READ_ACTIONS if doctor else ())), every_repository)
        access.acknowledge_repository_patterns(
            role,
            every_repository,
            "lets the sentinel confirm a removal in any repository a workload pulls from (DescribeImages)"
            + (" and read a lifecycle policy just put there (GetLifecyclePolicy)" if doctor else "")
            + "; it changes nothing there",
        )
        managed = regions.scoped(lambda region: repository_scope.managed_patterns(config, region))
        access.grant_ecr(role, self, (*RESTORE_ACTIONS, *(DOCTOR_ACTIONS if doctor else ())), managed)
        access.acknowledge_repository_patterns(
            role,
            managed,
            "is a policy's in the rules file; only there it restores"
            + (" and reads the doctor's uncached index manifests" if doctor else ""),
        )
        describe_registry = iam.Policy(
            self,
            "ReadReplication",
            roles=[role],
            statements=[iam.PolicyStatement(actions=["ecr:DescribeRegistry"], resources=["*"])],
        )
        nag.acknowledge(
            describe_registry,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:DescribeRegistry supports no resource-level permissions; the sentinel reads which destinations a "
            "deletion replicates to, so that a workload running a replica is told too.",
        )

    def _grant_bucket(self, bucket: s3.IBucket, *, doctor: bool) -> None:
        role = self.sentinel.role
        in_use = f"{constants.IN_USE_PREFIX}*"
        cache = f"{constants.MANIFEST_CACHE_PREFIX}*"
        removals = f"{constants.REMOVALS_PREFIX}*"
        # A missing memory or manifest cache entry must read as NoSuchKey (nothing there), not AccessDenied:
        # ListBucket unconditioned, as the evaluation's (the s3:prefix condition key is absent from a GetObject).
        role.add_to_principal_policy(access.list_statement(bucket, None))
        role.add_to_principal_policy(
            access.objects_statement(
                bucket,
                ["s3:GetObject"],
                [in_use, cache, removals, layout.IN_USE_MEMORY_KEY, f"{constants.HOLDS_PREFIX}*"],
            )
        )
        written = [removals, cache] if doctor else [removals]
        role.add_to_principal_policy(access.objects_statement(bucket, ["s3:PutObject"], written))
        access.acknowledge_key_patterns(
            role,
            bucket,
            {
                in_use: "Every cluster's in-use manifest is read: each names what its workloads run.",
                cache: "In-use index manifests are read by digest to know their children"
                + (" (and the doctor caches those it reads)." if doctor else "."),
                removals: "Each removal is recorded under its repository, and the recent ones are read to alert once.",
                f"{constants.HOLDS_PREFIX}*": "Every hold is read: a removal of a held image is alerted.",
            },
        )

    def _grant_topic(self, topic: sns.ITopic, key: kms.IKey) -> None:
        role = self.sentinel.role
        role.add_to_principal_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn]))
        # Publishing to a topic encrypted with a customer key: SNS asks KMS for a data key as the publisher.
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[key.key_arn])
        )
