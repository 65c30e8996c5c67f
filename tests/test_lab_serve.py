"""``make serve``'s wrapper (snippets/lab/serve.py) without a server: what it runs, what it says, what it returns.

MkDocs is replaced by a fake child process that prints scripted log lines and exits with a scripted status;
signal handlers are recorded, not installed. (tests/test_serve.py runs the real ``make serve``.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from snippets.lab import serve


@pytest.mark.parametrize("text, expected", [("127.0.0.1:8000", ("127.0.0.1", 8000)), ("localhost:1", ("localhost", 1)),
                                            ("::1:65535", ("::1", 65535)), ("0.0.0.0:8123", ("0.0.0.0", 8123))])
def test_addresses(text, expected):
    assert serve.parse_addr(text) == expected


@pytest.mark.parametrize("text", ["8000", "127.0.0.1:", ":8000", "127.0.0.1:http", "127.0.0.1:0", "h:65536",
                                  "h:-1", "h:8 0"])
def test_bad_addresses_say_what_a_good_one_looks_like(text):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        serve.parse_addr(text)
    assert str(raised.value) == f"--addr must look like 127.0.0.1:8000, got {text!r}"


def _listening(host: str = "127.0.0.1", family: int = socket.AF_INET) -> socket.socket:
    holder = socket.socket(family, socket.SOCK_STREAM)
    holder.bind((host, 0))
    holder.listen()
    return holder


def test_a_port_in_use_is_named_and_a_free_one_is_not():
    with _listening() as holder:
        port = holder.getsockname()[1]
        reason = serve.port_in_use("127.0.0.1", port)
        assert isinstance(reason, str) and "in use" in reason.lower()
    assert serve.port_in_use("127.0.0.1", port) is None


def test_the_reason_is_the_systems_words_for_the_error(monkeypatch):
    import errno

    with _listening() as holder:
        assert serve.port_in_use("127.0.0.1", holder.getsockname()[1]) == os.strerror(errno.EADDRINUSE)

    class Unbindable:
        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def setsockopt(self, *args):
            pass

        def bind(self, address):
            raise OSError("no such interface")  # an error without an errno: its message is the reason

    monkeypatch.setattr(serve.socket, "socket", Unbindable)
    assert serve.port_in_use("127.0.0.1", 8000) == "no such interface"


def test_an_ipv6_address_is_probed_as_ipv6():
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        holder = _listening("::1", socket.AF_INET6)
    except OSError:
        pytest.skip("::1 cannot be bound here")
    with holder:
        port = holder.getsockname()[1]
        assert serve.port_in_use("::1", port)
    assert serve.port_in_use("::1", port) is None


class FakeChild:
    """What subprocess.Popen returns for ``mkdocs serve``: scripted stderr lines and exit status."""

    instances: list = []

    def __init__(self, command, stderr=None, text=None, env=None, preexec_fn=None):
        self.command, self.options = command, {"stderr": stderr, "text": text}
        self.preexec_fn = preexec_fn
        self.env = env
        self.stderr = iter(FakeChild.lines)
        self.terminated = False
        FakeChild.instances.append(self)

    def wait(self):
        return FakeChild.status

    def terminate(self):
        self.terminated = True


@pytest.fixture()
def fake_mkdocs(monkeypatch, tmp_path):
    """Run main() in a folder with a mkdocs.yml, a free port, a fake MkDocs and recorded signal handlers (and a
    result cache of its own, holding nothing to measure)."""
    handlers = {}
    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path / "cache" / "results"))
    monkeypatch.setattr(serve.subprocess, "Popen", FakeChild)
    monkeypatch.setattr(serve.signal, "signal", lambda sig, handler: handlers.__setitem__(sig, handler))
    monkeypatch.setattr(serve, "port_in_use", lambda host, port: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    FakeChild.instances = []
    FakeChild.lines = []
    FakeChild.status = 0
    return handlers


def test_help_says_what_it_does(help_of):
    out = help_of(serve.main)
    assert out.startswith("usage: make serve [-h] [--addr ADDR] [--config CONFIG] ")
    assert ("``make serve``: serve the site at once, then measure this machine and rebuild as its results arrive."
            in out)
    assert "--addr ADDR host:port to serve on (make serve PORT=…)" in out
    assert "--config CONFIG MkDocs configuration file" in out
    assert "python -m snippets.lab.serve" not in out, "only the docstring's first paragraph describes it"


class _Stderr:
    """A stream that records what was written and when it was flushed."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def write(self, text: str) -> int:
        self.events.append(text)
        return len(text)

    def flush(self) -> None:
        self.events.append("<flush>")


