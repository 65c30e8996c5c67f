"""The result cache: hits, misses on every key ingredient, corrupt entries, REFRESH, clear errors."""

from __future__ import annotations

import importlib
import json
import logging
import sys
import textwrap

import pytest

from snippets.lab import ExperimentError, cache, environment


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A throwaway package with an experiment module importing a helper module; calls are counted."""
    root = tmp_path / "src"
    pkg = root / "cachetestpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("def scale(x):\n    return 2 * x\n")
    (pkg / "exp.py").write_text(textwrap.dedent("""
        from snippets.lab import experiment
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


def test_changed_experiment_source_misses(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    (pkg / "exp.py").write_text((pkg / "exp.py").read_text() + "\n# an edit\n")
    assert not cache.run(module.double, x=3).cached


def test_changed_imported_module_source_misses(private_cache, package):
    module, pkg = package
    cache.run(module.double, x=3)
    (pkg / "helper.py").write_text((pkg / "helper.py").read_text() + "\n# an edit\n")
    assert not cache.run(module.double, x=3).cached


def test_imported_snippets_modules_are_part_of_the_key():
    from snippets.experiments.seeding import measure

    modules = cache.digest_modules(measure.creation_order.func)
    assert {"snippets.experiments.seeding.measure", "snippets.seeding", "snippets.experiments.question"} <= set(modules)
    assert not {m for m in modules if m.endswith((".figures", ".checks"))}, "presentation must not key results"
    assert "snippets.lab.timing" in cache.digest_modules(
        __import__("snippets.experiments.loader", fromlist=["x"]).question_timing.func)
    assert not set(modules) & cache.RESULT_NEUTRAL, "renderers and claims must not invalidate results"


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


def test_unknown_parameter_is_a_clear_error(private_cache, package, monkeypatch):
    module, _ = package
    monkeypatch.setattr(cache, "current_page", "some-page.md")
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
