"""Loading a knowledge graph: wall time and peak memory of the chunked loader against the loader it
replaced, on integer-id graphs (udd_hrt) generated here, and the Freebase shape estimated from them.

Each load runs in a child process that reports its peak RSS (VmHWM) and the load's time alone
(after the imports). The new loader is measured twice: parsing (its cache removed first) and reading
its cache. The old loader is the one in the commit before the chunked one (`--old_ref`), loaded from
`git show`. Prints `key: value` lines; bytes per triple are the peak RSS over the triples loaded.

    python benchmarks/kge_load.py [--tiers 1000000:10000000 2000000:20000000 4000000:10000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FREEBASE = (86_054_151, 14_824, 338_586_276)  # entities, relations, triples
RELATIONS = 1000
CHILD = """
import importlib, importlib.util, json, sys, time
if sys.argv[1].endswith(".py"):
    spec = importlib.util.spec_from_file_location("loader", sys.argv[1])
    loader = sys.modules["loader"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
else:
    loader = importlib.import_module(sys.argv[1])
t = time.perf_counter()
data = loader.load_dataset(sys.argv[2], "bench", "udd_hrt", sys.argv[3:])
took = time.perf_counter() - t
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024
triples = sum(len(a) for a in (data.train, data.valid, data.test))
print(json.dumps({"load_s": took, "triples": triples, "peak_rss": peak}))
"""


def _text(columns: list[np.ndarray]) -> bytes:
    """Rows of non-negative integers, tab-separated, one a line (vectorised)."""
    parts = []
    for c, v in enumerate(columns):
        width = len(str(int(v.max())))
        power = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        digits = np.where((v[:, None] >= power) | (power == 1), v[:, None] // power % 10 + 48, 0)
        parts += [digits.astype(np.uint8), np.full((len(v), 1), 9 if c < len(columns) - 1 else 10, dtype=np.uint8)]
    rows = np.concatenate(parts, 1)
    return rows[rows != 0].tobytes()


def generate(folder: Path, entities: int, triples: int, seed: int = 0) -> list[str]:
    """A udd_hrt graph: entities.tsv, relations.tsv (id<TAB>name), train/valid/test.tsv of random
    triples (1% each for valid and test); the --data_files list."""
    gen = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, count, prefix in (("entities.tsv", entities, 101), ("relations.tsv", RELATIONS, 114)):
        with open(folder / name, "wb") as f:
            for i in range(0, count, 1 << 20):
                ids = np.arange(i, min(i + (1 << 20), count))
                f.write(_text([ids, ids]).replace(b"\t", b"\t" + bytes([prefix])))  # "7<TAB>e7"
    held = max(1, triples // 100)
    for name, count in (("train.tsv", triples - 2 * held), ("valid.tsv", held), ("test.tsv", held)):
        with open(folder / name, "wb") as f:
            for i in range(0, count, 1 << 20):
                n = min(1 << 20, count - i)
                f.write(_text([gen.integers(0, entities, n), gen.integers(0, RELATIONS, n),
                               gen.integers(0, entities, n)]))
    return ["entities.tsv", "relations.tsv", "train.tsv", "valid.tsv", "test.tsv"]


def measure(loader: str, folder: Path, files: list[str]) -> dict:
    """One load in a child process (`loader`: a module's name or file): its time, triples and peak RSS
    in bytes (the child's own VmHWM: a child's ru_maxrss counts the RSS of the process it was forked from)."""
    t = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", CHILD, loader, str(folder), *files], stdout=subprocess.PIPE,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    if child.returncode:
        raise SystemExit(f"the load in {folder} failed (exit code {child.returncode})")
    return {**json.loads(child.stdout), "process_s": time.perf_counter() - t}


def old_loader(ref: str | None, folder: Path) -> Path:
    """The loader before the chunked one, as a module file."""
    if ref is None:
        added = ["git", "log", "--format=%H", "--diff-filter=A", "--", "src/distgraph/kge/data/names.py"]
        first = subprocess.run(added, cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
        ref = f"{first[-1]}^" if first else "HEAD"
    text = subprocess.run(["git", "show", f"{ref}:src/distgraph/kge/data/formats.py"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    path = folder / "old_formats.py"
    path.write_text(text.replace("from ...errors import InputError", "from distgraph.errors import InputError"))
    return path


def _short(n: int) -> str:
    return f"{n // 10 ** 6}M" if n % 10 ** 6 == 0 else f"{n // 1000}k"


def _fit(points: list[tuple[int, int, float]]) -> np.ndarray:
    """(base, per entity, per triple) of peak = base + a * entities + b * triples, least squares."""
    a = np.array([[1.0, e, t] for e, t, _ in points])
    return np.linalg.lstsq(a, np.array([p for _, _, p in points]), rcond=None)[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiers", nargs="+", default=["1000000:10000000", "2000000:20000000", "4000000:10000000"],
                   help="ENTITIES:TRIPLES of each graph (at least 3 tiers of two ratios for the Freebase estimate)")
    p.add_argument("--workdir", help="where the graphs go (default: a temporary folder, removed at the end)")
    p.add_argument("--old_ref", help="git commit whose kge/data/formats.py is the old loader (default: the parent "
                                     "of the commit that added kge/data/names.py)")
    p.add_argument("--skip_old", action="store_true", help="measure the new loader only")
    args = p.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kge-load-bench-"))
    new = "distgraph.kge.data.formats"
    old = None if args.skip_old else old_loader(args.old_ref, Path(tempfile.mkdtemp(prefix="kge-old-loader-")))
    points: dict[str, list] = {"old": [], "new": []}
    try:
        for tier in args.tiers:
            entities, triples = (int(x) for x in tier.split(":"))
            name = f"{_short(entities)}x{_short(triples)}"
            folder = work / name
            t = time.perf_counter()
            files = generate(folder, entities, triples)
            print(f"{name}_generate_s: {time.perf_counter() - t:.1f}", flush=True)
            runs = [("old", old)] if old else []
            runs += [("new_parse", new), ("new_cached", new)]
            for label, loader in runs:
                if label == "new_parse":
                    shutil.rmtree(folder / ".distgraph-cache", ignore_errors=True)
                r = measure(str(loader), folder, files)
                for key, value in (("load_s", f"{r['load_s']:.2f}"), ("process_s", f"{r['process_s']:.2f}"),
                                   ("peak_rss_mib", f"{r['peak_rss'] / 2 ** 20:.0f}"),
                                   ("bytes_per_triple", f"{r['peak_rss'] / r['triples']:.1f}")):
                    print(f"{name}_{label}_{key}: {value}", flush=True)
                if label in ("old", "new_parse"):
                    points[label.split("_")[0]].append((entities, triples, r["peak_rss"]))
            shutil.rmtree(folder)
        e, _, t = FREEBASE
        for label, pts in points.items():
            if len({(a / b) for a, b, _ in pts}) >= 2:
                base, per_entity, per_triple = _fit(pts)
                print(f"{label}_fit_base_mib: {base / 2 ** 20:.0f}")
                print(f"{label}_fit_bytes_per_entity: {per_entity:.1f}")
                print(f"{label}_fit_bytes_per_triple: {per_triple:.1f}")
                estimate = (base + per_entity * e + per_triple * t) / 2 ** 30
                print(f"{label}_freebase_peak_rss_gib_estimate: {estimate:.2f}")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        if old:
            shutil.rmtree(old.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
