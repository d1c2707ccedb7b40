"""Write the Colab set-up cell into every chapter notebook, from the repository URL in ``_config.yml``.

The website's Colab button opens a chapter straight from the book's repository, on a machine that has
neither the book's library (``lib/``) nor its trained models. The first code cell of every chapter
therefore clones the repository and installs the library *when it runs on Colab*; anywhere else
(Jupyter, Binder, ``make test``) it does nothing. The cell is tagged ``remove-cell``, so the website
does not show it.

While ``repository.url`` is the placeholder the book ships with (:data:`PLACEHOLDER_URL`, a repository that does
not exist), there is nothing to clone: the website leaves out its launch buttons and repository button
(``tools/sphinxext/book_site.py``), and the portable notebooks that Colab opens (``tools/portable.py``) get
:func:`placeholder_source` instead, a cell that clones nothing and says what is missing. The chapters keep the
cell written from the URL, so setting the real URL is one line in ``_config.yml`` and this command.

Usage: ``python tools/colab_cell.py`` (after changing ``repository.url`` in ``_config.yml``), or
``python tools/colab_cell.py --check`` (exit 1 if a notebook's cell is missing or out of date; the tests
run the same check).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL_ID = "colab-setup"

# The repository URL the book ships with: it names no real repository. The one place that knows it.
PLACEHOLDER_URL = "https://github.com/attention-book/attention-book"

TEMPLATE = """# On Colab: fetch the book (its library and trained models) and install it. Elsewhere this does nothing.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    if not os.path.isdir("/content/attention-book"):
        subprocess.run(["git", "clone", "--depth", "1", "{url}", "/content/attention-book"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "/content/attention-book"], check=True)
    sys.path.insert(0, "/content/attention-book")
    os.chdir("/content/attention-book/chapters")"""

PLACEHOLDER_TEMPLATE = """# On Colab this cell would fetch the book's library and trained models from the book's
# repository, but the book was built with the placeholder repository URL, so there is none to fetch.
# Elsewhere this does nothing.
import sys

if "google.colab" in sys.modules:
    raise RuntimeError(
        "This notebook cannot fetch the book's library on Colab: the book was built while "
        "repository.url in _config.yml was the placeholder {url}. "
        "Open the notebook from a clone of the book with Jupyter (see the book's README), "
        "or set repository.url to the book's real repository and rebuild."
    )"""


def repository_url() -> str:
    """``repository.url`` from ``_config.yml`` (read with a regex: the file is simple YAML)."""
    text = (ROOT / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", text, flags=re.M)
    if match is None:
        raise SystemExit("tools/colab_cell.py: _config.yml has no repository.url")
    return match.group(1).strip("\"'")


def is_placeholder(url: str) -> bool:
    """True if ``url`` is the placeholder repository URL (trailing ``/`` or ``.git`` ignored)."""
    return url.strip().removesuffix("/").removesuffix(".git") == PLACEHOLDER_URL


def source() -> str:
    """The set-up cell's source for the configured repository (what the chapters hold)."""
    url = repository_url()
    return TEMPLATE.format(url=url + (".git" if not url.endswith(".git") else ""))


def placeholder_source() -> str:
    """The set-up cell for a book whose ``repository.url`` is the placeholder: it clones nothing and, on Colab,
    stops with a message that says why (the portable notebooks carry it; see the module docstring)."""
    return PLACEHOLDER_TEMPLATE.format(url=PLACEHOLDER_URL)


def toc_notebooks() -> list[Path]:
    """The chapter notebooks listed in ``_toc.yml``."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"file:\s*(\S+)", toc)
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


def expected_cell() -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": CELL_ID,
        "metadata": {"tags": ["remove-cell"]},
        "outputs": [],
        "source": source().splitlines(keepends=True),
    }


def update(path: Path, check: bool) -> bool:
    """Insert or refresh the cell right after the title cell; return True if the notebook was up to date."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb["cells"]
    want = expected_cell()
    index = next((i for i, c in enumerate(cells) if c.get("id") == CELL_ID), None)
    if (
        index == 1
        and "".join(cells[1]["source"]) == "".join(want["source"])
        and cells[1]["metadata"].get("tags") == ["remove-cell"]
    ):
        return True
    if check:
        return False
    if index is not None:
        want["execution_count"] = cells[index].get("execution_count")
        del cells[index]
    cells.insert(1, want)
    # Imported here: the build and tools/portable.py load this module for its constants, without torch.
    sys.path.insert(0, str(ROOT))
    from lib.files import atomic_write_text

    atomic_write_text(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook's set-up cell is missing or stale")
    args = parser.parse_args(argv)
    stale = [p.name for p in toc_notebooks() if not update(p, args.check)]
    if args.check:
        print("Colab set-up cells: " + ("up to date" if not stale else f"missing or stale in {', '.join(stale)}"))
        return 1 if stale else 0
    print(f"Colab set-up cell written into {len(stale)} notebook(s)" + (f": {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
