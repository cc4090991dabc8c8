"""Step 2 for documents in a structured format (GST e-invoice, UBL, CII, the XML of a Factur-X
PDF) and for documents already known to be unreadable (a scan): read exactly, here, whichever
extractor the night is configured with. No model sees them and none is paid for them.

It answers like the offline parser does (a `Result`, recorded in groups with a `model_calls` row
naming this reader, zero tokens, zero cost), so step 2 stores and checks every reading alike.
"""

from __future__ import annotations

import json

from recon.documents.extraction.results import Result, offline_request
from recon.documents.formats.checks import as_invoice
from recon.documents.formats.detect import read_stored
from recon.domain.errors import UnreadableInvoice

NAME = "document-reader"


def owns(document: str) -> bool:
    """Is this stored document one this reader reads (never the model)? Decided by its first
    characters, as `read_stored` decides: XML, JSON or the unreadable marker."""
    head = document[:64].lstrip("\ufeff \t\n")
    return head.startswith(("<", "{", "%recon-unreadable"))


class DocumentReader:
    name = NAME
    model = "structured-formats-v1"
    paid = False

    def read(self, invoice_no: str, supplier_id: str, document: str) -> Result | None:
        """The checked reading, an unreadable Result, or None when the document is text after
        all (JSON or XML of no format we know): then the night's extractor reads it."""
        request = offline_request(invoice_no)
        try:
            reading = read_stored(document)
            if reading is None:
                return None
            found = as_invoice(reading, supplier_id)
        except UnreadableInvoice as exc:
            response = json.dumps({"unreadable": exc.reason, "evidence": exc.evidence})
            return Result(invoice_no, supplier_id, request, response, unreadable=exc)
        response = found.model_dump_json()
        return Result(invoice_no, supplier_id, request, response, found=found,
                      found_json=response, read_exactly=True)
