"""MJLab / RSL-RL checkpoints as UniLab checkpoints: play and evaluate MJLab's policies in UniLab.

MJLab 1.6.0's train script saves RSL-RL 5.4.2's `OnPolicyRunner.save` dict as
`model_<iteration>.pt`: `actor_state_dict` and `critic_state_dict` (`rsl_rl.models.MLPModel`:
`obs_normalizer._mean/_var/_std` [1, D] and `count`, `distribution.std_param` [A], `mlp.<i>.*`),
`optimizer_state_dict`, `iter` and `infos` (MJLab: `{"env_state": {"common_step_counter"}}`).
It does not name its task. `convert_mjlab_checkpoint(path, task)` turns it into the dict
`load_checkpoint` returns for a UniLab PPO run of `task` (config: the task's `rsl_rl` preset,
with the hidden sizes read from the weights), so `unilab play`, `unilab eval` and
`policy_from_checkpoint` take it as they take UniLab's own.

Observations and actions need no reordering: MJLab's actor group ("actor") is UniLab's
"policy" group term for term, its critic group is "critic", and MJLab's `JointPositionAction`
acts on the joints in the robot's order, which is UniLab's task joint order (checked against
MJLab's recordings in the tests).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import torch

from .._algorithms import algorithm_spec
from .._checkpoint import (
    FORMAT,
    VERSION,
    CheckpointError,
    UnsafeCheckpointError,
    load_checkpoint,
    read_plain,
    tensor_shapes,
)
from .._task_defaults import make_config

__all__ = ["convert_mjlab_checkpoint", "is_rsl_rl_checkpoint", "load_policy_checkpoint"]


def is_rsl_rl_checkpoint(data: Any) -> bool:
    """True for RSL-RL's `OnPolicyRunner.save` dict (MJLab's `model_<it>.pt`)."""
    return isinstance(data, dict) and "actor_state_dict" in data and "format" not in data


def _hidden(sd: dict[str, torch.Tensor], what: str, where: str) -> tuple[int, int, tuple]:
    """(input dim, output dim, hidden sizes) of an RSL-RL MLP state dict."""
    layers = sorted(
        (int(k.split(".")[1]), v)
        for k, v in sd.items()
        if k.startswith("mlp.") and k.endswith(".weight")
    )
    if not layers:
        raise CheckpointError(f"{where}: {what} has no 'mlp.<i>.weight' tensors")
    if any(k.startswith("rnn.") for k in sd):
        raise CheckpointError(f"{where}: {what} is recurrent; only MLP actors are converted")
    weights = [w for _, w in layers]
    return (
        int(weights[0].shape[1]),
        int(weights[-1].shape[0]),
        tuple(int(w.shape[0]) for w in weights[:-1]),
    )


def convert_mjlab_checkpoint(
    source: str | os.PathLike | dict[str, Any],
    task: str,
    device: str = "cpu",
    *,
    name: str | None = None,
) -> dict[str, Any]:
    """An MJLab/RSL-RL checkpoint (file or loaded dict) as a UniLab PPO checkpoint of `task`.

    Raises CheckpointError when the file is not an RSL-RL checkpoint or its networks do not
    fit `task` (observation or action size), naming the sizes. `name`: how errors call a
    dict `source` (default "the checkpoint").
    """
    import unilab_algos
    import unilab_envs

    where = name or ("the checkpoint" if isinstance(source, dict) else str(source))
    raw = source if isinstance(source, dict) else _torch_load(source)
    if not is_rsl_rl_checkpoint(raw):
        raise CheckpointError(f"{where} is not an RSL-RL checkpoint (no 'actor_state_dict')")
    spec = unilab_envs.make_task(task).spec
    config = make_config(task, "ppo", preset="rsl_rl")
    algo = config.algo
    obs_shapes = {g: (int(d),) for g, d in spec.observation_dims.items()}
    actor_sd = unilab_algos.convert_rsl_rl_state_dict(dict(raw["actor_state_dict"]))
    critic_sd = unilab_algos.convert_rsl_rl_state_dict(dict(raw.get("critic_state_dict") or {}))
    nets = {"actor": (actor_sd, algo.actor_obs, spec.action_dim)}
    if critic_sd:
        nets["critic"] = (critic_sd, algo.critic_obs, 1)
    changes: dict[str, Any] = {}
    for name, (sd, groups, out_dim) in nets.items():
        in_dim, out, hidden = _hidden(sd, f"its {name}", where)
        want = sum(obs_shapes[g][0] for g in groups)
        if in_dim != want or out != out_dim:
            raise CheckpointError(
                f"{where}: its {name} maps {in_dim} observations to {out} outputs; task "
                f"'{task}' gives {want} ({'+'.join(groups)}) and takes {out_dim} "
                f"(a checkpoint of another task?)"
            )
        net = attrs.evolve(
            getattr(algo, name), hidden=hidden, normalize_obs="obs_normalizer.mean" in sd
        )
        changes[name] = net
    if "log_std_param" in actor_sd:
        changes["policy"] = attrs.evolve(algo.policy, std_param="log_std")
    algo = attrs.evolve(algo, **changes)
    config = attrs.evolve(config, algo=algo)
    learner = algorithm_spec("ppo").build_learner(obs_shapes, spec.action_dim, algo, device=device)
    modules = {"actor": learner.actor, "critic": learner.critic}
    for name, (sd, _, _) in nets.items():
        try:
            modules[name].load_state_dict(sd)
        except RuntimeError as e:
            raise CheckpointError(f"{where}: its {name} does not load into UniLab's: {e}") from None
    state = learner.state_dict()
    infos = raw.get("infos") or {}
    return {
        "format": FORMAT,
        "version": VERSION,
        "task": task,
        "algo_name": "ppo",
        "config": config.to_dict(),
        "world_size": 1,
        "num_envs_per_rank": 0,
        "iteration": int(raw.get("iter", 0)),
        "counters": {},
        "shapes": {
            **{f"env.obs.{g}": s for g, s in obs_shapes.items()},
            "env.action_dim": (spec.action_dim,),
            **tensor_shapes({"learner": state}),
        },
        "learner": [state],
        "curriculum": [None],
        "source": {"format": "rsl_rl", "infos": infos},
        "path": where,
    }


def _torch_load(path: str | os.PathLike) -> Any:
    """An RSL-RL file's dict: state dicts, an optimizer dict, `iter` and `infos`, all plain data
    (read as UniLab's own checkpoints are, never running code the file names)."""
    file = Path(path)
    if not file.is_file():
        raise CheckpointError(f"no checkpoint file at {file}")
    return read_plain(file)


def load_policy_checkpoint(
    path: str | os.PathLike, task: str | None = None, device: str = "cpu"
) -> dict[str, Any]:
    """A UniLab checkpoint (file or run folder), or an MJLab/RSL-RL `model_<it>.pt` of `task`.

    An RSL-RL checkpoint does not name its task, so it needs `task`; a UniLab checkpoint
    with a `task` other than its own is refused (CheckpointError)."""
    try:
        ckpt = load_checkpoint(path, map_location=device)
    except UnsafeCheckpointError:
        raise
    except CheckpointError:
        file = Path(path)
        raw = _torch_load(file) if file.is_file() else None
        if not is_rsl_rl_checkpoint(raw):
            raise
        if task is None:
            raise CheckpointError(
                f"{file} is an MJLab/RSL-RL checkpoint, which does not record its task: "
                "name it with --task (e.g. --task go1-velocity-flat)"
            ) from None
        return convert_mjlab_checkpoint(raw, task, device, name=str(file))
    if task is not None and ckpt["task"] != task:
        raise CheckpointError(
            f"{ckpt['path']} was trained on task '{ckpt['task']}', not '{task}' (--task)"
        )
    return ckpt
