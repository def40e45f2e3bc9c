"""The operator CLI: `ecr-retention <command>`. Each command lives in ecr_retention.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from contextlib import nullcontext, suppress
from typing import Any, NoReturn

from ecr_retention import __version__
from ecr_retention.commands.aws_session import AwsFailure
from ecr_retention.domain.errors import InputError
from ecr_retention.extras import install_hint, missing_extra
from ecr_retention.gc_guard import cyclic_gc_off
from ecr_retention.tables import printable

# Each module defines register(subparsers) and sets `run` (args -> exit code) as a default.
COMMAND_MODULES = (
    "ecr_retention.commands.plan",
    "ecr_retention.commands.diff",
    "ecr_retention.commands.validate",
    "ecr_retention.commands.lifecycle_preview",
    "ecr_retention.commands.lifecycle_diff",
    "ecr_retention.commands.doctor",
    "ecr_retention.commands.export",
    "ecr_retention.commands.export_aws",
    "ecr_retention.commands.snapshot",
    "ecr_retention.commands.run",
    "ecr_retention.commands.tag",
    "ecr_retention.commands.restore",
    "ecr_retention.commands.hold",
    "ecr_retention.commands.demo",
)

# Commands that read files and build everything in memory: they create no reference cycles to speak of, so they run
# with the cyclic collector off (gc_guard). The others talk to AWS or host the demo's emulator, whose garbage has
# cycles (the demo's peak grows from 374 to 532 MiB without the collector): they keep it, except around each of
# `run`'s evaluations and its report, which run_pipeline guards as the Lambda steps are guarded.
OFFLINE_COMMANDS = frozenset({"plan", "validate", "lifecycle-preview", "doctor", "diff"})

EXIT_OK, EXIT_PROBLEMS, EXIT_BAD_INPUT = 0, 1, 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# What shtab writes completion scripts for, from the parser itself (every command, option and choice).
COMPLETION_SHELLS = ("bash", "zsh", "tcsh")


class PrintCompletion(argparse.Action):
    """--print-completion SHELL: the script, then exit 0, as --version does."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        import shtab  # only here: no other command needs it

        with suppress(BrokenPipeError):  # `ecr-retention --print-completion bash | head` is not an error
            print(shtab.complete(parser, shell=str(values)), flush=True)
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ecr-retention",
        description="Prune and tag Amazon ECR images beyond lifecycle policies, never deleting what runs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--print-completion",
        choices=COMPLETION_SHELLS,
        metavar="SHELL",
        action=PrintCompletion,
        help=f"print the shell completion script for SHELL ({', '.join(COMPLETION_SHELLS)}) and exit",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with cyclic_gc_off() if args.command in OFFLINE_COMMANDS else nullcontext():
            code: int = args.run(args)
    except InputError as error:
        print(printable(f"ecr-retention {args.command}: error: {error}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except AwsFailure as error:
        print(f"ecr-retention {args.command}: AWS error: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except BrokenPipeError:  # `ecr-retention plan | head` is not an error
        return EXIT_OK
    except ModuleNotFoundError as error:
        return _missing_module(args.command, error)
    return code


def _missing_module(command: str, error: ModuleNotFoundError) -> int:
    """A command's optional dependency is not installed: one line naming the extra that brings it, exit 2, before the
    command has touched anything (each imports its adapters when it starts to need them). Any other missing module
    is a broken installation, and its traceback says which."""
    extra = missing_extra(error)
    if extra is None:
        raise error
    print(
        f"ecr-retention {command}: error: {error.name} is not installed (the {extra} extra); {install_hint(extra)}",
        file=sys.stderr,
    )
    return EXIT_BAD_INPUT
