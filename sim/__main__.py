"""``python -m sim``: see :mod:`sim.cli`.

Output piped to a reader that stops early (``python -m sim knobs default | head``) ends the
command quietly with status 141 (128 + SIGPIPE), as a Unix tool killed by SIGPIPE would,
instead of a ``BrokenPipeError`` traceback. stdout is pointed at ``/dev/null`` first, so the
interpreter's final flush of the buffered output does not fail again.
"""

import os
import sys

from sim.cli import main

_EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = _EXIT_BROKEN_PIPE
sys.exit(status)
