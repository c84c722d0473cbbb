"""Results in the input's ids: the examples' --save_embeddings / --save_predictions write one
part per trainer that together hold every node once, keyed by its original id (integer or
string, homogeneous or a heterograph's labelled type), standalone and launched; the accuracy
of the saved predictions is the one the script printed; `load_results` joins the parts in the
input's order and refuses incomplete or mixed folders; the layer-wise inference equals a
full-graph forward pass."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import distgraph as dg
from distgraph.errors import InputError
from distgraph.partition import partition_graph

from .conftest import child_env

pytestmark = pytest.mark.multiprocess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAGE = EXAMPLES / "graphsage" / "train_dist.py"
RGCN = EXAMPLES / "rgcn" / "entity_classify_dist.py"
SAGE_ARGS = "--graph_name g --num_epochs 2 --batch_size 200 --fan_out 5,5 --num_hidden 12 --seed 3"
RGCN_ARGS = ("--graph-name mag --fanout 5,5 --batch-size 128 --n-hidden 12 --eval-batch-size 500 --use-self-loop "
             "--n-bases 2 --n-epochs 2 --sparse-embedding --sparse-lr 0.06")
PRINTED = re.compile(r"full-graph inference: .*\((\d+)/(\d+) test")


@pytest.fixture(scope="module")
def named_parts(graph, tmp_path_factory):
    """The sbm graph with string ids ('n<k>', not in sorted order), in 1 and 2 parts."""
    root = tmp_path_factory.mktemp("named")
    g = copy.copy(graph)
    g.node_names = np.array([f"n{k}" for k in np.random.default_rng(1).permutation(g.num_nodes())])
    out = {}
    for k in (1, 2):
        partition_graph(g, "g", k, root / f"p{k}", part_method="random")
        out[k] = root / f"p{k}" / "g.json"
    return g, out


def _run(argv: list[str]) -> str:
    done = subprocess.run([sys.executable, *map(str, argv)], env=child_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _printed(output: str) -> tuple[int, int]:
    found = PRINTED.findall(output)
    assert len(found) == 1, output[-3000:]
    return int(found[0][0]), int(found[0][1])


def _saved_accuracy(folder: Path, labels: torch.Tensor, test_mask: torch.Tensor) -> tuple[int, int]:
    """(correct, total) over the test nodes of the saved predictions, joined by original id."""
    pred = dg.load_results(folder).column("pred").to_numpy()
    mask = test_mask.numpy().astype(bool)
    return int((pred[mask] == labels.numpy()[mask]).sum()), int(mask.sum())


def _parts(folder: Path, count: int) -> list:
    """Each part's node ids, straight from its files (Parquet and .npy agree)."""
    ids = []
    for r in range(count):
        table = pq.read_table(folder / f"part-{r:05d}.parquet")
        assert table.column_names[0] == "node_id"
        np.testing.assert_array_equal(table.column("node_id").to_numpy(zero_copy_only=False),
                                      np.load(folder / f"part-{r:05d}.node_id.npy"))
        ids.append(table.column("node_id").to_numpy(zero_copy_only=False))
    assert not (folder / f"part-{count:05d}.json").exists()
    return ids


