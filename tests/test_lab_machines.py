"""Recorded machines (snippets.lab.machines): record, compare, freeze — on a tiny experiment, two fingerprints."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import snippets.experiments
from snippets.lab import ClaimError, cache, check, environment, machines, say
from snippets.lab import context, store

MEASURE = '''
from snippets.lab import experiment


@experiment(timing=True)
def speed(n: int = 3) -> dict:
    return {"ratio": float(n), "rows": [{"label": "a", "n": n}]}


@experiment()
def facts(n: int = 3) -> dict:
    return {"n": n}
'''

CLEAN = ("c0ffee" * 6 + "c0ffee"[:4], [])  # a commit, and no change from it
HERE = {"torch": "2.13.0", "device": "cpu", "device_name": "CPU (here)", "cpu": "here", "threads": 2}
THERE = {"torch": "2.13.0", "device": "cuda", "device_name": "NVIDIA H200", "cpu": "there", "threads": 16}


@pytest.fixture()
def lab(tmp_path, monkeypatch, private_cache):
    """A page package with two experiments, an empty results/ folder, and this machine's fingerprint HERE."""
    package = tmp_path / "pkg" / "machpage"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "measure.py").write_text(MEASURE)
    monkeypatch.setattr(snippets.experiments, "__path__", [*snippets.experiments.__path__, str(tmp_path / "pkg")])
    monkeypatch.setenv("PITFALLS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("FROZEN", raising=False)
    monkeypatch.delenv("PITFALLS_RECORD", raising=False)
    monkeypatch.setattr(context.current(), "page", None)
    monkeypatch.setattr(context.current(), "refreshed", set())
    _as_machine(monkeypatch, HERE)
    monkeypatch.setattr(machines, "tree_state", lambda: CLEAN)
    store.forget()
    module = importlib.import_module("snippets.experiments.machpage.measure")
    yield module
    store.forget()
    for name in [n for n in sys.modules if n.startswith("snippets.experiments.machpage")]:
        del sys.modules[name]


def _as_machine(monkeypatch, fp):
    monkeypatch.setattr(environment, "fingerprint", lambda: dict(fp))


def _record(monkeypatch, lab, label, fp, **options):
    """The folder ``_recorded`` recorded into."""
    return _recorded(monkeypatch, lab, label, fp, **options).target


def _recorded(monkeypatch, lab, label, fp, *, n=3, replace=False, refresh=False, tree=CLEAN, ran=None,
              notebook=None, **options):
    """``make record`` with the build replaced by running the two experiments (as the pages would); ``ran``
    collects what each build measured."""
    _as_machine(monkeypatch, fp)

    def build(staging, env):
        assert env["PITFALLS_RECORD"] == str(staging) and env.get("REFRESH") == ("1" if refresh else None)
        for name in ("PITFALLS_RECORD", "PITFALLS_RECORD_PREVIOUS", "REFRESH"):
            if env.get(name):
                monkeypatch.setenv(name, env[name])
            else:
                monkeypatch.delenv(name, raising=False)
        with context.using():
            measured = [cache.run(lab.speed, n=n), cache.run(lab.facts, n=n)]
        if notebook is not None:  # a notebook's source, executed as the pages would (mkdocs_hook)
            import nbformat

            executed = notebook.with_suffix(".ipynb")
            cell = nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")],
                                             id="the-cell")
            nbformat.write(nbformat.v4.new_notebook(cells=[cell]), executed)
            store.writer(cache.find_experiment).keep_notebook(notebook, executed)
        if ran is not None:
            ran.append(sorted(r.experiment for r in measured if not r.cached))
        for name in ("PITFALLS_RECORD", "PITFALLS_RECORD_PREVIOUS", "REFRESH"):
            monkeypatch.delenv(name, raising=False)

    monkeypatch.setattr(machines, "tree_state", lambda: tree)
    done = machines.record(label, replace=replace, refresh=refresh, build=build, **options)
    _as_machine(monkeypatch, HERE)
    return done


def test_a_recording_holds_a_manifest_and_one_diffable_file_per_result(lab, monkeypatch, tmp_path):
    target = _record(monkeypatch, lab, "gpu-h200", THERE)
    assert target == tmp_path / "results" / "gpu-h200"
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["label"] == "gpu-h200" and manifest["fingerprint"] == THERE and manifest["format"] == 1
    assert set(manifest["experiments"]) == {"machpage.speed", "machpage.facts"}
    assert manifest["experiments"]["machpage.speed"] == cache.source_digest(lab.speed.func)
    assert manifest["commit"] and manifest["recorded_at"].endswith("+00:00")
    [entry_file] = (target / "machpage.speed").iterdir()
    text = entry_file.read_text()
    assert text.startswith("{\n") and '\n "value": {\n' in text, "one key per line"
    assert json.loads(text)["value"] == {"ratio": 3.0, "rows": [{"label": "a", "n": 3}], "processes": 1}
    for path in target.rglob("*"):
        if path.is_file():
            assert str(tmp_path) not in path.read_text(), f"{path.name} holds an absolute path"
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")], "no staging folder left"


def test_this_machine_is_never_listed_twice(lab, monkeypatch):
    _record(monkeypatch, lab, "here-2core", HERE)
    _record(monkeypatch, lab, "gpu-h200", THERE)
    assert [rec.label for rec in machines.recordings()] == ["gpu-h200", "here-2core"]
    assert [rec.label for rec in machines.others()] == ["gpu-h200"], "HERE's own recording is this machine"
    _as_machine(monkeypatch, THERE)
    assert [rec.label for rec in machines.others()] == ["here-2core"]


def test_a_label_of_another_machine_is_refused_unless_replaced(lab, monkeypatch):
    _record(monkeypatch, lab, "box", THERE)
    with pytest.raises(machines.ArchiveError) as refused:
        _record(monkeypatch, lab, "box", HERE)
    assert "results/box/ was recorded in another environment" in str(refused.value)
    assert "device: 'cuda' there, 'cpu' here" in str(refused.value) and "REPLACE=1" in str(refused.value)
    assert machines.load(machines.results_dir() / "box").fingerprint == THERE, "left as it was"
    _record(monkeypatch, lab, "box", HERE, replace=True)
    assert machines.load(machines.results_dir() / "box").fingerprint == HERE
    _record(monkeypatch, lab, "box", HERE, n=4)  # the same machine again: no question asked
    assert machines.load(machines.results_dir() / "box").entry("machpage.facts", {"n": 4}) is not None


@pytest.mark.parametrize("label", ["", "Laptop", "a b", "../x", "-x", "x" * 70])
def test_a_bad_label_is_refused_before_anything_runs(lab, label):
    with pytest.raises(machines.ArchiveError, match="is not a usable label"):
        machines.record(label, build=lambda staging, env: pytest.fail("ran"))


def test_a_failed_build_writes_nothing_and_keeps_the_old_recording(lab, monkeypatch):
    _record(monkeypatch, lab, "box", HERE)
    before = sorted(p.relative_to(machines.results_dir()) for p in machines.results_dir().rglob("*"))

    def broken(staging, env):
        assert "REFRESH" not in env, "make record without REFRESH=1 measures only what is missing or stale"
        monkeypatch.setenv("PITFALLS_RECORD", env["PITFALLS_RECORD"])
        cache.run(lab.facts, n=9)  # half of the results are in
        raise machines.ArchiveError("the site did not build")

    with pytest.raises(machines.ArchiveError, match="did not build"):
        machines.record("box", build=broken)
    monkeypatch.delenv("PITFALLS_RECORD")
    assert sorted(p.relative_to(machines.results_dir()) for p in machines.results_dir().rglob("*")) == before
    with pytest.raises(machines.ArchiveError, match="ran no experiment"):
        machines.record("empty", build=lambda staging, env: None)
    assert not (machines.results_dir() / "empty").exists()


def _corrupt(folder, name, text):
    (folder / name).write_text(text)


@pytest.mark.parametrize("text, message", [
    ("{not json", "manifest.json: not valid JSON"),
    ("[1, 2]", "manifest.json: expected a JSON object, found list"),
    ('{"format": 7, "label": "box"}', "manifest.json: format: 7 is not this project's recording format 1"),
    ('{"format": 1, "label": "other"}', "manifest.json: label: 'other' does not match its folder 'box'"),
    ('{"format": 1, "label": "box", "fingerprint": {}, "recorded_at": "2026-01-01T00:00:00+00:00", '
     '"experiments": {}}', "manifest.json: fingerprint: missing field(s) device, device_name, threads, torch"),
])
def test_a_corrupt_or_foreign_manifest_is_left_out_naming_the_file(lab, monkeypatch, text, message):
    target = _record(monkeypatch, lab, "box", THERE)
    _corrupt(target, "manifest.json", text)
    store.forget()
    assert machines.recordings() == ()
    [(name, why)] = machines.refused()
    assert name == "box" and why.startswith("results/box/manifest.json") and message in why, why
    monkeypatch.setenv("FROZEN", "1")
    with pytest.raises(machines.ArchiveError) as error:
        machines.recordings()
    assert message in str(error.value) and "box" in str(error.value)


