"""The built website never names a source document by its file number ("seed 001"): a plain scan of the files
of ``_build/html`` (every page, and the search index, which a reader's search queries), no browser needed.
tests/chapters/test_reader_text.py checks the same on the sources of the book."""

from __future__ import annotations

import re

import pytest

from .conftest import SITE

FILE_NAME = re.compile(r"seeds?[ _-]?0\d\d|seeds/|seed documents?", re.IGNORECASE)


def _site_files():
    if not SITE.is_dir():
        return []
    return sorted(SITE.rglob("*.html")) + sorted(SITE.glob("searchindex.js"))


@pytest.mark.skipif(not SITE.is_dir(), reason=f"no built website in {SITE}: run `make book` first")
def test_built_site_names_no_source_file():
    files = _site_files()
    assert files, f"{SITE} holds no HTML page"
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [
            f"{path.relative_to(SITE)}: {text[max(0, m.start() - 60) : m.end() + 40]!r}"
            for m in FILE_NAME.finditer(text)
        ]
    assert not found, f"{len(found)} place(s) in the built site name a source by its file:\n" + "\n".join(found[:50])
