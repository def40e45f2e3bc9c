"""The deployment's settings, read once from the CDK context and validated like the rules file.

Values come from cdk.json's "context" (JSON values) or from `-c key=value` on the command line (always a
string: a list may be written as JSON, `["a","b"]`, or comma-separated, `a,b`). A bad value stops synthesis
with one line naming the context key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ecr_retention.cdk import constants
from ecr_retention.cdk.repository_scope import PrunedRegions, RepositoryTag, coarsened_matchers, managed_patterns
from ecr_retention.domain.config import RepositoryPattern, RetentionConfig, check_pruned_regions
from ecr_retention.domain.errors import InputError, describe_validation_error
from ecr_retention.domain.inventory.aws import RoleArn, account_of_role, inventory_name, one_role_per_account
from ecr_retention.domain.inventory.clusters import ClusterId
from ecr_retention.domain.inventory.eks_clusters import EksCluster, EksClusterArn
from ecr_retention.domain.inventory.inspector_manifest import inspector_name
from ecr_retention.domain.registry.replication import AwsRegion
from ecr_retention.loading import known_regions


def _list_from_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not a JSON list ({error.msg}); write a list as JSON or comma-separated") from None
    return [part.strip() for part in text.split(",") if part.strip()]


def _object_from_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON object ({error.msg})") from None


def _optional_list_from_text(value: Any) -> Any:
    return None if value is None else _list_from_text(value)


# AwsRegion's own pattern (its StringConstraints), so that the two never differ.
_REGION_NAME = re.compile(get_args(AwsRegion)[1].pattern)


def _region_name(value: Any) -> Any:
    """A Region's name, said in words rather than as the pattern it fails; and a Region botocore's partition data
    lists (`mars-north-1` has a Region's shape and is none, issue 43)."""
    if isinstance(value, str) and not _REGION_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a Region's name (like eu-west-1)")
    return _known_region(value) if isinstance(value, str) else value


def _known_region(value: str) -> str:
    known = known_regions()
    problem = known.problem(value) if known is not None else None
    if problem is not None:
        raise ValueError(problem)
    return value


ScheduleExpression = Annotated[str, StringConstraints(pattern=r"^(cron|rate)\(.+\)$", max_length=256)]
Email = Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254)]
# An AWS Organizations organization ID, as Organizations writes it (o- and 10 to 32 lowercase letters or digits).
OrganizationId = Annotated[str, StringConstraints(pattern=r"^o-[a-z0-9]{10,32}$")]
# A path of organizational units, as aws:PrincipalOrgPaths holds it (o-.../r-.../ou-.../.../), a trailing * for the OUs
# below the last one.
OrganizationPath = Annotated[
    str, StringConstraints(pattern=r"^o-[a-z0-9]{10,32}/r-[0-9a-z]{4,32}(/ou-[0-9a-z]{4,32}-[a-z0-9]{8,32})*/\*?$")
]
# A repository name prefix for the push rule: the characters a repository name may hold.
RepositoryPrefix = Annotated[str, StringConstraints(pattern=r"^[a-z0-9._/-]{1,256}$")]
TextList = BeforeValidator(_list_from_text)
GLOB_CHARACTERS = frozenset("*?")


def cluster_name(arn: str) -> str:
    return EksCluster(arn).name


def account_of_cluster(arn: str) -> str:
    """arn:aws:eks:eu-west-1:210987654321:cluster/prod -> 210987654321."""
    return EksCluster(arn).account


VpcId = Annotated[str, StringConstraints(pattern=r"^vpc-[0-9a-f]{8,17}$")]
SubnetId = Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]{8,17}$")]


