"""`distgraph generate sbm|mag|rmat`: seeded synthetic graphs, as an `.npz` exchange file, or for
graphs of any size (`--out` a folder; always for rmat) in DGL's chunked format, written a chunk at
a time."""

from __future__ import annotations

import argparse
import time


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="write a seeded synthetic graph (.npz, or chunked for any size)",
                              description="Write a seeded synthetic graph: an .npz exchange file, or a folder in "
                                          "DGL's chunked format (sbm, rmat) written a chunk at a time.")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
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
