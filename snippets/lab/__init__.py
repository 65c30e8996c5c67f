"""Build machinery: result cache, environment fingerprint, timing, rendering, claims.

Pages use it in exec blocks::

    from snippets.lab import run, present, say
    from snippets.experiments.seeding import measure, figures, checks
    result = run(measure.creation_order)
    print(present(result, figures.creation_order))
    print(say(checks.one_seed_differs(result), "After one seed, {differ} of {total} tensors differ."))
"""

from .cache import Experiment, ExperimentError, Result, experiment, run
from .claims import Check, ClaimError, check, say
from .environment import fingerprint, pick_device
from .progress import progress
from .provenance import code_panel, present
from .timing import measure

__all__ = ["Experiment", "ExperimentError", "Result", "experiment", "run", "Check", "ClaimError", "check",
           "say", "fingerprint", "pick_device", "progress", "measure", "code_panel", "present"]