def test_the_opening_line_is_out_before_mkdocs_starts(fake_mkdocs, monkeypatch):
    stream = _Stderr()
    monkeypatch.setattr(serve.sys, "stderr", stream)
    started = []
    monkeypatch.setattr(serve.subprocess, "Popen", lambda *a, **k: started.append(list(stream.events))
                        or FakeChild(*a, **k))
    serve.main([])
    [before] = started
    assert "".join(before) == (
        "make serve: building the site from this machine's results and, where it has none yet, the recorded ones; "
        "serving it on http://127.0.0.1:8000/, then measuring this machine — Ctrl+C stops it.\n"), \
        "the whole line is out before MkDocs starts"


def test_it_runs_a_strict_mkdocs_serve_on_the_address(fake_mkdocs, capsys, monkeypatch):
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    FakeChild.lines = ["INFO - Building documentation...\n", "INFO - [09:00:00] Serving on http://127.0.0.1:8123/\n"]
    assert serve.main(["--addr", "127.0.0.1:8123"]) == 0
    [child] = FakeChild.instances
    cache = os.environ["PITFALLS_CACHE_DIR"]
    assert child.command == [sys.executable, "-m", "mkdocs", "serve", "--strict", "--config-file", "mkdocs.yml",
                             "--dev-addr", "127.0.0.1:8123", "--watch", cache]
    assert child.options == {"stderr": serve.subprocess.PIPE, "text": True}
    assert child.env["PYTHONUNBUFFERED"] == "1" and child.env["PATH"] == os.environ["PATH"]
    assert child.env["PITFALLS_DEFER"] == "1", "what is not measured here yet is shown as recorded"
    err = capsys.readouterr().err
    assert err == ("make serve: building the site from this machine's results and, where it has none yet, the "
                   "recorded ones; serving it on http://127.0.0.1:8123/, then measuring this machine — Ctrl+C stops "
                   "it.\n" + "".join(FakeChild.lines)
                   + "make serve: every value on the site was measured on this machine.\n")


def test_defaults_and_another_config(fake_mkdocs, tmp_path):
    (tmp_path / "other.yml").write_text("site_name: y\n")
    assert serve.main([]) == 0
    assert FakeChild.instances[-1].command[-5:-2] == ["mkdocs.yml", "--dev-addr", "127.0.0.1:8000"]
    assert serve.main(["--config", "other.yml"]) == 0
    assert FakeChild.instances[-1].command[-6:-2] == ["--config-file", "other.yml", "--dev-addr", "127.0.0.1:8000"]


def test_ctrl_c_is_left_to_mkdocs_and_sigterm_stops_it(fake_mkdocs):
    serve.main([])
    assert fake_mkdocs[signal.SIGINT] is signal.SIG_IGN
    [child] = FakeChild.instances
    fake_mkdocs[signal.SIGTERM](signal.SIGTERM, None)
    assert child.terminated


@pytest.mark.parametrize("served, status, code", [
    (True, 0, 0), (True, -signal.SIGINT, 0), (True, -signal.SIGTERM, 0), (True, 1, 1), (True, 3, 3),
    (False, 0, 0),
])
def test_exit_status_after_serving(fake_mkdocs, capsys, served, status, code):
    FakeChild.lines = ["INFO - Serving on http://127.0.0.1:8000/\n"] if served else ["INFO - stopped\n"]
    FakeChild.status = status
    assert serve.main([]) == code
    assert "did not build" not in capsys.readouterr().err


