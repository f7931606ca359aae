"""The Ray RLlib trainer: env adapter, masked PPO module, export round trip, opponents,
config, and (slow) a short training run on a local Ray instance."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

pytest.importorskip("ray.rllib", reason="the rllib extra is not installed")

from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402

from agents import load  # noqa: E402
from agents.policy import PolicyAgent, save_checkpoint  # noqa: E402
from agents.trainers.config import ConfigError, load_config  # noqa: E402
from agents.trainers.rllib_env import (LEARNER, AgentModule, MaskedPPOModule,  # noqa: E402
                                       QwintoMultiAgentEnv, SeededEpisodeIds, export_network,
                                       policy_mapping)
from qwinto_env import parallel_env  # noqa: E402


def _random_game(env: QwintoMultiAgentEnv, seed: int):
    """Play one game with uniformly random legal actions; per-agent reward sums and
    the number of decisions asked of agents."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    decisions = 0
    while True:
        for o in obs.values():
            assert o["action_mask"].sum() > 1, "an agent was asked for a forced action"
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        decisions += len(actions)
        obs, rewards, terms, truncs, _ = env.step(actions)
        for a, r in rewards.items():
            totals[a] += r
        if terms["__all__"]:
            assert set(obs) == set(env.possible_agents)
            assert all(terms[a] for a in env.possible_agents)
            return totals, decisions


@pytest.mark.parametrize("game,players", [("dice", 2), ("dice", 3), ("cards", 2)])
def test_adapter_asks_only_real_decisions_and_keeps_returns(game, players):
    env = QwintoMultiAgentEnv({"game": game, "num_players": players, "reward": "score",
                               "reward_scale": 0.5})
    for seed in range(15):
        totals, decisions = _random_game(env, seed)
        scores = env.par_env.game.scores()
        # the dense score rewards of skipped forced steps reach the agent's next reward
        for seat, agent in enumerate(env.possible_agents):
            assert totals[agent] == pytest.approx(0.5 * scores[seat])
        assert decisions > 0


def test_adapter_win_reward_and_spaces():
    env = QwintoMultiAgentEnv({"game": "dice", "num_players": 2, "reward": "win"})
    par = parallel_env(game="dice", num_players=2)
    assert env.observation_spaces["player_0"] == par.observation_space("player_0")
    assert env.action_spaces["player_1"] == par.action_space("player_1")
    totals, _ = _random_game(env, 3)
    assert sorted(totals.values()) in ([-1.0, 1.0], [0.0, 0.0])


def test_adapter_refuses_an_illegal_action():
    env = QwintoMultiAgentEnv({"game": "dice", "num_players": 2})
    obs, _ = env.reset(seed=0)
    agent, o = next(iter(obs.items()))
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        env.step({agent: illegal})


@pytest.mark.parametrize("config,error,match", [
    ({"rewrd": "score"}, TypeError,
     r"^QwintoMultiAgentEnv env_config got unknown option\(s\) 'rewrd'; accepted: .*reward,"
     r" reward_scale, seed$"),
    ({"random_start": False}, TypeError, r"'random_start'.*always draws the start player"),
    ({"reward_scale": "x"}, ValueError, r"env_config reward_scale must be a positive finite"),
    ({"reward_scale": float("nan")}, ValueError, r"reward_scale .*, got nan"),
    ({"reward_scale": True}, ValueError, r"reward_scale .*, got True"),
    ({"reward_scale": 0}, ValueError, r"reward_scale .*, got 0"),
    ({"seed": -1}, ValueError, r"^QwintoMultiAgentEnv env_config seed must be None or"),
    ({"game": "dise"}, ValueError, r"unknown game 'dise'"),
])
def test_adapter_refuses_a_bad_env_config_by_name(config, error, match):
    """A nan scale trained on nan rewards; a string one or ``random_start`` failed in
    float() or parallel_env() without naming the env_config."""
    with pytest.raises(error, match=match):
        QwintoMultiAgentEnv(config)


def _module(features: str = "sheet", seed: int = 0) -> MaskedPPOModule:
    space = parallel_env(game="dice", num_players=2)
    torch.manual_seed(seed)
    return RLModuleSpec(module_class=MaskedPPOModule,
                        observation_space=space.observation_space("player_0"),
                        action_space=space.action_space("player_0"),
                        model_config={"hidden": [64, 32], "activation": "relu",
                                      "features": features}).build()


