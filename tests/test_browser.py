"""The built site as readers see it: served on 127.0.0.1 and driven by headless Chromium (Playwright).

Pages are discovered from the built site (its sitemap and its navigation), never listed here. Each page is
opened once on a laptop-sized screen — in the light palette, then in the dark one through the header's
toggle, with a screenshot of the first screen of each — and once on a phone-sized screen. The tests below
check what those visits recorded. Screenshots are saved under ``test-artifacts/screenshots/`` (or
``$PITFALLS_ARTIFACTS/screenshots/``); the run's summary names the folder.

Accessibility is checked by axe-core (the engine behind Lighthouse's accessibility audit, bundled by the
``axe-playwright-python`` package) with every rule it runs by default, on every page in both palettes: once
as the page loads in the light palette, once after the switch to the dark one, and once on the phone, every table
drawn.

``PITFALLS_SITE_DIR=<folder>`` tests an existing build instead of building the site (``make test`` builds one
first, alone). ``CHROMIUM=<path>`` chooses the browser (default ``/usr/bin/chromium``).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import urllib.request
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from browser_support import SiteServer, broken_links, discover_pages, slug
from conftest import ROOT, recipe_pages, screenshots_folder, topic_pages

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MIN_PAGES = 14  # home, three questions, two notebooks, environment: in English and in Chinese (zh/)
MIN_CONTRAST = 4.5  # WCAG AA for normal text
# <use> elements per figure (matplotlib draws each scatter point or line marker as one): styling them grows
# faster than their number — 2000 in one figure froze this site's page for over ten seconds on a 2-core laptop.
FIGURE_MARKER_BUDGET = 500
TIMEOUT_MS = 90_000  # a slow, shared 2-core machine

SEARCHES = [("manual_seed", "seeding-order/"), ("collate", "loader-overhead/"), ("drop_last", "update-steps/"),
            # the Chinese edition, searched from its own home page (Chinese words cut apart by jieba at build time)
            ("随机数", "zh/seeding-order/"), ("批大小", "zh/update-steps/"), ("num_workers", "zh/loader-overhead/"),
            ("学习率", "zh/update-steps/"), ("全批量", "zh/loader-overhead/"),
            # the askers' own words, which the pages quote and the glossary writes otherwise
            ("全量批次", "zh/loader-overhead/"), ("批量大小", "zh/update-steps/"), ("epoch", "zh/update-steps/")]
RECIPES = [(f"{page}/", f"snippets/{recipe}.py") for recipe, page in sorted(recipe_pages().items())]
COPY_BUTTON = 'button.md-clipboard, button.md-code__button[data-md-type="copy"]'
PALETTE_TOGGLE = 'label.md-header__button[for^="__palette"]'


# --- what the page reports: one script per view -------------------------------------------------------------

# What a reader does to see something put away: open its collapsed box (??? example) or pick its content tab.
REVEAL = r"""
(element) => {
  for (let a = element; a; a = a.parentElement) {
    if (a.tagName === 'DETAILS' && !a.open) a.querySelector(':scope > summary').click();
    if (a.classList.contains('tabbed-block')) {
      const index = [...a.parentElement.children].indexOf(a);
      const label = a.closest('.tabbed-set').querySelectorAll(':scope > .tabbed-labels > label')[index];
      if (label) label.click();
    }
  }
}
"""
REVEAL_JS = f"(id) => ({REVEAL})(document.getElementById(id))"

# Tables are drawn as they near the screen (content-visibility in assets/extra.css) and keep the size they were
# drawn at: bring each into view as a reader scrolling past it would, then return to the top.
SHOW_TABLES_JS = r"""
async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  for (const table of document.querySelectorAll('.md-content table')) {
    table.scrollIntoView({block: 'center'});
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
}
"""

# Material equips a code block (copy button, annotations) when it comes into view (feature content.lazy): bring
# each block into view as a reader scrolling to it would, and record whether its copy button appeared.
EQUIP_CODE_JS = r"""
async (copyButton) => {
  const reveal = """ + REVEAL + r""";
  const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const blocks = [];
  for (const code of document.querySelectorAll('.md-content pre > code')) {
    if (code.closest('.jupyter-wrapper')) continue;
    reveal(code);
    code.scrollIntoView({block: 'center'});
    let copy = false;
    for (let tries = 0; tries < 30 && !(copy = !!code.parentElement.querySelector(copyButton)); tries++) {
      await frame();
    }
    blocks.push({id: code.parentElement.id, copy});
  }
  window.scrollTo(0, 0);
  return blocks;
}
"""

MEASURE_JS = r"""
(what) => {
  const reveal = """ + REVEAL + r""";
  const parse = (value) => {
    const m = /^rgba?\(([^)]+)\)$/.exec((value || '').trim());
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3]));
  const luminance = (rgb) => {
    const c = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const contrast = (a, b) => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const SHAPES = new Set(['path', 'rect', 'circle', 'ellipse', 'polygon', 'polyline', 'image']);
  // The colour behind a point: composite every painted layer under `el`, top to bottom, until one is opaque.
  const backgroundAt = (el, x, y) => {
    const stack = document.elementsFromPoint(x, y);
    const start = stack.indexOf(el);
    const below = start >= 0 ? stack.slice(start + 1) : stack.filter((e) => e !== el);
    const layers = [];
    for (const e of below) {
      const cs = getComputedStyle(e);
      let c = null;
      if (e instanceof SVGElement && e.tagName !== 'svg') {
        if (SHAPES.has(e.tagName) && cs.fill && cs.fill !== 'none') {
          c = parse(cs.fill);
          if (c) c[3] *= parseFloat(cs.fillOpacity) * parseFloat(cs.opacity);
        }
      } else {
        c = parse(cs.backgroundColor);
        if (c) c[3] *= parseFloat(cs.opacity);
      }
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 0.999) break; }
    }
    let bg = [255, 255, 255];  // the canvas
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const describe = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\s+/).join('.') : '');
  const visible = (e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && e.checkVisibility({opacityProperty: true, visibilityProperty: true});
  };
  const body = getComputedStyle(document.body);
  const out = {
    scheme: document.body.getAttribute('data-md-color-scheme'),
    bodyLuminance: luminance(over(parse(body.backgroundColor) || [255, 255, 255, 1], [255, 255, 255])),
  };

  // A figure is laid out only near the screen (content-visibility: auto); measure each one as drawn there.
  for (const box of document.querySelectorAll('figure.pitfalls-figure')) {
    box.style.contentVisibility = 'visible';
  }
  out.figures = [...document.querySelectorAll('figure.pitfalls-figure')].map((figure, index) => {
    const svg = figure.querySelector('svg');
    let rect = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const hidden = rect.width === 0 && rect.height === 0;
    if (svg && hidden) { reveal(figure); rect = svg.getBoundingClientRect(); }
    const outer = figure.getBoundingClientRect();
    const result = {index, experiment: figure.dataset.experiment || '', hasSvg: !!svg, hidden,
                    left: outer.left, right: outer.right, scrolls: figure.scrollWidth > figure.clientWidth + 1,
                    width: rect.width, height: rect.height, elements: svg ? svg.querySelectorAll('*').length : 0,
                    markers: svg ? svg.querySelectorAll('use').length : 0,
                    texts: 0, illegible: [], lowContrast: [], minContrast: null};
    if (!svg || !what.contrast) return result;
    // Text that runs past the figure's edge is cut off; text on the same line as another collides with it.
    const box = svg.getBoundingClientRect();
    const placed = [];
    for (const text of svg.querySelectorAll('text')) {
      const label = text.textContent.trim().replace(/\s+/g, ' ');
      const r = text.getBoundingClientRect();
      if (!label || r.width === 0 || r.height === 0) continue;
      if (r.left < box.left - 2 || r.right > box.right + 2 || r.top < box.top - 2 || r.bottom > box.bottom + 2) {
        result.illegible.push({text: label, reason: 'cut off at the edge of the figure'});
      }
      for (const [other, o] of placed) {
        const dx = Math.min(r.right, o.right) - Math.max(r.left, o.left);
        const dy = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
        if (dx > 2 && dy > 0.5 * Math.min(r.height, o.height)) {
          result.illegible.push({text: label, reason: `overlaps ${JSON.stringify(other)}`});
        }
      }
      placed.push([label, r]);
    }
    for (const text of svg.querySelectorAll('text')) {
      const label = text.textContent.trim().replace(/\s+/g, ' ');
      if (!label) continue;
      let r = text.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      if (r.top < 80 || r.bottom > innerHeight || r.left < 0 || r.right > innerWidth) {
        text.scrollIntoView({block: 'center', inline: 'center'});
        r = text.getBoundingClientRect();
      }
      const cs = getComputedStyle(text);
      const fill = parse(cs.fill);
      if (!fill) { result.illegible.push({text: label, reason: `fill is ${cs.fill}`}); continue; }
      fill[3] *= parseFloat(cs.fillOpacity) * parseFloat(cs.opacity);
      const bg = backgroundAt(text, r.left + r.width / 2, r.top + r.height / 2);
      const fg = over(fill, bg);
      const ratio = contrast(fg, bg);
      result.texts += 1;
      result.minContrast = result.minContrast === null ? ratio : Math.min(result.minContrast, ratio);
      if (ratio < what.minContrast) {
        const hex = (rgb) => '#' + rgb.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
        result.lowContrast.push({text: label, ratio: Math.round(ratio * 100) / 100, fg: hex(fg), bg: hex(bg)});
      }
    }
    return result;
  });

  const root = document.documentElement;
  out.scrollWidth = root.scrollWidth;
  out.clientWidth = root.clientWidth;
  out.offenders = [];
  if (root.scrollWidth > root.clientWidth + 1) {
    const clips = (e) => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.right > root.clientWidth + 1 && r.width > 0 && !clips(e)) {
        out.offenders.push(`${describe(e)} (right edge ${Math.round(r.right)}px)`);
        if (out.offenders.length >= 8) break;
      }
    }
  }
  // Every table scrolls inside a container of its own, so a wide one never widens the page.
  out.tables = [...document.querySelectorAll('.md-content table')].map((table) => {
    let box = null, clipper = null;
    // as wide as its rows: a table held narrower than its rows lets them spill out of its own box
    const width = Math.max(table.getBoundingClientRect().width, table.scrollWidth);
    for (let a = table.parentElement; a && !a.classList.contains('md-content'); a = a.parentElement) {
      const overflow = getComputedStyle(a).overflowX;
      if (['auto', 'scroll'].includes(overflow)) { box = a; break; }
      // a box that hides what overflows it, narrower than the table: columns nobody can scroll to
      if (['hidden', 'clip'].includes(overflow) && a.clientWidth + 1 < width && !clipper) clipper = describe(a);
    }
    const b = box ? box.getBoundingClientRect() : null;
    return {header: (table.tHead || table).textContent.trim().replace(/\s+/g, ' ').slice(0, 80),
            tableWidth: Math.round(width), scroller: box ? describe(box) : null, clippedBy: clipper,
            reach: box ? box.scrollWidth : null,
            boxRight: b ? Math.round(b.right) : null, boxWidth: b ? Math.round(b.width) : null};
  });
  if (!what.details) return out;

  out.timingTables = [...document.querySelectorAll('.md-content table')]
    .filter((t) => /\bmedian\b/.test((t.tHead || t).textContent) && /\bIQR\b/.test((t.tHead || t).textContent))
    // a timing table reports medians and their spread
    .map((table) => {
      let box = table;
      while (/md-typeset__(table|scrollwrap)/.test(box.parentElement?.className)) box = box.parentElement;
      const next = box.nextElementSibling;
      const stamp = next && next.matches('.pitfalls-stamp') ? next : null;
      return {header: (table.tHead || table).textContent.trim().replace(/\s+/g, ' ').slice(0, 80),
              next: next ? describe(next) : null, stamp: stamp ? stamp.textContent.trim() : null,
              stampVisible: !!stamp && visible(stamp)};
    });
  out.codeBlocks = [...document.querySelectorAll('.md-content pre > code')]
    .filter((code) => !code.closest('.jupyter-wrapper'))
    .map((code) => ({id: code.parentElement.id, text: code.textContent,
                     copy: !!code.parentElement.querySelector(what.copyButton)}));
  out.notebookCells = [...document.querySelectorAll('.jupyter-wrapper .jp-InputArea-editor')]
    .map((cell, index) => ({index, copy: !!cell.querySelector('clipboard-copy, ' + what.copyButton)}));
  out.downloads = [...document.querySelectorAll('a[href]')]
    .filter((a) => a.origin === location.origin && /\.(py|ipynb)$/.test(a.pathname))
    .map((a) => ({href: a.href, visible: visible(a), label: (a.title || a.textContent).trim()}));
  return out;
}
"""


# --- fixtures ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def site_dir(built_site) -> Path:
    """The built site: PITFALLS_SITE_DIR when set (an existing build), else the session's strict build."""
    return built_site


