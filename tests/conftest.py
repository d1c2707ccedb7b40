"""Shared test settings: the markers (registered in pyproject.toml) and the Multi30k fixture.

- ``slow`` (5 s or more on 2 quiet CPU cores, 10-50 s on a busy one): only a label. ``make test`` and CI run these
  tests; ``make test-fast`` (``pytest tests -m "not slow" --ignore=tests/browser``) leaves them out.
- ``expensive`` (costly for the little it adds, e.g. a real torch.compile): skipped unless the environment variable
  RUN_SLOW=1; also marked ``slow``.
- ``gpu``: skipped unless torch sees a CUDA device.

Either way a skipped test is reported with its reason (``-ra``), never silently passed.
"""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    run_expensive = os.environ.get("RUN_SLOW", "") == "1"
    has_cuda = None  # decided on first need, so that collecting fast tests never imports torch here
    for item in items:
        if item.get_closest_marker("expensive") and not run_expensive:
            item.add_marker(pytest.mark.skip(reason="expensive test: set RUN_SLOW=1 to run it"))
        if item.get_closest_marker("gpu"):
            if has_cuda is None:
                import torch

                has_cuda = torch.cuda.is_available()
            if not has_cuda:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)"))


@pytest.fixture(scope="session")
def multi30k_dir():
    """The folder with the six real Multi30k files (``MULTI30K_DIR`` or the user cache), or skip with the reason.

    CI sets ``MULTI30K_DIR``; on a reader's machine ``make test`` finds the copy that the loader downloaded.
    """
    from lib.data import SHA256, data_dir

    directory = data_dir()
    missing = [name for name in SHA256 if not (directory / name).is_file()]
    if missing:
        pytest.skip(
            f"Multi30k data not found in {directory} (missing {', '.join(missing)}): set MULTI30K_DIR "
            "to a folder holding the six .gz files, or run lib.data.load_multi30k once online"
        )
    return directory
