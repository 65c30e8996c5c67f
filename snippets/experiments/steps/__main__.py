"""Print the update-steps page's main tables in the terminal (results come from, and go to, the result cache)."""

import logging

from snippets.lab import run

from . import figures, measure

logging.basicConfig(level=logging.INFO, format="%(message)s")
noise = run(measure.gradient_noise)
for title, table in [("Step arithmetic", figures.arithmetic(run(measure.step_arithmetic))),
                     ("Equal steps", figures.equal_steps(run(measure.curves))),
                     ("Starting weights", figures.init(run(measure.init_effect))),
                     ("Gradient noise", figures.noise_table(noise) + "\n" + figures.noise_scale(noise)),
                     ("Learning-rate sweep", figures.lr_sweep_table(run(measure.lr_sweep))),
                     ("Gradient accumulation", figures.accumulation(run(measure.accumulation))),
                     ("DistributedSampler", figures.distributed(run(measure.distributed_sampler)))]:
    print(f"\n## {title}\n\n{table}")