@pytest.fixture(scope="session")
def site_pages(site_dir) -> list[str]:
    sitemap, nav = discover_pages(site_dir)
    return list(dict.fromkeys(nav + sitemap))


@pytest.fixture(scope="session")
def base_url(site_dir):
    with SiteServer(site_dir) as server:
        yield server.base


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = screenshots_folder()
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture(scope="session")
def browser():
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"The browser tests need Chromium at {CHROMIUM}, which is missing.\n"
            "Install it (Debian/Ubuntu: sudo apt-get install chromium), or point CHROMIUM=/path/to/chromium "
            "at an installed Chromium or Chrome. `make test` does this for you when it can (.ci/ensure-chromium.sh).",
            pytrace=False)
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception:
        playwright.stop()
        raise
    yield chromium
    chromium.close()
    playwright.stop()


@pytest.fixture(scope="session")
def axe():
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        pytest.fail("The accessibility checks need axe-core from the axe-playwright-python package, which is missing.\n"
                    "Install the test extra: pip install -e '.[test]' (make setup does).", pytrace=False)
    return Axe()


class _Session:
    """One browser context on one page, with everything the page asked the network for."""

    def __init__(self, browser, base_url: str, *, viewport: dict, phone: bool = False):
        self.local = urlsplit(base_url).netloc
        self.context = browser.new_context(viewport=viewport, color_scheme="light", is_mobile=phone,
                                           has_touch=phone, device_scale_factor=1, service_workers="block")
        self.context.set_default_timeout(TIMEOUT_MS)
        self.context.set_default_navigation_timeout(TIMEOUT_MS)
        self.other_hosts: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"HTTP {r.status} {r.url}"))

    def _route(self, route):
        url = route.request.url
        if urlsplit(url).netloc == self.local or url.startswith(("data:", "blob:")):
            route.continue_()
        else:  # the site must work offline: never let a page reach another host
            self.other_hosts.append(url)
            route.abort("blockedbyclient")

    def _request_failed(self, request):
        if urlsplit(request.url).netloc == self.local:
            self.failed.append(f"{request.failure} {request.url}")

    def _console(self, message):
        # a request to another host was blocked on purpose and is reported as such, not as a console error
        if message.type == "error" and "ERR_BLOCKED_BY_CLIENT" not in message.text:
            self.console.append(f"console: {message.text}")

    def open(self, url: str, *, sections: bool = True):
        """Load ``url``; with ``sections``, open every section the page opens closed (details.pitfalls-section)
        as a reader who reads on would, so that what the tests measure is all on show (opening fires the same
        toggle event as a click on its summary, which _visit also does once)."""
        response = self.page.goto(url, wait_until="load")
        self.page.wait_for_load_state("networkidle")
        if sections:
            self.page.evaluate(OPEN_SECTIONS_JS)
        return response

    def close(self):
        self.context.close()


