"""`python -m xlplan`: the command line."""

import sys

from xlplan.cli import main

sys.exit(main())
