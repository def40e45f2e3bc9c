"""Sizes as people read them, in every output: tables, summaries, error lines."""

from __future__ import annotations


def human_bytes(size: int | None) -> str:
    """`512 B`, `1.5 KiB`, ... `2.0 TiB`; `-` for a size ECR did not report."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
