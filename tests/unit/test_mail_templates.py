"""Every HTML template escapes what it is given (recon/mail/documents.py `escapes`)."""

from __future__ import annotations

from pathlib import Path

from recon.mail.documents import PLAIN_TEXT_SUFFIX, templates

FOLDER = Path(__file__).resolve().parents[2] / "recon" / "mail" / "templates"


def test_every_template_but_plain_text_is_escaped() -> None:
    env = templates()
    names = sorted(p.name for p in FOLDER.iterdir())
    assert "summary.html.j2" in names
    for name in names:
        assert env.autoescape(name) is (not name.endswith(PLAIN_TEXT_SUFFIX)), name
    assert env.autoescape("new_template.j2"), "a template of no declared kind is escaped"


def test_markup_in_data_arrives_as_text_in_html() -> None:
    hostile = 'PO-<a href="//evil.example/x">Approve</a>'
    html = templates().from_string("<li>{{ x }}</li>").render(x=hostile)
    assert "<a " not in html and "&lt;a href=&#34;//evil.example/x&#34;&gt;" in html
