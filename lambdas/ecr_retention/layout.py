"""Names the stack (infra/) and the functions must agree on: the inventory bucket's key layout, the lease table's
attributes and the functions' environment variables. One definition, imported by both sides; no imports here, so
the CDK app reads it without loading the functions' dependencies."""

from __future__ import annotations

# --- The inventory bucket.
IN_USE_PREFIX = "in-use/"  # in-use/<cluster>.json, one manifest per cluster
# The AWS inventory collector's manifests, in-use/aws-<account>-<region>.json: an EKS cluster may not be named aws-*.
AWS_INVENTORY_NAME_PREFIX = "aws-"
MANIFEST_CACHE_PREFIX = "manifests/"  # manifests/<digest>.json: index manifests, immutable
RUNS_PREFIX = "runs/"  # runs/<runId>/: targets.json, replication.json, repositories/*.json
# The in-use memory (domain/in_use_memory.py): the pipeline's own state, written by the report step only.
IN_USE_MEMORY_KEY = "state/in-use-memory.json"
# The memory's file name offline, in a directory of manifests (`plan --manifests`, `snapshot --bucket --manifests`):
# no cluster name starts with `_`, so it is never a manifest's.
MEMORY_FILE = "_in-use-memory.json"
REPORTS_PREFIX = "reports/"  # reports/YYYY/MM/DD/<runId>.json, and its page (.html) and sheet (.csv)

# --- The lease table (one evaluation per repository at a time).
LEASE_TABLE_KEY = "repository"
LEASE_TABLE_TTL_ATTRIBUTE = "expiresAt"

# --- The functions' environment, as the stack sets it.
BUCKET_NAME_VARIABLE = "BUCKET_NAME"
REGISTRY_ID_VARIABLE = "REGISTRY_ID"
LEASE_TABLE_VARIABLE = "LEASE_TABLE"
TOPIC_ARN_VARIABLE = "TOPIC_ARN"
STATE_MACHINE_ARN_VARIABLE = "STATE_MACHINE_ARN"
RULES_FILE_VARIABLE = "RULES_FILE"
