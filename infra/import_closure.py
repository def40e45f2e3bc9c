"""What the functions import of the ecr_retention package: the closure of the handlers' imports, read from the
source (every `import` of a module, at any depth, a function's own lazy imports included), each module with the
packages above it. The Lambda asset ships exactly these modules and their packages' data files, so the CLI's code
(commands, tables, the restore command's service, the diff) stays out without a list to keep up to date."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ENTRY_PACKAGE = "handlers"  # every Lambda's handler is a module of ecr_retention.handlers
IGNORED_SUFFIXES = (".pyc", ".pyo")
# Files of the distribution that nothing imports or reads at run time: the type checkers' marker (PEP 561).
IGNORED_NAMES = frozenset({"py.typed"})


def module_file(root: Path, module: str) -> Path | None:
    """The file of an ecr_retention module (a module's .py, a package's __init__.py), or None when it is none."""
    parts = module.split(".")[1:]
    path = root.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    source = path.with_suffix(".py")
    return source if parts and source.is_file() else None


def imported_modules(root: Path, module: str, source: Path) -> Iterator[str]:
    """The package's modules that one module imports: `import a.b`, `from a import b` (b a module or a name)."""
    package = module if source.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source.read_bytes(), filename=str(source))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.module, node.level)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _absolute(package: str, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    parent = package.rsplit(".", level - 1)[0] if level > 1 else package
    return f"{parent}.{name}" if name else parent


def shipped_modules(root: Path) -> frozenset[str]:
    """The closure, from every module of the entry package, of the ecr_retention modules imported, with the
    packages above each."""
    name = root.name
    handlers = (path.stem for path in (root / ENTRY_PACKAGE).glob("*.py") if path.stem != "__init__")
    pending = [f"{name}.{ENTRY_PACKAGE}", *(f"{name}.{ENTRY_PACKAGE}.{stem}" for stem in handlers)]
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        source = module_file(root, module) if module not in seen and _in_package(name, module) else None
        if source is None:  # seen, outside the package, or a name imported from a module
            continue
        seen.add(module)
        pending.extend(_packages_above(module))
        pending.extend(imported_modules(root, module, source))
    return frozenset(seen)


def _in_package(package: str, module: str) -> bool:
    return module == package or module.startswith(package + ".")


def _packages_above(module: str) -> Iterable[str]:
    parts = module.split(".")
    return (".".join(parts[:end]) for end in range(1, len(parts)))


def shipped_files(root: Path) -> list[Path]:
    """The shipped modules' files, and the data files (non-Python, e.g. the page's templates) of shipped packages."""
    sources = {path for module in shipped_modules(root) if (path := module_file(root, module)) is not None}
    packages = {path.parent for path in sources if path.name == "__init__.py"}
    return sorted(sources | {path for path in root.rglob("*") if _is_data_file(root, path, packages)})


def _is_data_file(root: Path, path: Path, packages: set[Path]) -> bool:
    return (
        path.is_file()
        and path.suffix != ".py"
        and not path.name.endswith(IGNORED_SUFFIXES)
        and path.name not in IGNORED_NAMES
        and "__pycache__" not in path.parts
        and _nearest_package(root, path) in packages
    )


def _nearest_package(root: Path, path: Path) -> Path | None:
    for directory in path.parents:
        if (directory / "__init__.py").is_file():
            return directory
        if directory == root:
            break
    return None
