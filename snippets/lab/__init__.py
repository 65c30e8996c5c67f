"""Build machinery: result cache, environment fingerprint, timing, rendering, claims.

Pages name what it offers in their sentences (``names: true``, rendered by the site's MkDocs plugin)::

    {% set result = run(measure.training_equivalence) %}
    {{ present(result, figures.loss_curves) }}
    {{ say(checks.equal_starts_identical(result), "From equal starts, no epoch's loss differs ({epochs:,} epochs).") }}

``measure``, ``figures`` and ``checks`` are those of the topic the page's front matter names
(``snippets/experiments/seeding/``); a script or a test imports ``run``, ``say`` and the rest from here and a topic's
modules from its package.
"""

import logging as _logging
import os as _os
import warnings as _warnings

# Before anything imports torch (the lab's modules do, and the site's plugin imports this package first):
# torch's profiler (Kineto) prints a "USDT: … profiler_start" line at every profile, in this process and in the timing
# workers it starts: level 6 is above every level it prints (a profiler that fails still raises in Python)
_os.environ.setdefault("KINETO_LOG_LEVEL", "6")
# torch.compile imports torch.utils.mkldnn, whose module body still decorates with torch.jit.script_method: torch's
# own deprecation, printed with its stack in the middle of a build, says nothing about this site's code
_warnings.filterwarnings("ignore", message=r"`torch\.jit\.script_method` is deprecated", category=DeprecationWarning)


def _not_a_missing_cuda_runtime(record: _logging.LogRecord) -> bool:
    """torch's CUDA build on a machine without a GPU (PyPI's Linux build, where PyTorch's CPU index cannot be
    reached) logs "No CUDA runtime is found, using CUDA_HOME=…" as a warning as ``torch.utils.cpp_extension`` is
    imported: nothing is wrong, the site measures the CPU. The logger's other warnings still show."""
    return "No CUDA runtime is found" not in record.getMessage()


_logging.getLogger("torch.utils.cpp_extension").addFilter(_not_a_missing_cuda_runtime)

from .cache import Experiment, ExperimentError, Result, experiment, run  # noqa: E402 - after the settings above
from .claims import Check, ClaimError, check, say  # noqa: E402
from .environment import fingerprint, pick_device  # noqa: E402
from .progress import progress  # noqa: E402
from .provenance import code_panel, present  # noqa: E402
from .timing import measure  # noqa: E402

__all__ = ["Experiment", "ExperimentError", "Result", "experiment", "run", "Check", "ClaimError", "check",
           "say", "fingerprint", "pick_device", "progress", "measure", "code_panel", "present"]
