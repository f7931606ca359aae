"""The measuring scripts the docs quote, as a user runs them, at tiny sizes: they run to
their table (search_headroom.py broke when a helper it shares took a new argument)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args", [
    ["--game", "cards", "--variants", "2/4/1/play"],
    ["--game", "dice", "--objective", "win", "--variants", "0/4/2/all/0.01"]])
def test_search_headroom_runs_to_its_table(args):
    result = subprocess.run([sys.executable, "benchmarks/search_headroom.py", "--decisions", "3",
                             "--samples", "4", *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "| leaves the favourite | reference gain per decision |" in result.stdout
