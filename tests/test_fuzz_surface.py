"""Issue 18, "never crash, never escape the arena": a fuzzer over the whole public
Python surface of an ``odebug.Kernel``.

Every example is a list of operations (plain data: names, ints, bytes) that a
child process executes on a fresh kernel; the parent only generates and judges.
A segfault, an abort, a sanitizer report or a hang therefore fails one example
(with its op list printed) instead of killing pytest.  The child is a persistent
worker (``python tests/test_fuzz_surface.py --worker``) restarted after a crash.

After every example the child checks, and the parent asserts:

* no crash and no hang (the reply comes within ``_TIMEOUT`` seconds);
* no exception but the ones the API may raise (odebug.Error subclasses,
  ValueError, TypeError, MemoryError, and a callback's own exception): above
  all no SystemError;
* the kernel still answers (a kmalloc/kfree round trip and dmesg), or, if an
  op closed it, a new kernel boots and answers;
* for examples that did not corrupt memory on purpose ("clean" mode) the
  invariants of ``odebug.scenarios.check_invariants`` hold;
* nothing outside the arena changed: the arena and KASAN shadow sit between
  PROT_NONE guard regions (an escape just outside is a SIGSEGV), and canary
  bytearrays in the child are compared after every example.

Budget: the hypothesis profile (``HYPOTHESIS_PROFILE=dev|ci|fuzz``) sets the
number of examples; ``ODEBUG_FUZZ_CALLS=N`` runs a plain random campaign of at
least N kernel calls (``ODEBUG_FUZZ_SEED`` picks its seed).  The number of calls
made is printed.

Known findings that others are fixing are skipped by op kind through
``_PENDING_FIXES`` below (one entry per open finding).
"""
from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

# One entry per open finding of the fuzzer (issue 18 notes, F-numbers): each entry
# narrows what the fuzzer generates or how an op runs (grep its name to see where).
# Remove an entry when its fix lands, and the fuzzer covers that ground again.
_PENDING_FIXES: set = set()   # F10 "callbacks_in_threads" fixed: Python callbacks never run
                              # under a core lock (ctor: slub.c new_slab_irqs_on; fixups:
                              # ODB_DESCR_DEFER_ATOMIC)

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SANITIZED = bool(os.environ.get("ODEBUG_SANITIZE"))
_TIMEOUT = float(os.environ.get("ODEBUG_FUZZ_TIMEOUT", 120 if _SANITIZED else 30))

# ---- op generation ---------------------------------------------------------------------------
# ``r`` is a source of choices: ``r.int(lo, hi)``, ``r.choice(seq)``; either a
# hypothesis draw (shrinkable) or random.Random (the long campaign).

CMDLINES = ["", "slub_debug=FZPU", "slub_debug=FZPU kasan=off", "kasan=off",
            "kasan=off no_debug_objects", "no_debug_objects", "slub_debug=FZPU odebug.objects_free=eager",
            "slub_debug=P odebug.slub_path=modern", "odebug.slub_path=modern",
            "slub_debug=FZPUT"]
CALLBACKS = ["none", "ok", "false", "true", "raise", "reenter", "close"]
INTERNAL = ["kmalloc-8", "kmalloc-64", "kmalloc-192", "kmalloc-4096", "kmalloc-8192",
            "debug_objects_cache"]
DOBJ_OPS = ["init", "activate", "deactivate", "destroy", "free", "assert_init",
            "init_on_stack", "state", "lookup", "check_no_obj_freed", "active_state"]


def _size(r, hostile):
    k = r.int(0, 9 if hostile else 6)
    if k <= 3:
        return r.int(1, 256)
    if k == 4:
        return r.choice([8, 16, 96, 192, 4096, 8192])
    if k == 5:
        return r.int(257, 8192)
    if k == 6:
        return r.int(8193, 1 << 20)
    if k == 7:
        return r.choice([0, 1 << 22, 1 << 31, (1 << 32) - 1, 1 << 32])
    if k == 8:
        return r.choice([-1, -(1 << 63), 1 << 63, (1 << 64) - 1, 1 << 64, 1 << 100])
    return r.int(0, 1 << 24)


def _addr(r, hostile):
    """An address spec resolved in the child: [kind, index, offset]."""
    if not hostile:
        return ["live", r.int(0, 31), 0]
    kind = r.choice(["live", "live", "live", "interior", "freed", "freed", "arena",
                     "arena_obj", "tracker", "page", "below", "above", "huge", "neg",
                     "zero", "zsp", "unaligned", "vm", "vm_past"])
    return [kind, r.int(0, 31), r.int(0, 1 << 20)]


def _data(r, n):
    b = r.int(0, 255)
    return ("%02x" % b) * n if r.int(0, 1) else "".join("%02x" % r.int(0, 255) for _ in range(n))


def _no_tracker(spec):
    """F11: while pending, frees never aim at a debug-objects tracker."""
    if "kfree_tracker" in _PENDING_FIXES and spec[0] == "tracker":
        return ["arena_obj"] + spec[1:]
    return spec


