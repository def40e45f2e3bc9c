"""Reading input files (rules, snapshot, manifests) for the CLI, the services and app.py; every problem becomes an
InputError naming the file. File I/O lives here, not in the domain."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ecr_retention.domain.config import RetentionConfig, parse_config
from ecr_retention.domain.errors import InputError, describe_validation_error, parse_json
from ecr_retention.domain.limits import (
    HOLD_OBJECT,
    IN_USE_MANIFEST,
    IN_USE_MEMORY,
    RULES_FILE,
    SNAPSHOT,
    SPOKE_ROLES,
    SizeLimit,
)
from ecr_retention.domain.registry.regions import KnownRegions, policy_regions_problem
from ecr_retention.domain.timestamps import parse_timestamp
from ecr_retention.layout import HOLDS_PREFIX, MEMORY_FILE

# The CLI's inputs (a snapshot, manifests, holds) and the collector's spoke roles load their models when they are read:
# the functions' cold start reads only the rules file and their settings with this module (handlers/wiring/,
# handlers/settings.py).
if TYPE_CHECKING:
    from ecr_retention.domain.holds.model import Holds
    from ecr_retention.domain.inventory.manifest import Inventory
    from ecr_retention.domain.inventory.spoke_roles import SpokeRoles
    from ecr_retention.domain.registry.images import Snapshot

Model = TypeVar("Model", bound=BaseModel)


def read_limited(path: str | Path, limit: SizeLimit) -> bytes:
    """The bytes of a regular file no larger than `limit`. A FIFO, a device or a directory is refused
    without reading from it (opened non-blocking, so that a FIFO without a writer cannot hang us), and at
    most `limit.max_bytes + 1` bytes are read, because the file can grow after it was measured."""
    descriptor = _open_for_reading(path)
    try:
        data = _read_regular_file(descriptor, path, limit)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if len(data) > limit.max_bytes:
        raise InputError(f"{path}: {limit.too_large()}")
    return data


def _open_for_reading(path: str | Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None


def _read_regular_file(descriptor: int, path: str | Path, limit: SizeLimit) -> bytes:
    """At most `limit.max_bytes + 1` bytes of the open file, refused unless it is a regular file within the limit."""
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        raise InputError(f"{path}: not a regular file")
    if status.st_size > limit.max_bytes:
        raise InputError(f"{path}: {limit.too_large(status.st_size)}")
    with os.fdopen(descriptor, "rb", closefd=False) as file:
        # Sized by the measurement (a read allocates what it asks for), then to the cap if it grew.
        data = file.read(min(status.st_size, limit.max_bytes) + 1)
        if len(data) > status.st_size:
            data += file.read(limit.max_bytes + 1 - len(data))
    return data


def read_text(path: str | Path, limit: SizeLimit) -> str:
    try:
        text = read_limited(path, limit).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: cannot read: {error}") from None
    # Universal newlines, as text mode reads them, so that line numbers in errors match an editor's. Most files have
    # no carriage return, and looking for one is much cheaper than two replacements (30 ms for a 100,000-image file).
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_json(path: str | Path, limit: SizeLimit) -> Any:
    return parse_json(read_text(path, limit), str(path))


def validate_as(model: type[Model], data: Any, source: str | Path) -> Model:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(f"{source}: {describe_validation_error(error, model)}") from None


def load_config(path: str | Path) -> RetentionConfig:
    """The rules file, validated; with botocore at hand (the AWS commands, the Lambdas, synthesis), each policy's
    `regions` is also checked against the Regions it knows: `mars-north-1` is one line (issue 43)."""
    config = parse_config(read_text(path, RULES_FILE), str(path))
    known = known_regions()
    if known is not None:
        problem = policy_regions_problem(
            ((index, policy.regions or ()) for index, policy in enumerate(config.policies)), known
        )
        if problem is not None:
            raise InputError(f"{path}: {problem}")
    return config


def known_regions() -> KnownRegions | None:
    """The Regions botocore's partition data lists, or None where botocore is not installed (the base install's
    offline commands, which check the pattern of a Region's name only)."""
    try:
        from ecr_retention.aws.regions import botocore_regions
    except ImportError:
        return None
    return botocore_regions()


