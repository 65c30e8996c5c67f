"""Page weight: what a reader downloads for each page of the built site.

For every page in the site's sitemap: the HTML (inline SVG figures included, and shown on their own), plus
every asset the page loads — its stylesheets, scripts, icons and images, what those stylesheets import, and
what Material fetches at runtime (the search worker, the search index, the sitemap). Each asset counts once
per page, as for a reader who opens that page first, with nothing cached. Sizes are the bytes on disk (what a
server without compression sends); the gzip column is what a compressing host sends.

Target: every page ≤ 1.5 MB uncompressed. Exits 1 when a page is heavier.

    python benchmarks/page_weight.py                # build the site (strict) into a temporary folder, then measure
    python benchmarks/page_weight.py --site site/   # measure an existing build
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MB = 1.5
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")
_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_TAG = re.compile(r"<[a-zA-Z]")
_FIGURE = re.compile(r'<figure class="pitfalls-figure".*?</figure>', re.S)


class _Assets(HTMLParser):
    """The URLs a page loads by itself (not links it merely points at), and Material's runtime config."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self.canonical: str | None = None
        self._config = False
        self.config_text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        rel = (a.get("rel") or "").split()
        if tag == "link" and a.get("href"):
            if "canonical" in rel:
                self.canonical = a["href"]
            elif {"stylesheet", "icon", "preload", "modulepreload", "manifest"} & set(rel):
                self.urls.append(a["href"])
        elif tag in ("script", "img", "source", "video", "audio", "iframe", "embed") and a.get("src"):
            self.urls.append(a["src"])
        elif tag == "script" and a.get("id") == "__config":
            self._config = True

    def handle_data(self, data):
        if self._config:
            self.config_text += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._config = False


@dataclass
class PageWeight:
    page: str
    html: int
    figures_svg: int
    figure_elements: int
    figure_markers: int
    assets: dict[str, int] = field(default_factory=dict)
    external: list[str] = field(default_factory=list)
    gzip_total: int = 0

    @property
    def total(self) -> int:
        return self.html + sum(self.assets.values())


def _file(site: Path, url_path: str) -> Path | None:
    relative = unquote(url_path).lstrip("/")
    candidate = site / relative
    if relative == "" or relative.endswith("/") or candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def pages(site: Path) -> list[str]:
    """Page paths from the sitemap, relative to the site root (``""`` is the home page)."""
    parser = _Assets()
    parser.feed((site / "index.html").read_text(encoding="utf-8"))
    published = parser.canonical or ""
    found = []
    for loc in ET.parse(site / "sitemap.xml").getroot().iter(f"{_SITEMAP_NS}loc"):
        url = (loc.text or "").strip()
        path = url[len(published):] if published and url.startswith(published) else urlsplit(url).path.lstrip("/")
        found.append(path)
    return found


def weigh(site: Path, page: str) -> PageWeight:
    html_file = _file(site, "/" + page)
    if html_file is None:
        raise FileNotFoundError(f"{page!r} is in the sitemap but not in {site}")
    text = html_file.read_text(encoding="utf-8")
    raw = html_file.read_bytes()
    figures = _FIGURE.findall(text)
    svgs = [svg for figure in figures for svg in _SVG.findall(figure)]
    weight = PageWeight(page=page or "(home)", html=len(raw), figures_svg=sum(len(s.encode()) for s in svgs),
                        figure_elements=max((len(_TAG.findall(s)) for s in svgs), default=0),
                        figure_markers=max((s.count("<use ") for s in svgs), default=0))
    parser = _Assets()
    parser.feed(text)
    page_url = "http://site/" + page
    queue = [urljoin(page_url, u) for u in parser.urls]
    config = json.loads(parser.config_text) if parser.config_text.strip() else {}
    if config:  # what Material's JavaScript fetches after the page has loaded
        base = urljoin(page_url, config.get("base", "."))
        base = base if base.endswith("/") else base + "/"
        if config.get("search"):
            queue += [urljoin(base, config["search"]), urljoin(base, "search/search_index.json")]
        if "navigation.instant" in config.get("features", []):
            queue.append(urljoin(base, "sitemap.xml"))
    compressed = gzip.compress(raw, mtime=0)
    weight.gzip_total = len(compressed)
    seen = set()
    while queue:
        url = queue.pop(0).split("#")[0]
        if not url or url in seen or url.startswith(("data:", "blob:")):
            continue
        seen.add(url)
        parts = urlsplit(url)
        if parts.netloc != "site":
            weight.external.append(url)
            continue
        asset = _file(site, parts.path)
        if asset is None:
            weight.external.append(f"{url} (missing)")
            continue
        data = asset.read_bytes()
        weight.assets[parts.path.lstrip("/")] = len(data)
        weight.gzip_total += len(gzip.compress(data, mtime=0))
        if asset.suffix == ".css":
            for match in _CSS_URL.finditer(data.decode("utf-8", errors="replace")):
                ref = match.group(2) or match.group(4)
                queue.append(urljoin(url, ref.strip()))
    return weight


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MB"


def table(weights: list[PageWeight]) -> str:
    headers = ["page", "HTML", "of which figure SVG", "largest figure: elements / <use>", "assets", "total",
               "total, gzip"]
    rows = [[w.page, _kb(w.html), _kb(w.figures_svg), f"{w.figure_elements} / {w.figure_markers}",
             f"{_kb(sum(w.assets.values()))} ({len(w.assets)} files)", _kb(w.total), _kb(w.gzip_total)]
            for w in weights]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: "| " + " | ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])  # noqa: E731
                                           for i, c in enumerate(cells)) + " |"
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def build(dest: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest)], cwd=ROOT,
                             env=env, capture_output=True, text=True)
    if process.returncode != 0:
        sys.stderr.write(process.stdout[-4000:] + process.stderr[-8000:])
        raise SystemExit(f"the strict build failed (exit {process.returncode})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="an existing build to measure (default: build one now)")
    parser.add_argument("--limit-mb", type=float, default=LIMIT_MB, help="largest allowed page, in MB")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="page-weight-") as scratch:
        site = args.site
        if site is None:
            site = Path(scratch) / "site"
            print("building the site (mkdocs build --strict)...", flush=True)
            build(site)
        weights = [weigh(site.resolve(), page) for page in pages(site.resolve())]

    print(table(weights))
    largest = max(weights, key=lambda w: w.total)
    print(f"\nlargest page: {largest.page} — {_kb(largest.total)} ({_kb(largest.gzip_total)} gzip); "
          f"target ≤ {args.limit_mb} MB per page")
    external = sorted({url for w in weights for url in w.external})
    if external:
        print("note: pages or their stylesheets refer to files that are not in the site (not counted; the browser "
              "tests show whether a page requests them):\n  " + "\n  ".join(external))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([{**w.__dict__, "total": w.total} for w in weights], indent=2) + "\n")
    limit = args.limit_mb * 1024 * 1024
    heavy = [w for w in weights if w.total > limit]
    for w in heavy:
        biggest = sorted(w.assets.items(), key=lambda kv: -kv[1])[:3]
        print(f"TOO HEAVY: {w.page} is {_kb(w.total)} (HTML {_kb(w.html)}; largest assets: "
              + ", ".join(f"{name} {_kb(size)}" for name, size in biggest) + ")", file=sys.stderr)
    return 1 if heavy else 0


if __name__ == "__main__":
    sys.exit(main())
