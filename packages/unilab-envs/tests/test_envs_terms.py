"""Tasks from terms: user-written warp terms compiled into the env's step (unilab_envs.terms)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from unilab_envs import EnvConfig, VecEnv, mdp, terms
from unilab_envs.tasks import robots
from unilab_envs.tasks.term_task import TermTask, TermTaskConfig, with_overrides
from unilab_envs.terms import EnvState

N = 3


# ----------------------------------------------------------------------- terms of the user
@wp.struct
class GainParams:
    gain: float


@wp.func
def action_energy(w: int, s: EnvState, p: GainParams) -> float:
    total = float(0.0)  # noqa: UP018 (warp: a mutable variable)
    for j in range(s.action.shape[1]):
        total += s.action[w, j] * s.action[w, j]
    return p.gain * total


@wp.struct
class StepParams:
    per_step: wp.array(dtype=float)


@terms.term(size="per_step")
@wp.func
def scaled_steps(w: int, k: int, s: EnvState, p: StepParams) -> float:
    return p.per_step[k] * float(s.episode_length[w])


@wp.struct
class CounterParams:
    count: wp.array2d(dtype=float)


@terms.term(state={"count": 2})
@wp.func
def steps_alive(w: int, s: EnvState, p: CounterParams) -> float:
    p.count[w, 0] = p.count[w, 0] + 1.0
    p.count[w, 1] = p.count[w, 1] + 2.0
    return p.count[w, 0]


@wp.func
def tilted_vector(w: int, s: EnvState) -> wp.vec3:
    return wp.vec3(0.0)


def _config(**rewards) -> TermTaskConfig:
    policy = {
        "projected_gravity": terms.ObservationTerm(func=mdp.projected_gravity),
        "joint_pos": terms.ObservationTerm(func=mdp.joint_pos_rel, scale=2.0, clip=(-0.1, 0.1)),
        "actions": terms.ObservationTerm(func=mdp.last_action),
    }
    critic = {
        **policy,
        "steps": terms.ObservationTerm(func=scaled_steps, params={"per_step": [1.0, -2.0]}),
    }
    return TermTaskConfig(
        episode_length_s=0.2,  # 10 steps
        observations={
            "policy": terms.ObservationGroup(terms=policy),
            "critic": terms.ObservationGroup(terms=critic),
        },
        rewards={
            "energy": terms.RewardTerm(func=action_energy, weight=-0.5, params={"gain": 3.0}),
            "lin_vel_z": terms.RewardTerm(func=mdp.lin_vel_z_l2, weight=-2.0),
            "unused": terms.RewardTerm(func=mdp.is_alive, weight=0.0),
            **rewards,
        },
        terminations={"time_out": terms.TerminationTerm(func=mdp.time_out, time_out=True)},
    )


def _env(config: TermTaskConfig) -> VecEnv:
    task = TermTask(robots.quadruped(), config, "quadruped-terms")
    return VecEnv(task, EnvConfig(num_envs=N, device="cpu", seed=1))


def test_user_terms_compute_their_values_in_the_step():
    env = _env(_config())
    env.reset()
    dt = env.step_dt
    assert env.task.spec.log_terms == ("energy", "lin_vel_z")  # weight 0: not computed
    for step in range(1, 4):
        action = torch.linspace(-1, 1, N * env.action_dim).reshape(N, -1) * step
        td = env.step(action)
        energy = -0.5 * 3.0 * (action**2).sum(1) * dt
        torch.testing.assert_close(td["log", "energy"], energy)
        critic, policy = td["obs", "critic"], td["obs", "policy"]
        j = env.action_dim
        assert policy.shape == (N, 3 + 2 * j) and critic.shape == (N, 5 + 2 * j)
        torch.testing.assert_close(critic[:, : 3 + 2 * j], policy)
        torch.testing.assert_close(critic[:, -2], torch.full((N,), float(step)))
        torch.testing.assert_close(critic[:, -1], torch.full((N,), -2.0 * step))
        torch.testing.assert_close(policy[:, 3 + j :], action)
        assert policy[:, 3 : 3 + j].abs().max() <= 0.2 + 1e-6  # clip, then scale
    reward = td["reward"]
    torch.testing.assert_close(reward, td["log", "energy"] + td["log", "lin_vel_z"])


def test_library_terms_match_numpy_on_the_state():
    env = _env(_config())
    env.reset()
    env.step(torch.randn(N, env.action_dim) * 0.5)
    task, d = env.task, env.ctx.data
    reward = wp.zeros(N, dtype=float)
    log = wp.zeros((2, N), dtype=float)
    flags = wp.zeros(N, dtype=wp.bool), wp.zeros(N, dtype=wp.bool)
    task.terms.evaluate(reward, *flags, log)  # on the state left after the step's forward
    b = task.env_state.root_body
    xmat = d.xmat.numpy()[:, b]
    cvel, xpos, com = d.cvel.numpy()[:, b], d.xpos.numpy()[:, b], d.subtree_com.numpy()[:, b]
    lin_w = cvel[:, 3:] - np.cross(cvel[:, :3], com - xpos)
    vz = np.einsum("nji,nj->ni", xmat, lin_w)[:, 2]
    np.testing.assert_allclose(log.numpy()[1], -2.0 * vz**2 * env.step_dt, rtol=1e-4, atol=1e-7)
    obs = {g: wp.zeros((N, dim), dtype=float) for g, dim in task.spec.observation_dims.items()}
    task.terms.observe(0, env.ctx.rng_counter, obs)
    gravity = np.einsum("nji,j->ni", xmat, np.array([0.0, 0.0, -1.0]))
    np.testing.assert_allclose(obs["policy"].numpy()[:, :3], gravity, rtol=1e-5, atol=1e-6)
    qadr, q0 = task.env_state.joint_qadr.numpy(), task.env_state.default_joint_pos.numpy()
    rel = np.clip(d.qpos.numpy()[:, qadr] - q0, -0.1, 0.1) * 2.0
    np.testing.assert_allclose(obs["policy"].numpy()[:, 3 : 3 + len(q0)], rel, atol=1e-6)


def test_term_state_is_carried_by_name_and_zeroed_at_reset():
    env = _env(_config(alive=terms.RewardTerm(func=steps_alive, weight=1.0)))
    env.reset()
    for _ in range(3):
        td = env.step(torch.zeros(N, env.action_dim))
    torch.testing.assert_close(td["log", "alive"], torch.full((N,), 3.0 * env.step_dt))
    state = env.task.state_arrays()
    assert set(state) == {"terms.rewards.alive.count"}
    np.testing.assert_array_equal(state["terms.rewards.alive.count"].numpy(), [[3.0, 6.0]] * N)
    saved = env.state_dict()
    assert "task.terms.rewards.alive.count" in saved["arrays"]
    env.step(torch.zeros(N, env.action_dim))
    env.load_state_dict(saved)
    td = env.step(torch.zeros(N, env.action_dim))
    torch.testing.assert_close(td["log", "alive"], torch.full((N,), 4.0 * env.step_dt))
    env.reset()
    np.testing.assert_array_equal(state["terms.rewards.alive.count"].numpy(), np.zeros((N, 2)))


def test_each_hook_is_one_launch_whatever_the_number_of_terms(monkeypatch):
    real, launched = wp.launch, []

    def counted(kernel, *args, **kwargs):
        launched.append(kernel)
        return real(kernel, *args, **kwargs)

    counts = []
    for config in (_config(), _config(alive=terms.RewardTerm(func=steps_alive, weight=1.0))):
        env = _env(config)
        env.reset()
        env.step(torch.zeros(N, env.action_dim))
        launched.clear()
        monkeypatch.setattr(wp, "launch", counted)
        env.task.evaluate(env.ctx, env._reward, env._terminated, env._log)
        env.task.observe(env.ctx, env._obs)
        monkeypatch.setattr(wp, "launch", real)
        counts.append(len(launched))
    assert counts == [2, 2]


def test_weights_are_runtime_data():
    a = TermTask(robots.quadruped(), _config(), "a")
    b = TermTask(
        robots.quadruped(), with_overrides(_config(), {"rewards.energy.weight": -7.0}), "b"
    )
    assert a.terms._evaluate is b.terms._evaluate  # the same compiled kernel
    env = VecEnv(b, EnvConfig(num_envs=N, device="cpu"))
    env.reset()
    action = torch.ones(N, env.action_dim)
    first = env.step(action)["log", "energy"]
    env.task.terms.set_weight("energy", -14.0)
    torch.testing.assert_close(env.step(action)["log", "energy"], 2 * first)


def test_overrides_remove_and_change_terms():
    config = with_overrides(
        _config(), {"rewards.lin_vel_z": None, "rewards.energy.params.gain": 5.0}
    )
    assert set(config.rewards) == {"energy", "unused"}
    assert config.rewards["energy"].params == {"gain": 5.0}
    assert TermTask(robots.quadruped(), config, "t").spec.log_terms == ("energy",)
    with pytest.raises(KeyError, match="did you mean 'lin_vel_z'"):
        with_overrides(_config(), {"rewards.lin_vel_zz.weight": 1.0})
    with pytest.raises(KeyError, match="did you mean 'weight'"):
        with_overrides(_config(), {"rewards.energy.wieght": 1.0})
    with pytest.raises(KeyError, match="did you mean 'lin_vel_z_l2'"):
        mdp.get("lin_vel_z")


def test_a_term_with_a_wrong_signature_is_refused_at_build():
    bad = _config(tilt=terms.RewardTerm(func=tilted_vector, weight=1.0))
    with pytest.raises(
        ValueError,
        match=r"rewards\.tilt: reward term tilted_vector has the "
        r"signature \(int, EnvState\) -> vec3f; expected \(w: int, s: EnvState",
    ):
        TermTask(robots.quadruped(), bad, "t")
    with pytest.raises(ValueError, match=r"rewards\.plain: .* is not a warp function"):
        TermTask(robots.quadruped(), _config(plain=terms.RewardTerm(func=len, weight=1.0)), "t")
    missing = _config(energy=terms.RewardTerm(func=action_energy, weight=1.0, params={"gian": 1}))
    with pytest.raises(ValueError, match=r"rewards\.energy: .* has no parameters \['gian'\]"):
        TermTask(robots.quadruped(), missing, "t")


def test_parameters_by_name_pattern():
    robot = robots.quadruped()
    legs = {r".*hip.*": 0.1, r".*thigh.*": 0.2, r".*calf.*": 0.3}
    config = _config(
        upright=terms.RewardTerm(
            func=mdp.upright, weight=1.0, params={"std": 0.5, "body": terms.Bodies(robot.base_body)}
        ),
    )
    task = TermTask(robot, config, "t")
    VecEnv(task, EnvConfig(num_envs=1, device="cpu"))
    names = task.terms.scene.names(terms.Joints(legs))
    values = terms.Joints(legs).values(names)
    assert len(values) == robot.num_joints and set(values) <= {0.1, 0.2, 0.3}
    with pytest.raises(ValueError, match="matches 0 of the patterns"):
        terms.Joints({r".*hip.*": 0.1}).values(names)
    wrong = with_overrides(config, {"rewards.upright.params.body": terms.Bodies("trunkk")})
    with pytest.raises(ValueError, match="no body matches 'trunkk'; closest: \\['trunk'\\]"):
        VecEnv(TermTask(robot, wrong, "t"), EnvConfig(num_envs=1, device="cpu"))


def test_the_mjlab_tasks_take_terms_of_the_user():
    from unilab_envs import make_task
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    own = make_task("go1-velocity-flat").spec
    task = make_task(
        "go1-velocity-flat",
        rewards={
            "foot_slip": None,
            "energy": terms.RewardTerm(func=action_energy, weight=-1.0, params={"gain": 1.0}),
        },
        observations={"policy": {"command": None}},
    )
    assert task.spec.log_terms == (*(t for t in own.log_terms if t != "foot_slip"), "energy")
    assert task.spec.observation_dims["policy"] == own.observation_dims["policy"] - 3
    with pytest.raises(KeyError, match="did you mean 'foot_slip'"):
        make_task("go1-velocity-flat", rewards={"foot_slp": None})
    rough = make_task("go1-velocity-rough", rewards={"shank_collision": None}).spec.log_terms
    assert "trunk_head_collision" in rough and "shank_collision" not in rough


def test_an_mjlab_weight_changes_no_generated_kernel():
    from unilab_envs import make_task
    from unilab_envs.testing import mjlab_robot

    mjlab_robot("go1")
    a, b = make_task("go1-velocity-flat"), make_task("go1-velocity-flat", w_pose=3.0)
    assert a.terms._evaluate is b.terms._evaluate and a.terms._observe is b.terms._observe
    c = make_task("go1-velocity-flat", w_foot_slip=0.0)  # a removed term: another kernel
    assert c.terms._evaluate is not a.terms._evaluate and "foot_slip" not in c.spec.log_terms
