"""How much of a search's choices a network fitted to them keeps, on positions it never saw.

Expert iteration (``imitation.refine``, docs/search.md) fits a network to a search's
choices; this measures, without a match, whether such a fit generalises:

1. **Collect**: ``--games`` self-play games of the search ``--demonstrator`` on the
   batched engine, in chunks of 16 games (chunk ``i`` seeded ``--seed + i``) over
   ``--workers`` processes; each chunk's decision points, the search's choices and every
   simulated candidate's gain and standard error go to ``--out/chunk_NNNN.npz``. A chunk
   already there is kept, so a stopped collection resumes.
2. **Repeat**: the last ``--repeat`` searched decisions (held out in step 3) are searched
   again with the seeds ``--seed - 1`` and ``--seed - 2``: how often the search leaves
   the favourite for the same action again, and that action's gain estimated afresh (is
   a change a finding or noise? The first estimate is the larger: it picked the best).
3. **Fit**: for each ``--fits`` variant (``targets/learning_rate/epochs[/temperature]``,
   targets ``actions`` or ``search`` as in ``imitation.targets``) the checkpoint is
   refined on the first 90% of the decisions with :func:`agents.trainers.imitation.pretrain`
   (what ``train.py`` does), then judged on the last 10%: how often it plays the search's
   choice where the search kept the favourite and where it changed it (and, for
   comparison, where it changed it in the decisions fitted), and the search's
   gain of the action it plays, per searched decision (unsimulated actions count 0),
   beside the search's own (optimistic, as step 2 shows). The fit's settings not in the
   variant are those of ``configs/<game>-2p-search.yaml``. ``--save DIR`` writes each
   fitted checkpoint, for a match or another round (``--checkpoint``); its metadata
   records the config of the fit (``run.init_from``, ``imitation.demonstrator``, the
   variant), as a train.py checkpoint records its run's.

    python benchmarks/distill_headroom.py --game cards --games 2400 --workers 2 \\
        --out runs/distill-cards --save runs/distill-cards/fits \\
        --fits actions/1e-4/8 actions/3e-4/16 search/3e-4/16/0.3
"""

from __future__ import annotations

import argparse
import os
import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import torch

from agents import load
from agents.load import read_checkpoint
from agents.policy import save_checkpoint
from agents.search import Searched
from agents.trainers.config import load_config
from agents.trainers.imitation import Demonstrations, improved_policy, pretrain, self_play

CHUNK = 16
KEYS = ("obs", "masks", "actions", "logits", "gains", "errors", "to_come")


def collect_chunk(job: tuple) -> int:
    """Play chunk ``i``'s games and write its file (atomically); returns ``i``."""
    game, spec, out, i, seed = job
    path = Path(out) / f"chunk_{i:04d}.npz"
    if path.exists():
        return i
    torch.set_num_threads(1)
    agent = load(spec, game=game, num_players=2)
    agent.reset(seed=seed)

    def decide(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, dict]:
        found = agent.search_batch(obs, masks)
        return found.actions, {
            "logits": np.nan_to_num(found.logits, neginf=-1e9).astype(np.float32),
            "gains": found.gains.astype(np.float32), "errors": found.errors.astype(np.float32)}

    data = self_play(decide, game, 2, CHUNK, seed, lambda games, decisions: None)
    part = path.with_suffix(".part.npz")
    np.savez(part, **data)
    os.replace(part, path)
    return i


def load_chunks(out: str, count: int) -> dict[str, np.ndarray]:
    """Chunks ``0..count-1`` of ``out``, joined."""
    chunks = [np.load(Path(out) / f"chunk_{i:04d}.npz") for i in range(count)]
    return {k: np.concatenate([c[k] for c in chunks]) for k in KEYS}


def repeat(data: dict[str, np.ndarray], game: str, spec: str, count: int,
           seeds: list[int]) -> None:
    """Step 2 on the last ``count`` searched decisions."""
    rows = np.flatnonzero(np.isfinite(data["gains"]).any(1))[-count:]
    favourite, first = data["logits"][rows].argmax(1), data["actions"][rows]
    changed = first != favourite
    agent = load(spec, game=game, num_players=2)
    print(f"\n{len(rows)} searched decisions searched again; the first search left the "
          f"favourite in {changed.mean():.1%}\n")
    print("| seed | leaves the favourite | same action | of the first's changes: same | "
          "kept the favourite | its gain now | its gain first |")
    print("|---|---|---|---|---|---|---|")
    for seed in seeds:
        agent.reset(seed=seed)
        again = agent.search_batch(data["obs"][rows], data["masks"][rows])
        at = np.arange(len(rows))
        print(f"| {seed} | {np.mean(again.actions != favourite):.1%} | "
              f"{np.mean(again.actions == first):.1%} | "
              f"{np.mean(again.actions[changed] == first[changed]):.1%} | "
              f"{np.mean(again.actions[changed] == favourite[changed]):.1%} | "
              f"{np.nanmean(again.gains[at, first][changed]):+.2f} | "
              f"{data['gains'][rows][at, first][changed].mean():+.2f} |")


def parse_fit(text: str) -> str:
    """A ``--fits`` value, checked: ``targets/learning_rate/epochs[/temperature]``."""
    parts = text.split("/")
    try:
        ok = len(parts) in (3, 4) and parts[0] in ("actions", "search") \
            and float(parts[1]) > 0 and int(parts[2]) >= 1 and float(parts[-1]) > 0
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected targets/learning_rate/epochs[/temperature], targets actions "
            "or search, the numbers positive (e.g. actions/1e-4/8, search/3e-4/16/0.3)")
    return text


