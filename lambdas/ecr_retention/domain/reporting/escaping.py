"""Text from outside (snapshots, manifests, registry strings, file names) made safe to show to people, in a
terminal or an e-mail: the CLI tables and the SNS summary escape alike."""

from __future__ import annotations

import re

# Characters that would let text from a snapshot, a manifest or a file name rewrite what a person reads:
# C0 and C1 controls and DEL (a newline splits a row, an escape sequence drives the terminal), the line
# and paragraph separators, and the Unicode bidirectional controls (U+202E shows `gnp.exe` as `exe.png`).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """Text for human output with every unsafe character written as an escape (`\\n`, `\\u202e`), so one
    value stays on one line and reads in its true order. The result has no unsafe character left, so
    escaping twice changes nothing, and inside a JSON string the escape means the same character."""
    return _UNSAFE.sub(lambda match: _NAMED_ESCAPES.get(match[0]) or f"\\u{ord(match[0]):04x}", text)
