"""Timing experiments in fresh processes: how many, that they are other processes, that their results are joined,
and that a process running other code than the build's is refused."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap

import pytest

from conftest import ROOT
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
        def other() -> dict:
            return {"row": {"label": "o", "median": 2.0, "mean": 2.0, "rounds": [2.0, 2.0, 2.0]}}


        @experiment(timing=True)
        def broken() -> dict:
            raise ValueError("no good")


        def _untimed() -> dict:
            import time

            import torch

            start = time.time()
            time.sleep(1.0)
            return {"threads": torch.get_num_threads(), "pid": os.getpid(), "start": start, "end": time.time()}


        @experiment()
        def untimed_a() -> dict:
            return _untimed()


        @experiment()
        def untimed_b() -> dict:
            return _untimed()
    """))
    monkeypatch.syspath_prepend(str(root))
    for name in [n for n in sys.modules if n.startswith("replicatestpkg")]:
        del sys.modules[name]
    replicas.close_all()  # workers another test started: this test starts its own
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
    with pytest.raises(cache.ExperimentError, match=r"broken\(\) raised ReplicaError: in process 1 of 2: "
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


def test_a_worker_started_before_a_path_was_added_imports_from_it(monkeypatch, timed_package, tmp_path):
    """The request carries the build's import path: a worker started earlier finds a package added since."""
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    cache.run(timed_package.timed, x=7)  # the workers are up
    late = tmp_path / "late"
    (late / "latepkg").mkdir(parents=True)
    (late / "latepkg" / "__init__.py").write_text("")
    (late / "latepkg" / "exp.py").write_text(
        "from snippets.lab import experiment\n\n\n@experiment(timing=True)\ndef t() -> dict:\n"
        "    return {'row': {'median': 1.0, 'mean': 1.0, 'rounds': [1.0, 1.0, 1.0]}}\n")
    monkeypatch.syspath_prepend(str(late))
    module = importlib.import_module("latepkg.exp")
    assert cache.run(module.t).value["processes"] == 2
    del sys.modules["latepkg.exp"], sys.modules["latepkg"]


def test_a_worker_that_died_is_replaced(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    cache.run(timed_package.timed, x=5)
    replicas._workers[0].process.kill()
    replicas._workers[0].process.wait()
    assert cache.run(timed_package.timed, x=6).value["processes"] == 2


def test_prefetch_measures_the_timing_experiments_with_their_processes_taking_turns(monkeypatch, caplog,
                                                                                    timed_package):
    """Process 1 measures every experiment, then process 2: one experiment's processes are spread over the pass.
    A page then finds the result measured by this build (not a cache hit), and nothing is measured twice."""
    import logging

    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.timed, timed_package.other])
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        assert cache.prefetch() == ["replicatestpkg.exp.timed", "replicatestpkg.exp.other"]
    turns = [r.getMessage().split(": ", 1)[1] for r in caplog.records if "timing, process" in r.getMessage()]
    assert turns == ["timing, process 1 of 2: replicatestpkg.exp.timed", "timing, process 1 of 2: replicatestpkg.exp.other",
                     "timing, process 2 of 2: replicatestpkg.exp.timed", "timing, process 2 of 2: replicatestpkg.exp.other"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        result = cache.run(timed_package.timed)
    assert not result.cached and result.value["processes"] == 2, "measured by this build, before its page"
    assert not any("running" in r.getMessage() for r in caplog.records), "and not measured again"
    assert cache.prefetch() == [], "a second pass finds everything in the cache"


def test_prefetch_leaves_an_experiment_that_fails_to_its_page(monkeypatch, timed_package):
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.broken, timed_package.timed])
    assert cache.prefetch() == ["replicatestpkg.exp.timed"]
    with pytest.raises(cache.ExperimentError, match="no good"):
        cache.run(timed_package.broken)


def test_nothing_is_prefetched_with_one_process_or_in_a_frozen_build(monkeypatch, timed_package):
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.timed])
    monkeypatch.setenv("PITFALLS_PROCESSES", "1")
    assert cache.prefetch() == []
    monkeypatch.setenv("PITFALLS_PROCESSES", "2")
    monkeypatch.setenv("FROZEN", "1")
    assert cache.prefetch() == []


