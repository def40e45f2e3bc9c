"""Every ECR host of every partition is read as ECR with its Region (docs/safety.md section 32).

The table is AWS's own: the hosts the ECS agent lists (aws/amazon-ecs-agent ecs-agent/utils/uri/uri.go), those the
EKS node's credential provider matches (kubernetes/cloud-provider-aws cmd/ecr-credential-provider/main.go), and each
partition's DNS suffix of botocore's partitions.json. A host that says it is ECR's but is none of them is named in a
warning, never read in silence as another registry's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ecr_retention.domain.in_use.index import unknown_ecr_host_warnings
from ecr_retention.domain.registry.coordinates import (
    InThisRegistry,
    NotEcr,
    RegistryCoordinates,
    partition_of,
    read_reference,
)
from ecr_retention.domain.registry.references import looks_like_ecr_host, parse_reference
from support.builders import NOW, action_of, config, digest, image, in_use, kinds_of, plan, repository, snapshot

ACCOUNT = "123456789012"

# (host, Region, partition): every form a workload's image may name its registry by.
REAL_HOSTS = [
    # IPv4 endpoints, FIPS or not, of every partition
    ("123456789012.dkr.ecr.eu-west-1.amazonaws.com", "eu-west-1", "aws"),
    ("123456789012.dkr.ecr-fips.us-east-1.amazonaws.com", "us-east-1", "aws"),
    ("123456789012.dkr.ecr.us-gov-west-1.amazonaws.com", "us-gov-west-1", "aws-us-gov"),
    ("123456789012.dkr.ecr-fips.us-gov-east-1.amazonaws.com", "us-gov-east-1", "aws-us-gov"),
    ("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn", "cn-north-1", "aws-cn"),
    ("123456789012.dkr.ecr.cn-northwest-1.amazonaws.com.cn", "cn-northwest-1", "aws-cn"),
    ("123456789012.dkr.ecr.eusc-de-east-1.amazonaws.eu", "eusc-de-east-1", "aws-eusc"),
    ("123456789012.dkr.ecr.us-iso-east-1.c2s.ic.gov", "us-iso-east-1", "aws-iso"),
    ("123456789012.dkr.ecr-fips.us-iso-east-1.c2s.ic.gov", "us-iso-east-1", "aws-iso"),
    ("123456789012.dkr.ecr.us-isob-east-1.sc2s.sgov.gov", "us-isob-east-1", "aws-iso-b"),
    ("123456789012.dkr.ecr.eu-isoe-west-1.cloud.adc-e.uk", "eu-isoe-west-1", "aws-iso-e"),
    ("123456789012.dkr.ecr.us-isof-south-1.csp.hci.ic.gov", "us-isof-south-1", "aws-iso-f"),
    # dual-stack endpoints, FIPS or not, of every partition (the ECS agent's list)
    ("123456789012.dkr-ecr.us-west-2.on.aws", "us-west-2", "aws"),
    ("123456789012.dkr-ecr-fips.us-west-2.on.aws", "us-west-2", "aws"),
    ("123456789012.dkr-ecr.us-gov-east-1.on.aws", "us-gov-east-1", "aws-us-gov"),
    ("123456789012.dkr-ecr-fips.us-gov-east-1.on.aws", "us-gov-east-1", "aws-us-gov"),
    ("123456789012.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn", "cn-north-1", "aws-cn"),
    ("123456789012.dkr-ecr.eusc-de-east-1.amazonwebservices.eu", "eusc-de-east-1", "aws-eusc"),
    ("123456789012.dkr-ecr.eusc-de-east-1.on.amazonwebservices.eu", "eusc-de-east-1", "aws-eusc"),
    ("123456789012.dkr-ecr.us-iso-west-1.on.aws.ic.gov", "us-iso-west-1", "aws-iso"),
    ("123456789012.dkr-ecr.us-isob-east-1.on.aws.scloud", "us-isob-east-1", "aws-iso-b"),
    ("123456789012.dkr-ecr.us-isof-south-1.on.aws.hci.ic.gov", "us-isof-south-1", "aws-iso-f"),
    ("123456789012.dkr-ecr.eu-isoe-west-1.on.cloud-aws.adc-e.uk", "eu-isoe-west-1", "aws-iso-e"),
    # either form before either suffix, as the credential provider reads it (`dkr[.-]ecr`); in any case, with a port
    ("123456789012.dkr-ecr.eusc-de-east-1.amazonaws.eu", "eusc-de-east-1", "aws-eusc"),
    ("123456789012.dkr.ecr.eusc-de-east-1.amazonwebservices.eu", "eusc-de-east-1", "aws-eusc"),
    ("123456789012.DKR-ECR.CN-NORTH-1.ON.AMAZONWEBSERVICES.COM.CN", "cn-north-1", "aws-cn"),
    ("123456789012.dkr-ecr.us-iso-west-1.on.aws.ic.gov:443", "us-iso-west-1", "aws-iso"),
]


@pytest.mark.parametrize(("host", "region", "partition"), REAL_HOSTS)
def test_every_ecr_host_of_every_partition_is_read_as_ecr_with_its_region(
    host: str, region: str, partition: str
) -> None:
    reference = parse_reference(f"{host}/team/app:1.0")

    assert (reference.account, reference.region, reference.repository, reference.tag) == (
        ACCOUNT,
        region,
        "team/app",
        "1.0",
    )
    assert partition_of(region) == partition
    reading = read_reference(f"{host}/team/app:1.0", RegistryCoordinates(ACCOUNT, region))
    assert isinstance(reading, InThisRegistry)


@pytest.mark.parametrize(
    "host",
    [
        "1234.dkr.ecr.us-east-1.amazonaws.com",  # an account of 4 digits
        "123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.example",  # a suffix after the suffix
        "123456789012.dkr-ecr.us-west-2.on.aws.example",
        "123456789012.dkr.ecr.mirror.corp.internal",  # no Region
        "123456789012.dkr-ecr-fips.moon.on.aws",
    ],
)
def test_a_host_that_looks_like_ecr_but_is_none_is_foreign_and_named_in_a_warning(host: str) -> None:
    image_string = f"{host}/app:1.0"
    reading = read_reference(image_string, RegistryCoordinates(ACCOUNT, "us-east-1"))
    assert isinstance(reading, NotEcr)
    assert reading.looks_like_ecr

    [warning] = unknown_ecr_host_warnings(in_use("prod", (image_string, None)))

    assert warning.startswith(f"cluster prod: in-use image {image_string!r} names host {host}")
    assert "looks like ECR" in warning
    assert warning.endswith("not protected")


@pytest.mark.parametrize(
    "host", ["ghcr.io", "docker.io", "public.ecr.aws", "quay.io", "registry.example.com:5000", "dkr.example.com"]
)
def test_other_registries_are_not_taken_for_ecr(host: str) -> None:
    assert not looks_like_ecr_host(host)
    assert unknown_ecr_host_warnings(in_use("prod", (f"{host}/team/app:1.0", None))) == []


def test_a_lookalike_with_a_digest_says_its_digest_still_protects() -> None:
    [warning] = unknown_ecr_host_warnings(in_use("prod", ("123456789012.dkr.ecr.mirror.internal/app:1", "a")))

    assert warning.endswith("protected by its digest only")


def test_the_lookalike_warnings_are_capped_per_cluster() -> None:
    entries = [(f"123456789012.dkr.ecr.mirror.internal/app{n}:1", None) for n in range(25)]

    warnings = unknown_ecr_host_warnings(in_use("prod", *entries))

    assert len(warnings) == 21
    assert warnings[-1] == "cluster prod: 5 more such images"


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("123456789012.dkr-ecr.cn-north-1.on.amazonwebservices.com.cn", "cn-north-1"),
        ("123456789012.dkr-ecr.us-iso-west-1.on.aws.ic.gov", "us-iso-west-1"),
        ("123456789012.dkr-ecr.us-isob-east-1.on.aws.scloud", "us-isob-east-1"),
        ("123456789012.dkr-ecr.us-isof-south-1.on.aws.hci.ic.gov", "us-isof-south-1"),
        ("123456789012.dkr-ecr.eu-isoe-west-1.on.cloud-aws.adc-e.uk", "eu-isoe-west-1"),
        ("123456789012.dkr-ecr.eusc-de-east-1.amazonwebservices.eu", "eusc-de-east-1"),
    ],
)
def test_an_image_run_by_tag_through_a_dual_stack_host_is_kept(host: str, region: str) -> None:
    """The issue's probe: these references parsed as another registry, so an image referenced by tag there was
    protected by nothing."""
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "1d"}}])
    snap = snapshot(
        repository("app", image("run", "v1", age=timedelta(days=40)), image("old", "v0", age=timedelta(days=40))),
        region=region,
    )

    result = plan(cfg, snap, in_use("prod", (f"{host}/app:v1", None)), now=NOW)

    assert action_of(result, "app", "run") == "keep"
    assert "in-use" in kinds_of(result, "app", "run")
    assert action_of(result, "app", "old") == "delete"
    assert not [warning for warning in result.warnings if "looks like ECR" in warning]


def test_a_plan_warns_of_an_in_use_image_on_a_host_that_looks_like_ecr() -> None:
    cfg = config([{"delete": {"tags": ["v*"], "older_than": "1d"}}])
    snap = snapshot(repository("app", image("run", "v1", age=timedelta(days=40))))
    lookalike = "123456789012.dkr-ecr.eu-west-1.on.aws.mirror.example/app:v1"

    result = plan(cfg, snap, in_use("prod", (lookalike, None)), now=NOW)

    assert any(lookalike in warning and "looks like ECR" in warning for warning in result.warnings)
    assert digest("run") in {d.image_digest for d in result.repositories[0].images}
