"""cdk-nag acknowledgements, each on the one construct it concerns and with its reason.

cdk-nag 3 reports IAM5 (wildcards) once per wildcard, as `AwsSolutions-IAM5[Resource::<the resource>]` or
`[Action::<the action>]`, and has no prefix or bulk form: every wildcard the stack grants is acknowledged
by name, so a new wildcard fails synthesis until someone writes down why it is needed.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

MIN_REASON_CHARACTERS = 30


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    if len(reason) < MIN_REASON_CHARACTERS:
        raise ValueError(f"{finding}: say why, in more than {MIN_REASON_CHARACTERS} characters")
    Validations.of(scope).acknowledge(Acknowledgment(id=finding, reason=reason))
