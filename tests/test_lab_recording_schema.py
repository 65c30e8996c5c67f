"""A recording under ``results/`` arrives by pull request: hostile recordings are refused (left out of a normal build
with one named warning, stopping a frozen one) or shown escaped, and nothing of a recorded notebook but its text and
PNG outputs reaches a page. Each case starts from a copy of a real recording and spoils one thing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT

from snippets.lab import machines, recording_schema
from snippets.lab import store

REAL = ROOT / "results" / "epyc-2core"
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture()
def results(tmp_path, monkeypatch):
    """A results folder holding a copy of a real recording (``good``); cleared of cached listings after."""
    root = tmp_path / "results"
    shutil.copytree(REAL, root / "good")
    _edit(root / "good" / "manifest.json", lambda m: m.update(label="good"))
    monkeypatch.setenv("PITFALLS_RESULTS_DIR", str(root))
    monkeypatch.delenv("FROZEN", raising=False)
    store.forget()
    yield root
    store.forget()


def _edit(path: Path, change) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    path.write_text(json.dumps(value), encoding="utf-8")


def _a_result(root: Path, experiment: str = "loader.question_timing") -> Path:
    return next((root / "good" / experiment).glob("*.json"))


def _refusal(root: Path) -> str:
    with pytest.raises(machines.ArchiveError) as raised:
        machines.load(root / "good")
    return str(raised.value)


def test_the_real_recordings_are_accepted():
    for folder in sorted((ROOT / "results").iterdir()):
        if folder.is_dir() and not folder.name.startswith("."):
            assert machines.load(folder).label == folder.name


def _set(*keys, value):
    def change(manifest):
        target = manifest
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


MANIFEST_CASES = {
    "device_name with a script": (_set("fingerprint", "device_name", value=f"CPU {SCRIPT}"),
                                  "manifest.json: fingerprint.device_name: 'CPU <script>"),
    "cpu with markup": (_set("fingerprint", "cpu", value='AMD" onmouseover="alert(3)'), "fingerprint.cpu"),
    "torch breaking out of an attribute": (_set("fingerprint", "torch", value='2.13.0"><img src=x onerror=alert(6)>'),
                                           "fingerprint.torch: '2.13.0\"><img"),
    "python with markup": (_set("fingerprint", "python", value="3.11<b>"), "fingerprint.python"),
    "start method unknown": (_set("fingerprint", "start_method", value=SCRIPT), "fingerprint.start_method"),
    "device unknown": (_set("fingerprint", "device", value="tpu"), "fingerprint.device: 'tpu' is not one of"),
    "threads as text": (_set("fingerprint", "threads", value="2"), "fingerprint.threads: expected an integer, found str"),
    "threads as a boolean": (_set("fingerprint", "threads", value=True), "fingerprint.threads: expected an integer"),
    "threads huge": (_set("fingerprint", "threads", value=10 ** 9), "fingerprint.threads: 1000000000 is outside"),
    "threads zero": (_set("fingerprint", "threads", value=0), "fingerprint.threads: 0 is outside"),
    "fingerprint as a list": (_set("fingerprint", value=["cpu"]), "fingerprint: expected a JSON object, found list"),
    "unknown fingerprint field with a script": (_set("fingerprint", "html", value=SCRIPT), "fingerprint.html: '<script>"),
    "commit with a script": (_set("commit", value=SCRIPT), "commit: '<script>"),
    "date with a script": (_set("recorded_at", value=f"2026-11-30{SCRIPT}"), "recorded_at"),
    "date that is no date": (_set("recorded_at", value="2026-13-45T99:00:00+00:00"), "is not a date and time"),
    "label with a script": (_set("label", value=SCRIPT), "label: '<script>"),
    "label of another folder": (_set("label", value="other"), "label: 'other' does not match its folder 'good'"),
    "format unknown": (_set("format", value=2), "format: 2 is not this project's recording format 1"),
    "experiment name with a script": (_set("experiments", SCRIPT, value="0" * 64), "experiments: a name"),
    "experiment digest with a script": (_set("experiments", "loader.workers", value=SCRIPT), "experiments.loader.workers"),
    "experiments as a list": (_set("experiments", value=[]), "experiments: expected a JSON object, found list"),
    "notebook name with a script": (_set("notebooks", SCRIPT, value="0" * 64), "notebooks: a name"),
    "unknown manifest field": (_set("html", value=SCRIPT), "manifest.json: unknown field(s) html"),
    "missing fingerprint": (lambda m: m.pop("fingerprint"), "manifest.json: missing field(s) fingerprint"),
}


@pytest.mark.parametrize("case", MANIFEST_CASES, ids=list(MANIFEST_CASES))
def test_a_spoiled_manifest_is_refused_naming_the_field(results, case):
    change, expected = MANIFEST_CASES[case]
    _edit(results / "good" / "manifest.json", change)
    message = _refusal(results)
    assert message.startswith("results/good/manifest.json"), message
    assert expected in message, message


def _in_value(change):
    def edit(entry):
        change(entry["value"])
    return edit


def _first_row(key, value):
    def change(v):
        v["rows"][0][key] = value
    return change


RESULT_CASES = {
    "a label with a script": (_in_value(_first_row("label", SCRIPT)), "value.rows[0].label: '<script>"),
    "a markdown link to javascript": (_in_value(_first_row("label", "[x](javascript:alert(1))")), "value.rows[0].label"),
    "attributes through attr_list": (_in_value(_first_row("label", "x { onclick=alert(1) }")), "value.rows[0].label"),
    "an HTML entity": (_in_value(_first_row("label", "&lt;script&gt;")), "value.rows[0].label"),
    "a control character": (_in_value(_first_row("label", "a\x1b[31m")), "value.rows[0].label"),
    "a negative time": (_in_value(_first_row("median", -0.001)), "value.rows[0].median: -0.001 is outside"),
    "a huge time": (_in_value(_first_row("median", 1e12)), "value.rows[0].median: 1000000000000.0 is outside"),
    "a huge number": (_in_value(_first_row("contention", 1e300)), "value.rows[0].contention"),
    "a very long string": (_in_value(_first_row("label", "x" * 10_000)), "a string of 10,000 characters"),
    "a deep value": (_in_value(lambda v: v.update(deep=json.loads("[" * 40 + "]" * 40))), "nested more than"),
    "an unknown parameter": (lambda e: e["params"].update(evil=1), "params.evil: loader.question_timing has no parameter"),
    "params of another experiment": (lambda e: e.update(experiment="loader.workers"), "experiment: 'loader.workers'"),
    "an unknown field": (lambda e: e.update(html=SCRIPT), "unknown field(s) html"),
    "a negative compute time": (lambda e: e.update(elapsed_s=-1), "elapsed_s: -1 is outside"),
    "a value that is a list": (lambda e: e.update(value=[]), "value: expected a JSON object, found list"),
}


@pytest.mark.parametrize("case", RESULT_CASES, ids=list(RESULT_CASES))
def test_a_spoiled_result_is_refused_naming_the_file_and_field(results, case):
    change, expected = RESULT_CASES[case]
    path = _a_result(results)
    _edit(path, change)
    message = _refusal(results)
    assert message.startswith(f"results/good/loader.question_timing/{path.name}"), message
    assert expected in message, message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_numbers_that_are_not_finite_are_refused(results, constant):
    path = _a_result(results)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"median": ', f'"median": {constant}, "was": ', 1), encoding="utf-8")
    assert f"{constant} is not a finite number" in _refusal(results)


def test_a_100_mb_file_is_refused_before_it_is_read(results):
    path = _a_result(results)
    with path.open("r+b") as handle:  # sparse: 100 MB on paper, nothing on disk
        handle.truncate(100 * 1024 * 1024)
    assert "100.0 MiB, over the 4 MiB a recorded file may have" in _refusal(results)


def test_links_out_of_results_are_refused(results, tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_text('{"format": 1}')
    path = _a_result(results)
    path.unlink()
    path.symlink_to(outside)
    assert "is a symbolic link; a recording holds plain files only" in _refusal(results)
    (results / "linked").symlink_to(results / "good", target_is_directory=True)
    store.forget()
    refused = dict(machines.refused())
    assert refused["linked"] == "results/linked: is a symbolic link; a recording is a plain folder"


def test_files_a_recording_does_not_have_are_refused(results):
    (results / "good" / "index.html").write_text(SCRIPT)
    assert "results/good/index.html: is not a file a recording has" in _refusal(results)


def test_text_that_is_not_json_or_not_utf8_is_refused(results):
    path = _a_result(results)
    path.write_bytes(b"\xff\xfe not text")
    assert "not UTF-8 text" in _refusal(results)
    path.write_text("{not json", encoding="utf-8")
    assert "not valid JSON" in _refusal(results)


def _notebook_output(results, output) -> Path:
    path = results / "good" / "notebooks" / "question_seeding.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    code["outputs"].append(output)
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


NOTEBOOK_CASES = {
    "a script as HTML": ({"output_type": "display_data", "metadata": {},
                          "data": {"text/html": SCRIPT, "text/plain": "x"}}, "'text/html' is not one of image/png, text/plain"),
    "javascript": ({"output_type": "execute_result", "metadata": {}, "execution_count": 1,
                    "data": {"application/javascript": "alert(5)"}}, "'application/javascript' is not one of"),
    "an SVG with a script": ({"output_type": "display_data", "metadata": {},
                              "data": {"image/svg+xml": f"<svg>{SCRIPT}</svg>"}}, "image/svg+xml"),
    "markdown": ({"output_type": "display_data", "metadata": {}, "data": {"text/markdown": "[x](javascript:1)"}},
                 "text/markdown"),
    "a PNG that is not one": ({"output_type": "display_data", "metadata": {},
                               "data": {"image/png": "PHNjcmlwdD4="}}, "an image/png output that is not a PNG image"),
    "an error output": ({"output_type": "error", "ename": "E", "evalue": SCRIPT, "traceback": []},
                        "'error' is not one of display_data, execute_result, stream"),
    "an unknown stream": ({"output_type": "stream", "name": SCRIPT, "text": "x"}, ".name: '<script>alert(1)</script>' is not one of stderr, stdout"),
}


@pytest.mark.parametrize("case", NOTEBOOK_CASES, ids=list(NOTEBOOK_CASES))
def test_a_notebook_output_the_notebook_does_not_make_is_refused(results, case):
    output, expected = NOTEBOOK_CASES[case]
    _notebook_output(results, output)
    message = _refusal(results)
    assert message.startswith("results/good/notebooks/question_seeding.ipynb: cell"), message  # cells[N] or cell N
    assert expected in message, message


def test_a_refused_recording_is_left_out_with_one_named_warning(results, capsys):
    shutil.copytree(results / "good", results / "evil")
    _edit(results / "evil" / "manifest.json", lambda m: m.update(label="evil") or m["fingerprint"].update(
        device_name=SCRIPT))
    assert [rec.label for rec in machines.recordings()] == ["good"]
    assert [name for name, _ in machines.refused()] == ["evil"]
    machines.recordings()
    warnings = [line for line in capsys.readouterr().err.splitlines() if "left out" in line]
    assert warnings == ["WARNING -  recorded machine results/evil/ left out: results/evil/manifest.json: "
                        "fingerprint.device_name: '<script>alert(1)</script>' is not in the expected format"]


def test_a_frozen_build_stops_at_a_refused_recording(results, monkeypatch):
    shutil.copytree(results / "good", results / "evil")
    monkeypatch.setenv("FROZEN", "1")
    with pytest.raises(machines.ArchiveError, match=r"^FROZEN=1: results/evil/ is refused \(results/evil/manifest"
                                                    r"\.json: label: 'good' does not match its folder 'evil'\)"):
        machines.recordings()


def test_the_machines_table_escapes_what_it_shows(results, monkeypatch):
    """The recorded strings it shows (device, torch, date) are escaped even where the schema lets markdown marks
    through, and a refused folder's reason (which quotes the hostile value) is shown as text."""
    from snippets.lab import render  # noqa: F401  (the table's renderer)

    _edit(results / "good" / "manifest.json", _set("fingerprint", "device_name", value="CPU (x_y_z) #1 *bold* [a]"))
    shutil.copytree(results / "good", results / "evil")
    _edit(results / "evil" / "manifest.json", lambda m: m.update(label="evil") or m["fingerprint"].update(
        device_name=SCRIPT))
    store.forget()
    html = machines._html(machines.overview())
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "CPU (x_y_z) #1 *bold* [a]" in html and "<em>" not in html


