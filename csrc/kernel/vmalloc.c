/*
 * vmalloc space (mm/vmalloc.c): virtually contiguous areas of kernel virtual
 * addresses in [VMALLOC_START, VMALLOC_END) -- k->vmalloc_start, 1 GiB
 * aligned, placed by kernel/kaslr.c -- whose pages come from the page
 * allocator one by one: vmalloc / vzalloc / vfree, vmap / vunmap of pages the
 * caller owns, and kvmalloc's fallback (slab/slub.c).
 *
 * Layout of an area, as the kernel's: the pages, then one guard page
 * (va_end - va_start = pages + PAGE_SIZE); the search is first fit from
 * VMALLOC_START, PAGE_SIZE aligned (PMD_SIZE for a huge kvmalloc).  A freed
 * area's range is not reusable at once: it waits on the lazy list until more
 * than lazy_max_pages() pages wait, or an allocation finds no room, and then
 * all waiting ranges are purged together (__purge_vmap_area_lazy) -- which is
 * why a stale pointer into a freed area keeps hitting poisoned shadow for a
 * while in the kernel, and here.  (odebug purges at once where the kernel
 * queues drain_vmap_work.)
 *
 * KASAN (CONFIG_KASAN_VMALLOC, generic): every granule of vmalloc space that
 * no area's bytes cover is KASAN_VMALLOC_INVALID (kasan/kasan.c maps the
 * region's shadow so from boot); __vmalloc_node_range unpoisons the caller's
 * size (a partial last granule), so the rest of the last page and the guard
 * page stay invalid; vfree poisons the area back (kasan_poison_vmalloc).  The
 * kernel populates and releases shadow pages as areas come and go; the values
 * a populated page starts with are these, so odebug keeps the whole region's
 * shadow mapped instead.
 *
 * Host memory.  The region has a host window of its size; the arena is a
 * shared mapping (page_alloc.c), so mapping an area's pages is mremap(2) of
 * each run of consecutive page frames onto the window: the vmalloc address
 * and the page's direct-map address are the same memory, as in the kernel
 * (vmap of pages shows what was written through the direct map, and the other
 * way round).  Window pages that no area maps are private scratch memory,
 * never a hole: a stray access through a pointer instrumented C code or a
 * memoryview kept (a use after vfree) lands there instead of faulting.  The
 * checked accesses (kasan/generic.c) never perform an access outside an
 * area's mapped pages.  Area records are host memory (the kernel kmallocs its
 * vm_struct and vmap_area; odebug keeps them out of the arena, so no slab
 * traffic shows for them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "kernel/kernel.h"
#include "kasan/kasan.h"
#include "debugobjects/debugobjects.h"

#define PMD_SHIFT 21
#define PMD_SIZE  (1UL << PMD_SHIFT)

struct vm_struct {
	odb_addr_t addr;              /* va_start */
	uint64_t size;                /* va_end - va_start: the guard page included */
	uint64_t requested;           /* the caller's size */
	uint32_t *pages;              /* page frame numbers of the mapped pages */
	uint64_t nr_pages;            /* pages mapped (published under the lock) */
	unsigned int flags;
	bool lazy;                    /* freed: waits for the lazy purge */
	unsigned long caller;         /* __builtin_return_address of the allocating call */
	uint32_t stack;               /* depot handle of that context (its Python frame) */
};

struct vmap_state {
	/* vmap_area_lock: the records and lazy_pages.  A leaf lock taken plain
	 * (no scheduling point: nothing inside it blocks or reaches one), since
	 * KASAN's reports look areas up with their report lock held */
	spinlock_t lock;
	struct vm_struct **va;        /* busy and lazily freed areas, by address */
	size_t nr, cap;
	uint64_t lazy_pages;          /* vmap_lazy_nr */
	char *host;                   /* the window */
	_Atomic uint64_t nr_vmalloc_pages;
};

static inline uint64_t get_vm_area_size(const struct vm_struct *vm)
{
	return vm->size - PAGE_SIZE;  /* every odebug area has its guard page */
}

static char *window(struct odb_kernel *k, odb_addr_t a)
{
	return k->vmap->host + (a - k->vmalloc_start);
}

/* ---- the window's host memory -------------------------------------------------------- */
static bool scratch_map(char *at, size_t len)
{
	return mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		    MAP_NORESERVE, -1, 0) != MAP_FAILED;
}

