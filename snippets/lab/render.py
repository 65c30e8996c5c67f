"""Renderers: pure functions from a result to inline SVG or a Markdown table.

Figures use matplotlib's object API with the Agg backend (no pyplot state), a fixed size, a fixed
``svg.hashsalt`` and no date metadata, so the same result gives byte-identical SVG. They are drawn on a white
card so that they stay legible in the light and the dark palette alike.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from . import cache, environment  # noqa: E402
from .cache import Result  # noqa: E402

STYLE = {
    "svg.hashsalt": "pytorch-pitfalls-measured",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "text.color": "#1a1a1a",
    "axes.labelcolor": "#1a1a1a",
    "xtick.color": "#1a1a1a",
    "ytick.color": "#1a1a1a",
    "legend.framealpha": 0.9,
    "lines.linewidth": 1.6,
}
# Colour-blind-safe palette (Okabe–Ito), distinct on white.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
SIZES = {"wide": (8.0, 3.6), "tall": (8.0, 5.6), "square": (5.0, 4.0), "pair": (8.0, 3.4)}


def new_figure(size: str = "wide", *, nrows: int = 1, ncols: int = 1, **subplot_kw: Any):
    """A fresh ``Figure`` and its axes, in one of the fixed sizes."""
    if size not in SIZES:
        raise ValueError(f"unknown figure size {size!r}; choose one of {sorted(SIZES)}")
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=SIZES[size], layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=True, **subplot_kw)
    for ax in fig.axes:
        ax.set_prop_cycle(color=COLORS)
    return fig, axes


def svg(fig: Figure, result: Result, *, alt: str) -> str:
    """Inline SVG of ``fig`` inside a ``<figure>`` that names its experiment and whether it shows timings.

    Drawing is most of a warm rebuild's time, so the SVG of a result read from the cache is itself cached,
    keyed by the result's value, the calling renderer's module source, this module's source, ``alt`` and
    the matplotlib version. A freshly computed result is always drawn anew.
    """
    caller = sys._getframe(1)
    key = _figure_key(result, alt, caller.f_code.co_filename, caller.f_code.co_name)
    path = cache.cache_dir().parent / "figures" / f"{key}.svg"
    if result.cached and path.exists():
        return path.read_text(encoding="utf-8")
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: not valid inside HTML
    text = text.replace("<svg ", f'<svg role="img" aria-label="{html.escape(alt)}" ', 1)
    text = (
        f'<figure class="pitfalls-figure" data-experiment="{result.experiment}" '
        f'data-timing="{str(result.timing).lower()}">\n{text}\n</figure>\n'
    )
    cache.store_text(path, text)
    return text


def _figure_key(result: Result, alt: str, renderer_file: str, renderer: str) -> str:
    digest = hashlib.sha256()
    for part in (json.dumps(result.value, sort_keys=True), result.experiment, str(result.timing), alt, renderer,
                 matplotlib.__version__):
        digest.update(part.encode())
    for source in (renderer_file, __file__):
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:32]


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, align: str | None = None) -> str:
    """A Markdown table. ``align`` is one letter per column: l, r or c."""
    headers = list(headers)
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"align has {len(align)} letters for {len(headers)} columns")
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |",
             "| " + " | ".join(marks[a] for a in align) + " |"]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells for {len(headers)} columns")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def seconds(value: float) -> str:
    """A duration with a unit that keeps three significant figures."""
    if value is None or math.isnan(value):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(value) >= scale or unit == "ns":
            return f"{value / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def ratio_text(ratio: float) -> str:
    """A ratio with two decimals, or two significant figures when it is below 0.1."""
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def stamp_line(result: Result) -> str:
    return f'<p class="pitfalls-stamp">Measured with {html.escape(result.stamp)}</p>\n'


def timing_table(result: Result, rows: Sequence[dict], *, label: str = "Variant",
                 baseline: int = 0, extra: Sequence[str] = ()) -> str:
    """Median, spread and ratio to the baseline row, followed by the environment stamp.

    Each row is ``{"label": str, "median": s, "iqr": s, "blocks": int, **extra}``.
    """
    base = rows[baseline]["median"]
    headers = [label, "median", "IQR", "× baseline", "blocks", *extra]
    body = []
    for i, row in enumerate(rows):
        ratio = "1.00 (baseline)" if i == baseline else ratio_text(row["median"] / base)
        body.append([row["label"], seconds(row["median"]), seconds(row["iqr"]), ratio, row["blocks"],
                     *(row.get(key, "") for key in extra)])
    return table(headers, body, align="l" + "r" * (len(headers) - 1)) + "\n" + stamp_line(result)


def environment_table() -> str:
    return table(["", "value"], environment.describe(), align="ll")
