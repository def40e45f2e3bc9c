"""How people read a digest: by its first 12 hex digits; the digest cosign's tags name; what a digest is, and which
media types make an image an index: what the models of what runs and of holds name without the models of a registry's
images (images.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from pydantic import StringConstraints

# A digest as a model reads it (`sha256:<hex>`).
Digest = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")]

INDEX_MEDIA_TYPES = frozenset(
    {
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    }
)
SHORT_DIGEST_HEX = 12
DIGEST_ALGORITHM = "sha256:"
# How long a short digest with its algorithm is (`sha256:1a2b3c4d5e6f`): a digest's first characters.
SHORT_DIGEST_WITH_ALGORITHM = len(DIGEST_ALGORITHM) + SHORT_DIGEST_HEX


def short_digest(digest: str, *, with_algorithm: bool = False) -> str:
    """A digest by its first 12 hex digits. Two forms, each kept where its readers know it: `1a2b3c4d5e6f` (the
    default) in the CLI's columns and the plan's reasons, where width is short and every digest is sha256;
    `sha256:1a2b3c4d5e6f` (with_algorithm) in the SNS summary and on the page, whose prose names images among other
    figures."""
    if with_algorithm:
        return digest[:SHORT_DIGEST_WITH_ALGORITHM]
    return digest.split(":", 1)[-1][:SHORT_DIGEST_HEX]


# cosign's tag scheme: the tag of a signature, an attestation or an SBOM names its subject's digest.
COSIGN_TAG = re.compile(r"^(sha256)-([0-9a-f]{64})\.(sig|att|sbom)$")


def cosign_subject(tags: Iterable[str]) -> str | None:
    """cosign's tag scheme names the subject: sha256-<hex>.sig / .att / .sbom -> sha256:<hex>."""
    for tag in tags:
        match = COSIGN_TAG.match(tag)
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return None
