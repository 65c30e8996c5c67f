"""Mutation testing of the recipes and the lab: do the tests fail when the code is wrong?

mutmut (configured in pyproject.toml, ``[tool.mutmut]``) makes hundreds of small wrong versions of
``snippets/seeding.py``, ``snippets/tensor_loader.py``, ``snippets/step_budget.py`` and ``snippets/lab/*.py`` —
a ``<`` for a ``<=``, a string replaced, an argument dropped — and runs, for each, the tests that reach the
mutated function: the recipes' tests for the recipes, ``tests/test_lab_*.py`` for the lab. A mutant is
*killed* when a test fails (or hangs) on it. Targets: at least 97% of the recipes' mutants killed, at least
90% of the lab's.

A mutant that no test can kill must be listed, with the reason, in ``mutation_survivors.txt`` beside this file:
one line per mutant, ``function | mutation | reason``, where the mutation is the changed source line(s), old and
new, as ``old -> new``. Entries are matched by function and mutation, not by mutmut's mutant number, which
changes when other code in the function does. The run fails when a target is missed, when a mutant survives
that the list does not excuse, or when the list names a mutant that no longer survives (or no longer exists):
the list says exactly what the tests cannot see.

    python benchmarks/mutation.py            # a fresh run (deletes mutants/ first); make mutation
    python benchmarks/mutation.py --keep     # reuse mutants/ and mutmut's results for unchanged functions
    python benchmarks/mutation.py --report   # only score the results already in mutants/

About 13,600 mutants: 40 minutes or more on a 2-core machine (4,079 took 10 minutes beside other work), too long for CI's
5 minutes, so it is not part of ``make test`` or CI; ``make bench`` runs it with the benchmarks. mutmut runs with
one intra-op thread (see ``mutmut()``), and the recipes' tests that copy a recipe into a bare folder are left out
(``pytest_add_cli_args``): they test a copy, not the mutant.

After a run, ``.venv/bin/mutmut show <mutant>`` shows a mutant and ``.venv/bin/mutmut browse`` all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURVIVORS = Path(__file__).resolve().with_name("mutation_survivors.txt")
RECIPES = ("snippets/seeding.py", "snippets/tensor_loader.py", "snippets/step_budget.py")
TARGETS = {"recipes": 0.97, "lab": 0.90}
# mutmut's exit codes: a failing test (1), a pytest internal error (3) and a timeout count as killed.
KILLED = {1, 3, 24, -24, 36, 152, 255}


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    exit_code: int | None

    @property
    def group(self) -> str:
        return "recipes" if self.path in RECIPES else "lab"

    @property
    def function(self) -> str:
        return self.name.rsplit("__mutmut_", 1)[0]

    @property
    def killed(self) -> bool:
        return self.exit_code in KILLED


def mutmut(*args: str) -> int:
    executable = Path(sys.executable).with_name("mutmut")
    # One intra-op thread: mutmut forks its workers from a process that has run torch, and a forked OpenMP pool
    # spins, burning the CPU-time budget by which mutmut tells a hanging mutant (slow tests counted as "killed").
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run([str(executable), *args], cwd=ROOT, env=env).returncode


def load_mutants() -> list[Mutant]:
    mutants = []
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        path = meta.relative_to(ROOT / "mutants").as_posix().removesuffix(".meta")
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            mutants.append(Mutant(name, path, code))
    return mutants


def mutation_of(mutant: Mutant) -> str:
    """The changed lines of a mutant, ``old -> new`` (several lines joined with `` / ``)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    os.chdir(ROOT)
    diff = get_diff_for_mutant(mutant.name, path=mutant.path).splitlines()
    old = [line[1:].strip() for line in diff if line.startswith("-") and not line.startswith("---")]
    new = [line[1:].strip() for line in diff if line.startswith("+") and not line.startswith("+++")]
    return f"{' / '.join(old)} -> {' / '.join(new)}"


