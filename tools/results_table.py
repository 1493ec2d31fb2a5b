"""Write README's results table and each benchmark page's history from docs/benchmarks/results.json.

    python3 tools/results_table.py            # rewrite the tables in place
    python3 tools/results_table.py --check    # exit 1 naming each table that differs

results.json holds one entry per measured claim (`id`, `what`, `value` (a number or a
[low, high] range), `unit`, `gpu`, `date`, `commit`, `versions` (per side compared: torch, warp,
mujoco-warp, ...), `command`, `data` (relative to docs/benchmarks), `page`, `readme`).
README.md gets the claims with `readme: true` between `<!-- results:begin -->` and
`<!-- results:end -->`; every page in docs/benchmarks gets the claims whose `page` it is between
`<!-- history:begin -->` and `<!-- history:end -->`. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "benchmarks"
RESULTS = BENCH / "results.json"
KEYS = ("id", "what", "value", "unit", "gpu", "date", "commit", "versions", "command", "data")
KEYS += ("page", "readme")
NAMES = {"unilab": "UniLab", "mjlab": "MJLab", "rsl_rl": "RSL-RL"}


def load_claims(path: Path = RESULTS) -> list[dict]:
    """The claims of `path`, checked: every key present, ids unique, a comparison with MJLab
    naming the mujoco-warp version of both sides. SystemExit naming the claim otherwise."""
    claims = json.loads(path.read_text())["claims"]
    seen: set[str] = set()
    for c in claims:
        missing = [k for k in KEYS if k not in c]
        if missing:
            raise SystemExit(f"{path.name}: claim {c.get('id')!r} lacks {missing}")
        if c["id"] in seen:
            raise SystemExit(f"{path.name}: claim id {c['id']!r} appears twice")
        seen.add(c["id"])
        if "mjlab" in c["versions"]:
            sides = [s for s, v in c["versions"].items() if "mujoco_warp" not in v]
            if sides or len(c["versions"]) < 2:
                raise SystemExit(
                    f"{path.name}: claim {c['id']!r} compares with MJLab: give "
                    "versions.<side>.mujoco_warp for UniLab and for MJLab"
                )
    return claims


def fmt_number(x: float) -> str:
    """12345 -> '12,345'; 0.974 -> '0.974'; 3.0 -> '3'."""
    if float(x).is_integer() and abs(x) >= 1:
        return f"{int(x):,}"
    return f"{x:g}"


def decimals(x: float) -> int:
    text = repr(float(x))
    return 0 if "e" in text else len(text.split(".")[1].rstrip("0"))


def fmt_value(c: dict) -> str:
    """'686,957 env-steps/s', '2.25-3.24x', '0.010-0.013 time-limit fraction' (a range's ends
    get the same number of decimals)."""
    v = c["value"]
    if isinstance(v, list) and not all(float(x).is_integer() for x in v):
        d = max(decimals(x) for x in v)
        text = f"{v[0]:.{d}f}-{v[1]:.{d}f}"
    elif isinstance(v, list):
        text = f"{fmt_number(v[0])}-{fmt_number(v[1])}"
    else:
        text = fmt_number(v)
    unit = c["unit"]
    return f"{text}{unit}" if unit == "x" else f"{text} {unit}"


def fmt_versions(c: dict) -> str:
    """'UniLab: torch 2.11.0+cu130, mujoco-warp 4.0.0; MJLab: ...'."""
    parts = []
    for side, v in c["versions"].items():
        name = NAMES.get(side, side)
        items = ", ".join(f"{k.replace('_', '-')} {ver}" for k, ver in v.items())
        parts.append(f"{name}: {items}")
    return "; ".join(parts)


def fmt_engines(c: dict) -> str:
    """The mujoco-warp version of each side: '4.0.0', or 'UniLab 4.0.0, MJLab 3.11.0'."""
    sides = {s: v["mujoco_warp"] for s, v in c["versions"].items() if "mujoco_warp" in v}
    if len(sides) == 1:
        return next(iter(sides.values()))
    return ", ".join(f"{NAMES.get(s, s)} {ver}" for s, ver in sides.items()) or "-"


def readme_table(claims: list[dict]) -> str:
    """README's table: the claims with `readme: true`, each by its `label` (else `what`)."""
    rows = ["| result | value | measured | mujoco-warp | page |", "|---|---|---|---|---|"]
    for c in claims:
        if c["readme"]:
            page = f"[{c['page']}](docs/benchmarks/{c['page']})"
            rows.append(
                f"| {c.get('label', c['what'])} | **{fmt_value(c)}** | {c['gpu']}, {c['date']}, "
                f"`{c['commit']}` | {fmt_engines(c)} | {page} |"
            )
    return "\n".join(rows)


def history_table(claims: list[dict], page: str) -> str:
    rows = ["| claim | result | date | commit | GPU | software | data |", "|---" * 7 + "|"]
    for c in claims:
        if c["page"] == page:
            rows.append(
                f"| `{c['id']}`: {c['what']} | **{fmt_value(c)}** | {c['date']} | "
                f"`{c['commit']}` | {c['gpu']} | {fmt_versions(c)} | [{Path(c['data']).name}]"
                f"({c['data']}) |"
            )
    return "\n".join(rows)


def replace_between(text: str, name: str, body: str) -> str | None:
    """`text` with the part between `<!-- name:begin -->` and `<!-- name:end -->` replaced by
    `body`; None when the markers are missing."""
    pattern = re.compile(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def render(root: Path = ROOT) -> dict[Path, str]:
    """Every file's text as it should read: README.md and each page some claim names."""
    bench = root / "docs" / "benchmarks"
    claims = load_claims(bench / "results.json")
    out: dict[Path, str] = {}
    readme = root / "README.md"
    new = replace_between(readme.read_text(), "results", readme_table(claims))
    if new is None:
        raise SystemExit("README.md: no <!-- results:begin --> / <!-- results:end --> markers")
    out[readme] = new
    for page in sorted({c["page"] for c in claims}):
        path = bench / page
        if not path.is_file():
            raise SystemExit(f"results.json names page {page!r}, which docs/benchmarks lacks")
        new = replace_between(path.read_text(), "history", history_table(claims, page))
        if new is None:
            raise SystemExit(f"docs/benchmarks/{page}: no <!-- history:begin --> markers")
        out[path] = new
    for c in claims:
        if not (bench / c["data"]).is_file():
            raise SystemExit(f"claim {c['id']!r}: data file docs/benchmarks/{c['data']} missing")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only report tables that differ")
    args = ap.parse_args(argv)
    stale = []
    for path, text in render().items():
        if path.read_text() != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text)
    if args.check and stale:
        names = ", ".join(map(str, stale))
        print(f"results tables out of date in {names}: run python3 tools/results_table.py")
        return 1
    print(("rewrote " if stale else "up to date: ") + (", ".join(map(str, stale)) or "all"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