def load_spoke_roles(path: str | Path) -> SpokeRoles:
    """The collector's spoke roles file, {"spokeRoleArns": [...]}; any problem is one InputError naming it."""
    from ecr_retention.domain.inventory.spoke_roles import SpokeRoles  # the collector's and the CLI's: see above

    return validate_as(SpokeRoles, read_json(path, SPOKE_ROLES), path)


def load_snapshots(path: str | Path) -> tuple[Snapshot, ...]:
    """Every registry of a snapshot file: the one-registry object (`{"registryId", "region", "repositories"}`), or
    several as `{"registries": [<that object>, ...]}`, one per Region, in the file's order."""
    from ecr_retention.domain.registry.images import RegistrySnapshots, Snapshot  # the CLI's: see TYPE_CHECKING above

    data = read_json(path, SNAPSHOT)
    if isinstance(data, dict) and "registries" in data and "repositories" not in data:
        return _known_regions_only(validate_as(RegistrySnapshots, data, path).registries, path, several=True)
    if not isinstance(data, dict) or "repositories" not in data:
        raise InputError(
            f"{path}: a snapshot is a JSON object with a repositories list (or a registries list of such objects)"
        )
    return _known_regions_only((validate_as(Snapshot, data, path),), path, several=False)


def _known_regions_only(registries: tuple[Snapshot, ...], path: str | Path, *, several: bool) -> tuple[Snapshot, ...]:
    """With botocore at hand, each registry's `region` is one its partition data lists, as `--region` must be
    (`us-east-3` has a Region's shape and names none: issue 44)."""
    known = known_regions()
    for index, registry in enumerate(registries):
        problem = known.problem(registry.region) if known is not None and registry.region is not None else None
        if problem is not None:
            where = f"registries[{index}].region" if several else "region"
            raise InputError(f"{path}: {where}: {problem}")
    return registries


def load_manifests(directory: str | Path | None) -> Inventory:
    """Every `*.json` in the directory is an in-use manifest of this account's cluster, named `<cluster>.json`, except
    the in-use memory (MEMORY_FILE, which `snapshot --bucket` records beside them; no cluster name starts with `_`);
    every `<account>/*.json` (a 12-digit subfolder, as in the bucket) is a spoke account's cluster's. A manifest or a
    memory that cannot be read is not bad input here: it is a problem of the inventory, which blocks the plan."""
    from ecr_retention.domain.inventory.manifest import Inventory, read_inventory, with_memory  # the CLI's: see above

    if directory is None:
        return Inventory()
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"{directory}: not a directory of in-use manifests")
    accounts = _manifest_paths(folder)
    inventory = read_inventory(
        ((path, read_manifest_file(Path(path))) for path in sorted(accounts)), account_of=accounts.get
    )
    memory = folder / MEMORY_FILE
    if not memory.exists() and not memory.is_symlink():
        return inventory
    return with_memory(inventory, str(memory), read_manifest_file(memory, IN_USE_MEMORY))


def load_holds(directory: str | Path | None) -> Holds:
    """Every `*.json` below the directory is a hold, laid out as under the bucket's holds/ (`aws s3 sync
    s3://B/holds/ DIR` copies it so): `<region>/<repository>/<digest>.json`. A file that is no valid hold is not bad
    input here: it is a problem of the holds, which keeps what its path names or blocks the plan (domain/holds/)."""
    from ecr_retention.domain.holds.model import Holds, read_holds  # the CLI's: see TYPE_CHECKING above

    if directory is None:
        return Holds()
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"{directory}: not a directory of holds")
    return read_holds(
        (str(path), HOLDS_PREFIX + path.relative_to(folder).as_posix(), read_manifest_file(path, HOLD_OBJECT))
        for path in sorted(folder.rglob("*.json"))
    )


def _manifest_paths(folder: Path) -> dict[str, str | None]:
    """Each manifest file of the directory, with its spoke account (None for this account's)."""
    from ecr_retention.domain.inventory.manifest import SPOKE_ACCOUNT  # the CLI's: see TYPE_CHECKING above

    own: dict[str, str | None] = {str(path): None for path in folder.glob("*.json") if path.name != MEMORY_FILE}
    spokes = (path for path in folder.glob("*/*.json") if SPOKE_ACCOUNT.fullmatch(path.parent.name))
    return own | {str(path): path.parent.name for path in spokes}


