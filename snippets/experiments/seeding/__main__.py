"""Print the seeding page's main tables in the terminal (results come from, and go to, the result cache)."""

import logging

from snippets.lab import run

from . import figures, measure

logging.basicConfig(level=logging.INFO, format="%(message)s")
print(figures.creation_order(run(measure.creation_order)))
print(figures.rng_consumers(run(measure.rng_consumers)))
equivalence = run(measure.training_equivalence)
print(f"Epochs with different losses (equal starts): {equivalence['differing_epochs']} of {equivalence['epochs']}")
