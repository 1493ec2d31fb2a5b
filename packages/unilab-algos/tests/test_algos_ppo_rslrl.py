"""The `rsl_rl` preset against RSL-RL 5.4.2 itself: identical parameters after full updates."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from _ppo_helpers import obs_td, scripted_rollout, step_td
from tensordict import TensorDict

rsl_rl = pytest.importorskip("rsl_rl")
from rsl_rl.algorithms import PPO as RslPPO  # noqa: E402
from rsl_rl.models import MLPModel, RNNModel  # noqa: E402
from rsl_rl.storage import RolloutStorage as RslStorage  # noqa: E402

from unilab_algos import (  # noqa: E402
    PPO,
    Mirror,
    NetworkConfig,
    PPOConfig,
    SignedPermutation,
    SymmetryConfig,
    convert_rsl_rl_state_dict,
)

N, T, A = 10, 7, 3


DIMS = {"policy": 5, "critic": 6}
# Left/right maps of the scripted data: pairs swapped, lateral entries negated.
MIRROR = Mirror(
    obs={
        "policy": SignedPermutation(index=(1, 0, 2, 4, 3), sign=(1, 1, -1, 1, -1)),
        "critic": SignedPermutation(index=(1, 0, 2, 3, 5, 4), sign=(1, 1, -1, -1, 1, 1)),
    },
    action=SignedPermutation(index=(1, 0, 2), sign=(1, 1, -1)),
)


def _rsl_rl_mirror(env, obs=None, actions=None):
    """RSL-RL's `data_augmentation_func` with `MIRROR`: [original; mirrored] along the batch."""
    out_obs = out_act = None
    if obs is not None:
        mirrored = TensorDict(MIRROR.observations(dict(obs.items())), batch_size=obs.batch_size)
        out_obs = torch.cat([obs, mirrored], dim=0)
    if actions is not None:
        out_act = torch.cat([actions, MIRROR.action(actions)], dim=0)
    return out_obs, out_act


