"""Shared fixtures: the built site (one strict build per test session), and a private result cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]


def topic_pages() -> dict[str, str]:
    """The English topic pages by name (``loader-overhead``) and the topic each presents (``loader``), read from
    their front matter as the build reads it: a new topic's page is tested without being listed in a test."""
    from snippets.lab.mkdocs_hook import topic_pages as pages

    return {path.removesuffix(".md"): topic for path, topic in pages(ROOT / "docs").items()
            if not path.startswith("zh/")}


def named_page(markdown: str) -> tuple[dict, object] | None:
    """A page written as prose with named values (front matter ``names: true``): its front matter and its Jinja2
    syntax tree, as the plugin renders it; None for a page of exec blocks."""
    from mkdocs.utils.meta import get_data

    from snippets.lab.mkdocs_hook import environment

    body, meta = get_data(markdown)
    if not meta.get("names"):
        return None
    return meta, environment().parse(body)


def _recipes() -> list[str]:
    from snippets.lab.mkdocs_hook import RECIPES as published  # the single files at the top of snippets/

    return [name.removesuffix(".py") for name in published]


RECIPES = _recipes()  # by module name: tensor_loader


def recipe_pages() -> dict[str, str]:
    """Each recipe (``tensor_loader``) and the topic page that shows it whole (``loader-overhead``: its source is
    included there, ``--8<-- "snippets/tensor_loader.py"``)."""
    found = {}
    for page in topic_pages():
        text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
        found.update({recipe: page for recipe in RECIPES if f'--8<-- "snippets/{recipe}.py"' in text})
    assert set(found) == set(RECIPES), f"recipes no topic page shows: {sorted(set(RECIPES) - set(found))}"
    return found


def made_result(value: dict, experiment: str, *, timing: bool = False, **extra):  # noqa: ANN201 - a cache.Result
    """A value as a page sees a result of ``experiment``: with this machine's stamp (``extra``: Result's others)."""
    from snippets.lab import environment
    from snippets.lab.cache import Result

    return Result(value, experiment, {}, environment.fingerprint(), "2000-01-01T00:00:00+00:00", 0.0, timing, **extra)


def write_catalogue(path: Path, entries: dict[str, str], *, notes: dict[str, dict[str, str]] | None = None,
                    fuzzy: tuple[str, ...] = ()) -> None:
    """A gettext catalogue at ``path`` (``zh.po``) holding ``entries`` (English: translation), with ``notes``
    ({"reordered" or "unused": {entry: why}}) as translator comments and the ``fuzzy`` entries flagged so, written by
    Babel as the shipped ones are."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalog = Catalog(locale="zh_Hans_CN")
    for key, value in entries.items():
        comments = [f"{kind}: {why}" for kind, listed in (notes or {}).items() for entry, why in listed.items()
                    if entry == key]
        catalog.add(key, value, user_comments=comments, flags=["fuzzy"] if key in fuzzy else [])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        write_po(stream, catalog)


def build_site(dest: Path, *, env_extra: dict[str, str] | None = None, config: Path | None = None,
               cwd: Path = ROOT, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` (and ``flags``, such as ``-q``) into ``dest``; returns the finished process
    (check ``returncode``)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env_extra or {})}
    command = [*MKDOCS, "build", "--strict", *flags, "-d", str(dest)]
    if config is not None:
        command += ["-f", str(config)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def project_copy(dest: Path, *, caches: bool = False) -> Path:
    """A throwaway copy of what a build reads (docs, snippets, overrides, config, Makefile), with file times kept
    so make sees the setup as up to date; ``caches=True`` also copies ``.cache`` so that builds in the copy
    never write into the project's caches."""
    for name in ("docs", "snippets", "overrides", "results", ".ci"):  # .ci: the Makefile's font and browser checks
        if (ROOT / name).is_dir():  # results/: the recorded machines, when there are any
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, dest / name)
    if caches and (ROOT / ".cache").is_dir():
        shutil.copytree(ROOT / ".cache", dest / ".cache")
    return dest


