"""The result cache: hits, misses on every key ingredient, corrupt entries, REFRESH, clear errors."""

from __future__ import annotations

import importlib
import json
import logging
import sys
import textwrap

from pathlib import Path

import pytest

from snippets.lab import ExperimentError, cache, environment
from snippets.lab import store
from snippets.lab import context


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A throwaway package with an experiment module importing a helper module; calls are counted."""
    root = tmp_path / "src"
    pkg = root / "cachetestpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def scale(x):\n    return 2 * x\n")
    (pkg / "tables.py").write_text("ROWS = 3\n")
    (pkg / "exp.py").write_text(textwrap.dedent("""
        from snippets.lab import experiment
        from snippets.step_budget import steps_per_epoch
        from . import tables
        from .helper import scale

        CALLS = []

        @experiment()
        def double(x: int = 1) -> dict:
            CALLS.append(x)
            return {"value": scale(x)}

        @experiment(timing=True)
        def clock(x: int = 1) -> dict:
            CALLS.append(("clock", x))
            return {"value": x}

        @experiment()
        def broken(x: int = 1) -> dict:
            raise ZeroDivisionError("division by zero in the experiment")

        @experiment()
        def pair(x: int = 1, label: str = "a") -> dict:
            return {"x": x, "label": label, "pair": (x, label), 7: "seven"}

        @experiment()
        def constant() -> dict:
            return {"rows": tables.ROWS}

        @experiment()
        def listed() -> dict:
            return [1, 2]

        @experiment()
        def opaque() -> dict:
            return {"value": object()}
    """))
    monkeypatch.syspath_prepend(str(root))
    for name in [n for n in sys.modules if n.startswith("cachetestpkg")]:
        del sys.modules[name]
    module = importlib.import_module("cachetestpkg.exp")
    yield module, pkg
    for name in [n for n in sys.modules if n.startswith("cachetestpkg")]:
        del sys.modules[name]


def test_miss_then_hit(private_cache, package):
    module, _ = package
    first = cache.run(module.double, x=3)
    second = cache.run(module.double, x=3)
    assert (first.cached, second.cached) == (False, True)
    assert first.value == second.value == {"value": 6}
    assert module.CALLS == [3]
    assert second.fingerprint == environment.fingerprint()


def test_defaults_and_explicit_parameters_share_an_entry(private_cache, package):
    module, _ = package
    cache.run(module.double)
    assert cache.run(module.double, x=1).cached


def test_changed_parameters_miss(private_cache, package):
    module, _ = package
    cache.run(module.double, x=3)
    assert not cache.run(module.double, x=4).cached
    assert module.CALLS == [3, 4]


def test_changed_experiment_source_misses_once_imported(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    source = (pkg / "exp.py").read_text()
    (pkg / "exp.py").write_text(source.replace('return {"value": scale(x)}', 'return {"value": scale(x) + 0}'))
    # the process still runs the code it imported: its results keep that code's key
    assert cache.run(module.double, x=3).cached and module.CALLS == [3]
    module = importlib.reload(module)
    assert not cache.run(module.double, x=3).cached


def test_a_comment_or_docstring_edit_reruns_nothing(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    source = (pkg / "exp.py").read_text()
    (pkg / "exp.py").write_text("# a comment\n" + source.replace(
        "def double(x: int = 1) -> dict:\n", 'def double(x: int = 1) -> dict:\n    """Twice x."""  # doubled\n'))
    module = importlib.reload(module)
    assert cache.run(module.double, x=3).cached


def test_another_experiment_of_the_module_is_not_part_of_the_key(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    source = (pkg / "exp.py").read_text()
    (pkg / "exp.py").write_text(source.replace('return {"value": x}', 'return {"value": x + 1}') +
                                "\n\n@experiment()\ndef added() -> dict:\n    return {}\n")
    module = importlib.reload(module)
    assert cache.run(module.double, x=3).cached, "clock changed and added is new: double is as it was"
    assert not cache.run(module.clock, x=3).cached


def test_changed_imported_module_source_misses_once_imported(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    (pkg / "helper.py").write_text((pkg / "helper.py").read_text().replace("2 * x", "2 * x + 0"))
    assert cache.run(module.double, x=3).cached, "the helper that runs is the one imported"
    importlib.reload(sys.modules["cachetestpkg.helper"])
    assert not cache.run(module.double, x=3).cached


def test_an_experiment_module_is_read_as_it_is_imported(private_cache, package):
    module, pkg = package
    key = cache.source_digest(module.double.func)
    (pkg / "exp.py").write_text((pkg / "exp.py").read_text().replace("scale(x)}", "scale(x) + 1}"))
    assert cache.source_digest(module.double.func) == key, "edited while the build runs: the code that runs keys it"


def test_an_experiment_module_edited_before_its_first_run_is_keyed_as_imported(private_cache, package):
    module, pkg = package
    from snippets.lab import code

    imported = (pkg / "exp.py").read_text()
    (pkg / "exp.py").write_text((pkg / "exp.py").read_text() + "\n# edited after the import, before any run\n")
    assert code.loaded_source(module.__name__) == imported, "read when @experiment ran, during the import"


def test_only_experiments_are_found_by_name():
    assert cache.find_experiment("loader.question_timing").name == "loader.question_timing"
    assert cache.find_experiment("loader.consume") is None, "a helper of the page, not an experiment"
    assert cache.find_experiment("loader.LOADER_NAMES") is None


def test_imported_snippets_modules_are_part_of_the_key():
    from snippets.experiments.seeding import measure

    from snippets.lab import code

    modules = {p.module for p in code.reach(measure.creation_order).pieces}
    assert {"snippets.experiments.seeding.measure", "snippets.seeding", "snippets.experiments.question"} <= modules
    assert not {m for m in modules if m.endswith((".figures", ".checks"))}, "presentation must not key results"
    loader = __import__("snippets.experiments.loader.measure", fromlist=["x"])
    reached = {p.qualname for p in code.reach(loader.question_timing).pieces}
    assert {"lab.timing.measure", "tensor_loader.TensorLoader", "lab.environment.pick_device"} <= reached
    # what shapes how a result is shown, never its value
    assert not {q for q in reached if q.startswith(("lab.render", "lab.claims", "lab.provenance", "lab.machines",
                                                     "lab.environment.describe", "lab.environment.stamp",
                                                     "lab.timing.decide", "lab.i18n"))}


def test_changed_fingerprint_misses(private_cache, package, monkeypatch):
    module, _ = package
    cache.run(module.double, x=3)
    other = {**environment.fingerprint(), "threads": 999}
    monkeypatch.setattr(environment, "fingerprint", lambda: other)
    result = cache.run(module.double, x=3)
    assert not result.cached
    assert result.fingerprint["threads"] == 999


def test_corrupt_entry_is_recomputed_with_a_warning(private_cache, package, caplog):
    module, _ = package
    cache.run(module.double, x=3)
    [entry] = list(private_cache.rglob("*.json"))
    entry.write_text('{"key": "truncated...')
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"):
        result = cache.run(module.double, x=3)
    assert not result.cached and result.value == {"value": 6}
    assert any("corrupt" in record.getMessage() for record in caplog.records)
    assert json.loads(entry.read_text())["value"] == {"value": 6}
    assert cache.run(module.double, x=3).cached


def test_entry_with_wrong_key_is_recomputed(private_cache, package):
    module, _ = package
    cache.run(module.double, x=3)
    [entry] = list(private_cache.rglob("*.json"))
    data = json.loads(entry.read_text())
    data["key"] = "0" * 64
    data["value"] = {"value": -1}
    entry.write_text(json.dumps(data))
    assert cache.run(module.double, x=3).value == {"value": 6}


def test_writes_are_atomic_and_leave_no_temporary_files(private_cache, package):
    module, _ = package
    for x in range(5):
        cache.run(module.double, x=x)
    files = list(private_cache.rglob("*"))
    assert not [f for f in files if f.name.startswith(".tmp-")]
    assert len([f for f in files if f.suffix == ".json"]) == 5


def test_refresh_reruns_once_per_process(private_cache, package, monkeypatch):
    module, _ = package
    cache.run(module.double, x=3)
    monkeypatch.setenv("REFRESH", "1")
    assert not cache.run(module.double, x=3).cached
    assert cache.run(module.double, x=3).cached  # a second block on the same build reuses the fresh result
    assert module.CALLS == [3, 3]


def test_refresh_nontiming_skips_timing_experiments(private_cache, package, monkeypatch):
    module, _ = package
    cache.run(module.double, x=3)
    cache.run(module.clock, x=3)
    monkeypatch.setenv("REFRESH", "nontiming")
    assert not cache.run(module.double, x=3).cached
    assert cache.run(module.clock, x=3).cached


def test_refresh_timing_reruns_only_timing_experiments(private_cache, package, monkeypatch):
    module, _ = package
    cache.run(module.double, x=3)
    cache.run(module.clock, x=3)
    monkeypatch.setenv("REFRESH", "timing")
    assert cache.run(module.double, x=3).cached
    assert not cache.run(module.clock, x=3).cached


def test_unknown_parameter_is_a_clear_error(private_cache, package, monkeypatch):
    module, _ = package
    monkeypatch.setattr(context.current(), "page", "some-page.md")
    with pytest.raises(ExperimentError) as error:
        cache.run(module.double, y=3)
    message = str(error.value)
    assert "unknown parameter(s) y" in message and "accepts: x" in message
    assert "cachetestpkg.exp.double" in message and "some-page.md" in message


def test_experiment_that_raises_names_itself(private_cache, package):
    module, _ = package
    with pytest.raises(ExperimentError, match=r"broken\(x=1\) raised ZeroDivisionError: division by zero"):
        cache.run(module.broken)
    assert not list(private_cache.rglob("*.json"))


def test_plain_function_is_rejected(private_cache):
    with pytest.raises(ExperimentError, match="not an experiment"):
        cache.run(lambda: {})


# ---- names, folders, keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize("module, name", [
    ("snippets.experiments.loader.measure", "loader.question_timing"),
    ("snippets.experiments.question", "question.question_timing"),
    ("snippets.experiments.steps.measure.inner", "steps.inner.question_timing"),
    ("elsewhere.measure", "elsewhere.question_timing"),
])
def test_experiment_names_drop_the_package_prefix_and_measure(module, name):
    def question_timing() -> dict:
        return {}

    question_timing.__module__ = module
    assert cache.experiment_name(question_timing) == name
    assert cache.experiment(timing=True)(question_timing) == cache.Experiment(question_timing, name, True)
    assert cache.experiment()(question_timing).timing is False
    assert cache.experiment()(question_timing).timing is False, "only timings run in fresh processes"


def test_cache_dir_is_the_projects_unless_told(monkeypatch, tmp_path):
    monkeypatch.delenv("PITFALLS_CACHE_DIR")
    assert store.cache_dir() == store.PROJECT_ROOT / ".cache" / "results"
    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert store.cache_dir() == tmp_path / "elsewhere"


def test_tests_never_use_the_projects_cache():
    """conftest points every fast test at a private cache: no test writes results into the project's."""
    assert not store.cache_dir().resolve().is_relative_to((store.PROJECT_ROOT / ".cache").resolve())


