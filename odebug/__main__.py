"""``python -m odebug``: the command line (one argparse parser, prog ``odebug``).

  python -m odebug reproduce [debugobjects|quarantine|slub|all] [--quick] [--json FILE] [--runs N]
  python -m odebug bench [slab|api|python|quarantine|debugobjects|races|all] [options]
  python -m odebug cc -- gcc file.c -o prog   (odebug.cc's flags added)

``--help`` at any level prints the usage and runs nothing.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional


def build_parser() -> argparse.ArgumentParser:
    """The ``odebug`` parser: ``reproduce`` and ``bench`` with its benchmarks."""
    from . import bench, bench_api, bench_kasan, reproduce

    parser = argparse.ArgumentParser(
        prog="odebug",
        description="The Linux kernel's memory debuggers (SLUB debug, KASAN quarantine, "
                    "debugobjects) in user space: reproduce the seeds' numbers, run the "
                    "benchmarks.")
    sub = parser.add_subparsers(dest="command", metavar="{reproduce,bench,cc}")

    rp = sub.add_parser("reproduce", help="every seed's published numbers beside measured ones",
                        description=reproduce.description(), epilog=reproduce.EPILOG)
    reproduce.add_arguments(rp)
    rp.set_defaults(func=lambda a: reproduce.run_cli(a, rp))

    bp = sub.add_parser(
        "bench", help="benchmarks (reported, never asserted)",
        description="Benchmarks, reported and never asserted. Without a benchmark name, "
                    "all of them run on their defaults (quarantine, python, slab, api, races, "
                    "debugobjects).")
    bsub = bp.add_subparsers(dest="benchmark", metavar="{slab,api,python,quarantine,debugobjects,races,all}")
    bp.set_defaults(func=bench.run_all)

    sp = bsub.add_parser("slab", help="alloc+free pairs: no debug, P, FZPU vs glibc",
                         description="C loops of alloc+free pairs on a 64-byte cache (no debug, "
                                     "P, FZPU; both debug paths) beside glibc malloc/free: "
                                     "ns/pair and the ratios.")
    bench.add_slab_arguments(sp)
    sp.set_defaults(func=bench.run_slab)

    ap_ = bsub.add_parser("api", help="the public C API vs glibc and ASan, from a C program",
                          description=bench_api.__doc__.split("\n\n")[1].replace("\n", " ")
                          if bench_api.__doc__ else None)
    bench_api.add_arguments(ap_)
    ap_.set_defaults(func=bench_api.run)

    pp = bsub.add_parser("python", help="the Python boundary: Kernel methods vs _core vs a C call",
                         description="kmalloc(64)+kfree pairs from Python through the Kernel "
                                     "methods, through odebug._core and beside two trivial C "
                                     "calls, and the stack depot's Python frame hook, for "
                                     "no-debug and the defaults: ns and ratios in one process.")
    bench.add_python_arguments(pp)
    pp.set_defaults(func=bench.run_python)

    qp = bsub.add_parser("quarantine", help="KASAN quarantine: quarter vs batched reduce",
                         description=bench_kasan.description())
    bench_kasan.add_arguments(qp)
    qp.set_defaults(func=bench_kasan.run)

    dp = bsub.add_parser("debugobjects", help="debug objects: eager vs lazy freeing under churn",
                         description="debug objects: eager vs lazy freeing under churn")
    bench.add_debugobjects_arguments(dp)
    dp.set_defaults(func=bench.run_debugobjects)

    rr = bsub.add_parser(
        "races", help="the historical races under the controlled scheduler",
        description="the historical races under the controlled scheduler: schedules pct "
                    "and dfs need on the designs that had them, random schedules on the "
                    "designs that fixed them (odebug.races)")
    bench.add_races_arguments(rr)
    rr.set_defaults(func=bench.run_races)

    cp = sub.add_parser(
        "cc", help="compile C with KASAN instrumentation for odebug (odebug.cc)",
        description="Run a C compiler with odebug.cc's flags: cflags() after the compiler's "
                    "name, ldflags() at the end (unless -c/-S/-E). Example: "
                    "python -m odebug cc -- gcc -O1 -shared -fPIC work.c -o libwork.so")
    cp.add_argument("compiler_args", nargs=argparse.REMAINDER, metavar="-- COMPILER ARGS",
                    help="the compiler and its arguments, after --")
    cp.set_defaults(func=_run_cc)

    ap = bsub.add_parser("all", help="every benchmark on its defaults",
                         description="Every benchmark on its defaults: quarantine, python, "
                                     "slab, races, debugobjects.")
    ap.set_defaults(func=bench.run_all)
    return parser


def _run_cc(a: argparse.Namespace) -> int:
    from . import cc
    return cc.main(a.compiler_args)


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
    parser = build_parser()
    a = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if a.command is None:
        parser.print_help()
        return 0
    rc = a.func(a)
    return 0 if rc is None else rc


if __name__ == "__main__":
    sys.exit(main())
