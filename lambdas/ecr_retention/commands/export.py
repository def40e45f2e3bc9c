"""`ecr-retention export`: write the in-use manifest of one Kubernetes cluster to S3 or a file."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.manifest import ClusterName, manifest_key
from ecr_retention.layout import IN_USE_PREFIX
from ecr_retention.loading import check_not_an_input

DEFAULT_PREFIX = IN_USE_PREFIX
_BUCKET_NAME = re.compile(r"[a-zA-Z0-9._-]{1,255}")
EXIT_OK, EXIT_FAILED = 0, 1


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="export the images a Kubernetes cluster uses (the in-use manifest)",
        description="List pods, workloads, ReplicaSets, ControllerRevisions, Jobs and CronJobs in every namespace and write the "
        "cluster's in-use manifest in one piece. In a pod it uses the service account; elsewhere the "
        "kubeconfig (KUBECONFIG honoured). Exit 0 when written, 1 when any list or the upload failed "
        "(nothing is written then), 2 on bad input.",
    )
    parser.add_argument("--cluster", required=True, help="cluster name, as listed in safety.clusters")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    destination = parser.add_mutually_exclusive_group(required=True)
    destination.add_argument("--out", help="write the manifest to this file (its directory must exist)")
    destination.add_argument("--bucket", help="upload the manifest to s3://BUCKET/PREFIX<cluster>.json")
    parser.add_argument("--prefix", help=f"key prefix in the bucket (default: {DEFAULT_PREFIX})")
    parser.add_argument(
        "--include-namespace",
        action="append",
        metavar="GLOB",
        help="export only namespaces matching a glob; repeatable (default: every namespace)",
    )
    parser.add_argument(
        "--exclude-namespace",
        action="append",
        metavar="GLOB",
        default=[],
        help="skip namespaces matching a glob; repeatable. Images used only there lose in-use protection",
    )
    parser.add_argument("--page-size", type=_positive_int, default=None, help="objects per list request")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so that the other commands start without the Kubernetes client and boto3.
    from ecr_retention.exporter.service import Destination, FileDestination, S3Destination, export_inventory
    from ecr_retention.exporter.storage import new_s3_client
    from ecr_retention.kube.client import DEFAULT_PAGE_SIZE, ClusterLister, connect
    from ecr_retention.kube.errors import ExportFailed
    from ecr_retention.kube.workloads import NamespaceFilter

    cluster = _cluster_name(args.cluster)
    namespaces = NamespaceFilter(include=tuple(args.include_namespace or ("*",)), exclude=tuple(args.exclude_namespace))
    destination: Destination
    if args.out is not None:
        if args.prefix is not None:
            raise InputError("--prefix applies to --bucket, not to --out")
        destination = FileDestination(_out_path(args.out, args.kubeconfig))
    else:
        destination = S3Destination(_bucket_name(args.bucket), _bucket_key(cluster, args.prefix), new_s3_client())
    lister = ClusterLister(connect(args.kubeconfig, args.context), page_size=args.page_size or DEFAULT_PAGE_SIZE)
    try:
        summary = export_inventory(cluster, lister, destination, namespaces=namespaces)
    except ExportFailed as error:
        print(f"ecr-retention export: error: cluster {cluster}: {error}; nothing was written", file=sys.stderr)
        return EXIT_FAILED
    counts = ", ".join(f"{count} {plural}" for plural, count in summary.objects_by_kind.items())
    print(f"cluster {cluster}: {len(summary.manifest.images)} image references from {counts}; wrote {destination}")
    return EXIT_OK


def _cluster_name(name: str) -> str:
    try:
        return TypeAdapter(ClusterName).validate_python(name)
    except ValidationError:
        raise InputError(
            f"--cluster {name!r}: a cluster name is 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        ) from None


def _out_path(text: str, kubeconfig: str | None = None) -> Path:
    """The --out file, checked before the kubeconfig is read: listing a large cluster takes minutes. Never a
    kubeconfig the export reads (--kubeconfig, each path of KUBECONFIG, or ~/.kube/config)."""
    from ecr_retention.exporter.storage import check_manifest_path
    from ecr_retention.kube.client import DEFAULT_KUBECONFIG

    label = f"--out {text!r}"
    if not text.strip():
        raise InputError(f"{label}: no file name given")
    path = Path(text)
    # Path drops a trailing '/', which would turn `--out dir/` into a file named `dir`.
    if text.endswith(("/", os.sep)) and not path.is_dir():
        raise InputError(f"{label}: ends with '/', so it names a directory, not a file")
    check_manifest_path(path, label)
    for kubeconfig_path in _kubeconfig_paths(kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG):
        check_not_an_input(path, "--out", files={"kubeconfig": kubeconfig_path})
    return path


def _kubeconfig_paths(kubeconfig: str) -> list[str]:
    """Each kubeconfig a KUBECONFIG-style list names, `~` expanded."""
    return [os.path.expanduser(one) for one in kubeconfig.split(os.pathsep) if one]


def _bucket_name(bucket: str) -> str:
    # What botocore accepts as a plain bucket name; a URL or ARN would otherwise fail only after every list.
    if not _BUCKET_NAME.fullmatch(bucket):
        raise InputError(f"--bucket {bucket!r}: not a bucket name (letters, digits, '.', '-', '_'; no s3:// or ARN)")
    return bucket


def _bucket_key(cluster: str, prefix: str | None) -> str:
    prefix = DEFAULT_PREFIX if prefix is None else prefix
    # The pipeline reads `<prefix><cluster>.json`; a prefix without its slash would hide the manifest.
    if prefix and not prefix.endswith("/"):
        raise InputError(f"--prefix {prefix!r}: must end with '/' (or be empty)")
    if prefix.startswith("/") or "//" in prefix:
        raise InputError(f"--prefix {prefix!r}: an S3 key prefix has no leading or doubled '/'")
    return manifest_key(cluster, prefix)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value
