"""IAM statements with exact actions and resources, shared by the constructs, and the cdk-nag
acknowledgements of the wildcards they must contain (repository patterns, object key prefixes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ecr_retention.cdk import nag
from ecr_retention.cdk.repository_scope import RepositoryTag, ScopedPatterns, is_exact

# arn:<partition>:ecr:<region>:<account> as cdk-nag prints it in a finding (the stack's own Region).
NAG_REGISTRY_ARN = "arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>"
ALL_REPOSITORIES = "*"
# Repository patterns by Region (infra.repository_scope.PrunedRegions): the key None is the stack's own Region, whose
# ARNs name the stack's Region as today's single-Region template does; another key names a pruned Region.
RegionalPatterns = Mapping[str | None, Sequence[str]]


def repository_arns(scope: Construct, patterns: Sequence[str], region: str | None = None) -> list[str]:
    """The IAM resource for each rules-file pattern, unchanged (infra.repository_scope explains why), in the
    Region's registry (None: the stack's)."""
    stack = Stack.of(scope)
    return [
        stack.format_arn(service="ecr", region=region, resource="repository", resource_name=pattern)
        for pattern in patterns
    ]


def ecr_statements(scope: Construct, actions: Sequence[str], patterns: RegionalPatterns) -> list[iam.PolicyStatement]:
    """One statement per Region (the stack's own first): a role's policy that outgrows IAM's inline limit is split by
    the CDK statement by statement into managed policies (6,144 characters each), so no one statement may hold every
    Region's patterns. With a repository tag (ScopedPatterns.tag), a Region's exact names are one statement on every
    repository of its registry, conditioned on the tag, its glob patterns another, unconditioned."""
    tag = patterns.tag if isinstance(patterns, ScopedPatterns) else None
    statements: list[iam.PolicyStatement] = []
    for region, each in patterns.items():
        named = [pattern for pattern in each if tag is None or not is_exact(pattern)]
        if named:
            statements.append(
                iam.PolicyStatement(actions=sorted(actions), resources=repository_arns(scope, named, region))
            )
        if tag is not None and len(named) < len(each):
            statements.append(
                iam.PolicyStatement(
                    actions=sorted(actions),
                    resources=repository_arns(scope, [ALL_REPOSITORIES], region),
                    conditions=tag.condition,
                )
            )
    return statements


def grant_ecr(role: iam.IRole, scope: Construct, actions: Sequence[str], patterns: RegionalPatterns) -> None:
    for statement in ecr_statements(scope, actions, patterns):
        role.add_to_principal_policy(statement)


def acknowledge_repository_patterns(role: iam.IRole, patterns: RegionalPatterns, why: str) -> None:
    tag = patterns.tag if isinstance(patterns, ScopedPatterns) else None
    for region, each in patterns.items():
        registry = NAG_REGISTRY_ARN if region is None else f"arn:<AWS::Partition>:ecr:{region}:<AWS::AccountId>"
        where = "" if region is None else f" in {region}"
        if tag is not None and not all(map(has_glob, each)):
            _acknowledge_tagged(role, f"{registry}:repository/*", tag, f"{where} ({why})")
        for pattern in filter(has_glob, each):
            nag.acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{registry}:repository/{pattern}]",
                f"Repository pattern {pattern!r}{where} {why}: IAM matches it like the rules file does.",
            )


def has_glob(pattern: str) -> bool:
    return not is_exact(pattern)


def _acknowledge_tagged(role: iam.IRole, arn: str, tag: RepositoryTag, what: str) -> None:
    nag.acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::{arn}]",
        f"The repositories{what} that the rules file names exactly, too many for their ARNs to fit IAM's policy "
        f"sizes: only those tagged {tag.key}={tag.value} (aws:ResourceTag, cdk.json repositoryTag).",
    )


def bucket_nag_arn(bucket: s3.IBucket) -> str:
    bucket_id = Stack.of(bucket).get_logical_id(bucket.node.default_child)  # type: ignore[arg-type]
    return f"<{bucket_id}.Arn>"


def objects_statement(bucket: s3.IBucket, actions: Sequence[str], key_patterns: Sequence[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        actions=sorted(actions), resources=[bucket.arn_for_objects(pattern) for pattern in key_patterns]
    )


def acknowledge_key_patterns(role: iam.IRole, bucket: s3.IBucket, reasons: dict[str, str]) -> None:
    """`reasons` maps each object key pattern holding a wildcard to why the role needs it."""
    for pattern, reason in reasons.items():
        nag.acknowledge(role, f"AwsSolutions-IAM5[Resource::{bucket_nag_arn(bucket)}/{pattern}]", reason)


def list_statement(bucket: s3.IBucket, prefixes: Sequence[str] | None) -> iam.PolicyStatement:
    """s3:ListBucket, narrowed to key prefixes when given. Without it, a GetObject of a missing key is
    AccessDenied instead of NoSuchKey; a role that reads keys which may not exist needs it unconditioned."""
    conditions = {"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in prefixes]}} if prefixes else None
    return iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket.bucket_arn], conditions=conditions)
