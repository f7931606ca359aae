"""On-device PPO (CleanRL style): the batched torch engine, the rollout and the network
share one device, so a GPU never waits on the environment.

One readable loop (:func:`train`), each phase a method of :class:`TorchPPO`: collect
``rollout_steps`` engine steps of every learner seat into the storage allocated up front
(:class:`Rollout`), compute GAE advantages, then a few epochs of clipped-objective
minibatch updates (:func:`ppo_update`). Illegal actions are masked out of the logits
(sampling, log-probs and entropy all see only legal actions).

The rollout stores the network's encoded inputs (observation and sheet features, see
:meth:`~agents.policy.PolicyNetwork.encode`), so the updates do not derive the features
again in every epoch.

Learner streams (:class:`Seating`): every game slot of the batch is either a self-play
game (the learner plays every seat, parameters shared) or an opponent game (the learner
plays one seat, an opponent from :class:`~agents.trainers.pool.OpponentPool` all others;
each opponent keeps its share of the slots for the whole run). Each learner seat is one
stream of the rollout.

No host syncs: the rollout selects rows by fixed index sets, asks every opponent for
all its rows at every step (its forced rows included), and sums the episode statistics
on the device, so a GPU never waits on Python within an update (``tests/test_gpu_ready.py``
counts the reads; ``ppo.decisions_only`` is the exception, one read per step).

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

import functools
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from qwinto_env.batched import BATCHED_GAMES

from ..policy import PolicyNetwork
from .config import TrainConfig
from .imitation import collect, pretrain
from .pool import Opponent, OpponentPool, play
from .run import Bookkeeping, Run, init_network

MASKED = -1e8  # logit of an illegal action: probability exactly 0, entropy term exactly 0


def make_engine(cfg: TrainConfig, device: torch.device, seed: int | None = None) -> Any:
    """The batched torch engine of the configured game (``seed``: ``run.seed``'s)."""
    return BATCHED_GAMES[cfg.env.game](cfg.env.num_games, cfg.env.num_players, backend="torch",
                                       device=device,
                                       seed=cfg.run.seed if seed is None else seed,
                                       reward=cfg.env.reward, random_start=True)


def masked_logits(network: PolicyNetwork, inputs: torch.Tensor,
                  mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits with illegal actions masked out, and values, for encoded ``inputs``."""
    logits, value = network.forward_encoded(inputs)
    return logits.masked_fill(~mask, MASKED), value


def train(cfg: TrainConfig, run: Run, resume: bool = False, progress: bool = True) -> PolicyNetwork:
    """Train a policy by PPO; checkpoints, logs and evaluations go to ``run``.

    Each update: anneal the step size, roll out, compute the advantages, update, then the
    bookkeeping every trainer shares (:class:`~agents.trainers.run.Bookkeeping`).
    """
    torch.manual_seed(run.seed)
    ppo = TorchPPO(cfg, run.device, run.seed)
    step = ppo.start(run, resume, progress)
    batch, optimizer = ppo.storage.size, ppo.optimizer
    # The step size anneals over the steps of the whole run, so that a resumed run goes
    # on where the interrupted one stopped instead of starting at the full rate again.
    planned = max(1, -(-cfg.run.total_steps // batch)) * batch
    books = Bookkeeping(run, "torch PPO", step, progress,
                        snapshot=ppo.pool.add_snapshot if ppo.snapshots else None)
    for _ in range(max(1, -(-(cfg.run.total_steps - step) // batch))):
        run.between_updates()
        if cfg.ppo.anneal_lr:
            optimizer.param_groups[0]["lr"] = cfg.ppo.learning_rate * (1.0 - step / planned)
        tick = time.perf_counter()
        ppo.rollout()
        step += batch
        stats = ppo.update(*ppo.advantages())
        sps = batch / (time.perf_counter() - tick)
        logs = {"train/steps_per_second": sps, "train/lr": optimizer.param_groups[0]["lr"],
                **stats}
        postfix = ppo.episodes.report(logs)
        postfix["sps"] = f"{sps:,.0f}"
        books.after_update(step, lambda: ppo.net, functools.partial(ppo.save, run, step),
                           logs, postfix)
    books.close()
    ppo.save(run, step)
    return ppo.net


@dataclass
class Seating:
    """Who plays which seat of the batch, fixed for the run. Game slots ``[0, N -
    opponent_games)`` are self-play (the learner in every seat); each of the others seats
    the learner once, in seat ``slot % P``, and one opponent in all others: each
    opponent its own run of slots (``groups``). Each learner seat is one stream.

    Every index set is fixed, so the rollout selects rows by ``index_select`` and never by
    a mask whose size the host would have to read from the device."""

    learner: torch.Tensor        # (N, P) bool
    learner_rows: torch.Tensor   # (S,) the learner seats' rows of the flat (N * P) batch
    opponent_game: torch.Tensor  # (N,) bool
    groups: list[tuple[str, torch.Tensor]]  # per opponent, the flat rows of its seats

    @classmethod
    def deal(cls, num_games: int, num_players: int, split: list[tuple[str, int]],
             device: torch.device) -> "Seating":
        """``split``: ``(opponent, games)`` in slot order (:meth:`OpponentPool.split`)."""
        n_opp = sum(n for _, n in split) if num_players > 1 else 0
        learner = torch.ones(num_games, num_players, dtype=torch.bool, device=device)
        slots = torch.arange(num_games - n_opp, num_games, device=device)
        learner[slots] = False
        learner[slots, slots % num_players] = True
        groups, start = [], num_games - n_opp
        for name, n in split if n_opp else []:
            games = torch.arange(start, start + n, device=device)
            seats = (~learner[games]).nonzero()
            groups.append((name, games[seats[:, 0]] * num_players + seats[:, 1]))
            start += n
        return cls(learner, learner.reshape(-1).nonzero().squeeze(1),
                   ~learner.all(dim=1), groups)

    @property
    def streams(self) -> int:
        return len(self.learner_rows)

    @property
    def opponent_games(self) -> int:
        return int(self.opponent_game.sum())


class Samples(NamedTuple):
    """The rollout's rows to train on, flat: what one update reads."""

    inputs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


@dataclass
class Rollout:
    """The storage of one rollout, allocated once: ``(T, S, ...)`` for ``T =
    ppo.rollout_steps`` engine steps of ``S`` learner streams."""

    inputs: torch.Tensor   # (T, S, input_size) float: the network's encoded inputs
    masks: torch.Tensor    # (T, S, A) bool: the legal actions
    actions: torch.Tensor  # (T, S) int64
    logp: torch.Tensor     # (T, S) float: the action's log-probability when sampled
    rewards: torch.Tensor  # (T, S) float: times ppo.reward_scale
    ends: torch.Tensor     # (T, S) float: 1.0 where the step ended the game
    values: torch.Tensor   # (T, S) float: the value head's estimate
    decides: torch.Tensor  # (T, S) bool: a decision (every step without decisions_only)

    @classmethod
    def allocate(cls, steps: int, streams: int, input_size: int, num_actions: int,
                 device: torch.device) -> "Rollout":
        def zeros(*shape: int, dtype: torch.dtype | None = None) -> torch.Tensor:
            return torch.zeros(steps, streams, *shape, dtype=dtype, device=device)
        return cls(zeros(input_size), zeros(num_actions, dtype=torch.bool),
                   zeros(dtype=torch.long), zeros(), zeros(), zeros(), zeros(),
                   zeros(dtype=torch.bool))

    @property
    def size(self) -> int:
        """Learner steps in one rollout."""
        return self.rewards.numel()

    def samples(self, advantages: torch.Tensor, returns: torch.Tensor,
                rows: torch.Tensor) -> Samples:
        """The flat ``rows`` of the rollout with their advantages and returns."""
        return Samples(self.inputs.reshape(self.size, -1).index_select(0, rows),
                       self.masks.reshape(self.size, -1).index_select(0, rows),
                       *(buf.reshape(-1).index_select(0, rows)
                         for buf in (self.actions, self.logp, advantages, returns)))


class TorchPPO:
    """What a torch PPO run holds: the engine, the network and its optimizer, the opponent
    pool, the seating, the rollout storage and the episodes since the last update. Its
    methods are the phases of an update."""

    def __init__(self, cfg: TrainConfig, device: torch.device, seed: int | None = None):
        self.cfg, self.pc, self.device = cfg, cfg.ppo, device
        self.engine = make_engine(cfg, device, seed)
        self.net = PolicyNetwork(self.engine.obs_size, self.engine.num_actions,
                                 **vars(cfg.network)).to(device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.ppo.learning_rate,
                                          eps=1e-5)
        self.pool = OpponentPool(cfg.opponents, cfg.env.game, cfg.env.num_players,
                                 cfg.run.seed).to(device)
        n_opp = round(self.engine.num_games * self.pool.opponent_share)
        self.seats = Seating.deal(self.engine.num_games, cfg.env.num_players,
                                  self.pool.split(n_opp), device)
        S = self.seats.streams
        self.storage = Rollout.allocate(cfg.ppo.rollout_steps, S, self.net.input_size,
                                        self.engine.num_actions, device)
        self.every_seat = torch.ones(S, dtype=torch.bool, device=device)
        self.episodes = Episodes(device)
        # planned at the first rollout: no key of the snapshots kept matches None
        self._plan: tuple[tuple[int, ...] | None, list[tuple[Opponent, torch.Tensor]]] = \
            (None, [])

    @property
    def snapshots(self) -> bool:
        """Whether snapshots of the learner join the opponent pool."""
        return bool(self.seats.opponent_games) and self.cfg.opponents.snapshots > 0

    def start(self, run: Run, resume: bool, progress: bool) -> int:
        """Restore the state resumed from, or start the network (``run.init_from``, or the
        imitation warm start); seat the first opponents. Returns the step to go on from."""
        cfg, step = self.cfg, 0
        if resume:
            state = run.state
            self.net.load_state_dict(state["network"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.pool.load_state_dict(state["pool"], self.net)
            step = state["step"]
        else:
            if cfg.run.init_from:
                init_network(self.net, cfg)
            if cfg.imitation.games:  # with run.init_from only when imitation.refine
                run.log(0, pretrain(self.net, collect(cfg, progress), cfg, self.device,
                                    progress))
        if not resume and self.snapshots:
            self.pool.add_snapshot(self.net)
        return step

    def rollout(self) -> None:
        """``ppo.rollout_steps`` engine steps of every game into the storage.

        Nothing here reads a value from the device (``tests/test_gpu_ready.py`` counts),
        unless ``ppo.decisions_only`` picks the deciding rows (one read per step)."""
        seats, store, pc = self.seats, self.storage, self.pc
        rows_of = seats.learner_rows
        plan = self._opponent_plan()
        for t in range(pc.rollout_steps):
            obs, masks = _flat(self.engine.observations()), _flat(self.engine.action_masks() > 0)
            own_masks = masks.index_select(0, rows_of)
            decides, rows = self._deciding(own_masks)
            inputs, action, logp, value = self._sample(
                _pick(obs.index_select(0, rows_of), rows), _pick(own_masks, rows))
            joint = masks.to(torch.int8).argmax(dim=1)  # the only legal action, if one
            own_actions = _put(joint.index_select(0, rows_of), rows, action)
            joint.index_copy_(0, rows_of, own_actions)
            for opponent, opp_rows in plan:
                joint.index_copy_(0, opp_rows, play(opponent, obs.index_select(0, opp_rows),
                                                    masks.index_select(0, opp_rows)))
            out = self.engine.step(joint.reshape(seats.learner.shape), validate=False)
            # Rows left out keep stale inputs and values: they are never trained on.
            for buffer, rollout_rows in ((store.inputs, inputs), (store.logp, logp),
                                         (store.values, value)):
                _put(buffer[t], rows, rollout_rows)
            store.masks[t], store.actions[t], store.decides[t] = own_masks, own_actions, decides
            store.rewards[t] = _flat(out.rewards).index_select(0, rows_of) * pc.reward_scale
            store.ends[t] = _flat(out.terminated[:, None].expand(seats.learner.shape)) \
                .index_select(0, rows_of).float()
            self.episodes.record(out, seats.learner, seats.opponent_game)

    def _opponent_plan(self) -> list[tuple[Opponent, torch.Tensor]]:
        """Who plays which opponent rows now: each scripted opponent its group; the snapshot
        group split into ``pool_size`` runs, run ``j`` played by snapshot ``j`` modulo the
        snapshots kept (planned again when a snapshot joins, between updates)."""
        key = tuple(id(o) for o in self.pool.snapshots)
        if key != self._plan[0]:
            plan: dict[int, tuple[Opponent, list[torch.Tensor]]] = {}
            scripted = {o.name: o for o in self.pool.scripted}
            for name, rows in self.seats.groups:
                if name != "snapshots":
                    plan[id(scripted[name])] = (scripted[name], [rows])
                    continue
                for j, part in enumerate(torch.tensor_split(rows, self.cfg.opponents.pool_size)):
                    snap = self.pool.snapshots[j % len(self.pool.snapshots)]
                    plan.setdefault(id(snap), (snap, []))[1].append(part)
            self._plan = (key, [(o, torch.cat(parts)) for o, parts in plan.values()])
        return self._plan[1]

    def _deciding(self, own_masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Which learner seats are trained on at this step, as a mask and as rows (None:
        every seat, the default)."""
        if self.pc.decisions_only:
            decides = own_masks.sum(dim=1) > 1
            return decides, decides.nonzero().squeeze(1)
        return self.every_seat, None

    @torch.no_grad()
    def _sample(self, obs: torch.Tensor, masks: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Encoded inputs, sampled legal actions, their log-probabilities and the values."""
        inputs = self.net.encode(obs)
        logits, value = masked_logits(self.net, inputs, masks)
        gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_min(1e-20)))
        action = (logits + gumbel).argmax(dim=1)
        logp = torch.log_softmax(logits, dim=1).gather(1, action[:, None]).squeeze(1)
        return inputs, action, logp, value

    @torch.no_grad()
    def advantages(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """GAE advantages and value targets of the rollout (over each stream's decisions
        with ``decisions_only``, see :func:`decision_advantages`), and the flat rows of
        the storage to train on."""
        rows_of, store, pc = self.seats.learner_rows, self.storage, self.pc
        next_obs = _flat(self.engine.observations()).index_select(0, rows_of)
        next_masks = _flat(self.engine.action_masks() > 0).index_select(0, rows_of)
        _, next_value = masked_logits(self.net, self.net.encode(next_obs), next_masks)
        next_decides = next_masks.sum(dim=1) > 1 if pc.decisions_only else self.every_seat
        adv, returns, trained = decision_advantages(
            store.rewards, store.ends, store.values, store.decides, next_value, next_decides,
            pc.gamma, pc.gae_lambda)
        return adv, returns, trained.reshape(-1).nonzero().squeeze(1)

    def update(self, advantages: torch.Tensor, returns: torch.Tensor,
               rows: torch.Tensor) -> dict[str, float]:
        """PPO on the storage's ``rows``; the mean losses and the share trained on."""
        stats = ppo_update(self.net, self.optimizer, self.pc,
                           self.storage.samples(advantages, returns, rows),
                           max(1, len(rows) // self.pc.num_minibatches))
        stats["train/trained_share"] = len(rows) / self.storage.size
        return stats

    def save(self, run: Run, step: int) -> None:
        """A checkpoint with what ``--resume`` needs beside the network."""
        run.save(self.net, step, {"optimizer": self.optimizer.state_dict(),
                                  "pool": self.pool.state_dict()})


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


def _pick(x: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """The ``rows`` of ``x`` (all of them for None, without a copy)."""
    return x if rows is None else x.index_select(0, rows)


def _put(dst: torch.Tensor, rows: torch.Tensor | None, src: torch.Tensor) -> torch.Tensor:
    """``src`` written into the ``rows`` of ``dst`` (all of them for None); ``dst``."""
    return dst.copy_(src) if rows is None else dst.index_copy_(0, rows, src)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """``(N, P, ...)`` as ``(N * P, ...)``: one row per game and seat."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


class Episodes:
    """The learner's games that ended since the last report, summed on the device (a
    read per step would make a GPU wait; :meth:`report` reads once)."""

    def __init__(self, device: torch.device) -> None:
        # learner scores, learner seats ended, results in opponent games, opponent games
        self.sums = torch.zeros(4, dtype=torch.float64, device=device)

    def record(self, out: Any, learner: torch.Tensor, opponent_game: torch.Tensor) -> None:
        """Add the games that ended at step ``out`` (a draw counts half a win)."""
        ended = out.terminated
        finals = out.scores_at_end.to(self.sums.dtype)
        seats = learner & ended[:, None]
        opp = ended & opponent_game
        own = (finals * learner).sum(dim=1)  # an opponent game has one learner seat
        best_other = finals.masked_fill(learner, -1e9).amax(dim=1)
        result = (own > best_other).to(finals.dtype) + 0.5 * (own == best_other).to(finals.dtype)
        self.sums += torch.stack([(finals * seats).sum(), seats.sum().to(finals.dtype),
                                  (result * opp).sum(), opp.sum().to(finals.dtype)])

    def report(self, logs: dict[str, float]) -> dict[str, str]:
        """Add the means since the last report to ``logs`` and forget them; the postfix
        to show (empty when no game ended)."""
        scores, games, wins, opponent_games = self.sums.tolist()
        self.sums.zero_()
        if not games:
            return {}
        logs["train/episode_score"] = scores / games
        if opponent_games:
            logs["train/opponent_game_win_rate"] = wins / opponent_games
        return {"score": f"{logs['train/episode_score']:.1f}"}


def ppo_update(net: PolicyNetwork, optimizer: torch.optim.Optimizer, pc: Any,
               samples: Samples, minibatch: int) -> dict[str, float]:
    """``update_epochs`` passes of clipped PPO over ``samples`` in minibatches of
    ``minibatch`` rows; the mean losses for the logs."""
    inputs, masks, actions, old_logp, advantages, returns = samples
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
