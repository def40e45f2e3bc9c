"""Names, key layout, sizes and retention periods of the deployed resources, in one place.

Plain values only, no aws_cdk import, so that reading them never starts jsii. What the functions must agree on
(key prefixes, the lease table's schema, environment variable names) is defined once, in ecr_retention.layout,
which imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecr_retention import layout

STACK_NAME = "EcrRetention"
STACK_DESCRIPTION = "ecr-retention: prunes Amazon ECR images beyond lifecycle policies, never what a cluster runs"
STACK_TAGS = {"project": "ecr-retention"}

# --- Settings from the CDK context (cdk.json "context", or `-c key=value`); docs/deploy.md lists them.
# The rules file is validated at synth time and ships inside the function asset as retention.yaml.
RULES_FILE_CONTEXT_KEY = "config"
DEFAULT_RULES_FILE = "retention.yaml"
SWEEP_SCHEDULE_CONTEXT_KEY = "sweepSchedule"
DEFAULT_SWEEP_SCHEDULE = "cron(0 3 * * ? *)"  # every day at 03:00 UTC
TAGGER_SCHEDULE_CONTEXT_KEY = "taggerSchedule"
# Hourly: the tagger also runs on every manifest an exporter writes; the schedule is the safety net,
# and it publishes the manifest ages that the age alarms watch.
DEFAULT_TAGGER_SCHEDULE = "rate(1 hour)"
REPORT_EMAILS_CONTEXT_KEY = "reportEmails"
OPERATIONS_EMAILS_CONTEXT_KEY = "operationsEmails"
EXPORTER_CLUSTER_ARNS_CONTEXT_KEY = "exporterClusterArns"
# Exporter roles in other (spoke) accounts whose EKS clusters write their manifests to this stack's bucket.
SPOKE_EXPORTER_ROLE_ARNS_CONTEXT_KEY = "spokeExporterRoleArns"
PUSH_PREFIXES_CONTEXT_KEY = "pushRepositoryPrefixes"
MAP_CONCURRENCY_CONTEXT_KEY = "mapConcurrency"
# The AWS inventory collector (docs/aws-inventory.md): on unless `awsInventory` is false, so that the images ECS
# and Lambda use are protected out of the box.
AWS_INVENTORY_CONTEXT_KEY = "awsInventory"
COLLECTOR_SCHEDULE_CONTEXT_KEY = "collectorSchedule"
# Hourly, like the tagger: a collected manifest is at most about an hour old when a sweep reads it, far inside
# safety.inventory_max_age (6 h unless configured) and its age alarm (three quarters of it).
DEFAULT_COLLECTOR_SCHEDULE = "rate(1 hour)"
COLLECT_REGIONS_CONTEXT_KEY = "collectRegions"
# Amazon Inspector's coverage as one more in-use reading (docs/aws-inventory.md, "Amazon Inspector"): off unless
# `inspectorInUse` is true, because it needs Inspector's enhanced scanning, which is paid for.
INSPECTOR_IN_USE_CONTEXT_KEY = "inspectorInUse"
# The Regions whose registries the deployment prunes (docs/regions.md): the stack's own (the home Region, where the
# bucket and the functions are) and the others, each with a small stack that forwards its ECR events to the home
# Region's default event bus (infra.region_forwarder). Empty: the stack's own Region only.
REGIONS_CONTEXT_KEY = "regions"
# The forwarding stack of each pruned Region other than the home one: <prefix><region>, beside STACK_NAME.
FORWARDER_STACK_PREFIX = "EcrRetentionEvents-"
FORWARDER_STACK_DESCRIPTION = "ecr-retention: forwards this Region's ECR events to the home Region's default event bus"
SPOKE_ROLE_ARNS_CONTEXT_KEY = "spokeRoleArns"
TASK_DEFINITION_REVISIONS_CONTEXT_KEY = "taskDefinitionRevisions"
# EKS clusters the collector reads through their API, with an EKS access entry and nothing installed in them
# (docs/aws-inventory.md, "EKS clusters without an install"); and the VPC it then runs in, when their endpoints
# are private.
EKS_CLUSTERS_CONTEXT_KEY = "eksClusters"
COLLECTOR_VPC_CONTEXT_KEY = "collectorVpc"
# The partitions whose EKS clusters eksClusters may name: the commercial, China and GovCloud ones, where EKS access
# entries and the collector's STS-signed tokens work as documented. Another (an ISO partition) is a typo or a
# deployment this project never covered, and is refused at synthesis.
EKS_PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
# The one role that may delete the objects protection depends on (in-use/, the in-use memory, each run's targets
# and replication rules; infra.inventory_bucket): none when absent, administrators included.
BREAK_GLASS_ROLE_ARN_CONTEXT_KEY = "breakGlassRoleArn"
# Who may place and lift holds (docs/holds.md): these role ARNs, and the stack's own holders role when holdersRole.
HOLDER_ROLE_ARNS_CONTEXT_KEY = "holderRoleArns"
HOLDERS_ROLE_CONTEXT_KEY = "holdersRole"
# The role CloudFormation deploys the stack with, when the synthesizer names none (CliCredentialsStackSynthesizer) or
# `cdk deploy --role-arn` names another: besides it and the break-glass role nobody changes the inventory bucket's
# policy, lifecycle rules, versioning or ownership (infra.inventory_bucket, infra.deployment_role).
DEPLOYMENT_ROLE_ARN_CONTEXT_KEY = "deploymentRoleArn"
# The same, several (a list): while a deployment moves from one deploying role to another, the policy names both, so
# that the deployment that switches can still replace it. Together with deploymentRoleArn, every role of both.
DEPLOYMENT_ROLE_ARNS_CONTEXT_KEY = "deploymentRoleArns"
# The AWS Organizations organization (o-...) of the spoke accounts: the bucket policy then lets the listed exporter
# roles' names write from any account of it (aws:PrincipalOrgID) rather than naming each account, so that it keeps
# one size at any number of spokes (infra.inventory_bucket, docs/security.md).
ORGANIZATION_ID_CONTEXT_KEY = "organizationId"
# Organizational units of that organization (aws:PrincipalOrgPaths, `o-.../r-.../ou-.../`, a trailing `*` for the OUs
# below): with them, only accounts under one of these write (in addition to organizationId, never instead of it).
ORGANIZATION_PATHS_CONTEXT_KEY = "organizationPaths"
# A CloudTrail trail records the Region's management events (the stack creates none): the sentinel then also hears
# the API calls PutLifecyclePolicy and BatchDeleteImage ("AWS API Call via CloudTrail" reaches EventBridge only
# through a trail). Off by default: without a trail the rule would match nothing and imply a watch that is not there.
CLOUDTRAIL_MANAGEMENT_EVENTS_CONTEXT_KEY = "cloudTrailManagementEvents"
# A role GitHub Actions of one repository assume through OIDC to review rules changes (infra/reviewers.py).
REVIEWERS_CONTEXT_KEY = "reviewers"
# The tag ({"key": ..., "value": ...}) that marks the repositories the rules file names exactly, when they are too
# many for their ARNs to fit IAM's policy sizes (infra.repository_scope.RepositoryTag): the roles' grants on them are
# conditioned on it instead.
REPOSITORY_TAG_CONTEXT_KEY = "repositoryTag"
# What the collector's access entry lets it do in each cluster: read-only, cluster-wide, no Secrets
# (infra.eks_access explains the choice).
EKS_VIEW_POLICY = "AmazonEKSViewPolicy"
DEFAULT_TASK_DEFINITION_REVISIONS = 5  # ecr_retention.domain.inventory.aws.DEFAULT_REVISIONS
# Ten repositories at a time: ECR publishes no rate for DescribeImages or BatchDeleteImage, and ten workers
# stay well inside the throttling that the clients' retries ride out (ecr_retention.aws.clients).
DEFAULT_MAP_CONCURRENCY = 10
MAX_MAP_CONCURRENCY = 1000

# --- Object key layout of the inventory bucket: the functions' own names (ecr_retention.layout).
IN_USE_PREFIX = layout.IN_USE_PREFIX
HOLDS_PREFIX = layout.HOLDS_PREFIX  # holds/<region>/<repository>/<digest>.json: written only by the holders
# The AWS inventory collector's manifests, in-use/aws-<account>-<region>.json: only the collector writes them, and
# it writes nothing else (infra.inventory_bucket); an EKS cluster may therefore not be named aws-*.
AWS_INVENTORY_MANIFESTS = IN_USE_PREFIX + "aws-*.json"
AWS_INVENTORY_NAME_PREFIX = layout.AWS_INVENTORY_NAME_PREFIX
# Amazon Inspector's in-use reading (inspectorInUse): in-use/inspector-<account>-<region>.json, the collector's too.
INSPECTOR_NAME_PREFIX = layout.INSPECTOR_NAME_PREFIX
INSPECTOR_MANIFESTS = IN_USE_PREFIX + INSPECTOR_NAME_PREFIX + "*.json"
MANIFEST_CACHE_PREFIX = layout.MANIFEST_CACHE_PREFIX
RUNS_PREFIX = layout.RUNS_PREFIX
REPORTS_PREFIX = layout.REPORTS_PREFIX
REMOVALS_PREFIX = layout.REMOVALS_PREFIX
# Where the Distributed Map writes its per-item results (each map run under its own id); under runs/, so
# that they expire with the run state.
MAP_RESULTS_PREFIX = RUNS_PREFIX + "map-results"
ACCESS_LOGS_PREFIX = "inventory-bucket/"
# The session tags EKS Pod Identity sets: the exporter writes in-use/<eks-cluster-name>.json, and only
# sessions of the configured clusters' ARNs may write at all (names are unique only per region).
EKS_CLUSTER_NAME_TAG = "eks-cluster-name"
EKS_CLUSTER_ARN_TAG = "eks-cluster-arn"

# --- Retention.
# An overwritten manifest or report stays recoverable this long, to explain a recent run after the fact.
NONCURRENT_VERSION_RETENTION_DAYS = 30
REPORT_RETENTION_DAYS = 365
# Run state (targets, repository reports, map results) is read by the run's own report step only; a month
# leaves time to look into a failed run.
RUN_STATE_RETENTION_DAYS = 30
# Cached index manifests are immutable (keyed by digest); an expired one is fetched again (BatchGetImage).
MANIFEST_CACHE_RETENTION_DAYS = 90
# The sentinel's record of removals: long enough that a sweep's in-use-missing finding can say what removed an image
# a workload last pulled more than a year ago (ECR's own CloudTrail event history keeps 90 days).
REMOVAL_RECORD_RETENTION_DAYS = 400
# The repositories' snapshots kept for reviews (snapshots/): every sweep rewrites those it evaluates that changed, and
# the unchanged ones once they are a week old (services/swept.SNAPSHOT_REWRITTEN_AFTER, well inside this expiry).
SNAPSHOT_RETENTION_DAYS = 30
ACCESS_LOG_RETENTION_DAYS = 90
INCOMPLETE_UPLOAD_RETENTION_DAYS = 1
LOG_RETENTION = "THREE_MONTHS"  # of the functions and the state machine: a name of aws_logs.RetentionDays

# --- The exporter's Kubernetes identity; the role trusts only this service account in this namespace,
# so the manifests in deploy/ must use the same names.
EXPORTER_NAMESPACE = "ecr-retention"
EXPORTER_SERVICE_ACCOUNT = "ecr-retention-exporter"
EKS_POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"

# The collector's role has a fixed name, <stack name>-collector, so that a spoke's reader role can trust it
# before the hub is deployed and keeps trusting it if the role is ever replaced (ArnEquals on aws:PrincipalArn).
COLLECTOR_ROLE_NAME_SUFFIX = "-collector"

REPORT_TOPIC_DISPLAY_NAME = "ecr-retention run summaries"
OPERATIONS_TOPIC_DISPLAY_NAME = "ecr-retention operations alarms"

# --- Lambda functions: one asset, one runtime, one architecture.
# Python 3.13: the newest runtime that the asset test can import on our machines (pyenv ships 3.13, not
# 3.14). x86_64 rather than arm64 for the same reason: the bundle has aarch64 wheels (pydantic-core, PyYAML)
# and switching is this one constant, but an arm64 asset cannot be imported here, only listed.
LAMBDA_PYTHON_VERSION = "3.13"
LAMBDA_ARCHITECTURE = "x86_64"  # or "arm64"
# The ecr_retention package's module of each function; the handler is `<module>.lambda_handler`.
HANDLERS_PACKAGE = "ecr_retention.handlers"
# The rules file's name inside the asset: handlers.settings reads $LAMBDA_TASK_ROOT/retention.yaml.
ASSET_RULES_FILE = "retention.yaml"
# The collector's spoke roles inside the asset (spokeRoleArns, domain.inventory.spoke_roles.SpokeRoles): at 200 accounts the
# list is about 11.6 KB, over Lambda's 4 KB for a function's environment, so the collector's SPOKE_ROLES_FILE names it.
ASSET_SPOKE_ROLES_FILE = layout.SPOKE_ROLES_FILE
# The collector's eksClusters, likewise (500 ARNs are about 35 KB): its EKS_CLUSTERS_FILE names the file.
ASSET_EKS_CLUSTERS_FILE = layout.EKS_CLUSTERS_FILE
# What every function's environment holds besides its own settings. At the first model a process builds, pydantic
# looks for plugins (entry points of the `pydantic` group) in the metadata of every distribution on sys.path; the
# functions use none, and the search is about 2 ms of the evaluate step's cold import from the asset here
# (benchmarks/asset_bench.py), with the Lambda runtime's own distributions on its sys.path besides.
FUNCTION_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}


@dataclass(frozen=True)
class FunctionSize:
    memory_mb: int
    timeout_seconds: int


# Sized from `make bench` (benchmarks/plan_bench.py: planning 10,000 images takes 0.56 s of CPU and 110 MiB
# on one core; Lambda gives 1024 MB about 0.6 vCPU) and from the calls each function makes. Memory also
# buys CPU, which is what a cold start spends importing boto3, pydantic and Powertools (about 1 s at 1 vCPU).
FUNCTION_SIZES = {
    # DescribeRepositories in pages of 1,000 and one S3 write: seconds, even for 10,000 repositories.
    "targets": FunctionSize(memory_mb=512, timeout_seconds=120),
    # One repository of up to 10,000 images: ~1 s of CPU to parse and plan, 10 DescribeImages pages, a
    # re-check of the candidates (100 a call), BatchDeleteImage in waves of 100: tens of seconds. Archive is one
    # UpdateImageStorageClass call per image (no batch form): ~5 a second, so about 2,500 archive decisions fit;
    # the worker starts no removal in its last 90 s (services.act.DEADLINE_MARGIN_SECONDS), reports what it
    # did not attempt as failed (DeadlineReached), and the next run continues.
    # Must stay under the repository lease (ecr_retention.services.evaluate.DEFAULT_LEASE_SECONDS, 15 min).
    "evaluate": FunctionSize(memory_mb=1024, timeout_seconds=600),
    # Reads the repository reports with 16 threads (services.report.READ_THREADS), holds the run report in memory,
    # writes its JSON, page and sheet, and publishes one message. Memory grows with the images the run lists:
    # benchmarks/report_step.py measures a peak of about 250 MiB for 30,000 images and 750 MiB for 100,000 (some
    # 7 KiB per image over the imports), so 3008 MB (the limit every account has) holds a run of about 400,000
    # images; it runs once per sweep, for seconds.
    "report": FunctionSize(memory_mb=3008, timeout_seconds=300),
    # Parses one SQS batch and starts one execution.
    "push": FunctionSize(memory_mb=512, timeout_seconds=60),
    # One event: the in-use manifests and memory, DescribeImages by the referenced tags and digests (100 ids a call),
    # one restore, one publish; with a trail, the doctor snapshots a repository (10 pages for 10,000 images). Seconds;
    # the timeout leaves room for a large repository's snapshot.
    "sentinel": FunctionSize(memory_mb=1024, timeout_seconds=120),
    # Reads the in-use manifests, re-reads the deployed images and PutImage's new tags (10 a second quota).
    "tagger": FunctionSize(memory_mb=512, timeout_seconds=300),
    # One collection per account and region, one after the other: a call per page of each list, one
    # DescribeTaskDefinition per distinct task definition, one GetFunction per function version; about 1,500
    # calls (a minute or two) for 40 services, 300 tasks, 200 families and 100 function versions. Lambda's
    # maximum, because the work grows with accounts x regions and a manifest not written goes stale; an hourly
    # schedule never overlaps it. I/O bound: 512 MB is for the cold start's imports.
    "collector": FunctionSize(memory_mb=512, timeout_seconds=900),
}

# --- Step Functions.
# A sweep of 10,000 repositories at 10 at a time and ~30 s each takes about 8 hours; leases keep a run that
# overlaps the next from evaluating a repository twice.
STATE_MACHINE_TIMEOUT_HOURS = 24

# --- Push debounce: ECR push events wait in the queue this long before the push function sees them, and
# the function collects them for up to the batching window, so that a CI pipeline pushing an image, its
# platform manifests, signatures and SBOMs (and a burst of pushes to one repository) starts one evaluation.
PUSH_DELIVERY_DELAY_SECONDS = 300
PUSH_BATCHING_WINDOW_SECONDS = 60
PUSH_BATCH_SIZE = 1000
# AWS recommends a visibility timeout of six times the function's timeout for SQS event sources.
PUSH_VISIBILITY_TIMEOUT_SECONDS = 6 * FUNCTION_SIZES["push"].timeout_seconds
PUSH_MAX_RECEIVE_COUNT = 5
# At most this many push functions at a time (the SQS event source's MaximumConcurrency; 2 is SQS's minimum). Each
# invocation starts one run, and every run fans out to mapConcurrency evaluations: without a cap, a burst of pushes
# scales the poller up and starts runs side by side, each holding ECR's throttling budget. An invocation only
# starts an execution (seconds), so two drain a burst's batches quickly; what waits stays in the queue.
PUSH_MAX_CONCURRENCY = 2

# --- Asynchronous delivery (schedules, EventBridge rules, the tagger's async invocations): retries, then the
# delivery dead-letter queue. DLQs keep a message for SQS's maximum, 14 days.
DELIVERY_RETRY_ATTEMPTS = 3
DELIVERY_MAX_EVENT_AGE_HOURS = 2
DEAD_LETTER_RETENTION_DAYS = 14

# --- Alarms.
# A manifest-age alarm fires when a cluster's manifest passes this share of safety.inventory_max_age,
# so that a broken exporter CronJob is seen before its stale manifest blocks pruning.
MANIFEST_AGE_ALARM_FRACTION = 0.75
NO_SUCCESSFUL_RUN_DAYS = 2
