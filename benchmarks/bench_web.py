"""What a request to the web server costs: moves against the shipped bots and their
searches, through a real server (``python -m qwinto_env.web --port 0``) on this machine.

    python benchmarks/bench_web.py [--games 10] [--held 200]

For each game and bot: ``--games`` whole 2-player games with the person's moves drawn at
random from ``legal``; a move's time is the whole request (the person's move and the
bot's moves up to the person's next decision, as the page sees it). Then ``--held``
games are opened at once and each is played a few moves, interleaved, and the server's
answers are checked to be those games' own (the games it held at once).
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import statistics
import subprocess
import sys
import time

import httpx
from arguments import at_least  # this folder: on its path

MATCHES = [("dice", "pretrained:dice-2p"), ("cards", "pretrained:cards-2p"),
           ("dice", "expert"), ("cards", "expert"),
           ("dice", "search[person]:pretrained:dice-2p-v2"),
           ("cards", "search[person]:pretrained:cards-2p-v2")]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "qwinto_env.web", "--port", "0",
                             "--max-games", "100000"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    address = re.search(r"http://\S+", line)
    if not address:
        proc.kill()
        sys.exit(f"the server did not start: {line!r}")
    return proc, address.group(0)


def timed_games(http: httpx.Client, game: str, bot: str, games: int) -> str:
    moves, creates, rng = [], [], random.Random(0)
    for seed in range(games):
        start = time.perf_counter()
        state = http.post("/api/games", json={"game": game, "num_players": 2, "bots": [bot],
                                              "seed": seed}).json()
        creates.append(time.perf_counter() - start)
        while not state["done"]:
            body = {"action": rng.choice(state["legal"])["action"], "step": state["step"]}
            start = time.perf_counter()
            state = http.post(f"/api/games/{state['id']}/move", json=body).json()
            moves.append(time.perf_counter() - start)
    p95 = statistics.quantiles(moves, n=20)[18]
    return (f"| {game} | `{bot}` | {len(moves)} | {1000 * statistics.median(moves):.1f} | "
            f"{1000 * p95:.1f} | {1000 * max(moves):.1f} | {1000 * statistics.median(creates):.1f} |")


def held_at_once(http: httpx.Client, count: int) -> str:
    rng = random.Random(1)
    states = [http.post("/api/games", json={"game": game, "num_players": 2, "bots": [bot],
                                            "seed": k}).json()
              for k, (game, bot) in ((k, MATCHES[k % len(MATCHES)]) for k in range(count))]
    for _ in range(3):
        for k, state in enumerate(states):
            if not state["done"]:
                body = {"action": rng.choice(state["legal"])["action"], "step": state["step"]}
                states[k] = http.post(f"/api/games/{state['id']}/move", json=body).json()
    intact = all(http.get(f"/api/games/{s['id']}").json() == s for s in states)
    return f"{count} games open at once, each moved 3 times in turn: every one intact: {intact}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=at_least(1), default=10)
    parser.add_argument("--held", type=at_least(1), default=200)
    args = parser.parse_args()
    proc, address = start_server()
    try:
        with httpx.Client(base_url=address, timeout=60) as http:
            for _ in range(600):
                try:
                    http.get("/api/options")
                    break
                except httpx.ConnectError:
                    time.sleep(0.05)
            print(f"{platform.machine()}, Python {platform.python_version()}, {address}")
            print("| game | bot | moves | median ms | 95th pct ms | max ms | new game ms |")
            print("|---|---|---:|---:|---:|---:|---:|")
            for game, bot in MATCHES:
                print(timed_games(http, game, bot, args.games), flush=True)
            print(held_at_once(http, args.held))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