def _open_listings(page) -> list[dict]:
    """Open every collapsed listing (a whole recipe, whose code the page fetches when it opens: see
    provenance.listings) as a reader would, and wait until its code is in place or the fetch failed."""
    summaries = page.locator("details.pitfalls-listing > summary")
    if summaries.count():
        summaries.first.click()  # as a reader opens one
    # and every other one: opening fires the same event as a click, without a click that a part or a table being
    # drawn above it (content-visibility) can move out from under the pointer on a busy machine
    page.evaluate("() => document.querySelectorAll('details.pitfalls-listing').forEach((d) => { d.open = true; })")
    page.wait_for_function("""() => [...document.querySelectorAll('details.pitfalls-listing')].every((d) =>
        ['loaded', 'failed'].includes(d.querySelector(':scope > .pitfalls-code__body')?.dataset.state))""",
                           timeout=SETTLE_TIMEOUT_MS)
    return page.evaluate("""() => [...document.querySelectorAll('details.pitfalls-listing')].map((d) => ({
        summary: d.querySelector(':scope > summary').textContent.trim(),
        state: d.querySelector(':scope > .pitfalls-code__body').dataset.state,
        blocks: d.querySelectorAll('pre > code').length}))""")


def _copied_text(session: _Session, block_id: str) -> str | None:
    """Show a code block as a reader would (open its box, pick its tab), click its copy button, and return
    what landed on the clipboard."""
    button = session.page.locator(f"#{block_id}").locator(COPY_BUTTON).first
    if not block_id or button.count() == 0:
        return None
    session.page.evaluate(REVEAL_JS, block_id)
    session.page.evaluate("() => navigator.clipboard.writeText('')")
    button.click(timeout=SETTLE_TIMEOUT_MS)
    session.page.wait_for_function("() => navigator.clipboard.readText().then((t) => t.length > 0)",
                                   timeout=SETTLE_TIMEOUT_MS)
    return session.page.evaluate("() => navigator.clipboard.readText()")


OPEN_SECTIONS_JS = "() => document.querySelectorAll('details.pitfalls-section').forEach((d) => { d.open = true; })"
# What a phone shows of a page as it opens, its closed sections closed: its height in screens, and the sections.
AS_OPENED_JS = """() => ({
  screens: document.documentElement.scrollHeight / window.innerHeight,
  closed: [...document.querySelectorAll('details.pitfalls-section:not([open])')].map((d) => ({
    heading: d.previousElementSibling?.textContent.replace('¶', '').trim(),
    summary: d.querySelector(':scope > summary').textContent.trim()})),
})"""
MAX_PHONE_SCREENS = 12  # a topic page as it opens, on a phone: the answer, its evidence, and the way to the rest


# How long a page may take to settle, load a panel or answer a click: a long page draws its parts in the browser's
# idle time, a part at least every quarter of a second (assets/parts.js), and `make test` runs a second test
# process beside the browser's, which may be building or serving a site on the same two cores (a visit of the
# loader page alone takes 50-90 s there; 60 s per wait was not always enough beside a build).
SETTLE_TIMEOUT_MS = 180_000
# Material fades its "Copied to clipboard" note out after two seconds and slides the header's title between the
# site's and the page's as the page scrolls: colours caught halfway through a fade are not the page's colours.
SETTLED_JS = """
() => !document.querySelector('.md-dialog--active')
  && (!window.pitfallsA11y || window.pitfallsA11y.settled())
  && (!window.pitfallsParts || window.pitfallsParts.drawn())
  && document.getAnimations().every((a) => a.playState !== 'running'
                                         || a.effect?.getComputedTiming().iterations === Infinity)
"""


def _axe(axe, page) -> dict:
    """What axe-core finds on the page as it is once its fades and slides have finished: each violated rule with
    the elements that violate it."""
    page.wait_for_function(SETTLED_JS, timeout=SETTLE_TIMEOUT_MS)
    response = axe.run(page, options={"resultTypes": ["violations"]}).response
    violations = [{"rule": v["id"], "impact": v.get("impact"), "help": v["help"],
                   "nodes": [{"target": " ".join(map(str, node["target"])),
                              "html": node.get("html", "")[:160],
                              "why": " ".join((node.get("failureSummary") or "").split())[:300]}
                             for node in v["nodes"]]}
                  for v in response["violations"]]
    return {"violations": violations, "rules_passed": len(response["passes"]), "engine": response["testEngine"]}


def _visit(browser, base_url: str, page: str, artifacts: Path, axe, record: dict) -> dict:
    """Open one page on a laptop (light, then dark) and on a phone; return what each view measured, in
    ``record`` (whose "step" names the step under way, for the report when one fails)."""
    url = urljoin(base_url, page)
    record.update({"page": page, "url": url, "axe": {}, "step": "laptop: open the page"})
    session = _Session(browser, base_url, viewport=LAPTOP)
    try:
        session.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/"))
        response = session.open(url, sections=False)
        record["status"] = response.status if response else None
        record["step"] = "laptop: open the closed sections"
        summaries = session.page.locator("details.pitfalls-section > summary")
        if summaries.count():
            summaries.first.click()  # as a reader opens one
        record["sections_clicked_open"] = session.page.evaluate(
            "() => document.querySelector('details.pitfalls-section')?.open ?? null")
        session.page.evaluate(OPEN_SECTIONS_JS)
        record["step"] = "laptop: axe-core, light palette"
        record["axe"]["light"] = _axe(axe, session.page)
        record["step"] = "laptop: open the collapsed listings"
        record["listings"] = _open_listings(session.page)
        # a table off the screen is a placeholder until it nears the screen (extra.css): measure them drawn
        record["step"] = "laptop: measure the page, light palette"
        session.page.evaluate(SHOW_TABLES_JS)
        options = {"contrast": True, "details": True, "minContrast": MIN_CONTRAST, "copyButton": COPY_BUTTON}
        light = session.page.evaluate(MEASURE_JS, options)
        light["screenshot"] = str(artifacts / f"{slug(page)}-light.png")
        # its first screen, as in dark and on the phone: a whole topic page is some 20,000 px, and its screenshot
        # took 10-12 s a page; no test reads the pictures (they are for a person looking into a failure)
        session.page.screenshot(path=light["screenshot"], animations="disabled")
        # the same blocks in the same order; Material names a block (id="__code_N") only as it equips it
        equipped = session.page.evaluate(EQUIP_CODE_JS, COPY_BUTTON)
        if len(equipped) == len(light["codeBlocks"]):
            for block, seen in zip(light["codeBlocks"], equipped):
                block.update(seen)
        record["copied"] = {}
        record["step"] = "laptop: copy the recipe"
        for recipe_page, recipe in RECIPES:
            if recipe_page == page:
                first_line = (ROOT / recipe).read_text(encoding="utf-8").splitlines()[0]
                for block in light["codeBlocks"]:
                    if block["text"].startswith(first_line):
                        record["copied"][recipe] = _copied_text(session, block["id"])
        toggle = session.page.locator(f"{PALETTE_TOGGLE}:visible").first
        record["toggle"] = toggle.count() > 0
        if record["toggle"]:
            record["step"] = "laptop: switch to the dark palette and measure it"
            toggle.click()
            session.page.wait_for_function(
                "(before) => document.body.getAttribute('data-md-color-scheme') !== before", arg=light["scheme"])
            session.page.evaluate("() => window.scrollTo(0, 0)")
            dark_shot = str(artifacts / f"{slug(page)}-dark.png")
            session.page.screenshot(path=dark_shot, animations="disabled")
            dark = session.page.evaluate(MEASURE_JS, {**options, "details": False})
            dark["screenshot"] = dark_shot
            record["dark"] = dark
            record["axe"]["dark"] = _axe(axe, session.page)
        record["light"] = light
        record["network"] = {"other_hosts": list(session.other_hosts), "failed": list(session.failed),
                             "console": list(session.console)}
    finally:
        session.close()

    phone = _Session(browser, base_url, viewport=PHONE, phone=True)
    try:
        record["step"] = "phone: open, axe-core and measure"
        response = phone.open(url, sections=False)
        phone.page.wait_for_function(SETTLED_JS, timeout=SETTLE_TIMEOUT_MS)
        record["as_opened"] = phone.page.evaluate(AS_OPENED_JS)
        phone.page.evaluate(OPEN_SECTIONS_JS)
        # checked once every table is drawn, as a reader who scrolled to it sees it (scrollable where it is wide):
        # drawing adds to the page and removes nothing, so this one run covers the page as it first opened too
        phone.page.evaluate(SHOW_TABLES_JS)
        record["axe"]["phone"] = _axe(axe, phone.page)
        record["phone"] = phone.page.evaluate(MEASURE_JS, {"contrast": False, "details": False})
        record["phone"]["status"] = response.status if response else None
        phone.page.screenshot(path=str(artifacts / f"{slug(page)}-phone.png"), animations="disabled")
        record["network"]["other_hosts"] += phone.other_hosts
        record["network"]["failed"] += [f"(phone) {line}" for line in phone.failed]
        record["network"]["console"] += [f"(phone) {line}" for line in phone.console]
    finally:
        phone.close()
    del record["step"]
    return record


