"""Imported by every worker through `runner.imports` in a fault test: rank 1 dies at once.

The launcher process imports it too (to validate tasks); there RANK is unset and nothing
happens. It is a test fixture, not part of the package.
"""

import os

if os.environ.get("RANK") == "1":
    os._exit(3)
