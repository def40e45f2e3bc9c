"""The image table's rows, written in Python: escaped as the template's autoescaping escapes."""

from __future__ import annotations

from markupsafe import escape

from ecr_retention.report_page.rows import HTML_SPECIAL, escaped_text


def test_markupsafe_escapes_only_the_characters_the_rows_look_for() -> None:
    # Text without them is written as it is: this holds only while escape() replaces nothing else.
    others = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in HTML_SPECIAL)

    assert escape(others) == others
    assert all(escape(char) != char for char in HTML_SPECIAL)


def test_text_is_escaped_as_markupsafe_escapes_it() -> None:
    for text in ("sha256:0123", "v1.2", "a&b", "<script>", "it's", 'say "hi"', ""):
        assert escaped_text(text) == escape(text)
