// What Material's pages lack for screen readers and keyboards, added as Material builds each page (on load and
// after every instant navigation). axe-core checks all of it in the browser tests (tests/test_browser.py).
(() => {
  const chinese = document.documentElement.lang.startsWith("zh");
  const ANNOTATION = chinese ? "注释" : "Annotation";
  // What scrolls sideways when it does not fit: Material's tables and code blocks (Material makes a code block
  // focusable itself, but only once it equips the block, as it comes into view), mkdocs-jupyter's code cells.
  const SCROLLERS = [".md-typeset table:not([class])", ".md-typeset__scrollwrap", ".md-typeset pre > code",
                     ".jupyter-wrapper .highlight-ipynb"].join(", ");

  const fix = () => {
    // A code annotation's link shows its number through CSS only (content: attr(data-md-annotation-id)),
    // which leaves the link without a name.
    for (const link of document.querySelectorAll("a.md-annotation__index:not([aria-label])")) {
      const number = link.querySelector("[data-md-annotation-id]")?.dataset.mdAnnotationId;
      link.setAttribute("aria-label", number ? `${ANNOTATION} ${number}` : ANNOTATION);
    }
    // Each code block's copy and select buttons sit in a <nav>: dozens of unnamed navigation landmarks
    // that navigate nowhere. They are a group of buttons.
    for (const nav of document.querySelectorAll("nav.md-code__nav:not([role])")) {
      nav.setAttribute("role", "none");
    }
    // Material's toast ("Copied to clipboard") is a status message: screen readers announce it.
    for (const toast of document.querySelectorAll(".md-dialog:not([role])")) {
      toast.setAttribute("role", "status");
    }
    // A region that scrolls must be reachable by keyboard to be scrolled by keyboard. (All reads, then all
    // writes: one layout, however many boxes.)
    const scrolling = [...document.querySelectorAll(SCROLLERS)].filter((box) => {
      if (box.hasAttribute("tabindex") || box.clientWidth === 0) return false;
      const style = getComputedStyle(box);
      return (box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(style.overflowX))
        || (box.scrollHeight > box.clientHeight + 1 && /auto|scroll/.test(style.overflowY));
    });
    for (const box of scrolling) box.setAttribute("tabindex", "0");
  };

  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fix();
    });
  };
  new MutationObserver((records) => {
    if (records.some((record) => record.addedNodes.length > 0)) schedule();
  }).observe(document.body, { childList: true, subtree: true });
  // Opening a collapsed box, picking a tab or turning the phone can make a table overflow.
  document.addEventListener("toggle", schedule, true);
  document.addEventListener("change", schedule, true);
  addEventListener("resize", schedule);
  schedule();
})();
