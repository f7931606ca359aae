"""The project's Markdown pages as the docs tests read them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(page: Path) -> list[str]:
    """The code of each fenced ```python block of ``page``, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


#: The first word of a shell command line in a page's code blocks (the rest is output).
COMMAND = re.compile(r"^(python3? |qwinto-\w+|bash |pip install )")


def code_blocks(page: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of each fenced block of ``page``, in order (language "" when
    the fence names none)."""
    blocks, language, lines = [], None, []
    for line in page.read_text().splitlines():
        fence = re.match(r"\s*```(\w*)\s*$", line)
        if fence and language is None:
            language, lines = fence.group(1), []
        elif fence and not fence.group(1):
            blocks.append((language, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def shell_commands(page: Path) -> list[str]:
    """The commands of ``page``'s non-Python code blocks, in order: ``\\`` continuations
    joined, ``  #`` comments cut, ``&&`` chains split, heredoc bodies left out."""
    commands = []
    for language, block in code_blocks(page):
        if language == "python":
            continue
        heredoc = None
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            if heredoc:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            line = line.split("  #")[0].strip()
            if (end := re.search(r"<<-?'?(\w+)'?", line)):
                heredoc = end.group(1)
            commands += [part.strip() for part in line.split("&&") if COMMAND.match(part.strip())]
    return commands
