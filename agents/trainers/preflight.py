"""What only this machine can tell about a config, checked before a run builds anything.

:mod:`agents.trainers.config` checks a config against itself (types, ranges, fields that
must agree); :func:`check_resources` checks it against the machine: the device, the
trainer's package, the run folder, the agents it names and the checkpoint it starts from.
It sits above :mod:`~agents.trainers.run` (whose checkpoint reader it uses), so that the
config module imports nothing of the trainers.
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import ConfigError, TrainConfig


def check_resources(cfg: TrainConfig, runs_dir: str | Path, resume: bool = False) -> None:
    """Refuse, with :class:`ConfigError` naming the field, what only this machine can tell:
    a device torch does not see, a trainer whose package is missing, a run folder that
    cannot be made or written in, an agent spec (``eval.opponents``, ``opponents.scripted``,
    ``imitation.demonstrator``) that does not load for ``env.game`` and
    ``env.num_players``, a ``run.init_from`` checkpoint that is missing, corrupt or holds
    another network (not checked on ``resume``, which does not read it). Builds nothing
    and writes nothing."""
    _check_machine(cfg)
    _check_run_folder(Path(runs_dir), cfg.run.name)
    _check_agent_specs(cfg)
    if cfg.run.init_from and not resume:
        _check_init_from(cfg)


def is_run_config(path: str | Path) -> bool:
    """Whether ``path`` is a run's own ``config.yaml``, beside the trainer state it
    describes: a file the run wrote with every field, so one it lacks was lost."""
    from .run import CHECKPOINTS, CONFIG, STATE  # torch: imported only for a run

    path = Path(path)
    return path.name == CONFIG and (path.parent / CHECKPOINTS / STATE).is_file()


def _check_run_folder(root: Path, name: str) -> None:
    """ConfigError unless ``root / name`` is a folder, or can be made as one, that this
    process may write in, holding no file where the run writes a folder or vice versa."""
    from .run import RUN_FILES, RUN_FOLDERS  # torch: imported only for a run

    folder = root / name
    field = lambda path: "run.name" if path == folder else "--runs-dir"  # noqa: E731
    for path in reversed((folder, *folder.parents)):
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{field(path)}: {str(path)!r} is a file, where the run's "
                              f"folder {str(folder)!r} must go")
    nearest = next(p for p in (folder, *folder.parents) if p.exists())
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise ConfigError(f"{field(nearest)}: cannot write in {str(nearest)!r} (permission "
                          f"denied), where the run's folder {str(folder)!r} must go")
    for sub in RUN_FOLDERS:
        if (folder / sub).exists() and not (folder / sub).is_dir():
            raise ConfigError(f"run.name: {str(folder / sub)!r} is a file, where the run "
                              f"writes a folder")
    for sub in RUN_FILES:
        if (folder / sub).is_dir():
            raise ConfigError(f"run.name: {str(folder / sub)!r} is a folder, where the run "
                              f"writes a file")


def _check_machine(cfg: TrainConfig) -> None:
    import importlib.util

    from .run import resolve_device  # torch: imported only for a run

    resolve_device(cfg.run.device)  # a GPU torch does not see: ConfigError
    if cfg.run.trainer == "rllib" and importlib.util.find_spec("ray") is None:
        raise ConfigError('run.trainer: rllib needs Ray RLlib: pip install -e ".[rllib]"')
    r, cpus = cfg.rllib, os.cpu_count() or 1
    if cfg.run.trainer == "rllib" and not r.address and not r.num_cpus \
            and r.num_env_runners > cpus:  # Ray would wait for the CPUs for good
        raise ConfigError(f"rllib.num_env_runners: {r.num_env_runners} env runners take one "
                          f"CPU each, more than the local Ray instance has (rllib.num_cpus = "
                          f"0: all {cpus} of this machine)")


def _check_agent_specs(cfg: TrainConfig) -> None:
    from ..load import load

    specs = {**{f"eval.opponents[{i}]": s for i, s in enumerate(cfg.eval.opponents)},
             **{f"opponents.scripted.{s}": s for s in cfg.opponents.scripted},
             "imitation.demonstrator": cfg.imitation.demonstrator}
    for name, spec in specs.items():
        try:
            load(spec, game=cfg.env.game, num_players=cfg.env.num_players)
        except ValueError as exc:  # every agents.load error
            raise ConfigError(f"{name}: {exc}") from None


def _check_init_from(cfg: TrainConfig) -> None:
    from ..policy import PolicyNetwork
    from .run import init_network, policy_shape

    net = PolicyNetwork(*policy_shape(cfg.env.game, cfg.env.num_players), **vars(cfg.network))
    init_network(net, cfg)  # raises ConfigError naming run.init_from