def _observations(num_games: int = 40, seed: int = 0):
    """Real (observation, mask) pairs from random dice games."""
    env = parallel_env(game="dice", num_players=2)
    rng = np.random.default_rng(seed)
    obs_list, masks = [], []
    for g in range(num_games):
        obs, _ = env.reset(seed=seed + g)
        while env.agents:
            for o in obs.values():
                obs_list.append(o["observation"])
                masks.append(o["action_mask"])
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
                       for a in env.agents}
            obs, *_ = env.step(actions)
    return np.stack(obs_list), np.stack(masks)


def test_masked_module_samples_only_legal_actions():
    module = _module()
    obs, masks = _observations(20)
    batch = {Columns.OBS: {"observation": torch.as_tensor(obs),
                           "action_mask": torch.as_tensor(masks)}}
    with torch.no_grad():
        out = module.forward_exploration(batch)
    logits = out[Columns.ACTION_DIST_INPUTS]
    dist = module.get_exploration_action_dist_cls().from_logits(logits)
    for _ in range(20):
        actions = dist.sample().numpy()
        assert masks[np.arange(len(actions)), actions].all()
    greedy = module.get_inference_action_dist_cls().from_logits(logits).to_deterministic()
    actions = greedy.sample().numpy()
    assert masks[np.arange(len(actions)), actions].all()
    # the train pass masks the same way and hands the torso output to the value function
    with torch.no_grad():
        train_out = module.forward_train(batch)
        values = module.compute_values(batch, train_out[Columns.EMBEDDINGS])
    assert torch.equal(train_out[Columns.ACTION_DIST_INPUTS], logits)
    assert values.shape == (len(obs),)


@pytest.mark.parametrize("features", ["raw", "sheet"])
def test_export_round_trip_gives_the_module_logits(tmp_path, features):
    module = _module(features, seed=5)
    obs, masks = _observations(10, seed=7)
    batch = {Columns.OBS: {"observation": torch.as_tensor(obs),
                           "action_mask": torch.as_tensor(masks)}}
    path = tmp_path / "exported.pt"
    net = export_network(module.get_state(), 89, 37, module.model_config)
    assert net.config == {"hidden": [64, 32], "activation": "relu", "features": features}
    save_checkpoint(path, net, "dice", 2, net.observation_size, net.num_actions,
                    metadata={"trainer": "rllib"})
    agent = load(str(path), game="dice", num_players=2)
    assert isinstance(agent, PolicyAgent)
    with torch.no_grad():
        masked = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        values = module.compute_values(batch)
        logits, loaded_values = agent.network(torch.as_tensor(obs))
    legal = torch.as_tensor(masks) > 0
    assert torch.allclose(logits[legal], masked[legal], atol=1e-6)
    assert torch.allclose(loaded_values, values, atol=1e-6)
    with pytest.raises(RuntimeError, match="size mismatch"):  # another layout
        export_network(module.get_state(), 89, 37, {**module.model_config, "hidden": [64, 64]})
    # and the loaded agent plays the module's greedy action, also as a fixed opponent
    greedy = masked.argmax(dim=1).numpy()
    assert np.array_equal(agent.act_batch(obs, masks), greedy)
    space = parallel_env(game="dice", num_players=2)
    opponent = RLModuleSpec(module_class=AgentModule,
                            observation_space=space.observation_space("player_0"),
                            action_space=space.action_space("player_0"),
                            model_config={"spec": str(path), "game": "dice",
                                          "num_players": 2}).build()
    assert np.array_equal(opponent.forward_inference(batch)[Columns.ACTIONS], greedy)


def test_agent_module_plays_the_loaded_agent():
    space = parallel_env(game="dice", num_players=2)
    module = RLModuleSpec(module_class=AgentModule,
                          observation_space=space.observation_space("player_0"),
                          action_space=space.action_space("player_0"),
                          model_config={"spec": "greedy", "game": "dice", "num_players": 2,
                                        "seed": 0}).build()
    obs, masks = _observations(5)
    batch = {Columns.OBS: {"observation": torch.as_tensor(obs),
                           "action_mask": torch.as_tensor(masks)}}
    actions = module.forward_exploration(batch)[Columns.ACTIONS]
    assert masks[np.arange(len(actions)), actions].all()
    expected = load("greedy", game="dice", num_players=2).act_batch(obs, masks)
    assert np.array_equal(actions, expected)
    with pytest.raises(NotImplementedError, match="not trained"):
        module.forward_train(batch)


class _Episode:
    def __init__(self, id_: str):
        self.id_ = id_


