"""Names the stack (infra/) and the functions must agree on: the inventory bucket's key layout, the lease table's
attributes and the functions' environment variables. One definition, imported by both sides; nothing but the
standard library imported here, so the CDK app reads it without loading the functions' dependencies."""

from __future__ import annotations

import hashlib
from datetime import datetime
from urllib.parse import quote

# --- The inventory bucket.
IN_USE_PREFIX = "in-use/"  # in-use/<cluster>.json, one manifest per cluster
# The AWS inventory collector's manifests, in-use/aws-<account>-<region>.json: an EKS cluster may not be named aws-*.
AWS_INVENTORY_NAME_PREFIX = "aws-"
# Amazon Inspector's in-use reading (inspectorInUse), in-use/inspector-<account>-<region>.json, also the collector's.
INSPECTOR_NAME_PREFIX = "inspector-"
MANIFEST_CACHE_PREFIX = "manifests/"  # manifests/<digest>.json: index manifests, immutable
RUNS_PREFIX = "runs/"  # runs/<runId>/: targets.json, replication.json, repositories/*.json
# The in-use memory (domain/in_use/memory.py): the pipeline's own state, written by the report step only.
IN_USE_MEMORY_KEY = "state/in-use-memory.json"
# The memory's file name offline, in a directory of manifests (`plan --manifests`, `snapshot --bucket --manifests`):
# no cluster name starts with `_`, so it is never a manifest's.
MEMORY_FILE = "_in-use-memory.json"
# A memory that was written and then deleted (its latest version a delete marker) blocks every run until someone says
# it is meant: one object here named by the delete marker's version id (services/inventory.py, docs/operations.md).
# A later deletion has another marker, and blocks again.
MEMORY_DELETION_ACKNOWLEDGEMENTS_PREFIX = "state/acknowledged-memory-deletions/"
# Each repository as its last evaluation read it (domain/registry/swept.py), for reviews that need S3 read access only
# (`plan --bucket`, `diff --bucket`): snapshots/<hash>.json, overwritten by every evaluation of the repository.
SNAPSHOTS_PREFIX = "snapshots/"
REPORTS_PREFIX = "reports/"  # reports/YYYY/MM/DD/<runId>.json, and its page (.html) and sheet (.csv)
# The sentinel's record of removals (domain/in_use/references.py Removal):
# removals/<quoted repository>/<time>-<event>-<n>.json (another pruned Region's repository by its regional_name,
# `us-east-1:app`), one object per event and image, written by that event only (two events at once never race; its
# own event rewrites it once to say what its alert named); expired by the bucket's lifecycle. Beside them, one claim
# per event that alerted (<time>-<event>-alert.json, services/removals.py AlertClaim): one alert per event however
# often it is delivered.
REMOVALS_PREFIX = "removals/"
# Holds (domain/holds/): holds/<region>/<repository>/<digest>.json, one object per held image, written (with a
# conditional write) and deleted only by the roles the stack names as holders (and deleted by the break-glass role).
HOLDS_PREFIX = "holds/"
ALERT_CLAIM_SUFFIX = "-alert.json"


def memory_deletion_acknowledgement_key(delete_marker_version_id: str) -> str:
    """Where an operator acknowledges one deletion of the in-use memory (MEMORY_DELETION_ACKNOWLEDGEMENTS_PREFIX)."""
    return f"{MEMORY_DELETION_ACKNOWLEDGEMENTS_PREFIX}{quote(delete_marker_version_id, safe='')}"


def run_prefix(run_id: str) -> str:
    """Where a run's state is while it runs: what the targets step read, and what each evaluation stored."""
    return f"{RUNS_PREFIX}{run_id}/"


def targets_key(run_id: str) -> str:
    """The run's work items, for the report step to read back."""
    return f"{run_prefix(run_id)}targets.json"


def batches_key(run_id: str) -> str:
    """The run's work items in batches, for the workflow's Map to read."""
    return f"{run_prefix(run_id)}batches.json"


def replication_key(run_id: str) -> str:
    """Every pruned registry's replication as the targets step read it, by Region, for every evaluation of the run."""
    return f"{run_prefix(run_id)}replication.json"


