"""The game record the page downloads once the game is over (mid-game its seeds and a
card play's action id, which names the hand slot, would reveal the hidden cards and the
dice to come), and :func:`replay`, which plays it again in the PettingZoo env.

=================  ==========================================================================
key                value
=================  ==========================================================================
``format``         ``"qwinto-game-record"``
``version``        ``1``
``game``           ``"dice"`` or ``"cards"``
``num_players``    seats at the table
``seed``           the engine's seed: ``reset(seed=seed)`` deals the same dice or cards
``start_player``   the seat that was active first
``seat``           the person's seat
``players``        per seat, ``"you"`` or the bot's name
``actions``        per engine step, the joint action (one int per seat)
``scores``         per seat, the score after the last step
``done``           whether the game was over (``true`` in every record the server serves)
``table_seed``     the seed the game was started with (it derives ``seed`` and the bots')
``bot_seeds``      per seat, the seed the bot was reset with (``null`` for the person)
=================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..game import IllegalActionError
from ..parallel import GAMES, QwintoParallelEnv, parallel_env

__all__ = ["FORMAT", "VERSION", "make_record", "replay"]

FORMAT = "qwinto-game-record"
VERSION = 1


def make_record(*, game: str, num_players: int, seed: int, start_player: int, seat: int,
                players: Sequence[str], actions: Sequence[Sequence[int]],
                scores: Sequence[int], done: bool, table_seed: int,
                bot_seeds: Sequence[int | None]) -> dict[str, Any]:
    """The record of a game, as the table in the module docstring lays it out."""
    return {"format": FORMAT, "version": VERSION, "game": game, "num_players": num_players,
            "seed": seed, "start_player": start_player, "seat": seat,
            "players": list(players), "actions": [list(a) for a in actions],
            "scores": list(scores), "done": done, "table_seed": table_seed,
            "bot_seeds": list(bot_seeds)}


def _check(record: Any) -> None:
    """ValueError naming the first key of ``record`` that cannot be replayed."""
    if not isinstance(record, Mapping):
        raise ValueError(f"a game record must be a JSON object, got {type(record).__name__}")
    if record.get("format") != FORMAT or record.get("version") != VERSION:
        raise ValueError(f"not a game record of format {FORMAT!r} version {VERSION}: "
                         f"format {record.get('format')!r}, version {record.get('version')!r}")
    missing = [k for k in ("game", "num_players", "seed", "start_player", "actions")
               if k not in record]
    if missing:
        raise ValueError(f"the game record lacks {', '.join(missing)}")
    if not isinstance(record["game"], str) or record["game"] not in GAMES:
        raise ValueError(f"the game record's game {record['game']!r} is none of {sorted(GAMES)}")
    for key in ("seed", "start_player"):  # null would replay another deal or start
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"the game record's {key} must be a non-negative integer, "
                             f"got {value!r}")
    actions = record["actions"]
    if not isinstance(actions, list) or not all(isinstance(a, list) for a in actions):
        raise ValueError("the game record's actions must be a list of lists (one per step)")


def replay(record: Mapping[str, Any]) -> QwintoParallelEnv:
    """The PettingZoo env after playing ``record`` (a dict as :func:`make_record` makes,
    e.g. ``json.load``-ed from a downloaded file) from its seed and start player.

    The env's ``game`` then holds the final position: ``replay(record).game.scores() ==
    record["scores"]``. Raises ValueError naming what is wrong with a malformed record,
    :class:`~qwinto_env.game.IllegalActionError` naming the step of the first action
    that is not legal in the replayed game, and ValueError for steps after the game is
    over or, where ``done`` is true, a game left running (a record cut short) or
    ``scores`` other than the replayed game's (an edited record). A record's first steps
    replay with ``done`` false: ``{**record, "actions": record["actions"][:k], "done":
    False}``.
    """
    _check(record)
    env = parallel_env(game=record["game"], num_players=record["num_players"])
    env.reset(seed=record["seed"], options={"start_player": record["start_player"]})
    for step, actions in enumerate(record["actions"]):
        _check_step(env, step, actions, len(record["actions"]))
        env.step(dict(zip(env.possible_agents, actions)))
    _check_end(env, record)
    return env


def _check_step(env: QwintoParallelEnv, step: int, actions: list, steps: int) -> None:
    if env.game.done:
        raise ValueError(f"the game record goes on after the game is over: the game ends "
                         f"after {step} steps, the record has {steps}")
    if len(actions) != len(env.possible_agents):
        raise ValueError(f"step {step} of the game record has {len(actions)} actions, "
                         f"expected {len(env.possible_agents)} (one per seat)")
    for seat, (agent, action) in enumerate(zip(env.possible_agents, actions)):
        problem = env.game.action_problem(seat, action)
        if problem is not None:  # the env's own error would offer illegal_action="pass"
            raise IllegalActionError(agent, action, f"{problem}, at step {step} of the game "
                                                    f"record")


def _check_end(env: QwintoParallelEnv, record: Mapping[str, Any]) -> None:
    """A record that says the game is over must end it, with its ``scores``."""
    steps = len(record["actions"])
    if record.get("done") is not True:
        return
    if not env.game.done:
        raise ValueError(f"the game record says the game is over, but its {steps} steps "
                         f"leave it running (turn {env.game.turn}): the record is cut short")
    if "scores" in record and record["scores"] != env.game.scores():
        raise ValueError(f"the game record's scores {record['scores']!r} are not the "
                         f"replayed game's {env.game.scores()} after its {steps} steps: the "
                         f"record was changed")
