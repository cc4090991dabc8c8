"""One invoice's extraction result, as step 2 checks it before anything is stored.

Both paths of step 2 produce `Result`s: the offline parser for each document it read, the paid
model's writer for each answer that arrived. They are stored in groups, a few statements per
group of invoices (`recon.store.extractions.write_results`), not one transaction per invoice.
"""

from __future__ import annotations

from dataclasses import dataclass
from json.encoder import encode_basestring_ascii

from recon.documents.extraction.evidence import disagreement
from recon.documents.extraction.schema import ExtractedInvoice, UnreadableInvoice
from recon.domain.keys import number_of

STEP = "extract_lines"


def offline_request(invoice_no: str) -> str:
    """What an offline reader records as its request: `json.dumps({"invoice_no": ...})`, written
    without the encoder's machinery (a tenth of the cost, 100,000 times a night)."""
    return '{"invoice_no": ' + encode_basestring_ascii(invoice_no) + "}"


def storable(text: str) -> str:
    """Postgres text cannot hold NUL: a hostile answer must not stop the step."""
    return text.replace("\x00", "\ufffd")


@dataclass
class Result:
    """One invoice's answer. Before the check: `found` (the validated invoice) or `unreadable`.
    After `check_against_source`: `lines_json` (to be stored) or `unreadable` (to be parked).

    The check releases the parsed model and keeps its JSON, the form Postgres unpacks into
    `invoice_lines`: one text per invoice through the driver instead of eight values per line,
    and no pydantic objects held while a group waits to be written (tens of thousands of them in
    flight made the cyclic collector rescan them constantly; docs/design.md §8). The validators
    keep NUL out of every string, so the JSON is always valid for Postgres's json type."""

    invoice_no: str  # the run's reference (`S001:INV-7001`), or a bare number of an old night
    supplier_id: str
    request: str
    response: str
    found: ExtractedInvoice | None = None
    unreadable: UnreadableInvoice | None = None
    call_id: int | None = None  # the row written before the request was sent (paid model)
    found_json: str | None = None  # `found` as JSON, when the extractor already has it (offline)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    lines_json: str | None = None  # set by the check: the checked invoice, ready to store
    po_number: str | None = None  # and, beside it, what Postgres would otherwise parse it for
    line_count: int = 0
    # Read by our own parsers (the layouts, structured formats), not by a model: every figure
    # comes from the field or line the parser matched, so it is not checked again.
    read_exactly: bool = False

    @property
    def readable(self) -> bool:
        return self.lines_json is not None

    def check_against_source(self, document: str) -> Result:
        """The document must be the invoice the source says it is, and every figure of the answer
        must be on it; otherwise nobody should post it. Turns `found` into `unreadable` when it
        is not, and into `lines_json` when it is. A result `read_exactly` (our own parsers,
        which take every figure from the very field or line they match) is not checked against
        the document again; a model's is (docs/design.md §11)."""
        found = self.found
        self.found = None
        if found is None:
            if self.unreadable is None:
                self.unreadable = UnreadableInvoice("no answer", "")
        elif found.invoice_no != (number := number_of(self.invoice_no, self.supplier_id)):
            # the document carries its supplier's own number, never our reference
            self.unreadable = UnreadableInvoice(
                f"document says invoice {found.invoice_no!r}, the source says {number!r}")
        elif found.supplier_id != self.supplier_id:
            self.unreadable = UnreadableInvoice(
                f"document says supplier {found.supplier_id!r}, the sender is {self.supplier_id!r}")
        elif len({ln.line_no for ln in found.lines}) != len(found.lines):
            self.unreadable = UnreadableInvoice("document repeats a line number")
        elif not self.read_exactly and (differs := disagreement(found, document)) is not None:
            # The answer is evidence: a figure not on the document parks the invoice with both
            # readings, for a person; it is never reconciled (docs/design.md §11).
            self.unreadable = UnreadableInvoice(differs.reason, differs.evidence[:2000])
        else:
            self.lines_json = self.found_json or found.model_dump_json()
            self.po_number, self.line_count = found.po_number, len(found.lines)
        self.found_json = None
        if self.unreadable is not None and not self.unreadable.evidence:
            self.unreadable.evidence = document[:200]
        return self
