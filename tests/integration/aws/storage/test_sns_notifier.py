"""SnsNotifier against moto SNS, read back through a subscribed SQS queue: exactly what a subscriber gets."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from ecr_retention.aws.sns_notifier import (
    SNS_MAX_REQUEST_BYTES,
    NotificationError,
    SnsNotifier,
    fit_message,
    sns_subject,
)
from tests.integration.aws.conftest import REGION
from tests.integration.aws.storage.faults import fail_with, record_requests

REPORT = "s3://inventory-123456789012-eu-west-1/reports/2026/11/30/run-1.json"
ATTRIBUTES = {"dry_run": "false", "outcome": "partial"}


@pytest.fixture
def sns() -> Any:
    return boto3.client("sns", region_name=REGION)


@pytest.fixture
def topic_arn(sns: Any) -> str:
    return str(sns.create_topic(Name="ecr-retention-runs")["TopicArn"])


@pytest.fixture
def subscriber(sns: Any, topic_arn: str) -> Any:
    """An SQS queue subscribed to the topic, receiving SNS's JSON envelope (not raw delivery)."""
    sqs = boto3.client("sqs", region_name=REGION)
    queue_url = sqs.create_queue(QueueName="run-summaries")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)

    def receive() -> dict[str, Any]:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
        assert len(messages) == 1
        envelope: dict[str, Any] = json.loads(messages[0]["Body"])
        return envelope

    return receive


def published_bytes(envelope: dict[str, Any]) -> int:
    """What SNS counts against its 256 KiB: message, subject and every attribute's name, type and value."""
    attributes = sum(
        len(name.encode()) + len(value["Type"].encode()) + len(value["Value"].encode())
        for name, value in envelope.get("MessageAttributes", {}).items()
    )
    return len(envelope["Message"].encode()) + len(envelope.get("Subject", "").encode()) + attributes


