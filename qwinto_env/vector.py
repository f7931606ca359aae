"""Vector environments over the batched engines: a Stable-Baselines3 ``VecEnv`` and a
torch-native interface, for both games (``game="dice"``, default, or ``"cards"``). No
subprocesses, no SuperSuit: one engine call steps every game.

Two ways to map games to environment entries (both front-ends):

* **self-play** (``opponents=None``): every seat of every game is one entry, so
  ``num_envs = num_games * num_players``; entry ``i`` is game ``i // P``, seat ``i % P``.
  One policy plays all seats (parameter-shared self-play). Seats with nothing to decide
  have exactly one legal action (pass), so their entries cost the learner nothing.
* **one learner seat per game** (``opponents=...``): ``num_envs = num_games``; the
  learner plays ``learner_seat`` and the other seats are played by ``opponents``, given
  as to ``Qwinto-v0`` (:func:`~qwinto_env.opponents.seat_specs`): one spec for all of
  them (a name builds one agent per seat) or a list with one per other seat, in seat
  order. A spec is a bot's name, a checkpoint path or ``"pretrained:<name>"`` (built by
  :func:`~qwinto_env.opponents.make_agent`, as ``Qwinto-v0`` builds them), an agent
  object with ``act_batch(observations, masks)`` (both played as an
  :class:`AgentOpponent`), or a batched callable ``opponent(obs, masks) -> actions``
  with ``obs`` (N, obs_size) float32, ``masks`` (N, A) int8 (A = 37 dice, 88 cards),
  arrays of the engine's backend (numpy for the SB3 env unless ``backend="torch"``,
  tensors on the device for the torch env), and ``actions`` (N,) integers.
  :class:`RandomOpponent` plays uniformly over legal actions. The env's seed (``seed=``,
  a seeded reset) reseeds every opponent that has a ``reset(seed=...)`` method (agents
  do), so one seed replays the same games (an opponent whose ``reset`` takes no ``seed``
  is refused).

Observations are the ParallelEnv's ego-centric vectors (``Box(0, 1, (32P+25,),
float32)`` for the dice game, ``(33P+149,)`` for the cards); the legal-action masks come separately. For SB3 the
observation is the flat Box and the masks come from ``action_masks()`` (and
``env_method("action_masks")``, which is how sb3-contrib's ``get_action_masks`` reads
them from a ``VecEnv``): MaskablePPO's ``MlpPolicy`` takes the Box as it is, whereas a
Dict observation would need ``MultiInputPolicy`` and would feed the mask into the network
as an input feature.

SB3 example (self-play, 64 games of 2 players = 128 entries)::

    from sb3_contrib import MaskablePPO
    from qwinto_env.vector import QwintoVecEnv

    venv = QwintoVecEnv(64, num_players=2, seed=0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=512, seed=0)
    model.learn(4096)

Torch example (on-device loop)::

    import torch
    from qwinto_env.vector import TorchVectorEnv

    env = TorchVectorEnv(4096, num_players=2, device="cpu", seed=0)
    obs, masks = env.reset()                      # (8192, 89) float32, (8192, 37) bool
    logits = torch.zeros(masks.shape).masked_fill(~masks, float("-inf"))
    actions = torch.distributions.Categorical(logits=logits).sample()
    obs, masks, rewards, dones, info = env.step(actions)

Finished games restart at once (auto-reset). The SB3 env puts the final observation in
``infos[i]["terminal_observation"]`` and ``{"r": return, "l": steps}`` in
``infos[i]["episode"]`` (what SB3's episode statistics read), plus ``"final_score"``;
the torch env returns the batched engine's report in ``info``.
"""

from __future__ import annotations

import os
import time
from collections import abc
from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space
from stable_baselines3.common.vec_env import VecEnv

from .batched import BATCHED_GAMES, Backend, get_backend, pack_masks, uniform_legal
from .opponents import (OpponentSpecError, checked_agent, make_agent, reset_problem,
                        seat_specs)
from .parallel import check_options, keyword_names

Opponent = Callable[[Any, Any], Any]
_NO_ACTIONS = object()  # QwintoVecEnv's pending actions before step_async (None is an argument)


