"""Torch releases side by side (snippets.lab.versions, machines.releases): synthetic recordings of one machine made
with several torch releases, a claim that holds on some and fails on others, a release that did not record it, a
stale recording."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from snippets.lab import cache, context, machines, say, store, versions
from tests.test_lab_machines import HERE, THERE, _record, lab, ratio_check  # noqa: F401 - fixtures

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _release(torch: str) -> dict:
    return {**HERE, "torch": torch}


def _tip(text: str) -> str:
    return text.split('class="pitfalls-claim__tip"', 1)[1]


def test_release_numbers_sort_as_numbers_not_as_text():
    assert machines.release("2.13.0+cpu") == (2, 13, 0) > machines.release("2.9.1") > machines.release("2.3.1")
    assert machines.short_release("2.15.0+cu132") == "2.15.0" and machines.release("nightly") == ()


def test_a_machine_recorded_with_other_releases_is_one_machine_with_releases(lab, monkeypatch):
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"))
    _record(monkeypatch, lab, "here-torch2.9.1", _release("2.9.1"))
    _record(monkeypatch, lab, "there-torch2.3.1", {**THERE, "torch": "2.3.1"})
    _record(monkeypatch, lab, "there", THERE)  # this build's torch (2.13.0) on the other machine
    _record(monkeypatch, lab, "here", HERE)  # this build's fingerprint: never shown as another release
    assert [rec.label for rec in machines.releases()] == ["here-torch2.3.1", "here-torch2.9.1"]
    # one tab per other machine: of its releases, the one with this build's torch
    assert [rec.label for rec in machines.others()] == ["there"]
    assert machines.hardware(_release("2.3.1")) == machines.hardware(HERE) != machines.hardware(THERE)


def test_a_claims_tip_gives_its_verdict_on_every_release_this_build_among_them(lab, monkeypatch, ratio_check):
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"), n=5)
    _fails("here-torch2.3.1")
    _record(monkeypatch, lab, "here-torch2.9.1", _release("2.9.1"), n=5)
    text = say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert "By torch release on this machine: 2.3.1 ✗ ratio = 2; 2.9.1 ✓; 2.13.0 ✓ (this build)." in _tip(text)
    assert "pitfalls-claim--fails-elsewhere" in text.split("</span>", 1)[0]  # its ✓ says "here"
    assert "Recorded machines" not in _tip(text), "releases of this machine are not other machines"


def test_without_other_releases_a_claims_tip_has_no_release_strip(lab, monkeypatch, ratio_check):
    _record(monkeypatch, lab, "there", THERE, n=5)
    text = say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert "By torch release" not in text and "Recorded machines: holds on there." in _tip(text)


def test_a_claims_tip_names_no_release_when_every_release_agrees(lab, monkeypatch, ratio_check):
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"), n=5)
    _record(monkeypatch, lab, "here-torch2.9.1", _release("2.9.1"), n=5)
    text = say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert "By torch release" not in text, "every release holds, as this build does: the Versions page says so"
    _stale("here-torch2.9.1")  # a release that did not check the claim does not differ: no line for it alone
    store.forget()
    text = say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert "By torch release" not in text, "a release that checked nothing is on the Versions page, not in the tip"


def _edit(label: str, **changes) -> None:
    """Change ``label``'s recording of machpage.speed: its value's fields (``ratio=2``), or its code digest
    (``source=…``: recorded with other code, stale)."""
    entry = next((machines.results_dir() / label / "machpage.speed").iterdir())
    value = json.loads(entry.read_text())
    for key, new in changes.items():
        (value if key == "source" else value["value"])[key] = new
    entry.write_text(json.dumps(value))
    store.forget()


def _stale(label: str) -> None:
    _edit(label, source="0" * 64)


def _fails(label: str) -> None:
    _edit(label, ratio=2.0)


def test_the_matrix_shows_holds_fails_missing_and_stale_and_names_the_first_release_that_changed(
        lab, monkeypatch, ratio_check, build):
    for torch in ("2.3.1", "2.6.0", "2.9.1", "2.12.1"):
        _record(monkeypatch, lab, f"here-torch{torch}", _release(torch), n=5)
    _fails("here-torch2.3.1")
    _fails("here-torch2.6.0")
    _stale("here-torch2.12.1")
    build.page = "loader-overhead.md"
    say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    build.page = "index.md"
    say(ratio_check(cache.run(lab.speed, n=5)), "Again, {ratio:.0f}")  # the same claim: one row, two pages
    # each page named by the title the build's navigation gave it (the plugin records it): the lab knows no page
    build.titles.update({"loader-overhead.md": "DataLoader overhead", "index.md": "Home"})
    html = versions.matrix(build.said)
    assert html.count("<tr>") == 1 and html.count('<tr data-check="') == 1, "a header row and one claim"
    headers = re.findall(r'<th scope="col">(.*?)</th>', html)
    assert headers[1:5] == ["2.3.1", "2.6.0", "2.9.1", "2.12.1"] and headers[5].startswith("2.13.0<br>")
    cells = re.findall(r'<td class="pitfalls-version-matrix__(\w+)" title="([^"]*)">([^<]*)</td>', html)
    assert [(status, shown) for status, _, shown in cells] == [
        ("fails", "✗ ratio = 2"), ("fails", "✗ ratio = 2"), ("holds", "✓"), ("unknown", "—"), ("holds", "✓")]
    assert "older version of this experiment" in cells[3][1], "a stale recording says why in the cell's tip"
    assert "<td>holds from 2.9.1 (fails on 2.6.0)</td>" in html
    assert '<a href="../loader-overhead/">DataLoader overhead</a> <a href="../">Home</a>' in html
    assert "1 of 1 claims change between the recorded releases." in html
    date = {rec.label: rec.manifest["recorded_at"][:10] for rec in machines.recordings()}["here-torch2.12.1"]
    stale = (f"recorded on here-torch2.12.1 with an older version of this experiment (commit c0ffeec0ffee, {date}); "
             "re-record it with make record MACHINE=here-torch2.12.1")
    assert html == (
        "<p>1 of 1 claims change between the recorded releases. ✓ holds, ✗ fails (with what was measured), ? undecided "
        "(the interval, widened where the machine was busy, reaches both sides of its bound), — not checked on that "
        "release (not recorded, or recorded with older code: the cell&#x27;s tip says which).</p>\n"
        '<div class="pitfalls-version-matrix"><table><thead><tr><th scope="col">claim</th><th scope="col">2.3.1</th>'
        '<th scope="col">2.6.0</th><th scope="col">2.9.1</th><th scope="col">2.12.1</th><th scope="col">2.13.0<br>'
        '<span class="pitfalls-version-matrix__here">this build</span></th><th scope="col">changed</th></tr></thead>'
        '<tbody><tr data-check="tests.test_lab_machines.above_three"><th scope="row">ratio &gt; 3<br>'
        '<span class="pitfalls-version-matrix__pages"><a href="../loader-overhead/">DataLoader overhead</a> '
        '<a href="../">Home</a></span></th>'
        '<td class="pitfalls-version-matrix__fails" title="ratio = 2">✗ ratio = 2</td>'
        '<td class="pitfalls-version-matrix__fails" title="ratio = 2">✗ ratio = 2</td>'
        '<td class="pitfalls-version-matrix__holds" title="ratio = 5">✓</td>'
        f'<td class="pitfalls-version-matrix__unknown" title="{stale}">—</td>'
        '<td class="pitfalls-version-matrix__holds" title="ratio = 5">✓</td>'
        "<td>holds from 2.9.1 (fails on 2.6.0)</td></tr></tbody></table></div>")


def test_a_release_that_did_not_record_the_experiment_is_not_checked_there(lab, monkeypatch, ratio_check, build):
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"), n=5)
    _record(monkeypatch, lab, "here-torch2.6.0", _release("2.6.0"), n=7)  # recorded n=7 only, not n=5
    say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    html = versions.matrix(build.said)
    cells = re.findall(r'<td class="pitfalls-version-matrix__(\w+)" title="([^"]*)">([^<]*)</td>', html)
    assert [shown for _, _, shown in cells] == ["✓", "—", "✓"]
    assert cells[1][1] == "not recorded on here-torch2.6.0"
    assert "<td>—</td>" in html and "0 of 1 claims change" in html, "a missing release is not a change"
    _record(monkeypatch, lab, "here-torch2.9.1", _release("2.9.1"), n=5)  # a release recorded after the claim
    cells = re.findall(r'<td class="pitfalls-version-matrix__(\w+)" title="([^"]*)">([^<]*)</td>',
                       versions.matrix(build.said))
    assert cells[2] == ("unknown", "not recorded", "—")
    assert versions.matrix([]) == "<p>No claim was said in this build.</p>"


def test_first_change_names_the_release_before_and_the_first_with_the_new_value():
    assert versions.first_change([("2.3.1", True), ("2.6.0", True), ("2.9.1", False), ("2.13.0", False)]) == (
        "2.6.0", True, "2.9.1", False)
    assert versions.first_change([("2.3.1", 1), ("2.13.0", 1)]) is None
    assert versions.first_change([]) is None


def test_the_facts_table_shows_each_release_a_missing_one_and_the_first_change(lab, monkeypatch):
    for torch in ("2.3.1", "2.9.1", "2.6.0"):
        _record(monkeypatch, lab, f"here-torch{torch}", _release(torch), n=5)
    _fails("here-torch2.3.1")
    _stale("here-torch2.6.0")
    text = versions.facts_table([("ratio above 3", cache.run(lab.speed, n=5), lambda r: r["ratio"] > 3)])
    lines = text.strip().splitlines()
    assert lines[0] == "| measured | 2.3.1 | 2.6.0 | 2.9.1 | 2.13.0 | first release with a new value |"
    assert lines[1] == "| :--- | :---: | :---: | :---: | :---: | :--- |", "the releases centred"
    assert lines[2] == "| ratio above 3 | no | — | yes | yes | 2.9.1 |"
    text = versions.facts_table([("ratio", cache.run(lab.speed, n=5), lambda r: r["ratio"]),
                                 ("a name", cache.run(lab.speed, n=5), lambda r: "fork"),
                                 ("nothing", cache.run(lab.speed, n=5), lambda r: None)])
    assert text.strip().splitlines()[2:] == ["| ratio | 2 | — | 5 | 5 | 2.9.1 |", "| a name | `fork` | — | `fork` | `fork` | — |",
                                             "| nothing | — | — | — | — | — |"], "no change: —"


def test_the_matrix_takes_the_markers_place_on_the_versions_page_only(build):
    page = f"<main><h2>Every claim</h2>{versions.placeholder()}</main>"
    assert versions.MARKER not in versions.filled(page) and "No claim was said in this build." in versions.filled(page)
    assert versions.filled("<main>no marker</main>") == "<main>no marker</main>"


def test_the_releases_table_lists_this_build_and_every_release_oldest_first(lab, monkeypatch):
    _record(monkeypatch, lab, "here-torch2.9.1", _release("2.9.1"))
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"))
    rows = [line for line in versions.table().splitlines()[2:]]
    assert [row.split("|")[1].strip() for row in rows] == ["`2.3.1`", "`2.9.1`", "`2.13.0`"]
    assert "this build" in rows[2] and "`here-torch2.3.1`" in rows[0] and "2 current, 0 stale" in rows[0]


# ---- prose that depends on the version follows the release that measured it ---------------------------------

def _section(page: str, experiment: str) -> str:
    """The part of ``page`` that shows ``experiment``: from its ``run`` to the end of the paragraph that closes its
    last ``{% endif %}``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"{{% set result = run(measure.{experiment}) %}}")
    return text[start:re.compile(r"^\{% endif %\}\n\n", re.M).search(text, start).end()]