class CollectorVpc(BaseModel):
    """`collectorVpc`: the subnets (with a route to the clusters' private endpoints, and to the AWS APIs through
    VPC endpoints or a NAT) that the collector runs in; the stack adds its security group."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    vpc_id: VpcId = Field(alias="vpcId")
    subnet_ids: tuple[SubnetId, ...] = Field(alias="subnetIds", min_length=1)


GitHubRepository = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")]
GitRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./*-]{1,255}$")]
# GitHub's numeric repository id (`gh api repos/OWNER/NAME --jq .id`): it survives a rename or a transfer, and a
# repository created later under the same name has another one.
GitHubRepositoryId = Annotated[int, Field(strict=True, ge=1)]
# The OIDC subject the reviewers' repository must be set to issue (GitHub's customization API, docs/review.md):
# `repo:<owner>/<name>:repository_id:<id>:<context>`. IAM reads no claim of GitHub's token but aud and sub, so the
# id is bound through the sub claim.
SUBJECT_CLAIM_KEYS = ("repo", "repository_id", "context")
# With `workflow`, the subject ends with the job's workflow too (`job_workflow_ref`, customized last): the reusable
# workflow, at a branch or tag, that alone may assume the role. No wildcard: the trust matches subjects with StringLike.
JobWorkflowRef = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}/\.github/workflows/[A-Za-z0-9_.-]{1,100}\.ya?ml"
        r"@refs/(heads|tags)/[A-Za-z0-9_./-]{1,255}$"
    ),
]


class Reviewers(BaseModel):
    """`reviewers`: the GitHub repository whose workflows may assume the reviewers' role (infra/reviewers.py), and
    from which refs: `branches` (globs allowed, `release/*`; never a bare `*`) and, with `pullRequests` (off unless
    asked: any pull request's workflow, edited by whoever can push a branch), every pull request's workflow."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    repository: GitHubRepository
    repository_id: GitHubRepositoryId = Field(alias="repositoryId")
    branches: tuple[GitRef, ...] = ()
    pull_requests: bool = Field(default=False, alias="pullRequests")
    # The review workflow the role trusts alone, as GitHub's job_workflow_ref claim names it
    # (owner/repo/.github/workflows/file.yml@refs/heads/main): a reusable workflow the rules repository calls, which a
    # pull request cannot edit (docs/review.md, "Make it required, and binding").
    workflow: JobWorkflowRef | None = None
    # The account has GitHub's OIDC provider already (one per issuer): imported, unless this says create it.
    create_oidc_provider: bool = Field(default=False, alias="createOidcProvider")

    @model_validator(mode="before")
    @classmethod
    def _repository_id_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and "repositoryId" not in data and "repository_id" not in data:
            repository = data.get("repository", "OWNER/NAME")
            raise ValueError(
                f"repositoryId is required: the numeric id of {repository} (gh api repos/{repository} --jq .id), "
                "which the role's trust binds through the repository's customized OIDC subject (docs/review.md)"
            )
        return data

    @field_validator("branches")
    @classmethod
    def _no_branch_is_every_branch(cls, branches: tuple[str, ...]) -> tuple[str, ...]:
        # In a StringLike pattern `*` also matches `/`: a branch of only `*` and `/` trusts every branch anyone can push.
        every = [branch for branch in branches if not branch.strip("*/")]
        if every:
            raise ValueError(f"{every[0]!r} trusts every branch; name the branches (globs such as release/* allowed)")
        return branches

    @property
    def subjects(self) -> list[str]:
        """The token's `sub` claims the role trusts, in the customized form (SUBJECT_CLAIM_KEYS):
        `repo:<owner>/<name>:repository_id:<id>:pull_request` and `...:ref:refs/heads/<branch>`, each followed by
        `:job_workflow_ref:<workflow>` when `workflow` pins the review workflow."""
        base = f"repo:{self.repository}:repository_id:{self.repository_id}"
        contexts = ["pull_request"] if self.pull_requests else []
        contexts += [f"ref:refs/heads/{branch}" for branch in self.branches]
        pinned = f":job_workflow_ref:{self.workflow}" if self.workflow else ""
        return [f"{base}:{context}{pinned}" for context in contexts]

    @model_validator(mode="after")
    def _some_ref_allowed(self) -> Reviewers:
        if not self.subjects:
            raise ValueError("allows no workflow: list branches, or set pullRequests true")
        return self


def check_manifest_names(arns: Sequence[str], spoke_accounts: Collection[str] = ()) -> list[str]:
    """The clusters' manifest names (in-use/<name>.json), each written by one cluster only; raises ValueError. Two
    clusters of one name (in two regions) would overwrite each other's manifest, and in-use/aws-*.json are the AWS
    inventory's, which the bucket policy lets only the collector write. A cluster of `spoke_accounts` (a spoke
    exporter's) writes in-use/<account>/<name>.json: two spokes' clusters of one name are two keys, two clusters."""
    names = [cluster_name(arn) for arn in arns]
    keys = [
        f"{account_of_cluster(arn)}/{name}" if account_of_cluster(arn) in spoke_accounts else name
        for arn, name in zip(arns, names, strict=True)
    ]
    refuse_twice(keys)
    refuse_reserved(names)
    return names


def refuse_reserved(names: Sequence[str]) -> None:
    reserved = sorted(name for name in names if name.startswith(constants.AWS_INVENTORY_NAME_PREFIX))
    if reserved:
        raise ValueError(
            f"cluster names starting with {constants.AWS_INVENTORY_NAME_PREFIX!r} are reserved for the AWS "
            f"inventory's manifests (in-use/aws-<account>-<region>.json): {', '.join(reserved)}"
        )
    reserved = sorted(name for name in names if name.startswith(constants.INSPECTOR_NAME_PREFIX))
    if reserved:
        raise ValueError(
            f"cluster names starting with {constants.INSPECTOR_NAME_PREFIX!r} are reserved for Amazon Inspector's "
            f"in-use reading (in-use/inspector-<account>-<region>.json): {', '.join(reserved)}"
        )


def refuse_twice(keys: Sequence[str]) -> None:
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"two clusters would write the same manifest in-use/<name>.json: {', '.join(twice)}")


