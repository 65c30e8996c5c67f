"""Each recipe is one copyable file: torch and the standard library only, usable from a bare folder."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RECIPES, ROOT, recipe_pages

OPTIONAL = {"numpy"}  # imported only inside try/except ImportError, never required


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """(top-level module, guarded by try/except ImportError) for every import in the file."""
    found = []

    def visit(node, guarded):
        for child in ast.iter_child_nodes(node):
            is_guard = isinstance(child, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in child.handlers)
            if isinstance(child, ast.Import):
                found.extend((alias.name.split(".")[0], guarded) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    found.append((".", guarded))
                else:
                    found.append((child.module.split(".")[0], guarded))
            visit(child, guarded or is_guard)

    visit(tree, False)
    return found


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_imports_only_torch_and_the_standard_library(name):
    source = (ROOT / "snippets" / f"{name}.py").read_text()
    tree = ast.parse(source)
    assert ast.get_docstring(tree), f"{name}.py needs a module docstring saying what it fixes"
    assert "Usage" in ast.get_docstring(tree) or ">>>" in ast.get_docstring(tree)
    for module, guarded in _imports(tree):
        allowed = module == "torch" or module in sys.stdlib_module_names or (module in OPTIONAL and guarded)
        assert allowed, f"{name}.py imports {module!r}; recipes may import torch and the standard library only"


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_works_copied_alone(tmp_path, name):
    shutil.copy(ROOT / "snippets" / f"{name}.py", tmp_path / f"{name}.py")
    # Block the project's package so an accidental `import snippets...` fails loudly.
    code = (f"import sys; sys.modules['snippets'] = None; sys.modules['numpy'] = None\n"
            f"import {name}\n"
            f"assert {name}.__file__.startswith({str(tmp_path)!r}), {name}.__file__\n"
            f"print('ok', sorted(getattr({name}, '__all__', [])))")
    process = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert process.returncode == 0, process.stderr
    assert process.stdout.startswith("ok")


def test_every_recipe_is_shown_on_a_topic_page():
    assert set(recipe_pages()) == set(RECIPES) != set()


def test_every_include_target_exists():
    import re

    for page in (ROOT / "docs").rglob("*.md"):
        for target in re.findall(r'--8<-- "([^"]+)"', page.read_text()):
            assert (ROOT / target.split(":")[0]).is_file(), f"{page.name} includes missing {target}"


@pytest.mark.parametrize("name", RECIPES)
def test_each_recipe_carries_its_licence_in_its_first_lines(name):
    """A copied recipe keeps its licence: an SPDX line naming the project's licence, then the copyright line."""
    import re  # (tomllib is not in Python 3.10)

    licence = re.search(r'^license = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M).group(1)
    first, second = (ROOT / "snippets" / f"{name}.py").read_text(encoding="utf-8").splitlines()[:2]
    assert first == f"# SPDX-License-Identifier: {licence}"
    assert second.startswith("# Copyright (c) ") and "The PyTorch pitfalls, measured authors" in second
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith(f"{licence} License\n") and second.removeprefix("# ") in text