FP = {"torch": "2.13.0", "device": "cpu", "device_name": "CPU (demo)", "cpu": "demo", "threads": 2}


def _demo_experiment() -> cache.Experiment:
    def demo(x: int = 1) -> dict:
        return {}

    return cache.Experiment(demo, "demo.exp", False)


def test_the_cache_key_recipe_is_stable(monkeypatch):
    """A change to what goes into a key invalidates every machine's results: it must be deliberate (bump
    FORMAT_VERSION and update this value)."""
    import torch

    monkeypatch.setattr(cache, "source_digest", lambda func: "source-digest")
    params = {"x": 1, "device": torch.device("cpu"), "sizes": (1, 2)}
    assert cache.cache_key(_demo_experiment(), params, FP) == \
        "e0cfd5a531e6a1bd367945a5cdaf5e102025928e82da3ede59bfc1a2451b6fc9"


def test_the_cache_key_does_not_depend_on_dict_order(monkeypatch):
    monkeypatch.setattr(cache, "source_digest", lambda func: "source-digest")
    exp = _demo_experiment()
    assert cache.cache_key(exp, {"a": 1, "b": 2}, FP) == cache.cache_key(exp, {"b": 2, "a": 1}, dict(reversed(FP.items())))
    assert cache.cache_key(exp, {"a": 1, "b": 2}, FP) != cache.cache_key(exp, {"a": 2, "b": 1}, FP)


