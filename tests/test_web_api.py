"""The web server's JSON API (qwinto_env.web), driven as the page drives it: whole games
against every shipped bot, reload, many games at once, a slow bot beside other games,
stale and illegal moves, malformed and malicious requests, the record and its replay,
the command line."""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from qwinto_env import rules
from qwinto_env.game import IllegalActionError
from qwinto_env.opponents import opponent_loader, register_loader
from qwinto_env.play import TerminalGame
from qwinto_env.web import create_app, replay
from tests.pages import DOCS, python_blocks

PAIRS = [("dice", "random"), ("dice", "greedy"), ("dice", "expert"),
         ("dice", "pretrained:dice-2p"), ("cards", "random"), ("cards", "greedy"),
         ("cards", "expert"), ("cards", "pretrained:cards-2p"),
         ("cards", "search[person]:pretrained:cards-2p-v2"), ("dice", "pretrained:dice-2p-v2"),
         ("dice", "search[person]:pretrained:dice-2p-v2"), ("cards", "pretrained:cards-2p-v2")]


@pytest.fixture(scope="module")
def app():
    return create_app()


@pytest.fixture(scope="module")
def client(app):
    return TestClient(app)


def new_game(client, **body):
    body = {"game": "dice", "num_players": 2, "bots": ["random"], **body}
    response = client.post("/api/games", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def play_out(client, state, rng, moves=10**6):
    """Move at random from ``legal`` until the end (or ``moves`` moves); the last state
    and the indices of the choices made."""
    picks = []
    while not state["done"] and len(picks) < moves:
        assert state["legal"], "a game in progress must offer the person a choice"
        pick = rng.randrange(len(state["legal"]))
        picks.append(pick)
        response = client.post(f"/api/games/{state['id']}/move",
                               json={"action": state["legal"][pick]["action"],
                                     "step": state["step"]})
        assert response.status_code == 200, response.text
        state = response.json()
    return state, picks


def finished_record(client, state, rng):
    """The record of ``state``'s game, played to the end at random (the server gives a
    record only then)."""
    state, _ = play_out(client, state, rng)
    return client.get(f"/api/games/{state['id']}/record").json()


def check_against_replay(client, state):
    """The final table on the page equals the engine's scoring of the replayed record."""
    record = client.get(f"/api/games/{state['id']}/record").json()
    game = replay(record).game
    assert game.done and state["done"]
    for seat, shown in enumerate(state["final"]["players"]):
        assert state["players"][seat]["cells"] == game.cells[seat]
        assert {k: shown[k] for k in ("rows", "pentagons", "misthrows", "total")} == \
            rules.score_breakdown(game.sheet(seat), game.misthrows[seat])
    totals = game.scores()
    assert state["final"]["winners"] == [s for s, t in enumerate(totals) if t == max(totals)]
    assert record["scores"] == totals


# -- whole games ------------------------------------------------------------------------

@pytest.mark.parametrize("game,bot", PAIRS)
def test_whole_game_against_each_bot(client, game, bot):
    state = new_game(client, game=game, bots=[bot], seed=11)
    assert [p["name"] for p in state["players"]] == ["you", bot]
    state, _ = play_out(client, state, random.Random(game + bot))
    check_against_replay(client, state)
    assert any(e["who"] == f"player 1 ({bot})" for e in state["events"])


def test_three_players_person_in_the_middle(client):
    state = new_game(client, game="cards", num_players=3, bots=["greedy", "expert"],
                     seat=1, start_player=2, seed=5)
    assert [p["name"] for p in state["players"]] == ["expert", "you", "greedy"]
    assert state["hand"] and len(state["hand"]) <= 3
    state, _ = play_out(client, state, random.Random(3))
    check_against_replay(client, state)


def test_solo_game(client):
    state = new_game(client, num_players=1, bots=[], seed=2)
    state, _ = play_out(client, state, random.Random(2))
    check_against_replay(client, state)
    assert state["final"]["winners"] == [0]


@pytest.mark.parametrize("game,bots", [("dice", "expert,greedy"), ("cards", "greedy")])
def test_events_say_what_the_terminal_game_says(client, game, bots):
    """The same seed and the same choices in ``python -m qwinto_env.play`` show the same
    game: its move lines are the page's events."""
    names = bots.split(",")
    state = new_game(client, game=game, num_players=3, bots=names, seed=21)
    state, picks = play_out(client, state, random.Random(21))
    lines = []
    TerminalGame(game, names, num_players=3, seed=21,
                 input_fn=lambda prompt, answers=iter(picks): str(next(answers) + 1),
                 print_fn=lambda text="": lines.extend(str(text).split("\n"))).play()
    joined = "\n".join(lines).replace("\n      ", " ").split("\n")  # the 80-column wraps
    moves = [m.groups() for m in map(re.compile(r"^  (you|player \d \(.+?\)): (.+)$").match,
                                     joined) if m]
    assert moves == [(e["who"], terminal_words(e["text"])) for e in state["events"]]


def terminal_words(text: str) -> str:
    """An event as the 80-column terminal words it: stacks by code (``on TL``)."""
    text = re.sub(r"onto the (top|bottom)-(left|right) stack",
                  lambda m: f"on {m[1][0].upper()}{m[2][0].upper()}", text)
    return text.replace(", then ", ", ")


def test_the_hand_is_the_persons_own(client):
    rng = random.Random(8)
    state, _ = play_out(client, new_game(client, game="cards", bots=["random"], seed=8), rng,
                        moves=5)
    record = finished_record(client, state, rng)
    game = replay({**record, "actions": record["actions"][:state["step"]], "done": False}).game
    assert [c["card"] for c in state["hand"]] == [
        f"{c} {v}" for c, v in game.private_info(0)["hand"]]
    assert [s["card"] for s in state["stacks"]] == [f"{c} {v}" for c, v in
                                                    game.public_info()["stacks"]]


def test_options_list_the_bots_that_load(client):
    options = client.get("/api/options").json()
    assert options["bots"]["dice"]["2"] == ["random", "greedy", "expert", "pretrained:dice-2p",
                                            "pretrained:dice-2p-v2",
                                            "search[person]:pretrained:dice-2p-v2"]
    assert options["bots"]["dice"]["3"] == ["random", "greedy", "expert"]
    assert options["bots"]["cards"]["2"][3:] == ["pretrained:cards-2p", "pretrained:cards-2p-v2",
                                                  "search[person]:pretrained:cards-2p-v2"]
    assert options["bots"]["cards"]["1"] == []
    assert options["games"]["cards"]["max_players"] == 4
    assert options["layout"]["field_columns"][2][0] == rules.FIELD_COLUMNS[2][0]


# -- reload, record ------------------------------------------------------------------------

def test_reload_returns_the_same_state(client):
    state = new_game(client, seed=4)
    for _ in range(6):
        assert client.get(f"/api/games/{state['id']}").json() == state
        state, _ = play_out(client, state, random.Random(4), moves=1)
    assert client.get(f"/api/games/{state['id']}").json() == state


def test_record_download(client):
    state, _ = play_out(client, new_game(client, game="cards", seed=9), random.Random(9))
    response = client.get(f"/api/games/{state['id']}/record")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-disposition"] == \
        f'attachment; filename="qwinto-cards-{state["id"]}.json"'
    record = response.json()
    assert record["format"] == "qwinto-game-record" and record["version"] == 1
    assert len(record["actions"]) == state["step"] and record["done"]
    assert replay(record).game.scores() == [p["score"] for p in state["players"]]


def test_play_doc_example_replays_a_downloaded_record(client, tmp_path, monkeypatch):
    """docs/play.md's example, as written, on the file a whole dice game downloads as."""
    state, _ = play_out(client, new_game(client, seed=4), random.Random(4))
    response = client.get(f"/api/games/{state['id']}/record")
    name = re.search(r'filename="(.+)"', response.headers["content-disposition"]).group(1)
    [example] = python_blocks(DOCS / "play.md")
    downloaded = re.search(r'open\("(qwinto-dice-<id>\.json)"\)', example).group(1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / downloaded).write_bytes(response.content)
    namespace = {}
    exec(compile(example, "docs/play.md", "exec"), namespace)
    assert name == downloaded.replace("<id>", state["id"])
    assert namespace["env"].game.done and namespace["record"]["done"]


@pytest.mark.parametrize("game,seed", [("dice", None), ("cards", None), ("cards", 2**63 - 1)])
def test_the_seed_and_the_record_wait_for_the_end(client, game, seed):
    """While the game runs neither its state nor its record tells the seed, which derives
    the dice to come and the bots' hands: the record is refused, naming why, and the game
    is left as it was. At the end both tell it, and it deals this game again."""
    rng, first = random.Random(game), new_game(client, game=game, seed=seed)
    state = first
    for _ in range(3):
        assert state["seed"] is None and not state["done"]
        refused(client, state["id"], "GET", f"/api/games/{state['id']}/record", 409,
                f"game {state['id']} is not over: its record .* would reveal the dice or "
                f"cards to come")
        state, _ = play_out(client, state, rng, moves=1)
    state, _ = play_out(client, state, rng)
    check_against_replay(client, state)
    record = client.get(f"/api/games/{state['id']}/record").json()
    assert state["seed"] == record["table_seed"] == (state["seed"] if seed is None else seed)
    assert client.get(f"/api/games/{state['id']}").json()["seed"] == state["seed"]
    again = new_game(client, game=game, seed=state["seed"])
    assert {**again, "id": None} == {**first, "id": None}


def test_replay_refuses_a_broken_record(client):
    record = finished_record(client, new_game(client, seed=1), random.Random(1))
    with pytest.raises(ValueError, match="format"):
        replay({**record, "format": "other"})
    with pytest.raises(ValueError, match="lacks seed"):
        replay({k: v for k, v in record.items() if k != "seed"})
    with pytest.raises(ValueError, match="step 0 .* 1 actions, expected 2"):
        replay({**record, "actions": [[29]]})
    with pytest.raises(ValueError, match=r"game \['dice'\] is none of"):
        replay({**record, "game": ["dice"]})
    for key, value in (("seed", None), ("seed", -1), ("seed", 1.0), ("start_player", None),
                       ("start_player", True)):
        with pytest.raises(ValueError, match=f"record's {key} must be a non-negative integer"):
            replay({**record, key: value})


def test_replay_names_the_step_a_tampered_record_goes_wrong(client):
    """A record cut short, run on past its end, edited or with a bad action is refused
    naming the step or the key, never replayed to a position it does not describe."""
    record = finished_record(client, new_game(client, seed=1), random.Random(1))
    steps, actions = len(record["actions"]), record["actions"]
    with pytest.raises(ValueError, match=f"says the game is over, but its {steps - 3} steps "
                                         f"leave it running .*cut short"):
        replay({**record, "actions": actions[:-3]})
    with pytest.raises(ValueError, match=f"goes on after the game is over: the game ends "
                                         f"after {steps} steps, the record has {steps + 1}"):
        replay({**record, "actions": actions + actions[-1:]})
    with pytest.raises(ValueError, match=r"scores \[99, 99\] are not the replayed game's"):
        replay({**record, "scores": [99, 99]})
    for bad in ("1", 1.0, None, -1):
        with pytest.raises(IllegalActionError, match=f"illegal action {re.escape(repr(bad))} "
                                                     f"for player_1: .*at step 3 of the game "
                                                     f"record$"):
            replay({**record, "actions": actions[:3] + [[actions[3][0], bad]] + actions[4:]})


# -- refused moves leave the game as it was -----------------------------------------------

def refused(client, game_id, method, path, status, match, **kwargs):
    before = client.get(f"/api/games/{game_id}").json()
    response = client.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    assert re.search(match, str(response.json()["detail"])), response.text
    assert client.get(f"/api/games/{game_id}").json() == before


def test_stale_and_double_moves_are_refused(client):
    state = new_game(client, seed=6)
    path = f"/api/games/{state['id']}/move"
    body = {"action": state["legal"][0]["action"], "step": state["step"]}
    after = client.post(path, json=body).json()
    refused(client, state["id"], "POST", path, 409, "stale", json=body)  # the double click
    refused(client, state["id"], "POST", path, 409, "stale",
            json={"action": after["legal"][0]["action"], "step": after["step"] + 1})


def test_illegal_actions_are_refused(client):
    state = new_game(client, seed=7)
    path, step = f"/api/games/{state['id']}/move", state["step"]
    legal = {c["action"] for c in state["legal"]}
    illegal = next(a for a in range(100) if a not in legal)
    refused(client, state["id"], "POST", path, 422, "not legal for you now",
            json={"action": illegal, "step": step})
    refused(client, state["id"], "POST", path, 422, "out of range",
            json={"action": 5000, "step": step})


def test_a_finished_game_takes_no_move(client):
    state, _ = play_out(client, new_game(client, seed=3), random.Random(3))
    refused(client, state["id"], "POST", f"/api/games/{state['id']}/move", 409, "is over",
            json={"action": 0, "step": state["step"]})


@pytest.mark.parametrize("method,path", [("GET", ""), ("GET", "/record"), ("POST", "/move")])
def test_unknown_game_ids(client, method, path):
    response = client.request(method, f"/api/games/nosuchgame{path}",
                              json={"action": 0, "step": 0})
    assert response.status_code == 404
    assert "unknown game id 'nosuchgame'" in response.json()["detail"]


BAD_GAMES = [
    ({"game": "chess"}, 422, "unknown game 'chess'"),
    ({"num_players": 7}, 422, "num_players must be an integer in 1..6 for the dice game"),
    ({"num_players": 0}, 422, "num_players must be an integer in 1..6"),
    ({"num_players": 10**30}, 422, "num_players must be an integer in 1..6"),
    ({"game": "cards", "num_players": 5}, 422, "num_players must be an integer in 1..4"),
    ({"num_players": 3, "bots": ["pretrained:dice-2p"]}, 422,
     "bot 'pretrained:dice-2p' is not offered .* 3 players; offered: random, greedy, expert$"),
    ({"bots": ["pretrained:cards-2p"]}, 422, "not offered .*dice game"),
    ({"bots": ["../../etc/passwd"]}, 422, "bot '../../etc/passwd' is not offered"),
    ({"bots": ["/tmp/x.pt"]}, 422, "is not offered"),
    ({"bots": ["pretrained:../x"]}, 422, "is not offered"),
    ({"num_players": 4, "bots": ["random", "random"]}, 422, "expected one name .* or 3"),
    ({"num_players": 1, "bots": ["random"]}, 422, "none \\(a solo game seats no bot\\)"),
    ({"num_players": 3, "bots": []}, 422, "expected one name"),
    ({"seat": 2}, 422, "seat must be a seat in 0..1"),
    ({"start_player": 3}, 422, "start_player must be a seat in 0..1"),
    ({"seed": -1}, 422, "seed"), ({"seed": 2**64}, 422, "seed"), ({"seed": 1.5}, 422, "seed"),
    ({"seed": "7"}, 422, "seed"), ({"seed": True}, 422, "seed"),
    ({"num_players": 2.0}, 422, "num_players"), ({"num_players": "2"}, 422, "num_players"),
    ({"extra": 1}, 422, "extra"), ({"bots": "random"}, 422, "bots"),
]


@pytest.mark.parametrize("change,status,match", BAD_GAMES)
def test_bad_new_games_are_refused(app, client, change, status, match):
    held = len(app.state.store)
    response = client.post("/api/games", json={"game": "dice", "num_players": 2,
                                               "bots": ["random"], **change})
    assert response.status_code == status, response.text
    assert re.search(match, str(response.json()["detail"])), response.text
    assert len(app.state.store) == held


BAD_MOVES = [
    (b'{"action": 0', 422, "JSON decode"), (b"[]", 422, "valid dictionary"),
    (b'{"action": true, "step": 0}', 422, "valid integer"),
    (b'{"action": 1.0, "step": 0}', 422, "valid integer"),
    (b'{"action": "1", "step": 0}', 422, "valid integer"),
    (b'{"action": 1}', 422, "step.*Field required"),
    (b'{"action": 1, "step": 0, "x": 1}', 422, "Extra inputs"),
    (b'{"action": 1e400, "step": 0}', 422, "action"),
    (b'{"action": 99999999999999999999999999, "step": 0}', 422, "less than or equal"),
    (b"[" * 5000 + b"]" * 5000, 400, "nested too deep"),
    (b'{"action": "\xff\xfe", "step": 0}', 400, "not UTF-8 text .invalid start byte at byte 12"),
    (b'{"action": 1' + b"0" * 5000 + b', "step": 0}', 400, "an integer of more digits"),
    (b'{"action": 0, "step": 0, "pad": "' + b"x" * 20_000 + b'"}', 413, "body is over 16384 bytes"),
]


@pytest.mark.parametrize("content,status,match", BAD_MOVES)
def test_malformed_move_bodies(client, content, status, match):
    state = new_game(client, seed=12)
    refused(client, state["id"], "POST", f"/api/games/{state['id']}/move", status, match,
            content=content, headers={"content-type": "application/json"})


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_refused(client, kind):
    """What ``curl -d`` sends: the answer names the Content-Type it needs."""
    state = new_game(client, seed=13)
    sent = f"this request's: '{kind}'" if kind else "none was sent"
    refused(client, state["id"], "POST", f"/api/games/{state['id']}/move", 422,
            re.escape(f"send it with Content-Type: application/json ({sent})"),
            content=b'{"action": 0, "step": 0}', headers={"content-type": kind} if kind else {})


# -- many games, a slow bot, eviction -------------------------------------------------------

def test_twenty_interleaved_games_stay_intact(app, client):
    kinds = [("dice", 2, ["expert"]), ("cards", 2, ["greedy"]), ("dice", 4, ["random"]),
             ("cards", 3, ["random", "expert"])]
    states = [new_game(client, game=g, num_players=n, bots=b, seed=i)
              for i, (g, n, b) in enumerate(kinds * 5)]
    rngs = [random.Random(i) for i in range(len(states))]
    while not all(s["done"] for s in states):
        for i, state in enumerate(states):
            assert client.get(f"/api/games/{state['id']}").json() == state
            states[i], _ = play_out(client, state, rngs[i], moves=1)
    for state in states:
        check_against_replay(client, state)
    assert len({s["id"] for s in states}) == 20 and app.state.store.peak >= 20


class SlowBot:
    """Takes ``delay`` seconds over each choice (the lowest legal action); ``thinking``
    is set while it sleeps. One bot for every game: the server's copy is itself."""
    name = "slow"

    def __init__(self, delay):
        self.delay, self.thinking = delay, threading.Event()

    def __deepcopy__(self, memo):
        return self

    def act(self, observation, mask):
        self.thinking.set()
        time.sleep(self.delay)
        self.thinking.clear()
        return int(np.flatnonzero(mask)[0])


@pytest.fixture
def slow_app():
    """An app offering ``slow`` (a :class:`SlowBot` of 1.5 s, shared: ``app.slow``) and
    ``random``, through a loader registered as a user would."""
    shipped, bot = opponent_loader(), SlowBot(0.0)

    def loader(spec, game, num_players):
        return bot if spec == "slow" else shipped(spec, game=game, num_players=num_players)

    register_loader(loader)
    try:
        app = create_app(bots=["slow", "random"])
    finally:
        register_loader(None)
    bot.delay, app.slow = 1.5, bot
    return app


def test_a_slow_bot_blocks_no_other_game(slow_app):
    async def timed(call):
        start = time.perf_counter()
        response = await call
        return response, time.perf_counter() - start

    async def scenario():
        transport = httpx.ASGITransport(app=slow_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            body = {"game": "dice", "num_players": 2, "seed": 1}
            slow = (await http.post("/api/games", json={**body, "bots": ["slow"]}))
            assert slow.status_code == 201, slow.text
            slow = slow.json()
            quick = (await http.post("/api/games", json={**body, "bots": ["random"]})).json()
            while slow["phase"] != "entry":  # roll, keep: the bot does not think yet
                slow = (await http.post(f"/api/games/{slow['id']}/move", json={
                    "action": slow["legal"][-1]["action"], "step": slow["step"]})).json()
            entry = asyncio.create_task(timed(http.post(
                f"/api/games/{slow['id']}/move",
                json={"action": slow["legal"][-1]["action"], "step": slow["step"]})))
            await asyncio.to_thread(slow_app.slow.thinking.wait, 5)
            others = await asyncio.gather(
                timed(http.get(f"/api/games/{quick['id']}")),
                timed(http.post(f"/api/games/{quick['id']}/move", json={
                    "action": quick["legal"][0]["action"], "step": quick["step"]})),
                timed(http.get(f"/api/games/{slow['id']}")),
                timed(http.post(f"/api/games/{slow['id']}/move", json={
                    "action": slow["legal"][0]["action"], "step": slow["step"]})))
            busy_while = not entry.done()
            return slow, others, await entry, busy_while

    slow, others, (entry, entry_s), busy_while = asyncio.run(scenario())
    (get_quick, get_s), (move_quick, move_s), (get_slow, _), (again, _) = others
    assert busy_while and entry.status_code == 200 and entry_s >= 1.5
    assert get_quick.status_code == move_quick.status_code == 200
    assert get_s < 1.0 and move_s < 1.0, (get_s, move_s)
    assert get_slow.json() == slow  # the snapshot: no half-made step, no wait
    assert again.status_code == 409 and "busy" in again.json()["detail"]


def test_a_checkpoint_is_read_once_at_startup(tmp_path):
    """A checkpoint the server offers plays the same after its file is broken or gone
    (training rewrites runs/<name>/final.pt): each game copies the bot loaded at startup."""
    from agents.load import PRETRAINED_DIR

    mine = tmp_path / "mine.pt"
    mine.write_bytes((PRETRAINED_DIR / "dice-2p.pt").read_bytes())
    client = TestClient(create_app(bots=[str(mine), f"search[person]:{mine}"]))

    def game(bot):
        state = new_game(client, seed=2, bots=[bot])
        play_out(client, state, random.Random(0))
        return client.get(f"/api/games/{state['id']}/record").json()["actions"]

    before = [game(bot) for bot in (str(mine), f"search[person]:{mine}")]
    mine.write_bytes(b"not a checkpoint")
    assert [game(bot) for bot in (str(mine), f"search[person]:{mine}")] == before
    mine.unlink()
    assert [game(bot) for bot in (str(mine), f"search[person]:{mine}")] == before


def test_the_least_recently_used_finished_game_is_evicted_first():
    app = create_app(bots=["random"], max_games=3)
    client = TestClient(app)
    a, b, c = (new_game(client, seed=i) for i in range(3))
    play_out(client, b, random.Random(0))
    client.get(f"/api/games/{a['id']}")
    new_game(client, seed=3)  # evicts b, the finished one, though c is used less lately
    assert client.get(f"/api/games/{b['id']}").status_code == 404
    assert c["id"] in app.state.store  # (a GET would make c the most recently used)
    new_game(client, seed=4)  # none finished: evicts c, the least recently used
    assert client.get(f"/api/games/{c['id']}").status_code == 404
    assert client.get(f"/api/games/{a['id']}").status_code == 200
    assert len(app.state.store) == app.state.store.peak == 3


@pytest.mark.parametrize("bots,match", [
    (["pretrained:dice-2p"], "offered: none (no configured bot loads for this player count)"),
    ([], "this server offers no bot for the dice game with 3 players (its bots: "
         "pretrained:dice-2p); choose another player count")])
def test_a_player_count_without_bots_is_refused_naming_it(bots, match):
    """A server of 2-player networks seats nobody at a 3-player table: the refusal says
    so, not "solo only" or "expected one name"."""
    client = TestClient(create_app(bots=["pretrained:dice-2p"]))
    response = client.post("/api/games", json={"game": "dice", "num_players": 3, "bots": bots})
    assert response.status_code == 422, response.text
    assert response.json()["detail"].endswith(match), response.text


def test_bad_server_configurations():
    with pytest.raises(ValueError, match="bot 'nobody' loads for no game"):
        create_app(bots=["random", "nobody"])
    shipped = opponent_loader()

    def loader(spec, game, num_players):  # a bot holding a lock cannot be copied per game
        return threading.Lock() if spec == "locked" else shipped(spec, game=game,
                                                                 num_players=num_players)
    register_loader(loader)
    try:
        with pytest.raises(ValueError, match="bot 'locked' cannot be copied for each new game"):
            create_app(bots=["random", "locked"])
    finally:
        register_loader(None)
    with pytest.raises(ValueError, match="listed twice"):
        create_app(bots=["random", "random"])
    for bots in ("expert", None):  # "expert" was e, x, p, e, r, t: "bot 'e' is listed twice"
        with pytest.raises(ValueError, match=re.escape(f"bots must be a list of bot names, "
                                                       f"got {bots!r} (one bot: [{bots!r}])")):
            create_app(bots=bots)
    with pytest.raises(ValueError, match="max_games must be a positive integer"):
        create_app(bots=["random"], max_games=0)


# -- fuzz: bad and malicious requests against a real server --------------------------------

@pytest.fixture(scope="module")
def server(app):
    """The module's app served by uvicorn on a free localhost port, in a thread: its URL."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for _ in range(100):
        if uv.started:
            break
        time.sleep(0.05)
    yield url
    uv.should_exit = True
    thread.join(10)


JUNK = [None, True, False, 0, -1, 1.5, 1e308, 2**64, -2**70, "", "x" * 300, "1",
        "../../etc/passwd", [], [1, 2], {}, {"a": {"b": [None]}}, "\u0000", "🎲"]
BOT_PATHS = ["../../etc/passwd", "/tmp/x.pt", "pretrained:../x", "pretrained:/etc/passwd",
             "lookahead:pretrained:dice-2p", "agents/pretrained/dice-2p.pt", "C:\\x.pt",
             "expert\u0000", "EXPERT", " random", "file:///etc/passwd"]


def bad_create(rng):
    body = {"game": rng.choice(["dice", "cards"]), "num_players": 2, "bots": ["random"]}
    spoil = rng.randrange(4)
    if spoil == 0:
        body["bots"] = [rng.choice(BOT_PATHS)]
    elif spoil == 1:
        body[rng.choice(["game", "num_players", "bots", "seat", "seed"])] = \
            rng.choice([j for j in JUNK if j not in (0, {}, [])])
    elif spoil == 2:
        body[rng.choice(["action", "step", "id", "__proto__", "Game"])] = rng.choice(JUNK)
    else:
        return {"json": rng.choice([[body], "dice", 7, None])}
    return {"json": body}


def bad_move(rng, state):
    """A move the game must refuse: stale or out of turn, illegal, or malformed."""
    legal = [c["action"] for c in state["legal"]] or [0]
    kind = rng.randrange(4)
    if kind == 0:  # out of turn: a legal action at another step
        step = state["step"] + rng.choice([-3, -1, 1, 2, 10**6]) if state["step"] else 1
        return {"json": {"action": rng.choice(legal), "step": step}}
    if kind == 1:
        return {"json": {"action": rng.choice([a for a in range(200) if a not in legal] +
                                              [2**31, 2**40, -5]), "step": state["step"]}}
    if kind == 2:
        return {"json": {"action": rng.choice(JUNK), "step": rng.choice([state["step"], *JUNK])}}
    return {"content": rng.choice([b"", b"{", b"null", b'{"action":1,,}', b"\xff\xfe",
                                   b'{"action": 1, "step": 0}' * 2000]),
            "headers": {"content-type": rng.choice(["application/json", "text/plain"])}}


def bad_request(rng, states):
    """One (method, path, request keywords) that the server must answer with a 4xx."""
    ids = [s["id"] for s in states]
    state = rng.choice(states)
    kind = rng.choice([0, 1, 1, 1, 2, 3, 4, 5, 6, 7])  # moves the most: stale, illegal, junk
    if kind == 0:
        return "POST", "/api/games", bad_create(rng)
    if kind == 1:
        return "POST", f"/api/games/{state['id']}/move", bad_move(rng, state)
    if kind == 2:
        unknown = ["x", "0" * 22, "..%2F..%2Fetc%2Fpasswd", "%00", "a" * 3000, ids[0][:-1],
                   "Z" + ids[0][1:] if ids[0][0] != "Z" else "Y" + ids[0][1:]]
        return (rng.choice(["GET", "POST"]), f"/api/games/{rng.choice(unknown)}"
                f"{rng.choice(['', '/move', '/record'])}", {"json": {"action": 0, "step": 0}})
    if kind == 3:  # wrong methods
        return (rng.choice(["PUT", "DELETE", "PATCH"]),
                rng.choice(["/api/games", f"/api/games/{state['id']}", "/api/options",
                            f"/api/games/{state['id']}/move"]), {"json": {}})
    if kind == 4:  # a move by GET, the record of a game that is not over
        running = rng.choice([s for s in states if not s["done"]])
        return "GET", rng.choice([f"/api/games/{state['id']}/move",
                                  f"/api/games/{running['id']}/record"]), {}
    if kind == 5:  # nested deeper than the JSON parser goes
        return ("POST", rng.choice(["/api/games", f"/api/games/{state['id']}/move"]),
                {"content": b"[" * rng.choice([10, 5000, 16000]),
                 "headers": {"content-type": "application/json"}})
    if kind == 6:  # oversized, declared or sent in chunks
        big = b" " * 17000 + b"{}"
        return "POST", "/api/games", {"content": rng.choice([big, iter([big[:9000], big[9000:]])]),
                                      "headers": {"content-type": "application/json"}}
    return "GET", rng.choice(["/static/../../etc/passwd", "/static/%2e%2e/app.py",
                              "/static/..%2F__init__.py", "/api/../../etc/passwd",
                              "/api/nothing"]), {}


def test_fuzz_bad_and_malicious_requests(client, server):
    """240 bad requests to a real server: each answered 4xx with a JSON detail, no game
    changed, the server still up and the games still playable."""
    rng = random.Random(2026)
    states = [new_game(client, game=g, bots=[b], seed=i) for i, (g, b) in enumerate(PAIRS)]
    states[0], _ = play_out(client, states[0], rng)  # a finished game too
    states[1], _ = play_out(client, states[1], rng, moves=3)
    with httpx.Client(base_url=server, timeout=30) as http:
        for _ in range(240):
            method, path, kwargs = bad_request(rng, states)
            response = http.request(method, path, **kwargs)
            assert 400 <= response.status_code < 500, (method, path, kwargs, response.text)
            assert response.json()["detail"], (method, path, response.text)
        for state in states:
            assert http.get(f"/api/games/{state['id']}").json() == state
    for state in states[1:3]:
        check_against_replay(client, play_out(client, state, rng)[0])


# -- the command line ---------------------------------------------------------------------

@pytest.mark.parametrize("argv,match", [
    (["--port", "70000"], "--port: must be an integer in 0..65535"),
    (["--port", "x"], "--port: must be an integer"),
    (["--max-games", "0"], "--max-games: must be a positive integer"),
    (["--bots", "random,,expert"], "--bots: must be comma-separated bot names"),
    (["--colour", "red"], "unrecognized arguments"),
])
def test_cli_argument_errors(capsys, argv, match):
    from qwinto_env.web.__main__ import main
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and match in capsys.readouterr().err


@pytest.mark.parametrize("argv,match", [
    (["--bots", "random,../../etc/passwd"], "error: bot '../../etc/passwd' loads for no game"),
    (["--host", "no-such-host.invalid"], "error: cannot listen on no-such-host.invalid:8000"),
])
def test_cli_refuses_what_cannot_serve(capsys, argv, match):
    from qwinto_env.web.__main__ import main
    assert main(argv) == 2 and match in capsys.readouterr().err


def test_cli_refuses_a_port_another_server_took_while_loading(capsys, monkeypatch):
    """Two servers started together on one port: the one still loading its bots holds
    the port already, so the second says so and exits 2 (no traceback, no address)."""
    import uvicorn

    from qwinto_env.web.__main__ import _listen, main

    def serve(*args, **kwargs):
        raise AssertionError("a second server was started on the port")
    monkeypatch.setattr(uvicorn.Server, "run", serve)
    first = _listen("127.0.0.1", 0)  # what main holds while create_app loads the bots
    try:
        port = first.getsockname()[1]
        assert main(["--port", str(port), "--bots", "random"]) == 2
    finally:
        first.close()
    out, err = capsys.readouterr()
    assert f"error: cannot listen on 127.0.0.1:{port}: [Errno" in err and "Qwinto:" not in out


def test_cli_ctrl_c_while_the_bots_load_is_one_line(capsys, monkeypatch):
    """Loading the networks takes seconds; Ctrl-C meanwhile ends the command with one
    line and status 130, not a traceback."""
    from qwinto_env.web import __main__ as cli

    def interrupted(**kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "create_app", interrupted)
    with pytest.raises(SystemExit) as stop:
        try:
            cli.main(["--port", "0"])
        except KeyboardInterrupt:  # (pytest would stop the whole run)
            pytest.fail("Ctrl-C while loading ended in a traceback")
    assert stop.value.code == 130
    assert capsys.readouterr().err == "python -m qwinto_env.web: error: interrupted\n"


@pytest.mark.parametrize("host,line", [
    ("0.0.0.0", r"open http://127\.0\.0\.1:(\d+)/ in a browser here; on other computers, "
                r"http://<this computer's address>:\1/"),
    ("localhost", r"open http://127\.0\.0\.1:(\d+)/ in a browser")])
def test_cli_prints_an_address_a_browser_opens(capsys, monkeypatch, host, line):
    """Served to the network (``--host 0.0.0.0``, for friends), the printed address is
    one a browser opens here, and says what the others type: not http://0.0.0.0:port/."""
    import uvicorn

    from qwinto_env.web.__main__ import main

    monkeypatch.setattr(uvicorn.Server, "run", lambda *args, **kwargs: None)
    assert main(["--host", host, "--port", "0", "--bots", "random"]) == 0
    assert re.fullmatch(f"Qwinto: {line}\n", capsys.readouterr().out)


def test_cli_starts_on_a_free_port_and_prints_its_address(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(
        [sys.executable, "-m", "qwinto_env.web", "--port", "0", "--bots", "random,expert"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        line = process.stdout.readline()
        match = re.fullmatch(r"Qwinto: open (http://127\.0\.0\.1:(\d+)/) in a browser\n", line)
        assert match and match.group(2) != "0", line
        for _ in range(200):
            try:
                options = httpx.get(match.group(1) + "api/options", timeout=5).json()
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert options["bots"]["dice"]["2"] == ["random", "expert"]
        # Its output is a pipe nobody reads from here on: 2,000 requests (an access log
        # line each would be over 100 KB, past a pipe's buffer) must all be answered.
        with httpx.Client(base_url=match.group(1), timeout=10) as http:
            assert all(http.get("api/options").status_code == 200 for _ in range(2000))
    finally:
        process.terminate()
        process.wait(10)


def test_the_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    scripts = re.findall(r'src="(/static/[^"]+)"', page.text)
    assert scripts and all(client.get(s).status_code == 200 for s in scripts)
    assert client.get("/static/../session.py").status_code == 404


def test_head_asks_for_the_page_and_its_files(client):
    """``curl -I`` (HEAD) on the address the server prints, as on its files: 200 and the
    headers, no body."""
    for path in ("/", "/static/app.js"):
        response = client.head(path)
        assert response.status_code == 200 and not response.content, (path, response.text)
        assert response.headers["content-type"].startswith(("text/html", "text/javascript"))


@pytest.mark.parametrize("answer, error", [("raise RuntimeError('out of coffee')",
                                            "RuntimeError: out of coffee"),
                                           ("return 1.5", "BotActionError: bot Broken")])
def test_a_failing_bot_is_named_in_a_json_500_and_the_game_kept(answer, error, tmp_path,
                                                                monkeypatch):
    """A server's own bot (``module:Class``) that raised or answered no action gave a
    plain-text 'Internal Server Error' that the page showed as 'the server answered 500'."""
    module = f"webbots_{len(answer)}"  # one module per case: imports are cached
    (tmp_path / f"{module}.py").write_text(
        "from agents.base import Agent\n\nclass Broken(Agent):\n"
        f"    def act(self, observation, action_mask):\n        {answer}\n")
    monkeypatch.syspath_prepend(tmp_path)
    spec = f"{module}:Broken"
    client = TestClient(create_app(bots=[spec]), raise_server_exceptions=False)
    state = client.post("/api/games", json={"game": "dice", "num_players": 2, "seed": 1,
                                            "bots": [spec]}).json()
    for _ in range(50):
        answer_ = client.post(f"/api/games/{state['id']}/move", json={
            "action": state["legal"][-1]["action"], "step": state["step"]})
        if answer_.status_code != 200:
            break
        state = answer_.json()
    assert answer_.status_code == 500
    detail = answer_.json()["detail"]
    assert detail.startswith(f"player 1 ({spec}) failed at step {state['step']}: {error}")
    assert detail.endswith("the game cannot go on, start a new one")
    assert client.get(f"/api/games/{state['id']}").json() == state
