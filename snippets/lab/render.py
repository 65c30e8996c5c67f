"""Renderers: pure functions from a result to inline SVG or a Markdown table.

Figures use matplotlib's object API with the Agg backend (no pyplot state), a fixed size, a fixed
``svg.hashsalt`` and no date metadata, so the same result gives byte-identical SVG. They are drawn on a white
card so that they stay legible in the light and the dark palette alike.

The SVG is inlined in the page (its text stays searchable and selectable), so it is made cheap for a phone
first (:func:`lean_svg`): matplotlib's wrapper groups, unused ids, metadata and six-digit coordinates go, and a
run of markers becomes one path instead of one ``<use>`` element per point.
"""

from __future__ import annotations

import hashlib
import html
import inspect
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from typing import Any, Callable, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from . import code, context, environment, i18n, store  # noqa: E402
from .cache import Result  # noqa: E402
from .i18n import t  # noqa: E402

STYLE = {
    "svg.hashsalt": "pytorch-pitfalls-measured",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 10,
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
# Every figure is drawn as wide as a phone's screen: 5.2 in is 374 pt, and a 390 px phone draws the figure edge to
# edge (assets/extra.css) with its smallest text (MIN_FONT) at 9 px or more. A laptop draws it at its own size
# (about 500 px), its text a little smaller than the prose's. Two panels side by side share the width; a figure
# whose panels need the width ("tall") stacks them, with legends beside or below (legend_beside, legend_below).
WIDTH = 5.2
SIZES = {"wide": (WIDTH, 3.4), "pair": (WIDTH, 3.3), "tall": (WIDTH, 5.4)}


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


def legend_below(fig: Figure, ax: Any, *, ncol: int = 1) -> None:
    """The legend of ``ax``'s lines under every panel of ``fig``, where it covers no data."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol)


def legend_beside(ax: Any) -> None:
    """The legend of ``ax``'s lines to its right, outside the data (constrained layout makes room)."""
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)


def svg(draw: Callable[[], Figure], result: Result, *, drawn_by: Callable, alt: str) -> str:
    """Inline SVG of the figure ``draw()`` returns, inside a ``<figure>`` that names its experiment and whether it
    shows timings.

    Drawing is most of a warm rebuild's time, so the SVG of a result read from the cache is itself cached, and
    ``draw`` is not called when it serves: keyed by the result's value, the code of the renderer that drew it
    (``drawn_by``, a module-level function) and everything of the project it reaches (``code.reach``: the page's
    helpers in ``derive.py``, this module's drawing code), ``alt``, the language and its catalogue, and the
    matplotlib version. A freshly computed result is always drawn anew.
    """
    alt = t(alt)
    key = _figure_key(result, alt, code.reach(inspect.unwrap(drawn_by)).digest)
    path = store.cache_dir().parent / "figures" / f"{key}.svg"
    used = path.with_suffix(".keys.json")  # the catalogue keys its texts matched: a cached figure still uses them
    build = context.current()
    if result.cached and path.exists() and used.exists():
        build.used.update(json.loads(used.read_text(encoding="utf-8")))
        return path.read_text(encoding="utf-8")
    before = set(build.used)
    fig = draw()
    translate_figure(fig)
    legible(fig)
    buffer = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = lean_svg(buffer.getvalue(), label=alt)
    text = (
        # focusable: on a screen narrower than a phone's a figure scrolls sideways rather than shrink its text, and
        # a keyboard scrolls it
        f'<figure class="pitfalls-figure" tabindex="0" data-experiment="{result.experiment}" '
        f'data-timing="{str(result.timing).lower()}">\n{text}\n</figure>\n'
    )
    store.store_text(used, json.dumps(sorted(build.used - before)))
    store.store_text(path, text)
    return text


