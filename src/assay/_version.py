"""assay's version, on the ground floor: the package, the CLI and the reports name it."""

__version__ = "0.1.0"
