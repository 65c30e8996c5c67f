"""The private names the site's MkDocs plugin and the font check reach into still exist in the installed packages.

pyproject.toml bounds each of these packages below its next minor (or major) release; when a bound is raised, this
file says at once which private name a new release no longer has, instead of a build failing obscurely."""

from __future__ import annotations

import importlib
import importlib.metadata
import re

import pytest

from snippets.lab import mkdocs_hook

# (distribution, module, attribute path, what uses it)
PRIVATE = [
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "convert.nb2html", "the plugin wraps it to execute notebooks once"),
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "_compute_cache_key", "the plugin drops stale rendered notebooks"),
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "_get_cache_path", "the plugin drops stale rendered notebooks"),
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "TocExtension", "the plugin gives notebooks Unicode anchors"),
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "NotebookFile", "the plugin makes notebooks pages in every language"),
    ("mkdocs-jupyter", "mkdocs_jupyter.plugin", "Plugin.should_include", "the plugin finds the notebook pages"),
    ("mkdocs-jupyter", "mkdocs_jupyter.convert", "slugify", "the plugin gives notebooks Unicode anchors"),
    ("mkdocs-static-i18n", "mkdocs_static_i18n.plugin", "I18n", "the plugin reads which language is being built"),
    ("markdown-exec", "markdown_exec._internal.formatters.base", "_logger", "the plugin hears failing blocks on it"),
    ("markdown-exec", "markdown_exec._internal.formatters.base", "base_format", "its warning names the block"),
    ("matplotlib", "matplotlib.font_manager", "_get_font.cache_clear", "the font check adopts a new font list"),
    ("matplotlib", "matplotlib.font_manager", "json_dump", "the font check saves the new font list"),
    ("matplotlib", "matplotlib.font_manager", "FontManager.__version__", "the font check names matplotlib's cache"),
]


@pytest.mark.parametrize("distribution, module, path, use", PRIVATE, ids=[f"{m}.{p}" for _, m, p, _ in PRIVATE])
def test_a_private_name_the_project_uses_exists(distribution, module, path, use):
    version = importlib.metadata.version(distribution)
    found = importlib.import_module(module)
    for part in path.split("."):
        assert hasattr(found, part), (
            f"{distribution} {version} has no {module}.{path}, which {use} (snippets/lab/): keep {distribution} "
            f"below this release in pyproject.toml, or update the code that uses it")
        found = getattr(found, part)


def test_markdown_exec_warns_on_the_logger_the_plugin_listens_to():
    from markdown_exec._internal.formatters import base

    assert base._logger.name == mkdocs_hook._EXEC_LOGGER, (
        f"markdown-exec {importlib.metadata.version('markdown-exec')} logs failing blocks on {base._logger.name!r}, "
        f"the plugin listens to {mkdocs_hook._EXEC_LOGGER!r}")


def test_the_static_i18n_plugin_has_the_attributes_the_hook_reads():
    from mkdocs_static_i18n.plugin import I18n

    plugin = I18n()
    plugin.load_config({"languages": [{"locale": "en", "name": "English", "default": True},
                                      {"locale": "zh", "name": "中文"}]})
    for name in ("current_language", "default_language", "build_languages", "i18n_files_per_language"):
        assert hasattr(plugin, name) or name in type(plugin).__dict__, (
            f"mkdocs-static-i18n {importlib.metadata.version('mkdocs-static-i18n')} has no {name}, which the site's plugin reads")


BOUNDED = {"mkdocs", "mkdocs-material", "markdown-exec", "mkdocs-jupyter", "mkdocs-static-i18n", "matplotlib",
           "nbconvert", "jupytext"}


def _requirements() -> dict[str, str]:
    """Each requirement in pyproject.toml, by name: its version specifier."""
    from conftest import ROOT

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return {name.lower(): spec for name, spec in re.findall(r'^\s*"([A-Za-z0-9_.-]+)([<>=!~][^"]*)",', text, re.M)}


def test_every_package_with_private_names_in_use_has_an_upper_bound():
    requirements = _requirements()
    for name in sorted(BOUNDED):
        assert name in requirements, f"pyproject.toml does not list {name}"
        assert "<" in requirements[name], f"{name}{requirements[name]}: the project reaches into it, so it needs a bound"


def test_the_installed_packages_are_within_the_bounds():
    from packaging.requirements import Requirement

    for name, spec in _requirements().items():
        if name in BOUNDED:
            version = importlib.metadata.version(name)
            assert Requirement(name + spec).specifier.contains(version, prereleases=True), (name, version, spec)
