"""Container image references (`host/path:tag@digest`) and the ECR registries they point at."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Every ECR registry host of every partition: <account>.dkr.ecr[-fips].<region>.<the partition's DNS suffix> and the
# dual-stack <account>.dkr-ecr[-fips].<region>.<the partition's dual-stack suffix>, with an optional port:
# `...amazonaws.com:443/app:1.0` pulls from the same registry, so it must protect the same image (any port is taken as
# the same registry: reading too much as in use keeps more, never less). The lists are AWS's own, read 2026-12:
# aws/amazon-ecs-agent ecs-agent/utils/uri/uri.go (ECRImagePattern, ECRDualStackImagePattern and the hosts their
# comments list: `on.aws`, `on.amazonwebservices.com.cn`, `amazonwebservices.eu`, `on.aws.ic.gov`, `on.aws.scloud`,
# `on.aws.hci.ic.gov`, `on.cloud-aws.adc-e.uk`), kubernetes/cloud-provider-aws cmd/ecr-credential-provider/main.go
# (ecrPrivateHostPattern: `dkr[.-]ecr(-fips)?` before any of its suffixes, the EKS node's reading), and botocore's
# partitions.json (each partition's dnsSuffix). Either form is read before any suffix, like the credential provider:
# reading a host as ECR only ever protects more. docs/safety.md section 32; tests/unit/test_ecr_hosts.py.
ECR_DNS_SUFFIXES = (
    "amazonaws.com",  # aws, aws-us-gov
    "amazonaws.com.cn",  # aws-cn
    "amazonaws.eu",  # aws-eusc (the AWS European Sovereign Cloud)
    "c2s.ic.gov",  # aws-iso
    "sc2s.sgov.gov",  # aws-iso-b
    "cloud.adc-e.uk",  # aws-iso-e
    "csp.hci.ic.gov",  # aws-iso-f
)
ECR_DUAL_STACK_DNS_SUFFIXES = (
    "on.aws",  # aws, aws-us-gov
    "on.amazonwebservices.com.cn",  # aws-cn
    "amazonwebservices.eu",  # aws-eusc, as the ECS agent lists it
    "on.amazonwebservices.eu",  # aws-eusc, as the China partition's pattern would have it
    "on.aws.ic.gov",  # aws-iso
    "on.aws.scloud",  # aws-iso-b
    "on.cloud-aws.adc-e.uk",  # aws-iso-e
    "on.aws.hci.ic.gov",  # aws-iso-f
)
_ECR_HOST = re.compile(
    r"^(?P<account>\d{12})\.dkr[.-]ecr(?:-fips)?\.(?P<region>[a-z]{2,5}(?:-[a-z]+)+-\d+)\."
    r"(?:" + "|".join(re.escape(suffix) for suffix in (*ECR_DNS_SUFFIXES, *ECR_DUAL_STACK_DNS_SUFFIXES)) + r")"
    r"(?::\d{1,5})?$"
)
# What a person would take for an ECR host: a host that says so but is none of the above is warned about, never
# read in silence as a foreign registry (a tag reference there protects nothing).
_ECR_LOOKALIKE = re.compile(r"(?:^|\.)dkr[.-]ecr(?:-fips)?\.")
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,299}")
_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")
_WHITESPACE = re.compile(r"\s")
_HOST = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9a-fA-F:]+\])(?::\d+)?")


class InvalidReference(ValueError):
    """A string that is not an image reference."""


@dataclass(frozen=True, slots=True)
class ImageReference:
    host: str
    repository: str
    tag: str | None
    digest: str | None
    account: str | None = None
    region: str | None = None

    @property
    def is_ecr(self) -> bool:
        return self.account is not None

    @property
    def looks_like_ecr(self) -> bool:
        """An ECR host, or a host that says it is one (`.dkr.ecr.`, `.dkr-ecr.`) but that no partition has."""
        return self.is_ecr or looks_like_ecr_host(self.host)

    def in_registry(self, account: str | None, region: str | None) -> bool:
        """True when this is an ECR reference of the given registry; an unknown account or region matches."""
        return (
            self.is_ecr and (account is None or account == self.account) and (region is None or region == self.region)
        )


def parse_reference(text: str) -> ImageReference:
    """Parse a reference the way container runtimes do; Docker Hub short names are expanded."""
    stripped = text.strip()
    if not stripped or _WHITESPACE.search(stripped):
        raise InvalidReference(f"{text!r} is not an image reference")
    name, digest = _split_digest(text, stripped)
    name, tag = _split_tag(text, name)
    host, path = _split_host(text, name)
    _check_path(text, path)
    if tag is None and not digest:
        tag = "latest"
    return _reference(host, path, tag, digest or None)


def _split_digest(original: str, text: str) -> tuple[str, str]:
    """`app@sha256:...` -> (`app`, `sha256:...`); the digest is empty when there is none."""
    name, _, digest = text.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        raise InvalidReference(f"{original!r}: invalid digest {digest!r}")
    return name, digest


def _split_tag(original: str, name: str) -> tuple[str, str | None]:
    """`host:5000/app:1.0` -> (`host:5000/app`, `1.0`): a tag follows the last colon after the last slash."""
    colon = name.rfind(":")
    if colon <= name.rfind("/"):
        return name, None
    tag = name[colon + 1 :]
    if not _TAG.fullmatch(tag):
        raise InvalidReference(f"{original!r}: invalid tag {tag!r}")
    return name[:colon], tag


def _split_host(original: str, name: str) -> tuple[str, str]:
    """The registry host and the repository path; a first component that names no host is Docker Hub's."""
    first, _, rest = name.partition("/")
    if not (rest and _names_a_host(first)):
        return "docker.io", name if "/" in name else f"library/{name}"
    if not _HOST.fullmatch(first):
        raise InvalidReference(f"{original!r}: invalid registry host {first!r}")
    return first, rest


def _check_path(original: str, path: str) -> None:
    if not path or not all(_PATH_COMPONENT.fullmatch(part) for part in path.split("/")):
        raise InvalidReference(f"{original!r}: invalid repository path {path!r}")


def _names_a_host(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def looks_like_ecr_host(host: str) -> bool:
    """True for a host that names ECR's registry endpoint (`<account>.dkr.ecr.`, `.dkr-ecr.`, FIPS or not), whether or
    not it is one this module reads."""
    return _ECR_LOOKALIKE.search(host.lower()) is not None


def _reference(host: str, path: str, tag: str | None, digest: str | None) -> ImageReference:
    """The reference, with the account and region of an ECR host (written in any case, held in lower case)."""
    match = _ECR_HOST.match(host.lower())
    if match is None:
        return ImageReference(host=host, repository=path, tag=tag, digest=digest)
    return ImageReference(
        host=host.lower(),
        repository=path,
        tag=tag,
        digest=digest,
        account=match.group("account"),
        region=match.group("region"),
    )
