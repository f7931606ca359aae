"""The card game's ParallelEnv: PettingZoo conformance, seeding, hidden information,
the documented observation table, infos, rewards and bad input."""

import random

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

import qwinto_env
from qwinto_env import cards
from qwinto_env.cards import ENTRY, PASS, PLAY, CardGame
from qwinto_env.game import IllegalActionError
from tests.random_play import play, random_actions


def make(players=2, **kwargs):
    return qwinto_env.parallel_env(game="cards", num_players=players, **kwargs)


# -- PettingZoo's own checkers -----------------------------------------------------------

@pytest.mark.parametrize("players", [1, 2, 3, 4])
def test_parallel_api(players):
    parallel_api_test(make(players), num_cycles=1000)


@pytest.mark.parametrize("empty_pile", ["end", "no_draw"])
def test_parallel_api_with_other_empty_pile_rules(empty_pile):
    parallel_api_test(make(3, empty_pile=empty_pile), num_cycles=1000)


@pytest.mark.parametrize("players", [1, 2, 3, 4])
def test_aec_api(players):
    api_test(qwinto_env.env(game="cards", num_players=players), num_cycles=1000)


def test_render():
    render_test(lambda render_mode=None: qwinto_env.env(game="cards", render_mode=render_mode))


def test_aec_seed():
    seed_test(lambda: qwinto_env.env(game="cards", num_players=3), num_cycles=300)


def test_parallel_seed_with_unmasked_sampling():
    # PettingZoo's parallel seed test samples without masks: forgive illegal actions.
    parallel_seed_test(lambda: make(illegal_action="pass"))


# -- seeding --------------------------------------------------------------------------------

def flatten(history):
    out = []
    for obs, rewards, terms, infos in history:
        for agent in sorted(obs):
            out.append(obs[agent]["observation"].tobytes() + obs[agent]["action_mask"].tobytes())
            info = {k: v for k, v in infos[agent].items() if k != "sheet"}
            out.append(repr((rewards or {}).get(agent)) + repr((terms or {}).get(agent))
                       + repr(sorted(info.items())) + infos[agent]["sheet"].tobytes().hex())
    return out


def test_same_seed_same_trajectory_over_whole_games():
    for seed in range(4):
        a = flatten(play(make(4), seed=seed, rng_seed=seed))
        b = flatten(play(make(4), seed=seed, rng_seed=seed))
        assert a == b and len(a) > 20


def test_different_seeds_deal_differently_and_reset_continues_the_stream():
    env = make(3)
    deals = set()
    for seed in range(5):
        _, infos = env.reset(seed=seed)
        deals.add(repr([infos[a]["hand"] for a in env.agents] + [infos["player_0"]["stacks"]]))
    _, infos = env.reset()
    deals.add(repr([infos[a]["hand"] for a in env.agents] + [infos["player_0"]["stacks"]]))
    assert len(deals) == 6


def test_start_player_option():
    env = make(3)
    obs, infos = env.reset(seed=0, options={"start_player": 2})
    assert infos["player_0"]["active_player"] == 2
    assert obs["player_0"]["action_mask"].sum() == 1 and obs["player_2"]["action_mask"][PASS] == 0


def test_empty_pile_option_reaches_the_engine():
    assert make(2, empty_pile="end").game.empty_pile == "end"
    with pytest.raises(ValueError, match="empty_pile"):
        make(2, empty_pile="stop")


# -- hidden information -------------------------------------------------------------------------

def views(game, seat):
    """Everything the env shows ``seat``: observation, mask and infos (sheets as lists)."""
    env_like = game.features()[game.observation_index(seat)]
    info = {**game.public_info(), **game.private_info(seat)}
    return env_like.tobytes(), repr(game.legal_actions(seat)), repr(sorted(info.items()))


def advance(game, rng, steps):
    for _ in range(steps):
        if game.done:
            return
        game.step([rng.choice(game.legal_actions(s)) for s in range(game.num_players)])


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(2, 4), steps=st.integers(0, 40))
def test_observations_never_show_other_hands_or_the_pile_order(seed, players, steps):
    game = CardGame(players, seed=seed)
    rng = random.Random(seed)
    advance(game, rng, steps)
    me = rng.randrange(players)
    other = rng.choice([s for s in range(players) if s != me])
    mine = views(game, me)
    state = game.features()
    pile = game.draw_pile()
    assume(pile)   # the pile is empty between a refill that emptied it and the reshuffle
    # swap a card of the opponent's hand with a draw-pile card, then reorder the pile
    k = rng.randrange(len(game.hands[other]))
    j = rng.randrange(len(pile))
    game.hands[other][k], pile[j] = pile[j], game.hands[other][k]
    game.hands[other].sort()
    rng.shuffle(pile)
    game._pile[:] = pile[::-1]
    game._encode_all()
    game._legal = None
    assert views(game, me) == mine
    assert not np.array_equal(game.features(), state)   # the global state does see hands
    # and the observation does change with the player's own hand (the test can fail)
    game.hands[me][0], game._pile[-1] = game._pile[-1], game.hands[me][0]
    game.hands[me].sort()
    game._encode_all()
    assert views(game, me)[0] != mine[0]