def _schedule(seed: int | None, worker_index: int, episodes: int = 200) -> list[str]:
    """Who plays seat 1 in each of the first ``episodes`` episodes an env runner creates,
    as RLlib's env runner names them (a random UUID) and then calls back."""
    import uuid
    from types import SimpleNamespace
    fn = policy_mapping(0.5, {"opponent_0": 0.25, "opponent_1": 0.25})
    callback = SeededEpisodeIds()
    runner = SimpleNamespace(config=SimpleNamespace(seed=seed), worker_index=worker_index)
    schedule = []
    for _ in range(episodes):
        ep = _Episode(uuid.uuid4().hex)
        callback.on_episode_created(episode=ep, env_runner=runner, env_index=0)
        schedule.append(fn("player_1", ep))
    return schedule


def test_the_opponent_schedule_is_a_function_of_the_seed():
    """The mapping drew from RLlib's episode IDs, random UUIDs: the same run.seed played
    other opponents in every run."""
    assert _schedule(0, 1) == _schedule(0, 1)
    assert _schedule(0, 1) != _schedule(1, 1)
    assert _schedule(0, 1) != _schedule(0, 2)  # each env runner its own stream
    assert _schedule(None, 1) != _schedule(None, 1)  # unseeded stays unseeded


def test_policy_mapping_is_per_episode_and_follows_the_shares():
    fn = policy_mapping(0.5, {"opponent_0": 0.25, "opponent_1": 0.25})
    kinds = []
    for i in range(2000):
        ep = _Episode(f"episode-{i}")
        seats = [fn(f"player_{s}", ep) for s in range(3)]
        assert seats[0] == LEARNER
        assert seats[1] == seats[2] == fn("player_1", ep)  # every seat agrees
        kinds.append(seats[1])
    share = {k: kinds.count(k) / len(kinds) for k in set(kinds)}
    assert share[LEARNER] == pytest.approx(0.5, abs=0.05)
    assert share["opponent_0"] == pytest.approx(0.25, abs=0.05)
    assert share["opponent_1"] == pytest.approx(0.25, abs=0.05)
    with pytest.raises(ValueError, match="shares"):
        policy_mapping(0.0, {"opponent_0": 0.0})


def _first_deals(seed: int, worker_index: int) -> list[bytes]:
    """The first observation of each of the 4 card games that env runner
    ``worker_index`` of a run seeded ``seed`` plays (the deal: seeds give other deals)."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from agents.trainers.rllib_ppo import build_config
    cfg = load_config(None, ["run.trainer=rllib", "opponents.snapshots=0", "imitation.games=0",
                             "env.game=cards", "network.features=raw", "network.hidden=[8]",
                             "rllib.num_envs_per_env_runner=4"])
    runner = MultiAgentEnvRunner(config=build_config(cfg, seed=seed), worker_index=worker_index)
    try:
        episodes = runner.sample(num_timesteps=4, random_actions=False)
    finally:
        runner.stop()
    firsts = {}
    for ep in episodes:  # an episode's chunks share its ID; the first chunk holds the deal
        firsts.setdefault(ep.id_, b"".join(np.asarray(o["observation"]).tobytes() for _, o in
                                           sorted(ep.get_observations(0).items())))
    return list(firsts.values())


def test_every_game_of_a_run_and_of_the_next_seed_is_dealt_its_own_stream():
    """RLlib seeds game k of env runner w with ``seed + w + k``: runners 1 and 2 of a run
    dealt 3 of their 4 games alike, and run seed 1 repeated 3 of run seed 0's games."""
    deals = [d for seed in (0, 1) for runner in (1, 2) for d in _first_deals(seed, runner)]
    assert len(deals) == 16 and len(set(deals)) == 16


