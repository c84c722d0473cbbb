"""`distgraph generate sbm|mag --out FILE.npz`: seeded synthetic graphs in the exchange format."""

from __future__ import annotations

import argparse
import time


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="write a seeded synthetic graph as .npz",
                              description="Write a seeded synthetic graph in the .npz exchange format.")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    sbm = kinds.add_parser("sbm", help="degree-corrected stochastic block model with features, labels and masks")
    sbm.add_argument("--num_nodes", type=int, default=10_000)
    sbm.add_argument("--num_edges", type=int, default=100_000)
    sbm.add_argument("--num_classes", type=int, default=8)
    sbm.add_argument("--feat_dim", type=int, default=32)
    sbm.add_argument("--p_in", type=float, default=0.8, help="fraction of edges inside a community")
    sbm.add_argument("--feat_signal", type=float, default=0.15, help="strength of the label signal in the features")
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
    for k in (sbm, mag):
        k.add_argument("--seed", type=int, default=0)
        k.add_argument("--out", required=True, help="output .npz path")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import generate_mag, generate_sbm, save_npz

    t0 = time.perf_counter()
    if args.kind == "sbm":
        g = generate_sbm(args.num_nodes, args.num_edges, args.num_classes, args.feat_dim, args.p_in,
                         feat_signal=args.feat_signal, seed=args.seed)
    else:
        g = generate_mag(args.num_papers, args.num_authors, args.num_institutions, args.num_fields,
                         args.num_classes, args.feat_dim, p_in=args.p_in, topic_share=args.topic_share, seed=args.seed)
    save_npz(g, args.out)
    print(f"wrote {args.out}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, "
          f"node types {g.ntypes}, {len(g.canonical_etypes)} edge types ({time.perf_counter() - t0:.1f} s)")
    return 0
