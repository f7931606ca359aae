"""What a search adds to a checkpoint's policy, decision by decision, judged by a deep one.

Plays the shipped checkpoint against itself on the batched engine and takes seat 0's real
decisions (several legal actions), spread over whole games. Each decision is searched
once deeply, the **reference**: ``--samples`` simulated games per candidate played to the
end (no value head, so nothing biases it), giving each candidate's gain in points over
the policy's favourite. Then each variant
(``turns/samples/confidence[/phases[/min_prob[/rounds]]]``) searches the same decision;
its row shows how often it leaves the favourite, the reference gain of what it plays
(points per decision, with a 95% interval; a wrong deviation counts negative) and its
time per decision on one core. Per phase, the reference's own verdict: how often some
candidate beats the favourite by more than 2 and 3 standard errors.

    python benchmarks/search_headroom.py --game cards --decisions 120 \\
        --variants 2/16/1/play 4/16/2 0/32/2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from agents import load
from agents.search import OBJECTIVES
from bench_search import self_play_decisions
from qwinto_env.spec import SPECS


def variant(text: str) -> dict:
    """``turns/samples/confidence[/phases[/min_prob[/rounds]]]`` as settings."""
    turns, samples, confidence, *rest = text.split("/")
    return {"turns": int(turns), "samples": int(samples), "confidence": float(confidence),
            "phases": rest[0] if rest else "all",
            "min_prob": float(rest[1]) if len(rest) > 1 else 0.0,
            "rounds": int(rest[2]) if len(rest) > 2 else 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="dice", choices=sorted(SPECS))
    parser.add_argument("--decisions", type=int, default=120)
    parser.add_argument("--samples", type=int, default=256, help="the reference's samples")
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--variants", nargs="*", type=variant, default=[],
                        help="turns/samples/confidence[/phases[/min_prob[/rounds]]] of "
                             "each search to judge")
    parser.add_argument("--objective", default="score", choices=OBJECTIVES,
                        help="what reference and variants maximise (gains in its units: "
                             "points, or wins per game for 'win')")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkpoint = f"pretrained:{args.game}-2p"
    reference = load(f"search:{checkpoint}", game=args.game, samples=args.samples,
                     top_k=args.top_k, turns=0, objective=args.objective, phases="all",
                     min_prob=0, rounds=1)
    searches = [load(f"search:{checkpoint}", game=args.game, top_k=args.top_k,
                     objective=args.objective, **v) for v in args.variants]
    for i, agent in enumerate([reference] + searches):
        agent.reset(seed=args.seed + i)
    phases = SPECS[args.game].phases
    verdicts: dict[str, list] = {}
    gained = [[] for _ in searches]
    seconds = [0.0 for _ in searches]
    for obs, mask, phase in self_play_decisions(args.game, checkpoint, args.decisions,
                                                args.seed):
        with torch.no_grad():
            logits = reference.network(torch.as_tensor(obs[None]))[0].numpy()
        logits = np.where(mask[None] > 0, logits, -np.inf)
        candidates, gain, error = reference.candidate_gains(obs[None], logits, phase)
        verdicts.setdefault(phases[phase], []).append((gain[0, 1:], error[0, 1:]))
        truth = dict(zip(candidates[0].tolist(), np.nan_to_num(gain[0], neginf=0.0)))
        for i, agent in enumerate(searches):
            start = time.perf_counter()
            action = int(agent.act(obs, mask))
            seconds[i] += time.perf_counter() - start
            gained[i].append((phases[phase], truth.get(action, np.nan)))
    n = args.decisions
    print(f"{args.game}: {n} decisions of {checkpoint} self-play; objective "
          f"{args.objective}; reference: top_k={args.top_k}, {args.samples} samples per "
          f"candidate, to the end of the game\n")
    print("| phase | decisions | a candidate beats the favourite at z=2 | at z=3 | "
          "mean standard error |")
    print("|---|---|---|---|---|")
    for name, found in verdicts.items():
        beaten = [sum(any(np.isfinite(g) and g > z * e for g, e in zip(*r)) for r in found)
                  for z in (2, 3)]
        errors = [e for r in found for g, e in zip(*r) if np.isfinite(g)]
        print(f"| {name} | {len(found)} | {beaten[0]} | {beaten[1]} | {np.mean(errors):.2f} |")
    if searches:
        names = list(verdicts)
        print(f"\n| turns/samples/confidence/phases/min_prob/rounds | "
              f"leaves the favourite | "
              f"reference gain per decision | {' | '.join(f'of which {p}' for p in names)} "
              f"| ms per decision |")
        print("|---|---|---|" + "---|" * len(names) + "---|")
    for v, found, s in zip(args.variants, gained, seconds):
        where = np.array([p for p, _ in found])
        g = np.array([x for _, x in found], dtype=float)
        ok = np.isfinite(g)  # an action outside the reference's candidates: unjudged
        half = 1.96 * g[ok].std(ddof=1) / np.sqrt(ok.sum())
        parts = " | ".join(f"{np.nansum(g[where == p]) / n:+.3f}" for p in names)
        print(f"| {v['turns']}/{v['samples']}/{v['confidence']:g}/{v['phases']}/"
              f"{v['min_prob']:g}/{v['rounds']} | "
              f"{np.mean(g[ok] != 0):.1%} "
              f"| {g[ok].mean():+.3f} ± {half:.3f} | {parts} | {1000 * s / n:.0f} |")


if __name__ == "__main__":
    main()
