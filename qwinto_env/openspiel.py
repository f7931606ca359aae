"""Both games as OpenSpiel Python games: ``python_qwinto_dice`` and ``python_qwinto_cards``.

Importing this module registers them (``import qwinto_env`` alone does not need
OpenSpiel); :func:`register` does it too, and :func:`load` loads one::

    import pyspiel
    from qwinto_env import openspiel
    game = pyspiel.load_game("python_qwinto_dice", {"num_players": 3})

=====================  ======================================================================
property               value
=====================  ======================================================================
dynamics               SIMULTANEOUS: every player acts at every decision node, as in the
                       ParallelEnv; a player with nothing to decide has one legal action,
                       pass (27). ``legal_actions()`` with no player lists the flat joint
                       actions (up to :data:`MAX_FLAT_JOINT_ACTIONS`); they outnumber
                       the actions, so ``legal_actions_mask()`` needs a player there
                       (OpenSpiel's mask has ``num_distinct_actions`` entries and is
                       written past, a crash)
chance                 EXPLICIT_STOCHASTIC, see below
information            dice: PERFECT; cards: IMPERFECT (hands and the pile order hidden)
utility                GENERAL_SUM (``win`` with 3+ players and ties is not zero-sum)
reward model           TERMINAL for ``reward`` ``win`` and ``margin``, REWARDS for ``score``
actions, observation   the env's action ids and the ParallelEnv's observation vector of that
                       player (:mod:`qwinto_env.spec`); ``observation_string``: its non-zero
                       entries as ``index:value``
returns                the ParallelEnv's rewards of ``reward``: ``rewards()`` at a decision
                       node is the env's reward of the step that led to it
=====================  ======================================================================

Parameters: ``num_players`` (2), ``reward`` (``"default"``: ``win``, or ``score`` solo;
``win``, ``margin``, ``score``), ``random_start`` (False: player 0 starts; True: a first
chance node draws the start player), the card game's ``empty_pile`` (``"reshuffle"``).

Chance nodes
------------
* Dice: after the joint action that rolls (choose, re-roll) comes one chance node whose
  outcome ``v`` is the **sum** of the rolled dice, with its exact probability (ways to
  throw ``v`` with ``k`` dice / ``6**k``). The sum is all the rules and the observation
  use; the engine is handed faces that add up to it.
* Cards: the deal is ``4 + 3n`` chance nodes, each a card drawn uniformly from those not
  dealt (the four stacks, then seat 0's hand, seat 1's ...). After the entry's joint
  action, every card the active player draws is a chance node, uniform over the cards of
  the draw pile not drawn yet; when the pile runs out (``empty_pile="reshuffle"``) over
  the covered cards that make the new pile. Drawing uniformly from what remains is the
  same distribution as a shuffled pile, and a pile order that is never stored cannot leak.

At a chance node that follows a joint action, the observation is still that of the
decision node before it (the engine applies the joint action with its chance outcomes).
The game provides no information-state tensor or string: the observation does not have
perfect recall, and algorithms that need perfect recall (CFR) must not be told otherwise.
An observer of another type (``make_observation``: public information only, or every
player's hand) is refused in the card game, which has no such tensor; the dice game has
no private information, so there every type without perfect recall is its observation.
Search algorithms that take the state itself (MCTS) see all of it, hands and pile included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    import pyspiel
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("qwinto_env.openspiel needs OpenSpiel: pip install open-spiel") from exc

from . import rules
from .game import Game
from .parallel import GAMES
from .play import describe_action
from .spec import SPECS
from .spec import cards as cards_spec
from .spec import dice as dice_spec
from .spec.base import REWARDS, check_reward, step_rewards

__all__ = ["GAME_NAMES", "MAX_FLAT_JOINT_ACTIONS", "register", "load", "QwintoGame", "QwintoState",
           "dice_sum_outcomes"]

#: game name -> OpenSpiel short name.
GAME_NAMES = {"dice": "python_qwinto_dice", "cards": "python_qwinto_cards"}
_DEFAULT_REWARD = "default"
#: The most flat joint actions ``legal_actions()`` lists: a five- or six-player entry can
#: have hundreds of millions, whose list takes tens of gigabytes.
MAX_FLAT_JOINT_ACTIONS = 2 ** 24
_MAX_SCORE = (rules.NUM_ROWS + len(rules.PENTAGON_COLUMNS)) * rules.MAX_VALUE
_MIN_SCORE = -rules.MISTHROW_PENALTY * rules.MAX_MISTHROWS
_CHANCE, _TERMINAL, _SIMULTANEOUS = (int(p) for p in (
    pyspiel.PlayerId.CHANCE, pyspiel.PlayerId.TERMINAL, pyspiel.PlayerId.SIMULTANEOUS))


def dice_sum_outcomes(num_dice: int) -> list[tuple[int, float]]:
    """``(sum, probability)`` of ``num_dice`` (1..3) fair dice, ascending, each probability
    the float nearest the exact fraction."""
    total = dice_spec.DIE_FACES ** num_dice
    return [(v, ways / total) for v, ways in enumerate(dice_spec.SUM_WAYS[num_dice]) if ways]


_SUM_OUTCOMES = {k: dice_sum_outcomes(k) for k in range(1, rules.NUM_ROWS + 1)}


def _faces_for(subset: int, value: int) -> list[int]:
    """Three faces (orange, yellow, purple) whose rolled ones (``subset``) add up to ``value``."""
    rows = dice_spec.SUBSET_ROWS[subset]
    faces, left = [1, 1, 1], value
    for i, r in enumerate(rows):
        faces[r] = min(dice_spec.DIE_FACES, left - (len(rows) - 1 - i))
        left -= faces[r]
    return faces


def _game_type(game: str, reward: str = "win") -> Any:
    spec = SPECS[game]
    perfect = game == "dice"
    return pyspiel.GameType(
        short_name=GAME_NAMES[game], long_name=f"Python Qwinto {spec.title}",
        dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=(pyspiel.GameType.Information.PERFECT_INFORMATION if perfect
                     else pyspiel.GameType.Information.IMPERFECT_INFORMATION),
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=(pyspiel.GameType.RewardModel.REWARDS if reward == "score"
                      else pyspiel.GameType.RewardModel.TERMINAL),
        max_num_players=spec.max_players, min_num_players=spec.min_players,
        provides_information_state_string=False, provides_information_state_tensor=False,
        provides_observation_string=True, provides_observation_tensor=True,
        parameter_specification=_parameters(game))


def _parameters(game: str) -> dict[str, Any]:
    params = {"num_players": 2, "reward": _DEFAULT_REWARD, "random_start": False}
    if game == "cards":
        params["empty_pile"] = "reshuffle"
    return params


def _utility_range(reward: str) -> tuple[float, float]:
    if reward == "win":
        return -1.0, 1.0
    if reward == "margin":
        return float(_MIN_SCORE - _MAX_SCORE), float(_MAX_SCORE - _MIN_SCORE)
    return float(_MIN_SCORE), float(_MAX_SCORE)


class QwintoGame(pyspiel.Game):
    """A Qwinto game (``game`` = ``"dice"`` or ``"cards"``) with its parameters."""

    game_name = "dice"

    def __init__(self, params: dict[str, Any] | None = None):
        params = {**_parameters(self.game_name), **(params or {})}
        spec = SPECS[self.game_name]
        n = spec.check_num_players(params["num_players"])
        reward = params["reward"]
        if reward not in (_DEFAULT_REWARD, *REWARDS):  # the spec's message lacks "default"
            raise ValueError(f"unknown reward {reward!r}; choose one of "
                             f"{(_DEFAULT_REWARD, *REWARDS)}")
        self.reward_kind = check_reward(None if reward == _DEFAULT_REWARD else reward, n)
        if not isinstance(params["random_start"], bool):
            raise ValueError(f"random_start must be True or False, got {params['random_start']!r}")
        self.random_start = params["random_start"]
        self.engine_options = ({"empty_pile": cards_spec.check_empty_pile(params["empty_pile"])}
                               if self.game_name == "cards" else {})
        low, high = _utility_range(self.reward_kind)
        info = pyspiel.GameInfo(
            num_distinct_actions=spec.num_actions,
            max_chance_outcomes=(rules.MAX_VALUE + 1 if self.game_name == "dice"
                                 else cards_spec.DECK_SIZE),
            num_players=n, min_utility=low, max_utility=high, utility_sum=None,
            max_game_length=spec.steps_per_turn * n * (rules.NUM_CELLS + rules.MAX_MISTHROWS))
        super().__init__(_game_type(self.game_name, self.reward_kind), info, params)
        self.observation_size = spec.observation_size(n)

    def new_initial_state(self) -> "QwintoState":
        return QwintoState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "QwintoObserver":
        """The observer of ``iig_obs_type``, the player's observation. None (OpenSpiel's
        ``game.make_observer(params)`` passes the parameters alone) is the default type.
        ValueError for parameters, or a type the observation is not (see
        :meth:`_check_observation_type`)."""
        if params is None and isinstance(iig_obs_type, Mapping):
            iig_obs_type, params = None, iig_obs_type
        if params:
            raise ValueError(f"observation parameters are not supported; got {params}")
        if iig_obs_type is not None:
            self._check_observation_type(iig_obs_type)
        return QwintoObserver(self.observation_size)

    def _check_observation_type(self, obs_type: Any) -> None:
        """ValueError unless the observation is of ``obs_type``: no perfect recall, the
        public information and the observer's own private information (its hand), or,
        in a game without private information, any players' private information."""
        name = GAME_NAMES[self.game_name]
        if obs_type.perfect_recall:
            raise ValueError(f"{name} has no perfect-recall observation (no information "
                             "state); use the observation")
        perfect = (self.get_type().information
                   == pyspiel.GameType.Information.PERFECT_INFORMATION)
        single = obs_type.private_info == pyspiel.PrivateInfoType.SINGLE_PLAYER
        if not obs_type.public_info or not (single or perfect):
            raise ValueError(
                f"{name} observes the public information and the observer's own private "
                f"information only (public_info=True, private_info=SINGLE_PLAYER); got "
                f"public_info={obs_type.public_info}, private_info={obs_type.private_info}")

    def new_engine(self) -> Game:
        """A fresh engine of this game, its generator removed: every chance outcome comes
        from a chance node, so a draw from it would be a bug (and fails loudly)."""
        engine = GAMES[self.game_name](num_players=self.num_players(), **self.engine_options)
        engine.rng = None
        return engine


