"""The student edition's notebook metadata: :mod:`lib.classroom.student` writes it, :mod:`lib.classroom.grade` reads it.

Every notebook of the student edition carries ``metadata["student_edition"]`` (:data:`EDITION_KEY`), a dict::

    {"edition": "student", "chapter": "preliminaries", "source": "chapters/preliminaries.ipynb",
     "book_version": "0.1.0", "exercises": ["matvec", "softmax_stable", ...]}

- ``edition``: always ``"student"``;
- ``chapter``: the chapter's file stem, so that a renamed file is still recognised;
- ``source``: the chapter's path in the repository (the first editions wrote only this key);
- ``book_version``: the book's version when the edition was made;
- ``exercises``: the names of the exercises that have a starter cell, so that the grader can tell an older
  edition that lacks a newer exercise;
- ``student`` (optional, never written by the tool): a teacher may add the student's name, which wins over the
  file's name.

:func:`edition_metadata` makes the dict; :func:`read_edition` reads it back from a notebook, whatever a student or
an older edition left there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

__all__ = ["EDITION_KEY", "Edition", "edition_metadata", "read_edition"]

#: The key of the notebook metadata that marks a student notebook and holds what :func:`edition_metadata` makes.
EDITION_KEY = "student_edition"


def edition_metadata(chapter: str, source: str, book_version: str, exercises: Sequence[str]) -> dict[str, Any]:
    """The ``metadata[EDITION_KEY]`` of a student notebook (see the module docstring).

    Args:
        chapter: the chapter's file stem, e.g. ``"preliminaries"``.
        source: the chapter's path in the repository, e.g. ``"chapters/preliminaries.ipynb"``.
        book_version: the book's version.
        exercises: the names of the exercises that have a starter cell, in the notebook's order.

    Returns:
        The dict, with the keys ``edition``, ``chapter``, ``source``, ``book_version`` and ``exercises``.
    """
    return {
        "edition": "student",
        "chapter": chapter,
        "source": source,
        "book_version": book_version,
        "exercises": list(exercises),
    }


@dataclass(frozen=True)
class Edition:
    """What a notebook's ``metadata[EDITION_KEY]`` says, read by :func:`read_edition`.

    Attributes:
        chapter: the chapter's file stem: its ``chapter``, else the stem of its ``source``; None when neither is a
            non-empty string.
        records_chapter: the metadata has a ``chapter`` key (editions made before it record neither their chapter
            nor their exercises).
        exercises: its ``exercises`` list, or None when it has none (an older edition).
        book_version: its ``book_version`` when that is a string, else None.
        student: its ``student`` name, stripped, when that is a non-blank string, else None.
    """

    chapter: str | None
    records_chapter: bool
    exercises: list[Any] | None
    book_version: str | None
    student: str | None


def read_edition(nb: dict) -> Edition | None:
    """The edition metadata of a notebook, or None when it has none (a notebook made by hand, the book's own).

    Never raises for odd metadata: a value of the wrong type is read as missing.

    Args:
        nb: the notebook (a dict, as read by ``json`` or ``nbformat``).

    Returns:
        An :class:`Edition`, or None when ``metadata[EDITION_KEY]`` is missing or not a dict.
    """
    meta = nb.get("metadata", {}).get(EDITION_KEY)
    if not isinstance(meta, dict):
        return None
    source = meta.get("source")
    chapter = meta.get("chapter") or (PurePath(source).stem if isinstance(source, str) else "")
    student = meta.get("student")
    return Edition(
        chapter=chapter if isinstance(chapter, str) and chapter else None,
        records_chapter="chapter" in meta,
        exercises=meta["exercises"] if isinstance(meta.get("exercises"), list) else None,
        book_version=meta["book_version"] if isinstance(meta.get("book_version"), str) else None,
        student=student.strip() if isinstance(student, str) and student.strip() else None,
    )
