"""``make record`` after editing one experiment, against a full recording, side by side on one throwaway copy.

On a copy of the project (docs, snippets, overrides, config, results, caches), made a git repository of its own
so that ``make record`` records from a clean commit, this runs, one after the other:

1. ``REFRESH=1 make record MACHINE=bench`` — a full recording: every experiment and notebook measured;
2. ``make record MACHINE=bench`` again — nothing changed: it must measure nothing and leave every file as it was;
3. one line of one experiment edited (``seeding.creation_order``'s helper ``_parameter_rows``) and committed, then
   ``make record MACHINE=bench`` — it must measure that experiment only.

Target: (3) takes under a tenth of (1). Nothing here writes into the project.

    python benchmarks/record_incremental.py
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.1
LABEL = "bench"


def _copy(dest: Path) -> Path:
    for name in ("docs", "snippets", "overrides", "results", ".ci"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "Makefile", "pyproject.toml", ".gitignore"):
        shutil.copy2(ROOT / name, dest / name)
    if (ROOT / ".cache").is_dir():
        shutil.copytree(ROOT / ".cache", dest / ".cache", ignore=shutil.ignore_patterns("recording"))
    _git(dest, "init", "-q")
    _commit(dest, "the project as it is")
    return dest


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", "-c",
                    "commit.gpgsign=false", *args], cwd=folder, check=True, capture_output=True)


def _commit(folder: Path, message: str) -> None:
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", message)


def _record(copy: Path, **extra: str) -> tuple[float, str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "PITFALLS_RESULTS_DIR": str(copy / "results"), **extra}
    for name in ("REFRESH", "FROZEN", "ALLOW_DIRTY"):
        if name not in extra:
            env.pop(name, None)
    start = time.monotonic()
    # -o: never re-run setup from the copy (it would repoint the shared editable install at it)
    process = subprocess.run(["make", "--no-print-directory", "-o", f"{sys.prefix}/.pitfalls-installed", "record",
                              f"VENV={sys.prefix}", f"MACHINE={LABEL}", *[f"{k}={v}" for k, v in extra.items()]],
                             cwd=copy, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if process.returncode != 0:
        sys.exit(f"make record failed:\n{process.stderr[-4000:]}")
    return elapsed, process.stdout.strip().splitlines()[-1]


def _snapshot(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def _measured(line: str) -> int:
    found = re.search(r"(\d+) results? measured", line)
    return int(found.group(1)) if found else 0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pitfalls-record-") as tmp:
        copy = _copy(Path(tmp))
        full, full_line = _record(copy, REFRESH="1")
        _commit(copy, "recorded")
        before = _snapshot(copy / "results" / LABEL)
        again, again_line = _record(copy)
        unchanged = _snapshot(copy / "results" / LABEL) == before
        measure = copy / "snippets" / "experiments" / "seeding" / "measure.py"
        text = measure.read_text()
        old = '"equal": torch.equal(pa, pb),'
        if old not in text:
            sys.exit(f"benchmark out of date: {old!r} not found in {measure}")
        measure.write_text(text.replace(old, '"equal": bool(torch.equal(pa, pb)),'))
        _commit(copy, "one line of one experiment edited")
        edited, edited_line = _record(copy)
    ratio = edited / full
    rows = [("a full recording (REFRESH=1)", full, full_line, "", True),
            ("again, nothing changed", again, again_line, "nothing measured, no file changed",
             _measured(again_line) == 0 and "is up to date" in again_line and unchanged),
            ("after editing one experiment", edited, edited_line, f"one result measured, < {TARGET:.0%} of the full",
             _measured(edited_line) == 1 and ratio < TARGET)]
    print("| make record | seconds | it said | target | met |")
    print("| --- | ---: | --- | --- | :---: |")
    for name, seconds, said, target, met in rows:
        print(f"| {name} | {seconds:.1f} | {said} | {target} | {'yes' if met else 'NO' if target else ''} |")
    print(f"\nAfter editing one experiment: {ratio:.1%} of the full recording's time (target: under {TARGET:.0%}).")
    return 0 if all(met for *_, met in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
