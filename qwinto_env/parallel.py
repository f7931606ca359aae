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
A turn is three steps: the active player chooses the dice to roll (a colour subset),
then keeps the roll or re-rolls the same dice (the second roll binds), then everybody
writes the value in a field of their sheet or passes (the active player's pass is a
misthrow). Pass is the only legal action of an agent with nothing to decide. The action
ids, and the phase that offers each, are declared in :mod:`qwinto_env.spec.dice` (its
docstring has the table; ``PASS``, ``ROLLS``, ``KEEP``, ``REROLL`` by name).

The card game (``game="cards"``, 1..4 players, ``Discrete(88)``, observation size
``33n+149``, extra infos ``played``, ``stacks``, ``pile_size``, ``hand_sizes`` and the
agent's own ``hand``) has its action and observation tables in
:mod:`qwinto_env.spec.cards`.

Dice observation
----------------
Ego-centric ("seat k" is the k-th seat after me): every seat's sheet and misthrows, the
active player, the phase, the colours rolled, the rolled value and whether a re-roll is
left, ``32n+25`` floats in all; the slices are declared in :mod:`qwinto_env.spec.dice`
(its docstring has the table, :func:`~qwinto_env.spec.dice.observation_layout` the
layout by name).

The ``action_mask`` (int8) marks the legal actions; it is never all zero. ``state()``
returns the same features in absolute seat order (seat 0 first).

Infos
-----
With ``infos="full"`` (default), ``infos[agent]`` has the same keys, types and nested
keys on every step and reset (Gymnasium's vector envs stack infos key by key and fail on
a key whose type changes):

=====================  ===============  ==================================================
key                    type             content
=====================  ===============  ==================================================
``sheet``              3x9 int64 array  the agent's sheet (read-only), 0 = empty
``misthrows``          int              the agent's misthrows
``score``              int              its current score by the scoring rules
``phase``              str              ``"choose"``, ``"reroll"``, ``"entry"``, ``"over"``
``roll``               dict             ``colours`` (tuple of row names), ``dice``
                                        (orange, yellow, purple faces, 0 = not rolled),
                                        ``value`` (their sum); before a roll ``()``,
                                        ``(0, 0, 0)`` and 0
``active_player``      int              seat index of the active player
``reroll_available``   bool             the active player may still re-roll
``illegal_action``     bool             the agent's action was illegal and replaced
                                        (``illegal_action="pass"``); else ``False``
=====================  ===============  ==================================================

The card game's infos are listed in :mod:`qwinto_env.cards`'s ``CardGame.public_info``.

Libraries that make a tensor or an array of every info value fail on the strings, nested
dicts and growing tuples above: TorchRL's ``PettingZooWrapper`` and Tianshou's replay
buffer (through its ``PettingZooEnv``). For them ``infos="numeric"`` gives only ints
and (new, writable) int64 arrays, of the same keys and shapes on every step, reset and
end of a game and for every agent, as the spec's ``numeric_infos(num_players)``
declares (:data:`qwinto_env.spec.base.NUMERIC_INFOS` and each game's own):

=====================  ========  ==================================================
key                    shape     content
=====================  ========  ==================================================
``sheet``              (3, 9)    the agent's sheet, 0 = empty
``misthrows``          ()        the agent's misthrows
``score``              ()        its current score
``phase``              ()        the phase's index in the spec's ``phases`` (dice: 0
                                 choose, 1 reroll, 2 entry, 3 over)
``active_player``      ()        seat index of the active player
``reroll_available``   ()        1 if the active player may still re-roll, else 0
``roll_colours``       (3,)      1 for each colour rolled: orange, yellow, purple
``roll_value``         ()        the rolled value; 0 before a roll
``roll_dice``          (3,)      the faces rolled, 0 = not rolled (dice only)
``illegal_action``     ()        1 if the agent's action was replaced, else 0
=====================  ========  ==================================================

The card game's own numeric keys (``played``, ``stacks``, ``pile_size``,
``hand_sizes``, ``hand``) are listed in :func:`qwinto_env.spec.cards.numeric_infos`.

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
the action and the reason (and the ``illegal_action="pass"`` option), and leaves the
game untouched. The AEC view (:func:`env`) raises it at the ``step`` that gives the
action and does not store it, so the env goes on as if that call never happened.
With ``illegal_action="pass"`` an illegal action is replaced by the agent's default
(pass where legal, else the last legal action: roll all dice, re-roll) and the agent
gets ``illegal_penalty`` added to its reward and ``infos[agent]["illegal_action"] =
True``; it forgives out-of-range, masked-out and missing actions, but a value that is
no integer (``None`` from a live agent, ``"3"``, ``1.5``) still raises: that is a bug in
the caller, not a move.

AEC view
--------
:func:`env` is :class:`QwintoAECEnv` in PettingZoo's ``OrderEnforcingWrapper``: the
``parallel_to_aec`` conversion (the agents act in seat order, the last one's ``step``
steps the game) with the check above at every ``step`` and ``step(None)`` required of
done agents. Its ``unwrapped`` is the AEC env itself (as in PettingZoo's own AEC
games), so wrappers that edit the unwrapped env's rewards and terminations, such as
``TerminateIllegalWrapper``, work; the ParallelEnv is its ``env`` attribute and the
engine its ``game``.

Both views hand out ``agents`` and ``possible_agents`` as lists the caller may edit: the
envs step by their own copies (every seat acts every step until the game ends). An
agent name that is none of the table's is a ``KeyError`` naming it and the agents.

Seeding and options
-------------------
``reset(seed=s)`` seeds the game's generator; the same seed and the same actions
give the same trajectory. ``s`` is ``None`` or a non-negative integer (Python or
numpy: the same number gives the same trajectory), as in Gymnasium.
``options={"start_player": i}`` fixes the first active player; ``random_start=True``
draws it from the seeded generator at every reset. The card game also takes
``options={"deck": order}`` to fix the deal (see :mod:`qwinto_env.cards`); other keys
are ignored. A reset refused for a bad seed or option (a ``ValueError``)
changes nothing: the game in progress, its generator included, goes on.

The constructor takes the keyword arguments of :class:`QwintoParallelEnv` and the
engine's options (the card game's ``empty_pile``); any other raises a ``TypeError``
naming it and listing the accepted ones. Both games end by their rules within a bounded
number of steps, so truncations are ``False`` unless ``max_cycles=k`` (default ``None``,
as in PettingZoo's MPE and butterfly envs) is given: then the ``k``-th step of a game
that is not over truncates it (every live agent's truncation ``True``, no end-of-game
reward, ``agents`` empty).

Rendering
---------
``render_mode="ansi"`` makes ``render()`` return the sheets as text, ``"human"`` prints
them at every step, ``"rgb_array"`` returns the table drawn as the printed sheets, an
``HxWx3 uint8`` array of a size fixed by the game and player count (no hand is shown;
see :mod:`qwinto_env.image`). ``metadata["render_fps"]`` is the frame rate of a video
of one frame per step.

Version history: v0, first release.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable, Collection, Iterable, Mapping

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import AgentSelector
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from .cards import CardGame
from .dice import DiceGame
from .game import Game, IllegalActionError, check_seed, type_problem
from .image import draw
from .spec.base import check_reward, step_rewards

#: Game name -> engine class. Every engine follows :class:`qwinto_env.game.Game`.
GAMES: dict[str, Callable[..., Game]] = {"dice": DiceGame, "cards": CardGame}
ILLEGAL_ACTION_MODES = ("raise", "pass")
#: What ``infos[agent]`` holds (module docstring, Infos): every fact as Python values, or
#: only numbers of fixed shapes for libraries that make tensors or arrays of infos.
INFO_KINDS = ("full", "numeric")
#: Frames per second a video of the envs' ``rgb_array`` frames plays at (a step each).
RENDER_FPS = 2


def pass_hint(call: str, mode: str = "raise") -> str:
    """What an IllegalActionError tells the user who wants illegal actions forgiven;
    ``call`` is how that env is made with ``illegal_action="pass"``, ``mode`` the env's
    ``illegal_action`` (``"pass"`` still refuses what is no integer)."""
    if mode == "pass":
        return 'illegal_action="pass" replaces only integer actions (a value of another ' \
            'type is a bug in the caller)'
    return f"to play a default action with a penalty instead, make the env with {call}"


def keyword_names(function: Callable[..., Any]) -> list[str]:
    """The named keyword parameters of ``function`` (not ``self``, not ``**kwargs``)."""
    return [name for name, p in inspect.signature(function).parameters.items()
            if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def engine_options(game: str) -> list[str]:
    """The engine's own constructor options that the envs pass through (``empty_pile``).

    Not ``num_players`` (an env option itself) nor ``seed`` (``reset(seed=...)`` seeds).
    ValueError if ``game`` is not one of :data:`GAMES`.
    """
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; choose one of {sorted(GAMES)}")
    return [n for n in keyword_names(GAMES[game]) if n not in ("num_players", "seed")]


def env_options(game: str) -> list[str]:
    """Every keyword that :func:`parallel_env` and :func:`env` accept for ``game``."""
    return keyword_names(QwintoParallelEnv) + engine_options(game)


def check_max_cycles(max_cycles: Any) -> int | None:
    """``max_cycles`` if it is ``None`` or a positive integer, else ValueError."""
    if max_cycles is None:
        return None
    if isinstance(max_cycles, (bool, np.bool_)) or not isinstance(max_cycles, (int, np.integer)) \
            or max_cycles < 1:
        raise ValueError(f"max_cycles must be a positive integer (steps before truncation) "
                         f"or None, got {max_cycles!r}")
    return int(max_cycles)


def check_options(maker: str, given: Iterable[str], accepted: Collection[str],
                  hint: str = "") -> None:
    """Raise TypeError (as Python does for an unknown keyword) naming every option of
    ``given`` that ``maker`` (the call as the user wrote it) does not accept, listing the
    accepted ones, and adding ``hint``."""
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise TypeError(f"{maker} got unknown option(s) {', '.join(map(repr, unknown))}; "
                        f"accepted: {', '.join(sorted(accepted))}{hint}")


class QwintoParallelEnv(ParallelEnv):
    """Qwinto as a PettingZoo ParallelEnv; see the module docstring."""

    metadata = {"name": "qwinto_v0", "render_modes": ["ansi", "human", "rgb_array"],
                "render_fps": RENDER_FPS, "is_parallelizable": True}

    def __init__(self, game: str = "dice", num_players: int = 2, reward: str | None = None,
                 render_mode: str | None = None, illegal_action: str = "raise",
                 illegal_penalty: float = -1.0, random_start: bool = False,
                 max_cycles: int | None = None, infos: str = "full", **game_options: Any):
        check_options("qwinto_env.parallel_env()", game_options, env_options(game))
        self.game: Game = GAMES[game](num_players=num_players, **game_options)
        self._configure(reward, render_mode, illegal_action, illegal_penalty, random_start,
                        infos)
        self.max_cycles = check_max_cycles(max_cycles)
        self.num_steps = 0
        self.metadata = {**self.metadata, "name": f"qwinto_{game}_v0"}
        # The env steps by its own copies of the agent lists: a user who edits
        # ``agents`` or ``possible_agents`` must not change which seat acts.
        self._names = tuple(f"player_{i}" for i in range(self.game.num_players))
        self._live: tuple[str, ...] = ()
        self.possible_agents = list(self._names)
        self.agents: list[str] = []
        self._index = [self.game.observation_index(i) for i in range(self.game.num_players)]
        obs_size = len(self._index[0])
        n_actions = self.game.num_actions
        self._obs_spaces = {agent: spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, (obs_size,), np.float32),
            "action_mask": spaces.Box(0, 1, (n_actions,), np.int8),
        }) for agent in self._names}
        self._act_spaces = {agent: spaces.Discrete(n_actions) for agent in self._names}
        self._scores = [0] * self.game.num_players

    def _configure(self, reward: str | None, render_mode: str | None, illegal_action: str,
                   illegal_penalty: float, random_start: bool, infos: str) -> None:
        """Validate and set the env's settings (ValueError naming a bad one)."""
        reward = check_reward(reward, self.game.num_players)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}; choose one of "
                             f"{self.metadata['render_modes']} or None")
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"unknown illegal_action {illegal_action!r}; choose one of "
                             f"{ILLEGAL_ACTION_MODES}")
        if isinstance(illegal_penalty, (bool, np.bool_)) \
                or not isinstance(illegal_penalty, (int, float, np.integer, np.floating)) \
                or not math.isfinite(illegal_penalty):
            raise ValueError(f"illegal_penalty must be a finite number, got {illegal_penalty!r}")
        if not isinstance(random_start, (bool, np.bool_)):
            raise ValueError(f"random_start must be True or False, got {random_start!r}")
        if not isinstance(infos, str) or infos not in INFO_KINDS:
            raise ValueError(f"unknown infos {infos!r}; choose one of {INFO_KINDS}")
        self.reward_kind = reward
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self.random_start = bool(random_start)
        self.infos_kind = infos

    # -- spaces ----------------------------------------------------------------
    def seat(self, agent: str) -> int:
        """The seat of ``agent``; KeyError naming it and the table's agents if it is none."""
        try:
            return self._names.index(agent)
        except ValueError:
            raise KeyError(f"unknown agent {agent!r}; the agents are "
                           f"{', '.join(self._names)}") from None

    def observation_space(self, agent: str) -> spaces.Dict:
        self.seat(agent)  # a clear KeyError for an unknown agent
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        self.seat(agent)
        return self._act_spaces[agent]

    def check_action(self, agent: str, action: Any, call: str) -> None:
        """Raise the IllegalActionError this env gives ``agent``'s ``action`` before it
        plays: with ``illegal_action="raise"`` for any problem, with ``"pass"`` only for a
        value that is no integer (the rest is replaced when played); ``call`` is how the
        front-end at hand is made with ``illegal_action="pass"``, for the hint."""
        seat = self.seat(agent)
        problem = self.game.action_problem(seat, action) if self.illegal_action == "raise" \
            else type_problem(action)
        if problem is not None:
            raise IllegalActionError(agent, action, problem, pass_hint(call, self.illegal_action))

    # -- episode -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start a game (see Seeding and options in the module docstring)."""
        seed = check_seed(seed)
        start, fixed = self.check_reset_options(options)
        game = self.game
        if seed is not None:
            game.rng.seed(seed)
        if start is None:
            start = game.rng.randrange(game.num_players) if self.random_start else 0
        game.reset(start_player=start, **fixed)
        self._live = self._names
        self.agents = list(self._live)
        self.num_steps = 0
        self._scores = game.scores()
        if self.render_mode == "human":
            self.render()
        return self._observations(), self._infos()

    def check_reset_options(self, options: Mapping[str, Any] | None,
                            own: Collection[str] | None = None
                            ) -> tuple[int | None, dict[str, Any]]:
        """The start player (``None``: the default) and the engine's reset options
        from ``reset``'s ``options``; ValueError naming a bad one. Changes nothing.

        Other keys are ignored (PettingZoo's ``api_test`` resets with
        ``options={"options": 1}``), unless the caller gives its ``own`` option names:
        then a key that is neither one of those nor the table's is refused by name.
        """
        if options is None:
            return None, {}
        if not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {options!r}")
        accepted = {"start_player", *self.game.reset_options, *(own or ())}
        unknown = sorted(map(repr, set(options) - accepted)) if own is not None else []
        if unknown:
            raise ValueError(f"unknown reset option(s) {', '.join(unknown)} for the "
                             f"{self.game.name} game; accepted: {', '.join(sorted(accepted))}")
        start = options.get("start_player")
        if start is not None:
            start = self.game.check_start_player(start)
        return start, self.game.check_reset_options(options)

    def step(self, actions: dict[str, Any]):
        if not self._live:
            raise IllegalActionError("the table", actions, "no game in progress (reset() "
                                     "was not called or the game is over); call reset()")
        if not isinstance(actions, dict):
            raise IllegalActionError("the table", actions,
                                     "actions must be a dict {agent: action}")
        unknown = set(actions) - set(self._live)
        if unknown:
            raise IllegalActionError(sorted(map(str, unknown)), [actions[a] for a in unknown],
                                     f"not a live agent (live: {list(self._live)})")
        joint, penalised = self._joint_action(actions)
        game = self.game
        game.step(joint, validate=False)

        scores = game.scores()
        rewards = step_rewards(self._scores, scores, self.reward_kind, game.done)
        self._scores = scores
        for seat in penalised:
            rewards[seat] += self.illegal_penalty

        observations = self._observations()
        infos = self._infos(penalised)
        agents = self._live
        rewards = dict(zip(agents, rewards))
        self.num_steps += 1
        truncated = not game.done and self.num_steps == self.max_cycles
        terminations = dict.fromkeys(agents, game.done)
        truncations = dict.fromkeys(agents, truncated)
        if game.done or truncated:
            self._live = ()
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def _joint_action(self, actions: dict[str, Any]) -> tuple[list[int], list[int]]:
        """Validate the actions of all agents; the joint action and the penalised seats."""
        game = self.game
        joint, penalised = [], []
        for seat, agent in enumerate(self._live):
            if agent not in actions:
                problem, action = "missing: every live agent must act every step", None
            else:
                action = actions[agent]
                problem = game.action_problem(seat, action)
            if problem is None:
                joint.append(int(action))
            elif self.illegal_action == "pass" and (agent not in actions
                                                     or type_problem(action) is None):
                joint.append(game.default_action(seat))
                penalised.append(seat)
            else:
                raise IllegalActionError(agent, action, problem, pass_hint(
                    'qwinto_env.parallel_env(..., illegal_action="pass")', self.illegal_action))
        return joint, penalised

    # -- views -------------------------------------------------------------------
    def _observations(self) -> dict[str, dict[str, np.ndarray]]:
        game = self.game
        feats = game.features()
        n_actions = game.num_actions
        obs = {}
        legal = game.legal_action_lists()
        for seat, agent in enumerate(self._names):
            mask = np.zeros(n_actions, dtype=np.int8)
            mask[legal[seat]] = 1
            obs[agent] = {"observation": feats[self._index[seat]], "action_mask": mask}
        return obs

    def _infos(self, penalised: Collection[int] = ()) -> dict[str, dict[str, Any]]:
        """Every agent's infos of the env's ``infos`` kind; ``penalised``: the seats whose
        action was replaced."""
        game = self.game
        numeric = self.infos_kind == "numeric"
        public = {} if numeric else game.public_info()
        infos = {}
        for seat, agent in enumerate(self._names):
            if numeric:  # every agent's arrays its own and writable (torch warns on others)
                sheet = game.sheet(seat).copy()
                facts = {**game.numeric_public_info(), **game.numeric_private_info(seat)}
            else:
                sheet, facts = game.sheet(seat), {**public, **game.private_info(seat)}
            infos[agent] = {"sheet": sheet, "misthrows": game.misthrows[seat],
                            "score": self._scores[seat], **facts,
                            "illegal_action": (int if numeric else bool)(seat in penalised)}
        return infos

    def state(self) -> np.ndarray:
        """Global state for centralised critics: all features, absolute seat order."""
        return self.game.features()

    @functools.cached_property
    def state_space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, self.game.features().shape, np.float32)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return draw(self.game)
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


