"""The documentation site builds with ``mkdocs build --strict`` (API reference and Chinese pages included) and
passes ``scripts/docs_check.py``: pages render, the search index finds ``layer_norm``, the language switch works.
Where a Chromium and the ``playwright`` package are present, ``scripts/docs_browser_check.py`` also checks the same
built site in a headless browser (search box, language switch, Chinese search); without them that test skips.

``make test`` installs the ``docs`` extra, so the build test never skips there. The GPU suite (the same files with
``GENESIS_TEST_DEVICE=cuda``) leaves both to the CPU run: the site does not depend on the device, and GPU machines
may have no package registry to install the docs extra from.
"""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import DEVICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
cpu_only = pytest.mark.skipif(DEVICE != "cpu", reason="the docs site is checked by the CPU suite (device-independent)")


def _browser_missing() -> str | None:
    """Why the browser check cannot run here (None when it can)."""
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (it comes with the docs extra)"
    if not any(os.path.exists(p) for p in (os.environ.get("GENESIS_CHROMIUM"), shutil.which("chromium"),
                                           shutil.which("chromium-browser")) if p):
        return "no Chromium (apt-get install chromium, or set GENESIS_CHROMIUM)"
    return None


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The site built once (strictly) and checked over HTTP by scripts/docs_check.py; its folder."""
    site = str(tmp_path_factory.mktemp("docs") / "site")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "docs_check.py"), "--build", "--site",
                             site], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "docs: all checks passed" in result.stdout
    return site


@cpu_only
def test_docs_site_builds_strict_and_checks(built_site: str) -> None:
    assert os.path.exists(os.path.join(built_site, "zh", "sitemap.xml"))  # the language switch fetches it


@cpu_only
@pytest.mark.skipif(_browser_missing() is not None, reason=f"headless browser check: {_browser_missing()}")
def test_docs_site_in_a_headless_browser(built_site: str) -> None:
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "docs_browser_check.py"), "--site",
                             built_site], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "docs browser check: all checks passed" in result.stdout