@pytest.fixture(scope="session")
def visits(browser, base_url, site_pages, artifacts, axe) -> dict[str, dict]:
    """Every page, visited once per view; a page whose visit raised holds {"error": ...}."""
    results = {}
    for page in site_pages:
        record: dict = {}
        try:
            results[page] = _visit(browser, base_url, page, artifacts, axe, record)
        except Exception as error:  # reported by the tests, page by page, with the step that failed
            results[page] = {"page": page, "error": f"{type(error).__name__} at step '{record.get('step')}': {error}"}
    return results


def _visited(visits: dict[str, dict]) -> list[dict]:
    broken = {page: v["error"] for page, v in visits.items() if "error" in v}
    assert not broken, "pages that could not be visited:\n" + "\n".join(f"  /{p}: {e}" for p, e in broken.items())
    return list(visits.values())


def _report(problems: list[str], what: str) -> str:
    return f"{what}:\n" + "\n".join(f"  {p}" for p in problems)


# --- the tests ---------------------------------------------------------------------------------------------

def test_pages_are_discovered_from_the_built_navigation(site_dir, site_pages):
    sitemap, nav = discover_pages(site_dir)
    assert "" in nav, "the navigation has no link to the home page"
    assert set(nav) <= set(sitemap), f"navigation pages missing from sitemap.xml: {sorted(set(nav) - set(sitemap))}"
    assert len(site_pages) >= MIN_PAGES, f"only {len(site_pages)} pages found ({site_pages}); expected ≥ {MIN_PAGES}"


def test_both_editions_are_visited_page_for_page(site_pages):
    english = [page for page in site_pages if not page.startswith("zh/")]
    missing = [page for page in english if f"zh/{page}" not in site_pages]
    assert english and not missing, f"English pages whose Chinese twin the browser tests do not visit: {missing}"


def test_the_language_menu_leads_to_the_same_page_in_the_other_language(browser, base_url):
    session = _Session(browser, base_url, viewport=LAPTOP)
    try:
        session.open(base_url + "seeding-order/")
        assert session.page.evaluate("document.documentElement.lang") == "en"
        links = session.page.evaluate("() => [...document.querySelectorAll('.md-select__link')]"
                                      ".map((a) => [a.getAttribute('hreflang'), a.href])")
        chinese = dict(links).get("zh")
        assert chinese and urlsplit(chinese).path.endswith("/zh/seeding-order/"), links
        session.open(chinese)
        assert session.page.evaluate("document.documentElement.lang") == "zh"
        assert "随机种子" in session.page.locator("h1").first.text_content()
        back = dict(session.page.evaluate("() => [...document.querySelectorAll('.md-select__link')]"
                                          ".map((a) => [a.getAttribute('hreflang'), a.href])")).get("en")
        assert back and urlsplit(back).path.endswith("/seeding-order/") and "/zh/" not in back
    finally:
        session.close()


CODE_PLACEHOLDERS_JS = r"""
async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  // the page's parts drawn (assets/parts.js, after load): what is measured is the place a block holds in its part
  while (window.pitfallsParts && !window.pitfallsParts.drawn()) await frame();
  const codes = [...document.querySelectorAll('.md-content div.highlight[style*="--pitfalls-lines"] > pre > code')]
    .filter((code) => code.checkVisibility());
  // a skipped box's own children are what the browser has not drawn
  const held = codes.map((code) => ({skipped: !code.firstElementChild?.checkVisibility({contentVisibilityAuto: true}),
                                     height: code.getBoundingClientRect().height}));
  const out = [];
  for (const [i, code] of codes.entries()) {
    code.scrollIntoView({block: 'center'});
    await frame();
    out.push({...held[i], drawn: code.getBoundingClientRect().height, text: code.textContent.slice(0, 40)});
  }
  return out;
}
"""


@pytest.mark.parametrize("page", ["update-steps/", "zh/seeding-order/"])
@pytest.mark.parametrize("viewport", ["phone", "laptop"])
def test_a_code_block_drawn_late_holds_its_own_height_until_then(browser, base_url, page, viewport):
    """A code block off screen is not drawn (content-visibility), and the place it holds until it is drawn is the
    height it then takes (to a pixel, a thousandth of a long listing), on a phone and a laptop: the page does not
    move under a reader."""
    session = _Session(browser, base_url, viewport=PHONE if viewport == "phone" else LAPTOP,
                       phone=viewport == "phone")
    try:
        session.open(base_url + page)
        blocks = session.page.evaluate(CODE_PLACEHOLDERS_JS)
    finally:
        session.close()
    assert any(block["skipped"] for block in blocks), "no code block waited to be drawn"
    # to a pixel, or a thousandth of a long listing's height (each line's height is rounded as it is drawn)
    moved = [block for block in blocks
             if block["skipped"] and abs(block["height"] - block["drawn"]) > max(1.0, block["drawn"] / 1000)]
    assert not moved, f"held a height other than the drawn one: {moved}"


def test_every_page_loads_offline_without_errors(visits):
    problems = []
    for visit in _visited(visits):
        page, network = visit["page"], visit["network"]
        if visit["status"] != 200 or visit["phone"]["status"] != 200:
            problems.append(f"/{page}: HTTP {visit['status']} (phone: {visit['phone']['status']})")
        problems += [f"/{page}: {line}" for line in network["console"]]
        problems += [f"/{page}: failed request {line}" for line in network["failed"]]
        hosts = sorted({urlsplit(url).netloc or url for url in network["other_hosts"]})
        if hosts:
            problems.append(f"/{page}: requests to other hosts {hosts}: {sorted(set(network['other_hosts']))}")
    assert not problems, _report(problems, "pages that fail to load cleanly from the local server alone")


def test_figures_render_in_light_and_dark_palettes(visits, site_dir):
    problems, figures = [], 0
    for visit in _visited(visits):
        page = visit["page"]
        html = (site_dir / page / "index.html").read_text(encoding="utf-8")
        expected = html.count('<figure class="pitfalls-figure"')
        if not visit["toggle"]:
            problems.append(f"/{page}: no palette toggle ({PALETTE_TOGGLE}) in the header")
            continue
        light, dark = visit["light"], visit["dark"]
        if not (light["bodyLuminance"] > 0.5 and dark["bodyLuminance"] < 0.2):
            problems.append(f"/{page}: the toggle did not switch light → dark (schemes {light['scheme']!r} → "
                            f"{dark['scheme']!r}, background luminance {light['bodyLuminance']:.2f} → "
                            f"{dark['bodyLuminance']:.2f})")
        for palette, view in (("light", light), ("dark", dark), ("phone", visit["phone"])):
            if len(view["figures"]) != expected:
                problems.append(f"/{page} ({palette}): {len(view['figures'])} figures shown, {expected} in the HTML")
            for figure in view["figures"]:
                if not figure["hasSvg"] or figure["width"] < 50 or figure["height"] < 50:
                    problems.append(f"/{page} ({palette}): figure {figure['index']} ({figure['experiment']}) "
                                    f"renders {figure['width']:.0f}×{figure['height']:.0f} px")
        figures += len(light["figures"])
    assert figures >= 1, "no figure.pitfalls-figure anywhere on the site"
    assert not problems, _report(problems, "figures that do not render")


