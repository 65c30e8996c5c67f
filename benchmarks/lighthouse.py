"""Lighthouse: performance, accessibility, best practices and SEO of every page, as a phone sees them.

Every page in the built site's sitemap is served from 127.0.0.1 and audited by Lighthouse 12.2.3 with its
defaults (a mid-range phone, simulated 4G and a 4x slower CPU), in the light palette (a fresh browser's
choice). The server sends text files gzip-compressed, as the static hosts a site like this is published on do
(GitHub Pages, Netlify, nginx); ``--no-gzip`` sends them as they are on disk, as ``python -m http.server`` does,
which on simulated 4G costs about half a second of first paint per 100 KB of page. Each page is audited
``--runs`` times (default 2) and the best run is reported: Lighthouse's performance score swings by several
points on a busy machine, and the best run is the closest to what the page itself costs. Printed per page:
the four scores, Largest Contentful Paint and Total Blocking Time, and every audit that kept a category below
its target.

Targets: accessibility, best practices and SEO 100; performance ≥ 90; total blocking time ≤ 200 ms. Exits 1 when a page misses one, 2 when
Lighthouse or Chromium is missing.

Lighthouse is a Node package, installed beside this script (``benchmarks/node_modules`` is not committed)::

    npm install --prefix benchmarks --no-save --no-package-lock lighthouse@12.2.3

    python benchmarks/lighthouse.py                  # build the site (strict) into a temporary folder, then audit
    python benchmarks/lighthouse.py --site site/     # audit an existing build
    python benchmarks/lighthouse.py --page update-steps/ --runs 1

``CHROME_PATH`` chooses the browser (default ``/usr/bin/chromium``); ``LIGHTHOUSE`` the lighthouse executable.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from page_weight import build, pages

HERE = Path(__file__).resolve().parent
VERSION = "12.2.3"
INSTALL = f"npm install --prefix {HERE.relative_to(HERE.parent)} --no-save --no-package-lock lighthouse@{VERSION}"
CATEGORIES = {"performance": 90, "accessibility": 100, "best-practices": 100, "seo": 100}
TBT_TARGET_MS = 200  # total blocking time, at most
SHORT = {"performance": "perf", "accessibility": "a11y", "best-practices": "bp", "seo": "seo"}
CHROME_FLAGS = "--headless --no-sandbox --disable-gpu"
COMPRESSED = {".html", ".css", ".js", ".json", ".xml", ".svg", ".txt", ".py", ".map"}


class _StaticHost(http.server.SimpleHTTPRequestHandler):
    """Serves the site as a static host does (GitHub Pages, Netlify, nginx): text files gzip-compressed when the
    browser accepts it. ``compress = False`` sends every file as it is on disk."""

    compress = True

    def log_message(self, format, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            if not self.path.split("?")[0].endswith("/"):
                return super().send_head()  # the base class redirects /page to /page/
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (self.compress and accepts and path.suffix in COMPRESSED and path.is_file()):
            return super().send_head()
        body = _gzipped(path)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return io.BytesIO(body)


@functools.lru_cache(maxsize=None)
def _gzipped(path: Path) -> bytes:
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


@dataclass
class Audit:
    page: str
    scores: dict[str, int]
    lcp_ms: float
    tbt_ms: float
    failing: dict[str, list[str]] = field(default_factory=dict)  # category -> audits below a perfect score
    dom: int = 0  # DOM elements
    main_thread: dict[str, float] = field(default_factory=dict)  # the main thread's time, by kind of work (ms)
    scripts: list[tuple[str, float]] = field(default_factory=list)  # the scripts that ran longest (ms)

    def missed(self) -> list[str]:
        missed = [f"{SHORT[c]} {self.scores.get(c)} < {target}" for c, target in CATEGORIES.items()
                  if self.scores.get(c) is None or self.scores[c] < target]
        if math.isnan(self.tbt_ms) or self.tbt_ms > TBT_TARGET_MS:
            missed.append(f"TBT {self.tbt_ms:,.0f} ms > {TBT_TARGET_MS} ms")
        return missed


def find_lighthouse() -> str | None:
    for candidate in (os.environ.get("LIGHTHOUSE"), str(HERE / "node_modules" / ".bin" / "lighthouse"),
                      shutil.which("lighthouse")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _version(lighthouse: str) -> str:
    process = subprocess.run([lighthouse, "--version"], capture_output=True, text=True)
    return process.stdout.strip()


def _failing(report: dict) -> dict[str, list[str]]:
    """The audits that cost each category points: title, score and the first offending elements."""
    failing = {}
    for name, category in report["categories"].items():
        lines = []
        for ref in category["auditRefs"]:
            if not ref.get("weight"):
                continue
            audit = report["audits"][ref["id"]]
            score = audit.get("score")
            if score is None or score >= 1:
                continue
            line = f"{ref['id']} ({score:.2f})"
            if audit.get("displayValue"):
                line += f" {audit['displayValue']}"
            items = (audit.get("details") or {}).get("items") or []
            nodes = [item["node"].get("selector") or item["node"].get("snippet") for item in items[:3]
                     if isinstance(item.get("node"), dict)]
            if nodes:
                line += ": " + ", ".join(str(n) for n in nodes)
            lines.append(line)
        if lines:
            failing[name] = lines
    return failing


def audit(lighthouse: str, url: str, page: str, chrome: str, workdir: Path, keep: Path | None = None) -> Audit:
    out = workdir / "report.json"
    command = [lighthouse, url, "--quiet", "--output=json", f"--output-path={out}",
               "--only-categories=" + ",".join(CATEGORIES), f"--chrome-flags={CHROME_FLAGS}",
               "--max-wait-for-load=90000"]
    env = {**os.environ, "CHROME_PATH": chrome}
    process = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if process.returncode != 0 or not out.is_file():
        raise RuntimeError(f"lighthouse failed on {url} (exit {process.returncode}):\n{process.stderr[-3000:]}")
    report = json.loads(out.read_text(encoding="utf-8"))
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(out, keep)
    else:
        out.unlink()
    if report.get("runtimeError"):
        raise RuntimeError(f"lighthouse could not audit {url}: {report['runtimeError']}")
    scores = {name: round(100 * c["score"]) if c.get("score") is not None else None
              for name, c in report["categories"].items()}
    audits = report["audits"]
    work = {item["group"]: item["duration"] for item in
            ((audits.get("mainthread-work-breakdown") or {}).get("details") or {}).get("items", [])}
    scripts = [(item["url"].rsplit("/", 1)[-1] or item["url"], item["total"]) for item in
               ((audits.get("bootup-time") or {}).get("details") or {}).get("items", [])[:3]]
    return Audit(page=page or "(home)", scores=scores, lcp_ms=_metric(report, "largest-contentful-paint"),
                 tbt_ms=_metric(report, "total-blocking-time"), failing=_failing(report),
                 dom=int(_metric(report, "dom-size")) if not math.isnan(_metric(report, "dom-size")) else 0,
                 main_thread=work, scripts=scripts)


def _metric(report: dict, name: str) -> float:
    """A metric in milliseconds; NaN when Lighthouse could not compute it (its score is then null too)."""
    return float(report["audits"].get(name, {}).get("numericValue", math.nan))


def best(runs: list[Audit]) -> Audit:
    """The run with the highest performance score (then the lowest blocking time), with each category's best."""
    top = max(runs, key=lambda a: (a.scores.get("performance") or 0, -a.tbt_ms if not math.isnan(a.tbt_ms) else -1e9))
    scores = {c: max((a.scores.get(c) or 0) for a in runs) for c in CATEGORIES}
    failing = {c: lines for c, lines in top.failing.items() if scores[c] < 100}
    return Audit(page=top.page, scores=scores, lcp_ms=top.lcp_ms, tbt_ms=top.tbt_ms, failing=failing, dom=top.dom,
                 main_thread=top.main_thread, scripts=top.scripts)


