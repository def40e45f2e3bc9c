"""The tagger: marks what runs in production whenever an exporter writes its manifest (S3 Object Created
under in-use/, through EventBridge) and on its own schedule (infra.schedules).

Which repositories it may tag: the policies' patterns, like the pruner. Tagging has no pattern of its own
(it tags whatever the selected clusters run), but a deployment tag only matters to a keep rule, and keep
rules apply only in repositories a policy manages; so the tagger skips images of other repositories
(ecr_retention.domain.planning.tagging) and IAM never lets it PutImage there. PutImage can move any tag of a
repository to any manifest in it, so `repository/*` would let this role rewrite `latest` anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ecr_retention.cdk import access, constants, repository_scope
from ecr_retention.cdk.event_provenance import from_this_account
from ecr_retention.cdk.pipeline_function import PipelineFunction
from ecr_retention.cdk.repository_scope import PrunedRegions
from ecr_retention.domain.config import RetentionConfig

# Re-read the deployed images (DescribeImages by digest), fetch each exact manifest (BatchGetImage) and put
# it back under the new tag (PutImage).
TAGGER_ECR_ACTIONS = ("ecr:BatchGetImage", "ecr:DescribeImages", "ecr:PutImage")


class Tagger(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: RetentionConfig,
        code: lambda_.Code,
        environment: Mapping[str, str],
        bucket: s3.IBucket,
        dead_letters: sqs.IQueue,
        regions: PrunedRegions,
    ) -> None:
        super().__init__(scope, construct_id)

        self.tagger = PipelineFunction(
            self,
            "Tagger",
            name="tagger",
            description="ecr-retention: tag the images the selected clusters run with <tag_prefix><unix seconds>",
            code=code,
            environment=environment,
            # Invoked asynchronously (EventBridge, Scheduler): an event that fails its retries lands here.
            dead_letter_queue=dead_letters,
        )
        self.tagger.function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS)
        )
        role = self.tagger.role
        # In each pruned Region's registry, the patterns of the policies that apply there.
        managed = regions.scoped(lambda region: repository_scope.managed_patterns(config, region))
        access.grant_ecr(role, self, TAGGER_ECR_ACTIONS, managed)
        access.acknowledge_repository_patterns(
            role, managed, "is a policy's in the rules file; only there do tags count"
        )
        in_use = f"{constants.IN_USE_PREFIX}*"
        role.add_to_principal_policy(access.list_statement(bucket, [constants.IN_USE_PREFIX]))
        role.add_to_principal_policy(access.objects_statement(bucket, ["s3:GetObject"], [in_use]))
        access.acknowledge_key_patterns(
            role, bucket, {in_use: "Every cluster's in-use manifest is read: the tagging rules select among them."}
        )

        self.manifest_written = events.Rule(
            self,
            "ManifestWritten",
            description="ecr-retention: an exporter wrote an in-use manifest; tag what it lists",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [bucket.bucket_name]},
                    "object": {"key": [{"prefix": constants.IN_USE_PREFIX}]},
                },
            ),
            targets=[
                targets.LambdaFunction(
                    self.tagger.function,
                    dead_letter_queue=dead_letters,
                    retry_attempts=constants.DELIVERY_RETRY_ATTEMPTS,
                    max_event_age=Duration.hours(constants.DELIVERY_MAX_EVENT_AGE_HOURS),
                )
            ],
        )
        from_this_account(self.manifest_written)  # infra/event_provenance.py

    @property
    def function(self) -> lambda_.Function:
        return self.tagger.function
