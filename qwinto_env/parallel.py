"""PettingZoo ParallelEnv for Qwinto (dice game; card game with ``game="cards"``).

==================  ==========================================================
Import              ``from qwinto_env import parallel_env`` (AEC view: ``env``)
Agents              ``player_0`` .. ``player_{n-1}`` (dice: 1..6, 1 = solo)
Action space        ``Discrete(37)`` (dice)
Observation space   ``Dict(observation=Box(0, 1, (32n+25,), float32),
                    action_mask=Box(0, 1, (37,), int8))`` (dice)
Rewards             ``reward="win"`` (default), ``"margin"`` or ``"score"``
Parallel API        yes; every step is one decision point of every agent
==================  ==========================================================

Dice actions
------------
=========  ===================================================================
``0..26``  write the value in row ``a // 9`` (0 orange, 1 yellow, 2 purple),
           field ``a % 9`` (0..8, left to right, the gap skipped)
``27``     pass: write nothing. The active player's pass at entry is a misthrow.
           It is the only legal action of an agent with nothing to decide.
``28..34`` (active, choose phase) roll the dice subset with bitmask ``a - 27``:
           bit 0 orange, bit 1 yellow, bit 2 purple (28 orange, 34 all three)
``35``     (active, re-roll phase) keep the roll
``36``     (active, re-roll phase) re-roll the same dice; the second roll binds
=========  ===================================================================

A turn is three steps: choose dice, keep or re-roll, simultaneous entry.

The card game (``game="cards"``, 1..4 players, ``Discrete(88)``, observation size
``33n+149``, extra infos ``played``, ``stacks``, ``pile_size``, ``hand_sizes`` and the
agent's own ``hand``) has its action and observation tables in :mod:`qwinto_env.cards`.

Dice observation (ego-centric: "seat k" is the k-th seat after me, k=0 is me)
------------------------------------------------------------------------------
===================  =======  ====================================================
slice                size     content
===================  =======  ====================================================
``31k .. 31k+26``    27       seat k's sheet, cell ``r*9+f``: value / 18, 0 = empty
``31k+27 .. 31k+30`` 4        seat k's misthrows, thermometer (``i < misthrows``)
``31n .. 31n+n-1``   n        active player, one-hot by relative seat
next                 3        phase one-hot: choose, re-roll decision, entry
                              (all 0 once the game is over)
next                 3        colours rolled: orange, yellow, purple
next                 18       rolled value one-hot (1..18); all 0 before a roll
next                 1        re-roll still available
===================  =======  ====================================================

The ``action_mask`` (int8) marks the legal actions; it is never all zero. ``state()``
returns the same features in absolute seat order (seat 0 first).

Infos
-----
``infos[agent]`` holds ``sheet`` (3x9 ints), ``misthrows``, ``score`` (current score
by the scoring rules), ``phase`` (``"choose"``, ``"reroll"``, ``"entry"``,
``"over"``), ``roll`` (``{"colours", "dice", "value"}`` or ``None``),
``active_player`` (seat index) and ``reroll_available``.

Rewards
-------
* ``"win"`` (default for 2+ players): at the end, +1 to the winner, -1 to the others;
  ``k`` tied winners get ``1/k`` each; a tie of every player is a draw (0). It is the
  game's own objective and the benchmark convention of PettingZoo's classic games.
* ``"margin"``: at the end, own score minus the best other score.
* ``"score"`` (default in solo play): dense, the change of the agent's own score each
  step, so an episode's rewards sum to its final score.

Illegal actions
---------------
An out-of-range, masked-out, non-integer or missing action raises
:class:`~qwinto_env.game.IllegalActionError` (a ``ValueError``) naming the agent,
the action and the reason, and leaves the game untouched. With
``illegal_action="pass"`` an illegal action is replaced by the agent's default (pass
where legal, else the last legal action: roll all dice, re-roll) and the agent gets
``illegal_penalty`` added to its reward and ``infos[agent]["illegal_action"] = True``.

Seeding
-------
``reset(seed=s)`` seeds the game's generator; the same seed and the same actions
give the same trajectory. ``options={"start_player": i}`` fixes the first active
player; ``random_start=True`` draws it from the seeded generator at every reset. The card
game also takes ``options={"deck": order}`` to fix the deal (see :mod:`qwinto_env.cards`);
other keys are ignored.

Version history: v0, first release.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from .cards import CardGame
from .dice import DiceGame
from .game import Game, IllegalActionError, terminal_rewards

#: Game name -> engine class. Every engine follows :class:`qwinto_env.game.Game`.
GAMES: dict[str, Callable[..., Game]] = {"dice": DiceGame, "cards": CardGame}
REWARDS = ("win", "margin", "score")
ILLEGAL_ACTION_MODES = ("raise", "pass")


class QwintoParallelEnv(ParallelEnv):
    """Qwinto as a PettingZoo ParallelEnv; see the module docstring."""

    metadata = {"name": "qwinto_v0", "render_modes": ["ansi", "human"],
                "is_parallelizable": True}

    def __init__(self, game: str = "dice", num_players: int = 2, reward: str | None = None,
                 render_mode: str | None = None, illegal_action: str = "raise",
                 illegal_penalty: float = -1.0, random_start: bool = False,
                 **game_options: Any):
        if game not in GAMES:
            raise ValueError(f"unknown game {game!r}; choose one of {sorted(GAMES)}")
        self.game: Game = GAMES[game](num_players=num_players, **game_options)
        if reward is None:
            reward = "score" if self.game.num_players == 1 else "win"
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; choose one of {REWARDS}")
        if reward == "win" and self.game.num_players == 1:
            raise ValueError('reward="win" needs 2+ players; solo play has no winner '
                             '(use "score" or "margin")')
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}; choose one of "
                             f"{self.metadata['render_modes']} or None")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"unknown illegal_action {illegal_action!r}; choose one of "
                             f"{ILLEGAL_ACTION_MODES}")
        self.metadata = {**self.metadata, "name": f"qwinto_{game}_v0"}
        self.reward_kind = reward
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self.random_start = bool(random_start)
        self.possible_agents = [f"player_{i}" for i in range(self.game.num_players)]
        self.agents: list[str] = []
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        self._index = [self.game.observation_index(i) for i in range(self.game.num_players)]
        obs_size = len(self._index[0])
        n_actions = self.game.num_actions
        self._obs_spaces = {agent: spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, (obs_size,), np.float32),
            "action_mask": spaces.Box(0, 1, (n_actions,), np.int8),
        }) for agent in self.possible_agents}
        self._act_spaces = {agent: spaces.Discrete(n_actions) for agent in self.possible_agents}
        self._scores = [0] * self.game.num_players

    # -- spaces ----------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_spaces[agent]

    # -- episode -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        options = options or {}
        start = options.get("start_player")
        game = self.game
        if seed is not None:
            game.rng.seed(seed)
        if start is None:
            start = game.rng.randrange(game.num_players) if self.random_start else 0
        elif isinstance(start, bool) or not isinstance(start, (int, np.integer)) \
                or not 0 <= start < game.num_players:
            raise ValueError(f"options['start_player'] must be a seat in "
                             f"0..{game.num_players - 1}, got {start!r}")
        fixed = {key: options[key] for key in game.reset_options if key in options}
        game.reset(start_player=int(start), **fixed)
        self.agents = self.possible_agents[:]
        self._scores = game.scores()
        if self.render_mode == "human":
            self.render()
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise IllegalActionError("the table", actions,
                                     "the game is over (no live agents); call reset()")
        if not isinstance(actions, dict):
            raise IllegalActionError("the table", actions,
                                     "actions must be a dict {agent: action}")
        unknown = set(actions) - set(self.agents)
        if unknown:
            raise IllegalActionError(sorted(map(str, unknown)), [actions[a] for a in unknown],
                                     f"not a live agent (live: {self.agents})")
        joint, penalised = self._joint_action(actions)
        game = self.game
        game.step(joint, validate=False)

        scores = game.scores()
        if self.reward_kind == "score":
            rewards = [float(s - p) for s, p in zip(scores, self._scores)]
        elif game.done:
            rewards = terminal_rewards(scores, self.reward_kind)
        else:
            rewards = [0.0] * game.num_players
        self._scores = scores
        for seat in penalised:
            rewards[seat] += self.illegal_penalty

        observations = self._observations()
        infos = self._infos()
        for seat in penalised:
            infos[self.possible_agents[seat]]["illegal_action"] = True
        agents = self.agents
        rewards = dict(zip(agents, rewards))
        terminations = dict.fromkeys(agents, game.done)
        truncations = dict.fromkeys(agents, False)
        if game.done:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def _joint_action(self, actions: dict[str, Any]) -> tuple[list[int], list[int]]:
        """Validate the actions of all agents; the joint action and the penalised seats."""
        game = self.game
        joint, penalised = [], []
        for seat, agent in enumerate(self.agents):
            if agent not in actions:
                problem, action = "missing: every live agent must act every step", None
            else:
                action = actions[agent]
                problem = game.action_problem(seat, action)
            if problem is None:
                joint.append(int(action))
            elif self.illegal_action == "pass":
                joint.append(game.default_action(seat))
                penalised.append(seat)
            else:
                raise IllegalActionError(agent, action, problem)
        return joint, penalised

    # -- views -------------------------------------------------------------------
    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        game = self.game
        feats = game.features()
        n_actions = game.num_actions
        obs = {}
        legal = game.legal_action_lists()
        for seat, agent in enumerate(self.possible_agents):
            mask = np.zeros(n_actions, dtype=np.int8)
            mask[legal[seat]] = 1
            obs[agent] = {"observation": feats[self._index[seat]], "action_mask": mask}
        return obs

    def _infos(self) -> dict[str, dict[str, Any]]:
        game = self.game
        public = game.public_info()
        return {agent: {"sheet": game.sheet(seat), "misthrows": game.misthrows[seat],
                        "score": self._scores[seat], **public, **game.private_info(seat)}
                for seat, agent in enumerate(self.possible_agents)}

    def state(self) -> np.ndarray:
        """Global state for centralised critics: all features, absolute seat order."""
        return self.game.features()

    @functools.cached_property
    def state_space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, self.game.features().shape, np.float32)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = self.game.render()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


def parallel_env(game: str = "dice", num_players: int = 2, **kwargs: Any) -> QwintoParallelEnv:
    """Make the Qwinto ParallelEnv. See :mod:`qwinto_env.parallel` for every option."""
    return QwintoParallelEnv(game=game, num_players=num_players, **kwargs)


def env(game: str = "dice", num_players: int = 2, **kwargs: Any):
    """The AEC view of :func:`parallel_env`, through PettingZoo's ``parallel_to_aec``."""
    return parallel_to_aec(parallel_env(game=game, num_players=num_players, **kwargs))
