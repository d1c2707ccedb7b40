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