def check_partitions(arns: Sequence[str]) -> None:
    """Only the partitions of constants.EKS_PARTITIONS (the pattern of an EKS ARN admits any aws-*); raises
    ValueError."""
    for arn in arns:
        partition = EksCluster(arn).partition
        if partition not in constants.EKS_PARTITIONS:
            raise ValueError(
                f"{arn}: partition {partition} is not supported (one of {', '.join(constants.EKS_PARTITIONS)})"
            )


def check_one_account_without_spoke_role(arns: Sequence[str], spoke_role_arns: Sequence[str]) -> None:
    """The collector reads the clusters of this stack's account with its own role, and another account's only
    through that account's spoke role (spokeRoleArns): clusters of two accounts without one cannot both be this
    account's. Raises ValueError. (EcrRetention also checks them against its account, when it knows it.)"""
    spoke_accounts = {account_of_role(arn) for arn in spoke_role_arns}
    own = sorted({account_of_cluster(arn) for arn in arns} - spoke_accounts)
    if len(own) > 1:
        raise ValueError(
            f"clusters of accounts {', '.join(own)} and no {constants.SPOKE_ROLE_ARNS_CONTEXT_KEY} role of any of "
            "them: the collector reads only this account's clusters with its own role; add a spoke role for each "
            "other account (docs/aws-inventory.md)"
        )


