"""The `distgraph` command line: one entry point, one module per sub-command."""
