"""The distributed partitioner on loopback (three hosts of an ip_config on this machine, started
without ssh): the files it writes are partition_stream's, byte for byte, for the same
assignment (random, METIS and KaMinPar on the ParHIP file assembled from the hosts' pieces);
node data rows and edges with their data travel between the hosts over the authenticated
transport; with a folder of its own per host (as on its own disk), each host needs only the
chunk files of its share and the coordinating host only the metadata; a failing host or a
missing chunk leaves no config and no partition file behind."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from partition_files import chunked_copy, same_partitions, share_files

from distgraph.cluster.hosts import free_ports
from distgraph.data import generate_mag, generate_sbm
from distgraph.errors import PartitionError
from distgraph.partition import load_partition
from distgraph.partition.dist import partition_cluster
from distgraph.partition.dist import protocol as P
from distgraph.partition.dist.degrees import OwnedDegrees
from distgraph.partition.dist.lookup import NewIdLookup, OwnedNewIds
from distgraph.partition.stream import from_chunked, partition_stream
from distgraph.partition.stream.writer import count_degrees
from distgraph.rpc.wire import WireError

pytestmark = pytest.mark.multiprocess
HOSTS = 3
OWN_FOLDER = """import os
if 'DISTGRAPH_LISTEN' in os.environ:  # a host's partitioning process works in the folder of its machine
    os.chdir(os.path.join({base!r}, 'host' + os.environ['DISTGRAPH_MACHINE_ID']))
"""


@pytest.fixture
def ip_config(tmp_path):
    path = tmp_path / "ip_config.txt"
    path.write_text("".join(f"127.0.0.1 {port}\n" for port in free_ports("127.0.0.1", HOSTS)))
    return path


@pytest.fixture(scope="module", params=["homogeneous", "heterogeneous"])
def chunked(request, tmp_path_factory):
    if request.param == "homogeneous":
        g = generate_sbm(3000, 30000, num_classes=6, feat_dim=8, seed=1)
    else:
        g = generate_mag(1200, 900, 40, 80, num_classes=5, feat_dim=8, seed=2)
    root = chunked_copy(g, tmp_path_factory.mktemp(request.param) / "g", edge_chunks=4).parent
    # edge data of the first edge type, in 2 chunks (not those of the edges): read with the edges
    meta = json.loads((root / "metadata.json").read_text())
    key = meta["edge_type"][0]
    weight = np.random.default_rng(0).random((sum(meta["num_edges_per_chunk"][0]), 2), dtype=np.float32)
    half = len(weight) // 2
    np.save(root / "w0.npy", weight[:half])
    np.save(root / "w1.npy", weight[half:])
    meta["edge_data"] = {key: {"w": {"format": {"name": "numpy"}, "data": ["w0.npy", "w1.npy"]}}}
    (root / "metadata.json").write_text(json.dumps(meta))
    return root


def test_hosts_write_what_partition_stream_writes(chunked, ip_config, tmp_path):
    single = partition_stream(from_chunked(chunked), "g", 4, tmp_path / "single", part_method="random", seed=5)
    stats = partition_cluster(chunked, "g", 4, tmp_path / "dist", ip_config, part_method="random", seed=5)
    same_partitions(tmp_path / "single", tmp_path / "dist")
    assert not list((tmp_path / "dist").glob(".*")), "scratch left behind"
    assert stats.part_edges == single.part_edges and stats.edge_cut == pytest.approx(single.edge_cut)
    assert stats.part_train == single.part_train and sum(stats.part_train) > 0
    part = load_partition(tmp_path / "dist" / "g.json", 2)
    assert part.num_inner_nodes == stats.part_nodes[2]
    assert any(p.name.endswith(".w.npy") for p in (tmp_path / "dist" / "part2").iterdir())


def own_folders(root, base, monkeypatch) -> str:
    """`root` spread as separate disks would hold it: each host's folder (base/host<m>, where its
    process works) with the metadata and the chunk files of its share only, the coordinating
    host's (base/coordinator, the workspace returned) with the metadata only."""
    for d, rels in [("coordinator", [])] + [(f"host{h}", share_files(root, h, HOSTS)) for h in range(HOSTS)]:
        for rel in ["metadata.json", *rels]:
            (base / d / "g" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / rel, base / d / "g" / rel)
    (base / "site").mkdir()
    (base / "site" / "sitecustomize.py").write_text(OWN_FOLDER.format(base=str(base)))
    monkeypatch.setenv("PYTHONPATH", str(base / "site"))
    return str(base / "coordinator")


