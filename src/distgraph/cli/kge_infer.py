"""`distgraph kge predict|emb-sim`: DGL-KE's `dglke_predict` and `dglke_emb_sim` flags; settings
are checked before torch is imported."""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..kge.infer.config import PREDICT_MODES, SCORE_FUNCS, SIM_FUNCS, SIM_MODES, EmbSimConfig, PredictConfig


def _common(p: argparse.ArgumentParser, modes: tuple, default_mode: str) -> None:
    a = p.add_argument
    a("--data_files", nargs="+", default=None, help="the lists the format names, one id (or name) a line")
    a("--raw_data", action="store_true", help="the lists hold names (looked up in the mapping files), and so will "
                                              "the output")
    a("--exec_mode", default=default_mode, help=f"{', '.join(modes)} (default {default_mode})")
    a("--topK", "--topk", dest="topk", type=int, default=10, help="results kept (per item with batch_* modes)")
    a("--output", default="result.tsv", help="the tab-separated result file")
    a("--gpu", type=int, default=-1, help="-1 only: inference runs on the CPU")


def register(sub) -> None:
    """Add `kge predict` and `kge emb-sim` to the `kge` sub-commands."""
    p = sub.add_parser("predict", help="score triples of a saved model, keep the best (dglke_predict)",
                       description="The K best-scored (head, relation, tail) triples of a saved model.")
    p.add_argument("--model_path", required=True,
                   help="folder written by `kge train` or dglke_train (holds config.json)")
    p.add_argument("--format", required=True, help="h_r_t, h_r_*, h_*_t, *_r_t, h_*_*, *_r_* or *_*_t "
                                                   "(*: every entity or relation)")
    _common(p, PREDICT_MODES, "all")
    p.add_argument("--score_func", default="none", help=f"{' or '.join(SCORE_FUNCS)} (default none)")
    p.add_argument("--entity_mfile", help="entity id mapping (default: the config's emap_file, in the model folder "
                                          "or the data folder)")
    p.add_argument("--rel_mfile", help="relation id mapping (default: the config's rmap_file, found alike)")
    p.set_defaults(func=predict_command)
    s = sub.add_parser("emb-sim", help="the most similar embeddings (dglke_emb_sim)",
                       description="The K most similar pairs of rows of an embedding table.")
    s.add_argument("--emb_file", required=True, help="the embeddings (.npy), e.g. a saved model's entity table")
    s.add_argument("--format", required=True, help="l_r, l_*, *_r or * (*: every row)")
    _common(s, SIM_MODES, "all")
    s.add_argument("--sim_func", default="cosine", help=f"{', '.join(SIM_FUNCS)} (default cosine)")
    s.add_argument("--mfile", help="id mapping of the rows (--raw_data; default for a saved model's entity or "
                                   "relation table: the model's own)")
    s.set_defaults(func=emb_sim_command)


def _cpu(args: argparse.Namespace) -> None:
    if args.gpu >= 0:
        raise InputError(f"--gpu {args.gpu}: inference runs on the CPU here; leave --gpu at -1")


def predict_command(args: argparse.Namespace) -> int:
    """`distgraph kge predict`."""
    _cpu(args)
    cfg = PredictConfig.from_args(args)
    cfg.check()
    from ..kge.infer.predict import predict
    from ..kge.infer.query import write_tsv

    columns = predict(cfg)
    write_tsv(cfg.output, columns)
    print(f"{len(columns['score'])} triples -> {cfg.output}")
    return 0


def emb_sim_command(args: argparse.Namespace) -> int:
    """`distgraph kge emb-sim`."""
    _cpu(args)
    cfg = EmbSimConfig.from_args(args)
    cfg.check()
    from ..kge.infer.emb_sim import emb_sim
    from ..kge.infer.query import write_tsv

    columns = emb_sim(cfg)
    write_tsv(cfg.output, columns)
    print(f"{len(columns['score'])} pairs -> {cfg.output}")
    return 0
