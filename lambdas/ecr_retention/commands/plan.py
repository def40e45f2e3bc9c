"""`ecr-retention plan`: decide, offline, what a run would keep, delete or archive, and why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecr_retention.commands.report_files import add_format_arguments, output_file, write_report_file
from ecr_retention.domain.manifest_evidence import manifest_evidence
from ecr_retention.domain.planner import plan_registry
from ecr_retention.domain.report import report_of_plan
from ecr_retention.loading import load_config, load_manifests, load_snapshot, parse_now
from ecr_retention.tables import render_plan_table


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="plan retention offline against a registry snapshot",
        description="Plan retention offline: every image gets keep, delete or archive, with every reason. "
        "--format html or csv writes the plan as the report of its dry run (the page, the sheet) into --out. "
        "Exit 0 when the plan is clean, 1 when it is blocked or a repository is skipped, 2 on bad input.",
    )
    parser.add_argument("--config", required=True, help="the rules file (retention.yaml)")
    parser.add_argument("--snapshot", required=True, help="registry snapshot JSON (ecr-retention snapshot)")
    parser.add_argument("--manifests", help="directory of in-use manifests (<cluster>.json)")
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    add_format_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = output_file(args)
    config = load_config(args.config)
    snapshot = load_snapshot(args.snapshot)
    inventory = load_manifests(args.manifests)
    now = parse_now(args.now)
    plan = plan_registry(config, snapshot, inventory, now)
    if out is not None:
        report = report_of_plan(
            plan,
            run_id=f"plan-{plan.generated_at:%Y%m%dT%H%M%SZ}",
            manifests=manifest_evidence(config.safety, inventory, now),
        )
        write_report_file(out, report, config, args.format, "plan")
    elif args.format == "json":
        json.dump(plan.to_json_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_plan_table(plan))
    return 1 if plan.has_problems else 0