class QwintoAECEnv(AECEnv):
    """The AEC view of a :class:`QwintoParallelEnv` (see "AEC view" in the module docstring).

    It plays as PettingZoo's ``parallel_to_aec`` conversion does (the agents act in seat
    order; the last one's ``step`` steps the ParallelEnv), but ``step`` refuses a bad
    action before it is stored: an illegal action of a live agent (unless
    ``illegal_action="pass"``), and anything but ``None`` from a done agent, raise
    :class:`IllegalActionError` and leave the env as it was. It is its own class, not a
    subclass of the conversion, because PettingZoo's ``api_test`` refuses an
    ``unwrapped`` that is a conversion wrapper.
    """

    def __init__(self, parallel: QwintoParallelEnv):
        self.env = parallel
        self.metadata = {**parallel.metadata, "is_parallelizable": True}
        self.render_mode = parallel.render_mode
        self.possible_agents = list(parallel.possible_agents)
        self.state_space = parallel.state_space
        self.agents: list[str] = []

    @property
    def game(self) -> Game:
        """The game engine of the underlying ParallelEnv."""
        return self.env.game

    def observation_space(self, agent: str) -> spaces.Dict:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Discrete:
        return self.env.action_space(agent)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = self.env.agents[:]
        self.infos = dict(infos)
        self._actions: dict[str, Any] = {}
        self._selector = AgentSelector(self.env.agents[:])  # not ``agents``: a user may edit it
        self.agent_selection = self._selector.reset()
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self.env.seat(agent)  # a clear KeyError for an unknown agent
        return self._observations[agent]

    def state(self) -> np.ndarray:
        return self.env.state()

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if agent not in self.terminations:
            raise IllegalActionError(agent, action, "the game is over; call reset()")
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise IllegalActionError(agent, action, "the agent is done: its only "
                                         "action is None")
            self._was_dead_step(action)
            return
        self.env.check_action(agent, action, 'qwinto_env.env(..., illegal_action="pass")')
        self._actions[agent] = action
        if not self._selector.is_last():
            if self._selector.is_first():
                self._clear_rewards()
            self.agent_selection = self._selector.next()
            return
        actions, self._actions = self._actions, {}
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        self._observations, self.infos = obs, dict(infos)
        self.terminations, self.truncations = dict(terminations), dict(truncations)
        self.rewards, self._cumulative_rewards = dict(rewards), dict(rewards)
        if self.env.agents:
            self._selector = AgentSelector(self.env.agents[:])
            self.agent_selection = self._selector.reset()
        self._deads_step_first()

    def render(self) -> str | np.ndarray | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def raw_env(game: str = "dice", num_players: int = 2, **kwargs: Any) -> QwintoAECEnv:
    """The AEC view of :func:`parallel_env`, unwrapped."""
    check_options("qwinto_env.raw_env()", kwargs, env_options(game))
    return QwintoAECEnv(parallel_env(game=game, num_players=num_players, **kwargs))


