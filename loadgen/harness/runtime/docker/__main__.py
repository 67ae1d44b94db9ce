"""`python -m harness.runtime.docker ...`: the Makefile's docker targets (see harness/cli/)."""

import sys

from harness.runtime.docker.by_hand import main

sys.exit(main(sys.argv[1:]))
