"""Qwinto on Ray RLlib's new API stack: the multi-agent env adapter and the RLModules.

Needs the ``rllib`` extra (``pip install -e ".[rllib]"``); nothing else in the project
imports this module.

:class:`QwintoMultiAgentEnv`
    The PettingZoo ParallelEnv (:mod:`qwinto_env.parallel`) as an RLlib
    ``MultiAgentEnv``. RLlib's stock ``ParallelPettingZooEnv`` would hand every agent
    an observation every step, but in Qwinto most agents have exactly one legal action
    on most steps (the inactive player while the dice are chosen, everybody whose roll
    fits nowhere): such samples carry no decision and would be half of the training
    data. The adapter plays those forced actions itself and gives an observation only
    to agents with two or more legal actions; their rewards in between are summed into
    the agent's next reward (RLlib's "hanging" rewards), so returns are unchanged. At
    the end every agent gets its final observation. Rewards are multiplied by
    ``reward_scale`` (returns of O(1) for the value head). Each game of each env runner
    draws its own dice and deals (RLlib's env seeds alone repeat across runners).

:class:`MaskedPPOModule`
    A ``TorchRLModule`` with ``ValueFunctionAPI`` for PPO whose network *is* a
    :class:`agents.policy.PolicyNetwork` (same MLP, same optional sheet features,
    shared torso for policy and value). Illegal actions get logit ``FLOAT_MIN`` before
    RLlib builds the action distribution, so exploration, inference and the PPO loss
    only ever see legal actions. :func:`export_network` turns its weights into a plain
    ``PolicyNetwork`` for the project's checkpoint format.

:class:`AgentModule`
    A fixed, non-trained opponent: any ``agents.load`` spec (``random``, ``greedy``,
    ``expert``, a ``.pt`` checkpoint) as an RLModule that returns the agent's actions.
    The agent is called on a batch of observations from many games at once, so it must
    decide from the observation alone (every shipped agent does).

:func:`policy_mapping` and :class:`SeededEpisodeIds`
    Who plays which seat, per episode: drawn from the episode's ID, which the callback
    makes a function of the config's seed (RLlib's own IDs are random UUIDs).
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.torch_utils import FLOAT_MIN

from qwinto_env.game import check_seed
from qwinto_env.parallel import check_options, env_options, parallel_env

from ..policy import PolicyNetwork

__all__ = ["QwintoMultiAgentEnv", "MaskedPPOModule", "AgentModule", "export_network",
           "policy_mapping", "SeededEpisodeIds", "LEARNER"]

#: Module ID of the trained policy (shared by every seat it plays).
LEARNER = "learner"


class QwintoMultiAgentEnv(MultiAgentEnv):
    """The Qwinto ParallelEnv for RLlib; see the module docstring.

    ``config`` (RLlib passes the ``env_config`` dict, an ``EnvContext``): the options of
    :func:`qwinto_env.parallel_env` but ``random_start`` (the start player is drawn at
    every reset), ``reward_scale`` (a positive finite number, default 1.0) and ``seed``
    (the run's seed, default None). An unknown option is a TypeError naming it, a bad
    value a ValueError naming it.

    ``reset(seed=s)`` seeds the game from ``s``, the EnvContext's ``worker_index`` and
    ``seed``, not from ``s`` alone: RLlib seeds game ``k`` of env runner ``w`` with
    ``run seed + w + k``, so alone those seeds repeat across the runners of a run and
    across neighbouring run seeds (the same deals, the same rolls).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        self.worker_index = int(getattr(config, "worker_index", 0) or 0)
        config = dict(config or {})
        check_options("QwintoMultiAgentEnv env_config", config, _options(config),
                      " (the adapter always draws the start player)"
                      if "random_start" in config else "")
        self.reward_scale = _positive_finite("reward_scale", config.pop("reward_scale", 1.0))
        try:
            self.run_seed = check_seed(config.pop("seed", None))
        except ValueError as exc:
            raise ValueError(f"QwintoMultiAgentEnv env_config {exc}") from None
        self.par_env = parallel_env(random_start=True, **config)
        self.possible_agents = list(self.par_env.possible_agents)
        self.agents = []
        self.observation_spaces = {a: self.par_env.observation_space(a)
                                   for a in self.possible_agents}
        self.action_spaces = {a: self.par_env.action_space(a) for a in self.possible_agents}
        self._obs: dict[str, dict[str, np.ndarray]] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, infos = self.par_env.reset(seed=self._game_seed(seed), options=options)
        self.agents = list(self.par_env.agents)
        rewards = dict.fromkeys(self.agents, 0.0)
        obs, infos, _, done = self._advance(obs, infos, rewards)
        if done:  # a game decided without any choice cannot happen in either Qwinto
            raise RuntimeError("the game ended before any agent had a decision")
        return obs, infos

    def _game_seed(self, seed: Any) -> int | None:
        """The game's seed for RLlib's ``seed`` (see the class docstring)."""
        if seed is None:
            return None
        entropy = [check_seed(seed), self.worker_index]
        if self.run_seed is not None:
            entropy.append(self.run_seed)
        return int(np.random.SeedSequence(entropy).generate_state(1)[0])

    def step(self, action_dict: dict[str, Any]):
        # the deciding agents' actions replace their forced defaults; an illegal one
        # raises IllegalActionError in the env, so a masking bug stops the run
        actions = {a: self._forced(a) for a in self.agents} | dict(action_dict)
        obs, rewards, terms, truncs, infos = self.par_env.step(actions)
        rewards = {a: float(r) for a, r in rewards.items()}
        obs, infos, rewards, done = self._advance(obs, infos, rewards, terms, truncs)
        rewards = {a: r * self.reward_scale for a, r in rewards.items()}
        if done:
            self.agents = []
            return (obs, rewards, dict.fromkeys([*self.possible_agents, "__all__"], True),
                    dict.fromkeys([*self.possible_agents, "__all__"], False), infos)
        return obs, rewards, {"__all__": False}, {"__all__": False}, infos

    def _forced(self, agent: str) -> int:
        return int(np.argmax(self._obs[agent]["action_mask"]))

    def _advance(self, obs, infos, rewards, terms=None, truncs=None):
        """Play forced steps until an agent has a choice or the game ends.

        Returns the observations and infos of the deciding agents (all agents at the
        end), the rewards summed over the forced steps, and whether the game is over.
        """
        while True:
            self._obs = obs
            if terms is not None and (any(terms.values()) or any(truncs.values())):
                return obs, infos, rewards, True
            deciding = [a for a in self.agents if obs[a]["action_mask"].sum() > 1]
            if deciding:
                return ({a: obs[a] for a in deciding}, {a: infos[a] for a in deciding},
                        rewards, False)
            actions = {a: self._forced(a) for a in self.agents}
            obs, step_rewards, terms, truncs, infos = self.par_env.step(actions)
            for a, r in step_rewards.items():
                rewards[a] = rewards.get(a, 0.0) + float(r)


def _options(config: Mapping[str, Any]) -> set[str]:
    """The ``env_config`` keys :class:`QwintoMultiAgentEnv` takes for ``config``'s game."""
    return {*env_options(config.get("game", "dice")), "reward_scale", "seed"} - {"random_start"}


def _positive_finite(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"QwintoMultiAgentEnv env_config {name} must be a positive finite "
                         f"number, got {value!r}")
    return float(value)


class SeededEpisodeIds(RLlibCallback):
    """Names each episode, as its env runner creates it, ``<seed>-<runner>-<n>`` (the
    runner's n-th episode; ``seed`` the config's): :func:`policy_mapping` draws the
    episode's opponents from its ID, and RLlib's own IDs are random UUIDs, so two runs
    with the same seed played different opponent schedules.

    A runner creates its episodes in an order that its seeded envs and modules fix, so
    the same seed gives the same schedule and another seed another one. Without a seed
    RLlib's IDs stay. RLlib makes one instance per env runner, before the episode has
    any data that would carry the ID.
    """

    def __init__(self) -> None:
        super().__init__()
        self._created = 0

    def on_episode_created(self, *, episode: Any, env_runner: Any = None,
                           **kwargs: Any) -> None:
        seed = env_runner.config.seed
        if seed is not None:
            episode.id_ = f"{seed}-{env_runner.worker_index or 0}-{self._created}"
            self._created += 1


def policy_mapping(self_play: float, opponents: dict[str, float]) -> Callable[..., str]:
    """A ``policy_mapping_fn``: per episode, self-play or one fixed opponent.

    With probability ``self_play`` (a share of the total) every seat plays the
    learner (parameter sharing); otherwise ``player_0`` is the learner and every other
    seat plays one opponent module, drawn by ``opponents`` (module ID -> share). The
    draw is a function of the episode ID, so all seats of an episode agree and no state
    is kept between calls; :class:`SeededEpisodeIds` makes the IDs, and so the
    schedule, a function of the seed. The env draws the start player, so seat 0 is no
    bias.
    """
    total = self_play + sum(opponents.values())
    if total <= 0:
        raise ValueError("policy_mapping: the self-play and opponent shares are all 0")
    names = list(opponents)
    cum = np.cumsum([opponents[n] for n in names]) / total + self_play / total

    def mapping_fn(agent_id: str, episode: Any, **kwargs: Any) -> str:
        digest = hashlib.blake2b(str(episode.id_).encode(), digest_size=8).digest()
        u = random.Random(digest).random()
        if agent_id == "player_0" or u < self_play / total:
            return LEARNER
        return names[min(int(np.searchsorted(cum, u, side="right")), len(names) - 1)]

    return mapping_fn


class MaskedPPOModule(TorchRLModule, ValueFunctionAPI):
    """A :class:`PolicyNetwork` as a masked PPO RLModule (see the module docstring).

    ``model_config``: ``hidden``, ``activation``, ``features`` (the
    :class:`PolicyNetwork` arguments). The observation space must be the env's
    ``Dict(observation=Box, action_mask=Box)``.
    """

    def setup(self) -> None:
        space = self.observation_space
        if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != {"observation",
                                                                            "action_mask"}:
            raise ValueError(f"MaskedPPOModule needs a Dict(observation, action_mask) "
                             f"observation space, got {space}")
        cfg = dict(self.model_config or {})
        self.net = PolicyNetwork(space["observation"].shape[0], int(self.action_space.n),
                                 hidden=cfg.get("hidden", (256, 256)),
                                 activation=cfg.get("activation", "tanh"),
                                 features=cfg.get("features", "raw"))

    def _embed(self, batch: dict[str, Any]) -> torch.Tensor:
        obs = batch[Columns.OBS]["observation"]
        return self.net.torso(self.net.features(obs.float()))

    @staticmethod
    def _masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        # FLOAT_MIN, not -inf: the distribution's entropy and KL stay finite
        return logits.masked_fill(mask <= 0, FLOAT_MIN)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        z = self._embed(batch)
        logits = self.net.policy_head(z)
        return {Columns.ACTION_DIST_INPUTS: self._masked(logits, batch[Columns.OBS]["action_mask"])}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        z = self._embed(batch)
        logits = self._masked(self.net.policy_head(z), batch[Columns.OBS]["action_mask"])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: z}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:
            embeddings = self._embed(batch)
        return self.net.value_head(embeddings).squeeze(-1)