/* vmap_pages_range(): each run of consecutive frames is one mremap of the
 * arena's shared pages onto the window.  -1 (nothing left mapped) on failure. */
static int vmap_pages_range(struct odb_kernel *k, odb_addr_t addr, const uint32_t *pfns, uint64_t n)
{
	char *dst = window(k, addr);

	for (uint64_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && pfns[j] == pfns[j - 1] + 1; j++)
			;
		if (mremap(k->ram + ((size_t)pfns[i] << PAGE_SHIFT), 0, (size_t)(j - i) << PAGE_SHIFT,
			   MREMAP_MAYMOVE | MREMAP_FIXED, dst + (i << PAGE_SHIFT)) == MAP_FAILED) {
			if (i)
				scratch_map(dst, (size_t)i << PAGE_SHIFT);
			return -1;
		}
	}
	return 0;
}

static void vunmap_range(struct odb_kernel *k, odb_addr_t addr, uint64_t len)
{
	/* a failure (no map slot left) leaves the alias: still arena memory */
	if (len)
		scratch_map(window(k, addr), (size_t)len);
}

/* ---- records -------------------------------------------------------------------------- */
/* Index of the first record ending above a (lock held). */
static size_t first_above(struct vmap_state *vs, odb_addr_t a)
{
	size_t lo = 0, hi = vs->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (vs->va[mid]->addr + vs->va[mid]->size <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* __find_vmap_area(): the live area whose [va_start, va_end) holds a (lock held). */
static struct vm_struct *__find_vmap_area(struct vmap_state *vs, odb_addr_t a)
{
	size_t i = first_above(vs, a);

	if (i < vs->nr && vs->va[i]->addr <= a && !vs->va[i]->lazy)
		return vs->va[i];
	return NULL;
}

/* lazy_max_pages(): fls(online CPUs) * 32 MiB of pages. */
static uint64_t lazy_max_pages(struct odb_kernel *k)
{
	unsigned int fls = 0;

	for (unsigned int n = k->nr_cpu_ids; n; n >>= 1)
		fls++;
	return (uint64_t)fls * ((32ULL << 20) / PAGE_SIZE);
}

/* __purge_vmap_area_lazy(): every waiting range becomes free (lock held). */
static void purge_vmap_area_lazy(struct vmap_state *vs)
{
	size_t n = 0;

	for (size_t i = 0; i < vs->nr; i++) {
		if (vs->va[i]->lazy)
			free(vs->va[i]);
		else
			vs->va[n++] = vs->va[i];
	}
	vs->nr = n;
	vs->lazy_pages = 0;
}

/* alloc_vmap_area(): the lowest free [addr, addr + size) aligned to align,
 * recorded as vm (vm->addr set); false when vmalloc space has no room, even
 * after a purge of the lazy ranges. */
static bool alloc_vmap_area(struct odb_kernel *k, struct vm_struct *vm, uint64_t size, uint64_t align)
{
	struct vmap_state *vs = k->vmap;
	odb_addr_t end = k->vmalloc_start + k->vmalloc_size, a;
	bool purged = false;
	size_t i;

	__spin_lock(&vs->lock);
	if (vs->nr == vs->cap) {
		size_t cap = vs->cap ? 2 * vs->cap : 16;
		struct vm_struct **n = realloc(vs->va, cap * sizeof(*n));

		if (!n) {
			__spin_unlock(&vs->lock);
			return false;
		}
		vs->va = n;
		vs->cap = cap;
	}
retry:
	a = ALIGN(k->vmalloc_start, align);
	for (i = 0; i < vs->nr; i++) {
		if (a <= end && size <= end - a && a + size <= vs->va[i]->addr)
			break;
		if (vs->va[i]->addr + vs->va[i]->size > a)
			a = ALIGN(vs->va[i]->addr + vs->va[i]->size, align);
	}
	if (a > end || size > end - a) {
		if (!purged && vs->lazy_pages) {
			purge_vmap_area_lazy(vs);
			purged = true;
			goto retry;
		}
		__spin_unlock(&vs->lock);
		return false;
	}
	vm->addr = a;
	vm->size = size;
	memmove(&vs->va[i + 1], &vs->va[i], (vs->nr - i) * sizeof(vs->va[0]));
	vs->va[i] = vm;
	vs->nr++;
	__spin_unlock(&vs->lock);
	return true;
}

/* Drop a record that never became an area (lock not held). */
static void unlink_vmap_area(struct odb_kernel *k, struct vm_struct *vm)
{
	struct vmap_state *vs = k->vmap;

	__spin_lock(&vs->lock);
	for (size_t i = 0; i < vs->nr; i++)
		if (vs->va[i] == vm) {
			memmove(&vs->va[i], &vs->va[i + 1], (vs->nr - i - 1) * sizeof(vs->va[0]));
			vs->nr--;
			break;
		}
	__spin_unlock(&vs->lock);
}

/* warn_alloc(gfp, NULL, "vmalloc error: ...") (a pr_warn: never panic_on_warn) */
static void vmalloc_warn(struct odb_kernel *k, unsigned int gfp, const char *fmt, uint64_t size)
{
	struct odb_task *t = odb_current(k);
	struct odb_report_impl *r;
	char what[96], g[160];

	if (gfp & ODB_GFP_NOWARN)
		return;
	snprintf(what, sizeof(what), fmt, (unsigned long long)size);
	odb_format_gfp(gfp, g, sizeof(g));
	r = report_new(k, "kernel", "vmalloc error");
	if (!r)
		return;
	r->no_panic = true;
	report_line(r, "%s: %s, mode:%#x(%s), nodemask=(null)", t ? t->comm : "?", what, gfp, g);
	report_publish(k, r);
}

/* ---- the area's pages ----------------------------------------------------------------- */
/* split_page(): a high-order block becomes order-0 pages, each freed alone. */
static void split_page(struct odb_kernel *k, struct page *p, unsigned int order)
{
	(void)k;
	for (uint32_t i = 0; i < (1u << order); i++) {
		WRITE_ONCE(p[i].flags, PG_alloc);
		WRITE_ONCE(p[i].order, 0);
		p[i].head = 0;
	}
}

static void free_area_pages(struct odb_kernel *k, uint32_t *pfns, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		struct page *p = &k->pages[pfns[i]];

		__atomic_fetch_and(&p->flags, ~PG_vmalloc, __ATOMIC_RELAXED);
		__free_pages(k, p, 0);
	}
	atomic_fetch_sub(&k->vmap->nr_vmalloc_pages, n);
}

/* vm_area_alloc_pages(): n small pages in blocks of 1 << order; the count
 * got (the caller frees them on failure). */
static uint64_t vm_area_alloc_pages(struct odb_kernel *k, unsigned int gfp, unsigned int order,
				    uint32_t *pfns, uint64_t n)
{
	uint64_t got = 0;

	/* __vmalloc_area_node: highmem pages, no page allocator warning (the
	 * "vmalloc error" is the warning) */
	gfp |= ODB_GFP_HIGHMEM | ODB_GFP_NOWARN;
	if (order)
		gfp &= ~ODB_GFP_NOFAIL;
	while (got < n) {
		struct page *p = alloc_pages(k, gfp, order);

		if (!p)
			break;
		if (order)
			split_page(k, p, order);
		for (uint32_t i = 0; i < (1u << order); i++) {
			__atomic_fetch_or(&p[i].flags, PG_vmalloc, __ATOMIC_RELAXED);
			pfns[got++] = (uint32_t)page_to_pfn(k, &p[i]);
		}
	}
	atomic_fetch_add(&k->vmap->nr_vmalloc_pages, got);
	return got;
}

/* ---- vmalloc ----------------------------------------------------------------------------- */
static struct vm_struct *new_vm(struct odb_kernel *k, unsigned int flags, uint64_t requested,
				unsigned long caller)
{
	struct vm_struct *vm = calloc(1, sizeof(*vm));

	if (vm) {
		vm->flags = flags;
		vm->requested = requested;
		vm->caller = caller;
		vm->stack = stack_depot_save_current(k, 2);
	}
	return vm;
}

odb_addr_t __vmalloc_node_range(struct odb_kernel *k, unsigned long size, unsigned int gfp,
				unsigned int vm_flags, unsigned long caller)
{
	unsigned long real_size = size;
	unsigned int shift = PAGE_SHIFT;
	uint64_t align = PAGE_SIZE, nr, got;
	struct vm_struct *vm;
	uint32_t *pfns;

	size = ALIGN(size, PAGE_SIZE);
	if (!size || size < real_size)
		return 0;    /* (the kernel WARNs once on size 0) */
	if ((size >> PAGE_SHIFT) > totalram_pages(k)) {
		vmalloc_warn(k, gfp, "vmalloc error: size %llu, exceeds total pages", real_size);
		return 0;
	}
	if ((vm_flags & VM_ALLOW_HUGE_VMAP) && size >= PMD_SIZE) {
		shift = PMD_SHIFT;
		align = PMD_SIZE;
		size = ALIGN(real_size, PMD_SIZE);
	}
again:
	pfns = NULL;
	got = 0;
	vm = new_vm(k, VM_ALLOC | VM_UNINITIALIZED | vm_flags, real_size, caller);
	if (!vm || !alloc_vmap_area(k, vm, size + PAGE_SIZE, align)) {
		if (vm && !(gfp & ODB_GFP_NOWARN))
			printk(k, "vmap allocation for size %llu failed: use vmalloc=<size> to increase size",
			       (unsigned long long)(size + PAGE_SIZE));
		free(vm);
		vm = NULL;
		vmalloc_warn(k, gfp, "vmalloc error: size %llu, vm_struct allocation failed", real_size);
		goto fail;
	}
	nr = size >> PAGE_SHIFT;
	pfns = malloc(nr * sizeof(*pfns));
	got = pfns ? vm_area_alloc_pages(k, gfp, shift - PAGE_SHIFT, pfns, nr) : 0;
	if (got != nr) {
		if (shift == PAGE_SHIFT)
			vmalloc_warn(k, gfp, "vmalloc error: size %llu, failed to allocate pages",
				     got << PAGE_SHIFT);
		goto fail;
	}
	if (vmap_pages_range(k, vm->addr, pfns, nr)) {
		vmalloc_warn(k, gfp, "vmalloc error: size %llu, failed to map pages", nr << PAGE_SHIFT);
		goto fail;
	}
	/* mark the pages accessible: exactly the caller's size (kasan_unpoison_vmalloc) */
	kasan_unpoison_vmalloc(k, vm->addr, real_size);
	__spin_lock(&k->vmap->lock);
	vm->pages = pfns;
	vm->nr_pages = nr;
	vm->flags &= ~VM_UNINITIALIZED;   /* clear_vm_uninitialized_flag */
	__spin_unlock(&k->vmap->lock);
	return vm->addr;
fail:
	if (vm) {
		free_area_pages(k, pfns, got);
		free(pfns);
		unlink_vmap_area(k, vm);
		free(vm);
	}
	if (shift > PAGE_SHIFT) {
		/* the huge attempt failed: again with small pages */
		shift = PAGE_SHIFT;
		align = PAGE_SIZE;
		size = ALIGN(real_size, PAGE_SIZE);
		goto again;
	}
	return 0;
}

/* remove_vm_area(): unlink the live area holding addr (it waits on the lazy
 * list), poison it, unmap it; NULL (after the bad-address WARN for an
 * unaligned one) if there is none.  The caller frees what the record owns. */
static struct vm_struct *remove_vm_area(struct odb_kernel *k, odb_addr_t addr,
					uint32_t **pages, uint64_t *nr_pages)
{
	struct vmap_state *vs = k->vmap;
	struct vm_struct *vm;

	if (addr & (PAGE_SIZE - 1)) {
		char msg[96];

		snprintf(msg, sizeof(msg), "Trying to vfree() bad address (%016llx)",
			 (unsigned long long)addr);
		odb_warn(k, "kernel", "Trying to vfree() bad address", NULL, addr, NULL, msg,
			 "mm/vmalloc.c", __LINE__, (const void *)vfree);
		return NULL;
	}
	if (!vs)
		return NULL;
	__spin_lock(&vs->lock);
	vm = __find_vmap_area(vs, addr);
	if (vm && !(vm->flags & VM_UNINITIALIZED)) {
		vm->lazy = true;
		*pages = vm->pages;
		*nr_pages = vm->nr_pages;
		vm->pages = NULL;
		vm->nr_pages = 0;
	} else {
		vm = NULL;
	}
	__spin_unlock(&vs->lock);
	if (!vm)
		return NULL;
	debug_check_no_obj_freed_range(k, vm->addr, get_vm_area_size(vm));
	kasan_poison_vmalloc(k, vm->addr, get_vm_area_size(vm));
	vunmap_range(k, vm->addr, *nr_pages << PAGE_SHIFT);
	return vm;
}

/* free_vmap_area_noflush(): the range waits; past lazy_max_pages, the purge. */
static void free_vmap_area_noflush(struct odb_kernel *k, struct vm_struct *vm)
{
	struct vmap_state *vs = k->vmap;

	__spin_lock(&vs->lock);
	vs->lazy_pages += vm->size >> PAGE_SHIFT;
	if (vs->lazy_pages > lazy_max_pages(k))
		purge_vmap_area_lazy(vs);
	__spin_unlock(&vs->lock);
}

static void vfree_warn(struct odb_kernel *k, const char *what, odb_addr_t addr)
{
	char kind[64], msg[128];

	snprintf(kind, sizeof(kind), "Trying to %s() nonexistent vm area", what);
	snprintf(msg, sizeof(msg), "%s (%016llx)", kind, (unsigned long long)addr);
	odb_warn(k, "kernel", kind, NULL, addr, NULL, msg, "mm/vmalloc.c", __LINE__,
		 !strcmp(what, "vfree") ? (const void *)vfree : (const void *)vunmap);
}

bool vfree(struct odb_kernel *k, odb_addr_t addr, unsigned long caller)
{
	struct vm_struct *vm;
	uint32_t *pages = NULL;
	uint64_t nr = 0;

	(void)caller;
	if (!addr)
		return true;
	vm = remove_vm_area(k, addr, &pages, &nr);
	if (!vm) {
		vfree_warn(k, "vfree", addr);
		return false;
	}
	if (vm->flags & VM_ALLOC)
		free_area_pages(k, pages, nr);   /* a vmap'd area's pages stay the caller's */
	free(pages);
	free_vmap_area_noflush(k, vm);
	return true;
}

bool vunmap(struct odb_kernel *k, odb_addr_t addr)
{
	struct vm_struct *vm;
	uint32_t *pages = NULL;
	uint64_t nr = 0;

	if (!addr)
		return true;
	vm = remove_vm_area(k, addr, &pages, &nr);
	if (!vm) {
		vfree_warn(k, "vunmap", addr);
		return false;
	}
	/* vunmap of a vmalloc'd area leaks its pages, as in the kernel: they stay
	 * allocated, ordinary pages from now on */
	if (vm->flags & VM_ALLOC) {
		for (uint64_t i = 0; i < nr; i++)
			__atomic_fetch_and(&k->pages[pages[i]].flags, ~PG_vmalloc, __ATOMIC_RELAXED);
		atomic_fetch_sub(&k->vmap->nr_vmalloc_pages, nr);
	}
	free(pages);
	free_vmap_area_noflush(k, vm);
	return true;
}

/* vmap(): count pages (frame numbers) mapped contiguously; 0 on failure. */
odb_addr_t vmap(struct odb_kernel *k, const uint32_t *pfns, uint64_t count, unsigned long caller)
{
	struct vm_struct *vm;
	uint32_t *copy;

	if (!count || count > totalram_pages(k))
		return 0;
	vm = new_vm(k, VM_MAP, count << PAGE_SHIFT, caller);
	copy = malloc(count * sizeof(*copy));
	if (!vm || !copy || !alloc_vmap_area(k, vm, (count + 1) << PAGE_SHIFT, PAGE_SIZE)) {
		free(vm);
		free(copy);
		return 0;
	}
	memcpy(copy, pfns, count * sizeof(*copy));
	/* __get_vm_area_node: a mapping that is not VM_ALLOC is marked
	 * accessible when its range is reserved */
	kasan_unpoison_vmalloc(k, vm->addr, count << PAGE_SHIFT);
	if (vmap_pages_range(k, vm->addr, copy, count)) {
		kasan_poison_vmalloc(k, vm->addr, count << PAGE_SHIFT);
		unlink_vmap_area(k, vm);
		free(vm);
		free(copy);
		return 0;
	}
	__spin_lock(&k->vmap->lock);
	vm->pages = copy;
	vm->nr_pages = count;
	__spin_unlock(&k->vmap->lock);
	return vm->addr;
}

/* ---- lookups ------------------------------------------------------------------------------ */
void *vmalloc_host_ptr(struct odb_kernel *k, odb_addr_t a, size_t len)
{
	struct vmap_state *vs = k->vmap;
	struct vm_struct *vm;
	bool ok = false;

	if (!vs || !is_vmalloc_addr(k, a))
		return NULL;
	__spin_lock(&vs->lock);
	vm = __find_vmap_area(vs, a);
	if (vm) {
		uint64_t off = a - vm->addr, mapped = vm->nr_pages << PAGE_SHIFT;

		ok = off <= mapped && len <= mapped - off;
	}
	__spin_unlock(&vs->lock);
	return ok ? window(k, a) : NULL;
}

size_t odb_backed_bytes(struct odb_kernel *k, odb_addr_t a, size_t n)
{
	struct vmap_state *vs = k->vmap;
	struct vm_struct *vm;
	size_t got = 0;

	if (odb_in_arena(k, a, 1)) {
		uint64_t left = k->page_offset_base + k->ram_bytes - a;
		return n < left ? n : (size_t)left;
	}
	if (!vs || !is_vmalloc_addr(k, a))
		return 0;
	__spin_lock(&vs->lock);
	vm = __find_vmap_area(vs, a);
	if (vm && a - vm->addr < (vm->nr_pages << PAGE_SHIFT)) {
		uint64_t left = vm->addr + (vm->nr_pages << PAGE_SHIFT) - a;
		got = n < left ? n : (size_t)left;
	}
	__spin_unlock(&vs->lock);
	return got;
}

bool find_vm_area_info(struct odb_kernel *k, odb_addr_t a, struct vm_area_info *out)
{
	struct vmap_state *vs = k->vmap;
	struct vm_struct *vm;
	unsigned long caller = 0;
	uint32_t stack = 0;
	bool found = false;

	memset(out, 0, sizeof(*out));
	if (!vs || !is_vmalloc_addr(k, a))
		return false;
	__spin_lock(&vs->lock);
	vm = __find_vmap_area(vs, a);
	if (vm) {
		found = true;
		out->start = vm->addr;
		out->end = vm->addr + vm->size;
		caller = vm->caller;
		stack = vm->stack;
		if (a - vm->addr < (vm->nr_pages << PAGE_SHIFT))      /* vmalloc_to_page() */
			out->page = &k->pages[vm->pages[(a - vm->addr) >> PAGE_SHIFT]];
	}
	__spin_unlock(&vs->lock);
	if (found) {
		/* va->caller's %pS: the Python caller when the call came from Python */
		stack_depot_py(k, stack, out->caller, sizeof(out->caller));
		if (!out->caller[0])
			odb_sprint_symbol(k, caller, out->caller, sizeof(out->caller));
	}
	return found;
}

uint64_t vmalloc_nr_pages(struct odb_kernel *k)
{
	return k->vmap ? atomic_load(&k->vmap->nr_vmalloc_pages) : 0;
}

/* ---- boot --------------------------------------------------------------------------------- */
uint64_t vmalloc_region_size(uint64_t ram)
{
	/* twice the RAM: room for vmalloc of all of it, guard pages and vmap
	 * aliases; 2 MiB aligned (huge areas), at most 16 TiB */
	uint64_t w = ALIGN(2 * ram, (uint64_t)PMD_SIZE);

	return w < (16ULL << 40) ? w : (16ULL << 40);
}

int vmalloc_init(struct odb_kernel *k)
{
	struct vmap_state *vs = calloc(1, sizeof(*vs));

	if (!vs)
		return -1;
	vs->host = mmap(NULL, (size_t)k->vmalloc_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vs->host == MAP_FAILED) {
		free(vs);
		return -1;
	}
	spin_lock_init(&vs->lock);
	atomic_init(&vs->nr_vmalloc_pages, 0);
	k->vmap = vs;
	return 0;
}

void vmalloc_release_window(struct odb_kernel *k)
{
	struct vmap_state *vs = k->vmap;

	if (vs && vs->host) {
		munmap(vs->host, (size_t)k->vmalloc_size);
		vs->host = NULL;
	}
}

void vmalloc_exit(struct odb_kernel *k)
{
	struct vmap_state *vs = k->vmap;

	if (!vs)
		return;
	for (size_t i = 0; i < vs->nr; i++) {
		free(vs->va[i]->pages);
		free(vs->va[i]);
	}
	free(vs->va);
	vmalloc_release_window(k);
	spin_lock_destroy(&vs->lock);
	k->vmap = NULL;
	free(vs);
}

int odb_host_region(odb_kernel *k, int region, void **base, size_t *len)
{
	*base = NULL;
	*len = 0;
	if (region == ODB_REGION_ARENA && k->ram) {
		*base = k->ram;
		*len = (size_t)k->ram_bytes;
		return ODB_OK;
	}
	if (region == ODB_REGION_VMALLOC && k->vmap) {
		*base = k->vmap->host;
		*len = (size_t)k->vmalloc_size;
		return ODB_OK;
	}
	return ODB_EINVAL;
}

/* ---- public API ----------------------------------------------------------------------------- */
#define ENTER(k) struct odb_task *t_ = odb_enter(k); if (!t_) return odb_enter_failed(k)
#define LEAVE(r) return odb_leave(t_, (r))

static int vmalloc_common(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out,
			  unsigned long caller)
{
	ENTER(k);
	*out = __vmalloc_node_range(k, size, gfp, 0, caller);
	if (!*out)
		LEAVE(odb_err(k, ODB_ENOMEM, "vmalloc(%zu) failed", size));
	LEAVE(ODB_OK);
}

int odb_vmalloc(odb_kernel *k, size_t size, odb_addr_t *out)
{
	return vmalloc_common(k, size, ODB_GFP_KERNEL, out, (unsigned long)__builtin_return_address(0));
}

int odb_vzalloc(odb_kernel *k, size_t size, odb_addr_t *out)
{
	return vmalloc_common(k, size, ODB_GFP_KERNEL | ODB_GFP_ZERO, out,
			      (unsigned long)__builtin_return_address(0));
}

int odb_vmalloc_gfp(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out)
{
	return vmalloc_common(k, size, gfp, out, (unsigned long)__builtin_return_address(0));
}

int odb_vfree(odb_kernel *k, odb_addr_t addr)
{
	ENTER(k);
	vfree(k, addr, (unsigned long)__builtin_return_address(0));
	LEAVE(ODB_OK);
}

int odb_vunmap(odb_kernel *k, odb_addr_t addr)
{
	ENTER(k);
	vunmap(k, addr);
	LEAVE(ODB_OK);
}

int odb_vmap(odb_kernel *k, const odb_addr_t *pages, size_t count, odb_addr_t *out)
{
	unsigned long caller = (unsigned long)__builtin_return_address(0);
	uint32_t *pfns;
	ENTER(k);

	*out = 0;
	if (count > totalram_pages(k))
		LEAVE(odb_err(k, ODB_ENOMEM, "vmap: %zu pages is more than RAM", count));
	if (!count)
		LEAVE(odb_err(k, ODB_ENOMEM, "vmap: no pages"));
	pfns = malloc(count * sizeof(*pfns));
	if (!pfns)
		LEAVE(odb_err(k, ODB_ENOMEM, "vmap: out of memory"));
	for (size_t i = 0; i < count; i++) {
		if (!odb_in_arena(k, pages[i], PAGE_SIZE) || (pages[i] & (PAGE_SIZE - 1))) {
			free(pfns);
			LEAVE(odb_err(k, ODB_EINVAL, "vmap: page %zu (0x%llx) is not a page of this "
				      "kernel's memory", i, (unsigned long long)pages[i]));
		}
		pfns[i] = (uint32_t)((pages[i] - k->page_offset_base) >> PAGE_SHIFT);
	}
	*out = vmap(k, pfns, count, caller);
	free(pfns);
	if (!*out)
		LEAVE(odb_err(k, ODB_ENOMEM, "vmap of %zu pages failed", count));
	LEAVE(ODB_OK);
}

uint64_t odb_vmalloc_nr_pages(odb_kernel *k)
{
	return vmalloc_nr_pages(k);
}

size_t odb_backed(odb_kernel *k, odb_addr_t addr, size_t n)
{
	return odb_backed_bytes(k, addr, n);
}
