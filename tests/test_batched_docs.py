"""The Python examples of docs/batched.md run as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "batched.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)



@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(block):
    exec(compile(block, str(DOC), "exec"), {})


def test_doc_has_examples():
    assert len(BLOCKS) >= 5
