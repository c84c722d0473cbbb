"""DGL's own example scripts at v2.1.0, v2.4.0 and the default branch, read from a DGL clone
(`DGL_GIT_DIR`) and changed in their import lines only, run on small generated inputs: the
partitioning scripts write partitions from OGB-layout folders, and the training scripts train
on what they wrote, launched on 2 loopback machines. `CASES` says what each must do; docs/
porting.md's table ("DGL's example scripts, import lines changed") must say the same, so a
script that starts failing, or starts working, fails this module until both say so."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from distgraph.data import generate_mag, generate_sbm
from test_ogb import write_csv

from .conftest import child_env

pytestmark = pytest.mark.multiprocess

DGL_GIT_DIR = os.environ.get("DGL_GIT_DIR")
PORTING = Path(__file__).resolve().parents[2] / "docs" / "porting.md"
SECTION = "## DGL's example scripts, import lines changed"
REFS = {"v2.1.0": "v2.1.0", "v2.4.0": "v2.4.0", "default branch": "master"}  # as the table names them: git ref
# the folders a script may import from (DGL's GraphSAGE scripts import ../load_graph.py)
FOLDERS = ("examples/distributed/graphsage", "examples/distributed/rgcn", "examples/pytorch/graphsage",
           "examples/pytorch/graphsage/dist", "examples/pytorch/rgcn/experimental")
# import lines as a user changes them; `dgl.distributed` stays reachable as `dgl.distributed`
IMPORTS = [
    (re.compile(r"^(\s*)from ogb\.nodeproppred import DglNodePropPredDataset", re.M),
     r"\1from distgraph.data import DglNodePropPredDataset"),
    (re.compile(r"^(\s*)import dgl\.([\w.]+) as (\w+)$", re.M), r"\1import distgraph.\2 as \3"),
    (re.compile(r"^(\s*)import dgl(\.distributed)?$", re.M), r"\1import distgraph as dgl"),
    (re.compile(r"^(\s*)from dgl(\.[\w.]+)? import ", re.M), r"\1from distgraph\2 import "),
]
RUNS = "runs"
DIFFERS = "runs with a noted difference"
FAILS = "does not run"
TRAINED = "Epoch"  # what every training script prints as it trains

SAGE_PART = "examples/distributed/graphsage/partition_graph.py"
SAGE_NC = "examples/distributed/graphsage/node_classification.py"
SAGE_UNSUP = "examples/distributed/graphsage/node_classification_unsupervised.py"
DIST_PART = "examples/pytorch/graphsage/dist/partition_graph.py"
TRAIN_DIST = "examples/pytorch/graphsage/dist/train_dist.py"
TRANSDUCTIVE = "examples/pytorch/graphsage/dist/train_dist_transductive.py"
UNSUP = "examples/pytorch/graphsage/dist/train_dist_unsupervised.py"
UNSUP_TRANSDUCTIVE = "examples/pytorch/graphsage/dist/train_dist_unsupervised_transductive.py"
RGCN_EXP_PART = "examples/pytorch/rgcn/experimental/partition_graph.py"
ENTITY = "examples/pytorch/rgcn/experimental/entity_classify_dist.py"
RGCN_PART = "examples/distributed/rgcn/partition_graph.py"
RGCN_NC = "examples/distributed/rgcn/node_classification.py"
LP_PERF = "examples/distributed/rgcn/lp_perf.py"

# the READMEs' flags, with 2 parts, few epochs and small batches
BALANCED = "--num_parts 2 --balance_train --balance_edges"
PRODUCTS, PRODUCT, MAG = (f"--dataset {d} {BALANCED}" for d in ("ogbn-products", "ogb-product", "ogbn-mag"))
GRAPHBOLT = " --use_graphbolt"
SAGE = ("--graph_name ogbn-products --ip_config ip_config.txt --num_epochs 2 --eval_every 1 --batch_size 500 "
        "--batch_size_eval 1000")
SAGE_U = ("--graph_name ogbn-products --ip_config ip_config.txt --num_epochs 1 --eval_every 1 --batch_size 500 "
          "--batch_size_eval 1000 --remove_edge")
DIST = ("--graph_name ogb-product --ip_config ip_config.txt --num_epochs 2 --eval_every 1 --batch_size 500 "
        "--batch_size_eval 1000")
RGCN = ("--graph-name ogbn-mag --dataset ogbn-mag --fanout=10,10 --batch-size 256 --n-hidden 16 --lr 0.01 "
        "--eval-batch-size 256 --low-mem --dropout 0.5 --use-self-loop --n-bases 2 --n-epochs 2 --layer-norm "
        "--ip-config ip_config.txt")
SPARSE = " --sparse-embedding --sparse-lr 0.06"
LP = "--fanout=4,4 --batch-size 200 --n-epochs 1 --graph-name ogbn-mag --ip-config ip_config.txt"

# what happens, as docs/porting.md says it
SAID_ONCE = (f"{DIFFERS}: `--use_graphbolt` is accepted and changes nothing, which one line says (one "
             f"partition layout and one sampler serve both of DGL's paths)")
NO_DDP_ON_CPU = (f"{FAILS}: DGL's script fails alike on the CPU: without `--dgl_sparse` it reads "
                 f"`emb_layer.module`, which only its GPU path (DDP around the embedding) gives")
DEBUG_ALONE = (f"{FAILS}: DGL's script fails alike: `--debug` without `--remove_edge` gives `th.isin` the last "
               f"block's `edata[dgl.EID]`, a dict {{edge type: ids}} on a heterograph")
GRAPHBOLT_SAYS = "use_graphbolt: distgraph's own partitions and sampler serve both of DGL's paths"


@dataclass(frozen=True)
class Case:
    """One script at one tag: its arguments, the partitioning run of the same tag whose output
    it trains on ((script, arguments); None: it partitions), sampler processes per trainer,
    whether it needs scikit-learn, and what it does: `outcome` as docs/porting.md says it,
    and `shows`, text its output holds (for a failure, the error)."""

    tag: str
    script: str
    args: str
    outcome: str = RUNS
    partition: tuple[str, str] | None = None
    samplers: int = 0
    sklearn: bool = False
    shows: str = ""

    @property
    def kind(self) -> str:
        return self.outcome.split(":")[0]


def _tag_cases(tag: str) -> list[Case]:
    """What is run at `tag`: every distributed example there, each with its README's flags."""
    sage, dist, exp = (SAGE_PART, PRODUCTS), (DIST_PART, PRODUCT), (RGCN_EXP_PART, MAG)
    cases = [
        Case(tag, SAGE_PART, PRODUCTS),
        Case(tag, SAGE_NC, SAGE, partition=sage),
        Case(tag, SAGE_PART, PRODUCTS + GRAPHBOLT, SAID_ONCE, shows=GRAPHBOLT_SAYS),
        Case(tag, SAGE_NC, SAGE + GRAPHBOLT, SAID_ONCE, (SAGE_PART, PRODUCTS + GRAPHBOLT), shows=GRAPHBOLT_SAYS),
        Case(tag, DIST_PART, PRODUCT),
        Case(tag, TRAIN_DIST, DIST, partition=dist),
        Case(tag, TRANSDUCTIVE, DIST, NO_DDP_ON_CPU, dist, shows="has no attribute 'module'"),
        Case(tag, TRANSDUCTIVE, DIST + " --dgl_sparse", partition=dist),
        Case(tag, UNSUP, DIST, partition=dist, sklearn=True),
        Case(tag, UNSUP_TRANSDUCTIVE, DIST, NO_DDP_ON_CPU, dist, sklearn=True, shows="has no attribute 'module'"),
        Case(tag, UNSUP_TRANSDUCTIVE, DIST + " --dgl_sparse", partition=dist, sklearn=True),
        Case(tag, RGCN_EXP_PART, MAG),
        Case(tag, ENTITY, RGCN + SPARSE, partition=exp, samplers=1),
        Case(tag, ENTITY, RGCN + SPARSE + " --dgl-sparse", partition=exp, samplers=1),
    ]
    if tag == "v2.1.0":  # the examples below came with v2.4.0
        return cases
    rgcn = (RGCN_PART, MAG)
    return cases + [
        Case(tag, SAGE_UNSUP, SAGE_U, partition=sage, sklearn=True),
        Case(tag, RGCN_PART, MAG),
        Case(tag, RGCN_NC, RGCN, partition=rgcn),
        Case(tag, RGCN_PART, MAG + GRAPHBOLT, SAID_ONCE, shows=GRAPHBOLT_SAYS),
        Case(tag, RGCN_NC, RGCN + GRAPHBOLT, SAID_ONCE, (RGCN_PART, MAG + GRAPHBOLT), shows=GRAPHBOLT_SAYS),
        Case(tag, LP_PERF, LP + " --remove_edge", partition=rgcn),
        Case(tag, LP_PERF, LP + " --remove_edge --debug", partition=rgcn),
        Case(tag, LP_PERF, LP + " --prob_or_mask mask --remove_edge --debug", partition=rgcn),
        Case(tag, LP_PERF, LP + " --debug", DEBUG_ALONE, rgcn, shows="isin()"),
    ]


