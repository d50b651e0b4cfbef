"""`python -m assay` runs the CLI."""

import os
import sys

try:
    from assay.cli import program
except KeyboardInterrupt:
    # Ctrl-C while assay was still loading: nothing was run, stored or written. Ended
    # at once: the interrupted imports leave nothing to clean up, and the interpreter's
    # own exit could meet them half done.
    sys.stderr.write(
        "interrupted while assay was starting: nothing was run or written;"
        " run the same command again\n"
    )
    sys.stderr.flush()
    os._exit(130)

program()
