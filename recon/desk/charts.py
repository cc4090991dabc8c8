"""The desk's charts, drawn on the server by pygal as SVG put inline in the page (no network,
no script): pygal's own `<script>` and `<style>` are taken out of each chart, and its CSS is
served once from the desk's origin (`/charts.css`), so the page keeps its Content-Security-Policy
(`script-src 'self'; style-src 'self'`, no inline script or style).

Every label is a supplier's or a reason's words: passed through `printable` first (control and
bidi characters as escapes), then written as XML text by pygal (its `<` is `&lt;`).
"""

from __future__ import annotations

import functools
import html
import re

import pygal
from markupsafe import Markup

from recon.domain.printable import printable

_CONFIG = dict(js=[], disable_xml_declaration=True, no_prefix=True, width=900, height=360,
               truncate_label=-1, truncate_legend=40, legend_at_bottom=True, show_y_guides=True,
               print_values=False, tooltip_fancy_mode=False)
_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)
_STYLE = re.compile(r"<style\b.*?</style>", re.S)
_STYLE_ATTR = re.compile(r'\sstyle="[^"]*"')
_RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")


def label(text: object) -> str:
    return printable(str(text))


def _inline(chart: pygal.graph.graph.Graph, name: str) -> Markup:
    svg = chart.render(is_unicode=True)
    svg = _STYLE_ATTR.sub("", _STYLE.sub("", _SCRIPT.sub("", svg)))
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{name}" ', 1)
    return Markup(svg)  # pygal wrote it: every text in it XML-escaped


@functools.cache
def stylesheet() -> str:
    """pygal's CSS for these charts, each rule scoped to `.pygal-chart` (pygal's class on every
    chart's root), served as /charts.css."""
    chart = pygal.Bar(**_CONFIG)
    for n in range(16):  # pygal writes a colour rule per series drawn: as many as a chart has
        chart.add(str(n), [1])
    css = "".join(m.group(0) for m in _STYLE.finditer(chart.render(is_unicode=True)))
    css = html.unescape(re.sub(r"</?style[^>]*>", "", css))  # pygal writes `>` as `&gt;`
    rules = []
    for selectors, body in _RULE.findall(css):
        scoped = ",".join(f".pygal-chart {s.strip()}".strip() for s in selectors.split(","))
        rules.append(f"{scoped}{{{body}}}")
    return "\n".join(rules) + "\n.tooltip{display:none}\n"


def bars(title: str, labels: list[str], values: list[float], *, unit: str = "",
         series: str = "") -> Markup:
    return _bars(title, tuple(labels), tuple(values), unit, series)


def stacked(title: str, x_labels: list[str], series: dict[str, list[float]]) -> Markup:
    return _stacked(title, tuple(x_labels), tuple((k, tuple(v)) for k, v in series.items()))


def grouped(title: str, x_labels: list[str], series: dict[str, list[float]]) -> Markup:
    return _grouped(title, tuple(x_labels), tuple((k, tuple(v)) for k, v in series.items()))


# pygal takes ~25 ms a chart: the same figures (a month whose nights did not change since the
# last look) are drawn once. The figures themselves are read from Postgres on every request.
@functools.lru_cache(maxsize=128)
def _bars(title: str, labels: tuple[str, ...], values: tuple[float, ...], unit: str,
          series: str) -> Markup:
    chart = pygal.HorizontalBar(**{**_CONFIG, "height": max(200, 80 + 28 * len(labels))},
                                show_legend=False, title=title)
    chart.x_labels = [label(x) for x in labels]
    chart.value_formatter = (lambda v: f"{v:,.2f}{unit}") if unit else (lambda v: f"{v:,.0f}")
    chart.add(series or title, values)
    return _inline(chart, title)


@functools.lru_cache(maxsize=128)
def _stacked(title: str, x_labels: tuple[str, ...],
             series: tuple[tuple[str, tuple[float, ...]], ...]) -> Markup:
    chart = pygal.StackedBar(**_CONFIG, title=title)
    chart.x_labels = x_labels
    for name, values in series:
        chart.add(label(name), values)
    return _inline(chart, title)


@functools.lru_cache(maxsize=128)
def _grouped(title: str, x_labels: tuple[str, ...],
             series: tuple[tuple[str, tuple[float, ...]], ...]) -> Markup:
    chart = pygal.Bar(**_CONFIG, title=title, x_label_rotation=45)
    chart.x_labels = x_labels
    for name, values in series:
        chart.add(label(name), values)
    return _inline(chart, title)
