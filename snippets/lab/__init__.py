"""Build machinery: result cache, environment fingerprint, timing, rendering, claims.

Pages use it in exec blocks::

    from snippets.lab import run, render
    from snippets.experiments import seeding
    result = run(seeding.creation_order)
    print(seeding.render_creation_order(result))
"""

from .cache import Experiment, ExperimentError, Result, experiment, run
from .claims import ClaimError, claim
from .environment import fingerprint, pick_device
from .progress import progress
from .timing import measure

__all__ = ["Experiment", "ExperimentError", "Result", "experiment", "run", "ClaimError", "claim",
           "fingerprint", "pick_device", "progress", "measure"]
