#!/usr/bin/env python3
"""Check the built documentation site in a headless browser: what a reader sees, JavaScript included.

    scripts/docs_browser_check.py [--build] [--site DIR] [--chromium PATH]

With ``--build`` it first builds the site into ``DIR`` (default ``site/``) as ``scripts/docs_check.py`` does. Then it
serves ``DIR`` on a local port from a thread and drives Chromium through playwright: the home page renders (title,
navigation, content, no console errors), typing ``layer_norm`` into the search box lists the API reference entry,
the language switch goes to the Chinese page and back with the page text changing language, and the Chinese site's
search finds a Chinese word on the Chinese page that holds it. It prints each check; on a failure it exits with
status 1 and says what failed.

Needs the ``playwright`` package (the ``docs`` extra) and a Chromium binary (``apt-get install chromium`` on Debian;
``--chromium`` or ``$GENESIS_CHROMIUM`` to point at another one). ``playwright install`` is not needed: the check
starts the given binary. Requests to other hosts (Material's web fonts) are not counted as errors, so the check
passes offline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from typing import Any
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_check import ROOT, build, serve  # the sibling script, found through the line above

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # main() says what is missing
    sync_playwright = None

# Chromium stalls on its background services when the network is closed: these flags turn them off.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The API reference entry that searching layer_norm must list.
LAYER_NORM = "reference/genesis-nn-functional/#genesis.nn.functional.layer_norm"
# A Chinese word in the middle of a sentence of the Chinese home page (jieba cuts it out as a word when the site is
# built), and that page.
CHINESE_WORD, CHINESE_PAGE = "框架", "zh/"
HAN = re.compile(r"[\u4e00-\u9fff]")
TIMEOUT_MS = 30000


class CheckFailed(Exception):
    """One check did not hold; the message says which and what was seen."""


def find_chromium(given: str | None) -> str | None:
    """The Chromium binary to start: ``given``, ``$GENESIS_CHROMIUM``, or ``chromium`` on the PATH."""
    for candidate in (given, os.environ.get("GENESIS_CHROMIUM"), shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Reader:
    """One browser page on the served site that records console errors and failed local requests."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.errors: list[str] = []
        self.ignored: set[str] = set()
        local = urlparse(base).netloc
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught exception: {exc}"))
        self.page.on("console", self._console)
        self.page.on("requestfailed", lambda request: self._failed(request.url, request.failure or "failed", local))
        self.page.on("response", lambda response: response.status >= 400
                     and self._failed(response.url, f"HTTP {response.status}", local))

    def _console(self, message: Any) -> None:
        # A failed resource is logged without its address: the request events above judge those.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(f"console error: {message.text}")

    def _failed(self, url: str, why: str, local: str) -> None:
        if urlparse(url).netloc == local:
            self.errors.append(f"{url}: {why}")
        else:
            self.ignored.add(urlparse(url).netloc)

    def open(self, path: str) -> None:
        self.page.goto(self.base + path, wait_until="networkidle", timeout=TIMEOUT_MS)

    def expect_no_errors(self, where: str) -> None:
        expect(not self.errors, f"{where}: " + "; ".join(self.errors))

    def search(self, query: str) -> list[str]:
        """Enter ``query`` into the search box and return the result links (paths relative to the site)."""
        self.page.reload(wait_until="networkidle", timeout=TIMEOUT_MS)  # no results of an earlier query on show
        box = self.page.locator("input.md-search__input")
        # Material reads the query on key events: the text is filled in (Chinese has no keys to type it with), then
        # End is pressed, as a reader's last keystroke.
        box.fill(query)
        box.press("End")
        meta = self.page.locator(".md-search-result__meta").element_handle()
        none = json.loads(self.page.text_content("#__config"))["translations"]["search.result.none"]
        # The line above the results counts them, or says there are none (in the page's language).
        self.page.wait_for_function("([el, none]) => /\\d/.test(el.textContent) || el.textContent === none",
                                    arg=[meta, none], timeout=TIMEOUT_MS)
        links = self.page.eval_on_selector_all(".md-search-result__item a", "els => els.map(e => e.href)")
        return [link.split("?")[0].replace(self.base, "") + ("#" + link.split("#", 1)[1] if "#" in link else "")
                for link in links]

    def text(self) -> str:
        return self.page.inner_text("main")