def _gen_op(r, hostile, depth=0):
    cpu = r.int(0, 3)            # 3 is past nr_cpus on a 2-vCPU kernel
    ops = ["kmalloc", "kmalloc", "kzalloc", "kfree", "kfree", "krealloc", "ksize",
           "cache_create", "cache_alloc", "cache_alloc", "cache_free", "alloc_bulk",
           "free_bulk", "validate", "flush", "cache_stats", "write", "read", "memset",
           "memcpy", "dobj", "dobj", "dobj", "kasan", "quarantine", "advance",
           "kfree_rcu", "rcu_barrier", "alloc_pages", "free_pages", "slab_object", "info",
           "vmalloc", "vfree", "vmap", "mempool", "mempool"]
    if hostile:
        ops += ["raw_write", "raw_write", "raw_write", "raw_meta", "raw_keep",
                "raw_kept_write", "destroy", "destroy_internal", "cpu_hotplug",
                "close", "fault", "bad_args", "kpoison", "kpoison"]
        if depth == 0:
            ops += ["threads"]
    else:
        ops += ["cpu_hotplug"]
        if depth == 0:                 # no destroy under a cache's concurrent users
            ops += ["threads", "destroy"]
    ops = [o for o in ops if o not in _PENDING_FIXES]
    name = r.choice(ops)
    if name in ("kmalloc", "kzalloc"):
        return [name, _size(r, hostile), r.choice([0, 1, 2]) if hostile else 0, cpu]
    if name in ("kfree", "kfree_rcu"):
        return [name, _no_tracker(_addr(r, hostile)), cpu]
    if name in ("ksize", "slab_object"):
        return [name, _addr(r, hostile), cpu]
    if name == "krealloc":
        return [name, _no_tracker(_addr(r, hostile)), _size(r, hostile), cpu]
    if name == "cache_create":
        return [name, _size(r, hostile) if hostile else r.int(1, 4096),
                r.choice([0, 0, 8, 64, 3, 4096] + ([-1, 1 << 40] if hostile else [])),
                r.choice([None, "FZPU", "Z", "P", "U", "T", "F", "hwcache", "rcu",
                          "nomerge"] + (["bogus", "?", 1 << 31, -1] if hostile else [])),
                r.choice(CALLBACKS if hostile else ["none", "ok", "reenter"])]
    if name in ("cache_alloc", "alloc_bulk", "validate", "flush", "cache_stats", "destroy",
                "destroy_internal"):
        sel = ["own", r.int(0, 7)] if name != "destroy_internal" else ["internal", r.choice(INTERNAL)]
        if hostile and name != "destroy" and r.int(0, 3) == 0:
            sel = ["internal", r.choice(INTERNAL)]
        n = r.int(0, 40) if not hostile else r.choice([0, 1, 5, 33, r.int(0, 200), -1, 1 << 62])
        return [name, sel, n, r.int(0, 1), cpu]
    if name == "cache_free":
        sel = ["own", r.int(0, 7)] if not hostile or r.int(0, 2) else ["internal", r.choice(INTERNAL)]
        return [name, sel, _no_tracker(_addr(r, hostile)), cpu]
    if name == "free_bulk":
        sel = ["own", r.int(0, 7)] if not hostile or r.int(0, 2) else ["internal", r.choice(INTERNAL)]
        return [name, sel, [_no_tracker(_addr(r, hostile)) for _ in range(r.int(0, 6))], cpu]
    if name in ("write", "read", "memset"):
        n = r.int(1, 64) if not hostile else r.choice([0, 1, 8, 64, 300, 5000, -1, 1 << 40])
        return [name, _addr(r, hostile), r.int(0, 4095) if hostile else r.int(0, 255), n,
                r.int(0, 255), cpu]
    if name == "memcpy":
        return [name, _addr(r, hostile), _addr(r, hostile), r.int(0, 128) if not hostile
                else r.choice([0, 1, 16, 200, 9000, -1]), r.int(0, 1), cpu]
    if name == "dobj":
        return [name, r.choice(DOBJ_OPS), _addr(r, hostile), r.int(0, 2),
                r.choice(CALLBACKS if hostile else ["none", "false", "true", "reenter"]), cpu]
    if name == "kasan":
        return [name, r.choice(["check", "check_w", "shadow", "check_byte", "counters"]),
                _addr(r, hostile), r.choice([1, 8, 16, 100] + ([0, -1, 1 << 40] if hostile else []))]
    if name == "mempool":
        # never a blocking alloc: with RAM used up it would wait, as the kernel's does
        action = r.choice(["create", "create", "alloc", "alloc", "prealloc", "free", "free",
                           "destroy", "resize", "info"])
        kind = r.choice(["kmalloc", "slab", "page"])
        arg = {"kmalloc": _size(r, hostile) if hostile else r.choice([16, 115, 128, 8193]),
               "slab": r.int(0, 7), "page": r.choice([0, 1, 2] + ([11, -1] if hostile else []))}[kind]
        min_nr = r.choice([0, 1, 2, 4] + ([-1, 1 << 21, 1 << 40] if hostile else []))
        return [name, action, r.int(0, 7), kind, arg, min_nr, _addr(r, hostile), cpu]
    if name == "kpoison":
        return [name, r.choice(["poison", "unpoison", "poison_pages", "unpoison_pages",
                                "mp_poison", "mp_unpoison", "mp_poison_pages", "disable"]),
                _addr(r, hostile), r.int(-8, 64), _size(r, hostile), r.int(0, 300)]
    if name == "quarantine":
        return [name, r.choice(["drain", "reduce", "stats", "count"] +
                               (["offline", "storm"] if hostile else [])), r.int(0, 3)]
    if name == "advance":
        return [name, r.choice([0, 1, 4, 10, 100, 1000, 5000])]
    if name == "alloc_pages":
        return [name, r.choice([0, 0, 1, 3, 10] + ([11, -1] if hostile else [])), cpu]
    if name == "free_pages":
        return [name, _addr(r, hostile) if hostile else ["page", r.int(0, 31), 0],
                r.choice([0, 1, 3]) if hostile else -1, cpu]
    if name == "vmalloc":         # vmalloc, vzalloc, kvmalloc
        return [name, _size(r, hostile) if hostile else r.choice([1, 100, 4096, 9000, 70000]),
                r.int(0, 2), cpu]
    if name == "vfree":           # clean: one of ours; hostile: also at an offset, or anything
        return [name, r.int(0, 31), r.choice([0, 0, 8, 4096]) if hostile else 0,
                _addr(r, hostile) if hostile and r.int(0, 2) == 0 else None, cpu]
    if name == "vmap":
        return [name, r.int(0, 4), cpu]
    if name == "info":
        return [name, r.choice(["slabinfo", "dmesg", "dobj_stats", "dobj_internals",
                                "reports", "caches", "stats_text"])]
    if name in ("raw_write", "raw_keep"):
        n = r.choice([1, 2, 8, 16, 64, r.int(1, 512)])
        return [name, _addr(r, hostile), r.int(-64, 256), _data(r, n)]
    if name == "raw_meta":
        # over a free object's free pointer / red zones / track, or a tracker
        return [name, r.choice(["freed", "tracker", "live", "arena_obj"]), r.int(0, 31),
                r.int(-32, 96), _data(r, r.choice([1, 4, 8, 16]))]
    if name == "raw_kept_write":
        return [name, r.int(0, 7), _data(r, r.choice([1, 8]))]
    if name == "cpu_hotplug":
        return [name, r.int(0, 3), r.int(0, 1)]
    if name == "fault":
        return [name, r.choice(["failslab", "fail_page_alloc"]), r.choice([0, 1, 10, 50, 100]),
                r.choice([1, 3, -1])]
    if name == "bad_args":
        return [name, r.int(0, 15)]
    if name == "threads":
        nt = r.int(2, 4)
        subs = [[_gen_op(r, hostile and r.int(0, 1) == 0, 1) for _ in range(r.int(1, 8))]
                for _ in range(nt)]
        if "callbacks_in_threads" in _PENDING_FIXES:
            for sub in subs:
                for o in sub:
                    if o[0] == "cache_create":
                        o[4] = "none"
                    elif o[0] == "dobj":
                        o[4] = "none"
        return [name, subs]
    if name == "close":
        return [name]
    if name == "rcu_barrier":
        return [name]
    raise AssertionError(name)


