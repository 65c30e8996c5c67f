"""Shared by the per-page check tests: every check holds on a measurement and fails on a contradiction.

A page's test module lists, for each check, where a supporting value comes from — the real experiment at a
small size (``Measured``), or a synthetic value for timing checks, whose outcome a test must never depend on
(``Synthetic``) — and a function that edits a copy of it so that the check must fail.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from snippets.lab import ClaimError, say
from snippets.lab.claims import topic_checks

CHECKS = topic_checks()  # every topic's checks, by name


@dataclass(frozen=True)
class Measured:
    experiment: Any
    params: tuple = ()

    def value(self) -> dict:
        return _measure(self.experiment, self.params)


@dataclass(frozen=True)
class Synthetic:
    make: Callable[[], dict]

    def value(self) -> dict:
        return self.make()


@dataclass(frozen=True)
class Contradiction:
    source: Measured | Synthetic
    contradict: Callable[[dict], Any]
    extra: tuple = field(default=())  # further positional arguments of the check


@functools.cache
def _measure(experiment, params: tuple) -> dict:
    # Round-trip through JSON, as the cache does: checks see what a page sees.
    return json.loads(json.dumps(experiment.func(**dict(params))))


def assert_check_can_fail(name: str, case: Contradiction) -> None:
    assert name in CHECKS, f"no check named {name}"
    run = CHECKS[name]
    value = case.source.value()
    supported = run(copy.deepcopy(value), *case.extra)
    assert supported.holds, f"{name} does not hold on its supporting value: {supported.measured()}"
    assert say(supported, "sentence").startswith('<span class="pitfalls-claim"')
    bad = copy.deepcopy(value)
    case.contradict(bad)
    outcome = run(bad, *case.extra)
    assert not outcome.holds, f"{name} still holds on a contradicting result: {outcome.measured()}"
    with pytest.raises(ClaimError, match=name.replace(".", r"\.")):
        say(outcome, "sentence")