def test_each_host_reads_only_the_chunks_of_its_share(chunked, ip_config, tmp_path, monkeypatch):
    work = own_folders(chunked, tmp_path / "disks", monkeypatch)
    assert len(list((tmp_path / "disks" / "host0" / "g").rglob("*.npy"))) < len(list(chunked.rglob("*.npy")))
    # METIS weighted by the split masks (which the coordinator reads through the hosts holding them)
    partition_stream(from_chunked(chunked), "g", 4, tmp_path / "single", part_method="metis", balance_train=True,
                     seed=5)
    stats = partition_cluster("g", "g", 4, "out", ip_config, workspace=work, part_method="metis",
                              balance_train=True, seed=5)
    merged = tmp_path / "merged"
    shutil.copytree(tmp_path / "disks" / "coordinator" / "out", merged)
    for h in range(HOSTS):
        out = tmp_path / "disks" / f"host{h}" / "out"
        assert sorted(p.name for p in out.iterdir()) == ["g.json", *(f"part{p}" for p in range(h, 4, HOSTS))]
        assert (out / "g.json").read_text() == (merged / "g.json").read_text()
        for p in range(h, 4, HOSTS):
            shutil.copytree(out / f"part{p}", merged / f"part{p}")
    same_partitions(tmp_path / "single", merged)
    assert sum(stats.part_train) == int(sum(np.load(f).sum() for f in chunked.rglob("*train_mask*.npy")))


