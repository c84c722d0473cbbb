"""`distgraph generate sbm|mag|rmat|kg`: seeded synthetic graphs, as an `.npz` exchange file, or for
graphs of any size (`--out` a folder; always for rmat) in DGL's chunked format, written a chunk at
a time; `kg`: a knowledge graph of any size in DGL-KE's Freebase or udd_hrt files."""

from __future__ import annotations

import argparse
import time


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="write a seeded synthetic graph (.npz, or chunked for any size)",
                              description="Write a seeded synthetic graph: an .npz exchange file, or a folder in "
                                          "DGL's chunked format (sbm, rmat) written a chunk at a time, or a "
                                          "knowledge graph in DGL-KE's files (kg).")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    sbm = kinds.add_parser("sbm", help="degree-corrected stochastic block model with features, labels and masks")
    sbm.add_argument("--num_nodes", type=int, default=10_000)
    sbm.add_argument("--num_edges", type=int, default=100_000)
    sbm.add_argument("--num_classes", type=int, default=8)
    sbm.add_argument("--feat_dim", type=int, default=32)
    sbm.add_argument("--p_in", type=float, default=0.8, help="fraction of edges inside a community")
    sbm.add_argument("--feat_signal", type=float, default=0.15, help="strength of the label signal in the features")
    sbm.add_argument("--degree_exponent", type=float, default=2.5, help="tail exponent of the degree weights")
    sbm.add_argument("--max_weight", type=float, default=50.0, help="cap of a node's degree weight (x the smallest)")
    rmat = kinds.add_parser("rmat", help="R-MAT power-law graph (Graph500's quadrant probabilities), chunked")
    rmat.add_argument("--num_nodes", type=int, default=1 << 20)
    rmat.add_argument("--num_edges", type=int, default=1 << 24)
    rmat.add_argument("--num_classes", type=int, default=16)
    rmat.add_argument("--feat_dim", type=int, default=16)
    for k in (sbm, rmat):
        k.add_argument("--feat_dtype", default="float16", choices=["float16", "float32"],
                       help="feature dtype of chunked output (.npz output keeps float32)")
        k.add_argument("--chunk_edges", type=int, default=1 << 24, help="edges per chunk file of chunked output")
    mag = kinds.add_parser("mag", help="heterogeneous graph shaped like ogbn-mag, whose venue labels need the "
                                       "relations and the featureless types' embeddings")
    mag.add_argument("--num_papers", type=int, default=20_000)
    mag.add_argument("--num_authors", type=int, default=15_000)
    mag.add_argument("--num_institutions", type=int, default=500)
    mag.add_argument("--num_fields", type=int, default=1_000)
    mag.add_argument("--num_classes", type=int, default=16)
    mag.add_argument("--feat_dim", type=int, default=64)
    mag.add_argument("--p_in", type=float, default=0.6,
                     help="how often a paper's authors share its venue, and its citations and fields its topic")
    mag.add_argument("--topic_share", type=float, default=0.2,
                     help="how often a paper's topic (all its features tell) is its venue's home topic")
    for k in (sbm, mag, rmat):
        k.add_argument("--seed", type=int, default=0)
        k.add_argument("--out", required=True, help="output: an .npz file, or a folder for the chunked format "
                                                    "(sbm, rmat: any size, written a chunk at a time)")
    _register_kg(kinds)
    p.set_defaults(func=run)


