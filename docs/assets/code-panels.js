// "Code that measured this" panels (and "The same measured on other machines"): their sources live in files of their own (site/code/<key>.html, written by
// the build; see snippets/lab/provenance.py, defer), so that a page showing dozens of functions stays light on a
// phone. The first time a reader opens a panel, its sources are fetched from the same site and put in place,
// with Material's copy button on each code block. Without JavaScript, or when the site is opened from disk
// (where browsers refuse fetch), the panel keeps its link to the sources' own page.
(() => {
  const chinese = document.documentElement.lang.startsWith("zh");
  const COPY = chinese ? "复制到剪贴板" : "Copy to clipboard";
  const FAILED = chinese ? "代码未能载入。" : "The sources could not be loaded here.";
  let blocks = 0;

  const load = async (body) => {
    body.dataset.state = "loading";
    body.setAttribute("aria-busy", "true");
    try {
      const response = await fetch(body.dataset.src);
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const article = page.querySelector("article");
      if (!article) throw new Error("no article in the sources' page");
      article.querySelector("h1")?.remove();
      for (const pre of article.querySelectorAll("pre")) {
        // Material's clipboard listener copies the element a [data-clipboard-target] names.
        pre.id = `pitfalls-code-${++blocks}`;
        const copy = document.createElement("button");
        copy.className = "md-clipboard md-icon";
        copy.title = COPY;
        copy.setAttribute("aria-label", COPY);
        copy.dataset.clipboardTarget = `#${pre.id} > code`;
        pre.prepend(copy);
      }
      body.replaceChildren(...document.adoptNode(article).childNodes);
      body.dataset.state = "loaded";
    } catch (error) {
      body.dataset.state = "failed";
      body.querySelector(".pitfalls-code__error")?.remove();
      const note = document.createElement("p");
      note.className = "pitfalls-code__error";
      note.textContent = `${FAILED} (${error.message})`;
      body.prepend(note);
    } finally {
      body.removeAttribute("aria-busy");
    }
  };

  // "toggle" does not bubble: listened for in the capture phase, on the document (which instant navigation
  // keeps), it reaches every panel of every page.
  document.addEventListener("toggle", (event) => {
    const panel = event.target;
    if (!(panel instanceof HTMLDetailsElement) || !panel.open) return;
    if (!panel.classList.contains("pitfalls-code") && !panel.classList.contains("pitfalls-machines")) return;
    const body = panel.querySelector(":scope > .pitfalls-code__body[data-src]");
    // Once loaded, never again; after a failure (a dropped connection), opening the panel again retries.
    if (body && !["loading", "loaded"].includes(body.dataset.state)) load(body);
  }, true);
})();
