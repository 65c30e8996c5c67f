"""Renderers: figures (size, style, the drawn-figure cache), the SVG made lean, Markdown tables, durations."""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

import pytest

from snippets.lab import context, render
from snippets.lab.cache import Result

SVG_NS = "{http://www.w3.org/2000/svg}"


def _result(value=None, *, timing=False, cached=False, experiment="demo.figure") -> Result:
    return Result(value if value is not None else {"points": [1, 2]}, experiment, {},
                  {"torch": "x", "device": "cpu", "device_name": "CPU (demo)", "cpu": "demo", "threads": 2},
                  "2026-01-02T03:04:05+00:00", 0.1, timing, cached=cached)


# ---- figures ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", sorted(render.SIZES))
def test_figures_have_the_fixed_sizes(size):
    fig, ax = render.new_figure(size)
    assert tuple(fig.get_size_inches()) == render.SIZES[size]


def test_a_new_figure_is_wide_constrained_styled_and_coloured():
    fig, ax = render.new_figure()
    assert tuple(fig.get_size_inches()) == render.SIZES["wide"]
    assert type(fig.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible(), "drawn in the house style"
    assert [line.get_color() for line in (ax.plot([0, 1])[0], ax.plot([1, 0])[0])] == render.COLORS[:2]


def test_a_grid_of_axes_shares_what_it_is_asked_to():
    fig, axes = render.new_figure("tall", nrows=2, ncols=3, sharey=True)
    assert axes.shape == (2, 3) and len(fig.axes) == 6
    assert axes[0, 0].get_shared_y_axes().joined(axes[0, 0], axes[1, 2])
    assert all(ax.plot([0, 1])[0].get_color() == render.COLORS[0] for ax in fig.axes)
    fig, axes = render.new_figure("pair", ncols=2)
    assert axes.shape == (2,)


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("place", ["below", "beside"])
def test_a_legend_is_placed_off_every_panel_and_inside_the_figure(place):
    fig, axes = render.new_figure("pair", ncols=2) if place == "below" else render.new_figure("tall", nrows=2)
    for ax in axes:
        for k in range(4):
            ax.plot([1, 2, 3], [k, k + 1, k], label=f"a fairly long label number {k}")
    if place == "below":
        render.legend_below(fig, axes[0])
        legends = fig.legends
    else:
        for ax in axes:
            render.legend_beside(ax)
        legends = [ax.get_legend() for ax in axes]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # constrained layout places every panel and legend
    renderer = canvas.get_renderer()
    figure_box = fig.bbox
    assert len(legends) == (1 if place == "below" else 2)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert len(legend.get_texts()) == 4, "one entry per line of the one panel named"
        assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in axes), f"legend {place} covers a panel"
        assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 + 1, f"legend {place} runs past the figure's edge"


def test_every_size_fits_a_phone():
    """Each size, drawn so that MIN_FONT reads at READABLE_PX, fits a 390 px phone: the figure runs to the screen's
    edges there, less 6 px of padding each side (assets/extra.css; the browser tests measure the real page)."""
    needed = {size: width * 72 * render.READABLE_PX / render.MIN_FONT for size, (width, _) in render.SIZES.items()}
    assert all(px <= 390 - 2 * 6 for px in needed.values()), needed


def test_unknown_figure_size_lists_the_sizes():
    with pytest.raises(ValueError) as raised:
        render.new_figure("huge")
    assert str(raised.value) == "unknown figure size 'huge'; choose one of ['pair', 'tall', 'wide']"


def _draw(result, alt="demo <figure>"):
    fig, ax = render.new_figure("wide")
    ax.plot([0, 1, 2], [3, 1, 2], marker="o", label="a")
    ax.legend()
    return render.svg(lambda: fig, result, drawn_by=_draw, alt=alt)


def _draw_other(result, alt="demo <figure>"):
    fig, ax = render.new_figure("wide")
    ax.plot([0, 1, 2], [3, 1, 2], marker="o", label="a")
    ax.legend()
    return render.svg(lambda: fig, result, drawn_by=_draw_other, alt=alt)


def test_a_figure_is_byte_identical_across_draws_and_dateless(private_cache):
    first = _draw(_result())
    for stored in _stored(private_cache):  # drawn again, not read back
        stored.unlink()
    second = _draw(_result())
    assert first == second and len(_stored(private_cache)) == 1
    assert "<dc:date>" not in first and "<?xml" not in first and "<!DOCTYPE" not in first
    assert 'data-timing="false"' in first


def _stored(private_cache) -> list:
    return sorted((private_cache.parent / "figures").glob("*.svg"))


def test_a_figure_is_inline_svg_in_a_labelled_figure_element(private_cache):
    text = _draw(_result(timing=True, experiment="steps.curves"))
    assert text.startswith('<figure class="pitfalls-figure" tabindex="0" data-experiment="steps.curves" data-timing="true">\n<svg ')
    assert text.endswith("</svg>\n</figure>\n")
    svg_text = text.split("\n")[1]
    root = ET.fromstring(svg_text)
    assert root.get("role") == "img" and root.get("aria-label") == "demo <figure>"
    assert root.get("width") == "374.4pt" and root.get("height") == "244.8pt"
    [stored] = _stored(private_cache)
    assert len(stored.stem) == 32 and stored.read_text(encoding="utf-8") == text


def test_the_stored_figure_is_keyed_by_what_makes_it(private_cache):
    base = _result(cached=True)
    _draw(base)
    _draw(base)
    assert len(_stored(private_cache)) == 1
    _draw(dataclasses.replace(base, value={"points": [1, 3]}))
    _draw(dataclasses.replace(base, experiment="demo.other"))
    _draw(dataclasses.replace(base, timing=True))
    _draw(base, alt="another description")
    assert len(_stored(private_cache)) == 5


def test_the_stored_figure_is_keyed_by_its_renderer(private_cache):
    base = _result(cached=True)
    _draw(base)
    _draw_other(base)
    assert len(_stored(private_cache)) == 2
    assert _draw(base) == _draw(base) and len(_stored(private_cache)) == 2, "each renderer's figure read back"


def test_the_stored_figure_does_not_depend_on_key_order(private_cache):
    first = _result({"a": 1, "b": [2, 3]}, cached=True)
    _draw(first)
    _draw(dataclasses.replace(first, value={"b": [2, 3], "a": 1}))
    assert len(_stored(private_cache)) == 1


