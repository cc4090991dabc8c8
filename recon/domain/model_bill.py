"""The night's model bill, from `model_calls`: every request sent, how each ended, the tokens the
answers reported and what they cost at the prices recorded on each row (USD per million tokens,
`RECON_MODEL_PRICE_IN` / `RECON_MODEL_PRICE_OUT` when the request was sent).

`answered` is what `model_calls` meant before every request had a row (one answered request per
invoice read by the model), so "model calls: 312" keeps its meaning; `requests` counts them all.

The bill counts requests to a model only. A document read here without one (a structured
document by the document reader, a text layout by the offline parser: `LOCAL_READERS`, their
`model_calls` rows have no tokens and no price) is counted apart, as `read_without_model`:
"Model bill: ... for 1 request ...; 11 documents read without the model".
"""

from __future__ import annotations

from dataclasses import dataclass

from recon.domain.wording import count

# The `extractor` names of the readers that run here and ask no model (document_reader.NAME and
# offline.NAME; tests/store/test_model_bill_counts.py checks they agree).
LOCAL_READERS = ("document-reader", "offline-parser")


@dataclass(frozen=True)
class ModelBill:
    answered: int
    requests: int
    errors: int
    cancelled: int
    lost: int
    in_flight: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    read_without_model: int = 0  # documents read by a local reader, no model asked
    batch_requests: int = 0  # of `requests`, those sent in a batch (the rest: interactive)
    batched: int = 0  # batch requests whose batch has not been read yet
    batch_ids: tuple[str, ...] = ()  # the provider's ids of the night's batches
    waiting_answered: int = 0  # of the batches not read yet: answered so far (last look)
    waiting_requests: int = 0  # and their requests

    def waiting(self) -> str | None:
        """While step 2 waits for its batches: how far they are (`recon status`)."""
        if not self.waiting_requests:
            return None
        return (f"waiting for the model's batch ({self.waiting_answered:,} of "
                f"{self.waiting_requests:,} answered)")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def line(self) -> str:
        """One line for people: the summary mail and `recon status`."""
        others = [f"{n} {label}" for n, label in ((self.batched, "waiting in a batch"),
                  (self.errors, "failed"),
                  (self.cancelled, "cancelled"), (self.lost, "lost"), (self.in_flight, "in flight"))
                  if n]
        extra = f" ({', '.join(others)})" if others else ""
        local = (f"; {count(self.read_without_model, 'document')} read without the model"
                 if self.read_without_model else "")
        modes = ""
        if self.batch_requests:
            modes = (f"; {self.batch_requests:,} in {count(len(self.batch_ids), 'batch', 'batches')} "
                     f"({', '.join(self.batch_ids[:5])}{' …' if len(self.batch_ids) > 5 else ''}), "
                     f"{self.requests - self.batch_requests:,} interactive")
        return (f"Model bill: US${self.cost_usd:,.4f} for {count(self.requests, 'request')}{extra}, "
                f"{self.answered:,} answered, {count(self.tokens, 'token')} "
                f"({self.prompt_tokens:,} in, {self.completion_tokens:,} out){modes}{local}")
