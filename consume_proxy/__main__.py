"""``python -m consume_proxy``: see :mod:`consume_proxy.cli`."""

import sys

from consume_proxy.cli import main

sys.exit(main())