def env(game: str = "dice", num_players: int = 2, **kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC view of :func:`parallel_env`: a :class:`QwintoAECEnv` in PettingZoo's
    ``OrderEnforcingWrapper``, as ``parallel_to_aec`` would wrap its conversion."""
    check_options("qwinto_env.env()", kwargs, env_options(game))
    return OrderEnforcingWrapper(raw_env(game=game, num_players=num_players, **kwargs))


def versioned_makers(game: str) -> tuple[Callable[..., Any], ...]:
    """``env``, ``raw_env`` and ``parallel_env`` of the module ``qwinto_<game>_v0``: the
    makers above with ``game`` fixed (a ``game`` keyword is a TypeError naming it)."""
    module = f"qwinto_{game}_v0"

    def fixed(maker: Callable[..., Any]) -> Callable[..., Any]:
        def make(num_players: int = 2, **kwargs: Any) -> Any:
            check_options(f"{module}.{maker.__name__}()", kwargs,
                          set(env_options(game)) - {"game", "num_players"})
            return maker(game=game, num_players=num_players, **kwargs)
        make.__name__ = make.__qualname__ = maker.__name__
        make.__doc__ = (f"{maker.__doc__.splitlines()[0]} The {game} game; every option of "
                        f":mod:`qwinto_env.parallel` but ``game``.")
        return make

    return fixed(env), fixed(raw_env), fixed(parallel_env)