class RandomOpponent:
    """A batched opponent that plays uniformly at random among the legal actions; an env
    seeded with ``seed=`` or a seeded reset reseeds it through :meth:`reset`."""

    def __init__(self, backend: str = "numpy", device: Any = None, seed: int | None = None):
        self.backend = get_backend(backend, device)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Draw from ``seed`` from now on (None: fresh entropy)."""
        self.gen = self.backend.generator(seed)

    def __call__(self, obs: Any, masks: Any) -> Any:
        return uniform_legal(self.backend, pack_masks(self.backend, masks), self.gen,
                             masks.shape[-1])


class AgentOpponent:
    """An agent's ``act_batch(observations, masks) -> actions`` as a batched opponent: what
    the vector envs make of an agent object, a name, a checkpoint path or a
    ``pretrained:`` spec. A seeded reset of the env reseeds the agent (``reset(seed=...)``).

    On the torch backend an agent without ``accepts_tensors`` (a checkpoint's network,
    most bots of one's own: they take numpy arrays) is handed host copies of the
    observations and masks (int8), and the env copies its answer back to the device: a
    host sync at every step (the step waits for the device), which the agents with
    ``accepts_tensors`` (``random``, ``greedy``, ``expert``) do without, deciding on
    the device.
    """

    def __init__(self, agent: Any, backend: Backend):
        self.agent = agent
        self.on_host = backend.name != "numpy" and not getattr(agent, "accepts_tensors", False)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the agent (if it has a ``reset``)."""
        if callable(getattr(self.agent, "reset", None)):
            self.agent.reset(seed=seed)

    def __call__(self, obs: Any, masks: Any) -> Any:
        if self.on_host:
            obs, masks = obs.cpu().numpy(), masks.cpu().numpy()
        return self.agent.act_batch(obs, masks)

    def __repr__(self) -> str:
        return f"AgentOpponent({self.agent!r})"


def _batched_opponents(opponents: Any, engine: Any) -> list[Opponent]:
    """One batched opponent per seat other than the learner's, from the ``opponents``
    argument (:func:`~qwinto_env.opponents.seat_specs`: one spec reused, or one per seat):
    a batched callable as it is, an object with ``act_batch`` and a name or path (built
    once per seat, by :func:`~qwinto_env.opponents.make_agent`) as an
    :class:`AgentOpponent`; an object given for several seats stays one opponent."""
    game, P = engine.spec.name, engine.num_players
    made: dict[int, Opponent] = {}
    built = []
    for spec in seat_specs(opponents, P):
        if isinstance(spec, (str, os.PathLike)):  # the same str object in every seat
            built.append(_batched_opponent(spec, game, P, engine.backend))
        else:
            if id(spec) not in made:  # one wrapper, so that a reseed seeds it once
                made[id(spec)] = _batched_opponent(spec, game, P, engine.backend)
            built.append(made[id(spec)])
    return built


def _batched_opponent(spec: Any, game: str, num_players: int, backend: Backend) -> Opponent:
    """One seat's opponent (see :func:`_batched_opponents`); ``OpponentSpecError`` for a
    spec that makes no agent with ``act_batch``."""
    batched_agent = callable(getattr(spec, "act_batch", None))
    if callable(spec) and not batched_agent:
        return spec
    agent = spec if batched_agent else make_agent(spec, game, num_players)
    if not callable(getattr(agent, "act_batch", None)):
        raise OpponentSpecError(
            f"opponent {agent!r} has no act_batch(observations, masks): a vector env asks "
            f"its opponents for every game at once; give an agent with one, or a batched "
            f"callable opponent(obs, masks) -> actions")
    return AgentOpponent(checked_agent(agent, game, num_players), backend)


class _SeatMap:
    """Maps the (games, seats) of a batched engine to flat environment entries."""

    def __init__(self, engine: Any, opponents: Any, learner_seat: int):
        P = engine.num_players
        self.engine = engine
        self.backend = engine.backend
        if opponents is None:
            self.learner_seat = None
            self.opponents: list[tuple[int, Opponent]] = []
            self.num_envs = engine.num_games * P
            return
        if isinstance(learner_seat, bool) or not isinstance(learner_seat, (int, np.integer)) \
                or not 0 <= learner_seat < P:
            raise ValueError(f"learner_seat must be a seat in 0..{P - 1}, got {learner_seat!r}")
        others = [s for s in range(P) if s != learner_seat]
        opponents = _batched_opponents(opponents, engine)
        for k, opponent in enumerate(opponents):
            problem = reset_problem(opponent)
            if problem:
                raise ValueError(f"opponents[{k}] {opponent!r}: {problem}")
            theirs = getattr(opponent, "backend", None)  # a RandomOpponent's, say
            if isinstance(theirs, Backend) and (theirs.name, str(theirs.device)) != \
                    (self.backend.name, str(self.backend.device)):
                raise ValueError(f"opponents[{k}] draws {theirs.name} arrays on "
                                 f"{theirs.device}, the env steps {self.backend.name} on "
                                 f"{self.backend.device}: build it with backend="
                                 f"{self.backend.name!r}, device={str(self.backend.device)!r}")
        self.learner_seat = int(learner_seat)
        self.opponents = list(zip(others, opponents))
        self.num_envs = engine.num_games
        self.observe()  # the opponents' first inputs: the engine starts reset

    def reseed(self, seed: Any) -> None:
        """Reseed every opponent that has a ``reset(seed=...)`` method (as
        :class:`RandomOpponent`) from the env's checked ``seed``, so that one seed replays
        the same games against the same opponent draws; ``None`` leaves them as they are."""
        if seed is None:
            return
        unique = list({id(o): o for _, o in self.opponents}.values())
        for opponent, child in zip(unique, np.random.SeedSequence(int(seed)).spawn(len(unique))):
            if callable(getattr(opponent, "reset", None)):
                opponent.reset(seed=int(child.generate_state(1, np.uint64)[0]))

    def observe(self) -> tuple[Any, Any]:
        """Observations and masks of every entry, from the engine's current state."""
        e = self.engine
        self.obs_all, self.masks_all = e.observations(), e.action_masks()
        if self.learner_seat is None:
            return (self.obs_all.reshape(self.num_envs, e.obs_size),
                    self.masks_all.reshape(self.num_envs, e.num_actions))
        return self.obs_all[:, self.learner_seat], self.masks_all[:, self.learner_seat]

    def step(self, actions: Any) -> tuple[Any, Any, Any]:
        """Apply the entries' actions; return the engine's report, rewards and dones.

        Bad actions (the learner's or an opponent's) raise ``ValueError`` (an
        :class:`~qwinto_env.game.IllegalActionError` for illegal ones) before anything
        changes; the learner's are checked before any opponent is asked.
        """
        B, e = self.backend, self.engine
        actions = self._checked(actions, "actions")
        if self.learner_seat is None:
            joint = actions.reshape(e.num_games, e.num_players)
        else:
            # Every other seat plays its first legal action, so only the learner's can fail.
            joint = B.astype(self.masks_all, B.int64).argmax(-1)
            joint[:, self.learner_seat] = actions
            e.check_actions(joint)
            for seat, opponent in self.opponents:
                joint[:, seat] = self._checked(
                    opponent(self.obs_all[:, seat], self.masks_all[:, seat]),
                    f"actions of the opponent in seat {seat}")
        out = e.step(joint)
        if self.learner_seat is None:
            rewards = out.rewards.reshape(-1)
            dones = (out.terminated[:, None] | B.zeros((1, e.num_players), B.bool_)).reshape(-1)
        else:
            rewards = out.rewards[:, self.learner_seat]
            dones = out.terminated
        return out, rewards, dones

    def _checked(self, actions: Any, what: str) -> Any:
        """``actions`` as int64 of shape (num_envs,); ``ValueError`` naming ``what``."""
        actions = self.backend.as_int64(actions, what)
        if tuple(actions.shape) != (self.num_envs,):
            raise ValueError(f"{what} must have shape ({self.num_envs},), one per entry, "
                             f"got {tuple(actions.shape)}")
        return actions

    def entries_of(self, game: int) -> list[tuple[int, int]]:
        """The (entry, seat) pairs of ``game``."""
        if self.learner_seat is None:
            P = self.engine.num_players
            return [(game * P + s, s) for s in range(P)]
        return [(game, self.learner_seat)]


def _observation_space(engine: Any) -> spaces.Box:
    """One entry's observation: the ParallelEnv's ego-centric vector, without the mask."""
    return spaces.Box(0.0, 1.0, (engine.obs_size,), np.float32)


def _make_engine(front: type, game: str, num_games: int, num_players: int,
                 game_options: dict[str, Any], **settings: Any) -> Any:
    """The batched engine of ``front`` (a vector env class): its ``settings`` and the
    user's ``game_options``, which may be any engine option that ``front`` does not set.
    An unknown one raises ``TypeError`` naming it and listing what ``front`` accepts (the
    engine's own "unexpected keyword argument" named neither)."""
    if game not in BATCHED_GAMES:
        raise ValueError(f"unknown game {game!r}; choose one of {sorted(BATCHED_GAMES)}")
    engine = BATCHED_GAMES[game]
    taken = set(keyword_names(front)) | set(settings)
    check_options(f"{front.__name__}()", game_options,
                  keyword_names(front) + [n for n in keyword_names(engine) if n not in taken])
    return engine(num_games, num_players, **settings, **game_options)


class QwintoVecEnv(VecEnv):
    """Stable-Baselines3 ``VecEnv`` over a batched engine (``game="dice"`` or ``"cards"``).

    ``num_games`` games of ``num_players`` seats on the numpy engine (or ``backend="torch"``
    with a ``device``; results are copied to numpy for SB3). ``opponents`` and
    ``learner_seat`` choose the entry mapping (module docstring); ``reward``,
    ``random_start``, ``seed`` and the engine's other options (``start_player``;
    ``empty_pile`` for the cards) go to the engine (``seed()`` before ``reset()`` reseeds
    it, and the opponents, as in SB3; see :meth:`set_options` for the reset's options).
    Any other keyword raises a ``TypeError`` naming it and listing these (so does
    :class:`TorchVectorEnv`). Illegal actions raise
    :class:`~qwinto_env.game.IllegalActionError`.
    """

    def __init__(self, num_games: int, num_players: int = 2, *, game: str = "dice",
                 opponents: Any = None,
                 learner_seat: int = 0, reward: str | None = None, random_start: bool = False,
                 seed: int | None = None, backend: str = "numpy", device: Any = None,
                 **game_options: Any):
        self.engine = _make_engine(QwintoVecEnv, game, num_games, num_players, game_options,
                                   backend=backend, device=device, seed=seed, reward=reward,
                                   random_start=random_start, final_observations=True)
        self._seats = _SeatMap(self.engine, opponents, learner_seat)
        self._seats.reseed(seed)
        self.render_mode = None
        self.num_envs = self._seats.num_envs  # VecEnv.__init__ reads attributes before setting it
        super().__init__(self._seats.num_envs, _observation_space(self.engine),
                         spaces.Discrete(self.engine.num_actions))
        self._actions: Any = _NO_ACTIONS
        self._masks: np.ndarray | None = None
        self._start = time.time()

    def _to_np(self, x: Any) -> np.ndarray:
        return self.engine.backend.to_numpy(x)

    def _observe(self) -> np.ndarray:
        obs, masks = self._seats.observe()
        self._masks = self._to_np(masks).astype(bool)
        return self._to_np(obs)

    def reset(self) -> np.ndarray:
        """Restart every game; the observations (SB3's contract). The seed of ``seed()``
        and the options of :meth:`set_options` apply to this reset only; a bad one
        raises ``ValueError`` naming it, changes nothing and stays set."""
        seed = next((s for s in self._seeds if s is not None), None)
        self.engine.reset(seed=seed, **self._options[0])
        self._seats.reseed(seed)
        self._reset_seeds()
        self._reset_options()
        return self._observe()

    def set_options(self, options: dict[str, Any] | None = None) -> None:
        """Options of the next :meth:`reset` only, as SB3's, but one dict for every entry
        (entries share their games): ``start_player`` (a seat, or one per game) and, in
        the card game, ``deck`` ((num_games, 32) card orders), as the engine's ``reset``
        takes them. ``TypeError`` naming an option it does not take; the values are
        checked at the reset."""
        if options is not None and not isinstance(options, abc.Mapping):
            raise ValueError(f"QwintoVecEnv.set_options takes one dict for every entry "
                             f"(entries share their games; start_player may give one seat "
                             f"per game) or None, got {type(options).__name__}")
        accepted = [name for name in keyword_names(self.engine.reset) if name != "seed"]
        check_options("QwintoVecEnv.set_options", options or {}, accepted)
        super().set_options(dict(options or {}))

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        if self._actions is _NO_ACTIONS:
            raise RuntimeError("step_wait() called without step_async(actions)")
        out, rewards, dones = self._seats.step(self._actions)
        self._actions = _NO_ACTIONS
        obs = self._observe()
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if int(out.done_index.shape[0]):
            final_obs = self._to_np(out.final_observation)
            scores, returns = self._to_np(out.final_scores), self._to_np(out.final_returns)
            turns = self._to_np(out.final_turns)
            elapsed = round(time.time() - self._start, 6)
            for j, game in enumerate(self._to_np(out.done_index).tolist()):
                for entry, seat in self._seats.entries_of(game):
                    infos[entry] = {
                        "terminal_observation": final_obs[j, seat],
                        "final_score": int(scores[j, seat]),
                        "episode": {"r": float(returns[j, seat]),
                                    "l": self.engine.steps_per_turn * int(turns[j]),
                                    "t": elapsed},
                    }
        return (obs, self._to_np(rewards).astype(np.float32), self._to_np(dones).astype(bool),
                infos)

    def action_masks(self) -> np.ndarray:
        """Legal-action masks of every entry, (num_envs, num_actions) bool."""
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        value = getattr(self, attr_name)  # raises AttributeError, which has_attr relies on
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"QwintoVecEnv entries share one engine; setting "
                             f"{attr_name!r} per entry is not supported")

    def env_method(self, method_name: str, *method_args, indices: Any = None,
                   **method_kwargs) -> list[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        raise AttributeError(f"QwintoVecEnv entries have no method {method_name!r} "
                             f"(supported: 'action_masks')")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def _get_indices(self, indices: Any) -> list[int]:
        """SB3's ``indices`` (None: every entry, one entry, or a sequence of entries) as
        entries in ``0..num_envs-1``; ``IndexError`` naming any other (SB3's default let
        ``get_attr`` answer for entries that do not exist)."""
        n = self.num_envs
        if indices is None:
            return list(range(n))
        chosen = list(indices) if isinstance(indices, abc.Iterable) else [indices]
        bad = [i for i in chosen if isinstance(i, (bool, np.bool_))
               or not isinstance(i, (int, np.integer)) or not -n <= i < n]
        if bad:
            raise IndexError(f"indices must be entries in 0..{n - 1} (or -{n}..-1), "
                             f"got {bad!r}")
        return [int(i) % n for i in chosen]


class TorchVectorEnv:
    """Torch-native vector env: observations, masks, rewards and dones as tensors on
    ``device``, for on-device training loops. Same entry mapping and options as
    :class:`QwintoVecEnv` (batched callables receive and return tensors; agents as
    :class:`AgentOpponent` says).

    Not a Gymnasium ``VectorEnv`` (``reset`` and ``step`` return the masks beside the
    observations, and ``step`` no truncations), but it names its spaces as one does, so
    that a CleanRL-style script sizes its network and buffers from them:
    ``single_observation_space`` (one entry's observation, ``Box(0, 1, (obs_size,),
    float32)``; the masks are no part of it) and ``single_action_space``
    (``Discrete(num_actions)``), ``observation_space`` and ``action_space`` batched over
    the ``num_envs`` entries. The spaces are numpy's, the values tensors (as with
    Gymnasium's ``NumpyToTorch`` wrapper). :meth:`close` may be called any number of times.
    """

    def __init__(self, num_games: int, num_players: int = 2, *, game: str = "dice",
                 device: Any = "cpu", opponents: Any = None,
                 learner_seat: int = 0, reward: str | None = None, random_start: bool = False,
                 seed: int | None = None, final_observations: bool = False,
                 **game_options: Any):
        self.engine = _make_engine(TorchVectorEnv, game, num_games, num_players, game_options,
                                   backend="torch", device=device, seed=seed, reward=reward,
                                   random_start=random_start,
                                   final_observations=final_observations)
        self._seats = _SeatMap(self.engine, opponents, learner_seat)
        self._seats.reseed(seed)
        self.num_envs = self._seats.num_envs
        self.device = self.engine.backend.device
        self.obs_size = self.engine.obs_size
        self.num_actions = self.engine.num_actions
        self.single_observation_space = _observation_space(self.engine)
        self.single_action_space = spaces.Discrete(self.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def reset(self, seed: int | None = None) -> tuple[Any, Any]:
        """Restart every game; observations (num_envs, obs_size) and masks
        (num_envs, num_actions) bool. A ``seed`` also reseeds the opponents (class
        docstring)."""
        self.engine.reset(seed=seed)
        self._seats.reseed(seed)
        obs, masks = self._seats.observe()
        return obs, masks.bool()

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        """``actions`` (num_envs,) -> observations, masks, rewards (float32), dones (bool),
        and the engine's :class:`~qwinto_env.batched.StepResult` (per game)."""
        out, rewards, dones = self._seats.step(actions)
        obs, masks = self._seats.observe()
        return obs, masks.bool(), rewards, dones, out

    def close(self) -> None:
        """Nothing to release (no subprocesses; the engine's tensors go with the env): the
        call that loops written for Gymnasium's vector envs end with."""
