"""Property tests over many random legal dice games, checked step by step against the rules."""

import numpy as np
from hypothesis import given, settings, strategies as st

import qwinto_env
from qwinto_env import rules
from qwinto_env.dice import PASS

MAX_STEPS = 3 * 6 * 31  # a turn is 3 steps; each turn someone writes or misthrows


def reference_observation(infos, me, agents):
    """The observation as documented in qwinto_env.parallel's table, built from infos."""
    n = len(agents)
    seats = [agents[(me + k) % n] for k in range(n)]
    out = []
    for agent in seats:
        out += list(infos[agent]["sheet"].reshape(-1) / 18)
        out += [1.0 if i < infos[agent]["misthrows"] else 0.0 for i in range(4)]
    active = infos[agents[0]]["active_player"]
    out += [1.0 if (me + k) % n == active else 0.0 for k in range(n)]
    phase = infos[agents[0]]["phase"]
    out += [1.0 if phase == p else 0.0 for p in ("choose", "reroll", "entry")]
    roll = infos[agents[0]]["roll"]
    colours = roll["colours"] if roll else ()
    out += [1.0 if c in colours else 0.0 for c in rules.ROW_NAMES]
    out += [1.0 if roll and roll["value"] == v else 0.0 for v in range(1, 19)]
    out += [1.0 if infos[agents[0]]["reroll_available"] else 0.0]
    return np.array(out, dtype=np.float32)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 6),
       pass_bias=st.floats(0.0, 0.9))
def test_random_games_obey_the_rules(seed, players, pass_bias):
    env = qwinto_env.parallel_env(num_players=players, reward="score")
    agents = env.possible_agents
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    for step in range(MAX_STEPS):
        if not env.agents:
            break
        phase, active = infos[agents[0]]["phase"], infos[agents[0]]["active_player"]
        before = {a: (infos[a]["sheet"].copy(), infos[a]["misthrows"]) for a in agents}
        actions = {}
        for a in env.agents:
            legal = np.flatnonzero(obs[a]["action_mask"])
            # pass_bias makes some games end on misthrows, others on full rows
            actions[a] = PASS if PASS in legal and rng.random() < pass_bias else int(rng.choice(legal))
        if phase == "entry":
            value = infos[agents[0]]["roll"]["value"]
            rows = [rules.ROW_NAMES.index(c) for c in infos[agents[0]]["roll"]["colours"]]
            for a in agents:
                mask = obs[a]["action_mask"]
                for cell in range(27):
                    expected = cell // 9 in rows and rules.can_write(before[a][0], cell // 9, cell % 9, value)
                    assert bool(mask[cell]) == expected
                assert mask[PASS] == 1
        obs, rewards, terms, truncs, infos = env.step(actions)
        for i, a in enumerate(agents):
            sheet, misthrows = infos[a]["sheet"], infos[a]["misthrows"]
            rules.check_sheet(sheet)
            assert infos[a]["score"] == rules.score(sheet, misthrows)
            assert rewards[a] == infos[a]["score"] - rules.score(*before[a])
            written = int((sheet != before[a][0]).sum())
            assert written <= (1 if phase == "entry" else 0)          # one entry per roll
            assert (before[a][0][before[a][0] > 0] == sheet[before[a][0] > 0]).all()  # never changes
            gained = misthrows - before[a][1]
            assert gained == (1 if phase == "entry" and i == active and actions[a] == PASS else 0)
            assert np.array_equal(obs[a]["observation"], reference_observation(infos, i, agents))
            assert np.array_equal(env.game._allowed[i], rules.cells_allowed_values(env.game.cells[i]))
        over = any(rules.full_rows(infos[a]["sheet"]) >= 2 or infos[a]["misthrows"] >= 4 for a in agents)
        assert all(terms.values()) == over
    assert not env.agents, "the game did not end"