class AgentModule(RLModule):
    """A fixed opponent: an ``agents.load`` spec played as an RLModule (never trained).

    ``model_config``: ``spec`` (the ``agents.load`` spec), ``game``, ``num_players``,
    ``seed``. A checkpoint path must exist on every node that runs env runners.
    """

    def setup(self) -> None:
        from ..load import load
        cfg = dict(self.model_config or {})
        self.spec = cfg["spec"]
        self.agent = load(self.spec, game=cfg.get("game", "dice"),
                          num_players=int(cfg.get("num_players", 2)))
        self.agent.reset(seed=cfg.get("seed"))

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        actions = self.agent.act_batch(_numpy(obs["observation"]).astype(np.float32),
                                       _numpy(obs["action_mask"]).astype(np.int8))
        return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"the fixed opponent {self.spec!r} is not trained; keep it "
                                  f"out of policies_to_train")


def _numpy(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def export_network(weights: Mapping[str, Any], observation_size: int, num_actions: int,
                   network: Mapping[str, Any]) -> PolicyNetwork:
    """A plain :class:`PolicyNetwork` (CPU) from a :class:`MaskedPPOModule`'s weights.

    ``weights`` is the module's state (``module.get_state()``, or a learner group's
    ``get_weights()[module_id]``: numpy arrays or tensors under ``net.*``);
    ``network`` the module's ``model_config`` (``hidden``, ``activation``,
    ``features``). Loading is strict, so a layout mismatch raises instead of exporting
    half a network. :func:`agents.policy.save_checkpoint` writes the result and
    ``agents.load`` reads it.
    """
    net = PolicyNetwork(observation_size, num_actions, **dict(network))
    prefix = "net."
    state = {k[len(prefix):]: torch.as_tensor(np.asarray(v)).clone()
             for k, v in weights.items() if k.startswith(prefix)}
    net.load_state_dict(state)
    return net.eval()
