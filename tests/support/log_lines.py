"""The warning lines one logger emits during a test, read from a handler on that very logger: the package's loggers
stop propagating to the root once a handler module is imported (handlers/observability.py), so pytest's caplog and
stdout capture see them or not depending on which tests ran first."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def warnings_of(logger_name: str) -> Iterator[list[str]]:
    """The messages of the WARNING (and worse) records logged through `logger_name` inside the block."""
    handler = _Kept()
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
