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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; with `only` (a sub-command's name) just that sub-command's, so a
    command imports its own modules and not every other command's (a tenth of a second)."""
    parser = argparse.ArgumentParser(
        prog="distgraph",
        description="Partition graphs and train GNNs / knowledge-graph embeddings on a cluster.",
    )
    parser.add_argument("--version", action="version", version=f"distgraph {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS if only not in SUBCOMMANDS else (only,):
        importlib.import_module(f"{__package__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
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
