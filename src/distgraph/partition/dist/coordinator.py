"""`partition_cluster`: `partition_stream` spread over the hosts of an ip_config, for a graph in
DGL's chunked format that every host reads at the same path. Each host needs the metadata and
only the chunk files holding its share (`shares`): its rows of the edges and of their edge
data, and its rows of each node type's data; this host needs only the metadata.

This process (the coordinator) starts one partitioning process per host (`processes`) and
drives them (`protocol`, `hostwork`):
1. each host reports the data chunk files it holds; the coordinator joins the reports into the
   data layout (every chunk's rows), checks each host holds its share, and sends it back
   (`datalayout`); what it reads of the data itself (the split masks of `--balance_train`) it
   asks of the hosts holding them;
2. each host counts the degrees of its share of the edges into the slices of their owners (host
   h holds those of the old ids [h n / H, (h + 1) n / H) only, 16 bytes a node of its share:
   `degrees`); the coordinator asks each host for its slice, a million rows at a time;
3. the assignment runs here: random, or KaMinPar/METIS on the ParHIP file this process
   assembles bucket by bucket from the hosts' adjacency pieces (its per-node arrays and the
   partitioner's graph are the memory it needs; the edges stay on the hosts);
4. the numbering (as `relabel_nodes`) is spread over the hosts: host h gets the new ids of the
   old ids of its share [h n / H, (h + 1) n / H) (4 bytes a node of its share) and looks up the
   others' of their owners (`lookup`); each host sends each row of its share of the node data
   to the host writing its node's part (part p is written by host p mod H), which writes it at
   its place, then each edge of its share, with its rows of the edge data, to the host writing
   its destination's part (`received`);
5. each host writes its parts; the coordinator writes the id maps (the edge maps from the
   hosts' pieces) and the config, which every host then writes beside its parts, last.
No host reads data outside its share, and data rows travel a slice of a few MB at a time. The
files are those `partition_stream` writes, byte for byte for the same assignment. If anything
fails, every host removes what it wrote (`hostfolders`; a host's guard when its worker was
killed), so does this one (`out_folder.output_folder`), no config is written anywhere, and the
command says why in one line naming the host (`processes`).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from ...cluster.ip_config import parse_ip_config
from ...data.chunked import ChunkedGraph, npy_file_array
from ...errors import DistGraphError, PartitionError
from ...files import private_files
from ...progress import Progress
from ...launch.ssh import SshOptions
from ...rpc.auth import Credentials
from ...rpc.transport import Connections, PeerError, RemoteError, Request
from ..out_folder import check_out, clear_out, output_folder, write_config
from ..stream.adjacency import check_nodes, write_rows
from ..stream.numbering import edge_ranges, number_nodes
from ..stream.partwriter import EDGE_MAP, write_node_maps
from ..stream.source import from_chunked
from ..stream.writer import MAX_BUCKETS, Degrees, assign, check_request, data_specs, partition_config, split_weight
from ..report import PartitionStats
from . import datalayout as D
from . import protocol as P
from .host import peak_rss
from .processes import HostLost, HostProcesses
from .shares import host_of_part, my_parts, share_of, working_edges

ROWS_PER_MESSAGE = 1 << 20  # per-node arrays travel in slices of this many rows
ROW_BUCKET_EDGES = 1 << 23  # the most a row bucket of the undirected graph holds, unless MAX_BUCKETS needs more
MAP_ROWS_PER_MESSAGE = 1 << 18  # edge id maps in slices of this many (a host reads and sends them)
LONG_SECONDS = 7 * 24 * 3600.0  # a long operation's deadline: a dead host is noticed at once anyway
PROGRESS_SECONDS = 0.5
END_SECONDS = 10.0  # for the hosts to answer exit or abort


class _Hosts:
    """Calls to the hosts' processes; every wait also checks that they still run."""

    def __init__(self, processes: HostProcesses, timeout: float, progress: bool):
        self.processes, self.progress = processes, progress
        self.num = len(processes.addresses)
        self.conns = Connections(processes.addresses, timeout, Credentials(processes.secret.encode(),
                                                                           processes.encrypt), numpy_replies=True)

    def call(self, requests: list[Request], timeout: float | None = None) -> list:
        return self.conns.call(requests, timeout, self.processes.check)

    def each(self, op: str, arrays=(), **fields) -> list:
        """The same quick operation on every host."""
        return self.call([Request(h, {"op": op, **fields}, arrays) for h in range(self.num)])

    def long(self, op: str, desc: str, total: int, arrays=(), unit: str = "edge", **fields) -> list:
        """A long operation on every host at once, its progress (`unit`s) shown while it runs."""
        bar = Progress(total, desc, unit, enabled=self.progress, unit_scale=True)
        batch = self.conns.start([Request(h, {"op": op, **fields}, arrays) for h in range(self.num)], LONG_SECONDS)
        while batch.pending:
            done = self.each(P.PROGRESS)
            bar.set(min(total, sum(r.header.get("done", 0) for r in done if r is not None)))
            if batch.pending:
                time.sleep(PROGRESS_SECONDS)
        bar.close()
        return self.conns.wait(batch, self.processes.check)

    def close(self, op: str) -> list[int]:
        """Tell every host whose process still runs to end (`exit`, or `abort`: remove what it
        wrote), one after another (each answers at once, then ends), as far as it answers; the
        hosts' peak memory (bytes) of those that did."""
        replies = []
        try:
            for h in self.processes.running():
                try:
                    replies += self.conns.call([Request(h, {"op": op})], END_SECONDS)
                except DistGraphError:
                    continue
        finally:
            self.conns.close()
        return [int(r.header.get("peak_rss", 0)) for r in replies]


