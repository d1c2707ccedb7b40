"""Internal link check of the built site: every link and asset that a page names inside the site exists,
and every ``#anchor`` it jumps to is an id on the target page. (External links are not followed: the
machines that build the book have no network. ``-n`` in the build already checks Sphinx references.)
"""

from __future__ import annotations

import html.parser
import posixpath
import urllib.parse
from functools import cache

import pytest

from .conftest import SITE, built_pages


class _Refs(html.parser.HTMLParser):
    """Collects the ids of a page and the URLs in its href/src attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src") and not (tag == "a" and name == "src"):
                self.urls.append(value)


@cache
def _parse(rel: str) -> _Refs:
    refs = _Refs()
    refs.feed((SITE / rel).read_text(encoding="utf-8"))
    return refs


def _targets(page: str) -> list[tuple[str, str, str]]:
    """(url as written, target file relative to the site, fragment) for each internal URL of ``page``."""
    out = []
    for url in _parse(page).urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:", "data:")):
            continue  # external, or not a file
        path = urllib.parse.unquote(parts.path)
        if path == "":
            target = page  # "#anchor" on the same page
        else:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
            if path.endswith("/"):
                target = posixpath.join(target, "index.html")
        out.append((url, target, urllib.parse.unquote(parts.fragment)))
    return out


PAGES = built_pages()


def test_the_site_is_built():
    assert PAGES, f"no built website in {SITE}: run `make book` first"


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(page):
    missing, bad_anchor = [], []
    for url, target, fragment in _targets(page):
        file = SITE / target
        if target.startswith("..") or not file.exists():
            missing.append(url)
        elif fragment and target.endswith(".html") and fragment not in _parse(target).ids:
            bad_anchor.append(url)
    assert not missing, f"{page}: links to missing files: {sorted(set(missing))[:10]}"
    assert not bad_anchor, f"{page}: links to missing anchors: {sorted(set(bad_anchor))[:10]}"


def test_every_chapter_offers_its_notebook_for_download():
    """The download button's .ipynb link: the notebook's source is published next to the page."""
    chapters = [
        p for p in PAGES if p.startswith("chapters/") and (SITE.parent.parent / p).with_suffix(".ipynb").exists()
    ]
    assert chapters
    for page in chapters:
        ipynb = [u for u, t, _ in _targets(page) if t.endswith(".ipynb")]
        assert ipynb, f"{page} has no link to its .ipynb"


def _repository_url() -> str:
    import re

    config = (SITE.parent.parent / "_config.yml").read_text(encoding="utf-8")
    return re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", config, flags=re.M).group(1).strip("\"'")


def _is_placeholder(url: str) -> bool:
    """tools/colab_cell.py decides (the one place that knows the placeholder URL)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("colab_cell_links", SITE.parent.parent / "tools" / "colab_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.is_placeholder(url)


LAUNCH_PREFIXES = ("https://colab.research.google.com/", "https://mybinder.org/")


def test_every_chapter_has_binder_and_colab_launch_buttons():
    """Launch buttons open the chapter's own notebook from the repository named in _config.yml; while that is the
    placeholder (a repository that does not exist) there are none, and no repository button, so no dead link."""
    url = _repository_url()
    chapters = [
        p for p in PAGES if p.startswith("chapters/") and (SITE.parent.parent / p).with_suffix(".ipynb").exists()
    ]
    assert chapters
    if _is_placeholder(url):
        for page in PAGES:
            urls = _parse(page).urls
            dead = [u for u in urls if u.startswith(LAUNCH_PREFIXES) or u.rstrip("/").removesuffix(".git") == url]
            assert not dead, f"{page}: links to the placeholder repository {url}: {dead}"
        return
    repo = url.removeprefix("https://github.com/").removesuffix(".git").strip("/")
    for page in chapters:
        # the launch buttons open the portable copy (tools/portable.py), which every notebook front end renders
        nb = "notebooks/" + page.removesuffix(".html").removeprefix("chapters/") + ".ipynb"
        urls = _parse(page).urls
        colab = [u for u in urls if u.startswith("https://colab.research.google.com/github/")]
        binder = [u for u in urls if u.startswith("https://mybinder.org/v2/gh/")]
        assert colab == [f"https://colab.research.google.com/github/{repo}/blob/main/{nb}"], f"{page}: {colab}"
        assert (
            len(binder) == 1
            and binder[0].startswith(f"https://mybinder.org/v2/gh/{repo}/main?")
            and binder[0].endswith(nb)
        ), f"{page}: {binder}"
