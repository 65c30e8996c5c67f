// What Material's pages lack for screen readers and keyboards, added as Material builds each page (on load, as
// it equips code blocks coming into view, and after every instant navigation). axe-core checks all of it in the
// browser tests (tests/test_browser.py), on every page in both palettes and on a phone.
(() => {
  const chinese = document.documentElement.lang.startsWith("zh");
  const ANNOTATION = chinese ? "注释" : "Annotation";
  // What scrolls sideways when it does not fit: Material's tables, code blocks (Material makes a code block
  // focusable itself, but only once it equips the block, as it comes into view) and rows of tab labels on a
  // phone, mkdocs-jupyter's code cells.
  const SCROLLERS = [".md-typeset table:not([class])", ".md-typeset__scrollwrap", ".md-typeset pre > code",
                     ".md-typeset .tabbed-labels", ".jupyter-wrapper .highlight-ipynb"].join(", ");

  // Names and roles: no layout needed, so done as soon as Material adds the elements.
  const name = () => {
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
  };

  // A region that scrolls must be reachable by keyboard to be scrolled by keyboard. Whether a box overflows is
  // a question for the layout, so it is asked when the browser is idle, with the layout already done, and only
  // of boxes on show: measuring one inside a closed box or an unrendered figure would make the browser lay it
  // out (a long pause on a phone); opening the box or scrolling to it asks again.
  const markScrollers = () => {
    const shown = (box) => box.checkVisibility?.({ contentVisibilityAuto: true }) ?? true;
    const scrolling = [...document.querySelectorAll(SCROLLERS)].filter((box) => {
      if (box.hasAttribute("tabindex") || !shown(box)) return false;
      const style = getComputedStyle(box);
      return (box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(style.overflowX))
        || (box.scrollHeight > box.clientHeight + 1 && /auto|scroll/.test(style.overflowY));
    });
    for (const box of scrolling) box.setAttribute("tabindex", "0");  // all reads, then all writes
  };
  const whenIdle = window.requestIdleCallback
    ? (task) => requestIdleCallback(task, { timeout: 2000 })
    : (task) => setTimeout(task, 200);
  let pending = false;
  // Whether every box shown so far has been asked (the browser tests wait for it before they run axe-core,
  // as a reader's keyboard would reach the page only after its scripts have run).
  window.pitfallsA11y = { settled: () => !pending };
  const measureSoon = () => {
    if (pending) return;
    pending = true;
    whenIdle(() => {
      pending = false;
      markScrollers();
    });
  };

  new MutationObserver((records) => {
    if (records.some((record) => record.addedNodes.length > 0)) {
      name();
      measureSoon();
    }
  }).observe(document.body, { childList: true, subtree: true });
  // Opening a collapsed box, picking a tab, scrolling a figure into view, a part of the page drawn after load
  // (assets/parts.js) or turning the phone can show a box that overflows.
  for (const event of ["toggle", "change", "contentvisibilityautostatechange", "pitfalls:drawn"]) {
    document.addEventListener(event, measureSoon, true);
  }
  addEventListener("resize", measureSoon);
  name();
  measureSoon();
})();