def test_a_corrupt_result_file_leaves_its_recording_out_naming_the_file(lab, monkeypatch):
    target = _record(monkeypatch, lab, "box", THERE)
    [entry_file] = (target / "machpage.speed").iterdir()
    entry = json.loads(entry_file.read_text())
    entry_file.write_text(json.dumps({**entry, "value": [1]}))
    store.forget()
    assert machines.recordings() == ()
    assert machines.refused() == (("box", f"results/box/machpage.speed/{entry_file.name}: value: expected a JSON "
                                          "object, found list"),)
    entry_file.write_text(json.dumps({**entry, "params": {"n": 5}}))
    store.forget()
    [(_, why)] = machines.refused()
    assert why == (f"results/box/machpage.speed/{entry_file.name}: holds machpage.speed({{'n': 5}}), whose file is "
                   f"{store.params_key({'n': 5})}.json")
    entry_file.write_text(json.dumps({**entry, "params": {"m": 5}}))
    store.forget()
    [(_, why)] = machines.refused()
    assert why.endswith("params.m: machpage.speed has no parameter 'm'")


def test_a_stale_recording_is_named_with_its_commit_and_left_out(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE)
    rec = machines.recordings()[0]
    result, why = cache.from_recording(rec, lab.speed, {"n": 3})
    assert result.value["ratio"] == 3.0 and result.fingerprint == THERE and why == ""
    assert cache.from_recording(rec, lab.speed, {"n": 8}) == (None, "not recorded on gpu-h200")
    monkeypatch.setattr(cache, "source_digest", lambda func: "edited since")
    result, why = cache.from_recording(rec, lab.speed, {"n": 3})
    assert result is None and why.startswith("recorded on gpu-h200 with an older version of this experiment (commit ")
    assert "make record MACHINE=gpu-h200" in why
    here = cache.run(lab.speed, n=3)
    shown = machines.compare(here, [lambda r: f"ratio {r['ratio']}"])
    assert "The same measured on other machines: none usable" in shown and "older version" in shown
    assert "ratio 3.0" not in shown, "a stale recording is not drawn"


def test_timing_results_of_other_machines_are_drawn_in_tabs(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE, n=3)
    _record(monkeypatch, lab, "cpu-1thread", {**HERE, "cpu": "small", "device_name": "CPU (small)", "threads": 1}, n=3)
    here = cache.run(lab.speed, n=3)
    shown = machines.compare(here, [lambda r: f"| ratio |\n|---|\n| {r['ratio']} × {r.fingerprint['threads']} |"])
    assert shown.startswith('\n<details class="abstract pitfalls-machines"><summary>'
                            "The same measured on other machines: cpu-1thread, gpu-h200</summary>\n")
    assert shown.endswith("\n</details>\n")
    assert shown.count('<div class="tabbed-block">') == 2
    assert '<label for="__machines_' in shown and ">cpu-1thread</label>" in shown and ">gpu-h200</label>" in shown
    assert "<td>3.0 × 1</td>" in shown and "<td>3.0 × 16</td>" in shown, "each machine's own result, as a table"
    assert '<p class="pitfalls-stamp">Recorded on gpu-h200: torch 2.13.0 · NVIDIA H200 · 16 threads' in shown
    assert 'class="pitfalls-code__body"' not in shown, "it sits inside a code panel, whose sources load as a whole"
    assert machines.compare(cache.run(lab.facts, n=3), [lambda r: "x"]) == "", "results that do not depend on time"
    assert machines.compare(cache.run(lab.speed, n=7), [lambda r: "x"]).count("not recorded on") == 2


def test_a_recording_the_drawing_code_cannot_read_is_said_not_raised(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE)

    def draw(result):
        if result.fingerprint["device"] == "cuda":
            raise KeyError("rows")
        return "x"

    _record(monkeypatch, lab, "laptop", {**HERE, "cpu": "laptop"})  # listed after gpu-h200: still drawn
    shown = machines.compare(cache.run(lab.speed, n=3), [draw])
    assert "<li>gpu-h200: its recording cannot be drawn (KeyError: &#x27;rows&#x27;)</li>" in shown
    assert ">laptop</label>" in shown and shown.count('<div class="tabbed-block">') == 1


@pytest.fixture()
def ratio_check():
    @check("ratio > 3")
    def above_three(result):
        return result["ratio"] > 3, {"ratio": result["ratio"]}

    return above_three


def test_a_claim_says_on_which_machines_it_holds_and_fails_there_without_failing_the_build(lab, monkeypatch,
                                                                                            ratio_check):
    _record(monkeypatch, lab, "small", THERE, n=2)
    _record(monkeypatch, lab, "big", {**THERE, "cpu": "big", "threads": 64}, n=5)
    here = cache.run(lab.speed, n=5)
    text = say(ratio_check(here), "The ratio is {ratio:.0f}")
    assert text.startswith('<span class="pitfalls-claim" tabindex="0"') and "The ratio is 5</span>" in text
    assert "From machpage.speed, measured with torch 2.13.0 · CPU (here) · 2 threads" in text
    tip = text.split('class="pitfalls-claim__tip"', 1)[1]
    assert "pitfalls-machines" not in text, "provenance is in the tip, not in the sentence"
    assert "Recorded machines: holds on big; not checked on small: not recorded on small." in tip
    small = cache.run(lab.speed, n=2)
    with pytest.raises(ClaimError):
        say(ratio_check(small), "The ratio is {ratio:.0f}")  # this machine: fails the build
    _record(monkeypatch, lab, "small", THERE, n=5)
    entry = next((machines.results_dir() / "small" / "machpage.speed").iterdir())
    value = json.loads(entry.read_text())
    value["value"]["ratio"] = 2.5
    entry.write_text(json.dumps(value))
    store.forget()
    text = say(ratio_check(here), "The ratio is {ratio:.0f}")  # holds here, fails on "small": no error
    assert "pitfalls-claim--fails-elsewhere" in text.split("</span>", 1)[0]
    assert "fails on small (ratio = 2.5)" in text.split('class="pitfalls-claim__tip"', 1)[1] and "holds on big" in text


def test_without_recordings_a_claim_is_unchanged(lab, ratio_check):
    text = say(ratio_check(cache.run(lab.speed, n=5)), "The ratio is {ratio:.0f}")
    assert "pitfalls-machines" not in text and text.endswith("</span>") and 'class="pitfalls-claim__tip"' in text
    assert "The ratio is 5</span>" in text


def test_a_frozen_build_reads_the_leading_recording_and_runs_nothing(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE)
    _record(monkeypatch, lab, "cpu-2core", HERE)
    monkeypatch.setenv("FROZEN", "1")
    with pytest.raises(machines.ArchiveError, match="FROZEN=1 needs one machine to lead with"):
        cache.run(lab.speed, n=3)
    (machines.results_dir() / "primary").write_text("gpu-h200\n")
    ran = []
    monkeypatch.setattr(store.LocalStore, "put", lambda self, *args: ran.append(args))
    result = cache.run(lab.speed, n=3)
    assert result.fingerprint == THERE and result.cached and not ran
    assert [rec.label for rec in machines.others()] == ["cpu-2core"] and machines.primary().label == "gpu-h200"
    monkeypatch.setattr(context.current(), "page", "loader-overhead.md")
    with pytest.raises(cache.ExperimentError) as missing:
        cache.run(lab.speed, n=11)
    assert str(missing.value) == ("FROZEN=1: page docs/loader-overhead.md: experiment machpage.speed(n=11) is not "
                                  "recorded on gpu-h200; a frozen build runs nothing")
    monkeypatch.setattr(cache, "source_digest", lambda func: "edited since")
    with pytest.raises(cache.ExperimentError, match=r"machpage\.speed\(n=3\) is recorded on gpu-h200 with an older "
                                                    r"version of this experiment"):
        cache.run(lab.speed, n=3)
    (machines.results_dir() / "primary").write_text("nowhere\n")
    with pytest.raises(machines.ArchiveError, match="names 'nowhere', which is not a recording"):
        machines.primary()


def _record_with_notebook(lab, monkeypatch, tmp_path) -> tuple:
    """``make record`` of one experiment and one executed notebook (question.py): the source and the recording."""
    import jupytext
    import nbformat

    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    executed = tmp_path / "executed.ipynb"
    notebook = jupytext.read(source)
    notebook.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    executed.write_text(nbformat.writes(notebook))
    return source, _record_notebook(lab, monkeypatch, source, executed)


def _record_notebook(lab, monkeypatch, source, executed) -> Path:
    """``make record`` of machine "box": one experiment, and ``executed`` as notebook ``source``'s executed copy."""
    def build(staging, env):
        monkeypatch.setenv("PITFALLS_RECORD", env["PITFALLS_RECORD"])
        cache.run(lab.facts, n=1)
        store.writer().keep_notebook(source, executed)
        monkeypatch.delenv("PITFALLS_RECORD")

    return machines.record("box", build=build).target


def test_frozen_notebooks_must_be_recorded_and_current(lab, monkeypatch, tmp_path):
    source, _ = _record_with_notebook(lab, monkeypatch, tmp_path)
    rec = machines.recordings()[0]
    assert rec.manifest["notebooks"] == {"question": store.notebook_digest(source)}
    assert not list((rec.path / "notebooks").glob("*.source-digest")), "the digests live in the manifest"
    monkeypatch.setenv("FROZEN", "1")
    import nbformat

    rendered = machines.frozen_notebook(source)  # the source's cells, the recording's outputs
    assert rendered.parent == store.cache_dir().parent / "notebooks" / "frozen" / "box"
    [cell] = nbformat.read(rendered, as_version=4).cells
    assert cell.source == "print(1)" and cell.outputs[0]["text"] == "1\n"
    source.write_text("# %%\nprint(2)\n")
    with pytest.raises(machines.ArchiveError, match="notebook question.py changed since box recorded it"):
        machines.frozen_notebook(source)
    other = tmp_path / "other.py"
    other.write_text("")
    with pytest.raises(machines.ArchiveError, match="notebook other.py was not recorded on box"):
        machines.frozen_notebook(other)


