"""The games a server holds, in memory, by unguessable id.

At most ``max_games`` at once: adding one more evicts the least recently used finished
game, or, when none is finished, the least recently used game (a tab left open the
longest). A page whose game was evicted gets 404 and offers a new game.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from typing import Callable

from .session import WebGame

__all__ = ["GameStore", "UnknownGameError"]


class UnknownGameError(KeyError):
    """No game with this id (never made, or evicted)."""

    def __str__(self) -> str:
        return str(self.args[0])


class GameStore:
    """Thread-safe map id -> :class:`WebGame`, least recently used first."""

    def __init__(self, max_games: int):
        if isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1:
            raise ValueError(f"max_games must be a positive integer, got {max_games!r}")
        self.max_games = max_games
        self._games: OrderedDict[str, WebGame] = OrderedDict()
        self._lock = threading.Lock()
        #: The most games held at once since the start.
        self.peak = 0

    def __len__(self) -> int:
        return len(self._games)

    def __contains__(self, game_id: str) -> bool:
        """Whether ``game_id`` is held (without making it the most recently used)."""
        return game_id in self._games

    def add(self, make: Callable[[str], WebGame]) -> WebGame:
        """The game ``make(new_id)`` builds (outside the lock: it loads bots), now held."""
        game = make(secrets.token_urlsafe(16))
        with self._lock:
            while len(self._games) >= self.max_games:
                victim = next((i for i, g in self._games.items() if g.done),
                              next(iter(self._games)))
                del self._games[victim]
            self._games[game.id] = game
            self.peak = max(self.peak, len(self._games))
        return game

    def get(self, game_id: str) -> WebGame:
        """The game ``game_id`` (now the most recently used); :class:`UnknownGameError`."""
        with self._lock:
            game = self._games.get(game_id)
            if game is None:
                raise UnknownGameError(
                    f"unknown game id {game_id[:64]!r}: no such game on this server (it may "
                    f"have ended with a server restart or been evicted); start a new game")
            self._games.move_to_end(game_id)
            return game
