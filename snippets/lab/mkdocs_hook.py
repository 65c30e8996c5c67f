"""MkDocs hook: tells the lab which page is rendering, and keys the notebook cache to this machine.

* Errors raised by ``run`` and ``claim``, and markdown-exec's "code block exited with errors" warnings,
  name the page being built.
* mkdocs-jupyter caches executed notebooks by their content only; here its cache folder also carries the
  environment fingerprint, so a notebook's printed losses are never another machine's. ``REFRESH=1``
  turns that cache off for the build.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os

from snippets.lab import cache, environment

_EXEC_LOGGER = "mkdocs.plugins.markdown_exec._internal.formatters.base"


class _NamePage(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if cache.current_page and record.levelno >= logging.WARNING:
            record.msg = f"[page docs/{cache.current_page}] {record.msg}"
        return True


_filter = _NamePage()


def on_config(config):
    logger = logging.getLogger(_EXEC_LOGGER)
    if _filter not in logger.filters:
        logger.addFilter(_filter)
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:
        digest = hashlib.sha256(json.dumps(environment.fingerprint(), sort_keys=True).encode()).hexdigest()
        results = cache.cache_dir()
        jupyter.config["cache_dir"] = str(results.parent / "notebooks" / digest[:16])
        if os.environ.get("REFRESH", "").strip().lower() in ("1", "all", "true", "yes"):
            jupyter.config["cache"] = False
    return config


def on_page_markdown(markdown, page, **kwargs):
    cache.current_page = page.file.src_path
    return markdown


def on_page_content(html, page, **kwargs):
    cache.current_page = None
    return html


def on_build_error(error, **kwargs):
    # An exception escaped a page's Markdown conversion (for example a missing --8<-- include):
    # say which page, so the traceback that follows has a name.
    if cache.current_page:
        logging.getLogger("mkdocs.plugins.pitfalls").error(
            "Building page docs/%s failed: %s: %s", cache.current_page, type(error).__name__, error)
