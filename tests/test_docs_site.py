"""The documentation site builds with ``mkdocs build --strict`` (API reference and Chinese pages included) and
passes ``scripts/docs_check.py``: pages render, the search index finds ``layer_norm``, the language switch works.

``make test`` installs the ``docs`` extra, so this test never skips there.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_docs_site_builds_strict_and_checks(tmp_path: object) -> None:
    site = os.path.join(str(tmp_path), "site")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "docs_check.py"), "--build", "--site",
                             site], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "docs: all checks passed" in result.stdout
