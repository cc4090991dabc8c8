"""Reading XML that strangers send: hardened parsing and namespace-exact lookups.

`defusedxml` refuses any document type declaration (`forbid_dtd`): no internal entities (so no
"billion laughs" expansion), no external entities or DTDs (so no file or network read, XXE). An
e-invoice never needs a DTD: UBL, CII and Factur-X are defined by XML Schema. The document is
decoded first, so a DTD cannot hide behind an encoding.

Elements are found by namespace URI and local name (Clark notation, `{uri}Name`), never by
prefix: `cbc:ID`, `ns2:ID` and a default namespace are the same element to us.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as fast_tree
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_tree
from defusedxml import DefusedXmlException

from recon.domain.errors import HostileXml, UnreadableInvoice

_ENCODING = re.compile(rb"^\s*<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)[\"']")


def parse(data: bytes | str, what: str) -> Element:
    """The document's root element, or UnreadableInvoice saying why not (one line).

    A document that contains `<!DOCTYPE` anywhere goes through defusedxml, which refuses the DTD
    (or parses it, if the text only sits in a comment). Any other document cannot declare an
    entity or name an external one, so it is parsed by ElementTree's C parser: defusedxml's is the
    pure-Python one (~3 times slower: step 2 of a 20,000-invoice UBL night spent most of its
    time building elements in Python)."""
    text = data if isinstance(data, str) else as_text(data)
    try:
        if "<!DOCTYPE" not in text:
            return fast_tree.fromstring(text)
        return safe_tree.fromstring(text, forbid_dtd=True)
    except DefusedXmlException as exc:
        kind = type(exc).__name__
        raise HostileXml(
            f"{what}: refused: the XML declares a DTD or entities ({kind}); an e-invoice needs none",
            f"the XML declares a DTD or entities ({kind}); an e-invoice needs none, and nothing in "
            "it was expanded or read") from None
    except ParseError as exc:
        raise UnreadableInvoice(f"{what}: not well-formed XML ({exc})") from None


def as_text(data: bytes) -> str:
    """The XML as text in the encoding it declares (UTF-8 if none), for storing. A declaration
    naming an encoding Python does not know is read as UTF-8 (the parse then fails loudly)."""
    match = _ENCODING.match(data[:200])
    encoding = match.group(1).decode() if match else "utf-8"
    try:
        text = data.decode(encoding, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    return text.lstrip("\ufeff")


def local(tag: str) -> str:
    return tag.rpartition("}")[2]


def namespace(tag: str) -> str:
    return tag[1:].partition("}")[0] if tag.startswith("{") else ""


class Finder:
    """Paths like `cac:Party/cbc:EndpointID` resolved against a fixed prefix map."""

    def __init__(self, prefixes: dict[str, str], renames: dict[str, str] | None = None) -> None:
        self.prefixes = prefixes
        self.renames = renames or {}  # an older vocabulary's names for the same elements
        self._cache: dict[str, str] = {}

    def path(self, path: str) -> str:
        found = self._cache.get(path)
        if found is None:
            parts = []
            for step in path.split("/"):
                prefix, _, name = step.rpartition(":")
                name = self.renames.get(name, name)
                parts.append(f"{{{self.prefixes[prefix]}}}{name}" if prefix else name)
            found = self._cache[path] = "/".join(parts)
        return found

    def one(self, node: Element | None, path: str) -> Element | None:
        return None if node is None else node.find(self.path(path))

    def all(self, node: Element | None, path: str) -> list[Element]:
        return [] if node is None else node.findall(self.path(path))

    def text(self, node: Element | None, path: str) -> str | None:
        found = self.one(node, path)
        if found is None or found.text is None:
            return None
        return found.text.strip() or None
