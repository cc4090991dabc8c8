"""Every setting recon reads, declared once: its variable, its `Settings` field, its type, its
default, its bounds and one line of doc.

`recon.runtime.config` builds `Settings` and its parser from these rows, `recon.runtime.settings_doc`
writes docs/settings.md from them, and the defaults a workflow's input carries (`RunRequest`,
`PostInput`, `UndoRequest`), the match policy's and the sender's are read from here rather than
written again. It lives in `recon.domain`, pure data, because workflow code may import nothing
else: changing the default of a run's input changes what a history recorded without that field
replays with, so do it with a patch, never here alone.

The rows keep the order in which `load_settings` used to check them, so with two bad values the
same one is reported first.
"""

from __future__ import annotations

from dataclasses import dataclass

# The types, as the settings page names them.
TEXT = "text"
OPTIONAL = "text, may be unset"
WHOLE = "whole number"
NUMBER = "number"
CLOCK = "UTC time"
LOCAL_CLOCK = "local time, may be unset"
MODE = "`interactive` or `batch`"
MODEL_MODES = ("interactive", "batch")

MAX_PAISE = 10**15  # ₹10 lakh crore: no limit in paise above this is meant (and sums stay exact)


@dataclass(frozen=True)
class Setting:
    """One row. `low` is inclusive unless `above`; a number (not a whole one) is also finite."""

    name: str  # the environment variable (and the line of `.recon/env`)
    field: str | None  # its attribute of `Settings`; None: read where it is used, as `doc` says
    kind: str
    default: str | int | float | None  # None: unset
    doc: str
    low: int | float | None = None
    above: bool = False
    high: int | float | None = None
    high_words: str | None = None  # the refusal above `high`, where it has words of its own
    secret: bool = False  # kept out of `repr(settings)`