def test_a_recording_is_checked_once_while_its_files_stay_as_they_were_and_again_after_an_edit(results, monkeypatch):
    """make serve rebuilds re-import the lab: the folders it checked are carried over (memo/adopt), never trusted
    once a file of them changed."""
    checks = []
    real = recording_schema.check_folder
    monkeypatch.setattr(recording_schema, "check_folder", lambda *args: checks.append(args[0]) or real(*args))
    assert machines.load(results / "good").label == "good"
    store.adopt(store.memo())  # what the plugin does around a purge
    assert machines.load(results / "good").label == "good"
    assert len(checks) == 1, "an unchanged folder was checked again"
    _edit(_a_result(results), lambda entry: entry.update(experiment=SCRIPT))
    assert SCRIPT in _refusal(results) or "experiment" in _refusal(results)
    assert len(checks) >= 2, "an edited folder was not checked again"


@pytest.mark.parametrize(("schema", "value", "why"), [
    ({"type": "integer"}, "3", "expected an integer, found str"),
    ({"type": ["object", "null"]}, [1], "expected a JSON object, found list"),  # the first type it names
    ({"minimum": 0}, -2, "-2 is outside 0 … 1e+30"),
    ({"maximum": 5}, 7.5, "7.5 is outside -1e+30 … 5"),
    ({"minimum": 1, "maximum": 5}, 0, "0 is outside 1 … 5"),
    ({"enum": ["cpu", "cuda"]}, "x" * 50, f"{'x' * 40!r} is not one of cpu, cuda"),
    ({"const": 1}, 2, "'2' is not one of 1"),
    ({"required": ["label", "commit", "format"]}, {"label": "a"}, "missing field(s) commit, format"),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "z": 2, "b": 3}, "unknown field(s) b, z"),
    ({"properties": {}, "additionalProperties": False}, {f"k{i:03}": 0 for i in range(60)},
     "unknown field(s) " + ", ".join(f"k{i:03}" for i in range(60))[:200]),
    ({"maxProperties": 2}, {"a": 1, "b": 2, "c": 3}, "more than 2 entries"),
    ({"maxItems": 1}, [1, 2], "more than 1 entries"),
    ({"maxLength": 3}, "x" * 1500, "a string of 1,500 characters (at most 3)"),
    ({"pattern": "^[a-z]+$"}, "A" * 90, f"{'A' * 80!r} is not in the expected format"),
])
def test_a_schema_error_is_said_in_the_projects_words(schema, value, why):
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    assert recording_schema._why(best_match(Draft202012Validator(schema).iter_errors(value))) == why


@pytest.mark.parametrize(("path", "field"), [
    (["fingerprint", "torch"], "fingerprint.torch"), (["rows", 0, "label"], "rows[0].label"), ([2, "x"], "[2].x"),
    (["..odd"], "..odd"), ([], "")])  # a key that starts with dots keeps them
def test_a_refused_field_is_named_as_a_path_a_reader_can_follow(path, field):
    assert recording_schema._field(path) == field


def test_a_frozen_builds_lead_recording_is_checked_against_its_experiments_parameters(results, monkeypatch):
    """A result whose parameters its experiment does not take (its file named to match) is refused when the
    recording a frozen build leads with is read."""
    path = _a_result(results)
    _edit(path, lambda entry: entry["params"].update(bogus=1))
    entry = json.loads(path.read_text(encoding="utf-8"))
    path.rename(path.with_name(f"{store.params_key(entry['params'])}.json"))
    monkeypatch.setenv("FROZEN", "1")
    (results / "primary").write_text("good\n", encoding="utf-8")
    with pytest.raises(machines.ArchiveError, match="bogus"):
        machines.primary()
