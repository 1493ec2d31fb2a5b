"""The training defaults of MJLab's velocity tasks are MJLab 1.6.0's RSL-RL runner configs
(`unitree_go1_ppo_runner_cfg`, `unitree_g1_ppo_runner_cfg`): network sizes, PPO settings, envs,
steps; and its train script's random episode start."""

from unilab_integration import make_config


def test_training_defaults_are_mjlabs():
    cfg = make_config("go1-velocity-flat", "ppo")
    a = cfg.algo
    assert cfg.env.num_envs == 4096 and cfg.runner.num_steps_per_env == 24
    assert cfg.runner.iterations == 10_000 and cfg.runner.checkpoints.interval == 50
    assert a.actor.hidden == (512, 256, 128) == a.critic.hidden
    assert a.actor.activation == a.critic.activation == "elu"
    assert a.actor.normalize_obs and a.critic.normalize_obs
    assert a.policy.init_std == 1.0 and a.policy.std_param == "std"
    assert (a.learning_rate, a.num_epochs, a.num_mini_batches) == (1e-3, 5, 4)
    assert (a.clip_param, a.entropy_coef, a.value_loss_coef) == (0.2, 0.01, 1.0)
    assert (a.gamma, a.lam, a.desired_kl, a.max_grad_norm) == (0.99, 0.95, 0.01, 1.0)
    assert a.schedule == "adaptive" and a.use_clipped_value_loss
    # scripts/train.py: runner.learn(..., init_at_random_ep_len=True)
    assert cfg.runner.random_episode_start
    for task in ("g1-velocity-flat", "go1-velocity-rough", "g1-velocity-rough"):
        assert make_config(task, "ppo").runner.random_episode_start
    for task in ("quadruped-velocity", "humanoid-velocity", "cartpole-balance"):
        assert not make_config(task, "ppo").runner.random_episode_start


def test_g1_training_defaults_are_mjlabs():
    g1, go1 = make_config("g1-velocity-flat", "ppo"), make_config("go1-velocity-flat", "ppo")
    # unitree_g1_ppo_runner_cfg: unitree_go1_ppo_runner_cfg's values, 30k iterations
    assert g1.runner.iterations == 30_000 and go1.runner.iterations == 10_000
    assert g1.algo == go1.algo
    assert g1.env.num_envs == 4096 and g1.runner.num_steps_per_env == 24
    assert g1.runner.checkpoints.interval == 50
