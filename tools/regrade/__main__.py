"""python -m tools.regrade EXPORT [--old REV] [--jobs N] [--out DIR] (make regrade): see __init__.py."""

import sys

from tools.regrade import main

sys.exit(main())
