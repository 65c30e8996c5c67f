"""The loader page's experiments at small size: they run, their renderers work, and the page's claims hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from snippets.experiments import loader
from snippets.lab import run

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "loader-overhead.md"

SMALL = {
    "question_timing": dict(compared_epochs=10, min_run_time=0.02),
    "breakdown": dict(rounds=2, min_run_time=0.02),
    "batch_size_scaling": dict(n=1000, batch_sizes=(1, 100, 1000), repeats=1, min_run_time=0.0),
    "size_scaling": dict(sizes=(100, 1000, 10_000), per_sample_limit=10_000, repeats=1, min_run_time=0.0),
    "step_share": dict(batches=4, min_run_time=0.02),
    "workers": dict(settings=((500, 500), (1000, 250)), repeats=1, min_run_time=0.0),
    "pin_memory": dict(n=100, batch_size=10, min_run_time=0.01),
    "bandwidth": dict(megabytes=16, per_sample_limit=16_384, batch_sampler_limit=65_536, repeats=2,
                      min_run_time=0.02),
    "contract": dict(sizes=(1, 7, 30), batch_sizes=(1, 4, 40), epochs=2),
}
CHECKS = {
    "question_timing": loader.checks_question_timing,
    "breakdown": loader.checks_breakdown,
    "batch_size_scaling": loader.checks_batch_size_scaling,
    "size_scaling": loader.checks_size_scaling,
    "step_share": loader.checks_step_share,
    "workers": loader.checks_workers,
    "bandwidth": loader.checks_bandwidth,
    "contract": loader.checks_contract,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every experiment once, small, through ``run`` with a private cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PITFALLS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        patch.delenv("REFRESH", raising=False)
        yield {name: run(getattr(loader, name), **params) for name, params in SMALL.items()}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_page_claims_hold_at_small_size(results, name):
    failed = [(c.text, c.measured) for c in CHECKS[name](results[name].value) if not c.holds]
    assert not failed


def test_renderers_produce_tables_and_figures(results):
    r = results
    assert "| direct |" in loader.render_question_timing(r["question_timing"])
    for render in (loader.render_breakdown, loader.render_verdicts, loader.render_profile):
        assert "pitfalls-stamp" in render(r["breakdown"])
    assert loader.render_breakdown_calls(r["breakdown"]).count("pitfalls-claim") == 3
    figure = loader.render_batch_size_scaling(r["batch_size_scaling"])
    assert figure.startswith("<figure") and "<svg" in figure and 'aria-label="' in figure
    assert "<svg" in loader.render_size_scaling(r["size_scaling"])
    targets = loader.render_speed_targets(r["batch_size_scaling"], r["question_timing"])
    assert "TensorLoader" in targets and "target ≤ 1.1×" in targets and "fastest" in targets
    assert "pitfalls-claim" in loader.render_batch_size_claims(r["batch_size_scaling"])
    assert "| Model |" in loader.render_step_share(r["step_share"])
    assert "num_workers=2" in loader.render_workers(r["workers"])
    takeaways = loader.render_takeaways(r["question_timing"], r["breakdown"], r["step_share"], r["size_scaling"],
                                        r["workers"])
    assert takeaways.startswith('!!! success "Takeaways"') and "pitfalls" not in takeaways
    assert "pitfalls-claim" in loader.render_contract(r["contract"])
    assert "pitfalls-claim" in loader.render_size_costs(r["size_scaling"])
    assert "def fetch" in loader.render_fetcher_source()
    assert "GB/s" in loader.render_bandwidth(r["bandwidth"])


def test_figures_are_byte_identical_on_rerender(results):
    first = loader.render_batch_size_scaling(results["batch_size_scaling"])
    assert loader.render_batch_size_scaling(results["batch_size_scaling"]) == first


def test_question_runs_are_bitwise_identical(results):
    same = results["question_timing"].value["same"]
    assert set(same) == {"direct", "DataLoader", "DataLoader + BatchSampler", "TensorLoader"}
    assert all(v["losses_identical"] and v["weights_identical"] for v in same.values())


def test_breakdown_counts_calls_live(results):
    calls = results["breakdown"].value["calls"]
    assert calls["getitem_per_epoch"] == 1000 and calls["batch_sampler_getitem_per_epoch"] == 1


def test_pin_memory_says_why_when_there_is_no_accelerator(results):
    value = results["pin_memory"].value
    text = loader.render_pin_memory(results["pin_memory"])
    if value["device"] != "cpu":
        assert len(value["rows"]) == 4 and "pin_memory=True" in text
    elif value["accelerator"] is None:
        assert value["rows"] == [] and "found no accelerator" in text and value["batch_is_pinned"] is False
        assert value["warnings"] and "accelerator" in value["warnings"][0]
    else:
        assert value["rows"] == [] and "not timed" in text


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
def test_hand_written_baselines_yield_dataloaders_batches(shuffle, batch_size):
    x, y = loader.question_data(10)
    ours = list(loader.HandWritten(x, y, batch_size, shuffle, torch.Generator().manual_seed(0)))
    reference = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle,
                           generator=torch.Generator().manual_seed(0))
    expected = list(reference)
    assert len(ours) == len(expected)
    for (xa, ya), (xb, yb) in zip(ours, expected):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


@pytest.mark.parametrize("name", loader.LOADER_NAMES)
def test_every_loader_variant_yields_the_same_batches(name):
    x, y = loader.question_data(12)
    for shuffle in (False, True):
        got = [tuple(b) for b in loader.make_loader(name, x, y, 5, shuffle, seed=3)]
        want = [tuple(b) for b in loader.make_loader("DataLoader", x, y, 5, shuffle, seed=3)]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert all(torch.equal(p, q) for p, q in zip(a, b))


def test_unknown_loader_name_is_refused():
    x, y = loader.question_data(4)
    with pytest.raises(ValueError, match="unknown loader"):
        loader.make_loader("Dataloader", x, y, 2, False)


def test_module_holds_no_state_made_at_import():
    made = [name for name, value in vars(loader).items()
            if isinstance(value, (torch.Tensor, torch.nn.Module, torch.utils.data.DataLoader))]
    assert made == []


def test_page_blocks_are_named_and_includes_exist():
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python exec=\"1\"([^\n]*)", text)
    assert blocks, "the page runs no experiments"
    ids = [re.search(r'id="([^"]+)"', b).group(1) for b in blocks]
    assert all(i.startswith("loader-") for i in ids) and len(set(ids)) == len(ids)
    for target in re.findall(r'--8<-- "([^"]+)"', text):
        path, _, section = target.partition(":")
        source = (ROOT / path).read_text(encoding="utf-8")
        if section:
            assert f"[start:{section}]" in source and f"[end:{section}]" in source
    assert '--8<-- "snippets/tensor_loader.py"' in text
