"""`python -m harness.containers ...`: the Makefile's docker targets (see harness/cli/)."""

import sys

from harness.containers.by_hand import main

sys.exit(main(sys.argv[1:]))
