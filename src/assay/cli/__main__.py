"""`python -m assay.cli`: the same as the `assay` command."""

from assay.cli import program

program()