def test_standalone_graphsage_saves_every_node_by_its_id(parts, graph, tmp_path):
    out = _run([SAGE, *SAGE_ARGS.split(), "--part_config", parts[1], "--save_predictions", tmp_path / "pred",
                "--save_embeddings", tmp_path / "emb"])
    assert _saved_accuracy(tmp_path / "pred", graph.ndata["label"], graph.ndata["test_mask"]) == _printed(out)
    (ids,) = _parts(tmp_path / "pred", 1)
    assert sorted(ids.tolist()) == list(range(graph.num_nodes()))
    emb = dg.load_results(tmp_path / "emb", numpy=True)
    assert emb["node_id"].tolist() == list(range(graph.num_nodes())) and emb["emb"].shape == (graph.num_nodes(), 12)
    assert emb["emb"].dtype == np.float32 and (emb["emb"] >= 0).all() and emb["emb"].std() > 0  # after ReLU
    table = dg.load_results(tmp_path / "pred")
    assert str(table.schema.field("prob").type) == "fixed_size_list<element: float>[8]"
    prob = np.stack(table.column("prob").to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(prob.sum(1), 1, rtol=1e-5)
    assert np.array_equal(prob.argmax(1), table.column("pred").to_numpy())


def test_launched_string_ids_four_trainers(named_parts, tmp_path, launches):
    """Also --log_dir: each trainer's metrics as a TensorBoard run (other machines' rows travel:
    DISTGRAPH_HOST_SHM=0, so each epoch pulls remote rows)."""
    g, parts = named_parts
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SAGE} {SAGE_ARGS} --save_predictions "
                                               f"{tmp_path / 'pred'} --log_dir {tmp_path / 'logs'}",
                   num_trainers=2, num_samplers=1, DISTGRAPH_HOST_SHM="0")
    assert job.wait(300) == 0, job.output[-3000:]
    _check_logs(tmp_path / "logs", 4, 2)
    pieces = _parts(tmp_path / "pred", 4)
    assert all(len(p) for p in pieces) and sum(map(len, pieces)) == g.num_nodes()
    assert sorted(np.concatenate(pieces).tolist()) == sorted(g.node_names.tolist())  # each node once
    table = dg.load_results(tmp_path / "pred")
    assert table.column_names == ["node_id", "pred", "prob"]
    assert table.column("node_id").to_pylist() == g.node_names.tolist()  # in the input's order
    assert _saved_accuracy(tmp_path / "pred", g.ndata["label"], g.ndata["test_mask"]) == _printed(job.output)
    arrays = dg.load_results(tmp_path / "pred", numpy=True)
    assert arrays["node_id"].tolist() == g.node_names.tolist()
    np.testing.assert_array_equal(arrays["pred"], table.column("pred").to_numpy())
    meta = json.loads((tmp_path / "pred" / "part-00003.json").read_text())
    assert (meta["num_parts"], meta["node_id"], meta["kind"]) == (4, "string", "predictions")


