"""``python -m msgqueue``: see :mod:`msgqueue.cli`."""

import sys

from msgqueue.cli import main

sys.exit(main())
