#!/usr/bin/env python3
"""Build the documentation site and check it as a reader would get it, over HTTP.

    scripts/docs_check.py [--build] [--site DIR]

With ``--build`` it first runs ``mkdocs build --strict`` into ``DIR`` (default ``site/``). Then it serves ``DIR``
on a local port and checks, for English and Chinese: every page of the navigation answers 200 with its title and
the Material layout (search box, palette toggle, copy buttons on code), the search index finds ``layer_norm`` in
the API reference, and the language switch of each translated page links to its counterpart, which exists and is
in the other language. It does not run the pages' JavaScript (no browser here): the search box's results and the
dark-mode toggle themselves are left to Material's own tests.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Pages with a Chinese translation (docs/<name>.zh.md).
TRANSLATED = ("index", "quickstart", "tensor", "autograd", "nn", "llm", "gpu")
REFERENCE_PAGES = ("genesis", "genesis-nn", "genesis-nn-functional", "genesis-optim", "genesis-cuda",
                   "genesis-profiler", "genesis-models")


def build(site: str) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (ROOT, env.get("PYTHONPATH"))))
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", site], cwd=ROOT, env=env,
                   check=True)


def serve(site: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200, f"{url}: HTTP {response.status}"
        return response.read().decode()


def check_page(base: str, path: str, lang: str) -> str:
    """Fetch one page and check it rendered with the Material layout in ``lang``; returns its HTML."""
    html = get(f"{base}/{path}")
    assert f'<html lang="{lang}"' in html, f"{path}: not a {lang} page"
    assert "<title>" in html and 'class="md-search__input"' in html, f"{path}: no title or search box"
    assert 'data-md-component="palette"' in html, f"{path}: no dark-mode toggle"
    assert 'class="md-content"' in html, f"{path}: no content"
    return html


def check(site: str) -> list[str]:
    """Run every check against the built ``site``; returns the lines of a report (raises on a failure)."""
    server, base = serve(site)
    report = []
    try:
        for lang, prefix in (("en", ""), ("zh", "zh/")):
            for name in TRANSLATED:
                path = prefix + ("" if name == "index" else f"{name}/")
                html = check_page(base, path, lang)
                other, other_lang = ("zh/", "zh") if lang == "en" else ("", "en")
                switch = re.search(rf'<a href="([^"]+)" hreflang="{other_lang}"', html)
                assert switch, f"{path}: no language switch to {other_lang}"
                target = os.path.normpath(os.path.join("/" + path, switch.group(1))).lstrip("/")
                expected = other + ("" if name == "index" else f"{name}")
                assert target.rstrip("/") == expected.rstrip("/"), f"{path}: switch goes to {target}, not {expected}"
                check_page(base, target + "/" if target else "", other_lang)
                if lang == "zh":
                    assert re.search(r"[\u4e00-\u9fff]{4}", html), f"{path}: no Chinese text"
            report.append(f"{lang}: {len(TRANSLATED)} translated pages render and switch language")
            for page in REFERENCE_PAGES:
                check_page(base, f"{prefix}reference/{page}/", lang)
            report.append(f"{lang}: the {len(REFERENCE_PAGES)} API reference pages render")
        # One search index serves both languages (Material's search plugin, told both languages by the i18n plugin).
        index = json.loads(get(f"{base}/search/search_index.json"))
        hits = [d["location"] for d in index["docs"] if d["location"].endswith("functional.layer_norm")]
        assert hits, "the search index has no entry for layer_norm"
        assert {"en", "zh"} <= set(index["config"]["lang"]), f"search languages: {index['config']['lang']}"
        report.append(f"search: the index ({len(index['docs'])} entries) finds layer_norm at {hits[0]}")
        html = check_page(base, "quickstart/", "en")
        assert "md-clipboard" in html or "content.code.copy" in html, "code blocks have no copy button"
    finally:
        server.shutdown()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="store_true", help="build the site first (mkdocs build --strict)")
    parser.add_argument("--site", default=os.path.join(ROOT, "site"), help="the built site's folder")
    args = parser.parse_args()
    if args.build:
        build(args.site)
    for line in check(args.site):
        print(line)
    print("docs: all checks passed")


if __name__ == "__main__":
    main()
