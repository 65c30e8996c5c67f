"""A failing block, a missing include, a contradicted claim or a bad experiment call fails the strict build
with one message that names the page and the block — whatever the log flags (``-q`` and ``-v`` blind mkdocs' own
warning counter), in ``mkdocs build`` and in ``make serve``'s first build — and no traceback is published.
Checked on a throwaway site, not the real docs."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, build_site

CONFIG = f"""
site_name: throwaway
theme:
  name: mkdocs
plugins:
  - markdown-exec
  - pitfalls
markdown_extensions:
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["{ROOT}"]
      check_paths: true
"""


def _build(tmp_path, page: str):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "probe.md").write_text(textwrap.dedent(page))
    (tmp_path / "mkdocs.yml").write_text(CONFIG)
    process = build_site(tmp_path / "site", config=tmp_path / "mkdocs.yml", cwd=tmp_path,
                         env_extra={"PITFALLS_CACHE_DIR": str(tmp_path / "cache")})
    return process.returncode, process.stdout + process.stderr


GOOD = '''
# Probe
```python exec="1" id="probe-good"
from snippets.lab import run, code_panel, say
from snippets.experiments.seeding import measure, checks
result = run(measure.loader_between_models)
print(say(checks.peek_changes_second(result), "the second model changes"))
print(code_panel(result))
```
'''


def test_control_page_builds(tmp_path):
    code, log = _build(tmp_path, GOOD)
    assert code == 0, log
    html = (tmp_path / "site" / "probe" / "index.html").read_text()
    assert 'class="pitfalls-claim"' in html and "The second model changes" in html, "a claim that starts a sentence gets its capital"


@pytest.mark.parametrize(
    ("name", "page", "expected"),
    [
        ("failing block",
         '```python exec="1" id="probe-broken"\nraise RuntimeError("boom in the block")\n```\n',
         ["[page docs/probe.md]", "'probe-broken'", "RuntimeError: boom in the block"]),
        ("missing include",
         '```python\n--8<-- "snippets/no_such_recipe.py"\n```\n',
         ["Building page docs/probe.md failed: SnippetMissingError",
          "Snippet at path 'snippets/no_such_recipe.py' could not be found"]),
        ("contradicted claim",
         '```python exec="1" id="probe-claim"\nfrom snippets.lab import check, say\n'
         '@check("two plus two makes five")\ndef arithmetic(total):\n    return total == 5, {"total": total}\n'
         'print(say(arithmetic(2 + 2), "Two plus two is {total}."))\n```\n',
         ["Claim contradicted: check",
          "(two plus two makes five) does not hold — measured: total = 4 — stated on page docs/probe.md: "
          "'Two plus two is 4.'"]),
        ("result without its code",
         '```python exec="1" id="probe-hidden"\nfrom snippets.lab import run\n'
         'from snippets.experiments.seeding import measure\nprint(run(measure.creation_order)["same_after_reseed"])\n```\n',
         ["[page docs/probe.md] runs experiment seeding.creation_order but never shows its code"]),
        ("unknown parameter",
         '```python exec="1" id="probe-param"\nfrom snippets.lab import run\nfrom snippets.experiments.seeding import measure\n'
         'run(measure.creation_order, sed=1)\n```\n',
         ["'probe-param'", "[page probe.md] experiment 'seeding.creation_order' got unknown parameter(s) sed",
          "it accepts: seed"]),
        ("experiment raises",
         '```python exec="1" id="probe-raises"\nfrom snippets.lab import run\nfrom snippets.experiments.seeding import measure\n'
         'run(measure.training_equivalence, epochs=0)\n```\n',
         ["'probe-raises'", "seeding.training_equivalence(epochs=0) raised ValueError: epochs must be >= 1, got 0"]),
    ],
)
def test_bad_page_fails_the_strict_build(tmp_path, name, page, expected):
    code, log = _build(tmp_path, "# Probe\n\n" + page)
    assert code != 0, f"{name}: the build passed\n{log}"
    for fragment in expected:
        assert fragment in log, f"{name}: {fragment!r} missing from the build log:\n{log[-3000:]}"


# no topic in its front matter: the build measures no topic's experiments before the page (seconds, not minutes)
NAMED = "---\nnames: true\n---\n# Probe\n\nSome prose.\n\n{body}\n"


def test_a_page_of_named_values_builds_its_claims_and_panels(tmp_path):
    code, log = _build(tmp_path, NAMED.format(body=(
        '{% set result = run(seeding.measure.loader_between_models) %}\n'
        'Prose, then {{ say(seeding.checks.peek_changes_second(result), "the second model changes") }} in the '
        'sentence.\n\n{{ code_panel(result) }}')))
    assert code == 0, log
    html = (tmp_path / "site" / "probe" / "index.html").read_text()
    assert re.search(r'Prose, then <span class="pitfalls-claim"[^>]*>the second model changes</span>', html), html
    assert 'data-experiment="seeding.loader_between_models"' in html, "no code panel"


@pytest.mark.parametrize(("name", "body", "expected"), [
    ("unknown name", "{{ seeding.figures.no_such_drawing(1) }}",
     ["[page docs/probe.md] line 8 ({{ seeding.figures.no_such_drawing(1) }}): UndefinedError", "no_such_drawing"]),
    ("raising call", "{% set result = run(seeding.measure.training_equivalence, epochs=0) %}",
     ["[page docs/probe.md] line 8 ({% set result = run(seeding.measure.training_equivalence, epochs=0) %})",
      "epochs must be >= 1, got 0"]),
    ("syntax error", "Text {{ run( }}", ["[page docs/probe.md] line 8 (Text {{ run( }}): TemplateSyntaxError"]),
    ("result without its code", "{{ run(seeding.measure.creation_order).same_after_reseed }}",
     ["[page docs/probe.md] runs experiment seeding.creation_order but never shows its code"]),
])
def test_a_page_of_named_values_that_fails_names_its_line_and_publishes_nothing(tmp_path, name, body, expected):
    code, log = _build(tmp_path, NAMED.format(body=body))
    assert code != 0, f"{name}: the build passed\n{log}"
    for fragment in expected:
        assert fragment in log, f"{name}: {fragment!r} missing from the build log:\n{log[-3000:]}"
    assert "page docs/probe.md failed" in log, log[-3000:]
    assert not (tmp_path / "site" / "probe" / "index.html").exists()


CLAIM = ('```python exec="1" id="probe-claim"\nfrom snippets.lab import check, say\n'
         '@check("two plus two makes five")\ndef arithmetic(total):\n    return total == 5, {"total": total}\n'
         'print(say(arithmetic(2 + 2), "{sentence}"))\n```\n')


def test_a_claim_contradicted_in_both_languages_fails_the_build_once_naming_both_pages(tmp_path):
    (tmp_path / "docs" / "zh").mkdir(parents=True)
    for folder in ("", "zh/"):
        (tmp_path / "docs" / f"{folder}index.md").write_text("# Home\n")
    (tmp_path / "docs" / "probe.md").write_text("# Probe\n\n" + CLAIM.replace("{sentence}", "Two plus two is {total}."))
    (tmp_path / "docs" / "zh" / "probe.md").write_text("# 探针\n\n" + CLAIM.replace("{sentence}", "二加二等于 {total}。"))
    config = CONFIG.replace("  - markdown-exec\n", "  - markdown-exec\n  - i18n:\n      docs_structure: folder\n"
                            "      languages:\n        - {locale: en, name: English, default: true}\n"
                            "        - {locale: zh, name: 中文}\n")
    (tmp_path / "mkdocs.yml").write_text(config)
    process = build_site(tmp_path / "site", config=tmp_path / "mkdocs.yml", cwd=tmp_path,
                         env_extra={"PITFALLS_CACHE_DIR": str(tmp_path / "cache")})
    log = process.stdout + process.stderr
    assert process.returncode != 0, log
    assert log.count("Claim contradicted") == 1, log[-3000:]
    assert "page docs/probe.md: 'Two plus two is 4.'" in log and "page docs/zh/probe.md: '二加二等于 4。'" in log
    assert (tmp_path / "site" / "zh" / "probe" / "index.html").is_file(), "the Chinese page was never built"


I18N = ("  - i18n:\n      docs_structure: folder\n      languages:\n"
        "        - {locale: en, name: English, default: true}\n        - {locale: zh, name: 中文}\n")
RAISING = '# {title}\n\n```python exec="1" id="{block}"\nraise RuntimeError("boom in {block}")\n```\n'


def _two_languages(tmp_path, raising_in: str) -> None:
    """A site in English and Chinese whose page ``probe`` raises in one language."""
    (tmp_path / "docs" / "zh").mkdir(parents=True)
    for folder in ("", "zh/"):
        (tmp_path / "docs" / f"{folder}index.md").write_text("# Home\n")
    for language, folder, title in (("en", "", "Probe"), ("zh", "zh/", "探针")):
        block = f"probe-{language}"
        page = RAISING.format(title=title, block=block) if language == raising_in else f"# {title}\n\nFine.\n"
        (tmp_path / "docs" / folder / "probe.md").write_text(page)
    (tmp_path / "mkdocs.yml").write_text(CONFIG.replace("  - markdown-exec\n", "  - markdown-exec\n" + I18N))


def _published(site) -> list[str]:
    """The files of a (partly) built site that hold the failing block's traceback."""
    if not site.exists():
        return []
    return [str(path.relative_to(site)) for path in site.rglob("*")
            if path.is_file() and b"boom in" in path.read_bytes()]


