"""assay: evaluate AI agents."""

__version__ = "0.1.0"
