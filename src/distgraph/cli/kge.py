"""`distgraph kge train|eval|partition|dist-train`: DGL-KE's `dglke_train`, `dglke_eval`,
`dglke_partition` and `dglke_dist_train` flags (`predict` and `emb-sim`: kge_infer.py). Nothing here imports torch: the commands check
their flags and input files first (`kge.prepare`), and only a process that trains or ranks
loads it."""

from __future__ import annotations

import argparse
import os
from dataclasses import fields
from pathlib import Path

from ..kge.config import LOSS_GENRES, MODEL_ALIASES, MODEL_NAMES, EvalConfig, TrainConfig, field_defaults
from ..errors import InputError
from .copy import add_ssh_args, ssh_options

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
    a = p.add_argument
    a("--batch_size_eval", type=int, default=d["batch_size_eval"], help="test triples ranked at once")
    a("--num_proc", type=int, default=d["num_proc"], help="processes (training); kge eval: threads x --num_thread")
    a("--num_thread", type=int, default=d["num_thread"], help="torch threads per process")
    a("--neg_sample_size_eval", type=int, default=d["neg_sample_size_eval"],
      help="rank each triple against this many sampled entities (-1: against all)")
    a("--neg_deg_sample_eval", action="store_true", help="sample those candidates by degree (needs --no_eval_filter)")
    a("--eval_percent", type=float, default=d["eval_percent"], help="evaluate this fraction of the triples")
    a("--no_eval_filter", action="store_true", help="do not filter the known triples out of the rankings")


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
    a("--loss_genre", default=d["loss_genre"], choices=LOSS_GENRES,
      help="loss of each score: Logsigmoid, Logistic and BCE are -log sigmoid(+-score), Hinge is "
           "max(0, margin -+ score)")
    a("-pw", "--pairwise", action="store_true",
      help="the loss of each positive-minus-negative score difference (Hinge or Logistic; not with -adv)")
    a("-m", "--margin", type=float, default=d["margin"], help="margin of the Hinge loss")
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
    a("--force_sync_interval", type=int, default=d["force_sync_interval"],
      help="the processes wait for each other every N steps (-1: never)")
    a("--rel_part", action="store_true", help="each process trains on whole relations (balanced by triples)")
    a("--async_update", action="store_true", help="apply each step's sparse updates in a thread while the next step "
                                                  "computes (its rows may miss them)")
    a("--has_edge_importance", action="store_true", help="the training file's 4th column weighs each triple")
    a("--global_neg_share", type=float, default=d["global_neg_share"],
      help="distributed training: the share of each chunk's negatives drawn from all entities (one draw per "
           "batch, shared by its chunks); the rest come from the trainer's machine (DGL-KE takes them all from there)")
    b = p.add_argument_group("entity tables larger than memory", "the entity table and its Adagrad state on disk in "
                             "P partitions, trained bucket by bucket (PyTorch-BigGraph's scheme; docs/kge.md)")
    b.add_argument("--num_entity_partitions", type=int, default=d["num_entity_partitions"], metavar="P",
                   help="entity partitions on disk (1: the table in memory)")
    b.add_argument("--memory_budget", type=float, default=d["memory_budget"], metavar="GIB",
                   help="memory the tables may use: P is chosen from it (the command says which and why)")
    b.add_argument("--bucket_dir", default=d["bucket_dir"],
                   help="folder of the buckets and partition files (default: CHECKPOINT_DIR/buckets, or a "
                        "temporary folder in --save_path)")
    p.add_argument("--gpu", type=int, nargs="+", default=None,
                   help="GPU ids: one training process per id at least (--num_proc a multiple of their number), "
                        "each on its GPU; -1 (the default): the CPU")
    p.add_argument("--mix_cpu_gpu", action="store_true",
                   help="keep the embeddings in CPU memory and compute on the GPU (several processes always do)")