def _run_block(page: str, experiment: str, value: dict, monkeypatch) -> str:
    """The section of ``page`` that shows ``experiment``, rendered as the build renders it, from ``value``."""
    import snippets.lab
    from snippets.lab import mkdocs_hook

    fake = cache.Result(value, f"loader.{experiment}", {}, dict(HERE), "2026-12-02T00:00:00+00:00", 0.1, True)
    monkeypatch.setattr(snippets.lab, "run", lambda exp, **params: fake)
    monkeypatch.setattr(snippets.lab, "code_panel", lambda *args, **kwargs: "")
    return " ".join(mkdocs_hook.render_names(_section(page, experiment), page, {"topic": "loader"}).split())


@pytest.mark.parametrize("page", ["loader-overhead.md", "zh/loader-overhead.md"])
def test_the_pin_memory_sentence_follows_the_torch_that_measured_it(page, monkeypatch, build):
    facts = {"device": "cpu", "accelerator": None, "rows": [], "batch_is_pinned": False}
    old = _run_block(page, "pin_memory", {**facts, "torch": "2.3.1", "warnings": []}, monkeypatch)
    said = "'pin_memory' argument is set as true but no accelerator is found"
    new = _run_block(page, "pin_memory", {**facts, "torch": "2.13.0+cpu", "warnings": ["some deprecation", said]},
                     monkeypatch)
    assert "2.3.1" in old and "no accelerator is found" not in old
    assert "some deprecation" not in new, "only pin_memory's own warning is quoted"
    assert ("gave no warning" in old) if page == "loader-overhead.md" else ("没有给出警告" in old)
    assert said in new and "2.13.0" not in new


