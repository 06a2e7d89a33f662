/*
 * The page allocator: a buddy allocator (orders 0..MAX_PAGE_ORDER) over the
 * simulated RAM arena, with a struct page per page frame.
 *
 * The arena and the page array are mmap'd with MAP_NORESERVE: only touched
 * pages cost host memory, so a "4G" kernel is cheap until it is used.
 */
#include <stdio.h>
#include <sys/mman.h>

#include "kernel/kernel.h"

#define IDX(k, p) ((uint32_t)((p) - (k)->pages) + 1)   /* 0 = none */
#define PAGE_AT(k, i) (&(k)->pages[(i) - 1])

/*
 * The arena is mapped with a PROT_NONE guard region on each side: a pointer
 * that escapes the simulated RAM by a little (a corrupted free pointer, an
 * off-by-a-page copy) faults at once instead of silently writing host memory.
 * The whole reservation (guards included) is unmapped at exit.
 *
 * RAM itself is a shared anonymous mapping (still NORESERVE: untouched pages
 * cost nothing), so that vmalloc space can map the very same pages
 * (kernel/vmalloc.c: mremap(2) of a shared mapping with old size 0 makes a
 * second mapping of its pages).  Its pages are shmem pages: a first touch
 * costs a little more than an anonymous page's, and a fork()ed child shares
 * them with its parent (a kernel is not meant to be used across fork).
 */
#define ODB_ARENA_GUARD (16UL << 20)

/* The read-write part is RAM rounded up to the largest buddy block: the tail
 * beyond RAM is never handed out, and a slab-sized block that holds a RAM
 * address is always mapped (SLUB's free-pointer check then needs one compare,
 * slub.h freeptr_valid()). */
#define ODB_ARENA_ROUND(size) ALIGN((size_t)(size), (size_t)PAGE_SIZE << MAX_PAGE_ORDER)

