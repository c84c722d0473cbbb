"""Entry point of the `distgraph` command: builds the sub-command parsers and dispatches."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import DistGraphError
from ..files import make_private
from ..version import __version__

# Each module exposes `register(subparsers)`, which adds its parser and sets `func`.
SUBCOMMANDS = ("generate", "partition", "copy", "launch", "serve", "kge")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distgraph",
        description="Partition graphs and train GNNs / knowledge-graph embeddings on a cluster.",
    )
    parser.add_argument("--version", action="version", version=f"distgraph {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__package__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `distgraph`: what it can do
        parser.print_help()
        return 0
    make_private()  # what a command writes, and every process a launch starts, is the user's alone
    try:
        code = args.func(args)
    except DistGraphError as exc:
        print(f"distgraph {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. --out naming an existing file, a full disk, a permission
        where = f": {exc.filename}" if exc.filename else ""
        print(f"distgraph {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"distgraph {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
