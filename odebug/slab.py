"""The slab allocator's Python surface: ``Cache`` objects and slab constants."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Literal, overload, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _core
from ._kbase import KernelBase

SLAB_CONSISTENCY_CHECKS = _core.SLAB_CONSISTENCY_CHECKS
SLAB_RED_ZONE = _core.SLAB_RED_ZONE
SLAB_POISON = _core.SLAB_POISON
SLAB_KMALLOC = _core.SLAB_KMALLOC
SLAB_HWCACHE_ALIGN = _core.SLAB_HWCACHE_ALIGN
SLAB_STORE_USER = _core.SLAB_STORE_USER
SLAB_TYPESAFE_BY_RCU = _core.SLAB_TYPESAFE_BY_RCU
SLAB_TRACE = _core.SLAB_TRACE
SLAB_DEBUG_OBJECTS = _core.SLAB_DEBUG_OBJECTS
SLAB_NOLEAKTRACE = _core.SLAB_NOLEAKTRACE
SLAB_NO_MERGE = _core.SLAB_NO_MERGE
SLAB_FAILSLAB = _core.SLAB_FAILSLAB
SLAB_NO_USER_FLAGS = _core.SLAB_NO_USER_FLAGS
ZERO_SIZE_PTR = _core.ZERO_SIZE_PTR
GFP_KERNEL = _core.GFP_KERNEL
GFP_ATOMIC = _core.GFP_ATOMIC
GFP_ZERO = _core.__GFP_ZERO     # __GFP_ZERO (a __name would be mangled inside classes)
globals()["__GFP_ZERO"] = GFP_ZERO

#: CONFIG_SLUB_STATS counter names, in the kernel's order
SLUB_STATS = _core.slub_stat_names()

_MAX_U32 = (1 << 32) - 1


class SlabErrors:
    """What :meth:`SlabMixin.count_slab_errors` counted: ``count`` (set when the
    block ends)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __repr__(self) -> str:
        return f"<odebug.SlabErrors count={self.count}>"