def test_a_cached_result_reads_its_stored_figure(private_cache):
    fresh = _result()
    drawn = _draw(fresh)
    [stored] = _stored(private_cache)
    stored.write_text(drawn.replace("demo", "DEMO"), encoding="utf-8")
    assert _draw(dataclasses.replace(fresh, cached=True)) == drawn.replace("demo", "DEMO")
    # nothing is drawn for it: drawing is most of a warm rebuild's time
    assert render.svg(lambda: pytest.fail("drawn although its figure was stored"), dataclasses.replace(fresh, cached=True),
                      drawn_by=_draw, alt="demo <figure>") == drawn.replace("demo", "DEMO")
    assert _draw(fresh) == drawn, "a fresh result is drawn anew (and stored again)"
    assert stored.read_text(encoding="utf-8") == drawn


# ---- lean SVG --------------------------------------------------------------------------------------------------


def _lean(body: str, *, root_attributes: str = 'width="100pt" height="50pt" viewBox="0 0 100 50"',
          label: str = "a chart") -> ET.Element:
    text = (f'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
            f'xmlns:xlink="http://www.w3.org/1999/xlink" {root_attributes} version="1.1">{body}</svg>')
    out = render.lean_svg(text, label=label)
    assert out.startswith("<svg ") and "<?xml" not in out
    return ET.fromstring(out)


def test_lean_svg_keeps_size_and_label_and_drops_the_rest_of_the_root():
    root = _lean("<path d='M 0 0 L 1 1'/>", label='a "quoted" <label>')
    assert root.get("aria-label") == 'a "quoted" <label>' and root.get("role") == "img"
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == ("100pt", "50pt", "0 0 100 50")
    assert root.get("version") is None


def test_lean_svg_drops_metadata_and_moves_the_global_style_rule_onto_the_root():
    root = _lean("<metadata><title>x</title></metadata><defs><style type='text/css'>*{stroke-linejoin: round; "
                 "stroke-linecap: butt}</style></defs><path d='M 0 0 L 1 1'/>")
    assert not list(root.iter(SVG_NS + "metadata")) and not list(root.iter(SVG_NS + "style"))
    assert root.get("stroke-linejoin") == "round" and root.get("stroke-linecap") == "butt"
    assert not list(root.iter(SVG_NS + "defs")), "a defs left empty goes too"


def test_lean_svg_keeps_a_style_rule_that_is_not_for_every_element():
    root = _lean("<style>path{fill: red}</style><path d='M 0 0'/>")
    assert [el.text for el in root.iter(SVG_NS + "style")] == ["path{fill: red}"]


def test_lean_svg_drops_unreferenced_ids_and_keeps_referenced_ones():
    root = _lean("<defs><clipPath id='clip1'><rect x='0' y='0' width='5' height='5'/></clipPath>"
                 "<path id='unused' d='M 0 0'/></defs>"
                 "<g id='figure_1' style='fill: none'><path clip-path='url(#clip1)' d='M 0 0 L 2 2'/></g>")
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    assert ids == {"clip1"}


def test_lean_svg_hoists_the_children_of_bare_groups():
    root = _lean("<g id='a'><g><path d='M 0 0'/><path d='M 1 1'/></g></g><g style='x: y'><path d='M 2 2'/></g>")
    assert [el.tag.removeprefix(SVG_NS) for el in root] == ["path", "path", "g"]


def test_lean_svg_merges_a_run_of_markers_into_one_path():
    marker = "<defs><path id='m' d='M 0 -1 L 1 0 L 0 1 z' style='stroke: #000'/></defs>"
    uses = "".join(f"<use xlink:href='#m' x='{x}' y='{y}' style='fill: #0072B2'/>" for x, y in
                   [(10, 20), (30.456, 40.001), (50, 60)])
    root = _lean(marker + f"<g style='a: b'>{uses}</g>")
    assert not list(root.iter(SVG_NS + "use"))
    [merged] = [el for el in root.iter(SVG_NS + "path")]
    assert merged.get("d") == "M10 19L11 20L10 21zM30.46 39L31.46 40L30.46 41zM50 59L51 60L50 61z"
    assert merged.get("style") == "fill: #0072B2; stroke: #000"


def test_lean_svg_rounds_coordinates_to_hundredths():
    root = _lean("<rect x='1.23456' y='-0.001' width='10.005' height='3'/><path d='M 0.12345 1.9999 L 2 3'/>")
    rect = next(root.iter(SVG_NS + "rect"))
    assert (rect.get("x"), rect.get("y"), rect.get("height")) == ("1.23", "0", "3")
    assert next(root.iter(SVG_NS + "path")).get("d") == "M0.12 2L2 3"


def test_lean_svg_keeps_text():
    root = _lean("<text x='1' y='2'>loss &lt; 1</text>")
    assert next(root.iter(SVG_NS + "text")).text == "loss < 1"


def test_lean_svg_refuses_what_is_not_svg():
    with pytest.raises(ValueError) as raised:
        render.lean_svg("<html><body/></html>", label="x")
    assert str(raised.value) == "not an SVG document: <html>"


def test_a_real_figures_markers_are_merged(private_cache):
    text = _draw(_result())
    root = ET.fromstring(text.split("\n")[1])
    assert len(list(root.iter(SVG_NS + "use"))) < 3, "the line's three markers became one path"
    assert "a" in [el.text for el in root.iter(SVG_NS + "text")], "the legend's label"


# ---- tables and numbers ----------------------------------------------------------------------------------------


def test_table_alignment_and_cells():
    assert render.table(["a", "b", "c"], [["x|y", "line\nbreak", 3]], align="lcr") == (
        "| a | b | c |\n| :--- | :---: | ---: |\n| x\\|y | line break | 3 |\n")
    assert render.table(["only"], []) == "| only |\n| :--- |\n"


def test_a_table_aligns_its_first_column_left_and_the_rest_right_and_escapes_pipes():
    assert render.table(["a", "b"], [[1, "x|y"]]) == "| a | b |\n| :--- | ---: |\n| 1 | x\\|y |\n"


def test_table_shape_errors_name_the_counts():
    with pytest.raises(ValueError) as raised:
        render.table(["a", "b"], [], align="l")
    assert str(raised.value) == "align has 1 letters for 2 columns"
    with pytest.raises(ValueError) as raised:
        render.table(["a", "b"], [[1, 2], [1, 2, 3]])
    assert str(raised.value) == "row [1, 2, 3] has 3 cells for 2 columns"


