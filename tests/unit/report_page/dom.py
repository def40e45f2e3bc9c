"""A small DOM of the page, parsed with the standard library, for tests that read it as a browser would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "input", "col", "br", "img", "hr", "link", "wbr", "source", "area", "base", "embed", "track"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None = None
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def iter(self) -> Iterator[Element]:
        for child in self.children:
            if isinstance(child, Element):
                yield child
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str | None) -> list[Element]:
        """Descendants by tag and attributes (`class_` matches one class among several; None: present)."""
        return [element for element in self.iter() if element.matches(tag, attrs)]

    def find(self, tag: str | None = None, **attrs: str | None) -> Element:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"expected one {tag} {attrs}, found {len(found)}"
        return found[0]

    def matches(self, tag: str | None, attrs: dict[str, str | None]) -> bool:
        if tag is not None and self.tag != tag:
            return False
        for name, value in attrs.items():
            key = "class" if name == "class_" else name.replace("_", "-")
            if key not in self.attrs:
                return False
            if value is None:
                continue
            if key == "class" and value not in self.attrs[key].split():
                return False
            if key != "class" and self.attrs[key] != value:
                return False
        return True

    def by_id(self, ident: str) -> Element:
        return self.find(id=ident)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs}, parent=self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Element(tag, {n: v or "" for n, v in attrs}, parent=self.current))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.current.tag == tag, f"</{tag}> closes <{self.current.tag}>"
        assert self.current.parent is not None
        self.current = self.current.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    assert builder.current is builder.root, f"<{builder.current.tag}> is never closed"
    return builder.root


def document_order(root: Element, *predicates: Callable[[Element], bool]) -> list[int]:
    """The position in document order of the first element matching each predicate."""
    elements = list(root.iter())
    return [next(i for i, element in enumerate(elements) if predicate(element)) for predicate in predicates]
