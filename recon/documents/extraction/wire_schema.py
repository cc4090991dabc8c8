"""The schema we hand the model: the shape of `ExtractedInvoice` with no value limits.

OpenAI's strict mode accepts only a subset of JSON Schema (every property required, no extra
properties, a short list of keywords; length limits such as `minLength`/`maxLength` are not on it,
and fine-tuned models accept no numeric or array bounds at all). So the model is told the *shape*
only, through the SDK's public `chat.completions.parse(response_format=InvoiceAnswer)`, and the
limits (positive quantities, line numbers, lengths) are checked here, on arrival, by
`ExtractedInvoice`: an answer outside them is parked, not trusted.
"""

from __future__ import annotations

from pydantic import BaseModel


class LineAnswer(BaseModel):
    line_no: int
    sku: str
    description: str
    quantity: int
    unit_price_paise: int


class InvoiceAnswer(BaseModel):
    invoice_no: str
    supplier_id: str
    po_number: str | None
    lines: list[LineAnswer]
