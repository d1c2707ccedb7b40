"""The classroom: the student edition of the book, the grading of a class, and the example the instructor page shows.

Infrastructure for teachers, never displayed in a chapter. The modules, in the order a course uses them:

- :mod:`lib.classroom.student` writes the student edition (``make student``, ``python -m lib.classroom.student``):
  every chapter without its solutions, each exercise a starter cell;
- :mod:`lib.classroom.edition` is the notebook metadata that marks a student notebook (its chapter, version and
  exercises): the student edition writes it, the grader reads it;
- :mod:`lib.classroom.grade` grades the notebooks a class hands in (``python -m lib.grade``, kept as the command by
  ``lib/grade.py``), with the checkers of :mod:`lib.exercises`;
- :mod:`lib.classroom.chart` draws the grader's summary;
- :mod:`lib.classroom.example` grades the book's synthetic class for the instructor page
  (``python -m lib.classroom.example``).

The top layer of ``lib``: it may import :mod:`lib.exercises`, and nothing else in ``lib`` imports it (the import
contracts of ``pyproject.toml``). This ``__init__`` imports none of its modules.
"""

__all__: list[str] = []