class Cache:
    """A slab cache (``struct kmem_cache``).

    ``alloc()`` / ``free(addr)`` / ``validate()`` / ``destroy()``; layout facts as
    attributes: ``name``, ``object_size``, ``size`` (the slot, ``s->size``),
    ``offset`` (free pointer), ``inuse``, ``red_left_pad``, ``flags`` (debug letters).
    """

    __slots__ = ("_c", "_kernel", "__weakref__")

    def __init__(self, core_cache: "_core.Cache", kernel: "SlabMixin") -> None:
        self._c = core_cache
        self._kernel = kernel

    # -- identity ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._c.name

    @property
    def destroyed(self) -> bool:
        return self._c.destroyed

    def __repr__(self) -> str:
        if self._c.destroyed:
            return f"<odebug.Cache {self.name} (destroyed)>"
        i = self._c.info()
        return (f"<odebug.Cache {self.name} object_size={i['object_size']} size={i['size']}"
                f" flags={i['letters'] or '-'}>")

    # -- layout -------------------------------------------------------------------
    def _info_int(self, key: str) -> int:
        v: int = self._c.info()[key]
        return v

    def info(self) -> Dict[str, Any]:
        """Everything about the cache's layout and counters as a dict."""
        return self._c.info()

    @property
    def object_size(self) -> int:
        return self._info_int("object_size")

    @property
    def size(self) -> int:
        """The slot size (``s->size``) including debug metadata."""
        return self._info_int("size")

    @property
    def offset(self) -> int:
        """Free pointer offset from the object start."""
        return self._info_int("offset")

    @property
    def inuse(self) -> int:
        return self._info_int("inuse")

    @property
    def red_left_pad(self) -> int:
        return self._info_int("red_left_pad")

    @property
    def align(self) -> int:
        return self._info_int("align")

    @property
    def flags(self) -> str:
        """The debug letters in effect ("FZPU"; "" when none)."""
        letters: str = self._c.info()["letters"]
        return letters

    @property
    def objects_per_slab(self) -> int:
        return self._info_int("objects_per_slab")

    @property
    def order(self) -> int:
        return self._info_int("order")

    # -- allocation -------------------------------------------------------------------
    # (the hot calls check their arguments in C, and bind a vCPU only for cpu=:
    # every Python operation here costs the hypothesis user on every step)
    def alloc(self, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[int]:
        """kmem_cache_alloc(): the object's address, or None when it fails."""
        if cpu is None:
            return self._c.alloc(gfp)
        with self._kernel._cpu(cpu):
            return self._c.alloc(gfp)

    def zalloc(self, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[int]:
        """kmem_cache_zalloc()."""
        _check_gfp(gfp)
        return self.alloc(gfp | GFP_ZERO, cpu=cpu)

    def kmalloc(self, size: int, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[int]:
        """kmalloc of ``size`` bytes from this cache (a kmalloc-type cache
        records the requested size with U: the slack becomes "kmalloc Redzone")."""
        _check_size(size)
        _check_gfp(gfp)
        with self._kernel._cpu(cpu):
            return self._c.kmalloc(size, gfp)

    def free(self, addr: int, *, cpu: Optional[int] = None) -> None:
        """kmem_cache_free()."""
        if cpu is None:
            return self._c.free(addr)
        with self._kernel._cpu(cpu):
            self._c.free(addr)

    def alloc_bulk(self, n: int, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[List[int]]:
        """kmem_cache_alloc_bulk(): n objects, or None (all or nothing)."""
        if not isinstance(n, int) or n < 0:
            raise _core.InvalidArgument(f"alloc_bulk: count must be a non-negative int, not {n!r}")
        _check_gfp(gfp)
        with self._kernel._cpu(cpu):
            return self._c.alloc_bulk(n, gfp)

    def free_bulk(self, addrs: Sequence[int], *, cpu: Optional[int] = None) -> None:
        """kmem_cache_free_bulk()."""
        for a in addrs:
            _check_addr(a)
        with self._kernel._cpu(cpu):
            self._c.free_bulk(list(addrs))

    def validate(self) -> int:
        """validate_slab_cache(): the number of errors under the KUnit counting rule
        (each report, each FIX and each count mismatch counts one).  On the modern
        path (``odebug.slub_path=modern``, v6.1+) a cache without debug flags is
        refused with InvalidArgument, as the kernel refuses it (see ``validatable``)."""
        return self._c.validate()

    @property
    def validatable(self) -> bool:
        """Whether validate() may run: not on a cache without debug flags on the
        modern path (v6.1 restricted validation to debug caches: a lockless fast
        path races with any validation)."""
        return bool(self.flags) or self._kernel.param("odebug.slub_path") != "modern"

    def flush(self) -> None:
        """flush_all(): every vCPU's slab and per-CPU partial slabs back to the node
        (what validate() does first)."""
        self._c.flush()

    def destroy(self) -> None:
        """kmem_cache_destroy(); leaked objects are reported.  A second destroy
        is the kernel's KASAN report on the freed descriptor (slab-use-after-free,
        cache ``kmem_cache``); StateError with KASAN off."""
        self._c.destroy()
        reg = self._kernel._cache_registry()
        if reg.get(self.name) is self:
            del reg[self.name]

    @overload
    def stats(self, per_cpu: Literal[False] = False) -> Dict[str, int]: ...
    @overload
    def stats(self, per_cpu: Literal[True]) -> Dict[str, List[int]]: ...
    @overload
    def stats(self, per_cpu: bool) -> Dict[str, Union[int, List[int]]]: ...

    def stats(self, per_cpu: bool = False) -> Union[Dict[str, int], Dict[str, List[int]],
                                                    Dict[str, Union[int, List[int]]]]:
        """CONFIG_SLUB_STATS counters (summed, or a list per vCPU)."""
        return self._c.stats(per_cpu)


_kmalloc = _core.kmalloc
_kfree = _core.kfree


def _check_size(size: int) -> None:
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"size: expected int, not {type(size).__name__}")
    if size < 0:
        raise _core.InvalidArgument(f"size: negative size {size}")
    if size >= 1 << 63:
        raise _core.InvalidArgument(f"size: {size} is too large")


def _check_gfp(gfp: int) -> None:
    if not isinstance(gfp, int) or not 0 <= gfp <= _MAX_U32:
        raise _core.InvalidArgument(f"gfp: expected GFP flags, not {gfp!r}")


def _check_addr(addr: int) -> None:
    if not isinstance(addr, int) or isinstance(addr, bool):
        raise TypeError(f"addr: expected int, not {type(addr).__name__}")
    if not 0 <= addr < 1 << 64:
        raise _core.InvalidArgument(f"addr: {addr} is not a 64-bit address")


def parse_flags(kernel: _core.Kernel, flags: Union[None, str, int]) -> int:
    """SLAB_* bits from None (0: slub_debug= decides), letters ("FZPU") or an int."""
    if flags is None:
        return 0
    if isinstance(flags, bool):
        raise TypeError("flags: expected letters or SLAB_* bits, not bool")
    if isinstance(flags, int):
        if not 0 <= flags <= _MAX_U32:
            raise _core.InvalidArgument(f"flags: 0x{flags:x} is not a 32-bit SLAB_* mask")
        return flags
    if isinstance(flags, str):
        return _core.slab_flags_parse(kernel, flags)
    raise TypeError(f"flags: expected letters or SLAB_* bits, not {type(flags).__name__}")


def slabinfo_rows(text: str) -> List[Dict[str, Any]]:
    """/proc/slabinfo text -> one dict per cache."""
    rows = []
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) < 16:
            continue
        rows.append({
            "name": parts[0], "active_objs": int(parts[1]), "num_objs": int(parts[2]),
            "objsize": int(parts[3]), "objperslab": int(parts[4]), "pagesperslab": int(parts[5]),
            "active_slabs": int(parts[13]), "num_slabs": int(parts[14]),
        })
    return rows


class SlabMixin(KernelBase):
    """Kernel methods of the slab allocator (mixed into ``odebug.Kernel``)."""

    def _cache_registry(self) -> Dict[str, Cache]:
        reg = self.__dict__.get("_caches")
        if reg is None:
            reg = self.__dict__["_caches"] = {}
        return reg

    def _forget_cache(self, name: str) -> None:
        self._cache_registry().pop(name, None)

    def kmem_cache_create(self, name: str, size: int, align: int = 0,
                          flags: Union[None, str, int] = None,
                          ctor: Optional[Callable[[int], object]] = None) -> Cache:
        """kmem_cache_create(name, size, align, flags, ctor).

        ``flags``: None (the boot command line's ``slub_debug=`` decides), debug
        letters such as ``"ZP"``, or SLAB_* bits (add ``SLAB_NO_USER_FLAGS`` to ignore
        the command line).  ``ctor(addr)`` runs on every object of a new slab."""
        if not isinstance(name, str):
            raise TypeError(f"name: expected str, not {type(name).__name__}")
        _check_size(size)
        if not isinstance(align, int) or align < 0:
            raise _core.InvalidArgument(f"align: expected a non-negative int, not {align!r}")
        if size == 0 or size > _MAX_U32:
            raise _core.InvalidArgument(f"size: {size} out of range for kmem_cache_create")
        bits = parse_flags(self, flags)
        c = Cache(_core.cache_create(self, name, size, align, bits, ctor), self)
        self._cache_registry()[name] = c
        return c

    def cache(self, name: str) -> Cache:
        """Any cache by name (kmalloc-* included); odebug.NotFound if none."""
        if self.closed:
            raise _core.ClosedError("the kernel is closed")
        reg = self._cache_registry()
        c = reg.get(name)
        if c is not None and not c.destroyed:
            return c
        core = _core.cache_find(self, name)
        if core is None:
            raise _core.NotFound(f"no slab cache named {name!r}")
        c = reg[name] = Cache(core, self)
        return c

    def caches(self) -> List[Cache]:
        """Every cache, in creation order."""
        return [self.cache(n) for n in _core.cache_names(self)]

    # (the hot calls check their arguments in C, and bind a vCPU only for cpu=:
    # every Python operation here costs the hypothesis user on every step)
    def kmalloc(self, size: int, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[int]:
        """kmalloc(): the address (ZERO_SIZE_PTR for 0), or None when it fails."""
        if cpu is None:
            return _kmalloc(self, size, gfp)
        with self._cpu(cpu):
            return _kmalloc(self, size, gfp)

    def kzalloc(self, size: int, gfp: int = GFP_KERNEL, *, cpu: Optional[int] = None) -> Optional[int]:
        """kzalloc()."""
        _check_gfp(gfp)
        if cpu is None:
            return _kmalloc(self, size, gfp | GFP_ZERO)
        with self._cpu(cpu):
            return _kmalloc(self, size, gfp | GFP_ZERO)

    def kfree(self, addr: Optional[int], *, cpu: Optional[int] = None) -> None:
        """kfree(); kfree(None) and kfree(0) do nothing."""
        if addr is None:
            return
        if cpu is None:
            return _kfree(self, addr)
        with self._cpu(cpu):
            _kfree(self, addr)

    def kfree_rcu(self, addr: Optional[int]) -> None:
        """kfree_rcu(): freed after a grace period (one jiffy: the next
        ``advance`` past it, or ``rcu_barrier()``; ``kmem_cache_destroy`` waits too)."""
        if addr is None:
            return
        _check_addr(addr)
        _core.kfree_rcu(self, addr)

    def rcu_barrier(self) -> None:
        """rcu_barrier(): run every pending kfree_rcu() free now."""
        _core.rcu_barrier(self)

    def kfree_sensitive(self, addr: Optional[int], *, cpu: Optional[int] = None) -> None:
        """kfree_sensitive(): ``ksize()`` (a freed object is reported there:
        slab-use-after-free, Read of size 1, and gives 0), the usable bytes zeroed,
        then ``kfree()`` (which reports a double free).  None and 0 do nothing."""
        if addr is None:
            return
        _check_addr(addr)
        with self._cpu(cpu):
            _core.kfree_sensitive(self, addr)

    def ksize(self, addr: int) -> int:
        """ksize(): the usable size of a kmalloc'd object."""
        _check_addr(addr)
        return _core.ksize(self, addr)

    def krealloc(self, addr: Optional[int], size: int, gfp: int = GFP_KERNEL, *,
                 cpu: Optional[int] = None) -> Optional[int]:
        """krealloc(): the (possibly moved) object, or None when it fails."""
        _check_size(size)
        _check_gfp(gfp)
        if addr is None:
            addr = 0
        _check_addr(addr)
        with self._cpu(cpu):
            return _core.krealloc(self, addr, size, gfp)

    def slabinfo_text(self) -> str:
        """/proc/slabinfo (version 2.1)."""
        return _core.slabinfo_text(self)

    def slabinfo(self) -> List[Dict[str, Any]]:
        """/proc/slabinfo as one dict per cache."""
        return slabinfo_rows(self.slabinfo_text())

    @contextlib.contextmanager
    def count_slab_errors(self) -> Iterator[SlabErrors]:
        """Count the SLUB errors this thread makes in the block without printing
        them, as slub_kunit's "slab_errors" KUnit resource does: reports, FIXes
        and count mismatches (the KUnit rule) add to ``n.count``; they reach
        neither ``dmesg()`` nor ``reports`` (nor the taint), as the kernel prints
        nothing for them.  KASAN and ODEBUG reports are unaffected.  No nesting
        on one thread (StateError).

        ``with k.count_slab_errors() as n: ...`` then ``n.count``."""
        _core.slab_kunit_begin(self)
        n = SlabErrors()
        try:
            yield n
        finally:
            if not self.closed:
                n.count = _core.slab_kunit_end(self)

    @property
    def slab_errors(self) -> int:
        """This thread's running count of slab errors under the KUnit rule
        (slub_kunit's ``slab_errors``): compare before and after a call."""
        return _core.slab_errors(self)

    def slab_object(self, addr: int) -> Optional[Tuple[str, int]]:
        """(cache name, object start) of a slab address, or None."""
        _check_addr(addr)
        return _core.slab_object(self, addr)
