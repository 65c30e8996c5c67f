// A topic page's parts (the blocks between one heading and the next: snippets/lab/mkdocs_hook.py, in_parts) are
// skipped as the page loads (content-visibility in extra.css): Material's start-up then lays out the first screen,
// not the whole page, several times. Once the page has loaded, the rest is drawn while the browser is idle, one part
// at a time, top to bottom: each is a task of a few milliseconds on a phone (a whole page at once would block it
// for a tenth of a second), and once every part is drawn the page is an ordinary page again: scrolling, a palette
// switch and find-in-page meet content that is already laid out, and accessibility checkers read what a reader sees
// (they misread skipped content: dequelabs/axe-core#2768).
(() => {
  const parts = [...document.querySelectorAll(".pitfalls-part:not(.pitfalls-part--drawn)")];
  const whenIdle = window.requestIdleCallback
    ? (task) => requestIdleCallback(task, { timeout: 1000 })
    : (task) => setTimeout(task, 16);
  // Whether every part is drawn (the browser tests wait for it, as for the accessibility script's own work).
  window.pitfallsParts = { drawn: () => parts.length === 0 };
  const drawNext = () => {
    const part = parts.shift();
    if (!part) return;
    part.classList.add("pitfalls-part--drawn");
    void part.offsetHeight;  // its style and layout now, in this short task, not in the next frame's
    document.dispatchEvent(new CustomEvent("pitfalls:drawn", { detail: part }));
    if (parts.length) whenIdle(drawNext);
  };
  const start = () => whenIdle(drawNext);
  if (document.readyState === "complete") start();
  else addEventListener("load", start, { once: true });
})();
