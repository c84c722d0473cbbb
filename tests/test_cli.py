"""The `distgraph generate` and `distgraph partition` commands, as a user runs them."""

import json
import re
import subprocess
import sys

import pytest

from distgraph.cli.main import main


def test_generate_then_partition_prints_a_summary(tmp_path, capsys):
    assert main(["generate", "sbm", "--num_nodes", "3000", "--num_edges", "20000", "--feat_dim", "4",
                 "--out", str(tmp_path / "g.npz")]) == 0
    assert "3,000 nodes, 20,000 edges" in capsys.readouterr().out
    assert main(["partition", "--input", str(tmp_path / "g.npz"), "--graph_name", "g", "--num_parts", "2",
                 "--balance_train", "--balance_edges", "--out", str(tmp_path / "parts")]) == 0
    out = capsys.readouterr().out
    for needle in ("edge cut:", "halo fraction:", "partition total"):
        assert needle in out
    balance = re.search(r"balance max/avg: nodes (\d+\.\d+), edges (\d+\.\d+), train (\d+\.\d+)", out)
    assert balance and all(1.0 <= float(x) <= 1.05 for x in balance.groups()), out
    rows = re.findall(r"^ +(\d) +([\d,]+) +([\d,]+)", out, re.M)
    assert [int(r[0]) for r in rows] == [0, 1] and sum(int(r[1].replace(",", "")) for r in rows) == 3000
    cfg = json.loads((tmp_path / "parts" / "g.json").read_text())
    assert cfg["num_parts"] == 2 and cfg["num_nodes"] == 3000


