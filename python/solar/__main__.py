"""``python -m solar``: the ``solar`` command."""

import sys

from solar.cli import main

sys.exit(main())
