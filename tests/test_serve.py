"""``make serve``, run exactly as the README says, on a throwaway copy of the project.

The copy shares this environment and the result cache that the strict site build filled (``built_site``), so
serving it runs no experiment. Each test runs the Makefile's own ``serve`` recipe with another port.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import project_copy, topic_pages

pytestmark = pytest.mark.site



def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _make_serve(copy: Path, port: int) -> list[str]:
    """``make serve`` with this environment; ``-o`` keeps make from re-running setup from the copy (which
    would point the shared editable install at a folder about to be deleted)."""
    venv = Path(sys.prefix)
    return ["make", "--no-print-directory", "-o", f"{venv}/.pitfalls-installed", "serve", f"VENV={venv}",
            f"PORT={port}"]


def _env(copy: Path) -> dict[str, str]:
    # English alone (PITFALLS_LANGUAGE): serving and reloading work the same for each language, in half the time
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "PITFALLS_LANGUAGE": "en"}
    env.pop("REFRESH", None)
    return env


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _wait_for(predicate, timeout: float, process: subprocess.Popen, log: Path, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process.poll() is not None:
            pytest.fail(f"make serve exited ({process.returncode}) while waiting for {what}:\n"
                        f"{log.read_text()[-6000:]}")
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}:\n{log.read_text()[-6000:]}")


def _stop(process: subprocess.Popen) -> None:
    """Ctrl+C to the whole process group, as a terminal would send it."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=30)
        return
    except subprocess.TimeoutExpired:
        pass
    # a second Ctrl+C, as a reader would press it while a rebuild finishes; then the test gives up
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture()
def serve_copy(tmp_path, built_site) -> Path:
    copy = project_copy(tmp_path / "project", caches=True)
    # make serve must not reinstall anything into the shared environment from the copy.
    dry = subprocess.run([*_make_serve(copy, 8000), "-n"], cwd=copy, capture_output=True, text=True)
    assert "pip install" not in dry.stdout, f"make serve would set up the environment again:\n{dry.stdout}"
    return copy


