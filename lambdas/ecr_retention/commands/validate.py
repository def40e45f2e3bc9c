"""`ecr-retention validate`: check a rules file and say what it will do."""

from __future__ import annotations

import argparse
from typing import Any

from ecr_retention.loading import load_config
from ecr_retention.tables import printable


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="validate a rules file",
        description="Validate a rules file. Exit 0 when valid, 2 with one line naming the field otherwise.",
    )
    parser.add_argument("config", help="the rules file (retention.yaml)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    rules = sum(len(policy.rules) for policy in config.policies)
    mode = "dry run (report only)" if config.dry_run else "live (deletes)"
    clusters = ", ".join(config.safety.clusters) or "none (no in-use protection)"
    print(
        printable(
            f"{args.config}: valid: {len(config.policies)} policies, {rules} rules, {mode}; "
            f"expected clusters: {clusters}"
        )
    )
    return 0
