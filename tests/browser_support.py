"""What the browser tests need that is not a test: the built site's pages, a local server, and a link check.

Pages are read from the built site itself (its sitemap and the navigation of its home page), so a page added
to ``mkdocs.yml`` is tested without anyone editing a list. The link check reads the HTML files directly.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit

_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
_SKIP_SCHEMES = ("mailto:", "tel:", "javascript:", "data:", "blob:")
_SVG_REF = re.compile(r"url\(\s*#([^)\s]+)\s*\)")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the test output clean
        pass


class SiteServer:
    """The built site on ``http://127.0.0.1:<free port>/``, served by threads (as a static host would)."""

    def __init__(self, root: Path):
        handler = functools.partial(_Handler, directory=str(root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="site-server", daemon=True)

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> "SiteServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Document(HTMLParser):
    """Every id (and ``<a name>``) of an HTML file, and every URL it points at, with the tag that holds it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.nav: list[str] = []  # hrefs of the primary navigation's links
        self.canonical: str | None = None
        self._nav_depth = 0
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attributes.get(name):
                self.ids.add(attributes[name])
        for name in ("href", "src", "xlink:href", "data", "poster"):
            value = attributes.get(name)
            if value is not None:
                self.refs.append((tag, name, value.strip()))
        for name in ("clip-path", "mask", "filter", "fill", "marker-start", "marker-mid", "marker-end"):
            for fragment in _SVG_REF.findall(attributes.get(name) or ""):
                self.refs.append((tag, name, "#" + fragment))
        if tag == "link" and "canonical" in (attributes.get("rel") or "").split():
            self.canonical = attributes.get("href")
        classes = (attributes.get("class") or "").split()
        if tag == "nav" and "md-nav--primary" in classes and not self._nav_depth:
            self._nav_depth = 1
        elif self._nav_depth and tag not in _VOID:
            self._nav_depth += 1
        if self._nav_depth and tag == "a" and "md-nav__link" in classes and attributes.get("href"):
            self.nav.append(attributes["href"])

    def handle_startendtag(self, tag, attrs):  # <tag/>: no end tag will close it
        self.handle_starttag(tag, attrs)
        if self._nav_depth > 1 and tag not in _VOID:
            self._nav_depth -= 1

    def handle_endtag(self, tag):
        if self._nav_depth and tag not in _VOID:
            self._nav_depth -= 1


@functools.lru_cache(maxsize=None)
def parse_html(path: Path) -> _Document:
    document = _Document()
    document.feed(path.read_text(encoding="utf-8"))
    document.close()
    return document


def site_url(site: Path) -> str:
    """The URL the site is published at, as the home page's canonical link says (``""`` when there is none)."""
    return parse_html(site / "index.html").canonical or ""


def page_of(url_path: str) -> str:
    """A page's path inside the site as the tests name it: ``""`` for the home page, else ``"seeding-order/"``."""
    path = url_path.lstrip("/")
    if path.endswith("index.html"):
        path = path[: -len("index.html")]
    return path


def discover_pages(site: Path) -> tuple[list[str], list[str]]:
    """(pages the site lists, pages linked from the home page's navigation), each as :func:`page_of` names them.
    The site lists its pages in its sitemap when it was built with ``SITE_URL``, else in its search indexes."""
    published = site_url(site)
    sitemap = []
    if not (site / "sitemap.xml").is_file():
        return indexed_pages(site), _nav_pages(site)
    tree = ET.parse(site / "sitemap.xml")
    for loc in tree.getroot().iter(f"{_SITEMAP_NS}loc"):
        url = (loc.text or "").strip()
        if published and url.startswith(published):
            sitemap.append(page_of(url[len(published):]))
        else:
            sitemap.append(page_of(urlsplit(url).path))
    return sitemap, _nav_pages(site)


def indexed_pages(site: Path) -> list[str]:
    """Every page the search indexes of the site's editions (``search/``, ``zh/search/``) locate."""
    pages = []
    for index in sorted(site.glob("search/search_index.json")) + sorted(site.glob("*/search/search_index.json")):
        prefix = index.parent.parent.relative_to(site).as_posix()
        prefix = "" if prefix == "." else f"{prefix}/"
        for doc in json.loads(index.read_text(encoding="utf-8"))["docs"]:
            page = prefix + doc["location"].split("#", 1)[0]
            if page not in pages:
                pages.append(page)
    return pages


def _nav_pages(site: Path) -> list[str]:
    nav = []
    # the home page of each edition: the default language at the root, the others in their folders (zh/)
    homes = [""] + sorted(f"{folder.name}/" for folder in site.iterdir()
                          if folder.is_dir() and re.fullmatch(r"[a-z]{2}", folder.name)
                          and (folder / "index.html").is_file())
    for home in homes:
        for href in parse_html(site / home / "index.html").nav:
            target = urlsplit(urljoin(f"http://site/{home}", href))
            if target.netloc == "site" and page_of(target.path) not in nav:
                nav.append(page_of(target.path))
    return nav


def _file_for(site: Path, url_path: str) -> Path | None:
    """The file a static server sends for ``url_path`` (a path from the site root), or None."""
    relative = unquote(url_path).lstrip("/")
    candidate = site / relative
    if relative == "" or relative.endswith("/") or candidate.is_dir():
        candidate = candidate / "index.html"
    try:
        candidate.resolve().relative_to(site.resolve())
    except ValueError:
        return None
    return candidate if candidate.is_file() else None


def broken_links(site: Path) -> list[str]:
    """Every internal link, asset and anchor of the built site that does not resolve, one line each.

    Checked: ``href``/``src``/``xlink:href`` of every HTML file (fragments must be an ``id`` of the target page),
    SVG ``url(#…)`` references, the sitemap's pages, and the search index's locations (what search results link
    to). Links to the published address (``site_url``) are checked as the same site.
    """
    published = site_url(site)
    prefix = urlsplit(published).path if published else "/"
    problems: list[str] = []

    def check(source: str, page_url: str, value: str, what: str) -> None:
        if not value or value.startswith(_SKIP_SCHEMES):
            return
        relative = value
        if published and value.startswith(published):
            relative, page_url = "/" + value[len(published):], "/"
        target = urlsplit(urljoin("http://site" + page_url, relative))
        if target.scheme not in ("http", "https") or target.netloc != "site":
            return  # another host: the browser tests make sure no page loads from one
        path = target.path
        if prefix != "/" and path.startswith(prefix):
            path = "/" + path[len(prefix):]
        file = _file_for(site, path)
        if file is None:
            problems.append(f"{source}: {what} {value!r} -> {path} does not exist")
            return
        fragment = unquote(target.fragment)
        if fragment and file.suffix == ".html" and fragment not in parse_html(file).ids:
            problems.append(f"{source}: {what} {value!r} -> no id {fragment!r} in {file.relative_to(site)}")

    for file in sorted(site.rglob("*.html")):
        relative = file.relative_to(site).as_posix()
        page_url = "/" + relative[: -len("index.html")] if relative.endswith("index.html") else "/" + relative
        for tag, attribute, value in parse_html(file).refs:
            check(relative, page_url, value, f"<{tag} {attribute}>")
    sitemap, _ = discover_pages(site)
    for page in sitemap:
        if _file_for(site, "/" + page) is None:
            problems.append(f"sitemap.xml: page {page!r} does not exist")
    for index in [site / "search" / "search_index.json", *sorted(site.glob("*/search/search_index.json"))]:
        if index.is_file():  # each language's index, its locations relative to its own folder
            where = "/" + index.relative_to(site).parent.parent.as_posix().strip(".") + "/"
            for doc in json.loads(index.read_text(encoding="utf-8"))["docs"]:
                check(index.relative_to(site).as_posix(), where.replace("//", "/"), doc["location"], "location")
    return problems


def slug(page: str) -> str:
    """A file-name-safe name for a page (``home`` for the site root)."""
    name = PurePosixPath(page).as_posix().strip("/").replace("/", "__")
    return "home" if name in ("", ".") else name  # PurePosixPath("") is "."
