"""``python -m odebug bench api``: the public C API against glibc and ASan.

A C program a user would write -- ``odb_kmalloc`` / ``odb_kfree`` through
``odebug.h``, linked with ``libodebug.so`` -- is compiled with the host's C
compiler (``gcc`` by default) and run as a subprocess, beside the same loop on
glibc ``malloc``/``free`` and, when the compiler has AddressSanitizer, the glibc
loop built with ``-fsanitize=address`` (ASan's allocator, shadow, stack traces
and quarantine: the peer odebug's defaults are to be compared with).  ASan's
quarantine is set to the size of odebug's (``quarantine_size_mb``, from the
kernel's RAM and CPUs), so both hold the same bytes of freed memory.

Workloads (one process per run; every configuration runs once per round, the
rounds interleaved so that a noisy neighbour hits them alike; ns are medians
over the rounds, ratios are paired within each round, then the median; the
``rounds`` column gives the lowest and highest of the rounds' ratios to ASan, and
``best`` the ratio of the fastest round of each to ASan's fastest: a noisy
neighbour only ever adds time, so those are the least disturbed runs):

* ``pair``: ``n`` alloc+free pairs of ``size`` bytes;
* ``random``: ``live`` objects kept, then ``n`` steps each freeing a random
  one and allocating a random size in ``[16, 1024]`` in its place;
* ``memory``: bytes of resident memory per live ``size``-byte object
  (``live`` * 10 objects kept; RSS before and after, allocator and shadow
  included, divided by the count).

Configurations: ``no-debug`` (``kasan=off no_debug_objects``), ``defaults``
(generic KASAN, its quarantine and debug objects), ``full`` (``slub_debug=FZPU``
on top of the defaults, on the default 2016 ``relaxed`` debug flows, whose
per-allocation ``deactivate_slab()`` seed 003's figure measures) and ``full-modern``
(the same on the v6.1+ flows, ``odebug.slub_path=modern``).  Reported, never
asserted.

``--instructions`` adds what the shared machine cannot blur: instructions per
operation, counted by valgrind (``cachegrind --cache-sim=no``) as
``(I(2m) - I(m)) / m`` for the same program run with ``m`` and ``2m``
operations, so start-up, the kernel's boot and the warm-up cancel out and only
steady-state operations remain (``m`` = ``--instr-pairs``, 100,000 by default:
past the point where the quarantine starts evicting).  ASan's runtime does not
run under valgrind, so its rows have no count.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from typing import Any, Dict, List, Optional

from . import get_include, get_library
from .kernel import check_int

CONFIGS = (("no-debug", "kasan=off no_debug_objects"), ("defaults", ""),
           ("full", "slub_debug=FZPU"),
           ("full-modern", "slub_debug=FZPU odebug.slub_path=modern"))

# One source for all three programs: -DUSE_ODEBUG gives the odebug one, else
# glibc's malloc/free (built plain, or with -fsanitize=address).
_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef USE_ODEBUG
#include <odebug/odebug.h>
static odb_kernel *k;
static void *xalloc(size_t n)
{
	odb_addr_t a;
	if (odb_kmalloc(k, n, ODB_GFP_KERNEL, &a))
		return NULL;
	return (void *)(uintptr_t)a;
}
static void xfree(void *p) { odb_kfree(k, (odb_addr_t)(uintptr_t)p); }
#else
static void *xalloc(size_t n) { return malloc(n); }
static void xfree(void *p) { free(p); }
#endif

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static unsigned long long rng = 88172645463325252ULL;
static unsigned long long next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	const char *mode = argv[1];
	long n = atol(argv[3]), live = atol(argv[5]);
	size_t size = (size_t)atol(argv[4]);
	void **keep;
	double t0, t1;
#ifdef USE_ODEBUG
	struct odb_config cfg;
	char err[256];

	odb_config_init(&cfg);
	cfg.cmdline = argv[2];
	cfg.ram = (uint64_t)atoll(argv[6]) << 20;
	cfg.cpus = (unsigned int)atoi(argv[7]);
	if (odb_kernel_create(&cfg, &k, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	odb_bind_cpu(k, 0, NULL);
#endif
	if (!strcmp(mode, "memory")) {
		long count = live * 10, r0;
		keep = calloc((size_t)count, sizeof(*keep));
		r0 = rss_bytes();
		for (long i = 0; i < count; i++)
			keep[i] = xalloc(size);
		printf("%.2f\n", (double)(rss_bytes() - r0) / count);
		return 0;
	}
	keep = calloc((size_t)(live ? live : 1), sizeof(*keep));
	for (long i = 0; i < live; i++)
		keep[i] = xalloc(16 + next() % 1009);
	for (int w = 0; w < 2000; w++)
		xfree(xalloc(size));
	t0 = now();
	if (!strcmp(mode, "pair")) {
		for (long i = 0; i < n; i++) {
			void *p = xalloc(size);
			__asm__ volatile("" :: "r"(p) : "memory");
			xfree(p);
		}
	} else {
		for (long i = 0; i < n; i++) {
			unsigned long long r = next();
			long j = (long)(r % (unsigned long long)live);
			xfree(keep[j]);
			keep[j] = xalloc(16 + (r >> 32) % 1009);
		}
	}
	t1 = now();
	printf("%.3f\n", (t1 - t0) / n);
	return 0;
}
"""