@pytest.mark.parametrize("flags", [(), ("-q",), ("-v",)], ids=["no flag", "-q", "-v"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_raising_block_fails_the_build_whatever_the_log_flags(tmp_path, language, flags):
    _two_languages(tmp_path, raising_in=language)
    process = build_site(tmp_path / "site", config=tmp_path / "mkdocs.yml", cwd=tmp_path, flags=flags,
                         env_extra={"PITFALLS_CACHE_DIR": str(tmp_path / "cache")})
    log = process.stdout + process.stderr
    page = "docs/probe.md" if language == "en" else "docs/zh/probe.md"
    assert process.returncode != 0, f"mkdocs build --strict {' '.join(flags)} passed with a raising block:\n{log}"
    assert f"page {page} failed (1 problem); nothing was published" in log, log[-3000:]
    assert f"exec block 'probe-{language}' exited with errors: RuntimeError: boom in probe-{language}" in log, log
    assert _published(tmp_path / "site") == [], "the traceback was published"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_make_serve_serves_nothing_when_its_first_build_has_a_raising_block(tmp_path, language):
    _two_languages(tmp_path, raising_in=language)
    process = subprocess.run([sys.executable, "-m", "snippets.lab.serve", "--addr", f"127.0.0.1:{_free_port()}"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             env={**__import__("os").environ, "PITFALLS_CACHE_DIR": str(tmp_path / "cache"),
                                  "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"})
    page = "docs/probe.md" if language == "en" else "docs/zh/probe.md"
    assert process.returncode != 0, process.stderr
    assert f"page {page} failed (1 problem)" in process.stderr, process.stderr[-3000:]
    assert f"exec block 'probe-{language}' exited with errors" in process.stderr
    assert process.stderr.rstrip().endswith("(make build shows the same errors without serving)."), process.stderr
    assert "Serving on" not in process.stderr


MACHINES_PAGE = """# Machines

<span id="from-here"></span>

```python exec="1" id="probe-machines"
from snippets.lab import machines
print(machines.overview())
```

<span id="to-here"></span>
"""


class _Markup(__import__("html.parser").parser.HTMLParser):
    """Every element and attribute of a page, as a browser's parser would see them."""

    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def test_hostile_recordings_never_reach_a_built_page_as_markup(tmp_path):
    """A results folder with the real recording (its device name spiced with Markdown marks), and beside it one
    recording per hostile case: the built page lists the good one escaped, leaves each hostile one out with its
    reason shown as text, and its HTML holds no script, no event handler, no image, no javascript: link."""
    import json
    import shutil

    results = tmp_path / "results"
    real = ROOT / "results" / "epyc-2core"

    def recording(label, change=None, notebook_output=None):
        shutil.copytree(real, results / label)
        manifest = json.loads((results / label / "manifest.json").read_text())
        manifest["label"] = label
        if change:
            change(manifest)
        (results / label / "manifest.json").write_text(json.dumps(manifest))
        if notebook_output is not None:
            path = results / label / "notebooks" / "question_seeding.ipynb"
            notebook = json.loads(path.read_text())
            next(c for c in notebook["cells"] if c["cell_type"] == "code")["outputs"].append(notebook_output)
            path.write_text(json.dumps(notebook))

    script = "<script>alert(2)</script>"
    recording("good", lambda m: m["fingerprint"].update(device_name="CPU (x_y) *b* [z] #1"))
    recording("evil-device", lambda m: m["fingerprint"].update(device_name=script))
    recording("evil-torch", lambda m: m["fingerprint"].update(torch='2.13.0"><img src=x onerror=alert(6)>'))
    recording("evil-types", lambda m: m["fingerprint"].update(threads="2; <b>x</b>"))
    recording("evil-notebook", notebook_output={"output_type": "display_data", "metadata": {},
                                                "data": {"text/html": "<script>alert(5)</script>"}})
    (results / "evil-link").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(MACHINES_PAGE)
    (tmp_path / "mkdocs.yml").write_text(CONFIG)
    process = build_site(tmp_path / "site", config=tmp_path / "mkdocs.yml", cwd=tmp_path,
                         env_extra={"PITFALLS_CACHE_DIR": str(tmp_path / "cache"), "PITFALLS_RESULTS_DIR": str(results)})
    log = process.stdout + process.stderr
    assert process.returncode == 0, log[-3000:]
    for label in ("evil-device", "evil-torch", "evil-types", "evil-notebook", "evil-link"):
        assert f"recorded machine results/{label}/ left out: results/{label}" in log, (label, log[-3000:])
    page = (tmp_path / "site" / "index.html").read_text()
    body = page[page.index('<span id="from-here">'):page.index('<span id="to-here">')]
    inside = _Markup()
    inside.feed(body)
    assert [tag for tag, _ in inside.found if tag in ("script", "img", "iframe", "object", "embed", "svg")] == []
    assert [(tag, name) for tag, attrs in inside.found for name in attrs if name.startswith("on")] == []
    assert [attrs for _, attrs in inside.found if "javascript:" in (attrs.get("href") or "").lower()] == []
    assert "CPU (x_y) *b* [z] #1" in __import__("html").unescape(re.sub(r"<[^>]+>", "", body))
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in body, "the refused value is quoted as text"


def test_a_recording_build_records_a_contradicted_claim_and_says_so(tmp_path):
    """make record builds with PITFALLS_RECORD set: a claim that does not hold on the machine being recorded is
    said on stderr and the build passes, so what was measured is recorded (a build that reads the recording shows
    the claim failing there); the same page fails a normal build (test_bad_page_fails_the_strict_build)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "probe.md").write_text("# Probe\n\n" + CLAIM.replace("{sentence}", "Two plus two is {total}."))
    (tmp_path / "mkdocs.yml").write_text(CONFIG)
    staging = tmp_path / "staging"
    staging.mkdir()
    process = build_site(tmp_path / "site", config=tmp_path / "mkdocs.yml", cwd=tmp_path,
                         env_extra={"PITFALLS_CACHE_DIR": str(tmp_path / "cache"), "PITFALLS_RECORD": str(staging)})
    assert process.returncode == 0, process.stdout + process.stderr
    assert "Claim contradicted: check" in process.stderr and "make record: recorded all the same" in process.stderr
    assert "contradicted by this build" in (tmp_path / "site" / "probe" / "index.html").read_text()
