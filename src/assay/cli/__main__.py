"""`python -m assay.cli`: the same as the `assay` command."""

from assay.cli import main

main()