def test_an_entry_lives_in_the_experiments_folder_named_by_its_key(private_cache, package):
    module, _ = package
    result = cache.run(module.double, x=3)
    key = cache.cache_key(module.double, {"x": 3}, result.fingerprint)
    assert [p.relative_to(private_cache) for p in private_cache.rglob("*.json")] == \
        [Path("cachetestpkg.exp.double") / f"{key[:24]}.json"]


def test_modules_the_experiment_refers_to_are_in_its_digest(package):
    import types

    module, _ = package
    module.virtual = types.ModuleType("cachetestpkg.virtual")  # no file: nothing to hash, and no error
    sys.modules["cachetestpkg.virtual"] = module.virtual
    from snippets.lab import code

    assert [p.qualname for p in code.reach(module.double).pieces] == ["cachetestpkg.exp.double",
                                                                      "cachetestpkg.exp.CALLS",
                                                                      "cachetestpkg.helper.scale"]
    assert [p.qualname for p in code.reach(module.constant).pieces] == ["cachetestpkg.exp.constant",
                                                                        "cachetestpkg.tables.ROWS"]


def test_the_digest_reads_each_module_file(package, monkeypatch):
    module, pkg = package
    before = cache.source_digest(module.constant.func)
    untouched = cache.source_digest(module.double.func)
    assert cache.source_digest(module.constant.func) == before
    (pkg / "tables.py").write_text("ROWS = 4\n")
    assert cache.source_digest(module.constant.func) == before, "the tables this process loaded have not changed"
    importlib.reload(sys.modules["cachetestpkg.tables"])
    assert cache.source_digest(module.constant.func) != before
    assert cache.source_digest(module.double.func) == untouched, "double never reads the tables"