@pytest.mark.parametrize("word, frozen", [("1", True), ("yes", True), ("", False), ("0", False)])
def test_frozen_words(monkeypatch, word, frozen):
    monkeypatch.setenv("FROZEN", word)
    assert machines.frozen() is frozen


def test_make_record_explains_a_refusal_in_one_line(lab, monkeypatch, capsys):
    assert machines.main(["Bad Label"]) == 2
    assert capsys.readouterr().err.startswith("make record: MACHINE='Bad Label' is not a usable label")
    assert os.environ.get("PITFALLS_RECORD") is None


def test_the_environment_page_lists_each_machine_with_its_current_and_stale_results(lab, monkeypatch):
    assert "No machine is recorded" in machines.overview()
    _record(monkeypatch, lab, "gpu-h200", THERE)
    _record(monkeypatch, lab, "here", HERE)
    table = machines.overview()
    assert "| `gpu-h200` | NVIDIA H200 | 16 | 2.13.0 |" in table and "| 2 current, 0 stale | shown beside them |" in table
    assert "| `here` | CPU (here) | 2 |" in table and "this build's results" in table
    real = cache.source_digest
    monkeypatch.setattr(cache, "source_digest", lambda func: "edited" if func is lab.speed.func else real(func))
    assert "| 1 current, 1 stale |" in machines.overview()


def test_an_experiment_is_found_by_its_name(lab):
    assert cache.find_experiment("machpage.speed") is lab.speed
    assert cache.find_experiment("machpage.gone") is None and cache.find_experiment("nopage.speed") is None


def test_the_machine_note_lists_every_verdict_in_order(monkeypatch, ratio_check):
    from snippets.lab import claims

    @check("ratio > 3, maybe", timing=True)
    def unsure(result):
        return None, {"ratio": result["ratio"]}

    verdicts = [("a", ratio_check({"ratio": 5})), ("b<", ratio_check({"ratio": 6})), ("c", ratio_check({"ratio": 2})),
                ("d", unsure({"ratio": 3})), ("e", "not recorded on e"), ("f", "stale on f")]
    assert claims._on_other_machines(verdicts) == (
        " Recorded machines: holds on a, b<; fails on c (ratio = 2); undecided on d (ratio = 3); "
        "not checked on e: not recorded on e; f: stale on f."), "plain text: the tip escapes it"
    assert claims._on_other_machines([("g", "not recorded on g")]) == (
        " Recorded machines: not checked on g: not recorded on g.")
    assert claims._on_other_machines([("a", ratio_check({"ratio": 5}))]) == " Recorded machines: holds on a."
    assert claims._on_other_machines([]) == ""
    monkeypatch.setattr(machines, "elsewhere", lambda outcome: verdicts)
    text = say(ratio_check({"ratio": 5}), "The ratio is {ratio}")
    assert "fails on c (ratio = 2)" in text and "b&lt;" in text, "escaped in the page"


# ---- make record's command line and the commit it records --------------------------------------------------------


def test_make_record_says_what_it_recorded(monkeypatch, tmp_path, capsys):
    target = tmp_path / "results" / "laptop-m2"
    (target / "sub").mkdir(parents=True)
    (target / "manifest.json").write_bytes(b"x" * 1536)
    (target / "sub" / "a.json").write_bytes(b"y" * 1025)  # 2,561 bytes: 2.501 KiB, printed as 3
    calls = []

    changed = [True]

    def fake_record(label, *, replace=False, refresh=False, allow_dirty=False):
        calls.append((label, replace, refresh, allow_dirty))
        return machines.Recorded(target, 4 if changed[0] else 0, 7, changed[0])

    monkeypatch.setattr(machines, "record", fake_record)
    monkeypatch.setattr(store, "PROJECT_ROOT", tmp_path)
    assert machines.main(["laptop-m2"]) == 0
    assert calls == [("laptop-m2", False, False, False)]
    assert capsys.readouterr().out == ("Recorded results/laptop-m2/: 4 results measured, 7 carried over; 2 files, "
                                       "3 KiB. Commit the folder to share it (git add results/laptop-m2).\n")
    assert machines.main(["laptop-m2", "--replace"]) == 0 and calls[-1] == ("laptop-m2", True, False, False)
    assert machines.main(["laptop-m2", "--refresh", "--allow-dirty"]) == 0
    assert calls[-1] == ("laptop-m2", False, True, True)
    capsys.readouterr()
    monkeypatch.setattr(machines, "record", lambda label, **options: machines.Recorded(target, 1, 1, True))
    assert machines.main(["laptop-m2"]) == 0
    assert capsys.readouterr().out.startswith("Recorded results/laptop-m2/: 1 result measured, 1 carried over;")
    monkeypatch.setattr(machines, "record", fake_record)
    changed[0] = False
    assert machines.main(["laptop-m2"]) == 0
    assert capsys.readouterr().out == "results/laptop-m2/ is up to date: nothing measured; its 7 results kept as recorded.\n"


def test_make_record_explains_itself_and_its_refusals(monkeypatch, capsys, help_of):
    text = help_of(machines.main)
    assert text.startswith("usage: make record [-h] [--replace] [--refresh] [--allow-dirty] label")
    assert (" label Record this machine's results into results/<label>/: what is missing or was measured by other "
            "code is measured, the rest is kept as it is. positional arguments: label the machine's "
            "label, e.g. laptop-m2 (MACHINE=…) options:") in text
    assert "--replace replace a recording made on another machine" in text
    assert "--refresh measure everything again (REFRESH=1)" in text
    assert "--allow-dirty record from a tree with uncommitted changes (ALLOW_DIRTY=1); the manifest names their digest" \
        in text

    def refuse(label, **options):
        raise machines.ArchiveError("results/x was recorded on another machine")

    monkeypatch.setattr(machines, "record", refuse)
    assert machines.main(["x"]) == 2
    assert capsys.readouterr().err == "make record: results/x was recorded on another machine\n"


def test_a_folders_size_counts_its_files_at_every_depth(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "x").write_bytes(b"1" * 10)
    (tmp_path / "a" / "b" / "y").write_bytes(b"2" * 5)
    assert machines._size(tmp_path) == 15


def test_the_environment_pages_table_of_machines_in_full(lab, monkeypatch):
    assert machines.overview() == ("No machine is recorded in `results/` yet: this build shows this machine only. "
                                   "`make record MACHINE=<label>` records yours.\n")
    _record(monkeypatch, lab, "gpu-h200", THERE)
    _record(monkeypatch, lab, "here", HERE)
    made = {rec.label: rec for rec in machines.recordings()}
    table = machines.overview()
    assert table.endswith("|\n\n"), "a blank line after the table ends it in Markdown"
    lines = table.splitlines()
    assert lines[0] == "| machine | device | threads | torch | recorded | commit | experiments | shown as |"
    assert lines[1].replace(" ", "") == "|:---|:---|---:|:---|:---|:---|:---|:---|"
    for label, device, threads, role in (("gpu-h200", "NVIDIA H200", 16, "shown beside them"),
                                         ("here", "CPU (here)", 2, "this build's results")):
        rec = made[label]
        row = (f"| `{label}` | {device} | {threads} | 2.13.0 | {rec.manifest['recorded_at'][:10]} | "
               f"`{rec.commit[:12]}` | 2 current, 0 stale | {role} |")
        assert row in lines, (row, lines)
    assert len(lines) == 5


def test_machine_tabs_are_materials_content_tabs(monkeypatch):
    monkeypatch.setattr(context.current(), "tab_sets", 0)
    html_ = machines.tabs([("a<b", "<p>one</p>"), ("c", "<p>two</p>")])
    assert html_ == (
        '<div class="tabbed-set tabbed-alternate pitfalls-machines__tabs" data-tabs="1:2">'
        '<input checked id="__machines_1_1" name="__machines_1" type="radio">'
        '<input id="__machines_1_2" name="__machines_1" type="radio">'
        '<div class="tabbed-labels"><label for="__machines_1_1">a&lt;b</label><label for="__machines_1_2">c</label></div>\n'
        '<div class="tabbed-content">\n'
        '<div class="tabbed-block">\n<p>one</p>\n</div><div class="tabbed-block">\n<p>two</p>\n</div>\n'
        '</div></div>')
    assert 'data-tabs="2:1"' in machines.tabs([("x", "")]), "each set of tabs gets its own name"


