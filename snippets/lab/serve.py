"""``make serve``: serve the site at once, then measure this machine and rebuild as its results arrive.

    python -m snippets.lab.serve [--addr 127.0.0.1:8000] [--config mkdocs.yml]

It runs ``mkdocs serve --strict`` with ``PITFALLS_DEFER=1``: a result this machine has not measured yet is shown as
the leading recorded machine measured it (``results/primary``), marked so on the page, so the first page is served
in a few minutes whatever the cache holds. Once it serves, a separate strict build (``mkdocs build``, one language)
measures what the pages showed from the recording; each result it stores lands in the watched result cache, the
served site rebuilds, the browser reloads, and the value reads as measured here. The terminal shows that build's
progress with an estimate of the time left; if it fails, the terminal and the pages say why. Its processes (and
their timing workers) end when it is done.

Every rebuild is a full, strict build: a failing block, a contradicted claim or a broken link is reported in the log
and the browser keeps the last good site until it is fixed. If the first build fails, nothing is served and one
closing line says so. The address is checked first, so that a busy port is said at once.

Live reload covers the pages, the configuration, ``overrides/``, everything under ``snippets/`` (mkdocs.yml's
``watch``) and the result cache; the site's MkDocs plugin makes each rebuild import the ``snippets`` modules afresh, so an
edited experiment, renderer or recipe is the one that runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

SERVING = "Serving on "
NOTEBOOK_SECONDS = 30.0  # a notebook's execution, weighed against the experiments' recorded seconds


def parse_addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--addr must look like 127.0.0.1:8000, got {text!r}")
    return host, int(port)


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be served on, or None when it is free (bound the way MkDocs binds it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            return error.strerror or str(error)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default="127.0.0.1:8000", help="host:port to serve on (make serve PORT=…)")
    parser.add_argument("--config", default="mkdocs.yml", help="MkDocs configuration file")
    args = parser.parse_args(argv)
    try:
        host, port = parse_addr(args.addr)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    if not Path(args.config).is_file():
        print(f"make serve: no {args.config} here; run it from the project's root folder.", file=sys.stderr)
        return 2

    busy = port_in_use(host, port)
    if busy:
        print(f"make serve: cannot serve on http://{host}:{port}/ ({busy}): another server — perhaps an "
              f"earlier `make serve` — is using that port. Stop it, or pick another port: "
              f"make serve PORT={port + 1}", file=sys.stderr)
        return 2

    from snippets.lab import store

    store.progress_path().unlink(missing_ok=True)
    store.pending_path().unlink(missing_ok=True)
    store.cache_dir().mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "mkdocs", "serve", "--strict", "--config-file", args.config,
               "--dev-addr", f"{host}:{port}", "--watch", str(store.cache_dir())]
    print(f"make serve: building the site from this machine's results and, where it has none yet, the recorded "
          f"ones; serving it on http://{host}:{port}/, then measuring this machine — Ctrl+C stops it.",
          file=sys.stderr)
    # Ctrl+C must reach MkDocs even when make serve was started with SIGINT ignored (a background job of a
    # script inherits that, and a Python started so never raises KeyboardInterrupt): MkDocs gets the default.
    child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1", "PITFALLS_DEFER": "1"},
                             preexec_fn=_default_interrupt)
    served = False
    measuring: Measuring | None = None
    # Ctrl+C reaches the whole process group: MkDocs shuts down on it; here we only wait for it to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    assert child.stderr is not None
    try:
        for line in child.stderr:
            sys.stderr.write(line)  # stderr is line-buffered: each line is out as it comes
            if SERVING in line and not served:
                served = True
                measuring = Measuring.start(args.config)
    finally:
        if measuring is not None:
            measuring.stop()
    code = child.wait()
    if not served and code != 0:
        print(f"make serve: the site did not build, so nothing is served. The first error above names the "
              f"page and what failed; fix it and run make serve again (make build shows the same errors "
              f"without serving).", file=sys.stderr)
        return code
    return 0 if code in (0, -signal.SIGINT, -signal.SIGTERM) else code


# A line of the measuring build's log: what it began or finished.
_TIMED = re.compile(r"pitfalls: timing, process (\d+) of (\d+): (\S+)")
_RAN = re.compile(r"pitfalls: (\S+) done in ")
_NOTEBOOK = re.compile(r"pitfalls: executing notebook (\S+)")
_PROBLEM = re.compile(r"^(ERROR|WARNING)\b|Error:|Traceback")


class Measuring:
    """The build that measures this machine while the recorded results are served: what it has left, how long
    that should take (each experiment weighed by the seconds it took on the recorded machine), and its end."""

    def __init__(self, process: subprocess.Popen, pending: dict[str, float], notebooks: list[str], site: Path):
        self.process, self.pending, self.site = process, pending, site
        self.notebooks = set(notebooks)
        self.total = len(pending) + len(self.notebooks)
        self.weight = sum(pending.values()) + NOTEBOOK_SECONDS * len(self.notebooks) or 1.0
        self.done_weight = 0.0
        self.finished: set[str] = set()
        self.started = time.monotonic()
        self.problems: list[str] = []
        self.timed: set[str] = set()  # timing experiments measured in the pass before the pages
        self.said = 0.0  # when the terminal last heard of that pass
        self.stopping = False  # make serve stops it (``stop``)
        # started by ``start`` once the first state is written: what the build says (even a failure at once) follows
        self.thread = threading.Thread(target=self._follow, daemon=True)

    @classmethod
    def start(cls, config: str) -> "Measuring | None":
        from snippets.lab import store

        try:
            pending = json.loads(store.pending_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pending = {}
        experiments = {name: float(seconds) for name, seconds in pending.get("experiments", {}).items()}
        notebooks = list(pending.get("notebooks", []))
        if not experiments and not notebooks:
            print("make serve: every value on the site was measured on this machine.", file=sys.stderr)
            return None
        site = store.cache_dir().parent / "measure-site"
        env = {key: value for key, value in os.environ.items() if key != "PITFALLS_DEFER"}
        # one language: the experiments run once whatever the languages, and the served site builds both
        env.update(PITFALLS_LANGUAGE=env.get("PITFALLS_LANGUAGE") or "en", PYTHONUNBUFFERED="1")
        process = subprocess.Popen([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", config,
                                    "--site-dir", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, env=env)
        measuring = cls(process, experiments, notebooks, site)
        print(f"make serve: measuring this machine: {measuring.total} results shown as recorded elsewhere until "
              f"then (about {_minutes(measuring.weight)} on the recorded machine); "
              f"the pages reload as they arrive.", file=sys.stderr)
        measuring._write()
        measuring.thread.start()
        return measuring

    def _follow(self) -> None:
        assert self.process.stderr is not None
        timed_last: tuple[str, int] | None = None
        for line in self.process.stderr:
            found = _TIMED.search(line)
            if found:  # one process of a timing experiment begins: the one before it has ended
                if timed_last is not None:
                    self._advance(timed_last[0], self.pending.get(timed_last[0], 0.0) / timed_last[1])
                timed_last = (found.group(3), int(found.group(2)))
                continue
            if timed_last is not None and line.startswith("INFO"):  # the pass over the timing experiments ended
                # (its workers' own progress lines do not go through mkdocs' logger)
                self._advance(timed_last[0], self.pending.get(timed_last[0], 0.0) / timed_last[1])
                for name in [n for n in self.pending if n not in self.finished and n in self.timed]:
                    self._finish(name)
                timed_last = None
            found = _RAN.search(line)
            if found and found.group(1) in self.pending:
                self._finish(found.group(1), self.pending[found.group(1)])
            found = _NOTEBOOK.search(line)
            if found:
                self._finish(f"notebook {found.group(1)}", NOTEBOOK_SECONDS)
            if _PROBLEM.search(line):
                self.problems.append(line.rstrip())
                sys.stderr.write("make serve (measuring): " + line)
        code = self.process.wait()
        shutil.rmtree(self.site, ignore_errors=True)
        if self.stopping:  # make serve is stopping: nothing to say
            return
        if code == 0:
            self._write(finished=True)
            print(f"make serve: this machine is measured ({_minutes(time.monotonic() - self.started)}): every value "
                  f"on the site is now its own.", file=sys.stderr)
        else:
            errors = [p for p in self.problems if p.startswith("ERROR")] or self.problems[-5:] or [
                f"the measuring build stopped with exit status {code}" if code > 0
                else f"the measuring build was killed (signal {-code})"]
            self._write(failed="\n".join(errors[:5]))
            print("make serve: measuring this machine failed; the pages keep the recorded values and say why. "
                  "`make build` shows the whole error:\n  " + "\n  ".join(errors[:5]), file=sys.stderr)

    def _advance(self, name: str, weight: float) -> None:
        """One process of timing experiment ``name`` is done: said in the terminal; its result is stored (and the
        pages rebuilt) when the pass over every timing experiment ends, so the pass runs on a quiet machine."""
        self.timed.add(name)
        self.done_weight += weight
        left = self.left_s()
        if left is not None and time.monotonic() - self.said >= 20:
            self.said = time.monotonic()
            print(f"make serve: measuring the timings, about {_minutes(left)} left", file=sys.stderr)

    def _finish(self, name: str, weight: float = 0.0) -> None:
        if name in self.finished:
            return
        self.finished.add(name)
        self.done_weight += weight
        self._write()
        left = self.left_s()
        print(f"make serve: measured {min(len(self.finished), self.total)} of {self.total}"
              + (f", about {_minutes(left)} left" if left is not None else ""), file=sys.stderr)

    def left_s(self) -> float | None:
        """Seconds left, from how fast the work done so far went against the recorded machine's seconds."""
        share = min(self.done_weight / self.weight, 1.0)
        if share <= 0.02:
            return None
        return (time.monotonic() - self.started) * (1 - share) / share

    def _write(self, *, finished: bool = False, failed: str | None = None) -> None:
        from snippets.lab import store

        state: dict = {"done": self.total if finished else min(len(self.finished), self.total), "total": self.total}
        left = 0.0 if finished else self.left_s()
        if left is not None:
            state["left_s"] = round(left)
        store.store_text(store.progress_path(), json.dumps({"failed": failed} if failed is not None else state))

    def stop(self) -> None:
        """End the measuring build (make serve stops): its timing workers end with it."""
        self.stopping = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.site, ignore_errors=True)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _default_interrupt() -> None:
    """In the MkDocs child, before it starts: Ctrl+C (SIGINT) does what it does in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
