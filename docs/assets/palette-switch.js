// Transitions stay off while a reader switches the palette, as Material has them: the palette stylesheet's rule
// that turns them off is keyed here to data-pitfalls-switching (snippets/lab/mkdocs_hook.py says why), set as the
// toggle changes, before Material applies the new colours, and removed two frames later, once they are drawn.
(() => {
  document.addEventListener("change", (event) => {
    if (!event.target.matches?.("[data-md-component=palette] input")) return;
    document.body.setAttribute("data-pitfalls-switching", "");
    requestAnimationFrame(() => requestAnimationFrame(() => document.body.removeAttribute("data-pitfalls-switching")));
  }, true);
})();
