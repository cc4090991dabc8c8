"""What payload encryption costs: the AES-GCM codec per payload, on the payloads of a real night.

    uv run python bench/codec.py [--history tests/histories/nightly_completed.json] [--rounds 200]

Takes every payload of a recorded history (workflow and activity inputs and results, memo,
summaries; search attributes are never encoded and are left out), seals and opens each one
`--rounds` times with recon's codec and prints the median cost per payload, by size, and for the
whole history. A night's cost is about (payloads the clients encode + decode) × this; the
100k-invoice bench run with and without RECON_PAYLOAD_KEYS gives the same figure end to end.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from temporalio.api.common.v1 import Payload  # noqa: E402

from recon.runtime.codec import PayloadCipher  # noqa: E402
from recon.runtime.keyring import new_key_line, parse_keyring  # noqa: E402


def history_payloads(path: Path) -> list[Payload]:
    found: list[Payload] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            metadata = node.get("metadata")
            if isinstance(metadata, dict) and "encoding" in metadata:
                found.append(Payload(
                    metadata={k: base64.b64decode(v) for k, v in metadata.items()},
                    data=base64.b64decode(node.get("data", ""))))
            for key, value in node.items():
                if key not in ("searchAttributes", "patch-data"):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(path.read_text()))
    return found


def timed(fn, payloads: list[Payload], rounds: int) -> list[float]:
    """Seconds per payload, one figure per round (the median smooths this machine's noise)."""
    per_payload = []
    for _ in range(rounds):
        started = time.perf_counter()
        for payload in payloads:
            fn(payload)
        per_payload.append((time.perf_counter() - started) / len(payloads))
    return per_payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path,
                        default=ROOT / "tests/histories/nightly_completed.json")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    payloads = history_payloads(args.history)
    cipher = PayloadCipher(parse_keyring([new_key_line("bench")], "bench"), "default")
    sealed = [cipher.seal(p) for p in payloads]
    sizes = [p.ByteSize() for p in payloads]
    added = statistics.median(s.ByteSize() - p.ByteSize()
                              for s, p in zip(sealed, payloads, strict=True))
    print(f"{len(payloads)} payloads from {args.history.name}: median {statistics.median(sizes)} B, "
          f"max {max(sizes)} B, total {sum(sizes):,} B; sealed adds {added} B each")
    seal = statistics.median(timed(cipher.seal, payloads, args.rounds))
    open_ = statistics.median(timed(cipher.open, sealed, args.rounds))
    print(f"seal  median {seal * 1e6:6.1f} µs per payload")
    print(f"open  median {open_ * 1e6:6.1f} µs per payload")
    print(f"this history: {len(payloads)} × (seal + open) = {len(payloads) * (seal + open_) * 1e3:.2f} ms")
    for size in (100, 1_000, 10_000, 100_000):
        big = Payload(metadata={"encoding": b"json/plain"}, data=b"x" * size)
        big_sealed = cipher.seal(big)
        s = statistics.median(timed(cipher.seal, [big] * 20, max(20, args.rounds // 4)))
        o = statistics.median(timed(cipher.open, [big_sealed] * 20, max(20, args.rounds // 4)))
        print(f"  {size:>7,} B payload: seal {s * 1e6:7.1f} µs, open {o * 1e6:7.1f} µs")


if __name__ == "__main__":
    main()
