"""The bots a server offers: the configured names, each checked at startup to load for
every game and player count it is offered for.

A name typed into the page only ever selects from this menu; the loader never sees a
string the page sent unless the server was configured with exactly that string.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, Sequence

from ..opponents import opponent_loader
from ..parallel import GAMES
from ..spec import SPECS

__all__ = ["BotMenu", "DEFAULT_BOTS"]

#: The bots a server offers unless told otherwise: the scripted ones, the shipped
#: networks, and each game's search at its person-facing settings (agents/search.py), the
#: strongest opponent there is for a 2-player game.
DEFAULT_BOTS = ("random", "greedy", "expert", "pretrained:dice-2p", "pretrained:dice-2p-v2",
                "search[person]:pretrained:dice-2p-v2", "pretrained:cards-2p",
                "pretrained:cards-2p-v2", "search[person]:pretrained:cards-2p-v2")


class BotMenu:
    """Per game and player count, the configured bot names that load there.

    ``loader(name, game=..., num_players=...)`` builds an agent (default: the
    :func:`~qwinto_env.opponents.opponent_loader` registered or installed now; later
    registrations do not change a running server). Each name is loaded once per game and
    player count, here; a new game gets a deep copy, so a checkpoint file that is later
    rewritten, moved or broken changes no bot of a running server. Raises ValueError
    for ``names`` that is a string or no iterable, and naming a bot that is listed
    twice, is not a non-empty string, loads for no game and player count (with the
    loader's reason), or cannot be copied.
    """

    def __init__(self, names: Sequence[str] = DEFAULT_BOTS,
                 loader: Callable[..., Any] | None = None):
        if isinstance(names, str) or not isinstance(names, Iterable):  # "expert" is 6 bots
            raise ValueError(f"bots must be a list of bot names, got {names!r} (one bot: "
                             f"[{names!r}])")
        names = list(names)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"bot names must be non-empty strings, got {name!r}")
            if names.count(name) > 1:
                raise ValueError(f"bot {name!r} is listed twice")
        self.names = names
        self.loader = loader or opponent_loader()
        self._loaded: dict[tuple[str, str, int], Any] = {}
        self._offered: dict[str, dict[int, list[str]]] = {
            game: {n: [] for n in SPECS[game].player_counts} for game in GAMES}
        for name in names:
            self._check_loads(name)

    def _check_loads(self, name: str) -> None:
        errors = []
        for game, counts in self._offered.items():
            for n, offered in counts.items():
                if n == 1:
                    continue  # solo: no bot sits at the table
                try:
                    agent = self.loader(name, game=game, num_players=n)
                except ValueError as error:
                    errors.append(f"{game} game, {n} players: {error}")
                else:
                    self._loaded[name, game, n] = agent
                    offered.append(name)
        if not any(name in offered for counts in self._offered.values()
                   for offered in counts.values()):
            raise ValueError(f"bot {name!r} loads for no game and player count: {errors[0]}")
        try:
            copy.deepcopy(next(a for (n, _, _), a in self._loaded.items() if n == name))
        except Exception as error:  # noqa: BLE001 - any failure means it cannot serve
            raise ValueError(f"bot {name!r} cannot be copied for each new game: "
                             f"{type(error).__name__}: {error}") from error

    def make(self, names: Sequence[str], game: str, num_players: int) -> list[Any]:
        """A new agent for each name of ``names``, for ``game`` with ``num_players``: a copy
        of the one loaded at startup (KeyError for a name not offered there)."""
        return [copy.deepcopy(self._loaded[name, game, num_players]) for name in names]

    def offered(self, game: str, num_players: int) -> list[str]:
        """The names offered for ``game`` with ``num_players`` seats (a copy)."""
        return list(self._offered[game][num_players])

    def as_json(self) -> dict[str, dict[str, list[str]]]:
        """``{game: {"<num_players>": [names]}}``, the ``bots`` of ``GET /api/options``."""
        return {game: {str(n): list(names) for n, names in counts.items()}
                for game, counts in self._offered.items()}

    def seat_bots(self, game: str, num_players: int, bots: Sequence[str]) -> list[str]:
        """One offered name per other seat from ``bots`` (one name for all, or one per
        other seat); ValueError naming the first bot not offered, a player count no bot
        is offered for, or a wrong count."""
        count = num_players - 1
        offered = self._offered[game][num_players]
        where = f"the {SPECS[game].title} with {num_players} players"
        for name in bots:
            if name not in offered:
                raise ValueError(
                    f"bot {name[:80]!r} is not offered by this server for {where}; "
                    f"offered: {', '.join(offered) or _none(num_players)}")
        if count == 0 and not bots:
            return []
        if not offered:
            raise ValueError(f"this server offers no bot for {where} (its bots: "
                             f"{', '.join(self.names)}); choose another player count")
        if len(bots) == 1:
            return list(bots) * count
        if len(bots) != count:
            raise ValueError(f"bots: expected one name (for every other seat) or {count} "
                             f"(one per other seat), got {len(bots)}")
        return list(bots)


def _none(num_players: int) -> str:
    return "none (a solo game seats no bot)" if num_players == 1 else \
        "none (no configured bot loads for this player count)"