def test_the_leading_machine_is_named_or_the_only_one(lab, monkeypatch):
    with pytest.raises(machines.ArchiveError, match=r"FROZEN=1 needs one machine to lead with: write its label "
                                                    r"into .*primary \(recorded: none — run make record "
                                                    r"MACHINE=<label> first\)"):
        machines.primary()
    _record(monkeypatch, lab, "gpu-h200", THERE)
    assert machines.primary().label == "gpu-h200", "the only recording leads"
    _record(monkeypatch, lab, "here", HERE)
    with pytest.raises(machines.ArchiveError, match=r"\(recorded: gpu-h200, here\)$"):
        machines.primary()
    (machines.results_dir() / "primary").write_text("nope\n", encoding="utf-8")
    with pytest.raises(machines.ArchiveError, match=r"primary names 'nope', which is not a recording under .*results/ "
                                                    r"\(recorded: gpu-h200, here\)"):
        machines.primary()
    (machines.results_dir() / "primary").write_text("here\n", encoding="utf-8")
    assert machines.primary().label == "here"


def test_a_recordings_manifest_names_everything_it_holds(lab, monkeypatch):
    monkeypatch.setattr(machines, "diff_digest", lambda changed: "f" * 16)
    target = _record(monkeypatch, lab, "gpu-h200", THERE, tree=("0123456789abcdef", ["code.py"]), allow_dirty=True)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == machines.FORMAT and manifest["label"] == "gpu-h200"
    assert manifest["fingerprint"] == THERE and manifest["commit"] == "0123456789abcdef-dirty-" + "f" * 16
    assert manifest["python"] == sys.version.split()[0]
    assert manifest["recorded_at"].endswith("+00:00") and len(manifest["recorded_at"]) == 25
    assert manifest["experiments"] == {"machpage.speed": cache.source_digest(lab.speed.func),
                                       "machpage.facts": cache.source_digest(lab.facts.func)}
    assert manifest["notebooks"] == {}
    assert sorted(p.name for p in machines.results_dir().iterdir()) == ["gpu-h200"], "no staging or old copy left"


def test_a_recording_made_elsewhere_is_refused_with_what_differs(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE)
    with pytest.raises(machines.ArchiveError) as refused:
        _record(monkeypatch, lab, "gpu-h200", HERE)
    assert str(refused.value) == (
        "results/gpu-h200/ was recorded in another environment (cpu: 'there' there, 'here' here, device: 'cuda' there, "
        "'cpu' here, device_name: 'NVIDIA H200' there, 'CPU (here)' here, threads: 16 there, 2 here); choose "
        "another MACHINE=… or replace it with make record MACHINE=gpu-h200 REPLACE=1")
    assert _record(monkeypatch, lab, "gpu-h200", HERE, replace=True).name == "gpu-h200"
    assert machines.load(machines.results_dir() / "gpu-h200").fingerprint == HERE


def test_the_recording_build_is_a_strict_build_of_this_project(monkeypatch, tmp_path):
    import subprocess

    seen = {}

    def fake_run(command, cwd, env):
        seen.update(command=command, cwd=cwd, env=env)
        return subprocess.CompletedProcess(command, seen.get("code", 0))

    monkeypatch.setattr(machines.subprocess, "run", fake_run)
    machines._build(tmp_path, {"REFRESH": "1"})
    assert seen["command"][:6] == [sys.executable, "-m", "mkdocs", "build", "--strict", "-d"]
    assert seen["cwd"] == store.PROJECT_ROOT and seen["env"] == {"REFRESH": "1"}
    seen["code"] = 1
    with pytest.raises(machines.ArchiveError, match=r"^the site did not build, so nothing was recorded "
                                                    r"\(the build's errors are above\)$"):
        machines._build(tmp_path, {})


def test_a_recorded_result_is_read_back_whole_or_said_stale(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE, n=4, tree=("fedcba9876543210", []))
    (rec,) = machines.recordings()
    entry = rec.entry("machpage.speed", {"n": 4})
    found, why = cache.from_recording(rec, lab.speed, {"n": 4})
    assert why == "" and found.cached and found.exp is lab.speed and found.timing == lab.speed.timing
    assert (found.value, found.experiment, found.params, found.fingerprint, found.computed_at, found.elapsed_s) == (
        entry["value"], "machpage.speed", entry["params"], THERE, entry["computed_at"], entry["elapsed_s"])
    assert cache.from_recording(rec, lab.speed, {"n": 5}) == (None, "not recorded on gpu-h200")
    real = cache.source_digest
    monkeypatch.setattr(cache, "source_digest", lambda func: "edited" if func is lab.speed.func else real(func))
    assert cache.from_recording(rec, lab.speed, {"n": 4}) == (None, (
        f"recorded on gpu-h200 with an older version of this experiment (commit fedcba987654, "
        f"{rec.manifest['recorded_at'][:10]}); re-record it with make record MACHINE=gpu-h200"))


# ---- exact contracts: messages, file formats, folders ------------------------------------------------------------


def test_results_live_in_the_projects_results_folder_unless_told_otherwise(monkeypatch, tmp_path):
    monkeypatch.delenv("PITFALLS_RESULTS_DIR", raising=False)
    assert machines.results_dir() == store.PROJECT_ROOT / "results"
    monkeypatch.setenv("PITFALLS_RESULTS_DIR", str(tmp_path))
    assert machines.results_dir() == tmp_path


def test_a_results_file_name_is_16_hex_digits_of_the_parameters_in_any_order():
    import torch

    key = store.params_key({"n": 3, "m": 4})
    assert len(key) == 16 and int(key, 16) >= 0
    assert key == store.params_key({"m": 4, "n": 3}), "the order parameters were given in does not matter"
    assert key != store.params_key({"n": 3, "m": 5})
    device = store.params_key({"device": torch.device("cpu")})  # not JSON: written by its repr
    assert device == store.params_key({"device": torch.device("cpu")}) != store.params_key({"device": "cpu"})


def test_recorded_json_is_sorted_one_key_per_line_and_keeps_unicode():
    assert store.dump({"b": 1, "a": "µs", "c": {"z": 0, "y": [1, 2.5, "x"]}, "d": [[1, 2], {"e": []}],
                       "f": {"g": {"h": [[0.5, 0.25]]}}}) == (
        '{\n "a": "µs",\n "b": 1,\n "c": {"y": [1, 2.5, "x"], "z": 0},\n'
        ' "d": [\n  [1, 2],\n  {"e": []}\n ],\n "f": {\n  "g": {"h": [[0.5, 0.25]]}\n }\n}\n')
    value = {"curve": [0.1 * i for i in range(50)], "rows": [{"n": i, "rounds": [i, None, True]} for i in range(3)]}
    assert json.loads(store.dump(value)) == value


RECORDING_LIMIT = 1_000_000  # bytes: a recording stays small enough to keep several in the repository


def test_every_committed_recording_stays_under_one_megabyte():
    folders = [path for path in (store.PROJECT_ROOT / "results").iterdir() if path.is_dir()]
    assert folders, "no recording is committed under results/"
    sizes = {path.name: machines._size(path) for path in folders}
    assert all(size < RECORDING_LIMIT for size in sizes.values()), sizes


def test_an_unreadable_recording_file_is_named_with_the_reason(tmp_path):
    from snippets.lab import recording_schema

    folder = tmp_path / "manifest.json"
    folder.mkdir()
    with pytest.raises(recording_schema.RecordingRefused) as error:
        recording_schema.read_json(folder, "results/box/manifest.json")
    assert str(error.value) == "results/box/manifest.json: cannot be read (Is a directory)"


def test_a_result_files_missing_field_is_named_with_its_kind(lab, monkeypatch):
    target = _record(monkeypatch, lab, "box", THERE)
    [entry_file] = (target / "machpage.speed").iterdir()
    entry = json.loads(entry_file.read_text())
    rec = machines.recordings()[0]
    for key, kind in (("elapsed_s", "number"), ("source", "str"), ("params", "dict")):
        entry_file.write_text(json.dumps({k: v for k, v in entry.items() if k != key}))
        with pytest.raises(machines.ArchiveError) as error:
            rec.entry("machpage.speed", {"n": 3})
        assert str(error.value) == f"{entry_file}: missing field(s) {key}"


def test_a_manifest_needs_exactly_a_fingerprint_a_date_and_its_experiments(lab, monkeypatch):
    target = _record(monkeypatch, lab, "box", THERE)
    manifest = json.loads((target / "manifest.json").read_text())
    minimal = {**manifest, "fingerprint": {k: THERE[k] for k in ("torch", "device", "device_name", "threads")}}
    (target / "manifest.json").write_text(json.dumps(minimal))
    assert machines.load(target).fingerprint == minimal["fingerprint"], "the four keys are enough"
    for missing in ("recorded_at", "experiments"):
        (target / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != missing}))
        with pytest.raises(machines.ArchiveError) as error:
            machines.load(target)
        assert str(error.value) == f"results/box/manifest.json: missing field(s) {missing}"


def test_the_leading_machine_named_when_nothing_is_recorded(lab):
    (machines.results_dir()).mkdir(parents=True)
    (machines.results_dir() / "primary").write_text("box\n", encoding="utf-8")
    with pytest.raises(machines.ArchiveError) as error:
        machines.primary()
    assert str(error.value).endswith("names 'box', which is not a recording under "
                                     f"{machines.results_dir()}/ (recorded: none)")


def test_a_frozen_build_names_the_missing_experiment_with_all_its_parameters(lab, monkeypatch):
    _record(monkeypatch, lab, "box", THERE)
    monkeypatch.setenv("FROZEN", "1")
    with pytest.raises(cache.ExperimentError) as error:
        cache._frozen_result(lab.speed, {"n": 11, "label": "x"})
    assert str(error.value) == ("FROZEN=1: experiment machpage.speed(n=11, label='x') is not recorded on box; "
                                "a frozen build runs nothing")