def screenshots_folder() -> Path:
    """Where the browser tests save their screenshots."""
    return Path(os.environ.get("PITFALLS_ARTIFACTS") or ROOT / "test-artifacts").resolve() / "screenshots"


def pytest_sessionstart(session):
    session.config.pitfalls_started = time.time()


def pytest_terminal_summary(terminalreporter, config):
    """The screenshots the browser tests took in this run, named last (pytest-xdist's workers print nothing)."""
    folder = screenshots_folder()
    started = getattr(config, "pitfalls_started", None)
    if started and folder.is_dir() and any(shot.stat().st_mtime >= started for shot in folder.glob("*.png")):
        terminalreporter.write_line(f"browser screenshots (each page, light and dark, and on a phone): {folder}")


# The longest test files, longest first: under pytest-xdist (`make test`: a whole file per worker, handed out in
# collection order) they start at once on different workers, and the short files fill in around them.
LONGEST_FIRST = ("test_browser.py", "test_serve.py", "test_wording_edits.py", "test_build_failures.py",
                 "test_site_reader.py", "test_site.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # a stable sort: the rest keep their order


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The real site, built with ``--strict`` (results from the project cache): the build in ``PITFALLS_SITE_DIR``
    when set (``make test`` builds it first, alone, as the measurements need), else one built here, once per test
    run. Under pytest-xdist the workers share that one build: the first to need it builds it, the others wait."""
    override = os.environ.get("PITFALLS_SITE_DIR")
    if override:
        path = Path(override).resolve()
        assert (path / "index.html").is_file(), f"PITFALLS_SITE_DIR={override} holds no built site"
        return path
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _strict_build(tmp_path_factory.mktemp("site"))
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's own
    dest, done = shared / "site", shared / "site.built"
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _strict_build(dest)
            done.touch()
    return dest


def _strict_build(dest: Path) -> Path:
    process = build_site(dest)
    assert process.returncode == 0, f"strict build failed:\n{process.stdout[-4000:]}\n{process.stderr[-8000:]}"
    build_log(dest).write_text(process.stdout + process.stderr, encoding="utf-8")
    return dest


def build_log(site: Path) -> Path:
    """What the build of ``site`` printed, beside it (``make test`` writes it there too)."""
    return site.with_name(site.name + ".log")


@pytest.fixture(autouse=True)
def _never_the_project_cache(request, tmp_path_factory, monkeypatch):
    """Every test but the site and browser ones (which build the real site, as ``make build`` does) runs against
    a fresh, private result cache, so that no test writes results or figures into the project's ``.cache``."""
    if request.node.get_closest_marker("site") or request.node.get_closest_marker("browser"):
        return
    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path_factory.mktemp("private-cache") / "results"))
    monkeypatch.delenv("REFRESH", raising=False)
    # timing experiments run by a test are measured in the test's own process (where its monkeypatches apply), not
    # in the build's separate ones: tests/test_lab_replicas.py checks that protocol itself
    monkeypatch.setenv("PITFALLS_PROCESSES", "1")


@pytest.fixture(autouse=True)
def _nothing_remembered_from_earlier_tests(monkeypatch):
    """The lab keeps what it derives by content (the helpers a function calls, parsed stylesheets, bootstrap
    intervals), which is right within a build; a test computes its own, so that a wrong derivation cannot hide
    behind one an earlier test (or the process a mutation test forks from) already made."""
    from snippets.lab import code, mkdocs_hook, notebook_css, store, timing

    notebook_css._pruned.cache_clear()
    notebook_css._references.cache_clear()
    mkdocs_hook._top_level.cache_clear()
    monkeypatch.setattr(store, "_FOLDERS", {})
    monkeypatch.setattr(store, "_READ", {})
    monkeypatch.setattr(code, "_reached", {})
    monkeypatch.setattr(code, "_by_name", {})
    notebook_css._parse.cache_clear()
    monkeypatch.setattr(timing, "_RATIOS", {})


