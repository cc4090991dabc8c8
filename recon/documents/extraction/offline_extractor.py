"""The offline extractor behind the Extractor interface (see `offline.py` for the parser).

It is local, free and instant, so the step reads a whole group of documents and records the group
in one go (`read` gives the parsed invoice directly: no JSON round trip); `call` keeps the common
interface for anything that wants one answer at a time.
"""

from __future__ import annotations

import json

from recon.documents.extraction.answer import Answer
from recon.documents.extraction.offline import NAME, parse_document
from recon.documents.extraction.results import Result, offline_request
from recon.documents.extraction.schema import UnreadableInvoice


class OfflineExtractor:
    name = NAME
    model = "layout-parser-v1"
    paid = False

    def read(self, invoice_no: str, supplier_id: str, document: str) -> Result:
        """The same answer `call` gives, with the invoice already validated."""
        request = offline_request(invoice_no)
        try:
            found = parse_document(document)
        except UnreadableInvoice as exc:
            response = json.dumps({"unreadable": exc.reason, "evidence": exc.evidence})
            return Result(invoice_no, supplier_id, request, response, unreadable=exc)
        response = found.model_dump_json()
        return Result(invoice_no, supplier_id, request, response, found=found, found_json=response,
                      read_exactly=True)

    async def call(self, invoice_no: str, document: str) -> Answer:
        result = self.read(invoice_no, "", document)
        return Answer(request=result.request, response=result.response)