@pytest.mark.parametrize("status", [1, -signal.SIGINT])
def test_a_first_build_that_fails_is_said_in_one_closing_line(fake_mkdocs, capsys, status):
    FakeChild.lines = ["ERROR - Claim contradicted on page docs/x.md\n", "Aborted with 1 warnings in strict mode!\n"]
    FakeChild.status = status
    assert serve.main([]) == status
    err = capsys.readouterr().err.splitlines()
    assert err[1:3] == ["ERROR - Claim contradicted on page docs/x.md", "Aborted with 1 warnings in strict mode!"]
    assert err[3:] == ["make serve: the site did not build, so nothing is served. The first error above names the "
                       "page and what failed; fix it and run make serve again (make build shows the same errors "
                       "without serving)."]


def test_a_busy_port_is_said_before_building(fake_mkdocs, monkeypatch, capsys):
    monkeypatch.setattr(serve, "port_in_use", lambda host, port: "Address already in use")
    assert serve.main(["--addr", "127.0.0.1:8005"]) == 2
    assert FakeChild.instances == []
    assert capsys.readouterr().err == (
        "make serve: cannot serve on http://127.0.0.1:8005/ (Address already in use): another server — perhaps an "
        "earlier `make serve` — is using that port. Stop it, or pick another port: make serve PORT=8006\n")