def register(subparsers) -> None:
    """Add `kge` with its `train` and `eval` sub-commands."""
    kge = subparsers.add_parser("kge", help="train and evaluate knowledge-graph embeddings (DGL-KE's flags)",
                                description="Knowledge-graph embeddings: DGL-KE's models and flags.")
    sub = kge.add_subparsers(dest="kge_command", required=True, metavar="COMMAND")
    train = sub.add_parser("train", help="train embeddings (dglke_train)",
                           description="Train knowledge-graph embeddings with Hogwild processes, on CPUs or GPUs.")
    _add_train_args(train)
    train.set_defaults(func=train_command)
    ev = sub.add_parser("eval", help="filtered ranking of a saved model (dglke_eval)",
                        description="Filtered MRR, MR and HITS@1/3/10 of a saved model on its test set.")
    ev.add_argument("--model_path", required=True, help="folder written by `kge train` (holds config.json)")
    _add_data_args(ev, {})
    _add_run_args(ev, field_defaults(EvalConfig))
    ev.add_argument("--model_name", default=None, choices=[*MODEL_NAMES, *MODEL_ALIASES],
                    help="as dglke_eval takes it; must be the saved model's")
    ev.add_argument("--hidden_dim", type=int, default=None, help="must be the saved model's")
    ev.add_argument("-g", "--gamma", type=float, default=None, help="must be the saved model's")
    ev.add_argument("-de", "--double_ent", action="store_true", help="must be the saved model's")
    ev.add_argument("-dr", "--double_rel", action="store_true", help="must be the saved model's")
    ev.add_argument("--seed", type=int, default=0, help="seed of --eval_percent and sampled candidates")
    ev.add_argument("--gpu", type=int, nargs="+", default=None,
                    help="rank on this GPU (the first id of a list); -1 (the default): the CPU")
    ev.add_argument("--mix_cpu_gpu", action="store_true",
                    help="keep the entity table in CPU memory: its blocks travel to the GPU as they are ranked")
    ev.set_defaults(func=eval_command)
    part = sub.add_parser("partition", help="partition a knowledge graph for dist-train (dglke_partition)",
                          description="Partition a knowledge graph's entities (METIS balanced by triples, or "
                                      "random) into DATA_PATH/DATASET/partitions/ for `kge dist-train`.")
    _add_data_args(part, field_defaults(TrainConfig))
    part.add_argument("-k", "--num_parts", "--num-parts", dest="num_parts", type=int, required=True,
                      help="number of partitions (= machines)")
    part.add_argument("--part_method", default=None, choices=("metis", "random", "kaminpar"),
                      help="default: METIS in memory when the KG fits an eighth of this machine's memory, else "
                           "KaMinPar streaming (the command says which and why)")
    part.add_argument("--num_threads", type=int, default=None, help="threads for KaMinPar (default: every core)")
    part.add_argument("--has_edge_importance", action="store_true",
                      help="the training file's 4th column weighs each triple")
    part.add_argument("--seed", type=int, default=0)
    part.set_defaults(func=partition_command)
    dist = sub.add_parser("dist-train", help="train on the machines of ip_config (dglke_dist_train)",
                          description="Train on a cluster over the partition of `kge partition`: servers hold the "
                                      "embeddings, NUM_CLIENT_PROC trainers per machine train on its triples.")
    _add_train_args(dist)
    dist.add_argument("--path", required=True, help="the workspace on every machine")
    dist.add_argument("--ip_config", required=True, help="one `IP [PORT [NUM_SERVERS]]` line per machine")
    dist.add_argument("--num_client_proc", type=int, default=1, help="trainer processes per machine")
    dist.add_argument("--part_config", default=None,
                      help="the partition config (default DATA_PATH/DATASET/partitions/DATASET.json)")
    add_ssh_args(dist)
    dist.set_defaults(func=dist_train_command)
    from .kge_infer import register as register_inference  # predict, emb-sim

    register_inference(sub)


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


def partition_command(args: argparse.Namespace) -> int:
    """`distgraph kge partition`."""
    from ..kge.data.formats import load_dataset
    from ..kge.data.partition import partition_folder, partition_kg
    from ..kge.prepare import data_warnings, say
    from ..partition.parts import positive_int

    k = positive_int(args.num_parts, "--num_parts")
    data = load_dataset(args.data_path, args.dataset, args.format, args.data_files, args.delimiter,
                        with_importance=args.has_edge_importance)
    if k > data.n_entities:
        raise InputError(f"--num_parts {k} exceeds the {data.n_entities:,} entities of {data.name}; use at most that "
                         f"many machines")
    for line in data_warnings(data):
        say(line)
    out = partition_folder(args.data_path, args.dataset)
    s = partition_kg(data, k, out, args.part_method, args.seed, data.importance, progress=True,
                     threads=args.num_threads or os.cpu_count() or 1)
    print(f"partitioner: {s.why}")
    print(f"partitioning of {data.name} ({data.n_entities:,} entities, {len(data.train):,} training triples) into "
          f"{k} parts -> {out}/{data.name}.json")
    print(f"triples whose two entities sit in different partitions: {s.cross_share:.2%}")
    print(f"triples per partition: {', '.join(f'{n:,}' for n in s.triples_per_part)} (max/mean {s.imbalance:.3f}); "
          f"entities per partition: {', '.join(f'{n:,}' for n in s.entities_per_part)} ({s.seconds:.1f} s)")
    return 0


def dist_train_command(args: argparse.Namespace) -> int:
    """`distgraph kge dist-train`: DGL-KE's `dglke_dist_train` flags, meaning what they mean there
    (`--num_client_proc` trainers per machine, `--ip_config` where the command is run)."""
    from ..kge.pipeline import DistOptions, dist_train_kge

    if args.num_proc != field_defaults(TrainConfig)["num_proc"]:
        raise InputError(f"kge dist-train runs --num_client_proc trainers on each machine, as dglke_dist_train does; "
                         f"--num_proc is kge train's: pass --num_client_proc {args.num_proc} instead")
    ip_config = Path(args.ip_config).expanduser()
    if not ip_config.is_file():
        raise InputError(f"--ip_config {args.ip_config} does not exist (looked for {ip_config.absolute()}: a relative "
                         f"path starts where the command runs, as in dglke_dist_train)")
    dist_train_kge(train_config(args), DistOptions(args.path, str(ip_config.absolute()), args.num_client_proc,
                                                   args.part_config, ssh_options(args)))
    return 0


def eval_command(args: argparse.Namespace) -> int:
    """`distgraph kge eval`."""
    from ..kge.pipeline import eval_kge

    eval_kge(eval_config(args))
    return 0
