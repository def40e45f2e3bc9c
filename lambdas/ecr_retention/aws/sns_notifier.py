"""Run summaries to an SNS topic (ports.Notifier), kept inside SNS's limits whatever the caller passes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from ecr_retention.aws.errors import AWS_CALL_ERRORS, AwsCallFailed, describe_failure
from ecr_retention.ports import NotificationFailed

# Publish refuses a request whose message, subject and attributes (names, data types and values) add up to
# more than 256 KiB, counted in UTF-8 bytes, not characters.
SNS_MAX_REQUEST_BYTES = 262_144
# "Less than 100 characters", ASCII, no line breaks or control characters (it becomes an email subject).
SNS_MAX_SUBJECT_CHARS = 99
ATTRIBUTE_DATA_TYPE = "String"
# Names SNS accepts: letters, digits, '_', '-', '.'; no leading, trailing or doubled '.'; no AWS./Amazon. prefix.
ATTRIBUTE_NAME = re.compile(r"(?!\.)(?!.*\.\.)(?!.*\.$)[A-Za-z0-9_.-]{1,256}")
RESERVED_ATTRIBUTE_PREFIXES = ("aws.", "amazon.")
TRUNCATED = "\n\n… truncated"
ASCII_PUNCTUATION = str.maketrans({"–": "-", "—": "-", "−": "-", "‘": "'", "’": "'", "“": '"', "”": '"', "·": "-"})
NEAR_LINE_BREAK_CHARS = 4096  # cut at the last line break when it is this close to the limit


class NotificationError(AwsCallFailed, NotificationFailed):
    """Publish failed (after botocore's retries)."""


def sns_subject(text: str) -> str:
    """The subject as SNS accepts it: line breaks and control characters become spaces, accented letters lose
    their accents, other non-ASCII characters become '?', and a subject of 100 characters or more is cut."""
    decomposed = unicodedata.normalize("NFKD", text.translate(ASCII_PUNCTUATION))  # é -> e + accent, … -> ...
    ascii_text = "".join(c if c.isascii() else "?" for c in decomposed if not unicodedata.combining(c))
    printable = "".join(c if " " <= c <= "~" else " " for c in ascii_text)
    subject = " ".join(printable.split())
    if len(subject) > SNS_MAX_SUBJECT_CHARS:
        subject = subject[: SNS_MAX_SUBJECT_CHARS - 3].rstrip() + "..."
    return subject


def fit_message(message: str, budget_bytes: int, report_location: str | None) -> str:
    """The message unchanged when its UTF-8 encoding fits the budget; otherwise its beginning, cut at a line
    break where one is near (else at a character boundary), followed by a line saying where the rest is."""
    encoded = message.encode("utf-8")
    if len(encoded) <= budget_bytes:
        return message
    marker = TRUNCATED + (f", see the report at {report_location}" if report_location else "")
    keep = budget_bytes - len(marker.encode("utf-8"))
    if keep < 0:
        raise ValueError(f"no room for the message: {budget_bytes} bytes left under SNS's limit")
    head = encoded[:keep].decode("utf-8", errors="ignore")  # drops a character cut in half
    line_break = head.rfind("\n")
    if line_break > 0 and len(head) - line_break <= NEAR_LINE_BREAK_CHARS:
        head = head[:line_break]
    return head + marker


class SnsNotifier:
    """One topic through an injected boto3 SNS client. Message attributes are sent as String."""

    def __init__(self, topic_arn: str, sns_client: Any) -> None:
        self._topic_arn = topic_arn
        self._client = sns_client

    def publish(
        self,
        subject: str,
        message: str,
        attributes: Mapping[str, str],
        *,
        report_location: str | None = None,
    ) -> None:
        check_attributes(attributes)
        if not message:
            raise ValueError("SNS does not publish an empty message")
        clean_subject = sns_subject(subject)
        attributes_bytes = sum(
            len(name.encode()) + len(ATTRIBUTE_DATA_TYPE) + len(value.encode()) for name, value in attributes.items()
        )
        budget = SNS_MAX_REQUEST_BYTES - attributes_bytes - len(clean_subject)
        request: dict[str, Any] = {
            "TopicArn": self._topic_arn,
            "Message": fit_message(message, budget, report_location),
            "MessageAttributes": {
                name: {"DataType": ATTRIBUTE_DATA_TYPE, "StringValue": value} for name, value in attributes.items()
            },
        }
        if clean_subject:  # SNS refuses an empty Subject; without one, email uses the topic's default
            request["Subject"] = clean_subject
        try:
            self._client.publish(**request)
        except AWS_CALL_ERRORS as error:
            code, description = describe_failure("Publish", error)
            raise NotificationError(f"{self._topic_arn}: {description}", code=code) from None


def check_attributes(attributes: Mapping[str, str]) -> None:
    """A bad attribute is the caller's bug: say which, rather than let SNS refuse the whole run's summary."""
    for name, value in attributes.items():
        if not ATTRIBUTE_NAME.fullmatch(name) or name.lower().startswith(RESERVED_ATTRIBUTE_PREFIXES):
            raise ValueError(f"message attribute name {name!r} is not one SNS accepts")
        if not value:
            raise ValueError(f"message attribute {name!r}: SNS refuses an empty value")
