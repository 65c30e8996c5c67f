"""``python -m snippets.experiments.<page>`` prints the page's main tables (README, "Other things you can do").

Each page package's ``__main__`` is run as a script would run it (``runpy``, as ``python -m`` does), with every
experiment at a small size: ``snippets.lab.run`` is wrapped so that it passes the small sizes below, and results
go to the test's private cache.
"""

from __future__ import annotations

import runpy

import pytest

import snippets.lab
from snippets.lab import cache

SMALL = {
    "seeding.training_equivalence": dict(epochs=5),
    "loader.question_timing": dict(compared_epochs=4, min_run_time=0.01, rounds=1),
    "loader.breakdown": dict(n=200, rounds=1, min_run_time=0.01),
    "loader.step_share": dict(batches=2, rounds=1, min_run_time=0.01),
    "loader.workers": dict(settings=((200, 200), (400, 100)), rounds=3, min_run_time=0.0),
    "steps.curves": dict(n_samples=600, batch_sizes=(16, 120, 600), epochs=2, min_steps=12, equal_steps=(3, 6, 12),
                         fit_points=21, other_starts=((0, 1),)),
    "steps.step_cost": dict(n_samples=600, batch_sizes=(16, 600), rounds=3, min_run_time=0.01),
    "steps.init_effect": dict(n_samples=600, batch_size=96, epochs=2, full_epochs=12, seeds=(42, 1), long_seeds=(42,)),
    "steps.gradient_noise": dict(n_samples=2000, batch_sizes=(8, 64, 512, 1800), draws=8, checkpoints=(0, 30),
                                 variance_at=30),
    "steps.lr_sweep": dict(n_samples=800, base_batch=16, multiples=(1, 4), lrs=(1e-3, 4e-3, 1.6e-2), epochs=2,
                           seeds=(0,), tail_points=3),
    "steps.accumulation": dict(n_samples=1000, batch_size=96, accumulation_steps=(1, 3, 4), epochs=2),
    "steps.distributed_sampler": dict(world_size=2, n_values=(100, 101), batch_size=16, timeout_s=120),
}


@pytest.mark.parametrize("page, headings", [
    ("seeding", ["| `fc1.weight` |", "Epochs with different losses (equal starts): 0 of 5"]),
    ("loader", ["| direct |", "| DataLoader |"]),
    ("steps", ["## Step arithmetic", "## Equal steps", "## DistributedSampler", "| 512 |"]),
])
def test_the_page_package_runs_as_a_script(page, headings, private_cache, monkeypatch, capsys):
    ran = []

    def small_run(exp, /, **params):
        ran.append(exp.name)
        return cache.run(exp, **{**SMALL.get(exp.name, {}), **params})

    monkeypatch.setattr(snippets.lab, "run", small_run)
    runpy.run_module(f"snippets.experiments.{page}", run_name="__main__", alter_sys=False)
    out = capsys.readouterr().out
    assert ran and all(name.startswith(f"{page}.") for name in ran)
    for heading in headings:
        assert heading in out, f"{heading!r} missing from the script's output:\n{out[:3000]}"
