"""`python -m assay` runs the CLI."""

import sys

try:
    from assay.cli import program
except KeyboardInterrupt:
    # Ctrl-C while assay was still loading: nothing was run, stored or written.
    sys.stderr.write(
        "interrupted while assay was starting: nothing was run or written;"
        " run the same command again\n"
    )
    sys.exit(130)

program()
