"""The libraries the benchmark needs beyond the base install, checked before anything runs
(an algorithm's own library, rliable for the table), so that a missing extra is named
with the command that installs it instead of failing in the middle of a suite."""

from __future__ import annotations

import importlib.util

__all__ = ["MissingExtra", "require"]


class MissingExtra(ImportError):
    """A library the benchmark needs is not installed; the message names the extra and
    ``install`` is the command that installs it."""

    def __init__(self, message: str, install: str):
        super().__init__(message)
        self.install = install


def require(module: str, extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` when ``module`` is not importable: ``what`` needs it,
    and the pip ``extra`` installs it."""
    if importlib.util.find_spec(module) is None:
        install = f'pip install -e ".[{extra}]"'
        raise MissingExtra(f"{what} needs {module}, which is not installed: {install}", install)
