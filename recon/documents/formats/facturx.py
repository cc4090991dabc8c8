"""Factur-X / ZUGFeRD / XRechnung PDFs: the CII XML the PDF carries as an embedded file.

The embedded file is found by its registered names (`factur-x.xml`, `zugferd-invoice.xml`,
`ZUGFeRD-invoice.xml`, `xrechnung.xml`, any case); the invoice is that XML, read by `cii.py`
exactly. The PDF's visible pages are a picture of the same invoice and are not read. PDF/A-3
conformance (XMP metadata, embedded fonts) is not checked: the XML is what binds.

The writer makes a PDF with the document's text layer and its CII XML embedded under
`factur-x.xml` (AFRelationship Alternative), enough for any Factur-X reader to find the XML; it
does not make a conforming PDF/A-3.
"""

from __future__ import annotations

from pypdf import PdfReader
from pypdf.generic import ArrayObject, NameObject

from recon.documents.formats.pdf_text import text_pdf_writer, to_bytes
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


def write(xml: str, visible_text: str) -> bytes:
    writer = text_pdf_writer(visible_text)
    attachment = writer.add_attachment("factur-x.xml", xml.encode("utf-8"))
    spec = attachment.pdf_object if hasattr(attachment, "pdf_object") else None
    if spec is not None:
        spec[NameObject("/AFRelationship")] = NameObject("/Alternative")
        writer.root_object[NameObject("/AF")] = ArrayObject([spec.indirect_reference or spec])
    return to_bytes(writer)
