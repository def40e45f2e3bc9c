"""The complexity gate with headroom (issue 36): no block (function, method, closure, nested class) of the product
package above cyclomatic complexity 8, so that the next feature does not sit on the edge of xenon's B (6..10).
xenon only knows grades, hence this count.

    python tools/complexity_gate.py [--max 8] PATH...

One line per block over the bar, `path:line name complexity N > 8`, and exit 1. No baseline: the last block above 8
was brought down with the gate's first run, so there is nothing to grandfather."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from radon.visitors import Class, ComplexityVisitor, Function

MAX_COMPLEXITY = 8


@dataclass(frozen=True)
class Block:
    path: str
    line: int
    name: str
    complexity: int


def _flatten(blocks: Iterable[Function | Class], prefix: str = "") -> Iterator[tuple[str, Function | Class]]:
    """Every block with its dotted name; closures and nested classes too (radon keeps them as children)."""
    for block in blocks:
        name = f"{prefix}{block.name}"
        yield name, block
        if isinstance(block, Class):
            yield from _flatten(block.methods, f"{name}.")
            yield from _flatten(block.inner_classes, f"{name}.")
        yield from _flatten(getattr(block, "closures", []), f"{name}.")


def _top_level(source: str) -> list[Function | Class]:
    # Not radon's `cc_visit`: its list already holds each class's methods beside the class, _flatten walks them.
    visitor = ComplexityVisitor.from_code(source)
    return [*visitor.functions, *visitor.classes]


def blocks_of(source: str, path: str) -> list[Block]:
    return [
        Block(path, block.lineno, name, block.complexity)
        for name, block in _flatten(_top_level(source))
        # A class's own number is the sum of its methods' (radon); its methods are measured one by one.
        if isinstance(block, Function)
    ]


def python_files(paths: Iterable[str]) -> Iterator[Path]:
    for path in map(Path, paths):
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def violations(blocks: Iterable[Block], ceiling: int) -> list[str]:
    return [
        f"{block.path}:{block.line} {block.name} complexity {block.complexity} > {ceiling}"
        for block in blocks
        if block.complexity > ceiling
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--max", type=int, default=MAX_COMPLEXITY)
    args = parser.parse_args(argv)
    blocks = [block for file in python_files(args.paths) for block in blocks_of(file.read_text(), file.as_posix())]
    found = violations(blocks, args.max)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