def test_prefetch_runs_the_experiments_that_time_nothing_side_by_side_with_one_thread_each(monkeypatch,
                                                                                           timed_package):
    """After the timing pass, the other experiments run at the same time in worker processes, one per core, each
    with one intra-op thread; a page then finds them measured by this build."""
    import torch

    monkeypatch.setattr(replicas, "free_cores", lambda: (2, 0.0))  # however busy the test machine is
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.untimed_a, timed_package.untimed_b])
    threads = torch.get_num_threads()
    assert cache.prefetch() == ["replicatestpkg.exp.untimed_a", "replicatestpkg.exp.untimed_b"]
    a, b = (cache.run(exp) for exp in (timed_package.untimed_a, timed_package.untimed_b))
    assert not a.cached and not b.cached, "measured by this build, before its page"
    assert len({a.value["pid"], b.value["pid"], os.getpid()}) == 3, "two worker processes, neither the build's"
    assert a.value["start"] < b.value["end"] and b.value["start"] < a.value["end"], "they ran at the same time"
    assert a.value["threads"] == b.value["threads"] == environment.EXPERIMENT_THREADS == 1
    assert torch.get_num_threads() == threads


def test_jobs_beside_the_experiments_take_a_core_each_and_a_failed_one_is_left_to_its_page(monkeypatch, caplog,
                                                                                             timed_package):
    """The build's notebooks execute beside the experiments that time nothing, each job taking one of the cores:
    with one core, a job and an experiment never overlap; a job that raises is logged, not raised, and the
    experiments are measured all the same."""
    import logging
    import time

    monkeypatch.setattr(replicas, "free_cores", lambda: (1, 1.0))
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.untimed_a])
    spans = []

    def job() -> None:
        start = time.time()
        time.sleep(0.3)
        spans.append((start, time.time()))

    def broken() -> None:
        raise RuntimeError("kernel died")

    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        assert cache.prefetch(beside=[("notebook a.py", job), ("notebook b.py", broken)]) == \
               ["replicatestpkg.exp.untimed_a"]
    a = cache.run(timed_package.untimed_a).value
    assert len(spans) == 1 and (spans[0][1] <= a["start"] or a["end"] <= spans[0][0]), "one core: one at a time"
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert "running 1 experiments and 2 notebooks side by side, 1 at a time" in said
    assert "notebook b.py failed beside the experiments (RuntimeError: kernel died); its page does it again" in said


def test_jobs_beside_the_experiments_see_the_build_that_started_them(monkeypatch, timed_package, build):
    """A job beside the experiments runs in a worker thread, in the build that prefetched (what it logs is
    that build's): a thread of its own would see a fresh build of no page instead."""
    from snippets.lab import context

    monkeypatch.setattr(replicas, "free_cores", lambda: (1, 1.0))
    monkeypatch.setattr(cache, "page_experiments", lambda: [timed_package.untimed_a])
    build.page = "prefetching.md"
    seen = []
    cache.prefetch(beside=[("notebook a.py", lambda: seen.append(context.current()))])
    assert seen == [build] and seen[0].page == "prefetching.md"


def test_jobs_beside_run_when_every_experiment_is_cached_and_not_in_a_frozen_build(monkeypatch, timed_package):
    monkeypatch.setattr(replicas, "free_cores", lambda: (2, 0.0))
    monkeypatch.setattr(cache, "page_experiments", lambda: [])
    ran = []
    assert cache.prefetch(beside=[("notebook a.py", lambda: ran.append("a")),
                                  ("notebook b.py", lambda: ran.append("b"))]) == []
    assert sorted(ran) == ["a", "b"]
    monkeypatch.setenv("FROZEN", "1")
    assert cache.prefetch(beside=[("notebook c.py", lambda: ran.append("c"))]) == [] and "c" not in ran


