"""The README's Python examples run as written."""

import shutil

import pytest

from agents.load import PRETRAINED_DIR
from tests.pages import ROOT, python_blocks

README = ROOT / "README.md"
BLOCKS = python_blocks(README)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(block, tmp_path, monkeypatch):
    # The examples assume the quickstart's `python train.py` ran: its final checkpoint is
    # runs/dice-2p/final.pt. A shipped checkpoint (the same format) stands in for it.
    run_dir = tmp_path / "runs" / "dice-2p"
    run_dir.mkdir(parents=True)
    shutil.copy(PRETRAINED_DIR / "dice-2p.pt", run_dir / "final.pt")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {})


def test_readme_has_examples():
    assert len(BLOCKS) >= 2
