"""CleanRL-style PPO with action masks on ``gymnasium.make_vec("Qwinto-v0", ...)``.

    python examples/cleanrl_ppo.py --game dice --total-timesteps 200000 --seed 1
    python examples/cleanrl_ppo.py --game cards --opponent greedy

One file read top to bottom, after CleanRL's ``ppo.py``: plain torch, an ``Agent`` with an
actor and a critic, rollout tensors allocated up front, GAE, the clipped objective. What
Qwinto adds:

* **Action masks.** The actor's logits of illegal actions are set to ``-inf`` from
  ``obs["action_mask"]`` when acting *and* when the update recomputes log-probabilities,
  so the sampled actions are always legal and the ratio compares the same masked
  distributions. (``torch.distributions.Categorical`` clamps ``-inf`` logits in its
  entropy, so masked actions add 0 to it, not NaN.)
* **Autoreset.** Gymnasium 1.0's vector envs reset a finished env on the *next* ``step``
  call (that call ignores its action and returns the new episode's first observation), so
  a CleanRL rollout would store one fake transition per episode. Gymnasium >= 1.1 offers
  ``autoreset_mode=SAME_STEP``, the behaviour CleanRL was written for: the observation
  returned with ``terminated`` is already the next episode's first one (the last one is
  in ``infos["final_obs"]``), so every stored step is a real decision and ``dones``
  marks the boundaries GAE must not cross. Qwinto episodes only terminate (no time
  limit), so nothing needs bootstrapping from the final observation. Episodic returns are
  summed here, not by ``gymnasium.wrappers.vector.RecordEpisodeStatistics``, which
  assumes next-step autoreset and would drop each episode's first reward.
* **Evaluation.** At the end the actor plays deterministically (masked argmax, through
  :class:`agents.benchmark.algorithms.common.ModuleAgent`) ``--eval-games`` games against
  the opponent with :func:`agents.evaluate.play`, seats rotated; the win rate is printed.

``main(argv)`` runs it from Python and returns the evaluation's summary row of the
trained agent plus ``steps_per_second`` (learner steps, rollout and update together).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions.categorical import Categorical

import qwinto_env  # noqa: F401  registers Qwinto-v0
from agents.benchmark.algorithms.common import ModuleAgent
from agents.evaluate import play


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--game", choices=["dice", "cards"], default="dice")
    p.add_argument("--num-players", type=int, default=2, help="seats, the learner's included")
    p.add_argument("--opponent", default="random",
                   help="agent spec for every other seat: random, greedy, expert, a checkpoint")
    p.add_argument("--reward", choices=["score", "win", "margin"], default="score",
                   help="Qwinto-v0's reward: dense score changes, or the result at the end")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-timesteps", type=int, default=200_000, help="learner steps")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--num-envs", type=int, default=8, help="parallel envs (SyncVectorEnv)")
    p.add_argument("--num-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--anneal-lr", type=int, choices=[0, 1], default=1,
                   help="decay the learning rate linearly to 0")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=128, help="width of both hidden layers")
    p.add_argument("--eval-games", type=int, default=500, help="games of the final evaluation")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (networks this small run fastest on one)")
    args = p.parse_args(argv)
    counts = ["total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs",
              "hidden", "eval_games", "threads"]
    bad = [f"--{name.replace('_', '-')}" for name in counts if getattr(args, name) < 1]
    if bad:
        p.error(f"{', '.join(bad)} must be positive")
    if not 0 <= args.seed < 2**32:  # what numpy's global seeding takes
        p.error(f"--seed must be in 0..{2**32 - 1}, got {args.seed}")
    args.batch_size = args.num_envs * args.num_steps
    if args.num_minibatches > args.batch_size:
        p.error(f"--num-minibatches ({args.num_minibatches}) must not exceed the batch, "
                f"--num-envs x --num-steps = {args.batch_size}")
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)
    return args


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_size: int, num_actions: int, hidden: int):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_size, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_size, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, num_actions), std=0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor,
                             action: torch.Tensor | None = None):
        logits = self.actor(x).masked_fill(~mask, -torch.inf)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def make_envs(args: argparse.Namespace) -> gym.vector.VectorEnv:
    if not hasattr(gym.vector, "AutoresetMode"):
        raise SystemExit(f"gymnasium {gym.__version__} has no same-step autoreset; "
                         "this example needs gymnasium>=1.1")
    opponents = [args.opponent] * (args.num_players - 1)   # none in solo play
    return gym.make_vec("Qwinto-v0", num_envs=args.num_envs, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
                        game=args.game, num_players=args.num_players, opponents=opponents,
                        learner_seat="random", reward=args.reward)


def as_tensors(obs: dict[str, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(obs["observation"]), torch.as_tensor(obs["action_mask"]).bool()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    envs = make_envs(args)
    obs_size = envs.single_observation_space["observation"].shape[0]
    num_actions = int(envs.single_action_space.n)
    agent = Agent(obs_size, num_actions, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage, allocated once.
    obs = torch.zeros((args.num_steps, args.num_envs, obs_size))
    masks = torch.zeros((args.num_steps, args.num_envs, num_actions), dtype=torch.bool)
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    global_step = 0
    start_time = time.perf_counter()
    next_obs, next_mask = as_tensors(envs.reset(seed=args.seed)[0])
    next_done = torch.zeros(args.num_envs)
    episode_return = np.zeros(args.num_envs)
    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        finished = []
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            actions[step], logprobs[step], values[step] = action, logprob, value.flatten()

            raw_obs, reward, terminations, truncations, _ = envs.step(action.numpy())
            done = np.logical_or(terminations, truncations)
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs, next_mask = as_tensors(raw_obs)
            next_done = torch.as_tensor(done, dtype=torch.float32)
            episode_return += reward
            finished.extend(episode_return[done])
            episode_return[done] = 0.0
        if finished:
            print(f"global_step={global_step}, episodic_return={np.mean(finished):.2f} "
                  f"({len(finished)} episodes)")

        # GAE: a done at step t+1 means obs[t+1] starts a new episode (same-step autoreset).
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (
                    delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam)
            returns = advantages + values

        b_obs, b_masks = obs.reshape(-1, obs_size), masks.reshape(-1, num_actions)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        b_values = values.reshape(-1)

        # Clipped PPO updates on shuffled minibatches.
        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, args.batch_size, args.minibatch_size):
                mb = b_inds[start:start + args.minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                mb_advantages = b_advantages[mb]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb]) ** 2
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb],
                                                       -args.clip_coef, args.clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()

                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        sps = global_step / (time.perf_counter() - start_time)
        print(f"  losses: policy {pg_loss.item():.3f} value {v_loss.item():.3f} "
              f"entropy {entropy.mean().item():.3f} approx_kl {approx_kl.item():.4f} "
              f"clipfrac {np.mean(clipfracs):.3f}, SPS {sps:.0f}")
    envs.close()
    return evaluate(agent, args, sps)


def evaluate(agent: Agent, args: argparse.Namespace, sps: float) -> dict[str, Any]:
    """The trained actor's masked argmax against the opponent, seats rotated."""
    player = ModuleAgent(agent.actor, args.game, args.num_players, "cleanrl-ppo")
    others = [args.opponent] * (args.num_players - 1)
    res = play([player, *others], game=args.game, num_players=args.num_players,
               games=args.eval_games, seed=args.seed, progress=False)
    row = res.summary["agents"][0]
    print(f"{args.eval_games} games against {args.opponent}: win rate {row['win_rate']:.3f} "
          f"± {row['win_ci95']:.3f}, mean score {row['mean_score']:.1f}")
    return {**row, "steps_per_second": sps}


if __name__ == "__main__":
    main()
