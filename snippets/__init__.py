"""PyTorch pitfalls, measured.

``snippets.seeding``, ``snippets.tensor_loader`` and ``snippets.step_budget`` are copyable recipes that
import only torch and the standard library. ``snippets.experiments`` holds what the pages run and
``snippets.lab`` the build machinery (result cache, environment fingerprint, timing, rendering, claims).
"""
