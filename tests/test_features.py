"""The policy's rule-derived features equal the rules module's allowed values."""

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from agents.features import CODE_SIZE, EXTRA_SIZE, SheetFeatures
from agents.policy import PolicyNetwork
from qwinto_env import rules


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
    assert encoded.shape == (len(batch), 27 + tail + CODE_SIZE["sheet"])
    assert np.array_equal(features.expand(encoded).numpy(), out)
    assert out.shape == (len(batch), 27 + tail + EXTRA_SIZE["sheet"])
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


def test_encoded_forward_equals_forward_for_both_feature_sets():
    obs = torch.rand(6, 89)
    for features in ("raw", "sheet"):
        net = PolicyNetwork(89, 37, hidden=[8], features=features)
        inputs = net.encode(obs)
        assert inputs.shape == (6, net.input_size)
        for a, b in zip(net(obs), net.forward_encoded(inputs)):
            assert torch.equal(a, b)
