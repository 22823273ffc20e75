"""`python -m areasync.gaia2.worlds ROOT`: write a generated dataset (see the package doc)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from areasync.gaia2.worlds import LAYOUTS, PRESETS, preset, write_worlds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m areasync.gaia2.worlds", description="write a Gaia2-sized dataset"
    )
    parser.add_argument("root", help="the dataset's folder")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=4, help="scenarios (4 shapes in turn)")
    parser.add_argument("--layout", choices=LAYOUTS, default="are")
    args = parser.parse_args(argv)
    written = write_worlds(
        args.root, preset(args.preset), seed=args.seed, count=args.count, layout=args.layout
    )
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