# ---- the releases the project claims ------------------------------------------------------------------------------

ROOT = DOCS.parent


def _torch_requirement() -> str:
    """pyproject's torch requirement (``>=2.3``), read without tomllib, which Python 3.10 lacks."""
    dependencies = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("\ndependencies = [", 1)[1]
    found = re.search(r'^\s*"torch\s*([<>=!~][^"]*)"', dependencies.split("\n]", 1)[0], re.M)
    assert found, "no torch requirement in pyproject's dependencies"
    return found.group(1)


def test_a_fresh_install_takes_the_newest_torch_and_the_oldest_recorded_release_is_the_lower_bound():
    """Without TORCH_SPEC, `make setup` installs pyproject's requirement, unbounded above: the newest release.
    Its lower bound is a release this repository recorded (it builds every page there)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    default = re.search(r"^TORCH_SPEC \?= (.+)$", makefile, re.M).group(1).strip()
    wanted = SpecifierSet(_torch_requirement())
    assert SpecifierSet(default.removeprefix("torch")) == wanted
    assert all(spec.operator in (">=", ">") for spec in wanted), f"no upper bound: {wanted}"
    recorded = sorted(Version(machines.short_release(json.loads(path.read_text())["fingerprint"]["torch"]))
                      for path in (ROOT / "results").glob("*/manifest.json"))
    assert recorded and all(version in wanted for version in recorded)
    lower = Version(next(iter(wanted)).version)
    assert (recorded[0].major, recorded[0].minor) == (lower.major, lower.minor), (
        f"the oldest recorded release ({recorded[0]}) is not the project's lower bound ({lower})")


def test_the_cublas_sentence_names_the_first_recorded_release_without_the_requirement(
        tmp_path, monkeypatch, private_cache, capsys, build):
    """The seeding page's cuBLAS paragraph says, from the recordings, which recorded release is the last to ask for
    CUBLAS_WORKSPACE_CONFIG and which the first that does not."""
    from snippets.experiments.seeding import measure as seeding
    from tests.test_lab_machines import CLEAN, _as_machine

    monkeypatch.setenv("PITFALLS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("FROZEN", raising=False)
    monkeypatch.setattr(machines, "tree_state", lambda: CLEAN)

    def record(torch: str, documented: bool) -> None:
        _as_machine(monkeypatch, _release(torch))
        monkeypatch.setattr(seeding, "_cublas_config_documented", lambda: documented)

        def run_pages(staging, env):
            monkeypatch.setenv("PITFALLS_RECORD", env["PITFALLS_RECORD"])
            with context.using():
                cache.run(seeding.cublas_workspace_config)
            monkeypatch.delenv("PITFALLS_RECORD")

        machines.record(f"here-torch{torch}", build=run_pages)
        store.forget()

    record("2.3.1", True)
    record("2.9.1", True)
    record("2.12.1", False)
    _as_machine(monkeypatch, HERE)
    monkeypatch.setattr(seeding, "_cublas_config_documented", lambda: False)
    import snippets.lab
    from snippets.lab import mkdocs_hook

    monkeypatch.setattr(snippets.lab, "code_panel", lambda *args, **kwargs: "")
    for page, expected in (("seeding-order.md", "2.9.1 is the last that asks for it and 2.12.1 the first that does not"),
                           ("zh/seeding-order.md", "2.9.1 是最后一个要求设置它的版本，2.12.1 是第一个不再要求的版本")):
        build.language = "zh" if page.startswith("zh/") else "en"
        # the page's cuBLAS section, from its experiment to its code panel, rendered as the build renders it
        shown = " ".join(mkdocs_hook.render_names(_section(page, "cublas_workspace_config"), page,
                                                  {"topic": "seeding"}).split())
        assert expected in shown, shown


def test_a_page_the_lab_never_heard_of_is_named_by_its_title_in_the_builds_language(lab, ratio_check, build):
    """A fourth topic needs nothing in the lab: the matrix links each claim to its page under the title that
    page had in this build (its navigation's, in its language), its file name when it had none."""
    build.page = "zh/a-fourth-topic.md"
    say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert '<a href="../a-fourth-topic/">a-fourth-topic</a>' in versions.matrix(build.said)
    build.titles["zh/a-fourth-topic.md"] = "第四个主题"
    assert '<a href="../a-fourth-topic/">第四个主题</a>' in versions.matrix(build.said)


def test_the_results_under_a_facts_table_are_each_shown_once_in_the_order_the_facts_name_them(lab):
    first, second = cache.run(lab.speed, n=3), cache.run(lab.facts, n=3)
    twin = dataclasses.replace(first)  # equal to the first, and another result all the same
    assert twin == first and twin is not first
    facts = [("a", second, str), ("b", first, str), ("c", second, repr), ("d", twin, str)]
    shown = versions.results_of(facts)
    assert [id(result) for result in shown] == [id(second), id(first), id(twin)]
    assert versions.results_of([]) == []


def test_the_releases_table_in_full(lab, monkeypatch):
    """Each column of the releases table: torch, Python, start method, recording, date, commit, results usable."""
    here = {**HERE, "python": "3.11.9", "start_method": "fork"}
    monkeypatch.setattr(machines, "_lead_fingerprint", lambda: here)
    _record(monkeypatch, lab, "here-torch2.9.1", {**here, "torch": "2.9.1+cpu", "python": "3.12.1",
                                                  "start_method": "spawn"})
    _record(monkeypatch, lab, "here-torch2.3.1", {**here, "torch": "2.3.1"}, n=5)
    digest = cache.source_digest
    monkeypatch.setattr(cache, "source_digest", lambda func: "edited" if func is lab.facts.func else digest(func))
    date = {rec.label: rec.manifest["recorded_at"][:10] for rec in machines.releases()}
    commit = machines.releases()[0].commit[:12]
    assert versions.table() == (
        "| torch | Python | start method | recording | recorded | commit | experiments |\n"
        "| :--- | :--- | :--- | :--- | :--- | :--- | :--- |\n"
        f"| `2.3.1` | 3.11.9 | fork | `here-torch2.3.1` | {date['here-torch2.3.1']} | `{commit}` | 1 current, 1 stale |\n"
        f"| `2.9.1` | 3.12.1 | spawn | `here-torch2.9.1` | {date['here-torch2.9.1']} | `{commit}` | 1 current, 1 stale |\n"
        "| `2.13.0` | 3.11.9 | fork | this build |  |  |  |\n")


def test_a_claims_verdict_changes_are_read_in_release_order_skipping_releases_that_decided_nothing(monkeypatch):
    from types import SimpleNamespace

    from snippets.lab.claims import Check

    monkeypatch.setattr(machines, "_lead_fingerprint", lambda: {"torch": "2.13.0+cpu"})

    def rec(torch):
        return SimpleNamespace(fingerprint={"torch": torch}, label=f"box-{torch}")

    def verdict(holds):
        return Check("t.c", "c", holds)

    row = {"here": verdict(False), "releases": [
        (rec("2.9.1+cpu"), verdict(True)), (rec("2.3.1"), verdict(True)), (rec("2.10.0"), verdict(None)),
        (rec("2.11.0"), "not recorded on box"), (rec("2.12.0"), verdict(False)), (rec("2.6.0"), verdict(False))]}
    assert versions.changes(row) == [("2.3.1", "holds", "2.6.0", "fails"), ("2.6.0", "fails", "2.9.1", "holds"),
                                     ("2.9.1", "holds", "2.12.0", "fails")], \
        "2.10 (undecided) and 2.11 (not recorded) decide nothing; 2.13.0, this build's, fails as 2.12.0 did"
    assert versions.changes({"here": verdict(True), "releases": []}) == []
    assert versions.changes({"here": verdict(True), "releases": [(rec("2.3.1"), verdict(False))]}) == [
        ("2.3.1", "fails", "2.13.0", "holds")]
    assert versions.changes({"here": verdict(True), "releases": [(rec(""), verdict(False))]}) == [
        ("", "fails", "2.13.0", "holds")], "a release without a number sorts first"
    two = [(rec("2.6.0"), verdict(True)), (rec("2.6.0+cpu"), verdict(False))]  # one release, two Pythons
    assert versions.changes({"here": verdict(True), "releases": two}) == [
        ("2.6.0", "holds", "2.6.0", "fails"), ("2.6.0", "fails", "2.13.0", "holds")], "as the page lists them"


def test_two_releases_of_one_torch_are_named_and_ordered_by_their_python(lab, monkeypatch):
    monkeypatch.setattr(machines, "_lead_fingerprint", lambda: {**HERE, "python": "3.11.9"})
    _record(monkeypatch, lab, "here-py313", {**HERE, "torch": "2.15.0+cpu", "python": "3.13.0"})
    _record(monkeypatch, lab, "here-py312", {**HERE, "torch": "2.15.0", "python": "3.12.1"})
    _record(monkeypatch, lab, "here-old", {**HERE, "torch": "2.3.1"})  # no Python named: none needed
    assert versions.names() == {"here-py312": "2.15.0 · Python 3.12.1", "here-py313": "2.15.0 · Python 3.13.0",
                                "here-old": "2.3.1", None: "2.13.0"}
    assert sorted(versions.names(), key=versions._order) == ["here-old", None, "here-py312", "here-py313"]
    assert versions._order(None) == ((2, 13, 0), "3.11.9") and versions._order("here-old") == ((2, 3, 1), "")
    assert machines.this_release() == "2.13.0"
    _record(monkeypatch, lab, "here-again", {**HERE, "torch": "2.3.1"})
    assert versions.names()["here-again"] == "2.3.1 · Python ?", "two of one torch, one without its Python"


def test_a_release_recorded_without_its_python_or_start_method_shows_those_cells_empty(lab, monkeypatch):
    monkeypatch.setattr(machines, "_lead_fingerprint", lambda: dict(HERE))  # neither field here either
    _record(monkeypatch, lab, "here-torch2.6.0", {**HERE, "torch": "2.6.0"})
    rows = versions.table().splitlines()[2:]
    assert rows[0].startswith("| `2.6.0` |  |  | `here-torch2.6.0` |") and rows[0].endswith("| 2 current, 0 stale |")
    assert rows[1] == "| `2.13.0` |  |  | this build |  |  |  |"


def test_the_matrix_counts_each_claim_that_changes_and_lists_every_change_of_one(lab, monkeypatch, build):
    from snippets.lab import check

    @check("ratio > 3")
    def above_three(result):
        return result["ratio"] > 3, {"ratio": result["ratio"]}

    @check("ratio < 9")
    def below_nine(result):
        return result["ratio"] < 9, {"ratio": result["ratio"]}

    for torch in ("2.3.1", "2.6.0", "2.9.1"):
        _record(monkeypatch, lab, f"here-torch{torch}", _release(torch), n=5)
    _fails("here-torch2.6.0")  # holds on 2.3.1, fails on 2.6.0, holds again from 2.9.1
    build.page = "index.md"
    say(above_three(cache.run(lab.speed, n=5)), "Above three: {ratio:.0f}")
    say(below_nine(cache.run(lab.speed, n=5)), "Below nine: {ratio:.0f}")
    html = versions.matrix(build.said)
    assert html.startswith("<p>1 of 2 claims change between the recorded releases.")
    assert "<td>fails from 2.6.0 (holds on 2.3.1); holds from 2.9.1 (fails on 2.6.0)</td></tr><tr " in html
    assert html.count("<td>—</td>") == 1, "the claim that never changes"
    context.current().language = "zh"
    assert "；" in versions.matrix(build.said).split('<tr data-check="', 2)[1], "clauses, as Chinese joins them"


@pytest.mark.parametrize(("page", "link", "title"), [
    ("zh/seeding-order.md", "../seeding-order/", "seeding-order"), ("index.md", "../", "index"),
    ("zh/deep/a-page.md", "../a-page/", "a-page"), (None, "", ""), ("", "", "")])
def test_a_claims_page_is_linked_from_the_versions_page_by_its_name(build, page, link, title):
    assert versions._page_link(page) == link
    assert versions._page_title(page) == title
    build.titles.update({page or "": "Its title"})
    assert versions._page_title(page) == ("Its title" if page else "")


def test_a_result_by_release_puts_this_build_among_the_releases_and_says_why_one_lacks_it(lab, monkeypatch):
    _record(monkeypatch, lab, "here-torch2.14.1", _release("2.14.1"), n=5)
    _record(monkeypatch, lab, "here-torch2.3.1", _release("2.3.1"), n=4)  # another parameter: not this result
    here = cache.run(lab.speed, n=5)
    rows = versions.by_release(here)
    assert [(version, label) for version, label, _ in rows] == [
        ("2.3.1", "here-torch2.3.1"), ("2.13.0", None), ("2.14.1", "here-torch2.14.1")], "a newer release after this build"
    assert rows[0][2] == "not recorded on here-torch2.3.1" and rows[1][2] is here
    assert rows[2][2].value["ratio"] == 5.0


def test_releases_are_listed_oldest_first_whatever_their_labels(lab, monkeypatch):
    _record(monkeypatch, lab, "a-newer", _release("2.14.1"))
    _record(monkeypatch, lab, "z-older", _release("2.3.1"))
    assert [rec.label for rec in machines.releases()] == ["z-older", "a-newer"]