def test_node_data_in_csv_and_parquet_chunks_cut_anywhere(ip_config, tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    meta = json.loads((root / "metadata.json").read_text())
    label, feat = np.asarray(g.ndata["label"]), np.asarray(g.ndata["feat"])
    for i, rows in enumerate(np.array_split(np.arange(1000), 5)):
        np.savetxt(root / f"label{i}.csv", label[rows], fmt="%d")
    for i, rows in enumerate(np.array_split(np.arange(1000), 2)):
        pq.write_table(pa.table({f"f{j}": feat[rows, j] for j in range(4)}), root / f"feat{i}.parquet")
    meta["node_data"]["_N"]["label"] = {"format": {"name": "csv"}, "data": [f"label{i}.csv" for i in range(5)]}
    meta["node_data"]["_N"]["feat"] = {"format": {"name": "parquet"}, "data": ["feat0.parquet", "feat1.parquet"]}
    (root / "metadata.json").write_text(json.dumps(meta))
    work = own_folders(root, tmp_path / "disks", monkeypatch)
    assert not (tmp_path / "disks" / "host0" / "g" / "label4.csv").exists()
    partition_stream(from_chunked(root), "g", 3, tmp_path / "single", part_method="random", seed=3)
    partition_cluster("g", "g", 3, "out", ip_config, workspace=work, part_method="random", seed=3)
    for h in range(HOSTS):
        for f in (tmp_path / "single" / f"part{h}").iterdir():
            assert (tmp_path / "disks" / f"host{h}" / "out" / f"part{h}" / f.name).read_bytes() == f.read_bytes()


@pytest.mark.parametrize("held_by, message", [
    ((1,), r"^machine 2 \(127\.0\.0\.1\) lacks \S+/node_data/_N-feat-1\.npy, a chunk of node data 'feat' of _N "
           r"holding rows of its share \(666 to 1,000\); copy it there$"),
    ((), r"^node data 'feat' of _N: no machine holds its chunk \S+/node_data/_N-feat-1\.npy; copy it"),
])
def test_a_data_chunk_missing_on_a_host_is_named(held_by, message, ip_config, tmp_path, monkeypatch):
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    work = own_folders(root, tmp_path / "disks", monkeypatch)
    for h in {1, 2} - set(held_by):  # (hosts 1 and 2 hold it for their shares)
        (tmp_path / "disks" / f"host{h}" / "g" / "node_data" / "_N-feat-1.npy").unlink()
    with pytest.raises(PartitionError, match=message):
        partition_cluster("g", "g", 3, "out", ip_config, workspace=work, part_method="random")
    assert not [p for p in (tmp_path / "disks").rglob("*") if p.is_file() and "out" in p.parts], "files written"


def test_a_hosts_edge_buckets_are_bounded_by_its_own_parts(ip_config, tmp_path, monkeypatch):
    """Edge buckets hold the working size of edges, or more when a host's parts would have more
    than MAX_BUCKETS of them (a host opens only its own parts' bucket files), not the whole graph's."""
    from distgraph.partition.dist import coordinator, shares

    monkeypatch.setattr(shares, "MIN_WORKING_EDGES", 100)
    monkeypatch.setattr(shares, "MAX_WORKING_EDGES", 100)
    monkeypatch.setattr(coordinator, "MAX_BUCKETS", 4)
    seen = []
    number = coordinator.number_nodes
    monkeypatch.setattr(coordinator, "number_nodes", lambda *a: seen.append(a) or number(*a))
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    partition_stream(from_chunked(root), "g", 5, tmp_path / "single", part_method="random", seed=3)
    partition_cluster(root, "g", 5, tmp_path / "dist", ip_config, part_method="random", seed=3)
    same_partitions(tmp_path / "single", tmp_path / "dist")
    (_, parts, _, in_deg, bucket_edges), = seen
    host_edges = np.bincount(parts % HOSTS, weights=in_deg)
    assert bucket_edges == -(-int(host_edges.max()) // 4) < -(-8000 // 4)


def test_kaminpar_runs_on_the_graph_assembled_from_the_hosts_pieces(ip_config, tmp_path):
    g = generate_sbm(2000, 20000, num_classes=4, feat_dim=4, seed=3)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=5).parent
    single = partition_stream(from_chunked(root), "g", 3, tmp_path / "single", part_method="kaminpar", seed=1,
                              bucket_edges=1 << 16)
    dist = partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="kaminpar", seed=1,
                             encrypt=True)  # (the hosts' traffic under CURVE)
    # the same ParHIP file and seed: KaMinPar's cut agrees (its parts may differ between runs)
    assert dist.edge_cut == pytest.approx(single.edge_cut, rel=0.1) and dist.edge_cut < 0.5
    assert sum(dist.part_edges) == g.num_edges()


def test_a_chunk_a_host_cannot_read_is_named(ip_config, tmp_path):
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    (root / "edges" / "_N-_E-_N-1.npy").write_bytes(b"not a chunk")  # machine 1's share
    with pytest.raises(PartitionError, match=r"stopped: the partitioning process of machine 1 .*_N-_E-_N-1\.npy "
                                             r"cannot be read as numpy"):
        partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="random")
    assert not (tmp_path / "dist" / "g.json").exists()


