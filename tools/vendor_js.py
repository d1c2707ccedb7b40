"""Fetch the JavaScript the website loads, so that the built site works with no network.

The book's pages load one third-party script: MathJax 3, which typesets the maths. Sphinx's default
loads it from a public CDN, so a site served from a school's intranet or opened offline shows raw
``$...$``. This script fetches a pinned MathJax release from the npm registry with the ``npm`` client
(``npm pack``, which uses whatever registry npm is configured for), checks the tarball against the
sha512 recorded below, and copies only the files the site loads into ``_vendor/`` (about 5 MB of the
package's 24 MB). ``_config.yml`` points Sphinx at them (``html_static_path: [_vendor]``,
``mathjax_path``), so ``jupyter-book build`` copies them into ``_build/html/_static/``.

One page, the live translation page (``chapters/translate_live.md``), also loads two more packages, and
only that page loads them (its own script imports them when it opens):

- ``onnxruntime-web`` runs the exported model (``lib.export``): only its WebAssembly build, as one ES
  module that carries its loader (``ort.wasm.bundle.min.mjs``, 73 kB) and the one ``.wasm`` file it
  fetches (14 MB, the CPU kernels; 3.4 MB when a server compresses it), of the package's 33 MB.
- ``@huggingface/tokenizers`` reads the model's ``tokenizer.json`` (one 37 kB ES module).

The browser tests (``tests/browser/``, ``make test-browser``) also inject one package into the pages they open,
which the site itself never loads, so it goes into ``.cache/vendor/tests/`` rather than ``_vendor/``:

- ``axe-core`` (``axe.min.js``, 0.5 MB), the accessibility checker that ``tests/browser/test_accessibility.py``
  runs on every page.

The ipywidgets manager (require.js + ``@jupyter-widgets/html-manager``) is not vendored: no page
embeds a widget view. The live widgets are for notebook readers (their outputs are removed from the
site), and the site's interactive figures are :func:`lib.plots.figure_slider` frames, which need no
library at all. ``_config.yml`` therefore sets ``nb_ipywidgets_js: {}``.

Usage (``make vendor`` runs it; ``make book`` depends on it)::

    python tools/vendor_js.py            # fetch into .cache/vendor/, copy into _vendor/
    python tools/vendor_js.py --check    # exit 1 unless _vendor/ is complete and up to date
    python tools/vendor_js.py --tests    # the browser tests' packages (axe-core) into .cache/vendor/tests/

Errors: a missing ``npm`` (install Node.js, e.g. ``apt-get install npm``), a failed download, or a
tarball whose sha512 differs from the pinned one stop the script with a message that says which.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "vendor"  # downloaded tarballs (hidden folder: not part of the site)
OUT = ROOT / "_vendor"  # html_static_path: copied into _build/html/_static/

# name, version, the registry's sha512 integrity of the tarball, the files the site loads
# (globs relative to the package root) and the folder under _vendor/.
PACKAGES = [
    {
        "name": "mathjax",
        "version": "3.2.2",
        "integrity": "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "files": [
            "LICENSE",
            "es5/tex-mml-chtml.js",  # the component Sphinx loads by default (TeX and MathML in, CHTML out)
            "es5/output/chtml/fonts/woff-v2/*",  # the fonts CHTML output fetches as glyphs are needed
            "es5/input/tex/extensions/*",  # TeX packages that \\require / autoload pull in on demand
            "es5/input/mml/extensions/*",
            "es5/ui/*",  # the right-click menu and its lazy parts
            "es5/a11y/*",  # accessibility extensions the menu can switch on
        ],
        "dest": "mathjax",
    },
    {
        "name": "onnxruntime-web",
        "version": "1.30.0",
        "integrity": "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ==",
        "files": [
            "package.json",  # its licence (MIT) is stated here; the package ships no LICENSE file
            "dist/ort.wasm.bundle.min.mjs",  # the WebAssembly backend only, with its loader bundled in
            "dist/ort-wasm-simd-threaded.wasm",  # the kernels it fetches (runs single-threaded without isolation)
        ],
        "dest": "onnxruntime-web",
    },
    {
        "name": "@huggingface/tokenizers",
        "version": "0.2.0",
        "integrity": "sha512-LidMHe1FpcSYH4vcSjXooda34pC0M8m1gmDOv7SQi6Iv+ib1zX7J3sHBCC9/3FPCkn2k1b55FneVqMRxrr99pg==",
        "files": ["LICENSE", "dist/tokenizers.min.mjs"],
        "dest": "tokenizers",
    },
]
# Packages the browser tests inject into pages (never part of the site): same fields, under TEST_OUT/<dest>.
TEST_PACKAGES = [
    {
        "name": "axe-core",
        "version": "4.14.1",
        "integrity": "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
        "files": ["LICENSE", "axe.min.js"],
        "dest": "axe-core",
    },
]
TEST_OUT = CACHE / "tests"
STAMP = OUT / ".vendored.json"


def integrity_of(path: Path) -> str:
    """The npm-style ``sha512-<base64>`` integrity string of a file."""
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode("ascii")


def fetch(pkg: dict) -> Path:
    """The package's tarball in the cache, downloaded with ``npm pack`` if needed and verified.

    Raises:
        SystemExit: npm is missing, the download failed, or the sha512 differs from the pinned one.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"{pkg['name'].replace('@', '').replace('/', '-')}-{pkg['version']}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            sys.exit(
                "tools/vendor_js.py: `npm` not found. The offline website needs MathJax, onnxruntime-web and "
                "@huggingface/tokenizers from the npm registry: install Node.js and npm (Debian/Ubuntu: "
                "apt-get install npm), then re-run."
            )
        spec = f"{pkg['name']}@{pkg['version']}"
        print(f"fetching {spec} with npm pack")
        done = subprocess.run(
            [npm, "pack", spec, "--pack-destination", str(CACHE), "--silent"], capture_output=True, text=True
        )
        if done.returncode != 0 or not tarball.exists():
            sys.exit(
                f"tools/vendor_js.py: `npm pack {spec}` failed (exit {done.returncode}):\n"
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
    got = integrity_of(tarball)
    if got != pkg["integrity"]:
        tarball.unlink()
        sys.exit(
            f"tools/vendor_js.py: checksum mismatch for {pkg['name']}@{pkg['version']}: "
            f"expected {pkg['integrity']}, got {got}. The file was deleted; re-run to download it again."
        )
    return tarball


def extract(pkg: dict, tarball: Path, out: Path = OUT) -> list[str]:
    """Copy the package's wanted files from its tarball into ``<out>/<dest>`` (``_vendor/``); return their paths."""
    dest = out / pkg["dest"]
    shutil.rmtree(dest, ignore_errors=True)
    copied = []
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith("package/"):
                continue
            rel = member.name[len("package/") :]
            # fnmatch's * also matches "/", so "extensions/*" takes the whole folder, as intended.
            if not any(fnmatch.fnmatch(rel, pattern) for pattern in pkg["files"]):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular file
            target.write_bytes(source.read())
            copied.append(rel)
    missing = [p for p in pkg["files"] if not any(fnmatch.fnmatch(c, p) for c in copied)]
    if missing:
        sys.exit(f"tools/vendor_js.py: {pkg['name']}@{pkg['version']} has no file matching {missing}")
    return copied


def wanted_stamp(packages: list[dict] = PACKAGES) -> dict:
    return {p["name"]: {"version": p["version"], "integrity": p["integrity"], "files": p["files"]} for p in packages}


def up_to_date(out: Path = OUT, packages: list[dict] = PACKAGES) -> bool:
    """True when ``out`` (``_vendor/``) was filled from exactly the pinned packages and its files are all there."""
    stamp_file = out / STAMP.name
    if not stamp_file.exists():
        return False
    stamp = json.loads(stamp_file.read_text())
    if stamp.get("packages") != wanted_stamp(packages):
        return False
    return all((out / rel).is_file() for rel in stamp.get("copied", []))


def vendor(out: Path, packages: list[dict], force: bool = False) -> None:
    """Fill ``out`` with the pinned packages' files (fetched and verified), unless it is already up to date."""
    if up_to_date(out, packages) and not force:
        print(f"{out.relative_to(ROOT)}/: up to date")
        return
    copied = []
    for pkg in packages:
        files = extract(pkg, fetch(pkg), out)
        copied += [f"{pkg['dest']}/{f}" for f in files]
        size = sum((out / pkg["dest"] / f).stat().st_size for f in files)
        rel = (out / pkg["dest"]).relative_to(ROOT)
        print(f"{pkg['name']}@{pkg['version']}: {len(files)} files, {size / 1e6:.2f} MB in {rel}/")
    stamp = out / STAMP.name
    tmp = stamp.with_suffix(".tmp")  # written last and atomically: a stamp means every file is there
    tmp.write_text(json.dumps({"packages": wanted_stamp(packages), "copied": copied}, indent=1) + "\n")
    tmp.replace(stamp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless _vendor/ is complete and up to date")
    parser.add_argument("--force", action="store_true", help="copy the files again even when up to date")
    parser.add_argument(
        "--tests", action="store_true", help="the browser tests' packages (axe-core) into .cache/vendor/tests/"
    )
    args = parser.parse_args(argv)
    out, packages, target = (TEST_OUT, TEST_PACKAGES, "vendor-tests") if args.tests else (OUT, PACKAGES, "vendor")
    if args.check:
        ok = up_to_date(out, packages)
        name = out.relative_to(ROOT)
        print(f"{name}/ is up to date" if ok else f"{name}/ is missing or stale: run `make {target}`")
        return 0 if ok else 1
    vendor(out, packages, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
