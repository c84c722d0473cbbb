"""Partition node and edge data served read-only from the partition's files
(`--features_on_disk`): on two loopback machines and standalone, pulls give the files' rows,
no shared-memory copy of them exists, and every write gets the one read-only error."""

import numpy as np
import pytest
import torch

from distgraph.cluster.shm_files import SegmentNamer
from distgraph.data import generate_sbm
from distgraph.dist_graph import DistGraph
from distgraph.errors import DistGraphError, InputError
from distgraph.optim.row_adagrad import RowAdagrad
from distgraph.partition import partition_graph
from distgraph.rpc.transport import Request

from .conftest import Cluster, as_trainer

READ_ONLY = "'node~_N~feat' is read-only: it is served from the partition's files on disk \\(--features_on_disk\\)"
NODE_DATA = ("feat", "label", "train_mask", "val_mask", "test_mask")


def file_rows(part_config, parts: range, name: str, kind: str = "node._N") -> torch.Tensor:
    return torch.from_numpy(np.concatenate([np.load(part_config.parent / f"part{p}" / f"{kind}.{name}.npy")
                                            for p in parts]))


def segments(namer: SegmentNamer, tensor: str) -> list[str]:
    """The shared-memory segments (not the manifest) of `tensor` on `namer`'s machine."""
    manifest = namer.manifest(tensor)
    return [f.name for f in namer.all_files() if f.name.startswith(manifest.stem + ".") and f != manifest]


@pytest.mark.multiprocess
def test_two_machines_serve_the_files_rows_without_copies_and_refuse_writes(parts, tmp_path):
    cluster = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1], features_on_disk=True)
    try:
        with as_trainer(cluster, host_shm=False) as dist:  # machine 1's rows travel through its server
            g = DistGraph("g")
            client = dist.get_context().client
            every = torch.arange(g.num_nodes())
            for name in NODE_DATA:
                assert torch.equal(g.ndata[name][every], file_rows(parts[2], range(2), name))
            n1 = int(g.get_partition_book().partid2nids(1).numel())
            assert client.remote_rows["node~_N~feat"] == n1 > 0  # machine 1's rows came from its server
            local = client.local_store.shard("node~_N~feat").meta
            assert local.file == str((parts[2].parent / "part0" / "node._N.feat.npy").absolute())
            for m in (0, 1):
                namer = SegmentNamer(cluster.session, "g", m)
                assert all(not segments(namer, f"node~_N~{name}") for name in NODE_DATA)
                assert namer.manifest("node~_N~feat").is_file()
                assert len(segments(namer, "node~_N~#in_degree")) == 1  # computed: in shared memory still

            before = g.ndata["feat"][every]
            ids = torch.tensor([0, g.num_nodes() - 1])  # one row of each machine
            with pytest.raises(InputError, match=READ_ONLY):
                g.ndata["feat"][ids] = torch.zeros(2, 16)
            with pytest.raises(InputError, match=READ_ONLY):
                dist.DistTensor((g.num_nodes(), 16), torch.float32, "node~_N~feat").push_rows(
                    ids, torch.ones(2, 16), {"kind": "adagrad", "lr": 0.1, "eps": 1e-10})
            for m, row in ((0, ids[:1]), (1, ids[1:])):  # a push straight to a server: refused, no crash
                with pytest.raises(DistGraphError, match=READ_ONLY):
                    client.channel.call([Request(client.leaders[m], {"op": "push", "name": "node~_N~feat"},
                                                 [row, torch.zeros(1, 16)])])
            assert torch.equal(g.ndata["feat"][every], before)
    finally:
        codes = cluster.stop()
    assert all(code == 0 for code in codes.values())


@pytest.fixture(scope="module")
def weighted_part(tmp_path_factory):
    """A 1-part partition with node and edge data."""
    g = generate_sbm(300, 2000, feat_dim=4, seed=1)
    g.edata["w"] = torch.arange(g.num_edges(), dtype=torch.float16)
    out = tmp_path_factory.mktemp("weighted")
    partition_graph(g, "g", 1, out, part_method="random")
    return out / "g.json"


@pytest.mark.parametrize("how", ["keyword", "environment"])
def test_standalone_serves_the_files_rows_and_refuses_writes(runtime, weighted_part, monkeypatch, tmp_path, how):
    if how == "environment":
        monkeypatch.setenv("DISTGRAPH_FEATURES_ON_DISK", "1")
    runtime.initialize(part_config=str(weighted_part), **({"features_on_disk": True} if how == "keyword" else {}))
    g = DistGraph("g", part_config=str(weighted_part))
    assert torch.equal(g.ndata["feat"][0:300], file_rows(weighted_part, range(1), "feat"))
    assert torch.equal(g.edata["w"][0:2000], file_rows(weighted_part, range(1), "w", "edge._N:_E:_N"))
    store = runtime.get_context().client.local_store
    assert store.shard("node~_N~feat").meta.on_disk and store.shard("edge~_N:_E:_N~w").meta.on_disk
    assert not store.shard("node~_N~#in_degree").meta.on_disk
    feat = g.ndata["feat"]
    with pytest.raises(InputError, match=READ_ONLY):
        feat[torch.tensor([3])] = torch.zeros(1, 4)
    with pytest.raises(InputError, match=READ_ONLY):
        RowAdagrad(feat, 0.1)  # its steps write mapped rows in place
    runtime.save_checkpoint(tmp_path / "ck", [feat])  # reading is fine
    with pytest.raises(InputError, match=READ_ONLY):
        runtime.load_checkpoint(tmp_path / "ck", [feat])
    assert torch.equal(feat[0:300], file_rows(weighted_part, range(1), "feat"))
