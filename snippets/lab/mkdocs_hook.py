"""MkDocs hook: tells the lab which page is rendering, keys the notebook cache to this machine, and makes
``mkdocs serve`` rebuild with the code as it is now.

* Errors raised by ``run`` and ``claim``, and markdown-exec's "code block exited with errors" warnings,
  name the page being built.
* mkdocs-jupyter caches executed notebooks by their content only; here its cache folder also carries the
  environment fingerprint, so a notebook's printed losses are never another machine's. ``REFRESH=1``
  turns that cache off for the first build of the process (a later rebuild under ``mkdocs serve`` reuses
  what that build executed, as the result cache does).
* A page that runs an experiment without showing its code (``snippets.lab.present`` / ``code_panel``) is a
  warning, so the strict build fails.
* markdown-exec runs the pages' blocks in this process, where ``import snippets…`` is served from
  ``sys.modules``. Under ``mkdocs serve`` every rebuild after the first drops the ``snippets`` modules, so an
  edited experiment, renderer or recipe is imported afresh (the result cache then decides what re-runs).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import sys

_EXEC_LOGGER = "mkdocs.plugins.markdown_exec._internal.formatters.base"
# Hook state that must outlive the purge of the snippets modules.
_builds = 0


def _lab(name: str):
    """The lab module ``name`` as currently imported (it may have been purged since the last build)."""
    return importlib.import_module(f"snippets.lab.{name}")


class _NamePage(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        page = _lab("cache").current_page
        if page and record.levelno >= logging.WARNING:
            record.msg = f"[page docs/{page}] {record.msg}"
        return True


_filter = _NamePage()


def purge_snippets() -> list[str]:
    """Forget every imported ``snippets`` module, so the next import reads the files as they are now.

    The set of experiments already refreshed in this process (``REFRESH=1``) is carried over: a rebuild
    under ``mkdocs serve`` does not re-run them all again.
    """
    old_cache = sys.modules.get("snippets.lab.cache")
    refreshed = set(getattr(old_cache, "_refreshed", ()))
    names = [name for name in sys.modules if name == "snippets" or name.startswith("snippets.")]
    for name in names:
        del sys.modules[name]
    importlib.invalidate_caches()
    _lab("cache")._refreshed.update(refreshed)
    return names


def on_config(config):
    global _builds
    if _builds:
        purge_snippets()
    _builds += 1
    cache, environment = _lab("cache"), _lab("environment")
    logger = logging.getLogger(_EXEC_LOGGER)
    if _filter not in logger.filters:
        logger.addFilter(_filter)
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        digest = hashlib.sha256(json.dumps(environment.fingerprint(), sort_keys=True).encode()).hexdigest()
        results = cache.cache_dir()
        jupyter.config["cache_dir"] = str(results.parent / "notebooks" / digest[:16])
        if _builds == 1 and cache.refresh_mode() == "all":
            jupyter.config["cache"] = False
    return config


def on_page_markdown(markdown, page, **kwargs):
    _lab("cache").current_page = page.file.src_path
    return markdown


def on_page_content(html, page, **kwargs):
    cache = _lab("cache")
    cache.current_page = None
    # Every experiment a page runs has its code shown on that page (provenance.present / code_panel).
    ran = cache.ran_on_page.get(page.file.src_path, set())
    shown = _lab("provenance").shown_on_page.get(page.file.src_path, set())
    for name in sorted(ran - shown):
        logging.getLogger("mkdocs.plugins.pitfalls").warning(
            "[page docs/%s] runs experiment %s but never shows its code: print present(result, renderer) "
            "or code_panel(result) from snippets.lab beside what it produced", page.file.src_path, name)
    return html


def on_build_error(error, **kwargs):
    # An exception escaped a page's Markdown conversion (for example a missing --8<-- include):
    # say which page, so the traceback that follows has a name.
    page = _lab("cache").current_page
    if page:
        logging.getLogger("mkdocs.plugins.pitfalls").error(
            "Building page docs/%s failed: %s: %s", page, type(error).__name__, error)