@pytest.mark.parametrize("value, text", [
    (2.5, "2.5 s"), (1.0, "1 s"), (1234.5, "1.23e+03 s"), (0.999, "999 ms"), (1e-3, "1 ms"), (0.0123, "12.3 ms"),
    (1e-6, "1 µs"), (4.5e-6, "4.5 µs"), (3e-9, "3 ns"), (1e-12, "0.001 ns"), (0.0, "0 ns"), (-0.002, "-2 ms"),
    (None, "n/a"), (math.nan, "n/a"),
])
def test_seconds(value, text):
    assert render.seconds(value) == text


def test_stamp_line_is_escaped():
    result = dataclasses.replace(_result(), fingerprint={**_result().fingerprint, "device_name": "CPU <x> & y"})
    assert render.stamp_line(result) == ('<p class="pitfalls-stamp">Measured with torch x · CPU &lt;x&gt; &amp; y · '
                                         '2 threads · 2026-01-02</p>\n')


# ---- lean SVG: which markers merge -----------------------------------------------------------------------------

MARKER = "<defs><path id='m' d='M 0 -1 L 1 0 z' style='stroke: #000'/></defs>"


def _uses(*attributes: str) -> str:
    return "".join(f"<use {a}/>" for a in attributes)


def test_uses_without_coordinates_are_at_the_origin():
    root = _lean(MARKER + "<g style='a: b'>" + _uses("xlink:href='#m'", "xlink:href='#m' x='2'", "xlink:href='#m' y='3'")
                 + "</g>")
    [path] = root.iter(SVG_NS + "path")
    assert path.get("d") == "M0 -1L1 0zM2 -1L3 0zM0 2L1 3z"


def test_svg2_href_markers_merge_too():
    root = _lean(MARKER + "<g style='a: b'>" + _uses("href='#m' x='1' y='1'", "href='#m' x='2' y='2'") + "</g>")
    assert not list(root.iter(SVG_NS + "use")) and len(list(root.iter(SVG_NS + "path"))) == 1


@pytest.mark.parametrize("uses", [
    _uses("xlink:href='#m' x='1' transform='scale(2)'", "xlink:href='#m' x='2' transform='scale(2)'"),
    _uses("xlink:href='#m' x='1' style='fill: red'", "xlink:href='#m' x='2' style='fill: blue'"),
    _uses("xlink:href='#nothing' x='1'", "xlink:href='#nothing' x='2'"),
], ids=["extra-attribute", "two-styles", "unknown-marker"])
def test_uses_that_differ_or_carry_more_are_left_alone(uses):
    root = _lean(MARKER + f"<g style='a: b'>{uses}</g>")
    assert len(list(root.iter(SVG_NS + "use"))) == 2


def _lean_text(body: str) -> str:
    return render.lean_svg('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
                           f"{body}</svg>", label="x")