def _compiler(cc: Optional[str]) -> Optional[str]:
    cc = cc or os.environ.get("CC") or "gcc"
    return shutil.which(cc)


def _has_asan(cc: str, d: str) -> bool:
    src = os.path.join(d, "probe.c")
    with open(src, "w") as f:
        f.write("int main(void) { return 0; }\n")
    r = subprocess.run([cc, "-fsanitize=address", src, "-o", os.path.join(d, "probe")],
                       capture_output=True)
    return r.returncode == 0


def build(cc: str, d: str) -> Dict[str, str]:
    """Compile the programs into directory ``d``: ``odebug``, ``glibc`` and, when
    the compiler has it, ``asan``.  Returns name -> executable."""
    src = os.path.join(d, "api_pairs.c")
    with open(src, "w") as f:
        f.write(_SOURCE)
    lib = os.path.dirname(get_library())
    out = {"odebug": os.path.join(d, "odebug_pairs"), "glibc": os.path.join(d, "glibc_pairs")}
    cmds = [[cc, "-O2", "-DUSE_ODEBUG", "-I" + get_include(), src, "-o", out["odebug"],
             "-L" + lib, "-l:libodebug.so", "-Wl,-rpath," + lib],
            [cc, "-O2", src, "-o", out["glibc"]]]
    if _has_asan(cc, d):
        out["asan"] = os.path.join(d, "asan_pairs")
        cmds.append([cc, "-O2", "-fsanitize=address", src, "-o", out["asan"]])
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"bench api: {' '.join(c)} failed:\n{r.stderr}")
    return out


def _run(exe: str, mode: str, cmdline: str, n: int, size: int, live: int, ram_mb: int,
         cpus: int, env: Optional[Dict[str, str]] = None, odebug: bool = False) -> float:
    from . import build_info
    e = dict(os.environ)
    if not (odebug and build_info().get("sanitizer")):
        # (a sanitizer build of libodebug needs the runtime preloaded, as here)
        e.pop("LD_PRELOAD", None)
    if env:
        e.update(env)
    r = subprocess.run([exe, mode, cmdline, str(n), str(size), str(live), str(ram_mb), str(cpus)],
                       capture_output=True, text=True, env=e, timeout=3600)
    if r.returncode:
        raise RuntimeError(f"bench api: {exe} {mode} [{cmdline}] failed: {r.stderr.strip()}")
    return float(r.stdout.strip())


def _libodebug_sanitizer() -> str:
    """The sanitizer libodebug was built with ('' for none)."""
    from . import build_info
    return str(build_info().get("sanitizer") or "")


def _valgrind_ir(valgrind: str, exe: str, mode: str, cmdline: str, n: int, size: int, live: int,
                 ram_mb: int, cpus: int) -> int:
    """Instructions valgrind counts for one run of ``exe`` (its whole process)."""
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    with tempfile.TemporaryDirectory(prefix="odebug-bench-ir-") as d:
        out = os.path.join(d, "cg.out")
        r = subprocess.run([valgrind, "--tool=cachegrind", "--cache-sim=no",
                            f"--cachegrind-out-file={out}", exe, mode, cmdline, str(n), str(size),
                            str(live), str(ram_mb), str(cpus)],
                           capture_output=True, text=True, env=e, timeout=7200)
        if r.returncode:
            raise RuntimeError(f"bench api: valgrind {exe} {mode} [{cmdline}] failed: "
                               f"{r.stderr.strip()[-2000:]}")
        with open(out) as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError(f"bench api: valgrind wrote no instruction count for {exe} {mode}")


def instructions_per_op(valgrind: str, exe: str, mode: str, cmdline: str, m: int, size: int,
                        live: int, ram_mb: int, cpus: int) -> float:
    """``(I(2m) - I(m)) / m``: the instructions of one steady-state operation of
    ``exe``'s workload ``mode`` (the start-up, boot and warm-up of the two runs
    cancel out)."""
    one = _valgrind_ir(valgrind, exe, mode, cmdline, m, size, live, ram_mb, cpus)
    two = _valgrind_ir(valgrind, exe, mode, cmdline, 2 * m, size, live, ram_mb, cpus)
    return (two - one) / m