def test_rllib_config_section_is_validated():
    base = ["run.trainer=rllib", "opponents.snapshots=0", "imitation.games=0"]
    cfg = load_config(None, base + ["rllib.num_env_runners=2", "rllib.address=auto"])
    assert cfg.rllib.num_env_runners == 2 and cfg.rllib.address == "auto"
    with pytest.raises(ConfigError, match="opponents.snapshots"):
        load_config(None, ["run.trainer=rllib", "imitation.games=0"])
    with pytest.raises(ConfigError, match="rllib.minibatch_size"):
        load_config(None, base + ["rllib.minibatch_size=9000"])
    with pytest.raises(ConfigError, match="rllib.num_env_runners"):
        load_config(None, base + ["rllib.num_env_runners=-1"])
    with pytest.raises(ConfigError, match="rllib.num_envs_per_env_runner"):
        load_config(None, base + ["rllib.num_env_runners=1", "rllib.num_envs_per_env_runner=0"])
    with pytest.raises(ConfigError, match="imitation"):
        load_config(None, base + ["imitation.games=10"])
    with pytest.raises(ConfigError, match="rllib.num_env_runner"):
        load_config(None, base + ["rllib.num_env_runner=1"])  # typo: unknown field
    with pytest.raises(ConfigError, match=r"rllib.address: .*port up to 65535.*'host:99999'"):
        load_config(None, base + ["rllib.address=host:99999"])
    assert load_config(None, base + ["rllib.address=ray://h:65535"]).rllib.address


def test_more_env_runners_than_cpus_is_refused_when_ray_takes_them_all(monkeypatch):
    """rllib.num_cpus=0 (all): Ray would wait for good for the CPUs the runners need."""
    from agents.trainers import preflight
    monkeypatch.setattr(preflight.os, "cpu_count", lambda: 2)
    base = ["run.trainer=rllib", "opponents.snapshots=0", "imitation.games=0",
            "rllib.num_cpus=0"]
    preflight.check_resources(load_config(None, base + ["rllib.num_env_runners=2"]), "runs")
    with pytest.raises(ConfigError, match=r"rllib.num_env_runners: 3 env runners .*"
                                          r"\(rllib.num_cpus = 0: all 2 of this machine\)"):
        preflight.check_resources(load_config(None, base + ["rllib.num_env_runners=3"]), "runs")


# -- slow: a local Ray instance -------------------------------------------------------------

SHORT_RUN = ["run.name=rllib-test", "run.total_steps=3000", "run.checkpoint_every=2000",
             "rllib.train_batch_size=1000", "rllib.minibatch_size=250",
             "rllib.num_envs_per_env_runner=2", "network.hidden=[64, 64]",
             "ppo.update_epochs=2", "eval.every=1000", "eval.games=20", "eval.final_games=100",
             "eval.opponents=[random]", "run.torch_threads=1"]


@pytest.fixture(scope="module")
def local_ray():
    import ray
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_short_training_run_exports_a_loadable_policy(local_ray, tmp_path):
    from agents.trainers import train_from_config
    cfg = load_config("configs/dice-2p-rllib.yaml", SHORT_RUN)
    report = train_from_config(cfg, root=tmp_path, progress=False)
    run_dir = tmp_path / "rllib-test"
    assert "rllib trainer" in report and "vs random" in report
    for name in ("final.pt", "checkpoints/latest.pt", "checkpoints/trainer_state.pt"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "checkpoints").glob("step_*.pt"))
    assert list((run_dir / "tb").glob("events.*"))  # eval.every and per-update logs
    assert len(list((run_dir / "checkpoints").glob("rllib_*"))) == 1  # the newest only
    agent = load(str(run_dir / "final.pt"), game="dice", num_players=2)
    obs, masks = _observations(2)
    assert masks[np.arange(len(obs)), agent.act_batch(obs, masks)].all()


@pytest.mark.slow
def test_a_run_sampling_in_the_driver_repeats_from_its_seed(local_ray, tmp_path):
    """train_from_config twice with one run.seed gives the same network (the opponent
    schedule drew from random episode IDs, so no two runs were the same); another seed
    another network."""
    from agents.trainers import train_from_config
    weights = []
    for i, seed in enumerate([0, 0, 1]):
        cfg = load_config("configs/dice-2p-rllib.yaml", SHORT_RUN + [
            f"run.name=seed-{i}", f"run.seed={seed}", "run.total_steps=2000",
            "rllib.num_env_runners=0", "ppo.update_epochs=1", "eval.every=0",
            "eval.final_games=4", "network.hidden=[16]"])
        train_from_config(cfg, root=tmp_path, progress=False)
        weights.append(torch.load(tmp_path / f"seed-{i}" / "final.pt",
                                  weights_only=True)["state_dict"])
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])


