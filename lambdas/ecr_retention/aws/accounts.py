"""The accounts the AWS inventory collector reads (ports.AccountAccess): the caller's own account with its own
credentials, and each spoke account through a read-only role assumed with STS AssumeRole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import boto3

from ecr_retention.aws.clients import ClientFactory
from ecr_retention.aws.ecs_workloads import EcsWorkloads
from ecr_retention.aws.inspector_coverage import InspectorCoverage
from ecr_retention.aws.lambda_functions import LambdaFunctions
from ecr_retention.aws.reading import read
from ecr_retention.aws.scheduled_tasks import ScheduledTasks
from ecr_retention.domain.inventory.aws import account_of_role
from ecr_retention.ports import AccountAccess, AccountReaders, CoverageReader

ROLE_SESSION_NAME = "ecr-retention-collector"
# A collection of one account takes minutes; the role's default maximum session is one hour.
ASSUMED_ROLE_SECONDS = 3600


class CollectorAccounts(AccountAccess, Protocol):
    """The collector's accounts: what it reads in each (ports.AccountAccess), and each one's client factory, with
    which the EKS adapter (aws.eks_clusters) signs the tokens of the account's clusters."""

    def own_account(self) -> str: ...

    def factory_for(self, account: str) -> ClientFactory: ...

    def coverage(self, account: str, region: str) -> CoverageReader: ...


class AwsAccounts:
    """One object per collection run: assumed-role credentials are kept for its lifetime only (an hour at most),
    and each reader it hands out starts with an empty task-definition cache."""

    def __init__(
        self, factory: ClientFactory, role_arns: Sequence[str] = (), *, session_name: str = ROLE_SESSION_NAME
    ) -> None:
        accounts = [account_of_role(arn) for arn in role_arns]
        if len(set(accounts)) != len(accounts):
            raise ValueError("one role per account: two role ARNs name the same account")
        self._factory = factory
        self._roles = dict(zip(accounts, role_arns, strict=True))
        self._session_name = session_name
        self._assumed: dict[str, ClientFactory] = {}
        self._own_account: str | None = None

    def own_account(self) -> str:
        if self._own_account is None:
            identity = read("GetCallerIdentity", "STS", lambda: self._factory.client("sts").get_caller_identity())
            self._own_account = str(identity["Account"])
        return self._own_account

    def accounts(self) -> list[str]:
        """The own account first, then each spoke account in the order of its role ARN."""
        own = self.own_account()
        return [own, *(account for account in self._roles if account != own)]

    def readers(self, account: str, region: str) -> AccountReaders:
        factory = self.factory_for(account)
        return AccountReaders(
            account=account,
            region=region,
            ecs=EcsWorkloads(factory.client("ecs", region)),
            scheduled=ScheduledTasks(factory.client("events", region), factory.client("scheduler", region)),
            functions=LambdaFunctions(factory.client("lambda", region)),
        )

    def coverage(self, account: str, region: str) -> CoverageReader:
        """Amazon Inspector's coverage of ECR in the account and region (inspectorInUse)."""
        return InspectorCoverage(self.factory_for(account).client("inspector2", region), region)

    def factory_for(self, account: str) -> ClientFactory:
        """The own account's factory, or one over the account's assumed role (a role listed for the own account
        is used too: the operator asked for it). Raises ReadFailed when the role cannot be assumed, ValueError
        for an account that is neither the own one nor a spoke's."""
        role_arn = self._roles.get(account)
        if role_arn is None:
            if account != self.own_account():
                raise ValueError(f"account {account} has no role to assume")
            return self._factory
        if account not in self._assumed:
            response = read(
                "AssumeRole",
                f"role {role_arn}",
                lambda: self._factory.client("sts").assume_role(
                    RoleArn=role_arn, RoleSessionName=self._session_name, DurationSeconds=ASSUMED_ROLE_SECONDS
                ),
            )
            credentials = response["Credentials"]
            session = boto3.session.Session(
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
            )
            self._assumed[account] = self._factory.for_session(session)
        return self._assumed[account]
