"""Glob patterns of the rules file: `*` matches any run of characters (slashes included), `?` one
character; everything else is literal and the whole name must match."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


def glob_to_regex(pattern: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


@lru_cache(maxsize=4096)
def compile_globs(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One anchored regex that matches a name if any of the patterns matches it whole."""
    return re.compile("|".join(f"(?:{glob_to_regex(p)})" for p in patterns), re.DOTALL)


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    return compile_globs(tuple(patterns)).fullmatch(name) is not None
