"""docs/settings.md, the settings table (`recon.domain.settings_table`, whose defaults are
`recon.runtime.config.DEFAULTS`) and what the code reads agree.

Defaults live in one place, the table. The page is written from it for people (and must be the
page the table writes now) and `RunRequest` reads some of them for the workflow's history (a run
started without settings must behave as one started with the defaults), so both are checked
against it here: a variable added, renamed or given another default in one place and not the
others fails this test. The page is parsed as a reader would read it, not trusted for having
been generated.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recon.domain.models import PostInput, RunRequest
from recon.domain.settings_table import SETTINGS
from recon.runtime.config import DEFAULTS, load_settings
from recon.runtime.settings_doc import render

PAGE = "docs/settings.md"

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"`([A-Z][A-Z0-9_]+)`")
# Read by temporalio.envconfig, not by recon: the page's row that ends its list of names with "…".
SDK_ROW_MARK = "…"


def page_table() -> dict[str, str | None]:
    """Variable -> the page's default as written (None where it says unset, auto, from ...)."""
    rows = [line for line in (ROOT / PAGE).read_text().splitlines() if line.startswith("| `")]
    assert rows, f"no settings table in {PAGE}"
    table: dict[str, str | None] = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        names, default = NAME.findall(cells[0]), cells[-1]
        if SDK_ROW_MARK in cells[0]:
            continue
        # One default per name, comma-separated; commas inside parentheses are prose.
        pieces = [p.strip() for p in re.split(r",\s*(?![^()]*\))", default)]
        assert len(pieces) == len(names), f"{PAGE} row {names}: {len(pieces)} defaults for " \
                                          f"{len(names)} variables: {default!r}"
        for name, piece in zip(names, pieces, strict=True):
            assert name not in table, f"{name} is in the {PAGE} table twice"
            literal = re.match(r"`([^`]*)`", piece)
            table[name] = literal.group(1) if literal else None
    return table


def sdk_row_names() -> set[str]:
    text = (ROOT / PAGE).read_text()
    return {name for line in text.splitlines() if SDK_ROW_MARK in line.split(" | ")[0]
            for name in NAME.findall(line.split(" | ")[0])}


def test_the_committed_page_is_the_one_the_table_writes() -> None:
    assert (ROOT / PAGE).read_text() == render(), \
        f"{PAGE} is stale: uv run python -m recon.runtime.settings_doc > {PAGE}"


def test_every_variable_recon_reads_is_on_the_page_and_nothing_else_is() -> None:
    documented = page_table()
    assert sorted(set(DEFAULTS) - set(documented)) == [], f"missing from {PAGE}"
    assert sorted(set(documented) - set(DEFAULTS)) == [], f"in {PAGE} but not in the table"
    assert not sdk_row_names() & set(DEFAULTS), "the SDK's row names a variable recon reads"


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_the_page_states_the_default(name: str) -> None:
    default, written = DEFAULTS[name], page_table()[name]
    if default in (None, ""):  # empty means unset (config.py)
        assert written is None, f"{name}: {PAGE} gives `{written}`, the code has none"
        return
    assert written is not None, f"{name}: {PAGE} gives no default, the code has {default!r}"
    assert type(default)(written) == default, f"{name}: {PAGE} `{written}`, code {default!r}"


def _read_names(source: str) -> set[str]:
    """Environment variables a module reads by name (os.environ / getenv / a dict of settings);
    load_settings reads the table's rows, not names written in its code."""
    found = set(re.findall(
        r"""(?:environ\.get|getenv|environ\[|values\.get)"""
        r"""\s*\(?\s*["']([A-Z][A-Z0-9_]+)["']""", source))
    return found


def test_no_module_reads_a_variable_that_has_no_default_entry() -> None:
    sources = [*(ROOT / "recon").rglob("*.py"), *(ROOT / "activities").glob("*.py"),
               *(ROOT / "workflows").glob("*.py"), ROOT / "worker.py", ROOT / "starter.py"]
    read = {name: path.relative_to(ROOT) for path in sources
            for name in _read_names(path.read_text())}
    # load_settings reads one variable per row of the table (recon/runtime/config.py).
    read.update({row.name: Path("recon/runtime/config.py") for row in SETTINGS if row.field})
    unknown = {name: str(path) for name, path in read.items() if name not in DEFAULTS}
    assert unknown == {}, "add these to recon.domain.settings_table (and regenerate the page)"
    assert {"RECON_POST_BATCH", "RECON_HOME", "RECON_LOG_LEVEL"} <= set(read), \
        "the scan no longer sees the reads it is meant to see"


def test_settings_take_their_defaults_from_the_table() -> None:
    s = load_settings()
    assert (s.warehouse, s.reminder_utc_time) == (DEFAULTS["RECON_WAREHOUSE"],
                                                  DEFAULTS["RECON_REMINDER_UTC"])
    assert (s.post_batch_size, s.metrics_refresh_seconds) == (DEFAULTS["RECON_POST_BATCH"],
                                                              DEFAULTS["RECON_METRICS_REFRESH"])


@pytest.mark.parametrize(("model", "field", "name"), [
    (RunRequest, "extract_batch_size", "RECON_EXTRACT_BATCH"),
    (RunRequest, "post_batch_size", "RECON_POST_BATCH"),
    (RunRequest, "heartbeat_seconds", "RECON_HEARTBEAT_SECONDS"),
    (RunRequest, "reminder_utc_time", "RECON_REMINDER_UTC"),
    (PostInput, "batch_size", "RECON_POST_BATCH"),
])
def test_the_workflow_inputs_default_to_the_same_values(model, field: str, name: str) -> None:
    assert model.model_fields[field].default == DEFAULTS[name]
