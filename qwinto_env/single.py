"""Single-agent Gymnasium environment: one learner against bots sitting at the same table.

==================  ==========================================================
Import              ``gymnasium.make("Qwinto-v0", ...)`` (registered when
                    ``qwinto_env`` is imported) or :class:`QwintoSingleEnv`
Players             the learner plus ``num_players - 1`` opponents (agents by name,
                    loaded by :mod:`qwinto_env.opponents`, or any object with
                    ``act(obs, mask)``)
Action space        as in the ParallelEnv: ``Discrete(37)`` (dice),
                    ``Discrete(88)`` (cards)
Observation space   the ParallelEnv's per-agent space:
                    ``Dict(observation=Box(0, 1, (size,), float32),
                    action_mask=Box(0, 1, (actions,), int8))``
Action mask         ``obs["action_mask"]`` and the :meth:`QwintoSingleEnv.action_masks`
                    method (what ``sb3_contrib``'s MaskablePPO asks for)
Rewards             ``reward="win"`` (default, 2+ players), ``"margin"``, ``"score"``
                    (default solo): the learner's ParallelEnv reward
==================  ==========================================================

Options
-------
===================  ===========  ==================================================
option               default      meaning
===================  ===========  ==================================================
``game``             ``"dice"``   ``"dice"`` (1..6 players) or ``"cards"`` (1..4)
``num_players``      ``2``        seats at the table, the learner included
``opponents``        ``None``     ``None``: ``"random"`` bots (none in solo play);
                                  one spec (or a list of one) for every other seat,
                                  or a list with one spec per other seat; a spec is
                                  a name for :func:`agents.load` (``"random"``,
                                  ``"greedy"``, ``"expert"``; found through
                                  :mod:`qwinto_env.opponents`), a checkpoint
                                  path, or an agent object (its ``reset``, if
                                  any, must take ``seed=``). ``opponents[k-1]``
                                  sits ``k`` seats after the learner (turn
                                  order), whatever its seat.
``learner_seat``     ``0``        the learner's seat, or ``"random"``: drawn at every
                                  reset from the env's seeded generator
``reward``           see above    ``"win"``, ``"margin"`` or ``"score"``
``render_mode``      ``None``     ``"ansi"`` (``render()`` returns the text),
                                  ``"human"`` (printed at every learner decision) or
                                  ``"rgb_array"`` (the table as an ``HxWx3 uint8``
                                  array, the learner's hand shown; see
                                  :mod:`qwinto_env.image`)
``random_start``     ``False``    draw the first active player at every reset
``illegal_action``   ``"raise"``  ``"pass"``: replace an illegal learner action by the
                                  default one and add ``illegal_penalty`` (for
                                  unmasked algorithms)
``illegal_penalty``  ``-1.0``     see ``illegal_action``
``infos``            ``"full"``   ``"numeric"``: only ints and int64 arrays of fixed
                                  shapes (see Infos); the ParallelEnv's option
``empty_pile``       (cards)      the card game's option, passed to its engine
===================  ===========  ==================================================

Any other keyword raises a ``TypeError`` naming it and listing these.
``reset(options=...)`` accepts ``{"learner_seat": k}``, ``{"start_player": i}`` and, in
the card game, ``{"deck": order}`` for one episode; any other key raises a ``ValueError``
naming it (a misspelt ``learner_seat`` would otherwise train from the default seat).

Steps
-----
Every ``step`` is one decision of the learner. In between, the env lets the opponents
play and the engine advance; steps where the learner's only legal action is the pass
(another player chooses dice or plays a card, or the learner cannot write the value)
are played for it. The learner's rewards over those skipped steps are added to the
reward of the step that caused them, so an episode's rewards sum to what the learner
earns in the ParallelEnv. An opponent whose mask has a single legal action plays it
without being asked (as in :mod:`agents.evaluate`).

Infos
-----
The learner's infos from the ParallelEnv (``sheet``, ``misthrows``, ``score``,
``phase``, ``roll``, ``active_player``...; in the card game its own ``hand``), plus the
keys below; every key is there with the same type and nested keys on every step and
reset (what ``gymnasium.make_vec`` and ``SyncVectorEnv`` need to stack infos):

* ``illegal_action``: ``True`` when this step's learner action was illegal and replaced
  (``illegal_action="pass"``), else ``False``;
* ``learner_seat``: the learner's seat this episode;
* ``scores``: every seat's current score, seat 0 first;
* ``opponent_actions``: the opponents' real decisions (not forced passes) since the
  learner's previous decision, in order, each ``{"seat", "phase", "action"}`` with
  ``phase`` the phase in which it was taken and ``action`` as the learner may see it (a
  card play from the first hand slots: which card of a hidden hand was played is not
  public, ``qwinto_env.spec.cards.PUBLIC_PLAYS``);
* ``skipped_steps``: how many engine steps were played for the learner.

With ``infos="numeric"`` the learner's infos are the ParallelEnv's numeric ones
(:mod:`qwinto_env.parallel`, Infos) and the keys above as ints and new int64 arrays, of
the shapes ``SPECS[game].learner_numeric_infos(num_players)`` declares, on every step
and reset (what Tianshou's replay buffer needs, and what ``make_vec`` stacks into int
arrays): ``illegal_action`` 0 or 1, ``scores`` ``(n,)``, and ``opponent_actions`` one
row ``(seat, phase index, action)`` per decision, then rows of -1
(:data:`~qwinto_env.spec.base.NO_ACTION`) up to
:meth:`~qwinto_env.spec.base.GameSpec.max_opponent_decisions` rows, the most the
opponents can make between two learner decisions (dice ``(n-1)(n+2)``, cards
``(n-1)(n+1)``; none in solo play).

Illegal actions
---------------
A learner action that is out of range, masked out or not an integer raises
:class:`~qwinto_env.game.IllegalActionError` before anything moves (opponents do not
act, no generator advances); its message names the ``illegal_action="pass"`` option.
``step`` after the end of the game, or before the first ``reset``, raises it too.
``illegal_action="pass"`` replaces an out-of-range or masked-out integer; a value that
is no integer (``None``, ``"3"``, ``1.5``, an array of shape ``(1,)``) still raises, as
it is a bug in the caller that would otherwise train on the penalty every step.

Seeding
-------
``reset(seed=s)`` seeds the env's generator (``self.np_random``); ``s`` is ``None`` or a
non-negative Python or numpy integer (``np.int64(3)`` gives what ``3`` gives). A reset
refused for a bad seed or option changes nothing. Every reset then draws from it the
game's seed, each opponent's seed and, with ``learner_seat="random"``, the learner's
seat. The same seed and the same learner
actions give the same episode, and resets without a seed continue the sequence.

Checkers and Stable-Baselines3
------------------------------
``gymnasium.utils.env_checker.check_env`` and
``stable_baselines3.common.env_checker.check_env`` step the env with
``action_space.sample()``, which ignores the mask; run them with
``illegal_action="pass"`` (with the default ``"raise"`` the first masked-out sample
raises, as it should). Both pass for both games and every player count tested (see
``tests/test_single.py``); SB3 needs nothing special for the Dict observation
(``MultiInputPolicy``). MaskablePPO finds :meth:`QwintoSingleEnv.action_masks` through
``get_wrapper_attr`` (plain env, ``gymnasium.make`` wrappers) and through
``env_method`` under ``DummyVecEnv`` and ``SubprocVecEnv``, so no ``ActionMasker``
wrapper is needed (if one is used anyway, give it a function,
``ActionMasker(env, lambda e: e.unwrapped.action_masks())``; its string form fails in
sb3-contrib 2.9). ``make_vec_env("qwinto_env:Qwinto-v0", ...)`` works: the
``module:`` prefix makes Gymnasium import ``qwinto_env`` (which registers the id) also
in ``SubprocVecEnv``'s fresh worker processes. An unknown ``render_mode`` raises
:class:`RenderModeError`, a ``TypeError`` too, as SB3's ``make_vec_env`` expects of an
env that lacks the mode it asks for.

Version history: v0, first release.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .game import IllegalActionError, check_seed
from .image import draw
from .opponents import OpponentSpecError, bot_action, make_opponents
from .parallel import (RENDER_FPS, QwintoParallelEnv, check_options, engine_options,
                       keyword_names)
from .spec.base import NO_ACTION, OPPONENT_ACTION_COLUMNS, padded_rows

__all__ = ["QwintoSingleEnv", "OpponentSpecError", "RenderModeError", "make_opponents"]

_SEED_BOUND = 2**63


class RenderModeError(ValueError, TypeError):
    """A ``render_mode`` the env does not offer.

    Also a ``TypeError`` because Stable-Baselines3's ``make_vec_env`` asks every
    registered env for ``render_mode="rgb_array"`` and retries without it on a
    ``TypeError`` only.
    """


def _is_seat(seat: Any, num_players: int) -> bool:
    """Whether ``seat`` is a seat index (Python or numpy integer) of the table."""
    return not isinstance(seat, bool) and isinstance(seat, (int, np.integer)) \
        and 0 <= seat < num_players


def _check_seat(seat: Any, num_players: int) -> None:
    """Raise unless ``seat`` is a seat index of the table or ``"random"``."""
    if seat != "random" and not _is_seat(seat, num_players):
        raise OpponentSpecError(f'learner_seat must be a seat in 0..{num_players - 1} or '
                                f'"random", got {seat!r}')


class QwintoSingleEnv(gym.Env):
    """Qwinto for one learner against built-in or loaded opponents; see the module docstring."""

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": RENDER_FPS}

    def __init__(self, game: str = "dice", num_players: int = 2, opponents: Any = None,
                 learner_seat: int | str = 0, reward: str | None = None,
                 render_mode: str | None = None, random_start: bool = False,
                 illegal_action: str = "raise", illegal_penalty: float = -1.0,
                 infos: str = "full", **game_options: Any):
        check_options('gymnasium.make("Qwinto-v0")', game_options,
                      keyword_names(QwintoSingleEnv) + engine_options(game),
                      "; to truncate episodes after k learner steps, pass Gymnasium's "
                      "max_episode_steps=k" if "max_cycles" in game_options else "")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise RenderModeError(f"unknown render_mode {render_mode!r}; choose one of "
                                  f"{self.metadata['render_modes']} or None")
        self.table = QwintoParallelEnv(game=game, num_players=num_players, reward=reward,
                                       illegal_action=illegal_action,
                                       illegal_penalty=illegal_penalty,
                                       random_start=random_start, infos=infos,
                                       **game_options)
        n = self.table.game.num_players
        self._numeric_shapes = self.table.game.spec.learner_numeric_infos(n)
        _check_seat(learner_seat, n)
        # An empty list is the one spec per other seat that solo play has.
        if n == 1 and opponents is not None and not (
                isinstance(opponents, (list, tuple)) and not opponents):
            raise OpponentSpecError(f"solo play has no opponents, got {opponents!r}")
        self.opponents = make_opponents("random" if opponents is None else opponents, game, n)
        self.num_players = n
        self.learner_seat_option = learner_seat
        self.render_mode = render_mode
        self.reward_kind = self.table.reward_kind
        self.observation_space = self.table.observation_space("player_0")
        self.action_space = self.table.action_space("player_0")
        self.learner_seat = 0 if learner_seat == "random" else int(learner_seat)
        self._obs: dict[str, np.ndarray] | None = None
        self._table_obs: dict[str, dict[str, np.ndarray]] = {}
        self._table_infos: dict[str, dict[str, Any]] = {}
        self._pending_reward = 0.0
        self._done = True

    @property
    def agent(self) -> str:
        """The learner's agent name in the underlying ParallelEnv."""
        return self.table.possible_agents[self.learner_seat]

    def opponent_at(self, seat: int) -> Any:
        """The opponent playing ``seat`` this episode; ValueError for the learner's seat
        or one the table does not have."""
        if not _is_seat(seat, self.num_players):
            raise ValueError(f"seat must be a seat in 0..{self.num_players - 1}, got {seat!r}")
        if seat == self.learner_seat:
            raise ValueError(f"seat {seat} is the learner's seat, not an opponent's")
        return self.opponents[(seat - self.learner_seat) % self.num_players - 1]

    # -- episode ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode (see Seeding). A bad seed or option raises ValueError
        before anything changes: generators, opponents and the game go on as they were."""
        seed = check_seed(seed)
        self.table.check_reset_options(options, own=("learner_seat",))
        options = dict(options or {})
        seat = options.pop("learner_seat", self.learner_seat_option)
        _check_seat(seat, self.num_players)
        super().reset(seed=seed)
        rng = self.np_random
        game_seed = int(rng.integers(_SEED_BOUND))
        agent_seeds = rng.integers(_SEED_BOUND, size=len(self.opponents))
        self.learner_seat = int(rng.integers(self.num_players)) if seat == "random" else int(seat)
        for opponent, agent_seed in zip(self.opponents, agent_seeds):
            if callable(getattr(opponent, "reset", None)):
                opponent.reset(seed=int(agent_seed))
        observations, infos = self.table.reset(seed=game_seed, options=options)
        self._done = False
        self._pending_reward, opponent_actions, skipped = self._advance(observations, infos)
        infos = self._learner_infos(opponent_actions, skipped)
        if self.render_mode == "human":
            self.render()
        return self._observation(), infos

    def step(self, action: Any):
        table = self.table
        if self._done:
            why = "no game has started" if self._obs is None else "the game is over"
            raise IllegalActionError(self.agent, action, f"{why}; call reset()")
        table.check_action(self.agent, action,
                           'gymnasium.make("Qwinto-v0", ..., illegal_action="pass")')
        observations, rewards, terminations, _, infos, acted = self._table_step(action)
        reward = self._pending_reward + rewards[self.agent]
        self._pending_reward = 0.0
        penalised = infos[self.agent]["illegal_action"]
        if terminations[self.agent]:
            self._done = True
            self._obs, self._table_infos = observations[self.agent], infos
            skipped_reward, later, skipped = 0.0, [], 0
        else:
            skipped_reward, later, skipped = self._advance(observations, infos)
        infos = self._learner_infos(acted + later, skipped, penalised)
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward + skipped_reward, self._done, False, infos

    def _table_step(self, learner_action: Any):
        """One ParallelEnv step with the learner's action and the opponents' choices."""
        table = self.table
        game = table.game
        obs = self._table_obs
        actions, acted = {}, []
        phase = game.public_info()["phase"]
        for seat, agent in enumerate(table.possible_agents):
            if seat == self.learner_seat:
                actions[agent] = learner_action
                continue
            legal = game.legal_actions(seat)
            if len(legal) == 1:
                actions[agent] = legal[0]
                continue
            action = bot_action(self.opponent_at(seat), obs[agent]["observation"],
                                obs[agent]["action_mask"])
            actions[agent] = action
            acted.append({"seat": seat, "phase": phase,
                          "action": game.spec.public_action(action)})
        observations, rewards, terminations, truncations, infos = table.step(actions)
        self._table_obs = observations
        return observations, rewards, terminations, truncations, infos, acted

    def _advance(self, observations: dict, infos: dict) -> tuple[float, list[dict], int]:
        """Play the learner's forced passes until it has a decision or the game ends.

        Returns the learner's reward over those steps, the opponents' decisions and the
        number of steps played.
        """
        self._table_obs = observations
        total, acted_all, skipped = 0.0, [], 0
        game = self.table.game
        while len(game.legal_actions(self.learner_seat)) == 1:
            forced = game.legal_actions(self.learner_seat)[0]
            observations, rewards, terminations, _, infos, acted = self._table_step(forced)
            total += rewards[self.agent]
            acted_all += acted
            skipped += 1
            if terminations[self.agent]:
                self._done = True
                break
        self._obs, self._table_infos = observations[self.agent], infos
        return total, acted_all, skipped

    def _learner_infos(self, opponent_actions: list[dict], skipped: int,
                       penalised: bool = False) -> dict[str, Any]:
        """The learner's infos (module docstring); ``penalised``: its action was replaced."""
        # The engine's sheets are shared read-only snapshots; Gymnasium wants every
        # returned array to be new (users may keep and modify it).
        infos = {key: value.copy() if isinstance(value, np.ndarray) else value
                 for key, value in self._table_infos[self.agent].items()}
        own = {"illegal_action": penalised, "learner_seat": self.learner_seat,
               "scores": self.table.game.scores(), "opponent_actions": opponent_actions,
               "skipped_steps": skipped}
        return {**infos, **(self._numeric(own) if self.table.infos_kind == "numeric" else own)}

    def _numeric(self, own: dict[str, Any]) -> dict[str, Any]:
        """Qwinto-v0's own infos as ``infos="numeric"`` gives them (module docstring)."""
        phases = self.table.game.spec.phases
        numbered = ({**act, "phase": phases.index(act["phase"])}
                    for act in own["opponent_actions"])
        rows = [[act[column] for column in OPPONENT_ACTION_COLUMNS] for act in numbered]
        return {**own, "illegal_action": int(own["illegal_action"]),
                "scores": np.array(own["scores"], dtype=np.int64),
                "opponent_actions": padded_rows(rows, self._numeric_shapes["opponent_actions"],
                                                NO_ACTION)}

    def _observation(self) -> dict[str, np.ndarray]:
        return {key: value.copy() for key, value in self._obs.items()}

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now, as a bool array (for MaskablePPO)."""
        if self._obs is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._obs["action_mask"].astype(bool)

    # -- views ---------------------------------------------------------------------------
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode="
                            '"ansi", "human" or "rgb_array" to the constructor')
            return None
        if self.render_mode == "rgb_array":
            return draw(self.table.game, viewer=self.learner_seat)
        text = f"{self.table.game.render()}\n(learner: player {self.learner_seat})"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        self.table.close()
