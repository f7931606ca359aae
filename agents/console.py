"""How the command-line tools say what is not an error: one line per warning.

Python's default warning format (file, line number, the source line of the call) suits a
library's user; a command's user wants the command's own voice, as its errors have
(``<prog>: error: <reason>``). :func:`warnings_as_lines` gives the warnings raised while
a command runs that shape, ``<prog>: warning: <message>`` on stderr, and leaves the
format as it was when the command returns (a caller in Python keeps its own).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Iterator

__all__ = ["warnings_as_lines"]


@contextlib.contextmanager
def warnings_as_lines(prog: str) -> Iterator[None]:
    """Within the block, each shown warning is one line ``<prog>: warning: <message>`` on
    the stderr of the moment (whitespace folded, so a multi-line message stays one
    line); filters and the once-per-place rule stay Python's."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"{prog}: warning: " + " ".join(str(message).split()),
              file=file or sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield
