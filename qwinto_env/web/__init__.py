"""Play Qwinto against the bots in a web browser (documentation to come)."""

from .app import create_app
from .record import replay

__all__ = ["create_app", "replay"]
