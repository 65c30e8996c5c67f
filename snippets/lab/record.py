"""``make record``'s command line: ``python -m snippets.lab.record <label>`` (see ``machines.record``).

A module of its own, which the lab's package never imports, so that running it does not load
``snippets.lab.machines`` a second time as ``__main__``."""

from __future__ import annotations

import sys

from .machines import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
