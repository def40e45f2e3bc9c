"""Text from registries and clusters as the page shows it: each piece of data kept apart from the page's own words
(the template isolates it in <bdi>), and every invisible bidi control shown as what it is, so that a tag or a
repository name cannot reorder the text around it."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the marks (U+200E, U+200F, U+061C), and the
# zero-width characters that hide a difference between two names (U+200B, U+FEFF).
INVISIBLE = "\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
_SHOWN = str.maketrans({char: f"\u27e8U+{ord(char):04X}\u27e9" for char in INVISIBLE})
_ANY = re.compile(f"[{INVISIBLE}]")


def visible(text: str) -> str:
    """`a\u202eb` becomes `a⟨U+202E⟩b`: the control is shown, never applied."""
    if text.isascii():  # none of them is: the flag is known without reading the text (a page asks 300,000 times)
        return text
    return text.translate(_SHOWN) if _ANY.search(text) else text


@dataclass(frozen=True, slots=True)
class Part:
    """A run of a line: the page's own words, or data (a name, a reason) that the template isolates."""

    text: str
    data: bool = False


Line = tuple[Part, ...]


def data(text: object) -> Part:
    return Part(visible(str(text)), data=True)


def line(*parts: str | Part) -> Line:
    """`line("repository ", data(name), " skipped")`: plain strings are the page's words, data() is data."""
    return tuple(part if isinstance(part, Part) else Part(part) for part in parts)


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"
