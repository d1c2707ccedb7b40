"""``python -m lib.grade``: the command that grades a class; the grader is :mod:`lib.classroom.grade`."""

import sys

from .classroom.grade import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