FAULTS = {  # code run in one host's processes before they start (a sitecustomize on their PYTHONPATH)
    "disk full while writing": """
import errno, os
def pwrite(*args):
    raise OSError(errno.ENOSPC, "No space left on device")
os.pwrite = pwrite
""",
    "disk full under its buckets": """
import errno, io
from distgraph.partition.dist import hostwork
from distgraph.partition.stream import buckets
class Full(io.RawIOBase):
    def writable(self):
        return True
    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")
def full(path, mode):  # rows wait in the buffer, which the disk refuses when flushed
    open(path, mode).close()
    return io.BufferedWriter(Full(), 1 << 24)
def write(self, h, arrays):  # the disk is full when the parts are written (so is the buckets' flush in the clean-up)
    raise OSError(errno.ENOSPC, "No space left on device", str(self.out / "part2"))
buckets.open = full
hostwork.HostWork.write = write
""",
    "dies mid-shuffle": """
import os
from distgraph.partition.dist import hostwork
def edges(self, h, arrays):
    os._exit(9)
hostwork.HostWork.edges = edges
""",
    "killed mid-shuffle": """
import os, signal
from distgraph.partition.dist import hostwork
def edges(self, h, arrays):  # (its guard removes what it wrote)
    os.kill(os.getpid(), signal.SIGKILL)
hostwork.HostWork.edges = edges
""",
}


@pytest.mark.parametrize("fault, message", [
    ("disk full while writing",  # (its first write: node data rows sent to it in the shuffle)
     r"machine 2 .* refused 'node_rows': cannot write .*No space left on device\); free disk"),
    ("disk full under its buckets", r"machine 2 .* refused 'write': No space left on device: \S+part2; free disk "
                                    r"space there or point --scratch_dir at a disk with room$"),
    ("dies mid-shuffle", r"machine 2"),
    ("killed mid-shuffle", r"the partitioning process of machine 2 on 127\.0\.0\.1 was killed by SIGKILL"),
])
def test_a_host_that_fails_leaves_nothing_that_loads(fault, message, ip_config, tmp_path, monkeypatch, capfd):
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="random", seed=1)
    assert load_partition(tmp_path / "dist" / "g.json", 2).num_inner_nodes > 0  # an earlier partition, replaced
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        f"import os\nif os.environ.get('DISTGRAPH_MACHINE_ID') == '2' and 'DISTGRAPH_LISTEN' in os.environ:\n"
        + "".join(f"    {line}\n" for line in FAULTS[fault].strip().splitlines()))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    with pytest.raises(PartitionError, match=message) as failed:
        partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="random", seed=2)
    assert "\n" not in str(failed.value)
    said = capfd.readouterr().err
    assert "Traceback" not in said and "[2/partition/0]" not in said, said  # (nor any error of its clean-up)
    left = sorted(str(p.relative_to(tmp_path / "dist")) for p in (tmp_path / "dist").rglob("*") if p.is_file())
    assert left == [], left  # no config, no partition file, no scratch: nothing a later run would load


