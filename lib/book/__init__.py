"""The chapters' plumbing: what a chapter page runs but its reader need not read.

One module per chapter (``lib.book.self_attention``, ...): timing harnesses, batching and statistics helpers,
figure builders that only one chapter uses. The ideas themselves live in the modules a chapter shows
(``lib.attention``, ``lib.transformer``, ...); nothing else in ``lib`` imports this package.
"""

from __future__ import annotations

import os

__all__ = ["STORING_ENV", "storing_outputs"]

#: Set to ``1`` by ``make execute`` while it stores the chapters' outputs on the author's quiet 2-core machine.
STORING_ENV = "ATTENTION_BOOK_STORING"


def storing_outputs() -> bool:
    """Whether this run stores the chapters' outputs (``make execute``), so that wall-clock claims are checked.

    A duration the prose states ("about a minute on one CPU thread") holds on the machine the outputs were
    stored on, not on a reader's laptop, a GPU or a busy test machine: the chapters check such claims only in
    this run, and every other run (a reader's, nbval, the student edition) goes on.

    Returns:
        True when the environment variable ``ATTENTION_BOOK_STORING`` (:data:`STORING_ENV`) is ``1``.
    """
    return os.environ.get(STORING_ENV) == "1"
