"""Text from data, made safe for a terminal line.

Names, notes, error messages and invoice numbers come from people, suppliers and models; a
terminal obeys the control characters in them (`\\x1b[2J` clears the screen, `\\r` overwrites
the line, a lone `\\x1b]8;;` makes a link). Every terminal line the CLI builds from data passes
through `printable`, which keeps the text readable and shows each control character as an
escape (`\\x1b`, `\\r`), so what was sent stays visible as evidence and does nothing.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _is_control(char: str) -> bool:
    # Cc: C0, DEL and C1 controls; Cf: bidi overrides and other invisible format characters
    # (U+202E turns the rest of a line around); Zl/Zp: line and paragraph separators.
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def neutral(text: str) -> str:
    """Text for a mail body (plain or HTML): every control and bidirectional character shown as
    an escape (`\\x1b`, `\\u202e`), but for the line breaks and tabs of the layout itself."""
    # A mail body is many lines: `isprintable` (in C) is false for it, yet a body has no control
    # character once its line breaks and tabs are set aside, every control character being
    # unprintable. Only a body with something else unprintable (a control, or merely a
    # non-breaking space) is walked character by character.
    if text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(_escape(c) if _is_control(c) and c not in "\n\t" else c for c in text)


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """`text` with every control character shown as an escape. With `keep_newlines`, a
    multi-line text (a handover note) keeps its line breaks; `\\r` is still escaped."""
    value = str(text)
    if value.isprintable():
        return value  # the common case: nothing to do
    out = []
    for char in value:
        if keep_newlines and char == "\n":
            out.append(char)
        elif _is_control(char):
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)
