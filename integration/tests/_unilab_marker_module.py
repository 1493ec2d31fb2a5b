"""A module that leaves a trace: importing it writes the file named by UNILAB_TEST_MARKER. The
untrusted-file tests name it in a saved config's `runner.imports` and check it never ran."""

import os
from pathlib import Path

Path(os.environ["UNILAB_TEST_MARKER"]).write_text("imported\n")