class DeploySettings(BaseModel):
    """Field aliases are the context keys (constants.*_CONTEXT_KEY)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    rules_file: Path = Field(default=Path(constants.DEFAULT_RULES_FILE), alias=constants.RULES_FILE_CONTEXT_KEY)
    sweep_schedule: ScheduleExpression = Field(
        default=constants.DEFAULT_SWEEP_SCHEDULE, alias=constants.SWEEP_SCHEDULE_CONTEXT_KEY
    )
    tagger_schedule: ScheduleExpression = Field(
        default=constants.DEFAULT_TAGGER_SCHEDULE, alias=constants.TAGGER_SCHEDULE_CONTEXT_KEY
    )
    report_emails: Annotated[tuple[Email, ...], TextList] = Field(default=(), alias=constants.REPORT_EMAILS_CONTEXT_KEY)
    operations_emails: Annotated[tuple[Email, ...], TextList] = Field(
        default=(), alias=constants.OPERATIONS_EMAILS_CONTEXT_KEY
    )
    exporter_cluster_arns: Annotated[tuple[EksClusterArn, ...], TextList] = Field(
        default=(), alias=constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY
    )
    # After exporter_cluster_arns: its validator checks each role's account against the listed clusters.
    spoke_exporter_role_arns: Annotated[tuple[RoleArn, ...], TextList] = Field(
        default=(), alias=constants.SPOKE_EXPORTER_ROLE_ARNS_CONTEXT_KEY
    )
    # None: derived from the rules file's policies (push_prefixes); an empty list: no push trigger.
    push_repository_prefixes: Annotated[
        tuple[RepositoryPrefix, ...] | None, BeforeValidator(_optional_list_from_text)
    ] = Field(default=None, alias=constants.PUSH_PREFIXES_CONTEXT_KEY)
    map_concurrency: int = Field(
        default=constants.DEFAULT_MAP_CONCURRENCY,
        ge=1,
        le=constants.MAX_MAP_CONCURRENCY,
        alias=constants.MAP_CONCURRENCY_CONTEXT_KEY,
    )
    aws_inventory: bool = Field(default=True, alias=constants.AWS_INVENTORY_CONTEXT_KEY)
    # After aws_inventory: its validator checks that the collector runs.
    inspector_in_use: bool = Field(default=False, alias=constants.INSPECTOR_IN_USE_CONTEXT_KEY)
    collector_schedule: ScheduleExpression = Field(
        default=constants.DEFAULT_COLLECTOR_SCHEDULE, alias=constants.COLLECTOR_SCHEDULE_CONTEXT_KEY
    )
    # Empty: the region the stack is deployed to.
    collect_regions: Annotated[tuple[Annotated[AwsRegion, AfterValidator(_known_region)], ...], TextList] = Field(
        default=(), alias=constants.COLLECT_REGIONS_CONTEXT_KEY
    )
    spoke_role_arns: Annotated[tuple[RoleArn, ...], TextList] = Field(
        default=(), alias=constants.SPOKE_ROLE_ARNS_CONTEXT_KEY
    )
    # The Regions whose registries the deployment prunes, the home Region (the stack's) among them; empty: the
    # stack's own Region only (docs/regions.md).
    regions: Annotated[tuple[Annotated[AwsRegion, BeforeValidator(_region_name)], ...], TextList] = Field(
        default=(), alias=constants.REGIONS_CONTEXT_KEY
    )
    task_definition_revisions: int = Field(
        default=constants.DEFAULT_TASK_DEFINITION_REVISIONS, ge=0, alias=constants.TASK_DEFINITION_REVISIONS_CONTEXT_KEY
    )
    # After exporter_cluster_arns, spoke_role_arns and aws_inventory: its validator checks against them.
    eks_clusters: Annotated[tuple[EksClusterArn, ...], TextList] = Field(
        default=(), alias=constants.EKS_CLUSTERS_CONTEXT_KEY
    )
    collector_vpc: Annotated[CollectorVpc | None, BeforeValidator(_object_from_text)] = Field(
        default=None, alias=constants.COLLECTOR_VPC_CONTEXT_KEY
    )
    break_glass_role_arn: RoleArn | None = Field(default=None, alias=constants.BREAK_GLASS_ROLE_ARN_CONTEXT_KEY)
    # Who may place and lift holds (docs/holds.md): the bucket policy lets only these roles, and the stack's holders
    # role when holders_role is true, write holds/ (and them and the break-glass role delete there). Neither: nobody.
    holder_role_arns: Annotated[tuple[RoleArn, ...], TextList] = Field(
        default=(), alias=constants.HOLDER_ROLE_ARNS_CONTEXT_KEY
    )
    holders_role: bool = Field(default=False, alias=constants.HOLDERS_ROLE_CONTEXT_KEY)
    # Neither: the synthesizer's CloudFormation execution role (infra.deployment_role); both: every role of both.
    deployment_role_arn: RoleArn | None = Field(default=None, alias=constants.DEPLOYMENT_ROLE_ARN_CONTEXT_KEY)
    deployment_role_arns: Annotated[tuple[RoleArn, ...], TextList] = Field(
        default=(), alias=constants.DEPLOYMENT_ROLE_ARNS_CONTEXT_KEY
    )
    # None: the bucket policy names each spoke account (spokeExporterRoleArns).
    organization_id: OrganizationId | None = Field(default=None, alias=constants.ORGANIZATION_ID_CONTEXT_KEY)
    # After organization_id: its validator checks that each path is of that organization.
    organization_paths: Annotated[tuple[OrganizationPath, ...], TextList] = Field(
        default=(), alias=constants.ORGANIZATION_PATHS_CONTEXT_KEY
    )
    # A trail records management events in the Region: the sentinel's rule for API calls is added (infra/sentinel.py).
    cloud_trail_management_events: bool = Field(default=False, alias=constants.CLOUDTRAIL_MANAGEMENT_EVENTS_CONTEXT_KEY)
    reviewers: Annotated[Reviewers | None, BeforeValidator(_object_from_text)] = Field(
        default=None, alias=constants.REVIEWERS_CONTEXT_KEY
    )
    repository_tag: Annotated[RepositoryTag | None, BeforeValidator(_object_from_text)] = Field(
        default=None, alias=constants.REPOSITORY_TAG_CONTEXT_KEY
    )

    @field_validator("inspector_in_use")
    @classmethod
    def _inspector_is_read_by_the_collector(cls, enabled: bool, info: ValidationInfo) -> bool:
        if enabled and info.data.get("aws_inventory") is False:
            raise ValueError(
                f"the collector reads Amazon Inspector's coverage: {constants.AWS_INVENTORY_CONTEXT_KEY} is false"
            )
        return enabled

    @field_validator("exporter_cluster_arns")
    @classmethod
    def _one_manifest_key_per_cluster(cls, arns: tuple[str, ...]) -> tuple[str, ...]:
        # One cluster (account and name) twice, whatever its layout; the keys each really writes are checked once
        # the spoke exporter roles are known (_one_writer_per_manifest_key).
        names = [cluster_name(arn) for arn in arns]
        clusters = [(account_of_cluster(arn), name) for arn, name in zip(arns, names, strict=True)]
        refuse_twice([name for (account, name) in clusters if clusters.count((account, name)) > 1])
        refuse_reserved(names)
        return arns

    @model_validator(mode="after")
    def _one_writer_per_manifest_key(self) -> DeploySettings:
        """Two clusters writing one key would overwrite each other: this account's layout is in-use/<name>.json, a
        spoke exporter's in-use/<account>/<name>.json, so two spokes' clusters of one name are two keys."""
        check_manifest_names(
            self.exporter_cluster_arns, {account_of_role(arn) for arn in self.spoke_exporter_role_arns}
        )
        return self

    @field_validator("spoke_exporter_role_arns")
    @classmethod
    def _each_spoke_exporter_has_a_listed_cluster(cls, arns: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # A spoke exporter writes only for the listed clusters of its own account: a role whose account has none
        # could never write, which is a typo in one of the two lists. (Skipped when the cluster list is invalid:
        # its own error says why.)
        if "exporter_cluster_arns" not in info.data:
            return arns
        accounts_with_clusters = {account_of_cluster(arn) for arn in info.data["exporter_cluster_arns"]}
        orphans = [arn for arn in arns if account_of_role(arn) not in accounts_with_clusters]
        if orphans:
            raise ValueError(
                f"no cluster of the role's account is listed in {constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY} "
                f"(list the spoke clusters there too): {', '.join(orphans)}"
            )
        return arns

    _one_role_per_account = field_validator("spoke_role_arns")(one_role_per_account)

    @field_validator("organization_paths")
    @classmethod
    def _paths_of_the_organization(cls, paths: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        # A path narrows the organization, never replaces it (aws:PrincipalOrgPaths alone is not a fixed principal
        # to S3's Block Public Access). Skipped when organizationId is invalid: its own error says why.
        if not paths or "organization_id" not in info.data:
            return paths
        organization = info.data["organization_id"]
        if organization is None:
            raise ValueError(f"a path narrows {constants.ORGANIZATION_ID_CONTEXT_KEY}, which is not set")
        outside = [path for path in paths if not path.startswith(f"{organization}/")]
        if outside:
            raise ValueError(f"not a path of organization {organization}: {', '.join(outside)}")
        return paths

    @field_validator("regions")
    @classmethod
    def _each_region_once(cls, regions: tuple[str, ...]) -> tuple[str, ...]:
        twice = next((region for region in regions if regions.count(region) > 1), None)
        if twice is not None:
            raise ValueError(f"Region {twice} is listed twice")
        return regions

    @field_validator("eks_clusters")
    @classmethod
    def _each_agentless_cluster_has_its_own_manifest(
        cls, arns: tuple[str, ...], info: ValidationInfo
    ) -> tuple[str, ...]:
        if arns and info.data.get("aws_inventory") is False:
            raise ValueError(f"the collector reads these clusters: {constants.AWS_INVENTORY_CONTEXT_KEY} is false")
        check_partitions(arns)
        check_one_account_without_spoke_role(arns, info.data.get("spoke_role_arns", ()))
        names = check_manifest_names(arns)
        # One writer per manifest: the exporter's and the collector's would overwrite each other every hour.
        # (A spoke exporter's cluster writes in-use/<account>/<name>.json: another key, another cluster.)
        spoke_exporters = {account_of_role(arn) for arn in info.data.get("spoke_exporter_role_arns", ())}
        exported = {
            cluster_name(arn)
            for arn in info.data.get("exporter_cluster_arns", ())
            if account_of_cluster(arn) not in spoke_exporters
        }
        both = sorted(set(names) & exported)
        if both:
            raise ValueError(
                f"also in {constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY} (one writer per in-use/<name>.json: the "
                f"collector or the in-cluster exporter): {', '.join(both)}"
            )
        return arns

    def check_against_the_stack(self, config: RetentionConfig, *, account: str | None, region: str | None) -> None:
        """What needs the rules file and, when synthesis knows them, the stack's account and region; raises
        InputError with one line. Every cluster the stack lets write a manifest, and every aws-<account>-<region>
        the collector writes, must be expected (safety.clusters) or optional (safety.optional_clusters): a manifest
        of neither would protect only while it exists, and blocks nothing when it is deleted or emptied."""
        if account is not None:
            strangers = [cluster.arn for cluster in self.own_eks_clusters if cluster.account != account]
            if strangers:
                raise InputError(
                    f"cdk context: {constants.EKS_CLUSTERS_CONTEXT_KEY}: {strangers[0]} is of another account than "
                    f"this stack's ({account}) and no {constants.SPOKE_ROLE_ARNS_CONTEXT_KEY} role is of its account: "
                    "the collector reads another account's clusters only through that account's spoke role"
                )
        for source, clusters in self.manifest_sources(account=account, region=region):
            missing = [cluster for cluster in clusters if cluster not in config.safety.listed]
            if missing:
                raise InputError(unexpected_clusters_message(source, missing, self.rules_file))
        self.check_policy_regions(config, region=region)

    def pruned_regions(self, region: str | None) -> PrunedRegions:
        """The stack's Region (`region`, None when synthesis does not know it) first, then the other Regions of
        `regions` in their order. Without the stack's Region, the first of `regions` is the home Region (app.py
        checks that the CDK CLI deploys there). Raises InputError when `regions` does not list the stack's Region."""
        if region is not None and self.regions and region not in self.regions:
            raise InputError(
                f"cdk context: {constants.REGIONS_CONTEXT_KEY}: the stack's Region {region} is not listed "
                f"({', '.join(self.regions)}); list the home Region, where the stack is deployed, with the others"
            )
        home = region if region is not None else next(iter(self.regions), None)
        return PrunedRegions(
            home=home, others=tuple(each for each in self.regions if each != home), tag=self.repository_tag
        )

    def check_policy_regions(self, config: RetentionConfig, *, region: str | None) -> None:
        """Every Region a policy names is one the deployment prunes (its rules would never apply otherwise); when
        synthesis knows no Region at all, a policy may name none. Raises InputError with one line."""
        pruned = self.pruned_regions(region)
        if pruned.home is not None:
            check_pruned_regions(config, pruned.names, str(self.rules_file))
            return
        for index, policy in enumerate(config.policies):
            if policy.regions is not None:
                raise InputError(
                    f"{self.rules_file}: policies[{index}].regions: synthesis does not know the stack's Region; name "
                    f"the stack's Regions in the context key {constants.REGIONS_CONTEXT_KEY} (docs/regions.md)"
                )

    def check_cli_region(self, cli_region: str | None) -> None:
        """The stack has no fixed Region: the CDK CLI deploys it to its own (CDK_DEFAULT_REGION, from AWS_REGION or
        the profile). With `regions`, that must be the home Region, the first, where the other Regions' stacks send
        their events. Raises InputError with one line."""
        if not self.regions or cli_region is None or cli_region == self.regions[0]:
            return
        raise InputError(
            f"cdk context: {constants.REGIONS_CONTEXT_KEY}: the home Region is {self.regions[0]} (the first listed) "
            f"but the CDK CLI deploys to {cli_region}; deploy with AWS_REGION={self.regions[0]}, or list "
            f"{cli_region} first (docs/regions.md)"
        )

    def manifest_sources(self, *, account: str | None, region: str | None) -> list[tuple[str, list[ClusterId]]]:
        """The clusters whose manifests the stack lets be written, by the context key that causes them: this
        account's (in-use/<name>.json, written by this account's roles: the collector, an exporter without a spoke
        exporter role) by their bare name, a spoke's (in-use/<account>/<name>.json) as <account>/<name>."""
        sources = [
            (constants.EKS_CLUSTERS_CONTEXT_KEY, [ClusterId.here(cluster_name(arn)) for arn in self.eks_clusters]),
            *self.exporter_sources(),
        ]
        if self.aws_inventory:
            sources.append(self.collector_source(account=account, region=region))
        if self.inspector_in_use and account is not None:
            sources.append(self.inspector_source(account=account, region=region))
        return sources

    def inspector_source(self, *, account: str, region: str | None) -> tuple[str, list[ClusterId]]:
        """Amazon Inspector's inspector-<account>-<region> readings: this account's, in each collected region (or
        this stack's)."""
        regions = list(self.collect_regions) or ([region] if region is not None else [])
        return (
            f"{constants.INSPECTOR_IN_USE_CONTEXT_KEY} (the collector writes in-use/inspector-<account>-<region>.json "
            f"for this account, in each of {constants.COLLECT_REGIONS_CONTEXT_KEY})",
            [ClusterId.here(inspector_name(account, where)) for where in regions],
        )

    def exporter_sources(self) -> list[tuple[str, list[ClusterId]]]:
        """The exporters' clusters: those of this stack's account (and of accounts without a spoke exporter role),
        then those a spoke exporter role writes for."""
        spoke_exporter_accounts = {account_of_role(arn) for arn in self.spoke_exporter_role_arns}
        exported = [EksCluster(arn) for arn in self.exporter_cluster_arns]
        return [
            (
                constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY,
                [
                    ClusterId.here(cluster.name)
                    for cluster in exported
                    if cluster.account not in spoke_exporter_accounts
                ],
            ),
            (
                f"{constants.EXPORTER_CLUSTER_ARNS_CONTEXT_KEY} (a cluster of a "
                f"{constants.SPOKE_EXPORTER_ROLE_ARNS_CONTEXT_KEY} account)",
                [
                    ClusterId(cluster.account, cluster.name)
                    for cluster in exported
                    if cluster.account in spoke_exporter_accounts
                ],
            ),
        ]

    def collector_source(self, *, account: str | None, region: str | None) -> tuple[str, list[ClusterId]]:
        """The collector's aws-<account>-<region> manifests: this account (when synthesis knows it) and each spoke
        account, in each collected region (or this stack's)."""
        accounts = ([account] if account is not None else []) + sorted(self.spoke_accounts)
        regions = list(self.collect_regions) or ([region] if region is not None else [])
        collected = [ClusterId.here(inventory_name(each, where)) for each in accounts for where in regions]
        return (
            f"{constants.AWS_INVENTORY_CONTEXT_KEY} (the collector writes in-use/aws-<account>-<region>.json "
            f"for this account and each {constants.SPOKE_ROLE_ARNS_CONTEXT_KEY} account, in each of "
            f"{constants.COLLECT_REGIONS_CONTEXT_KEY})",
            collected,
        )

    @property
    def deploying_roles(self) -> tuple[str, ...]:
        """deploymentRoleArn and deploymentRoleArns, each role once; empty: the synthesizer's."""
        listed = (*([] if self.deployment_role_arn is None else [self.deployment_role_arn]), *self.deployment_role_arns)
        return tuple(dict.fromkeys(listed))

    @property
    def spoke_accounts(self) -> frozenset[str]:
        return frozenset(account_of_role(arn) for arn in self.spoke_role_arns)

    @property
    def own_eks_clusters(self) -> tuple[EksCluster, ...]:
        """The eksClusters of this stack's account: every one whose account has no spoke role."""
        return tuple(EksCluster(arn) for arn in self.eks_clusters if account_of_cluster(arn) not in self.spoke_accounts)

    @classmethod
    def from_context(cls, lookup: Callable[[str], Any]) -> DeploySettings:
        """`lookup` is `node.try_get_context`; absent keys take their defaults."""
        aliases = [field.alias for field in cls.model_fields.values() if field.alias]
        values = {alias: lookup(alias) for alias in aliases}
        try:
            return cls.model_validate({key: value for key, value in values.items() if value is not None})
        except ValidationError as error:
            raise InputError(f"cdk context: {describe_validation_error(error, cls)}") from None

    def push_repository_filter(
        self, config: RetentionConfig, region: str | None = None
    ) -> list[str | dict[str, str]] | None:
        """The push rule's `detail.repository-name` matchers: the configured prefixes, or else one per policy
        pattern of the rules file (`app` -> exactly `app`, `team-*/*` -> prefix `team-`; of the policies that apply
        in `region`, when given: an empty list when none does). None when a pattern starts with a glob (every
        repository may match): the rule then takes every push and the targets step keeps the repositories a policy
        matches."""
        if self.push_repository_prefixes is not None:
            return [{"prefix": prefix} for prefix in self.push_repository_prefixes]
        return derived_repository_filter(managed_patterns(config, region))

    @property
    def push_trigger_enabled(self) -> bool:
        """An empty `pushRepositoryPrefixes` list turns the push trigger off: only the schedule runs."""
        return self.push_repository_prefixes != ()


