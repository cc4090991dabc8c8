"""The shape every extractor must return. The model's answer is validated against this schema;
an answer that does not fit is a permanent failure for that one invoice (it is parked)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

MAX_DOCUMENT_CHARS = 100_000
MAX_LINES = 500
_TAX_FIELDS = frozenset({"hsn", "tax_category", "tax_rate", "tax_split", "taxable_paise",
                         "cgst_paise", "sgst_paise", "igst_paise", "cess_paise",
                         "cess_specific_paise"})


class ExtractedLine(BaseModel):
    line_no: int = Field(ge=1, le=MAX_LINES)
    sku: str = Field(min_length=1, max_length=64)
    description: str = Field(max_length=200)
    quantity: int = Field(ge=1, le=10_000_000)
    unit_price_paise: int = Field(ge=0, le=100_000_000_000)
    # Tax as a structured document states it (docs/books.md "Tax"); absent on text the model or
    # the offline parser read, and then left out of the JSON, so a night without tax stores
    # exactly what it stored before. `tax_split` is how the line's tax is divided: "cgst+sgst"
    # (one state), "igst" (two states) or "vat" (a tax the document does not divide by state).
    hsn: str | None = Field(default=None, max_length=16)
    tax_category: str | None = Field(default=None, max_length=8)
    tax_rate: Decimal | None = Field(default=None, ge=0, le=100, decimal_places=4)
    tax_split: Literal["cgst+sgst", "igst", "vat"] | None = None
    taxable_paise: int | None = None
    cgst_paise: int | None = None
    sgst_paise: int | None = None
    igst_paise: int | None = None
    cess_paise: int | None = None  # ad valorem cess (a rate on the taxable value)
    cess_specific_paise: int | None = None  # specific cess (per unit): claimed by units

    # Also from a structured document (issue 37): the unit code as written (step 3
    # restates a line in its PO line's unit), and the price in paise with its fraction of a
    # paisa when it has one. Left out of the JSON when absent, so a line without them reads and
    # stores as it always did.
    unit: str | None = Field(default=None, max_length=16, exclude_if=lambda v: v is None)
    price_exact: Decimal | None = Field(default=None, ge=0, le=100_000_000_000,
                                        exclude_if=lambda v: v is None)

    @field_validator("sku", "description", "hsn", "tax_category", "unit", mode="before")
    @classmethod
    def _no_nul(cls, value: object) -> object:
        """Postgres text cannot hold NUL; a hostile document must not stop the step."""
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value

    @model_serializer(mode="wrap")
    def _without_absent_tax(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in _TAX_FIELDS}


class ExtractedInvoice(BaseModel):
    invoice_no: str = Field(min_length=1, max_length=64)
    supplier_id: str = Field(min_length=1, max_length=64)
    po_number: str | None = Field(default=None, max_length=64)
    lines: list[ExtractedLine] = Field(min_length=1, max_length=MAX_LINES)

    @field_validator("invoice_no", "supplier_id", "po_number", mode="before")
    @classmethod
    def _no_nul(cls, value: object) -> object:
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


from recon.domain.errors import UnreadableInvoice  # noqa: E402 - defined with every error class

__all__ = ["UnreadableInvoice"]
