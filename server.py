"""`python server.py` is `areasync serve`: the service on an embedded default scenario."""

import sys

from areasync.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