def test_make_serve_serves_the_site_and_reloads_edits(serve_copy, tmp_path):
    copy = serve_copy
    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    # A probe module under snippets/ and a block that prints it: editing the module must change the page.
    probe = copy / "snippets" / "lab" / "serve_probe.py"
    probe.write_text('WORD = "first-probe-word"\n')
    environment_page = copy / "docs" / "environment.md"
    environment_page.write_text(environment_page.read_text() + (
        '\n```python exec="1" id="serve-probe"\nfrom snippets.lab import serve_probe\n'
        'print(f"Probe: {serve_probe.WORD}")\n```\n'))
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(_make_serve(copy, port), cwd=copy, env=_env(copy), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        home = _wait_for(lambda: _get(base), 900, process, log, f"the home page on {base}")
        assert "PyTorch pitfalls, measured" in home
        for page in (f"{page}/" for page in topic_pages()):
            html = _get(base + page)
            assert html is not None and '<article class="md-content__inner' in html, f"{page} was not served"
            assert "pitfalls-claim" in html, f"{page} was served without its checked claims"
        assert "Probe: first-probe-word" in _get(base + "environment/")

        # One word of a page.
        index = copy / "docs" / "index.md"
        text = index.read_text()
        first_heading = next(line for line in text.splitlines() if line.startswith("# "))
        index.write_text(text.replace(first_heading, first_heading + " (edited-heading-word)", 1))
        _wait_for(lambda: "edited-heading-word" in (_get(base) or ""), 120, process, log,
                  "the edited home page to be served")

        # A module under snippets/: the rebuild imports it afresh.
        probe.write_text('WORD = "second-probe-word"\n')
        _wait_for(lambda: "Probe: second-probe-word" in (_get(base + "environment/") or ""), 120, process, log,
                  "the edited snippets module to reach the page")
        served_log = log.read_text()
        assert "pitfalls: running" not in served_log, "serving the warm site re-ran an experiment"
        assert "Aborted" not in served_log
    finally:
        _stop(process)
    assert _get(base) is None, "the server kept running after it was stopped"
    # Ctrl+C: MkDocs shuts down cleanly; make itself reports the interrupt as its exit status.
    assert process.returncode in (0, -signal.SIGINT), log.read_text()[-3000:]
    assert "Shutting down" in log.read_text()


def test_make_serve_on_a_busy_port_says_what_to_do(serve_copy):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        start = time.monotonic()
        process = subprocess.run(_make_serve(serve_copy, port), cwd=serve_copy, env=_env(serve_copy),
                                 capture_output=True, text=True, timeout=120)
    assert process.returncode != 0
    assert time.monotonic() - start < 60, "the busy port was found only after building"
    assert f"cannot serve on http://127.0.0.1:{port}/" in process.stderr
    assert f"make serve PORT={port + 1}" in process.stderr
    assert "Traceback" not in process.stderr


def test_make_serve_with_a_failing_page_stops_with_one_clear_message(serve_copy):
    page = serve_copy / "docs" / "environment.md"
    page.write_text(page.read_text() + '\n```python exec="1" id="broken-block"\nraise ValueError("deliberately broken")\n```\n')
    process = subprocess.run(_make_serve(serve_copy, _free_port()), cwd=serve_copy, env=_env(serve_copy),
                             capture_output=True, text=True, timeout=900)
    assert process.returncode != 0
    assert "deliberately broken" in process.stderr
    assert "[page docs/environment.md]" in process.stderr
    # The last word is ours (make then adds its own "*** [serve] Error" line).
    ours = [line for line in process.stderr.splitlines()
            if line.strip() and not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert ours[-1].startswith("make serve: the site did not build"), ours[-5:]
    assert "Serving on" not in process.stderr


def test_make_serve_shows_recorded_values_at_once_then_this_machines_in_both_languages(serve_copy, tmp_path):
    """A result this machine has not measured yet is served at once from the recorded machine, marked so in each
    language; the measuring build then measures it, the site rebuilds, and the mark is gone."""
    copy = serve_copy
    lead = (copy / "results" / "primary").read_text().strip()
    # not measured on this machine yet: the result the seeding page's In short names its machine from
    shutil.rmtree(copy / ".cache" / "results" / "seeding.training_equivalence")
    port = _free_port()
    base = f"http://127.0.0.1:{port}/"
    env = _env(copy)
    env.pop("PITFALLS_LANGUAGE")  # both languages
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(_make_serve(copy, port), cwd=copy, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: _get(base), 900, process, log, f"the home page on {base}")
        pages = {"en": base + "seeding-order/", "zh": base + "zh/seeding-order/"}
        marks = {"en": f"Numbers on this page recorded on {lead} with ", "zh": f"本页数字取自 {lead} 的记录"}
        notes = {"en": "Recorded elsewhere, for now", "zh": "暂用其他机器的记录"}
        first = {language: _get(url) or "" for language, url in pages.items()}
        served_log = log.read_text()
        for language in pages:
            if marks[language] not in first[language]:  # measured before this look: the switch is checked below
                assert "every value on the site is now its own" in served_log, f"{language}: no recorded mark"
                continue
            assert notes[language] in first[language] and 'class="admonition info pitfalls-measuring"' in \
                first[language]
        _wait_for(lambda: "every value on the site is now its own" in log.read_text(), 900, process, log,
                  "the measuring build to finish")
        for language, url in pages.items():
            now = _wait_for(lambda: (lambda html: html if html and marks[language] not in html
                                     and "pitfalls-measuring" not in html else None)(_get(url)),
                            300, process, log, f"the {language} page to show this machine's values")
            assert "pitfalls-stamp--recorded" not in now
        served_log = log.read_text()
        assert "make serve: measuring this machine: " in served_log and "make serve: measured " in served_log
        assert (copy / ".cache" / "results" / "seeding.training_equivalence").is_dir(), "measured into the cache"
        assert "Aborted" not in served_log and "Traceback" not in served_log
        assert not (copy / ".cache" / "measure-site").exists(), "the measuring build's site is removed"
    finally:
        _stop(process)
    leftover = subprocess.run(["pgrep", "-f", f"site-dir {copy}/.cache/measure-site"], capture_output=True)
    assert leftover.returncode == 1, "a measuring process outlived make serve"