def test_infos_hold_only_the_agents_own_hand():
    env = make(3)
    _, infos = env.reset(seed=4)
    game = env.game
    for seat, agent in enumerate(env.agents):
        assert infos[agent]["hand"] == tuple(cards.CARD_TUPLES[c] for c in game.hands[seat])
        public = game.public_info()
        assert "hand" not in public and "hands" not in public
    # the ansi rendering is a table view: hand sizes, never the cards in hand
    text = CardGame.render(game)
    assert "3 cards" in text
    assert all(cards.card_name(c) not in text.split("hands")[1].split("\n")[0]
               for h in game.hands for c in h)


# -- the documented observation ------------------------------------------------------------------

def feat(card):
    out = [0.0] * 12
    out[card // 8] = 1.0
    out[4 + card % 8] = 1.0
    return out


def reference_observation(game, me):
    """The observation built from the table in qwinto_env.cards's docstring."""
    n = game.num_players
    order = [(me + k) % n for k in range(n)]
    out = []
    for s in order:
        out += [v / 18 for v in game.cells[s]]
        out += [1.0 if i < game.misthrows[s] else 0.0 for i in range(4)]
        out += [len(game.hands[s]) / 3]
    out += [1.0 if s == game.active else 0.0 for s in order]
    hand = [x for c in game.hands[me] for x in feat(c)]
    out += hand + [0.0] * (36 - len(hand))
    out += [1.0 if game.phase == p else 0.0 for p in (PLAY, ENTRY)]
    for top in game.tops():
        out += feat(top)
    out += [len(game.draw_pile()) / 25]
    covered = game.covered_cards()
    out += [1.0 if c in covered else 0.0 for c in range(32)]
    stacks = [t for _, t in game.played]
    out += [1.0 if t in stacks else 0.0 for t in range(4)]
    out += [1.0 if stacks and stacks[-1] == t else 0.0 for t in range(4)]
    value = game.value if game.played else None
    out += [1.0 if value == v else 0.0 for v in range(1, 19)]
    out += [(value + 6) / 24 if value is not None else 0.0]
    colours = game.public_info()["roll"]["colours"] if game.played else ()
    out += [1.0 if c in colours else 0.0 for c in ("orange", "yellow", "purple")]
    return np.array(out, dtype=np.float32)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 4))
def test_observations_match_the_documented_table(seed, players):
    env = make(players, reward="score")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    while True:
        for seat, agent in enumerate(env.possible_agents):
            expected = reference_observation(env.game, seat)
            assert np.allclose(obs[agent]["observation"], expected, atol=1e-6)
            assert env.observation_space(agent)["observation"].contains(obs[agent]["observation"])
            mask = obs[agent]["action_mask"]
            assert mask.dtype == np.int8 and mask.sum() >= 1
            assert list(np.flatnonzero(mask)) == env.game.legal_actions(seat)
        if not env.agents:
            break
        obs, *_ = env.step(random_actions(env, obs, rng))


def test_observation_space_state_and_infos():
    env = make(3)
    obs, infos = env.reset(seed=0)
    space = env.observation_space("player_0")
    assert space["observation"].shape == (cards.observation_size(3),) == (33 * 3 + 149,)
    assert env.action_space("player_0").n == 88
    for agent in env.agents:
        assert space.contains(obs[agent])
    assert env.state().shape == env.state_space.shape == (3 * 32 + 3 + 3 * 36 + 113,)
    assert env.state_space.contains(env.state())
    dice_keys = set(qwinto_env.parallel_env(game="dice").reset(seed=0)[1]["player_0"])
    assert set(infos["player_0"]) >= dice_keys | {"played", "stacks", "pile_size",
                                                  "hand_sizes", "hand"}
    assert infos["player_0"]["roll"] == {"colours": (), "value": 0, "cards": ()}
    assert infos["player_0"]["played"] == ()
    obs, _, _, _, infos = env.step(random_actions(env, obs, np.random.default_rng(0)))
    roll = infos["player_1"]["roll"]
    assert infos["player_1"]["phase"] == "entry" and roll["value"] == env.game.value
    assert roll["cards"] == tuple(c for c, _ in infos["player_1"]["played"])


# -- rewards ---------------------------------------------------------------------------------------

def test_score_rewards_sum_to_final_score():
    env = make(3, reward="score")
    history = play(env, seed=7)
    totals = {a: sum(r[a] for _, r, _, _ in history[1:]) for a in env.possible_agents}
    final = history[-1][3]
    assert totals == {a: final[a]["score"] for a in env.possible_agents}