def _register_kg(kinds) -> None:
    """`generate kg`: its defaults are Freebase's sizes, from the generator's module."""
    from ..kge.data.kg_shape import EVAL_MAX, EVAL_SHARE, FORMATS, FREEBASE

    kg = kinds.add_parser("kg", help="knowledge graph of any size shaped like Freebase, with a structure TransE, "
                                     "RotatE and DistMult learn, in DGL-KE's Freebase or udd_hrt files",
                          description="Write a seeded synthetic knowledge graph a chunk of triples at a time: "
                                      "typed entities in communities, relations that keep the community or point "
                                      "at hubs, heavy-tailed degrees, Zipf-skewed relation frequencies. Defaults "
                                      "are Freebase's sizes.")
    kg.add_argument("--num_entities", type=int, default=FREEBASE["num_entities"])
    kg.add_argument("--num_relations", type=int, default=FREEBASE["num_relations"])
    kg.add_argument("--num_triples", type=int, default=FREEBASE["num_triples"], help="training triples")
    for split in ("valid", "test"):
        kg.add_argument(f"--num_{split}", type=int, default=None,
                        help=f"{split} triples, none of them in train (default min({EVAL_SHARE * 100:g}%% of "
                             f"--num_triples, {EVAL_MAX:,}), at least 1)")
    kg.add_argument("--format", default="freebase", choices=FORMATS, dest="fmt",
                    help="freebase: entity2id.txt, relation2id.txt and 'head tail rel' triples in OUT/Freebase, "
                         "or in OUT when it is named Freebase (kge train --dataset Freebase --data_path its "
                         "parent); udd_hrt: entities.dict, relations.dict and 'head rel tail' triples in OUT "
                         "(the command prints the flags that read it)")
    kg.add_argument("--chunk_triples", type=int, default=1 << 22, help="triples made and written at a time")
    kg.add_argument("--seed", type=int, default=0)
    kg.add_argument("--out", required=True, help="a new or empty folder (freebase: the folder holding Freebase/)")


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if args.kind == "kg":
        return _kg(args, t0)
    if args.kind == "rmat" or (args.kind == "sbm" and not args.out.endswith(".npz")):
        return _chunked(args, t0)
    from ..data import generate_mag, generate_sbm, save_npz

    if args.kind == "sbm":
        g = generate_sbm(args.num_nodes, args.num_edges, args.num_classes, args.feat_dim, args.p_in,
                         degree_exponent=args.degree_exponent, feat_signal=args.feat_signal, seed=args.seed)
    else:
        g = generate_mag(args.num_papers, args.num_authors, args.num_institutions, args.num_fields,
                         args.num_classes, args.feat_dim, p_in=args.p_in, topic_share=args.topic_share, seed=args.seed)
    save_npz(g, args.out)
    print(f"wrote {args.out}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, "
          f"node types {g.ntypes}, {len(g.canonical_etypes)} edge types ({time.perf_counter() - t0:.1f} s)")
    return 0


def _chunked(args: argparse.Namespace, t0: float) -> int:
    """A graph of any size in DGL's chunked format under the folder --out."""
    if args.kind == "rmat":
        from ..data.rmat import generate_rmat

        meta = generate_rmat(args.out, args.num_nodes, args.num_edges, args.feat_dim, args.num_classes,
                             args.feat_dtype, args.chunk_edges, args.seed)
    else:
        from ..data.sbm_chunked import generate_sbm_chunked

        meta = generate_sbm_chunked(args.out, args.num_nodes, args.num_edges, args.num_classes, args.feat_dim,
                                    args.p_in, args.degree_exponent, args.max_weight, args.feat_dtype,
                                    args.feat_signal, chunk_edges=args.chunk_edges, seed=args.seed)
    print(f"wrote {meta}: {args.num_nodes:,} nodes, {args.num_edges:,} edges in DGL's chunked format "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0


def _kg(args: argparse.Namespace, t0: float) -> int:
    """A knowledge graph in DGL-KE's files, and the `kge train` flags that read it."""
    from ..kge.data.generate import generate_kg

    root = generate_kg(args.out, args.num_entities, args.num_relations, args.num_triples, args.fmt, args.num_valid,
                       args.num_test, args.seed, args.chunk_triples)
    if args.fmt == "freebase":
        flags = f"--dataset Freebase --data_path {root.parent}"
    else:
        flags = (f"--format udd_hrt --dataset {root.name} --data_path {root} "
                 f"--data_files entities.dict relations.dict train.txt valid.txt test.txt")
    print(f"wrote {root}: {args.num_entities:,} entities, {args.num_relations:,} relations, "
          f"{args.num_triples:,} training triples ({time.perf_counter() - t0:.1f} s); "
          f"distgraph kge train {flags} reads it")
    return 0