def check(site: str, chromium: str) -> list[str]:
    """Run every check against the built ``site``; returns the report lines (raises CheckFailed)."""
    server, base = serve(site)
    base += "/"
    report = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                reader = Reader(browser, base)
                reader.open("")
                title = reader.page.title()
                expect("Genesis" in title, f"home page: title {title!r} does not name Genesis")
                nav = reader.page.locator("nav.md-nav--primary").inner_text()
                expect("Quick start" in nav and "API reference" in nav, f"home page: navigation lacks its sections: "
                       f"{nav[:200]!r}")
                heading = reader.page.locator(".md-content h1").first.inner_text().strip().rstrip("¶")
                expect(heading != "", "home page: no heading in the content")
                reader.expect_no_errors("home page")
                report.append(f"home: renders (title {title!r}, heading {heading!r}, navigation with Quick "
                              "start and API reference, no console errors)")

                links = reader.search("layer_norm")
                expect(any(link.endswith(LAYER_NORM) for link in links),
                       f"search layer_norm: no result links to {LAYER_NORM}; results: {links[:10]}")
                report.append(f"search: layer_norm lists {LAYER_NORM} ({len(links)} result links)")
                reader.page.keyboard.press("Escape")

                english = reader.text()
                expect(not HAN.search(english), "home page: the English page shows Chinese text")
                reader.page.hover(".md-header__option .md-select")
                reader.page.click("a.md-select__link[hreflang=zh]")
                reader.page.wait_for_url(base + "zh/", timeout=TIMEOUT_MS)
                reader.page.wait_for_load_state("networkidle")
                chinese = reader.text()
                lang = reader.page.get_attribute("html", "lang")
                expect(lang == "zh", f"language switch: the page after switching has lang={lang!r}, not 'zh'")
                expect(len(HAN.findall(chinese)) > 50, "language switch: the Chinese page shows little Chinese text: "
                       f"{chinese[:200]!r}")
                reader.expect_no_errors("Chinese home page")
                report.append(f"language: English -> {reader.page.url.replace(base, '')} (lang zh, "
                              f"{len(HAN.findall(chinese))} Chinese characters)")

                links = reader.search(CHINESE_WORD)
                pages = {link.split("#")[0] for link in links}
                expect(CHINESE_PAGE in pages, f"Chinese search: {CHINESE_WORD} does not find {CHINESE_PAGE}; results: "
                       f"{links[:10]}")
                report.append(f"search (Chinese site): {CHINESE_WORD} finds {CHINESE_PAGE} (results on {len(pages)} "
                              f"page{'s' * (len(pages) != 1)}: {', '.join(sorted(pages))})")
                # The API reference is written in English; the Chinese site's search shows its entries.
                links = reader.search("layer_norm")
                expect(any(link.endswith(LAYER_NORM) for link in links),
                       f"Chinese search: layer_norm does not list {LAYER_NORM}; results: {links[:10]}")
                report.append(f"search (Chinese site): layer_norm lists {LAYER_NORM}")
                reader.page.keyboard.press("Escape")

                reader.page.hover(".md-header__option .md-select")
                reader.page.click("a.md-select__link[hreflang=en]")
                reader.page.wait_for_url(base, timeout=TIMEOUT_MS)
                reader.page.wait_for_load_state("networkidle")
                back = reader.text()
                lang = reader.page.get_attribute("html", "lang")
                expect(lang == "en" and not HAN.search(back), f"language switch back: lang={lang!r}, "
                       f"{len(HAN.findall(back))} Chinese characters")
                expect(back == english, "language switch back: the English page differs from the first visit")
                reader.expect_no_errors("language switch back")
                report.append("language: Chinese -> English (lang en, the same text as before)")
                if reader.ignored:
                    report.append(f"not counted: requests to other hosts ({', '.join(sorted(reader.ignored))})")
            finally:
                browser.close()
    finally:
        server.shutdown()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="store_true", help="build the site first (mkdocs build --strict)")
    parser.add_argument("--site", default=os.path.join(ROOT, "site"), help="the built site's folder")
    parser.add_argument("--chromium", help="the Chromium binary (default: $GENESIS_CHROMIUM, then the PATH)")
    args = parser.parse_args()
    chromium = find_chromium(args.chromium)
    if chromium is None:
        sys.exit("docs browser check: no Chromium found (apt-get install chromium, or pass --chromium)")
    if sync_playwright is None:
        sys.exit("docs browser check: the playwright package is missing (pip install -e '.[docs]')")
    if args.build:
        build(args.site)
    try:
        for line in check(args.site, chromium):
            print(f"ok: {line}")
    except CheckFailed as failure:
        print(f"FAILED: {failure}")
        sys.exit(1)
    print("docs browser check: all checks passed")


if __name__ == "__main__":
    main()
