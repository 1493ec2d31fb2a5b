"""Stand-in for mediapy (video writing) so that `import mjlab` runs without matplotlib.

mjlab's `__init__` calls `mediapy.set_ffmpeg(...)` at import; the recorder writes no video.
"""


def set_ffmpeg(name: str) -> None:
    del name


def __getattr__(name: str):
    raise RuntimeError(f"mediapy.{name} is a stub in tools/parity (the recorder writes no video)")
