"""Shared test settings: how the `slow` and `gpu` markers (registered in pyproject.toml) are skipped.

Fast by default: a test marked `slow` runs only when the environment variable RUN_SLOW=1; a test marked `gpu`
runs only when torch sees a CUDA device. Either way a skipped test is reported with its reason (`-ra`),
never silently passed.
"""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    run_slow = os.environ.get("RUN_SLOW", "") == "1"
    has_cuda = None  # decided on first need, so that collecting fast tests never imports torch here
    for item in items:
        if item.get_closest_marker("slow") and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow test: set RUN_SLOW=1 to run it"))
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
