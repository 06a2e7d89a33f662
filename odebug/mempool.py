"""Memory pools (mm/mempool.c): ``Mempool`` objects from
``k.mempool_create_kmalloc_pool`` / ``_slab_pool`` / ``_page_pool``.

A pool keeps ``min_nr`` preallocated elements in reserve for when its
allocator fails.  ``alloc()`` tries the allocator, then the reserve (the
element is unpoisoned and gets a new alloc track, as the kernel's
``kasan_unpoison_element`` does); ``free()`` puts an element back into the
reserve while it is short, where KASAN poisons it as a free would: a
use-after-free, double free or invalid free of a pool element is reported as
the kernel reports it (kasan_test's 12 ``mempool_*`` cases).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from . import _core
from ._kbase import KernelBase

if TYPE_CHECKING:  # pragma: no cover
    from .slab import Cache

GFP_KERNEL = _core.GFP_KERNEL
MEMPOOL_KMALLOC = _core.MEMPOOL_KMALLOC
MEMPOOL_SLAB = _core.MEMPOOL_SLAB
MEMPOOL_PAGE = _core.MEMPOOL_PAGE


class Mempool:
    """A memory pool (``mempool_t``) of one kernel.

    ``alloc(gfp)`` / ``alloc_preallocated()`` give an element's address (the
    first page's address for a page pool) or None; ``free(addr)``;
    ``resize(new_min_nr)``; ``destroy()`` gives the reserve back (also at the end
    of a ``with`` block).  ``min_nr``, ``curr_nr`` (elements in reserve now),
    ``kind`` ("kmalloc", "slab", "page"), ``size``, ``order``, ``elements()``.

    The pool belongs to the kernel: dropping this object does not destroy it.
    After ``destroy()`` every call but ``destroyed`` raises
    :class:`odebug.StateError`; so does any call on a slab pool whose cache was
    destroyed."""

    __slots__ = ("_p", "_kernel", "_cache")

    def __init__(self, core_pool: "_core.Mempool", kernel: "MempoolMixin",
                 cache: "Optional[Cache]" = None) -> None:
        self._p = core_pool
        self._kernel = kernel
        self._cache = cache

    def __repr__(self) -> str:
        try:
            i = self._p.info()
        except _core.Error:
            return "<odebug.Mempool (kernel closed)>"
        if i["destroyed"]:
            return f"<odebug.Mempool {i['kind']} (destroyed)>"
        what = {"kmalloc": f"size={i['size']}", "page": f"order={i['order']}",
                "slab": f"cache={self._cache.name if self._cache is not None else '?'}"}[i["kind"]]
        return f"<odebug.Mempool {i['kind']} {what} min_nr={i['min_nr']} curr_nr={i['curr_nr']}>"

    def __enter__(self) -> "Mempool":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._kernel.closed and not self.destroyed:
            self.destroy()

    # -- the pool's calls --------------------------------------------------------------
    def alloc(self, gfp: int = GFP_KERNEL) -> Optional[int]:
        """mempool_alloc(gfp): the allocator without direct reclaim first, then the
        reserve, then the allocator with ``gfp``.  None when all fail and ``gfp``
        may not block (no ``__GFP_DIRECT_RECLAIM``: ``GFP_ATOMIC``, ``GFP_NOWAIT``);
        a ``GFP_KERNEL`` call then waits (the GIL released) for another thread's
        ``free()``, retrying the allocator every 5 s, as the kernel does (Ctrl-C
        stops it in the main thread).  ``__GFP_ZERO`` is refused (InvalidArgument)."""
        return self._p.alloc(gfp)

    def alloc_preallocated(self) -> Optional[int]:
        """mempool_alloc_preallocated(): an element of the reserve, or None if it is empty."""
        return self._p.alloc_preallocated()

    def free(self, addr: Optional[int]) -> None:
        """mempool_free(addr): into the reserve while it holds fewer than ``min_nr``
        (KASAN poisons it there; a double or invalid free is reported and the
        element is not kept), else back to the allocator.  None/0: nothing.
        InvalidArgument for an address outside the kernel's memory (or, for a page
        pool, a block that is a slab page or of another order)."""
        if addr is None:
            return
        self._p.free(addr)

    def resize(self, new_min_nr: int) -> None:
        """mempool_resize(new_min_nr >= 1): shrinking gives the extra reserve back;
        growing refills it as far as GFP_KERNEL allocations go."""
        self._p.resize(new_min_nr)

    def destroy(self) -> None:
        """mempool_destroy(): every element of the reserve back to its allocator."""
        self._p.destroy()

    # -- state ------------------------------------------------------------------------
    def info(self) -> Dict[str, Any]:
        """kind, min_nr, curr_nr, size (kmalloc size or the cache's object size),
        order, cache (the :class:`odebug.Cache` of a slab pool, else None), destroyed."""
        i = self._p.info()
        i["cache"] = self._cache
        return i

    @property
    def cache(self) -> "Optional[Cache]":
        """The cache of a slab pool (None for the others)."""
        return self._cache

    def elements(self) -> List[int]:
        """The reserve's elements now (addresses)."""
        return self._p.elements()

    @property
    def kind(self) -> str:
        """"kmalloc", "slab" or "page"."""
        kind: str = self._p.info()["kind"]
        return kind

    @property
    def min_nr(self) -> int:
        """The number of elements guaranteed (the reserve's target)."""
        n: int = self._p.info()["min_nr"]
        return n

    @property
    def curr_nr(self) -> int:
        """Elements in the reserve now."""
        n: int = self._p.info()["curr_nr"]
        return n

    @property
    def size(self) -> int:
        """Bytes of an element (kmalloc size, or the cache's object size; 0 for pages)."""
        n: int = self._p.info()["size"]
        return n

    @property
    def order(self) -> int:
        """Page order of a page pool's elements."""
        n: int = self._p.info()["order"]
        return n

    @property
    def destroyed(self) -> bool:
        """destroy() was called."""
        d: bool = self._p.info()["destroyed"]
        return d


class MempoolMixin(KernelBase):
    """Kernel methods creating mempools (mixed into ``odebug.Kernel``)."""

    def _mempool(self, kind: int, min_nr: int, arg: Any,
                 cache: "Optional[Cache]" = None) -> Optional[Mempool]:
        p = _core.mempool_create(self, kind, min_nr, arg)
        return None if p is None else Mempool(p, self, cache)

    def mempool_create_kmalloc_pool(self, min_nr: int, size: int) -> Optional[Mempool]:
        """mempool_create_kmalloc_pool(min_nr, size): a pool of kmalloc(size) elements
        (size 1..KMALLOC_MAX_SIZE; a large kmalloc past 8192), ``min_nr`` (0..2**20) of
        them preallocated with GFP_KERNEL.  None if one cannot be allocated (nothing is
        kept then).  ``with k.mempool_create_kmalloc_pool(4, 128) as pool:`` destroys it
        at the end."""
        return self._mempool(MEMPOOL_KMALLOC, min_nr, size)

    def mempool_create_slab_pool(self, min_nr: int, cache: "Cache") -> Optional[Mempool]:
        """mempool_create_slab_pool(min_nr, cache): a pool of ``cache``'s objects (a
        cache of this kernel without a constructor)."""
        from .slab import Cache
        if not isinstance(cache, Cache):
            raise TypeError(f"cache: expected an odebug.Cache, not {type(cache).__name__}")
        return self._mempool(MEMPOOL_SLAB, min_nr, cache._c, cache)

    def mempool_create_page_pool(self, min_nr: int, order: int = 0) -> Optional[Mempool]:
        """mempool_create_page_pool(min_nr, order): a pool of 2**order-page blocks; an
        element is the block's address (the kernel's is its struct page)."""
        return self._mempool(MEMPOOL_PAGE, min_nr, order)