def test_a_frozen_notebook_needs_the_manifests_digest(lab, monkeypatch, tmp_path):
    source, target = _record_with_notebook(lab, monkeypatch, tmp_path)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["commit"] = "0123456789abcdef"
    del manifest["notebooks"]
    (target / "manifest.json").write_text(json.dumps(manifest))
    store.forget()
    monkeypatch.setenv("FROZEN", "1")
    with pytest.raises(machines.ArchiveError) as error:
        machines.frozen_notebook(source)
    assert str(error.value) == ("FROZEN=1: notebook question.py changed since box recorded it (commit "
                                "0123456789ab); re-record with make record MACHINE=box")


def test_recordings_are_drawn_joined_and_missing_ones_listed(lab, monkeypatch):
    _record(monkeypatch, lab, "a-box", THERE, n=5)  # lacks n=3: listed as missing, and the next one still drawn
    _record(monkeypatch, lab, "b-box", {**THERE, "cpu": "b"}, n=3)
    manifest_path = machines.results_dir() / "b-box" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["commit"] = "0123456789abcdef"
    manifest_path.write_text(json.dumps(manifest))
    store.forget()
    here = cache.run(lab.speed, n=3)
    shown = machines.compare(here, [lambda r: "first", lambda r: "second"])
    assert "<p>first</p>\n<p>second</p>" in shown
    assert "commit 0123456789ab</p>" in shown and "0123456789abc" not in shown
    assert "<ul><li>not recorded on a-box</li></ul>" in shown and "\x0b" not in shown
    assert shown.count('<div class="tabbed-block">') == 1
    only_missing = machines.compare(cache.run(lab.speed, n=9), [lambda r: "x"])
    assert "tabbed-set" not in only_missing and "<ul><li>not recorded on a-box</li><li>not recorded on b-box" \
        "</li></ul>" in only_missing
    monkeypatch.setenv("PITFALLS_RESULTS_DIR", str(machines.results_dir().parent / "none"))
    assert machines.compare(here, [lambda r: "x"]) == "", "no other machine: nothing"


def test_a_claim_is_rechecked_with_each_machines_results_in_place_of_this_ones(lab, monkeypatch):
    _record(monkeypatch, lab, "a-box", THERE, n=5)
    _record(monkeypatch, lab, "b-box", {**THERE, "cpu": "b"}, n=3)
    seen = []

    class Outcome:
        args = ((cache.run(lab.speed, n=3), 2.0), {"facts": cache.run(lab.facts, n=3), "limit": 9})

        @staticmethod
        def rerun(speed, threshold, *, facts, limit):
            seen.append((speed.fingerprint["cpu"], threshold, facts.fingerprint["cpu"], limit))
            return "checked"

    assert machines.elsewhere(Outcome) == [("a-box", "not recorded on a-box"), ("b-box", "checked")]
    assert seen == [("b", 2.0, "b", 9)], "recorded results swapped in, every other argument kept"

    def broken(*args, **kwargs):
        raise ValueError("no rows")

    Outcome.rerun = staticmethod(broken)
    assert machines.elsewhere(Outcome)[1] == ("b-box", "its recording cannot be checked (ValueError: no rows)")


def test_the_machines_table_counts_every_stale_and_unknown_experiment(lab, monkeypatch):
    target = _record(monkeypatch, lab, "box", THERE)
    manifest = json.loads((target / "manifest.json").read_text())
    old = "0" * 64
    manifest["experiments"] = {"machpage.speed": [old, manifest["experiments"]["machpage.speed"]],
                               "machpage.facts": old, "machpage.gone": old}
    (target / "manifest.json").write_text(json.dumps(manifest))
    store.forget()
    assert "| 1 current, 2 stale | shown beside them |" in machines.overview()


def test_make_record_refuses_another_machines_label_by_default(lab, monkeypatch):
    _record(monkeypatch, lab, "box", {**THERE, "extra": "only there"})

    def build(staging, env):
        raise AssertionError("nothing runs")

    with pytest.raises(machines.ArchiveError) as error:
        machines.record("box", build=build)
    assert "extra: 'only there' there, None here" in str(error.value)


def test_in_a_frozen_build_the_leading_machine_is_this_builds_whatever_this_machine_is(lab, monkeypatch):
    _record(monkeypatch, lab, "box", THERE)
    _record(monkeypatch, lab, "here", HERE)
    (machines.results_dir() / "primary").write_text("box\n")
    monkeypatch.setenv("FROZEN", "1")
    table = machines.overview()
    assert "| `box` | NVIDIA H200 |" in table and "| 2 current, 0 stale | this build's results |" in table
    assert "| `here` | CPU (here) | 2 | 2.13.0 |" in table
    assert table.count("this build's results") == 1, "this machine's recording is shown beside the leading one"


# ---- make record: from a commit, incremental, staged outside results/ ----------------------------------------------

def _git_tree(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setattr(store, "PROJECT_ROOT", tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return lambda *args: subprocess.run([*git, *args], cwd=tmp_path, check=True, capture_output=True)


def test_the_tree_state_is_its_commit_and_every_change_but_recordings(monkeypatch, tmp_path):
    monkeypatch.setattr(store, "PROJECT_ROOT", tmp_path)
    with pytest.raises(machines.ArchiveError, match=r"^cannot find the commit this tree is at \(fatal: not a git "
                                                    r"repository.*\): a recording names the commit it was "
                                                    r"measured at, so it must be made in a git checkout$"):
        machines.tree_state()  # not a git repository: git's own words
    with monkeypatch.context() as patched:
        patched.setattr(machines.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("git")))
        with pytest.raises(machines.ArchiveError, match=r"^cannot find the commit this tree is at \(git\): "):
            machines.tree_state()  # no git at all
    monkeypatch.setenv("LANGUAGE", "zh_CN")  # git speaks Chinese to a Chinese reader
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    with pytest.raises(machines.ArchiveError, match=r"\(fatal: not a git repository"):
        machines.tree_state()  # git's words in English whatever the locale, as the rest of the message
    git = _git_tree(tmp_path, monkeypatch)
    with pytest.raises(machines.ArchiveError, match="a recording names the commit it was measured at"):
        machines.tree_state()  # a repository without a commit
    (tmp_path / "results" / "box").mkdir(parents=True)
    (tmp_path / "results" / "box" / "manifest.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("ignored.txt\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    head, changed = machines.tree_state()
    assert len(head) == 40 and changed == []
    (tmp_path / "results" / "box" / "manifest.json").write_text('{"recorded": "again"}')
    (tmp_path / "ignored.txt").write_text("ignored")
    assert machines.tree_state() == (head, []), "a new recording, or an ignored file, is not code"
    (tmp_path / "new.py").write_text("y = 1\n")
    assert machines.tree_state() == (head, ["new.py"]), "an untracked file can change what a build runs"
    first = machines.diff_digest(["new.py"])
    (tmp_path / "code.py").write_text("x = 2\n")
    assert machines.tree_state() == (head, ["code.py", "new.py"])
    second = machines.diff_digest(["code.py", "new.py"])
    (tmp_path / "new.py").write_text("y = 2\n")
    assert len({first, second, machines.diff_digest(["code.py", "new.py"])}) == 3
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    (tmp_path / "new.py").unlink()
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("z = 1\n")
    assert machines.tree_state() == (head, ["code.py", "pkg/sub/mod.py"]), "each untracked file, not its folder"
    git("add", "code.py")
    staged = machines.diff_digest(["code.py"])
    (tmp_path / "code.py").write_text("x = 3\n")
    git("add", "code.py")
    assert machines.diff_digest(["code.py"]) != staged, "a staged change is a change"
    git("checkout", "-q", "--", ".")
    git("reset", "-q", "--hard")
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    git("add", "-A")
    git("commit", "-qm", "two")
    shutil.rmtree(tmp_path / "pkg")
    clean = machines.diff_digest([])
    (tmp_path / "results" / "box" / "manifest.json").write_text('{"recorded": "once more"}')
    assert machines.diff_digest([]) == clean, "a recording is not code"
    (tmp_path / "blob.bin").write_bytes(b"\0\1\3" * 100)
    one = machines.diff_digest(["blob.bin"])
    (tmp_path / "blob.bin").write_bytes(b"\0\1\4" * 100)
    assert machines.diff_digest(["blob.bin"]) != one != clean, "a binary file's change, by its content"
    git("checkout", "-q", "--", ".")
    restored = machines.diff_digest([])
    git("rm", "-q", "code.py")
    assert machines.diff_digest(["code.py"]) != restored, "a file deleted (and the deletion staged) is a change"
    git("reset", "-q", "--hard")
    git("mv", "blob.bin", "moved.bin")  # a staged rename: git status names "blob.bin -> moved.bin", no file
    renamed = []
    for last in (b"\5", b"\6"):  # two edits, each keeping the file similar enough to read as the same one renamed
        (tmp_path / "moved.bin").write_bytes(b"\0\1\2" * 100 + last)
        git("add", "moved.bin")
        renamed.append(machines.diff_digest(machines.tree_state()[1]))
    assert renamed[0] != renamed[1], "a renamed binary file's edit, by its bytes"


def test_a_dirty_tree_is_recorded_only_when_told_and_then_named(lab, monkeypatch):
    dirty = ("0123456789abcdef" * 2 + "01234567", [f"snippets/f{i}.py" for i in range(7)])
    with pytest.raises(machines.ArchiveError) as refused:
        _record(monkeypatch, lab, "box", HERE, tree=dirty)
    assert str(refused.value) == (
        "the working tree has uncommitted changes or untracked files since commit 0123456789ab (snippets/f0.py, "
        "snippets/f1.py, snippets/f2.py, snippets/f3.py, snippets/f4.py and 2 more): a recording must come from a "
        "commit anyone can check out. Commit first, or record anyway with make record MACHINE=box ALLOW_DIRTY=1 (the "
        "manifest then names the digest of the changes)")
    assert not machines.results_dir().exists() or not list(machines.results_dir().iterdir())
    digested = []
    monkeypatch.setattr(machines, "diff_digest", lambda changed: digested.append(changed) or "abcdef0123456789")
    target = _record(monkeypatch, lab, "box", HERE, tree=dirty, allow_dirty=True)
    assert machines.load(target).commit == dirty[0] + "-dirty-abcdef0123456789"
    assert digested == [dirty[1]], "the digest of the changes git named"


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_make_record_says_what_it_measured_and_what_it_carried_over(lab, monkeypatch, tmp_path):
    # the staging folder is made with its parents, and no REFRESH of the caller's reaches the build unless asked
    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path / "not" / "yet" / "results"))
    monkeypatch.setenv("REFRESH", "1")
    first = _recorded(monkeypatch, lab, "box", HERE)
    assert first == machines.Recorded(tmp_path / "results" / "box", 2, 0, True)
    assert machines.load(first.target).commit == CLEAN[0], "a clean tree is named by its commit alone"
    assert _recorded(monkeypatch, lab, "box", HERE) == machines.Recorded(first.target, 0, 2, False)
    # the pages now ask for n=4: both measured, and the n=3 results no page uses are not kept
    assert _recorded(monkeypatch, lab, "box", HERE, n=4) == machines.Recorded(first.target, 2, 0, True)
    assert _recorded(monkeypatch, lab, "box", HERE, n=4, refresh=True) == machines.Recorded(first.target, 2, 0, True)
    # another machine's folder, replaced: nothing of it is carried over
    assert _recorded(monkeypatch, lab, "box", THERE, replace=True) == machines.Recorded(first.target, 2, 0, True)