def test_a_run_removes_what_a_killed_one_left_and_keeps_a_live_ones_scratch(ip_config, tmp_path, capsys):
    """Left by a run whose processes were all killed: its scratch folder (unlocked), a part
    file and an id map piece no config names, its lock; in --scratch_dir, the scratch of a
    run still going (locked) stays; the folders end with the partition alone."""
    import fcntl

    from distgraph.cli.main import main

    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    out, scratch = tmp_path / "dist", tmp_path / "scratch"
    dead = [".distgraph-scratch-dead/lock", ".distgraph-scratch-dead/.edges-x/0.dst"]
    for path in [out / rel for rel in dead + [".distgraph-machine1.lock", "part1/node._N.feat.npy",
                                               "mapping/node._N.tmp-1.npy"]] + [scratch / rel for rel in dead]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left")
    live = scratch / ".distgraph-scratch-live"
    live.mkdir()
    with open(live / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert main(["partition", "--input", str(root), "--graph_name", "g", "--num_parts", "3", "--out", str(out),
                     "--part_method", "random", "--ip_config", str(ip_config), "--scratch_dir", str(scratch)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["g-report.json", "g-report.svg", "g.json", "mapping", "part0",
                                                     "part1", "part2"], capsys.readouterr().err
    assert [p.name for p in (out / "mapping").iterdir() if "tmp" in p.name] == []
    assert load_partition(out / "g.json", 1).num_inner_nodes > 0
    assert sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*")) == [".distgraph-scratch-live",
                                                                            ".distgraph-scratch-live/lock"]


def test_a_second_run_into_a_folder_a_host_holds_is_refused(ip_config, tmp_path):
    import fcntl

    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    (tmp_path / "dist").mkdir()
    with open(tmp_path / "dist" / ".distgraph-machine1.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(PartitionError, match=r"machine 1: another partitioning is writing into \S+dist on "
                                                 r"127\.0\.0\.1 \(it holds \S+\.distgraph-machine1\.lock\); wait "
                                                 r"for it to end, or choose another output folder$"):
            partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="random")
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == [".distgraph-machine1.lock"]


HOLDING = {  # (a sitecustomize of the hosts' processes, as FAULTS)
    "records what it holds": """
import numpy as np
from distgraph.partition.dist import hostwork
write = hostwork.HostWork.write
def recording(self, h, arrays):  # the numbering's rows this host held through the shuffles
    np.save(self.out / f"held-{self.machine}.npy", np.concatenate([[self.new_ids.lo], self.new_ids.new]))
    return write(self, h, arrays)
hostwork.HostWork.write = recording
""",
    "records its degrees": """
import numpy as np
from distgraph.partition.dist import hostwork
plan = hostwork.HostWork.plan
def recording(self, h, arrays):  # the degrees this host held until the plan, and whether the plan dropped them
    d = self.deg
    np.save(self.out / f"held-{self.machine}.npy", np.concatenate([[d.lo], d.in_deg, d.out_deg]))
    out = plan(self, h, arrays)
    np.save(self.out / f"dropped-{self.machine}.npy", np.array([self.deg is None]))
    return out
hostwork.HostWork.plan = recording
""",
    "sends an owner ends it does not own": """
if os.environ.get('DISTGRAPH_MACHINE_ID') == '0':
    from distgraph.partition.dist import degrees
    init = degrees.OwnedDegrees.__init__
    def wrong(self, *args):  # machine 0 sends its own last old id to machine 1 to count
        init(self, *args)
        self.starts[1] -= 1
    degrees.OwnedDegrees.__init__ = wrong
""",
    "asks an owner for ids it does not own": """
if os.environ.get('DISTGRAPH_MACHINE_ID') == '0':
    from distgraph.partition.dist import lookup
    init = lookup.OwnedNewIds.__init__
    def wrong(self, *args):  # machine 0 takes its own last old id for machine 1's
        init(self, *args)
        self.starts[1] -= 1
    lookup.OwnedNewIds.__init__ = wrong
""",
}


def hosts_run(monkeypatch, site, code: str) -> None:
    """`code` runs in every host's process before it starts (not in this one)."""
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nif 'DISTGRAPH_LISTEN' in os.environ:\n"
                                           + "".join(f"    {line}\n" for line in code.strip().splitlines()))
    monkeypatch.setenv("PYTHONPATH", str(site))


def held_by_hosts(ip_config, tmp_path, monkeypatch, code: str, names: list[str]) -> list[list[np.ndarray]]:
    """Partition a graph on the hosts with `code` in their processes, which saves arrays
    `{name}-{machine}.npy` in the output folder: those arrays of each host, after checking the
    partitions are partition_stream's."""
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    partition_stream(from_chunked(root), "g", 5, tmp_path / "single", part_method="random", seed=3)
    hosts_run(monkeypatch, tmp_path / "site", code)
    partition_cluster(root, "g", 5, tmp_path / "dist", ip_config, part_method="random", seed=3)
    files = [[tmp_path / "dist" / f"{name}-{m}.npy" for name in names] for m in range(HOSTS)]
    held = [[np.load(f) for f in host] for host in files]
    for f in sum(files, []):
        f.unlink()
    same_partitions(tmp_path / "single", tmp_path / "dist")
    return held


