"""Adapters that make other trainers data-parallel with unilab-dist.

Each module imports its trainer when it is imported itself (never from `import unilab_dist`),
and each trainer comes with an extra: `unilab_dist.contrib.rsl_rl` needs
`pip install "unilab-dist[rsl-rl]"`.
"""