def test_partition_an_edge_list_and_a_heterogeneous_graph(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("a,b\nb,c\nc,a\nd,a\n")
    assert main(["partition", "--input", str(tmp_path / "e.csv"), "--graph_name", "e", "--num_parts", "2",
                 "--part_method", "random", "--out", str(tmp_path / "e")]) == 0
    assert (tmp_path / "e" / "mapping" / "node_names.npy").is_file()
    assert main(["generate", "mag", "--num_papers", "300", "--num_authors", "200", "--num_institutions", "10",
                 "--num_fields", "20", "--out", str(tmp_path / "m.npz")]) == 0
    assert main(["partition", "--input", str(tmp_path / "m.npz"), "--graph_name", "m", "--num_parts", "2",
                 "--balance_train", "--out", str(tmp_path / "m")]) == 0
    assert "['paper', 'author', 'institution', 'field_of_study']" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--input", "{tmp}/missing.npz"], "graph file .*missing.npz does not exist"),
        (["--input", "{tmp}/bad.txt"], "bad.txt line 2: expected 2 fields"),
        (["--input", "{tmp}/cut.npz"], "cut.npz is not a readable .npz file"),
        (["--input", "{tmp}/ok.txt", "--out", "{tmp}/ok.txt"], "--out .*ok.txt is an existing file; pass a folder"),
        (["--input", "{tmp}/ok.txt", "--out", "{tmp}/ok.txt/sub"],
         "cannot create the output folder .*ok.txt/sub: Not a directory"),
        (["--input", "{tmp}/huge_id.txt"], "node id 9223372036854775807 leaves no room for the node count"),
        (["--input", "{tmp}/far_id.txt"], "needs about .* GiB and this machine has .* renumber the nodes from 0"),
        (["--input", "{tmp}/chunked_trunc"], r"_N-_E-_N-1.npy is truncated: its header declares int64\[400, 2\]"),
        (["--input", "{tmp}/chunked_float"], "chunk .*_N-_E-_N-1.npy holds float64 values: an edge chunk holds integer"),
        (["--input", "{tmp}/chunked_cols"], r"chunk .*_N-_E-_N-1.npy has shape \(400, 3\): an edge chunk has 2 columns"),
        (["generate", "mag", "--num_papers", "0", "--out", "{tmp}/m.npz"], "generate_mag needs num_papers >= 1, got 0"),
        (["generate", "sbm", "--num_nodes", "50", "--out", "{tmp}"], "is not empty; give a new folder"),
    ],
)
def test_bad_input_is_one_line_without_traceback(tmp_path, args, message):
    (tmp_path / "bad.txt").write_text("0 1\n2\n")
    (tmp_path / "huge_id.txt").write_text("0 1\n1 9223372036854775807\n")
    (tmp_path / "far_id.txt").write_text(f"0 1\n1 {2**40}\n2 0\n3 1\n")
    if "chunked" in args[1]:
        _broken_chunk(tmp_path / args[1].split("/")[-1], args[1].rsplit("_", 1)[-1])
    (tmp_path / "ok.txt").write_text("0 1\n1 2\n")
    (tmp_path / "cut.npz").write_bytes(b"PK\x03\x04 truncated")
    args = [a.format(tmp=tmp_path) for a in args]
    base = ["partition", "--graph_name", "g", "--num_parts", "2", "--out", str(tmp_path / "o")]
    if args[0] == "generate":
        base = []
    proc = subprocess.run([sys.executable, "-m", "distgraph.cli.main", *base, *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert re.search(message, proc.stderr)


def _broken_chunk(folder, how: str) -> None:
    """A chunked graph whose second edge chunk is truncated, of floats, or of 3 columns."""
    import numpy as np

    from distgraph.data.sbm_chunked import generate_sbm_chunked

    generate_sbm_chunked(folder, 300, 1200, feat_dim=2, chunk_edges=400, progress=False)
    path = folder / "edges" / "_N-_E-_N-1.npy"
    a = np.load(path)
    if how == "trunc":
        path.write_bytes(path.read_bytes()[:-100])
    elif how == "float":
        np.save(path, a.astype(np.float64) + 0.5)
    else:
        np.save(path, np.concatenate([a, a[:, :1]], 1))


def test_more_parts_than_nodes_from_the_command_line(tmp_path):
    (tmp_path / "e.txt").write_text("0 1\n1 2\n")
    proc = subprocess.run([sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(tmp_path / "e.txt"),
                           "--graph_name", "g", "--num_parts", "5", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "cannot split 3 nodes into 5 parts" in proc.stderr


def test_subpackages_are_attributes_of_the_package():
    """The package imports lazily, yet `distgraph.partition.x` works as after an eager import."""
    import distgraph

    assert callable(distgraph.partition.split_categories) and callable(distgraph.sampling.sample_csc)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        distgraph.nope


def _same_partitions(a, b) -> None:
    """Every file of two partition folders byte for byte (but the command's report); the configs
    equal but for their timings."""

    def listed(d):
        return sorted(f.relative_to(d) for f in d.rglob("*") if f.is_file() and "-report." not in f.name)

    files = listed(a)
    assert files == listed(b)
    for f in files:
        if f.suffix == ".json":
            ca, cb = (json.loads((d / f).read_text()) for d in (a, b))
            for stats in (ca.pop("stats"), cb.pop("stats")):
                del stats["assign_seconds"], stats["total_seconds"]
            assert ca == cb
        else:
            assert (a / f).read_bytes() == (b / f).read_bytes(), f


@pytest.mark.parametrize("kind", ["sbm", "mag", "edgelist"])
def test_partitioning_a_file_never_imports_torch_and_writes_what_partition_graph_writes(tmp_path, kind):
    """`distgraph partition --input` keeps a file's graph in numpy arrays (an `ArrayGraph`), so
    torch (a second or more to import) is never loaded, and writes the very files that
    `partition_graph` writes for the `Graph` of the same file."""
    from distgraph.data import add_reverse_edges, generate_mag, generate_sbm, load_graph, save_npz
    from distgraph.partition import partition_graph, split_categories

    flags = ["--num_parts", "2", "--balance_train", "--balance_edges"]
    if kind == "sbm":  # one edge type and one hop: each part's edges are already its CSC
        save_npz(generate_sbm(2000, 16000, feat_dim=8, seed=1), path := tmp_path / "g.npz")
    elif kind == "mag":  # several edge types, two hops, trainer ids: the counting sort and the copied data
        save_npz(generate_mag(300, 200, 10, 20, feat_dim=4, seed=2), path := tmp_path / "g.npz")
        flags += ["--add_reverse_edges", "--num_hops", "2", "--num_trainers_per_machine", "2"]
    else:  # string ids and weights
        (path := tmp_path / "g.csv").write_text("".join(f"n{i},n{(i * 7 + 3) % 50},{i / 10}\n" for i in range(200)))
    code = ("import sys; from distgraph.cli.main import main; code = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code, "partition", "--input", str(path), "--graph_name", "g",
                           *flags, "--out", str(tmp_path / "cli")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    g = load_graph(path)  # a Graph of tensors
    if kind == "mag":
        g = add_reverse_edges(g)
    partition_graph(g, "g", 2, tmp_path / "api", balance_ntypes=split_categories(g), balance_edges=True,
                    num_hops=2 if kind == "mag" else 1, num_trainers_per_machine=2 if kind == "mag" else 1)
    _same_partitions(tmp_path / "cli", tmp_path / "api")


def test_bare_distgraph_prints_the_help_and_version_prints_the_version(capsys):
    import distgraph

    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: distgraph") and all(c in out for c in ("partition", "launch", "kge"))
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"distgraph {distgraph.__version__}"


def test_a_command_imports_its_own_parser_only():
    """`distgraph partition` builds the partition command's parser alone (the other commands'
    modules cost its start-up a tenth of a second); bare `distgraph` still lists every command."""
    code = ("import sys\nfrom distgraph.cli.main import main\ntry:\n    main(['partition', '--help'])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('distgraph.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    assert "'distgraph.cli.partition'" in loaded and "'distgraph.cli.kge'" not in loaded, loaded
    assert "'distgraph.cli.launch'" not in loaded and "usage: distgraph partition" in done.stdout
    listed = subprocess.run([sys.executable, "-m", "distgraph.cli.main"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and all(c in listed.stdout for c in ("partition", "launch", "kge", "generate"))