GROUPS: tuple[tuple[str, tuple[Setting, ...]], ...] = (
    ("Servers", (
        Setting("TEMPORAL_ADDRESS", "temporal_address", TEXT, "localhost:7233", "Temporal frontend"),
        Setting("TEMPORAL_NAMESPACE", "temporal_namespace", TEXT, "default", "Temporal namespace"),
        Setting("DATABASE_URL", "database_url", OPTIONAL, None,
                "PostgreSQL; `recon dev` writes it to `.recon/env`"),
        Setting("RECON_TASK_QUEUE", "task_queue", TEXT, "recon", "task queue of workers and runs"),
        Setting("RECON_ACTIVITY_SLOTS", "activity_slots", WHOLE, 50,
                "activities one worker runs at once; what waits beyond them waits in the task "
                "queue, where a server with fairness hands tasks out in turn per warehouse "
                "(docs/operations.md, Sizing)", low=1, high=10_000),
        Setting("RECON_HOME", None, TEXT, ".recon",
                "where `recon dev` keeps its data and `env` file; from the environment only (it says "
                "where that file is), and set but empty it is the working directory"),
    )),
    ("A night's work", (
        Setting("RECON_WAREHOUSE", "warehouse", TEXT, "ldh",
                "warehouse of `recon run` without `--warehouse`, and of the demo schedule of "
                "`recon dev --schedule`"),
        Setting("RECON_POST_BATCH", "post_batch_size", WHOLE, 5000,
                "ledger / stock entries per transaction (a crash redoes at most one); "
                "fixed in a run's input when it starts", low=1, high=1_000_000),
        Setting("RECON_EXTRACT_BATCH", "extract_batch_size", WHOLE, 50,
                "invoices per extraction activity (left at the default with no model configured, the "
                "offline parser takes 1,000); fixed in a run's input when it starts",
                low=1, high=100_000),
        Setting("RECON_EXTRACT_CONCURRENCY", "extract_concurrency", WHOLE, 8,
                "model calls in flight per extraction activity", low=1),
    )),
    ("The gate before debit notes (the worker's, never a run's input)", (
        Setting("RECON_GATE_MAX_PARKED_RATIO", "gate_max_parked_ratio", NUMBER, 0.10,
                "the gate hands over when more than this share of the night's invoices is parked",
                low=0, above=True, high=1),
        Setting("RECON_GATE_MAX_TOTAL_PAISE", "gate_max_total_paise", WHOLE, 1_00_00_000_00,
                "the gate hands over when the sum of **absolute** adjustments (+₹50,000 and "
                "−₹50,000 move ₹1,00,000) exceeds this many paise for the night (₹1 crore); ₹ "
                "adjustments only: another currency is weighed by its share, never converted",
                low=1, high=MAX_PAISE),
        Setting("RECON_GATE_MAX_ADJUSTMENT_SHARE", "gate_max_adjustment_share", NUMBER, 0.05,
                "the gate hands over when the sum of absolute adjustments exceeds this share of "
                "the night's invoiced value (each currency against its own)", low=0, above=True,
                high=1),
        Setting("RECON_GATE_MAX_SUPPLIER_PAISE", "gate_max_supplier_paise", WHOLE, 25_00_000_00,
                "the gate hands over when one supplier's sum of absolute adjustments exceeds this "
                "many paise (₹25 lakh; a ₹ supplier's)", low=1, high=MAX_PAISE),
    )),
    ("The cumulative match (the worker's policy)", (
        Setting("RECON_RECEIPT_GRACE_DAYS", "receipt_grace_days", WHOLE, 3,
                "days a bill ahead of its goods (billed beyond what was received to date, within the "
                "order) is held awaiting receipt before it is claimed as a quantity adjustment; "
                "0 claims at once", low=0, high=365),
        Setting("RECON_OVERDELIVERY_TOLERANCE_PERCENT", "overdelivery_tolerance_percent", NUMBER,
                0.0,
                "a line may accept up to this percentage more than the PO line ordered, whatever "
                "arrived; units billed beyond it are claimed as a quantity adjustment and named in "
                "the summary as an over-delivery; 0 accepts no unit beyond the order",
                low=0, high=100),
        Setting("RECON_INVOICE_DATE_WINDOW_DAYS", "invoice_date_window_days", WHOLE, 90,
                "an invoice whose document states a date more than this many days before or after "
                "the night's business date is parked by step 3 with both dates, as is one dated "
                "before the purchase order it cites; an invoice that states no date is not checked",
                low=1, high=3650),
        Setting("RECON_PRICE_TOLERANCE_PAISE", "price_tolerance_paise", WHOLE, 0,
                "a price difference within this many paise per unit is no adjustment; 0 sets none; "
                "with both tolerances set, a difference is tolerated only within both",
                low=0, high=MAX_PAISE),
        Setting("RECON_PRICE_TOLERANCE_PERCENT", "price_tolerance_percent", NUMBER, 0.0,
                "a price difference within this percentage of the PO price is no adjustment; "
                "0 sets none", low=0, high=100),
    )),
    ("Heartbeats, retries and reminders", (
        Setting("RECON_HEARTBEAT_SECONDS", "heartbeat_seconds", NUMBER, 1.0,
                "how fast a dead worker is noticed (step 2, which computes, keeps at least 2 s; a frozen "
                "worker's open transactions are ended by Postgres after the same time, at least 2 s); "
                "fixed in a run's input when it starts",
                low=0, above=True, high=3600),
        Setting("RECON_REMINDER_UTC", "reminder_utc_time", CLOCK, "03:30:00",
                "UTC time (`HH:MM[:SS]`) of the daily reminder while a run waits for a person "
                "(09:00 in India); fixed in a run's input when it starts"),
        Setting("RECON_OUTAGE_WINDOW", "outage_window_seconds", NUMBER, 1800.0,
                "seconds a step keeps retrying temporary errors (database, Temporal or model provider "
                "down) with growing waits, capped at 30 s, before it asks a person", low=0, above=True),
    )),
    ("Sources (docs/sources.md)", (
        Setting("RECON_MAIL_MAX_MESSAGE_BYTES", "mail_max_message_bytes", WHOLE, 25_000_000,
                "a supplier's message larger than this is filed with its reason, not read (a "
                "mailbox source does not even download it; `recon import --maildir` alike)", low=1),
        Setting("RECON_MAIL_MAX_ATTACHMENTS", "mail_max_attachments", WHOLE, 100,
                "a message with more attachments than this is filed with its reason, none of them "
                "read", low=1),
    )),
    ("Mail", (
        Setting("SMTP_URL", "smtp_url", OPTIONAL, None,
                "where mail goes: `smtp://host:port` (plain, loopback only with a password), "
                "`smtp+starttls://user:pass@host:587` or `smtps://user:pass@host:465` (TLS, then "
                "login); unset, nothing is sent (`recon dev` sets it to its loopback server)"),
        Setting("RECON_MAIL_FROM", "mail_from", TEXT, "recon@distributor.example",
                "sender address of every message (its domain is the `Message-ID` domain)"),
        Setting("RECON_FINANCE_HEAD", "finance_head_email", TEXT, "finance.head@distributor.example",
                "who gets summaries, handover notes and reminders (the worker's setting: a run's "
                "input cannot redirect them)"),
        Setting("RECON_MAIL_RETRY_SECONDS", "mail_retry_seconds", NUMBER, 5.0,
                "first wait after a 4xx or an absent server (doubling to 15 min, for ever)",
                low=0, above=True),
        Setting("RECON_MAIL_POLL_SECONDS", "mail_poll_seconds", NUMBER, 30.0,
                "the sender's slow poll behind LISTEN/NOTIFY", low=0, above=True),
        Setting("RECON_SENDER_LANES", "sender_lanes", WHOLE, 4, "messages in flight per sender", low=1),
        Setting("RECON_OWN_GSTIN", "own_gstin", OPTIONAL, None,
                "our GSTIN, as a GST debit note states it beside the supplier's (docs/books.md, "
                "\"Tax\"); unset, the note says so"),
    )),
    ("The model (docs/model-calls.md)", (
        Setting("OPENAI_API_KEY", "openai_api_key", OPTIONAL, None,
                "extract with a model (OpenAI or any compatible server) instead of the offline parser"),
        Setting("OPENAI_BASE_URL", "openai_base_url", OPTIONAL, None,
                "a compatible server instead of OpenAI's"),
        Setting("RECON_MODEL", "model", TEXT, "gpt-4o-mini", "the model extraction asks"),
        Setting("RECON_MODEL_TIMEOUT", "model_timeout", NUMBER, 60.0, "seconds per model call",
                low=0, above=True),
        Setting("RECON_MODEL_RPM", "model_rpm", WHOLE, 0,
                "requests per minute per worker process (0 = no limit)", low=0),
        Setting("RECON_MODEL_TPM", "model_tpm", WHOLE, 0,
                "tokens per minute per worker process (0 = no limit)", low=0),
        Setting("RECON_MODEL_PRICE_IN", "model_price_in", NUMBER, 0.0,
                "USD per million prompt tokens: the night's model bill (`recon inspect`, "
                "`recon status`, the summary)", low=0),
        Setting("RECON_MODEL_PRICE_OUT", "model_price_out", NUMBER, 0.0,
                "USD per million completion tokens", low=0),
        Setting("RECON_MODEL_TRIES", "model_tries", WHOLE, 3,
                "tries per invoice for temporary model errors", low=1),
        Setting("RECON_MODEL_RETRY_WAIT", "model_retry_wait", NUMBER, 1.0,
                "first wait in seconds between those tries (doubles, never below Retry-After)", low=0),
        Setting("RECON_MODEL_MAX_FAILED_SHARE", "model_max_failed_share", NUMBER, 0.10,
                "share of failing invoices above which the step hands over instead of parking them",
                low=0, high=1),
        Setting("RECON_MODEL_MAX_DOCUMENT_BYTES", "model_max_document_bytes", WHOLE, 100_000,
                "a document larger than this (UTF-8 bytes) is parked without being sent to the model",
                low=1, high=50_000_000),
        Setting("RECON_MODEL_MODE", "model_mode", MODE, "interactive",
                "`interactive` (one request at a time) or `batch` (the night's model-bound invoices "
                "through the provider's batch interface, at the batch price); fixed in a run's input "
                "when it starts"),
        Setting("RECON_MODEL_BATCH_POLL", "model_batch_poll_seconds", NUMBER, 60.0,
                "seconds between two looks at a batch while the night waits for it; fixed in a run's "
                "input when it starts", low=0, above=True, high=3600),
        Setting("RECON_MODEL_BATCH_DEADLINE", "model_batch_deadline", LOCAL_CLOCK, None,
                "local time (`HH:MM[:SS]`, the worker's time zone) after which a batch not yet done is "
                "cancelled, its answers kept and the rest asked interactively; unset: wait for the "
                "provider (24 h at most)"),
        Setting("RECON_MODEL_BATCH_PRICE_FACTOR", "model_batch_price_factor", NUMBER, 0.5,
                "a batch request's price as a share of `RECON_MODEL_PRICE_IN` / `_OUT` (OpenAI: half)",
                low=0, high=1),
        Setting("RECON_MODEL_BATCH_PRICE_IN", "model_batch_price_in", OPTIONAL, None,
                "USD per million prompt tokens in a batch, instead of the factor"),
        Setting("RECON_MODEL_BATCH_PRICE_OUT", "model_batch_price_out", OPTIONAL, None,
                "USD per million completion tokens in a batch, instead of the factor"),
        Setting("RECON_MODEL_BATCH_MAX_REQUESTS", "model_batch_max_requests", WHOLE, 50_000,
                "requests per batch (the provider's limit: 50,000)", low=1, high=50_000),
        Setting("RECON_MODEL_BATCH_MAX_BYTES", "model_batch_max_bytes", WHOLE, 200_000_000,
                "bytes per batch input file (the provider's limit: 200 MB)", low=1_000,
                high=200_000_000),
    )),
    ("Logs and metrics", (
        Setting("RECON_LOG_FORMAT", None, OPTIONAL, None,
                "`json` or `console` log lines; unset: console in a terminal, JSON otherwise "
                "(from the environment only, by `recon/runtime/logs.py`)"),
        Setting("RECON_LOG_LEVEL", None, TEXT, "INFO",
                "log level (from the environment only, by `recon/runtime/logs.py`)"),
        Setting("RECON_METRICS_HOST", "metrics_host", TEXT, "127.0.0.1",
                "the address the worker's Prometheus endpoint (`/metrics`) binds: loopback unless you "
                "open it"),
        Setting("RECON_METRICS_PORT", "metrics_port", WHOLE, 0, "the endpoint's port; 0 = no endpoint",
                low=0, high=65535),
        Setting("RECON_METRICS_REFRESH", "metrics_refresh_seconds", NUMBER, 10.0,
                "seconds between reads of the gauges from Postgres", low=0, above=True),
    )),
    ("Payload encryption and the codec server", (
        Setting("RECON_PAYLOAD_KEYS", None, OPTIONAL, None,
                "encrypt every payload sent through Temporal (AES-256-GCM): comma-separated "
                "`id:base64-key` pairs of 32-byte keys, the first one current; unset (and no file): "
                "payloads are JSON; read into `Settings.payload_keyring`"),
        Setting("RECON_PAYLOAD_KEYS_FILE", "payload_keys_file", OPTIONAL, None,
                "the same keys in a file, one a line, refused unless only its owner can read it "
                "(`chmod 600`); one of this and `RECON_PAYLOAD_KEYS`, not both"),
        Setting("RECON_CODEC_TOKEN", "codec_token", OPTIONAL, None,
                "the token `recon codec-server` requires (`Authorization: Bearer …`, or the endpoint's "
                "first path segment for a Web UI that sends no header); `recon dev` makes one",
                secret=True),
        Setting("RECON_CODEC_ORIGINS", "codec_origins", TEXT, "http://localhost:8233",
                "the Web UI origins the codec server answers (CORS, comma-separated)"),
        Setting("RECON_CODEC_HOST", "codec_host", TEXT, "127.0.0.1", "where the codec server listens"),
        Setting("RECON_CODEC_PORT", "codec_port", WHOLE, 8234, "the codec server's port", low=1),
    )),
    ("Signed decisions (docs/design.md §3)", (
        Setting("RECON_APPROVER_KEY", "approver_key", OPTIONAL, None,
                "the file of your approver's private key (PEM): `recon approve` signs with it, "
                "`recon approvers add/revoke` use it as the admin's key"),
        Setting("RECON_FOUR_EYES_PAISE", "four_eyes_paise", WHOLE, 0,
                "the worker's four-eyes amount: above it a decision that sends debit notes or parks "
                "invoices needs two different approvers (0 = off)", low=0),
        Setting("RECON_DECISION_MAX_AGE", "decision_max_age_seconds", NUMBER, 900.0,
                "seconds a signed decision stays fresh", low=0, above=True, high=86_400,
                high_words="1 to 86400 seconds"),
    )),
    ("The finance desk (docs/desk.md)", (
        Setting("RECON_DESK_HOST", "desk_host", TEXT, "127.0.0.1",
                "where `recon desk` listens (behind a TLS proxy, keep it on loopback)"),
        Setting("RECON_DESK_PORT", "desk_port", WHOLE, 8237, "the desk's port", low=1),
        Setting("RECON_DESK_ORIGIN", "desk_origin", TEXT, "http://localhost:8237",
                "the desk's origin as the browser sees it (`https://desk.example.com` behind a "
                "proxy): passkey assertions made for any other origin are refused"),
        Setting("RECON_DESK_RP_ID", "desk_rp_id", TEXT, "localhost",
                "the WebAuthn relying party id: the desk origin's host name (or a parent domain of "
                "it); passkeys are bound to it, so changing it orphans every passkey"),
    )),
    ("Outside ledger (docs/ledger.md)", (
        Setting("RECON_LEDGER", "ledger", TEXT, "builtin",
                "where step 7's adjustments are posted besides recon's own `ledger_entries`: "
                "`builtin` (only there), `tryton` (a Tryton server, JSON-RPC) or `http` (a ledger "
                "API that enforces an `Idempotency-Key`)"),
        Setting("RECON_LEDGER_URL", "ledger_url", OPTIONAL, None,
                "the outside ledger: Tryton's `http://host:8000/DATABASE`, or the key-enforcing "
                "API's base URL (entries are POSTed to `{url}/entries`)"),
        Setting("RECON_LEDGER_USER", "ledger_user", TEXT, "admin", "the Tryton user recon logs in as"),
        Setting("RECON_LEDGER_SECRET", "ledger_secret", OPTIONAL, None,
                "that user's password (Tryton) or the API's bearer token (http); better in a file",
                secret=True),
        Setting("RECON_LEDGER_SECRET_FILE", "ledger_secret_file", OPTIONAL, None,
                "a file holding that secret on one line; wins over `RECON_LEDGER_SECRET`"),
        Setting("RECON_LEDGER_PAYABLE", "ledger_payable", TEXT, "AP",
                "code of the Tryton account of supplier payables (one line of every move)"),
        Setting("RECON_LEDGER_VARIANCE", "ledger_variance", TEXT, "PPV",
                "code of the Tryton account of purchase price variance (the other line)"),
        Setting("RECON_LEDGER_JOURNAL", "ledger_journal", TEXT, "EXP",
                "code of the Tryton journal the moves are made in"),
        Setting("RECON_LEDGER_TAX_ACCOUNTS", "ledger_tax_accounts", TEXT,
                "cgst=CGST sgst=SGST igst=IGST cess=CESS vat=VAT",
                "codes of the Tryton accounts each tax part of a claim goes on (`part=code` "
                "pairs, space-separated): the input tax the claim takes back"),
        Setting("RECON_LEDGER_PARTY_BY", "ledger_party_by", TEXT, "code",
                "how a recon supplier finds its Tryton party: `code` (the party's code is the "
                "supplier id) or `tax_identifier` (the party's tax identifier is the supplier's "
                "GSTIN from recon's suppliers table)"),
        Setting("RECON_LEDGER_CREATE_PARTIES", "ledger_create_parties", TEXT, "false",
                "`true`: a supplier with no Tryton party gets a new one named by its id (for a dev "
                "or test Tryton); `false`: the entry is refused and the night hands over naming "
                "the supplier"),
        Setting("RECON_LEDGER_BATCH", "ledger_batch", WHOLE, 100,
                "Tryton moves step 7 makes per call (one create, one look-up by key, one post for "
                "all of them, in one fenced transaction); 1: one move at a time", low=1, high=1000),
    )),
    ("Tests, the demo and `recon chaos` only", (
        Setting("RECON_FAILPOINTS", "failpoints", TEXT, "",
                "make the worker fail (or hold) at an exact spot (from the environment only, by "
                "`recon/runtime/failpoints.py`)"),
        Setting("RECON_FAILPOINT_RELEASE", None, TEXT, "",
                "the file a `hold` failpoint waits for (from the environment only, by "
                "`recon/runtime/failpoints.py`)"),
    )),
)

SETTINGS: tuple[Setting, ...] = tuple(row for _, rows in GROUPS for row in rows)
BY_NAME: dict[str, Setting] = {row.name: row for row in SETTINGS}


def default_of(name: str) -> str | int | float | None:
    """The default of one variable; a name missing from the table is a bug, so it raises."""
    return BY_NAME[name].default


def run_input(name: str) -> dict:
    """A workflow input field's default and bounds, as pydantic's `Field` takes them: the value a
    run started without the field replays with, and the same refusals as the setting's."""
    row = BY_NAME[name]
    bounds: dict = {"default": row.default}
    if row.low is not None:
        bounds["gt" if row.above else "ge"] = row.low
    if row.high is not None:
        bounds["le"] = row.high
    if row.kind == NUMBER:
        bounds["allow_inf_nan"] = False
    return bounds
