"""Play Qwinto against the bots in a web browser.

::

    python -m qwinto_env.web                 # or: qwinto-web
    Qwinto: open http://127.0.0.1:8000/ in a browser

Open the address, choose the game, the number of players and the bots, and play with
the mouse: your legal moves are highlighted, the bots' moves appear one by one, the
final scoring is broken down as in the terminal game (:mod:`qwinto_env.play`), and the
game record downloads as JSON once the game is over.

Command line
------------
==========================  ==============================================================
option                      meaning
==========================  ==============================================================
``--host 127.0.0.1``        address to listen on; the default serves this computer only
                            (``0.0.0.0``: every network, e.g. for friends; no login)
``--port 8000``             port; ``0`` picks a free one (the printed address has it)
``--bots NAMES``            comma-separated bots the page may seat (default
                            :data:`~qwinto_env.web.menu.DEFAULT_BOTS`: the scripted bots,
                            the shipped networks, each game's ``search[person]``): names or
                            checkpoint paths for :func:`qwinto_env.opponents.opponent_loader`
``--max-games 200``         games held in memory at once (see Safety)
``--access-log``            log every request on standard output (off: a pipe that
                            nobody reads would stall the server)
==========================  ==============================================================

Each configured bot is loaded at startup for every game and player count; it is offered
where it loads (``pretrained:dice-2p`` only for the dice game with 2 players), and a bot
that loads nowhere stops the start with an error naming it (exit status 2, as for bad
options or an address that cannot be bound). In Python: :func:`create_app` returns the
FastAPI app for any ASGI server (``create_app(bots=["expert"], max_games=100)``).

JSON API
--------
==========================================  ===============================================
request                                     answer
==========================================  ===============================================
``GET /``                                   the page; ``/?game=<id>`` resumes a game
                                            (``HEAD`` answers its headers)
``GET /static/<file>``                      the page's scripts and style
``GET /api/options``                        ``games`` (title, player limits), ``bots``
                                            (per game and player count), ``layout`` (the
                                            sheet: rows, columns, gaps, pentagons)
``POST /api/games``                         201, a new game's state; body ``{"game":
                                            "dice", "num_players": 2, "bots": ["expert"],
                                            "seat": 0, "seed": null, "start_player": 0}``
``GET /api/games/<id>``                     the game's state (a reload)
``POST /api/games/<id>/move``               the state after your move and the bots' moves
                                            up to your next decision; body ``{"action":
                                            28, "step": 4}``
``GET /api/games/<id>/record``              the game record, as a file download, once
                                            the game is over (409 before)
==========================================  ===============================================

``bots`` names one bot for every other seat or one per other seat, in seat order after
yours; ``seed`` (0..2**63-1, drawn when ``null``) deals the game: the same seed with
``python -m qwinto_env.play --seed`` deals the same dice or cards. It derives the dice to
come, the bots' hands and the draw pile, so neither the state nor the record shows it
while the game runs. ``step`` in a move is the ``step`` of the state the move was chosen
in.

A game state: ``id``, ``game``, ``num_players``, ``seat`` (yours), ``seed`` (``null``
until the game is over, then the table seed, drawn or given), ``step``
(engine steps so far), ``turn`` (0-based), ``phase``, ``active`` (the active seat),
``done``; ``players`` (per seat ``seat``, ``name`` ("you" or the bot), ``cells`` (27, row by
row, 0 = empty), ``misthrows``, ``score``); ``value`` and ``colours`` (the number to write
and its rows, in the entry phase; else ``null`` and ``[]``); ``roll`` (dice game, while
dice lie on the table: ``dice`` as ``{"colour", "face"}``, ``value``,
``reroll_available``; else ``null``); ``stacks`` (card game: per stack ``name``, ``card``,
``colour``, ``value``) and ``hand`` (your cards only); ``legal`` (your choices:
``action``, ``label`` in plain words, ``kind`` write/pass/roll/keep/reroll/play, ``cell``
for a write); ``events`` (every move of the game so far, in order: ``step``, ``turn``,
``seat``, ``who``, ``text`` as the terminal game words it; seats with nothing to decide
are left out); ``final`` (at the end: per seat ``rows``, ``pentagons``, ``misthrows`` (the
penalty), ``total`` as :func:`qwinto_env.rules.score_breakdown` gives them, and
``winners``; else ``null``).

Errors answer ``{"detail": "<what and why>"}`` (a list of ``{"type", "loc", "msg"}`` for a
body that does not fit the schema) and, but for a failed bot, change nothing:

======  ======================================================================================
status  when
======  ======================================================================================
400     a body the JSON parser gives up on (not UTF-8, nested too deep, an integer of over
        4,300 digits)
404     an unknown (or evicted) game id, an unknown path
405     a wrong method
409     a stale ``step`` (another tab, a double click, a move out of turn), a game that is
        over, a game busy with another move; the record of a game that is not over
413     a body over 16 KiB
422     a body that does not fit (not sent as ``application/json``, unknown keys, a bool
        or float or string for an integer, numbers out of range), an unknown game, a
        player count the game does not seat, a bot this server does not offer there, a bad
        seat, seed or start player, an action you may not play now
500     a bot of the server failed (raised, or answered no legal action): the detail
        names it and its error; the game keeps the steps made before it and cannot go on
        (the traceback goes to the server's log)
======  ======================================================================================

The game record
---------------
The record (:mod:`qwinto_env.web.record`) of a finished game holds the seed, the start
player and every joint action; :func:`replay` plays it again in the PettingZoo env::

    import json
    from qwinto_env.web import replay

    record = json.load(open("qwinto-dice-<id>.json"))
    env = replay(record)           # parallel_env(game=..., num_players=...) after the game
    assert env.game.scores() == record["scores"]

which is ``env.reset(seed=record["seed"], options={"start_player":
record["start_player"]})`` and ``env.step({agent_i: actions[step][i]})`` for each step. A
record cut short, run on past the game's end or edited (its ``scores`` are not the
replay's) is refused with a ValueError that says so, an illegal action with an
:class:`~qwinto_env.game.IllegalActionError` naming its step; the first ``k`` steps
replay with ``{**record, "actions": record["actions"][:k], "done": False}``.

Safety
------
* The server listens on 127.0.0.1 unless ``--host`` says otherwise.
* A bot name from the page only selects among the configured names: anything else (a
  path, ``pretrained:../x``) is refused with the list of offered bots; the loader never
  sees it.
* Every body is checked against a strict schema and a size limit before it reaches a
  game; a refused request leaves every game as it was.
* Game ids are random 128-bit tokens. At most ``--max-games`` games are held, in memory;
  one more evicts the least recently used finished game, else the least recently used
  game (its page then answers 404 and offers a new game).
* Bots think in worker threads, each game behind its own lock: a slow bot delays its own
  game only (a second move on that game meanwhile is refused as busy), and reading a
  game's state never waits for it.
"""

from .app import create_app
from .record import replay

__all__ = ["create_app", "replay"]
