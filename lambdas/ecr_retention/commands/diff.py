"""`ecr-retention diff`: what a change of the rules file changes, before it merges. Both files are planned on the
same inputs by the same planner; only the images whose action changes are printed. Read-only."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecr_retention.commands.diff_text import DEFAULT_IMAGES_PER_REPOSITORY, diff_markdown, diff_table_lines
from ecr_retention.commands.registry_inputs import add_input_arguments, load_inputs, say_warnings
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.review.diff_conditions import breaches, parse_conditions
from ecr_retention.domain.review.rules_diff import RulesDiff, diff_rules, with_read_times
from ecr_retention.loading import load_config, parse_now


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "diff",
        help="what a rules change changes: the images whose action differs between two rules files",
        description="Plans --base (the rules as they are) and --config (as the change makes them) on the same "
        "snapshot, manifests and time, and prints only the images whose action changes, with the reasons before and "
        "after. Both are planned with the brakes off: what a blocked run or a repository over max_delete_fraction "
        "keeps today is counted as what the rules decide, and the output says what a run removes now. "
        "Exit 0, or 1 when a --fail-on condition holds; 2 on bad input. Deletes nothing.",
    )
    parser.add_argument("--config", required=True, help="the rules file as the change makes it")
    parser.add_argument("--base", required=True, help="the rules file as it is (the base branch's)")
    add_input_arguments(parser)
    parser.add_argument("--now", help="plan both as of this ISO 8601 time (default: the current time)")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    parser.add_argument(
        "--fail-on",
        action="append",
        nargs="+",
        default=[],
        metavar="CONDITION",
        help="exit 1 when it holds: deletions-increase, deletions-over N, bytes-over SIZE (500MiB, 2GB); judged on "
        "what the rules decide, with the brakes off (the FAIL line says so when a brake holds removals back); "
        "repeatable",
    )
    parser.add_argument(
        "--images-per-repository",
        type=int,
        default=DEFAULT_IMAGES_PER_REPOSITORY,
        metavar="N",
        help=f"markdown: the changed images listed per repository (default {DEFAULT_IMAGES_PER_REPOSITORY})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Both files first: a change that does not validate is the answer, whatever the inputs.
    new, base = load_config(args.config), load_config(args.base)
    try:
        conditions = parse_conditions([word for words in args.fail_on for word in words])
    except ValueError as error:
        raise InputError(f"--fail-on: {error}") from None
    if args.images_per_repository < 0:
        raise InputError("--images-per-repository: must not be negative")
    now = parse_now(args.now)
    inputs = load_inputs(args)
    say_warnings("diff", inputs, new)
    diff = with_read_times(
        diff_rules(base, new, inputs.snapshot, inputs.inventory, now, sources=inputs.sources), inputs.read_at
    )
    breached = breaches(conditions, diff)
    write(diff, breached, args)
    return 1 if breached else 0


def write(diff: RulesDiff, breached: list[str], args: argparse.Namespace) -> None:
    if args.format == "json":
        document = diff.model_dump(mode="json", by_alias=True) | {"failed": breached}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(diff_markdown(diff, breached=breached, images_per_repository=args.images_per_repository))
    else:
        sys.stdout.writelines(f"{line}\n" for line in diff_table_lines(diff, breached))
