"""ecr-retention as one construct, for any CDK app: composes the capabilities' constructs and publishes what operators
need as outputs. The stack that holds it is yours (EcrRetentionStack, ecr_retention.cdk.stack, is a stack that holds
only it, as this repository's app.py deploys it); the other pruned Regions' event forwarders are stacks of their own
(ecr_retention.cdk.region_forwarder.forwarder_stacks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Aws, CfnOutput, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct
from pydantic import ValidationError

from ecr_retention import layout
from ecr_retention.cdk import constants, lambda_asset, queues, repository_scope
from ecr_retention.cdk.alarms import Alarms
from ecr_retention.cdk.aws_inventory_collector import AwsInventoryCollector
from ecr_retention.cdk.deploy_settings import DeploySettings
from ecr_retention.cdk.deployment_role import deployment_role_arns
from ecr_retention.cdk.exporter_role import ExporterRole
from ecr_retention.cdk.holders import Holders
from ecr_retention.cdk.inventory_bucket import InventoryBucket, SpokeOrganization
from ecr_retention.cdk.pruning_workflow import PruningWorkflow
from ecr_retention.cdk.pull_time_exclusions import PullTimeExclusions
from ecr_retention.cdk.push_trigger import PushTrigger
from ecr_retention.cdk.report_topic import ReportTopic
from ecr_retention.cdk.reviewers import ReviewerRole
from ecr_retention.cdk.schedules import Schedules
from ecr_retention.cdk.sentinel import Sentinel
from ecr_retention.cdk.tagger import Tagger
from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.errors import InputError, describe_validation_error
from ecr_retention.domain.inventory.eks_clusters import EksCluster
from ecr_retention.domain.limits import RULES_FILE
from ecr_retention.loading import load_config, read_limited

Rules = Path | str | RetentionConfig


class EcrRetention(Construct):
    """The whole deployment, in the stack of `scope`.

    `rules`: the rules file (a path: validated, and its bytes ship in the functions' asset, config as code) or an
    already loaded RetentionConfig (it ships as the JSON document it is read back from); absent, the settings'
    rules_file (the context key `config`). `settings`: a DeploySettings, the one model of what cdk.json's context sets
    (docs/deploy.md); `properties`: any of its fields by name (`regions=["eu-west-1"]`, `report_emails=[...]`) or by
    context key, over `settings`, validated by the same model. A bad value is one InputError line.

    One per stack: the collector's role (<stack name>-collector), the pull-time exclusions' role names and the alarms'
    names derive from the stack's name, so a second instance in the same stack is refused; another stack (another
    name) may hold another. Its resources' logical IDs start with the construct's id, unless that id is "Default"
    (the CDK's hidden id, which logical IDs skip: EcrRetentionStack uses it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        rules: Rules | None = None,
        settings: DeploySettings | None = None,
        **properties: Any,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        _refuse_a_second_instance(stack, self)
        if isinstance(rules, str | Path):
            properties = {**properties, "rules_file": Path(rules)}
        settings = _settings(settings, properties)
        config, rules_document = _rules(rules, settings)
        # Before any construct: what the context and the rules file disagree on stops synthesis with one line.
        settings.check_against_the_stack(config, account=_known(stack.account), region=_known(stack.region))
        self.config = config
        self.settings = settings
        # The home Region (this stack's) and the other pruned Regions, whose events
        # ecr_retention.cdk.region_forwarder's stacks send here.
        self.pruned_regions = settings.pruned_regions(_known(stack.region))
        # Too many exact repository names for IAM without a repository tag: one line, before any construct.
        repository_scope.check_exact_names_fit(config, self.pruned_regions, constants.REPOSITORY_TAG_CONTEXT_KEY)

        self.inventory = InventoryBucket(self, "Inventory")
        bucket = self.inventory.bucket
        self.reports = self._report_topic(settings)
        self.exporter = ExporterRole(
            self,
            "Exporter",
            inventory_bucket=bucket,
            cluster_arns=settings.exporter_cluster_arns,
            agentless_clusters=settings.aws_inventory and bool(settings.eks_clusters),
        )

        code = lambda_asset.lambda_code(rules_document, settings.spoke_role_arns, settings.eks_clusters)
        # Every function of the pipeline: the bucket, and the registry (this account), so that none calls STS to
        # find it.
        environment = {layout.BUCKET_NAME_VARIABLE: bucket.bucket_name, layout.REGISTRY_ID_VARIABLE: Aws.ACCOUNT_ID}
        if self.pruned_regions.several:
            # Unset, a function prunes its own Region only: a single-Region template stays as it was.
            environment[layout.PRUNED_REGIONS_VARIABLE] = json.dumps(list(self.pruned_regions.names))
        # Schedule invocations, EventBridge deliveries and asynchronous tagger and collector invocations that
        # failed their retries.
        self.delivery_dead_letters = queues.dead_letter_queue(self, "DeliveryDeadLetters")
        self.collector = self._collector(settings, code) if settings.aws_inventory else None
        self._protect_in_use_manifests(settings)
        self.workflow = PruningWorkflow(
            self,
            "Pruning",
            config=config,
            code=code,
            environment=environment,
            bucket=bucket,
            report_topic=self.reports.topic,
            report_topic_key=self.reports.key,
            map_concurrency=settings.map_concurrency,
            regions=self.pruned_regions,
        )
        self.inventory.bind_state_to_its_writers(
            {
                "report": self.workflow.report.role,
                "targets": self.workflow.targets.role,
                "evaluate": self.workflow.evaluate.role,
                "workflow": self.workflow.state_machine_role,
            }
        )
        self.inventory.deny_deleting_protection_state(settings.break_glass_role_arn)
        self.inventory.acknowledge_memory_deletions_only_by(settings.break_glass_role_arn)
        self.tagger = Tagger(
            self,
            "Tagging",
            config=config,
            code=code,
            environment=environment,
            bucket=bucket,
            dead_letters=self.delivery_dead_letters,
            regions=self.pruned_regions,
        )
        self.sentinel = Sentinel(
            self,
            "Sentinel",
            config=config,
            code=code,
            environment=environment,
            bucket=bucket,
            report_topic=self.reports.topic,
            report_topic_key=self.reports.key,
            api_calls=settings.cloud_trail_management_events,
            regions=self.pruned_regions,
            break_glass_role_arn=settings.break_glass_role_arn,
        )
        self._guard_the_inventory_bucket(settings)
        # The run's in-use check counts only the records of removals/ that this deployment's sentinel wrote.
        self.workflow.report.function.add_environment(
            layout.SENTINEL_ROLE_ARN_VARIABLE, self.sentinel.sentinel.role.role_arn
        )
        self.schedules = self._schedules(settings)
        self.push = self._push_trigger(config, settings, code, environment) if settings.push_trigger_enabled else None
        self.exclusions = PullTimeExclusions(
            self,
            "PullTimeExclusions",
            roles=self._manifest_readers(settings),
            # With several Regions the forwarding stacks exclude the same roles in their Regions, by name.
            name_for=self.pruned_regions.home if self.pruned_regions.several else None,
        )
        self.alarms = self._alarms(config, settings)
        self.reviewers = (
            None
            if settings.reviewers is None
            else ReviewerRole(self, "Reviewers", reviewers=settings.reviewers, bucket=bucket)
        )
        self.holders = Holders(
            self,
            "Holders",
            bucket=bucket,
            regions=self.pruned_regions,
            role_arns=settings.holder_role_arns,
            create_role=settings.holders_role,
        )
        self.inventory.bind_holds_to_holders(self.holders.arns, settings.break_glass_role_arn)
        self._outputs()

    def _manifest_readers(self, settings: DeploySettings) -> dict[str, iam.IRole]:
        """The roles that read manifests (BatchGetImage): the evaluations, the tagger, and with a trail the sentinel's
        doctor (uncached index manifests of a repository given a new lifecycle policy)."""
        readers: dict[str, iam.IRole] = {"Evaluate": self.workflow.evaluate.role, "Tagger": self.tagger.tagger.role}
        if settings.cloud_trail_management_events:
            readers["Sentinel"] = self.sentinel.sentinel.role
        return readers

    def _report_topic(self, settings: DeploySettings) -> ReportTopic:
        reports = ReportTopic(self, "Reports")
        for email in settings.report_emails:
            reports.topic.add_subscription(subscriptions.EmailSubscription(email))
        return reports

    def _collector(self, settings: DeploySettings, code: lambda_.Code) -> AwsInventoryCollector:
        return AwsInventoryCollector(
            self,
            "AwsInventory",
            code=code,
            bucket=self.inventory.bucket,
            dead_letters=self.delivery_dead_letters,
            regions=settings.collect_regions,
            spoke_role_arns=settings.spoke_role_arns,
            revisions=settings.task_definition_revisions,
            eks_clusters=[EksCluster(arn) for arn in settings.eks_clusters],
            own_eks_clusters=settings.own_eks_clusters,
            # As their keys under in-use/ read: <name>, or <account>/<name> for a spoke's.
            other_cluster_names=[
                *(str(cluster) for cluster in (*self.config.safety.clusters, *self.config.safety.optional_clusters)),
                *(EksCluster(arn).name for arn in settings.exporter_cluster_arns),
            ],
            vpc=settings.collector_vpc,
            inspector_in_use=settings.inspector_in_use,
        )

    def _protect_in_use_manifests(self, settings: DeploySettings) -> None:
        """Only the exporters, each for its listed clusters, and the collector write in-use/ (InventoryBucket)."""
        collector = self.collector
        self.inventory.allow_in_use_writes_only_from(
            self.exporter.role,
            settings.exporter_cluster_arns,
            collector_role=collector.role if collector is not None else None,
            collector_keys=collector.manifest_keys if collector is not None else (),
            spoke_exporter_role_arns=settings.spoke_exporter_role_arns,
            organization=(
                None
                if settings.organization_id is None
                else SpokeOrganization(settings.organization_id, settings.organization_paths)
            ),
        )

    def _guard_the_inventory_bucket(self, settings: DeploySettings) -> None:
        """Only the sentinel writes its records, only the evaluations and the sentinel the manifest cache, and only
        the deployment and the break-glass role change the bucket's own policy, lifecycle and versioning, and nobody
        deletes an access log."""
        self.inventory.keep_records_to_their_writers(
            sentinel_role=self.sentinel.sentinel.role,
            cache_writers=[self.workflow.evaluate.role, self.sentinel.sentinel.role],
            break_glass_role_arn=settings.break_glass_role_arn,
        )
        deploying = deployment_role_arns(Stack.of(self), settings.deploying_roles)
        self.inventory.guard_the_bucket_itself(
            deployment_role_arns=deploying, break_glass_role_arn=settings.break_glass_role_arn
        )
        self.inventory.guard_the_access_logs(
            deployment_role_arns=deploying, break_glass_role_arn=settings.break_glass_role_arn
        )

    def _schedules(self, settings: DeploySettings) -> Schedules:
        return Schedules(
            self,
            "Schedules",
            sweep_expression=settings.sweep_schedule,
            tagger_expression=settings.tagger_schedule,
            state_machine=self.workflow.state_machine,
            tagger=self.tagger.function,
            dead_letters=self.delivery_dead_letters,
            collector=self.collector.function if self.collector is not None else None,
            collector_expression=settings.collector_schedule,
        )

    def _push_trigger(
        self, config: RetentionConfig, settings: DeploySettings, code: lambda_.Code, environment: dict[str, str]
    ) -> PushTrigger:
        return PushTrigger(
            self,
            "PushTrigger",
            code=code,
            environment=environment,
            state_machine=self.workflow.state_machine,
            repository_filter=settings.push_repository_filter(config),
            delivery_dead_letters=self.delivery_dead_letters,
        )

    def _alarms(self, config: RetentionConfig, settings: DeploySettings) -> Alarms:
        """The operations alarms, over every function and dead-letter queue this deployment has."""
        functions = {
            "targets": self.workflow.targets.function,
            "evaluate": self.workflow.evaluate.function,
            "report": self.workflow.report.function,
            "tagger": self.tagger.function,
            "sentinel": self.sentinel.function,
        }
        dead_letter_queues = {
            "DeliveryDeadLetters": self.delivery_dead_letters,
            "SentinelDeadLetters": self.sentinel.dead_letters,
        }
        if self.collector is not None:
            functions["collector"] = self.collector.function
        if self.push is not None:
            functions["push"] = self.push.push.function
            dead_letter_queues["DebounceDeadLetters"] = self.push.dead_letters
        return Alarms(
            self,
            "Alarms",
            config=config,
            key=self.reports.key,
            emails=settings.operations_emails,
            functions=functions,
            dead_letter_queues=dead_letter_queues,
            state_machine=self.workflow.state_machine,
            collecting=self.collector is not None,
        )

    def _outputs(self) -> None:
        if self.holders.role is not None:
            CfnOutput(
                self,
                "HoldersRoleArn",
                value=self.holders.role.role_arn,
                description="IAM role for `ecr-retention hold add | list | remove` (docs/holds.md)",
            )
        CfnOutput(
            self,
            "InventoryBucketName",
            value=self.inventory.bucket.bucket_name,
            description="S3 bucket for in-use manifests (in-use/<cluster>.json) and run reports (reports/)",
        )
        CfnOutput(
            self,
            "ReportTopicArn",
            value=self.reports.topic.topic_arn,
            description="SNS topic that receives one summary per run; subscribe to it",
        )
        CfnOutput(
            self,
            "OperationsTopicArn",
            value=self.alarms.topic.topic_arn,
            description="SNS topic of the operations alarms; subscribe the people who run this",
        )
        CfnOutput(
            self,
            "ExporterRoleArn",
            value=self.exporter.role.role_arn,
            description="IAM role for the in-cluster exporter; associate it through EKS Pod Identity",
        )
        CfnOutput(
            self,
            "SentinelFunctionArn",
            value=self.sentinel.function.function_arn,
            description="The sentinel; the SCP sentinel-invoke-scp.yaml (python -m ecr_retention.cdk.spoke_templates "
            "sentinel-invoke-scp.yaml) keeps every IAM principal from invoking it (docs/security.md)",
        )
        CfnOutput(
            self,
            "StateMachineArn",
            value=self.workflow.state_machine.state_machine_arn,
            description='The run workflow; start it with {"trigger": "schedule"} to run now',
        )
        if self.reviewers is not None:
            CfnOutput(
                self,
                "ReviewerRoleArn",
                value=self.reviewers.role.role_arn,
                description="IAM role the rules review workflow assumes through GitHub OIDC (docs/review.md)",
            )
        if self.collector is not None:
            CfnOutput(
                self,
                "CollectorRoleArn",
                value=self.collector.role.role_arn,
                description="IAM role of the AWS inventory collector; each spoke's reader role trusts it "
                "(its TrustedRoleArns)",
            )
            CfnOutput(
                self,
                "CollectorFunctionName",
                value=self.collector.function.function_name,
                description="The AWS inventory collector; invoke it to collect now (docs/aws-inventory.md)",
            )
            if self.collector.security_group is not None:
                CfnOutput(
                    self,
                    "CollectorSecurityGroupId",
                    value=self.collector.security_group.security_group_id,
                    description="The collector's security group (collectorVpc): allow it HTTPS in on each private "
                    "EKS endpoint's cluster security group",
                )


def _known(value: str) -> str | None:
    """A stack without an explicit environment has its account and region as deploy-time tokens."""
    return None if Token.is_unresolved(value) else value


def _refuse_a_second_instance(stack: Stack, this: EcrRetention) -> None:
    others = [each.node.path for each in stack.node.find_all() if isinstance(each, EcrRetention) and each is not this]
    if others:
        raise InputError(
            f"{this.node.path}: stack {stack.stack_name} already holds an EcrRetention ({others[0]}); one per stack "
            "(its role and alarm names derive from the stack's name): put the other in a stack of its own"
        )


def _settings(settings: DeploySettings | None, properties: dict[str, Any]) -> DeploySettings:
    """`settings` with `properties` over them, validated as the context is."""
    if not properties:
        return settings or DeploySettings()
    given = {} if settings is None else settings.model_dump(exclude_unset=True)
    # A property may be named as its context key (`reportEmails`) or as its field (`report_emails`): by field name both,
    # so that one given either way replaces the one of `settings`.
    field_of = {info.alias: name for name, info in DeploySettings.model_fields.items() if info.alias}
    named = {field_of.get(key, key): value for key, value in properties.items()}
    try:
        return DeploySettings.model_validate({**given, **named})
    except ValidationError as error:
        raise InputError(f"EcrRetention: {describe_validation_error(error, DeploySettings)}") from None


def _rules(rules: Rules | None, settings: DeploySettings) -> tuple[RetentionConfig, bytes]:
    """The validated rules and the document the functions' asset ships, which the functions read back as the same."""
    if not isinstance(rules, RetentionConfig):
        return load_config(settings.rules_file), read_limited(settings.rules_file, RULES_FILE)
    # YAML reads JSON: the functions load it as they load a rules file, and must find the same rules.
    document = json.dumps(rules.model_dump(mode="json", by_alias=True, exclude_unset=True), indent=2) + "\n"
    if parse_config(document, constants.ASSET_RULES_FILE) != rules:
        raise InputError("EcrRetention: rules: the loaded rules do not read back as themselves; pass the rules file")
    return rules, document.encode()
