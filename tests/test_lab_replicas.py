"""Timing experiments in fresh processes: how many, that they are other processes, that their results are joined,
and that a process running other code than the build's is refused."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap

import pytest

from snippets.lab import cache, code, environment, replicas, timing


@pytest.fixture()
def timed_package(tmp_path, monkeypatch):
    """A throwaway package with one timing experiment, importable by this process and by fresh ones."""
    root = tmp_path / "src"
    pkg = root / "replicatestpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "exp.py").write_text(textwrap.dedent("""
        import os
        import random

        from snippets.lab import experiment


        @experiment(timing=True)
        def timed(x: int = 1) -> dict:
            spread = 1.0 + random.random() / 10  # another value in every process
            rounds = [x * spread] * 3
            return {"row": {"label": "t", "median": rounds[0], "mean": rounds[0], "rounds": rounds},
                    "base": {"label": "b", "median": 1.0, "mean": 1.0, "rounds": [1.0, 1.0, 1.0]},
                    "x": x, "parent": os.getppid()}


        @experiment(timing=True)
        def broken() -> dict:
            raise ValueError("no good")
    """))
    monkeypatch.syspath_prepend(str(root))
    for name in [n for n in sys.modules if n.startswith("replicatestpkg")]:
        del sys.modules[name]
    yield importlib.import_module("replicatestpkg.exp")
    replicas.close_all()
    for name in [n for n in sys.modules if n.startswith("replicatestpkg")]:
        del sys.modules[name]


@pytest.mark.parametrize("raw, count", [("", replicas.DEFAULT_PROCESSES), ("1", 1), (" 3 ", 3), ("32", 32)])
def test_the_number_of_processes_comes_from_the_environment(monkeypatch, raw, count):
    monkeypatch.setenv("PITFALLS_PROCESSES", raw)
    assert replicas.processes() == count


@pytest.mark.parametrize("raw", ["0", "-2", "33", "two", "2.5"])
def test_a_number_of_processes_that_makes_no_sense_is_refused(monkeypatch, raw):
    monkeypatch.setenv("PITFALLS_PROCESSES", raw)
    with pytest.raises(replicas.ReplicaError, match=r"PITFALLS_PROCESSES=.*whole number of processes from 1 to 32"):
        replicas.processes()


def test_each_process_is_a_fresh_one_and_its_results_are_joined(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "3")
    result = cache.run(timed_package.timed, x=2)
    assert result.value["processes"] == 3 and result.value["x"] == 2
    assert result.value["parent"] == os.getpid(), "the workers are this process's children"
    row = result.value["row"]
    assert len(row["processes"]) == 3 and len(row["rounds"]) == 9
    per_process = [p["rounds"][0] for p in row["processes"]]
    assert len(set(per_process)) == 3, "three processes, three random draws: not one process asked three times"
    interval = timing.ratio(row, result.value["base"])
    assert interval["processes"] == 3 and interval["low"] < interval["value"] < interval["high"]
    request = {"module": "replicatestpkg.exp", "function": "timed", "params": {"x": 1},
               "digest": code.reach(timed_package.timed.func).digest}
    pids = {replicas._worker(i).ask(request)["pid"] for i in range(3)}
    assert len(pids) == 3 and os.getpid() not in pids


def test_one_process_times_in_the_build_and_says_so(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "1")
    value = cache.run(timed_package.timed).value
    assert value["processes"] == 1 and "processes" not in value["row"] and value["parent"] == os.getppid()


def test_the_number_of_processes_keys_the_result(monkeypatch, timed_package):
    fp = environment.fingerprint()
    keys = set()
    for count in ("2", "3"):
        monkeypatch.setenv("PITFALLS_PROCESSES", count)
        keys.add(cache.cache_key(timed_package.timed, {"x": 1}, fp))
    assert len(keys) == 2, "a result of two processes is not one of three"


def test_an_error_in_a_fresh_process_names_the_process_and_the_error(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    with pytest.raises(cache.ExperimentError, match=r"broken\(\) raised ReplicaError: in fresh process 1 of 2: "
                                                    r"ValueError: no good"):
        cache.run(timed_package.broken)


def test_a_process_running_other_code_than_the_builds_is_refused(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    with pytest.raises(replicas.ReplicaError, match=r"imports code other than this build's .*edited"):
        replicas.measure(timed_package.timed, {"x": 1}, "0" * 64, environment.fingerprint())


def test_a_process_in_another_environment_is_refused(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    other = {**environment.fingerprint(), "threads": 999}
    with pytest.raises(replicas.ReplicaError, match="runs in another environment than this build"):
        replicas.measure(timed_package.timed, {"x": 1}, code.reach(timed_package.timed.func).digest, other)


def test_a_worker_that_died_is_replaced(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    cache.run(timed_package.timed, x=5)
    replicas._workers[0].process.kill()
    replicas._workers[0].process.wait()
    assert cache.run(timed_package.timed, x=6).value["processes"] == 2
