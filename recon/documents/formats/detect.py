"""Which reader a document needs, decided by its content, never by its file name.

Two entry points:
- `read_file(name, data)` for a file a person or a mailbox brings: the text to store as the
  night's document, and what can be read from it before the night (number, sender, PO, kind);
- `read_stored(document)` for step 2: the structured reading of a stored document, or None when
  it is text for the offline layouts or the model.

What is stored: a JSON or XML document as sent (decoded); a Factur-X / ZUGFeRD PDF as the CII XML
it embeds; any other PDF as its text layer; a scan (a PDF with no text) or a PDF nobody can open
as a one-line marker with the reason, which step 2 parks without asking a model. The original
file is not kept; its name and SHA-256 are recorded with the invoice.

The model never reads a recognised structured document (no call, no bill), nor XML that was
refused as hostile (a DTD, entities) or that declares itself XML (`<?xml`) and is not
well-formed. JSON or XML of any other shape, HTML, and markup that is not XML are text like any
other, for the offline layouts or the model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal

from pypdf import PdfReader

from recon.documents.extraction.offline import parse_document
from recon.documents.extraction.schema import MAX_DOCUMENT_CHARS
from recon.documents.formats import cii, gst_einvoice, ubl
from recon.documents.formats.facturx import disagreement, embedded_xml
from recon.documents.formats.pdf_text import OCR_NOTE, SCAN_REASON, open_pdf, text_layer
from recon.documents.formats.reading import INVOICE, PartyIds, Reading, ReadingLine
from recon.documents.formats.xml import as_text, parse
from recon.domain.errors import HostileXml, RefusedDocument, UnreadableInvoice

UNREADABLE_MARK = "%recon-unreadable: "


@dataclass
class FileReading:
    name: str
    format: str  # gst-einvoice, ubl, cii, facturx, pdf-text, pdf-scan, pdf-broken, xml, text
    document: str  # what is stored and what step 2 reads
    sha256: str
    reading: Reading | None = None  # what a reader could make of it before the night
    problem: str | None = None  # why step 2 will park it, when that is already known
    refusal: str | None = None  # why the importer refuses this file alone (names the file)

    @property
    def structured(self) -> bool:
        return self.format in ("gst-einvoice", "ubl", "cii", "facturx")


def _unreadable(reason: str, evidence: str = "") -> str:
    """What is stored for a document step 2 parks without reading: the marker, the reason on
    its line, then the evidence, if any."""
    return f"{UNREADABLE_MARK}{reason.replace(chr(10), ' ')}\n{evidence}"


def _as_text(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


def _is_html(head: str | bytes) -> bool:
    start = (head.decode("latin-1") if isinstance(head, bytes) else head)[:64].lstrip(
        "\ufeff\xef\xbb\xbf \t\r\n").lower()
    return start.startswith(("<!doctype html", "<html"))


def _structured_xml(text: str | bytes) -> Reading | None:
    """UBL or CII from XML, None for XML of another kind and for HTML (text for the layouts or
    the model); XML that declares a DTD, or says it is XML and is broken, raises."""
    if _is_html(text[:64]):
        return None
    try:
        root = parse(text, "XML")
    except UnreadableInvoice as exc:
        declared = text[:64].lstrip(b"\xef\xbb\xbf \t\r\n" if isinstance(text, bytes)
                                    else "\ufeff \t\r\n")
        if "DTD" in exc.reason or declared.startswith(b"<?xml" if isinstance(text, bytes)
                                                       else "<?xml"):
            raise
        return None
    if ubl.is_ubl(root):
        return ubl.read_root(root)
    if cii.is_cii(root):
        return cii.read_root(root)
    other = ubl.other_document(root) or cii.other_document(root)
    if other:
        raise RefusedDocument(f"XML: {other}", other)
    return None


def _refused(name: str, fmt: str, document: str, digest: str, exc: RefusedDocument) -> FileReading:
    """A file refused by itself at import; stored nowhere (step 2 would park it the same way)."""
    why = (f"DOCTYPE not allowed in {name}: {exc.what}" if isinstance(exc, HostileXml)
           else f"{name} is {exc.what}")
    return FileReading(name, fmt, document, digest, problem=exc.reason, refusal=why)


def _structured_json(text: str) -> Reading | None:
    try:
        data = json.loads(text, parse_float=Decimal)
    except (ValueError, RecursionError):
        return None
    return gst_einvoice.read_object(data) if gst_einvoice.looks_like(data) else None


def text_reading(text: str) -> Reading | None:
    """A text layout the offline parser knows, as a reading (None when it knows none)."""
    try:
        found = parse_document(text)
    except UnreadableInvoice:
        return None
    lines = [ReadingLine(line_no=ln.line_no, sku=ln.sku, description=ln.description,
                         quantity=Decimal(ln.quantity),
                         net_amount=Decimal(ln.quantity * ln.unit_price_paise).scaleb(-2),
                         unit_price=Decimal(ln.unit_price_paise).scaleb(-2)) for ln in found.lines]
    return Reading(format="text", kind=INVOICE, number=found.invoice_no, issued_on=None,
                   sender=PartyIds(supplier_id=found.supplier_id), po_number=found.po_number,
                   currency=None, lines=lines)


def _page_of(reader: PdfReader, name: str) -> str:
    """A Factur-X PDF's visible text, compared with its XML; '' when it cannot be read (the XML
    binds: a page nobody can read is not a reason to refuse it)."""
    try:
        return text_layer(reader, name)
    except UnreadableInvoice:
        return ""


def _read_pdf(name: str, data: bytes, digest: str) -> FileReading:
    try:
        reader = open_pdf(data, name)
        xml = embedded_xml(reader, name)
        text = text_layer(reader, name) if xml is None else _page_of(reader, name)
    except UnreadableInvoice as exc:
        return FileReading(name, "pdf-broken", _unreadable(exc.reason), digest, problem=exc.reason)
    if xml is not None:
        stored = as_text(xml)
        try:
            reading = _structured_xml(xml)
        except RefusedDocument as exc:
            return _refused(name, "facturx", stored, digest, exc)
        except UnreadableInvoice as exc:
            return FileReading(name, "facturx", stored, digest, problem=exc.reason)
        if reading is None:
            reason = f"{name}: its embedded XML is not a CII or UBL invoice"
            return FileReading(name, "facturx", _unreadable(reason), digest, problem=reason)
        differs = disagreement(name, reading, text_reading(text) if text.strip() else None)
        if differs is not None:
            reason, evidence = differs
            return FileReading(name, "facturx", _unreadable(reason, evidence), digest,
                               reading=reading, problem=reason)
        return FileReading(name, "facturx", stored, digest, reading=reading)
    if not text.strip():
        reason = f"{name}: {SCAN_REASON}"
        return FileReading(name, "pdf-scan", _unreadable(reason), digest, problem=reason)
    return FileReading(name, "pdf-text", text, digest, reading=text_reading(text))


_PICTURES = (b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")
_CONTAINERS = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0", b"Rar!", b"7z\xbc\xaf", b"\x1f\x8b")


def _binary(name: str, data: bytes, digest: str) -> FileReading | None:
    """A picture (a scan or photo: OCR is not done) or an archive or office file (not read):
    kept as unreadable with the reason, never handed to a model as text."""
    if data.startswith(_PICTURES):
        reason = f"{name}: a picture (a scan or a photo): {OCR_NOTE}"
        return FileReading(name, "image-scan", _unreadable(reason), digest, problem=reason)
    if data.startswith(_CONTAINERS):
        reason = f"{name}: an archive or office file: no reader opens it; ask for the PDF or XML"
        return FileReading(name, "binary", _unreadable(reason), digest, problem=reason)
    return None


def read_file(name: str, data: bytes) -> FileReading:
    """Read one file as it came (bytes); never raises for what is inside it."""
    digest = hashlib.sha256(data).hexdigest()
    if b"%PDF-" in data[:1024]:
        return _read_pdf(name, data, digest)
    binary = _binary(name, data, digest)
    if binary is not None:
        return binary
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        stored = as_text(data).replace("\x00", "\ufffd")
        try:
            reading = _structured_xml(data)
        except RefusedDocument as exc:
            return _refused(name, "xml", stored, digest, exc)
        except UnreadableInvoice as exc:
            return FileReading(name, "xml", stored, digest, problem=exc.reason)
        if reading is not None:
            return FileReading(name, reading.format, stored, digest, reading=reading)
        return FileReading(name, "xml", stored, digest)
    text = _as_text(data)
    if head.startswith(b"{"):
        try:
            reading = _structured_json(text)
        except RefusedDocument as exc:
            return _refused(name, "gst-einvoice", text, digest, exc)
        except UnreadableInvoice as exc:
            return FileReading(name, "gst-einvoice", text, digest, problem=exc.reason)
        if reading is not None:
            return FileReading(name, reading.format, text, digest, reading=reading)
    if len(text) > MAX_DOCUMENT_CHARS:
        return FileReading(name, "text", text, digest, problem="document too large")
    return FileReading(name, "text", text, digest, reading=text_reading(text))


def read_stored(document: str) -> Reading | None:
    """Step 2's question: is this stored document one the structured readers own? Returns the
    reading (unchecked), None for text (offline layouts or the model), or raises
    UnreadableInvoice for a document that must be parked without a model."""
    if document.startswith(UNREADABLE_MARK):
        reason, _, evidence = document[len(UNREADABLE_MARK):].partition("\n")
        raise UnreadableInvoice(reason.strip(), evidence.strip())
    head = document[:64].lstrip("\ufeff \t\n")
    if head.startswith("<"):
        return _structured_xml(document.encode("utf-8"))
    if head.startswith("{"):
        return _structured_json(document)
    return None
