"""The project's Markdown pages as the docs tests read them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(page: Path) -> list[str]:
    """The code of each fenced ```python block of ``page``, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
