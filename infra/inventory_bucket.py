"""The S3 bucket that holds the in-use manifests (`in-use/<cluster>.json`), the manifest cache (`manifests/`),
run state (`runs/`) and the run reports (`reports/`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention import layout
from ecr_retention.cdk import constants, state_objects
from ecr_retention.domain.inventory.aws import account_of_role
from ecr_retention.domain.inventory.eks_clusters import partitions_and_regions

SERVER_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"

# What changes the inventory bucket's own guards (InventoryBucket.guard_the_bucket_itself), and CloudTrail's names of
# the calls each authorizes (layout.BUCKET_GUARD_EVENT_NAMES, which the sentinel's guard rule matches): a Put action
# also authorizes the matching Delete call. Each one weakens the bucket: its policy, lifecycle rules (expire in-use/),
# versioning (a rewrite leaves no previous version), ownership, replication (the bucket as a source sends workload
# names elsewhere), object lock (compliance retention makes every later version undeletable), default encryption (a
# KMS key later disabled makes every object unreadable: every run blocked), event notifications (the tagger's
# trigger), access logging (the evidence of who wrote what) and its public access block.
BUCKET_GUARD_CALLS = {
    "s3:PutBucketPolicy": ("PutBucketPolicy",),
    "s3:DeleteBucketPolicy": ("DeleteBucketPolicy",),
    "s3:PutLifecycleConfiguration": ("PutBucketLifecycle", "DeleteBucketLifecycle"),
    "s3:PutBucketVersioning": ("PutBucketVersioning",),
    "s3:PutBucketOwnershipControls": ("PutBucketOwnershipControls", "DeleteBucketOwnershipControls"),
    "s3:PutReplicationConfiguration": ("PutBucketReplication", "DeleteBucketReplication"),
    "s3:PutBucketObjectLockConfiguration": ("PutObjectLockConfiguration",),
    "s3:PutEncryptionConfiguration": ("PutBucketEncryption", "DeleteBucketEncryption"),
    "s3:PutBucketNotification": ("PutBucketNotification",),
    "s3:PutBucketLogging": ("PutBucketLogging",),
    "s3:PutBucketPublicAccessBlock": ("PutBucketPublicAccessBlock", "DeleteBucketPublicAccessBlock"),
}
BUCKET_GUARD_ACTIONS = tuple(BUCKET_GUARD_CALLS)
# S3 replication writes replicas and delete markers with actions of its own, which no s3:PutObject or s3:DeleteObject
# Deny covers (S3 User Guide, "Setting up permissions for live replication"): within one account, the replication
# role's identity policy is enough. This bucket is never a replication destination.
REPLICATION_WRITE_ACTIONS = (
    "s3:ReplicateObject",
    "s3:ReplicateDelete",
    "s3:ReplicateTags",
    "s3:ObjectOwnerOverrideToBucketOwner",
)
# What changes the access-logs bucket's own guards: its policy, lifecycle rules and versioning.
ACCESS_LOG_GUARD_ACTIONS = (
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketVersioning",
)
OBJECT_DELETE_ACTIONS = ("s3:DeleteObject", "s3:DeleteObjectVersion")


@dataclass(frozen=True)
class SpokeOrganization:
    """The organization whose accounts' exporters may write their own folders (cdk.json organizationId), narrowed to
    accounts under these organizational units when any are given (organizationPaths)."""

    id: str
    paths: tuple[str, ...] = ()


def _private_bucket_properties() -> dict[str, Any]:
    """What every bucket of the stack shares: private, encrypted, reachable over TLS 1.2+ only."""
    return {
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        "enforce_ssl": True,
        "minimum_tls_version": 1.2,
    }


class InventoryBucket(Construct):
    """Versioned, so that an overwritten manifest or report stays recoverable for a while.

    SSE-S3 rather than a customer key: manifests hold image references, not secrets, and a
    customer key would add a KMS grant to every writer, the in-cluster exporter included.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # Access logs are delivered under the logs bucket's policy, never the LogDeliveryWrite ACL, which its ownership
        # (BucketOwnerEnforced) refuses: whatever the app's feature flags (an app without this repository's cdk.json).
        self.node.set_context(SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, True)

        # Without S3 data events in CloudTrail, its logs are the only evidence of who wrote or deleted a manifest:
        # versioned, and nobody deletes them or changes its guards (guard_the_access_logs).
        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            **_private_bucket_properties(),
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(constants.ACCESS_LOG_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-noncurrent-access-logs",
                    expired_object_delete_marker=True,
                    noncurrent_version_expiration=Duration.days(constants.NONCURRENT_VERSION_RETENTION_DAYS),
                ),
            ],
        )

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            **_private_bucket_properties(),
            versioned=True,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix=constants.ACCESS_LOGS_PREFIX,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    # Reports expire into delete markers; once their old version is gone, drop the marker too.
                    expired_object_delete_marker=True,
                    noncurrent_version_expiration=Duration.days(constants.NONCURRENT_VERSION_RETENTION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(constants.INCOMPLETE_UPLOAD_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-reports",
                    prefix=constants.REPORTS_PREFIX,
                    expiration=Duration.days(constants.REPORT_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-run-state",
                    prefix=constants.RUNS_PREFIX,
                    expiration=Duration.days(constants.RUN_STATE_RETENTION_DAYS),
                ),
                # Each sweep rewrites the snapshot of every managed repository: one unread this long is of a
                # repository that is gone or no longer managed.
                s3.LifecycleRule(
                    id="expire-review-snapshots",
                    prefix=layout.SNAPSHOTS_PREFIX,
                    expiration=Duration.days(constants.SNAPSHOT_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-manifest-cache",
                    prefix=constants.MANIFEST_CACHE_PREFIX,
                    expiration=Duration.days(constants.MANIFEST_CACHE_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-removal-records",
                    prefix=constants.REMOVALS_PREFIX,
                    expiration=Duration.days(constants.REMOVAL_RECORD_RETENTION_DAYS),
                ),
            ],
        )
        # Object Created events for in-use/ reach the tagger through EventBridge. Set on the bucket resource
        # itself: `event_bridge_enabled=True` would add a custom resource (a Node.js Lambda) to do the same.
        cfn_bucket = self.bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.add_property_override("NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
        self._deny_replication_writes()

    def _deny_replication_writes(self) -> None:
        """No replica and no replicated delete marker lands on any key of the bucket, whoever's replication role
        sends it: every Deny of s3:PutObject and s3:DeleteObject below would be bypassed otherwise (one constant
        statement)."""
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="NoReplicationIntoTheBucket",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(REPLICATION_WRITE_ACTIONS),
                resources=[self.bucket.arn_for_objects("*")],
            )
        )

    def allow_in_use_writes_only_from(
        self,
        exporter_role: iam.IRole,
        cluster_arns: Sequence[str],
        collector_role: iam.IRole | None = None,
        spoke_exporter_role_arns: Sequence[str] = (),
        collector_keys: Sequence[str] = (constants.AWS_INVENTORY_MANIFESTS,),
        organization: SpokeOrganization | None = None,
    ) -> None:
        """Whatever identity policies say elsewhere in the account, only the exporter roles (this account's and
        the spokes'), in an EKS Pod Identity session, and the AWS inventory collector's role may write under
        in-use/: a manifest decides what must not be deleted. Each key has one writer: a session of this account
        writes no key but `in-use/<its eks-cluster-name>.json`, a spoke's session none but
        `in-use/<its own account>/<its eks-cluster-name>.json`, and only while its eks-cluster-arn tag is the ARN
        of that very cluster in its own account (docs/security.md); the collector's keys (in-use/aws-*.json and
        its eksClusters' manifests) only the collector. Every statement has one size whatever the number of
        clusters (policy variables), but for the spoke accounts' IDs in the one Allow that names them; with an
        `organization` (cdk.json organizationId), that Allow names the organization instead, and the policy has one
        size whatever the number of spoke accounts."""
        in_use = self.bucket.arn_for_objects(constants.IN_USE_PREFIX + "*")
        collector_arn = None if collector_role is None else collector_role.role_arn
        self._deny_in_use_writes_but_by(exporter_role.role_arn, collector_arn, in_use)
        if cluster_arns:
            self._bind_each_session_to_its_own_manifest(cluster_arns, collector_arn, in_use)
        else:
            # No cluster listed: nobody but the collector writes. Its sessions carry no cluster tag.
            self._deny_puts("InUseWritesOnlyFromListedClusters", [in_use], _but(collector_arn))
        if collector_arn is not None:
            self._confine_the_collector_to(collector_keys, collector_arn)
        self._allow_spoke_exporters(spoke_exporter_role_arns, organization)
        self._reserve_for_the_collector(collector_keys, collector_arn)

    def _deny_in_use_writes_but_by(self, exporter_role_arn: str, collector_arn: str | None, in_use: str) -> None:
        # A principal of this account: the exporter role or the collector, nobody else (administrators included).
        # A principal of another account writes only through the Allow of _allow_spoke_exporters.
        writers = [exporter_role_arn] if collector_arn is None else [exporter_role_arn, collector_arn]
        self._deny_puts(
            "InUseWritesOnlyByTheWriterRoles",
            [in_use],
            {"StringEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}, "ArnNotEquals": {"aws:PrincipalArn": writers}},
        )

    def _bind_each_session_to_its_own_manifest(
        self, cluster_arns: Sequence[str], collector_arn: str | None, in_use: str
    ) -> None:
        """EKS Pod Identity tags each session with its cluster's name and ARN. Nothing ties the two tags together
        for a principal that may call sts:TagSession on a spoke's exporter role, so the bucket does: the key is
        the name tag's, and the ARN tag must be `arn:<partition>:eks:<a listed region>:<the caller's account>:
        cluster/<that name>`. An EKS name is unique in its account and region, and a spoke's keys are under its
        own account, so no session writes another account's manifest, and none of its own account but that of a
        cluster of the name it carries. IAM may treat a statement whose policy variable has no value as invalid
        (docs/security.md), so a session without the name tag is refused by a statement that has none."""
        self._deny_puts(
            "InUseWritesOnlyFromClusterSessions",
            [in_use],
            {"Null": {f"aws:PrincipalTag/{constants.EKS_CLUSTER_NAME_TAG}": "true"}, **_but(collector_arn)},
        )
        # An EKS cluster name holds no "/"; a forged one would put the key in a folder that the run reads by its
        # file name alone (in-use/<account>/team/prod.json stands for prod).
        self._deny_puts(
            "ClusterNamesHoldNoSlash",
            [in_use],
            {"StringLike": {f"aws:PrincipalTag/{constants.EKS_CLUSTER_NAME_TAG}": "*/*"}},
        )
        tagged = {"Null": {f"aws:PrincipalTag/{constants.EKS_CLUSTER_NAME_TAG}": "false"}}
        self._deny_puts_but_on(
            "ClusterSessionsOfThisAccountWriteOnlyTheirManifest",
            [_OWN_MANIFEST_KEY],
            {**tagged, "StringEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}},
        )
        self._deny_puts_but_on(
            "SpokeClusterSessionsWriteOnlyTheirManifest",
            [_SPOKE_MANIFEST_KEY],
            {**tagged, "StringNotEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}},
        )
        # StringNotEquals is true for a session without the ARN tag: refused too.
        own_arns = [
            f"arn:{partition}:eks:{region}:${{aws:PrincipalAccount}}:cluster/{_SESSION_CLUSTER_NAME}"
            for partition, region in partitions_and_regions(cluster_arns)
        ]
        self._deny_puts(
            "ClusterSessionsOnlyOfTheirOwnClusterInAListedRegion",
            [in_use],
            {"StringNotEquals": {f"aws:PrincipalTag/{constants.EKS_CLUSTER_ARN_TAG}": own_arns}, **_but(collector_arn)},
        )

    def _deny_puts_but_on(self, sid: str, keys: Sequence[str], conditions: Mapping[str, object]) -> None:
        """Deny s3:PutObject on every object of the bucket but these keys."""
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid=sid,
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                not_resources=[self.bucket.arn_for_objects(key) for key in keys],
                conditions=dict(conditions),
            )
        )

    def _confine_the_collector_to(self, collector_keys: Sequence[str], collector_arn: str) -> None:
        # And the collector writes nothing else in this bucket: not another cluster's manifest, not a report;
        # only the AWS inventory and the manifests of the eksClusters it reads (collector_keys).
        self._deny_puts_but_on(
            "TheCollectorWritesOnlyItsManifests", collector_keys, {"ArnEquals": {"aws:PrincipalArn": collector_arn}}
        )

    def _reserve_for_the_collector(self, collector_keys: Sequence[str], collector_arn: str | None) -> None:
        # in-use/aws-<account>-<region>.json: an exporter (of a cluster named aws-..., or one compromised) must not
        # replace what ECS and Lambda use, nor a spoke's exporter add one of that name under its account (the run
        # reads a manifest by its file name). Without a collector, nobody writes them.
        only_the_collector = _but(collector_arn) or None
        self._deny_puts(
            "AwsInventoryWritesOnlyByTheCollector",
            [
                self.bucket.arn_for_objects(constants.AWS_INVENTORY_MANIFESTS),
                self.bucket.arn_for_objects(constants.IN_USE_PREFIX + "*/" + constants.AWS_INVENTORY_NAME_PREFIX + "*"),
            ],
            only_the_collector,
        )
        # The manifests of the clusters the collector reads through their API (eksClusters): an exporter session
        # (whatever cluster name it carries) must not replace them either.
        collected_clusters = [key for key in collector_keys if key != constants.AWS_INVENTORY_MANIFESTS]
        if collected_clusters:
            self._deny_puts(
                "CollectedClustersManifestsOnlyByTheCollector",
                [self.bucket.arn_for_objects(key) for key in collected_clusters],
                only_the_collector,
            )

    def acknowledge_memory_deletions_only_by(self, break_glass_role_arn: str | None) -> None:
        """A memory deleted after it was written blocks every run until someone acknowledges that deletion
        (layout.memory_deletion_acknowledgement_key, docs/operations.md). With a break-glass role, the one principal
        that can delete the memory, only it acknowledges; without one, nobody can delete the memory through this
        policy, and any principal of the account allowed s3:PutObject there may acknowledge what some other path
        (the root user, an older policy) did."""
        if break_glass_role_arn is None:
            return
        self._deny_puts(
            "MemoryDeletionsAcknowledgedOnlyByBreakGlass",
            [self.bucket.arn_for_objects(layout.MEMORY_DELETION_ACKNOWLEDGEMENTS_PREFIX + "*")],
            _but(break_glass_role_arn),
        )

    def bind_state_to_its_writers(self, writers: Mapping[state_objects.Writer, iam.IRole]) -> None:
        """A run's state decides what its evaluations delete: a forged runs/<id>/replication.json hides the
        destinations a deletion replicates to from the in-use guard; a forged repository report makes the memory
        remember the wrong digest of a tag; a forged snapshot makes a review (diff --bucket) say "no change"; whoever
        rewrites the in-use memory (which protects what manifests named in the last safety.in_use_grace) unprotects
        those images. Whatever identity policies say (administrators included), each key has one writer, declared
        with its state object (infra/state_objects.py): the report step writes the in-use memory, the targets step the
        run's targets and replication rules, the evaluations their repository reports, the deletions they tell each
        other and the kept snapshots, the workflow (the Distributed Map's result writer) its map results. Constant
        size (the run state's three statements about 1.4 KB, the memory's about 0.4 KB). Another key under runs/ is
        read by nobody and left to identity policies, and so is reports/: no run reads it to decide, and an
        operator's `ecr-retention run` writes its report there (docs/operations.md)."""
        for writer, sid in state_objects.WRITER_BINDINGS.items():
            self._deny_puts(
                sid,
                [self.bucket.arn_for_objects(key) for key in state_objects.bound_keys(writer)],
                {"ArnNotEquals": {"aws:PrincipalArn": writers[writer].role_arn}},
            )

    def deny_deleting_protection_state(self, break_glass_role_arn: str | None) -> None:
        """Deleting a manifest, the in-use memory, a run's state (targets, replication rules, repository reports,
        told deletions, map results) or a kept snapshot does what rewriting it would (the bucket is versioned:
        deleting the current version brings the previous one back), so nobody but the break-glass role (cdk.json
        breakGlassRoleArn, when set) deletes them, administrators included: the state objects so declared
        (infra/state_objects.py). The bucket's lifecycle rules still expire them: S3 applies those itself, outside
        any bucket policy."""
        self._deny_deletes_but_by(
            "ProtectionStateDeletedOnlyByBreakGlass",
            state_objects.deleted_only_by_break_glass(),
            break_glass_role_arn,
        )

    def bind_holds_to_holders(self, holder_arns: Sequence[str], break_glass_role_arn: str | None) -> None:
        """A hold keeps an image (docs/holds.md): whoever writes holds/ keeps any image, and whoever deletes there lets
        one go. Whatever identity policies say (administrators included), only the holders (cdk.json holderRoleArns,
        and the stack's holders role) write holds/, and only they and the break-glass role delete there; with no
        holders named, nobody writes a hold through this policy."""
        self._deny_puts(
            "HoldsWrittenOnlyByTheHolders",
            [self.bucket.arn_for_objects(constants.HOLDS_PREFIX + "*")],
            {"ArnNotEquals": {"aws:PrincipalArn": list(holder_arns)}} if holder_arns else None,
        )
        deleters = [*holder_arns, *([] if break_glass_role_arn is None else [break_glass_role_arn])]
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="HoldsDeletedOnlyByTheHoldersAndBreakGlass",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(OBJECT_DELETE_ACTIONS),
                resources=[self.bucket.arn_for_objects(constants.HOLDS_PREFIX + "*")],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": deleters}} if deleters else None,
            )
        )

    def keep_records_to_their_writers(
        self, *, sentinel_role: iam.IRole, cache_writers: Sequence[iam.IRole], break_glass_role_arn: str | None
    ) -> None:
        """The sentinel's records (`removals/`) silence a repeat alert, and the manifest cache (`manifests/`) names an
        in-use index's children: whoever writes either can hide a removal from the sentinel. Whatever identity
        policies say (administrators included), only the sentinel writes removals/, only the evaluations and the
        sentinel (cache_writers) write manifests/, and only the break-glass role deletes under either (a delete of a
        current version brings the previous one back). The bucket's lifecycle rules still expire them."""
        self._deny_puts(
            "RemovalRecordsOnlyByTheSentinel",
            [self.bucket.arn_for_objects(constants.REMOVALS_PREFIX + "*")],
            {"ArnNotEquals": {"aws:PrincipalArn": sentinel_role.role_arn}},
        )
        self._deny_puts(
            "ManifestCacheOnlyByTheEvaluationsAndTheSentinel",
            [self.bucket.arn_for_objects(constants.MANIFEST_CACHE_PREFIX + "*")],
            {"ArnNotEquals": {"aws:PrincipalArn": [role.role_arn for role in cache_writers]}},
        )
        self._deny_deletes_but_by(
            "RecordsAndCacheDeletedOnlyByBreakGlass",
            [constants.REMOVALS_PREFIX + "*", constants.MANIFEST_CACHE_PREFIX + "*"],
            break_glass_role_arn,
        )

    def guard_the_bucket_itself(self, *, deployment_role_arns: Sequence[str], break_glass_role_arn: str | None) -> None:
        """Every guard above is undone by the bucket's own configuration: a new policy, a lifecycle rule that expires
        in-use/, suspended versioning (a rewrite then leaves no previous version), other ownership controls,
        replication, object lock, encryption, notifications, logging, the public access block (BUCKET_GUARD_CALLS).
        Only the roles CloudFormation deploys with (infra.deployment_role: its updates of the rules, the versioning
        and this very policy must keep working; several while a deployment moves from one to another) and the
        break-glass role may change them. An account's administrator can still act as any of them, and its root user
        can always replace or delete a bucket policy: only an SCP guards against them (docs/security.md); the sentinel
        alerts on these calls (with a trail, infra/sentinel.py)."""
        _deny_guard_changes(
            self.bucket,
            "BucketGuardsChangedOnlyByTheDeployment",
            BUCKET_GUARD_ACTIONS,
            [*deployment_role_arns, *([] if break_glass_role_arn is None else [break_glass_role_arn])],
        )

    def guard_the_access_logs(self, *, deployment_role_arns: Sequence[str], break_glass_role_arn: str | None) -> None:
        """The access logs are the evidence of who wrote or deleted a protected key (S3 data events are not logged by
        default): nobody but the break-glass role deletes a log object or one of its versions (their lifecycle still
        expires them), and nobody but the deploying roles and the break-glass role changes the logs bucket's policy,
        lifecycle rules or versioning."""
        logs = self.access_log_bucket
        self._deny_deletes_but_by("AccessLogsDeletedOnlyByBreakGlass", ["*"], break_glass_role_arn, bucket=logs)
        _deny_guard_changes(
            logs,
            "AccessLogGuardsChangedOnlyByTheDeployment",
            ACCESS_LOG_GUARD_ACTIONS,
            [*deployment_role_arns, *([] if break_glass_role_arn is None else [break_glass_role_arn])],
        )

    def _deny_deletes_but_by(
        self, sid: str, keys: Sequence[str], break_glass_role_arn: str | None, *, bucket: s3.IBucket | None = None
    ) -> None:
        """Deny deleting these keys (any version) of the bucket (the inventory's unless named) to everyone but the
        break-glass role; to everyone without one."""
        target = bucket or self.bucket
        target.add_to_resource_policy(
            iam.PolicyStatement(
                sid=sid,
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(OBJECT_DELETE_ACTIONS),
                resources=[target.arn_for_objects(key) for key in keys],
                conditions=_but(break_glass_role_arn) or None,
            )
        )

    def _deny_puts(self, sid: str, resources: Sequence[str], conditions: Mapping[str, object] | None) -> None:
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid=sid,
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=list(resources),
                conditions=dict(conditions) if conditions is not None else None,
            )
        )

    def _allow_spoke_exporters(
        self, spoke_exporter_role_arns: Sequence[str], organization: SpokeOrganization | None
    ) -> None:
        """A principal of another account writes only what both its own identity policy and this bucket policy
        allow. One Allow for every spoke: its principals are the spoke accounts (named principals, not "*" with a
        condition: a policy that names its principals is never "public" to S3's Block Public Access), its key is
        `in-use/<the caller's account>/<the session's eks-cluster-name>.json`, and the caller must be a session
        of one of the listed exporter roles' names (their account is the principal's). The Denies above bind the
        key to the session's cluster ARN in the caller's own account.

        With an `organization`, the principals are every account of that organization but this one
        (aws:PrincipalOrgID, which S3's Block Public Access counts as a fixed principal, not public), and with its
        paths only the accounts under one of them (aws:PrincipalOrgPaths, in addition, never alone): the statement
        has one size at any number of spokes, and the binding is the same (every Deny is keyed on
        ${aws:PrincipalAccount} and the session's tags). Every account of the organization may then write its own
        folder, listed or not: the reader must treat a folder of an unlisted account as one more reading that only
        adds protection (docs/security.md)."""
        if not spoke_exporter_role_arns:
            return
        role_patterns = sorted({_any_account(arn) for arn in spoke_exporter_role_arns})
        conditions: dict[str, object] = {"ArnLike": {"aws:PrincipalArn": role_patterns}}
        if organization is None:
            accounts = sorted({account_of_role(arn) for arn in spoke_exporter_role_arns})
            principals: list[iam.IPrincipal] = [iam.AccountPrincipal(account) for account in accounts]
        else:
            principals = [iam.AnyPrincipal()]
            conditions |= {
                "StringEquals": {"aws:PrincipalOrgID": organization.id},
                "StringNotEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID},
            }
            if organization.paths:
                conditions["ForAnyValue:StringLike"] = {"aws:PrincipalOrgPaths": list(organization.paths)}
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="SpokeExportersWriteTheirClustersManifests",
                effect=iam.Effect.ALLOW,
                principals=principals,
                actions=["s3:PutObject"],
                resources=[self.bucket.arn_for_objects(_SPOKE_MANIFEST_KEY)],
                conditions=conditions,
            )
        )