def table(audits: list[Audit], runs: int) -> str:
    headers = ["page", "perf", "a11y", "bp", "seo", "LCP", "TBT", "DOM", "main thread: top costs",
               f"perf of each run ({runs})"]
    rows = []
    for a, every in audits:
        top = ", ".join(f"{group} {ms:,.0f}" for group, ms in
                        sorted(a.main_thread.items(), key=lambda kv: -kv[1])[:3]) + " ms"
        rows.append([a.page, *(str(a.scores.get(c)) for c in CATEGORIES), f"{a.lcp_ms / 1000:.1f} s",
                     f"{a.tbt_ms:,.0f} ms", f"{a.dom:,}", top,
                     " / ".join(str(r.scores.get("performance")) for r in every)])
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: "| " + " | ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])  # noqa: E731
                                           for i, c in enumerate(cells)) + " |"
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="an existing build to audit (default: build one now)")
    parser.add_argument("--runs", type=int, default=2, help="audits per page; the best is reported (default 2)")
    parser.add_argument("--page", action="append", help="audit only this page (as the sitemap names it: "
                                                         "'' for home, 'update-steps/'); repeatable")
    parser.add_argument("--json", type=Path, help="also write every run's scores to this file")
    parser.add_argument("--reports", type=Path, help="keep each run's full Lighthouse report (JSON) in this folder")
    parser.add_argument("--no-gzip", action="store_true",
                        help="send files uncompressed (as `python -m http.server` does) instead of as a static host")
    args = parser.parse_args(argv)

    lighthouse = find_lighthouse()
    if lighthouse is None:
        print(f"Lighthouse is not installed. Install it (Node 18+) with:\n  {INSTALL}\n"
              "or point LIGHTHOUSE=/path/to/lighthouse at one.", file=sys.stderr)
        return 2
    chrome = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(chrome, os.X_OK):
        print(f"No Chromium at {chrome}: install it (Debian: apt-get install chromium) or set CHROME_PATH.",
              file=sys.stderr)
        return 2
    version = _version(lighthouse)
    if version != VERSION:
        print(f"note: lighthouse {version}, not the {VERSION} these targets were set with", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="lighthouse-") as scratch:
        site = args.site
        if site is None:
            site = Path(scratch) / "site"
            print("building the site (mkdocs build --strict)...", flush=True)
            build(site)
        site = site.resolve()
        selected = pages(site) if args.page is None else [p.strip("/") + "/" if p.strip("/") else "" for p in args.page]
        handler = functools.partial(type("Host", (_StaticHost,), {"compress": not args.no_gzip}),
                                    directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        results, record = [], []
        try:
            for page in selected:
                every = []
                for run in range(args.runs):
                    keep = None
                    if args.reports:
                        keep = args.reports / f"{page.strip('/').replace('/', '__') or 'home'}-{run + 1}.json"
                    every.append(audit(lighthouse, base + page, page, chrome, Path(scratch), keep))
                    print(f"  /{page} run {run + 1}: " + ", ".join(
                        f"{SHORT[c]} {every[-1].scores.get(c)}" for c in CATEGORIES)
                        + f", LCP {every[-1].lcp_ms / 1000:.1f} s, TBT {every[-1].tbt_ms:,.0f} ms", flush=True)
                results.append((best(every), every))
                record.append({"page": page, "runs": [r.__dict__ for r in every]})
        finally:
            server.shutdown()
            server.server_close()

    print(f"\nLighthouse {version}, mobile defaults, best of {args.runs} run(s) per page:\n")
    print(table(results, args.runs))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    missed = [(a, a.missed()) for a, _ in results if a.missed()]
    for a, reasons in missed:
        print(f"\nMISSED on {a.page}: {', '.join(reasons)}", file=sys.stderr)
        for category, lines in a.failing.items():
            for line in lines[:8]:
                print(f"  {SHORT[category]}: {line}", file=sys.stderr)
    for a, _ in results:
        print(f"/{a.page}: longest scripts " + ", ".join(f"{name} {ms:,.0f} ms" for name, ms in a.scripts))
    print("\ntargets: " + ", ".join(f"{SHORT[c]} ≥ {t}" for c, t in CATEGORIES.items()) + f", TBT ≤ {TBT_TARGET_MS} ms"
          + (" — all met" if not missed else f" — missed on {len(missed)} page(s)"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
