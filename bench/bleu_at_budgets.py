"""Test BLEU of a run's snapshots: what each extra minute of training bought.

`python -m lib.train ... --snapshots 5,10,20,35 --out runs/de-en` saves the weights after 5, 10, 20 and 35
minutes of training. This script decodes the Multi30k test set with each snapshot and with the final model
(greedy, and beam search for the final model), prints a table, and records the figures in the run's
results.json (keys ``bleu_at_minutes``, ``test_bleu_greedy``, ``test_bleu_beam``), measured on the model
exactly as saved (e.g. float16 weights).

    python bench/bleu_at_budgets.py --run runs/de-en [--beam 5] [--threads 2]

To compare runs without looking at the test set, ``--split val`` decodes the validation set instead; it prints the
table and records nothing (results.json's keys are test figures). A run stopped with Ctrl-C has snapshots but no
``model.pt``: ``--like RUN`` takes the architecture and tokenizer from a finished run and scores the snapshots only.

    python bench/bleu_at_budgets.py --run runs/de-en-2e3-d0 --like runs/de-en-2e3 --split val --beam 0
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from lib.checkpoint import load_run, snapshot_files, update_results
from lib.data import SPLITS
from lib.translate import evaluate_bleu

TEST = "test_2016_flickr"


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Score the snapshots (and the final model); returns the greedy BLEU by training minutes."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help="run folder written by python -m lib.train")
    p.add_argument("--beam", type=int, default=5, help="beam width for the final model (0 = skip)")
    p.add_argument("--alpha", type=float, default=0.6)
    p.add_argument("--split", default=TEST, choices=SPLITS, help=f"(default {TEST}; another split records nothing)")
    p.add_argument(
        "--like",
        default=None,
        help="a finished run with the same architecture and tokenizer, for a run stopped before it saved model.pt: "
        "its snapshots are scored, nothing is recorded",
    )
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    folder = Path(args.run)
    finished = (folder / "model.pt").is_file()
    if not finished and not args.like:
        p.error(
            f"--run {folder}: no model.pt (a run stopped before its end?); pass --like RUN, a finished run with "
            "the same architecture and tokenizer, to score its snapshots"
        )
    if not finished and not snapshot_files(folder):
        p.error(f"--run {folder}: neither model.pt nor snapshots (model_<minutes>min.pt) in it")
    if args.threads:
        torch.set_num_threads(args.threads)
    run = load_run(args.like or folder)
    table = {}
    for minutes, snap in snapshot_files(folder):
        state = torch.load(snap, map_location="cpu", weights_only=True)
        try:
            run.model.load_state_dict(state)
        except RuntimeError as err:  # torch's message: a header line, then the first mismatch
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            source = f"--like {args.like}" if args.like else "the run's config.json"
            p.error(f"{snap} does not fit the architecture of {source}: {lines[min(1, len(lines) - 1)]}")
        start = time.perf_counter()
        bleu = evaluate_bleu(run.model, run.tokenizer, args.split)
        table[f"{minutes:g}"] = round(bleu.score, 2)
        print(f"{minutes:5g} min: greedy BLEU {bleu.score:5.2f}  ({time.perf_counter() - start:.0f} s to decode)")
    if not finished:
        print(f"{args.split} BLEU of the snapshots only: {folder} has no model.pt; nothing recorded")
        return table
    final = load_run(folder)  # the weights as saved in model.pt
    minutes = final.results.get("minutes")
    start = time.perf_counter()
    greedy = evaluate_bleu(final.model, final.tokenizer, args.split)
    greedy_s = time.perf_counter() - start
    table[f"{minutes:g}" if minutes else "final"] = round(greedy.score, 2)
    print(f"final ({minutes} min): greedy BLEU {greedy.score:.2f} ({greedy_s:.0f} s)  {greedy.signature}")
    results = dict(
        final.results,
        bleu_at_minutes=table,
        test_bleu_greedy=round(greedy.score, 2),
        bleu_signature=greedy.signature,
        greedy_decode_seconds=round(greedy_s, 1),
    )
    if args.beam > 1:
        start = time.perf_counter()
        beam = evaluate_bleu(final.model, final.tokenizer, args.split, beam_size=args.beam, alpha=args.alpha)
        beam_s = time.perf_counter() - start
        print(f"final: beam {args.beam} (alpha {args.alpha}) BLEU {beam.score:.2f} ({beam_s:.0f} s)")
        results.update(
            test_bleu_beam=round(beam.score, 2),
            beam_size=args.beam,
            beam_alpha=args.alpha,
            beam_decode_seconds=round(beam_s, 1),
        )
    if args.split != TEST:
        print(f"{args.split} BLEU: printed only; results.json keeps test figures")
        return table
    update_results(folder, results)  # atomically, and the run's manifest.json follows
    print(f"recorded in {folder / 'results.json'}")
    return table


if __name__ == "__main__":
    main()
