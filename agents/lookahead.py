"""One-roll lookahead on a trained value head: another way to play a dice checkpoint.

A :class:`~agents.policy.PolicyNetwork` trained by ``train.py`` with ``env.reward:
score`` has a value head that estimates ``V(obs) ~ reward_scale * (own points still to
come)``, discounted by ``gamma`` per engine step. :class:`LookaheadAgent` plays the
same checkpoint by searching one roll ahead with that value instead of following the
policy head:

* **Afterstates.** Writing value ``v`` into cell ``c`` (or passing, which is a misthrow
  for the active player) leads to a known position: the own sheet (and misthrows)
  updated, the next seat active, phase "choose", no roll. The agent encodes it exactly
  as the engine's observation would show it (the other seats' sheets are left as they
  are: their simultaneous entries are unknown) and scores the action by
  ``Q = reward_scale * (score change by the rules) + gamma * V(afterstate)``, with
  ``V = 0`` when the afterstate ends the game for this player (two complete rows, or a
  fourth misthrow).
* **Entry**: the legal action with the largest ``Q``.
* **Re-roll decision** (active): keep when ``max_a Q`` for the roll in hand is at least
  the expectation of ``max_a Q`` over a fresh roll of the same dice.
* **Dice choice** (active): per colour subset, the exact expectation over its dice-sum
  distribution of ``max(M(v), E)``, where ``M(v)`` is the best ``Q`` for a roll of
  ``v`` in those colours and ``E`` the expectation of ``M`` (the re-roll option folded
  in); the best subset is rolled.

Every afterstate of a decision (for the dice choice all legal ``(cell, value)`` pairs,
a few hundred) goes through the network in one batched forward pass, and a batch of
observations is decided at once (``supports_batch``), so the agent also plays inside
the batched engines. ``lookahead="entry"`` searches at entry only and takes the dice
choice and re-roll decision from the policy head. ``policy_weight=w`` adds
``w * log pi(a)`` (the policy head's masked log-probabilities) to every score, also to
the entry the agent expects to make after each hypothetical roll.

How strong and how fast it plays, with and without the policy prior, is measured in
``docs/agents.md`` (Measurements).

``reward_scale`` and ``gamma`` are read from the checkpoint's training config
(``metadata["config"]["ppo"]``); a checkpoint trained on another reward (``win``,
``margin``) has a value head that does not measure points and is refused.

>>> from agents import load
>>> bot = load("lookahead:pretrained:dice-2p")
>>> bot.name
'lookahead:pretrained:dice-2p'
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple

import numpy as np
import torch

from qwinto_env import rules
from qwinto_env.batched import sheet_scores
from qwinto_env.spec.dice import (CHOOSE, ENTRY, KEEP, NUM_ACTIONS, PASS, REROLL,
                                  REROLL_DECISION, ROLL_FIRST, ROLLS, SEAT, SUBSET_ROWS,
                                  observation_layout, observation_size)

from .base import Agent, AgentSpecError, IllegalMaskError, check_number
from .chance_tables import SUBSET_DISTRIBUTIONS
from .features import SheetFeatures
from .policy import CheckpointError, PolicyNetwork

# sheet_scores (qwinto_env.batched's) is re-exported: it was defined here before.
__all__ = ["LookaheadAgent", "Afterstates", "LOOKAHEAD_MODES", "next_turn", "sheet_scores"]

#: ``"full"``: search the dice choice, the re-roll decision and the entry;
#: ``"entry"``: search the entry only, the policy head decides the rest.
LOOKAHEAD_MODES = ("full", "entry")

NC, NR, NF = rules.NUM_CELLS, rules.NUM_ROWS, rules.NUM_FIELDS
#: Values 1..18 (index ``v - 1``).
NUM_VALUES = rules.MAX_VALUE
#: Dice subsets 1..7 (index ``s - 1``), one per roll action.
_SUBSETS = len(ROLLS)
#: Bit ``r`` of a colour bitmask per row ``r``: colour flags -> bitmask.
_ROW_BITS = torch.tensor([1 << r for r in range(NR)])
#: ``_SUBSET_HAS_ROW[s - 1, r]``: whether the dice subset with bitmask ``s`` rolls row ``r``.
_SUBSET_HAS_ROW = torch.tensor([[r in SUBSET_ROWS[s] for r in range(NR)]
                                for s in range(1, _SUBSETS + 1)])
#: ``_SUM_PROBS[s - 1, v - 1]``: probability that subset ``s`` rolls the sum ``v``.
_SUM_PROBS = torch.tensor(SUBSET_DISTRIBUTIONS[1:, 1:], dtype=torch.float32)
#: How many afterstates go through the network at once (bounds memory on big batches).
_CHUNK = 16384


def next_turn(obs: torch.Tensor, num_players: int) -> torch.Tensor:
    """Observations ``(B, obs)`` as the next turn starts with nothing written: the next
    seat active, phase "choose", no roll, no re-roll; sheets unchanged."""
    layout = observation_layout(num_players)
    out = obs.clone()
    active = obs[:, layout.active].argmax(1)
    out[:, layout.active.start:] = 0.0
    out[torch.arange(len(obs)), layout.active.start + (active + 1) % num_players] = 1.0
    out[:, layout.common.phase.start + CHOOSE] = 1.0
    return out


class Afterstates(NamedTuple):
    """The afterstates of a batch of decisions (:meth:`LookaheadAgent.afterstates`).

    Writes, one per allowed ``(observation, cell, value)``: ``index`` (the observation),
    ``cell``, ``value`` (1..18), ``write_states`` (the observations after the write),
    ``write_gain`` (score change by the rules), ``write_ends`` (a second complete row
    ends the game). Passes, one per observation: ``pass_states``, ``pass_gain`` (-5 for
    the active player's misthrow, else 0), ``pass_ends`` (a fourth misthrow).
    """

    index: torch.Tensor
    cell: torch.Tensor
    value: torch.Tensor
    write_states: torch.Tensor
    write_gain: torch.Tensor
    write_ends: torch.Tensor
    pass_states: torch.Tensor
    pass_gain: torch.Tensor
    pass_ends: torch.Tensor


def _config_section(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``parent[key]`` of a checkpoint's training config, checked to be a mapping."""
    section = parent.get(key)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise CheckpointError(f"checkpoint's training config has {key} of type "
                              f"{type(section).__name__}, not a mapping")
    return section


def _config_number(value: Any, key: str) -> float:
    """A finite number of a checkpoint's training config."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise CheckpointError(f"checkpoint's training config has {key} {value!r}, not a "
                              f"finite number")
    return float(value)


def value_units(data: Mapping[str, Any]) -> dict[str, float]:
    """The units of a checkpoint's value head, from its training config: the
    ``reward_scale`` and ``gamma`` it was trained with (those given there only), checked
    to be a value in points (``env.reward: score``); :class:`CheckpointError` otherwise."""
    config = _config_section(data.get("metadata") or {}, "config")
    reward = _config_section(config, "env").get("reward", "score")
    if not (isinstance(reward, str) and reward == "score"):
        raise CheckpointError(f"checkpoint was trained with env.reward {reward!r}; planning "
                              f"on it needs a value head in points (env.reward 'score')")
    ppo = _config_section(config, "ppo")
    return {key: _config_number(ppo[key], f"ppo.{key}")
            for key in ("reward_scale", "gamma") if key in ppo}


class LookaheadAgent(Agent):
    """Plays a dice checkpoint by one-roll lookahead on its value head (module docstring).

    Args:
        network: a :class:`PolicyNetwork` for the dice game with ``num_players`` seats,
            trained with ``env.reward: score``.
        reward_scale, gamma: the trainer's ``ppo.reward_scale`` and ``ppo.gamma`` (the
            units and discount of the value head).
        lookahead: ``"full"`` or ``"entry"`` (see :data:`LOOKAHEAD_MODES`).
        policy_weight: weight ``w >= 0`` of the policy prior ``w * log pi(a)`` (0: pure
            lookahead).
    """

    name = "lookahead"
    supports_batch = True

    def __init__(self, network: PolicyNetwork, game: str = "dice", num_players: int = 2,
                 reward_scale: float = 0.05, gamma: float = 0.999, lookahead: str = "full",
                 policy_weight: float = 0.1):
        if game != "dice":
            raise AgentSpecError(f"the lookahead agent plays the dice game only (it searches "
                                 f"dice rolls), not the {game!r} game")
        size = observation_size(num_players)
        if network.observation_size != size or network.num_actions != NUM_ACTIONS:
            raise AgentSpecError(
                f"the network takes {network.observation_size} observations and "
                f"{network.num_actions} actions; the {num_players}-player dice game has "
                f"{size} and {NUM_ACTIONS}")
        if lookahead not in LOOKAHEAD_MODES:
            raise AgentSpecError(f"unknown lookahead {lookahead!r}; choose one of "
                                 f"{LOOKAHEAD_MODES}")
        super().__init__(game, num_players)
        self.network = network.eval()
        self.reward_scale = check_number("lookahead setting reward_scale", reward_scale, 0.0,
                                         strict=True)
        self.gamma = check_number("lookahead setting gamma", gamma, 0.0, 1.0)
        self.lookahead = lookahead
        self.policy_weight = check_number("lookahead setting policy_weight", policy_weight, 0.0)
        self._allowed = SheetFeatures()
        self._layout = observation_layout(num_players)

    @classmethod
    def from_checkpoint(cls, network: PolicyNetwork, data: Mapping[str, Any], /,
                        **kwargs: Any) -> "LookaheadAgent":
        """Build the agent from a loaded checkpoint (see :func:`agents.policy.load_checkpoint`),
        taking ``reward_scale`` and ``gamma`` from its training config unless given."""
        for key, number in value_units(data).items():
            kwargs.setdefault(key, number)
        return cls(network, game=data.get("game", "dice"),
                   num_players=int(data.get("num_players", 2)), **kwargs)

    # -- deciding --------------------------------------------------------------------
    def afterstates(self, observations: np.ndarray) -> Afterstates:
        """Every afterstate the decisions of ``observations (B, obs)`` can lead to (see
        :class:`Afterstates`): at entry the rolled value in the rolled colours, at the
        re-roll decision every value in the rolled colours, at the dice choice every
        value anywhere; only writes the rules allow. Sheets of other seats stay as they
        are (their simultaneous entries are unknown)."""
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        B, layout = len(obs), self._layout
        common = layout.common
        # The own sheet is seat 0's block; the active one-hot's first flag is mine.
        cells = torch.round(obs[:, SEAT.cells] * rules.MAX_VALUE).long()
        misthrows = torch.round(obs[:, SEAT.misthrows].sum(1)).long()
        i_am_active = obs[:, layout.active.start] > 0.5
        phase = obs[:, common.phase].argmax(1)
        in_colours = (obs[:, common.colours] > 0.5)[:, torch.arange(NC) // NF]
        rolled = obs[:, None, common.value] > 0.5
        allowed = self._allowed(obs)[:, obs.shape[1]:obs.shape[1] + NC * NUM_VALUES] \
            .view(B, NC, NUM_VALUES) > 0.5
        need = torch.where((phase == ENTRY)[:, None, None], in_colours[:, :, None] & rolled,
                           torch.where((phase == REROLL_DECISION)[:, None, None],
                                       in_colours[:, :, None],
                                       torch.ones_like(allowed)))
        b, c, v = torch.nonzero(allowed & need, as_tuple=True)
        k = torch.arange(len(b))
        base = next_turn(obs, self.num_players)
        before = sheet_scores(cells, misthrows)
        write_states = base[b]
        write_states[k, SEAT.cells.start + c] = (v + 1).float() / rules.MAX_VALUE
        new_cells = cells[b]
        new_cells[k, c] = v + 1
        write_gain = sheet_scores(new_cells, misthrows[b]) - before[b]
        write_ends = (new_cells.view(-1, NR, NF) > 0).all(-1).sum(-1) >= rules.FULL_ROWS_TO_END
        pass_states = base.clone()
        mark = i_am_active & (misthrows < rules.MAX_MISTHROWS)
        pass_states[mark.nonzero(as_tuple=True)[0], SEAT.misthrows.start + misthrows[mark]] = 1.0
        pass_misthrows = misthrows + i_am_active.long()
        pass_gain = sheet_scores(cells, pass_misthrows) - before
        pass_ends = pass_misthrows >= rules.MAX_MISTHROWS
        return Afterstates(b, c, v + 1, write_states, write_gain, write_ends, pass_states,
                           pass_gain, pass_ends)

    @torch.no_grad()
    def q_values(self, observations: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """``Q = reward_scale * gain + gamma * V(afterstate)`` (``V = 0`` where the game
        ends) of every afterstate of :meth:`afterstates`.

        Returns ``(q_write, q_pass)``: ``q_write[b, c, v - 1]`` for writing ``v`` into
        cell ``c`` (``-inf`` where not allowed or not needed) and ``q_pass[b]`` for
        writing nothing (a misthrow for the active player).
        """
        a = self.afterstates(observations)
        values = self._forward(torch.cat([a.write_states, a.pass_states]))[1]
        v_write, v_pass = values[:len(a.cell)], values[len(a.cell):]
        q_w = self.reward_scale * a.write_gain + self.gamma * v_write.masked_fill(a.write_ends, 0)
        q_p = self.reward_scale * a.pass_gain + self.gamma * v_pass.masked_fill(a.pass_ends, 0)
        q_write = torch.full((len(a.pass_states), NC, NUM_VALUES), -torch.inf)
        q_write[a.index, a.cell, a.value - 1] = q_w
        return q_write, q_p

    def _forward(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The network's logits and values of ``states (K, obs)``, in chunks."""
        outs = [self.network(chunk) for chunk in torch.split(states, _CHUNK)]
        return torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])

    @torch.no_grad()
    def action_scores(self, observations: np.ndarray, masks: np.ndarray) -> torch.Tensor:
        """Per observation, a score of every action (``-inf`` for illegal ones); the agent
        plays the argmax. See the module docstring for what each decision scores."""
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        legal = torch.as_tensor(np.asarray(masks)) > 0
        if not legal.any(dim=1).all():
            raise IllegalMaskError("an action mask of the batch has no legal action")
        B = len(obs)
        phase = obs[:, self._layout.common.phase].argmax(1)
        scores = torch.full((B, NUM_ACTIONS), -torch.inf)
        todo = legal.sum(1) > 1  # a real decision: more than one legal action
        search = todo & (phase == ENTRY) if self.lookahead == "entry" else todo
        if self.lookahead == "entry":
            rolls = todo & (phase != ENTRY)
            if rolls.any():
                scores[rolls] = self.network(obs[rolls])[0]
        idx = search.nonzero(as_tuple=True)[0]
        if len(idx):
            scores[idx] = self._search(obs[idx], phase[idx])
        scores[~todo] = 0.0  # one legal action: the mask below leaves only it
        return scores.masked_fill(~legal, -torch.inf)

    def _entry_observations(self, obs: torch.Tensor, subset: torch.Tensor,
                            value: torch.Tensor) -> torch.Tensor:
        """Observations ``(K, obs)`` as the entry phase shows them once the dice subset
        ``subset + 1`` rolled ``value + 1`` and was kept (``obs`` already indexed)."""
        common = self._layout.common
        out = obs.clone()
        out[:, common.start:] = 0.0
        out[:, common.phase.start + ENTRY] = 1.0
        out[:, common.colours] = _SUBSET_HAS_ROW[subset].float()
        out[torch.arange(len(out)), common.value.start + value] = 1.0
        return out

    def _search(self, obs: torch.Tensor, phase: torch.Tensor) -> torch.Tensor:
        """Lookahead scores ``(B, 37)`` of the decisions of observations ``obs``."""
        q_write, q_pass = self.q_values(obs.numpy())
        B, common = len(obs), self._layout.common
        colours = obs[:, common.colours] > 0.5
        s_now = (colours.long() * _ROW_BITS).sum(1).clamp(min=1) - 1
        v_now = obs[:, common.value].argmax(1)
        rows = torch.arange(B)
        # Q of every entry action (27 writes, pass) after each (subset, value): (B, 7, 18, 28)
        cell_in = _SUBSET_HAS_ROW[:, torch.arange(NC) // NF]                  # (7, 27)
        q_entry = torch.where(cell_in[None, :, None, :], q_write.transpose(1, 2)[:, None],
                              -torch.inf)
        q_entry = torch.cat([q_entry,
                             q_pass[:, None, None, None].expand(B, _SUBSETS, NUM_VALUES, 1)],
                            dim=3)
        prior = torch.zeros_like(q_entry)
        if self.policy_weight > 0:
            # the entry the agent itself would make after each roll: Q plus the policy prior
            need = (phase == CHOOSE)[:, None, None] | ((phase != CHOOSE)[:, None, None] & (
                torch.arange(_SUBSETS)[None, :, None] == s_now[:, None, None]) & (
                (phase == REROLL_DECISION)[:, None, None] | (torch.arange(NUM_VALUES)[None, None, :]
                                               == v_now[:, None, None])))
            b, s, v = need.nonzero(as_tuple=True)
            logits = self._forward(self._entry_observations(obs[b], s, v))[0][:, :PASS + 1]
            logits = logits.masked_fill(~torch.isfinite(q_entry[b, s, v]), -torch.inf)
            prior[b, s, v] = self.policy_weight * torch.log_softmax(logits, dim=1)
        pick = (q_entry + prior).argmax(3, keepdim=True)
        best = q_entry.gather(3, pick).squeeze(3)                             # (B, 7, 18)
        fresh = (best * _SUM_PROBS).sum(2)                                    # (B, 7)
        with_reroll = (torch.maximum(best, fresh[:, :, None]) * _SUM_PROBS).sum(2)
        scores = torch.full((B, NUM_ACTIONS), -torch.inf)
        scores[:, :PASS + 1] = (q_entry + prior)[rows, s_now, v_now]
        choose, reroll = phase == CHOOSE, phase == REROLL_DECISION
        scores[choose, ROLLS.start:ROLLS.stop] = with_reroll[choose]
        scores[reroll, KEEP] = best[rows, s_now, v_now][reroll]
        scores[reroll, REROLL] = fresh[rows, s_now][reroll]
        if self.policy_weight > 0:
            logits = self.network(obs)[0][:, ROLL_FIRST:]
            rolls = phase != ENTRY
            scores[rolls, ROLL_FIRST:] += self.policy_weight * torch.log_softmax(
                logits[rolls].masked_fill(~torch.isfinite(scores[rolls, ROLL_FIRST:]),
                                          -torch.inf), dim=1)
        return scores

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.check_inputs(observations, masks)
        scores = self.action_scores(observations, masks)
        return scores.argmax(dim=1).numpy().astype(np.int64)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.check_inputs(observation, action_mask, batch=False)
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None])[0])
