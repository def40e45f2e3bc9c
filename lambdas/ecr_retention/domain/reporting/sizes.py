"""Sizes as people read them, in every output: tables, summaries, error lines."""

from __future__ import annotations


def human_bytes(size: int | None) -> str:
    """`512 B`, `1.5 KiB`, ... `2.0 TiB`; `-` for a size ECR did not report."""
    if size is None:
        return "-"
    value = float(size)
    if value < 1024:
        return f"{value:.0f} B"
    return _in_binary_units(value / 1024)


def _in_binary_units(kib: float) -> str:
    """A size of at least 1 KiB, in the largest unit it reaches, up to TiB."""
    value = kib
    for unit in ("KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
