"""``make serve``: build the site strictly, serve it with live reload, and say plainly what went wrong.

    python -m snippets.lab.serve [--addr 127.0.0.1:8000] [--config mkdocs.yml]

It runs ``mkdocs serve --strict`` (every rebuild is a full, strict build: a failing block, a contradicted
claim or a broken link is reported in the log and the browser keeps the last good site until it is fixed),
after checking that the address is free, so that a busy port is said at once instead of after a build
of several minutes. If the first build fails, nothing is served and one closing line says so.

Live reload covers the pages, the configuration, ``overrides/`` and everything under ``snippets/``
(mkdocs.yml's ``watch``); the MkDocs hook makes each rebuild import the ``snippets`` modules afresh, so an
edited experiment, renderer or recipe is the one that runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

SERVING = "Serving on "


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

    command = [sys.executable, "-m", "mkdocs", "serve", "--strict", "--config-file", args.config,
               "--dev-addr", f"{host}:{port}"]
    print(f"make serve: building the site (every experiment not yet cached on this machine runs now), "
          f"then serving it on http://{host}:{port}/ — Ctrl+C stops it.", file=sys.stderr, flush=True)
    # Ctrl+C must reach MkDocs even when make serve was started with SIGINT ignored (a background job of a
    # script inherits that, and a Python started so never raises KeyboardInterrupt): MkDocs gets the default.
    child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, bufsize=1,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=_default_interrupt)
    served = False
    # Ctrl+C reaches the whole process group: MkDocs shuts down on it; here we only wait for it to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    assert child.stderr is not None
    for line in child.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        if SERVING in line:
            served = True
    code = child.wait()
    if not served and code != 0:
        print(f"make serve: the site did not build, so nothing is served. The first error above names the "
              f"page and what failed; fix it and run make serve again (make build shows the same errors "
              f"without serving).", file=sys.stderr)
        return code
    return 0 if code in (0, -signal.SIGINT, -signal.SIGTERM) else code


def _default_interrupt() -> None:
    """In the MkDocs child, before it starts: Ctrl+C (SIGINT) does what it does in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