CASES = [case for tag in REFS for case in _tag_cases(tag)]


def _case_id(case: Case) -> str:
    return f"{REFS[case.tag]}:{case.script.rsplit('/', 1)[-1]}:{case.args}".replace(" ", "")


# ---------------------------------------------------------------------------------- docs table
def docs_rows() -> dict[tuple[str, str, str], str]:
    """(tag, script, arguments) -> outcome, as docs/porting.md's table lists them."""
    text = PORTING.read_text()
    assert SECTION in text, f"{PORTING} lacks the section {SECTION!r}"
    rows = {}
    for line in text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        script, tag, args, outcome = cells
        rows[(tag, script.strip("`"), args.strip("`"))] = outcome
    return rows


def test_the_docs_table_lists_every_case_with_its_outcome():
    rows = docs_rows()
    want = {(c.tag, c.script, c.args): c.outcome for c in CASES}
    assert rows == want, (f"docs/porting.md's table differs from CASES; missing or different: "
                          f"{sorted(set(want.items()) - set(rows.items()))}; not in CASES: "
                          f"{sorted(set(rows.items()) - set(want.items()))}")


# ------------------------------------------------------------------------------------- inputs
def write_products(folder: Path) -> None:
    """An ogbn-products-shaped OGB folder (edges, features, labels, sales-ranking split) of an SBM graph."""
    g = generate_sbm(2000, 16000, num_classes=8, feat_dim=16, seed=0)
    raw = folder / "raw"
    write_csv(raw / "edge.csv.gz", np.stack([g.src.numpy(), g.dst.numpy()], 1))
    write_csv(raw / "num-node-list.csv.gz", [g.num_nodes()])
    write_csv(raw / "num-edge-list.csv.gz", [g.num_edges()])
    write_csv(raw / "node-feat.csv.gz", g.ndata["feat"].numpy())
    write_csv(raw / "node-label.csv.gz", g.ndata["label"].numpy())
    for part, mask in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        write_csv(folder / "split" / "sales_ranking" / f"{part}.csv.gz", np.nonzero(g.ndata[mask].numpy())[0])


