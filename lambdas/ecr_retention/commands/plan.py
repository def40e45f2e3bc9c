"""`ecr-retention plan`: decide, offline, what a run would keep, delete or archive, and why."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic_core import PydanticSerializationError

from ecr_retention.commands.registry_inputs import (
    RegistryInputs,
    add_input_arguments,
    load_inputs,
    read_times_line,
    say_warnings,
)
from ecr_retention.commands.report_files import add_format_arguments, output_file, write_report_file
from ecr_retention.domain.config import RetentionConfig
from ecr_retention.domain.errors import InputError
from ecr_retention.domain.inventory.evidence import manifest_evidence
from ecr_retention.domain.planning import plan_registry
from ecr_retention.domain.planning.plan import Plan
from ecr_retention.domain.reporting.run_report import report_of_plan
from ecr_retention.loading import load_config, parse_now
from ecr_retention.tables import plan_table_lines


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="plan retention offline against a registry snapshot",
        description="Plan retention offline: every image gets keep, delete or archive, with every reason. "
        "--format html or csv writes the plan as the report of its dry run (the page, the sheet) into --out. "
        "Exit 0 when the plan is clean, 1 when it is blocked or a repository is skipped, 2 on bad input.",
    )
    parser.add_argument("--config", required=True, help="the rules file (retention.yaml)")
    add_input_arguments(parser)
    parser.add_argument("--now", help="evaluate as of this ISO 8601 time (default: the current time)")
    add_format_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = output_file(
        args,
        inputs={"--config": args.config, "--snapshot": args.snapshot},
        input_directories={"--manifests": args.manifests},
    )
    config = load_config(args.config)
    now = parse_now(args.now)
    inputs = load_inputs(args, several=True)
    say_warnings("plan", inputs, config)
    say_read_times(inputs, now)
    if inputs.others:
        if out is not None:
            raise InputError(
                f"--format {args.format}: a snapshot of several registries is planned as table or json (or name one "
                "with --region)"
            )
        return plan_several(config, inputs, now, args.format)
    snapshot, inventory = inputs.snapshot, inputs.inventory
    plan = plan_registry(config, snapshot, inventory, now, sources=inputs.sources)
    if out is not None:
        report = report_of_plan(
            plan,
            run_id=f"plan-{plan.generated_at:%Y%m%dT%H%M%SZ}",
            manifests=manifest_evidence(config.safety, inventory, now),
        )
        write_report_file(out, report, config, args.format, "plan")
    elif args.format == "json":
        write_out(plan_json(plan), b"\n")
    else:
        sys.stdout.writelines(f"{line}\n" for line in plan_table_lines(plan))
    return 1 if plan.has_problems else 0


def say_read_times(inputs: RegistryInputs, now: datetime) -> None:
    """The pipeline's reading, from the bucket: how old it is (each Region's, with several)."""
    if inputs.read_at:
        print(f"plan: {read_times_line(inputs.read_at, now)}", file=sys.stderr)
    for snapshot, read_at in zip(inputs.registries, inputs.read_times if inputs.others else (), strict=False):
        print(f"plan: {snapshot.region}: {read_times_line(read_at, now)}", file=sys.stderr)


def plan_several(config: RetentionConfig, inputs: RegistryInputs, now: datetime, output: str) -> int:
    """Each registry of the snapshot planned with its own coordinates and replication, against the same manifests
    and memory; one document (every repository naming its `region`) or one table per Region."""
    plans = plans_of_registries(config, inputs, now)
    if output == "json":
        write_out(json.dumps(several_plans_document(plans), indent=2).encode(), b"\n")
    else:
        write_tables(plans)
    return 1 if any(plan.has_problems for plan in plans) else 0


def plans_of_registries(config: RetentionConfig, inputs: RegistryInputs, now: datetime) -> list[Plan]:
    located = {(s.effective_registry_id, s.region): s for s in inputs.registries}
    known = {(account, region) for account, region in located if account is not None and region is not None}
    return [
        plan_registry(config, snapshot, inputs.inventory, now, other_registries=known - {where}, sources=inputs.sources)
        for where, snapshot in located.items()
    ]


def write_tables(plans: Sequence[Plan]) -> None:
    """One table per Region, each under its heading."""
    for number, plan in enumerate(plans):
        account = f" (registry {plan.registry_id})" if plan.registry_id else ""
        sys.stdout.writelines([*([""] if number else []), f"== Region {plan.region}{account} ==\n"])
        sys.stdout.writelines(f"{line}\n" for line in plan_table_lines(plan))


def several_plans_document(plans: Sequence[Plan]) -> dict[str, Any]:
    """One plan document for several registries: the plan's fields (`registryId` when they share one account,
    `region` null), `blocked` and `warnings` of every registry once each, and every registry's repositories, in the
    snapshot's order of registries, each naming its `region` after its name."""
    documents = [plan.to_json_dict() for plan in plans]
    accounts = {plan.registry_id for plan in plans}
    return {
        **documents[0],
        "registryId": accounts.pop() if len(accounts) == 1 else None,
        "region": None,
        "blocked": _once(reason for plan in plans for reason in plan.blocked),
        "warnings": _once(warning for plan in plans for warning in plan.warnings),
        "repositories": _regional_repositories(plans, documents),
    }


def _once(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _regional_repositories(plans: Sequence[Plan], documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every registry's repositories, in the snapshot's order of registries, each naming its `region`."""
    return [
        _with_region(repository, plan.region)
        for plan, document in zip(plans, documents, strict=True)
        for repository in document["repositories"]
    ]


def _with_region(repository: dict[str, Any], region: str | None) -> dict[str, Any]:
    name, *rest = repository.items()
    return dict([name, ("region", region), *rest])


def plan_json(plan: Plan) -> bytes:
    """The plan's document as `--format json` has always written it, `json.dump(..., indent=2)`: ASCII, with every
    other character as a `\\u` escape. Pydantic's encoder writes the same bytes, several times faster, with two
    exceptions: it leaves DEL as it is, and it cannot encode a lone surrogate, which `json.loads` reads from an
    escape in a snapshot (`"\\ud800"`) and the standard library writes back as that escape."""
    document = plan.document()
    try:
        encoded = document.__pydantic_serializer__.to_json(document, indent=2, by_alias=True, ensure_ascii=True)
    except PydanticSerializationError:
        return json.dumps(plan.to_json_dict(), indent=2).encode()
    return encoded.replace(b"\x7f", b"\\u007f")  # DEL is ASCII, so only inside a string: as json.dumps escapes it


def write_out(*parts: bytes) -> None:
    """Bytes to standard output, after the text written to it so far: the encoder's bytes go out as they are, not
    decoded to text and encoded back (a standard output of text alone gets them as text)."""
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    for part in parts:
        if out is None:
            sys.stdout.write(part.decode())
        else:
            out.write(part)
