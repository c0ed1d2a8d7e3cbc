"""The package version (one place: ``approxdp.__version__`` and the CLI's ``--version``)."""

__version__ = "0.1.0"