@private_files()
def partition_cluster(input_path: str | Path, graph_name: str, num_parts: int, out_path: str | Path,
                      ip_config: str | Path, ssh: SshOptions = SshOptions(), workspace: str | None = None,
                      part_method: str = "random", balance_train: bool = False, balance_edges: bool = False,
                      seed: int = 0, threads: int = 1, progress: bool = False, overwrite: bool = False,
                      encrypt: bool = False, timeout: float = 60.0,
                      scratch_dir: str | Path | None = None) -> PartitionStats:
    """Partition the chunked graph at `input_path` into `num_parts` parts with one process per
    machine of `ip_config` (paths as every host sees them, relative ones in `workspace`); part p
    is written under `out_path` on machine p mod H, the id maps and config on this host (and
    the config on every machine); each host's scratch buckets go under `scratch_dir` (default
    `out_path`). A lost host raises `HostLost`. See the module docstring."""
    t0 = time.perf_counter()
    machines = parse_ip_config(ip_config)
    work = Path(workspace).expanduser() if workspace else Path.cwd()
    local_in, out = (p if p.is_absolute() else work / p for p in (Path(input_path), Path(out_path)))
    source = from_chunked(local_in, every_file=False)
    num_parts = check_request(source, graph_name, num_parts, part_method)[0]
    with output_folder(out):  # held while the hosts work; what this run wrote here goes if it fails
        check_out(out, graph_name, overwrite)
        processes = HostProcesses(machines, str(work), ssh, encrypt)
        hosts = None
        try:
            processes.start()
            hosts = _Hosts(processes, timeout, progress)
            run = _Run(hosts, source, num_parts, out, graph_name)
            opened = hosts.each(P.OPEN, input=str(input_path), out=str(out_path), scratch=str(scratch_dir or out_path),
                                graph_name=graph_name, num_parts=num_parts, overwrite=overwrite,
                                hosts=[[a.host, a.port] for a in processes.addresses])
            for m, r in enumerate(opened):
                if (r.header["num_nodes"], r.header["num_edges"]) != (source.num_nodes(), source.num_edges()):
                    raise PartitionError(f"machine {m} reads another graph at {input_path} "
                                         f"({r.header['num_nodes']:,} nodes, {r.header['num_edges']:,} edges) than "
                                         f"this host; give every host the same metadata.json")
            run.data_layout(local_in, [r.header["data"] for r in opened])
            stats = run.all(part_method, balance_train, balance_edges, seed, threads, t0)
            peaks = hosts.close(P.EXIT)
            if progress:
                print("peak memory per host: " + ", ".join(f"machine {m} {b / 2**20:.0f} MB"
                                                           for m, b in enumerate(peaks))
                      + f"; this host (the coordinator) {peak_rss() / 2**20:.0f} MB")
            return stats
        except BaseException as exc:
            error = _stop_hosts(hosts, processes, exc)
            if error is exc:
                raise
            raise error from None
        finally:
            processes.stop()


