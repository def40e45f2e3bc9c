"""`ecr-retention demo`: the whole pipeline against an embedded AWS emulator (moto), with a verification.

The demo lives in the development distribution ecr-retention-dev (lambdas/ecr_retention_dev), which needs moto; `make
demo` installs both. This module imports them only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecr_retention.domain.errors import InputError
from ecr_retention.tables import printable

if TYPE_CHECKING:
    from ecr_retention_dev.demo.runner import Tampering

# The demo's EKS clusters (demo/registry.py): prod and us-prod run the exporter, dev is read through its API.
DEMO_CLUSTERS = ("prod", "dev", "us-prod")

# The distribution that holds the demo and the emulator (lambdas/ecr_retention_dev/pyproject.toml).
DEV_DISTRIBUTION = "ecr-retention-dev"

# What moto's server mode needs beyond the runtime dependencies (requirements-dev.txt: moto[server,...]).
EMULATOR_PACKAGES = frozenset({"moto", "flask", "flask_cors", "werkzeug", "jsonpath_ng", "openapi_spec_validator"})


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo",
        help="run the whole pipeline against an embedded AWS emulator (moto) and verify what it deleted",
        description="Starts moto in server mode in this process on 127.0.0.1, seeds a registry of a few hundred "
        "images through the ECR API, an ECS service and a container-image Lambda function that run two of them, "
        "writes two clusters' in-use manifests, and runs the real Lambda handlers as AWS would: the AWS inventory "
        "collector, the tagger and a dry-run sweep, then the collector, the tagger and a real sweep. Prints the "
        "plan, the images ECS and Lambda keep, the SNS message a subscriber receives, the JSON report's location, "
        "and a verification read back from the emulator. No AWS account, network or Docker; your AWS "
        "configuration is not read. "
        "Exit 0 when verified, 1 otherwise, 2 on bad input.",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the emulator running afterwards and print its endpoint for the AWS CLI (Ctrl-C stops it)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write the rules, manifests, snapshot, plan and reports here (default: a new temporary directory)",
    )
    tamper = parser.add_mutually_exclusive_group()
    tamper.add_argument(
        "--empty-manifest",
        metavar="CLUSTER",
        help="right before the real sweep, replace in-use/CLUSTER.json with an empty, complete, fresh manifest (what "
        "a broken collector could write): the in-use memory keeps what CLUSTER runs, and the report says why; it "
        "stays empty through step 5, where the sentinel's alert and the sweep's in-use-missing finding for what the "
        "native policy takes from CLUSTER say the in-use memory speaks for it",
    )
    tamper.add_argument(
        "--delete-manifest",
        metavar="CLUSTER",
        help="right before the real sweep, delete in-use/CLUSTER.json: every demo cluster is expected, so the run is "
        "blocked and removes nothing, and the report names what the in-use memory still protects",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_demo = _demo_runner()
    if isinstance(run_demo, int):
        return run_demo
    return run_demo(out=args.out, keep_running=args.keep_running, write=_write, tampering=_tampering(args))


def _demo_runner() -> Callable[..., int] | int:
    """The demo's runner, or the exit code once stderr has said what `make demo` installs and this environment lacks:
    the development distribution (2), or what moto's server mode needs (1)."""
    try:
        from ecr_retention_dev.demo.runner import run_demo
    except ImportError as error:
        package = (error.name or "").partition(".")[0]
        if package == "ecr_retention_dev":
            print(
                f"ecr-retention demo: the demo is not installed; install {DEV_DISTRIBUTION} "
                "(`make demo` does, or `pip install -e lambdas/ecr_retention_dev` from a clone)",
                file=sys.stderr,
            )
            return 2
        if package not in EMULATOR_PACKAGES:
            raise
        print(
            f"ecr-retention demo: {package} (a development dependency) is not installed; "
            "run `make demo`, which installs it",
            file=sys.stderr,
        )
        return 1
    return run_demo


def _write(line: str) -> None:
    print(printable(line), flush=True)


def _tampering(args: argparse.Namespace) -> Tampering | None:
    """What --empty-manifest or --delete-manifest asks the demo to do to a cluster's manifest, if either."""
    if not (args.empty_manifest or args.delete_manifest):
        return None
    from ecr_retention_dev.demo.runner import Tampering

    cluster = args.empty_manifest or args.delete_manifest
    if cluster not in DEMO_CLUSTERS:
        raise InputError(
            f"--{'empty' if args.empty_manifest else 'delete'}-manifest: the demo's clusters are "
            f"{', '.join(DEMO_CLUSTERS)}, not {cluster!r}"
        )
    return Tampering("empty" if args.empty_manifest else "delete", cluster)