@pytest.mark.parametrize("reward", ["win", "margin"])
def test_terminal_rewards_only_at_the_end(reward):
    env = make(2, reward=reward)
    history = play(env, seed=3)
    assert all(r == {a: 0.0 for a in r} for _, r, _, _ in history[1:-1])
    scores = [history[-1][3][a]["score"] for a in env.possible_agents]
    last = history[-1][1]
    if reward == "margin":
        assert last["player_0"] == scores[0] - scores[1]
    else:
        assert sorted(last.values()) in ([-1.0, 1.0], [0.0, 0.0])


def test_solo_defaults_to_score():
    env = make(1)
    assert env.reward_kind == "score"
    history = play(env, seed=1)
    assert all(h[3]["player_0"]["active_player"] == 0 for h in history)


# -- bad input -----------------------------------------------------------------------------------

def env_snapshot(env):
    g = env.game
    return repr((g.hands, g.stacks, g.draw_pile(), g.cells, g.misthrows, g.active, g.phase,
                 g.played, g.value, g.features().tolist(), g.rng.getstate(), env.agents))


@pytest.mark.parametrize("actions, message", [
    ({"player_0": 88, "player_1": PASS}, "out of range"),
    ({"player_0": PASS, "player_1": PASS}, "not legal now"),      # playing is mandatory
    ({"player_0": 28, "player_1": 28}, "not legal now"),          # only the active plays
    ({"player_0": 0, "player_1": PASS}, "not legal now"),         # no entry before the play
    ({"player_0": 28}, "missing"),
    ({"player_0": 28.0, "player_1": PASS}, "integers"),
    ({"player_0": 28, "player_1": PASS, "player_7": PASS}, "not a live agent"),
])
def test_illegal_actions_raise_and_change_nothing(actions, message):
    env = make(2)
    env.reset(seed=0)
    before = env_snapshot(env)
    with pytest.raises(IllegalActionError, match=message) as err:
        env.step(actions)
    assert isinstance(err.value, ValueError)
    assert env_snapshot(env) == before


def test_unequal_double_play_is_illegal():
    env = make(2)
    for seed in range(50):
        obs, _ = env.reset(seed=seed)
        hand = env.game.hands[0]
        if len({cards.CARD_VALUE[c] for c in hand}) == 3:
            break
    assert obs["player_0"]["action_mask"][cards.DOUBLE_FIRST:].sum() == 0
    with pytest.raises(IllegalActionError, match="player_0"):
        env.step({"player_0": cards.DOUBLE_FIRST, "player_1": PASS})


def test_illegal_action_pass_mode_penalises_and_plays_the_default():
    env = make(2, illegal_action="pass", illegal_penalty=-2.0, reward="score")
    env.reset(seed=0)
    default = env.game.default_action(0)
    assert default == env.game.legal_actions(0)[-1]   # pass is not legal for the active player
    slots, stacks = cards.PLAYS[default]
    expected = [(env.game.hands[0][s], t) for s, t in zip(slots, stacks)]
    _, rewards, _, _, infos = env.step({"player_0": PASS, "player_1": 99})
    assert env.game.phase == ENTRY and env.game.played == expected
    assert rewards == {"player_0": -2.0, "player_1": -2.0}
    assert infos["player_0"]["illegal_action"] and infos["player_1"]["illegal_action"]


def test_step_after_game_over_raises():
    env = make(2)
    play(env, seed=2)
    with pytest.raises(IllegalActionError, match="game is over"):
        env.step({})


@pytest.mark.parametrize("players", [0, 5])
def test_bad_player_counts(players):
    with pytest.raises(ValueError, match="num_players"):
        make(players)


def test_render_ansi_shows_stacks_hand_counts_and_sheets():
    env = make(2, render_mode="ansi")
    obs, _ = env.reset(seed=0)
    env.step(random_actions(env, obs, np.random.default_rng(0)))
    text = env.render()
    assert "stacks" in text and "draw pile" in text and "played" in text
    assert "player 1: 3 cards" in text and "orange" in text and "XX" in text


def test_python_random_module_untouched():
    state = random.getstate()
    play(make(3), seed=1)
    assert random.getstate() == state


def test_reset_options_deck_fixes_the_deal():
    from qwinto_env import parallel_env
    deck = list(range(31, -1, -1))
    env = parallel_env(game="cards", num_players=2)
    env.reset(seed=1, options={"deck": deck})
    first = env.state().copy()
    env.reset(seed=2, options={"deck": deck})
    assert (env.state() == first).all()
    assert env.game.tops() == deck[:4]
    env.reset(seed=1, options={"deck": deck, "unrelated": 1})  # other keys are ignored
    assert env.game.tops() == deck[:4]