def fit(data: dict[str, np.ndarray], game: str, variant: str, checkpoint: str, spec: str,
        games: int, save: str | None, seed: int) -> str:
    """Step 3 for one variant; its table row."""
    targets, lr, epochs, *rest = variant.split("/")
    temperature = float(rest[0]) if rest else 1.0
    n = len(data["actions"])
    cut = int(0.9 * n)
    soft = None
    if targets == "search":
        found = Searched(data["actions"], np.where(data["masks"], data["logits"], -np.inf),
                         data["gains"], data["errors"])
        soft = improved_policy(found, temperature)[:cut]
    demos = Demonstrations(data["obs"][:cut], data["masks"][:cut], data["actions"][:cut],
                           data["to_come"][:cut].astype(np.float32), soft)
    cfg = load_config(f"{game}-2p-search", [  # what the saved checkpoint records
        f"run.init_from={checkpoint}", f"imitation.demonstrator={spec}",
        f"imitation.games={games}", f"imitation.targets={targets}",
        f"imitation.temperature={temperature}", f"imitation.learning_rate={lr}",
        f"imitation.epochs={epochs}"])
    torch.manual_seed(seed)
    net, meta = read_checkpoint(checkpoint, game, 2)
    pretrain(net, demos, cfg, torch.device("cpu"), progress=False)
    if save:
        os.makedirs(save, exist_ok=True)
        save_checkpoint(f"{save}/{variant.replace('/', '_')}.pt", net, meta["game"],
                        meta["num_players"], meta["observation_size"], meta["num_actions"],
                        {"trainer": cfg.run.trainer, "config": cfg.to_dict(),
                         "steps": (meta.get("metadata") or {}).get("steps", 0),
                         "fitted": {"decisions": cut, "first_chunk_seed": seed}})
    with torch.no_grad():
        logits = net(torch.as_tensor(data["obs"]))[0].numpy()
    plays = np.where(data["masks"], logits, -np.inf).argmax(1)
    choice, gains = data["actions"], data["gains"]
    follows = plays == choice
    changed = choice != data["logits"].argmax(1)
    held = np.arange(n) >= cut
    searched = np.isfinite(gains).any(1) & held
    at = np.arange(n)
    return (f"| {variant} | {follows[~changed & held].mean():.1%} | "
            f"{follows[changed & held].mean():.1%} | {follows[changed & ~held].mean():.1%} | "
            f"{np.nan_to_num(gains[at, plays])[searched].mean():+.3f} | "
            f"{np.nan_to_num(gains[at, choice])[searched].mean():+.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="cards", choices=["dice", "cards"])
    parser.add_argument("--demonstrator", default=None,
                        help="default: search[samples=32,rounds=4,confidence=2]:<checkpoint>")
    parser.add_argument("--checkpoint", default=None, help="default: pretrained:<game>-2p")
    parser.add_argument("--games", type=int, default=2400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", required=True, help="folder of the collected chunks")
    parser.add_argument("--repeat", type=int, default=600)
    parser.add_argument("--fits", nargs="*", type=parse_fit, default=["actions/1e-4/8"])
    parser.add_argument("--save", default=None, help="folder for the fitted checkpoints")
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    if args.games < CHUNK:
        parser.error(f"--games must be at least {CHUNK} (one chunk), got {args.games}")
    checkpoint = args.checkpoint or f"pretrained:{args.game}-2p"
    spec = args.demonstrator or f"search[samples=32,rounds=4,confidence=2]:{checkpoint}"
    try:  # a bad spec or checkpoint fails here, named, not in every worker
        read_checkpoint(checkpoint, args.game, 2)
        load(spec, game=args.game, num_players=2)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    os.makedirs(args.out, exist_ok=True)
    jobs = [(args.game, spec, args.out, i, args.seed + i) for i in range(args.games // CHUNK)]
    with Pool(args.workers) as pool:
        for done, _ in enumerate(pool.imap_unordered(collect_chunk, jobs), 1):
            print(f"\r{done}/{len(jobs)} chunks", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    torch.set_num_threads(1)
    data = load_chunks(args.out, len(jobs))
    searched = np.isfinite(data["gains"]).any(1)
    changed = data["actions"] != data["logits"].argmax(1)
    print(f"{spec}: {len(jobs) * CHUNK} games, {len(changed)} decisions, searched "
          f"{searched.mean():.1%}, the favourite left in {changed[searched].mean():.1%} "
          "of those")
    if args.repeat:
        repeat(data, args.game, spec, args.repeat, [args.seed - 1, args.seed - 2])
    print(f"\nfits of {checkpoint} on the first 90% of the decisions, judged on the last "
          "10%\n")
    print("| targets/lr/epochs[/T] | plays the search's choice where it kept | where it "
          "changed | where it changed, in the fitted decisions | gain per searched decision "
          "| the search's own |")
    print("|---|---|---|---|---|---|")
    for variant in args.fits:
        print(fit(data, args.game, variant, checkpoint, spec, len(jobs) * CHUNK, args.save,
                  args.seed), flush=True)


if __name__ == "__main__":
    main()
