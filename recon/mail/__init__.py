"""Mail delivery: the outbox sender, the documents it sends, and the loopback mail sink.

The workflow only ever writes outbox rows; this package turns them into mail. A row is the
promise, the sender keeps it (at least once), and every message carries its outbox key
(`Message-ID`, `Idempotency-Key`) so a repeat is recognisable by machines and by people.
"""
