"""One game on the web page: the engine, the bots at the other seats, the event log and
the record (see :mod:`qwinto_env.web` for the JSON it answers).

:class:`WebGame` is safe to share between threads: :meth:`WebGame.move` holds the game's
own lock (a second request on the same game meanwhile is refused as busy), and
:meth:`WebGame.state` / :meth:`WebGame.record` answer the snapshot published after the
last change, so they never wait for a bot and never see a half-made step.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from .. import rules
from ..game import Game, check_seed
from ..opponents import make_opponents
from ..parallel import GAMES
from ..play import describe_action, play_step, seat_action, table_seeds
from ..spec import SPECS
from ..spec import cards as card_spec
from ..spec import dice as dice_spec
from .record import make_record

__all__ = ["WebGame", "MoveError", "BotFailure", "PERSON"]

#: The person's name in the state and the record.
PERSON = "you"


class MoveError(ValueError):
    """A move the game refuses; ``status`` is the HTTP status that says why (409: stale,
    busy or over; 422: not a legal action). The game is unchanged."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BotFailure(RuntimeError):
    """A bot of the game raised or answered no legal action (a fault of the server's bot,
    not of the request): the game keeps the steps made before, and cannot go on."""


# -- one game -------------------------------------------------------------------------------

class WebGame:
    """A person at ``seat`` against the bots named by ``bots`` (one name per other seat,
    the k-th sits k seats after the person, as in the terminal game), built by
    ``make(bots, game, num_players)`` (default :func:`~qwinto_env.opponents.make_opponents`).

    ``seed`` (a non-negative int) derives the engine's seed and each bot's, as
    ``python -m qwinto_env.play --seed`` does, so the same seed deals the same game
    there. The game advances at once to the person's first real decision (a seat with one
    legal action is stepped for it). ValueError (naming the argument) for a bad one.
    """

    def __init__(self, game_id: str, game: str, num_players: int, bots: Sequence[str],
                 seat: int = 0, seed: int = 0, start_player: int = 0,
                 make: Callable[..., list[Any]] = make_opponents):
        if game not in GAMES:
            raise ValueError(f"unknown game {game!r}; choose one of {sorted(GAMES)}")
        n = SPECS[game].check_num_players(num_players)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
            raise ValueError(f"seat must be a seat in 0..{n - 1}, got {seat!r}")
        if len(bots) != n - 1:
            raise ValueError(f"bots: expected {n - 1} names (one per other seat), "
                             f"got {len(bots)}")
        self.id, self.seat, self.table_seed = game_id, seat, check_seed(seed)
        self.game: Game = GAMES[game](num_players=n)
        seeds = table_seeds(seed, n)
        self.game.reset(seed=seeds[0], start_player=start_player)
        self.start_player, self.engine_seed = start_player, seeds[0]
        self.names, self.bot_seeds = [PERSON] * n, [None] * n
        self.bots: dict[int, Any] = {}
        for k, (name, bot) in enumerate(zip(bots, make(list(bots), game, n)), 1):
            other = (seat + k) % n
            self.bots[other], self.names[other], self.bot_seeds[other] = bot, name, seeds[k]
            if callable(getattr(bot, "reset", None)):
                bot.reset(seed=seeds[k])
        self.actions: list[list[int]] = []
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._advance()
        self._publish()

    @property
    def done(self) -> bool:
        return self.game.done

    def who(self, seat: int) -> str:
        """``"you"`` or ``"player 2 (expert)"``."""
        return PERSON if seat == self.seat else f"player {seat} ({self.names[seat]})"

    # -- playing -----------------------------------------------------------------------
    def move(self, action: int, step: int) -> dict[str, Any]:
        """Play the person's ``action``, decided at state ``step``, then the bots up to the
        person's next real decision or the end; the new state.

        Raises :class:`MoveError` (game unchanged): 409 while another move on this game
        runs, when ``step`` is not the current step (a stale tab, a double click) or the
        game is over; 422 for an action the person may not play now.
        """
        if not self._lock.acquire(blocking=False):
            raise MoveError(409, f"game {self.id} is busy with another move; try again")
        try:
            self._check_move(action, step)
            try:
                self._step(self._joint(action))
                self._advance()
            finally:
                self._publish()
        finally:
            self._lock.release()
        return self.state()

    def _check_move(self, action: int, step: int) -> None:
        if self.game.done:
            raise MoveError(409, f"game {self.id} is over; start a new game")
        if step != len(self.actions):
            raise MoveError(409, f"stale move: it was chosen at step {step}, the game is at "
                                 f"step {len(self.actions)} (another tab or a double click?); "
                                 f"reload the game")
        problem = self.game.action_problem(self.seat, action)
        if problem:
            raise MoveError(422, f"action {action!r} is not legal for you now: {problem}")

    def _joint(self, action: int | None) -> list[int]:
        """The joint action: the person's ``action`` (None: their only legal one), the
        bots' choices."""
        return [int(action) if seat == self.seat and action is not None else
                self._bot_action(seat) for seat in range(self.game.num_players)]

    def _bot_action(self, seat: int) -> int:
        try:
            return seat_action(self.game, seat, self.bots.get(seat))
        except Exception as error:  # noqa: BLE001 - a bot's failure, whatever it raised
            raise BotFailure(f"{self.who(seat)} failed at step {len(self.actions)}: "
                             f"{type(error).__name__}: {error}; the game cannot go on, "
                             f"start a new one") from error

    def _step(self, actions: list[int]) -> None:
        turn, step = self.game.turn, len(self.actions)
        lines = play_step(self.game, actions)
        self.actions.append(actions)
        self.events += [{"step": step, "turn": turn, "seat": seat, "who": self.who(seat),
                         "text": text} for seat, text in lines]

    def _advance(self) -> None:
        """Step while the game goes on and the person has nothing to decide; at the end,
        let the bots go."""
        while not self.game.done and len(self.game.legal_actions(self.seat)) == 1:
            self._step(self._joint(None))
        if self.game.done:
            self.bots.clear()  # a finished game needs them no more (a network is megabytes)

    # -- what the page sees --------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The state after the last change (the game-state JSON of :mod:`qwinto_env.web`);
        never mutated once published."""
        return self._state

    def record(self) -> dict[str, Any] | None:
        """The game record (:mod:`qwinto_env.web.record`) once the game is over; None while
        it runs: its seeds derive the dice to come and the bots' hands and the draw pile,
        and a card play's action id names the hand slot it came from."""
        return self._record

    def _publish(self) -> None:
        game = self.game
        self._record = None if not game.done else make_record(
            game=game.name, num_players=game.num_players, seed=self.engine_seed,
            start_player=self.start_player, seat=self.seat, players=self.names,
            actions=self.actions, scores=game.scores(), done=game.done,
            table_seed=self.table_seed, bot_seeds=self.bot_seeds)
        info = game.public_info()
        entry = info["phase"] == "entry"
        self._state = {
            "id": self.id, "game": game.name, "num_players": game.num_players,
            "seat": self.seat, "seed": self.table_seed if game.done else None,
            "step": len(self.actions),
            "turn": game.turn, "phase": info["phase"], "active": game.active,
            "done": game.done, "players": self._players(),
            "value": game.value if entry else None,
            "colours": list(info["roll"]["colours"]) if entry else [],
            **self._table(), "legal": [] if game.done else self._choices(),
            "events": list(self.events), "final": self._final() if game.done else None}

    def _players(self) -> list[dict[str, Any]]:
        game = self.game
        return [{"seat": seat, "name": name, "cells": list(game.cells[seat]),
                 "misthrows": game.misthrows[seat], "score": score}
                for seat, (name, score) in enumerate(zip(self.names, game.scores()))]

    def _table(self) -> dict[str, Any]:
        """``roll`` (the dice on the table), ``stacks`` and ``hand`` (the person's cards)."""
        game = self.game
        if game.name == "dice":
            roll = None
            if game.subset:
                roll = {"dice": [{"colour": rules.ROW_NAMES[r], "face": game.dice[r]}
                                 for r in dice_spec.SUBSET_ROWS[game.subset]],
                        "value": game.value, "reroll_available": game.reroll_left}
            return {"roll": roll, "stacks": None, "hand": None}
        stacks = [{"name": name, **_card(top)}
                  for name, top in zip(card_spec.STACK_NAMES, game.tops())]
        return {"roll": None, "stacks": stacks,
                "hand": [_card(card) for card in game.hands[self.seat]]}

    def _choices(self) -> list[dict[str, Any]]:
        game = self.game
        return [{"action": a, "label": describe_action(game, self.seat, a), "kind": _kind(game, a),
                 "cell": a if a < rules.NUM_CELLS else None}
                for a in game.legal_actions(self.seat)]

    def _final(self) -> dict[str, Any]:
        game = self.game
        players = [{"seat": seat, "name": name,
                    **rules.score_breakdown(game.sheet(seat), game.misthrows[seat])}
                   for seat, name in enumerate(self.names)]
        best = max(p["total"] for p in players)
        return {"players": players, "winners": [p["seat"] for p in players if p["total"] == best]}


def _card(card: int) -> dict[str, Any]:
    colour, value = card_spec.CARD_TUPLES[card]
    return {"card": card_spec.card_name(card), "colour": colour, "value": value}


def _kind(game: Game, action: int) -> str:
    """``"write"``, ``"pass"``, ``"roll"``, ``"keep"``, ``"reroll"`` or ``"play"``."""
    if action < rules.NUM_CELLS:
        return "write"
    if action == game.pass_action:
        return "pass"
    if game.name == "cards":
        return "play"
    return {dice_spec.KEEP: "keep", dice_spec.REROLL: "reroll"}.get(action, "roll")
