"""The regexes nbval applies to stored and fresh outputs (.nbval-sanitize.cfg) hide noise, never results.

Read with nbval's own parser and applied the way nbval applies them (``re.sub`` in file order). Float32 rounding
("largest difference 4.8e-07") differs between CPUs with different vector units, so it compares equal; a difference
that grew to a real error (1.2e-03), a loss (2.31) or a count does not.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = get_sanitize_patterns((ROOT / ".nbval-sanitize.cfg").read_text(encoding="utf-8"))


def sanitize(text: str) -> str:
    for regex, replace in PATTERNS:
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize(
    ("stored", "fresh"),
    [
        # the same cell on two CI machines (modern_transformer, RMSNorm against torch.nn.RMSNorm)
        ("lib's RMSNorm vs torch.nn.RMSNorm: 4.8e-07;  on", "lib's RMSNorm vs torch.nn.RMSNorm: 9.5e-07;  on"),
        ("largest difference 1.19e-07\n", "largest difference 2.38e-07\n"),
        ("largest difference from transformers: 4.0e-05", "largest difference from transformers: 3.1e-05"),
        ("step 120 (1.2 s)", "step 120 (3.4 s)"),
        ("<object at 0x7f3a2c1d5e50>", "<object at 0x55d0c0ffee00>"),
    ],
)
def test_noise_compares_equal(stored: str, fresh: str) -> None:
    assert sanitize(stored) == sanitize(fresh), f"{stored!r} and {fresh!r} should compare equal after sanitizing"


@pytest.mark.parametrize(
    ("stored", "fresh"),
    [
        ("largest difference 4.8e-07", "largest difference 1.2e-03"),  # a real error, not rounding
        ("largest difference 4.8e-07", "largest difference 4.8e-01"),
        ("loss 2.31", "loss 2.35"),
        ("BLEU 31.4", "BLEU 29.8"),
        ("650 steps", "651 steps"),
        ("weights (2, 4, 7, 7)", "weights (2, 4, 7, 8)"),
        ("α = 0.89 on Hund", "α = 0.88 on Hund"),
    ],
)
def test_results_still_differ(stored: str, fresh: str) -> None:
    assert sanitize(stored) != sanitize(fresh), f"sanitizing hides a real change: {stored!r} → {fresh!r}"
