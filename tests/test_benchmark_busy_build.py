"""The busy-build benchmark reads how long each experiment took from the result cache its build wrote: only what
that build measured, every parameter set of an experiment together."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import busy_build  # noqa: E402


def _entry(cache: Path, name: str, key: str, when: str, seconds: float) -> None:
    folder = cache / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{key}.json").write_text(json.dumps({"experiment": name, "computed_at": when, "elapsed_s": seconds}))


def test_only_what_the_build_measured_counts_and_an_experiments_runs_add_up(tmp_path):
    _entry(tmp_path, "loader.workers", "old", "2026-12-05T07:35:55+00:00", 30.0)  # carried over from before
    _entry(tmp_path, "loader.workers", "new", "2026-12-05T10:00:01+00:00", 12.5)
    _entry(tmp_path, "steps.curves", "a", "2026-12-05T10:00:00+00:00", 50.0)
    _entry(tmp_path, "steps.curves", "b", "2026-12-05T10:03:00+00:00", 7.0)  # another parameter set
    since = datetime(2026, 12, 5, 10, 0, tzinfo=timezone.utc)
    assert busy_build.measured(tmp_path, since) == {"loader.workers": 12.5, "steps.curves": 57.0}
    assert busy_build.measured(tmp_path, datetime(2026, 12, 5, 11, 0, tzinfo=timezone.utc)) == {}


def test_a_printed_zero_or_negative_lower_bound_is_impossible(tmp_path):
    for language in ("", "zh/"):
        for topic in busy_build.TOPICS:
            page = tmp_path / language / topic / "index.html"
            page.parent.mkdir(parents=True)
            page.write_text("<p>3× (2–4) and 61% (58–64)</p>" if topic != "loader-overhead" or language else
                            "<p>a share of 10% (0–30) and <b>0×</b> (0–20,000)</p>", encoding="utf-8")
    found = busy_build.impossible(tmp_path)
    # "(0–30", "0×" and "(0–20,000", on the one page that prints them
    assert len(found) == 3 and all(line.startswith("loader-overhead:") for line in found), found
