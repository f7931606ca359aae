"""``gymnasium.make("Qwinto-v0", ..., infos="numeric")``: the table's numeric infos and
Qwinto-v0's own keys, only ints and int64 arrays of the shapes the spec declares
(``SPECS[game].learner_numeric_infos(n)``) at every step and reset, telling what the full
infos tell; ``gymnasium.make_vec`` stacks them into int arrays and Tianshou's replay
buffer takes them (it refuses the full infos, which is why the option exists)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import qwinto_env
from qwinto_env.spec import SPECS
from qwinto_env.spec.cards import EMPTY_PILE_RULES
from tests.numeric_infos import check_tianshou_takes_only_numeric, shapes, tianshou_buffer

GAMES = ["dice", "cards"]


def make(game: str, players: int, **kwargs):
    return gymnasium.make("Qwinto-v0", game=game, num_players=players, **kwargs)


def episode_infos(env, seed: int, forgive: bool = False):
    """Every infos of a masked-random learner's episode, the reset's first; with
    ``forgive`` (an env made with ``illegal_action="pass"``) some actions are illegal."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    yield info
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, _, done, _, info = env.step(99 if forgive and rng.random() < 0.3 else action)
        yield info


@settings(max_examples=40, deadline=None)
@given(game=st.sampled_from(GAMES), players=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       forgive=st.booleans())
def test_every_step_has_the_declared_keys_and_shapes(game, players, seed, forgive):
    options = {"empty_pile": EMPTY_PILE_RULES[seed % 3]} if game == "cards" else {}
    env = make(game, players, infos="numeric", learner_seat="random", random_start=True,
               illegal_action="pass" if forgive else "raise", **options)
    declared = SPECS[game].learner_numeric_infos(players)
    infos = list(episode_infos(env, seed, forgive))
    assert all(shapes(info) == declared for info in infos)
    assert any(info["illegal_action"] for info in infos) <= forgive


@pytest.mark.parametrize("game,players", [("dice", 2), ("dice", 3), ("cards", 2), ("cards", 3)])
def test_opponent_actions_has_room_for_the_most_decisions_and_no_more(game, players):
    rows = SPECS[game].max_opponent_decisions(players)
    most = max(int((info["opponent_actions"][:, 0] >= 0).sum())
               for seed in range(30)
               for info in episode_infos(make(game, players, infos="numeric",
                                              learner_seat="random"), seed))
    assert most == rows


def told(full: dict, game: str) -> dict:
    """Qwinto-v0's own numeric infos, as read from the full ones."""
    rows = [[a["seat"], SPECS[game].phases.index(a["phase"]), a["action"]]
            for a in full["opponent_actions"]]
    padding = SPECS[game].max_opponent_decisions(len(full["scores"])) - len(rows)
    return {"illegal_action": int(full["illegal_action"]), "learner_seat": full["learner_seat"],
            "scores": list(full["scores"]), "opponent_actions": rows + [[-1, -1, -1]] * padding,
            "skipped_steps": full["skipped_steps"]}


@pytest.mark.parametrize("game", GAMES)
def test_the_numbers_tell_what_the_full_infos_tell(game):
    for seed, players in ((0, 2), (1, 3), (2, 4)):
        kwargs = {"learner_seat": "random", "illegal_action": "pass"}
        full = episode_infos(make(game, players, **kwargs), seed, forgive=True)
        numeric = episode_infos(make(game, players, infos="numeric", **kwargs), seed,
                                forgive=True)
        for full_info, numeric_info in zip(full, numeric, strict=True):
            own = {key: np.asarray(numeric_info[key]).tolist() for key in told(full_info, game)}
            assert own == told(full_info, game)


@pytest.mark.parametrize("game", GAMES)
def test_make_vec_stacks_every_key_into_an_int_array(game):
    venv = gymnasium.make_vec("Qwinto-v0", num_envs=2, vectorization_mode="sync",
                              infos="numeric", game=game, num_players=3)
    declared = SPECS[game].learner_numeric_infos(3)
    rng = np.random.default_rng(0)
    obs, info = venv.reset(seed=0)
    finished = 0
    while finished < 3:  # across autoresets
        assert info.keys() == declared.keys() | {f"_{key}" for key in declared}
        assert {key: (info[key].dtype, info[key].shape[1:]) for key in declared} == \
            {key: (np.dtype(np.int64), shape) for key, shape in declared.items()}
        actions = [rng.choice(np.flatnonzero(mask)) for mask in obs["action_mask"]]
        obs, _, terminated, _, info = venv.step(np.array(actions))
        finished += int(terminated.sum())
    venv.close()


@pytest.mark.parametrize("bad", ["tensor", "Numeric", None, 1], ids=repr)
def test_a_bad_infos_value_is_refused_as_the_parallel_env_refuses_it(bad):
    with pytest.raises(ValueError) as parallel:
        qwinto_env.parallel_env(infos=bad)
    with pytest.raises(ValueError, match="unknown infos") as single:
        make("dice", 2, infos=bad)
    assert str(parallel.value) in str(single.value)


@pytest.mark.filterwarnings("ignore:You are using tensors with different shape")
@pytest.mark.parametrize("game", GAMES)
def test_tianshou_collects_numeric_infos_into_its_buffer_and_not_the_full_ones(game):
    pytest.importorskip("tianshou")
    from tianshou.algorithm.algorithm_base import Policy
    from tianshou.data import Batch

    class MaskedRandom(Policy):  # Tianshou's masked random policy reads obs.mask, a bool
        def forward(self, batch, state=None, **kwargs):
            mask = np.asarray(batch.obs.action_mask, dtype=bool)
            return Batch(act=np.where(mask, np.random.rand(*mask.shape), -1.0).argmax(-1))

    def collect(infos: str):
        def make_env():
            return make(game, 2, infos=infos, learner_seat="random")
        return tianshou_buffer(make_env, MaskedRandom(action_space=make_env().action_space))

    check_tianshou_takes_only_numeric(collect, SPECS[game].learner_numeric_infos(2))