def test_the_xlink_namespace_is_declared_only_while_an_xlink_reference_is_left():
    kept = _lean_text(MARKER + "<use xlink:href='#m' x='1' transform='t'/>")
    assert ' xmlns:xlink="http://www.w3.org/1999/xlink"' in kept
    merged = _lean_text(MARKER + "<g style='a: b'>" + _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'") + "</g>")
    assert "xmlns:xlink" not in merged and "<use" not in merged


@pytest.mark.parametrize("marker", [
    "<defs><path id='m' d='m 0 -1 l 1 0 z'/></defs>",  # relative commands cannot simply be moved
    "<defs><path id='m' d='M 0 0 A 1 1 0 0 1 2 2'/></defs>",  # nor arcs
    "<defs><path id='m' d='M 0 0 L 1 1' transform='rotate(45)'/></defs>",
    "<defs><rect id='m' x='0' y='0' width='1' height='1'/></defs>",
])
def test_markers_that_cannot_be_moved_by_coordinates_are_left_alone(marker):
    root = _lean(marker + "<g style='a: b'>" + _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'") + "</g>")
    assert len(list(root.iter(SVG_NS + "use"))) == 2


def test_a_run_is_broken_by_anything_else():
    uses = _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'")
    root = _lean(MARKER + f"<g style='a: b'>{uses}<path d='M 5 5'/>{uses}<use xlink:href='#m' x='9'/></g>")
    assert [el.tag.removeprefix(SVG_NS) for el in next(iter(root.iter(SVG_NS + "g")))] == ["path", "path", "path"]


def test_the_markers_own_style_wins_over_the_uses():
    root = _lean("<defs><path id='m' d='M 0 0 L 1 1' style='fill: #111; stroke: #222'/></defs><g style='a: b'>"
                 + _uses("xlink:href='#m' style='fill: #999; opacity: 0.5'", "xlink:href='#m' style='fill: #999; "
                         "opacity: 0.5'") + "</g>")
    [path] = root.iter(SVG_NS + "path")
    assert path.get("style") == "fill: #111; opacity: 0.5; stroke: #222"


def test_tick_marks_of_an_axis_become_one_path_drawn_last_in_the_axis():
    tick = "<g id='xtick_{i}'><g id='line2d_{i}'><use xlink:href='#m' x='{x}' y='10' style='stroke: #000'/></g>" \
           "<g id='text_{i}'><text x='{x}' y='20'>{i}</text></g></g>"
    axis = "<g id='matplotlib.axis_1'>" + "".join(tick.format(i=i, x=10 * i) for i in range(3)) + "</g>"
    root = _lean(MARKER + "<g id='axes_1' style='a: b'>" + axis + "</g>")
    assert not list(root.iter(SVG_NS + "use"))
    group = next(iter(root.iter(SVG_NS + "g")))
    assert [el.tag.removeprefix(SVG_NS) for el in group][-1] == "path", "the marks are drawn after the labels"
    assert [el.text for el in group.iter(SVG_NS + "text")] == ["0", "1", "2"]
    assert group[-1].get("d") == "M0 9L1 10zM10 9L11 10zM20 9L21 10z"


def test_ids_referenced_by_href_are_kept_and_others_are_not():
    root = _lean("<defs><path id='kept' d='M 0 0 L 1 1'/><path id='dropped' d='M 0 0'/></defs>"
                 "<g style='a: b'><use xlink:href='#kept' transform='x'/><a href='https://example.org/dropped'>"
                 "<text>t</text></a></g>")
    assert {el.get("id") for el in root.iter() if el.get("id")} == {"kept"}


# ---- ratios with their intervals -------------------------------------------------------------------------------


@pytest.mark.parametrize("half_width, decimals", [
    (None, 2), (0, 2), (-1.0, 2), (math.inf, 2), (0.004, 2), (0.0099, 2), (0.01, 2), (0.05, 2), (0.099, 2),
    (0.1, 1), (0.5, 1), (0.99, 1), (1.0, 0), (5, 0), (500, 0),
])
def test_decimals_follow_the_intervals_half_width(half_width, decimals):
    assert render._decimals_for(half_width) == decimals


@pytest.mark.parametrize("interval, text", [
    ({"value": 7.73, "low": 7.4, "high": 8.1}, "7.7× (7.4–8.1)"),
    ({"value": 7.73, "low": 7.72, "high": 7.74}, "7.73× (7.72–7.74)"),
    ({"value": 7.731, "low": None, "high": 8.1}, "7.73× (no interval: too few repeats)"),
    ({"value": 1234.5, "low": 1200.0, "high": None}, "1,234.50× (no interval: too few repeats)"),
    ({"value": 12.3, "low": 11.0, "high": 14.0}, "12× (11–14)"),
    ({"value": 1234.0, "low": 1200.0, "high": 1300.0}, "1,230× (1,200–1,300)"),
    ({"value": 573210.0, "low": 560000.0, "high": 720000.0}, "570,000× (560,000–720,000)"),
    ({"value": 0.0123, "low": 0.011, "high": 0.0135}, "0.012× (0.011–0.014)"),
    ({"value": 0.05, "low": 0.049, "high": 0.051}, "0.050× (0.049–0.051)"),
    ({"value": 0.0004, "low": 0.0003, "high": 0.0005}, "0.00040× (0.00030–0.00050)"),
    ({"value": -0.05, "low": -0.06, "high": -0.04}, "-0.050× (-0.060–-0.040)"),
    ({"value": 0.0, "low": -0.1, "high": 0.1}, "0.0× (-0.1–0.1)"),
    ({"value": 4.0, "low": 0.5, "high": 30.0}, "4× (0.5–30)"),  # 0.5 rounds to an even 0: never printed as 0
])
def test_a_ratio_is_printed_at_the_precision_its_interval_supports(interval, text):
    assert render.ratio_interval(interval, flag=False) == text
    assert render.ratio_interval(interval, suffix="", flag=False) == text.replace("×", "")


def test_a_number_is_printed_with_its_interval_and_no_word_beside_it():
    assert render.ratio_interval({"value": 7.7, "low": 7.4, "high": 8.1}) == "7.7× (7.4–8.1)"
    assert render.ratio_interval({"value": 10.0, "low": 6.0, "high": 14.0}) == "10× (6–14)", "wide: its range says so"
    busy = {"value": 3.0, "low": 2.97, "high": 3.03, "contention": 0.4}
    assert render.ratio_interval(busy) == "3.00× (2.97–3.03)", "busy: said once, in the page's note"
    assert render.ratio_interval({"value": 3.0, "low": None, "high": None}) == "3.00× (no interval: too few repeats)"
    assert render.percent_interval({"value": 0.009, "low": 0.008, "high": 0.013}) == "0.9% (0.8–1.3)"
    assert render.measured({"ratio": 10.0, "low": 6.0, "high": 14.0}) == "10× (6–14)"


@pytest.mark.parametrize("interval, share, unreliable", [
    ({"value": 3900.0, "low": 400.0, "high": 20_000.0}, False, True),  # 50× wide: "0× (0–20,000)" before
    ({"value": 10.0, "low": 3.0, "high": 20.0}, False, False),  # 6.7× wide: a range a reader can use
    ({"value": 10.0, "low": 1.0, "high": 10.01}, False, True),  # just past 10×
    ({"value": 10.0, "low": 1.0, "high": 10.0}, False, False),  # exactly 10×: printed
    ({"value": 1.0, "low": -0.5, "high": 3.0}, False, True),  # a ratio's interval through 0 says nothing
    ({"value": 0.1, "low": 0.01, "high": 0.52}, True, True),  # a share across more than half the scale
    ({"value": 0.1, "low": 0.02, "high": 0.5}, True, False),
    ({"value": 3.0, "low": None, "high": None}, False, False),  # no interval: said as such
])
def test_a_cell_too_uncertain_to_print_says_so_instead_of_a_number(interval, share, unreliable):
    assert render.unreliable(interval, share=share) is unreliable
    shown = render.percent_interval(interval, flag=True) if share else render.ratio_interval(interval, flag=True)
    assert (shown == "not measured reliably here") is unreliable, "a table's cell"
    in_a_sentence = render.percent_interval(interval) if share else render.ratio_interval(interval)
    assert in_a_sentence != "not measured reliably here", "a sentence keeps its number, and reads on"


def test_no_noise_no_warning():
    assert render.noise_warning([]) == ""


def test_outside_a_page_the_note_names_each_busy_value_once():
    text = render.noise_warning([("DataLoader / direct", {"value": 7.73, "low": 5.0, "high": 11.0}),
                                 ("share", {"value": 2.0, "low": None, "high": None}),
                                 ("busy `__getitem__`", {"value": 3.0, "low": 2.0, "high": 4.0, "contention": 0.456}),
                                 ("drifted", {"value": 3.0, "low": 2.0, "high": 4.0, "drifted": True}),
                                 ("quiet", {"value": 3.0, "low": 2.0, "high": 4.0, "contention": 0.1})])
    assert text.startswith('<details class="warning pitfalls-conditions"><summary>'
                           "Measured while the machine was busy or unsteady</summary>") and text.endswith("</details>")
    assert "other programs took up to 46% of the CPU time the measurements needed" in text
    assert "(up to 1.8×)" in text, "1 / (1 − 0.456) = 1.84: the largest widening of the values it names"
    assert "<li>busy <code>__getitem__</code>: 3× (2–4) — other programs took 46% of the CPU time it needed</li>" in text
    assert "<li>drifted: 3× (2–4) — the machine's speed drifted</li>" in text
    assert "DataLoader / direct" not in text and "quiet" not in text and "share" not in text, "only busy values"
    assert render.noise_warning([("wide", {"value": 7.73, "low": 5.0, "high": 11.0})]) == ""


def test_on_a_page_the_first_table_holds_the_one_note_for_every_busy_value():
    busy = {"value": 3.0, "low": 2.0, "high": 4.0, "contention": 0.3}
    with context.using(context.Build(page="loader-overhead.md")) as build:
        first = render.noise_warning([("a ÷ b", busy)])
        second = render.noise_warning([("c ÷ d", busy), ("a ÷ b", busy)])
        none = render.noise_warning([("quiet", {"value": 3.0, "low": 2.0, "high": 4.0})])
    assert first.strip() == render.CONDITIONS_NOTE and second == "" and none == ""
    assert [entry["name"] for entry in build.conditions["loader-overhead.md"]] == ["a ÷ b", "c ÷ d"]


def test_attribute_values_keep_apostrophes_and_escape_double_quotes():
    text = render.lean_svg('<svg xmlns="http://www.w3.org/2000/svg"><text x="1">a</text></svg>',
                           label="it's \"quoted\" & <b>")
    assert 'aria-label="it\'s &quot;quoted&quot; &amp; &lt;b&gt;"' in text


def test_style_declarations_keep_colons_in_values():
    assert render._style("fill: url(data:x); stroke:#000;; bad") == {"fill": "url(data:x)", "stroke": "#000"}


def test_a_lone_marker_stays_a_use():
    text = _lean_text(MARKER + "<g style='a: b'><use xlink:href='#m' x='1'/><text>t</text></g>")
    assert text.count("<use ") == 1


def test_a_merged_run_takes_the_place_of_its_first_marker():
    root = _lean(MARKER + "<g style='a: b'><rect x='0'/>" + _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'")
                 + "<text>after</text></g>")
    assert [el.tag.removeprefix(SVG_NS) for el in next(iter(root.iter(SVG_NS + "g")))] == ["rect", "path", "text"]


def test_tick_marks_of_two_styles_become_two_paths():
    ticks = "".join(f"<g><use xlink:href='#t' x='{10 * i}' y='0' style='stroke: {'#000' if i % 2 else '#999'}'/></g>"
                    for i in range(4))
    root = _lean("<defs><path id='t' d='M 0 0 L 0 1'/></defs><g id='matplotlib.axis_1'>" + ticks + "</g>")
    assert sorted(el.get("style") for el in root.iter(SVG_NS + "path")) == ["stroke: #000", "stroke: #999"]


def test_a_marker_without_its_own_style_takes_the_uses():
    root = _lean("<defs><path id='m' d='M 0 0 L 1 1'/></defs><g style='a: b'>"
                 + _uses("xlink:href='#m' style='fill: red'", "xlink:href='#m' x='1' style='fill: red'") + "</g>")
    [path] = root.iter(SVG_NS + "path")
    assert path.get("style") == "fill: red"


def test_a_colour_is_not_a_reference():
    root = _lean("<g id='abc' style='fill: #abc'><rect fill='#abc' x='0'/></g><a href='#kept'><text>t</text></a>"
                 "<g id='kept' style='x: y'><rect x='1'/></g>")
    assert {el.get("id") for el in root.iter() if el.get("id")} == {"kept"}


def test_environment_table_header():
    assert render.environment_table().splitlines()[0] == "| setting | value |"


@pytest.mark.parametrize("interval, text", [
    ({"value": 0.1, "low": -0.4, "high": 0.6}, "0.1× (-0.4–0.6)"),
    ({"value": 0.5, "low": 0.0, "high": 1.0}, "0.5× (0.0–1.0)"),
    ({"value": 1e-9, "low": 0.5e-9, "high": 1.5e-9}, "0.000000× (0.000000–0.000001)"),
    ({"value": 1234.0, "low": 1224.0, "high": 1244.0}, "1,230× (1,220–1,250)"),
    ({"value": 1234.0, "low": 1225.0, "high": 1243.0}, "1,234× (1,225–1,243)"),
    # a positive bound or value never reads 0: one significant figure of its own
    ({"value": 1.2, "low": 0.4, "high": 3.1}, "1× (0.4–4)"),
    ({"value": 10.0, "low": 0.3, "high": 110.0}, "10× (0.3–110)"),
    ({"value": 3900.0, "low": 30.0, "high": 21000.0}, "4,000× (30–21,000)"),
    ({"value": 0.3, "low": 0.2, "high": 40.0}, "0.3× (0.2–40)"),
    ({"value": 10.0, "low": -0.3, "high": 110.0}, "10× (-1–110)"),  # a linear share interval past 0 keeps its sign
])
def test_ratio_precision_at_the_boundaries(interval, text):
    assert render.ratio_interval(interval, flag=False) == text


def test_lean_svg_writes_plain_html_svg():
    """The whole output of a small document: tag and attribute names without namespaces (but xlink:href), text and
    tails escaped for HTML (quotes and apostrophes left as they are), empty elements closed, coordinates rounded."""
    source = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
              'xmlns:ex="http://example.org/ns" width="10pt" height="5pt" viewBox="0 0 10 5">'
              '<g id="figure_1"><rect x="0.004" y="1" ex:note="n"/>'
              '<text x="1" y="2">it\'s a &lt; "b"<tspan>c</tspan>tail\'s "d" &amp;</text><g>  </g></g>'
              '<defs><path id="m" d="M 0 0 L 1 1"/></defs><use xlink:href="#m" x="1" transform="t"/></svg>')
    assert render.lean_svg(source, label="L") == (
        '<svg role="img" aria-label="L" width="10pt" height="5pt" viewBox="0 0 10 5" '
        'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
        '<rect x="0" y="1" note="n"/><text x="1" y="2">it\'s a &lt; "b"<tspan>c</tspan>tail\'s "d" &amp;</text>'
        '<defs><path id="m" d="M0 0L1 1"/></defs><use xlink:href="#m" x="1" transform="t"/></svg>')


def test_links_that_share_a_target_are_not_markers():
    root = _lean(MARKER + "<g style='a: b'><a href='#m'><text>1</text></a><a href='#m'><text>2</text></a></g>")
    assert [el.text for el in root.iter(SVG_NS + "text")] == ["1", "2"]


def test_a_marker_that_is_not_a_path_is_left_alone():
    root = _lean("<defs><rect id='m'/></defs><g style='a: b'>" + _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'")
                 + "</g>")
    assert len(list(root.iter(SVG_NS + "use"))) == 2


def test_uses_without_a_style_merge_into_an_unstyled_path():
    root = _lean("<defs><path id='m' d='M 0 0 L 1 1'/></defs><g style='a: b'>"
                 + _uses("xlink:href='#m' x='1'", "xlink:href='#m' x='2'") + "</g>")
    [path] = root.iter(SVG_NS + "path")
    assert path.get("d") == "M1 0L2 1M2 0L3 1" and path.get("style") == ""


def test_a_claim_states_what_was_measured_with_its_interval():
    values = {"ratio": 10.06, "low": 9.4, "high": 10.7, "share": 0.9087, "n": 1000}
    assert render.measured(values) == "10.1× (9.4–10.7)"
    assert render.measured({"share": 0.9087, "low": 0.829, "high": 0.931}, "share", percent=True) == "91% (82–94)"
    assert render.measured({"ratio": 3.0}) == "3.00× (no interval: too few repeats)"
    with pytest.raises(KeyError, match=r"no 'share'; it measured: ratio, low"):
        render.measured({"ratio": 1.0, "low": 0.9}, "share")
    with pytest.raises(KeyError) as error:
        render.measured({}, "share")
    assert error.value.args[0] == "the check measured no 'share'; it measured: nothing"


def test_a_share_is_written_in_percent_with_or_without_an_interval():
    assert render.percent_interval({"value": 0.9087, "low": 0.829, "high": 0.931}) == "91% (82–94)"
    assert render.percent_interval({"value": 0.5, "low": None, "high": None}) == \
        "50.00% (no interval: too few repeats)"


def test_a_noisy_share_is_named_in_percent_and_a_ratio_as_a_ratio():
    busy = {"value": 0.5, "low": 0.3, "high": 0.7, "contention": 0.3}
    text = render.noise_warning([("per-sample share of the epoch", busy, True), ("DataLoader ÷ direct", busy)])
    assert "<li>per-sample share of the epoch: 50% (30–70) — other programs took 30% of the CPU time it needed</li>" in text
    assert "<li>DataLoader ÷ direct: 0.5× (0.3–0.7) — other programs took 30% of the CPU time it needed</li>" in text


def test_a_shares_interval_stays_between_0_and_100_percent():
    assert render.percent_interval({"value": 0.9, "low": 0.6, "high": 1.4}, flag=False) == "90% (60–100)"
    assert render.percent_interval({"value": 0.05, "low": -0.02, "high": 0.1}, flag=False).endswith("(0–10)")
    assert render.percent_interval({"value": 0.61, "low": 0.58, "high": 0.64}, flag=False) == "61% (58–64)"


@pytest.mark.parametrize("values, percent, text", [
    ({"ratio": 7.773, "low": 3.425, "high": 17.64, "relation": ">", "threshold": 3}, False,
     "8× (3.4–18; checked: more than 3×)"),  # 3.425 at the interval's precision reads 3: one more decimal
    ({"ratio": 7.773, "low": 3.025, "high": 17.64, "relation": ">", "threshold": 3}, False,
     "8× (3.02–18; checked: more than 3×)"),
    ({"share": 0.0075, "low": 0.00215, "high": 0.0496, "relation": "<", "threshold": 0.05}, True,
     "1% (0.2–4.96; checked: less than 5%)"),
    ({"ratio": 2.0, "low": 0.9, "high": 4.0, "relation": ">", "threshold": 1}, False,
     "2× (0.9–4; checked: more than 1×)"),  # not cleared: printed as it is (the claim is undecided)
    ({"ratio": 7.8, "low": 3.4, "relation": ">", "threshold": 3}, False,
     "7.80× (no interval: too few repeats; checked: more than 3×)"),  # one bound alone: no interval to print
    ({"ratio": 10, "low": 4.2, "high": 18, "relation": ">", "threshold": 3}, False,
     "10× (4–18; checked: more than 3×)"),  # clear at the interval's own precision: no more decimals
    ({"ratio": 4.6, "low": 4.25, "high": 4.9, "relation": ">", "threshold": 3}, False,
     "4.6× (4.2–4.9; checked: more than 3×)"),  # never fewer decimals than the interval has
    ({"ratio": 7, "low": 3.0001, "high": 18, "relation": ">", "threshold": 3}, False,
     "7× (3–18; checked: more than 3×)"),  # clear only at a fourth decimal: at most three more are printed
    ({"ratio": 2, "low": 1.0, "high": 4.94, "relation": "<", "threshold": 5}, False,
     "2× (1–4.94; checked: less than 5×)"),  # a high bound rounded up: 4.9 would hide that 4.94 is below 5
    ({"share": 0.55, "low": 0.5004, "high": 0.6, "relation": ">", "threshold": 0.5}, True,
     "55% (50.04–60; checked: more than 50%)"),
])
def test_a_bound_the_interval_clears_is_never_printed_onto_it(values, percent, text):
    assert render.measured(values, "share" if percent else "ratio", percent=percent) == text


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (float("inf"), "inf"), (float("nan"), "nan"), (0.001, "0.001"), (1, "1"), (1000, "1,000"),
    (100_000, "100,000"), (999_999, "999,999"), (1e6, "10⁶"), (2e6, "2×10⁶"), (-1e6, "-1×10⁶"), (1e-4, "10⁻⁴"),
    (2.5e-4, "2.5×10⁻⁴"), (1e12, "10¹²"), (-0.002, "-0.002"),
])
def test_a_log_axis_tick_label_is_a_plain_number_or_a_power_of_ten_at_full_size(value, text):
    assert render.plain_number(value) == text
    assert render.plain_number(value, 3) == text, "matplotlib's tick position is ignored"