# ---- what is stored and returned -----------------------------------------------------------------------------


class _Clock:
    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def perf_counter(self) -> float:
        return self.times.pop(0)


class _FixedNow(cache.datetime):
    asked: list = []

    @classmethod
    def now(cls, tz=None):
        cls.asked.append(tz)
        return cache.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=tz)


@pytest.fixture()
def fixed_time(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr(cache, "time", SimpleNamespace(perf_counter=_Clock(10.0, 12.5).perf_counter))
    monkeypatch.setattr(cache, "datetime", _FixedNow)
    _FixedNow.asked = []


def test_a_fresh_result_is_stored_with_where_it_came_from(private_cache, package, fixed_time):
    module, _ = package
    fresh = cache.run(module.pair, x=3)
    fp = environment.fingerprint()
    assert (fresh.value, fresh.experiment, fresh.params, fresh.fingerprint, fresh.computed_at, fresh.elapsed_s,
            fresh.timing, fresh.cached, fresh.exp) == (
        {"x": 3, "label": "a", "pair": [3, "a"], "7": "seven"}, "cachetestpkg.exp.pair", {"x": 3, "label": "a"},
        fp, "2026-03-04T05:06:07+00:00", 2.5, False, False, module.pair)
    assert _FixedNow.asked == [cache.timezone.utc]
    [path] = private_cache.rglob("*.json")
    text = path.read_text(encoding="utf-8")
    entry = json.loads(text)
    assert entry == {"key": cache.cache_key(module.pair, {"x": 3, "label": "a"}, fp),
                     "experiment": "cachetestpkg.exp.pair", "params": {"x": 3, "label": "a"}, "fingerprint": fp,
                     "computed_at": "2026-03-04T05:06:07+00:00", "elapsed_s": 2.5,
                     "value": {"x": 3, "label": "a", "pair": [3, "a"], "7": "seven"}}
    assert text == json.dumps(entry, sort_keys=True), "entries are written with sorted keys"


def test_a_cached_result_is_what_the_fresh_one_was(private_cache, package, fixed_time):
    module, _ = package
    fresh = cache.run(module.pair, x=3, label="b")
    hit = cache.run(module.pair, label="b", x=3)
    assert hit.cached and not fresh.cached
    assert (hit.value, hit.experiment, hit.params, hit.fingerprint, hit.computed_at, hit.elapsed_s, hit.timing,
            hit.exp) == (fresh.value, fresh.experiment, fresh.params, fresh.fingerprint, fresh.computed_at,
                         fresh.elapsed_s, fresh.timing, fresh.exp)
    assert hit["pair"] == [3, "b"] and hit.stamp == environment.stamp(fresh.fingerprint, fresh.computed_at)


def test_a_timing_experiments_result_says_so(private_cache, package):
    module, _ = package
    assert cache.run(module.clock).timing is True
    assert cache.run(module.clock).timing is True


def test_fresh_results_are_json_round_tripped(private_cache, package):
    """A page renders the same from a fresh result as from a cached one: tuples are lists, keys strings."""
    module, _ = package
    fresh = cache.run(module.pair, x=1)
    assert fresh.value["pair"] == [1, "a"] and "7" in fresh.value and 7 not in fresh.value
    assert fresh.value == cache.run(module.pair, x=1).value


def test_running_and_finishing_are_logged(private_cache, package, fixed_time, caplog):
    module, _ = package
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        cache.run(module.pair, x=3, label="b")
        cache.run(module.pair, x=3, label="b")
    assert [r.getMessage() for r in caplog.records] == ["pitfalls: running cachetestpkg.exp.pair(x=3, label='b')",
                                                       "pitfalls: cachetestpkg.exp.pair done in 2.5 s"]


def test_experiments_run_on_a_page_are_recorded(private_cache, package, monkeypatch):
    module, _ = package
    monkeypatch.setattr(context.current(), "ran", {})
    cache.run(module.double)
    assert context.current().ran == {}
    monkeypatch.setattr(context.current(), "page", "steps.md")
    cache.run(module.double)
    cache.run(module.constant)
    assert context.current().ran == {"steps.md": {"cachetestpkg.exp.double", "cachetestpkg.exp.constant"}}


# ---- what is refused -----------------------------------------------------------------------------------------


def test_a_result_that_is_not_a_dict_is_refused(private_cache, package, monkeypatch):
    module, _ = package
    with pytest.raises(ExperimentError) as error:
        cache.run(module.listed)
    assert str(error.value) == "experiment cachetestpkg.exp.listed returned list, not a dict"
    monkeypatch.setattr(context.current(), "page", "p.md")
    with pytest.raises(ExperimentError) as error:
        cache.run(module.listed)
    assert str(error.value) == "[page p.md] experiment cachetestpkg.exp.listed returned list, not a dict"
    assert not list(private_cache.rglob("*.json"))


def test_a_result_that_is_not_json_is_refused(private_cache, package):
    module, _ = package
    with pytest.raises(ExperimentError) as error:
        cache.run(module.opaque)
    assert str(error.value) == ("experiment cachetestpkg.exp.opaque returned a value that is not JSON: "
                                "Object of type object is not JSON serializable")
    assert not list(private_cache.rglob("*.json"))


def test_unknown_parameters_are_listed_with_what_is_accepted(private_cache, package):
    module, _ = package
    with pytest.raises(ExperimentError) as error:
        cache.run(module.pair, z=1, y=2)
    assert str(error.value) == ("experiment 'cachetestpkg.exp.pair' got unknown parameter(s) y, z; "
                                "it accepts: x, label")
    with pytest.raises(ExperimentError) as error:
        cache.run(module.constant, x=1)
    assert str(error.value) == "experiment 'cachetestpkg.exp.constant' got unknown parameter(s) x; it accepts: none"


def test_a_plain_function_is_named_in_the_error(private_cache, monkeypatch):
    def plain() -> dict:
        return {}

    with pytest.raises(ExperimentError) as error:
        cache.run(plain)
    assert str(error.value) == f"{plain!r} is not an experiment (decorate it with @experiment())"
    monkeypatch.setattr(context.current(), "page", "p.md")
    with pytest.raises(ExperimentError, match=r"^\[page p\.md\] <function"):
        cache.run(plain)


def test_an_experiment_that_raises_outside_a_page(private_cache, package):
    module, _ = package
    with pytest.raises(ExperimentError) as error:
        cache.run(module.broken, x=2)
    assert str(error.value) == ("experiment cachetestpkg.exp.broken(x=2) raised ZeroDivisionError: "
                                "division by zero in the experiment")
    assert isinstance(error.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize("stored, reason", [
    ({"value": {"value": 6}}, "'key'"),
    ({"key": "0" * 64, "value": {"value": -1}}, "key or value does not match"),
    ({"key": None, "value": [6]}, "key or value does not match"),
])
def test_corrupt_entries_are_named_with_the_reason(private_cache, package, caplog, stored, reason):
    module, _ = package
    first = cache.run(module.double, x=3)
    [entry] = list(private_cache.rglob("*.json"))
    if stored.get("key") is None and "key" in stored:
        stored["key"] = cache.cache_key(module.double, {"x": 3}, first.fingerprint)
    entry.write_text(json.dumps(stored))
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"):
        again = cache.run(module.double, x=3)
    assert not again.cached and again.value == {"value": 6}
    assert [r.getMessage() for r in caplog.records] == [f"Cache entry {entry} is corrupt ({reason}); recomputing"]


def test_an_entry_that_is_not_utf8_is_corrupt(private_cache, package, caplog):
    module, _ = package
    cache.run(module.double, x=3)
    [entry] = list(private_cache.rglob("*.json"))
    entry.write_bytes(b'{"key": "\xff"}')
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"):
        assert not cache.run(module.double, x=3).cached
    assert "is corrupt" in caplog.records[0].getMessage()


# ---- atomic writes -------------------------------------------------------------------------------------------


def test_store_text_writes_a_temporary_file_beside_the_target_then_renames_it(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "folder" / "entry.json"
    renamed = []
    real_replace = cache.os.replace

    def replace(source, destination):
        renamed.append((Path(source), Path(destination), Path(source).read_bytes()))
        real_replace(source, destination)

    monkeypatch.setattr(cache.os, "replace", replace)
    store.store_text(target, "π = 3.14159\n")
    [(source, destination, written)] = renamed
    assert destination == target and source.parent == target.parent
    assert source.name.startswith(".tmp-") and source.name.endswith(".json")
    assert written == "π = 3.14159\n".encode("utf-8")
    assert target.read_bytes() == written and list(target.parent.iterdir()) == [target]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "entry.json"
    target.write_text("old")

    def failing_replace(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(cache.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        store.store_text(target, "new")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "entry.json"

    def interrupted(source, destination):
        Path(source).unlink()  # gone already: the clean-up must not fail on it
        raise KeyboardInterrupt

    monkeypatch.setattr(cache.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.store_text(target, "new")
    assert list(tmp_path.iterdir()) == []


# ---- REFRESH -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, mode", [
    ("", "none"), ("0", "none"), ("no", "none"), ("false", "none"), ("off", "none"), (" No ", "none"),
    ("1", "all"), ("all", "all"), ("yes", "all"), ("true", "all"), ("on", "all"), ("ON", "all"), (" 1\n", "all"),
    ("nontiming", "nontiming"), ("NonTiming", "nontiming"), ("timing", "timing"), (" Timing", "timing"),
])
def test_refresh_words(monkeypatch, raw, mode):
    monkeypatch.setenv("REFRESH", raw)
    assert cache.refresh_mode() == mode


def test_refresh_unset_is_none(monkeypatch):
    monkeypatch.delenv("REFRESH", raising=False)
    assert cache.refresh_mode() == "none"


@pytest.mark.parametrize("raw", ["2", "everything", "non-timing"])
def test_a_refresh_word_not_understood_is_an_error(monkeypatch, raw):
    monkeypatch.setenv("REFRESH", raw)
    with pytest.raises(ExperimentError) as error:
        cache.refresh_mode()
    assert str(error.value) == (f"REFRESH={raw!r} is not understood; use REFRESH=1 (re-run every experiment and "
                                "notebook), REFRESH=timing (only experiments that measure time), REFRESH=nontiming "
                                "(only those that do not) or leave it unset")


@pytest.mark.parametrize("raw", ["on", "yes", "true", "all"])
def test_every_word_for_all_refreshes_every_experiment(private_cache, package, monkeypatch, raw):
    module, _ = package
    cache.run(module.clock)
    cache.run(module.double)
    monkeypatch.setenv("REFRESH", raw)
    assert not cache.run(module.clock).cached and not cache.run(module.double).cached


@pytest.mark.parametrize("raw", ["off", "no", "false", "0"])
def test_every_word_for_none_refreshes_nothing(private_cache, package, monkeypatch, raw):
    module, _ = package
    cache.run(module.clock)
    monkeypatch.setenv("REFRESH", raw)
    assert cache.run(module.clock).cached


def test_refreshed_keys_are_remembered_only_under_refresh(private_cache, package, monkeypatch):
    module, _ = package
    cache.run(module.double)
    assert context.current().refreshed == set()
    monkeypatch.setenv("REFRESH", "1")
    cache.run(module.double)
    assert context.current().refreshed == {cache.cache_key(module.double, {"x": 1}, environment.fingerprint())}


def test_a_stored_result_is_read_once_while_its_file_stays_and_each_reader_gets_its_own_copy(private_cache, package):
    """A rebuild reads every stored result again: it is parsed once while its file is as it was, each reader gets a
    copy of its own, and a file changed on disk is read as it is now."""
    module, _ = package
    cache.run(module.double, x=3)
    first = cache.run(module.double, x=3)
    first.value["value"] = -1  # a reader that changes its copy changes nobody else's
    assert cache.run(module.double, x=3).value == {"value": 6}
    [entry] = list(private_cache.rglob("*.json"))
    stored = json.loads(entry.read_text())
    stored["value"] = {"value": 7}
    entry.write_text(json.dumps(stored))
    assert cache.run(module.double, x=3).value == {"value": 7}


def test_a_recording_is_written_one_object_per_line_indented_by_depth_with_its_text_as_it_is():
    from snippets.lab import store

    assert store.dump({"ü": [{"é": "ß"}, {"b": [1, {"c": 2}]}], "z": {"y": {"x": 1}}}) == (
        '{\n "z": {\n  "y": {"x": 1}\n },\n "ü": [\n  {"é": "ß"},\n  {\n   "b": [\n    1,\n    {"c": 2}\n   ]\n  }\n ]\n}\n')