def test_make_record_keeps_a_notebook_apart_from_the_results_and_records_again_when_it_changes(lab, monkeypatch,
                                                                                                 tmp_path):
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n", encoding="utf-8")
    first = _recorded(monkeypatch, lab, "box", HERE, notebook=source)
    assert (first.measured, first.carried, first.changed) == (2, 0, True), "a notebook is not a result"
    manifest = json.loads((first.target / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["notebooks"] == {"question": store.notebook_digest(source)}
    assert not list(first.target.glob("notebooks/*.source-digest")), "the digest lives in the manifest alone"
    again = _recorded(monkeypatch, lab, "box", HERE, notebook=source)
    assert (again.measured, again.carried, again.changed) == (0, 2, False)
    writer = store.Writer(tmp_path / "staging", machines.load(first.target))
    assert writer.reuse_notebook(source) == first.target / "notebooks" / "question.ipynb", "executed from this source"
    source.write_text("# %%\nprint(2)\n", encoding="utf-8")
    edited = _recorded(monkeypatch, lab, "box", HERE, notebook=source)
    assert (edited.measured, edited.carried) == (0, 2), "its results carried over as they were"
    assert edited.changed and json.loads((first.target / "manifest.json").read_text(encoding="utf-8"))[
        "notebooks"] == {"question": store.notebook_digest(source)}, "a notebook's new source is a new recording"
    (tmp_path / "other.py").write_text("# %%\n", encoding="utf-8")
    assert store.Writer(tmp_path / "staging", machines.load(first.target)).reuse_notebook(
        tmp_path / "other.py") is None, "a notebook it never recorded"
    bare = _recorded(monkeypatch, lab, "bare", HERE)  # a recording whose manifest names no notebooks at all
    manifest = json.loads((bare.target / "manifest.json").read_text(encoding="utf-8"))
    del manifest["notebooks"]
    (bare.target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    store.forget()
    assert store.Writer(tmp_path / "staging", machines.load(bare.target)).reuse_notebook(source) is None
    assert not _recorded(monkeypatch, lab, "bare", HERE).changed, "no notebooks named is no notebooks"


@pytest.mark.parametrize(("count", "shown"), [
    (5, "(f0.py, f1.py, f2.py, f3.py, f4.py)"), (6, "(f0.py, f1.py, f2.py, f3.py, f4.py and 1 more)")])
def test_a_dirty_tree_names_five_changes_and_counts_the_rest(lab, monkeypatch, count, shown):
    with pytest.raises(machines.ArchiveError) as refused:
        _record(monkeypatch, lab, "box", HERE, tree=("0123456789abcdef", [f"f{i}.py" for i in range(count)]))
    assert f"since commit 0123456789ab {shown}: a recording" in str(refused.value)


def test_recording_twice_measures_nothing_the_second_time_and_leaves_the_files(lab, monkeypatch):
    ran = []
    target = _record(monkeypatch, lab, "box", HERE, ran=ran)
    before = _snapshot(target)
    _record(monkeypatch, lab, "box", HERE, ran=ran)
    assert ran == [["machpage.facts", "machpage.speed"], []], "the second recording measured nothing"
    assert _snapshot(target) == before, "not one byte of the recording changed"
    _record(monkeypatch, lab, "box", HERE, ran=ran, refresh=True)
    assert ran[-1] == ["machpage.facts", "machpage.speed"], "REFRESH=1 measures everything again"


def test_an_edited_experiment_is_the_only_one_measured_again(lab, monkeypatch):
    ran = []
    target = _record(monkeypatch, lab, "box", HERE, ran=ran)
    facts_before = _snapshot(target / "machpage.facts")
    source = Path(lab.__file__)
    source.write_text(source.read_text().replace('return {"n": n}', 'return {"n": n, "edited": True}'))
    edited = importlib.reload(lab)
    _record(monkeypatch, edited, "box", HERE, ran=ran)
    assert ran[-1] == ["machpage.facts"], "speed's code did not change: carried over, not measured"
    assert _snapshot(target / "machpage.facts") != facts_before
    manifest = machines.load(target).manifest
    assert manifest["experiments"]["machpage.facts"] == cache.source_digest(edited.facts.func)
    assert manifest["experiments"]["machpage.speed"] == cache.source_digest(edited.speed.func)


def test_make_record_stages_outside_results_and_never_reads_recordings(lab, monkeypatch, tmp_path, private_cache):
    monkeypatch.setenv("FROZEN", "1")
    seen = {}

    def build(staging, env):
        seen.update(parent=staging.parent, name=staging.name, frozen=env.get("FROZEN"),
                    listing=sorted(p.name for p in machines.results_dir().iterdir())
                    if machines.results_dir().exists() else [])
        for source in ("a" * 64, "b" * 64):  # two versions of one experiment in one recording
            entry = {"format": 1, "experiment": "machpage.speed", "params": {"n": 3 if source[0] == "a" else 4},
                     "source": source, "computed_at": "2026-01-01T00:00:00+00:00", "elapsed_s": 0.1, "value": {}}
            store.store_text(staging / "machpage.speed" / f"{source[:16]}.json", json.dumps(entry))

    target = machines.record("box", build=build).target
    assert seen["parent"] == private_cache.parent / "recording" and seen["name"].startswith("box-")
    assert seen["listing"] == [], "nothing is written under results/ while the build runs"
    assert seen["frozen"] is None, "a recording measures; it never reads recordings"
    assert json.loads((target / "manifest.json").read_text())["experiments"] == {
        "machpage.speed": ["a" * 64, "b" * 64]}
    assert list((private_cache.parent / "recording").iterdir()) == [], "no staging folder is left"
    with pytest.raises(machines.ArchiveError) as error:
        machines.record("empty", build=lambda staging, env: None)
    assert str(error.value) == "the build ran no experiment: nothing to record"


def test_an_interrupted_recording_leaves_the_previous_one_as_it_was(lab, monkeypatch, private_cache):
    target = _record(monkeypatch, lab, "box", HERE)
    before = _snapshot(target)

    def interrupted(staging, env):
        monkeypatch.setenv("PITFALLS_RECORD", env["PITFALLS_RECORD"])
        monkeypatch.setenv("REFRESH", "1")
        cache.run(lab.facts, n=9)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        machines.record("box", build=interrupted)
    monkeypatch.delenv("PITFALLS_RECORD")
    assert _snapshot(target) == before
    assert sorted(p.name for p in machines.results_dir().iterdir()) == ["box"]
    assert list((private_cache.parent / "recording").iterdir()) == []


def test_a_failed_swap_puts_the_old_recording_back(lab, monkeypatch, tmp_path):
    target = _record(monkeypatch, lab, "box", HERE)
    before = _snapshot(target)
    staging = tmp_path / "staging"
    staging.mkdir()
    real = shutil.move

    def refuse_the_new_one(source, destination):
        if source == staging:
            raise OSError("disk full")
        return real(source, destination)

    monkeypatch.setattr(machines.shutil, "move", refuse_the_new_one)
    with pytest.raises(OSError, match="disk full"):
        machines._swap(staging, target, tmp_path / "aside")
    assert _snapshot(target) == before


def test_a_swap_makes_the_folders_it_needs_leaves_nothing_aside_and_a_first_failure_is_the_one_said(tmp_path,
                                                                                                   monkeypatch):
    aside = tmp_path / "aside"
    aside.mkdir()
    staging, target = tmp_path / "staging", tmp_path / "fresh" / "results" / "box"
    staging.mkdir()
    (staging / "manifest.json").write_text("{}")
    machines._swap(staging, target, aside)  # the first recording, into a results folder not made yet
    assert (target / "manifest.json").read_text() == "{}" and not staging.exists()
    again = tmp_path / "again"
    again.mkdir()
    (again / "manifest.json").write_text("[]")
    machines._swap(again, target, aside)
    assert (target / "manifest.json").read_text() == "[]" and list(aside.iterdir()) == [], "the old one goes"
    real = shutil.move

    def refuse(source, destination):
        if source == staging:
            raise OSError("disk full")
        return real(source, destination)

    staging.mkdir()
    monkeypatch.setattr(machines.shutil, "move", refuse)
    with pytest.raises(OSError, match="^disk full$"):  # no recording before: nothing to put back, the cause said
        machines._swap(staging, tmp_path / "other", aside)


def test_a_recording_measures_anew_what_it_does_not_carry_over(lab, monkeypatch, tmp_path):
    assert not cache.run(lab.speed, n=6).cached
    monkeypatch.setenv("PITFALLS_RECORD", str(tmp_path / "rec"))
    with context.using():
        assert not cache.run(lab.speed, n=6).cached, "this machine's cache is not a recording"
        assert cache.run(lab.speed, n=6).cached, "measured once per build"
    [kept] = (tmp_path / "rec" / "machpage.speed").iterdir()
    assert json.loads(kept.read_text())["params"] == {"n": 6}


def test_a_kept_result_rounds_its_duration_to_milliseconds(lab, monkeypatch, tmp_path):
    monkeypatch.setenv("PITFALLS_RECORD", str(tmp_path / "rec"))
    clock = iter([10.0, 11.23456])
    monkeypatch.setattr(cache.time, "perf_counter", lambda: next(clock))
    cache.run(lab.speed, n=4)
    [kept] = (tmp_path / "rec" / "machpage.speed").iterdir()
    assert json.loads(kept.read_text())["elapsed_s"] == 1.235 and json.loads(kept.read_text())["format"] == 1


def test_notebooks_are_kept_into_a_new_folder_and_beside_each_other(tmp_path):
    folder = tmp_path / "not" / "yet"
    executed = tmp_path / "executed.ipynb"
    executed.write_text('{"cells": []}')
    writer = store.Writer(folder, None)
    for name in ("one.py", "two.py"):
        (tmp_path / name).write_text(f"# {name}\n")
        writer.keep_notebook(tmp_path / name, executed)
        assert writer.reuse_notebook(tmp_path / name) is None, "nothing to carry over without a recording"
    assert sorted(p.name for p in (folder / "notebooks").iterdir()) == [
        "one.ipynb", "one.source-digest", "two.ipynb", "two.source-digest"]
    assert (folder / "notebooks" / "two.ipynb").read_text() == '{"cells": []}'


def test_a_notebook_is_carried_over_only_from_its_own_source(lab, monkeypatch, tmp_path):
    source, target = _record_with_notebook(lab, monkeypatch, tmp_path)
    writer = store.Writer(tmp_path / "new", machines.load(target))
    assert writer.reuse_notebook(source) == target / "notebooks" / "question.ipynb"
    source.write_text("# %%\nprint(2)\n")
    assert writer.reuse_notebook(source) is None


def test_recorded_tables_are_drawn_with_the_sites_markdown_extensions(build):
    build.markdown = (["toc"], {"toc": {"permalink": "#"}})
    assert machines._html("## Title") == ('<h2 id="title">Title<a class="headerlink" href="#title" '
                                          'title="Permanent link">#</a></h2>')
    assert "<table>" not in machines._html("| a |\n|---|\n| 1 |")


def test_only_drawers_that_take_the_result_alone_and_draw_text_are_redrawn(lab, monkeypatch):
    """A code panel's drawing code lists derivations (numbers, not Markdown) and drawers that need more than the
    result; neither is redrawn from a recording, and neither is reported as a recording that cannot be drawn."""
    _record(monkeypatch, lab, "gpu-h200", THERE, n=3)
    here = cache.run(lab.speed, n=3)

    def derivation(result):
        return {"ratio": result["ratio"]}

    def two_arguments(result, order):
        return f"{order} {result['ratio']}"

    shown = machines.compare(here, [derivation, two_arguments, lambda r: f"ratio {r['ratio']}"])
    assert "cannot be drawn" not in shown and "<p>ratio 3.0</p>" in shown and shown.count("tabbed-block") == 1
    assert machines.compare(here, [derivation, two_arguments]) == "", "nothing to redraw: no panel"
    broken = machines.compare(here, [lambda r: r["missing"] if r.fingerprint["device"] == "cuda" else "drawn here"])
    assert "gpu-h200: its recording cannot be drawn (KeyError" in broken, "a drawer failing on a recording is said"


def test_a_drawer_that_cannot_draw_this_builds_result_is_not_redrawn_from_recordings(lab, monkeypatch):
    """A panel may list drawing code the page ran on another result: it fails on this build's result too, so no
    recording is said to be undrawable because of it."""
    _record(monkeypatch, lab, "gpu-h200", THERE, n=3)
    here = cache.run(lab.speed, n=3)
    shown = machines.compare(here, [lambda r: r["rows"], lambda r: f"ratio {r['ratio']}"])
    assert "cannot be drawn" not in shown and "<p>ratio 3.0</p>" in shown


def test_a_recorded_result_is_checked_once_and_each_reader_gets_its_own_copy(lab, monkeypatch):
    _record(monkeypatch, lab, "small", THERE, n=5)
    [rec] = machines.recordings()
    calls = []
    real = store.recording_schema.check_entry
    monkeypatch.setattr(store.recording_schema, "check_entry", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = rec.entry("machpage.speed", {"n": 5})
    first["value"]["ratio"] = -1.0  # a reader that changes its copy changes nobody else's
    second = rec.entry("machpage.speed", {"n": 5})
    assert second["value"]["ratio"] == 5.0 and not calls, "checked once, when its folder was loaded"
    path = next((machines.results_dir() / "small" / "machpage.speed").iterdir())
    value = json.loads(path.read_text())
    value["value"]["ratio"] = 6.5
    path.write_text(json.dumps(value) + "  ")  # another size: the file is read and checked again
    assert rec.entry("machpage.speed", {"n": 5})["value"]["ratio"] == 6.5 and len(calls) == 1
    value["value"]["ratio"] = float("nan")
    path.write_text(json.dumps(value))  # a file changed after its folder was checked is refused as it is now
    with pytest.raises(store.ArchiveError, match="not a finite number"):
        rec.entry("machpage.speed", {"n": 5})


def _recorded_ratio(folder, ratio: float) -> None:
    """The speed result recorded in ``folder``, its ratio changed to ``ratio`` (another host measured that)."""
    [entry_file] = (folder / "machpage.speed").iterdir()
    entry = json.loads(entry_file.read_text())
    entry["value"]["ratio"] = ratio
    entry_file.write_text(json.dumps(entry, indent=1, sort_keys=True))


def test_a_machine_of_the_same_kind_whose_interval_lies_apart_is_named_and_no_other(lab, monkeypatch):
    _recorded_ratio(_record(monkeypatch, lab, "twin-host", HERE), 9.0)  # this build's fingerprint: its kind
    _recorded_ratio(_record(monkeypatch, lab, "broken-host", HERE), 7.0)  # one the drawing code cannot read
    _record(monkeypatch, lab, "other-n", HERE, n=5)  # the same kind, without this result
    _recorded_ratio(_record(monkeypatch, lab, "gpu-h200", THERE), 9.0)  # another kind: never compared
    store.forget()
    assert [rec.label for rec in machines.same_kind()] == ["broken-host", "other-n", "twin-host"]
    date = {rec.label: rec.manifest["recorded_at"][:10] for rec in machines.recordings()}["twin-host"]
    mine = {"low": 2.0, "high": 4.0}

    def intervals_of(result):
        if result["ratio"] == 7.0:
            raise KeyError("rows")
        if result["ratio"] == 3.0:  # this build's
            return {"apart": mine, "touching above": mine, "touching below": mine, "below": mine,
                    "open here": {"low": None, "high": 4.0}, "open there": mine, "here only": mine}
        return {"apart": {"low": 8.0, "high": 10.0}, "touching above": {"low": 4.0, "high": 6.0},
                "touching below": {"low": 1.0, "high": 2.0}, "below": {"low": 0.5, "high": 1.5},
                "open here": {"low": 8.0, "high": 10.0}, "open there": {"low": 8.0, "high": None},
                "there only": {"low": 8.0, "high": 10.0}}

    here = cache.run(lab.speed, n=3)
    assert machines.disagreeing(here, intervals_of) == {
        "apart": [("twin-host", date, {"low": 8.0, "high": 10.0})],
        "below": [("twin-host", date, {"low": 0.5, "high": 1.5})]}
    assert machines.disagreeing(cache.run(lab.facts, n=3), intervals_of) == {}, "results that do not depend on time"
    here.exp = None
    assert machines.disagreeing(here, intervals_of) == {}, "a result of no experiment"
    monkeypatch.setenv("FROZEN", "1")
    (machines.results_dir() / "primary").write_text("twin-host\n")
    assert [rec.label for rec in machines.same_kind()] == ["broken-host", "other-n"], \
        "a frozen build compares the leading machine with the others of its kind, never with itself"


def test_while_make_serve_measures_a_result_not_measured_here_is_the_leading_machines_marked_pending(lab, monkeypatch):
    _record(monkeypatch, lab, "gpu-h200", THERE)
    _record(monkeypatch, lab, "cpu-other", {**HERE, "cpu": "other"})
    (machines.results_dir() / "primary").write_text("gpu-h200\n")
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    stored = []
    monkeypatch.setattr(store.LocalStore, "put", lambda self, *args: stored.append(args))
    with context.using(context.Build(page="a.md")) as build:
        shown = cache.run(lab.speed, n=3)
        assert shown.recorded_on == "gpu-h200" and not shown.here and shown.fingerprint == THERE and not stored
        assert shown.value["ratio"] == 3.0 and shown.exp is lab.speed
        assert build.pending == {"a.md": {"machpage.speed": shown.elapsed_s}}
        fresh = cache.run(lab.speed, n=11)  # not recorded there: measured here, now
        assert fresh.here and fresh.fingerprint == HERE and fresh.value["ratio"] == 11.0 and len(stored) == 1
        assert build.pending == {"a.md": {"machpage.speed": shown.elapsed_s}}
    (machines.results_dir() / "primary").write_text("nowhere\n")  # no machine to lead with: measured here
    with context.using(context.Build(page="b.md")) as build:
        assert cache.run(lab.facts, n=3).here and build.pending == {}


def test_a_recorded_notebook_is_the_source_here_with_the_recordings_outputs_ids_and_language(lab, monkeypatch, tmp_path):
    """What a frozen build renders of a recorded notebook: the source's cells as they are here, each code cell
    with the recorded outputs; the recorded cell ids where they are safe ones and the cells match one for one;
    the recorded language_info and nothing else of its metadata; kept under a name keyed by both files."""
    import hashlib

    import jupytext
    import nbformat

    source = tmp_path / "question.py"
    source.write_text("# %% [markdown]\n# The question\n\n# %%\nprint(1)\n")
    executed = tmp_path / "executed.ipynb"
    notebook = jupytext.read(source)
    notebook.cells[0]["id"], notebook.cells[1]["id"] = "intro", "x" * 65
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    notebook.cells[1].execution_count = 7
    notebook.metadata.update(language_info={"name": "python", "version": "3.11.9"},
                             kernelspec={"name": "recorded-kernel", "display_name": "K", "language": "python"},
                             widgets={"x": 1})
    executed.write_text(nbformat.writes(notebook))
    recording = _record_notebook(lab, monkeypatch, source, executed)
    lead = machines.recordings()[0]
    rendered = machines.recorded_notebook(source, lead)
    recorded = recording / "notebooks" / "question.ipynb"
    digest = hashlib.sha256(recorded.read_bytes() + source.read_bytes()).hexdigest()[:16]
    assert rendered == store.cache_dir().parent / "notebooks" / "frozen" / "box" / f"question-{digest}.ipynb"
    shown = nbformat.read(rendered, as_version=4)
    assert [cell["id"] for cell in shown.cells] == ["intro", "cell-1"], "an id longer than 64 characters is not kept"
    assert shown.cells[0].source == "The question" and shown.cells[1].source == "print(1)"
    assert shown.cells[1].outputs[0]["text"] == "1\n" and shown.cells[1].execution_count == 7
    assert shown.metadata["language_info"] == {"name": "python", "version": "3.11.9"}
    assert "widgets" not in shown.metadata and shown.metadata.get("kernelspec", {}).get("name") != "recorded-kernel"
    before = rendered.stat().st_mtime_ns
    assert machines.recorded_notebook(source, lead) == rendered and rendered.stat().st_mtime_ns == before, \
        "made once"
    source.write_text("# %% [markdown]\n# The question, reworded\n\n# %%\nprint(1)\n")
    monkeypatch.setitem(lead.manifest["notebooks"], "question", store.notebook_digest(source))
    reworded = machines.recorded_notebook(source, lead)
    assert reworded != rendered and [cell["id"] for cell in nbformat.read(reworded, as_version=4).cells] == \
        ["intro", "cell-1"]
    source.write_text("# %%\nprint(1)\n")  # a cell fewer: no recorded id matches a cell
    monkeypatch.setitem(lead.manifest["notebooks"], "question", store.notebook_digest(source))
    assert [cell["id"] for cell in nbformat.read(machines.recorded_notebook(source, lead), as_version=4).cells] == \
        ["cell-0"]
    source.write_text("# %%\nprint(2)\n")
    monkeypatch.setitem(lead.manifest["notebooks"], "question", store.notebook_digest(source))
    with pytest.raises(machines.ArchiveError) as differs:
        machines.recorded_notebook(source, lead)
    assert str(differs.value) == ("FROZEN=1: results/box/notebooks/question.ipynb: its code cells are not those of "
                                  "question.py (code cell 1 differs; 1 code cells here, 1 there); re-record with "
                                  "make record MACHINE=box")


def test_of_a_machine_recorded_with_several_releases_one_is_shown_beside_this_one(lab, monkeypatch):
    """The one ``results/primary`` names, else the one with this build's torch, else the newest; the others are
    releases, and the Environment page says where each recording is shown."""
    for label, torch in (("there-a", "2.13.0"), ("there-b", "2.6.0"), ("there-c", "2.14.1"), ("there-d", "2.9.0")):
        _record(monkeypatch, lab, label, {**THERE, "torch": torch})
    _record(monkeypatch, lab, "here", HERE)
    _record(monkeypatch, lab, "here-old", {**HERE, "torch": "2.6.0"})
    assert [rec.label for rec in machines.others()] == ["there-a"], "this build's torch"
    (machines.results_dir() / "primary").write_text("there-b\n", encoding="utf-8")
    assert [rec.label for rec in machines.others()] == ["there-b"], "the one results/primary names"
    (machines.results_dir() / "primary").unlink()
    _as_machine(monkeypatch, {**HERE, "torch": "2.5.0"})  # no release of THERE has this build's torch
    assert [rec.label for rec in machines.others()] == ["there-c"], "the newest: 2.14.1, not 2.9.0 or 2.6.0"
    _as_machine(monkeypatch, HERE)
    (machines.results_dir() / "broken").mkdir()
    (machines.results_dir() / "broken" / "manifest.json").write_text("{not json", encoding="utf-8")
    store.forget()
    roles = {line.split(" | ")[0].strip("|` "): line.rsplit(" | ", 1)[1].rstrip(" |")
             for line in machines.overview().splitlines() if line.startswith("| `")}
    assert roles == {"here": "this build's results", "there-a": "shown beside them",
                     "here-old": "another torch release of this machine (Torch versions page)",
                     "there-b": "another release of a machine shown beside them",
                     "there-c": "another release of a machine shown beside them",
                     "there-d": "another release of a machine shown beside them"}
    assert re.search(r"\|\n\n\nLeft out: results/broken/ \(results/broken/manifest\.json: not valid JSON \([^\n]*\)\)\n$",
                     machines.overview()), "a refused recording: named under the table, one line each"
    (machines.results_dir() / "worse").mkdir()
    store.forget()
    assert re.search(r"\)\n\nLeft out: results/worse/ \([^\n]*\)\n$", machines.overview()), "each on a line of its own"


def test_an_experiment_recorded_from_several_versions_of_its_code_is_current_if_one_is_todays(lab, monkeypatch):
    target = _record(monkeypatch, lab, "box", HERE)
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    today = manifest["experiments"]["machpage.speed"]
    manifest["experiments"]["machpage.speed"] = ["0" * 64, today]
    manifest["experiments"]["machpage.facts"] = ["0" * 64, "1" * 64]
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    store.forget()
    [rec] = machines.recordings()
    assert machines.freshness(rec) == (1, 1)


def test_a_recorded_string_shown_in_markdown_keeps_its_quotes_and_escapes_markups_marks():
    assert machines._plain('a "b" \'c\' <d> & e|f *g*') == 'a "b" \'c\' &lt;d&gt; &amp; e\\|f \\*g\\*'


def test_only_drawers_that_take_the_result_alone_are_redrawn_for_other_machines(lab, monkeypatch):
    """A panel's drawer that needs more than the result has nothing to redraw: no box. One that takes the result
    alone but draws another result's (or a builtin whose signature cannot be read) still lists the recordings it
    could not use."""
    _record(monkeypatch, lab, "gpu-h200", THERE, n=3)
    here = cache.run(lab.speed, n=7)  # recorded there for n=3 only: not recorded for this result
    assert machines.compare(here, [lambda result, order: "x"]) == ""
    listed = machines.compare(here, [lambda result: None])
    assert "The same measured on other machines: none usable" in listed and "not recorded on gpu-h200" in listed
    assert machines.compare(here, [min]) == listed, "a builtin without a signature is tried, as one with"