def test_the_in_short_names_where_the_numbers_were_measured_and_tables_measured_there_carry_no_stamp():
    here, recorded = _result(), dataclasses.replace(_result(), recorded_on="epyc <2core>")
    with context.using(context.Build(page="a.md")) as build:
        assert render.measured_on(here) == "Numbers on this page measured with torch x · CPU (demo) · 2 threads · 2026-01-02."
        assert build.stamps == {"a.md": "torch x · CPU (demo) · 2 threads · 2026-01-02"}
        assert render.stamp_line(here) == "", "the In short said it"
        assert render.stamp_line(recorded).startswith('<p class="pitfalls-stamp pitfalls-stamp--recorded">Recorded on '
                                                      "epyc &lt;2core&gt; with torch x")
    with context.using(context.Build(page="b.md")) as build:
        assert render.measured_on(recorded) == ("Numbers on this page recorded on epyc &lt;2core&gt; with torch x · "
                                                "CPU (demo) · 2 threads · 2026-01-02, until this machine has measured them.")
        assert build.stamps == {"b.md": "epyc <2core>: torch x · CPU (demo) · 2 threads · 2026-01-02"}
        assert render.stamp_line(recorded) == "" and render.stamp_line(here).startswith('<p class="pitfalls-stamp">')
    with context.using(context.Build(language="zh")) as build:
        assert render.measured_on(here) == "本页数字的测量环境：torch x · CPU (demo) · 2 个线程 · 2026-01-02。"
        assert build.stamps == {}, "outside a page, nothing is kept"
        assert render.stamp_line(here) == '<p class="pitfalls-stamp">测量环境：torch x · CPU (demo) · 2 个线程 · 2026-01-02</p>\n'
        assert render.stamp_line(recorded) == ('<p class="pitfalls-stamp pitfalls-stamp--recorded">记录于 epyc &lt;2core&gt;，'
                                               "测量环境：torch x · CPU (demo) · 2 个线程 · 2026-01-02；本机尚未测量</p>\n")
    with context.using(context.Build()):
        assert render.stamp_line(recorded) == ('<p class="pitfalls-stamp pitfalls-stamp--recorded">Recorded on '
                                               "epyc &lt;2core&gt; with torch x · CPU (demo) · 2 threads · 2026-01-02: "
                                               "not measured on this machine yet</p>\n")


