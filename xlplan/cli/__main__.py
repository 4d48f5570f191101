"""`python -m xlplan.cli`."""

import sys

from xlplan.cli import main

sys.exit(main())