def test_each_host_holds_only_the_new_ids_of_its_share(ip_config, tmp_path, monkeypatch):
    held = [h for (h,) in held_by_hosts(ip_config, tmp_path, monkeypatch, HOLDING["records what it holds"], ["held"])]
    assert [(int(h[0]), h.size - 1) for h in held] == [(0, 333), (333, 333), (666, 334)]
    old2new = np.argsort(np.load(tmp_path / "single" / "mapping" / "node._N.npy"))
    assert np.array_equal(np.concatenate([h[1:] for h in held]), old2new)


def test_each_host_holds_only_the_degrees_of_its_share(ip_config, tmp_path, monkeypatch):
    held = held_by_hosts(ip_config, tmp_path, monkeypatch, HOLDING["records its degrees"], ["held", "dropped"])
    assert [(int(h[0]), (h.size - 1) // 2) for h, _ in held] == [(0, 333), (333, 333), (666, 334)]
    assert [bool(d[0]) for _, d in held] == [True] * HOSTS  # the plan frees them
    deg = count_degrees(from_chunked(tmp_path / "g"))
    assert np.array_equal(np.concatenate([h[1:1 + (h.size - 1) // 2] for h, _ in held]), deg.in_deg)
    assert np.array_equal(np.concatenate([h[1 + (h.size - 1) // 2:] for h, _ in held]), deg.out_deg)
    assert deg.in_deg.sum() == deg.out_deg.sum() == 8000


@pytest.mark.parametrize("fault, message", [
    ("asks an owner for ids it does not own", r"'new_ids': machine 1: old ids 332\.\.333 are"),
    ("sends an owner ends it does not own", r"'degree_ids': machine 1: degree ids 332\.\.\d+ are"),
])
def test_ids_sent_to_a_host_that_does_not_own_them_are_refused(fault, message, ip_config, tmp_path, monkeypatch):
    g = generate_sbm(1000, 8000, num_classes=3, feat_dim=4, seed=4)
    root = chunked_copy(g, tmp_path / "g", edge_chunks=3).parent
    hosts_run(monkeypatch, tmp_path / "site", HOLDING[fault])
    with pytest.raises(PartitionError, match=r"machine 1 .* refused " + message + r" not in its share of the old "
                                             r"node ids \[333, 666\); ask the host that owns them") as failed:
        partition_cluster(root, "g", 3, tmp_path / "dist", ip_config, part_method="random")
    assert "\n" not in str(failed.value)
    assert not [p for p in (tmp_path / "dist").rglob("*") if p.is_file()]


def test_an_owner_counts_the_ends_of_its_share_and_sends_the_others():
    deg = OwnedDegrees(1, 10, 3)  # machine 1 of 3 owns old ids [3, 6)
    assert (deg.lo, deg.hi, deg.in_deg.size, deg.out_deg.size) == (3, 6, 3, 3)
    sent = deg.spread(np.array([3, 0, 9, 4, 3, 8]), np.array([5, 5, 1, 2, 7, 3]))
    assert [(r.peer, r.header["op"]) for r in sent] == [(0, P.DEGREE_IDS), (2, P.DEGREE_IDS)]
    assert [a.tolist() for a in sent[0].arrays] == [[0], [1, 2]] and sent[0].arrays[0].dtype == np.int32
    assert [a.tolist() for a in sent[1].arrays] == [[9, 8], [7]]
    assert (deg.out_deg.tolist(), deg.in_deg.tolist()) == ([2, 1, 0], [1, 0, 2])
    deg.receive({}, [np.array([5, 5], dtype=np.int32), np.array([4], dtype=np.int32)])
    assert deg.rows({"lo": 4, "hi": 6}, [])[1][0].tolist() == [1, 2]  # in-degrees of old ids 4, 5
    assert deg.rows({"lo": 3, "hi": 6}, [])[1][1].tolist() == [2, 1, 2]
    with pytest.raises(WireError, match=r"machine 1: degree ids 6\.\.7 are not in its share of the old node ids "
                                        r"\[3, 6\); ask the host that owns them"):
        deg.receive({}, [np.array([5], dtype=np.int32), np.array([6], dtype=np.int32)])
    with pytest.raises(WireError, match=r"degrees asked for old ids 0\.\.4 are not in its share"):
        deg.rows({"lo": 0, "hi": 4}, [])
    with pytest.raises(WireError, match=r"degree ids must be one array of integer ids"):
        deg.receive({}, [np.array([3.0]), np.array([3])])
    assert (deg.out_deg.tolist(), deg.in_deg.tolist()) == ([2, 1, 2], [1, 1, 2])  # nothing refused was counted


def test_an_owner_answers_only_ids_of_its_share():
    owned = OwnedNewIds(1, 10, 3)  # machine 1 of 3 owns old ids [3, 6)
    assert (owned.lo, owned.hi, owned.new.size) == (3, 6, 3)
    owned.put({"lo": 3}, [np.array([7, 2], dtype=np.int32)])
    owned.put({"lo": 5}, [np.array([9], dtype=np.int32)])
    assert owned.answer({}, [np.array([5, 3, 3, 4])])[1][0].tolist() == [9, 7, 7, 2]
    assert owned.answer({"lo": 4, "hi": 6}, [])[1][0].tolist() == [2, 9]
    with pytest.raises(WireError, match=r"machine 1: old ids 2\.\.6 are not in its share of the old node ids "
                                        r"\[3, 6\)"):
        owned.answer({}, [np.array([3, 2, 5])])
    with pytest.raises(WireError, match=r"old ids 5\.\.7 are not in its share"):
        owned.answer({"lo": 5, "hi": 7}, [])
    with pytest.raises(WireError, match=r"new ids sent for old ids 6\.\.7 are not in its share"):
        owned.put({"lo": 6}, [np.array([1], dtype=np.int32)])


class OwnersByHand:
    """Connections whose owners answer from their `OwnedNewIds` at once, recording every batch."""

    def __init__(self, owners: list[OwnedNewIds]):
        self.owners, self.batches = owners, []

    def call(self, requests) -> list[SimpleNamespace]:
        self.batches.append([(r.peer, r.arrays[0].tolist()) for r in requests])
        return [SimpleNamespace(arrays=self.owners[r.peer].answer(r.header, r.arrays)[1]) for r in requests]


def test_both_ends_of_a_piece_are_looked_up_in_one_request_to_each_owner():
    old2new = np.array([4, 9, 0, 7, 1, 8, 2, 6, 3, 5])
    owners = [OwnedNewIds(m, 10, 3) for m in range(3)]  # old ids [0, 3), [3, 6), [6, 10)
    for o in owners:
        o.put({"lo": o.lo}, [old2new[o.lo:o.hi].astype(np.int32)])
    conns = OwnersByHand(owners)
    dst, src = np.array([9, 0, 4, 9]), np.array([4, 7, 1, 0])
    nd, ns = NewIdLookup(owners[0], conns).pair(dst, src)
    assert (nd.tolist(), ns.tolist()) == (old2new[dst].tolist(), old2new[src].tolist())
    assert conns.batches == [[(1, [4, 4]), (2, [9, 9, 7])]]  # one round: each owner its ids of both ends


def test_options_that_need_one_host_are_refused_with_ip_config(chunked, ip_config, tmp_path, capsys):
    from distgraph.cli.main import main

    base = ["partition", "--graph_name", "g", "--num_parts", "3", "--out", str(tmp_path / "o"),
            "--ip_config", str(ip_config)]
    assert main([*base, "--input", str(chunked), "--num_hops", "2"]) == 2
    assert "--num_hops 2 needs the whole graph; drop --ip_config" in capsys.readouterr().err
    (tmp_path / "g.npz").write_bytes(b"PK\x03\x04")
    assert main([*base, "--input", str(tmp_path / "g.npz")]) == 2
    assert "g.npz is not a chunked graph folder here" in capsys.readouterr().err
    assert main([*base[:-2], "--input", str(chunked), "--scratch_dir", str(tmp_path / "s")]) == 2
    assert "--scratch_dir goes with --ip_config" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
