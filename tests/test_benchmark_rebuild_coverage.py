"""The rebuild-coverage benchmark pairs the values two builds print by what names them, not by position."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import rebuild_coverage as rc  # noqa: E402

TABLE = ("<table><tr><td>DataLoader</td><td>1.20 ms</td><td>{a}× ({a_low}–{a_high})</td></tr>"
         "<tr><td>TensorLoader</td><td>0.10 ms</td><td>{b}× ({b_low}–{b_high})</td></tr></table>")


def test_a_warning_printed_in_one_build_only_shifts_no_pair():
    first = rc.values("<p>The ratio is 8.0× (7.0–9.0) here.</p>"
                      + TABLE.format(a=8.0, a_low=7.0, a_high=9.0, b=1.1, b_low=1.0, b_high=1.2))
    second = rc.values("<p>The ratio is 8.5× (7.5–9.5) here.</p>"
                       "<p>A note only this build prints: 3.0× (2.0–4.0).</p>"
                       + TABLE.format(a=8.2, a_low=7.9, a_high=8.6, b=1.15, b_low=1.1, b_high=1.2))
    pairs, only_first, only_second = rc.pair(first, second)
    assert (only_first, only_second) == (0, 1)
    assert pairs == [((8.0, 7.0, 9.0), (8.5, 7.5, 9.5)), ((8.0, 7.0, 9.0), (8.2, 7.9, 8.6)),
                     ((1.1, 1.0, 1.2), (1.15, 1.1, 1.2))]


def test_a_value_outside_the_other_builds_interval_is_counted_outside():
    pairs = [((8.0, 7.0, 9.0), (8.5, 7.5, 9.5)), ((1.1, 1.0, 1.2), (2.0, 1.9, 2.1))]
    found = rc.coverage(pairs)
    assert (found["pairs"], found["inside"], found["back"], found["overlap"]) == (2, 1, 1, 1)
    assert found["outside"] == [((1.1, 1.0, 1.2), (2.0, 1.9, 2.1))]


def test_the_busy_note_and_same_type_notes_are_left_out():
    html = ('<p>8.0× (7.0–9.0)<span class="pitfalls-same-kind" title="m"> · another machine: '
            '<span>11.8× (11.1–12.3)</span></span></p>'
            '<details class="warning pitfalls-conditions"><summary>Busy</summary>'
            '<ul><li>a: 5.0× (1.0–9.0)</li></ul></details><p>2.0% (1.0–3.0)</p>')
    assert [value for _, value in rc.values(html)] == [(8.0, 7.0, 9.0), (2.0, 1.0, 3.0)]


def test_rows_told_apart_by_their_sizes_pair_row_for_row_when_one_build_lacks_a_row():
    row = "<tr><td>{size} MB</td><td>DataLoader, shuffle=True</td><td>{rate} GB/s</td><td>{v}% ({lo}–{hi})</td></tr>"
    first = rc.values("<h2>Bandwidth</h2><table>" + row.format(size=1, rate=1.40, v=44, lo=38, hi=51)
                      + row.format(size=64, rate=2.29, v=75, lo=69, hi=81) + "</table>")
    second = rc.values("<h2>Bandwidth</h2><table>" + row.format(size=64, rate=2.13, v=74, lo=72, hi=76) + "</table>")
    pairs, only_first, only_second = rc.pair(first, second)
    assert pairs == [((75.0, 69.0, 81.0), (74.0, 72.0, 76.0))] and (only_first, only_second) == (1, 0)


def test_rerender_without_kept_caches_names_the_missing_cache(tmp_path, monkeypatch):
    (tmp_path / "first-cache").mkdir()
    monkeypatch.setattr(sys, "argv", ["rebuild_coverage.py", "--rerender", str(tmp_path)])
    try:
        rc.main()
    except SystemExit as exit_:
        message = str(exit_.code)
    else:
        raise AssertionError("--rerender with no second cache went on")
    assert message.startswith(str(tmp_path / "second-cache")) and f"--keep {tmp_path}" in message


def test_plain_and_checked_values_are_all_read():
    found = rc.values("<p>A 3.0× (2.0–4.0) one, 5.0× (4.5–5.5) two and 10× (9.4–10.7; checked: more "
                      "than 3×) three, 61% (58–64) four.</p>")
    assert [value for _, value in found] == [(3.0, 2.0, 4.0), (5.0, 4.5, 5.5), (10.0, 9.4, 10.7), (61.0, 58.0, 64.0)]
