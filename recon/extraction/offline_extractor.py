"""The offline extractor behind the Extractor interface (see `offline.py` for the parser)."""

from __future__ import annotations

import json

from recon.extraction import Answer
from recon.extraction.offline import NAME, parse_document
from recon.extraction.schema import UnreadableInvoice


class OfflineExtractor:
    name = NAME
    model = "layout-parser-v1"

    async def call(self, invoice_no: str, document: str) -> Answer:
        try:
            response = parse_document(document).model_dump_json()
        except UnreadableInvoice as exc:
            response = json.dumps({"unreadable": exc.reason, "evidence": exc.evidence})
        return Answer(request=json.dumps({"invoice_no": invoice_no}), response=response)