static char *arena_map(size_t ram)
{
	size_t size = ODB_ARENA_ROUND(ram);
	char *base = mmap(NULL, size + 2 * ODB_ARENA_GUARD, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (base == MAP_FAILED)
		return NULL;
	if (mmap(base + ODB_ARENA_GUARD, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
		munmap(base, size + 2 * ODB_ARENA_GUARD);
		return NULL;
	}
	return base + ODB_ARENA_GUARD;
}

static void arena_unmap(char *ram, size_t ram_bytes)
{
	munmap(ram - ODB_ARENA_GUARD, ODB_ARENA_ROUND(ram_bytes) + 2 * ODB_ARENA_GUARD);
}

static void buddy_list_add(struct odb_kernel *k, struct page *p, unsigned int order)
{
	struct odb_zone *z = &k->zone;
	uint32_t i = IDX(k, p);

	WRITE_ONCE(p->flags, PG_buddy);
	WRITE_ONCE(p->order, order);
	p->buddy_prev = 0;
	p->buddy_next = z->free_head[order];
	if (p->buddy_next)
		PAGE_AT(k, p->buddy_next)->buddy_prev = i;
	z->free_head[order] = i;
	z->nr_free[order]++;
}

static void buddy_list_del(struct odb_kernel *k, struct page *p, unsigned int order)
{
	struct odb_zone *z = &k->zone;

	if (p->buddy_prev)
		PAGE_AT(k, p->buddy_prev)->buddy_next = p->buddy_next;
	else
		z->free_head[order] = p->buddy_next;
	if (p->buddy_next)
		PAGE_AT(k, p->buddy_next)->buddy_prev = p->buddy_prev;
	p->buddy_next = p->buddy_prev = 0;
	WRITE_ONCE(p->flags, 0);
	z->nr_free[order]--;
}

int odb_mem_init(struct odb_kernel *k)
{
	uint64_t pfn = 0;

	k->nr_pages = k->ram_bytes >> PAGE_SHIFT;
	if (k->nr_pages >= UINT32_MAX)
		return -1;
	k->ram = arena_map(k->ram_bytes);
	if (!k->ram)
		return -1;
	k->pages = mmap(NULL, k->nr_pages * sizeof(struct page), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (k->pages == MAP_FAILED) {
		k->pages = NULL;
		arena_unmap(k->ram, k->ram_bytes);
		k->ram = NULL;
		return -1;
	}
	spin_lock_init(&k->zone.lock);
	/* Free the arena in the largest aligned blocks (memblock_free_all). */
	while (pfn < k->nr_pages) {
		unsigned int order = MAX_PAGE_ORDER;

		while (order && ((pfn & ((1ULL << order) - 1)) ||
				 pfn + (1ULL << order) > k->nr_pages))
			order--;
		buddy_list_add(k, &k->pages[pfn], order);
		pfn += 1ULL << order;
	}
	atomic_store(&k->nr_free_pages, k->nr_pages);
	return 0;
}

void odb_mem_exit(struct odb_kernel *k)
{
	if (k->pages) {
		munmap(k->pages, k->nr_pages * sizeof(struct page));
		k->pages = NULL;
		spin_lock_destroy(&k->zone.lock);
	}
	if (k->ram) {
		arena_unmap(k->ram, k->ram_bytes);
		k->ram = NULL;
	}
}

uint64_t totalram_pages(struct odb_kernel *k) { return k->nr_pages; }

struct page *virt_to_page(struct odb_kernel *k, odb_addr_t a)
{
	if (!odb_in_arena(k, a, 1))
		return NULL;
	return &k->pages[(a - k->page_offset_base) >> PAGE_SHIFT];
}

struct page *virt_to_head_page(struct odb_kernel *k, odb_addr_t a)
{
	struct page *p = virt_to_page(k, a);

	if (p && (READ_ONCE(p->flags) & PG_tail))
		p = &k->pages[p->head];
	return p;
}

odb_addr_t page_address(struct odb_kernel *k, const struct page *p)
{
	return k->page_offset_base + ((uint64_t)(p - k->pages) << PAGE_SHIFT);
}

/* __should_fail_alloc_page (mm/fail_page_alloc.c) */
static bool should_fail_alloc_page(struct odb_kernel *k, unsigned int gfp, unsigned int order)
{
	struct fail_page_alloc_attr *f = &k->fail_page_alloc;

	if (order < f->min_order)
		return false;
	if (gfp & ODB_GFP_NOFAIL)
		return false;
	if (f->ignore_gfp_highmem && (gfp & ODB_GFP_HIGHMEM))
		return false;
	if (f->ignore_gfp_reclaim && (gfp & ODB_GFP_DIRECT_RECLAIM))
		return false;
	return should_fail_ex(k, &f->attr, (size_t)1 << order,
			      (gfp & ODB_GFP_NOWARN) ? FAULT_NOWARN : 0);
}

/* %pGg for the flags odebug has, in the kernel's names and order. */
void odb_format_gfp(unsigned int gfp, char *buf, size_t len)
{
	static const struct { unsigned int mask; const char *name; } names[] = {
		{ ODB_GFP_KERNEL, "GFP_KERNEL" },
		{ ODB_GFP_ATOMIC, "GFP_ATOMIC" },
		{ ODB_GFP_NOWAIT, "GFP_NOWAIT" },
		{ ODB_GFP_DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM" },
		{ ODB_GFP_IO, "__GFP_IO" }, { ODB_GFP_FS, "__GFP_FS" },
		{ ODB_GFP_HIGH, "__GFP_HIGH" },
		{ ODB_GFP_KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM" },
		{ ODB_GFP_ZERO, "__GFP_ZERO" }, { ODB_GFP_NOWARN, "__GFP_NOWARN" },
		{ ODB_GFP_NOFAIL, "__GFP_NOFAIL" }, { ODB_GFP_HIGHMEM, "__GFP_HIGHMEM" },
	};
	unsigned int left = gfp;
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(names) && left; i++) {
		if ((left & names[i].mask) == names[i].mask) {
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s",
					      n ? "|" : "", names[i].name);
			left &= ~names[i].mask;
		}
	}
	if (!gfp && len)
		snprintf(buf, len, "none");
}

static void warn_alloc(struct odb_kernel *k, unsigned int gfp, unsigned int order)
{
	struct odb_task *t = odb_current(k);
	struct odb_report_impl *r;
	char g[160];

	if (gfp & ODB_GFP_NOWARN)
		return;
	odb_format_gfp(gfp, g, sizeof(g));
	r = report_new(k, "kernel", "page allocation failure");
	if (!r)
		return;
	r->no_panic = true;   /* warn_alloc is a pr_warn, not a WARN */
	report_line(r, "%s: page allocation failure: order:%u, mode:%#x(%s), nodemask=(null)",
		    t ? t->comm : "?", order, gfp, g);
	report_publish(k, r);
}

struct page *alloc_pages(struct odb_kernel *k, unsigned int gfp, unsigned int order)
{
	struct odb_zone *z = &k->zone;
	struct page *p = NULL;
	unsigned int o;

	if (order > MAX_PAGE_ORDER)
		return NULL;
	/* prepare_alloc_pages(): an injected failure returns NULL before the
	 * slowpath, so there is no warn_alloc() for it (only the fault dump). */
	if (unlikely(should_fail_alloc_page(k, gfp, order)))
		return NULL;
	spin_lock(k, &z->lock);
	for (o = order; o <= MAX_PAGE_ORDER; o++)
		if (z->free_head[o])
			break;
	if (o <= MAX_PAGE_ORDER) {
		p = PAGE_AT(k, z->free_head[o]);
		buddy_list_del(k, p, o);
		/* expand(): hand the upper halves back */
		while (o > order) {
			o--;
			buddy_list_add(k, p + (1u << o), o);
		}
	}
	spin_unlock(k, &z->lock);
	if (!p) {
		warn_alloc(k, gfp, order);
		return NULL;
	}
	atomic_fetch_sub(&k->nr_free_pages, 1ULL << order);
	WRITE_ONCE(p->flags, PG_alloc | (order ? PG_head : 0));
	WRITE_ONCE(p->order, order);
	/* priv[] is left as its last owner left it: the slab's struct slab words
	 * must stay valid pointers for a thread that still reads them (slub.c) */
	for (uint32_t i = 1; i < (1u << order); i++) {
		WRITE_ONCE(p[i].flags, PG_tail);
		p[i].head = (uint32_t)(p - k->pages);
	}
	for (unsigned int i = 0; i < k->nr_page_alloc_hooks; i++)
		k->page_alloc_hooks[i](k, page_address(k, p), PAGE_SIZE << order);
	if (gfp & ODB_GFP_ZERO)
		memset(virt_to_host(k, page_address(k, p)), 0, PAGE_SIZE << order);
	return p;
}

void __free_pages(struct odb_kernel *k, struct page *page, unsigned int order)
{
	struct odb_zone *z = &k->zone;
	uint64_t pfn = page_to_pfn(k, page);
	odb_addr_t addr = page_address(k, page);

	for (unsigned int i = 0; i < k->nr_page_free_hooks; i++)
		k->page_free_hooks[i](k, addr, PAGE_SIZE << order);
	for (uint32_t i = 0; i < (1u << order); i++)
		WRITE_ONCE(page[i].flags, 0);
	atomic_fetch_add(&k->nr_free_pages, 1ULL << order);
	spin_lock(k, &z->lock);
	while (order < MAX_PAGE_ORDER) {
		uint64_t bpfn = pfn ^ (1ULL << order);
		struct page *b;

		if (bpfn + (1ULL << order) > k->nr_pages)
			break;
		b = &k->pages[bpfn];
		/* the buddy may be another thread's page: its flags change under us */
		if (!(READ_ONCE(b->flags) & PG_buddy) || READ_ONCE(b->order) != order)
			break;
		buddy_list_del(k, b, order);
		pfn &= bpfn;
		order++;
	}
	buddy_list_add(k, &k->pages[pfn], order);
	spin_unlock(k, &z->lock);
}

void odb_register_page_free_hook(struct odb_kernel *k, odb_page_free_hook fn)
{
	if (k->nr_page_free_hooks < ARRAY_SIZE(k->page_free_hooks))
		k->page_free_hooks[k->nr_page_free_hooks++] = fn;
}

void odb_register_page_alloc_hook(struct odb_kernel *k, odb_page_alloc_hook fn)
{
	if (k->nr_page_alloc_hooks < ARRAY_SIZE(k->page_alloc_hooks))
		k->page_alloc_hooks[k->nr_page_alloc_hooks++] = fn;
}

/* ---- public API ----------------------------------------------------------------- */
uint64_t odb_totalram_pages(odb_kernel *k) { return k->nr_pages; }
uint64_t odb_nr_free_pages(odb_kernel *k) { return atomic_load(&k->nr_free_pages); }
odb_addr_t odb_arena_start(odb_kernel *k) { return k->page_offset_base; }
odb_addr_t odb_arena_end(odb_kernel *k) { return k->page_offset_base + k->ram_bytes; }
odb_addr_t odb_page_offset(odb_kernel *k) { return k->page_offset_base; }
odb_addr_t odb_vmalloc_start(odb_kernel *k) { return k->vmalloc_start; }
odb_addr_t odb_vmalloc_end(odb_kernel *k) { return k->vmalloc_start + k->vmalloc_size; }

void *odb_host_ptr(odb_kernel *k, odb_addr_t addr, size_t len)
{
	if (!k->ram)
		return NULL;
	if (odb_in_arena(k, addr, len))
		return virt_to_host(k, addr);
	return vmalloc_host_ptr(k, addr, len);
}

odb_addr_t odb_virt_addr(odb_kernel *k, const void *p)
{
	const char *c = p;
	void *base;
	size_t len;

	if (!k->ram || !c)
		return 0;
	if (c >= k->ram && (uint64_t)(c - k->ram) < k->ram_bytes)
		return host_to_virt(k, c);
	if (odb_host_region(k, ODB_REGION_VMALLOC, &base, &len) == ODB_OK &&
	    c >= (char *)base && (size_t)(c - (char *)base) < len)
		return k->vmalloc_start + (odb_addr_t)(c - (char *)base);
	return 0;
}

int odb_alloc_pages(odb_kernel *k, unsigned int gfp, unsigned int order, odb_addr_t *addr)
{
	struct odb_task *t = odb_enter(k);
	struct page *p;

	if (!t)
		return odb_enter_failed(k);
	*addr = 0;
	if (order > MAX_PAGE_ORDER)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "order %u > MAX_PAGE_ORDER (%d)",
					    order, MAX_PAGE_ORDER));
	p = alloc_pages(k, gfp, order);
	if (!p)
		return odb_leave(t, odb_err(k, ODB_ENOMEM,
					    "page allocation failure: order:%u", order));
	*addr = page_address(k, p);
	return odb_leave(t, ODB_OK);
}

int odb_free_pages(odb_kernel *k, odb_addr_t addr, unsigned int order)
{
	struct odb_task *t = odb_enter(k);
	struct page *p;

	if (!t)
		return odb_enter_failed(k);
	if (order > MAX_PAGE_ORDER)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "order %u > MAX_PAGE_ORDER (%d)",
					    order, MAX_PAGE_ORDER));
	p = virt_to_page(k, addr);
	if (!p || (addr & (PAGE_SIZE - 1)))
		return odb_leave(t, odb_err(k, ODB_EINVAL,
					    "0x%llx is not a page address in this kernel",
					    (unsigned long long)addr));
	if (!(p->flags & PG_alloc) || (p->flags & (PG_slab | PG_vmalloc)))
		return odb_leave(t, odb_err(k, ODB_EINVAL,
					    "page 0x%llx is not an allocated page block (%s)",
					    (unsigned long long)addr,
					    (p->flags & PG_slab) ? "it belongs to a slab" :
					    (p->flags & PG_vmalloc) ? "it belongs to a vmalloc area" :
					    (p->flags & PG_tail) ? "tail page" : "free"));
	if (p->order != order)
		return odb_leave(t, odb_err(k, ODB_EINVAL,
					    "page 0x%llx was allocated with order %u, not %u",
					    (unsigned long long)addr, p->order, order));
	__free_pages(k, p, order);
	return odb_leave(t, ODB_OK);
}
