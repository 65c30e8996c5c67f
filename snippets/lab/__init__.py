"""Build machinery: result cache, environment fingerprint, timing, rendering, claims.

Pages name what it offers in their sentences (``names: true``, rendered by the site's MkDocs plugin)::

    {% set result = run(measure.training_equivalence) %}
    {{ present(result, figures.loss_curves) }}
    {{ say(checks.equal_starts_identical(result), "From equal starts, no epoch's loss differs ({epochs:,} epochs).") }}

``measure``, ``figures`` and ``checks`` are those of the topic the page's front matter names
(``snippets/experiments/seeding/``); a script or a test imports ``run``, ``say`` and the rest from here and a topic's
modules from its package.
"""

from .cache import Experiment, ExperimentError, Result, experiment, run
from .claims import Check, ClaimError, check, say
from .environment import fingerprint, pick_device
from .progress import progress
from .provenance import code_panel, present
from .timing import measure

__all__ = ["Experiment", "ExperimentError", "Result", "experiment", "run", "Check", "ClaimError", "check",
           "say", "fingerprint", "pick_device", "progress", "measure", "code_panel", "present"]
