"""The night's model bill, from `model_calls`: every request sent, how each ended, the tokens the
answers reported and what they cost at the prices recorded on each row (USD per million tokens,
`RECON_MODEL_PRICE_IN` / `RECON_MODEL_PRICE_OUT` when the request was sent).

`answered` is what `model_calls` meant before every request had a row (one answered request per
invoice read by the model), so "model calls: 312" keeps its meaning; `requests` counts them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from recon.domain.wording import count


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

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def line(self) -> str:
        """One line for people: the summary mail and `recon status`."""
        others = [f"{n} {label}" for n, label in ((self.errors, "failed"),
                  (self.cancelled, "cancelled"), (self.lost, "lost"), (self.in_flight, "in flight"))
                  if n]
        extra = f" ({', '.join(others)})" if others else ""
        return (f"Model bill: US${self.cost_usd:,.4f} for {count(self.requests, 'request')}{extra}, "
                f"{self.answered:,} answered, {count(self.tokens, 'token')} "
                f"({self.prompt_tokens:,} in, {self.completion_tokens:,} out)")
