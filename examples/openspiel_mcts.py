"""OpenSpiel's MCTS (random rollouts) against uniform random bots on Qwinto.

    python examples/openspiel_mcts.py [--game dice|cards] [--players 2] [--games 10]
                                      [--simulations 50] [--seed 0]

The game is :mod:`qwinto_env.openspiel`'s (reward ``win``), made sequential by
``pyspiel.convert_to_turn_based`` as MCTS needs: the players of a simultaneous step act one
after the other, so a later one's search sees the earlier ones' choices of that step (in
Qwinto only entries are simultaneous, and they hardly interact). MCTS searches the true
state: in the card game it sees the other hands, an advantage no fair player has. The MCTS
bot changes seat every game; steps with one legal action are played without a search.
"""

from __future__ import annotations

import argparse

import numpy as np
import pyspiel
from open_spiel.python.algorithms import mcts
from open_spiel.python.bots import uniform_random

from qwinto_env import openspiel


def play(game: pyspiel.Game, bots: list, rng: np.random.RandomState) -> list[float]:
    """One game of ``bots`` (one per seat) on the turn-based ``game``; the returns."""
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        legal = state.legal_actions()
        action = legal[0] if len(legal) == 1 else bots[state.current_player()].step(state)
        state.apply_action(action)
    return state.returns()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", choices=sorted(openspiel.GAME_NAMES), default="dice")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.players < 2:
        parser.error("--players must be 2 or more (MCTS plays against random bots)")
    if args.games < 1 or args.simulations < 1:
        parser.error("--games and --simulations must be positive")
    try:
        game = openspiel.load(args.game, num_players=args.players, reward="win")
    except ValueError as exc:  # too many players for the game
        parser.error(f"--players: {exc}")

    game = pyspiel.convert_to_turn_based(game)
    rng = np.random.RandomState(args.seed)
    searcher = mcts.MCTSBot(game, uct_c=2.0, max_simulations=args.simulations,
                            evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng)
    results = []
    for g in range(args.games):
        seat = g % args.players
        bots = [searcher if p == seat else uniform_random.UniformRandomBot(p, rng)
                for p in range(args.players)]
        returns = play(game, bots, rng)
        results.append(returns[seat])
        print(f"game {g + 1}: MCTS in seat {seat}, returns {returns}")
    wins = np.mean([r > 0 for r in results])
    print(f"MCTS ({args.simulations} simulations) vs {args.players - 1} uniform random, "
          f"{args.game} game, {args.games} games: win rate {wins:.2f} "
          f"(random expects {1 / args.players:.2f}), mean return {np.mean(results):+.2f}")


if __name__ == "__main__":
    main()
