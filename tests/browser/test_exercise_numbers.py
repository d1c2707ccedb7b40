"""Exercises are numbered within their chapter on the built site: every chapter page's exercises read "Exercise 1",
"Exercise 2", ... in page order, each solution's title names its own exercise's number, and the sidebar does not
number the chapters (``tools/sphinxext/book_site.py`` renumbers what Sphinx numbers across the book). Reads
``_build/html`` (``make book``); needs no browser.
"""

from __future__ import annotations

import html
import re

import pytest

from .conftest import SITE, chapter_pages

CHAPTERS = chapter_pages()
CAPTION = re.compile(r'<span class="caption-number">Exercise (\d+) </span>')
# A solution's title: "Solution to" and a link to its exercise, whose text is " Exercise N" (sphinx-exercise).
SOLUTION = re.compile(r'Solution to<a class="reference internal" href="#([^"]+)">\s*Exercise (\d+)')
EXERCISE_ID = re.compile(r'<div class="exercise(?: [\w-]+)* admonition" id="([^"]+)">')  # a break-it adds its class


def _page(page: str) -> str:
    return (SITE / page).read_text(encoding="utf-8")


def test_there_are_chapter_pages_with_exercises():
    assert CHAPTERS, f"no built website in {SITE}: run `make book` first"
    assert sum(bool(CAPTION.search(_page(p))) for p in CHAPTERS) >= 5


@pytest.mark.parametrize("page", CHAPTERS)
def test_exercises_are_numbered_from_1_on_every_chapter_page(page):
    text = _page(page)
    numbers = [int(n) for n in CAPTION.findall(text)]
    assert numbers == list(range(1, len(numbers) + 1)), f"{page}: exercise numbers {numbers}"
    # Each exercise's id, in page order, and the number its solution's title gives it.
    ids = EXERCISE_ID.findall(text)
    assert len(ids) == len(numbers), f"{page}: {len(ids)} exercise blocks, {len(numbers)} numbers"
    number_of = {ident: i for i, ident in enumerate(ids, start=1)}
    for target, number in SOLUTION.findall(html.unescape(text)):
        assert target in number_of, f"{page}: a solution links to #{target}, which is no exercise of the page"
        assert int(number) == number_of[target], f"{page}: the solution to #{target} says Exercise {number}"


def test_the_sidebar_does_not_number_the_chapters():
    text = _page(CHAPTERS[0]) if CHAPTERS else ""
    sidebar = re.search(r'<nav class="[^"]*bd-docs-nav[^"]*"[^>]*>(.*?)</nav>', text, re.S)
    assert sidebar, "no sidebar navigation found"
    titles = re.findall(r'class="reference internal" href="[^"]*">([^<]+)<', sidebar.group(1))
    assert titles and not [t for t in titles if re.match(r"\s*\d+(\.\d+)*\.?\s", t)], titles