@pytest.mark.slow
def test_every_action_rllib_takes_is_legal(local_ray):
    from agents.trainers.rllib_ppo import build_config, export
    cfg = load_config("configs/dice-2p-rllib.yaml", SHORT_RUN + ["rllib.num_env_runners=1"])
    algo = build_config(cfg).build_algo()
    try:
        algo.train()  # sampling and a PPO update (the env raises on any illegal action)
        episodes = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.sample(num_timesteps=600, random_actions=False),
            local_env_runner=False)
        checked = set()
        for ep in (e for batch in episodes for e in batch):
            for agent_id, sa in ep.agent_episodes.items():
                obs, actions = sa.get_observations(), np.asarray(sa.get_actions())
                # numpy-ized episodes hold the Dict observations as a dict of arrays
                masks = (np.asarray(obs["action_mask"]) if isinstance(obs, dict) else
                         np.stack([o["action_mask"] for o in obs]))[:len(actions)]
                assert len(actions) > 0
                assert masks[np.arange(len(actions)), actions].all()
                checked.add(ep.module_for(agent_id))
        assert LEARNER in checked and len(checked) >= 2  # learner and fixed opponents
        # the exported policy is the learner module the env runners play
        net = export(algo, cfg)
        runner_weights = algo.env_runner_group.foreach_env_runner(
            lambda runner: {k: v.detach().cpu() for k, v in
                            runner.module[LEARNER].net.state_dict().items()},
            local_env_runner=False)[0]
        for key, value in net.state_dict().items():
            assert torch.equal(value, runner_weights[key]), key
    finally:
        algo.stop()


@pytest.mark.slow
def test_resume_continues_from_the_rllib_checkpoint(local_ray, tmp_path):
    from agents.trainers import train_from_config
    from agents.trainers.run import ResumeError
    overrides = SHORT_RUN + ["run.total_steps=1500", "run.checkpoint_every=1000"]
    train_from_config(load_config("configs/dice-2p-rllib.yaml", overrides), root=tmp_path,
                      progress=False)
    state = tmp_path / "rllib-test" / "checkpoints" / "trainer_state.pt"
    first = torch.load(state, weights_only=False)
    assert first["step"] >= 1500
    with pytest.raises(ResumeError, match="already holds a run"):
        train_from_config(load_config("configs/dice-2p-rllib.yaml", overrides), root=tmp_path,
                          progress=False)
    more = load_config("configs/dice-2p-rllib.yaml", overrides[:-2] + ["run.total_steps=3000"])
    check_broken_rllib_checkpoints_are_refused(tmp_path / "rllib-test" / "checkpoints", more)
    train_from_config(more, root=tmp_path, resume=True, progress=False)
    second = torch.load(state, weights_only=False)
    assert second["step"] >= 3000
    # RLlib's restored counters go on from the checkpoint (a fresh algorithm would have
    # sampled fewer than the first run's steps to reach 3000)
    assert second["rllib_lifetime"] > first["rllib_lifetime"]
    data = torch.load(tmp_path / "rllib-test" / "final.pt", weights_only=False)
    assert data["metadata"]["trainer"] == "rllib"


def check_broken_rllib_checkpoints_are_refused(ckpt, cfg):
    """A missing or corrupt RLlib folder: a ResumeError naming it (each was a traceback);
    the folder is whole again afterwards."""
    from agents.trainers import train_from_config
    from agents.trainers.run import ResumeError

    (folder,) = ckpt.glob("rllib_*")
    whole = folder.rename(ckpt / "whole")
    with pytest.raises(ResumeError, match=rf"RLlib's checkpoint '.*{folder.name}', which .* "
                                          r"names, is missing"):
        train_from_config(cfg, root=ckpt.parents[1], resume=True, progress=False)
    shutil.copytree(whole, folder)
    for state in folder.rglob("module_state.pkl"):
        state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(ResumeError, match=rf"RLlib's checkpoint '.*{folder.name}' does not "
                                          r"restore"):
        train_from_config(cfg, root=ckpt.parents[1], resume=True, progress=False)
    shutil.rmtree(folder)
    whole.rename(folder)


@pytest.mark.slow
def test_train_py_joins_an_existing_cluster(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from ray.cluster_utils import Cluster
    root = Path(__file__).resolve().parents[1]
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2,
                                                             "include_dashboard": False})
    try:
        done = subprocess.run(
            [sys.executable, str(root / "train.py"), "--config",
             str(root / "configs" / "dice-2p-rllib.yaml"), "--runs-dir", str(tmp_path),
             "--no-progress", f"rllib.address={cluster.address}", *SHORT_RUN,
             "run.total_steps=1000"],
            capture_output=True, text=True, timeout=300, cwd=root)
    finally:
        cluster.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rllib trainer" in done.stdout
    assert load(str(tmp_path / "rllib-test" / "final.pt"), game="dice", num_players=2)