def test_figure_text_is_legible_in_both_palettes(visits):
    """Every text of every figure, in both palettes: inside the figure, clear of other text, and at least
    4.5:1 in contrast with the colour actually painted behind it (figure background, card, page)."""
    problems, checked = [], 0
    for visit in _visited(visits):
        for palette in ("light", "dark"):
            for figure in visit.get(palette, {}).get("figures", []):
                where = f"/{visit['page']} ({palette}) figure {figure['index']} ({figure['experiment']})"
                checked += figure["texts"]
                problems += [f"{where}: {t['text']!r} {t['reason']}" for t in figure["illegible"][:5]]
                low = figure["lowContrast"]
                if low:
                    worst = min(low, key=lambda t: t["ratio"])
                    problems.append(f"{where}: {len(low)} of {figure['texts']} texts below {MIN_CONTRAST}:1, e.g. "
                                    f"{worst['text']!r} at {worst['ratio']}:1 ({worst['fg']} on {worst['bg']})")
    assert checked > 0, "no text found in any figure"
    assert not problems, _report(problems, "figure text that is cut off, overlapped, or too faint to read")


def test_figures_stay_light_enough_to_render_fast(visits):
    """A scatter of a thousand points is a thousand SVG <use> elements, and the browser restyles them all
    whenever the page changes. Dense point clouds belong in a raster: ``ax.scatter(..., rasterized=True)``."""
    problems = [f"/{v['page']}: figure {f['index']} ({f['experiment']}) draws {f['markers']} markers as SVG <use> "
                f"elements ({f['elements']} elements in all)"
                for v in _visited(visits) for f in v["light"]["figures"] if f["markers"] > FIGURE_MARKER_BUDGET]
    assert not problems, _report(problems, f"figures over {FIGURE_MARKER_BUDGET} SVG markers")


def test_every_timing_table_is_followed_by_a_visible_stamp(visits, site_dir):
    """Below the table, or once for the whole page under its In short, when the table was measured there."""
    problems, tables = [], 0
    for visit in _visited(visits):
        html = (site_dir / visit["page"] / "index.html").read_text(encoding="utf-8")
        page_stamp = "Numbers on this page measured with" in html or "本页数字的测量环境" in html
        for table in visit["light"]["timingTables"]:
            tables += 1
            if not page_stamp and (not table["stampVisible"] or "torch" not in (table["stamp"] or "")):
                problems.append(f"/{visit['page']}: table [{table['header']}] is followed by {table['next']} "
                                f"(stamp: {table['stamp']!r}, visible: {table['stampVisible']})")
    assert tables >= 1, "no timing table (a header with a 'median' column) on any page"
    assert not problems, _report(problems, "timing tables without a visible environment stamp")


