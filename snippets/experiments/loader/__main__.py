"""Print the loader page's main tables in the terminal (results come from, and go to, the result cache)."""

import logging

from snippets.lab import run

from . import figures, measure

logging.basicConfig(level=logging.INFO, format="%(message)s")
print(figures.question_timing(run(measure.question_timing)))
print(figures.breakdown(run(measure.breakdown)))
print(figures.step_share(run(measure.step_share)))
print(figures.workers(run(measure.workers)))