def gen_example(r):
    hostile = r.int(0, 3) != 0
    cmdline = r.choice(CMDLINES)
    cpus = r.choice([1, 2, 2, 3])
    ops = [_gen_op(r, hostile) for _ in range(r.int(1, 30))]
    return {"hostile": hostile, "cmdline": cmdline, "cpus": cpus, "ops": ops}


class _RandomSource:
    def __init__(self, seed):
        self._r = random.Random(seed)

    def int(self, lo, hi):
        return self._r.randint(lo, hi)

    def choice(self, seq):
        return seq[self._r.randrange(len(seq))]


class _DrawSource:
    def __init__(self, data):
        import hypothesis.strategies as st
        self._d, self._st = data, st

    def int(self, lo, hi):
        return self._d.draw(self._st.integers(lo, hi))

    def choice(self, seq):
        return seq[self._d.draw(self._st.integers(0, len(seq) - 1))]


# ---- the child -----------------------------------------------------------------------------------
class CallbackBoom(Exception):
    """The exception fuzzed callbacks raise: it may come back out of the call."""


def _child_run(ex):
    import threading
    import warnings
    import odebug

    # the fuzzer reads k.reports after examples that made many KASAN detections
    warnings.simplefilter("ignore", odebug.SuppressedReportsWarning)

    allowed = (odebug.Error, ValueError, TypeError, MemoryError, CallbackBoom)
    if "overflow_error" in _PENDING_FIXES:
        allowed += (OverflowError,)
    calls = [0]
    problems = []
    errors = {}
    canaries = [bytearray(os.urandom(1) * 4096) for _ in range(8)]
    canary_copy = [bytes(c) for c in canaries]

    k = odebug.Kernel(ex["cmdline"], cpus=ex["cpus"], ram="16M")
    st = {"live": [], "freed": [], "pages": [], "caches": [], "kept": [], "descrs": {},
          "ctor_caches": set(), "vm": [], "pools": [], "elems": []}
    in_thread = threading.local()
    lock = threading.RLock()
    arena_lo, arena_hi = k.arena_start, k.arena_end
    vm_lo = k.vmalloc_start

    def callback(kind, ret=None):
        def cb(*a):
            if kind == "raise":
                raise CallbackBoom("boom")
            if kind == "reenter":
                calls[0] += 2
                p = k.kmalloc(24)
                k.kfree(p)
                k.debug_objects.stats()
            if kind == "close":
                calls[0] += 1
                k.close()
            if kind == "ok":
                return ret
            return {"false": False, "true": True}.get(kind, ret)
        return cb

    def descr(kind):
        d = st["descrs"].get(kind)
        if d is None:
            if kind == "none":
                d = odebug.ObjectDescr("fz_none")
            else:
                cb = callback(kind, False)
                d = odebug.ObjectDescr("fz_" + kind, fixup_init=cb, fixup_activate=cb,
                                       fixup_destroy=cb, fixup_free=cb, fixup_assert_init=cb,
                                       is_static_object=callback(kind, False),
                                       debug_hint=callback(kind, 0))
            st["descrs"][kind] = d
        return d

    def find_in_cache(names, i):
        """An object in one of the caches ``names`` (trackers: debug_objects_cache),
        found by a walk of the arena's pages (bookkeeping: not counted as calls)."""
        pages = [a for a in range(arena_lo, arena_hi, 4096)
                 if (k.slab_object(a) or ("",))[0] in names]
        if not pages:
            return arena_lo
        so = k.slab_object(pages[i % len(pages)] + (i * 8) % 4096)
        return so[1] if so else pages[i % len(pages)]

    def claim(spec):
        """Clean mode: a live object taken off the list (one owner frees it), or None."""
        with lock:
            if not st["live"]:
                return None
            e = st["live"].pop(spec[1] % len(st["live"]))
            st["freed"].append(e[0])
            return e

    def resolve(spec):
        kind, i, off = spec
        with lock:
            if kind in ("live", "interior", "unaligned"):
                if not st["live"]:
                    return 0 if kind == "live" else arena_lo + off % (arena_hi - arena_lo)
                p, size = st["live"][i % len(st["live"])][:2]
                if kind == "interior":
                    return p + 1 + off % max(1, size - 1)
                return p + (off % 7 + 1 if kind == "unaligned" else 0)
            if kind == "freed":
                if not st["freed"]:
                    return arena_lo + off
                return st["freed"][i % len(st["freed"])]
            if kind == "page":
                if not st["pages"]:
                    return arena_lo + (off << 12) % (arena_hi - arena_lo)
                return st["pages"][i % len(st["pages"])][0]
            if kind in ("vm", "vm_past"):     # in a vmalloc area, or past its bytes
                if not st["vm"]:
                    return vm_lo + off
                v, size = st["vm"][i % len(st["vm"])][:2]
                return v + (off % max(1, size) if kind == "vm" else size + off % 8192)
        if kind == "arena":
            return arena_lo + (off * 4093 + i) % (arena_hi - arena_lo)
        if kind == "arena_obj":
            return find_in_cache({c for c in INTERNAL if c != "debug_objects_cache"}, i + off)
        if kind == "tracker":
            return find_in_cache({"debug_objects_cache"}, i + off)
        if kind == "below":
            return arena_lo - 1 - off
        if kind == "above":
            return arena_hi + off
        if kind == "huge":
            return [1 << 64, (1 << 64) + off, 1 << 100, (1 << 64) - 1 - off][i % 4]
        if kind == "neg":
            return -1 - off
        if kind == "zero":
            return 0
        if kind == "zsp":
            return 16
        raise AssertionError(kind)

    def inside_live(p, data):
        """(address, bytes) clamped into a live object's bytes (while F3 is open)."""
        with lock:
            if not st["live"]:
                return arena_lo, b""
            q, size = st["live"][p % len(st["live"])][:2]
        off = (p - q) % size if p >= q and p < q + size else 0
        return q + off, data[:size - off]

    def cache_of(sel):
        if sel[0] == "internal":
            calls[0] += 1
            return k.cache(sel[1])
        with lock:
            if not st["caches"]:
                return None
            return st["caches"][sel[1] % len(st["caches"])]

    def track_alloc(p, size, owner=None):
        if p is not None and p > 16:
            with lock:
                st["live"].append((p, size, owner))

    def track_free(p):
        with lock:
            for j, e in enumerate(st["live"]):
                if e[0] == p:
                    del st["live"][j]
                    break
            st["freed"].append(p)
            del st["freed"][:-64]

    FLAGS = {"hwcache": odebug._core.SLAB_HWCACHE_ALIGN, "rcu": odebug._core.SLAB_TYPESAFE_BY_RCU,
             "nomerge": odebug._core.SLAB_NO_MERGE}

    def run_op(op, ncache=[0]):
        name = op[0]
        calls[0] += 1
        if name in ("kmalloc", "kzalloc"):
            gfp = [odebug._core.GFP_KERNEL, odebug._core.GFP_ATOMIC, odebug._core.GFP_NOWAIT][op[2]]
            p = getattr(k, name)(op[1], gfp, cpu=op[3] % k.nr_cpus)
            track_alloc(p, op[1])
        elif name == "kfree":
            if not ex["hostile"]:
                e = claim(op[1])
                if e is not None:
                    (e[2].free if e[2] is not None else k.kfree)(e[0], cpu=op[2] % k.nr_cpus)
                return
            p = resolve(op[1])
            k.kfree(p, cpu=op[2] % k.nr_cpus)
            track_free(p)
        elif name == "kfree_rcu":
            if not ex["hostile"]:
                e = claim(op[1])
                if e is not None:
                    k.kfree_rcu(e[0])
                return
            p = resolve(op[1])
            k.kfree_rcu(p)
            track_free(p)
        elif name == "ksize":
            k.ksize(resolve(op[1]))
        elif name == "slab_object":
            k.slab_object(resolve(op[1]))
        elif name == "krealloc":
            if "krealloc_interior" in _PENDING_FIXES and op[1][0] in (
                    "interior", "unaligned", "arena", "arena_obj", "tracker", "page"):
                op = [op[0], ["live"] + op[1][1:]] + op[2:]
            p = resolve(op[1])
            if "krealloc_interior" in _PENDING_FIXES and 16 < p < 1 << 64:
                so = k.slab_object(p)          # freed may hold an interior pointer too
                if so is None or so[1] != p:
                    p = 0
            if not ex["hostile"]:          # clean: krealloc is for kmalloc'd memory only
                with lock:
                    e = next((e for e in st["live"] if e[0] == p and e[2] is None), None)
                    if e is None:
                        return
                    st["live"].remove(e)   # ours now
            q = k.krealloc(p, op[2], cpu=op[3] % k.nr_cpus)
            if q is None and not ex["hostile"]:
                track_alloc(p, e[1])           # failed: the old object stays ours
            if q is not None:
                if p != q:
                    track_free(p)
                else:
                    track_free(p)
                    with lock:
                        st["freed"].pop()
                track_alloc(q, op[2])
        elif name == "cache_create":
            ncache[0] += 1
            flags = op[3]
            if flags in FLAGS:
                flags = FLAGS[flags]
            ctor = None if op[4] == "none" else callback(op[4])
            c = k.kmem_cache_create(f"fz{ncache[0]}", op[1], op[2], flags, ctor)
            if ctor is not None:
                with lock:
                    st["ctor_caches"].add(c.name)
            with lock:
                st["caches"].append(c)
        elif name in ("cache_alloc", "alloc_bulk", "validate", "flush", "cache_stats",
                      "destroy", "destroy_internal"):
            c = cache_of(op[1])
            if c is None:
                return
            if ("callbacks_in_threads" in _PENDING_FIXES and getattr(in_thread, "yes", False)
                    and c.name in st["ctor_caches"]):
                return                       # F10: no Python ctor on the fuzz threads
            calls[0] += 1
            with k.on_cpu(op[4] % k.nr_cpus):
                if name == "cache_alloc":
                    p = c.zalloc() if op[3] else c.alloc()
                    track_alloc(p, c.object_size, c)
                elif name == "alloc_bulk":
                    ps = c.alloc_bulk(op[2])
                    for p in ps or ():
                        track_alloc(p, c.object_size, c)
                elif name == "validate":
                    if c.validatable:
                        c.validate()
                elif name == "flush":
                    c.flush()
                elif name == "cache_stats":
                    c.stats(bool(op[3])), c.info
                else:
                    if not ex["hostile"]:      # clean: give the cache its objects back first
                        with lock:
                            mine = [e for e in st["live"] if e[2] is c]
                        for p, _, _ in mine:
                            c.free(p)
                            track_free(p)
                    c.destroy()
                    with lock:
                        if c in st["caches"]:
                            st["caches"].remove(c)
        elif name == "cache_free":
            c = cache_of(op[1])
            if c is None:
                return
            if not ex["hostile"]:
                with lock:
                    e = next((e for e in st["live"] if e[2] is c), None)
                    if e is None:
                        return
                    st["live"].remove(e)
                c.free(e[0], cpu=op[3] % k.nr_cpus)
                track_free(e[0])
                return
            p = resolve(op[2])
            c.free(p, cpu=op[3] % k.nr_cpus)
            track_free(p)
        elif name == "free_bulk":
            c = cache_of(op[1])
            if c is None:
                return
            ps = [resolve(a) for a in op[2]]
            if not ex["hostile"]:
                with lock:
                    own = {e[0] for e in st["live"] if e[2] is c}
                    ps = sorted({p for p in ps if p in own})
                    st["live"] = [e for e in st["live"] if e[0] not in ps]
            c.free_bulk(ps, cpu=op[3] % k.nr_cpus)
            for p in ps:
                track_free(p)
        elif name in ("write", "read", "memset"):
            p = resolve(op[1])
            off, n = op[2], op[3]
            if name == "read" and "huge_read" in _PENDING_FIXES:
                n = min(n, 1 << 20)
            if name != "read" and ex["hostile"] and "write_over_metadata" in _PENDING_FIXES:
                p, data = inside_live(p + off, b"x" * max(0, min(n, 1 << 16)))
                off, n = 0, len(data)
            if not ex["hostile"]:              # clean: inside a live object, which no
                with lock:                     # other thread frees meanwhile
                    e = next((e for e in st["live"] if e[0] == p), None)
                    if e is None:
                        return
                    off = off % e[1]
                    n = 1 + (n - 1) % (e[1] - off)
                    if name == "write":
                        k.write(p + off, bytes([op[4]]) * n)
                    elif name == "read":
                        k.read(p + off, n)
                    else:
                        k.memset(p + off, op[4], n)
                return
            if name == "write":
                k.write(p + off, bytes([op[4]]) * max(0, min(n, 1 << 16)) if n >= 0 else b"")
            elif name == "read":
                k.read(p + off, n)
            else:
                k.memset(p + off, op[4], n)
        elif name == "memcpy":
            a, b, n = resolve(op[1]), resolve(op[2]), op[3]
            if ex["hostile"] and "write_over_metadata" in _PENDING_FIXES:
                a, data = inside_live(a, b"x" * max(0, min(n, 1 << 16)))
                n = len(data)
            if not ex["hostile"]:
                with lock:
                    sizes = {e[0]: e[1] for e in st["live"]}
                    if a not in sizes or b not in sizes or a == b:
                        return
                    n = min(n, sizes[a], sizes[b])
                    (k.memmove if op[4] else k.memcpy)(a, b, n)
                return
            (k.memmove if op[4] else k.memcpy)(a, b, n)
        elif name == "dobj":
            d = k.debug_objects
            what, p, mode = op[1], resolve(op[2]), op[4]
            de = descr(mode)
            cpu = op[5] % k.nr_cpus
            if what in ("state", "lookup"):
                getattr(d, what)(p)
            elif what == "check_no_obj_freed":
                d.check_no_obj_freed(p, [1, 64, 4096][op[3]], cpu=cpu)
            elif what == "active_state":
                d.active_state(p, de, op[3], op[3] + 1, cpu=cpu)
            else:
                getattr(d, what)(p, de, cpu=cpu)
        elif name == "kasan":
            a, n = resolve(op[2]), op[3]
            if "huge_read" in _PENDING_FIXES:
                n = min(n, 1 << 20)
            kk = k.kasan
            if op[1] == "check":
                kk.check(a, n)
            elif op[1] == "check_w":
                kk.check(a, n, write=True)
            elif op[1] == "shadow":
                kk.shadow(a, n)
            elif op[1] == "check_byte":
                kk.check_byte(a)
            else:
                kk.counters, kk.detections
        elif name == "mempool":
            action, i, kind, arg, min_nr, spec, cpu = op[1:]
            with lock:
                pools = list(st["pools"])
            if action == "create":
                if kind == "slab":
                    c = cache_of(["own", arg])
                    if c is None or c.name in st["ctor_caches"]:
                        return
                    pool = k.mempool_create_slab_pool(min_nr, c)
                elif kind == "page":
                    pool = k.mempool_create_page_pool(min_nr, arg)
                else:
                    pool = k.mempool_create_kmalloc_pool(min_nr, arg)
                if pool is not None:
                    with lock:
                        st["pools"].append(pool)
                return
            if not pools:
                return
            pool = pools[i % len(pools)]
            with k.on_cpu(cpu % k.nr_cpus):
                if action in ("alloc", "prealloc"):
                    p = (pool.alloc([odebug._core.GFP_ATOMIC, odebug._core.GFP_NOWAIT][i % 2])
                         if action == "alloc" else pool.alloc_preallocated())
                    if p is not None:
                        with lock:
                            st["elems"].append((p, pool))
                elif action == "free":
                    if not ex["hostile"]:      # clean: one of this pool's elements
                        with lock:
                            e = next((e for e in st["elems"] if e[1] is pool), None)
                            if e is None:
                                return
                            st["elems"].remove(e)
                        pool.free(e[0])
                        return
                    with lock:
                        own = [e for e in st["elems"] if e[1] is pool]
                    pool.free(own[i % len(own)][0] if own and spec[0] == "live" else resolve(spec))
                elif action == "destroy":
                    if not ex["hostile"]:      # clean: its elements back first
                        with lock:
                            mine = [e for e in st["elems"] if e[1] is pool]
                            st["elems"] = [e for e in st["elems"] if e[1] is not pool]
                            st["pools"].remove(pool)
                        for p, _ in mine:
                            pool.free(p)
                    pool.destroy()
                elif action == "resize":
                    pool.resize(min_nr)
                else:
                    repr(pool), pool.info(), pool.elements()
        elif name == "kpoison":
            what, a, off, n, v = op[1], resolve(op[2]), op[3], op[4], op[5]
            kk = k.kasan
            if what == "poison":
                kk.poison(a + off, n, v)
            elif what == "unpoison":
                kk.unpoison(a + off, n)
            elif what == "poison_pages":
                kk.poison_pages(a & ~4095 if a >= 0 else a, v % 13)
            elif what == "unpoison_pages":
                kk.unpoison_pages(a & ~4095 if a >= 0 else a, v % 13)
            elif what == "mp_poison":
                kk.mempool_poison_object(a)
            elif what == "mp_unpoison":
                kk.mempool_unpoison_object(a, n)
            elif what == "mp_poison_pages":
                kk.mempool_poison_pages(a & ~4095 if a >= 0 else a, v % 13)
            else:
                with kk.disabled():
                    k.read(a, max(1, min(n, 4096)) if isinstance(n, int) and n > 0 else 1)
        elif name == "quarantine":
            q = k.kasan.quarantine
            if op[1] == "drain":
                q.drain()
            elif op[1] == "reduce":
                q.reduce()
            elif op[1] == "stats":
                q.stats()
            elif op[1] == "count":
                q.count()
            elif op[1] == "offline":
                q.cpu_offline(op[2], True)
            elif op[1] == "storm":
                q.storm(200, threads=1, live=8)
        elif name == "advance":
            k.advance(ms=op[1])
        elif name == "rcu_barrier":
            k.rcu_barrier()
        elif name == "alloc_pages":
            p = k.alloc_pages(op[1], cpu=op[2] % k.nr_cpus)
            if p is not None:
                with lock:
                    st["pages"].append((p, op[1]))
        elif name == "free_pages":
            if op[2] == -1:      # clean: one of ours with its order
                with lock:
                    if not st["pages"]:
                        return
                    p, order = st["pages"].pop(op[1][1] % len(st["pages"]))
            else:
                p, order = resolve(op[1]), op[2]
            k.free_pages(p, order, cpu=op[3] % k.nr_cpus)
        elif name == "vmalloc":
            cpu = op[3] % k.nr_cpus
            v = (k.vmalloc, k.vzalloc, k.kvmalloc)[op[2]](op[1], cpu=cpu)
            if v is not None and v > 16:
                with lock:
                    st["vm"].append((v, op[1], "kv" if op[2] == 2 else "v"))
        elif name == "vfree":
            cpu = op[4] % k.nr_cpus
            if op[3] is not None:          # hostile: any address
                k.vfree(resolve(op[3]), cpu=cpu)
                return
            with lock:
                if not st["vm"]:
                    return
                v, size, how = st["vm"].pop(op[1] % len(st["vm"]))
            if how == "map":
                k.vunmap(v + op[2], cpu=cpu)
            elif how == "kv" and not op[2]:
                k.kvfree(v, cpu=cpu)
            else:
                k.vfree(v + op[2], cpu=cpu)
        elif name == "vmap":
            with lock:
                pages = [p + j * 4096 for p, order in st["pages"] for j in range(1 << order)]
            pages = pages[:op[1]]
            v = k.vmap(pages, cpu=op[2] % k.nr_cpus)
            if v is not None:
                with lock:
                    st["vm"].append((v, 4096 * len(pages), "map"))
        elif name == "info":
            w = op[1]
            if w == "slabinfo":
                k.slabinfo()
            elif w == "dmesg":
                k.dmesg()
            elif w == "dobj_stats":
                k.debug_objects.stats()
            elif w == "dobj_internals":
                k.debug_objects.internals()
            elif w == "reports":
                [str(r) for r in k.reports[-5:]]
            elif w == "caches":
                [c.info for c in k.caches()]
            else:
                k.debug_objects.stats_text()
        elif name in ("raw_write", "raw_keep"):
            p = resolve(op[1]) + op[2]
            data = bytes.fromhex(op[3])
            if "raw_free_pointer" in _PENDING_FIXES:
                p, data = inside_live(p, data)
            mv = k.raw(p, len(data))
            mv[:] = data
            if name == "raw_keep":
                with lock:
                    st["kept"].append(mv)
        elif name == "raw_meta":
            p = resolve([op[1], op[2], 0]) + op[3]
            data = bytes.fromhex(op[4])
            if "raw_free_pointer" in _PENDING_FIXES:
                p, data = inside_live(p, data)
            k.raw(p, len(data))[:] = data
        elif name == "raw_kept_write":
            if "raw_free_pointer" in _PENDING_FIXES:   # its object may be free by now
                return
            with lock:
                if not st["kept"]:
                    return
                mv = st["kept"][op[1] % len(st["kept"])]
            data = bytes.fromhex(op[2])[:len(mv)]
            mv[:len(data)] = data
        elif name == "cpu_hotplug":
            (k.cpu_online if op[2] else k.cpu_offline)(op[1])
        elif name == "close":
            k.close()
        elif name == "_abort":         # the harness's own test: a crashing child
            os.abort()
        elif name == "fault":
            k.set_fault(op[1], probability=op[2], times=op[3], verbose=0)
        elif name == "bad_args":
            j = op[1]
            bad = [lambda: k.kmalloc("64"), lambda: k.kmalloc(1.5), lambda: k.kfree("x"),
                   lambda: k.ksize(None), lambda: k.read(arena_lo, "1"),
                   lambda: k.write(arena_lo, 5), lambda: k.raw(arena_lo, -1),
                   lambda: k.raw(-1, 1), lambda: k.memset(arena_lo, 256, 1),
                   lambda: k.kmem_cache_create(None, 8), lambda: k.alloc_pages(True),
                   lambda: k.debug_objects.init(arena_lo, "descr"),
                   lambda: k.debug_objects.init(1 << 64, descr("none")),
                   lambda: k.advance(ms=-1), lambda: k.cache("no-such-cache"),
                   lambda: k.cache("kmalloc-64").free_bulk([1 << 70])][j % 16]
            bad()
        elif name == "threads":
            errs = []

            def body(sub):
                in_thread.yes = True
                for o in sub:
                    try:
                        run_op(o)
                    except allowed:
                        pass
                    except BaseException as e:  # noqa: BLE001
                        errs.append((o, e, traceback.format_exc()))
            ts = [threading.Thread(target=body, args=(sub,), daemon=True) for sub in op[1]]
            for t in ts:
                t.start()
            for t in ts:
                t.join(_TIMEOUT)
                if t.is_alive():
                    problems.append(f"hang: a thread of {op} did not finish")
                    return
            for o, e, tb in errs:
                problems.append(f"{type(e).__name__} in thread op {o}: {e}\n{tb}")
        else:
            raise AssertionError(name)

    for op in ex["ops"]:
        try:
            run_op(op)
        except allowed as e:
            key = f"{op[0]}: {type(e).__name__}"
            errors[key] = errors.get(key, 0) + 1
        except BaseException as e:  # noqa: BLE001 - SystemError and friends are the finding
            problems.append(f"{type(e).__name__} from {op}: {e}\n{traceback.format_exc()}")
        if problems:
            break

    # the kernel (or, after a close, a new one) still answers
    try:
        kk = k
        if k.closed:
            kk = odebug.Kernel(ram="16M")
        p = kk.kmalloc(64)
        if p is None:
            # KASAN's quarantine may hold all the RAM (e.g. a failed non-blocking
            # alloc_bulk of huge objects frees them all into it): as in the kernel, the
            # failed GFP_KERNEL allocation's post-alloc hook reduced the quarantine,
            # so the next one may find pages (seed 24 example 39529) -- or not yet: a
            # batched reduce frees one batch (seed 26 example 6390); then drain it
            p = kk.kmalloc(64)
            if p is None and kk.kasan.enabled:
                kk.kasan.quarantine.drain()
                p = kk.kmalloc(64)
        if p is None:
            # None is right when RAM is used up (a fuzzed cache of huge objects
            # can take all of the 16 MiB) or a fault was injected
            if (not kk.fault("failslab")["failures"] and not kk.fault("fail_page_alloc")["failures"]
                    and kk.nr_free_pages > 0):
                q = kk.kasan.quarantine.stats() if kk.kasan.enabled else {}
                problems.append("kmalloc(64) returned None without fault injection "
                                f"({kk.nr_free_pages} free pages, quarantine "
                                f"{q.get('size')} B; log: {kk.dmesg()[-600:]!r})")
        else:
            kk.write(p, b"x" * 64)
            kk.kfree(p)
        kk.dmesg()
        calls[0] += 3
        if kk is not k:
            kk.close()
    except BaseException as e:  # noqa: BLE001
        problems.append(f"the kernel does not answer: {type(e).__name__}: {e}\n"
                        f"{traceback.format_exc()}")
    if not ex["hostile"] and not problems and not k.closed:
        try:
            from odebug.scenarios import check_invariants
            for name in ("failslab", "fail_page_alloc"):
                k.set_fault(name, probability=0)
            k.rcu_barrier()
            k.clear_reports()
            check_invariants(k, drain=k.kasan.enabled)
            calls[0] += 4
        except BaseException as e:  # noqa: BLE001
            problems.append(f"invariants: {type(e).__name__}: {e}")
    for c, copy in zip(canaries, canary_copy):
        if bytes(c) != copy:
            problems.append("a canary bytearray outside the arena changed")
            break
    try:
        st["kept"].clear()
        k.close()
    except BaseException as e:  # noqa: BLE001
        problems.append(f"close: {type(e).__name__}: {e}")
    return {"calls": calls[0], "problems": problems, "errors": errors}


