"""How the command-line tools speak: one line per error or warning.

:func:`say` writes ``<prog>: <kind>: <message>`` on one line of stderr (a command's
refusal, ``<prog>: error: <reason>``). Python's default warning format (file, line
number, the source line of the call) suits a library's user; a command's user wants the
command's own voice, so :func:`warnings_as_lines` says the warnings raised while a
command runs as ``<prog>: warning: <message>`` and leaves the format as it was when the
command returns (a caller in Python keeps its own). :func:`command_exits` ends a command
on Ctrl-C or a closed pipe without a traceback. :func:`tolerant_stdio` keeps a command
that reads and writes text going on a terminal of another encoding.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings
from typing import Iterator

__all__ = ["say", "warnings_as_lines", "command_exits", "tolerant_stdio"]


def say(prog: str, kind: str, message: object, file=None) -> None:
    """``<prog>: <kind>: <message>`` on one line of ``file`` (stderr by default), even
    where the message quotes a library's multi-line text."""
    print(f"{prog}: {kind}: " + " ".join(str(message).split()), file=file or sys.stderr,
          flush=True)


@contextlib.contextmanager
def warnings_as_lines(prog: str) -> Iterator[None]:
    """Within the block, each shown warning is one line ``<prog>: warning: <message>`` on
    the stderr of the moment (whitespace folded, so a multi-line message stays one
    line); filters and the once-per-place rule stay Python's."""
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        say(prog, "warning", message, file)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


@contextlib.contextmanager
def command_exits(prog: str) -> Iterator[None]:
    """Within the block, Ctrl-C ends the command with ``<prog>: error: interrupted`` and
    status 130, and a reader that went away (``| head``) ends it quietly with status 1
    (stdout then points at /dev/null, so Python's last flush does not fail again)."""
    try:
        yield
    except KeyboardInterrupt:
        say(prog, "error", "interrupted")
        raise SystemExit(130) from None
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


def tolerant_stdio() -> None:
    """From now on, a character stdout's encoding lacks (``PYTHONIOENCODING=ascii``, a
    Latin-1 locale; a bot named ``modèle.pt``) is written escaped (``\\xe8``), and bytes of
    a typed line that stdin's encoding cannot decode are read as ``\\ufffd``: both raised
    a UnicodeError that ended the command. For a command's ``main``: Python cannot set
    stdin back once it has read from it (nor set it then: it is left as it is)."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "backslashreplace")):
        if isinstance(stream, io.TextIOWrapper):
            with contextlib.suppress(io.UnsupportedOperation):
                stream.reconfigure(errors=errors)