def regional_name(repository: str, key: str | None) -> str:
    """A repository's name across the pruned Regions, by its registry's key (registries.PrunedRegistry.key): the home
    Region's (key None) as it is, another's prefixed with its Region (`us-east-1:team/app`; no repository name holds a colon). What a lease, a stored report and a kept
    snapshot are keyed by, so that two Regions' repositories of one name never share one."""
    return repository if key is None else f"{key}:{repository}"


def hashed_name(repository: str, key: str | None) -> str:
    """A repository's name across the pruned Regions as one flat, collision-free object name: repository names hold
    slashes."""
    return hashlib.sha256(regional_name(repository, key).encode()).hexdigest()[:32]


def replicated_deletions_key(run_id: str, repository: str, key: str | None = None) -> str:
    """What a repository's evaluation deletes, told before it acts to the evaluations of the destinations its
    deletions replicate to, when the run prunes those too (services/replicas.py)."""
    name = hashed_name(repository, key)
    return f"{run_prefix(run_id)}deletions/{name}.json"


def repository_reports_prefix(run_id: str) -> str:
    return f"{run_prefix(run_id)}repositories/"


def repository_report_key(run_id: str, repository: str, key: str | None = None) -> str:
    name = hashed_name(repository, key)
    return f"{repository_reports_prefix(run_id)}{name}.json"


def batch_reports_key(run_id: str, first_repository: str, key: str | None = None, part: int = 0) -> str:
    """Where a batch stores the reports of its repositories that changed nothing (services.evaluate_step.run_work_batch), beside
    the repositories' own reports, named by the batch's first repository (each repository is in one batch of a run)
    and the part's number: a batch stores them in parts of a bounded size (run_files.MAX_BATCH_REPORTS_PART_BYTES)."""
    name = hashed_name(first_repository, key)
    return f"{repository_reports_prefix(run_id)}{BATCH_REPORTS_PREFIX}{name}-{part}.json"


# The name a batch's reports object starts with under runs/<runId>/repositories/ (a repository's own is a bare hash).
BATCH_REPORTS_PREFIX = "batch-"


def batch_begun_key(run_id: str, first_repository: str, key: str | None = None) -> str:
    """Written once, by the first invocation of a batch (a conditional write), named as the batch's reports are: an
    invocation that finds it there is not the batch's first (services.evaluate_step.run_work_batch)."""
    name = hashed_name(first_repository, key)
    return f"{run_prefix(run_id)}batches/{name}.json"


def repository_snapshot_key(repository: str, key: str | None = None) -> str:
    """Where the last evaluation of a repository keeps its snapshot: one flat object per repository, as its reports."""
    name = hashed_name(repository, key)
    return f"{SNAPSHOTS_PREFIX}{name}.json"


def run_report_key(run_id: str, started_at: datetime, *, extension: str = "json") -> str:
    """`reports/YYYY/MM/DD/<runId>.json`, dated by the run's start (UTC); the page (`.html`) and the sheet (`.csv`)
    of the same run have the same stem."""
    return f"{REPORTS_PREFIX}{started_at:%Y/%m/%d}/{run_id}.{extension}"


def removals_prefix(repository: str, key: str | None = None) -> str:
    """Where the removals of one repository are recorded. Quoted, slashes too: `removals/team-a%2Fworker/`, so that
    listing one repository never lists another whose name it begins (`team-a` and `team-a/worker`). Another pruned
    Region's repository by its regional name (`removals/us-east-1%3Ateam-a%2Fworker/`); the home Region's (key None) as
    a deployment of one Region has it."""
    return f"{REMOVALS_PREFIX}{quote(regional_name(repository, key), safe='')}/"


def removal_key(repository: str, removed_at: datetime, event_id: str, position: int, key: str | None = None) -> str:
    """One recorded removal: sorted by time within its repository; the event id and the image's position in the
    event make it unique (a lifecycle event lists up to about ten images)."""
    prefix = removals_prefix(repository, key)
    return f"{prefix}{removed_at:%Y%m%dT%H%M%SZ}-{quote(event_id, safe='')}-{position}.json"


def alert_claim_key(repository: str, removed_at: datetime, event_id: str, key: str | None = None) -> str:
    """The claim of the one alert of an event, beside its removals (a record's key ends in `-<n>.json`, never so)."""
    prefix = removals_prefix(repository, key)
    return f"{prefix}{removed_at:%Y%m%dT%H%M%SZ}-{quote(event_id, safe='')}{ALERT_CLAIM_SUFFIX}"


# --- The sentinel's EventBridge rules (infra/sentinel.py), as the demo's emulator routes events too. Native lifecycle
# actions arrive as the CloudTrail service event PolicyExecutionEvent (no trail needed); API calls only with a trail
# that records management events in the Region (the stack's context flag `cloudTrailManagementEvents`).
IMAGE_DELETED_PATTERN: dict[str, object] = {
    "source": ["aws.ecr"],
    "detail-type": ["ECR Image Action"],
    "detail": {"action-type": ["DELETE"], "result": ["SUCCESS"]},
}
IMAGE_ARCHIVED_PATTERN: dict[str, object] = {
    "source": ["aws.ecr"],
    "detail-type": ["ECR Image Action"],
    "detail": {"action-type": ["UPDATE_STORAGE_CLASS"], "result": ["SUCCESS"], "target-storage-class": ["ARCHIVE"]},
}
LIFECYCLE_ACTION_PATTERN: dict[str, object] = {
    "source": ["aws.ecr"],
    "detail-type": ["AWS Service Event via CloudTrail"],
    "detail": {"eventSource": ["ecr.amazonaws.com"], "eventName": ["PolicyExecutionEvent"]},
}
API_CALL_PATTERN: dict[str, object] = {
    "source": ["aws.ecr"],
    "detail-type": ["AWS API Call via CloudTrail"],
    "detail": {"eventSource": ["ecr.amazonaws.com"], "eventName": ["PutLifecyclePolicy", "BatchDeleteImage"]},
}

# The inventory bucket's own guards and the break-glass role (only with a trail, domain/sentinel/guard_events.py): calls that
# change the bucket's policy, lifecycle rules, versioning, ownership, replication, object lock, default encryption,
# event notifications, access logging or public access block (CloudTrail's names of the calls that the actions of
# infra/inventory_bucket.py BUCKET_GUARD_CALLS authorize), allowed or refused; the break-glass role assumed; any call
# made as it. The
# stack fills in the bucket's name and the role's ARN. These rules deliver `{GUARD_DELIVERY_KEY: <the event>}`, so
# that the sentinel tells them from the removals it watches (a BatchDeleteImage made as the break-glass role matches
# both the API-call rule and the break-glass rule: one watch, one break-glass alert).
GUARD_DELIVERY_KEY = "guard"


def is_guard_delivery(event: object) -> bool:
    """Whether an event the sentinel is given is such a delivery (handlers/guard.py alerts it)."""
    return isinstance(event, dict) and set(event) == {GUARD_DELIVERY_KEY}


BUCKET_GUARD_EVENT_NAMES = (
    "PutBucketPolicy",
    "DeleteBucketPolicy",
    "PutBucketLifecycle",
    "DeleteBucketLifecycle",
    "PutBucketVersioning",
    "PutBucketOwnershipControls",
    "DeleteBucketOwnershipControls",
    "PutBucketReplication",
    "DeleteBucketReplication",
    "PutObjectLockConfiguration",
    "PutBucketEncryption",
    "DeleteBucketEncryption",
    "PutBucketNotification",
    "PutBucketLogging",
    "PutBucketPublicAccessBlock",
    "DeleteBucketPublicAccessBlock",
)
ASSUME_ROLE_EVENT_NAMES = ("AssumeRole", "AssumeRoleWithSAML", "AssumeRoleWithWebIdentity")


def bucket_guard_pattern(bucket_name: str) -> dict[str, object]:
    return {
        "source": ["aws.s3"],
        "detail-type": ["AWS API Call via CloudTrail"],
        "detail": {
            "eventSource": ["s3.amazonaws.com"],
            "eventName": list(BUCKET_GUARD_EVENT_NAMES),
            "requestParameters": {"bucketName": [bucket_name]},
        },
    }


