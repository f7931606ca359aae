"""On-device PPO (CleanRL style): the batched torch engine, the rollout and the network
share one device, so a GPU never waits on the environment.

One readable loop: collect ``rollout_steps`` engine steps of every learner seat into
preallocated tensors, compute GAE advantages, then a few epochs of clipped-objective
minibatch updates. Illegal actions are masked out of the logits (sampling, log-probs
and entropy all see only legal actions).

The rollout stores the network's encoded inputs (observation and sheet features, see
:meth:`~agents.policy.PolicyNetwork.encode`), so the updates do not derive the features
again in every epoch.

Learner streams: every game slot of the batch is either a self-play game (the learner
plays every seat, parameters shared) or an opponent game (the learner plays one seat,
an opponent from :class:`~agents.trainers.pool.OpponentPool` all others, redrawn when
the game ends). Each learner seat is one stream of the rollout.

About two steps in five leave a seat nothing to decide (its one legal action is the
pass). Such a step adds nothing to the policy gradient; by default it stays in the
rollout and trains the value head like any other. ``ppo.decisions_only`` leaves it out:
the network does not run on it and the update skips it, and
:func:`decision_advantages` passes over it (its reward goes to the decision before it,
whose value target reaches on to the next decision). That is faster and learns a little
less per step (README, Trainer speed). The steps per second count every learner step
either way, as the ``sb3`` trainer does.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from qwinto_env.batched import BATCHED_GAMES

from ..policy import PolicyNetwork
from .config import TrainConfig
from .imitation import collect, pretrain
from .pool import OpponentPool
from .run import Run, init_network, learner_row

MASKED = -1e8  # logit of an illegal action: probability exactly 0, entropy term exactly 0


def make_engine(cfg: TrainConfig, device: torch.device) -> Any:
    """The batched torch engine of the configured game."""
    return BATCHED_GAMES[cfg.env.game](cfg.env.num_games, cfg.env.num_players, backend="torch",
                                       device=device, seed=cfg.run.seed, reward=cfg.env.reward,
                                       random_start=True)


def masked_logits(network: PolicyNetwork, inputs: torch.Tensor,
                  mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits with illegal actions masked out, and values, for encoded ``inputs``."""
    logits, value = network.forward_encoded(inputs)
    return logits.masked_fill(~mask, MASKED), value


