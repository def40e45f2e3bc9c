"""`ecr-retention validate`: check a rules file and say what it will do."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from ecr_retention.domain.config import Safety
from ecr_retention.domain.durations import format_duration
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
    summary = f"{args.config}: valid: {len(config.policies)} policies, {rules} rules, {mode}"
    print(printable(f"{summary}; {clusters_said(config.safety)}"))
    return 0


def clusters_said(safety: Safety) -> str:
    """Which clusters block a run and which only protect, and how long what they ran stays protected."""
    if safety.clusters:
        expected = f"{', '.join(map(str, safety.clusters))} (block when missing, stale or incomplete)"
    else:
        expected = "none (no cluster blocks a run)" if safety.optional_clusters else "none (no in-use protection)"
    optional = ", ".join(map(str, safety.optional_clusters))
    optional = f"{optional} (read and protect, never block)" if optional else "none"
    grace = safety.in_use_grace
    memory = f"in_use_grace {in_days(grace)}" if grace else "in_use_grace 0s (the in-use memory is off)"
    return f"expected clusters: {expected}; optional clusters: {optional}; {memory}"


def in_days(duration: timedelta) -> str:
    """7d rather than format_duration's 1w: the default as docs/rules.md writes it, and weeks read as days."""
    return f"{duration.days}d" if duration % timedelta(days=1) == timedelta(0) else format_duration(duration)