def unexpected_clusters_message(source: str, clusters: Sequence[ClusterId], rules_file: Path) -> str:
    """One line; a spoke's cluster is named as the lists must write it, <account>/<name>."""
    names = [str(cluster) for cluster in clusters]
    which = f"cluster {names[0]} is" if len(names) == 1 else f"clusters {', '.join(names)} are"
    them = "it" if len(names) == 1 else "each"
    return (
        f"cdk.json {source}: {which} in neither safety.clusters nor safety.optional_clusters of {rules_file}; "
        f"list {them} in one of them (optional: read and protects, never blocks)"
    )


def literal_prefix(pattern: RepositoryPattern) -> str:
    for position, character in enumerate(pattern):
        if character in GLOB_CHARACTERS:
            return pattern[:position]
    return pattern


def derived_repository_filter(patterns: Iterable[str]) -> list[str | dict[str, str]] | None:
    split = exact_names_and_prefixes(patterns)
    if split is None:
        return None
    # What a prefix already covers adds nothing; past EventBridge's pattern size, names become prefixes.
    return coarsened_matchers(*split)


def exact_names_and_prefixes(patterns: Iterable[str]) -> tuple[set[str], set[str]] | None:
    """The patterns without a glob, and the literal prefixes of the others; None when one starts with a glob."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for pattern in patterns:
        prefix = literal_prefix(pattern)
        if prefix == pattern:
            exact.add(pattern)
        elif not prefix:
            return None
        else:
            prefixes.add(prefix)
    return exact, prefixes
