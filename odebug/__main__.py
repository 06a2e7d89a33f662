"""``python -m odebug``: the command line.

  python -m odebug reproduce [debugobjects|quarantine|slub|all] [--quick] [--json FILE] [--runs N]
  python -m odebug bench [slab|quarantine|debugobjects|races|all] [options]
"""
from __future__ import annotations

import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``python -m odebug`` and the ``odebug`` script.

    Ctrl-C stops it cleanly: the running scenario stops early and frees what
    it made (the C loops poll for signals), "odebug: interrupted" goes to
    stderr and the exit status is 130 (128 + SIGINT), as a shell expects."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("odebug: interrupted", file=sys.stderr)
        return 130


def _main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "reproduce":
        from . import reproduce
        return reproduce.main(rest)
    if cmd == "bench":
        from . import bench
        bench.main(rest)
        return 0
    print(f"odebug: unknown command {cmd!r}\n\n{__doc__.strip()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
