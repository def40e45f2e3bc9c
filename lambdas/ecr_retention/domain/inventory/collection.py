"""What the AWS inventory collector is told: the spoke roles it reads other accounts through (one per account) and how
many task-definition revisions it counts in use. Apart from aws.py, which builds the manifests' entries, so that the
functions' settings and the spoke roles' file (handlers/settings.py, loading.py) load without the manifest's models."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

# arn:<partition>:iam::<account>:role/<path/><name>; IAM allows `+=,.@_-` in names and `/` in paths.
RoleArn = Annotated[
    str, StringConstraints(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$", max_length=2048)
]

DEFAULT_REVISIONS = 5


def account_of_role(role_arn: str) -> str:
    """arn:aws:iam::210987654321:role/ecr-retention-reader -> 210987654321."""
    return role_arn.split(":")[4]


def one_role_per_account(role_arns: tuple[str, ...]) -> tuple[str, ...]:
    """The spoke roles, refused (ValueError, for a settings validator) when two name one account: the collector
    writes one manifest per account and region, aws-<account>-<region>."""
    accounts = [account_of_role(arn) for arn in role_arns]
    repeated = sorted({account for account in accounts if accounts.count(account) > 1})
    if repeated:
        raise ValueError(f"one role per account; {', '.join(repeated)} has more than one")
    return role_arns