def _stop_hosts(hosts: _Hosts | None, processes: HostProcesses, exc: BaseException) -> BaseException:
    """After `exc` stopped the run: every host told to remove what it wrote and its process
    ended; the error to raise, one line naming why: a lost host or a killed process first (a
    connection that dropped, or a host refusing for it, is only its sign), else `exc`."""
    if hosts is not None:
        hosts.close(P.ABORT)
    processes.stop()
    cause = processes.failure(told_to_end=True) or (exc if isinstance(exc, (PeerError, RemoteError)) else None)
    if cause is None:
        return exc
    return (HostLost if isinstance(cause, HostLost) else PartitionError)(f"distributed partitioning stopped: {cause}")


class _Run:
    """The phases of one distributed partitioning, as the coordinator drives them."""

    def __init__(self, hosts: _Hosts, source, num_parts: int, out: Path, graph_name: str):
        self.hosts, self.source, self.num_parts, self.out, self.graph_name = hosts, source, num_parts, out, graph_name
        self.n, self.m = source.num_nodes(), source.num_edges()
        share = -(-self.m // hosts.num)
        self.working = working_edges(share)
        # the undirected graph's row buckets: each host writes to all (fewer, larger ones take less time),
        # and this process holds one at a time
        self.bucket_edges = max(working_edges(share, ROW_BUCKET_EDGES), -(-self.m // MAX_BUCKETS))

    def data_layout(self, local_in: Path, reports: list) -> None:
        """Join the hosts' reports of the data chunks they hold, check each holds its share, send
        them the layout, and read the data through them from here on."""
        self.arrays = D.data_arrays(ChunkedGraph(local_in, every_file=False))
        D.join(self.arrays, reports, {"node": self.source.ntype_offsets, "edge": self.source.etype_offsets},
               [f"machine {a.machine_id} ({a.host})" for a in self.hosts.processes.addresses])
        self.hosts.each(P.LAYOUT, data=D.layout(self.arrays))
        data = {"node": {t: {} for t in self.source.ntypes},
                "edge": {":".join(c): {} for c in self.source.canonical_etypes}}
        for i, a in enumerate(self.arrays):
            data[a.kind][a.key][a.name] = _HostRows(self.hosts, i, a)
        self.source = dataclasses.replace(self.source, node_data=data["node"], edge_data=data["edge"])
        self.node_names, self.node_meta, self.edge_names, self.edge_meta = data_specs(self.source)

    def all(self, part_method, balance_train, balance_edges, seed, threads, t0) -> PartitionStats:
        deg = self.degrees()
        weights = split_weight(self.source, deg, balance_train, balance_edges)
        parts = assign(self.source, deg, self.num_parts, part_method, seed, self.out, weights, self.bucket_edges,
                       threads, self.hosts.progress, write_graph=self.undirected_graph(weights))
        t_assign = time.perf_counter() - t0
        numbering = number_nodes(self.source, parts, self.num_parts, deg.in_deg, self.edge_bucket_edges(parts, deg))
        del parts
        self.send_numbering(numbering, deg)
        del deg
        self.hosts.long(P.NODE_DATA, "shuffle node data", sum(sum(a.rows) for a in self.arrays if a.kind == "node"),
                        unit="row")
        counts = self.hosts.long(P.SHUFFLE, "shuffle edges", self.m)
        per_type = np.sum([r.header["per_type"] for r in counts], axis=0).astype(np.int64)
        cut = sum(int(r.header["cut"]) for r in counts)
        ranges = edge_ranges(per_type, self.num_parts, len(self.source.canonical_etypes))
        written = self.hosts.long(P.WRITE, "write partitions", self.m, [ranges.reshape(-1)])
        metas, train = [None] * self.num_parts, [0] * self.num_parts
        for h, r in enumerate(written):
            for p, raw, t in zip(my_parts(self.num_parts, h, self.hosts.num), r.header["metas"], r.header["train"]):
                metas[p], train[p] = P.meta_of(raw), int(t)
        node_files = write_node_maps(self.out, self.source, numbering.node_ranges, numbering.new2old)
        self.edge_maps(ranges)
        self.send_maps(list(node_files.values()) + [EDGE_MAP.format(":".join(c))
                                                    for c in self.source.canonical_etypes])
        stats, text = partition_config(self.out, self.graph_name, self.source, part_method, self.node_meta,
                                       self.edge_meta, metas, node_files, numbering.node_ranges, ranges, cut, train,
                                       t0, t_assign)
        self.hosts.each(P.COMMIT, config=text)
        write_config(self.out / f"{self.graph_name}.json", text)
        return stats

    def edge_bucket_edges(self, parts: np.ndarray, deg: Degrees) -> int:
        """In-edges of a bucket of the shuffled edges: a host's working size, unless its parts'
        buckets would then be more than MAX_BUCKETS (a host opens the bucket files of its own parts only)."""
        per_part = np.bincount(parts, weights=deg.in_deg, minlength=self.num_parts)
        per_host = np.bincount(host_of_part(np.arange(self.num_parts), self.hosts.num), weights=per_part,
                               minlength=self.hosts.num)
        return max(self.working, -(-int(per_host.max()) // MAX_BUCKETS))

    def share_slices(self):
        """Every host's share of the old ids in slices of at most ROWS_PER_MESSAGE rows, one of
        each host (whose share goes on) per round: [(host, lo, hi), ...]."""
        shares = [share_of(self.n, h, self.hosts.num) for h in range(self.hosts.num)]
        for at in range(0, max(hi - lo for lo, hi in shares), ROWS_PER_MESSAGE):
            yield [(h, lo + at, min(hi, lo + at + ROWS_PER_MESSAGE)) for h, (lo, hi) in enumerate(shares)
                   if lo + at < hi]

    def degrees(self) -> Degrees:
        """Every node's in- and out-degree: the hosts count their shares of the edges into the
        owners' slices, each asked here for its own a slice at a time."""
        self.hosts.long(P.DEGREES, "degrees", self.m)
        deg = Degrees(np.empty(self.n, dtype=np.int64), np.empty(self.n, dtype=np.int64))
        for asked in self.share_slices():
            replies = self.hosts.call([Request(h, {"op": P.DEGREE_ROWS, "lo": lo, "hi": hi}) for h, lo, hi in asked])
            for (h, lo, hi), r in zip(asked, replies):
                if len(r.arrays) != 2 or any(a.shape != (hi - lo,) for a in r.arrays):
                    raise PartitionError(f"machine {h} answered a request of the degrees of {hi - lo} nodes with "
                                         f"another shape")
                deg.in_deg[lo:hi], deg.out_deg[lo:hi] = r.arrays
        return deg

    def undirected_graph(self, weights):
        """How the partitioner's ParHIP file is written here from the hosts' pieces of each row bucket."""

        def write(path: Path, bounds: np.ndarray, max_entries: int) -> None:
            check_nodes(self.n)
            self.hosts.long(P.ADJACENCY, "undirected graph", self.m, [bounds])

            def bucket(b: int) -> dict[str, np.ndarray]:
                pieces = self.hosts.each(P.ADJACENCY_BUCKET, bucket=b)
                return {k: np.concatenate([r.arrays[i] for r in pieces]) for i, k in enumerate(("row", "col"))}

            write_rows(path, self.n, bounds, bucket, weights)

        return write

    def send_numbering(self, numbering, deg: Degrees) -> None:
        """To each host the new ids of its share of the old ids (a slice at a time, to every host
        at once), then to each its buckets and parts, after every host has cleared its output
        folder (one after another: they may share it)."""
        for asked in self.share_slices():
            self.hosts.call([Request(h, {"op": P.OLD2NEW, "lo": lo}, [numbering.old2new[lo:hi]])
                             for h, lo, hi in asked])
        clear_out(self.out, self.num_parts)
        for h in range(self.hosts.num):
            self.hosts.call([Request(h, {"op": P.CLEAR})])
        for h in range(self.hosts.num):
            arrays = [numbering.bounds, numbering.bucket_part, numbering.node_ranges.reshape(-1)]
            for p in my_parts(self.num_parts, h, self.hosts.num):
                lo, hi = int(numbering.node_ranges[p, 0, 0]), int(numbering.node_ranges[p, -1, 1])
                arrays += [numbering.new2old[lo:hi], deg.out_deg[numbering.new2old[lo:hi]]]
            self.hosts.call([Request(h, {"op": P.PLAN}, arrays)])

    def send_maps(self, rels: list[str]) -> None:
        """The id maps to every other host (`distgraph launch` checks each has them), a slice at a time."""
        others = [h for h in range(self.hosts.num) if not self.hosts.processes.job.plan.local[h]]
        for rel in rels:
            rows = npy_file_array(self.out / rel)
            for at in range(0, max(len(rows), 1), MAP_ROWS_PER_MESSAGE):
                piece = rows.read(at, at + MAP_ROWS_PER_MESSAGE)
                self.hosts.call([Request(h, {"op": P.MAP_ROWS, "file": rel, "start": at, "total": len(rows)},
                                         [piece]) for h in others])

    def edge_maps(self, ranges: np.ndarray) -> None:
        """Each edge type's id map, from the pieces the hosts wrote for their parts."""
        from ..stream.npyfile import NpyFile

        sizes = ranges[:, :, 1] - ranges[:, :, 0]
        type_at = np.cumsum(sizes, axis=0) - sizes
        for t, c in enumerate(self.source.canonical_etypes):
            key = ":".join(c)
            f = NpyFile(self.out / EDGE_MAP.format(key), np.int64, (int(sizes[:, t].sum()),))
            try:
                for p in range(self.num_parts):
                    start, end = int(type_at[p, t]), int(type_at[p, t] + sizes[p, t])
                    for at in range(start, end, MAP_ROWS_PER_MESSAGE):
                        count = min(MAP_ROWS_PER_MESSAGE, end - at)
                        (r,) = self.hosts.call([Request(host_of_part(p, self.hosts.num),
                                                        {"op": P.EDGE_MAP_ROWS, "key": key, "start": at,
                                                         "count": count})])
                        f.write_at(at, r.arrays[0])
            finally:
                f.close()


class _HostRows:
    """A data array as the coordinator reads it: rows asked of the hosts whose shares hold them."""

    def __init__(self, hosts: _Hosts, index: int, array: D.DataArray):
        self.hosts, self.index, self.array = hosts, index, array
        self.dtype, self.shape = np.dtype(array.dtype), (int(sum(array.rows)), *array.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> np.ndarray:
        lo, hi, _ = key.indices(len(self))
        out = np.empty((max(0, hi - lo), *self.array.shape), dtype=self.dtype)
        step = D.rows_per_message(self.array.row_bytes)
        for at in range(lo, hi, step):
            end = min(hi, at + step)
            for r in self.hosts.each(P.DATA_ROWS, array=self.index, lo=at, hi=end):
                first, raw = P.field(r.header, "lo"), r.arrays[0]
                count = raw.shape[0] if raw.ndim else 0
                if count and not at <= first <= first + count <= end:
                    raise PartitionError(f"rows {first}..{first + count} of {self.array.what} came for {at}..{end}")
                out[first - lo:first - lo + count] = D.from_bytes(self.array, raw, count)
        return out
