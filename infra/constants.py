"""Names, key layout and retention periods of the deployed resources, in one place.

Plain values only, no aws_cdk import, so that reading them never starts jsii.
"""

from __future__ import annotations

STACK_NAME = "EcrRetention"
STACK_DESCRIPTION = "ecr-retention: prunes Amazon ECR images beyond lifecycle policies, never what a cluster runs"
STACK_TAGS = {"project": "ecr-retention"}

# The rules file is validated at synth time; `cdk synth -c config=PATH` points at another one.
RULES_FILE_CONTEXT_KEY = "config"
DEFAULT_RULES_FILE = "retention.yaml"

# Object key layout of the inventory bucket, shared with the exporter and the pruner.
IN_USE_PREFIX = "in-use/"
# The session tag EKS Pod Identity sets to the cluster's name; the exporter writes in-use/<that name>.json.
EKS_CLUSTER_NAME_TAG = "eks-cluster-name"
REPORTS_PREFIX = "reports/"
ACCESS_LOGS_PREFIX = "inventory-bucket/"

# An overwritten manifest or report stays recoverable this long, to explain a recent run after the fact.
NONCURRENT_VERSION_RETENTION_DAYS = 30
REPORT_RETENTION_DAYS = 365
ACCESS_LOG_RETENTION_DAYS = 90
INCOMPLETE_UPLOAD_RETENTION_DAYS = 1

# The exporter's Kubernetes identity; the role trusts only this service account in this namespace,
# so the manifests in deploy/ must use the same names.
EXPORTER_NAMESPACE = "ecr-retention"
EXPORTER_SERVICE_ACCOUNT = "ecr-retention-exporter"
EKS_POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"

REPORT_TOPIC_DISPLAY_NAME = "ecr-retention run summaries"
