"""Checkpoint averaging and beam search's length penalty, chosen on the validation set.

Vaswani et al. (2017, §6.1) translate with the average of the last checkpoints of a run and pick the beam
search's length penalty α on the development set. For a run of ``python -m lib.train`` with snapshots near
its end (e.g. ``--minutes 40 --snapshots 36,37,38,39``), this script

1. decodes the Multi30k validation set greedily with the final weights (float32, from ``checkpoint.pt``) and with
   the average of the last k of [snapshots…, final] for each k in ``--last``, and keeps the best;
2. decodes it with beam search (``--beam``) for each α in ``--alphas`` with those weights, and keeps the best;
3. only then decodes the test set (test_2016_flickr) with the choice, and with the final weights at α 0.6 for
   comparison, and prints the table of every figure (the levers' effects) as JSON;
4. with ``--ship OUT``, writes the chosen weights as a run folder (float16, as the shipped model) whose
   ``results.json`` records the choice and the test BLEU measured on the weights as saved.

    python bench/average_checkpoints.py --run runs/de-en-avg --threads 2
    python bench/average_checkpoints.py --run runs/de-en-avg --ship runs/de-en-averaged --json runs/levers.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from lib.checkpoint import average_weights, load_run, save_run, snapshot_files, update_results
from lib.files import atomic_write_text, strict_json
from lib.translate import evaluate_bleu


def main(argv: list[str] | None = None) -> dict:
    """Measure (and optionally ship) the averaged model; returns the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help="run folder with snapshots and checkpoint.pt")
    p.add_argument("--last", default="2,3,4,5", help="numbers of last checkpoints to average (comma-separated)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--alphas", default="0.6,1.0,1.5,2.0", help="length-penalty exponents to try on validation")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--ship", default=None, help="write the chosen model as a run folder here (must not exist)")
    p.add_argument("--json", default=None, help="also write the figures to this file")
    args = p.parse_args(argv)
    try:
        lasts = sorted({int(k) for k in args.last.split(",")})
        alphas = [float(a) for a in args.alphas.split(",")]
    except ValueError:
        p.error(f"--last takes integers and --alphas numbers, comma-separated; got {args.last!r}, {args.alphas!r}")
    folder = Path(args.run)
    if not (folder / "checkpoint.pt").is_file():
        p.error(f"--run {folder}: no checkpoint.pt (the final float32 weights) in it")
    if args.ship and Path(args.ship).exists():
        p.error(f"--ship {args.ship} exists already: choose a new folder")
    if args.threads:
        torch.set_num_threads(args.threads)

    run = load_run(folder)  # the architecture and tokenizer; the weights are replaced below
    # the snapshots in order, then the final weights
    points = [*(file for _, file in snapshot_files(folder)), folder / "checkpoint.pt"]
    names = [f.name for f in points]
    if max(lasts) > len(points):
        p.error(f"--last {max(lasts)}: the run has only {len(points)} checkpoints ({', '.join(names)})")
    final = torch.load(folder / "checkpoint.pt", map_location="cpu", weights_only=True)["model"]
    candidates = {"final": final} | {f"last {k}": average_weights(points[-k:]) for k in lasts if k > 1}

    def bleu(state, split, beam=1, alpha=0.6):
        run.model.load_state_dict(state)
        start = time.perf_counter()
        score = evaluate_bleu(run.model, run.tokenizer, split, beam_size=beam, alpha=alpha)
        print(f"  {split} beam {beam} alpha {alpha:g}: {score.score:.2f} ({time.perf_counter() - start:.0f} s)")
        return score

    report: dict = {"run": str(folder), "checkpoints": names, "validation": {}}
    print("greedy validation BLEU of the final and the averaged weights:")
    greedy = {}
    for name, state in candidates.items():
        print(name)
        greedy[name] = bleu(state, "val").score
    report["validation"]["greedy"] = {k: round(v, 2) for k, v in greedy.items()}
    chosen = max(greedy, key=greedy.get)
    print(f"beam {args.beam} on validation with {chosen}:")
    by_alpha = {a: bleu(candidates[chosen], "val", args.beam, a).score for a in alphas}
    report["validation"][f"beam{args.beam}_{chosen}"] = {f"{a:g}": round(v, 2) for a, v in by_alpha.items()}
    alpha = max(by_alpha, key=by_alpha.get)
    report["chosen"] = {"weights": chosen, "alpha": alpha}

    print("test_2016_flickr:")
    test = {
        "final, greedy": bleu(final, "test_2016_flickr"),
        f"final, beam {args.beam}, alpha 0.6": bleu(final, "test_2016_flickr", args.beam, 0.6),
        f"{chosen}, greedy": bleu(candidates[chosen], "test_2016_flickr"),
        f"{chosen}, beam {args.beam}, alpha {alpha:g}": bleu(candidates[chosen], "test_2016_flickr", args.beam, alpha),
    }
    report["test"] = {k: round(v.score, 2) for k, v in test.items()}
    report["bleu_signature"] = next(iter(test.values())).signature

    if args.ship:
        run.model.load_state_dict(candidates[chosen])
        k = 1 if chosen == "final" else int(chosen.split()[1])
        results = dict(
            run.results,
            averaged_checkpoints=names[-k:],
            averaging_command=f"python bench/average_checkpoints.py --run {folder} --ship {args.ship}",
        )
        save_run(args.ship, run.model, run.tokenizer, run.train_config, run.history, results, torch.float16)
        shipped = load_run(args.ship)  # measured on the weights as saved (float16)
        g = evaluate_bleu(shipped.model, shipped.tokenizer, "test_2016_flickr")
        b = evaluate_bleu(shipped.model, shipped.tokenizer, "test_2016_flickr", beam_size=args.beam, alpha=alpha)
        update_results(
            args.ship,
            dict(
                test_bleu_greedy=round(g.score, 2),
                test_bleu_beam=round(b.score, 2),
                beam_size=args.beam,
                beam_alpha=alpha,
                bleu_signature=g.signature,
                levers=report,
            ),
        )
        report["shipped"] = {"folder": args.ship, "greedy": round(g.score, 2), "beam": round(b.score, 2)}
    print(strict_json(report, indent=2, nan="warn"), end="")
    if args.json:
        atomic_write_text(args.json, strict_json(report, indent=2, nan="warn"))
    return report


if __name__ == "__main__":
    main()
