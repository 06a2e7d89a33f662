"""A fixed workload whose observable output must not change when odebug gets faster
(issue 16: "reports, dmesg, stats and the seed figures stay byte-identical for the
same seed").

``python tests/golden_workload.py`` prints, for several boot configurations, the
kernel log, every report (kind and text), /proc/slabinfo, a cache's
CONFIG_SLUB_STATS counters, the quarantine's counters and the debug-objects stats
file after: random kmalloc/kfree traffic, planted bugs (out-of-bounds, use-after-free,
double free, red-zone and poison overwrites found by free and by validate, a
debug-objects misuse) and the C scenarios (object churn, hackbench and the
debug-objects churn on one vCPU, so the interleaving is fixed).

tests/test_golden.py compares this output with tests/data/golden_workload.txt.gz.  Only
what a rebuild may change is normalised: the ``+0x../0x..`` offsets of C functions
in stacks, and host timings.  A log is printed to its last DMESG_TAIL lines: the
printk ring drops its oldest lines by bytes (1 MiB), so where a long log (the
``T`` configuration's) starts depends on those offsets' lengths, its tail does not (sanitizer builds are not compared: their inlining
gives other C frames, hence other stack-depot handles).  A deliberate change of behaviour regenerates the file:
``python tests/golden_workload.py | gzip -9n > tests/data/golden_workload.txt.gz``.
"""
from __future__ import annotations

import random
import re
import sys
from typing import List

import odebug
from odebug import scenarios

# lines of each log printed: far fewer than the 1 MiB ring holds (see above)
DMESG_TAIL = 4000

CONFIGS = [
    "",
    "slub_debug=FZPU",
    "slub_debug=FZPU kasan=off",
    "kasan=off no_debug_objects",
    "odebug.quarantine=quarter",
    "slub_debug=FZPUT odebug.slub_path=modern kasan=off",
    "slub_debug=P,kmalloc-* odebug.objects_free=eager",
]

_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
_TIMING = re.compile(r"^(\w*(?:_ns|_ms)\w*)=\S+$")


def _bugs(k: odebug.Kernel, out: List[str]) -> None:
    # an out-of-bounds write and read through the checked accessors
    p = k.kmalloc(24)
    k.write(p + 24, b"\x01")
    k.read(p + 30, 1)
    k.kfree(p)
    # use-after-free, then double free
    q = k.kmalloc(100)
    k.kfree(q)
    k.read(q + 8, 4)
    k.kfree(q)
    # a raw (unchecked) write into a slub_debug red zone and into a freed object's poison
    c = k.kmem_cache_create("golden", 40, 0, "FZPU" if "slub_debug" in k.cmdline else "")
    a, b = c.alloc(), c.alloc()
    k.raw(a + 40, 2)[:] = b"\xee\xee"
    c.free(a)
    c.free(b)
    k.raw(b + 3, 1)[:] = b"\x77"
    c.validate()
    # debug objects: activate an object that was never initialised, free an active one
    if k.debug_objects.enabled:
        d = odebug.ObjectDescr("golden_obj")
        o = k.kmalloc(64)
        k.debug_objects.activate(o, d)
        k.debug_objects.init(o, d)
        k.debug_objects.activate(o, d)
        k.kfree(o)
    c.flush()
    out.append("golden cache stats: " + repr(sorted(c.stats().items())))


def _traffic(k: odebug.Kernel, seed: int) -> None:
    rng = random.Random(seed)
    live: List[int] = []
    for _ in range(3000):
        if live and rng.random() < 0.48:
            k.kfree(live.pop(rng.randrange(len(live))))
        else:
            p = k.kmalloc(rng.choice([8, 16, 24, 64, 96, 128, 200, 500, 1024, 2048, 5000]),
                          cpu=rng.randrange(k.nr_cpus))
            if p is not None:
                live.append(p)
    for p in live:
        k.kfree(p)


def run_config(cmdline: str) -> str:
    out: List[str] = [f"===== {cmdline or '(defaults)'}"]
    with odebug.Kernel(cmdline, cpus=2, ram="64M", seed=7) as k:
        k.kasan.multi_shot = True
        _traffic(k, 1)
        _bugs(k, out)
        r = scenarios.object_churn(k, rounds=30, wave=100, lifetime=3, seed=3)
        out.append(f"object_churn: {r.cycles} cycles, peak {r.peak_live}\n{r.stats_after}")
        k.rcu_barrier()
        k.advance(ms=50)
        out.append("slabinfo:\n" + k.slabinfo_text())
        if k.kasan.enabled:
            q = k.kasan.quarantine.stats()
            out.append("quarantine: " + " ".join(
                f"{n}={v}" for n, v in sorted(q.items())
                if not n.endswith(("_ns", "_ms")) and "_ns_" not in n and "hist" not in n))
        if k.debug_objects.enabled:
            out.append("debug_objects stats:\n" + k.debug_objects.stats_text())
        out.append("reports:")
        for rep in k.reports:
            out.append(f"--- {rep.subsystem} {rep.kind}\n{rep.text}")
        log = k.dmesg().splitlines(True)
        out.append("dmesg:\n" + "".join(log[-DMESG_TAIL:]))
    # one vCPU: hackbench's tasks then share one host thread, in a fixed order
    with odebug.Kernel(cmdline, cpus=1, ram="64M", seed=11) as k:
        h = scenarios.hackbench(k, groups=2, fds=4, loops=20, msg_size=100)
        out.append(f"hackbench: {h.messages} messages, {h.alloc_failures} failures, "
                   f"{k.report_count} reports, slab stats {sorted(h.slab_stats.items())}")
        if k.debug_objects.enabled:
            d = k.debug_objects.churn(50, 200, 3, seed=5)
            out.append("debug_objects.churn: " + repr(sorted(
                (n, v) for n, v in d.items() if "ns" not in n.split("_") and not n.endswith("_s"))))
            out.append("debug_objects stats:\n" + k.debug_objects.stats_text())
        out.append("slabinfo:\n" + k.slabinfo_text())
    return "\n".join(out) + "\n"


def normalise(text: str, *, c_frames: bool = True) -> str:
    """Offsets of C functions out; without ``c_frames`` the C stack lines too."""
    text = _OFFSET.sub("+OFF", text)
    if not c_frames:
        text = "\n".join(ln for ln in text.splitlines()
                         if not re.match(r"^(\[[ .0-9]+\] )? \w+\+OFF", ln)) + "\n"
    return text


def workload() -> str:
    return "".join(run_config(c) for c in CONFIGS)


if __name__ == "__main__":
    sys.stdout.write(normalise(workload()))