def _rsl_models(rnn_type: str | None):
    obs = TensorDict({k: torch.zeros(N, d) for k, d in DIMS.items()}, batch_size=[N])
    groups = {"actor": ["policy"], "critic": ["critic"]}
    kw = dict(hidden_dims=[16, 8], activation="elu", obs_normalization=True)
    dist = {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"}
    if rnn_type is None:
        actor = MLPModel(obs, groups, "actor", A, distribution_cfg=dist, **kw)
        critic = MLPModel(obs, groups, "critic", 1, **kw)
    else:
        rkw = dict(rnn_type=rnn_type, rnn_hidden_dim=8, rnn_num_layers=1)
        actor = RNNModel(obs, groups, "actor", A, distribution_cfg=dist, **kw, **rkw)
        critic = RNNModel(obs, groups, "critic", 1, **kw, **rkw)
    storage = RslStorage("rl", N, T, obs, [A])
    return actor, critic, storage


def _run_pair(
    rnn_type: str | None,
    iterations: int,
    schedule: str = "adaptive",
    symmetry: SymmetryConfig | None = None,
    **over,
):
    torch.manual_seed(0)
    actor, critic, storage = _rsl_models(rnn_type)
    rsl_over = dict(over)
    if symmetry is not None:  # RSL-RL's symmetry_cfg of the same settings and maps
        rsl_over["symmetry_cfg"] = {
            "env": None,
            "data_augmentation_func": _rsl_rl_mirror,
            "use_data_augmentation": symmetry.data_augmentation,
            "use_mirror_loss": symmetry.mirror_loss,
            "mirror_loss_coeff": symmetry.mirror_loss_coef,
        }
    ref = RslPPO(actor, critic, storage, learning_rate=1e-3, schedule=schedule, **rsl_over)
    net = NetworkConfig(hidden=(16, 8), rnn_type=rnn_type, rnn_hidden=8)
    cfg = PPOConfig.rsl_rl(
        actor=net, critic=net, schedule=schedule, symmetry=symmetry, **_map(over)
    )
    mirror = MIRROR if symmetry is not None else None
    ours = PPO({k: (d,) for k, d in DIMS.items()}, A, cfg, mirror=mirror)
    ours.actor.load_state_dict(convert_rsl_rl_state_dict(actor.state_dict()))
    ours.critic.load_state_dict(convert_rsl_rl_state_dict(critic.state_dict()))
    ours.init_storage(N, T)
    metrics = []
    for it in range(iterations):
        data = scripted_rollout(N, T, DIMS, seed=100 + it)
        results = []
        for learner in (ref, ours):
            _collect(learner, data, seed=1000 + it)
            results.append(learner.update())
        metrics.append(results)
    return ref, ours, metrics


def _collect(learner, data, seed: int) -> None:
    """One rollout of scripted env data through RSL-RL's or UniLab's PPO (actions drawn after
    `torch.manual_seed(seed)`), then compute_returns."""
    obs, rew, dones, touts = data
    torch.manual_seed(seed)
    learner.train_mode()
    rsl = isinstance(learner, RslPPO)
    with torch.inference_mode():
        for t in range(T):
            if rsl:
                learner.act(TensorDict({k: v[t] for k, v in obs.items()}, [N]))
                nxt = TensorDict({k: v[t + 1] for k, v in obs.items()}, [N])
                learner.process_env_step(nxt, rew[t], dones[t], {"time_outs": touts[t]})
            else:
                learner.act(obs_td(obs, t))
                learner.process_env_step(step_td(obs, rew, dones, touts, t))
        last = TensorDict({k: v[T] for k, v in obs.items()}, [N]) if rsl else obs_td(obs, T)
        learner.compute_returns(last)


def _map(over: dict) -> dict:
    names = {
        "use_clipped_value_loss": "use_clipped_value_loss",
        "normalize_advantage_per_mini_batch": "advantage_norm_per_mini_batch",
    }
    return {names[k]: v for k, v in over.items()}


def _assert_same(ref, ours):
    ra = convert_rsl_rl_state_dict(ref.actor.state_dict())
    rc = convert_rsl_rl_state_dict(ref.critic.state_dict())
    for mine, theirs in ((ours.actor.state_dict(), ra), (ours.critic.state_dict(), rc)):
        assert mine.keys() == theirs.keys()
        for k in mine:
            assert torch.equal(mine[k], theirs[k]), k
    assert ours.learning_rate == ref.learning_rate
    s_ref = ref.optimizer.state_dict()["state"]
    s_our = ours.state.optimizer.state_dict()["state"]
    assert s_ref.keys() == s_our.keys()
    for i in s_ref:
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(s_ref[i][k], s_our[i][k])


@pytest.mark.parametrize("schedule", ["adaptive", "fixed"])
def test_feed_forward_matches_rsl_rl_bitwise(schedule):
    ref, ours, metrics = _run_pair(None, iterations=2, schedule=schedule)
    _assert_same(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy"):
            assert r[k] == o[k], k
        assert o["mini_batches"] == 20 and o["collectives"] == 0
    if schedule == "adaptive":
        assert ours.learning_rate != 1e-3  # the KL rule fired at least once


def test_feed_forward_variants_match_rsl_rl():
    ref, ours, _ = _run_pair(
        None, iterations=1, use_clipped_value_loss=False, normalize_advantage_per_mini_batch=True
    )
    _assert_same(ref, ours)


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_recurrent_matches_rsl_rl_bitwise(rnn_type):
    ref, ours, metrics = _run_pair(rnn_type, iterations=2)
    _assert_same(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy"):
            assert r[k] == o[k], k


def test_normalizer_stats_match_after_rollout():
    ref, ours, _ = _run_pair(None, iterations=1)
    assert int(ours.actor.obs_normalizer.count) == N * T
    assert torch.equal(ours.actor.obs_normalizer.std, ref.actor.obs_normalizer._std[0])
    assert copy.deepcopy(ours.critic.obs_normalizer.mean).dtype == torch.float32


class _ThreadRanks:
    """RSL-RL's multi-GPU code path for W ranks played by W threads of this process, with
    in-process stand-ins for `torch.distributed.all_reduce` (SUM) and `broadcast`.

    One thread runs at a time (a lock passed on at every collective), so each rank's draws
    from the global RNG (RSL-RL's randperm, before the first collective) are its own.
    """

    def __init__(self, world: int) -> None:
        self.world = world
        self.baton = threading.Lock()
        self.barrier = threading.Barrier(world)
        self.slots: list[torch.Tensor | None] = [None] * world
        self.local = threading.local()
        self.calls = 0

    def _exchange(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        self.slots[self.local.rank] = tensor.clone()
        self.baton.release()
        try:
            self.barrier.wait()
            got = list(self.slots)
            self.barrier.wait()  # every rank has read before the next exchange writes
        finally:
            self.baton.acquire()
        self.calls += self.local.rank == 0
        return got

    def all_reduce(self, tensor, op=None, group=None, async_op=False):
        got = self._exchange(tensor)
        total = got[0]
        for other in got[1:]:
            total = total + other
        tensor.copy_(total)

    def broadcast(self, tensor, src=0, group=None, async_op=False):
        tensor.copy_(self._exchange(tensor)[src])

    def run(self, bodies) -> None:
        errors: list[BaseException] = []

        def thread(rank: int) -> None:
            self.local.rank = rank
            with self.baton:
                try:
                    bodies[rank]()
                except BaseException as e:
                    errors.append(e)
                    self.barrier.abort()

        threads = [threading.Thread(target=thread, args=(r,)) for r in range(self.world)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=120)
        assert not any(th.is_alive() for th in threads), "a rank thread hung in a collective"
        if errors:
            raise errors[0]


W, ITERS_W = 2, 2
DIMS_SHAPES = {k: (d,) for k, d in DIMS.items()}


def _rank_seeds(rank: int, it: int) -> tuple[int, int]:
    """(env data seed, action seed) of `rank` in iteration `it`: every rank its own data."""
    return 100 + it + 10 * rank, 1000 + it + 10 * rank


def _unilab_rank(rank: int, world: int):
    from unilab_dist import GradAllReduce

    torch.manual_seed(0)  # RSL-RL's init (the same on every rank, as its broadcast makes it)
    actor, critic, _ = _rsl_models(None)
    net = NetworkConfig(hidden=(16, 8))
    ours = PPO(DIMS_SHAPES, A, PPOConfig.rsl_rl(actor=net, critic=net), grad_sync=GradAllReduce())
    ours.actor.load_state_dict(convert_rsl_rl_state_dict(actor.state_dict()))
    ours.critic.load_state_dict(convert_rsl_rl_state_dict(critic.state_dict()))
    ours.init_storage(N, T)
    lrs = []
    for it in range(ITERS_W):
        data_seed, action_seed = _rank_seeds(rank, it)
        _collect(ours, scripted_rollout(N, T, DIMS, seed=data_seed), seed=action_seed)
        ours.update()
        lrs.append(ours.learning_rate)
    return ours.actor.state_dict(), ours.critic.state_dict(), ours.state.optimizer.state_dict(), lrs


def _rsl_rl_ranks(monkeypatch):
    """RSL-RL 5.4.2's PPO at W=2 (its multi-GPU branches) through `_ThreadRanks`."""
    ranks = _ThreadRanks(W)
    monkeypatch.setattr(torch.distributed, "all_reduce", ranks.all_reduce)
    monkeypatch.setattr(torch.distributed, "broadcast", ranks.broadcast)
    refs = []
    for rank in range(W):
        torch.manual_seed(0)
        actor, critic, storage = _rsl_models(None)
        multi_gpu = {"global_rank": rank, "local_rank": rank, "world_size": W}
        refs.append(RslPPO(actor, critic, storage, learning_rate=1e-3, multi_gpu_cfg=multi_gpu))
    lrs: list[list[float]] = [[] for _ in range(W)]
    for it in range(ITERS_W):
        rng = []
        for rank, ref in enumerate(refs):  # rollouts touch no collective: one after the other
            data_seed, action_seed = _rank_seeds(rank, it)
            _collect(ref, scripted_rollout(N, T, DIMS, seed=data_seed), seed=action_seed)
            rng.append(torch.get_rng_state())

        def update(rank: int, state: torch.Tensor) -> None:
            torch.set_rng_state(state)  # this rank's RNG, as in its own process
            refs[rank].update()
            lrs[rank].append(refs[rank].learning_rate)

        ranks.run([lambda r=r, s=s: update(r, s) for r, s in enumerate(rng)])
    # per mini-batch: KL all-reduce, LR broadcast, gradient all-reduce
    assert ranks.calls == 3 * 5 * 4 * ITERS_W
    return refs, lrs


def test_two_ranks_match_rsl_rl_multi_gpu_bitwise(monkeypatch):
    """The `rsl_rl` preset on 2 gloo ranks (each its own env data) against RSL-RL's own
    multi-GPU path: the same LR sequence, rounded to float32 by RSL-RL's LR broadcast, hence
    bit-identical parameters and Adam state on every rank."""
    from unilab_dist.testing import run_distributed

    results = run_distributed(_unilab_rank, W, timeout=240)
    refs, ref_lrs = _rsl_rl_ranks(monkeypatch)
    for rank, (actor, critic, opt, lrs) in enumerate(results):
        assert lrs == ref_lrs[rank] == ref_lrs[0]
        # the broadcast's float32 rounding: the LR is a float32 value, not the float64 rule's
        assert all(lr == torch.tensor(lr, dtype=torch.float32).item() for lr in lrs)
        assert lrs[-1] != 1e-3
        ref = refs[rank]
        ra = convert_rsl_rl_state_dict(ref.actor.state_dict())
        rc = convert_rsl_rl_state_dict(ref.critic.state_dict())
        for mine, theirs in ((actor, ra), (critic, rc)):
            assert mine.keys() == theirs.keys()
            for k in mine:
                assert torch.equal(mine[k], theirs[k]), (rank, k)
        s_ref = ref.optimizer.state_dict()["state"]
        assert s_ref.keys() == opt["state"].keys()
        for i in s_ref:
            for k in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.equal(s_ref[i][k], opt["state"][i][k]), (rank, i, k)


def test_symmetry_augmentation_matches_rsl_rl_bitwise():
    """`PPOConfig.symmetry` with data augmentation against RSL-RL 5.4.2's `symmetry_cfg` on the
    same maps and data: the same parameters, Adam state, LR and losses, bit for bit."""
    sym = SymmetryConfig(data_augmentation=True)
    ref, ours, metrics = _run_pair(None, iterations=2, symmetry=sym)
    _assert_same(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy", "symmetry"):
            assert r[k] == o[k], k
        assert o["symmetry"] > 0.0


def _assert_close(ref, ours):
    ra = convert_rsl_rl_state_dict(ref.actor.state_dict())
    rc = convert_rsl_rl_state_dict(ref.critic.state_dict())
    for mine, theirs in ((ours.actor.state_dict(), ra), (ours.critic.state_dict(), rc)):
        for k in mine:
            torch.testing.assert_close(mine[k], theirs[k], rtol=1e-5, atol=1e-6, msg=k)
    assert ours.learning_rate == ref.learning_rate


@pytest.mark.parametrize("augment", [True, False])
def test_symmetry_mirror_loss_matches_rsl_rl(augment):
    """The mirror loss (with and without augmentation) against RSL-RL 5.4.2: RSL-RL runs the
    actor once more for the loss, UniLab reuses the update's forward pass (augmented) or runs
    it on the mirrored half only, so the sums differ in order: equal to float tolerance."""
    sym = SymmetryConfig(data_augmentation=augment, mirror_loss=True, mirror_loss_coef=0.5)
    ref, ours, metrics = _run_pair(None, iterations=2, symmetry=sym)
    _assert_close(ref, ours)
    for r, o in metrics:
        for k in ("value", "surrogate", "entropy", "symmetry"):
            assert o[k] == pytest.approx(r[k], rel=1e-5, abs=1e-7), k


def test_symmetry_loss_logged_only_changes_nothing():
    """Symmetry configured with both uses off: the loss is logged, the update is RSL-RL's (and
    the plain preset's) bit for bit."""
    sym = SymmetryConfig(data_augmentation=False, mirror_loss=False)
    ref, ours, metrics = _run_pair(None, iterations=1, symmetry=sym)
    _assert_same(ref, ours)
    _, plain, _ = _run_pair(None, iterations=1)
    for a, b in zip(
        ours.actor.state_dict().values(), plain.actor.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b)
    r, o = metrics[0]
    assert o["symmetry"] == pytest.approx(r["symmetry"], rel=1e-6)