class QwintoDiceGame(QwintoGame):
    game_name = "dice"


class QwintoCardsGame(QwintoGame):
    game_name = "cards"


class QwintoState(pyspiel.State):
    """A Qwinto game in progress: the engine, plus the chance outcomes it waits for.

    Setup chance nodes first (the start player with ``random_start``; the card game's
    deal), then decision nodes (simultaneous) and the chance nodes a joint action needs.
    Only plain values live on the state: OpenSpiel clones it by deep-copying them.
    """

    def __init__(self, game: QwintoGame):
        super().__init__(game)
        n = game.num_players()
        self._game_name, self._reward_kind = game.game_name, game.reward_kind
        self._start: int | None = None if game.random_start else 0
        self._dealt: list[int] = []
        self._deal_size = (cards_spec.NUM_STACKS + cards_spec.HAND_SIZE * n
                           if game.game_name == "cards" else 0)
        # Built when the setup chance nodes are done, on first use (clones skip it).
        self._engine: Game | None = None
        self._pending: list[int] | None = None  # joint action waiting for chance
        self._draws: list[int] = []             # cards drawn for the pending entry
        self._rewards = [0.0] * n
        self._returns = [0.0] * n
        self._scores = [0] * n
        self._player = self._next_player()

    # -- the engine ------------------------------------------------------------------
    def _setting_up(self) -> bool:
        return self._start is None or len(self._dealt) < self._deal_size

    def engine(self) -> Game:
        """The engine (after the setup chance nodes): read it, never step it."""
        if self._engine is None:
            if self._setting_up():
                raise ValueError("the game is still at its setup chance nodes")
            engine = self.get_game().new_engine()
            if self._game_name == "cards":
                rest = sorted(set(range(cards_spec.DECK_SIZE)) - set(self._dealt))
                engine.reset(start_player=self._start, deck=self._dealt + rest)
            elif self._start:
                engine.reset(start_player=self._start)
            self._engine = engine
        return self._engine

    def _draws_needed(self) -> int:
        """Cards the active player draws after the pending entry."""
        engine = self.engine()
        needed = cards_spec.HAND_SIZE - len(engine.hands[engine.active])
        if engine.empty_pile == "reshuffle":
            return needed
        return min(needed, len(engine.draw_pile()))

    # -- OpenSpiel API -----------------------------------------------------------------
    def current_player(self) -> int:
        return self._player  # OpenSpiel asks very often: kept up to date by every apply

    def _next_player(self) -> int:
        if self._setting_up() or self._pending is not None:
            return _CHANCE
        if self._engine is not None and self._engine.done:  # a new engine is not done
            return _TERMINAL
        return _SIMULTANEOUS

    def is_terminal(self) -> bool:
        return self._player == _TERMINAL

    def _legal_actions(self, player: int) -> list[int]:
        """``player``'s legal actions; with no player at a simultaneous node (OpenSpiel
        asks for the current one, -2), the flat joint actions, as OpenSpiel's own
        simultaneous games give them: ValueError where they are more than
        :data:`MAX_FLAT_JOINT_ACTIONS`."""
        if player == _SIMULTANEOUS:
            count = math.prod(map(len, self._each_legal()))
            if count > MAX_FLAT_JOINT_ACTIONS:
                raise ValueError(
                    f"this simultaneous node has {count:,} flat joint actions (the players' "
                    f"legal actions multiplied), more than the {MAX_FLAT_JOINT_ACTIONS:,} "
                    f"legal_actions() lists; ask legal_actions(player) of each player and "
                    f"apply_actions")
            return list(range(count))
        return self.engine().legal_actions(self._check_player(player))

    def _each_legal(self) -> list[list[int]]:
        return [self.engine().legal_actions(p) for p in range(self.num_players())]

    def _check_player(self, player: int) -> int:
        if not 0 <= player < self.num_players():
            raise ValueError(f"player must be a seat in 0..{self.num_players() - 1}, "
                             f"got {player}")
        return player

    def _joint(self, flat: int) -> list[int]:
        """The joint action of flat joint action ``flat`` (OpenSpiel's order: player 0's
        choice varies fastest); ValueError unless it is one of :meth:`_legal_actions`."""
        each = self._each_legal()
        if not 0 <= flat < math.prod(map(len, each)):
            count = math.prod(map(len, each))
            raise ValueError(f"flat joint action {flat} is not one of this simultaneous "
                             f"node's (0..{count - 1}); apply_actions takes one action per "
                             f"player")
        actions = []
        for legal in each:
            flat, pick = divmod(flat, len(legal))
            actions.append(legal[pick])
        return actions

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """``(outcome, probability)`` of this chance node; ValueError at any other node
        (a decision node has no chance outcomes to offer)."""
        if self._player != _CHANCE:
            node = "terminal" if self._player == _TERMINAL else "simultaneous decision"
            raise ValueError(f"chance_outcomes() is for chance nodes; this is a {node} "
                             f"node (current player {self._player})")
        if self._game_name == "dice" and not self._setting_up():
            return _SUM_OUTCOMES[len(dice_spec.SUBSET_ROWS[self._roll_subset()])]
        outcomes = self._uniform_outcomes()
        return [(o, 1.0 / len(outcomes)) for o in outcomes]

    def _uniform_outcomes(self) -> list[int]:
        """The equally likely outcomes of this chance node: a start player, or a card."""
        if self._start is None:
            return list(range(self.num_players()))
        if self._setting_up():
            return sorted(set(range(cards_spec.DECK_SIZE)) - set(self._dealt))
        engine = self.engine()
        pile = engine.draw_pile()
        if len(self._draws) < len(pile):
            return sorted(set(pile) - set(self._draws))
        return sorted(set(engine.covered_cards()) - set(self._draws))

    def _apply_action(self, action: int) -> None:
        """A chance outcome, or a flat joint action at a simultaneous node; ValueError,
        the state unchanged, for one the node does not offer."""
        if self._player == _SIMULTANEOUS:
            self._apply_actions(self._joint(action))
            return
        if self._player == _TERMINAL:
            raise ValueError("the game is over: it takes no action")
        outcomes = [o for o, _ in self.chance_outcomes()]
        if action not in outcomes:
            raise ValueError(f"chance outcome {action} is none of this chance node's: "
                             f"{outcomes}")
        if self._start is None:
            self._start = action
        elif self._setting_up():
            self._dealt.append(action)
        elif self._game_name == "dice":
            self._step(self._pending, _faces_for(self._roll_subset(), action))
        else:
            self._draws.append(action)
            if len(self._draws) == self._draws_needed():
                self._step_entry()
        self._player = self._next_player()

    def _roll_subset(self) -> int:
        """The dice (colour bitmask) the pending joint action rolls."""
        engine = self.engine()
        if engine.phase == dice_spec.CHOOSE:
            return self._pending[engine.active] - dice_spec.PASS
        return engine.subset

    def _apply_actions(self, actions: list[int]) -> None:
        engine = self.engine()
        actions = engine.check_actions(list(actions))
        self._rewards = [0.0] * self.num_players()
        if self._game_name == "dice":
            chance = (engine.phase == dice_spec.CHOOSE
                      or (engine.phase == dice_spec.REROLL_DECISION
                          and actions[engine.active] == dice_spec.REROLL))
        else:
            chance = engine.phase == cards_spec.ENTRY and self._draws_needed() > 0
        if chance:
            self._pending = actions
        else:
            self._step(actions, None)
        self._player = self._next_player()

    def _step_entry(self) -> None:
        """Step the card game's pending entry, the refill drawing :attr:`_draws`."""
        engine = self.engine()
        pile = engine.draw_pile()
        from_pile = self._draws[:len(pile)]
        engine.stack_pile(from_pile)
        # Cards beyond the pile come from the covered cards, reshuffled into a new pile.
        reshuffled = self._draws[len(pile):]
        order = (reshuffled + sorted(set(engine.covered_cards()) - set(reshuffled))
                 if reshuffled else None)
        self._step(self._pending, order)

    def _step(self, actions: list[int], chance: Any) -> None:
        """Step the engine and add the step's rewards (the ParallelEnv's)."""
        engine = self.engine()
        engine.step(actions, chance, validate=False)
        self._pending, self._draws = None, []
        scores = engine.scores()
        rewards = step_rewards(self._scores, scores, self._reward_kind, engine.done)
        self._scores = scores
        self._rewards = [r + d for r, d in zip(self._rewards, rewards)]
        self._returns = [r + d for r, d in zip(self._returns, rewards)]

    def rewards(self) -> list[float]:
        """The rewards since the last joint action (its step's rewards in the ParallelEnv)."""
        return list(self._rewards)

    def returns(self) -> list[float]:
        return list(self._returns)

    def observation(self, player: int) -> np.ndarray:
        """``player``'s ParallelEnv observation (zeros during the setup chance nodes)."""
        if self._setting_up():
            return np.zeros(self.get_game().observation_size, np.float32)
        engine = self.engine()
        return engine.features()[engine.observation_index(player)]

    def _action_to_string(self, player: int, action: int) -> str:
        if player == _CHANCE:
            if self._start is None:
                return f"player {action} starts"
            if self._game_name == "dice":
                return f"roll {action}"
            return f"draw {cards_spec.card_name(action)}"
        if player == _SIMULTANEOUS and not self._setting_up():
            return ", ".join(self._action_to_string(p, a)
                             for p, a in enumerate(self._joint(action)))
        if self._setting_up() or action not in self._legal_actions(player):
            return f"action {action}"
        return f"{action}: {describe_action(self.engine(), player, action)}"

    def __str__(self) -> str:
        if self._setting_up():
            return f"setup: start {self._start}, dealt {self._dealt}"
        text = self.engine().render()
        if self._game_name == "cards":
            engine = self.engine()
            text += f"\nhands {engine.hands}, pile {engine.draw_pile()}"
        if self._pending is not None:
            text += f"\npending {self._pending}, drawn {self._draws}"
        return text


class QwintoObserver:
    """The observer OpenSpiel asks for observations (PyObserver interface)."""

    def __init__(self, size: int):
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: QwintoState, player: int) -> None:
        self.tensor[:] = state.observation(player)

    def string_from(self, state: QwintoState, player: int) -> str:
        obs = state.observation(player)
        return " ".join(f"{i}:{obs[i]:g}" for i in np.flatnonzero(obs))


def register() -> None:
    """Register both games with OpenSpiel (done on import; repeating it does nothing)."""
    registered = set(pyspiel.registered_names())
    for name, cls in (("dice", QwintoDiceGame), ("cards", QwintoCardsGame)):
        if GAME_NAMES[name] not in registered:
            pyspiel.register_game(_game_type(name), cls)


def load(game: str = "dice", **params: Any) -> QwintoGame:
    """The OpenSpiel game of ``game`` (``"dice"`` or ``"cards"``) with ``params``."""
    if game not in GAME_NAMES:
        raise ValueError(f"unknown game {game!r}; choose one of {sorted(GAME_NAMES)}")
    register()
    return pyspiel.load_game(GAME_NAMES[game], params)


register()
