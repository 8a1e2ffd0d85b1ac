"""Shared pytest configuration: hypothesis profiles.

The ``ci`` profile (selected by ``HYPOTHESIS_PROFILE=ci``, which ``scripts/test.sh`` sets) is
derandomized and has no deadline, so CI runs are reproducible and never fail on a slow machine.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
