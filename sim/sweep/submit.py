"""The script to give spark-submit: ``spark-submit [options] <path of this file> STUDY [...]``.

It takes the arguments of ``python -m sim sweep`` (without ``--master``: spark-submit's
``--master`` applies) and returns its exit status. ``python -c "import sim.sweep.submit as s;
print(s.__file__)"`` prints the path to use.
"""

import sys
from pathlib import Path

# A script's own folder comes first on sys.path; this package's modules (tables, grid, java...)
# must not shadow top-level modules of the same names, so it is removed before any import.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

from sim.sweep.cli import sweep_main

if __name__ == "__main__":
    raise SystemExit(sweep_main(sys.argv[1:]))
