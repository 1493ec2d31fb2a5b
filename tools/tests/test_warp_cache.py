"""tools/bench/warp_cache.py: the kernel cache packed into parts and unpacked elsewhere."""

import io
import os
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import warp_cache  # noqa: E402


def _cache(root: Path) -> dict[str, bytes]:
    files = {
        "1.19.0/wp_mod_a_1234/wp_mod_a_1234.sm90.cubin": os.urandom(5000),
        "1.19.0/wp_mod_a_1234/wp_mod_a_1234.meta": b'{"shared": 0}',
        "1.19.0/wp_mod_b_5678/wp_mod_b_5678.sm90.cubin": os.urandom(3000),
        "1.19.0/wp_mod_b_5678/wp_mod_b_5678.meta": b"{}",
        "1.18.1/wp_old_9/wp_old_9.sm90.cubin": b"old",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def _read(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_cache_packed_in_parts_unpacks_whole_and_keeps_what_is_there(tmp_path, capsys):
    files = _cache(tmp_path / "cache")
    parts = warp_cache.pack(tmp_path / "cache", tmp_path / "out", part_mib=2000 / 2**20)
    assert len(parts) >= 3 and all(p.stat().st_size <= 2000 for p in parts)  # random data
    assert [p.name for p in parts] == [f"warp_cache.tgz.{i:02d}" for i in range(len(parts))]
    assert "packed 3 warp modules" in capsys.readouterr().out

    other = tmp_path / "other"
    (other / "1.19.0" / "wp_mod_b_5678").mkdir(parents=True)
    mine = other / "1.19.0" / "wp_mod_b_5678" / "wp_mod_b_5678.sm90.cubin"
    mine.write_bytes(b"compiled here")
    added = warp_cache.unpack(tmp_path / "out", other)
    assert added == len(files) - 1
    got = _read(other)
    assert got[str(mine.relative_to(other))] == b"compiled here"  # an existing file is kept
    del got[str(mine.relative_to(other))]
    assert got == {k: v for k, v in files.items() if k != str(mine.relative_to(other))}
    assert warp_cache.unpack(tmp_path / "out", other) == 0  # a second unpack adds nothing


def test_pack_and_unpack_refuse_what_would_lose_or_misplace_files(tmp_path):
    with pytest.raises(SystemExit, match="no cache folder"):
        warp_cache.pack(tmp_path / "missing", tmp_path / "out")
    _cache(tmp_path / "cache")
    warp_cache.pack(tmp_path / "cache", tmp_path / "out")
    with pytest.raises(SystemExit, match=r"already holds warp_cache\.tgz\.00"):
        warp_cache.pack(tmp_path / "cache", tmp_path / "out")  # never mixes two packs' parts
    with pytest.raises(SystemExit, match=r"no warp_cache\.tgz"):
        warp_cache.unpack(tmp_path / "empty", tmp_path / "dest")

    evil = tmp_path / "evil"
    evil.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    (evil / "warp_cache.tgz.00").write_bytes(buf.getvalue())
    with pytest.raises(SystemExit, match=r"refusing member '\.\./outside\.txt'"):
        warp_cache.unpack(evil, tmp_path / "dest")
    assert not (tmp_path / "outside.txt").exists()
