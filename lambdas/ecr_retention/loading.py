"""Reading input files (rules, snapshot, manifests) for the CLI, the services and app.py; every problem becomes an
InputError naming the file. File I/O lives here, not in the domain."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.errors import InputError, describe_validation_error, parse_json
from ecr_retention.domain.inventory import Inventory, read_inventory
from ecr_retention.domain.registry import Snapshot
from ecr_retention.domain.timestamps import parse_timestamp

Model = TypeVar("Model", bound=BaseModel)


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read: {error}") from None


def read_json(path: str | Path) -> Any:
    return parse_json(read_text(path), str(path))


def validate_as(model: type[Model], data: Any, source: str | Path) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, model)}") from None


def load_config(path: str | Path) -> RetentionConfig:
    return parse_config(read_text(path), str(path))


def load_snapshot(path: str | Path) -> Snapshot:
    data = read_json(path)
    if not isinstance(data, dict) or "repositories" not in data:
        raise InputError(f"{path}: a snapshot is a JSON object with a repositories list")
    return validate_as(Snapshot, data, path)


def load_manifests(directory: str | Path | None) -> Inventory:
    """Every `*.json` in the directory is an in-use manifest, named `<cluster>.json`. A manifest that
    cannot be read is not bad input here: it is a problem of the inventory, which blocks the plan."""
    if directory is None:
        return Inventory()
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"{directory}: not a directory of in-use manifests")
    return read_inventory((str(path), read_manifest_file(path)) for path in sorted(folder.glob("*.json")))


def read_manifest_file(path: Path) -> bytes | InputError:
    try:
        return path.read_bytes()
    except OSError as error:
        return InputError(f"{path}: cannot read: {error.strerror or error}")


def parse_now(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_timestamp(text)
    except ValueError as error:
        raise InputError(f"--now: {error}") from None
