"""A non-timing experiment run again gives the same result, and each figure drawn from it the same SVG bytes.

A rebuild that recomputes a non-timing result must not move a figure: the site's figures of such results are
keyed by their values and shown without a "measured while busy" mark, and a frozen build redraws them from the
recording. Each experiment a figure of the site draws runs twice here, at small sizes (the code paths the build
runs at full size), and each figure is drawn afresh from each run, in both languages.
"""

from __future__ import annotations

import json

import pytest
import torch

from snippets.experiments.seeding import figures as seeding_figures
from snippets.experiments.seeding import measure as seeding
from snippets.experiments.steps import figures as steps_figures
from snippets.experiments.steps import measure as steps
from conftest import made_result
from snippets.lab import context

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)

CASES = {
    "seeding.training_equivalence": (lambda: seeding.training_equivalence(epochs=5),
                                     (seeding_figures.loss_curves, seeding_figures.fits)),
    "steps.logged_vs_true": (lambda: steps.logged_vs_true(n_samples=300, batch_size=64, epochs=2),
                             (steps_figures.logged,)),
    "steps.gradient_noise": (lambda: steps.gradient_noise(n_samples=800, batch_sizes=(8, 700), draws=4,
                                                          train_batch=50, checkpoints=(0, 7, 40), variance_at=16),
                             (steps_figures.noise,)),
    "steps.lr_sweep": (lambda: steps.lr_sweep(n_samples=600, base_batch=20, multiples=(1, 3),
                                              lrs=(1e-3, 4e-3, 1.6e-2), epochs=2, seeds=(0, 1), tail_points=3,
                                              threads=1),
                       (steps_figures.lr_sweep,)),
    "steps.scheduler_sizing": (lambda: steps.scheduler_sizing(n_samples=1000, epochs=4, planned_batch=100,
                                                              smaller_batch=30, larger_batch=400),
                               (steps_figures.scheduler,)),
}


def _drawn(value: dict, name: str, draw) -> dict[str, str]:  # noqa: ANN001
    result = made_result(value, name)
    drawn = {}
    for language in ("en", "zh"):
        with context.using(context.Build(language=language)):
            drawn[language] = draw(result)
    return drawn


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_non_timing_figure_is_the_same_bytes_when_its_experiment_runs_again(name, private_cache):
    compute, draws = CASES[name]
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first, second = compute(), compute()
    finally:
        torch.set_num_threads(before)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True), f"{name} differs when run again"
    for draw in draws:
        one, other = _drawn(first, name, draw), _drawn(second, name, draw)
        assert one["en"].count("<svg") == 1 and one["en"] != one["zh"]
        assert one == other, f"{name}: {draw.__name__} drew other bytes from a second run"