def test_notebook_pages_offer_their_source_for_download(visits):
    import jupytext

    notebooks = [v for v in _visited(visits) if v["page"].startswith("notebooks/")]
    assert notebooks, "no page under notebooks/"
    problems = []
    for visit in notebooks:
        links = [link for link in visit["light"]["downloads"] if link["visible"]]
        if not links:
            problems.append(f"/{visit['page']}: no visible download link to the notebook's source "
                            f"(links to .py/.ipynb files: {visit['light']['downloads']})")
            continue
        for link in links:
            with urllib.request.urlopen(link["href"], timeout=30) as response:
                status, text = response.status, response.read().decode("utf-8")
            fmt = "py:percent" if link["href"].endswith(".py") else "ipynb"
            try:
                notebook = jupytext.reads(text, fmt=fmt)
            except Exception as error:
                problems.append(f"/{visit['page']}: {link['href']} does not parse as {fmt}: {error}")
                continue
            code_cells = [c for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
            if status != 200 or not code_cells:
                problems.append(f"/{visit['page']}: {link['href']} → HTTP {status}, {len(code_cells)} code cells")
    assert not problems, _report(problems, "notebook pages without a working download")


def test_code_blocks_have_copy_buttons(visits):
    problems, blocks = [], 0
    for visit in _visited(visits):
        for block in visit["light"]["codeBlocks"]:
            blocks += 1
            if not block["copy"]:
                problems.append(f"/{visit['page']}: code block #{block['id']} "
                                f"({block['text'][:50]!r}…) has no copy button")
        for cell in visit["light"]["notebookCells"]:
            blocks += 1
            if not cell["copy"]:
                problems.append(f"/{visit['page']}: notebook cell {cell['index']} has no copy button")
    assert blocks >= 1, "no code block on any page"
    assert not problems, _report(problems, "code blocks a reader cannot copy with one click")


def test_collapsed_listings_load_their_code_when_opened(visits):
    """A whole recipe sits in a collapsed box whose code stays out of the page until a reader opens it: opened,
    every such box shows its code."""
    problems, listings = [], 0
    for visit in _visited(visits):
        for listing in visit["listings"]:
            listings += 1
            if listing["state"] != "loaded" or listing["blocks"] < 1:
                problems.append(f"/{visit['page']}: the box {listing['summary']!r} opened to state "
                                f"{listing['state']!r} with {listing['blocks']} code block(s)")
    assert listings >= 2, "no collapsed listing on any page (the loader page has two)"
    assert not problems, _report(problems, "collapsed listings that did not load their code")


@pytest.mark.parametrize("page, recipe", RECIPES, ids=[r for _, r in RECIPES])
def test_recipe_shown_on_its_page_is_the_file(visits, page, recipe):
    assert page in visits, f"/{page} is not in the built site's navigation or sitemap"
    visit = _visited({page: visits[page]})[0]
    source = (ROOT / recipe).read_text(encoding="utf-8")
    first_line = source.splitlines()[0]
    shown = [b for b in visit["light"]["codeBlocks"] if b["text"].startswith(first_line)]
    assert shown, f"/{page}: no code block starts with {recipe}'s first line {first_line!r}"
    assert any(b["text"].rstrip("\n") == source.rstrip("\n") for b in shown), (
        f"/{page}: the code block that starts like {recipe} differs from the file:\n"
        + _diff(source, shown[0]["text"], recipe, "shown on the page"))
    copied = visit["copied"].get(recipe)
    assert copied is not None, f"/{page}: {recipe}'s block has no copy button"
    assert copied.rstrip("\n") == source.rstrip("\n"), (
        f"/{page}: the copy button does not copy {recipe} as it is:\n" + _diff(source, copied, recipe, "copied"))


def _diff(expected: str, actual: str, expected_name: str, actual_name: str, lines: int = 30) -> str:
    diff = difflib.unified_diff(expected.rstrip("\n").splitlines(), actual.rstrip("\n").splitlines(),
                                expected_name, actual_name, lineterm="")
    return "\n".join(list(diff)[:lines])


def test_no_horizontal_overflow_on_a_phone(visits):
    problems = []
    for visit in _visited(visits):
        phone = visit["phone"]
        if phone["scrollWidth"] > phone["clientWidth"] + 1:
            problems.append(f"/{visit['page']}: page is {phone['scrollWidth']}px wide on a {phone['clientWidth']}px "
                            f"screen; sticking out: {phone['offenders'] or 'unknown'}")
        for table in phone["tables"]:
            if table["scroller"] is None:
                problems.append(f"/{visit['page']}: table [{table['header']}] has no scrolling container")
            elif table["boxRight"] > phone["clientWidth"] + 1:
                problems.append(f"/{visit['page']}: table [{table['header']}]'s container ends at "
                                f"{table['boxRight']}px, past the {phone['clientWidth']}px screen")
            elif table["reach"] + 1 < table["tableWidth"]:
                problems.append(f"/{visit['page']}: table [{table['header']}] is {table['tableWidth']}px wide but "
                                f"its container scrolls over {table['reach']}px only")
            if table["clippedBy"]:
                problems.append(f"/{visit['page']}: table [{table['header']}] ({table['tableWidth']}px) is cut off "
                                f"by {table['clippedBy']}, which hides what overflows it")
    assert not problems, _report(problems, f"pages wider than a {PHONE['width']}px phone screen")


def test_every_figure_fits_a_phone_without_scrolling_sideways(visits):
    """Drawn as wide as a phone (render.WIDTH), a figure fits the screen whole: no part of it off the screen, no
    sideways scrolling inside its box (its text stays 9 px or more: the phone-reading test)."""
    problems, figures = [], 0
    for visit in _visited(visits):
        phone = visit["phone"]
        for figure in phone["figures"]:
            figures += 1
            name = f"/{visit['page']}: figure {figure['index']} ({figure['experiment']})"
            if figure["scrolls"]:
                problems.append(f"{name} scrolls sideways in its box")
            if figure["left"] < -1 or figure["right"] > phone["clientWidth"] + 1:
                problems.append(f"{name} spans {figure['left']:.0f}–{figure['right']:.0f}px on a "
                                f"{phone['clientWidth']}px screen")
    assert figures >= 11, f"{figures} figures measured on the phone"
    assert not problems, _report(problems, f"figures that do not fit a {PHONE['width']}px phone")


def test_tables_fit_a_laptop_page(visits):
    """At 1280 px every table on show is whole: none needs its scroll bar to show a column."""
    problems = []
    for visit in _visited(visits):
        for table in visit["light"]["tables"]:
            if table["boxWidth"] and table["tableWidth"] > table["boxWidth"] + 1:
                problems.append(f"/{visit['page']}: table [{table['header']}] is {table['tableWidth']}px wide in a "
                                f"{table['boxWidth']}px column at {LAPTOP['width']}px")
    assert not problems, _report(problems, "tables wider than a laptop's page")


def test_a_topic_page_opens_within_twelve_phone_screens_and_says_what_each_closed_section_holds(visits):
    """As it opens on a phone, a topic page is its answer and the evidence read first; the depth is closed under its
    heading (front matter ``collapsed``), one click away, its summary saying what it holds."""
    problems, topics = [], 0
    for visit in _visited(visits):
        opened = visit["as_opened"]
        if not opened["closed"]:
            continue
        topics += 1
        if opened["screens"] > MAX_PHONE_SCREENS:
            problems.append(f"/{visit['page']}: {opened['screens']:.1f} phone screens as it opens "
                            f"(at most {MAX_PHONE_SCREENS}); closed: {[c['heading'] for c in opened['closed']]}")
        problems += [f"/{visit['page']}: the closed section {c['heading']!r} has no heading above it or no summary"
                     for c in opened["closed"] if not c["heading"] or not c["summary"]]
        if visit["sections_clicked_open"] is not True:
            problems.append(f"/{visit['page']}: a click on the first closed section's summary did not open it")
    assert topics >= 6, f"only {topics} pages open with closed sections: the three topics, in both languages"
    assert not problems, _report(problems, "topic pages too long as they open")


# a heading inside a closed section; the heading of a closed section itself (the workers table links to it)
@pytest.mark.parametrize("anchor", ["with-the-batch-size", "stage-by-stage"])
def test_a_link_into_a_closed_section_opens_it(browser, base_url, anchor):
    """A search result, a jump link or a shared link to a heading inside a closed section, or to the section's own
    heading, shows that heading and opens the section."""
    session = _Session(browser, base_url, viewport=PHONE, phone=True)
    try:
        session.open(base_url + f"loader-overhead/#{anchor}", sections=False)
        shown = session.page.evaluate("""(anchor) => {
          const target = document.getElementById(anchor);
          const box = target.getBoundingClientRect();
          const section = target.closest('details.pitfalls-section') ?? target.nextElementSibling;
          return {open: section.open, top: box.top, height: box.height};
        }""", anchor)
    finally:
        session.close()
    assert shown["open"] and shown["height"] > 0, f"the section holding #{anchor} stayed closed: {shown}"
    assert -5 <= shown["top"] < PHONE["height"], f"#{anchor} is not on screen: {shown}"


@pytest.mark.parametrize("term, expected", SEARCHES, ids=[t for t, _ in SEARCHES])
def test_search_finds_the_right_page(browser, base_url, term, expected):
    session = _Session(browser, base_url, viewport=LAPTOP)
    try:
        session.open(base_url + ("zh/" if expected.startswith("zh/") else ""))
        box = session.page.locator("input.md-search__input")
        box.click()
        box.press_sequentially(term, delay=30)  # Material searches on key presses, not on .fill()
        box.press("End")  # Chinese is typed as inserted text, which fires no keyup: one key that changes nothing
        session.page.wait_for_function(  # the result count, in English or in Chinese
            "() => /matching document|No matching|符合条件的结果/i.test("
            "document.querySelector('.md-search-result__meta')?.textContent || '')")
        found = session.page.evaluate(
            "() => [...document.querySelectorAll('a.md-search-result__link')].map((a) => a.href)")
        meta = session.page.locator(".md-search-result__meta").text_content()
    finally:
        session.close()
    pages = list(dict.fromkeys(urlsplit(url).path.lstrip("/") for url in found))
    assert expected in pages, f"searching {term!r} ({meta.strip()}) lists {pages}, not /{expected}"
    language = "zh/" if expected.startswith("zh/") else ""
    strangers = [p for p in pages if p.startswith("zh/") != bool(language)]
    assert not strangers, f"searching {term!r} from /{language} lists pages of the other language: {strangers}"


def test_no_accessibility_violations_in_either_palette(visits):
    """axe-core, with every rule it runs by default (WCAG 2 A and AA, and its best practices), finds nothing on
    any page, in the light palette or the dark one, nor on a phone. Each failure names the page, the view, the
    rule and the element, with axe's reason."""
    problems, runs = [], 0
    for visit in _visited(visits):
        for palette in ("light", "dark", "phone"):
            result = visit["axe"].get(palette)
            if result is None:
                problems.append(f"/{visit['page']} ({palette}): axe-core did not run there (no palette toggle?)")
                continue
            runs += 1
            if result["rules_passed"] == 0:
                problems.append(f"/{visit['page']} ({palette}): axe-core passed no rule at all — did it run?")
            for violation in result["violations"]:
                for node in violation["nodes"]:
                    problems.append(f"/{visit['page']} ({palette}): {violation['rule']} [{violation['impact']}] "
                                    f"{violation['help']} — {node['target']}: {node['why']}  {node['html']}")
    assert runs >= 2, "axe-core ran on no page"
    assert not problems, _report(problems, "accessibility violations found by axe-core")


def test_internal_links_and_anchors_resolve(site_dir):
    problems = broken_links(site_dir)
    assert not problems, _report(problems, "links inside the site that do not resolve")


@pytest.mark.parametrize("page", ["update-steps/", "seeding-order/"])
def test_code_panels_load_their_sources_when_opened(browser, base_url, axe, page):
    """A panel's sources live in a file of their own, fetched when a reader opens the panel: every panel of
    the page loads, shows the experiment's function with a working copy button, and passes axe-core."""
    session = _Session(browser, base_url, viewport=LAPTOP)
    try:
        session.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/"))
        session.open(urljoin(base_url, page))
        panels = session.page.locator("details.pitfalls-code[data-experiment]")
        count = panels.count()
        assert count >= 3, f"/{page}: only {count} code panels"
        assert session.page.locator(".pitfalls-code__body pre").count() == 0, "sources in the page before opening"
        panels.first.locator(":scope > summary").click()  # as a reader opens one
        # and every other one, wherever it is (some sit in tabs or boxes not on show): opening fires the same event
        session.page.evaluate(
            "() => document.querySelectorAll('details.pitfalls-code[data-experiment]').forEach((d) => { d.open = true; })")
        session.page.wait_for_function(
            "() => [...document.querySelectorAll('details[data-experiment] > .pitfalls-code__body')].every((b) => "
            "b.dataset.state === 'loaded'"
            " || b.dataset.state === 'failed')")
        loaded = session.page.evaluate("""() => [...document.querySelectorAll('details.pitfalls-code[data-experiment]')].map((d) => ({
            name: d.dataset.experiment, state: d.querySelector(':scope > .pitfalls-code__body').dataset.state,
            text: d.querySelector(':scope > .pitfalls-code__body').textContent,
            blocks: d.querySelectorAll('.pitfalls-code__body pre').length,
            copy: d.querySelectorAll('.pitfalls-code__body pre > button.md-clipboard').length}))""")
        problems = [f"{p['name']}: {p['state']} ({p['text'][:120]!r})" for p in loaded if p["state"] != "loaded"]
        problems += [f"{p['name']}: the sources do not define {p['name'].split('.')[-1]}()" for p in loaded
                     if f"def {p['name'].split('.')[-1]}(" not in p["text"]]
        problems += [f"{p['name']}: {p['blocks']} code blocks, {p['copy']} copy buttons" for p in loaded
                     if p["blocks"] == 0 or p["copy"] != p["blocks"]]
        assert not problems, _report(problems, f"/{page}: code panels that did not load their sources")
        first = session.page.locator(".pitfalls-code__body pre").first
        expected = first.locator("code").text_content()
        session.page.evaluate("() => navigator.clipboard.writeText('')")
        first.locator("button.md-clipboard").click()
        session.page.wait_for_function("() => navigator.clipboard.readText().then((t) => t.length > 0)")
        assert session.page.evaluate("() => navigator.clipboard.readText()").rstrip("\n") == expected.rstrip("\n")
        session.page.wait_for_function(SETTLED_JS, timeout=SETTLE_TIMEOUT_MS)  # the opened panels' code blocks marked
        response = axe.run(session.page, context="details.pitfalls-code",
                           options={"resultTypes": ["violations"]}).response
        violations = [f"{v['id']}: {v['help']} — {' '.join(map(str, n['target']))}" for v in response["violations"]
                      for n in v["nodes"]]
        assert not violations, _report(violations, f"/{page}: accessibility violations in opened code panels")
        assert not session.failed and not session.other_hosts, (session.failed, session.other_hosts)
    finally:
        session.close()


def test_the_accumulation_loop_shows_its_note_as_a_plain_comment(browser, base_url):
    """The accumulation loop says why its last, smaller group steps in a plain comment: once Material has
    equipped the block (its copy button is there), no annotation marker and no literal ``# (1)!`` shows."""
    session = _Session(browser, base_url, viewport=LAPTOP)
    try:
        session.open(urljoin(base_url, "update-steps/"))
        block = session.page.locator("div.highlight").filter(has_text="% k == 0").first
        block.scroll_into_view_if_needed()
        session.page.wait_for_function(f"(el) => el.querySelector('{COPY_BUTTON}')",
                                       arg=block.element_handle(), timeout=SETTLE_TIMEOUT_MS)
        markers = block.locator(".md-annotation").count()
        code = block.locator("code").first.text_content()
    finally:
        session.close()
    assert markers == 0, f"{markers} annotation markers in the accumulation loop"
    assert "(1)!" not in code and "# (1)" not in code, f"the literal annotation comment shows: {code!r}"
    assert "# the last, smaller group steps too" in code, code


def test_recipe_names_never_break_on_a_phone(browser, base_url):
    """The home page's table of recipes keeps each file name on one line on a phone."""
    phone = _Session(browser, base_url, viewport=PHONE, phone=True)
    try:
        phone.open(base_url)
        lines = phone.page.evaluate(
            "() => [...document.querySelectorAll('.md-typeset table td:first-child a > code')]"
            ".map((c) => [c.textContent, c.getClientRects().length])")
    finally:
        phone.close()
    assert len(lines) >= 3, f"the recipes' table lists {len(lines)} files"
    broken = [name for name, boxes in lines if boxes != 1]
    assert not broken, f"file names broken across lines on a {PHONE['width']}px phone: {broken}"


_PHONE_READING = """() => {
  const width = document.documentElement.clientWidth;
  const isRatio = (th) => th.textContent.includes('×') && /95\\s?%/.test(th.textContent);
  const table = [...document.querySelectorAll('.md-typeset table')].find((t) => [...t.querySelectorAll('th')].some(isRatio));
  const ratioHeader = table ? [...table.querySelectorAll('th')].find(isRatio) : null;
  // an identifier may break where it has a space ("f(..., k=1)"), never inside a word
  const headerCode = [];
  for (const c of document.querySelectorAll('.md-typeset th code')) {
    const node = c.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE) continue;
    let at = 0;
    for (const word of node.textContent.split(' ')) {
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + word.length);
      if (word && range.getClientRects().length > 1) headerCode.push(`${word} in ${c.textContent}`);
      at += word.length + 1;
    }
  }
  const small = [];
  for (const svg of document.querySelectorAll('figure.pitfalls-figure svg')) {
    if (!svg.getClientRects().length) continue;  // in a closed tab
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    for (const tspan of svg.querySelectorAll('text, tspan')) {
      const size = parseFloat(getComputedStyle(tspan).fontSize) * scale;
      if (tspan.textContent.trim() && size < 9) small.push(`${tspan.textContent.trim()} at ${size.toFixed(1)} px`);
    }
  }
  const covered = [];
  for (const pre of document.querySelectorAll('.md-typeset pre')) {
    const button = pre.querySelector(':scope > .md-code__nav .md-code__button, :scope > .md-clipboard');
    const code = pre.querySelector(':scope > code');
    if (!button || !code || !pre.getClientRects().length) continue;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let node, first = null;
    while ((node = walker.nextNode())) {
      const at = node.textContent.indexOf('\\n');
      if (!first) { first = node; range.setStart(node, 0); }
      if (at >= 0) { range.setEnd(node, at); break; }
      range.setEnd(node, node.textContent.length);
    }
    const b = button.getBoundingClientRect();
    for (const r of range.getClientRects()) {
      if (r.width && r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom) {
        covered.push(code.textContent.split('\\n')[0].slice(0, 60));
        break;
      }
    }
  }
  return {ratioRight: ratioHeader ? ratioHeader.getBoundingClientRect().right : null, width, headerCode,
          small: small.slice(0, 8), smallCount: small.length, covered: covered.slice(0, 5), coveredCount: covered.length};
}"""


@pytest.mark.parametrize("page", [f"{lang}{page}/" for page in topic_pages() for lang in ("", "zh/")])
def test_a_phone_reader_sees_the_ratio_column_whole_identifiers_legible_figures_clear_code_and_every_tab(
        browser, base_url, page):
    phone = _Session(browser, base_url, viewport=PHONE, phone=True)
    try:
        phone.open(base_url + page)
        # content-visibility: a figure is laid out when it nears the screen
        phone.page.evaluate("() => document.querySelectorAll('figure.pitfalls-figure').forEach((f) => f.scrollIntoView())")
        phone.page.evaluate("() => window.scrollTo(0, 0)")
        seen = phone.page.evaluate(_PHONE_READING)
        # every tab reachable: a tap on each label (scrolled into view as a swipe would) selects its tab
        from playwright.sync_api import Error as PlaywrightError

        unreachable, tabs = [], 0
        labels = phone.page.locator(".md-content .tabbed-set > .tabbed-labels > label")
        for index in range(labels.count()):
            label = labels.nth(index)
            tabs += 1
            try:
                label.click(timeout=5_000)
                selected = phone.page.evaluate("(l) => document.getElementById(l.htmlFor)?.checked ?? false",
                                               label.element_handle())
            except PlaywrightError as error:
                selected = f"{type(error).__name__}: {str(error).splitlines()[0]}"
            if selected is not True:
                unreachable.append(f"{label.text_content().strip()!r} ({selected})")
    finally:
        phone.close()
    assert tabs >= 2, f"/{page}: {tabs} tab labels found"
    assert not unreachable, f"/{page}: tabs a phone reader cannot select: {unreachable}"
    if page.endswith("loader-overhead/"):
        assert seen["ratioRight"] is not None and seen["ratioRight"] <= seen["width"], (
            f"/{page}: the question's ratio column ends at {seen['ratioRight']} px on a {seen['width']} px screen")
    assert not seen["headerCode"], f"/{page}: identifiers broken in table headers: {seen['headerCode']}"
    assert not seen["smallCount"], f"/{page}: {seen['smallCount']} figure texts under 9 px, e.g. {seen['small']}"
    assert not seen["coveredCount"], f"/{page}: copy buttons over the first line of {seen['covered']}"


def test_figures_follow_dark_mode_and_a_hovered_claim_moves_nothing(browser, base_url):
    laptop = _Session(browser, base_url, viewport=LAPTOP)
    try:
        laptop.open(base_url + "update-steps/")
        light = laptop.page.evaluate("() => getComputedStyle(document.querySelector('figure.pitfalls-figure'))"
                                     ".backgroundColor")
        laptop.page.locator(f"{PALETTE_TOGGLE}:visible").first.click()
        laptop.page.wait_for_function("() => document.body.dataset.mdColorScheme === 'slate'")
        dark = laptop.page.evaluate("""() => {
          const figure = document.querySelector('figure.pitfalls-figure');
          const svg = figure.querySelector('svg');
          const text = svg.querySelector('tspan, text');
          const canvas = svg.querySelector('path');
          return {figure: getComputedStyle(figure).backgroundColor,
                  page: getComputedStyle(document.body).backgroundColor,
                  canvas: getComputedStyle(canvas).fill, text: getComputedStyle(text).fill,
                  fg: getComputedStyle(document.querySelector('.md-typeset')).color};
        }""")
        claim = laptop.page.locator(".pitfalls-claim").first
        claim.scroll_into_view_if_needed()
        # the gap from the claim's paragraph to the block after it (content-visibility may lay out blocks
        # elsewhere on the page as it scrolls: measured relative to the paragraph itself)
        following = """(claim) => {
          let block = claim.closest('p, li');
          const top = block.getBoundingClientRect().top;
          while (block && !block.nextElementSibling) block = block.parentElement;
          return block.nextElementSibling.getBoundingClientRect().top - top;
        }"""
        before = claim.evaluate(following)
        claim.hover()
        laptop.page.wait_for_timeout(200)
        hovered = claim.evaluate("""(c) => ({shown: getComputedStyle(c.nextElementSibling).display !== 'none',
                                             title: c.title, tip: c.nextElementSibling.textContent})""")
        after = claim.evaluate(following)
        claim.click()
        laptop.page.wait_for_timeout(200)
        clicked = claim.evaluate("(c) => getComputedStyle(c.nextElementSibling).display !== 'none'")
    finally:
        laptop.close()
    assert light == "rgb(255, 255, 255)"
    assert dark["figure"] == dark["page"] and dark["canvas"] == dark["page"], f"figures stay white in dark mode: {dark}"
    assert dark["text"] == dark["fg"], f"figure text does not take the page's text colour: {dark}"
    assert hovered["title"].replace("`", "") == hovered["tip"] and hovered["tip"], "the tip as the pointer's tooltip"
    assert not hovered["shown"] and abs(after - before) < 1, f"hovering a claim moved the next block by {after - before:.0f} px"
    assert clicked, "a click opens the tip in the text"


def test_chinese_emphasis_is_upright_and_marked_not_slanted(browser, base_url):
    """Chinese has no italic (a browser slants CJK glyphs synthetically): in the Chinese edition an <em> holding
    Chinese stands upright with 着重号 under it; in the English edition emphasis stays italic."""
    session = _Session(browser, base_url, viewport=LAPTOP)
    styles = "(els) => els.map((e) => [e.textContent.slice(0, 20), getComputedStyle(e).fontStyle, " \
             "getComputedStyle(e).textEmphasisStyle || getComputedStyle(e).webkitTextEmphasisStyle, " \
             "!!e.closest('blockquote')])"
    try:
        session.open(urljoin(base_url, "zh/loader-overhead/"))
        chinese = [s for s in session.page.locator(".md-content em").evaluate_all(styles)
                   if re.search(r"[\u4e00-\u9fff]", s[0])]
        session.open(urljoin(base_url, "loader-overhead/"))
        english = session.page.locator(".md-content em").evaluate_all(styles)
    finally:
        session.close()
    assert len(chinese) >= 5, chinese
    slanted = [s for s in chinese if s[1] != "normal" or (s[2] in (None, "", "none")) != s[3]]
    assert not slanted, f"Chinese emphasis slanted, unmarked, or a quotation marked as emphasis: {slanted[:5]}"
    assert any(s[3] for s in chinese), "the asker's quoted question is on the page, upright and unmarked"
    assert english and all(s[1] == "italic" for s in english), english[:5]


def test_loading_a_page_restyles_nothing_for_the_palette_and_a_switch_still_animates_no_colour(browser, base_url,
                                                                                              site_dir):
    """Material's rule that turns transitions off during a palette switch is keyed to data-pitfalls-switching in
    the built sheet (Material's own attribute, set at every load, would restyle the whole page twice): the
    attribute is on the body while the toggle's change is handled, so the new colours take effect with no
    transition, and gone two frames later."""
    sheets = list(site_dir.glob("assets/stylesheets/palette.*.min.css"))
    assert sheets and not any("data-md-color-switching" in s.read_text(encoding="utf-8") for s in sheets)
    laptop = _Session(browser, base_url, viewport=LAPTOP)
    try:
        laptop.open(base_url + "loader-overhead/")
        during = laptop.page.evaluate("""() => new Promise((done) => {
          const link = document.querySelector('.md-content a[href]');
          // the input the visible toggle switches to, as a reader's click on the toggle would
          const toggle = [...document.querySelectorAll('label.md-header__button[for^="__palette"]')]
            .find((label) => !label.hidden);
          const input = document.getElementById(toggle.htmlFor);
          input.addEventListener('change', () => done({
            marked: document.body.hasAttribute('data-pitfalls-switching'),
            duration: getComputedStyle(link).transitionDuration,
          }), {once: true});
          input.click();
        })""")
        assert during == {"marked": True, "duration": "0s"}, during
        laptop.page.wait_for_function("() => document.body.dataset.mdColorScheme === 'slate'")
        laptop.page.wait_for_function("() => !document.body.hasAttribute('data-pitfalls-switching')")
        after = laptop.page.evaluate("() => getComputedStyle(document.querySelector('.md-content a[href]'))"
                                     ".transitionDuration")
        assert after != "0s", "transitions stay off after the switch"
    finally:
        laptop.close()


# As Material starts (the page's own scripts run at DOMContentLoaded): how many parts the page has and how many the
# browser is skipping (a skipped box's children are not drawn).
PARTS_AT_START_JS = r"""
document.addEventListener('DOMContentLoaded', () => {
  const parts = [...document.querySelectorAll('.md-content .pitfalls-part')];
  window.__partsAtStart = {
    count: parts.length,
    skipped: parts.filter((part) => !part.firstElementChild.checkVisibility({contentVisibilityAuto: true})).length,
  };
});
"""
PARTS_AFTER_JS = r"""
() => {
  const parts = [...document.querySelectorAll('.md-content .pitfalls-part')];
  return {
    count: parts.length,
    drawn: parts.filter((part) => part.classList.contains('pitfalls-part--drawn')
                                  && part.firstElementChild.checkVisibility({contentVisibilityAuto: true})).length,
    headingsInParts: document.querySelectorAll('.md-content .pitfalls-part :is(h1, h2, h3, h4, h5, h6)').length,
    headings: document.querySelectorAll('.md-content :is(h2, h3, h4, h5, h6)').length,
  };
}
"""


@pytest.mark.parametrize("page", ["loader-overhead/", "zh/update-steps/"])
def test_a_topic_page_starts_with_its_parts_skipped_and_draws_each_one_after_load(browser, base_url, page):
    """A long page's sections are skipped while Material starts (a phone lays out the first screen and the headings,
    not three thousand elements) and every one of them is drawn once the page has loaded (assets/parts.js); the
    headings, which the table of contents follows, are never inside a part."""
    session = _Session(browser, base_url, viewport=PHONE, phone=True)
    try:
        session.context.add_init_script(PARTS_AT_START_JS)
        session.open(base_url + page)
        session.page.wait_for_function("() => window.pitfallsParts && window.pitfallsParts.drawn()",
                                       timeout=TIMEOUT_MS)
        start = session.page.evaluate("() => window.__partsAtStart")
        after = session.page.evaluate(PARTS_AFTER_JS)
    finally:
        session.close()
    assert start["count"] >= 10, f"/{page} has {start['count']} parts: the plugin did not divide it (in_parts)"
    assert start["skipped"] >= start["count"] - 2, f"/{page}: only {start['skipped']} of {start['count']} parts " \
        "were skipped as Material started (a phone's first screen holds at most two)"
    assert after["count"] == start["count"] and after["drawn"] == after["count"], \
        f"/{page}: {after['drawn']} of {after['count']} parts drawn after load"
    assert after["headingsInParts"] == 0 and after["headings"] >= 10
