"""Build machinery: result cache, environment fingerprint, timing, rendering, claims.

Pages use it in exec blocks::

    from snippets.lab import run, present, say
    from snippets.experiments.seeding import measure, figures, checks
    result = run(measure.training_equivalence)
    print(present(result, figures.loss_curves))
    print(say(checks.equal_starts_identical(result), "From equal starts, no epoch's loss differs ({epochs:,} epochs)."))
"""

from .cache import Experiment, ExperimentError, Result, experiment, run
from .claims import Check, ClaimError, check, say
from .environment import fingerprint, pick_device
from .progress import progress
from .provenance import code_panel, present
from .timing import measure

__all__ = ["Experiment", "ExperimentError", "Result", "experiment", "run", "Check", "ClaimError", "check",
           "say", "fingerprint", "pick_device", "progress", "measure", "code_panel", "present"]
