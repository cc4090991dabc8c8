"""The seeded night's documents in real formats (`recon seed --format`), written by the product's
own writers, so benches and chaos runs read what suppliers really send.

`text` is the three invented layouts (as before). `ubl`, `cii` and `gst` (half of them as the
portal's signed answer) store the XML or JSON as sent; `facturx` and `pdf` write the PDF and store
what the importer would (the embedded CII XML; the text layer of a PDF drawn from the text
layout). `mixed` cycles through all six by invoice. The night's draws are the same whatever the
format: an unreadable invoice is still drawn as a failed scan (the generator advances alike), and
in every format but `text` it is stored as a scanned PDF is, so it is parked in every format.
Every seeded supplier gets a GSTIN (with its check character) and a Peppol endpoint derived
from its code.
"""

from __future__ import annotations

from recon.documents.formats import facturx
from recon.documents.formats.detect import read_file
from recon.documents.formats.pdf_text import write_scan_pdf, write_text_pdf
from recon.documents.formats.reading import PartyIds
from recon.documents.layouts import Document, render
from recon.documents.master_fields import gstin_check_character
from recon.tools import cii_writer, gst_writer, ubl_writer

FORMATS = ("text", "ubl", "gst", "cii", "facturx", "pdf")
SEED_FORMATS = (*FORMATS, "mixed")
_CODE = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SCAN: str | None = None


gstin_check = gstin_check_character  # the GSTIN's 15th character, as `recon load` checks it


def seller_of(supplier_id: str, name: str) -> PartyIds:
    """A seeded supplier's ids, from its code alone: Punjab (03), a PAN-shaped middle."""
    number = int("".join(ch for ch in supplier_id if ch.isdigit()) or "0")
    pan = f"AAB{_CODE[10 + number // 26 % 26]}{_CODE[10 + number % 26]}{number % 10_000:04d}K"
    first = f"03{pan}1Z"
    return PartyIds(gstin=first + gstin_check(first), endpoint=f"0088:89{number:011d}",
                    name=name)


def supplier_id_rows(suppliers: list[tuple[str, str, str]]) -> list[tuple[str, str, None, str]]:
    """(supplier_id, gstin, vat_id, peppol_endpoint) for `store.supplier_ids.write_supplier_ids`."""
    rows = []
    for supplier_id, name, _email in suppliers:
        ids = seller_of(supplier_id, name)
        rows.append((supplier_id, ids.gstin or "", None, ids.endpoint or ""))
    return rows


def _scan_marker() -> str:
    global _SCAN
    if _SCAN is None:
        _SCAN = read_file("scan.pdf", write_scan_pdf()).document
    return _SCAN


def format_of(chosen: str, index: int) -> str:
    return FORMATS[index % len(FORMATS)] if chosen == "mixed" else chosen


def document_in(fmt: str, index: int, doc: Document, layout: str, unreadable: str | None) -> str:
    """The stored document of one seeded invoice in `fmt` (`unreadable`: the drawn failed scan)."""
    if fmt == "text":
        return unreadable if unreadable is not None else render(doc, layout)
    if unreadable is not None:
        return _scan_marker()
    seller = seller_of(doc.supplier_id, doc.supplier_name)
    if fmt == "ubl":
        return ubl_writer.write(doc, seller)
    if fmt == "cii":
        return cii_writer.write(doc, seller)
    if fmt == "gst":
        return gst_writer.write(doc, seller, signed=index % 2 == 1)
    if fmt == "facturx":
        pdf = facturx.write(cii_writer.write(doc, seller), render(doc, "table"))
        return read_file(f"{doc.invoice_no}.pdf", pdf).document
    if fmt == "pdf":
        return read_file(f"{doc.invoice_no}.pdf", write_text_pdf(render(doc, layout))).document
    raise ValueError(f"unknown format {fmt!r}")