def _worker():
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                  # odebug or a callback printing must not garble replies
    for line in sys.stdin:
        ex = json.loads(line)
        try:
            reply = _child_run(ex)
        except BaseException as e:  # noqa: BLE001
            reply = {"calls": 0, "problems": [f"child: {type(e).__name__}: {e}\n"
                                              f"{traceback.format_exc()}"], "errors": {}}
        out.write(json.dumps(reply) + "\n")


# ---- the parent ------------------------------------------------------------------------------
class Worker:
    """A child process running examples; restarted after a crash or a hang."""

    def __init__(self):
        self.proc = None
        self.total_calls = 0
        self.examples = 0
        self.errors = {}

    def _start(self):
        self.log = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("MPLBACKEND", "Agg")
        self.proc = subprocess.Popen([sys.executable, "-X", "faulthandler",
                                      os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, env=env, cwd=_ROOT, text=True)

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _stderr_tail(self):
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace")
        keep, skip = [], 0
        for ln in text.splitlines():        # a swallowed ctor exception (F5) prints 5 lines
            if ln.startswith("Exception ignored in: <function _child_run"):
                skip = 5
            if skip:
                skip -= 1
                continue
            keep.append(ln)
        return "\n".join(keep)[-6000:]

    def run(self, ex):
        """None if the example passed, else a description of the failure."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write(json.dumps(ex) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], _TIMEOUT)
        line = self.proc.stdout.readline() if ready else ""
        self.examples += 1
        if not ready:
            self.proc.send_signal(signal.SIGABRT)      # faulthandler: every thread's stack
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            self.stop()
            return f"hang: no reply within {_TIMEOUT:.0f} s\n{self._stderr_tail()}"
        if not line:
            rc = self.proc.wait()
            tail = self._stderr_tail()
            self.proc = None
            return f"crash: the child died (exit status {rc})\n{tail}"
        reply = json.loads(line)
        self.total_calls += reply["calls"]
        for key, n in reply["errors"].items():
            self.errors[key] = self.errors.get(key, 0) + n
        if reply["problems"]:
            return "\n".join(reply["problems"])
        return None


def _signature(failure):
    """A failure's class: its first line without numbers and addresses, and for a
    crash or a hang the first sanitizer line or the innermost Python frame."""
    import re
    lines = failure.splitlines() if failure else [""]
    first = re.sub(r"\[.*", "", lines[0])
    where = ""
    if first.startswith(("crash", "hang")):
        for ln in lines:
            m = re.search(r"(csrc/\S+:\d+).*?(runtime error: [a-z ]+|AddressSanitizer: [\w-]+)?", ln)
            if m and ("runtime error" in ln or "ERROR: AddressSanitizer" in ln or "#0" in ln):
                where = m.group(0)
                break
        if not where:
            for j, ln in enumerate(lines):
                if "most recent call first" in ln and j + 1 < len(lines):
                    where = lines[j + 1].strip()
                    break
    return re.sub(r"0x[0-9a-f]+|\d+", "N", first + " " + where)


def _describe(ex):
    ops = ",\n  ".join(json.dumps(o) for o in ex["ops"])
    return (f"cmdline={ex['cmdline']!r} cpus={ex['cpus']} hostile={ex['hostile']}\n"
            f"ops=[\n  {ops}]")


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker()
    sys.exit(0)

# ---- the tests -------------------------------------------------------------------------------
import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from odebug.testing import register_profiles  # noqa: E402

_PROFILE = register_profiles()
_MAX_EXAMPLES = {"dev": 1500, "ci": 1500}.get(_PROFILE, settings().max_examples)
if _SANITIZED:
    _MAX_EXAMPLES = min(_MAX_EXAMPLES, 300)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    t0 = time.monotonic()
    yield w
    w.stop()
    print(f"\nfuzz_surface: {w.examples} examples, {w.total_calls} kernel calls in "
          f"{time.monotonic() - t0:.1f} s; tolerated exceptions: "
          f"{sum(w.errors.values())} ({len(w.errors)} kinds)")


@settings(max_examples=_MAX_EXAMPLES, deadline=None, derandomize=_PROFILE != "fuzz",
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzz_surface(worker, data):
    ex = gen_example(_DrawSource(data))
    failure = worker.run(ex)
    assert failure is None, f"{failure}\n--- example ---\n{_describe(ex)}"


@pytest.mark.skipif(not os.environ.get("ODEBUG_FUZZ_CALLS"),
                    reason="the long campaign runs with ODEBUG_FUZZ_CALLS=N")
def test_fuzz_campaign(worker):
    budget = int(os.environ["ODEBUG_FUZZ_CALLS"])
    seed = int(os.environ.get("ODEBUG_FUZZ_SEED", "0"))
    start, failures, seen, i = worker.total_calls, [], set(), 0
    t0 = time.monotonic()
    while worker.total_calls - start < budget:
        ex = gen_example(_RandomSource(seed * 1_000_003 + i))
        i += 1
        failure = worker.run(ex)
        if failure is not None:
            sig = _signature(failure)
            if sig not in seen:       # one example per distinct failure
                seen.add(sig)
                failures.append(f"seed {seed} example {i - 1}:\n{failure}\n{_describe(ex)}")
                out = os.environ.get("ODEBUG_FUZZ_OUT")
                if out:               # for triage: the example and what happened
                    os.makedirs(out, exist_ok=True)
                    with open(os.path.join(out, f"fail-{seed}-{i - 1}.json"), "w") as f:
                        json.dump({"example": ex, "failure": failure}, f, indent=1)
            if len(failures) >= int(os.environ.get("ODEBUG_FUZZ_MAX_FAILURES", "20")):
                break
    print(f"\nfuzz campaign: {i} examples, {worker.total_calls - start} calls in "
          f"{time.monotonic() - t0:.1f} s, {len(seen)} distinct failures")
    assert not failures, "\n\n".join(failures)


def test_worker_reports_a_crash():
    """The harness itself: a child that dies is a failure, not a pass."""
    w = Worker()
    try:
        assert w.run({"hostile": True, "cmdline": "", "cpus": 1, "ops": [["kmalloc", 8, 0, 0]]}) is None
        failure = w.run({"hostile": True, "cmdline": "", "cpus": 1, "ops": [["_abort"]]})
        assert failure is not None and failure.startswith("crash")
        assert w.run({"hostile": True, "cmdline": "", "cpus": 1, "ops": []}) is None
    finally:
        w.stop()
