"""What "the code that ran" is (``snippets.lab.code``): the reach of a function on a throwaway package, and what
does and does not change its digest."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from snippets.lab import code

HELPERS = '''
"""Helpers of the throwaway package."""

import math

SCALE = 3
OFFSET = SCALE + 1  # a value made from another value
LIMITS = {"low": OFFSET}
UNUSED = 99


def scale(x):
    """Times SCALE."""
    return x * SCALE


def unused():
    return UNUSED


class Base:
    def base_method(self):
        return OFFSET


class Model(Base):
    def __init__(self):
        self.weight = 1

    @property
    def doubled(self):
        return scale(2)

    @staticmethod
    def static():
        return LIMITS["low"]
'''

EXPERIMENT = '''
"""The throwaway package's experiments."""

from . import helpers
from .helpers import Model, scale


def outer(x):
    def inner(y):
        return scale(y)
    return inner(x)


def measured(x: int = 1) -> dict:
    """Measures."""
    from .helpers import LIMITS  # imported in the body
    square = lambda v: v * v  # noqa: E731
    return {"value": outer(x) + helpers.OFFSET + LIMITS["low"] + square(x), "model": Model().doubled}


def other() -> dict:
    return {"unused": helpers.unused()}
'''


@pytest.fixture()
def package(tmp_path, monkeypatch):
    root = tmp_path / "src" / "codetestpkg"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text(HELPERS)
    (root / "exp.py").write_text(EXPERIMENT)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    module = importlib.import_module("codetestpkg.exp")
    yield module, root
    for name in [n for n in sys.modules if n.startswith("codetestpkg")]:
        del sys.modules[name]


def _names(func) -> list[str]:
    return [piece.qualname for piece in code.reach(func).pieces]


def test_the_reach_is_every_function_class_and_value_named_transitively(package):
    module, _ = package
    names = _names(module.measured)
    assert names[0] == "codetestpkg.exp.measured"
    assert set(names) == {"codetestpkg.exp.measured", "codetestpkg.exp.outer", "codetestpkg.helpers.scale",
                          "codetestpkg.helpers.SCALE", "codetestpkg.helpers.OFFSET", "codetestpkg.helpers.LIMITS",
                          "codetestpkg.helpers.Model", "codetestpkg.helpers.Base"}
    assert len(names) == len(set(names)), "each once"
    assert "codetestpkg.helpers.unused" not in names and "codetestpkg.exp.other" not in names


def test_a_class_reaches_its_bases_and_what_its_methods_and_properties_call(package):
    module, _ = package
    assert set(_names(module.Model)) == {"codetestpkg.helpers.Model", "codetestpkg.helpers.Base",
                                         "codetestpkg.helpers.scale", "codetestpkg.helpers.SCALE",
                                         "codetestpkg.helpers.LIMITS", "codetestpkg.helpers.OFFSET"}


def test_pieces_carry_their_source_as_loaded_and_their_lines(package):
    module, root = package
    pieces = {p.qualname: p for p in code.reach(module.measured).pieces}
    scale = pieces["codetestpkg.helpers.scale"]
    assert scale.kind == "function" and scale.source.startswith("def scale(x):") and '"""Times SCALE."""' in scale.source
    lines = (root / "helpers.py").read_text().splitlines()
    assert lines[scale.first - 1] == "def scale(x):" and scale.last == scale.first + 2
    offset = pieces["codetestpkg.helpers.OFFSET"]
    assert offset.kind == "value" and offset.source == "OFFSET = SCALE + 1  # a value made from another value\n"
    assert pieces["codetestpkg.helpers.Model"].kind == "class"


def _reloaded(package, path_name: str, old: str, new: str):
    module, root = package
    path = root / path_name
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))
    importlib.reload(sys.modules[f"codetestpkg.{path_name[:-3]}"])
    return importlib.reload(module)


@pytest.mark.parametrize("path_name, old, new", [
    ("helpers.py", '"""Times SCALE."""', '"""Three times x."""'),  # a docstring
    ("helpers.py", "    return x * SCALE", "    # a comment\n\n    return x * SCALE  # and another"),
    ("helpers.py", "UNUSED = 99", "UNUSED = 100"),  # a value nothing reaches
    ("helpers.py", "def unused():\n    return UNUSED", "def unused():\n    return -UNUSED"),
    ("exp.py", "def other() -> dict:", "def other(y: int = 2) -> dict:"),  # another experiment
    ("exp.py", '"""The throwaway package\'s experiments."""', '"""Edited."""\n\n\ndef added():\n    return 1\n'),
])
def test_edits_outside_the_code_that_runs_change_nothing(package, path_name, old, new):
    before = code.reach(package[0].measured).digest
    module = _reloaded(package, path_name, old, new)
    assert code.reach(module.measured).digest == before


@pytest.mark.parametrize("path_name, old, new", [
    ("helpers.py", "    return x * SCALE", "    return x * SCALE + 0"),  # a helper's line
    ("helpers.py", "SCALE = 3", "SCALE = 4"),  # a value, reached through another value
    ("helpers.py", '        return LIMITS["low"]', '        return LIMITS["low"] + 0'),  # a static method
    ("helpers.py", "        return OFFSET", "        return OFFSET + 0"),  # a base class
    ("exp.py", "        return scale(y)", "        return scale(y) + 0"),  # a nested function
    ("exp.py", "square = lambda v: v * v", "square = lambda v: v * v * 1"),  # a lambda
    ("exp.py", "def measured(x: int = 1) -> dict:", "def measured(x: int = 2) -> dict:"),  # a default
])
def test_a_changed_line_of_the_code_that_runs_changes_the_digest(package, path_name, old, new):
    before = code.reach(package[0].measured).digest
    module = _reloaded(package, path_name, old, new)
    assert code.reach(module.measured).digest != before


def test_a_file_edited_after_its_import_keys_the_code_that_was_imported(package):
    module, root = package
    before = code.reach(module.measured)
    (root / "exp.py").write_text(EXPERIMENT.replace("helpers.OFFSET", "helpers.OFFSET * 2"))
    code._reached.clear()
    after = code.reach(module.measured)
    assert after.digest == before.digest and after.root.source == before.root.source, \
        "the process runs the code it imported, and keys and shows that"


def test_a_function_whose_source_is_not_in_its_module_is_a_clear_error(package):
    module, _ = package
    namespace: dict = {}
    exec(textwrap.dedent("def made():\n    return 1\n"), namespace)
    made = namespace["made"]
    made.__module__ = "codetestpkg.exp"
    made.__qualname__ = "made_elsewhere"
    with pytest.raises(code.SourceError, match=r"made_elsewhere is not defined in codetestpkg\.exp as this process "
                                               r"loaded it"):
        code.reach(made)
    with pytest.raises(TypeError, match="reach\\(\\) needs a function or a class, got int"):
        code.reach(3)


def test_an_experiment_is_reached_through_its_function():
    from snippets.experiments.seeding import measure

    assert code.reach(measure.creation_order).digest == code.reach(measure.creation_order.func).digest
    assert code.reach(measure.creation_order).root.qualname == "seeding.measure.creation_order"


def test_a_fresh_import_reuses_what_was_found_only_where_the_sources_are_unchanged(package):
    module, root = package
    found = code.memo()
    first = code.reach(module.measured)
    for name in [n for n in sys.modules if n.startswith("codetestpkg")]:
        del sys.modules[name]
    code._reached.clear()
    code._loaded.clear()
    code.adopt(found)
    again = importlib.import_module("codetestpkg.exp")
    assert code.reach(again.measured) is first, "the same sources: what was found is reused"
    for name in [n for n in sys.modules if n.startswith("codetestpkg")]:
        del sys.modules[name]
    code._reached.clear()
    code._loaded.clear()
    (root / "helpers.py").write_text(HELPERS.replace("return x * SCALE", "return x * SCALE + 0"))
    edited = importlib.import_module("codetestpkg.exp")
    assert code.reach(edited.measured).digest != first.digest, "a module read differently: found anew"
