"""`python3 -m hostile BIN OUTDIR …` (from scripts/, where `harness` is importable): see the package."""

import sys

from hostile.run import main

if __name__ == "__main__":
    sys.exit(main())
