"""Image references: every ECR partition, image-swapper paths, tags and digests, and non-references."""

from __future__ import annotations

import pytest

from ecr_retention.domain.registry.references import InvalidReference, parse_reference

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "account", "region"),
    [
        ("123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1.0", "123456789012", "eu-west-1"),
        ("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app:1.0", "123456789012", "cn-north-1"),
        ("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com/app:1.0", "123456789012", "us-east-1"),
        ("123456789012.dkr.ecr.us-gov-west-1.amazonaws.com/app:1.0", "123456789012", "us-gov-west-1"),
        ("123456789012.dkr-ecr.eu-central-1.on.aws/app:1.0", "123456789012", "eu-central-1"),
        ("123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu/app:1.0", "123456789012", "eusc-de-east-1"),
    ],
)
def test_ecr_hosts_of_every_partition_are_recognised(text: str, account: str, region: str) -> None:
    reference = parse_reference(text)
    assert (reference.is_ecr, reference.account, reference.region) == (True, account, region)
    assert (reference.repository, reference.tag) == ("app", "1.0")


def test_image_swapper_path_keeps_the_whole_repository_path() -> None:
    reference = parse_reference("000000000000.dkr.ecr.eu-west-1.amazonaws.com/docker.io/library/nginx:1.14.2")
    assert (reference.repository, reference.tag, reference.is_ecr) == ("docker.io/library/nginx", "1.14.2", True)


def test_tag_and_digest_together() -> None:
    reference = parse_reference(f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/app:1.0@{DIGEST}")
    assert (reference.repository, reference.tag, reference.digest) == ("team/app", "1.0", DIGEST)


def test_digest_only_has_no_tag() -> None:
    reference = parse_reference(f"123456789012.dkr.ecr.eu-west-1.amazonaws.com/app@{DIGEST}")
    assert (reference.tag, reference.digest) == (None, DIGEST)


def test_no_tag_means_latest() -> None:
    assert parse_reference("123456789012.dkr.ecr.eu-west-1.amazonaws.com/app").tag == "latest"


@pytest.mark.parametrize(
    ("text", "host", "repository"),
    [
        ("nginx", "docker.io", "library/nginx"),
        ("nginx:1.14.2", "docker.io", "library/nginx"),
        ("bitnami/redis:7", "docker.io", "bitnami/redis"),
        ("quay.io/prometheus/node-exporter:v1.8.2", "quay.io", "prometheus/node-exporter"),
        ("localhost:5000/app:dev", "localhost:5000", "app"),
        (
            "public.ecr.aws/eks/aws-load-balancer-controller:v2.7.0",
            "public.ecr.aws",
            "eks/aws-load-balancer-controller",
        ),
    ],
)
def test_non_ecr_references_are_recognised_and_not_ecr(text: str, host: str, repository: str) -> None:
    reference = parse_reference(text)
    assert (reference.host, reference.repository, reference.is_ecr) == (host, repository, False)


def test_in_registry_compares_account_and_region() -> None:
    reference = parse_reference("123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:1")
    assert reference.in_registry("123456789012", "eu-west-1")
    assert not reference.in_registry("210987654321", "eu-west-1")
    assert not reference.in_registry("123456789012", "us-east-1")
    assert reference.in_registry(None, None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "not an image",
        "UPPER/case",
        "app:",
        "app:bad tag",
        "app@sha256:xyz",
        "app@@x",
        "a//b",
        ":tag",
        "/app",
    ],
)
def test_strings_that_are_not_references_raise_invalid_reference(text: str) -> None:
    with pytest.raises(InvalidReference):
        parse_reference(text)


@pytest.mark.parametrize(
    "text",
    [
        "123456789012.dkr.ecr.eu-west-1.amazonaws.com:443/app:1.0",
        "123456789012.DKR.ECR.eu-west-1.amazonaws.com:443/app:1.0",
        "123456789012.dkr-ecr.eu-west-1.on.aws:443/app:1.0",
    ],
)
def test_ecr_host_with_an_explicit_port_is_the_same_registry(text: str) -> None:
    reference = parse_reference(text)
    assert (reference.is_ecr, reference.account, reference.region) == (True, "123456789012", "eu-west-1")
    assert (reference.repository, reference.tag) == ("app", "1.0")
    assert reference.in_registry("123456789012", "eu-west-1")
