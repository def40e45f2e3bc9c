"""Image manifests as registries store them, and what a push returns (`PushedImage`, `PushedIndex`).

The text is deliberately not Python's default `json.dumps` layout (OCI: compact, as BuildKit writes it; Docker:
three-space indent, as the Docker distribution writes it), so code that parses and re-serialises a manifest changes
its bytes and its digest, and a test notices.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
COSIGN_SIGNATURE_LAYER = "application/vnd.dev.cosign.simplesigning.v1+json"
SPDX = "application/spdx+json"

INDEX_MEDIA_TYPES = (OCI_INDEX, DOCKER_LIST)
IMAGE_MEDIA_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST, "application/vnd.docker.distribution.manifest.v1+json")
ALL_MEDIA_TYPES = IMAGE_MEDIA_TYPES + INDEX_MEDIA_TYPES


def sha256_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def image_manifest_text(
    seed: str, *, media_type: str = OCI_MANIFEST, layer_sizes: Sequence[int] = (31_457_280, 4_194_304, 1_048_576)
) -> str:
    docker = media_type == DOCKER_MANIFEST
    document = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {
            "mediaType": DOCKER_CONFIG if docker else OCI_CONFIG,
            "digest": sha256_digest(f"config:{seed}"),
            "size": 1_400 + len(seed),
        },
        "layers": [
            {
                "mediaType": DOCKER_LAYER if docker else OCI_LAYER,
                "digest": sha256_digest(f"layer:{seed}:{n}"),
                "size": s,
            }
            for n, s in enumerate(layer_sizes)
        ],
    }
    return _layout(document, docker=docker)


def index_manifest_text(children: Sequence[tuple[PushedImage, str]], *, media_type: str = OCI_INDEX) -> str:
    """An index (or Docker manifest list) of (child, "os/architecture") entries."""
    entries = []
    for child, platform in children:
        os_name, _, architecture = platform.partition("/")
        entry: dict[str, Any] = {
            "mediaType": child.media_type,
            "digest": child.digest,
            "size": len(child.manifest.encode()),
            "platform": {"architecture": architecture, "os": os_name},
        }
        if platform == "unknown/unknown":  # a BuildKit attestation manifest
            entry["annotations"] = {
                "vnd.docker.reference.digest": children[0][0].digest,
                "vnd.docker.reference.type": "attestation-manifest",
            }
        entries.append(entry)
    return _layout(
        {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}, docker=media_type == DOCKER_LIST
    )


def cosign_signature_text(subject_digest: str) -> str:
    """A cosign signature as cosign pushes it under `sha256-<hex>.sig`: an ordinary OCI manifest, no `subject`."""
    payload = f"signature:{subject_digest}"
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": sha256_digest(f"config:{payload}"), "size": 233},
        "layers": [
            {
                "mediaType": COSIGN_SIGNATURE_LAYER,
                "digest": sha256_digest(payload),
                "size": 258,
                "annotations": {"dev.cosignproject.cosign/signature": base64.b64encode(payload.encode()).decode()},
            }
        ],
    }
    return _layout(document, docker=False)


def referrer_manifest_text(subject: PushedImage, artifact_type: str) -> str:
    """An OCI 1.1 referrer (an SBOM, a Notation signature) pointing at its subject."""
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": OCI_EMPTY, "digest": sha256_digest("{}"), "size": 2},
        "layers": [{"mediaType": artifact_type, "digest": sha256_digest(f"sbom:{subject.digest}"), "size": 48_213}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest, "size": len(subject.manifest.encode())},
    }
    return _layout(document, docker=False)


def _layout(document: dict[str, Any], *, docker: bool) -> str:
    return json.dumps(document, indent=3) if docker else json.dumps(document, separators=(",", ":"))


@dataclass(frozen=True)
class PushedImage:
    repository: str
    digest: str
    media_type: str
    manifest: str  # exactly the text pushed
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class PushedIndex:
    index: PushedImage
    children: tuple[PushedImage, ...]

    @property
    def digest(self) -> str:
        return self.index.digest
