"""The chapters' plumbing: what a chapter page runs but its reader need not read.

One module per chapter (``lib.book.self_attention``, ...): timing harnesses, batching and statistics helpers,
figure builders that only one chapter uses. The ideas themselves live in the modules a chapter shows
(``lib.attention``, ``lib.transformer``, ...); nothing else in ``lib`` imports this package.
"""

__all__: list[str] = []