class TestPublish:
    def test_a_subscriber_receives_subject_message_and_string_attributes(
        self, sns: Any, topic_arn: str, subscriber: Any
    ) -> None:
        message = "Run run-1 (not a dry run): 3 repositories\n  app/api: deleted 12 images, 1.2 GiB\n"

        SnsNotifier(topic_arn, sns).publish("ecr-retention run-1: partial", message, ATTRIBUTES)

        envelope = subscriber()
        assert envelope["Subject"] == "ecr-retention run-1: partial"
        assert envelope["Message"] == message
        assert envelope["MessageAttributes"] == {
            "dry_run": {"Type": "String", "Value": "false"},
            "outcome": {"Type": "String", "Value": "partial"},
        }

    def test_a_subject_with_a_line_break_arrives_on_one_line(self, sns: Any, topic_arn: str, subscriber: Any) -> None:
        SnsNotifier(topic_arn, sns).publish("ecr-retention run-1:\nblocked\r\n", "body", ATTRIBUTES)

        assert subscriber()["Subject"] == "ecr-retention run-1: blocked"

    def test_a_subject_of_nothing_printable_is_left_out(self, sns: Any, topic_arn: str, subscriber: Any) -> None:
        # SNS refuses an empty Subject; without one, email subscribers see the topic's display name.
        requests = record_requests(sns, "Publish")

        SnsNotifier(topic_arn, sns).publish("\r\n", "body", ATTRIBUTES)

        assert "Subject" not in requests[0]  # moto would accept an empty one: check the request itself
        envelope = subscriber()
        assert "Subject" not in envelope
        assert envelope["Message"] == "body"

    def test_a_300_kb_message_is_cut_under_the_limit_with_a_pointer_to_the_report(
        self, sns: Any, topic_arn: str, subscriber: Any
    ) -> None:
        lines = [f"app/service-{number:05}: deleted 4 images, 312.0 MiB, tags v1.{number}" for number in range(5_000)]
        message = "\n".join(lines)
        assert len(message.encode()) > 300_000

        SnsNotifier(topic_arn, sns).publish("ecr-retention run-1: ok", message, ATTRIBUTES, report_location=REPORT)

        envelope = subscriber()
        received = envelope["Message"]
        assert published_bytes(envelope) <= SNS_MAX_REQUEST_BYTES
        assert published_bytes(envelope) > SNS_MAX_REQUEST_BYTES - 200  # cut at a line break: little is wasted
        assert received.endswith(f"\n\n… truncated, see the report at {REPORT}")
        kept = received.removesuffix(f"\n\n… truncated, see the report at {REPORT}")
        assert message.startswith(kept + "\n")  # whole lines only
        assert envelope["MessageAttributes"]["outcome"] == {"Type": "String", "Value": "partial"}

    def test_the_limit_is_counted_in_bytes_not_characters(self, sns: Any, topic_arn: str, subscriber: Any) -> None:
        # 100,000 characters (moto accepts up to 262,144 characters), but 300,000 bytes: SNS would refuse it.
        message = "€" * 100_000

        SnsNotifier(topic_arn, sns).publish("run", message, ATTRIBUTES)

        envelope = subscriber()
        assert published_bytes(envelope) <= SNS_MAX_REQUEST_BYTES
        assert envelope["Message"].endswith("€\n\n… truncated")  # no character cut in half, no location given

    def test_a_message_that_fits_exactly_is_unchanged(self, sns: Any, topic_arn: str, subscriber: Any) -> None:
        attributes_bytes = sum(len(name) + len("String") + len(value) for name, value in ATTRIBUTES.items())
        message = "x" * (SNS_MAX_REQUEST_BYTES - attributes_bytes - len("run"))

        SnsNotifier(topic_arn, sns).publish("run", message, ATTRIBUTES, report_location=REPORT)

        assert subscriber()["Message"] == message

    def test_a_refused_publish_is_a_notification_error(self, sns: Any, topic_arn: str) -> None:
        fail_with(sns, "Publish", "AuthorizationError", status=403, message="not authorized to perform SNS:Publish")

        with pytest.raises(NotificationError) as raised:
            SnsNotifier(topic_arn, sns).publish("run", "body", ATTRIBUTES)

        assert str(raised.value) == (
            f"{topic_arn}: Publish failed: AuthorizationError: not authorized to perform SNS:Publish"
        )

    def test_an_answer_botocore_cannot_parse_is_a_notification_error(self, sns: Any, topic_arn: str) -> None:
        """A 429 without a body (a throttling proxy's answer): SNS's query protocol cannot parse it, and botocore
        raises ResponseParserError, which is not one of its BotoCoreErrors and is not retried."""

        class EmptyBody:
            def stream(self, **_: Any) -> Any:
                return iter(())

        def answer(request: Any, **_: Any) -> AWSResponse:
            return AWSResponse(request.url, 429, {}, EmptyBody())

        sns.meta.events.register_first("before-send.sns.Publish", answer)

        with pytest.raises(NotificationError, match=r": Publish failed: ResponseParserError: Unable to parse"):
            SnsNotifier(topic_arn, sns).publish("run", "body", ATTRIBUTES)

    def test_a_missing_topic_is_a_notification_error(self, sns: Any, topic_arn: str) -> None:
        missing = topic_arn.replace("ecr-retention-runs", "deleted-topic")

        with pytest.raises(NotificationError, match=r"deleted-topic: Publish failed: NotFound"):
            SnsNotifier(missing, sns).publish("run", "body", ATTRIBUTES)

    @pytest.mark.parametrize(
        ("attributes", "problem"),
        [
            ({"dry_run": ""}, "message attribute 'dry_run': SNS refuses an empty value"),
            ({"AWS.trace": "x"}, "message attribute name 'AWS.trace' is not one SNS accepts"),
            ({"dry run": "x"}, "message attribute name 'dry run' is not one SNS accepts"),
            ({"run..id": "x"}, "message attribute name 'run..id' is not one SNS accepts"),
        ],
    )
    def test_attributes_sns_would_refuse_are_the_callers_bug(
        self, sns: Any, topic_arn: str, attributes: dict[str, str], problem: str
    ) -> None:
        with pytest.raises(ValueError, match=f"^{problem}$"):
            SnsNotifier(topic_arn, sns).publish("run", "body", attributes)


class TestSubject:
    def test_a_short_ascii_subject_is_unchanged(self) -> None:
        assert sns_subject("ecr-retention run-1 (dry run): ok, 12 images would go") == (
            "ecr-retention run-1 (dry run): ok, 12 images would go"
        )

    def test_a_long_subject_is_cut_under_100_characters(self) -> None:
        subject = sns_subject("ecr-retention run-1: " + "repository " * 20)

        assert len(subject) == 99
        assert subject.endswith("...")

    def test_control_characters_and_runs_of_spaces_become_one_space(self) -> None:
        assert sns_subject("\trun-1:\x00 blocked \x1b[31m  now\x7f") == "run-1: blocked [31m now"

    def test_non_ascii_letters_lose_their_accents_and_the_rest_is_marked(self) -> None:
        assert sns_subject("Dépôt nettoyé — 3 images… 日本") == "Depot nettoye - 3 images... ??"

    def test_a_subject_of_nothing_printable_is_empty(self) -> None:
        assert sns_subject("\n\r\t ") == ""


class TestFitMessage:
    def test_a_cut_falls_on_a_character_boundary(self) -> None:
        fitted = fit_message("é" * 100, 51 + len("\n\n… truncated".encode()), None)

        assert fitted == "é" * 25 + "\n\n… truncated"  # 51 bytes hold 25 two-byte characters, not 25.5

    def test_a_budget_too_small_for_the_marker_is_refused(self) -> None:
        with pytest.raises(ValueError, match="no room for the message"):
            fit_message("x" * 100, 5, REPORT)
