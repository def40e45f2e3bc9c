"""Who is a cluster (SPEC "Who is a cluster"): its account and its name, one value from where a key is read to where
it is used.

This account's clusters write `in-use/<name>.json` and are named by their bare name (`prod`) in the rules, the
reports and the in-use memory; a spoke account's write `in-use/<account>/<name>.json` and are named `<account>/<name>`
(`210987654321/prod`). A reading of one account never satisfies, replaces or un-suspects a cluster of another: two
accounts' clusters of one name are two clusters.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Annotated, Any, Final, Literal

from pydantic import PlainSerializer, PlainValidator, StringConstraints, WithJsonSchema

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
ACCOUNT_PATTERN = r"[0-9]{12}"
ClusterName = Annotated[str, StringConstraints(pattern=f"^{NAME_PATTERN}$")]
# A cluster as the in-use memory and the reports write it: `prod`, or `210987654321/prod` for a spoke's.
ClusterText = Annotated[str, StringConstraints(pattern=f"^({ACCOUNT_PATTERN}/)?{NAME_PATTERN}$")]
_NAME = re.compile(NAME_PATTERN)
_ACCOUNT = re.compile(ACCOUNT_PATTERN)


class _Home(enum.Enum):
    THIS_ACCOUNT = "this account"


# The account of the deployment's own clusters: a marker, not an optional, so that no module reads "no account" as
# "ours" while the next reads it as "unknown".
THIS_ACCOUNT: Final = _Home.THIS_ACCOUNT
ClusterAccount = str | Literal[_Home.THIS_ACCOUNT]


@total_ordering
@dataclass(frozen=True, slots=True)
class ClusterId:
    """A cluster: the account whose folder its manifest is written in, and its name. Ordered by its text."""

    account: ClusterAccount  # a spoke's 12-digit account id, or THIS_ACCOUNT
    name: str

    @classmethod
    def here(cls, name: str) -> ClusterId:
        """A cluster of this account (`in-use/<name>.json`)."""
        return cls(THIS_ACCOUNT, name)

    @classmethod
    def parse(cls, text: str) -> ClusterId:
        """`prod` (this account's) or `210987654321/prod` (a spoke's); ValueError naming the text otherwise."""
        account, slash, name = text.rpartition("/")
        if not _NAME.fullmatch(name) or (slash and not _ACCOUNT.fullmatch(account)):
            raise ValueError(
                f"cluster {text!r}: a cluster is <name> (this account's) or <account>/<name> (a spoke account's, "
                "12 digits), the name of letters, digits, '.', '_' and '-'"
            )
        return cls(account if slash else THIS_ACCOUNT, name)

    @property
    def of_this_account(self) -> bool:
        return self.account is THIS_ACCOUNT

    @property
    def spoke_account(self) -> str | None:
        """The spoke's account id; None for a cluster of this account."""
        return None if self.account is THIS_ACCOUNT else self.account

    def __str__(self) -> str:
        return self.name if self.account is THIS_ACCOUNT else f"{self.account}/{self.name}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ClusterId):
            return NotImplemented
        return str(self) < str(other)


def _cluster_of_text(value: Any) -> ClusterId:
    if isinstance(value, ClusterId):
        return value
    if not isinstance(value, str):
        raise ValueError("a cluster is a string: <name>, or <account>/<name> for a spoke account's")
    return ClusterId.parse(value)


# A cluster in the rules file (safety.clusters, optional_clusters, tagging.clusters): read from its text, written back
# as its text.
ClusterRef = Annotated[
    ClusterId,
    PlainValidator(_cluster_of_text),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "pattern": f"^({ACCOUNT_PATTERN}/)?{NAME_PATTERN}$"}),
]
