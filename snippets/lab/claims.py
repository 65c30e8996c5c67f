"""Claims as code: a sentence on a page that states a measured fact, checked when the page is built."""

from __future__ import annotations

import html
from typing import Any

from . import cache


class ClaimError(AssertionError):
    """A page states something the measurement contradicts."""


def claim(text: str, holds: bool, *, measured: Any) -> str:
    """Return ``text`` marked as a checked claim, or fail the build if ``holds`` is false.

    ``measured`` is the value the claim rests on; it is shown in the failure and on hover.
    """
    if not isinstance(holds, bool):
        raise TypeError(f"claim {text!r}: holds must be a bool, got {type(holds).__name__}")
    if not holds:
        where = f" on page {cache.current_page}" if cache.current_page else ""
        raise ClaimError(f"Claim contradicted{where}: {text!r} — measured: {measured!r}")
    title = html.escape(f"Checked when this page was built. Measured: {measured}", quote=True)
    return f'<span class="pitfalls-claim" title="{title}">{text}</span>'