def api_pairs(n: int = 1_000_000, *, size: int = 64, live: int = 10_000, rounds: int = 5,
              ram: int = 256, cpus: int = 2, cc: Optional[str] = None,
              instructions: bool = False, instr_pairs: int = 100_000) -> Dict[str, Any]:
    """Run the three workloads (see the module's doc) for glibc, ASan (when the
    compiler has it) and odebug's ``no-debug`` / ``defaults`` / ``full`` /
    ``full-modern``.  ``ram``
    is the kernel's RAM in MiB (it sets the quarantine, and so ASan's).  With
    ``instructions``, each row but ASan's also gets ``"instr"``: instructions
    per operation under valgrind, ``(I(2m) - I(m)) / m`` with ``m`` =
    ``instr_pairs`` (valgrind must be on ``PATH``; libodebug must not be a
    sanitizer build).  Returns ``{"rows": [...], "memory": {...}, "asan": bool,
    "quarantine_mb": ...}``."""
    from .kasan import quarantine_geometry
    check_int("n", n, 1, 1 << 30)
    check_int("size", size, 1, 8192)
    check_int("live", live, 1, 1 << 20)
    check_int("rounds", rounds, 1, 1000)
    check_int("ram", ram, 16, 1 << 20)
    check_int("cpus", cpus, 1, 256)
    check_int("instr_pairs", instr_pairs, 1, 1 << 26)
    compiler = _compiler(cc)
    if compiler is None:
        raise RuntimeError("bench api needs a C compiler (gcc, or CC=...) to build its programs")
    valgrind = None
    if instructions:
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            raise RuntimeError("bench api --instructions needs valgrind on PATH")
        san = _libodebug_sanitizer()
        if san:
            raise RuntimeError(f"bench api --instructions: libodebug is a sanitizer build "
                               f"({san}), which valgrind cannot run")
    qmb = max(1, quarantine_geometry(ram << 20, cpus)["max_size"] >> 20)
    asan_env = {"ASAN_OPTIONS": f"quarantine_size_mb={qmb}:detect_leaks=0"}
    with tempfile.TemporaryDirectory(prefix="odebug-bench-api-") as d:
        exe = build(compiler, d)
        peers = ["glibc"] + (["asan"] if "asan" in exe else [])
        names = peers + [name for name, _ in CONFIGS]
        cmd = {"glibc": "", "asan": ""}
        cmd.update(dict(CONFIGS))
        # every configuration runs the same n: a ratio compares runs of one
        # length (the quarantines fill over the first ~100,000 pairs; a shorter
        # run of one side would time its warm-up against the other's steady state)
        rows = []
        memory: Dict[str, float] = {}
        for mode in ("pair", "random"):
            samples: Dict[str, List[float]] = {name: [] for name in names}
            for _ in range(rounds):
                for name in names:
                    prog = exe["odebug"] if name in dict(CONFIGS) else exe[name]
                    samples[name].append(_run(prog, mode, cmd[name], n, size,
                                              live if mode == "random" else 0, ram, cpus,
                                              asan_env if name == "asan" else None,
                                              odebug=name in dict(CONFIGS)))
            for name in names:
                def ratios(peer: str) -> List[float]:
                    return [a / b for a, b in zip(samples[name], samples.get(peer, []))]

                def paired(peer: str) -> Optional[float]:
                    return statistics.median(ratios(peer)) if peer in samples else None
                vs_asan = ratios("asan")
                ns_min = min(samples[name])
                rows.append({"workload": mode, "config": name, "cmdline": cmd[name],
                             "ns": statistics.median(samples[name]),
                             "ns_min": ns_min,
                             "vs_glibc": paired("glibc"), "vs_asan": paired("asan"),
                             # the spread of the rounds' paired ratios: how far one
                             # round's ratio may be from the median on this machine
                             "vs_asan_range": (min(vs_asan), max(vs_asan)) if vs_asan else None,
                             # the fastest round of each: a neighbour only ever adds
                             # time, so the least disturbed runs' ratio
                             "vs_asan_best": (ns_min / min(samples["asan"])
                                              if "asan" in samples else None)})
        if valgrind is not None:
            # instruction counts do not depend on what else runs: the runs go
            # side by side, one per core
            from concurrent.futures import ThreadPoolExecutor
            todo = [r for r in rows if r["config"] != "asan"]
            with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
                counts = list(pool.map(
                    lambda r: instructions_per_op(
                        valgrind, exe["odebug"] if r["config"] in dict(CONFIGS) else exe[r["config"]],
                        r["workload"], r["cmdline"], instr_pairs, size,
                        live if r["workload"] == "random" else 0, ram, cpus), todo))
            for r, c in zip(todo, counts):
                r["instr"] = c
        for name in names:
            prog = exe["odebug"] if name in dict(CONFIGS) else exe[name]
            memory[name] = _run(prog, "memory", cmd[name], 1, size, live, ram, cpus,
                                asan_env if name == "asan" else None, odebug=name in dict(CONFIGS))
    return {"rows": rows, "memory": memory, "asan": "asan" in peers, "quarantine_mb": qmb,
            "size": size, "live": live, "n": n, "rounds": rounds, "ram_mb": ram, "cpus": cpus,
            "instr_pairs": instr_pairs if instructions else None}


