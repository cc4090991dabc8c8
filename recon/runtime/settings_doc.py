"""docs/settings.md, written from the settings table (recon/domain/settings_table.py).

    uv run python -m recon.runtime.settings_doc > docs/settings.md

The page is generated so that it cannot tell another story than the code; a fast test
(tests/unit/test_settings_page.py) fails when the committed page is not the one this writes.
"""

from __future__ import annotations

from recon.domain.settings_table import CLOCK, GROUPS, NUMBER, WHOLE, Setting

# Read by temporalio.envconfig for Temporal Cloud or a secured cluster, never by recon itself.
SDK_NAMES = ("TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH",
             "TEMPORAL_PROFILE")

INTRO = """\
# Settings

<!-- Generated from recon/domain/settings_table.py by
     `uv run python -m recon.runtime.settings_doc > docs/settings.md`; edit the table, not this page. -->

Every command reads the environment first, then `.recon/env` (written by `recon dev`), then the
defaults below; an empty variable counts as unset. A value outside its bounds, or not a finite
number where a number is meant (`nan`, `inf`), stops the command or the worker at start-up with
one line naming the variable.
"""

HEADER = "| variable | type | bounds | meaning | default |\n| --- | --- | --- | --- | --- |\n"


def bounds(row: Setting) -> str:
    """The row's bounds in words, as its refusals state them."""
    if row.kind == CLOCK:
        return "`HH:MM[:SS]`"
    if row.kind == WHOLE:
        if row.high is not None:
            return f"{row.low} to {row.high}"
        return f"at least {row.low}"
    if row.kind == NUMBER:
        low = f"{'above' if row.above else 'at least'} {row.low:g}"
        return low if row.high is None else f"{low}, at most {row.high:g}"
    return "—"


def default(row: Setting) -> str:
    if row.default in (None, ""):
        return "unset"
    return f"`{row.default:g}`" if isinstance(row.default, float) else f"`{row.default}`"


def line(row: Setting) -> str:
    cells = [f"`{row.name}`", row.kind, bounds(row), row.doc, default(row)]
    assert not any("|" in cell for cell in cells), f"{row.name}: a cell holds a '|'"
    return "| " + " | ".join(cells) + " |\n"


def render() -> str:
    page = INTRO
    for title, rows in GROUPS:
        page += f"\n## {title}\n\n" + HEADER + "".join(line(row) for row in rows)
    sdk = ", ".join(f"`{name}`" for name in SDK_NAMES)
    page += ("\n## Read by the Temporal SDK, not by recon\n\n| variable | meaning | default |\n"
             "| --- | --- | --- |\n"
             f"| {sdk}, … | credentials and TLS for Temporal Cloud or a secured cluster, read by "
             "`temporalio.envconfig` | unset |\n")
    return page


if __name__ == "__main__":
    print(render(), end="")
