"""Factur-X / ZUGFeRD / XRechnung PDFs: the CII XML the PDF carries as an embedded file.

The embedded file is found by its registered names (`factur-x.xml`, `zugferd-invoice.xml`,
`ZUGFeRD-invoice.xml`, `xrechnung.xml`, any case); the invoice is that XML, read by `cii.py`
exactly. PDF/A-3 conformance (XMP metadata, embedded fonts) is not checked.

The visible pages are the same invoice for a person, so they are compared with the XML
(`disagreement`): when the page's text layer is one of the layouts recon reads, its number, each
line's quantity (by SKU, where the page states the line) and the sum of its lines must be the
XML's. A disagreement parks the invoice with both readings as evidence: which one the supplier
meant is for a person to ask. A page in no layout recon reads (free text, a picture) is not
compared: nothing on it can be read as a number, a line or a total with certainty.

The writer makes a PDF with the document's text layer and its CII XML embedded under
`factur-x.xml` (AFRelationship Alternative), enough for any Factur-X reader to find the XML; it
does not make a conforming PDF/A-3.
"""

from __future__ import annotations

from decimal import Decimal

from pypdf import PdfReader
from pypdf.generic import ArrayObject, NameObject

from recon.documents.formats.pdf_text import text_pdf_writer, to_bytes
from recon.documents.formats.reading import Reading
from recon.domain.errors import UnreadableInvoice

NAMES = ("factur-x.xml", "zugferd-invoice.xml", "xrechnung.xml")
MAX_XML_BYTES = 400_000  # as much as any other document file may be


def embedded_xml(reader: PdfReader, name: str) -> bytes | None:
    """The invoice XML a Factur-X / ZUGFeRD PDF carries, or None if it carries none."""
    try:
        attachments = reader.attachments
        found = [key for key in attachments if key.lower() in NAMES]
        if not found:
            return None
        data = attachments[found[0]]
    except (ValueError, KeyError, TypeError) as exc:
        raise UnreadableInvoice(f"{name}: its embedded files cannot be read ({str(exc)[:80]})") \
            from None
    content = data[0] if isinstance(data, list) else data
    if len(content) > MAX_XML_BYTES:
        raise UnreadableInvoice(f"{name}: its embedded invoice XML is too large")
    return content


def _shown(reading: Reading) -> str:
    lines = ", ".join(f"line {ln.line_no} {ln.sku} x {ln.quantity} = {ln.net_amount}"
                      for ln in reading.lines[:20])
    more = f" (+{len(reading.lines) - 20} lines)" if len(reading.lines) > 20 else ""
    return f"number {reading.number}; {lines}{more}; lines sum to {_total(reading)}"


def _total(reading: Reading) -> Decimal:
    return sum((ln.net_amount for ln in reading.lines), Decimal("0"))


def disagreement(name: str, xml: Reading, page: Reading | None) -> tuple[str, str] | None:
    """(reason, evidence with both readings) when the page states a number, a line's quantity
    or a line total other than the embedded XML's; None when they agree or the page states none
    of them in a layout recon reads."""
    if page is None or not page.lines:
        return None
    differs = []
    if page.number and xml.number and page.number.strip() != xml.number.strip():
        differs.append(f"number {xml.number} in the XML, {page.number} on the page")
    on_page: dict[str, list] = {}
    for line in page.lines:
        on_page.setdefault(line.sku, []).append(line)
    for line in xml.lines:
        shown = on_page.get(line.sku, [])
        if len(shown) == 1 and shown[0].quantity != line.quantity:
            differs.append(f"line {line.line_no} ({line.sku}) quantity {line.quantity} in the "
                           f"XML, {shown[0].quantity} on the page")
    if _total(page) != _total(xml):
        differs.append(f"lines sum to {_total(xml)} in the XML, {_total(page)} on the page")
    if not differs:
        return None
    return (f"{name}: its embedded XML and its page disagree: {'; '.join(differs)}",
            f"embedded XML: {_shown(xml)}\npage: {_shown(page)}")


def write(xml: str, visible_text: str) -> bytes:
    writer = text_pdf_writer(visible_text)
    attachment = writer.add_attachment("factur-x.xml", xml.encode("utf-8"))
    spec = attachment.pdf_object if hasattr(attachment, "pdf_object") else None
    if spec is not None:
        spec[NameObject("/AFRelationship")] = NameObject("/Alternative")
        writer.root_object[NameObject("/AF")] = ArrayObject([spec.indirect_reference or spec])
    return to_bytes(writer)