def format_table(res: Dict[str, Any]) -> str:
    lines = [f"api: the public C API (odb_kmalloc/odb_kfree) in a C program, beside glibc"
             + (" and ASan" if res["asan"] else " (no ASan: the compiler lacks it)")
             + f"; {res['rounds']} rounds, medians; ratios paired per round",
             f"kernel: {res['ram_mb']} MiB, {res['cpus']} vCPUs; ASan's quarantine "
             f"= odebug's: {res['quarantine_mb']} MiB",
             f"{'workload':30}{'config':12}{'ns/op':>9}{'x glibc':>9}{'x ASan':>8}"
             + (f"{'rounds':>11}{'best':>6}" if res["asan"] else "")
             + (f"{'instr/op':>10}" if res.get("instr_pairs") else "")]
    what = {"pair": f"{res['size']} B alloc+free pair",
            "random": f"random 16..1024, {res['live']} live"}
    for r in res["rows"]:
        va = f"{r['vs_asan']:.2f}" if r["vs_asan"] is not None else "-"
        rng = ""
        if res["asan"]:
            lo_hi = r.get("vs_asan_range")
            rng = f"{lo_hi[0]:>6.2f}-{lo_hi[1]:.2f}" if lo_hi else f"{'-':>11}"
            best = r.get("vs_asan_best")
            rng += f"{best:>6.2f}" if best is not None else f"{'-':>6}"
        ir = ""
        if res.get("instr_pairs"):
            ir = f"{r['instr']:>10,.0f}" if "instr" in r else f"{'-':>10}"
        lines.append(f"{what[r['workload']]:30}{r['config']:12}{r['ns']:>9.1f}"
                     f"{r['vs_glibc']:>9.2f}{va:>8}{rng}{ir}")
    mem = "  ".join(f"{name} {v:.1f}" for name, v in res["memory"].items())
    lines.append(f"resident bytes per live {res['size']} B object ({res['live'] * 10} kept): {mem}")
    lines.append("no-debug: kasan=off no_debug_objects; defaults: KASAN + quarantine + debug "
                 "objects; full: slub_debug=FZPU on top (the default 2016 `relaxed` debug "
                 "flows); full-modern: the same on the v6.1+ flows (odebug.slub_path=modern)")
    if res["asan"]:
        lines.append("rounds: the lowest and the highest of the rounds' ratios to ASan "
                     "(x ASan is their median); best: the fastest round's ns over ASan's "
                     "fastest round's (a busy machine only adds time)")
    if res.get("instr_pairs"):
        lines.append(f"instr/op: valgrind (cachegrind), (I(2m) - I(m)) / m with m = "
                     f"{res['instr_pairs']:,} operations a run, the loop included; ASan's "
                     f"runtime does not run under valgrind")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", type=int, default=1_000_000,
                   help="operations per run, the same for every configuration "
                        "(default: %(default)s)")
    p.add_argument("--size", type=int, default=64, help="bytes per object (default: %(default)s)")
    p.add_argument("--live", type=int, default=10_000,
                   help="live objects of the random workload (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (default: %(default)s)")
    p.add_argument("--ram", type=int, default=256, help="kernel RAM in MiB (default: %(default)s)")
    p.add_argument("--cc", default=None, help="C compiler (default: $CC or gcc)")
    p.add_argument("--instructions", action="store_true",
                   help="also count instructions per operation under valgrind: "
                        "(I(2m) - I(m)) / m, noise-free (needs valgrind; minutes)")
    p.add_argument("--instr-pairs", type=int, default=100_000, metavar="M",
                   help="operations m of the shorter valgrind run (default: %(default)s)")


def run(a: argparse.Namespace) -> None:
    print(format_table(api_pairs(a.pairs, size=a.size, live=a.live, rounds=a.rounds, ram=a.ram,
                                 cc=a.cc, instructions=a.instructions,
                                 instr_pairs=a.instr_pairs)))
