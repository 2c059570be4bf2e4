"""MkDocs hook: a ``sitemap.xml`` in each translated language's folder (``site/zh/sitemap.xml``).

Material's language switch fetches ``sitemap.xml`` under every alternate language's root, while mkdocs-static-i18n
writes one sitemap (all languages, with their alternates) at the site's root only: without a copy in ``zh/`` every
page load logs a 404 in the browser's console. The copy is the same file, which lists the pages of every language.
"""

from __future__ import annotations

import os
import shutil

from mkdocs.config.defaults import MkDocsConfig


def on_post_build(config: MkDocsConfig) -> None:
    """Copy the root ``sitemap.xml`` into the folder of every language built apart from the default one."""
    site = config["site_dir"]
    root = os.path.join(site, "sitemap.xml")
    if not os.path.exists(root):
        return
    for plugin in config["plugins"].values():
        for language in getattr(plugin, "config", {}).get("languages", None) or ():
            folder = os.path.join(site, language["locale"])
            if not language.get("default") and language.get("build", True) and os.path.isdir(folder):
                shutil.copyfile(root, os.path.join(folder, "sitemap.xml"))
