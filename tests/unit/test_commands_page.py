"""docs/commands.md against the command tree of `recon.cli.app`, and every `recon ...` the user
pages name against the same tree.

The tree is typer's own (`typer.main.get_command(app)`), the one `recon --help` prints: a command
or option added, renamed or removed in the code and not in the page fails here, and so does a
page that names a command or option the code does not have.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from recon.cli import app

ROOT = Path(__file__).resolve().parents[2]
COMMANDS_PAGE = ROOT / "docs" / "commands.md"
# The pages written for the people who run recon; each `recon X ...` in their code must exist.
USER_PAGES = ["README.md", *(f"docs/{name}.md" for name in (
    "commands", "master-data", "formats", "books", "decisions", "undo", "schedules", "encryption",
    "operations", "mail", "model-calls", "ledger", "sources"))]

HEADING = re.compile(r"^#{2,3} `(recon(?: [a-z][a-z-]*)*)`\s*$", re.MULTILINE)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# `recon` as a command word: not `recon/cli`, `recon-2026-…`, `recon.cli` or `recon's`.
INVOCATION = re.compile(r"(?<![\w./-])recon ([a-z][a-z-]*.*)")
OPTION = re.compile(r"[\[(]*(--[a-z][a-z-]*)")  # `[--by` is `--by`
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


def _tree() -> dict[str, dict]:
    """'recon load orders' -> {'options': {...}, 'arguments': {...}, 'group': bool}."""
    found: dict[str, dict] = {}

    def walk(cmd, path: str) -> None:
        group = hasattr(cmd, "commands")
        options = {opt for p in cmd.params if p.param_type_name == "option"
                   for opt in (*p.opts, *p.secondary_opts) if opt.startswith("--")}
        arguments = {(p.metavar or p.name.upper()).strip("[]") for p in cmd.params
                     if p.param_type_name == "argument"}
        found[path] = {"options": options, "arguments": arguments, "group": group}
        if group:
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "recon")
    return found


TREE = _tree()
LEAVES = sorted(path for path, c in TREE.items() if not c["group"])


def sections(text: str) -> dict[str, str]:
    """'recon undo' -> the page's text under its heading, up to the next heading of any level."""
    found: dict[str, str] = {}
    marks = list(HEADING.finditer(text))
    for mark in marks:
        rest = text[mark.end():]
        following = re.search(r"^#{1,3} ", rest, re.MULTILINE)
        found[mark.group(1)] = rest[: following.start()] if following else rest
    return found


def code_of(text: str) -> list[str]:
    """The page's code: each line of a fenced block and each inline code span."""
    blocks = [line for block in FENCED.findall(text) for line in block.splitlines()]
    prose = FENCED.sub("", text)
    return blocks + INLINE_CODE.findall(prose)


def invocations(snippet: str) -> list[tuple[str, list[str]]]:
    """(command path, the options given) for each `recon ...` in a line of code; a comment (`#`)
    or a pipe ends the command."""
    found = []
    for match in INVOCATION.finditer(snippet):
        words = re.split(r"\s+#|\||;|&&", match.group(1))[0].split()
        path = f"recon {words[0]}"
        if TREE.get(path, {}).get("group") and len(words) > 1 and WORD.fullmatch(words[1]):
            path = f"{path} {words[1]}"  # a sub-command (a run id after `recon mail` is none)
        found.append((path, [m.group(1) for w in words[1:] if (m := OPTION.match(w))]))
    return found


def test_every_command_has_its_section_and_every_section_a_command() -> None:
    page = sections(COMMANDS_PAGE.read_text())
    assert sorted(set(LEAVES) - set(page)) == [], "commands without a section in docs/commands.md"
    assert sorted(set(page) - set(TREE)) == [], "sections of docs/commands.md for no command"


def test_every_option_and_argument_is_in_its_commands_section() -> None:
    page = sections(COMMANDS_PAGE.read_text())
    missing = []
    for path in LEAVES:
        text = page.get(path, "")
        for option in sorted(TREE[path]["options"] - {"--help"}):
            if not re.search(rf"(?<![\w-]){option}(?![\w-])", text):
                missing.append(f"{path} {option}")
        for argument in sorted(TREE[path]["arguments"]):
            if not re.search(rf"\b{re.escape(argument)}\b", text):
                missing.append(f"{path} {argument}")
    assert missing == [], "options or arguments the code has and docs/commands.md does not state"


def test_every_recon_command_the_user_pages_name_exists_with_its_options() -> None:
    wrong = []
    for name in USER_PAGES:
        page = ROOT / name
        if not page.exists():
            continue
        for snippet in code_of(page.read_text()):
            for path, options in invocations(snippet):
                if path not in TREE:
                    wrong.append(f"{name}: `{path}` is no command ({snippet.strip()[:80]})")
                    continue
                unknown = sorted(set(options) - TREE[path]["options"])
                if unknown and not TREE[path]["group"]:
                    wrong.append(f"{name}: `{path}` has no {', '.join(unknown)} "
                                 f"({snippet.strip()[:80]})")
    assert wrong == []


def test_the_pages_exist_and_the_readme_keeps_the_test_command() -> None:
    missing = [name for name in USER_PAGES if not (ROOT / name).exists()]
    assert missing == []
    assert "uv run pytest" in (ROOT / "README.md").read_text(), "CI (.ci/run) runs the README's command"
