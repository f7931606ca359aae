"""The policy's rule-derived features equal the rules module's allowed values."""

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

import pytest

from agents.features import PlayFeatures, SheetFeatures
from agents.policy import PolicyNetwork
from agents.trainers.config import ConfigError, load_config
from qwinto_env import cards, rules
from qwinto_env.cards import CardGame
from qwinto_env.view import decode_cards


@st.composite
def sheets(draw):
    cells = [0] * 27
    allowed = rules.cells_allowed_values(cells)
    for _ in range(draw(st.integers(0, 40))):
        cell, value = draw(st.integers(0, 26)), draw(st.integers(1, 18))
        if allowed[cell] >> value & 1:
            cells[cell] = value
            rules.allowed_after_write(allowed, cell, value)
    return cells


@settings(max_examples=200, deadline=None)
@given(st.lists(sheets(), min_size=1, max_size=4), st.integers(0, 60))
def test_sheet_features_match_the_rules(batch, tail):
    obs = np.zeros((len(batch), 27 + tail), dtype=np.float32)
    obs[:, :27] = np.array(batch) / 18
    features = SheetFeatures()
    out = features(torch.as_tensor(obs)).numpy()
    encoded = features.encode(torch.as_tensor(obs))
    assert encoded.shape == (len(batch), 27 + tail + features.code_size)
    assert np.array_equal(features.expand(encoded).numpy(), out)
    assert out.shape == (len(batch), 27 + tail + features.extra_size)
    assert np.array_equal(out[:, :27 + tail], obs)
    for b, cells in enumerate(batch):
        allowed = rules.cells_allowed_values(cells)
        bits = out[b, 27 + tail:27 + tail + 486].reshape(27, 18)
        expected = np.array([[allowed[c] >> v & 1 for v in range(1, 19)] for c in range(27)])
        assert np.array_equal(bits, expected)
        rows = out[b, 27 + tail + 486:].reshape(3, 18)
        assert np.array_equal(rows, expected.reshape(3, 9, 18).any(axis=1))


def test_network_with_features_round_trips_its_config():
    net = PolicyNetwork(89, 37, hidden=[8], features="sheet")
    clone = PolicyNetwork(89, 37, **net.config)
    clone.load_state_dict(net.state_dict())
    obs = torch.rand(5, 89)
    assert torch.equal(net(obs)[0], clone(obs)[0])


def test_encoded_forward_equals_forward_for_every_feature_set(observations):
    cases = [("raw", 89, observations("dice", 6)), ("sheet", 89, observations("dice", 6)),
             ("cards", 215, observations("cards", 6))]
    for features, size, obs in cases:
        net = PolicyNetwork(size, 37, hidden=[8], features=features)
        inputs = net.encode(obs)
        assert inputs.shape == (6, net.input_size)
        for a, b in zip(net(obs), net.forward_encoded(inputs)):
            assert torch.equal(a, b)


def _fits(cells, value: int, row: int) -> bool:
    allowed = rules.cells_allowed_values([int(c) for c in cells])
    return any(allowed[row * 9 + f] >> value & 1 for f in range(9))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 2 ** 31 - 1), st.integers(0, 200))
def test_play_features_match_what_each_play_announces(players, seed, moves):
    """Per play the hand allows (whoever is active): its value and the rows it lets me, or
    anyone else, write in, as cards.play_result and the writing rules say; zero for
    impossible plays and outside the play phase."""
    game, rng = CardGame(num_players=players), np.random.default_rng(seed)
    game.reset(seed=seed)
    for _ in range(moves):
        if game.done:
            break
        game.step([int(rng.choice(game.legal_actions(s))) for s in range(players)])
    feats = game.features()
    obs = np.array([feats[game.observation_index(s)] for s in range(players)], np.float32)
    features = PlayFeatures(obs.shape[1])
    out = features(torch.as_tensor(obs))
    assert torch.equal(features.expand(features.encode(torch.as_tensor(obs))), out)
    assert out.shape == (players, obs.shape[1] + features.extra_size)
    tail = out[:, obs.shape[1] + SheetFeatures.extra_size:].numpy()
    for seat in range(players):
        bits, values = tail[seat, :360].reshape(60, 6), tail[seat, 360:]
        view = decode_cards(obs[seat])
        for k, (action, (slots, _)) in enumerate(cards.PLAYS.items()):
            held = [view.hand[s] for s in slots if s < len(view.hand)]
            possible = len(held) == len(slots) and len({cards.CARD_VALUE[c] for c in held}) == 1
            if view.phase == cards.PLAY and view.active == 0:
                assert possible == (action in game.legal_actions(seat))
            if view.phase != cards.PLAY or not possible:
                assert values[k] == 0 and not bits[k].any()
                continue
            value, colours = cards.play_result(view.hand, view.tops, action)
            assert values[k] == pytest.approx(value / 18)
            for row in range(3):
                announced = bool(colours >> row & 1) and 1 <= value <= 18
                mine = announced and _fits(view.cells[0], value, row)
                others = announced and any(_fits(view.cells[s], value, row)
                                           for s in range(1, players))
                assert (bits[k, row], bits[k, 3 + row]) == (mine, others)


def test_play_features_need_a_card_game_observation():
    with pytest.raises(ValueError, match="card-game observation"):
        PolicyNetwork(89, 37, features="cards")
    with pytest.raises(ConfigError, match="network.features"):
        load_config(None, ["network.features=cards"])
    assert load_config(None, ["env.game=cards", "network.features=cards"]).network.features == "cards"
