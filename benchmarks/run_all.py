"""Run every benchmark in this folder, one after the other; exit non-zero if any missed its target.

A benchmark exits 1 when it missed its target and 2 when it could not run here (a tool it needs is missing,
for example Lighthouse: it then says how to install it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed, skipped = [], []
    for script in sorted(HERE.glob("*.py")):
        if script.name == Path(__file__).name:
            continue
        print(f"\n## {script.stem}\n", flush=True)
        status = subprocess.run([sys.executable, str(script)]).returncode
        if status == 2:
            skipped.append(script.stem)
        elif status != 0:
            failed.append(script.stem)
    if skipped:
        print(f"\nCould not run (see above): {', '.join(skipped)}")
    if failed:
        print(f"\nMissed a target: {', '.join(failed)}")
    return 1 if failed or skipped else 0


if __name__ == "__main__":
    raise SystemExit(main())
