"""The memory layout (per-kernel KASLR bases) and vmalloc space on the Kernel:
``k.page_offset``, ``k.vmalloc_start``, ``k.vmalloc(size)``, ``k.vfree(addr)``,
``k.vmap(pages)``, ``k.kvmalloc(size)`` ... (mm/vmalloc.c with generic KASAN's
CONFIG_KASAN_VMALLOC)."""
from __future__ import annotations

from typing import Iterable, Optional

from . import _core
from ._kbase import KernelBase

GFP_KERNEL = _core.GFP_KERNEL
GFP_ZERO = _core.__GFP_ZERO
#: shadow of vmalloc space that no area's bytes cover
KASAN_VMALLOC_INVALID = 0xF8
#: the nokaslr layout (a kernel booted with seed 0 or ``nokaslr``)
PAGE_OFFSET = 0xffff888000000000
VMALLOC_START = 0xffffc90000000000


def _check_size(size: int) -> None:
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"size: expected int, not {type(size).__name__}")
    if size < 0:
        raise _core.InvalidArgument(f"size: negative size {size}")
    if size >= 1 << 63:
        raise _core.InvalidArgument(f"size: {size} is too large")


def _check_gfp(gfp: int) -> None:
    if not isinstance(gfp, int) or isinstance(gfp, bool) or not 0 <= gfp < 1 << 32:
        raise _core.InvalidArgument(f"gfp: expected GFP flags, not {gfp!r}")


def _check_addr(addr: int) -> None:
    if not isinstance(addr, int) or isinstance(addr, bool):
        raise TypeError(f"addr: expected int, not {type(addr).__name__}")
    if not 0 <= addr < 1 << 64:
        raise _core.InvalidArgument(f"addr: {addr} is not a 64-bit address")


class VmallocMixin(KernelBase):
    """Kernel methods and properties of the memory layout and vmalloc space
    (mixed into ``odebug.Kernel``)."""

    # -- the layout -------------------------------------------------------------------
    @property
    def page_offset(self) -> int:
        """The base of this kernel's direct map (x86-64's ``page_offset_base``):
        ``arena_start``.  1 GiB aligned, from the boot seed (KASLR): seed 0 or
        ``nokaslr`` gives 0xffff888000000000; no two live kernels overlap."""
        return int(_core.memory_layout(self)["page_offset"])

    @property
    def vmalloc_start(self) -> int:
        """VMALLOC_START of this kernel (0xffffc90000000000 for seed 0 or
        ``nokaslr``; else moved by the seed as ``page_offset`` is)."""
        return int(_core.memory_layout(self)["vmalloc_start"])

    @property
    def vmalloc_end(self) -> int:
        """VMALLOC_END: vmalloc space is [vmalloc_start, vmalloc_end), twice the RAM."""
        return int(_core.memory_layout(self)["vmalloc_end"])

    @property
    def nr_vmalloc_pages(self) -> int:
        """Pages held by vmalloc'd areas now (the kernel's ``nr_vmalloc_pages``)."""
        return int(_core.memory_layout(self)["nr_vmalloc_pages"])

    # -- vmalloc ----------------------------------------------------------------------
    def vmalloc(self, size: int, gfp: int = GFP_KERNEL, *,
                cpu: Optional[int] = None) -> Optional[int]:
        """vmalloc(size) (``__vmalloc(size, gfp)`` with ``gfp``): a virtually
        contiguous area of page-allocator pages in vmalloc space, followed by a
        guard page; None when it fails (a "vmalloc error" report unless
        ``GFP_NOWARN``).  KASAN: exactly ``size`` bytes are accessible, the rest
        of the last page and the guard page are ``KASAN_VMALLOC_INVALID``
        (vmalloc-out-of-bounds)."""
        _check_size(size)
        _check_gfp(gfp)
        with self._cpu(cpu):
            return _core.vmalloc(self, size, gfp)

    def vzalloc(self, size: int, *, cpu: Optional[int] = None) -> Optional[int]:
        """vzalloc(size): vmalloc of zeroed pages."""
        _check_size(size)
        with self._cpu(cpu):
            return _core.vmalloc(self, size, GFP_KERNEL | GFP_ZERO)

    def vfree(self, addr: Optional[int], *, cpu: Optional[int] = None) -> None:
        """vfree(addr): the area's pages go back to the page allocator and all of
        it becomes ``KASAN_VMALLOC_INVALID`` again (a later access is
        vmalloc-out-of-bounds).  An address that is no area's is the kernel's
        WARN ("Trying to vfree() nonexistent vm area") and frees nothing;
        vfree(None) and vfree(0) do nothing."""
        if addr is None:
            return
        _check_addr(addr)
        with self._cpu(cpu):
            _core.vfree(self, addr)

    def vmap(self, pages: Iterable[int], *, cpu: Optional[int] = None) -> Optional[int]:
        """vmap(pages): the given pages (direct-map page addresses, e.g. from
        ``alloc_pages``) mapped one after the other in vmalloc space, all
        accessible, followed by a guard page; the same memory as the pages'
        direct-map addresses.  The pages stay the caller's: ``vunmap`` does not
        free them.  None when it cannot be done; ValueError for an address that
        is not a page of this kernel."""
        with self._cpu(cpu):
            return _core.vmap(self, list(pages))

    def vunmap(self, addr: Optional[int], *, cpu: Optional[int] = None) -> None:
        """vunmap(addr): remove a vmap'd mapping (the pages are not freed); a bad
        address is the kernel's WARN ("Trying to vunmap() nonexistent vm area")."""
        if addr is None:
            return
        _check_addr(addr)
        with self._cpu(cpu):
            _core.vunmap(self, addr)

    def kvmalloc(self, size: int, gfp: int = GFP_KERNEL, *,
                 cpu: Optional[int] = None) -> Optional[int]:
        """kvmalloc(size, gfp): kmalloc first (quietly, for more than a page);
        if that fails, for more than a page and a gfp that may sleep, vmalloc
        (2 MiB mappings for 2 MiB or more).  More than KMALLOC_MAX_SIZE (4 MiB)
        always ends in vmalloc space.  None when both fail."""
        _check_size(size)
        _check_gfp(gfp)
        with self._cpu(cpu):
            return _core.kvmalloc(self, size, gfp)

    def kvfree(self, addr: Optional[int], *, cpu: Optional[int] = None) -> None:
        """kvfree(addr): vfree for a vmalloc address, else kfree."""
        if addr is None:
            return
        _check_addr(addr)
        with self._cpu(cpu):
            _core.kvfree(self, addr)

    def is_vmalloc_addr(self, addr: int) -> bool:
        """is_vmalloc_addr(): addr lies in this kernel's vmalloc space."""
        _check_addr(addr)
        lay = _core.memory_layout(self)
        return bool(lay["vmalloc_start"] <= addr < lay["vmalloc_end"])