def break_glass_assumed_pattern(role_arn: str) -> dict[str, object]:
    return {
        "source": ["aws.sts"],
        "detail-type": ["AWS API Call via CloudTrail"],
        "detail": {
            "eventSource": ["sts.amazonaws.com"],
            "eventName": list(ASSUME_ROLE_EVENT_NAMES),
            "requestParameters": {"roleArn": [role_arn]},
        },
    }


def break_glass_used_pattern(role_arn: str) -> dict[str, object]:
    """Any call of any service made with the role's session (CloudTrail names the role as the session's issuer)."""
    return {
        "detail-type": ["AWS API Call via CloudTrail"],
        "detail": {"userIdentity": {"sessionContext": {"sessionIssuer": {"arn": [role_arn]}}}},
    }


# --- The lease table (one evaluation per repository at a time).
LEASE_TABLE_KEY = "repository"
LEASE_TABLE_TTL_ATTRIBUTE = "expiresAt"

# --- The functions' environment, as the stack sets it.
BUCKET_NAME_VARIABLE = "BUCKET_NAME"
REGISTRY_ID_VARIABLE = "REGISTRY_ID"
LEASE_TABLE_VARIABLE = "LEASE_TABLE"
TOPIC_ARN_VARIABLE = "TOPIC_ARN"
STATE_MACHINE_ARN_VARIABLE = "STATE_MACHINE_ARN"
# The workflow's Map concurrency (the stack's context `mapConcurrency`), for the targets step's batch size.
MAP_CONCURRENCY_VARIABLE = "MAP_CONCURRENCY"
RULES_FILE_VARIABLE = "RULES_FILE"
# The Regions whose registries the deployment prunes (a JSON array, the stack's context `regions`): unset, the
# function's own Region only. The first is the home Region, where the stack, its bucket and its functions are.
PRUNED_REGIONS_VARIABLE = "PRUNED_REGIONS"
# The ARN of this deployment's sentinel role (the sentinel and the report step): the one writer whose records of
# removals/ count (services/removals.py); the bucket policy lets no other principal write there.
SENTINEL_ROLE_ARN_VARIABLE = "SENTINEL_ROLE_ARN"
# The AWS inventory collector's (lists are JSON arrays: an IAM role name may contain a comma).
COLLECT_REGIONS_VARIABLE = "COLLECT_REGIONS"
# The file of the spoke roles (domain.inventory.spoke_roles.SpokeRoles), which the stack ships in the Lambda asset as
# SPOKE_ROLES_FILE and names here: unset, the collector reads this account only.
SPOKE_ROLES_FILE_VARIABLE = "SPOKE_ROLES_FILE"
SPOKE_ROLES_FILE = "spoke-roles.json"
TASK_DEFINITION_REVISIONS_VARIABLE = "TASK_DEFINITION_REVISIONS"
EKS_CLUSTERS_VARIABLE = "EKS_CLUSTERS"
# The file of the eksClusters ({"eksClusters": [<arn>, ...]}), which the stack ships in the Lambda asset and names here:
# 500 ARNs are about 35 KB, over Lambda's 4 KB for a function's environment (EKS_CLUSTERS, still read, holds none then).
EKS_CLUSTERS_FILE_VARIABLE = "EKS_CLUSTERS_FILE"
# "true": the collector also reads Amazon Inspector's coverage (inspectorInUse) into in-use/inspector-<account>-<region>.json.
INSPECTOR_IN_USE_VARIABLE = "INSPECTOR_IN_USE"
EKS_CLUSTERS_FILE = "eks-clusters.json"


def hold_key(region: str, repository: str, digest: str) -> str:
    """Where the hold of one image lives: one object per (Region, repository, digest); a repository's slashes stay, so
    that `holds/<region>/<repository>/` lists that repository's holds (and its sub-repositories', which the reader
    tells apart by the digest being the last part)."""
    return f"{hold_prefix(region, repository)}{digest}.json"


def hold_prefix(region: str, repository: str) -> str:
    """Where one repository's holds live (hold_key): one listing names them all (and its sub-repositories')."""
    return f"{HOLDS_PREFIX}{region}/{repository}/"