@pytest.mark.parametrize(("values", "percent", "text"), [
    ({"ratio": 7.8, "low": 3.04, "high": 18.2, "relation": ">", "threshold": 3}, False,
     "8× (3.04–19; checked: more than 3×)"),
    ({"ratio": 7.8, "low": 3.04, "high": 18.2}, False, "8× (3–19)"),  # no bound: printed as it is
    ({"ratio": 7.8, "low": 3.04, "high": 18.2, "relation": ">"}, False, "8× (3–19)"),
    ({"ratio": 7.8, "low": 3.04, "high": 18.2, "threshold": 3}, False, "8× (3–19)"),
    ({"ratio": 7.8, "low": 2.5, "high": 18.2, "relation": ">", "threshold": 3}, False,
     "8× (2–19; checked: more than 3×)"),  # a bound the interval does not clear: nothing more to print
    ({"ratio": 7.8, "low": 3.000001, "high": 18.2, "relation": ">", "threshold": 3}, False,
     "8× (3–19; checked: more than 3×)"),  # clear of it only past three more decimals: left as it is
    ({"ratio": 1.5, "low": 1.0004, "high": 2.5, "relation": ">", "threshold": 1}, False,
     "1.5× (1.0004–2.5; checked: more than 1×)"),
    ({"ratio": 1234.5, "low": 1000.4, "high": 1500, "relation": ">", "threshold": 1000}, False,
     "1,200× (1,000.4–1,500; checked: more than 1,000×)"),
    ({"ratio": 0.5, "low": 0.2, "high": 0.9996, "relation": "<", "threshold": 1}, False,
     "0.5× (0.2–0.9996; checked: less than 1×)"),
    ({"ratio": 0.5, "low": 0.2, "high": 1.2, "relation": "<", "threshold": 1}, False,
     "0.5× (0.2–1.2; checked: less than 1×)"),
    ({"ratio": 7.8, "low": None, "high": None, "relation": ">", "threshold": 3}, False,
     "7.80× (no interval: too few repeats; checked: more than 3×)"),
    ({"ratio": 0.01, "low": 0.002, "high": 0.0496, "relation": "<", "threshold": 0.05}, True,
     "1% (0.2–4.96; checked: less than 5%)"),
    ({"ratio": 0.5, "low": 0.4, "high": 0.6}, True, "50% (40–60)"),
])
def test_a_measured_value_prints_its_interval_and_the_bound_it_was_checked_against(values, percent, text):
    assert render.measured(values, percent=percent) == text
    as_share = {("share" if key == "ratio" else key): value for key, value in values.items()}
    assert render.measured(as_share, "share", percent=percent) == text