def _check_logs(root: Path, trainers: int, epochs: int) -> None:
    """Every trainer's run: TensorBoard's reader finds each metric once per epoch, as in its JSON lines."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    val = []
    for rank in range(trainers):
        run = root / f"trainer-{rank:03d}"
        acc = EventAccumulator(str(run))
        acc.Reload()
        assert sorted(acc.Tags()["scalars"]) == ["accuracy/train", "accuracy/val", "epoch_seconds", "loss",
                                                 "remote_rows", "seeds_per_s"]
        lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        assert [x["step"] for x in lines] == list(range(epochs)) == [s.step for s in acc.Scalars("loss")]
        assert [s.value for s in acc.Scalars("loss")] == pytest.approx([x["loss"] for x in lines])
        assert all(x["loss"] > 0 and x["seeds_per_s"] > 0 and x["remote_rows"] > 0 for x in lines)
        val.append([x["accuracy/val"] for x in lines])
    assert all(v == val[0] for v in val)  # summed over the trainers: one figure


def test_standalone_rgcn_saves_the_labelled_type(mag_parts, mag_graph, tmp_path):
    out = _run([RGCN, *RGCN_ARGS.split(), "--conf-path", mag_parts[1], "--standalone", "--save-predictions",
                tmp_path / "pred", "--log-dir", tmp_path / "logs"])
    lines = [json.loads(x) for x in (tmp_path / "logs" / "trainer-000" / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [0, 1] and all(0 <= x["accuracy/test"] <= 1 for x in lines)
    printed = re.findall(r"Epoch \d+: .* Val Acc ([\d.]+), Test Acc ([\d.]+)", out)
    assert [(f"{x['accuracy/val']:.4f}", f"{x['accuracy/test']:.4f}") for x in lines] == printed
    paper = mag_graph.nodes["paper"].data
    assert _saved_accuracy(tmp_path / "pred", paper["label"], paper["test_mask"]) == _printed(out)
    (ids,) = _parts(tmp_path / "pred", 1)
    assert sorted(ids.tolist()) == list(range(mag_graph.num_nodes("paper")))


def test_launched_rgcn_embeddings_and_predictions(mag_parts, mag_graph, tmp_path, launches):
    command = (f"{sys.executable} {RGCN} {RGCN_ARGS} --save-predictions {tmp_path / 'pred'} "
               f"--save-embeddings {tmp_path / 'emb'}")
    job = launches(tmp_path, mag_parts[2], [1, 1], command)
    assert job.wait(300) == 0, job.output[-3000:]
    paper = mag_graph.nodes["paper"].data
    assert _saved_accuracy(tmp_path / "pred", paper["label"], paper["test_mask"]) == _printed(job.output)
    pieces = _parts(tmp_path / "emb", 2)
    assert sorted(np.concatenate(pieces).tolist()) == list(range(mag_graph.num_nodes("paper")))
    emb = dg.load_results(tmp_path / "emb")
    assert emb.num_rows == mag_graph.num_nodes("paper") and str(emb.schema.field("emb").type).endswith("[12]")
    assert json.loads((tmp_path / "emb" / "part-00001.json").read_text())["ntype"] == "paper"


def test_layerwise_inference_equals_a_full_graph_pass(runtime, parts, graph, tmp_path):
    """The DistTensor layers over batches of full neighbourhoods give what one pass of the model
    over the whole in-memory graph gives (in original ids, through the saved files)."""
    runtime.initialize(part_config=str(parts[1]))
    g = dg.DistGraph("g", part_config=str(parts[1]))
    torch.manual_seed(0)
    model = dg.nn.GraphSAGE(16, 10, 4, num_layers=2, dropout=0.5).eval()
    layers = [lambda b, h: torch.relu(model.layers[0](b, h)), lambda b, h: model.layers[1](b, h)]
    outputs = dg.layerwise_inference(g, layers, lambda ids: g.ndata["feat"][ids], [10, 4], batch_size=300)
    assert dg.save_embeddings(tmp_path / "emb", g, outputs[0], batch_size=700) == graph.num_nodes()
    dg.save_predictions(tmp_path / "pred", g, outputs[1])
    src, dst = graph.edges()
    deg = torch.bincount(dst, minlength=graph.num_nodes()).clamp(min=1).unsqueeze(1)

    def sage(conv, h):  # h_self W_self + mean(in-neighbours) W_neigh + b, over the whole graph
        mean = torch.zeros_like(h).index_add_(0, dst, h[src]) / deg
        return conv.fc_self(h) + conv.fc_neigh(mean) + conv.bias

    with torch.no_grad():
        hidden = torch.relu(sage(model.layers[0], graph.ndata["feat"]))
        logits = sage(model.layers[1], hidden)
    np.testing.assert_allclose(dg.load_results(tmp_path / "emb", numpy=True)["emb"], hidden.numpy(), atol=1e-5)
    pred = dg.load_results(tmp_path / "pred", numpy=True)
    np.testing.assert_allclose(pred["prob"], torch.softmax(logits, 1).numpy(), atol=1e-5)
    assert np.array_equal(pred["pred"], logits.argmax(1).numpy())


def test_even_split_is_node_split_of_every_node(parts):
    from distgraph.dataloading.split import even_split
    from distgraph.partition import load_partition_book

    book = load_partition_book(parts[2], 0)
    for world in (2, 4, 6):  # trainers spread evenly over the 2 machines
        shares = [even_split(2000, r, world) for r in range(world)]
        for r, share in enumerate(shares):
            assert torch.equal(share, dg.node_split(torch.arange(2000), book, rank=r, world_size=world))
        assert torch.equal(torch.cat(shares), torch.arange(2000))


def _fake_results(folder: Path, parts: int, rows: list[np.ndarray]) -> None:
    """A results folder written by ResultWriter for ids `rows[r]` of part r (a 1-type map)."""
    from distgraph.results import ResultWriter

    class Ids:
        ntype, named = "_N", False

        def __len__(self):
            return 6

        def index(self, new_ids):
            return np.asarray(new_ids, dtype=np.int64)

    for r, ids in enumerate(rows):
        w = ResultWriter(folder, Ids(), {"emb": (np.float32, 2)}, r, parts, len(ids), "embeddings")
        w.add(ids, {"emb": np.stack([ids, -ids], 1)})
        w.close()


def test_load_results_refuses_incomplete_or_mixed_folders(tmp_path):
    _fake_results(tmp_path / "ok", 2, [np.array([4, 0, 2]), np.array([5, 1, 3])])
    got = dg.load_results(tmp_path / "ok", numpy=True)
    assert got["node_id"].tolist() == list(range(6)) and got["emb"][:, 0].tolist() == list(range(6))
    _fake_results(tmp_path / "missing", 3, [np.array([0, 1]), np.array([2, 3])])
    with pytest.raises(InputError, match="lacks part-00002 of 3 parts.*copy every host's parts"):
        dg.load_results(tmp_path / "missing")
    _fake_results(tmp_path / "twice", 2, [np.array([0, 1, 2]), np.array([2, 3, 4])])
    with pytest.raises(InputError, match="exactly once"):
        dg.load_results(tmp_path / "twice")
    _fake_results(tmp_path / "stale", 3, [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])])
    _fake_results(tmp_path / "stale", 2, [np.array([0, 1, 2]), np.array([3, 4, 5])])  # part 2 removed
    assert dg.load_results(tmp_path / "stale").num_rows == 6 and not (tmp_path / "stale" / "part-00002.json").exists()
    with pytest.raises(InputError, match="does not exist"):
        dg.load_results(tmp_path / "nowhere")
