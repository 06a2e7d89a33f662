"""Generic KASAN's Python surface: checked accesses on the Kernel, the shadow,
the quarantine (``k.kasan.quarantine.stats()`` / ``.reduce()``) and the
quarantine geometry of a machine (``odebug.quarantine_geometry``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from . import _core
from ._kbase import KernelBase

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Buffer

#: shadow byte values (generic mode, modern names)
KASAN_PAGE_FREE = 0xFF
KASAN_PAGE_REDZONE = 0xFE
KASAN_SLAB_REDZONE = 0xFC
KASAN_SLAB_FREE = 0xFB
KASAN_SLAB_FREE_META = 0xFA
KASAN_GRANULE_SIZE = 8
QUARANTINE_PERCPU_SIZE = 1 << 20
QUARANTINE_FRACTION = 32


def _check_addr(addr: int, what: str = "addr") -> None:
    if not isinstance(addr, int) or isinstance(addr, bool):
        raise TypeError(f"{what}: expected int, not {type(addr).__name__}")
    if not 0 <= addr < 1 << 64:
        raise _core.InvalidArgument(f"{what}: {addr} is not a 64-bit address")


def _check_n(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"size: expected int, not {type(n).__name__}")
    if n < 0:
        raise _core.InvalidArgument(f"size: negative size {n}")


def quarantine_geometry(ram: Union[int, str], cpus: int, nr_cpus: Optional[int] = None) -> Dict[str, int]:
    """The quarantine's sizing for a machine, computed by the C core without
    allocating anything: ``max_size`` (RAM/32 - 1 MiB x online CPUs, clamped at 0),
    ``batch_size`` (max(1 MiB, 2 x total / batches)), ``batches``
    (QUARANTINE_BATCHES = max(1024, 4 x CONFIG_NR_CPUS)), ``slots_used``
    (max_size // batch_size), plus ``total_size``, ``percpu_reserve`` and the
    pre-2016 policy's ``old_max_size`` / ``old_low_size`` / ``old_reduce_bytes``.
    ``nr_cpus`` (CONFIG_NR_CPUS) defaults to max(256, cpus)."""
    from .kernel import parse_size
    r = parse_size(ram, "ram")
    if not isinstance(cpus, int) or isinstance(cpus, bool):
        raise TypeError(f"cpus: expected int, not {type(cpus).__name__}")
    if cpus < 1 or cpus > 1 << 20:
        raise _core.InvalidArgument(f"cpus: must be >= 1, not {cpus}")
    if nr_cpus is None:
        nr_cpus = max(256, cpus)
    if not isinstance(nr_cpus, int) or isinstance(nr_cpus, bool):
        raise TypeError(f"nr_cpus: expected int, not {type(nr_cpus).__name__}")
    if nr_cpus < cpus or nr_cpus > 1 << 20:
        raise _core.InvalidArgument(f"nr_cpus: must be >= cpus ({cpus}), not {nr_cpus}")
    return _core.quarantine_geometry(r, cpus, nr_cpus)


class Quarantine:
    """The KASAN quarantine of one kernel (a light view)."""

    __slots__ = ("_k",)

    def __init__(self, kernel: _core.Kernel) -> None:
        self._k = kernel

    def stats(self) -> Dict[str, Any]:
        """size, max_size, batch_size, batches, head, tail, slots_used,
        percpu_bytes (list per vCPU), ring_bytes, reduce/eviction counters and
        histograms (evict_bytes_hist[i]: reduces that evicted [2^(i-1), 2^i)
        bytes), free_ns_* (time freeing per evicting reduce) and lock_ns_*
        (quarantine_lock hold times): max, p50, p99, total."""
        return _core.kasan_quarantine_stats(self._k)

    def count(self) -> Dict[Optional[str], Tuple[int, int]]:
        """What the quarantine holds now: ``{name: (objects, bytes)}`` for every
        cache (zeros included), ``"<name> (destroyed)"`` for a cache whose
        destroy found objects remaining (reported, and kept with its slabs: a
        later free of one of its objects, a mempool's element say, is
        quarantined as any), and key None for any other cache (a walk of every
        list; for checks, e.g. odebug.scenarios.check_invariants)."""
        return _core.kasan_quarantine_count(self._k)

    def reduce(self) -> None:
        """One kasan_quarantine_reduce(), as a blocking allocation makes it."""
        _core.kasan_quarantine_reduce(self._k)

    def drain(self) -> None:
        """Give every quarantined object back to its slab (remove_cache on every
        cache; as in the kernel, quarantine_size is not lowered by it)."""
        _core.kasan_quarantine_drain(self._k)

    def cpu_offline(self, cpu: int, offline: bool = True) -> None:
        """CPU hotplug of vCPU ``cpu`` (the same as ``k.cpu_offline(cpu)`` /
        ``k.cpu_online(cpu)``): from v5.10 on an offline vCPU's list is freed and its
        frees skip the quarantine."""
        _core.kasan_quarantine_cpu_offline(self._k, cpu, bool(offline))

    def storm(self, ops: int = 100_000, *, threads: int = 1, live: int = 64,
              min_size: int = 16, max_size: int = 512, seed: int = 0,
              mutex_every: int = 0) -> Dict[str, int]:
        """kmalloc/kfree churn in C on ``threads`` vCPUs (every free enters the
        quarantine); every ``mutex_every``-th step holds a mutex shared by all
        threads (kmalloc under a mutex).  Returns elapsed_ns, ops, alloc/free
        p50/p99/max in ns, and mutex_ops / mutex_wait_ns_total / _max.

        Parameters are range-checked first (:class:`odebug.InvalidArgument`
        naming it): ops 0..2**26, threads 1..nr_cpus, live 1..2**20, sizes
        1..8192.  Ctrl-C stops it early (KeyboardInterrupt, everything freed)."""
        from .kernel import check_int
        check_int("ops", ops, 0, 1 << 26)
        check_int("threads", threads, 1, self._k.nr_cpus)
        check_int("live", live, 1, 1 << 20)
        check_int("min_size", min_size, 1, 8192)
        check_int("max_size", max_size, min_size, 8192)
        check_int("seed", seed, 0, (1 << 64) - 1)
        check_int("mutex_every", mutex_every, 0, (1 << 32) - 1)
        return _core.quarantine_storm(self._k, ops, threads, live, min_size, max_size, seed,
                                      mutex_every)


class Kasan:
    """KASAN of one kernel: ``shadow(addr, n)``, ``quarantine``, counters."""

    __slots__ = ("_k",)

    def __init__(self, kernel: _core.Kernel) -> None:
        self._k = kernel

    @property
    def enabled(self) -> bool:
        enabled: bool = _core.kasan_counters(self._k)["enabled"]
        return enabled

    def counters(self) -> Dict[str, Any]:
        """enabled, multi_shot, fault_panic, detections (every bad access or free,
        printed or not), reports (printed), suppressed (single-shot)."""
        return _core.kasan_counters(self._k)

    @property
    def multi_shot(self) -> bool:
        """``kasan_multi_shot``: every bad access reported (True), or only the first
        since boot (False, the kernel's default).  Settable at run time, as the
        kernel's KASAN tests flip it (kasan_save_enable_multi_shot); turning it off
        does not re-arm the first report if one was made."""
        return bool(_core.kasan_counters(self._k)["multi_shot"])

    @multi_shot.setter
    def multi_shot(self, on: bool) -> None:
        _core.kasan_set_multi_shot(self._k, bool(on))

    @property
    def detections(self) -> int:
        detections: int = _core.kasan_counters(self._k)["detections"]
        return detections

    def shadow(self, addr: int, n: int) -> bytes:
        """The shadow bytes of the 8-byte granules covering [addr, addr+n)."""
        _check_addr(addr)
        _check_n(n)
        return _core.kasan_shadow(self._k, addr, n)

    def check(self, addr: int, n: int, write: bool = False) -> None:
        """kasan_check_read/write(): check only, nothing accessed."""
        _check_addr(addr)
        _core.kasan_check(self._k, addr, n, bool(write))

    def check_byte(self, addr: int) -> bool:
        """kasan_check_byte(): False (after a report) if the byte is not accessible."""
        _check_addr(addr)
        return _core.kasan_check_byte(self._k, addr)

    @property
    def quarantine(self) -> Quarantine:
        return Quarantine(self._k)

    # -- the shadow primitives (mm/kasan/shadow.c, include/linux/kasan.h) --------------------
    def poison(self, addr: int, size: int, value: int = KASAN_SLAB_REDZONE) -> None:
        """kasan_poison(addr, size, value): every 8-byte granule of [addr, addr+size)
        gets shadow ``value`` (0..255: a KASAN_* constant; 0 makes it accessible,
        1..7 that many leading bytes).  ``addr`` must be granule-aligned and ``size`` a
        multiple of 8 (:class:`odebug.InvalidArgument`, where the kernel WARNs); a
        range outside the kernel's memory is InvalidArgument too.  Nothing with
        ``kasan=off``."""
        _check_addr(addr)
        _check_n(size)
        _core.kasan_poison(self._k, addr, size, value)

    def unpoison(self, addr: int, size: int) -> None:
        """kasan_unpoison(addr, size): the granules covering [addr, addr+size)
        accessible; a size that is not a multiple of 8 leaves the last granule
        partial (its shadow says how many of its bytes are).  ``addr`` granule-aligned."""
        _check_addr(addr)
        _check_n(size)
        _core.kasan_unpoison(self._k, addr, size)

    def poison_pages(self, addr: int, order: int = 0) -> None:
        """kasan_poison_pages(): the 2**order pages at ``addr`` (page-aligned)
        become KASAN_PAGE_FREE."""
        _check_addr(addr)
        _core.kasan_poison_pages(self._k, addr, order)

    def unpoison_pages(self, addr: int, order: int = 0) -> None:
        """kasan_unpoison_pages(): the 2**order pages at ``addr`` accessible."""
        _check_addr(addr)
        _core.kasan_unpoison_pages(self._k, addr, order)

    def mempool_poison_object(self, addr: int) -> bool:
        """kasan_mempool_poison_object(): poison a slab object or a large kmalloc as
        its free would (with a free track), without freeing it -- what mempool does
        to an element it keeps.  True if the object may be reused; False after an
        ``invalid-free`` (not an object start) or ``double-free`` (already freed or
        poisoned) report, nothing poisoned."""
        _check_addr(addr)
        return _core.kasan_mempool_poison_object(self._k, addr)

    def mempool_unpoison_object(self, addr: int, size: int) -> None:
        """kasan_mempool_unpoison_object(): accessible again as an allocation of
        ``size`` bytes (kmalloc redzone past it, new alloc track).  ``addr`` must be
        an object start (or a large kmalloc's), ``size`` fit it (InvalidArgument)."""
        _check_addr(addr)
        _check_n(size)
        _core.kasan_mempool_unpoison_object(self._k, addr, size)

    def mempool_poison_pages(self, addr: int, order: int = 0) -> bool:
        """kasan_mempool_poison_pages(): as mempool_poison_object for 2**order pages
        (KASAN_PAGE_FREE); False after a double-free / invalid-free report."""
        _check_addr(addr)
        return _core.kasan_mempool_poison_pages(self._k, addr, order)

    def mempool_unpoison_pages(self, addr: int, order: int = 0) -> None:
        """kasan_mempool_unpoison_pages()."""
        _check_addr(addr)
        _core.kasan_mempool_unpoison_pages(self._k, addr, order)

    # -- kasan_disable_current / kasan_enable_current ---------------------------------------
    def disable_current(self) -> int:
        """kasan_disable_current(): the calling thread's bad accesses are not reported
        (nor counted) until the matching enable_current(), and they are performed, as
        in the kernel; invalid and double frees are still reported.  Nests; returns
        the new depth."""
        return _core.kasan_disable_current(self._k)

    def enable_current(self) -> int:
        """kasan_enable_current(): undo one disable_current(); StateError without one.
        Returns the new depth."""
        return _core.kasan_enable_current(self._k)

    @property
    def current_depth(self) -> int:
        """The calling thread's kasan_disable_current() nesting (0: reporting)."""
        return _core.kasan_current_depth(self._k)

    def disabled(self) -> "KasanDisabled":
        """``with k.kasan.disabled():`` -- kasan_disable_current() for the block
        (kasan_enable_current() at its end)."""
        return KasanDisabled(self)


class KasanMixin(KernelBase):
    """Kernel methods of KASAN (mixed into ``odebug.Kernel``)."""

    @property
    def kasan(self) -> Kasan:
        """KASAN: shadow(), quarantine.stats()/reduce(), counters()."""
        return Kasan(self)

    def read(self, addr: int, n: int, *, cpu: Optional[int] = None) -> bytes:
        """One KASAN-checked access of n bytes ("Read of size n"): a bad access in
        the kernel's memory is reported and performed; outside it, reported and
        not performed: the result holds only the bytes that exist (from addr to the
        end of RAM; b"" for an address outside it), so a huge n costs no memory."""
        _check_addr(addr)
        _check_n(n)
        if cpu is None:
            return _core.kasan_read(self, addr, n)
        with self._cpu(cpu):
            return _core.kasan_read(self, addr, n)

    def write(self, addr: int, data: "Buffer", *, cpu: Optional[int] = None) -> None:
        """One KASAN-checked access of len(data) bytes ("Write of size n")."""
        _check_addr(addr)
        if cpu is None:
            return _core.kasan_write(self, addr, data)
        with self._cpu(cpu):
            _core.kasan_write(self, addr, data)

    def memset(self, addr: int, c: int, n: int, *, cpu: Optional[int] = None) -> None:
        """memset() as instrumented by KASAN: checked over the range, skipped if bad."""
        _check_addr(addr)
        _check_n(n)
        with self._cpu(cpu):
            _core.kasan_memset(self, addr, int(c), n)

    def memcpy(self, dst: int, src: int, n: int, *, cpu: Optional[int] = None) -> None:
        """memcpy(): source checked as a read, then destination as a write."""
        _check_addr(dst, "dst")
        _check_addr(src, "src")
        with self._cpu(cpu):
            _core.kasan_memcpy(self, dst, src, n)

    def memmove(self, dst: int, src: int, n: int, *, cpu: Optional[int] = None) -> None:
        """memmove(): as memcpy; a size that wraps ((size_t)-2) is out-of-bounds."""
        _check_addr(dst, "dst")
        _check_addr(src, "src")
        with self._cpu(cpu):
            _core.kasan_memmove(self, dst, src, n)


class KasanDisabled:
    """The context manager of :meth:`Kasan.disabled`: kasan_disable_current() on
    entry, kasan_enable_current() on exit (not after the kernel was closed)."""

    __slots__ = ("_kasan",)

    def __init__(self, kasan: Kasan) -> None:
        self._kasan = kasan

    def __enter__(self) -> None:
        self._kasan.disable_current()

    def __exit__(self, *exc: object) -> None:
        if not self._kasan._k.closed:
            self._kasan.enable_current()
