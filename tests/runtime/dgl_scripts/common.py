"""Arguments and result lines shared by the DGL-style scripts (plain Python: no DGL or
distgraph here, so the scripts' own lines show what a DGL user writes)."""

import argparse


def parse_args(extra=()):
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph_name", default="g")
    ap.add_argument("--ip_config", default="ip_config.txt")
    ap.add_argument("--part_config", default=None)
    ap.add_argument("--standalone", action="store_true")
    ap.add_argument("--num_epochs", type=int, default=4)
    ap.add_argument("--batch_size", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--out_dir", default=".", help="where a script writes files (DGL's write to the working directory)")
    for flag, kind, default in extra:
        ap.add_argument(flag, type=kind, default=default)
    return ap.parse_args()


def result(**values):
    print("RESULT " + " ".join(f"{k}={v}" for k, v in values.items()), flush=True)


def auc(pos, neg):
    """Share of (positive, negative) pairs the positive wins (ties half): 0.5 is chance."""
    greater = (pos.reshape(-1, 1) > neg.reshape(1, -1)).sum() + 0.5 * (pos.reshape(-1, 1) == neg.reshape(1, -1)).sum()
    return float(greater) / (pos.numel() * neg.numel())