# The smallest text a figure draws, in its own units (pt), and the smallest it may be rendered at, in CSS px: a
# figure is never drawn narrower than makes its smallest text READABLE_PX (a 390 px phone has the room: WIDTH; on a
# narrower screen it scrolls sideways instead).
MIN_FONT = 9
READABLE_PX = 9

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_number(value: float, _position: object = None) -> str:
    """A log axis's tick label without mathtext's small superscripts: 0.001, 1, 1,000, 100,000; 10⁶ and 10⁻⁴
    beyond (drawn at the label's full size)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    exponent = math.floor(math.log10(abs(value)) + 1e-9)
    if -3 <= exponent < 6:
        return f"{value:,g}"
    mantissa = value / 10 ** exponent
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if abs(mantissa - 1) < 1e-9 else f"{mantissa:g}×{power}"


def legible(fig: Figure) -> None:
    """No text in ``fig`` smaller than MIN_FONT, and log axes labelled in plain numbers (mathtext draws their
    exponents at 70% of the label's size): with ``lean_svg``'s minimum width, every text reads at 9 px or more."""
    from matplotlib.text import Text
    from matplotlib.ticker import FuncFormatter, LogFormatterSciNotation

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_formatter(), LogFormatterSciNotation):
                axis.set_major_formatter(FuncFormatter(plain_number))
            if isinstance(axis.get_minor_formatter(), LogFormatterSciNotation):
                axis.set_minor_formatter(FuncFormatter(lambda value, position: ""))
    for text in fig.findobj(Text):  # every text, tick labels among them (an axis' children are its ticks)
        if text.get_fontsize() < MIN_FONT:
            text.set_fontsize(MIN_FONT)


# Chinese text is drawn in Noto Sans CJK SC (Debian: fonts-noto-cjk); a reader's browser without it takes the
# next family it has.
CJK_FONT = "Noto Sans CJK SC"  # fonts.CJK_FONT, which make fonts checks
CJK_FALLBACKS = "'Noto Sans SC', 'Source Han Sans SC', 'PingFang SC', 'Hiragino Sans GB', 'Microsoft YaHei', sans-serif"


def translate_figure(fig: Figure) -> None:
    """Every title, label, legend entry, annotation and fixed tick label of ``fig`` in the page's language
    (``i18n.t``); a text in Chinese is drawn with a CJK font, which must be installed."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter

    if i18n.language() == i18n.DEFAULT:
        return
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [t(str(label)) for label in formatter.seq]
    for text in fig.findobj(Text):
        shown = text.get_text()
        if not shown:
            continue
        translated = t(shown)
        if translated != shown:
            text.set_text(translated)
        if i18n._CJK.search(translated):
            text.set_fontfamily([STYLE["font.family"], cjk_font()])


def cjk_font() -> str:
    """The CJK font's family, after checking matplotlib can find it (making its font list anew if the font was
    installed after that list): without it every Chinese glyph is a box."""
    from . import fonts

    missing = fonts.problem(CJK_FONT)
    if missing:
        raise RuntimeError(missing)
    return CJK_FONT


_SVG = "{http://www.w3.org/2000/svg}"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
_URL_REF = re.compile(r"url\(#([^)]+)\)")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_PATH_TOKEN = re.compile(r"[A-Za-z]|" + _NUMBER.pattern)
_ROUNDED = {"d", "x", "y", "width", "height", "transform", "points", "x1", "x2", "y1", "y2", "cx", "cy", "r"}
_ROOT_KEPT = ("width", "height", "viewBox")


def lean_svg(text: str, *, label: str) -> str:
    """matplotlib's SVG made cheap to inline in a page, as one ``<svg role="img" aria-label=label>`` element.

    A browser styles and lays out every element of an inline SVG against the page's whole stylesheet, so the
    element count is what a phone pays for. Removed: the XML prolog, metadata, comments, ids nothing refers to,
    groups that carry no attribute, and the global ``<style>`` rule (``*{…}`` would apply to the whole page;
    its properties are inherited, so they move onto the root). Consecutive ``<use>`` markers of one style become
    one ``<path>``. Coordinates keep two decimals (1/100 pt). What is drawn does not change.
    """
    root = ET.fromstring(text)  # the parser drops comments, and with them matplotlib's LaTeX sources
    if root.tag != _SVG + "svg":
        raise ValueError(f"not an SVG document: <{root.tag}>")
    inherited: dict[str, str] = {}
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag == _SVG + "metadata":
                parent.remove(child)
            elif child.tag == _SVG + "style":
                rule = re.fullmatch(r"\s*\*\s*\{([^{}]*)\}\s*", child.text or "")
                if rule:  # a rule for every element: applied once, on the root, instead
                    inherited.update(_style(rule.group(1)))
                    parent.remove(child)
    defs = {el.get("id"): el for el in root.iter() if el.get("id")}
    for axis in [g for g in root.iter(_SVG + "g") if (g.get("id") or "").startswith("matplotlib.axis")]:
        _merge_tick_marks(axis, defs)
    _merge_markers(root, defs)
    referenced = set()
    for el in root.iter():
        for name, value in el.attrib.items():
            referenced.update(_URL_REF.findall(value))
            if name in (_XLINK_HREF, "href") and value.startswith("#"):
                referenced.add(value[1:])
    for definitions in root.iter(_SVG + "defs"):
        for unused in [el for el in definitions if el.get("id") not in referenced]:
            definitions.remove(unused)
    _prune(root, referenced)
    attributes = {"role": "img", "aria-label": label}
    attributes.update((name, root.get(name)) for name in _ROOT_KEPT if root.get(name))
    attributes["xmlns"] = "http://www.w3.org/2000/svg"
    if any(_XLINK_HREF in el.attrib for el in root.iter()):
        attributes["xmlns:xlink"] = "http://www.w3.org/1999/xlink"
    attributes.update(inherited)
    for el in root.iter(_SVG + "text"):  # a reader without Noto CJK gets the CJK font their system has
        if CJK_FONT in (el.get("style") or ""):
            el.set("style", el.get("style").replace(f"'{CJK_FONT}'", f"'{CJK_FONT}', {CJK_FALLBACKS}"))
    sizes = [float(size) for el in root.iter() for size in _FONT_SIZE.findall(el.get("style") or "")]
    view = (root.get("viewBox") or "").split()
    if sizes and len(view) == 4:  # never so narrow that its smallest text reads under READABLE_PX
        attributes["style"] = f"min-width: {math.ceil(float(view[2]) * READABLE_PX / min(sizes))}px"
    out: list[str] = [_open_tag("svg", attributes)]
    for child in root:
        _write(child, out)
    out.append("</svg>")
    # the page's palette: white and black follow the light and dark schemes (assets/extra.css sets the two)
    return _THEMED.sub(lambda m: f"{m.group(1)}: var(--pitfalls-figure-{_THEME[m.group(2)]}, {m.group(2)})",
                       "".join(out))


_FONT_SIZE = re.compile(r"font-size:\s*([\d.]+)px")
_THEME = {"#ffffff": "bg", "#1a1a1a": "fg", "#000000": "fg", "#555555": "muted", "#a64b00": "warn"}
_THEMED = re.compile(r"\b(fill|stroke): (#ffffff|#1a1a1a|#000000|#555555|#a64b00)\b")


def _style(text: str) -> dict[str, str]:
    pairs = (item.split(":", 1) for item in text.split(";") if ":" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def _merge_tick_marks(axis: ET.Element, defs: dict[str, ET.Element]) -> None:
    """An axis draws each tick mark as a ``<use>``, between its grid line and its label: the marks of one
    style become one path, drawn last in the axis (a tick mark overlaps neither its grid line nor a label)."""
    parents = {child: parent for parent in axis.iter() for child in parent}
    groups: dict[tuple, list[ET.Element]] = {}
    for el in axis.iter(_SVG + "use"):
        key = _marker_key(el, defs)
        if key is not None:
            groups.setdefault(key, []).append(el)
    for uses in groups.values():
        for use in uses:
            parents[use].remove(use)
        axis.append(_marker_path(uses, defs))


def _marker_path(uses: list[ET.Element], defs: dict[str, ET.Element]) -> ET.Element:
    """One ``<path>`` drawing the marker of every ``<use>`` in ``uses`` (same marker, same style)."""
    marker = defs[_href(uses[0])[1:]]
    d = " ".join(_translate(marker.get("d"), float(use.get("x", 0)), float(use.get("y", 0))) for use in uses)
    # the marker's own style wins over the <use>'s, as it does when the browser draws a <use>
    style = {**_style(uses[0].get("style", "")), **_style(marker.get("style", ""))}
    return ET.Element(_SVG + "path", {"d": d, "style": "; ".join(f"{k}: {v}" for k, v in style.items())})


def _merge_markers(root: ET.Element, defs: dict[str, ET.Element]) -> None:
    """Runs of sibling ``<use>`` of one marker and one style (a line's points) become a single ``<path>``."""
    for parent in list(root.iter()):
        runs: list[list[ET.Element]] = []
        previous = None
        for child in parent:
            key = _marker_key(child, defs)
            if key is not None and key == previous:
                runs[-1].append(child)
            elif key is not None:
                runs.append([child])
            previous = key
        for run in (run for run in runs if len(run) > 1):
            index = list(parent).index(run[0])
            for use in run:
                parent.remove(use)
            parent.insert(index, _marker_path(run, defs))


def _href(el: ET.Element) -> str:
    return el.get(_XLINK_HREF) or el.get("href") or ""


def _marker_key(el: ET.Element, defs: dict[str, ET.Element]) -> tuple | None:
    """What makes two ``<use>`` mergeable, or None for an element that is not a plain marker reference."""
    if el.tag != _SVG + "use" or set(el.attrib) - {_XLINK_HREF, "href", "x", "y", "style"}:
        return None
    marker = defs.get(_href(el)[1:])
    if marker is None or marker.tag != _SVG + "path" or set(marker.attrib) - {"id", "d", "style"} \
            or not re.fullmatch(r"[MLQCZz0-9eE.\s+-]*", marker.get("d", "")):
        return None
    return _href(el), el.get("style", "")


def _translate(d: str, dx: float, dy: float) -> str:
    """An absolute-coordinate path (M, L, Q, C, z) moved by (dx, dy)."""
    out, numbers = [], []
    for token in _PATH_TOKEN.findall(d):
        if token.isalpha():
            out.append(token)
            continue
        numbers.append(float(token))
        if len(numbers) == 2:
            out.append(f"{_round(numbers[0] + dx)} {_round(numbers[1] + dy)}")
            numbers = []
    return " ".join(out)


def _round(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _prune(el: ET.Element, referenced: set[str]) -> None:
    """Drop unreferenced ids and empty ``<defs>``; hoist the children of groups left without attributes."""
    if el.get("id") and el.get("id") not in referenced:
        del el.attrib["id"]
    index = 0
    while index < len(el):
        child = el[index]
        _prune(child, referenced)
        if child.tag == _SVG + "defs" and len(child) == 0:
            el.remove(child)
        elif child.tag == _SVG + "g" and not child.attrib and not (child.text or "").strip():
            el.remove(child)
            for offset, grandchild in enumerate(list(child)):
                el.insert(index + offset, grandchild)
            index += len(child)
        else:
            index += 1


def _open_tag(tag: str, attributes: dict[str, str], *, close: bool = False) -> str:
    parts = "".join(f' {name}="{_escape(value)}"' for name, value in attributes.items())
    return f"<{tag}{parts}{'/' if close else ''}>"


def _escape(value: str) -> str:
    return html.escape(value, quote=False).replace('"', "&quot;")


def _write(el: ET.Element, out: list[str]) -> None:
    tag = el.tag.rpartition("}")[2]
    attributes = {}
    for name, value in el.attrib.items():
        # xlink:href, not SVG 2's href: Material's instant navigation rewrites the .href of every [href] element,
        # and an SVG element's .href cannot be set
        name = "xlink:href" if name == _XLINK_HREF else name.rpartition("}")[2] if name.startswith("{") else name
        if name in _ROUNDED:
            value = _NUMBER.sub(lambda m: _round(float(m.group())), value)
            if name == "d":
                value = re.sub(r"\s*([A-Za-z])\s*", r"\1", value).strip()
        attributes[name] = value
    text = el.text if el.text and el.text.strip() else ""
    if len(el) == 0 and not text:
        out.append(_open_tag(tag, attributes, close=True))
        return
    out.append(_open_tag(tag, attributes) + html.escape(text, quote=False))
    for child in el:
        _write(child, out)
        if child.tail and child.tail.strip():
            out.append(html.escape(child.tail, quote=False))
    out.append(f"</{tag}>")


def _figure_key(result: Result, alt: str, renderer: str) -> str:
    digest = hashlib.sha256()
    for part in (json.dumps(result.value, sort_keys=True), result.experiment, str(result.timing), alt, renderer,
                 matplotlib.__version__, i18n.language(), json.dumps(i18n.catalogue(i18n.language())[0], sort_keys=True)
                 if i18n.language() != i18n.DEFAULT else ""):
        digest.update(part.encode())
    return digest.hexdigest()[:32]


_DUNDER = re.compile(r"(`[^`]*`)|(?<![\w`])(__\w+__)(?![\w`])")


def dunders_as_code(text: str) -> str:
    """``text`` with a name such as ``__next__`` outside backticks made code (Markdown would read its underscores
    as bold)."""
    return _DUNDER.sub(lambda m: m.group(1) or f"`{m.group(2)}`", text)


def _cell(value: Any) -> str:
    """A table cell's Markdown (its dunder names as code, ``dunders_as_code``)."""
    return dunders_as_code(str(value)).replace("|", "\\|").replace("\n", " ")


def _shown(cell: Any) -> Any:
    """A table cell in the page's language: text translated; True and False read as yes and no outside English."""
    if isinstance(cell, str):
        return t(cell)
    if isinstance(cell, bool) and i18n.language() != i18n.DEFAULT:
        return t("yes" if cell else "no")
    return cell


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, align: str | None = None) -> str:
    """A Markdown table. ``align`` is one letter per column: l, r or c."""
    headers = list(headers)
    align = align or "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"align has {len(align)} letters for {len(headers)} columns")
    marks = {"l": ":---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(_cell(t(h)) for h in headers) + " |",
             "| " + " | ".join(marks[a] for a in align) + " |"]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells for {len(headers)} columns")
        lines.append("| " + " | ".join(_cell(_shown(c)) for c in row) + " |")
    return "\n".join(lines) + "\n"


def seconds(value: float) -> str:
    """A duration with a unit that keeps three significant figures."""
    if value is None or math.isnan(value):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(value) >= scale or unit == "ns":
            return f"{value / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def measured_on(result: Result) -> str:
    """Where the page's numbers were measured, for its In short: "Numbers measured with torch 2.13.0+cpu · CPU
    (AMD EPYC) · 2 threads · …". A table measured in the same environment then carries no stamp of its own
    (``stamp_line``); its code panel still names it."""
    build = context.current()
    if build.page:
        build.stamps[build.page] = _where_from(result)
    if not result.here:
        return t("Numbers on this page recorded on {label} with {stamp}, until this machine has measured them.",
                 label=html.escape(result.recorded_on), stamp=html.escape(i18n.stamp(result.stamp)))
    return t("Numbers on this page measured with {stamp}.", stamp=html.escape(i18n.stamp(result.stamp)))


def _where_from(result: Result) -> str:
    return result.stamp if result.here else f"{result.recorded_on}: {result.stamp}"


def stamp_line(result: Result) -> str:
    """The environment a table or figure was measured in, under it: only where it is not the one the page's
    In short names (``measured_on``) — once per page, not under every table."""
    build = context.current()
    if build.page and build.stamps.get(build.page) == _where_from(result):
        return ""
    if not result.here:
        return ('<p class="pitfalls-stamp pitfalls-stamp--recorded">' + t(
            "Recorded on {label} with {stamp}: not measured on this machine yet",
            label=html.escape(result.recorded_on), stamp=html.escape(i18n.stamp(result.stamp))) + "</p>\n")
    return '<p class="pitfalls-stamp">' + t("Measured with {stamp}", stamp=html.escape(i18n.stamp(result.stamp))) + "</p>\n"


def environment_table() -> str:
    # every column has a header: an empty <th> leaves a screen reader nothing to announce
    return table(["setting", "value"], environment.describe(), align="ll")


def fingerprint_table(fingerprint: dict) -> str:
    """A machine's fingerprint, field by field: its values are what the machine calls itself, shown as they are in
    every language (a recording's included: it may come from any machine)."""
    return table(["field", "value"], [(field, i18n.Verbatim(value) if isinstance(value, str) else value)
                                      for field, value in sorted(fingerprint.items())], align="ll")


def _decimals_for(half_width: float | None) -> int:
    """As many decimals as the interval supports: one significant figure of its half-width, at most 2."""
    if not half_width or half_width <= 0 or math.isinf(half_width):
        return 2
    return max(0, min(2, -math.floor(math.log10(half_width))))


# A ratio whose 95% interval spans more than this factor (high ÷ low), or a share whose interval is more than 50
# percentage points wide, tells a reader nothing they can use: a table's cell says "not measured reliably here".
UNRELIABLE_SPAN = 10.0
UNRELIABLE_SHARE_SPAN = 0.5


def unreliable(interval: dict, *, share: bool = False) -> bool:
    """Whether ``interval`` is too wide to print a value from (``UNRELIABLE_SPAN``, ``UNRELIABLE_SHARE_SPAN``);
    an interval with no bounds is printed as such (``(no interval: too few repeats)``), not judged here."""
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None:
        return False
    if share:
        return high - low > UNRELIABLE_SHARE_SPAN
    return low <= 0 or high > UNRELIABLE_SPAN * low


def _printable(text: str, interval: dict, flag: bool, *, share: bool = False) -> str:
    """``text``, or "not measured reliably here" where ``flag`` is set and the interval is too wide to read a value
    from (``unreliable``). How busy the machine was is said once per page (``noise_warning``), not here."""
    return t("not measured reliably here") if flag and unreliable(interval, share=share) else text


def ratio_interval(interval: dict, *, suffix: str = "×", flag: bool = False) -> str:
    """``7.7× (7.4–8.1)``: a ratio with its 95% interval, at the precision the interval supports; ``flag`` (a table's
    cell, where a number stands alone): "not measured reliably here" instead when the interval is too wide to read
    a value from (``unreliable``). In a sentence the number and its wide interval stay: the sentence reads on.

    Ratios below 0.1 (shares) keep two significant figures; ratios whose interval is tens wide or more are
    rounded to its magnitude (``570,000× (560,000–720,000)``), with thousands separators.
    """
    low, high, value = interval.get("low"), interval.get("high"), interval["value"]
    if low is None or high is None:
        return f"{value:,.2f}{suffix} " + t("(no interval: too few repeats)")
    half = (high - low) / 2
    digits = _decimals_for(half)
    if 0 < abs(value) < 0.1:
        digits = max(digits, min(6, 1 - math.floor(math.log10(abs(value)))))
    elif digits == 0 and half >= 10 and abs(value) >= 10:
        # the interval's magnitude, but never coarser than the value's own: 8.3 in (2.7–25) reads 8, not 10
        step = 10 ** math.floor(math.log10(min(half, abs(value))))
        value, low, high = _to_step(value, step), _to_step(low, step, "down"), _to_step(high, step, "up")
    # the bounds are rounded outward: a printed interval never claims more than was measured
    shown = [_unsigned_zero(_fixed(value, digits)), _unsigned_zero(_fixed(low, digits, "down")),
             _unsigned_zero(_fixed(high, digits, "up"))]
    return _printable(f"{shown[0]}{suffix} ({shown[1]}–{shown[2]})", interval, flag)


def _outward(value: float, digits: int, direction: str) -> float:
    """``value`` rounded down or up to ``digits`` decimals (a hair of float error is not a step)."""
    scale = 10 ** digits
    scaled = value * scale
    rounded = math.floor(scaled + 1e-9) if direction == "down" else math.ceil(scaled - 1e-9)
    return rounded / scale


def _fixed(value: float, digits: int, direction: str | None = None) -> str:
    """``value`` with ``digits`` decimals (``direction``: rounded "down" or "up", as an interval's bound is); a
    positive value that would read 0 gets one significant figure of its own (at most 6 decimals): a ratio's bound
    of 0.4 in ``1× (0.4–3)``, never ``1× (0–3)``."""
    shown = _outward(value, digits, direction) if direction else value
    text = f"{shown:,.{digits}f}"
    if 0 < value and float(text.replace(",", "")) == 0:
        more = max(digits, min(6, -math.floor(math.log10(value))))
        text = f"{_outward(value, more, direction) if direction else value:,.{more}f}"
    return text


def _to_step(value: float, step: float, direction: str | None = None) -> float:
    """``value`` rounded to a multiple of ``step`` (the interval's magnitude; ``direction``: "down" or "up", as a
    bound is rounded), or, for a positive value that would round to 0, to one significant figure of its own: a
    ratio's bound of 3,900 in an interval 20,000 wide reads 3,000, never 0."""
    def to(unit: float) -> float:
        return (math.floor(value / unit + 1e-9) if direction == "down" else math.ceil(value / unit - 1e-9)
                if direction == "up" else round(value / unit)) * unit
    rounded = to(step)
    if (value > 0 and rounded == 0) or (value < 0 and abs(rounded) > 2 * abs(value)):
        rounded = to(10 ** math.floor(math.log10(abs(value))))  # a small bound keeps a figure of its own
    return rounded


def _unsigned_zero(text: str) -> str:
    """``-0`` and ``-0.00`` (a small negative bound, rounded) read as the zero they print."""
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def percent_interval(interval: dict, *, flag: bool = False) -> str:
    """A share with its 95% interval, in percent: ``61% (58–64)`` (``flag``: "not measured reliably here" when the
    interval is too wide, ``unreliable``). A share lies between 0 and 100%, and so does its interval: ``90% (60–100)``,
    never ``90% (60–140)``."""
    bounded = {key: interval.get(key) for key in ("value", "low", "high")}
    if bounded["value"] is not None and 0 <= bounded["value"] <= 1:
        if bounded["low"] is not None:
            bounded["low"] = max(0.0, bounded["low"])
        if bounded["high"] is not None:
            bounded["high"] = min(1.0, bounded["high"])
    text = ratio_interval({key: value * 100 if value is not None else None for key, value in bounded.items()},
                          suffix="%")
    return _printable(text, interval, flag, share=True)


def measured(values: dict, key: str = "ratio", *, percent: bool = False) -> str:
    """A check's measured ``values[key]`` with the 95% interval the check measured (its ``low`` and ``high``), as
    ``ratio_interval`` writes it: ``10× (9.4–10.7)``, or with ``percent`` a share in percent, ``91% (83–93)``.

    When the check states the bound it decided on (``relation`` and ``threshold``, as ``judged`` returns them), the
    bound follows the interval inside its brackets: ``10× (9.4–10.7; checked: more than 3×)``; a claim then says
    exactly what was checked, and its value is printed whatever its width (the bound is the finding, decided by the
    whole interval)."""
    if key not in values:
        raise KeyError(f"the check measured no {key!r}; it measured: {', '.join(values) or 'nothing'}")
    interval = {"value": values[key], "low": values.get("low"), "high": values.get("high")}
    relation, threshold = values.get("relation"), values.get("threshold")
    if relation is None or threshold is None:
        return percent_interval(interval) if percent else ratio_interval(interval)
    if relation not in (">", "<"):
        raise ValueError(f"a bound's relation is '>' or '<', got {relation!r}")
    shown = _clear_of(interval, relation, threshold, percent=percent)
    bound = f"{threshold * 100:,g}%" if percent else f"{threshold:,g}×"
    checked = (t("checked: more than {bound}", bound=bound) if relation == ">"
               else t("checked: less than {bound}", bound=bound))
    if shown.endswith(")"):  # 14× (12–15) → 14× (12–15; checked: more than 3×)
        return shown[:-1] + t("; {checked})", checked=checked)
    return shown + " " + t("({checked})", checked=checked)


CONDITIONS_NOTE = '<div class="pitfalls-conditions"></div>'


def _clear_of(interval: dict, relation: str, threshold: float, *, percent: bool) -> str:
    """``interval`` as ``ratio_interval`` (or ``percent_interval``) prints it, except that a bound the interval
    clears is printed with as many more decimals (at most 3) as it takes to read clear of it too:
    ``7.8× (3.4–18; checked: more than 3×)``, never ``(3–18; …)``, which reads as touching 3."""
    text = percent_interval(interval) if percent else ratio_interval(interval)
    scale = 100 if percent else 1
    low_side = relation == ">"
    edge = interval.get("low" if low_side else "high")
    printed = re.search(r"\((-?[\d.,]+)–(-?[\d.,]+)", text)
    if edge is None or printed is None or not (edge > threshold if low_side else edge < threshold):
        return text
    group = 1 if low_side else 2
    number = printed.group(group)
    decimals = len(number.split(".")[1]) if "." in number else 0
    for more in range(decimals, decimals + 4):
        shown = _fixed(edge * scale, more, "down" if low_side else "up")
        value = float(shown.replace(",", ""))
        if (value > threshold * scale) if low_side else (value < threshold * scale):
            return text[:printed.start(group)] + shown + text[printed.end(group):]
    return text


def noise_warning(noisy: Sequence[tuple]) -> str:
    """The page's one note on measurement conditions, naming each value measured while other programs held the
    machine or its speed drifted (``timing.is_disturbed``). Each entry is ``(name, interval)``, or ``(name,
    interval, True)`` for a share, written in percent as its table writes it.

    On a page, the entries are collected (``context.Build.conditions``) and the first call returns the note's place
    (``CONDITIONS_NOTE``); the plugin writes the note there once the page is done (``conditions_note``), with every
    value the page named. Outside a page the note is returned at once. A value that is only wide gets no note: its
    interval, printed beside it, says so."""
    from .timing import contended, disturbance, is_disturbed

    entries = []
    for name, interval, *share in noisy:
        if not is_disturbed(interval):
            continue
        said = []
        if contended(interval.get("contention")):
            said.append(t("other programs took {share} of the CPU time it needed", share=f"{interval['contention']:.0%}"))
        if interval.get("drifted"):
            said.append(t("the machine's speed drifted"))
        value = (percent_interval if share and share[0] else ratio_interval)(interval)
        entries.append({"name": dunders_as_code(t(name)), "value": value, "said": i18n.joined(said, clauses=True),
                        "contention": interval.get("contention") if contended(interval.get("contention")) else None,
                        "factor": disturbance(interval)})
    if not entries:
        return ""
    build = context.current()
    if build.page is None:
        return conditions_note(entries)
    page = build.conditions.setdefault(build.page, [])
    first = not page
    page.extend(entry for entry in entries if entry["name"] not in {e["name"] for e in page})
    return "\n" + CONDITIONS_NOTE + "\n" if first else ""


def conditions_note(entries: Sequence[dict]) -> str:
    """The note ``noise_warning`` collects, as HTML: how busy the machine was, what that did to the intervals, and
    each value it touched (once, however many tables quote it), in a closed box whose title says what it is."""
    busiest = max((entry["contention"] for entry in entries if entry["contention"] is not None), default=None)
    factor = max(entry["factor"] for entry in entries)
    lead = (t("While the values below were measured, other programs took up to {share} of the CPU time the "
              "measurements needed, or this machine's speed changed.", share=f"{busiest:.0%}") if busiest is not None
            else t("While the values below were measured, this machine's speed changed."))
    lead += (" " if i18n.language() != "zh" else "") + t(
        "Each interval is widened by a rough allowance for what that could have done to its value (up to {factor}×), "
        "and every claim on this page is decided on the widened interval.", factor=f"{factor:.1f}")
    colon, dash = ("：", "——") if i18n.language() == "zh" else (": ", " — ")
    items = "".join(f"<li>{_inline_code(entry['name'])}{colon}{_text(entry['value'])}{dash}"
                    f"{_text(entry['said'])}</li>" for entry in entries)
    # closed, as Material draws a collapsible admonition: one line on the page, its list a tap away
    return (f'<details class="warning pitfalls-conditions"><summary>'
            f'{_text(t("Measured while the machine was busy or unsteady"))}</summary>'
            f"<p>{_text(lead)}</p><ul>{items}</ul></details>")


def _text(text: str) -> str:
    return html.escape(text, quote=False)


def _inline_code(text: str) -> str:
    """Markdown's `code` spans of ``text`` as HTML, everything else escaped."""
    parts = text.split("`")
    return "".join(f"<code>{_text(part)}</code>" if i % 2 else _text(part) for i, part in enumerate(parts))


def deferrable(body: str) -> str:
    """``body`` marked so that a site build can move it into its own file (``provenance.defer``)."""
    key = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f'<div class="pitfalls-code__body" data-key="{key}">\n{body}\n</div><!--/pitfalls-code {key}-->'


DEFERRABLE = re.compile(r'<div class="pitfalls-code__body" data-key="(\w+)">\n(.*?)\n</div><!--/pitfalls-code \1-->',
                        flags=re.S)
