"""What the sentinel hears about the inventory bucket's own guards and the break-glass role (only with a trail; the
rules are layout.py's `bucket_guard_pattern`, `break_glass_assumed_pattern` and `break_glass_used_pattern`): the
CloudTrail record of one call, as EventBridge delivers it in `detail`, and the alert it gives. Pure pydantic.

Sources (the fixtures under tests/fixtures/guards/ and their SOURCES.md):
- The CloudTrail record (userIdentity with sessionContext.sessionIssuer, eventSource, eventName, eventID, eventTime,
  awsRegion, sourceIPAddress, requestParameters, errorCode, errorMessage):
  https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
- S3 bucket-level calls are management events, delivered to EventBridge as "AWS API Call via CloudTrail" with source
  aws.s3 (https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-s3.html); AssumeRole with source aws.sts
  (https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-sts.html), a read-only management event that reaches
  a rule only in the state ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail-management.html).
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ecr_retention.domain.timestamps import UtcDatetime
from ecr_retention.layout import ASSUME_ROLE_EVENT_NAMES, BUCKET_GUARD_EVENT_NAMES

GuardKind = Literal["bucket-guard", "break-glass-assumed", "break-glass-used"]
SUBJECT_LIMIT = 100  # SNS refuses a longer subject


class CloudTrailPart(BaseModel):
    """Unknown fields are ignored (AWS adds fields); the ones read are required to be what they claim."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")


class SessionIssuer(CloudTrailPart):
    arn: str | None = None


class SessionAttributes(CloudTrailPart):
    mfa_authenticated: str | None = Field(default=None, alias="mfaAuthenticated")


class SessionContext(CloudTrailPart):
    session_issuer: SessionIssuer | None = Field(default=None, alias="sessionIssuer")
    attributes: SessionAttributes | None = None


class CallerIdentity(CloudTrailPart):
    type: str | None = None
    arn: str | None = None
    principal_id: str | None = Field(default=None, alias="principalId")
    invoked_by: str | None = Field(default=None, alias="invokedBy")
    session_context: SessionContext | None = Field(default=None, alias="sessionContext")

    @property
    def who(self) -> str:
        named = self.arn or self.principal_id or self.invoked_by or "an unnamed caller"
        through = f" through {self.invoked_by}" if self.invoked_by and self.invoked_by != named else ""
        return named + through

    @property
    def issuer(self) -> str | None:
        context = self.session_context
        return None if context is None or context.session_issuer is None else context.session_issuer.arn

    @property
    def mfa(self) -> str | None:
        context = self.session_context
        return None if context is None or context.attributes is None else context.attributes.mfa_authenticated


class GuardRequest(CloudTrailPart):
    bucket_name: str | None = Field(default=None, alias="bucketName")
    role_arn: str | None = Field(default=None, alias="roleArn")
    role_session_name: str | None = Field(default=None, alias="roleSessionName")


class GuardCall(CloudTrailPart):
    """One call of any service, as CloudTrail recorded it; a refused call carries errorCode and changed nothing."""

    event_source: str = Field(alias="eventSource", min_length=1)
    event_name: str = Field(alias="eventName", min_length=1)
    event_id: str = Field(alias="eventID", min_length=1)
    event_time: UtcDatetime = Field(alias="eventTime")
    aws_region: str | None = Field(default=None, alias="awsRegion")
    source_ip_address: str | None = Field(default=None, alias="sourceIPAddress")
    user_identity: CallerIdentity = Field(default=CallerIdentity(), alias="userIdentity")
    request_parameters: GuardRequest | None = Field(default=None, alias="requestParameters")
    error_code: str | None = Field(default=None, alias="errorCode")

    @property
    def kind(self) -> GuardKind:
        if self.event_source == "s3.amazonaws.com" and self.event_name in BUCKET_GUARD_EVENT_NAMES:
            return "bucket-guard"
        if self.event_source == "sts.amazonaws.com" and self.event_name in ASSUME_ROLE_EVENT_NAMES:
            return "break-glass-assumed"
        return "break-glass-used"

    @property
    def request(self) -> GuardRequest:
        return self.request_parameters or GuardRequest()


WHAT_FOLLOWS = {
    "bucket-guard": (
        "Only the stack's deployment (CloudFormation's execution role) and the break-glass role may change the "
        "inventory bucket's policy, lifecycle rules, versioning, ownership, replication, object lock, encryption, "
        "event notifications, access logging or public access block: a lifecycle rule that expires in-use/, "
        "suspended versioning, a looser policy, a KMS key that can be disabled or logs that stop removes what the "
        "protection of running images rests on. If no deployment ran now, compare the bucket with the stack (cdk "
        "diff) and deploy it again."
    ),
    "break-glass-assumed": (
        "The break-glass role may delete the in-use manifests, the in-use memory, the sentinel's records and the "
        "manifest cache, and change the bucket's guards. Confirm that this is an agreed recovery."
    ),
    "break-glass-used": (
        "A call made as the break-glass role, which may delete what protection rests on. Confirm that this is an "
        "agreed recovery."
    ),
}


def guard_subject(call: GuardCall) -> str:
    subjects = {
        "bucket-guard": f"{call.event_name} on the inventory bucket",
        "break-glass-assumed": "the break-glass role was assumed",
        "break-glass-used": f"the break-glass role called {call.event_name}",
    }
    refused = " (refused)" if call.error_code else ""
    return f"ecr-retention sentinel: {subjects[call.kind]}{refused}"[:SUBJECT_LIMIT]


def _headline(call: GuardCall) -> str:
    request = call.request
    if call.kind == "bucket-guard":
        return f"{call.event_name} on the inventory bucket {request.bucket_name}."
    if call.kind == "break-glass-assumed":
        session = f" (session {request.role_session_name})" if request.role_session_name else ""
        return f"The break-glass role {request.role_arn} was assumed{session}."
    bucket = f" on bucket {request.bucket_name}" if request.bucket_name else ""
    return f"The break-glass role {call.user_identity.issuer} called {call.event_name} of {call.event_source}{bucket}."


def guard_body(call: GuardCall) -> str:
    identity = call.user_identity
    where = ", ".join(
        part
        for part in (
            f"from {call.source_ip_address}" if call.source_ip_address else "",
            f"in {call.aws_region}" if call.aws_region else "",
        )
        if part
    )
    lines = [
        _headline(call),
        f"By: {identity.who}" + (f" (MFA: {identity.mfa})" if identity.mfa is not None else ""),
        f"When: {call.event_time:%Y-%m-%d %H:%M:%S} UTC" + (f", {where}" if where else ""),
    ]
    if call.error_code:
        lines.append(f"Refused: {call.error_code}. Nothing changed, but someone tried.")
    lines += [f"CloudTrail event: {call.event_id}", "", WHAT_FOLLOWS[call.kind]]
    return "\n".join(lines)