# The key an exporter session writes: its cluster's name from the EKS Pod Identity session tag, under the caller's
# account for a spoke (policy variables, so that one statement serves every cluster).
_SESSION_CLUSTER_NAME = "${aws:PrincipalTag/" + constants.EKS_CLUSTER_NAME_TAG + "}"
_OWN_MANIFEST_KEY = constants.IN_USE_PREFIX + _SESSION_CLUSTER_NAME + ".json"
_SPOKE_MANIFEST_KEY = constants.IN_USE_PREFIX + "${aws:PrincipalAccount}/" + _SESSION_CLUSTER_NAME + ".json"


def _deny_guard_changes(bucket: s3.IBucket, sid: str, actions: Iterable[str], allowed: Sequence[str]) -> None:
    """Deny the bucket's own configuration calls to every principal but the allowed roles."""
    bucket.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            effect=iam.Effect.DENY,
            principals=[iam.AnyPrincipal()],
            actions=list(actions),
            resources=[bucket.bucket_arn],
            conditions={"ArnNotEquals": {"aws:PrincipalArn": allowed}},
        )
    )


def _but(principal_arn: str | None) -> dict[str, object]:
    """The condition that exempts one principal (none when there is none)."""
    return {} if principal_arn is None else {"ArnNotEquals": {"aws:PrincipalArn": principal_arn}}


def _any_account(role_arn: str) -> str:
    """arn:aws:iam::210987654321:role/path/name -> arn:aws:iam::*:role/path/name."""
    parts = role_arn.split(":")
    return ":".join([*parts[:4], "*", *parts[5:]])
