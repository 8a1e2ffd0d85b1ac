"""Run by tests/purgatory/test_compiled.py: prints the build of the modules it loads."""

import json

import purgatory.timing_wheel
from purgatory.compiled import compiled_packages

print(json.dumps([compiled_packages(["purgatory"]), purgatory.timing_wheel.__file__]))
