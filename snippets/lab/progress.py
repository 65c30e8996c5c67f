"""Progress lines in the build log for loops that take more than a few seconds."""

from __future__ import annotations

import logging
import time
from typing import Iterable, Iterator, TypeVar

log = logging.getLogger("mkdocs.plugins.pitfalls")
T = TypeVar("T")


def progress(items: Iterable[T], label: str, *, total: int | None = None, every_s: float = 5.0) -> Iterator[T]:
    """Yield ``items``, logging ``label: i/total (pct) elapsed`` at most every ``every_s`` seconds."""
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    start = last = time.perf_counter()
    done = 0
    for done, item in enumerate(items, start=1):
        yield item
        now = time.perf_counter()
        if now - last >= every_s:
            last = now
            share = f" ({100 * done / total:.0f}%)" if total else ""
            log.info("pitfalls: %s: %d/%s%s, %.0f s elapsed", label, done, total or "?", share, now - start)
    elapsed = time.perf_counter() - start
    if elapsed >= every_s:
        log.info("pitfalls: %s: finished %d in %.0f s", label, done, elapsed)