def write_mag(folder: Path) -> None:
    """An ogbn-mag-shaped OGB folder (4 node types, 4 relations, paper features, labels, a time
    split) of a `generate_mag` graph."""
    g = generate_mag(1500, 1000, 40, 80, num_classes=6, feat_dim=16, seed=5)
    raw = folder / "raw"
    write_csv(raw / "num-node-dict.csv.gz", [[g.num_nodes(t) for t in g.ntypes]], header=g.ntypes)
    write_csv(raw / "triplet-type-list.csv.gz", [list(c) for c in g.canonical_etypes])
    for c in g.canonical_etypes:
        u, v = g.edges(etype=c)
        rel = raw / "relations" / "___".join(c)
        write_csv(rel / "edge.csv.gz", np.stack([u.numpy(), v.numpy()], 1))
        write_csv(rel / "num-edge-list.csv.gz", [u.numel()])
        write_csv(rel / "edge_reltype.csv.gz", np.full((u.numel(), 1), g.canonical_etypes.index(c)))
    paper = g.nodes["paper"].data
    write_csv(raw / "node-feat" / "paper" / "node-feat.csv.gz", paper["feat"].numpy())
    write_csv(raw / "node-feat" / "paper" / "node_year.csv.gz", 2000 + np.arange(g.num_nodes("paper")) % 20)
    has = [["True" if t == "paper" else "False" for t in g.ntypes]]
    write_csv(raw / "nodetype-has-label.csv.gz", has, header=g.ntypes)
    write_csv(raw / "node-label" / "paper" / "node-label.csv.gz", paper["label"].numpy())
    split = folder / "split" / "time"
    write_csv(split / "nodetype-has-split.csv.gz", has, header=g.ntypes)
    for part, mask in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        write_csv(split / "paper" / f"{part}.csv.gz", np.nonzero(paper[mask].numpy())[0])


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    """OGB's default root ("dataset", under the folder a script runs in) with both datasets."""
    root = tmp_path_factory.mktemp("dgl_inputs") / "dataset"
    write_products(root / "ogbn_products")
    write_mag(root / "ogbn_mag")
    return root


# ------------------------------------------------------------------------------------ scripts
def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", DGL_GIT_DIR, *args], capture_output=True, text=True, check=True).stdout


