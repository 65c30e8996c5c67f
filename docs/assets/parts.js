// A topic page's parts (the blocks between one heading and the next: snippets/lab/mkdocs_hook.py, in_parts) are
// skipped as the page loads (content-visibility in extra.css): Material's start-up then lays out the first screen,
// not the whole page, several times. Once the page has loaded, the rest is drawn while the browser is idle, a part
// or a few at a time, top to bottom: each is a task of a few milliseconds on a phone (a whole page at once would block it
// for a tenth of a second), and once every part is drawn the page is an ordinary page again: scrolling, a palette
// switch and find-in-page meet content that is already laid out, and accessibility checkers read what a reader sees
// (they misread skipped content: dequelabs/axe-core#2768).
(() => {
  const parts = [...document.querySelectorAll(".pitfalls-part:not(.pitfalls-part--drawn)")];
  // At most a quarter of a second between two parts, however busy the machine (a second each made a long page on
  // a busy laptop take half a minute to finish).
  const whenIdle = window.requestIdleCallback
    ? (task) => requestIdleCallback(task, { timeout: 250 })
    : (task) => setTimeout(task, 16);
  // Whether every part is drawn (the browser tests wait for it, as for the accessibility script's own work).
  window.pitfallsParts = { drawn: () => parts.length === 0 };
  const drawOne = () => {
    const part = parts.shift();
    part.classList.add("pitfalls-part--drawn");
    void part.offsetHeight;  // its style and layout now, in this short task, not in the next frame's
    document.dispatchEvent(new CustomEvent("pitfalls:drawn", { detail: part }));
  };
  // As many parts as the idle time allows (one when the wait ran out): each task stays short.
  const drawSome = (deadline) => {
    do drawOne();
    while (parts.length && deadline && !deadline.didTimeout && deadline.timeRemaining() > 8);
    if (parts.length) whenIdle(drawSome);
  };
  const start = () => parts.length && whenIdle(drawSome);
  if (document.readyState === "complete") start();
  else addEventListener("load", start, { once: true });
})();
// A section the page opens closed (details.pitfalls-section) opens when a link, a search result or the table of
// contents points into it, or at its heading (the section follows its heading): the browser scrolls to what is
// inside only once it is shown.
(() => {
  const reveal = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id ? document.getElementById(id) : null;
    const next = target?.nextElementSibling;
    const section = target?.closest("details.pitfalls-section:not([open])")
      ?? (next?.matches("details.pitfalls-section:not([open])") ? next : null);
    if (!section) return;
    section.open = true;
    target.scrollIntoView();
  };
  addEventListener("hashchange", reveal);
  reveal();
})();
