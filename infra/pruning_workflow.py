"""The pruning workflow: targets -> Distributed Map (evaluate a batch of repositories per invocation) -> report.

The targets step writes the run's work items to `runs/<runId>/targets.json`, the same items in batches
(ecr_retention.workflow_batches.WorkBatch, of workflow.repositories_per_batch) to `runs/<runId>/batches.json`, and
returns a small record (ecr_retention.run_records.RunRecord: runId, trigger, dryRun, startedAt, targetsKey, count,
bucket, batchesKey). The Map reads its items from batches.json (ItemReader), so the number of repositories never meets the 256 KB payload
limit; each batch goes to the evaluate function as it is, one child execution and one invocation per batch (a child
execution per repository made the orchestration cost more than the evaluations: docs/cost.md). The Map's results go
to S3 (ResultWriter) and are discarded from the state, so the report step receives the targets step's record.

Failures: a repository's evaluation that fails inside the worker is recorded by the worker itself (outcome `failed`,
stored under runs/<runId>/repositories/); one that raises gets a failed report naming the error and the batch goes
on (services.evaluate_step.run_work_batch). A batch's invocation is never retried whole. One that crashes (timeout, out of
memory), or stops before its time runs out (BatchOutOfTime), is caught in its child execution: an inline Map then
evaluates each repository of the batch in an invocation of its own, skipping those whose report is stored and those
whose evaluation this run began (services.evaluate_step.run_batch_member: they get a failed report), each caught too, so one repository that crashes
again never takes the others of its batch with it. The Map still tolerates a failed child
(ToleratedFailurePercentage 100), and the report step lists every target without a report as failed. If the Map
itself fails (its item reader cannot read batches.json, the map run is aborted), a Catch still sends the run to the
report step, which says what is missing; only a report step that fails fails the execution.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from ecr_retention import layout
from ecr_retention.cdk import access, constants, nag, repository_scope, state_objects
from ecr_retention.cdk.pipeline_function import PipelineFunction
from ecr_retention.cdk.repository_scope import PrunedRegions
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.layout import LEASE_TABLE_KEY, LEASE_TABLE_TTL_ATTRIBUTE
from ecr_retention.run_records import RUN_RECORD_FIELDS

# The lease table's schema is the adapter's (ecr_retention.aws.dynamodb_lease); tests keep them equal.

# What the evaluation does to the repositories the policies manage (services.evaluate): read every image
# (DescribeImages), the index manifests missing from the cache (BatchGetImage), the native lifecycle policy
# for the doctor (GetLifecyclePolicy), then delete (BatchDeleteImage) and archive (UpdateImageStorageClass).
EVALUATE_ECR_ACTIONS = (
    "ecr:BatchDeleteImage",
    "ecr:BatchGetImage",
    "ecr:DescribeImages",
    "ecr:GetLifecyclePolicy",
    "ecr:UpdateImageStorageClass",
)
# What the report step reads from ECR: the repository creation templates, whose lifecycle policies the doctor
# checks (services.templates). The action supports no resource-level permissions, so its resource is '*'.
REPORT_ECR_STAR_ACTIONS = ("ecr:DescribeRepositoryCreationTemplates",)
# The report step's in-use check: the referenced images of every repository, by image id (services.in_use_check).
REPORT_ECR_ACTIONS = ("ecr:DescribeImages",)
# What Step Functions needs to send execution logs to CloudWatch Logs (vended log delivery) and traces to X-Ray.
LOG_DELIVERY_ACTIONS = (
    "logs:CreateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:DescribeLogGroups",
    "logs:DescribeResourcePolicies",
    "logs:GetLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:UpdateLogDelivery",
)
STATES_XRAY_ACTIONS = (
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "xray:PutTelemetryRecords",
    "xray:PutTraceSegments",
)


def memory_versions_statement(bucket: s3.IBucket) -> iam.PolicyStatement:
    """A run that finds no in-use memory lists the memory key's versions: a delete marker on top means that it was
    deleted, not never written, which blocks the run until acknowledged (services/inventory.py). Only that key's
    versions: s3:prefix, which ListObjectVersions carries, is the key itself. (The acknowledgement of a deletion is
    found with the role's ListBucket.)"""
    return iam.PolicyStatement(
        actions=["s3:ListBucketVersions"],
        resources=[bucket.bucket_arn],
        conditions={"StringEquals": {"s3:prefix": layout.IN_USE_MEMORY_KEY}},
    )


class PruningWorkflow(Construct):
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
        map_concurrency: int,
        regions: PrunedRegions,
    ) -> None:
        super().__init__(scope, construct_id)
        self._bucket = bucket
        self._regions = regions

        self.lease_table = dynamodb.Table(
            self,
            "Leases",
            partition_key=dynamodb.Attribute(name=LEASE_TABLE_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=LEASE_TABLE_TTL_ATTRIBUTE,
            # Leases live minutes; a deleted table loses nothing a run needs after it ends.
            removal_policy=RemovalPolicy.DESTROY,
        )
        nag.acknowledge(
            self.lease_table,
            "AwsSolutions-DDB3",
            "The table holds short-lived repository leases (minutes); restoring an old state of it would only "
            "bring back expired leases, so point-in-time recovery protects nothing.",
        )

        self.targets = PipelineFunction(
            self,
            "Targets",
            name="targets",
            description="ecr-retention: choose the repositories of a run and write them for the Map",
            code=code,
            environment={**environment, layout.MAP_CONCURRENCY_VARIABLE: str(map_concurrency)},
        )
        self.evaluate = PipelineFunction(
            self,
            "Evaluate",
            name="evaluate",
            description="ecr-retention: evaluate a batch of repositories (plan, delete, archive), store each report",
            code=code,
            environment={**environment, layout.LEASE_TABLE_VARIABLE: self.lease_table.table_name},
        )
        self.report = PipelineFunction(
            self,
            "Report",
            name="report",
            description="ecr-retention: gather the repository reports, write the run report, publish the summary",
            code=code,
            environment={**environment, layout.TOPIC_ARN_VARIABLE: report_topic.topic_arn},
        )
        self._grant_targets()
        self._grant_evaluate(config)
        self._grant_report(report_topic, report_topic_key)
        if regions.several:
            self._grant_regional_run_files()
        self.state_machine = self._state_machine(map_concurrency)

    @property
    def functions(self) -> tuple[PipelineFunction, ...]:
        return (self.targets, self.evaluate, self.report)

    def _grant_targets(self) -> None:
        role = self.targets.role
        # A scheduled run lists every repository of each pruned registry; DescribeRepositories authorizes against
        # the repository resource type, so "every repository of this account and region" is as narrow as it gets.
        every_repository = self._regions.everywhere([access.ALL_REPOSITORIES])
        access.grant_ecr(role, self, ["ecr:DescribeRepositories"], every_repository)
        targets_file = f"{constants.RUNS_PREFIX}*/targets.json"
        batches_file = f"{constants.RUNS_PREFIX}*/batches.json"
        replication_file = f"{constants.RUNS_PREFIX}*/replication.json"
        role.add_to_principal_policy(
            access.objects_statement(self._bucket, ["s3:PutObject"], [targets_file, batches_file, replication_file])
        )
        # Every run reads where its deletions replicate to (DescribeRegistry), which describes the registry, not a
        # repository: a policy of its own, so that its acknowledgement names this one action.
        describe_registry = iam.Policy(
            self,
            "ReadReplication",
            roles=[role],
            statements=[iam.PolicyStatement(actions=["ecr:DescribeRegistry"], resources=["*"])],
        )
        nag.acknowledge(
            describe_registry,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:DescribeRegistry supports no resource-level permissions; it reads this account's replication "
            "rules, which say where every deletion of the run also deletes.",
        )
        access.acknowledge_repository_patterns(
            role, every_repository, "lets a scheduled run list every repository (DescribeRepositories only)"
        )
        access.acknowledge_key_patterns(
            role,
            self._bucket,
            {
                targets_file: "Each run writes its work items under its own run id.",
                batches_file: "Each run writes its work items in batches, for the Map, under its own run id.",
                replication_file: "Each run writes the replication rules it read under its own run id.",
            },
        )

    def _grant_evaluate(self, config: RetentionConfig) -> None:
        role = self.evaluate.role
        # Each Region's registry: the patterns of the policies that apply there.
        managed = self._regions.scoped(lambda region: repository_scope.managed_patterns(config, region))
        access.grant_ecr(role, self, EVALUATE_ECR_ACTIONS, managed)
        access.acknowledge_repository_patterns(role, managed, "is a policy's in the rules file")
        # By name even with repositoryTag: these repositories are not the rules file's, nobody tags them for it.
        tag_sources = dict(self._regions.scoped(lambda region: repository_scope.tag_source_patterns(config, region)))
        if tag_sources:
            # tag_in_repositories reads the tags of other repositories: DescribeImages only.
            access.grant_ecr(role, self, ["ecr:DescribeImages"], tag_sources)
            access.acknowledge_repository_patterns(role, tag_sources, "is named by a tag_in_repositories rule")
        listed = self._regions.scoped(
            lambda region: (
                [access.ALL_REPOSITORIES] if repository_scope.tag_sources_need_listing(config, region) else []
            )
        )
        if listed:
            access.grant_ecr(role, self, ["ecr:DescribeRepositories"], listed)
            access.acknowledge_repository_patterns(
                role,
                listed,
                "lets the evaluation list repositories to resolve a tag_in_repositories glob (DescribeRepositories)",
            )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                # GetItem: a batch member's invocation reads whether its batch's invocation began its evaluation.
                actions=["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"],
                resources=[self.lease_table.table_arn],
            )
        )
        # The manifest cache is read by digest and a miss is normal: without ListBucket, S3 answers a missing
        # key with AccessDenied, not NoSuchKey, so this role's ListBucket cannot be narrowed by prefix (the
        # s3:prefix condition key is absent from a GetObject request).
        role.add_to_principal_policy(access.list_statement(self._bucket, None))
        role.add_to_principal_policy(memory_versions_statement(self._bucket))
        # What it reads is declared with each state object (infra/state_objects.py): the manifest cache, the in-use
        # manifests, the run's replication record, and the in-use memory, which protects what the manifests named in
        # the last safety.in_use_grace (read, never written).
        role.add_to_principal_policy(
            access.objects_statement(self._bucket, ["s3:GetObject"], state_objects.read_keys("evaluate"))
        )
        cache = f"{constants.MANIFEST_CACHE_PREFIX}*"
        repository_reports = f"{constants.RUNS_PREFIX}*/repositories/*"
        batches_begun = f"{constants.RUNS_PREFIX}*/batches/*"
        snapshots = f"{layout.SNAPSHOTS_PREFIX}*"
        role.add_to_principal_policy(
            access.objects_statement(
                self._bucket, ["s3:PutObject"], [cache, repository_reports, batches_begun, snapshots]
            )
        )
        access.acknowledge_key_patterns(role, self._bucket, state_objects.read_reasons("evaluate"))
        access.acknowledge_key_patterns(
            role,
            self._bucket,
            {
                snapshots: "Each evaluation keeps its repository's snapshot for reviews (snapshots/<hash>.json).",
                repository_reports: "Each evaluation stores its repository report under its run id.",
                batches_begun: "Each batch's first invocation marks its batch begun under its run id.",
            },
        )

    def _grant_regional_run_files(self) -> None:
        """With several Regions: each evaluation tells the evaluations of the Regions its deletions replicate to what
        it deletes, before acting, and reads what they told (run_files.py, services/replicas.py). Every Region's
        replication rules are in the run's one replication record (runs/<id>/replication.json), granted as in a
        single-Region run. Statements of their own, so that a single-Region template stays as it was."""
        deletions = f"{constants.RUNS_PREFIX}*/deletions/*"
        role = self.evaluate.role
        role.add_to_principal_policy(
            access.objects_statement(self._bucket, ["s3:GetObject", "s3:PutObject"], [deletions])
        )
        access.acknowledge_key_patterns(
            role,
            self._bucket,
            {
                deletions: "Each evaluation tells, under its run id, what it deletes that replicates into another "
                "Region the run prunes, and reads what the run's other evaluations told.",
            },
        )

    def _grant_report(self, topic: sns.ITopic, key: kms.IKey) -> None:
        role = self.report.role
        runs = f"{constants.RUNS_PREFIX}*"
        in_use = f"{constants.IN_USE_PREFIX}*"
        reports = f"{constants.REPORTS_PREFIX}*"
        # The first run finds no memory, which must read as NoSuchKey (an empty memory), not AccessDenied (an
        # unreadable one, which would leave the memory unwritten): ListBucket unconditioned, as the evaluation's (the
        # s3:prefix condition key is absent from a GetObject request, so a narrowed ListBucket does not count).
        role.add_to_principal_policy(access.list_statement(self._bucket, None))
        role.add_to_principal_policy(memory_versions_statement(self._bucket))
        # The sentinel's record of removals, read when an in-use reference is missing, to say when and by what it went;
        # the holds, read with the inventory (the holds that end soon are named in the summary).
        removals = f"{layout.REMOVALS_PREFIX}*"
        role.add_to_principal_policy(
            access.objects_statement(
                self._bucket,
                ["s3:GetObject"],
                [runs, in_use, layout.IN_USE_MEMORY_KEY, removals, f"{constants.HOLDS_PREFIX}*"],
            )
        )
        # The run's in-use check (services.in_use_check): every in-use reference into the registry against what
        # exists, by image id (DescribeImages only), in any repository, managed or not: a workload may run any; in
        # every pruned Region.
        every_repository = self._regions.everywhere([access.ALL_REPOSITORIES])
        access.grant_ecr(role, self, REPORT_ECR_ACTIONS, every_repository)
        access.acknowledge_repository_patterns(
            role,
            every_repository,
            "lets the report step check that the images workloads run still exist in any repository (DescribeImages "
            "only: it reads, never changes)",
        )
        # The in-use memory: the report step is its only writer (the bucket policy refuses everyone else).
        role.add_to_principal_policy(
            access.objects_statement(self._bucket, ["s3:PutObject"], [reports, layout.IN_USE_MEMORY_KEY])
        )
        role.add_to_principal_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[topic.topic_arn]))
        self._grant_template_reads(role)
        # Publishing to a topic encrypted with a customer key: SNS asks KMS for a data key as the publisher.
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[key.key_arn])
        )
        access.acknowledge_key_patterns(
            role,
            self._bucket,
            {
                runs: "The run's targets and repository reports, listed and read by run id.",
                in_use: "The in-use manifests, read to publish each expected cluster's manifest age.",
                f"{constants.HOLDS_PREFIX}*": "Every hold, read with the inventory: those that end soon are named.",
                removals: "The sentinel's record of removals, one object per removal, read for the repositories "
                "where an in-use image is missing.",
                reports: "Run reports are written under their date and run id (reports/YYYY/MM/DD/<runId>.json, and the "
                "page and the sheet beside it, .html and .csv).",
            },
        )

    def _grant_template_reads(self, role: iam.IRole) -> None:
        """The doctor's pass over the registry's repository creation templates (services.templates), in a policy of
        its own: its '*' is acknowledged for this action only, apart from the role's X-Ray '*'."""
        policy = iam.Policy(
            self,
            "ReportTemplateReads",
            roles=[role],
            statements=[iam.PolicyStatement(actions=list(REPORT_ECR_STAR_ACTIONS), resources=["*"])],
        )
        nag.acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:DescribeRepositoryCreationTemplates supports no resource-level permissions and reads the "
            "registry's templates only (the report step checks their lifecycle policies); it changes nothing.",
        )

    def _state_machine(self, map_concurrency: int) -> sfn.StateMachine:
        choose = tasks.LambdaInvoke(
            self,
            "ChooseTargets",
            lambda_function=self.targets.function,
            payload_response_only=True,
            comment="Writes runs/<runId>/targets.json and returns the run's record",
        )
        each_repository = sfn.DistributedMap(
            self,
            "EvaluateEachRepository",
            item_reader=sfn.S3JsonItemReader(bucket=self._bucket, key=sfn.JsonPath.string_at("$.batchesKey")),
            max_concurrency=map_concurrency,
            # A failed or crashed evaluation never stops the others; the report step reports it.
            tolerated_failure_percentage=100,
            # Child executions may run as long as the evaluate function (10 min) and its fallback; Express workflows
            # stop at 5.
            map_execution_type=sfn.StateMachineType.STANDARD,
            result_writer_v2=sfn.ResultWriterV2(
                bucket=self._bucket,
                prefix=constants.MAP_RESULTS_PREFIX,
                writer_config=sfn.WriterConfig(
                    output_type=sfn.OutputType.JSON, transformation=sfn.Transformation.COMPACT
                ),
            ),
            result_path=sfn.JsonPath.DISCARD,
            comment="Batches from runs/<runId>/batches.json; results to runs/map-results/<map run>/",
        )
        each_repository.item_processor(self._evaluate_batch())
        report = tasks.LambdaInvoke(
            self,
            "ReportRun",
            lambda_function=self.report.function,
            payload_response_only=True,
            # The targets step's record (ecr_retention.run_records.RunRecord), field by field, so that anything else on
            # the state (the Map's caught error) never reaches a handler that refuses unknown fields.
            payload=sfn.TaskInput.from_object(
                {field: sfn.JsonPath.string_at(f"$.{field}") for field in RUN_RECORD_FIELDS}
            ),
            comment="Lists every target without a repository report as failed",
        )
        each_repository.add_catch(report, errors=[sfn.Errors.ALL], result_path="$.mapError")

        log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            retention=getattr(logs.RetentionDays, constants.LOG_RETENTION),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # The role gets exactly the statements below: the CDK's own grants for the item reader and the result
        # writer would cover the whole bucket (in-use/ and reports/ included), so it sees an immutable view.
        self.state_machine_role = iam.Role(
            self,
            "StateMachineRole",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="ecr-retention run workflow",
        )
        machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment="ecr-retention run: targets, evaluate each repository, report",
            definition_body=sfn.DefinitionBody.from_chainable(choose.next(each_repository).next(report)),
            role=self.state_machine_role.without_policy_updates(),
            timeout=Duration.hours(constants.STATE_MACHINE_TIMEOUT_HOURS),
            tracing_enabled=True,
            # Every event, without the inputs and outputs: the work items and reports live in the bucket.
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        self._grant_state_machine(machine)
        # Step Functions checks the logging permissions when it creates the state machine.
        machine.node.add_dependency(self.state_machine_role)
        return machine

    def _evaluate_batch(self) -> sfn.IChainable:
        """A child execution: the batch in one invocation; when that invocation fails or stops early, each repository
        of the batch in one of its own (skipped when its batch stored its report, or began its evaluation: it then stores
        a failed report), each failure caught."""
        evaluate = tasks.LambdaInvoke(
            self,
            "EvaluateRepository",
            lambda_function=self.evaluate.function,
            payload_response_only=True,
            comment="A batch of repositories of one registry; the worker stores each report itself",
            # No Retry of the whole batch on a Lambda service error: the Catch's fallback (each repository in an
            # invocation of its own, skipping those reported or begun) is the retry, and it never re-runs a begun one.
            retry_on_service_exceptions=False,
        )
        alone = tasks.LambdaInvoke(
            self,
            "EvaluateAlone",
            lambda_function=self.evaluate.function,
            payload_response_only=True,
            comment="One repository of a batch that ended early, unless the batch stored its report",
        )
        alone.add_catch(
            sfn.Pass(self, "LeftWithoutReport", comment="The report step lists it failed (stored no report)"),
            errors=[sfn.Errors.ALL],
            result_path=sfn.JsonPath.DISCARD,
        )
        member = {
            "runId": sfn.JsonPath.string_at("$.runId"),
            "trigger": sfn.JsonPath.string_at("$.trigger"),
            "dryRun": sfn.JsonPath.string_at("$.dryRun"),
            "region": sfn.JsonPath.string_at("$.region"),
            "repository": sfn.JsonPath.string_at("$$.Map.Item.Value"),
            "afterBatch": True,
        }
        each_alone = sfn.Map(
            self,
            "EvaluateEachAlone",
            items_path="$.repositories",
            item_selector=member,
            max_concurrency=1,
            result_path=sfn.JsonPath.DISCARD,
            comment="The batch's repositories one invocation each, in order",
        )
        each_alone.item_processor(alone)
        evaluate.add_catch(each_alone, errors=[sfn.Errors.ALL], result_path="$.batchError")
        return evaluate

    def _grant_state_machine(self, machine: sfn.StateMachine) -> None:
        role = self.state_machine_role
        stack = Stack.of(self)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[function.function.function_arn for function in self.functions],
            )
        )
        batches_file = f"{constants.RUNS_PREFIX}*/batches.json"
        map_results = f"{constants.MAP_RESULTS_PREFIX}/*"
        role.add_to_principal_policy(access.objects_statement(self._bucket, ["s3:GetObject"], [batches_file]))
        role.add_to_principal_policy(
            access.objects_statement(
                self._bucket, ["s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:PutObject"], [map_results]
            )
        )
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(LOG_DELIVERY_ACTIONS), resources=["*"]))
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(STATES_XRAY_ACTIONS), resources=["*"]))
        access.acknowledge_key_patterns(
            role,
            self._bucket,
            {
                batches_file: "The Distributed Map reads the run's batches from runs/<runId>/batches.json.",
                map_results: "The Distributed Map writes its results under runs/map-results/<map run id>/.",
            },
        )
        nag.acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "CloudWatch Logs vended delivery (logs:*LogDelivery*, PutResourcePolicy, Describe*) and X-Ray "
            "(PutTraceSegments, PutTelemetryRecords, GetSampling*) support no resource-level permissions.",
        )
        # The Distributed Map runs each item as a child execution of this state machine. A policy of its own,
        # because it names the state machine, which itself depends on the role.
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=machine.state_machine_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # The CDK's own version of this policy is attached to nothing once the role is immutable (it never reaches
        # the template); dropping it keeps cdk-nag from judging a policy that is not deployed.
        machine.node.try_remove_child("DistributedMapPolicy")
        map_policy = iam.Policy(
            self,
            "DistributedMapPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(actions=["states:StartExecution"], resources=[machine.state_machine_arn]),
                iam.PolicyStatement(
                    actions=["states:DescribeExecution", "states:StopExecution"], resources=[f"{executions}:*"]
                ),
                # Redriving a run redrives its map run's failed child executions.
                iam.PolicyStatement(actions=["states:RedriveExecution"], resources=[f"{executions}/*:*"]),
            ],
        )
        machine_name = f"<{stack.get_logical_id(machine.node.default_child)}.Name>"  # type: ignore[arg-type]
        nag_executions = f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{machine_name}"
        nag.acknowledge(
            map_policy,
            f"AwsSolutions-IAM5[Resource::{nag_executions}:*]",
            "The child executions the Distributed Map starts, one per batch of repositories, named at run time.",
        )
        nag.acknowledge(
            map_policy,
            f"AwsSolutions-IAM5[Resource::{nag_executions}/*:*]",
            "The child executions of each map run, for redriving a failed run; named at run time.",
        )
