"""Every Python example of docs/*.md runs as written, in an empty folder (some write
pictures), as a script (``__name__ == "__main__"``, which SubprocVecEnv examples need).

docs/play.md's example opens a record a person downloaded from the web page:
``tests/test_web_api.py`` runs it on a record of a game played there. The README's
examples: ``tests/test_readme.py``.
"""

from __future__ import annotations

import pytest

from tests.pages import DOCS, python_blocks

ON_A_DOWNLOAD = {"play.md"}
#: At least this many examples per page, so a page's examples cannot vanish unnoticed.
LEAST = {"agents.md": 2, "batched.md": 5, "cards.md": 2, "dice.md": 3, "single.md": 2}

EXAMPLES = [(page.name, i, block) for page in sorted(DOCS.glob("*.md"))
            if page.name not in ON_A_DOWNLOAD for i, block in enumerate(python_blocks(page))]


@pytest.mark.parametrize("page,index,block", EXAMPLES,
                         ids=[f"{page}-{index}" for page, index, _ in EXAMPLES])
def test_example_runs(page, index, block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"docs/{page}", "exec"), {"__name__": "__main__"})


def test_every_page_with_examples_is_counted():
    counts = {page: index + 1 for page, index, _ in EXAMPLES}
    assert set(counts) == set(LEAST)
    for page, least in LEAST.items():
        assert counts[page] >= least, page
