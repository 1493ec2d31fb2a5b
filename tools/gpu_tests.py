"""Run every `gpu` / `multigpu` test of every package and record the summary.

    python3 tools/gpu_tests.py --commit "$(git rev-parse --short HEAD)"   # on the GPU machine
    python3 -m nox -s gpu -- --commit ...                                  # the same, through nox

For each package (dist, storage, algos, envs, launch, integration) it runs
`python -m pytest <package>/tests -m "gpu or multigpu"` with a JUnit XML report, counts passed,
failed (errors included) and skipped tests, and writes `docs/benchmarks/gpu-tests.md` (or
`--out`): the date, the commit, the GPUs, torch and CUDA versions, a table per package and the
reason of every skip and failure. The summary table is printed last. It uses the current Python
environment (every UniLab package installed, e.g. by `tools/install.py`). The exit status is 1
if any test failed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "dist": ROOT / "packages" / "unilab-dist",
    "storage": ROOT / "packages" / "unilab-storage",
    "algos": ROOT / "packages" / "unilab-algos",
    "envs": ROOT / "packages" / "unilab-envs",
    "launch": ROOT / "packages" / "unilab-launch",
    "integration": ROOT / "integration",
}
MARKERS = "gpu or multigpu"


def summarize(junit_xml: str | os.PathLike) -> dict:
    """Counts and notes of one pytest JUnit XML report.

    Returns {"passed", "failed", "skipped": int, "notes": [(test id, "skipped"|"failed",
    message)]}; errors count as failures.
    """
    root = ET.parse(junit_xml).getroot()
    out = {"passed": 0, "failed": 0, "skipped": 0, "notes": []}
    for case in root.iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        message = ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message", "") or (child.text or "")
                break
            if child.tag == "skipped":
                outcome, message = "skipped", child.get("message", "")
        out[outcome] += 1
        if outcome != "passed":
            out["notes"].append((test_id, outcome, " ".join(message.split())[:300]))
    return out


def render(results: dict[str, dict], header: dict[str, str]) -> str:
    """The Markdown page of one run: header facts, a table per package, skip/failure notes."""
    lines = [
        "# GPU tests",
        "",
        "Written by `tools/gpu_tests.py` (`python3 -m nox -s gpu`) each time it runs on the GPU",
        'machine: every test marked `gpu` or `multigpu` (`pytest -m "gpu or multigpu"`), package',
        "by package. The last run:",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in header.items()]
    lines += ["", "| package | passed | failed | skipped |", "|---|---|---|---|"]
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for name, res in results.items():
        lines.append(f"| {name} | {res['passed']} | {res['failed']} | {res['skipped']} |")
        for key in total:
            total[key] += res[key]
    lines.append(f"| all | {total['passed']} | {total['failed']} | {total['skipped']} |")
    notes = [(name, *note) for name, res in results.items() for note in res["notes"]]
    if notes:
        lines += ["", "Skipped and failed:", ""]
        lines += [
            f"- {name}: `{test}` {outcome}: {message}" for name, test, outcome, message in notes
        ]
    return "\n".join(lines) + "\n"


def _machine() -> dict[str, str]:
    try:
        import torch
    except ImportError:
        return {"GPU": "torch not importable"}
    if not torch.cuda.is_available():
        gpus = "none visible"
    else:
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        gpus = f"{len(names)}x {names[0]}" if len(set(names)) == 1 else ", ".join(names)
    return {"GPU": gpus, "torch": torch.__version__, "CUDA": str(torch.version.cuda)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commit", help="the commit tested (default: git rev-parse --short HEAD)")
    p.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "gpu-tests.md"))
    p.add_argument("--reports", default="/tmp/unilab-gpu-tests", help="folder of the JUnit XMLs")
    p.add_argument("--packages", nargs="*", default=list(PACKAGES), choices=list(PACKAGES))
    args = p.parse_args(argv)
    commit = args.commit
    if commit is None:
        try:
            commit = subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown (pass --commit)"
    reports = Path(args.reports)
    reports.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    for name in args.packages:
        xml = reports / f"{name}.xml"
        xml.unlink(missing_ok=True)
        print(f"== {name}: pytest -m '{MARKERS}'", flush=True)
        cmd = [sys.executable, "-m", "pytest", str(PACKAGES[name] / "tests"), "-m", MARKERS]
        cmd += ["-q", "-rfEs", f"--junitxml={xml}", "-p", "no:cacheprovider"]
        subprocess.run(cmd, cwd=PACKAGES[name], check=False)
        if xml.is_file():
            results[name] = summarize(xml)
        else:  # pytest died before writing its report (e.g. a collection crash)
            results[name] = {"passed": 0, "failed": 1, "skipped": 0, "notes": []}
            results[name]["notes"].append(("(session)", "failed", "pytest wrote no report"))
    header = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        **_machine(),
        "command": f"python3 tools/gpu_tests.py --commit {commit}"
        + ("" if args.packages == list(PACKAGES) else f" --packages {' '.join(args.packages)}"),
    }
    page = render(results, header)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(page)
    print(page)
    return 1 if any(r["failed"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
