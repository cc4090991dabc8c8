"""The shape every extractor must return. The model's answer is validated against this schema;
an answer that does not fit is a permanent failure for that one invoice (it is parked)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

MAX_DOCUMENT_CHARS = 100_000
MAX_LINES = 500


class ExtractedLine(BaseModel):
    line_no: int = Field(ge=1, le=MAX_LINES)
    sku: str = Field(min_length=1, max_length=64)
    description: str = Field(max_length=200)
    quantity: int = Field(ge=1, le=10_000_000)
    unit_price_paise: int = Field(ge=0, le=100_000_000_000)

    @field_validator("sku", "description", mode="before")
    @classmethod
    def _no_nul(cls, value: object) -> object:
        """Postgres text cannot hold NUL; a hostile document must not stop the step."""
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


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
