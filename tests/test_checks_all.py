"""No claim may be unable to fail: every check of every page has a contradicting case in its page's tests."""

from __future__ import annotations

import importlib

import pytest

from conftest import topic_pages
from snippets.lab.claims import topic_checks

CHECKS = topic_checks()  # every topic's checks, by name

PAGES = sorted(set(topic_pages().values()))  # the topics: snippets/experiments/<topic>/checks.py


def test_every_check_has_a_contradicting_case():
    listed: set[str] = set()
    for page in PAGES:
        try:
            importlib.import_module(f"snippets.experiments.{page}.checks")
        except ModuleNotFoundError:
            pytest.fail(f"snippets/experiments/{page}/checks.py is missing")
        tests = importlib.import_module(f"test_checks_{page}")
        # CONTRADICTING: checks of one result; WITH_CURVES (steps): checks that compare two results
        listed |= set(tests.CONTRADICTING) | set(getattr(tests, "WITH_CURVES", {}))
    pages = {name for name in CHECKS if name.split(".")[0] in PAGES}  # not the checks tests define for themselves
    missing = sorted(pages - listed)
    assert not missing, f"checks without a contradicting test: {missing}"
    unknown = sorted(listed - pages)
    assert not unknown, f"contradicting cases for checks that do not exist: {unknown}"