def load_excuses() -> dict[tuple[str, str], str]:
    excuses = {}
    for number, line in enumerate(SURVIVORS.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        # The mutation itself may hold " | " (a set union): the function is the first field, the reason the last.
        function, _, rest = line.partition(" | ")
        mutation, _, reason = rest.rpartition(" | ")
        if not (function.strip() and mutation.strip() and reason.strip()):
            raise SystemExit(f"{SURVIVORS.name}:{number}: expected 'function | old -> new | reason', got {line!r}")
        excuses[function.strip(), mutation.strip()] = reason.strip()
    return excuses


def _source_of(function: str) -> str | None:
    """The current source of a function or method named as mutmut names it (``snippets.lab.store.x_store_text``,
    ``snippets.tensor_loader.xǁTensorLoaderǁ__init__``), or None when the code has no such function."""
    import ast

    module, _, mangled = function.rpartition(".")
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.is_file() or not mangled.startswith("x"):
        return None
    *classes, name = mangled[1:].removeprefix("_").split("ǁ") if "ǁ" in mangled else (mangled[2:],)
    classes = [c for c in classes if c]
    source = path.read_text(encoding="utf-8")
    body = ast.parse(source).body
    for cls in classes:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == cls), [])
    node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
    return ast.get_source_segment(source, node) if node else None


def stale_excuses(excuses: dict[tuple[str, str], str]) -> list[str]:
    """Excuses that can no longer match a mutant, found without running mutmut: the function is gone, or no
    longer holds the line(s) the mutation changes."""
    stale = []
    for function, mutation in excuses:
        source = _source_of(function)
        if source is None:
            stale.append(f"{function}: no such function in the code")
            continue
        lines = {line.strip() for line in source.splitlines()}
        old = mutation.split(" -> ", 1)[0]
        # several lines are joined with " / ", which a line may also hold ("cache_dir() / 'pending.json'")
        missing = [] if old.strip() in lines else [line for line in old.split(" / ")
                                                   if line.strip() and line.strip() not in lines]
        if missing:
            stale.append(f"{function}: no longer holds {missing[0]!r}")
    return stale


def check_selection() -> list[str]:
    """Test files that exist but are not in mutmut's test selection (their mutants would go unnoticed)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: mutmut reads the file with toml; skip this check
        return []
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    selected = set(config["pytest_add_cli_args_test_selection"])
    wanted = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_lab_*.py")}
    wanted |= {"tests/test_seeding_recipe.py", "tests/test_tensor_loader.py", "tests/test_step_budget.py"}
    return sorted(wanted - selected)


def report(mutants: list[Mutant]) -> int:
    problems = [f"{name} is not in [tool.mutmut] pytest_add_cli_args_test_selection" for name in check_selection()]
    problems += [f"{SURVIVORS.name} excuses a mutant that cannot exist: {line}" for line in stale_excuses(load_excuses())]
    excuses = load_excuses()
    used: set[tuple[str, str]] = set()
    print(f"\n{'':10} {'killed':>7} {'total':>6} {'score':>7} {'target':>7}   not killed by status")
    for group in ("recipes", "lab"):
        chosen = [m for m in mutants if m.group == group]
        killed = sum(m.killed for m in chosen)
        statuses = Counter(status(m.exit_code) for m in chosen if not m.killed)
        score = killed / len(chosen) if chosen else 0.0
        print(f"{group:10} {killed:>7} {len(chosen):>6} {score:>7.1%} {TARGETS[group]:>7.0%}   "
              f"{dict(statuses) or '-'}")
        if score < TARGETS[group]:
            problems.append(f"{group}: {score:.1%} of mutants killed, below the target of {TARGETS[group]:.0%}")
    for path in sorted({m.path for m in mutants}):
        chosen = [m for m in mutants if m.path == path]
        print(f"    {path:36} {sum(m.killed for m in chosen):>5} / {len(chosen):<5}")
    for mutant in (m for m in mutants if not m.killed):
        key = (mutant.function, mutation_of(mutant))
        if key in excuses:
            used.add(key)
        else:
            problems.append(f"{mutant.name} ({status(mutant.exit_code)}), not excused: "
                            f"{key[0]} | {key[1]} | <reason>")
    for key in sorted(set(excuses) - used):
        problems.append(f"excused but not a survivor any more (delete the line): {key[0]} | {key[1]}")
    print(f"\n{len(used)} survivors excused in {SURVIVORS.relative_to(ROOT)}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


def status(exit_code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return status_by_exit_code[exit_code]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="reuse mutants/ and earlier results")
    parser.add_argument("--report", action="store_true", help="only score the results in mutants/")
    args = parser.parse_args()
    if not args.report:
        if not args.keep:
            shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        start = time.perf_counter()
        code = mutmut("run")
        print(f"\nmutmut run: exit status {code}, {time.perf_counter() - start:.0f} s")
        if code != 0:
            return code
    mutants = load_mutants()
    if not mutants:
        print("No mutants found under mutants/: run without --report first.")
        return 1
    return report(mutants)


if __name__ == "__main__":
    raise SystemExit(main())
