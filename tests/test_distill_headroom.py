"""benchmarks/distill_headroom.py as a user runs it: its collection resumes, and its
held-out judgement of a fit is right for a fit that does not move the network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from agents import load
from agents.trainers.config import config_from_dict

ROOT = Path(__file__).resolve().parents[1]
# A cheap search that leaves the favourite often (confidence 0), so every column has rows.
CHEAP = "search[samples=2,turns=1,confidence=0,phases=play]:pretrained:cards-2p"


def run(out: Path, *fits: str, save: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "benchmarks/distill_headroom.py", "--game", "cards", "--games", "16",
         "--workers", "1", "--out", str(out), "--demonstrator", CHEAP, "--repeat", "20",
         *(["--save", str(save)] if save else []), "--fits", *fits],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def row(stdout: str, variant: str) -> list[str]:
    line = next(s for s in stdout.splitlines() if s.startswith(f"| {variant} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_fit_that_does_not_move_the_network_plays_its_favourite(tmp_path):
    stdout = run(tmp_path, "actions/1e-12/1", "actions/1e-3/4")
    _, kept, changed, fitted, gain, own = row(stdout, "actions/1e-12/1")
    # Nearly no step: the favourite everywhere, so the search's choice exactly where it
    # kept it, never where it changed it, and no gain over the favourite.
    assert (kept, changed, fitted, gain) == ("100.0%", "0.0%", "0.0%", "+0.000")
    assert float(own) > 0  # with confidence 0 the search leaves the favourite for a gain
    _, _, _, fitted, _, _ = row(stdout, "actions/1e-3/4")
    assert fitted != "0.0%"  # a real fit follows some of the changes it was fitted to
    left = re.search(r"the favourite left in ([0-9.]+)%", stdout)
    assert left and float(left.group(1)) > 0


def test_a_collected_chunk_is_kept_and_a_saved_fit_says_how_it_was_made(tmp_path):
    run(tmp_path, "actions/1e-4/1")
    chunk = tmp_path / "chunk_0000.npz"
    stamp = chunk.stat().st_mtime_ns
    run(tmp_path, "search/1e-4/1/0.5", save=tmp_path / "fits")
    assert chunk.stat().st_mtime_ns == stamp
    assert not list(tmp_path.glob("*.part.npz"))
    saved = tmp_path / "fits" / "search_1e-4_1_0.5.pt"
    config = torch.load(saved, weights_only=True)["metadata"]["config"]
    assert config["run"]["init_from"] == "pretrained:cards-2p"
    assert {k: config["imitation"][k] for k in ("demonstrator", "games", "targets",
                                                  "temperature", "learning_rate", "epochs")} \
        == {"demonstrator": CHEAP, "games": 16, "targets": "search", "temperature": 0.5,
            "learning_rate": 1e-4, "epochs": 1}
    assert config_from_dict(config).imitation.refine  # a valid config, as train.py reads
    load(str(saved), game="cards", num_players=2)  # a valid checkpoint


def test_bad_arguments_are_named_before_any_game(tmp_path):
    for args, named in ((["--fits", "actions/1e-4"], "actions/1e-4"),
                        (["--games", "3"], "--games"),
                        (["--demonstrator", "search[samples=0]:pretrained:cards-2p"],
                         "samples"),
                        (["--checkpoint", str(tmp_path / "none.pt")], "none.pt")):
        done = subprocess.run([sys.executable, "benchmarks/distill_headroom.py", "--out",
                               str(tmp_path / "out"), *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2 and named in done.stderr, (args, done.stderr[-500:])
        assert not list((tmp_path / "out").glob("chunk_*"))
