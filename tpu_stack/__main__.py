"""`python -m tpu_stack ...`, the same command as the `tpu-stack` entry point."""

import sys

from tpu_stack.cli import main

if __name__ == "__main__":
    sys.exit(main())