def test_the_real_port_check_runs_before_anything_else(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    monkeypatch.setattr(serve.subprocess, "Popen", lambda *a, **k: pytest.fail("MkDocs started on a busy port"))
    with _listening() as holder:
        port = holder.getsockname()[1]
        assert serve.main(["--addr", f"127.0.0.1:{port}"]) == 2
    assert f"make serve PORT={port + 1}" in capsys.readouterr().err


def test_no_config_here(fake_mkdocs, tmp_path, capsys):
    (tmp_path / "mkdocs.yml").unlink()
    assert serve.main([]) == 2
    assert capsys.readouterr().err == "make serve: no mkdocs.yml here; run it from the project's root folder.\n"
    assert FakeChild.instances == []


def test_a_bad_address_is_a_usage_error(fake_mkdocs, capsys):
    with pytest.raises(SystemExit) as raised:
        serve.main(["--addr", "nowhere"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: make serve") and "--addr must look like 127.0.0.1:8000, got 'nowhere'" in err



def test_mkdocs_gets_the_default_interrupt_even_when_make_serve_ignores_it(fake_mkdocs):
    serve.main([])
    [child] = FakeChild.instances
    assert child.preexec_fn is serve._default_interrupt


def test_a_child_started_with_sigint_ignored_still_raises_keyboardinterrupt_with_the_default_restored():
    """A background job of a script starts with SIGINT ignored, and a Python started so never raises
    KeyboardInterrupt (Ctrl+C would not stop MkDocs): the child given ``_default_interrupt`` does."""
    probe = [sys.executable, "-c", "import signal, sys; "
             "sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 3)"]
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ignored = subprocess.run(probe).returncode
        restored = subprocess.run(probe, preexec_fn=serve._default_interrupt).returncode
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (ignored, restored) == (3, 0)


# ---- measuring this machine while the recorded results are served ------------------------------------------------

class FakeBuild:
    """The measuring ``mkdocs build``: scripted log lines and an exit status."""

    def __init__(self, lines: list[str], status: int):
        self.stderr, self.status, self.terminated = iter(lines), status, False

    def wait(self, timeout=None):
        return self.status

    def poll(self):
        return self.status

    def terminate(self):
        self.terminated = True


def _measure(tmp_path, monkeypatch, lines, status, pending=None):
    from snippets.lab import store

    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path / "cache" / "results"))
    store.cache_dir().mkdir(parents=True)
    store.store_text(store.pending_path(), json.dumps(pending if pending is not None else {
        "experiments": {"loader.bandwidth": 40.0, "seeding.creation_order": 2.0}, "notebooks": []}))
    started = []
    monkeypatch.setattr(serve.subprocess, "Popen", lambda command, **options: started.append((command, options))
                        or FakeBuild(lines, status))
    measuring = serve.Measuring.start("mkdocs.yml")
    if measuring is not None:
        measuring.thread.join(10)
    state = json.loads(store.progress_path().read_text()) if store.progress_path().exists() else None
    return measuring, started, state


def test_the_measuring_build_measures_what_was_shown_as_recorded_and_says_when_it_is_done(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # make exports it: the measuring build's is its own
    lines = ["INFO    -  pitfalls: measuring 1 timing experiments, the processes taking turns\n",
             "INFO    -  pitfalls: timing, process 1 of 2: loader.bandwidth\n",
             "pitfalls: gather bandwidth: 2/3 (67%), 9 s elapsed\n",
             "INFO    -  pitfalls: timing, process 2 of 2: loader.bandwidth\n",
             "INFO    -  pitfalls: running seeding.creation_order()\n",
             "INFO    -  pitfalls: seeding.creation_order done in 1.9 s\n"]
    measuring, [(command, options)], state = _measure(tmp_path, monkeypatch, lines, 0)
    site = str(tmp_path / "cache" / "measure-site")
    assert command == [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", "mkdocs.yml",
                       "--site-dir", site]
    assert {key: options[key] for key in ("stdout", "stderr", "text")} == {
        "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}, "its log is read line by line"
    assert "PITFALLS_DEFER" not in options["env"] and options["env"]["PYTHONUNBUFFERED"] == "1"
    assert options["env"]["PITFALLS_LANGUAGE"] == "en", "the experiments run once, whatever the languages"
    assert measuring.site == tmp_path / "cache" / "measure-site"
    assert state == {"done": 2, "total": 2, "left_s": 0}
    err = capsys.readouterr().err
    assert "make serve: measuring this machine: 2 results shown as recorded elsewhere until then" in err
    assert "make serve: measured 1 of 2" in err and "make serve: measured 2 of 2" in err
    assert "every value on the site is now its own" in err
    assert not (tmp_path / "cache" / "measure-site").exists()


def test_a_measuring_build_that_fails_says_why_in_the_terminal_and_to_the_pages(tmp_path, monkeypatch, capsys):
    lines = ["INFO    -  pitfalls: running seeding.creation_order()\n",
             "ERROR   -  Claim contradicted: check seeding.one_seed_differs <b>does not hold</b>\n",
             "Aborted with a BuildError!\n"]
    _, _, state = _measure(tmp_path, monkeypatch, lines, 1)
    assert state == {"failed": "ERROR   -  Claim contradicted: check seeding.one_seed_differs <b>does not hold</b>"}
    err = capsys.readouterr().err
    assert "make serve (measuring): ERROR   -  Claim contradicted" in err
    assert "measuring this machine failed; the pages keep the recorded values and say why" in err


def test_nothing_to_measure_starts_nothing(tmp_path, monkeypatch, capsys):
    measuring, started, state = _measure(tmp_path, monkeypatch, [], 0, {"experiments": {}, "notebooks": []})
    assert measuring is None and started == [] and state is None
    assert capsys.readouterr().err == "make serve: every value on the site was measured on this machine.\n"


def test_stopping_make_serve_ends_the_measuring_build(tmp_path, monkeypatch):
    import subprocess

    build = FakeBuild([], None)
    waited = []
    build.wait = lambda timeout=None: waited.append(timeout) or 0
    (tmp_path / "site" / "x").mkdir(parents=True)
    measuring = serve.Measuring(build, {"loader.bandwidth": 1.0}, [], tmp_path / "site")
    assert measuring.stopping is False
    assert measuring.thread.daemon, "a measuring build never keeps make serve from exiting"
    measuring.stop()
    assert build.terminated and waited == [10] and measuring.stopping is True, "terminated, given ten seconds"
    assert not (tmp_path / "site").exists(), "its site is deleted"
    stuck = FakeBuild([], None)
    killed = []

    def times_out(timeout=None):
        raise subprocess.TimeoutExpired("mkdocs", timeout)

    stuck.wait, stuck.kill = times_out, lambda: killed.append(True)
    serve.Measuring(stuck, {"loader.bandwidth": 1.0}, [], tmp_path / "site").stop()
    assert killed == [True], "a build that outlives its ten seconds is killed"
    ended = FakeBuild([], 0)
    serve.Measuring(ended, {"loader.bandwidth": 1.0}, [], tmp_path / "site").stop()
    assert not ended.terminated, "a build that has ended is left alone"


def test_the_time_left_is_the_recorded_seconds_still_to_measure_at_the_pace_so_far(tmp_path, monkeypatch):
    measuring = serve.Measuring(FakeBuild([], 0), {"a": 30.0, "b": 90.0}, [], tmp_path / "site")
    # its thread starts once its first state is written (Measuring.start): a build that fails at once is not
    # overwritten by a "0 of 2"
    assert not measuring.thread.is_alive()
    measuring.started = serve.time.monotonic() - 60  # 60 s for what took 30 s there: twice as slow here
    measuring.done_weight = 30.0
    assert measuring.left_s() == pytest.approx(180, rel=0.01)
    measuring.done_weight = 0.0
    assert measuring.left_s() is None, "no pace yet: no estimate"
    measuring.weight, measuring.done_weight = 100.0, 2.0  # 2% of the recorded seconds: too little to tell a pace
    assert measuring.left_s() is None
    measuring.done_weight = 2.1
    assert measuring.left_s() is not None
    measuring.done_weight = 150.0  # more than was recorded there (a slower machine's rounding): nothing left, never less
    assert measuring.left_s() == 0


def test_progress_is_said_at_most_every_twenty_seconds_and_without_a_time_left_until_there_is_a_pace(
        tmp_path, monkeypatch, capsys):
    from snippets.lab import store

    clock = _Clock()
    monkeypatch.setattr(serve, "time", clock)
    monkeypatch.setattr(store, "store_text", lambda path, text: None)
    measuring = serve.Measuring(FakeBuild([], 0), {"a.x": 100.0, "a.y": 100.0, "a.z": 1.0}, [], tmp_path / "site")
    clock.now = measuring.started + 10.0
    measuring._finish("a.z", 1.0)  # 1 of 201 recorded seconds: no pace yet
    assert capsys.readouterr().err == "make serve: measured 1 of 3\n"
    measuring.said = clock.now
    clock.now += 20.0  # exactly twenty seconds after the last line: said
    measuring._advance("a.x", 50.0)
    assert capsys.readouterr().err.startswith("make serve: measuring the timings, about ")
    measuring.said = clock.now
    clock.now += 19.9
    measuring._advance("a.x", 10.0)
    assert capsys.readouterr().err == "", "less than twenty seconds after the last: not said"


def test_the_mkdocs_child_takes_ctrl_c_as_a_terminal_gives_it_even_where_make_serve_ignored_it():
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        serve._default_interrupt()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, before)


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def _timed_log(clock, lines):
    """The measuring build's log, each line read at its time (seconds after the start)."""
    for at, line in lines:
        clock.now = 1000.0 + at
        yield line


def test_the_measuring_builds_progress_follows_its_log_line_by_line(tmp_path, monkeypatch, capsys):
    """Each timing process ends when the next begins, the pass over them when an INFO line follows it, and each of
    the others when its page says it is done; the time left is the recorded seconds still to measure at the pace so
    far, said at most every 20 seconds while the timings run; the state the pages read is written at each step."""
    from snippets.lab import store

    clock = _Clock()
    monkeypatch.setattr(serve, "time", clock)
    states = []
    monkeypatch.setattr(store, "store_text", lambda path, text: states.append(json.loads(text)))
    site = tmp_path / "measure-site"
    site.mkdir()
    log = _timed_log(clock, [
        (0, "INFO    -  pitfalls: measuring 2 timing experiments, the processes taking turns\n"),
        (0, "INFO    -  pitfalls: timing, process 1 of 2: loader.bandwidth\n"),
        (10, "INFO    -  pitfalls: timing, process 1 of 2: loader.question_timing\n"),
        (15, "INFO    -  pitfalls: timing, process 2 of 2: loader.bandwidth\n"),
        (40, "INFO    -  pitfalls: timing, process 2 of 2: loader.question_timing\n"),
        (50, "INFO    -  pitfalls: running seeding.creation_order()\n"),
        (52, "INFO    -  pitfalls: seeding.creation_order done in 1.9 s\n"),
        (53, "INFO    -  pitfalls: unknown.experiment done in 1.0 s\n"),
        (80, "INFO    -  pitfalls: executing notebook docs/notebooks/question_steps.py\n"),
        (80, "WARNING -  something odd\n"),
    ])
    build = FakeBuild([], 0)
    build.stderr = log
    measuring = serve.Measuring(build, {"loader.bandwidth": 40.0, "loader.question_timing": 20.0,
                                        "seeding.creation_order": 2.0}, ["docs/notebooks/question_steps.py"], site)
    assert (measuring.total, measuring.weight) == (4, 92.0)
    measuring._follow()
    assert capsys.readouterr().err == (
        "make serve: measuring the timings, about 36 s left\n"
        "make serve: measuring the timings, about 34 s left\n"
        "make serve: measured 1 of 4, about 27 s left\n"
        "make serve: measured 2 of 4, about 27 s left\n"
        "make serve: measured 3 of 4, about 25 s left\n"
        "make serve: measured 4 of 4, about 0 s left\n"
        "make serve (measuring): WARNING -  something odd\n"
        "make serve: this machine is measured (80 s): every value on the site is now its own.\n")
    assert states == [{"done": 1, "total": 4, "left_s": 27}, {"done": 2, "total": 4, "left_s": 27},
                      {"done": 3, "total": 4, "left_s": 25}, {"done": 4, "total": 4, "left_s": 0},
                      {"done": 4, "total": 4, "left_s": 0}]
    assert measuring.finished == {"loader.bandwidth", "loader.question_timing", "seeding.creation_order",
                                  "notebook docs/notebooks/question_steps.py"}
    measuring.finished.clear()  # whatever the log said, a build that succeeded measured everything
    measuring._write(finished=True)
    assert states[-1] == {"done": 4, "total": 4, "left_s": 0}
    assert not site.exists(), "its site is deleted once it is done"


def test_a_failed_measuring_build_names_its_errors_or_its_last_problems_and_a_stopped_one_says_nothing(
        tmp_path, monkeypatch, capsys):
    from snippets.lab import store

    states = []
    monkeypatch.setattr(store, "store_text", lambda path, text: states.append(json.loads(text)))

    def follow(lines, status, *, stopping=False):
        measuring = serve.Measuring(FakeBuild(lines, status), {"a.b": 1.0}, [], tmp_path / "site")
        measuring.stopping = stopping
        measuring._follow()
        return capsys.readouterr().err

    warnings = [f"WARNING -  warning {n}\n" for n in range(1, 8)]
    err = follow(warnings, 2)
    assert states.pop() == {"failed": "\n".join(f"WARNING -  warning {n}" for n in range(3, 8))}
    assert err.endswith("make serve: measuring this machine failed; the pages keep the recorded values and say why. "
                        "`make build` shows the whole error:\n  " + "\n  ".join(f"WARNING -  warning {n}"
                                                                                for n in range(3, 8)) + "\n")
    errors = [f"ERROR   -  error {n}\n" for n in range(1, 8)]
    follow(["WARNING -  first\n", *errors, "Traceback (most recent call last):\n"], 1)
    assert states.pop() == {"failed": "\n".join(f"ERROR   -  error {n}" for n in range(1, 6))}
    err = follow([], 1)
    assert states.pop() == {"failed": "the measuring build stopped with exit status 1"}
    assert err.endswith("whole error:\n  the measuring build stopped with exit status 1\n")
    assert follow(["ERROR   -  stopped\n"], -15, stopping=True) == "make serve (measuring): ERROR   -  stopped\n"
    assert states == [], "stopped by make serve: nothing to say"
    err = follow([], -9)  # killed by something else (out of memory): said
    assert states.pop() == {"failed": "the measuring build was killed (signal 9)"}
    assert err.endswith("whole error:\n  the measuring build was killed (signal 9)\n")


@pytest.mark.parametrize(("seconds", "said"), [(0, "0 s"), (89.4, "89 s"), (90, "2 min"), (150, "2 min"),
                                                (151, "3 min"), (3600, "60 min")])
def test_durations_are_said_in_seconds_under_a_minute_and_a_half_and_in_minutes_after(seconds, said):
    assert serve._minutes(seconds) == said


def test_the_measuring_build_counts_the_notebooks_and_keeps_a_language_asked_for(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PITFALLS_LANGUAGE", "zh")
    measuring, [(_, options)], state = _measure(tmp_path, monkeypatch, [], 0, {
        "experiments": {"loader.bandwidth": 40.0}, "notebooks": ["docs/notebooks/question_steps.py"]})
    assert options["env"]["PITFALLS_LANGUAGE"] == "zh"
    assert (measuring.total, measuring.notebooks) == (2, {"docs/notebooks/question_steps.py"})
    assert capsys.readouterr().err.startswith(
        "make serve: measuring this machine: 2 results shown as recorded elsewhere until then (about 70 s on the "
        "recorded machine); the pages reload as they arrive.\n")
    assert state == {"done": 2, "total": 2, "left_s": 0}


@pytest.mark.parametrize("log", [
    [(0, "loader.bandwidth", 1, 1), (10, "loader.not_pending", 1, 1), (30, "loader.question_timing", 1, 1)],
    [(0, "loader.bandwidth", 1, 1), (10, "loader.not_pending", 1, 2), (20, "loader.question_timing", 1, 1),
     (30, "loader.not_pending", 2, 2)],  # the pass's last process is one nobody waits for
], ids=["a-pending-experiment-last", "another-last"])
def test_a_timing_pass_of_one_process_each_finishes_its_last_experiment_too(tmp_path, monkeypatch, capsys, log):
    """The last timing process ends when the pass does (the INFO line after it), whoever it belongs to; a process of
    an experiment nobody waits for (not shown as recorded) weighs nothing in the time left."""
    from snippets.lab import store

    clock = _Clock()
    monkeypatch.setattr(serve, "time", clock)
    states = []
    monkeypatch.setattr(store, "store_text", lambda path, text: states.append(json.loads(text)))
    lines = [(at, f"INFO    -  pitfalls: timing, process {n} of {of}: {name}\n") for at, name, n, of in log]
    build = FakeBuild([], 0)
    build.stderr = _timed_log(clock, [*lines, (40, "INFO    -  pitfalls: the timing pass is over\n")])
    measuring = serve.Measuring(build, {"loader.bandwidth": 4.0, "loader.question_timing": 4.0,
                                        "seeding.creation_order": 2.0}, [], tmp_path / "site")
    measuring._follow()
    assert measuring.finished == {"loader.bandwidth", "loader.question_timing"}
    # at 40 s, 8 of the 10 recorded seconds are done: 40 s × 2 / 8 left
    assert states[:2] == [{"done": 1, "total": 3, "left_s": 10}, {"done": 2, "total": 3, "left_s": 10}]


def test_a_failed_measuring_build_names_at_most_five_errors_in_the_terminal(tmp_path, monkeypatch, capsys):
    from snippets.lab import store

    monkeypatch.setattr(store, "store_text", lambda path, text: None)
    errors = [f"ERROR   -  error {n}\n" for n in range(1, 8)]
    serve.Measuring(FakeBuild(errors, 1), {"a.b": 1.0}, [], tmp_path / "site")._follow()
    said = capsys.readouterr().err
    assert said.endswith("`make build` shows the whole error:\n  " + "\n  ".join(
        f"ERROR   -  error {n}" for n in range(1, 6)) + "\n")