def read_manifest_file(path: Path, limit: SizeLimit = IN_USE_MANIFEST) -> bytes | InputError:
    """A manifest (or the memory) that cannot be read is handed on as its error: it blocks the run, named by its
    file."""
    try:
        return read_limited(path, limit)
    except InputError as error:
        return error


def parse_now(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_timestamp(text)
    except ValueError as error:
        raise InputError(f"--now: {error}") from None


def check_output_file(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written before any work is done: empty, a directory, in a
    directory that does not exist or is not writable, or anything but a regular file or a new name."""
    if not str(path):
        raise InputError(f"{option}: empty path")
    if path.is_dir():
        raise InputError(f"{option}: {path} is a directory, expected a file")
    check_replaceable(path, option)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"{option}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(f"{option}: directory {parent} is not writable")


InputPaths = Mapping[str, str | Path | None]


def check_not_an_input(path: Path, option: str, *, files: InputPaths, directories: InputPaths | None = None) -> None:
    """Refuse an output that would overwrite one of the command's inputs, however it is named: another spelling of
    the path, a symbolic link to it, a hard link (the same device and inode). `files` and `directories` map each
    input's option to its path (None: not given); a file written into an input directory (`--manifests`, whose every
    .json is read as an in-use manifest) would be read as one the next time. One line, exit 2, nothing written."""
    target = Path(os.path.realpath(path))
    _refuse_an_input_file(path, option, target, files)
    _refuse_an_input_directory(path, option, target, directories or {})


def _refuse_an_input_file(path: Path, option: str, target: Path, files: InputPaths) -> None:
    identity = _identity(path)
    for name, value in files.items():
        if value is not None and (Path(os.path.realpath(value)) == target or _same(identity, _identity(value))):
            raise InputError(f"{option}: {path} is the {name} file this command reads; name another file")


def _refuse_an_input_directory(path: Path, option: str, target: Path, directories: InputPaths) -> None:
    for name, value in directories.items():
        if value is None:
            continue
        if Path(os.path.realpath(value)) == target.parent or _same(_identity(target.parent), _identity(value)):
            raise InputError(
                f"{option}: {path} is in the {name} directory {value}, where every .json file is read as an in-use "
                "manifest; name a file elsewhere"
            )


def _identity(path: str | Path) -> tuple[int, int] | None:
    """The device and inode of what the path names (through symbolic links), or None when nothing is there."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _same(one: tuple[int, int] | None, other: tuple[int, int] | None) -> bool:
    return one is not None and one == other


def check_replaceable(path: Path, option: str) -> None:
    """Only a regular file or a new name may be replaced by an output file. The file is written beside its name
    and renamed over it, so whatever holds the name is unlinked and replaced: a FIFO or a device (`/dev/null`, as
    root) would be destroyed, not written to. A symbolic link is refused too: the rename would replace the link,
    not the file it points to, and a link planted in a shared directory (/tmp) must not steer where we write."""
    try:
        status = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return  # a new name; the checks of its directory say what is wrong with that
    except OSError as error:
        raise InputError(f"{option}: {path}: cannot read: {error.strerror or error}") from None
    if stat.S_ISLNK(status.st_mode):
        raise InputError(f"{option}: {path} is a symbolic link; name a new or regular file")
    if not stat.S_ISREG(status.st_mode):
        raise InputError(f"{option}: {path} is not a regular file; name a new or regular file")


def open_beside(path: Path) -> tuple[int, Path]:
    """A new file beside `path` for its next contents, created exclusively (never through a link or over a file
    someone left there), with the permissions open() gives new files (the umask)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.open(temporary, flags, 0o666), temporary


def write_file_atomically(path: Path, body: bytes, option: str = "--out") -> None:
    """Write beside the target, then rename over it, so a reader never sees half a file. What holds the name is
    checked again right before the rename: it may have changed since the arguments were checked."""
    try:
        descriptor, temporary = open_beside(path)
    except OSError as error:
        raise InputError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(body)
        check_replaceable(path, option)
        os.replace(temporary, path)
    except OSError as error:
        raise InputError(f"{path}: cannot write: {error.strerror or error}") from None
    finally:
        temporary.unlink(missing_ok=True)  # gone already when the rename happened
