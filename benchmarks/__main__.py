"""python -m benchmarks: see benchmarks/__init__.py."""
import sys

from .cli import main

sys.exit(main())
