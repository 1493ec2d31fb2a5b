"""On-policy (PPO, Student-Teacher Distillation) and off-policy (FastSAC) learners whose
distributed behaviour is injected (`grad_sync`, reducers); `None` means one process."""

__version__ = "0.1.0"

__all__ = ["__version__"]
