"""UniLab's runners, configs and the `unilab` command line."""

__version__ = "0.1.0"

__all__ = ["__version__"]