def test_a_measured_value_in_chinese_and_what_it_refuses():
    with context.using(context.Build(language="zh")):
        assert render.measured({"ratio": 7.8, "low": 3.04, "high": 18.2, "relation": ">", "threshold": 3}) == \
            "8× (3.04–19；校验：3× 以上)"
        assert render.measured({"ratio": 7.8, "relation": "<", "threshold": 3}) == "7.80× （无区间：重复次数太少） （校验：3× 以下）"
    with pytest.raises(KeyError, match="the check measured no 'ratio'; it measured: nothing"):
        render.measured({})
    with pytest.raises(KeyError, match="the check measured no 'share'; it measured: ratio, low"):
        render.measured({"ratio": 1, "low": 1}, "share")
    with pytest.raises(ValueError, match=r"^a bound's relation is '>' or '<', got '='$"):
        render.measured({"ratio": 1, "relation": "=", "threshold": 1})


_BUSY = {"name": "DataLoader", "value": "8× (3–20)", "said": "other programs took 40% of the CPU time it needed",
         "contention": 0.4, "factor": 1.5}
_LESS_BUSY = {"name": "loop", "value": "1× (1–1)", "said": "other programs took 25% of the CPU time it needed",
              "contention": 0.25, "factor": 1.2}
_DRIFTED = {"name": "`__getitem__` & <co>", "value": "2× (1–4)", "said": "the machine's speed drifted",
            "contention": None, "factor": 2.26}


def test_the_conditions_note_says_how_busy_the_machine_was_what_that_did_and_each_value_it_touched():
    assert render.conditions_note([_LESS_BUSY, _BUSY, _DRIFTED]) == (
        '<details class="warning pitfalls-conditions"><summary>Measured while the machine was busy or unsteady</summary>'
        "<p>While the values below were measured, other programs took up to 40% of the CPU time the measurements "
        "needed, or this machine's speed changed. Each interval is widened by a rough allowance for what that could "
        "have done to its value (up to 2.3×), and every claim on this page is decided on the widened interval.</p>"
        "<ul><li>loop: 1× (1–1) — other programs took 25% of the CPU time it needed</li>"
        "<li>DataLoader: 8× (3–20) — other programs took 40% of the CPU time it needed</li>"
        "<li><code>__getitem__</code> &amp; &lt;co&gt;: 2× (1–4) — the machine's speed drifted</li></ul></details>")
    assert render.conditions_note([_DRIFTED]) == (
        '<details class="warning pitfalls-conditions"><summary>Measured while the machine was busy or unsteady</summary>'
        "<p>While the values below were measured, this machine's speed changed. Each interval is widened by a rough "
        "allowance for what that could have done to its value (up to 2.3×), and every claim on this page is decided "
        "on the widened interval.</p><ul><li><code>__getitem__</code> &amp; &lt;co&gt;: 2× (1–4) — the machine's "
        "speed drifted</li></ul></details>")
    with context.using(context.Build(language="zh")):
        assert render.conditions_note([_BUSY]) == (
            '<details class="warning pitfalls-conditions"><summary>测量时机器繁忙或速度不稳定</summary>'
            "<p>测量下列数值时，其他程序最多占用了测量所需 CPU 时间的 40%，或者本机的运行速度发生了变化。"
            "每个区间都按这种影响可能造成的偏差粗略放宽（最多 1.5×），本页的每条结论都依据放宽后的区间判定。</p>"
            "<ul><li>DataLoader：8× (3–20)——other programs took 40% of the CPU time it needed</li></ul></details>")
        assert render.conditions_note([_DRIFTED]).startswith(
            '<details class="warning pitfalls-conditions"><summary>测量时机器繁忙或速度不稳定</summary>'
            "<p>测量下列数值时，这台机器的速度发生了变化。每个区间")


