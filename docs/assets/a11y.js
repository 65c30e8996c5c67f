// What Material's pages lack for screen readers and keyboards, added as Material builds each page (on load and
// after every instant navigation). axe-core checks all of it in the browser tests (tests/test_browser.py).
(() => {
  const chinese = document.documentElement.lang.startsWith("zh");
  const ANNOTATION = chinese ? "注释" : "Annotation";
  // Content that Material (tables) or mkdocs-jupyter (code cells) lets scroll sideways on a narrow screen.
  const SCROLLERS = ".md-typeset table:not([class]), .md-typeset__scrollwrap, .jupyter-wrapper .highlight-ipynb";

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
    // A region that scrolls must be reachable by keyboard to be scrolled by keyboard.
    for (const box of document.querySelectorAll(SCROLLERS)) {
      if (box.hasAttribute("tabindex")) continue;
      const style = getComputedStyle(box);
      const scrolls = (box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(style.overflowX))
        || (box.scrollHeight > box.clientHeight + 1 && /auto|scroll/.test(style.overflowY));
      if (scrolls) box.setAttribute("tabindex", "0");
    }
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
