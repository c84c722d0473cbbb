"""`distgraph kge train|eval`: DGL-KE's `dglke_train` / `dglke_eval` flags, faster."""

from __future__ import annotations

import argparse
from dataclasses import fields

from ..kge.config import MODEL_ALIASES, MODEL_NAMES, EvalConfig, TrainConfig, field_defaults

_NAMED_DELIMITERS = {"\\t": "\t", "tab": "\t", "TAB": "\t", "space": " ", "comma": ",", "pipe": "|"}


def _delimiter(text: str) -> str:
    """Field separator; `\\t`, `tab`, `space`, `comma` and `pipe` spell the awkward ones."""
    if not text:
        raise argparse.ArgumentTypeError("the delimiter must not be empty")
    return _NAMED_DELIMITERS.get(text, text)


def _add_data_args(p: argparse.ArgumentParser, d: dict) -> None:
    p.add_argument("--data_path", default=d.get("data_path"),
                   help="folder holding the dataset (built-in NAME is looked up in DATA_PATH/NAME)")
    p.add_argument("--dataset", default=d.get("dataset"),
                   help="FB15k, FB15k-237, wn18, wn18rr, Freebase, or your dataset's name")
    p.add_argument("--format", default=d.get("format"),
                   help="built_in, raw_udd_{hrt} (names) or udd_{hrt} (ids); the letters give the column order")
    p.add_argument("--data_files", nargs="+", default=d.get("data_files"),
                   help="raw_udd: TRAIN [VALID TEST]; udd: ENTITIES RELATIONS TRAIN [VALID TEST]")
    p.add_argument("--delimiter", type=_delimiter, default=d.get("delimiter"),
                   help="field separator of the data files (default TAB; '\\t', tab, space, comma, pipe accepted)")


def _add_run_args(p: argparse.ArgumentParser, d: dict) -> None:
    p.add_argument("--batch_size_eval", type=int, default=d["batch_size_eval"],
                   help="test triples scored against all entities at once")
    p.add_argument("--num_proc", type=int, default=d["num_proc"], help="processes (Hogwild training, split testing)")
    p.add_argument("--num_thread", type=int, default=d["num_thread"], help="torch threads per process")


def _add_train_args(p: argparse.ArgumentParser) -> None:
    d = field_defaults(TrainConfig)
    a = p.add_argument
    a("--model_name", default=d["model_name"], choices=[*MODEL_NAMES, *MODEL_ALIASES], help="score function")
    _add_data_args(p, d)
    a("--save_path", default=d["save_path"], help="models go to SAVE_PATH/<model>_<dataset>_<n>/")
    a("--no_save_emb", action="store_true", help="do not save the embeddings")
    a("--max_step", type=int, default=d["max_step"], help="training steps of EACH process")
    a("--batch_size", type=int, default=d["batch_size"], help="positive triples per step")
    a("--neg_sample_size", type=int, default=d["neg_sample_size"],
      help="negatives per positive, shared by chunks of this many positives")
    a("--neg_deg_sample", action="store_true", help="also use the chunk's own entities as negatives (degree-based)")
    a("-adv", "--neg_adversarial_sampling", action="store_true", help="self-adversarial weighting of negatives")
    a("-a", "--adversarial_temperature", type=float, default=d["adversarial_temperature"])
    a("--hidden_dim", type=int, default=d["hidden_dim"], help="embedding size")
    a("-g", "--gamma", type=float, default=d["gamma"], help="margin of TransE, TransR and RotatE scores")
    a("--lr", type=float, default=d["lr"], help="Adagrad learning rate")
    a("-rc", "--regularization_coef", type=float, default=d["regularization_coef"])
    a("-rn", "--regularization_norm", type=int, default=d["regularization_norm"])
    a("-de", "--double_ent", action="store_true", help="entity embeddings of 2 x hidden_dim (RotatE, ComplEx)")
    a("-dr", "--double_rel", action="store_true", help="relation embeddings of 2 x hidden_dim (ComplEx)")
    a("-log", "--log_interval", type=int, default=d["log_interval"], help="print training averages every N steps")
    a("--valid", action="store_true", help="evaluate on the validation set every --eval_interval steps")
    a("--eval_interval", type=int, default=d["eval_interval"])
    a("--test", action="store_true", help="evaluate on the test set after training")
    _add_run_args(p, d)
    a("--seed", type=int, default=d["seed"], help="seed of initialisation, edge split and sampling")
    a("--checkpoint_dir", default=d["checkpoint_dir"], help="save a checkpoint into this folder every "
                                                            "--checkpoint_interval steps (the newest two are kept)")
    a("--checkpoint_interval", type=int, default=d["checkpoint_interval"], help="steps between checkpoints")
    a("--resume", action="store_true", help="continue from the newest complete checkpoint in --checkpoint_dir")


def register(subparsers) -> None:
    """Add `kge` with its `train` and `eval` sub-commands."""
    kge = subparsers.add_parser("kge", help="train and evaluate knowledge-graph embeddings (DGL-KE's flags)",
                                description="Knowledge-graph embeddings: DGL-KE's models and flags.")
    sub = kge.add_subparsers(dest="kge_command", required=True, metavar="COMMAND")
    train = sub.add_parser("train", help="train embeddings (dglke_train)",
                           description="Train knowledge-graph embeddings with Hogwild processes.")
    _add_train_args(train)
    train.set_defaults(func=train_command)
    ev = sub.add_parser("eval", help="filtered ranking of a saved model (dglke_eval)",
                        description="Filtered MRR, MR and HITS@1/3/10 of a saved model on its test set.")
    ev.add_argument("--model_path", required=True, help="folder written by `kge train` (holds config.json)")
    _add_data_args(ev, {})
    _add_run_args(ev, field_defaults(EvalConfig))
    ev.set_defaults(func=eval_command)


def train_config(args: argparse.Namespace) -> TrainConfig:
    """TrainConfig from parsed `kge train` arguments."""
    return TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig)})


def eval_config(args: argparse.Namespace) -> EvalConfig:
    """EvalConfig from parsed `kge eval` arguments."""
    return EvalConfig(**{f.name: getattr(args, f.name) for f in fields(EvalConfig)})


def train_command(args: argparse.Namespace) -> int:
    """`distgraph kge train`."""
    from ..kge.pipeline import train_kge

    train_kge(train_config(args))
    return 0


def eval_command(args: argparse.Namespace) -> int:
    """`distgraph kge eval`."""
    from ..kge.pipeline import eval_kge

    eval_kge(eval_config(args))
    return 0
