"""Carry warp's kernel cache from one lent GPU machine to the next.

    python3 tools/bench/warp_cache.py pack DEST [--cache ~/.cache/warp] [--part-mib 15]
    python3 tools/bench/warp_cache.py unpack SRC [--cache ~/.cache/warp]

A fresh machine compiles every kernel a run launches before its first iteration: on one H200,
260 s for UniLab's `go1-velocity-rough` and 409 s for MJLab's rough Go1 (docs/benchmarks/
rough-terrain.md), against 38 s for UniLab's with the cache warm. Warp keeps what it compiled
in its kernel cache (`~/.cache/warp/<warp version>/<module>_<hash>/`: the binary for the
device's architecture and its metadata) and compiles a module again only when its binary is
missing, so a cache made on a machine with the same GPU architecture and warp version spares
the next one the compilation.

`pack` writes the cache folder as one gzip'd tar split into parts of at most `--part-mib` MiB
(`DEST/warp_cache.tgz.00`, `.01`, ...; a lease call returns at most 8 files of 16 MiB each);
it prints the module count and the parts' sizes. `unpack` joins `SRC/warp_cache.tgz.*` in
order and extracts them into the cache folder, keeping every file already there (a module
compiled on this machine wins); it refuses members that would land outside the folder. Both
need only the standard library. The cache folder is `--cache`, default `~/.cache/warp` (the
folder that holds warp's per-version folders).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tarfile
from pathlib import Path

PREFIX = "warp_cache.tgz"
DEFAULT_CACHE = Path.home() / ".cache" / "warp"


def _modules(root: Path) -> int:
    """Module folders below the cache root (`<version>/<module>_<hash>/`)."""
    return sum(1 for v in root.iterdir() if v.is_dir() for m in v.iterdir() if m.is_dir())


def pack(cache: Path, dest: Path, part_mib: float = 15.0) -> list[Path]:
    """The cache under `cache` as `dest/warp_cache.tgz.NN` parts; returns their paths."""
    if not cache.is_dir():
        raise SystemExit(f"warp_cache pack: no cache folder {cache} (has warp compiled here?)")
    if part_mib <= 0:
        raise SystemExit(f"warp_cache pack: --part-mib must be > 0, got {part_mib}")
    dest.mkdir(parents=True, exist_ok=True)
    stale = sorted(dest.glob(f"{PREFIX}.*"))
    if stale:
        raise SystemExit(f"warp_cache pack: {dest} already holds {stale[0].name}; use another DEST")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(cache.rglob("*")):
            if path.is_file() and not path.is_symlink():
                tar.add(path, arcname=str(path.relative_to(cache)), recursive=False)
    data, size = buf.getvalue(), int(part_mib * 2**20)
    parts = []
    for i, start in enumerate(range(0, max(len(data), 1), size)):
        part = dest / f"{PREFIX}.{i:02d}"
        part.write_bytes(data[start : start + size])
        parts.append(part)
    print(
        f"packed {_modules(cache)} warp modules from {cache}: {len(data) / 2**20:.1f} MiB in "
        f"{len(parts)} part(s) ({', '.join(p.name for p in parts)})",
        flush=True,
    )
    return parts


def unpack(src: Path, cache: Path) -> int:
    """Extract `src/warp_cache.tgz.*` into `cache`, keeping existing files; returns files added."""
    parts = sorted(src.glob(f"{PREFIX}.*"))
    if not parts:
        raise SystemExit(f"warp_cache unpack: no {PREFIX}.* in {src} (made by `pack`)")
    data = b"".join(p.read_bytes() for p in parts)
    cache.mkdir(parents=True, exist_ok=True)
    root = cache.resolve()
    added = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            if not member.isfile() or root not in target.parents:
                raise SystemExit(f"warp_cache unpack: refusing member {member.name!r}")
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as f:  # type: ignore[union-attr]
                tmp = target.with_name(f".{target.name}.part{os.getpid()}")
                tmp.write_bytes(f.read())
                os.replace(tmp, target)  # a module appears whole or not at all
            added += 1
    print(
        f"unpacked {added} file(s) from {len(parts)} part(s) into {cache} "
        f"({_modules(cache)} modules there now)",
        flush=True,
    )
    return added


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    pk = sub.add_parser("pack", help="the cache as gzip'd tar parts in DEST")
    pk.add_argument("dest", type=Path)
    pk.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    pk.add_argument("--part-mib", type=float, default=15.0)
    up = sub.add_parser("unpack", help="the parts in SRC into the cache")
    up.add_argument("src", type=Path)
    up.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args(argv)
    if args.command == "pack":
        pack(args.cache, args.dest, args.part_mib)
    elif args.command == "unpack":
        unpack(args.src, args.cache)
    else:
        ap.print_help()
        sys.exit(2)


if __name__ == "__main__":
    main()
