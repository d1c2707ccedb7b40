"""Wall-clock time to execute each chapter notebook top to bottom, as a reader (or a class) runs it.

Executes the notebooks of ``_toc.yml`` one after another with nbclient into a temporary folder (the
committed notebooks are not touched), in the chapter folder like ``make execute``, and prints a table.
``--cold`` points the user cache (``XDG_CACHE_HOME``) at an empty folder first, so the chapters that cache
small trained models (the tokenizer, the reversal experiments, the tiny BERT/GPT) train them: what a fresh
machine sees. The instructor page's run-time table comes from this script.

    MULTI30K_DIR=/path/to/multi30k python bench/chapter_times.py [--cold] [chapter ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from lib.files import atomic_write_text, strict_json

ROOT = Path(__file__).resolve().parent.parent


def toc_chapters() -> list[str]:
    files = re.findall(r"file:\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [Path(f).name for f in files if (ROOT / f"{f}.ipynb").exists()]


def run(chapter: str, timeout: int) -> float:
    """Seconds to execute ``chapters/<chapter>.ipynb`` in its folder (raises if a cell fails)."""
    nb = nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "chapters")}}
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter in _toc.yml)")
    parser.add_argument("--cold", action="store_true", help="start from an empty user cache (XDG_CACHE_HOME)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    parser.add_argument("--json", type=Path, help="also write {chapter: seconds} here")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
    if args.cold:
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="chapter-times-cache-")
    times = {}
    for chapter in args.chapters or toc_chapters():
        times[chapter] = run(chapter, args.timeout)
        print(f"{chapter:24s} {times[chapter]:7.1f} s", flush=True)
    print(
        f"{'total':24s} {sum(times.values()):7.1f} s  ({'cold' if args.cold else 'warm'} cache, {os.cpu_count()} CPUs)"
    )
    if args.json:
        atomic_write_text(args.json, strict_json(times, indent=1, nan="warn"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