class HookUnderTest:
    """The site's MkDocs plugin as a new process has it (a fresh ``mkdocs_hook.Pitfalls()``), read as its module is:
    a name the plugin has (its events, what it keeps between builds) is the plugin's, any other the module's, and
    ``_session`` is the plugin itself. A name set (``monkeypatch.setattr``) is set where it is read."""

    def __init__(self, module) -> None:  # noqa: ANN001 - snippets.lab.mkdocs_hook
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_session", module.Pitfalls())
        object.__setattr__(self, "_replaced", {})  # the module's names set through here, as they were

    def _owner(self, name: str):  # noqa: ANN202
        plugin, module = object.__getattribute__(self, "_session"), object.__getattribute__(self, "_module")
        if hasattr(type(plugin), name) or name in vars(plugin):
            return plugin
        if hasattr(module, name) and name not in ("_session", "_module"):
            return module
        raise AttributeError(f"neither the plugin nor {module.__name__} has {name!r}")

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._owner(name), name)

    def __setattr__(self, name: str, value) -> None:  # noqa: ANN001
        owner = self._owner(name)
        # as it was: the module's or the plugin's own value, or the class's (a method) for the plugin to read again
        was = vars(owner).get(name, HookUnderTest) if owner is self._session else getattr(owner, name)
        self._replaced.setdefault(name, (owner, was))
        setattr(owner, name, value)

    def __delattr__(self, name: str) -> None:
        """What ``monkeypatch`` undoes a name with: the name as it was before it was first set here."""
        if name not in self._replaced:
            raise AttributeError(name)
        owner, was = self._replaced.pop(name)
        if was is HookUnderTest:
            delattr(owner, name)  # the class's method again
        else:
            setattr(owner, name, was)


@pytest.fixture()
def fresh_hook(monkeypatch):
    """The site's MkDocs plugin as in a new process: no build yet, nothing collected; the test's sys.modules (the recipes
    imported by their bare names dropped), import finders, log filter and notebook converter restored."""
    import logging

    from mkdocs_jupyter import plugin as jupyter_plugin

    from snippets.lab import mkdocs_hook as hook

    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "snippets"}
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # on_config adds the recipes' finder
    monkeypatch.setattr(jupyter_plugin.convert, "nb2html", jupyter_plugin.convert.nb2html)
    logger = logging.getLogger(hook._EXEC_LOGGER)
    monkeypatch.setattr(logger, "filters", [f for f in logger.filters if not isinstance(f, hook._NamePage)])
    yield HookUnderTest(hook)
    for name in [name for name, module in list(sys.modules.items())
                 if name.split(".")[0] == "snippets" or hook._is_recipe(module)]:
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.fixture(autouse=True)
def build():
    """Each test runs in a build context of its own (no page, English, claims raised rather than collected),
    and leaves the one before it as it was, whatever it built: ``build`` is that context."""
    from snippets.lab import context

    with context.using() as fresh:
        yield fresh
    for name in ("snippets.lab.context",):  # a hook test may have imported the lab afresh: that one too
        module = sys.modules.get(name)
        if module is not None and module is not context:
            module.begin()


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    """Point the lab at an empty cache (the test's build context has refreshed nothing yet)."""
    monkeypatch.setenv("PITFALLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("REFRESH", raising=False)
    return tmp_path / "cache"


@pytest.fixture()
def help_of(capsys):
    """``help_of(main)``: what a command-line ``main`` prints for ``--help`` (it must exit with 0), on one line."""
    def run(main) -> str:
        with pytest.raises(SystemExit) as raised:
            main(["--help"])
        assert raised.value.code == 0
        return " ".join(capsys.readouterr().out.split())
    return run