@pytest.mark.parametrize(("interval", "share", "wide"), [
    ({"low": None, "high": 2.0}, False, False), ({"low": 1.0, "high": None}, False, False),  # printed as such
    ({"low": 0.0, "high": 2.0}, False, True), ({"low": -1.0, "high": 2.0}, False, True),  # reaches zero
    ({"low": 1.0, "high": 10.0}, False, False), ({"low": 1.0, "high": 10.01}, False, True),  # a span of ten
    ({"low": 0.1, "high": 0.6}, True, False), ({"low": 0.1, "high": 0.61}, True, True),  # fifty points
    ({"low": 0.1, "high": 0.7}, False, False),  # a ratio of 7: readable
])
def test_an_interval_too_wide_to_read_a_value_from(interval, share, wide):
    assert render.unreliable(interval, share=share) is wide
    if not share:
        assert render.unreliable(interval) is wide, "a ratio unless said otherwise"


@pytest.mark.parametrize(("text", "shown"), [("-0", "0"), ("-0.00", "0.00"), ("-0.01", "-0.01"), ("-1,000", "-1,000"),
                                             ("0", "0"), ("-10", "-10"), ("--0", "-0")])
def test_a_negative_zero_reads_as_the_zero_it_prints(text, shown):
    assert render._unsigned_zero(text) == shown


@pytest.mark.parametrize(("value", "step", "direction", "rounded"), [
    (0, 10, None, 0), (0.5, 10, "up", 10), (3900, 10000, "down", 3000), (3900, 10000, None, 4000),
    (-3, 10, "down", -3), (-4, 10, "down", -4), (-5, 10, "down", -10), (-8, 10, "down", -10), (-12, 10, "up", -10),
    (25, 10, "up", 30), (25, 10, "down", 20), (24, 10, None, 20),
])
def test_a_value_rounds_to_the_intervals_magnitude_and_a_small_one_keeps_a_figure_of_its_own(value, step, direction,
                                                                                           rounded):
    assert render._to_step(value, step, direction) == rounded


@pytest.mark.parametrize(("interval", "text"), [
    ({"value": 10, "low": 1, "high": 25}, "10× (1–30)"),  # ten and an interval tens wide: its magnitude
    ({"value": 9.6, "low": 1, "high": 25}, "10× (1–25)"),  # under ten: as its decimals allow
])
def test_a_ratio_at_the_edge_of_rounding_to_its_intervals_magnitude(interval, text):
    assert render.ratio_interval(interval) == text


@pytest.mark.parametrize(("interval", "text"), [
    ({"value": 0.0, "low": -0.05, "high": 0.1}, "0% (0–10)"),  # a share's interval stays within 0–100%
    ({"value": 1.0, "low": 0.9, "high": 1.05}, "100% (90–100)"),
    ({"value": 1.5, "low": 1.4, "high": 1.6}, "150% (140–160)"),  # not a share: as measured
    ({"value": 0.5, "low": None, "high": None}, "50.00% (no interval: too few repeats)"),
])
def test_a_share_in_percent_stays_between_none_and_all(interval, text):
    assert render.percent_interval(interval) == text


def test_no_text_of_a_figure_is_drawn_below_the_minimum_size_ticks_made_at_drawing_time_included():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([1, 10, 100], [3, 1, 2])
        ax.tick_params(labelsize=4)
        ax.set_xscale("log")
        ax.set_title("small", fontsize=5)
        render.legible(fig)
        fig.canvas.draw()  # ticks beyond the first are made here, from the first one's properties
        labels = [label for axis in (ax.xaxis, ax.yaxis) for tick in axis.get_major_ticks()
                  for label in (tick.label1, tick.label2)]
        assert len(labels) > 4 and {label.get_fontsize() for label in labels} == {render.MIN_FONT}
        assert ax.title.get_fontsize() == render.MIN_FONT
        assert ax.xaxis.get_major_formatter()(100, 0) == render.plain_number(100, 0), "log ticks in plain numbers"
    finally:
        plt.close(fig)


def test_a_tables_true_and_false_read_yes_and_no_outside_english(build):
    assert render.table(["a", "b"], [[True, False]]).splitlines()[2:] == ["| True | False |"]
    build.language = "zh"
    assert render.table(["a", "b"], [[True, False], [1, "no"]]).splitlines()[2:] == ["| 是 | 否 |", "| 1 | 否 |"]


def test_a_legend_below_holds_every_line_in_one_column_unless_told_and_one_beside_sits_right_of_the_data():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(layout="constrained")
    try:
        ax.plot([1, 2], label="first")
        ax.plot([2, 1], label="second")
        render.legend_below(fig, ax)
        [below] = fig.legends
        assert [text.get_text() for text in below.get_texts()] == ["first", "second"] and below._ncols == 1
        assert below.legend_handles[1].get_color() == ax.lines[1].get_color(), "each label with its own line"
        render.legend_below(fig, ax, ncol=2)
        assert fig.legends[1]._ncols == 2
        render.legend_beside(ax)
        beside = ax.get_legend()
        assert beside._loc == 6 and not beside.get_frame_on(), "center left, no frame"  # 6: matplotlib's center left
        assert tuple(beside.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).bounds[:2]) == \
            pytest.approx((1.02, 0.5))
    finally:
        plt.close(fig)


def test_a_machines_fingerprint_is_shown_as_it_is_in_every_language(build):
    build.language = "zh"
    assert render.fingerprint_table({"threads": 2, "device_name": "no", "cpu": "x|y"}) == (
        "| 字段 | 值 |\n| :--- | :--- |\n| cpu | x\\|y |\n| device_name | no |\n| 线程数 | 2 |\n"), \
        "a field's name is translated, a value is the machine's own words (no, not 否)"


@pytest.mark.parametrize(("interval", "text"), [
    ({"value": 25.2847, "low": 25.276, "high": 25.2905}, "25.28× (25.27–25.30)"),  # a narrow interval: no step
    ({"value": 12.04, "low": 11.5, "high": 12.61}, "12.0× (11.5–12.7)"),  # the high bound rounded up, never down
])
def test_a_ratio_above_ten_with_a_narrow_interval_keeps_its_decimals_rounded_once(interval, text):
    assert render.ratio_interval(interval) == text