@pytest.mark.parametrize("percent, cores, expected", [
    (3.0, 2, 2),     # quiet: one per core
    (50.0, 2, 1),    # one busy program on two cores: one core is free
    (100.0, 2, 1),   # two busy programs: still one at a time, never none
    (30.0, 4, 3),    # 1.2 of 4 cores taken
    (10.0, 8, 4),    # at most MAX_SIDE_BY_SIDE
])
def test_experiments_side_by_side_take_only_the_cores_other_programs_leave(monkeypatch, percent, cores, expected):
    monkeypatch.setattr(replicas, "others_busy", lambda: percent / 100 * cores)
    monkeypatch.setattr(replicas.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    count, busy = replicas.free_cores()
    assert count == expected and busy == pytest.approx(percent / 100 * cores)


def test_the_builds_own_work_is_not_counted_as_other_programs(monkeypatch):
    """Over a one-second window the machine was busy 1.9 cores' worth, of which this process and its children
    (``timing.cpu_snapshot``: tested in test_lab_timing_intervals) used 1.5: other programs kept 0.4 busy."""
    import time

    from snippets.lab import timing

    snapshots = iter([(10.0, 100.0, 200.0, 25.0), (11.0, 101.9, 202.0, 26.5)])  # wall, machine busy, total, own
    monkeypatch.setattr(timing, "cpu_snapshot", lambda: next(snapshots))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    assert replicas.others_busy(1.0) == pytest.approx(0.4)
    monkeypatch.setattr(timing, "cpu_snapshot", lambda: None)
    assert replicas.others_busy(1.0) == 0.0, "accounting psutil cannot read reads as a quiet machine"


def test_an_experiment_run_in_the_build_runs_with_one_thread_and_gives_the_threads_back(monkeypatch, timed_package):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        result = cache.run(timed_package.untimed_a)
        assert result.value["threads"] == 1 and result.value["pid"] == os.getpid()
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_the_page_experiments_are_every_pages(monkeypatch):
    names = {exp.name for exp in cache.page_experiments()}
    assert {"loader.question_timing", "loader.breakdown", "steps.step_cost", "steps.curves",
            "seeding.creation_order"} <= names


def test_the_build_prefetches_the_experiments_of_the_topics_its_pages_present(tmp_path):
    """A page names its topic in its front matter (``topic: loader``): the build measures that package's experiments
    before any page runs. The lab names no topic, and reads no page's code."""
    from mkdocs.exceptions import PluginError

    from snippets.lab import mkdocs_hook

    (tmp_path / "zh").mkdir()
    (tmp_path / "a.md").write_text("---\ntopic: loader\ncollapsed: [x]\n---\n\n# A\n"
                                   "Prose that says topic: seeding is not front matter.\n")
    (tmp_path / "zh" / "a.md").write_text("---\ntopic: steps\n---\n\n# 甲\n")
    (tmp_path / "b.md").write_text("# No front matter\n")
    assert mkdocs_hook.topic_pages(str(tmp_path)) == {"a.md": "loader", "zh/a.md": "steps"}
    names = mkdocs_hook.topic_experiments(str(tmp_path))
    assert {"steps.step_cost", "loader.question_timing"} <= names
    assert {name.partition(".")[0] for name in names} == {"loader", "steps"}
    measured = mkdocs_hook.topic_experiments(str(ROOT / "docs"))
    assert {exp.name for exp in cache.page_experiments()} == measured, "every experiment is some page's topic's"
    (tmp_path / "a.md").write_text("# A page without a topic\n")
    (tmp_path / "zh" / "a.md").unlink()
    assert mkdocs_hook.topic_experiments(str(tmp_path)) == set(), "a site without topics measures nothing ahead"
    (tmp_path / "b.md").write_text("---\ntopic: ../loader\n---\n# B\n")
    with pytest.raises(PluginError, match=r"docs/b.md: its front matter's topic is '../loader'"):
        mkdocs_hook.topic_experiments(str(tmp_path))


def test_a_worker_answers_with_the_value_in_one_thread_refuses_other_code_and_names_an_error(timed_package, tmp_path,
                                                                                           monkeypatch):
    """What a worker process replies (``replicas.answer``), asked in this process: the value as JSON gives it back,
    with the environment it ran in and its process id; ``stale`` for code other than the build's; the error raised."""
    import contextlib

    monkeypatch.setattr(sys, "path", list(sys.path))  # put back afterwards
    (tmp_path / "src" / "replicatestpkg" / "tupled.py").write_text(textwrap.dedent("""
        from snippets.lab import experiment


        @experiment()
        def pair(x: int = 1) -> dict:
            return {"pair": (x, x + 1)}
    """))
    importlib.invalidate_caches()  # the package's folder was read when the fixture imported it
    exp = importlib.import_module("replicatestpkg.tupled").pair
    request = {"module": "replicatestpkg.tupled", "function": "pair", "params": {"x": 3},
               "digest": code.reach(exp.func).digest, "path": [str(tmp_path / "first"), str(tmp_path / "second")]}
    threads = []

    @contextlib.contextmanager
    def experiment_threads():
        threads.append("in")
        try:
            yield
        finally:
            threads.append("out")

    monkeypatch.setattr(environment, "experiment_threads", experiment_threads)
    reply = replicas.answer(request)
    assert reply == {"value": {"pair": [3, 4]}, "fingerprint": environment.fingerprint(), "pid": os.getpid()}
    assert threads == ["in", "out"], "in the experiments' threads"
    assert sys.path[:2] == [str(tmp_path / "first"), str(tmp_path / "second")], "the build's import path, in order"
    assert replicas.answer(request) == reply and sys.path.count(str(tmp_path / "first")) == 1, "each entry once"
    unpathed = {key: value for key, value in request.items() if key != "path"}
    assert replicas.answer(unpathed) == reply, "a request without a path: the worker's own"
    stale = {**request, "digest": "0123456789abcdef0123"}
    assert replicas.answer(stale) == {"stale": f"digest {request['digest'][:12]}, the build's 0123456789ab"}
    assert replicas.answer({**request, "module": "replicatestpkg.exp", "function": "broken",
                            "digest": code.reach(timed_package.broken.func).digest, "params": {}}) == {
        "error": "ValueError: no good"}
    assert replicas.answer({**request, "module": "replicatestpkg.gone"}) == {
        "error": "ModuleNotFoundError: No module named 'replicatestpkg.gone'"}
    assert threads == ["in", "out"] * 4


def test_a_worker_replies_one_line_per_request_on_the_real_stdout_and_logs_on_stderr(timed_package, tmp_path,
                                                                                      monkeypatch):
    """The worker's loop (``replicas.serve``), in this process: its requests from stdin, a reply per line on the
    stdout it started with, each out as soon as it is written (the build waits for it); from then on, what an
    experiment prints or logs goes to stderr (the build's log)."""
    import io
    import json
    import logging

    replies = tmp_path / "stdout"
    (tmp_path / "src" / "replicatestpkg" / "peek.py").write_text(textwrap.dedent(f"""
        from pathlib import Path

        from snippets.lab import experiment


        @experiment()
        def replied() -> dict:
            return {{"so_far": Path({str(replies)!r}).read_text(encoding="utf-8")}}
    """))
    importlib.invalidate_caches()
    peek = importlib.import_module("replicatestpkg.peek").replied
    requests = [{"module": "replicas_no_such_module", "function": "f", "digest": "0" * 64, "params": {}},
                {"module": "replicatestpkg.peek", "function": "replied", "digest": code.reach(peek.func).digest,
                 "params": {}}]
    started_with = replies.open("w", encoding="utf-8")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(r) + "\n" for r in requests)))
    monkeypatch.setattr(sys, "stdout", started_with)
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(logging.root, "handlers", [])
    monkeypatch.setattr(logging.root, "level", logging.WARNING)
    replicas.serve()
    assert sys.stdout is err, "what an experiment prints goes to the build's log"
    [handler] = logging.root.handlers
    assert handler.stream is err and logging.root.level == logging.INFO and handler.formatter._fmt == "%(message)s"
    started_with.close()
    first = json.dumps({"error": "ModuleNotFoundError: No module named 'replicas_no_such_module'"}) + "\n"
    lines = replies.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[0] == first and len(lines) == 2 and lines[1].endswith("}\n")
    assert json.loads(lines[1])["value"] == {"so_far": first}, "the first reply was out before the second request ran"


@pytest.mark.parametrize(("before", "after", "busy"), [
    ((1000.0, 100.0, 400.0, 5.0), (1002.0, 104.0, 404.0, 6.0), 1.5),  # 4 busy CPU seconds, 1 our own, over 2 s
    ((10.0, 100.0, 400.0, 5.0), (12.0, 100.5, 404.0, 6.0), 0.0),  # our own work was all of it: never below 0
    ((10.0, 100.0, 400.0, 5.0), (10.0, 104.0, 404.0, 6.0), 0.0),  # no time passed: nothing to tell
    ((10.0, 100.0, 400.0, 5.0), (9.0, 104.0, 404.0, 6.0), 0.0),   # the clock went back
    (None, (12.0, 104.0, 404.0, 6.0), 0.0), ((10.0, 100.0, 400.0, 5.0), None, 0.0),  # accounting unreadable
])
def test_other_programs_busy_cores_are_the_machines_busy_time_less_ours_per_second(monkeypatch, before, after, busy):
    snapshots = iter([before, after])
    monkeypatch.setattr(timing, "cpu_snapshot", lambda timer=None: next(snapshots))
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    assert replicas.others_busy() == pytest.approx(busy)