def change_imports(text: str) -> str:
    """A script with its DGL import lines naming distgraph, as a user changes them."""
    for pattern, replacement in IMPORTS:
        text = pattern.sub(replacement, text)
    return text


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> dict[str, Path]:
    """tag -> the folder holding that tag's example scripts (FOLDERS), import lines changed."""
    root = tmp_path_factory.mktemp("dgl_examples")
    out = {}
    for tag, ref in REFS.items():
        if subprocess.run(["git", "-C", DGL_GIT_DIR, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
                          capture_output=True).returncode != 0:
            pytest.fail(f"DGL_GIT_DIR={DGL_GIT_DIR} has no {ref} ({tag}): fetch DGL's tags and default branch")
        for folder in FOLDERS:
            listing = subprocess.run(["git", "-C", DGL_GIT_DIR, "ls-tree", "--name-only", f"{ref}:{folder}"],
                                     capture_output=True, text=True)
            for name in listing.stdout.split():
                if name.endswith(".py"):
                    dest = root / ref / folder / name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_text(change_imports(_git("show", f"{ref}:{folder}/{name}")))
        out[tag] = root / ref
    return out


def sklearn_missing() -> str | None:
    """Why DGL's unsupervised scripts cannot run here, or None: they evaluate with scikit-learn's
    `LogisticRegression(multi_class=...)`, which scikit-learn 1.7 removed."""
    try:
        version = importlib.metadata.version("scikit-learn")
    except importlib.metadata.PackageNotFoundError:
        return "needs scikit-learn 1.6 or older, which is not installed"
    if tuple(int(x) for x in version.split(".")[:2]) >= (1, 7):
        return f"needs scikit-learn 1.6 or older (LogisticRegression(multi_class=...)), not {version}"
    return None


class Runs:
    """Each run's exit code, output and folder, kept by what decides them (the script's and its
    helpers' text, arguments, sampler processes, and the partition it trains on), so a script
    unchanged between tags runs once; the folders stay for a look at what went wrong."""

    def __init__(self, root: Path, examples: dict[str, Path], datasets: Path):
        self.root, self.examples, self.datasets = root, examples, datasets
        self.done: dict[str, tuple[int, str, Path]] = {}

    def key(self, case: Case) -> str:
        script = self.examples[case.tag] / case.script
        helpers = sorted(script.parent.parent.glob("*.py"))  # DGL's GraphSAGE scripts import ../load_graph.py
        parts = [script.read_text(), case.args, str(case.samplers), *(h.read_text() for h in helpers)]
        if case.partition is not None:
            parts.append(self.key(Case(case.tag, *case.partition)))
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def run(self, case: Case, launches) -> tuple[int, str, Path]:
        """A partitioning script run in a folder holding OGB's "dataset" root, or a training
        script launched on 2 loopback machines on the partition its case names."""
        key = self.key(case)
        if key in self.done:
            return self.done[key]
        work = self.root / key
        work.mkdir()
        script = self.examples[case.tag] / case.script
        if case.partition is None:
            (work / "dataset").symlink_to(self.datasets)
            done = subprocess.run([sys.executable, str(script), *case.args.split()], env=child_env(),
                                  capture_output=True, text=True, timeout=600, cwd=work)
            self.done[key] = (done.returncode, done.stdout + done.stderr, work)
        else:
            code, output, parted = self.run(Case(case.tag, *case.partition), launches)
            assert code == 0, f"{case.partition} at {case.tag} did not partition:\n{output[-3000:]}"
            config = next((parted / "data").glob("*.json"))
            job = launches(work, config, [1, 1], f"{sys.executable} {script} {case.args}", num_trainers=1,
                           num_samplers=case.samplers)
            self.done[key] = (job.wait(600), job.output, work)
        (work / "output.txt").write_text(self.done[key][1])
        return self.done[key]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, examples, datasets) -> Runs:
    return Runs(tmp_path_factory.mktemp("dgl_runs"), examples, datasets)


@pytest.mark.skipif(not DGL_GIT_DIR, reason="DGL_GIT_DIR does not name a DGL clone, which DGL's scripts are read from")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_dgl_example_script(case, runs, launches):
    if case.sklearn and sklearn_missing():
        pytest.skip(f"{case.script} {sklearn_missing()}")
    code, output, work = runs.run(case, launches)
    found = RUNS if code == 0 else FAILS
    assert found == (FAILS if case.kind == FAILS else RUNS), (
        f"{case.script} at {case.tag} {'ran' if code == 0 else 'failed'}, but CASES and docs/porting.md say "
        f"{case.outcome!r} (output in {work}):\n{output[-4000:]}")
    assert case.shows in output, f"{case.script} at {case.tag}: no {case.shows!r} in its output:\n{output[-4000:]}"
    if found == RUNS and case.partition is None:
        assert list((work / "data").glob("*.json")), f"{case.script} at {case.tag} wrote no partition config"
    elif found == RUNS:
        assert TRAINED in output, f"{case.script} at {case.tag} ran but never trained:\n{output[-4000:]}"