def train(cfg: TrainConfig, run: Run, resume: bool = False, progress: bool = True) -> PolicyNetwork:
    """Train a policy by PPO; checkpoints, logs and evaluations go to ``run``."""
    device, pc, P = run.device, cfg.ppo, cfg.env.num_players
    torch.manual_seed(cfg.run.seed)
    engine = make_engine(cfg, device)
    N, A = engine.num_games, engine.num_actions
    net = PolicyNetwork(engine.obs_size, A, **vars(cfg.network)).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=pc.learning_rate, eps=1e-5)
    pool = OpponentPool(cfg.opponents, cfg.env.game, P, cfg.run.seed)

    # Game slots [0, N - n_opp) are self-play; the rest seat the learner once.
    n_opp = int(round(N * pool.opponent_share)) if P > 1 else 0
    learner = torch.ones(N, P, dtype=torch.bool, device=device)
    opponent_of = torch.full((N,), -1, dtype=torch.long, device=device)
    if n_opp:
        slots = torch.arange(N - n_opp, N, device=device)
        learner[slots] = False
        learner[slots, slots % P] = True
    S = int(learner.sum())
    T = pc.rollout_steps
    batch = T * S

    step, start_step = 0, 0
    if resume:
        state = run.state
        net.load_state_dict(state["network"])
        optimizer.load_state_dict(state["optimizer"])
        pool.load_state_dict(state["pool"], net)
        step = start_step = state["step"]
    else:
        if cfg.run.init_from:
            init_network(net, cfg)
        elif cfg.imitation.games:
            demos = collect(cfg, progress)
            run.log(0, pretrain(net, demos, cfg, device, progress))
        if n_opp and cfg.opponents.snapshots > 0:
            pool.add_snapshot(net)
    if n_opp:
        opponent_of[N - n_opp:] = torch.as_tensor(pool.draw(n_opp), device=device)

    input_buf = torch.zeros(T, S, net.input_size, device=device)
    mask_buf = torch.zeros(T, S, A, dtype=torch.bool, device=device)
    act_buf = torch.zeros(T, S, dtype=torch.long, device=device)
    logp_buf = torch.zeros(T, S, device=device)
    rew_buf = torch.zeros(T, S, device=device)
    end_buf = torch.zeros(T, S, device=device)
    val_buf = torch.zeros(T, S, device=device)
    dec_buf = torch.zeros(T, S, dtype=torch.bool, device=device)
    every_seat = torch.ones(S, dtype=torch.bool, device=device)
    seat_index = torch.arange(S, device=device)

    num_updates = max(1, -(-(cfg.run.total_steps - start_step) // batch))
    # The step size anneals over the steps of the whole run, so that a resumed run goes
    # on where the interrupted one stopped instead of starting at the full rate again.
    planned = max(1, -(-cfg.run.total_steps // batch)) * batch
    next_snapshot = step + cfg.opponents.snapshot_every
    next_ckpt = step + cfg.run.checkpoint_every
    next_eval = step + cfg.eval.every if cfg.eval.every else None
    ep_scores: list[float] = []
    ep_wins: list[float] = []
    postfix: dict[str, str] = {}
    bar = tqdm(total=cfg.run.total_steps, initial=step, unit="step", disable=not progress,
               desc=f"torch PPO {cfg.env.game} {P}p", dynamic_ncols=True)
    for _ in range(num_updates):
        run.between_updates()
        if pc.anneal_lr:
            optimizer.param_groups[0]["lr"] = pc.learning_rate * (1.0 - step / planned)
        tick = time.perf_counter()
        # -- rollout ------------------------------------------------------------------
        for t in range(T):
            obs, masks = engine.observations(), engine.action_masks() > 0
            own_masks = masks[learner]
            if pc.decisions_only:
                decides = own_masks.sum(dim=1) > 1
                rows = decides.nonzero().squeeze(1)  # the learner seats trained on
            else:
                decides, rows = every_seat, seat_index
            with torch.no_grad():
                inputs = net.encode(obs[learner].index_select(0, rows))
                logits, value = masked_logits(net, inputs, own_masks.index_select(0, rows))
                gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_min(1e-20)))
                action = (logits + gumbel).argmax(dim=1)
                logp = torch.log_softmax(logits, dim=1).gather(1, action[:, None]).squeeze(1)
            joint = masks.to(torch.int8).argmax(dim=2)  # the only legal action, where there is one
            own_actions = joint[learner].index_copy_(0, rows, action)
            joint[learner] = own_actions
            _opponents_act(pool, joint, obs, masks, learner, opponent_of)
            out = engine.step(joint, validate=False)
            # Rows left out keep stale inputs and values: they are never trained on.
            input_buf[t].index_copy_(0, rows, inputs)
            logp_buf[t].index_copy_(0, rows, logp)
            val_buf[t].index_copy_(0, rows, value)
            mask_buf[t], act_buf[t], dec_buf[t] = own_masks, own_actions, decides
            rew_buf[t] = out.rewards[learner] * pc.reward_scale
            end_buf[t] = out.terminated[:, None].expand(N, P)[learner].float()
            if len(out.done_index):
                _record_episodes(out, learner, opponent_of, ep_scores, ep_wins)
                ended_opp = out.done_index[opponent_of[out.done_index] >= 0]
                if len(ended_opp):
                    opponent_of[ended_opp] = torch.as_tensor(pool.draw(len(ended_opp)),
                                                             device=device)
        step += batch
        # -- advantages (GAE, over each seat's decisions with decisions_only) --------------
        with torch.no_grad():
            next_obs, next_masks = engine.observations(), engine.action_masks() > 0
            next_masks = next_masks[learner]
            _, next_value = masked_logits(net, net.encode(next_obs[learner]), next_masks)
            next_decides = next_masks.sum(dim=1) > 1 if pc.decisions_only else every_seat
            adv, returns, trained = decision_advantages(
                rew_buf, end_buf, val_buf, dec_buf, next_value, next_decides,
                pc.gamma, pc.gae_lambda)
            rows = trained.reshape(-1).nonzero().squeeze(1)
        # -- update ---------------------------------------------------------------------
        stats = _update(net, optimizer, pc, input_buf.reshape(batch, -1).index_select(0, rows),
                        mask_buf.reshape(batch, A).index_select(0, rows),
                        *(buf.reshape(-1).index_select(0, rows)
                          for buf in (act_buf, logp_buf, adv, returns, val_buf)),
                        max(1, len(rows) // pc.num_minibatches))
        stats["train/trained_share"] = len(rows) / batch
        sps = batch / (time.perf_counter() - tick)
        bar.update(batch)
        logs = {"train/steps_per_second": sps, "train/lr": optimizer.param_groups[0]["lr"], **stats}
        if ep_scores:
            logs["train/episode_score"] = float(np.mean(ep_scores))
            postfix["score"] = f"{logs['train/episode_score']:.1f}"
            if ep_wins:
                logs["train/opponent_game_win_rate"] = float(np.mean(ep_wins))
            ep_scores.clear()
            ep_wins.clear()
        postfix["sps"] = f"{sps:,.0f}"
        run.log(step, logs)

        if n_opp and cfg.opponents.snapshots > 0 and step >= next_snapshot:
            pool.add_snapshot(net)
            next_snapshot += cfg.opponents.snapshot_every
        if next_eval is not None and step >= next_eval and step < cfg.run.total_steps:
            results = run.evaluate(net, cfg.eval.games, seed=cfg.run.seed + step)
            for spec, summary in results.items():
                row = learner_row(summary)
                run.log(step, {f"eval/{spec}/win_rate": row["win_rate"],
                               f"eval/{spec}/mean_score": row["mean_score"]})
                postfix[f"vs {spec}"] = f"{row['win_rate']:.0%}"
            next_eval += cfg.eval.every
        if step >= next_ckpt:
            run.save(net, step, {"optimizer": optimizer.state_dict(), "pool": pool.state_dict()})
            next_ckpt += cfg.run.checkpoint_every
        bar.set_postfix(postfix, refresh=False)
    bar.close()
    run.save(net, step, {"optimizer": optimizer.state_dict(), "pool": pool.state_dict()})
    return net


def decision_advantages(rewards: torch.Tensor, ends: torch.Tensor, values: torch.Tensor,
                        decides: torch.Tensor, next_value: torch.Tensor,
                        next_decides: torch.Tensor, gamma: float,
                        lam: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE advantages and value targets over each stream's decisions.

    ``rewards``, ``ends`` (1.0 where the step ended the game), ``values`` and ``decides``
    (the seat had more than one legal action) are ``(T, S)``; ``next_value`` and
    ``next_decides`` describe the state after the rollout. A step without a decision is
    passed over: its reward, discounted, goes to the decision before it, and that
    decision's target reaches on to the next decision's value (the values of steps
    without a decision are never used, since they are never trained); ``gamma`` and
    ``lam`` still decay per step, so the advantages look as far ahead as when every step
    was trained on. The rollout's last decision of a stream whose following state has no
    decision has no value to bootstrap from, so it is not trained on and its value
    bootstraps the decisions before it.

    Returns ``(advantages, returns, trained)``, each ``(T, S)``; ``trained`` marks the
    decisions to train on (advantages and returns are 0 elsewhere).
    """
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    trained = torch.zeros_like(decides)
    following = torch.where(next_decides, next_value, 0.0)  # the next decision's value
    last = torch.zeros_like(next_value)                    # the next decision's advantage
    bootstrapped = next_decides.clone()                     # ``following`` is known
    for t in reversed(range(T)):
        alive = 1.0 - ends[t]
        bootstrapped = bootstrapped | (ends[t] > 0)
        following = rewards[t] + gamma * alive * following  # the value seen from step t
        decide = decides[t]
        gae = following - values[t] + gamma * lam * alive * last
        trained[t] = decide & bootstrapped
        adv[t] = torch.where(trained[t], gae, 0.0)
        last = torch.where(decide, adv[t], gamma * lam * alive * last)
        following = torch.where(decide, values[t], following)
        bootstrapped = bootstrapped | decide
    returns = torch.where(trained, adv + values, 0.0)
    return adv, returns, trained


def _opponents_act(pool: OpponentPool, joint: torch.Tensor, obs: torch.Tensor,
                   masks: torch.Tensor, learner: torch.Tensor, opponent_of: torch.Tensor) -> None:
    """Fill in the actions of every opponent seat that has a decision to make."""
    deciding = ~learner & (masks.sum(dim=2) > 1)
    if not bool(deciding.any()):
        return
    for opponent in torch.unique(opponent_of[deciding.any(dim=1)]).tolist():
        seats = deciding & (opponent_of == opponent)[:, None]
        joint[seats] = pool.act(opponent, obs[seats], masks[seats])


def _record_episodes(out: Any, learner: torch.Tensor, opponent_of: torch.Tensor,
                     scores: list[float], wins: list[float]) -> None:
    """Final scores of the learner's seats, and its results in opponent games."""
    ended = out.done_index
    finals = out.final_scores.float()
    seats = learner[ended]
    scores.extend(finals[seats].tolist())
    in_opp = opponent_of[ended] >= 0
    if bool(in_opp.any()):
        own = finals[in_opp][seats[in_opp]]
        best_other = finals[in_opp].masked_fill(seats[in_opp], -1e9).max(dim=1).values
        wins.extend(((own > best_other).float() + 0.5 * (own == best_other).float()).tolist())


def _update(net: PolicyNetwork, optimizer: torch.optim.Optimizer, pc: Any, inputs: torch.Tensor,
            masks: torch.Tensor, actions: torch.Tensor, old_logp: torch.Tensor,
            advantages: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor,
            minibatch: int) -> dict[str, float]:
    """``update_epochs`` passes of clipped PPO over the rollout; mean losses for the logs."""
    batch = inputs.shape[0]
    # Summed on the device and read once at the end: a read per minibatch would make a
    # GPU wait for every step.
    sums = torch.zeros(4, device=inputs.device)
    count = 0
    for _ in range(pc.update_epochs):
        order = torch.randperm(batch, device=inputs.device)
        for start in range(0, batch, minibatch):
            idx = order[start:start + minibatch]
            # index_select: a third of the time of ``inputs[idx]`` on CPU for these rows
            logits, value = masked_logits(net, inputs.index_select(0, idx),
                                          masks.index_select(0, idx))
            logp_all = torch.log_softmax(logits, dim=1)
            logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
            with torch.set_grad_enabled(pc.ent_coef != 0):  # else only logged
                entropy = -(logp_all.exp() * logp_all).sum(dim=1).mean()
            log_ratio = logp - old_logp[idx]
            ratio = log_ratio.exp()
            adv = advantages[idx]
            if pc.normalize_advantages and adv.numel() > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            policy_loss = torch.max(-adv * ratio,
                                    -adv * ratio.clamp(1 - pc.clip_coef, 1 + pc.clip_coef)).mean()
            value_loss = 0.5 * (value - returns[idx]).pow(2).mean()
            loss = policy_loss - pc.ent_coef * entropy + pc.vf_coef * value_loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), pc.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                sums += torch.stack([policy_loss, value_loss, entropy,
                                     ((ratio - 1) - log_ratio).mean()])
            count += 1
    means = (sums / max(1, count)).tolist()
    return dict(zip(("loss/policy", "loss/value", "loss/entropy", "loss/approx_kl"), means))
