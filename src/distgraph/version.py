"""The package's version, in one place (the package, `distgraph --version`)."""

__version__ = "0.1.0"
