"""PDFs: the text layer read with pypdf, and simple PDFs written (with and without text).

A PDF with a text layer becomes its text, which the offline layouts or the model read exactly as
they read a text file. A PDF with no text on any page is a scan: it is kept as unreadable with
that reason (OCR is not done: a model or a person reads scans). The writer draws each line of a
document with the built-in Courier font, so its text layer extracts line for line.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

from pypdf import PdfReader, PdfWriter
from pypdf.errors import PdfReadError, PyPdfError
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from recon.documents.extraction.schema import MAX_DOCUMENT_CHARS
from recon.domain.errors import UnreadableInvoice

MAX_PAGES = 50
OCR_NOTE = "OCR is not done, a person or a model must read it"
SCAN_REASON = f"PDF has no text layer (a scan): {OCR_NOTE}"


def open_pdf(data: bytes, name: str) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and reader.decrypt("") == 0:
            raise UnreadableInvoice(f"{name}: the PDF is encrypted")
        _ = len(reader.pages)
    except UnreadableInvoice:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableInvoice(f"{name}: not a readable PDF ({str(exc)[:80]})") from None
    return reader


def text_layer(reader: PdfReader, name: str) -> str:
    """The text of every page, pages separated by a blank line; '' for a scan."""
    if len(reader.pages) > MAX_PAGES:
        raise UnreadableInvoice(f"{name}: {len(reader.pages)} pages, more than an invoice has")
    pages = []
    size = 0
    for page in reader.pages:
        try:
            text = page.extract_text() or ""
        except (PyPdfError, ValueError, KeyError, TypeError) as exc:
            raise UnreadableInvoice(f"{name}: its text layer cannot be read ({str(exc)[:80]})") \
                from None
        text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
        size += len(text)
        if size > MAX_DOCUMENT_CHARS:
            raise UnreadableInvoice(f"{name}: more text than an invoice document can be")
        pages.append(text)
    joined = "\n\n".join(p for p in pages if p.strip())
    return joined + "\n" if joined else ""


# ---------------------------------------------------------------- the writer (seed and tests)

def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page(writer: PdfWriter, operators: Iterable[str]) -> None:
    page = writer.add_blank_page(595, 842)  # A4 in points
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Courier"),
        NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
    })
    page[NameObject("/Resources")] = DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    content = DecodedStreamObject()
    content.set_data("\n".join(operators).encode("cp1252", errors="replace"))
    page[NameObject("/Contents")] = writer._add_object(content)


def text_pdf_writer(text: str) -> PdfWriter:
    """One A4 page per 70 lines of `text`, each line drawn as it is."""
    writer = PdfWriter()
    lines = text.rstrip("\n").split("\n")
    for start in range(0, max(len(lines), 1), 70):
        ops = ["BT", "/F1 9 Tf", "11 TL", "40 800 Td"]
        ops += [f"({_escape(line)}) Tj T*" for line in lines[start:start + 70]]
        ops.append("ET")
        _page(writer, ops)
    return writer


def to_bytes(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def write_text_pdf(text: str) -> bytes:
    return to_bytes(text_pdf_writer(text))


def write_scan_pdf() -> bytes:
    """A page of grey strokes and no text: what a scanner without OCR produces, to the reader."""
    writer = PdfWriter()
    ops = ["0.6 g"] + [f"40 {800 - 14 * n} {300 + (n * 37) % 200} 8 re f" for n in range(40)]
    _page(writer, ops)
    return to_bytes(writer)
