"""The mutation benchmark's list of excused survivors names only mutants that can still exist: a function the code
still has, holding the line the mutation changes (checked without running mutmut)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mutation  # noqa: E402


def test_every_excused_survivor_names_a_function_and_line_the_code_still_has():
    stale = mutation.stale_excuses(mutation.load_excuses())
    assert not stale, f"{mutation.SURVIVORS.name} excuses mutants that cannot exist:\n" + "\n".join(stale)


def test_an_excuse_for_a_moved_function_or_a_changed_line_is_stale():
    line = 'with os.fdopen(fd, "w", encoding="utf-8") as handle:'
    mutated = f'{line} -> {line.replace("utf-8", "UTF-8")}'
    assert mutation.stale_excuses({("snippets.lab.store.x_store_text", mutated): "equivalent"}) == []
    assert mutation.stale_excuses({("snippets.lab.cache.x_store_text", mutated): "equivalent"}) == [
        "snippets.lab.cache.x_store_text: no such function in the code"]
    changed = mutation.stale_excuses({("snippets.lab.store.x_store_text", "x = 1 -> x = 2"): "equivalent"})
    assert changed == ["snippets.lab.store.x_store_text: no longer holds 'x = 1'"]
    # a line that itself holds " / " (mutmut's diff joins several lines so) is one line of the code
    slash = 'return cache_dir().parent / "pending.json"'
    assert mutation.stale_excuses({("snippets.lab.store.x_pending_path", f"{slash} -> {slash.upper()}"): "x"}) == []
    assert mutation.stale_excuses({("snippets.lab.store.x_pending_path", "a / b -> c"): "x"}) == [
        "snippets.lab.store.x_pending_path: no longer holds 'a'"]
    # methods are named class ǁ method, as mutmut names them
    assert mutation.stale_excuses({("snippets.tensor_loader.xǁTensorLoaderǁnot_a_method", mutated): "x"}) == [
        "snippets.tensor_loader.xǁTensorLoaderǁnot_a_method: no such function in the code"]
