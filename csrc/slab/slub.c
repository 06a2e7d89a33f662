/*
 * SLUB, as of the 2016 series (v4.6 structure), with the debug paths of both
 * policies (odebug.slub_path=relaxed|locked) and modern report formats.
 *
 * Per vCPU: a cpu slab whose freelist is taken whole into c->freelist (the
 * lockless fast path; here "lockless" means under the cheap per-vCPU irq
 * lock only), and a chain of per-CPU partial slabs.  One node with a partial
 * list (and a full list with SLAB_STORE_USER) under list_lock.  Frees of
 * objects whose slab is not this vCPU's cpu slab go through __slab_free:
 * a double-word compare-and-swap on the slab's freelist+counters, or the
 * slab lock when the cache may not use cmpxchg.
 *
 * Caches with debug flags never use the fast path: every allocation takes
 * one object in ___slab_alloc and deactivates the slab again (one cmpxchg
 * per object left on the freelist: the cost Abbott measured), every free
 * goes to __slab_free through free_debug_processing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "slab/slub.h"
#include "kernel/params.h"
#include "kasan/kasan.h"

const char *const slub_stat_names[NR_SLUB_STAT_ITEMS] = {
	"alloc_fastpath", "alloc_slowpath", "free_fastpath", "free_slowpath", "free_frozen",
	"free_add_partial", "free_remove_partial", "alloc_from_partial", "alloc_slab",
	"alloc_refill", "alloc_node_mismatch", "free_slab", "cpuslab_flush", "deactivate_full",
	"deactivate_empty", "deactivate_to_head", "deactivate_to_tail",
	"deactivate_remote_frees", "deactivate_bypass", "order_fallback",
	"cmpxchg_double_cpu_fail", "cmpxchg_double_fail", "cpu_partial_alloc",
	"cpu_partial_free", "cpu_partial_node", "cpu_partial_drain",
};

#define MIN_PARTIAL 5
#define MAX_PARTIAL 10
#define DEACTIVATE_TO_HEAD_MODE 0
#define DEACTIVATE_TO_TAIL_MODE 1
#define PAGE_ALLOC_COSTLY_ORDER 3

/* ---- slab lock and the double-word cmpxchg ----------------------------------------- */
void __slab_lock(struct slab *sl)
{
	int z;

	for (;;) {
		z = 0;
		if (atomic_compare_exchange_weak_explicit(&sl->lock, &z, 1, memory_order_acquire,
							  memory_order_relaxed))
			return;
		while (atomic_load_explicit(&sl->lock, memory_order_relaxed))
			sched_yield();
	}
}

void __slab_unlock(struct slab *sl)
{
	atomic_store_explicit(&sl->lock, 0, memory_order_release);
}

#if defined(__SANITIZE_THREAD__)
#define ODB_NO_CMPXCHG16 1   /* TSan does not model 16-byte CAS: use the slab lock */
#endif

/* The cmpxchg and the snapshot of a controlled kernel's cache: a scheduling
 * point first, the slab lock through the scheduler (out of line: a free
 * kernel's paths below test one more flag bit and nothing else). */
static __attribute__((noinline, cold))
bool cmpxchg_double_slab_sched(struct kmem_cache *s, struct slab *sl, int cpu,
			       void *freelist_old, unsigned long counters_old,
			       void *freelist_new, unsigned long counters_new)
{
	bool ok;

	odb_sched_point_slow(s->k, ODB_SITE(ODB_SP_CMPXCHG, "cmpxchg_double_slab"), sl);
	if (s->flags & __CMPXCHG_DOUBLE) {
#if !defined(ODB_NO_CMPXCHG16)
		unsigned __int128 o = ((unsigned __int128)counters_old << 64) | (uintptr_t)freelist_old;
		unsigned __int128 n = ((unsigned __int128)counters_new << 64) | (uintptr_t)freelist_new;

		ok = __sync_bool_compare_and_swap((unsigned __int128 *)&sl->freelist, o, n);
#else
		/* TSan: the instruction emulated under the bit lock taken raw, never a
		 * scheduling point, so that a controlled run passes the same points on
		 * every build (nobody holds a cmpxchg cache's bit lock across a point:
		 * slab_lock() is taken only on caches without __CMPXCHG_DOUBLE) */
		__slab_lock(sl);
		ok = sl->freelist == freelist_old && sl->counters == counters_old;
		if (ok)
			slab_set(sl, freelist_new, counters_new);
		__slab_unlock(sl);
#endif
		goto out;
	}
	slab_lock(s, sl);
	ok = sl->freelist == freelist_old && sl->counters == counters_old;
	if (ok)
		slab_set(sl, freelist_new, counters_new);
	slab_unlock(s, sl);
out:
	if (!ok)
		stat_cpu(s, cpu, CMPXCHG_DOUBLE_FAIL);
	return ok;
}

static __attribute__((noinline, cold))
void slab_snapshot_sched(struct kmem_cache *s, struct slab *sl, void **fl, unsigned long *c)
{
	slab_lock(s, sl);
	*fl = sl->freelist;
	*c = sl->counters;
	slab_unlock(s, sl);
}

/*
 * cmpxchg_double_slab and slab_snapshot, each in one body (always inline)
 * made twice (own, issue 16): a call (the _call functions: every cache, the
 * slab lock's, the controlled scheduler's) and an inline wrapper that does
 * the double-word case itself and calls the other for the rest.  A
 * slow-path free or refill of a cache with the double-word instruction makes
 * one to three of each, inline; deactivate_slab, which the 2016 debug flows
 * run on every allocation of a debug cache (the slab lock) once for each
 * object on the freelist, calls (there the wrapper's test would be one more
 * per object, not one less).
 */
static inline __attribute__((always_inline)) bool
__cmpxchg_double_slab(struct kmem_cache *s, struct slab *sl, int cpu, void *freelist_old,
		      unsigned long counters_old, void *freelist_new, unsigned long counters_new)
{
#if !defined(ODB_NO_CMPXCHG16)
	/* one test for both: the double-word instruction, and no scheduling point */
	if (likely((s->flags & (__CMPXCHG_DOUBLE | __SCHED_POINTS)) == __CMPXCHG_DOUBLE)) {
		unsigned __int128 o = ((unsigned __int128)counters_old << 64) | (uintptr_t)freelist_old;
		unsigned __int128 n = ((unsigned __int128)counters_new << 64) | (uintptr_t)freelist_new;
		if (__sync_bool_compare_and_swap((unsigned __int128 *)&sl->freelist, o, n))
			return true;
		stat_cpu(s, cpu, CMPXCHG_DOUBLE_FAIL);
		return false;
	}
#endif
	if (unlikely(s->flags & __SCHED_POINTS))
		return cmpxchg_double_slab_sched(s, sl, cpu, freelist_old, counters_old, freelist_new,
						 counters_new);
	__slab_lock(sl);
	if (sl->freelist == freelist_old && sl->counters == counters_old) {
		slab_set(sl, freelist_new, counters_new);
		__slab_unlock(sl);
		return true;
	}
	__slab_unlock(sl);
	stat_cpu(s, cpu, CMPXCHG_DOUBLE_FAIL);
	return false;
}

static __attribute__((noinline)) bool
cmpxchg_double_slab_call(struct kmem_cache *s, struct slab *sl, int cpu, void *freelist_old,
			 unsigned long counters_old, void *freelist_new, unsigned long counters_new)
{
	return __cmpxchg_double_slab(s, sl, cpu, freelist_old, counters_old, freelist_new,
				     counters_new);
}

static inline __attribute__((always_inline)) bool
cmpxchg_double_slab(struct kmem_cache *s, struct slab *sl, int cpu, void *freelist_old,
		    unsigned long counters_old, void *freelist_new, unsigned long counters_new)
{
#if !defined(ODB_NO_CMPXCHG16)
	if (likely((s->flags & (__CMPXCHG_DOUBLE | __SCHED_POINTS)) == __CMPXCHG_DOUBLE))
		return __cmpxchg_double_slab(s, sl, cpu, freelist_old, counters_old, freelist_new,
					     counters_new);
#endif
	return cmpxchg_double_slab_call(s, sl, cpu, freelist_old, counters_old, freelist_new,
					counters_new);
}

/* Consistent snapshot of freelist+counters for a cmpxchg attempt. */
static inline __attribute__((always_inline)) void
__slab_snapshot(struct kmem_cache *s, struct slab *sl, void **fl, unsigned long *c)
{
	if (s->flags & __CMPXCHG_DOUBLE) {
#if !defined(ODB_NO_CMPXCHG16)
		*fl = slab_freelist(sl);
		*c = slab_counters(sl);
#else
		/* TSan: under the raw bit lock of the emulated cmpxchg, no point */
		__slab_lock(sl);
		*fl = sl->freelist;
		*c = sl->counters;
		__slab_unlock(sl);
#endif
		return;
	}
	if (unlikely(s->flags & __SCHED_POINTS)) {
		slab_snapshot_sched(s, sl, fl, c);
		return;
	}
	/* The kernel reads the two words without the slab lock and lets the
	 * cmpxchg that follows, which compares both under it, catch a torn pair
	 * (a retry).  So does this: every write of them is an atomic store
	 * (slab_set, under the lock), so the loads race with nothing.  (Taking
	 * the lock here cost the 2016 debug flows a locked instruction more for
	 * each object deactivate_slab puts back: issue 16.) */
	*fl = slab_freelist(sl);
	*c = slab_counters(sl);
}

static __attribute__((noinline)) void slab_snapshot_call(struct kmem_cache *s, struct slab *sl,
							 void **fl, unsigned long *c)
{
	__slab_snapshot(s, sl, fl, c);
}

static inline __attribute__((always_inline)) void
slab_snapshot(struct kmem_cache *s, struct slab *sl, void **fl, unsigned long *c)
{
#if !defined(ODB_NO_CMPXCHG16)
	if (likely(s->flags & __CMPXCHG_DOUBLE)) {
		__slab_snapshot(s, sl, fl, c);
		return;
	}
#endif
	slab_snapshot_call(s, sl, fl, c);
}

/* ---- object geometry ------------------------------------------------------------ */
odb_addr_t slab_virt(struct kmem_cache *s, const void *p)
{
	return p ? host_to_virt(s->k, p) : 0;
}

/* Object pointer (after the left red zone) of the slot that holds x. */
void *nearest_obj(struct kmem_cache *s, struct slab *sl, const void *x)
{
	char *base = slab_address(s->k, sl);
	uint64_t off = (uint64_t)((const char *)x - base);   /* (x below the slab: wraps) */
	size_t idx = off >> 32 ? off / s->size : slab_div(s, off);
	size_t objects = SLAB_OBJECTS(slab_counters(sl));

	if (idx >= objects)
		idx = objects ? objects - 1 : 0;   /* 0: a slab being discarded meanwhile */
	return base + idx * s->size + s->red_left_pad;
}

/* ---- slab pages ---------------------------------------------------------------- */
static unsigned int order_objects(unsigned int order, unsigned int size, unsigned int reserved)
{
	return (unsigned int)(((PAGE_SIZE << order) - reserved) / size);
}

static unsigned int get_order(size_t size)
{
	unsigned int order = 0;

	size = (size - 1) >> PAGE_SHIFT;
	while (size) {
		order++;
		size >>= 1;
	}
	return order;
}

static int slab_order(unsigned int size, unsigned int min_objects, unsigned int max_order,
		      unsigned int fract_leftover, unsigned int reserved)
{
	unsigned int order;

	if (order_objects(0, size, reserved) > MAX_OBJS_PER_PAGE)
		return (int)get_order((size_t)size * MAX_OBJS_PER_PAGE) - 1;
	for (order = get_order((size_t)min_objects * size + reserved); order <= max_order; order++) {
		unsigned long sz = PAGE_SIZE << order;
		unsigned long rem = (sz - reserved) % size;
		if (rem <= sz / fract_leftover)
			break;
	}
	return (int)order;
}

static int fls_u(unsigned int x) { return x ? 32 - __builtin_clz(x) : 0; }

static int calculate_order(struct odb_kernel *k, unsigned int size, unsigned int reserved)
{
	unsigned int min_objects = 4 * ((unsigned int)fls_u(k->nr_cpu_ids) + 1);
	unsigned int max_objects = order_objects(PAGE_ALLOC_COSTLY_ORDER, size, reserved);
	int order;

	if (min_objects > max_objects)
		min_objects = max_objects;
	while (min_objects > 1) {
		for (unsigned int fraction = 16; fraction >= 4; fraction /= 2) {
			order = slab_order(size, min_objects, PAGE_ALLOC_COSTLY_ORDER, fraction, reserved);
			if (order <= PAGE_ALLOC_COSTLY_ORDER)
				return order;
		}
		min_objects--;
	}
	order = slab_order(size, 1, PAGE_ALLOC_COSTLY_ORDER, 1, reserved);
	if (order <= PAGE_ALLOC_COSTLY_ORDER)
		return order;
	order = slab_order(size, 1, MAX_PAGE_ORDER, 1, reserved);
	if (order <= MAX_PAGE_ORDER)
		return order;
	return -1;
}

/* Called by calculate_sizes() once s->size is known. */
int slub_set_order(struct kmem_cache *s)
{
	int order = calculate_order(s->k, s->size, s->reserved);

	if (order < 0)
		return -1;
	s->order = (unsigned int)order;
	s->size_shift = (unsigned int)__builtin_ctz(s->size);
	s->size_inv = s->size >> s->size_shift;          /* Newton: 3 bits -> 6 -> ... -> 96 */
	for (int i = 0; i < 5; i++)
		s->size_inv *= 2 - (uint64_t)(s->size >> s->size_shift) * s->size_inv;
	s->size_recip = slab_size_recip(s->size);   /* (size >= 8) */
	s->objects = order_objects(s->order, s->size, s->reserved);
	s->min_order = get_order(s->size);
	s->min_objects = order_objects(s->min_order, s->size, s->reserved);
	if (s->objects > MAX_OBJS_PER_PAGE)
		s->objects = MAX_OBJS_PER_PAGE;
	s->fp_ram = (uintptr_t)s->k->ram;
	s->fp_mask = ((uintptr_t)PAGE_SIZE << s->order) - 1;
	/* any slot that fits in the block: an order-fallback slab (fewer
	 * pages) lies inside such a block and lays its objects out differently */
	s->fp_last = ((uintptr_t)PAGE_SIZE << s->order) - s->size;
	s->fp_base = (uintptr_t)s->k->ram + s->red_left_pad;
	return 0;
}

static bool __should_failslab(struct kmem_cache *s, gfp_t gfp)
{
	struct odb_kernel *k = s->k;
	struct failslab_attr *f = &k->failslab;

	if (gfp & __GFP_NOFAIL)
		return false;
	if (f->ignore_gfp_reclaim && (gfp & __GFP_DIRECT_RECLAIM))
		return false;
	if (f->cache_filter && !(s->flags & SLAB_FAILSLAB))
		return false;
	return should_fail_ex(k, &f->attr, s->object_size, (gfp & __GFP_NOWARN) ? FAULT_NOWARN : 0);
}

/* should_fail's first test (probability 0) inline: no side effect skipped. */
static inline bool should_failslab(struct kmem_cache *s, gfp_t gfp)
{
	if (likely(!READ_ONCE(s->k->failslab.attr.probability)))
		return false;
	return __should_failslab(s, gfp);
}

static void stat_locked(struct kmem_cache *s, int cpu, enum stat_item si);

/* nr_slabs / total_objects of the node.  The modern debug flows (v6.1's
 * c7323a5ad078) update them under list_lock together with the lists, so that
 * validate never counts a slab between the two; the other flows when a slab
 * is allocated and freed. */
static void inc_slabs_node(struct kmem_cache *s, unsigned int objects)
{
	atomic_fetch_add(&s->node.nr_slabs, 1);
	atomic_fetch_add(&s->node.total_objects, objects);
}

static void dec_slabs_node(struct kmem_cache *s, unsigned int objects)
{
	atomic_fetch_sub(&s->node.nr_slabs, 1);
	atomic_fetch_sub(&s->node.total_objects, objects);
}

/* A new slab (ctor run on each object).  *fell_back: the preferred order
 * failed (ORDER_FALLBACK, counted by the caller under the lock its flow
 * counts with: allocate_slab may run with no lock held). */
static struct slab *allocate_slab(struct kmem_cache *s, gfp_t flags, bool *fell_back)
{
	struct odb_kernel *k = s->k;
	unsigned int order = s->order, objects = s->objects;
	gfp_t alloc_gfp = (flags | __GFP_NOWARN) & ~(gfp_t)__GFP_NOFAIL;
	struct page *pg;
	struct slab *sl;
	char *start, *p;

	/* Try the preferred order quietly, then the minimum order (ORDER_FALLBACK). */
	pg = order > s->min_order ? alloc_pages(k, alloc_gfp, order) : NULL;
	*fell_back = false;
	if (!pg) {
		*fell_back = order > s->min_order;
		order = s->min_order;
		objects = s->min_objects;
		pg = alloc_pages(k, flags, order);
		if (!pg)
			return NULL;
	}
	/* The struct slab before PG_slab, field by field: a thread freeing an
	 * arbitrary address (a caller's use-after-free of a slab) may read these
	 * words at any moment, so slab_cache and base never hold anything but a
	 * cache and this page's address (page_alloc leaves priv[] as its last
	 * owner left it; __free_slab keeps the two), and PG_slab is published
	 * last, with release (virt_to_slab reads it first). */
	sl = page_slab(pg);
	WRITE_ONCE(sl->slab_cache, s);
	WRITE_ONCE(sl->base, virt_to_host(k, page_address(k, pg)));
	INIT_LIST_HEAD(&sl->slab_list);
	sl->next = NULL;
	sl->slabs = 0;
	sl->pobjects = 0;
	WRITE_ONCE(sl->freelist, NULL);
	WRITE_ONCE(sl->counters, 0);
	sl->order = order;
	atomic_init(&sl->lock, 0);
	__atomic_fetch_or(&pg->flags, PG_slab, __ATOMIC_RELEASE);
	start = slab_address(k, sl);
	setup_slab_debug(s, sl, start);
	kasan_poison_slab(s, sl);
	/* Build the freelist in address order. */
	for (unsigned int i = 0; i < objects; i++) {
		p = start + (size_t)i * s->size + s->red_left_pad;
		setup_object_debug(s, p);
		kasan_init_slab_obj(s, p);
		if (cache_has_ctor(s))
			kasan_unpoison_new_object(s, p);
		if (s->ctor)
			s->ctor(p);
		else if (s->pctor)
			s->pctor(k, host_to_virt(k, p), s->pctor_ctx);
		if (cache_has_ctor(s))
			kasan_poison_new_object(s, p);
		set_freepointer(s, p, i + 1 < objects ? p + s->size : NULL);
	}
	slab_set(sl, start + s->red_left_pad, SLAB_COUNTERS(objects, objects, 1));
	if (!s->modern_debug)
		inc_slabs_node(s, objects);   /* the modern debug flows count it when they list it */
	return sl;
}

/* uncounted: the caller took the slab off the node's counts already */
static void __free_slab(struct kmem_cache *s, struct slab *sl, bool uncounted)
{
	struct odb_kernel *k = s->k;
	struct page *pg = slab_page(sl);
	unsigned int order = sl->order;

	/* 2016: only with F (before: any debug flag) the discarded slab is checked */
	if (kmem_cache_debug(s) && ((s->flags & SLAB_CONSISTENCY_CHECKS) ||
				    slab_state(k)->path == SLUB_PATH_LOCKED)) {
		char *base = slab_address(k, sl);
		slab_pad_check(s, sl);
		for (unsigned int i = 0; i < SLAB_OBJECTS(sl->counters); i++)
			check_object_inline(s, sl, base + (size_t)i * s->size + s->red_left_pad,
					    SLUB_RED_INACTIVE);
	}
	if (!uncounted)
		dec_slabs_node(s, SLAB_OBJECTS(sl->counters));
	__atomic_fetch_and(&pg->flags, ~PG_slab, __ATOMIC_RELAXED);
	/* not a memset: slab_cache and base stay a cache and this page's address
	 * for a racing reader (see allocate_slab) */
	INIT_LIST_HEAD(&sl->slab_list);
	sl->next = NULL;
	WRITE_ONCE(sl->freelist, NULL);
	WRITE_ONCE(sl->counters, 0);
	__free_pages(k, pg, order);
}

void discard_slab(struct kmem_cache *s, struct slab *sl)
{
	__free_slab(s, sl, false);
}

/* ---- node lists (list_lock held) ------------------------------------------------- */
/* nr_partial is read without the lock in places (as in the kernel). */
static inline unsigned long node_nr_partial(struct kmem_cache_node *n)
{
	return __atomic_load_n(&n->nr_partial, __ATOMIC_RELAXED);
}

static void add_partial(struct kmem_cache_node *n, struct slab *sl, int tail)
{
	__atomic_store_n(&n->nr_partial, n->nr_partial + 1, __ATOMIC_RELAXED);
	if (tail == DEACTIVATE_TO_TAIL_MODE)
		list_add_tail(&sl->slab_list, &n->partial);
	else
		list_add(&sl->slab_list, &n->partial);
}

static void remove_partial(struct kmem_cache_node *n, struct slab *sl)
{
	list_del(&sl->slab_list);
	__atomic_store_n(&n->nr_partial, n->nr_partial - 1, __ATOMIC_RELAXED);
}

static void add_full(struct kmem_cache *s, struct kmem_cache_node *n, struct slab *sl)
{
	if (!(s->flags & SLAB_STORE_USER))
		return;
	list_add(&sl->slab_list, &n->full);
}

static void remove_full(struct kmem_cache *s, struct kmem_cache_node *n, struct slab *sl)
{
	if (!(s->flags & SLAB_STORE_USER))
		return;
	list_del(&sl->slab_list);
}

/* Freeze a node-partial slab: take its whole freelist. list_lock held. */
static void *acquire_slab(struct kmem_cache *s, struct kmem_cache_node *n, struct slab *sl,
			  int mode, int *objects, int cpu)
{
	void *freelist;
	unsigned long counters, nc;

	slab_snapshot(s, sl, &freelist, &counters);
	do {
		unsigned int objs = SLAB_OBJECTS(counters);
		*objects = (int)(objs - SLAB_INUSE(counters));
		nc = mode ? SLAB_COUNTERS(objs, objs, 1) : SLAB_COUNTERS(SLAB_INUSE(counters), objs, 1);
		if (cmpxchg_double_slab(s, sl, cpu, freelist, counters, mode ? NULL : freelist, nc))
			break;
		slab_snapshot(s, sl, &freelist, &counters);
	} while (1);
	remove_partial(n, sl);
	return freelist;
}

static void put_cpu_partial(struct kmem_cache *s, struct slab *sl, int cpu, int drain);

/* get_partial_node: the first slab becomes the cpu slab, more go to the
 * per-CPU partial list until it holds cpu_partial/2 objects. */
static void *get_partial_node(struct kmem_cache *s, struct kmem_cache_cpu *c, int cpu)
{
	struct kmem_cache_node *n = &s->node;
	struct list_head *pos, *tmp;
	void *object = NULL;
	int available = 0, objects;

	if (!node_nr_partial(n))
		return NULL;
	node_lock(s, n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *sl = list_entry(pos, struct slab, slab_list);
		void *t = acquire_slab(s, n, sl, object == NULL, &objects, cpu);

		if (!t)
			break;
		available += objects;
		if (!object) {
			c->slab = sl;
			stat_cpu(s, cpu, ALLOC_FROM_PARTIAL);
			object = t;
		} else {
			put_cpu_partial(s, sl, cpu, 0);
			stat_cpu(s, cpu, CPU_PARTIAL_NODE);
		}
		if (!kmem_cache_has_cpu_partial(s) || available > (int)s->cpu_partial / 2)
			break;
	}
	node_unlock(s, n);
	return object;
}

/* ---- deactivation ---------------------------------------------------------------------- */
static void deactivate_slab(struct kmem_cache *s, struct slab *sl, void *freelist, int cpu)
{
	enum { M_NONE, M_PARTIAL, M_FULL, M_FREE } l = M_NONE, m = M_NONE;
	struct kmem_cache_node *n = &s->node;
	int tail = DEACTIVATE_TO_HEAD_MODE;
	bool lock = false;
	void *nextfree, *old_fl;
	unsigned long old_c, new_c;
	unsigned int walked = 0;

	if (slab_freelist(sl)) {
		stat_cpu(s, cpu, DEACTIVATE_REMOTE_FREES);
		tail = DEACTIVATE_TO_TAIL_MODE;
	}
	/* Stage one: give all but the last object back, one cmpxchg each. */
	/* freelist_corrupted(): the kernel checks each link here under F; odebug
	 * always does (a link followed out of the slab would leave the arena) */
	while (freelist && (nextfree = get_freepointer_checked(s, freelist))) {
		void *prior;
		unsigned long counters;

		/* a freelist longer than the slab is a cycle (a double free the
		 * kernel, without debugging, does not see): cut it, don't spin */
		if (unlikely(++walked > SLAB_OBJECTS(slab_counters(sl)))) {
			nextfree = freelist_corrupted(s, freelist, nextfree);
			break;
		}

		do {
			slab_snapshot_call(s, sl, &prior, &counters);
			set_freepointer(s, freelist, prior);
		} while (!cmpxchg_double_slab_call(s, sl, cpu, prior, counters, freelist,
					      SLAB_COUNTERS(SLAB_INUSE(counters) - 1,
							    SLAB_OBJECTS(counters), 1)));
		freelist = nextfree;
	}
	/* Stage two: unfreeze, and decide where the slab goes. */
redo:
	slab_snapshot_call(s, sl, &old_fl, &old_c);
	{
		unsigned int inuse = SLAB_INUSE(old_c), objs = SLAB_OBJECTS(old_c);
		void *new_fl = old_fl;

		if (freelist) {
			inuse--;
			set_freepointer(s, freelist, old_fl);
			new_fl = freelist;
		}
		new_c = SLAB_COUNTERS(inuse, objs, 0);
		if (!inuse && node_nr_partial(n) >= s->min_partial) {
			m = M_FREE;
		} else if (new_fl) {
			m = M_PARTIAL;
			if (!lock) {
				lock = true;
				node_lock(s, n);
			}
		} else {
			m = M_FULL;
			if (kmem_cache_debug(s) && !lock) {
				lock = true;
				node_lock(s, n);
			}
		}
		if (l != m) {
			if (l == M_PARTIAL)
				remove_partial(n, sl);
			else if (l == M_FULL)
				remove_full(s, n, sl);
			if (m == M_PARTIAL) {
				add_partial(n, sl, tail);
				stat_cpu(s, cpu, tail ? DEACTIVATE_TO_TAIL : DEACTIVATE_TO_HEAD);
			} else if (m == M_FULL) {
				stat_cpu(s, cpu, DEACTIVATE_FULL);
				add_full(s, n, sl);
			}
		}
		l = m;
		if (!cmpxchg_double_slab_call(s, sl, cpu, old_fl, old_c, new_fl, new_c))
			goto redo;
	}
	if (lock)
		node_unlock(s, n);
	if (m == M_FREE) {
		stat_cpu(s, cpu, DEACTIVATE_EMPTY);
		discard_slab(s, sl);
		stat_cpu(s, cpu, FREE_SLAB);
	}
}

/* Move the per-CPU partial slabs to the node list (irq lock of cpu held). */
static void unfreeze_partials(struct kmem_cache *s, struct kmem_cache_cpu *c, int cpu)
{
	struct kmem_cache_node *n = &s->node;
	struct slab *sl, *discard = NULL;
	bool locked = false;

	while ((sl = c->partial)) {
		void *fl;
		unsigned long oc;

		c->partial = sl->next;
		if (!locked) {
			node_lock(s, n);
			locked = true;
		}
		do {
			slab_snapshot(s, sl, &fl, &oc);
		} while (!cmpxchg_double_slab(s, sl, cpu, fl, oc, fl,
					      SLAB_COUNTERS(SLAB_INUSE(oc), SLAB_OBJECTS(oc), 0)));
		if (!SLAB_INUSE(oc) && n->nr_partial >= s->min_partial) {
			sl->next = discard;
			discard = sl;
		} else {
			add_partial(n, sl, DEACTIVATE_TO_TAIL_MODE);
			stat_cpu(s, cpu, FREE_ADD_PARTIAL);
		}
	}
	if (locked)
		node_unlock(s, n);
	while (discard) {
		sl = discard;
		discard = discard->next;
		stat_cpu(s, cpu, DEACTIVATE_EMPTY);
		discard_slab(s, sl);
		stat_cpu(s, cpu, FREE_SLAB);
	}
}

/* Put a frozen slab on this CPU's partial chain; drain when over cpu_partial. */
static void put_cpu_partial(struct kmem_cache *s, struct slab *sl, int cpu, int drain)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	struct slab *old = c->partial;
	int pobjects = 0, slabs = 0;

	if (old) {
		pobjects = old->pobjects;
		slabs = old->slabs;
		if (drain && pobjects > (int)s->cpu_partial) {
			unfreeze_partials(s, c, cpu);
			old = NULL;
			pobjects = 0;
			slabs = 0;
			stat_cpu(s, cpu, CPU_PARTIAL_DRAIN);
		}
	}
	slabs++;
	pobjects += (int)(SLAB_OBJECTS(slab_counters(sl)) - SLAB_INUSE(slab_counters(sl)));
	sl->slabs = slabs;
	sl->pobjects = pobjects;
	sl->next = old;
	c->partial = sl;
	if (!s->cpu_partial)
		unfreeze_partials(s, c, cpu);
}

static void flush_slab(struct kmem_cache *s, struct kmem_cache_cpu *c, int cpu)
{
	stat_cpu(s, cpu, CPUSLAB_FLUSH);
	deactivate_slab(s, c->slab, c->freelist, cpu);
	c->tid++;
	c->slab = NULL;
	c->freelist = NULL;
}

/* flush_all: every vCPU's slab and partials back to the node, visiting one
 * vCPU at a time (odb_cpu_lock); the caller holds no other vCPU's irq lock. */
/* __flush_cpu_slab: vCPU cpu's slab and partials back to the node. */
static void __flush_cpu_slab(struct kmem_cache *s, unsigned int cpu)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	struct odb_cpu_visit v;

	odb_cpu_lock(s->k, cpu, &v);
	if (c->slab)
		flush_slab(s, c, (int)cpu);
	unfreeze_partials(s, c, (int)cpu);
	odb_cpu_unlock(s->k, cpu, &v);
}

void flush_all(struct kmem_cache *s)
{
	for (unsigned int cpu = 0; cpu < s->k->nr_cpu_ids; cpu++)
		__flush_cpu_slab(s, cpu);
}

/* slub_cpu_dead: a vCPU went offline; every cache's per-CPU slabs go back. */
void slub_cpu_dead(struct odb_kernel *k, unsigned int cpu)
{
	struct odb_slab_state *ss = slab_state(k);
	struct list_head *pos;

	mutex_lock_nocb(k, &ss->slab_mutex);
	for (pos = ss->slab_caches.next; pos != &ss->slab_caches; pos = pos->next)
		__flush_cpu_slab(list_entry(pos, struct kmem_cache, list), cpu);
	mutex_unlock_nocb(k, &ss->slab_mutex);
}

/* ---- allocation ------------------------------------------------------------------------ */
static void *get_freelist(struct kmem_cache *s, struct slab *sl, int cpu)
{
	void *fl;
	unsigned long c;

	do {
		slab_snapshot(s, sl, &fl, &c);
	} while (!cmpxchg_double_slab(s, sl, cpu, fl, c, NULL,
				      SLAB_COUNTERS(SLAB_OBJECTS(c), SLAB_OBJECTS(c), fl != NULL)));
	return fl;
}

static void slab_out_of_memory(struct kmem_cache *s, gfp_t gfp)
{
	if (gfp & __GFP_NOWARN)
		return;
	printk(s->k, "SLUB: Unable to allocate memory on node -1, gfp=%#x", gfp);
	printk(s->k, "  cache: %s, object size: %u, buffer size: %u, default order: %u, min order: %u",
	       s->name, s->object_size, s->size, s->order, s->min_order);
	if (s->min_order > 0 && get_order(s->object_size) < s->min_order)
		printk(s->k, "  %s debugging increased min order, use slab_debug=O to disable.", s->name);
	printk(s->k, "  node 0: slabs: %ld, objs: %ld, free: ?",
	       atomic_load(&s->node.nr_slabs), atomic_load(&s->node.total_objects));
}

/* ---- the modern debug flows (v6.2+): no cpu slab, everything under list_lock --- *
 * As in the kernel, these flows run with interrupts on: the vCPU's irq lock is
 * not taken; list_lock is.  (The kernel takes it with spin_lock_irqsave so an
 * interrupt on the same CPU cannot spin on it; odebug's "interrupts" are other
 * threads on the vCPU, which just wait for it.)  Every per-vCPU counter these
 * flows touch is therefore updated under list_lock: the rare paths that have
 * none take it for the count (stat_locked). */
static void stat_locked(struct kmem_cache *s, int cpu, enum stat_item si)
{
	node_lock(s, &s->node);
	stat_cpu(s, cpu, si);
	node_unlock(s, &s->node);
}

static __attribute__((always_inline)) inline
void *alloc_single_from_partial(struct kmem_cache *s, struct kmem_cache_node *n,
			       struct slab *sl, unsigned long addr, unsigned int orig_size)
{
	void *object = slab_freelist(sl), *next;
	unsigned long c = slab_counters(sl);
	unsigned int inuse = SLAB_INUSE(c) + 1, objs = SLAB_OBJECTS(c);

	if (unlikely(!object)) {
		remove_partial(n, sl);       /* a cut chain left it empty: never again */
		return NULL;
	}
	next = get_freepointer_debug(s, object);
	if (unlikely(!next && inuse < objs))
		inuse = objs;   /* a cut chain: the objects behind the cut count as used */
	slab_set(sl, next, SLAB_COUNTERS(inuse, objs, 0));
	if (s->debug_init_only) {
		init_object(s, object, SLUB_RED_ACTIVE);   /* all alloc_debug_processing does here */
	} else if (!alloc_debug_processing(s, sl, object, addr, orig_size)) {
		remove_partial(n, sl);       /* "Marking all objects used": never again */
		return NULL;
	}
	if (inuse == objs) {
		remove_partial(n, sl);
		add_full(s, n, sl);
	}
	return object;
}

/* alloc_single_from_new_slab (and the count of a slow path that found no
 * partial slab: counted is false then). */
static __attribute__((noinline))
void *alloc_single_from_new_slab(struct kmem_cache *s, gfp_t gfp, unsigned long addr, int cpu,
				 unsigned int orig_size, bool counted)
{
	struct kmem_cache_node *n = &s->node;
	bool fell_back;
	struct slab *sl = allocate_slab(s, gfp, &fell_back);
	void *object;

	if (fell_back)
		stat_locked(s, cpu, ORDER_FALLBACK);   /* no irq lock held here */
	if (!sl) {
		if (!counted)
			stat_locked(s, cpu, ALLOC_SLOWPATH);
		slab_out_of_memory(s, gfp);
		return NULL;
	}
	object = slab_freelist(sl);
	{
		void *next = get_freepointer_debug(s, object);
		unsigned int objs = SLAB_OBJECTS(sl->counters);

		/* a chain cut at its first link: the rest counts as used */
		slab_set(sl, next, SLAB_COUNTERS(next ? 1 : objs, objs, 0));
	}
	if (!alloc_debug_processing(s, sl, object, addr, orig_size)) {
		/* not expected on a new slab; it is left off every list (the
		 * kernel then counts it nowhere: odebug counts it, so that the
		 * node's books still add up with its pages) */
		node_lock(s, n);
		if (!counted)
			stat_cpu(s, cpu, ALLOC_SLOWPATH);
		stat_cpu(s, cpu, ALLOC_SLAB);
		inc_slabs_node(s, SLAB_OBJECTS(sl->counters));
		node_unlock(s, n);
		return NULL;
	}
	node_lock(s, n);
	if (!counted)
		stat_cpu(s, cpu, ALLOC_SLOWPATH);
	stat_cpu(s, cpu, ALLOC_SLAB);
	inc_slabs_node(s, SLAB_OBJECTS(sl->counters));
	if (SLAB_INUSE(sl->counters) == SLAB_OBJECTS(sl->counters))
		add_full(s, n, sl);      /* one object per slab, or a cut chain */
	else
		add_partial(n, sl, DEACTIVATE_TO_HEAD_MODE);
	node_unlock(s, n);
	return object;
}

/* get_partial_node's debug loop, list_lock held: alloc_single_from_partial
 * on each partial slab in turn (one that fails its checks leaves the list). */
static __attribute__((noinline))
void *get_partial_node_debug(struct kmem_cache *s, struct kmem_cache_node *n, unsigned long addr,
			     unsigned int orig_size)
{
	struct list_head *pos, *tmp;
	void *object;

	list_for_each_safe(pos, tmp, &n->partial) {
		object = alloc_single_from_partial(s, n, list_entry(pos, struct slab, slab_list),
						   addr, orig_size);
		if (object)
			return object;
	}
	return NULL;
}

/* ___slab_alloc's debug branch: get_partial_node with alloc_single_from_partial
 * on each partial slab in turn, else a new slab. */
static __attribute__((always_inline)) inline
void *alloc_debug_modern(struct kmem_cache *s, gfp_t gfp, unsigned long addr, struct odb_task *t,
			 unsigned int orig_size)
{
	struct kmem_cache_node *n = &s->node;
	int cpu = smp_processor_id_task(t);
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	void *object = NULL;
	struct slab *sl;

	if (!node_nr_partial(n))
		return alloc_single_from_new_slab(s, gfp, addr, cpu, orig_size, false);
	odb_bspin_lock(&n->list_lock, t->slot);
	stat_c(c, ALLOC_SLOWPATH);
	if (likely(s->debug_init_only) && !list_empty(&n->partial)) {
		/* the first partial slab: alloc_single_from_partial cannot fail here */
		sl = list_entry(n->partial.next, struct slab, slab_list);
		object = alloc_single_from_partial(s, n, sl, addr, orig_size);
	} else {
		object = get_partial_node_debug(s, n, addr, orig_size);
	}
	if (object)
		stat_c(c, ALLOC_FROM_PARTIAL);
	odb_bspin_unlock(&n->list_lock, t->slot);
	if (object)
		return object;
	return alloc_single_from_new_slab(s, gfp, addr, cpu, orig_size, true);
}

static __attribute__((always_inline)) inline
void free_to_partial_list(struct kmem_cache *s, struct slab *sl, void *head, void *tail,
			  int cnt, unsigned long addr, struct odb_task *t)
{
	struct kmem_cache_node *n = &s->node;
	struct kmem_cache_cpu *cc = &s->cpu_slab[smp_processor_id_task(t)];
	struct slab *slab_free = NULL;
	bool unused;
	void *prior;
	unsigned long c;
	unsigned int inuse;

	odb_bspin_lock(&n->list_lock, t->slot);
	stat_c(cc, FREE_SLOWPATH);
	if (s->debug_init_only && head == tail && cnt == 1) {
		init_object(s, head, SLUB_RED_INACTIVE);   /* all free_debug_processing does here */
	} else if (!free_debug_processing(s, sl, head, tail, cnt, addr, &unused)) {
		odb_bspin_unlock(&n->list_lock, t->slot);
		return;
	}
	prior = slab_freelist(sl);
	c = slab_counters(sl);
	set_freepointer(s, tail, prior);
	inuse = SLAB_INUSE(c) - (unsigned int)cnt;
	slab_set(sl, head, SLAB_COUNTERS(inuse, SLAB_OBJECTS(c), 0));
	if (!inuse && n->nr_partial >= s->min_partial) {
		if (prior)
			remove_partial(n, sl);
		else
			remove_full(s, n, sl);
		dec_slabs_node(s, SLAB_OBJECTS(c));   /* with the list, under list_lock */
		slab_free = sl;
		stat_c(cc, FREE_SLAB);
	} else if (!prior) {
		remove_full(s, n, sl);
		add_partial(n, sl, DEACTIVATE_TO_TAIL_MODE);
		stat_c(cc, FREE_ADD_PARTIAL);
	}
	odb_bspin_unlock(&n->list_lock, t->slot);
	if (slab_free)
		__free_slab(s, slab_free, true);
}

/* ---- the modern debug flows' common case, inline ------------------------------------ *
 * A cache with s->modern_fast (modern flows, nothing to write but the poison,
 * objects of 16..64 bytes so the poisoning is four stores, no KASAN, no
 * debug-objects check, no T): the usual case of alloc_debug_modern and of
 * free_to_partial_list -- list_lock taken through its bias, a partial slab
 * that stays partial -- in the public entries themselves, with no call.
 * Anything else (list_lock not biased to the task, no partial slab, a slab
 * that fills or empties or was full, failslab on) is left untouched for the
 * full flows, which do the same steps and the rest. */
/* Their common entry: the task by its slot and list_lock through its bias. */
static __attribute__((always_inline)) inline
bool modern_fast_lock(struct kmem_cache *s, struct odb_task **t)
{
	struct kmem_cache_node *n = &s->node;

	return likely(s->modern_fast) && likely(odb_current_fast(s->k, t)) &&
	       likely(odb_bias_enter(&n->list_lock.bias, (*t)->slot, ODB_BIAS_NODE, &n->list_lock));
}

static __attribute__((always_inline)) inline
bool alloc_modern_fast(struct kmem_cache *s, void **ret)
{
	void *next;
	struct kmem_cache_node *n = &s->node;
	struct kmem_cache_cpu *cc;
	struct odb_task *t;
	struct slab *sl;
	void *object;
	unsigned long c;
	unsigned int inuse;

	if (unlikely(READ_ONCE(s->k->failslab.attr.probability) || !modern_fast_lock(s, &t)))
		return false;
	if (unlikely(list_empty(&n->partial)))
		goto out;
	sl = list_entry(n->partial.next, struct slab, slab_list);
	object = slab_freelist(sl);
	c = slab_counters(sl);
	inuse = SLAB_INUSE(c) + 1;
	if (unlikely(!object || inuse >= SLAB_OBJECTS(c)))
		goto out;   /* the slab fills: to the full list in the full flow */
	next = get_freepointer(s, object);
	if (unlikely(!next || !freeptr_valid(s, object, next)))
		goto out;   /* the last object, or a bad link the full flow reports */
	slab_set(sl, next, SLAB_COUNTERS(inuse, SLAB_OBJECTS(c), 0));
	poison_object_16_64(object, s->object_size);   /* init_object(SLUB_RED_ACTIVE) */
	cc = &s->cpu_slab[t->home_cpu];
	stat_c(cc, ALLOC_SLOWPATH);
	stat_c(cc, ALLOC_FROM_PARTIAL);
	odb_bias_exit(t->slot, ODB_BIAS_NODE);
	*ret = object;
	return true;
out:
	odb_bias_exit(t->slot, ODB_BIAS_NODE);
	return false;
}

static __attribute__((always_inline)) inline
bool free_modern_fast(struct kmem_cache *s, struct slab *sl, void *x)
{
	struct odb_task *t;
	void *prior;
	unsigned long c;

	if (unlikely(!modern_fast_lock(s, &t)))
		return false;
	prior = slab_freelist(sl);
	c = slab_counters(sl);
	if (unlikely(SLAB_INUSE(c) <= 1 || !prior)) {
		odb_bias_exit(t->slot, ODB_BIAS_NODE);
		return false;   /* the slab empties or was full: list moves in the full flow */
	}
	poison_object_16_64(x, s->object_size);   /* init_object(SLUB_RED_INACTIVE) */
	set_freepointer(s, x, prior);
	slab_set(sl, x, SLAB_COUNTERS(SLAB_INUSE(c) - 1, SLAB_OBJECTS(c), 0));
	stat_c(&s->cpu_slab[t->home_cpu], FREE_SLOWPATH);
	odb_bias_exit(t->slot, ODB_BIAS_NODE);
	return true;
}

/* The modern debug caches' alloc entry: the common case inline, else the
 * full flow (a tail call: a frame of its own only there). */
static __attribute__((noinline))
void *slab_alloc_modern(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size);
static __attribute__((noinline, optimize("omit-frame-pointer")))
void *slab_alloc_modern_entry(struct kmem_cache *s, gfp_t gfp, unsigned long addr,
			      unsigned int orig_size)
{
	void *object;

	if (unlikely(!alloc_modern_fast(s, &object)))
		return slab_alloc_modern(s, gfp, addr, orig_size);
	if (unlikely(gfp & __GFP_ZERO))
		memset(object, 0, s->object_size);
	return object;
}

/*
 * new_slab from ___slab_alloc: allocate_slab with the vCPU's irq lock dropped,
 * as the kernel runs it with interrupts enabled (2016: local_irq_enable in
 * allocate_slab for a gfp that may block; modern kernels call new_slab with
 * the cpu slab's lock released), so a constructor never runs under it.
 * Deliberate deviation: a cache with a Python constructor drops it for an
 * atomic gfp too -- Python code never runs under a core lock (issue 18: its
 * interpreter lock and the vCPU's would deadlock with a thread in kfree).
 * Another task of the vCPU may have installed a cpu slab meanwhile: it is
 * flushed, as new_slab_objects does after new_slab.  Not dropped when the
 * section is nested (an exclusive binding, an outer local_irq_save).
 */
static struct slab *new_slab_irqs_on(struct kmem_cache *s, gfp_t gfp, int cpu, struct odb_task *t)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	bool fell_back;
	struct slab *sl;

	if (!(gfpflags_allow_blocking(gfp) || s->pctor) || t->irq_depth != 1 || t->exclusive ||
	    t->irq_cpu != cpu) {
		sl = allocate_slab(s, gfp, &fell_back);
	} else {
		odb_irq_restore_task(s->k, t, (unsigned long)cpu + 1);
		sl = allocate_slab(s, gfp, &fell_back);
		(void)odb_irq_save_task(s->k, t);   /* the task's own vCPU again: cpu */
		if (c->slab)
			flush_slab(s, c, cpu);
	}
	if (fell_back)
		stat_cpu(s, cpu, ORDER_FALLBACK);
	return sl;
}

/* ___slab_alloc of the 2016 and older flows: irq lock of cpu held (the
 * task's; dropped around a new slab's allocation).  (The modern debug flows
 * take alloc_debug_modern from slab_alloc_modern.) */
static __attribute__((noinline))
void *___slab_alloc(struct kmem_cache *s, gfp_t gfp, unsigned long addr, int cpu,
		    unsigned int orig_size, struct odb_task *t)
{
	struct kmem_cache_cpu *c = &s->cpu_slab[cpu];
	void *freelist;
	struct slab *sl;

	stat_cpu(s, cpu, ALLOC_SLOWPATH);
	sl = c->slab;
	if (!sl)
		goto new_slab;
redo:
	freelist = c->freelist;
	if (freelist)
		goto load_freelist;
	freelist = get_freelist(s, sl, cpu);
	if (!freelist) {
		c->slab = NULL;
		stat_cpu(s, cpu, DEACTIVATE_BYPASS);
		goto new_slab;
	}
	stat_cpu(s, cpu, ALLOC_REFILL);
load_freelist:
	c->freelist = get_freepointer_checked(s, freelist);
	c->tid++;
	return freelist;

new_slab:
	if (c->partial) {
		sl = c->slab = c->partial;
		c->partial = sl->next;
		stat_cpu(s, cpu, CPU_PARTIAL_ALLOC);
		c->freelist = NULL;
		goto redo;
	}
	freelist = get_partial_node(s, c, cpu);
	if (!freelist) {
		sl = new_slab_irqs_on(s, gfp, cpu, t);
		if (!sl) {
			slab_out_of_memory(s, gfp);
			return NULL;
		}
		stat_cpu(s, cpu, ALLOC_SLAB);
		freelist = slab_freelist(sl);
		slab_set(sl, NULL, SLAB_COUNTERS(SLAB_OBJECTS(sl->counters), SLAB_OBJECTS(sl->counters), 1));
		c->slab = sl;
	}
	sl = c->slab;
	if (!kmem_cache_debug(s))
		goto load_freelist;
	/* Only entered in the debug case */
	if (!alloc_debug_processing(s, sl, freelist, addr, orig_size)) {
		/* "Marking all objects used": hand the slab back, take another */
		deactivate_slab(s, sl, NULL, cpu);
		c->slab = NULL;
		c->freelist = NULL;
		goto new_slab;
	}
	deactivate_slab(s, sl, get_freepointer_checked(s, freelist), cpu);
	c->slab = NULL;
	c->freelist = NULL;
	return freelist;
}

/* slab_alloc_node for a debug cache on the modern flows: failslab, then
 * ___slab_alloc's debug branch (no cpu slab, straight to the partial list,
 * irqs on), __GFP_ZERO, KASAN's post-alloc hook. */
static __attribute__((noinline))
void *slab_alloc_modern(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size)
{
	struct odb_task *t;
	void *object;

	if (unlikely(should_failslab(s, gfp)))
		return NULL;
	t = odb_current(s->k);
	if (unlikely(!t))
		return NULL;
	object = alloc_debug_modern(s, gfp, addr, t, orig_size);
	if (unlikely(gfp & __GFP_ZERO) && object)
		memset(object, 0, slub_debug_orig_size(s) ? orig_size : s->object_size);
	return s->kasan ? kasan_slab_alloc(s, object, gfp) : object;
}

/* slab_alloc_node for every cache but the modern debug ones (slab_alloc
 * sends those to slab_alloc_modern): failslab, the irq-off section (per-vCPU
 * freelist or ___slab_alloc), __GFP_ZERO, then KASAN's post-alloc hook. */
static __attribute__((noinline))
void *slab_alloc_slow(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size)
{
	struct odb_kernel *k = s->k;
	unsigned long flags;
	struct kmem_cache_cpu *c;
	void *object;
	int cpu;

	struct odb_task *t;

	if (unlikely(should_failslab(s, gfp)))
		return NULL;
	t = odb_current(k);
	if (unlikely(!t))
		return NULL;
	flags = odb_irq_save_task(k, t);
	cpu = (int)flags - 1;
	c = &s->cpu_slab[cpu];
	object = c->freelist;
	if (unlikely(!object || kmem_cache_debug(s))) {
		object = ___slab_alloc(s, gfp, addr, cpu, orig_size, t);
	} else {
		c->freelist = get_freepointer_checked(s, object);
		c->tid++;
		stat_cpu(s, cpu, ALLOC_FASTPATH);
	}
	odb_irq_restore_task(k, t, flags);
	if (unlikely(gfp & __GFP_ZERO) && object)
		memset(object, 0, slub_debug_orig_size(s) ? orig_size : s->object_size);
	return s->kasan ? kasan_slab_alloc(s, object, gfp) : object;   /* slab_post_alloc_hook */
}

/* The public fast entries are leaves or tail-call their slow paths: no frame
 * of their own to chain (the slow path they jump to keeps the caller's frame
 * chain intact for the stack depot, and its return address is the caller's). */
#define SLAB_FAST_ENTRY __attribute__((optimize("omit-frame-pointer")))

/* The fast paths' irq-off section for the calling thread's task when its task
 * slot knows it: the vCPU lock taken by one try.  false (slot miss, lock busy):
 * the caller takes its slow path, which looks the task up, waits for the lock
 * and does the whole job.  Keeping every call out of the fast paths leaves
 * them without a stack frame to set up. */
static __attribute__((always_inline)) inline
bool slab_fast_irq_save(struct odb_kernel *k, struct odb_irq_fast *f)
{
	struct odb_task *t;

	return odb_current_fast(k, &t) && odb_irq_fast_try(t, f);
}

/*
 * slab_alloc's fast path for a cache no hook acts on (s->fastpath: no debug
 * flag, no T, no KASAN) while failslab is off (probability 0 short-circuits
 * should_fail): pop the per-vCPU freelist.  false: nothing was done, the
 * caller runs slab_alloc_slow (an empty freelist or a busy vCPU included, as
 * the kernel's fast path falls back to the slow path when its cmpxchg fails).
 */
static __attribute__((always_inline)) inline
bool slab_alloc_fast(struct kmem_cache *s, gfp_t gfp, void **ret)
{
	struct odb_kernel *k = s->k;
	struct kmem_cache_cpu *c;
	struct odb_irq_fast f;
	void *object, *next;

	if (unlikely(!s->fastpath || READ_ONCE(k->failslab.attr.probability)))
		return false;
	if (unlikely(!slab_fast_irq_save(k, &f)))
		return false;
	c = &s->cpu_slab[f.cpu];
	object = c->freelist;
	if (unlikely(!object)) {
		odb_irq_fast_restore(&f);
		return false;
	}
	next = get_freepointer(s, object);
	if (unlikely(!freeptr_valid(s, object, next))) {
		odb_irq_fast_restore(&f);
		return false;   /* the slow path reports and cuts the chain */
	}
	c->freelist = next;
	c->tid++;
	stat_c(c, ALLOC_FASTPATH);
	odb_irq_fast_restore(&f);
	*ret = object;
	return true;
}

static __attribute__((always_inline)) inline
void *slab_alloc(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size)
{
	void *object;

	if (unlikely(!slab_alloc_fast(s, gfp, &object))) {
		if (s->modern_debug)
			return slab_alloc_modern_entry(s, gfp, addr, orig_size);
		return slab_alloc_slow(s, gfp, addr, orig_size);
	}
	if (unlikely(gfp & __GFP_ZERO))
		return memset(object, 0, s->object_size);
	return object;
}

void *slab_alloc_public(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size)
{
	return slab_alloc(s, gfp, addr, orig_size);
}

SLAB_FAST_ENTRY
void *kmem_cache_alloc(struct odb_kernel *k, struct kmem_cache *s, gfp_t gfp)
{
	return slab_alloc(s, gfp, (unsigned long)__builtin_return_address(0), s->object_size);
}

/* ---- free ------------------------------------------------------------------------------ */
/* __slab_free of the 2016 and older flows (the modern debug flows free through
 * free_to_partial_list, from do_slab_free, without the irq-off section). */
static __attribute__((noinline))
void __slab_free(struct kmem_cache *s, struct slab *sl, void *head, void *tail, int cnt,
		 unsigned long addr, int cpu)
{
	struct kmem_cache_node *n = &s->node;
	bool n_locked = false, was_frozen;
	void *prior;
	unsigned long counters, nc;
	unsigned int inuse;
	bool frozen;

	stat_cpu(s, cpu, FREE_SLOWPATH);
	if (kmem_cache_debug(s) && !free_debug_processing(s, sl, head, tail, cnt, addr, &n_locked))
		return;
	do {
		if (n_locked) {
			/* pre-2016: free_debug_processing returned with list_lock held */
			node_unlock(s, n);
			n_locked = false;
		}
		slab_snapshot(s, sl, &prior, &counters);
		set_freepointer(s, tail, prior);
		was_frozen = SLAB_FROZEN(counters);
		frozen = was_frozen;
		inuse = (SLAB_INUSE(counters) - (unsigned int)cnt) & 0xffffu;   /* a 16-bit field */
		if ((!inuse || !prior) && !was_frozen) {
			if (kmem_cache_has_cpu_partial(s) && !prior) {
				frozen = true;      /* goes to the per-CPU partial list */
			} else {
				node_lock(s, n);
				n_locked = true;
			}
		}
		nc = SLAB_COUNTERS(inuse, SLAB_OBJECTS(counters), frozen);
	} while (!cmpxchg_double_slab(s, sl, cpu, prior, counters, head, nc));

	if (!n_locked) {
		if (frozen && !was_frozen) {
			put_cpu_partial(s, sl, cpu, 1);
			stat_cpu(s, cpu, CPU_PARTIAL_FREE);
		}
		if (was_frozen)
			stat_cpu(s, cpu, FREE_FROZEN);
		return;
	}
	if (!inuse && n->nr_partial >= s->min_partial)
		goto slab_empty;
	if (!kmem_cache_has_cpu_partial(s) && !prior) {
		remove_full(s, n, sl);
		add_partial(n, sl, DEACTIVATE_TO_TAIL_MODE);
		stat_cpu(s, cpu, FREE_ADD_PARTIAL);
	}
	node_unlock(s, n);
	return;
slab_empty:
	if (prior) {
		remove_partial(n, sl);
		stat_cpu(s, cpu, FREE_REMOVE_PARTIAL);
	} else {
		remove_full(s, n, sl);
	}
	node_unlock(s, n);
	stat_cpu(s, cpu, FREE_SLAB);
	discard_slab(s, sl);
}

/* The free fast path's push of head..tail onto the vCPU's freelist (irqs off
 * on that vCPU; its slab is theirs). */
static inline __attribute__((always_inline)) void
cpu_freelist_push(struct kmem_cache *s, struct kmem_cache_cpu *c, void *head, void *tail)
{
	set_freepointer(s, tail, c->freelist);
	c->freelist = head;
	c->tid++;
	stat_c(c, FREE_FASTPATH);
}

/* The slab free path proper (after the free hooks): do_slab_free.  The irq-off
 * section pushes onto the per-vCPU freelist when the object is of the vCPU's
 * slab, else runs __slab_free in the same section. */
static __attribute__((always_inline)) inline
void do_slab_free_inline(struct kmem_cache *s, struct slab *sl, void *head, void *tail, int cnt,
			 unsigned long addr)
{
	struct kmem_cache_cpu *c;
	struct odb_task *t = odb_current(s->k);
	struct odb_irq_fast f;

	if (unlikely(!t))
		return;   /* no task memory: the object stays allocated (leaks, nothing breaks) */
	if (s->modern_debug) {
		/* never a cpu slab: __slab_free -> free_to_partial_list, irqs on */
		free_to_partial_list(s, sl, head, tail, cnt, addr, t);
		return;
	}
	odb_irq_fast_save(t, &f);
	c = &s->cpu_slab[f.cpu];
	if (likely(sl == c->slab)) {
		cpu_freelist_push(s, c, head, tail);
	} else {
		odb_irq_nest(t, f.cpu);
		__slab_free(s, sl, head, tail, cnt, addr, f.cpu);
		odb_irq_unnest(t);
	}
	odb_irq_fast_release(t, &f);
}

void do_slab_free(struct kmem_cache *s, struct slab *sl, void *head, void *tail, int cnt,
		  unsigned long addr)
{
	do_slab_free_inline(s, sl, head, tail, cnt, addr);
}

/*
 * __slab_free of objs[0..m), freed one after the other, as one cmpxchg: only
 * while none of those frees would move the slab -- the slab is frozen, or has
 * free objects and is not emptied before the last of them -- so that each one
 * alone would have been a plain freelist push with FREE_SLOWPATH (and
 * FREE_FROZEN on a frozen slab).  Returns how many it freed: 0 when the first
 * free would move the slab (prior NULL on an unfrozen slab); one fewer than m
 * when the last would empty an unfrozen slab.  The caller frees those alone.
 */
static unsigned int __slab_free_plain(struct kmem_cache *s, struct slab *sl, void *const *objs,
				      unsigned int m, int cpu)
{
	void *prior;
	unsigned long counters, nc;
	unsigned int inuse, j;
	bool frozen;

	for (;;) {
		slab_snapshot(s, sl, &prior, &counters);
		frozen = SLAB_FROZEN(counters);
		inuse = SLAB_INUSE(counters);
		if ((!prior && !frozen) || inuse < m)
			return 0;
		if (inuse == m && !frozen && --m == 0)
			return 0;
		/* each object's free pointer as the single frees would leave it:
		 * the one freed before it, the first's the old freelist */
		set_freepointer(s, objs[0], prior);
		for (j = 1; j < m; j++)
			set_freepointer(s, objs[j], objs[j - 1]);
		nc = SLAB_COUNTERS(inuse - m, SLAB_OBJECTS(counters), frozen);
		if (cmpxchg_double_slab(s, sl, cpu, prior, counters, objs[m - 1], nc))
			break;
	}
	for (j = 0; j < m; j++) {
		stat_cpu(s, cpu, FREE_SLOWPATH);
		if (frozen)
			stat_cpu(s, cpu, FREE_FROZEN);
	}
	atomic_fetch_add_explicit(&s->free_run_objs[1], m, memory_order_relaxed);
	return m;
}

void do_slab_free_run(struct kmem_cache *s, struct slab *sl, void *const *objs, unsigned int n,
		      unsigned long addr)
{
	struct kmem_cache_cpu *c;
	struct odb_task *t = odb_current(s->k);
	struct odb_irq_fast f;
	unsigned int i, done;

	if (unlikely(!t))
		return;   /* as do_slab_free: the objects stay allocated */
	odb_irq_fast_save(t, &f);
	c = &s->cpu_slab[f.cpu];
	if (sl == c->slab) {
		/* (nothing below changes the vCPU's slab) */
		for (i = 0; i < n; i++)
			cpu_freelist_push(s, c, objs[i], objs[i]);
		if (n > 1)
			atomic_fetch_add_explicit(&s->free_run_objs[0], n, memory_order_relaxed);
	} else {
		odb_irq_nest(t, f.cpu);
		for (i = 0; i < n; i += done) {
			done = n - i > 1 ? __slab_free_plain(s, sl, objs + i, n - i, f.cpu) : 0;
			if (!done) {
				/* a free that moves the slab (or the last one): the kernel's */
				__slab_free(s, sl, objs[i], objs[i], 1, addr, f.cpu);
				done = 1;
			}
		}
		odb_irq_unnest(t);
	}
	odb_irq_fast_release(t, &f);
}

/*
 * slab_free_hook: debugobjects' range check, KASAN's double-free check, then
 * (CONFIG_SLUB_RCU_DEBUG, a SLAB_TYPESAFE_BY_RCU cache, not yet after its
 * grace period) the free is deferred by an RCU grace period, else KASAN
 * poisons and may quarantine.  false: the slab must not free the object now
 * (quarantined, deferred, or a reported double free).
 */
static inline bool slab_free_hook(struct kmem_cache *s, void *x, unsigned long addr,
				  bool after_rcu_delay)
{
	bool still_accessible = (s->flags & SLAB_TYPESAFE_BY_RCU) && !after_rcu_delay;

	if (s->check_obj_freed && debug_objects_enabled_fast(s->k))
		debug_check_no_obj_freed(s->k, x, s->object_size);
	if (s->kasan && kasan_slab_pre_free(s, x, addr))
		return false;
	if (unlikely(s->rcu_debug) && still_accessible && slab_free_defer_rcu_debug(s, x))
		return false;
	return !(s->kasan && kasan_slab_free(s, x, still_accessible));
}

/*
 * CONFIG_SLUB_RCU_DEBUG: a SLAB_TYPESAFE_BY_RCU object is really freed (and
 * poisoned by KASAN) only after an RCU grace period, so that a use after that
 * is a slab-use-after-free.  The deferral needs a small record (struct
 * rcu_delayed_free: an rcu_head and the object pointer, 24 bytes), a real
 * kmalloc(GFP_NOWAIT) as in the kernel: when it fails the object is freed at
 * once, unpoisoned.  The object itself is remembered in host memory (rcu.c),
 * never read back from the record.  true: deferred.
 */
bool slab_free_defer_rcu_debug(struct kmem_cache *s, void *x)
{
	struct odb_kernel *k = s->k;
	odb_addr_t obj = host_to_virt(k, x);
	void *rec = kmalloc(k, SLUB_RCU_DELAYED_FREE_SIZE, GFP_NOWAIT);

	if (!rec)
		return false;
	/* "Let KASAN track our call stack as a related work creation" */
	kasan_record_aux_stack(k, x);
	memset(rec, 0, SLUB_RCU_DELAYED_FREE_SIZE);
	memcpy((char *)rec + 16, &obj, sizeof(obj));   /* ->object, for the eye only */
	if (call_rcu_slab_free(k, x, rec)) {
		kfree(k, rec);
		return false;
	}
	return true;
}

/* The RCU callback of a deferred free (rcu.c calls it after the grace period). */
void slab_free_after_rcu_debug(struct odb_kernel *k, void *object, void *rec)
{
	unsigned long addr = (unsigned long)__builtin_return_address(0);
	struct kmem_cache *s;
	struct slab *sl;

	kfree(k, rec);    /* first: whatever happens to the object, the record goes */
	/* find the object and the cache again */
	sl = virt_to_slab(k, object);
	if (!sl) {
		odb_warn(k, "slub", "WARNING in slab_free_after_rcu_debug", NULL, host_to_virt(k, object),
			 NULL, NULL, "mm/slub.c", __LINE__, (const void *)slab_free_after_rcu_debug);
		return;
	}
	s = sl->slab_cache;
	if (!(s->flags & SLAB_TYPESAFE_BY_RCU)) {
		odb_warn(k, "slub", "WARNING in slab_free_after_rcu_debug", s->name,
			 host_to_virt(k, object), NULL, NULL, "mm/slub.c", __LINE__,
			 (const void *)slab_free_after_rcu_debug);
		return;
	}
	/* resume freeing */
	if (slab_free_hook(s, object, addr, true))
		do_slab_free(s, sl, object, object, 1, addr);
}

/*
 * cache_from_obj + the checks odebug always makes before touching a slab's
 * metadata (deliberate deviation: the kernel without F would corrupt its
 * freelist on these; odebug reports them and frees nothing, so a report never
 * corrupts the allocator).  Returns the slab to free into, or NULL.
 */
static inline __attribute__((always_inline))
struct slab *free_target(struct odb_kernel *k, struct kmem_cache **sp, struct slab *sl, void *x,
			 const char *fn, unsigned long addr)
{
	struct kmem_cache *s = *sp;

	if (!sl) {
		slab_bad_free(k, "no slab for object", "SLUB %s: no slab for object 0x%llx.",
			      s ? s->name : "<none>", (unsigned long long)host_to_virt(k, x));
		return NULL;
	}
	if (s && sl->slab_cache != s) {
		slab_bad_free(k, "Wrong slab cache", "%s: Wrong slab cache. %s but object is from %s",
			      fn, s->name, sl->slab_cache->name);
		*sp = s = sl->slab_cache;   /* modern cache_from_obj: free into the object's cache */
	}
	s = *sp = sl->slab_cache;
	/* KASAN's invalid-free check comes first (from its free hook) */
	if (s->kasan && kasan_slab_invalid_free(s, sl, x, addr))
		return NULL;
	if (!check_valid_pointer(s, sl, x)) {
		slab_err(s, sl, "Invalid object pointer", "Invalid object pointer 0x%llx",
			 (unsigned long long)host_to_virt(k, x));
		return NULL;
	}
	return sl;
}

/* slab_free once x is known to be an object of s: T, the hooks, do_slab_free. */
static __attribute__((noinline))
void slab_free_checked(struct kmem_cache *s, struct slab *sl, void *x, unsigned long addr)
{
	if (s->flags & SLAB_TRACE && !kmem_cache_debug(s))
		trace(s, sl, x, 0);
	if (slab_free_hook(s, x, addr, false))
		do_slab_free_inline(s, sl, x, x, 1, addr);
}

/* A debug (or T) cache's free of a valid object: the modern flows' common
 * case inline, else slab_free_checked. */
static __attribute__((noinline, optimize("omit-frame-pointer")))
void slab_free_debug_entry(struct kmem_cache *s, struct slab *sl, void *x, unsigned long addr)
{
	if (likely(free_modern_fast(s, sl, x)))
		return;
	slab_free_checked(s, sl, x, addr);
}

/* slab_free with the checks, T and the hooks (free_target may pick another
 * cache); sl is virt_to_slab(x). */
static __attribute__((noinline))
void slab_free_slow(struct odb_kernel *k, struct kmem_cache *s, struct slab *sl, void *x,
		    const char *fn, unsigned long addr)
{
	sl = free_target(k, &s, sl, x, fn, addr);

	if (!sl)
		return;
	slab_free_checked(s, sl, x, addr);
}

/* slab_free's fast path: an object of s (else the slow path reports), a cache
 * no hook acts on (s->fastpath, the debug-objects check off or not for this
 * cache), the object of the vCPU's slab: push it on the per-vCPU freelist.
 * A valid object of a debug cache goes straight to slab_free_checked; anything
 * else, a busy vCPU included: slab_free_slow does the whole job. */
static __attribute__((always_inline)) inline
void slab_free(struct odb_kernel *k, struct kmem_cache *s, struct slab *sl, void *x,
	       const char *fn, unsigned long addr)
{
	struct kmem_cache_cpu *c;
	struct odb_irq_fast f;

	if (unlikely(!sl || !s || sl->slab_cache != s))
		goto slow;   /* reports */
	if (unlikely(!s->fastpath)) {
		if (s->kasan || !check_valid_pointer(s, sl, x))
			goto slow;   /* KASAN's invalid-free check comes first; reports */
		slab_free_debug_entry(s, sl, x, addr);   /* a debug or T cache: its checks come later */
		return;
	}
	if (unlikely(!check_valid_pointer(s, sl, x)))
		goto slow;
	if (unlikely(!s->fastfree))
		goto slow;   /* debug_check_no_obj_freed */
	if (unlikely(!slab_fast_irq_save(k, &f)))
		goto slow;
	c = &s->cpu_slab[f.cpu];
	if (unlikely(sl != c->slab)) {
		odb_irq_fast_restore(&f);
		goto slow;
	}
	cpu_freelist_push(s, c, x, x);
	odb_irq_fast_restore(&f);
	return;
slow:
	slab_free_slow(k, s, sl, x, fn, addr);
}

SLAB_FAST_ENTRY
void kmem_cache_free(struct odb_kernel *k, struct kmem_cache *s, void *x)
{
	if (!x)
		return;
	slab_free(k, s, virt_to_slab(k, x), x, "kmem_cache_free",
		  (unsigned long)__builtin_return_address(0));
}

/* ---- kmalloc --------------------------------------------------------------------------- */
static const uint8_t size_index[24] = {
	3, 4, 5, 5, 6, 6, 6, 6, 1, 1, 1, 1, 7, 7, 7, 7, 2, 2, 2, 2, 2, 2, 2, 2,
};

static unsigned int kmalloc_index(size_t size)
{
	if (size <= 192)
		return size_index[(size - 1) / 8];
	return (unsigned int)fls_u((unsigned int)(size - 1));
}

static unsigned int kmalloc_size(unsigned int idx)
{
	return idx == 1 ? 96 : idx == 2 ? 192 : 1u << idx;
}

struct kmem_cache *kmalloc_slab(struct odb_kernel *k, size_t size)
{
	if (!size || size > KMALLOC_MAX_CACHE_SIZE)
		return NULL;
	return slab_state(k)->kmalloc_caches[kmalloc_index(size)];
}

static void *kmalloc_large(struct odb_kernel *k, size_t size, gfp_t gfp)
{
	struct page *pg = alloc_pages(k, gfp, get_order(size));

	if (!pg)
		return kasan_kmalloc_large(k, NULL, size, gfp);
	__atomic_fetch_or(&pg->flags, PG_reserved, __ATOMIC_RELAXED);   /* marks a large kmalloc block (PageLargeKmalloc) */
	pg->priv[ODB_PAGE_PRIV_LARGE_SIZE] = size;   /* off struct slab's words (allocate_slab) */
	return kasan_kmalloc_large(k, virt_to_host(k, page_address(k, pg)), size, gfp);
}

SLAB_FAST_ENTRY
void *kmalloc(struct odb_kernel *k, size_t size, gfp_t gfp)
{
	struct kmem_cache *s;

	if (size > KMALLOC_MAX_CACHE_SIZE) {
		if (size > KMALLOC_MAX_SIZE)
			return NULL;
		return kmalloc_large(k, size, gfp);
	}
	if (!size)
		return NULL;   /* ZERO_SIZE_PTR is handled by the public API */
	s = kmalloc_slab(k, size);
	return kasan_kmalloc(s, slab_alloc(s, gfp, (unsigned long)__builtin_return_address(0),
					   (unsigned int)size), size, gfp);
}

SLAB_FAST_ENTRY
void kfree(struct odb_kernel *k, const void *x)
{
	unsigned long addr = (unsigned long)__builtin_return_address(0);
	struct page *pg;
	struct slab *sl;
	void *obj = (void *)x;

	if (!x)
		return;
	sl = virt_to_slab(k, x);
	if (likely(sl)) {
		slab_free(k, sl->slab_cache, sl, obj, "kfree", addr);
		return;
	}
	if ((const char *)x >= k->ram && (const char *)x < k->ram + k->ram_bytes) {
		pg = virt_to_head_page(k, host_to_virt(k, x));   /* not a slab page */
		if ((pg->flags & PG_reserved) && (pg->flags & PG_alloc) && kasan_kfree_large(k, obj, addr))
			return;   /* KASAN: invalid-free reported, nothing freed */
		if ((pg->flags & PG_reserved) && (pg->flags & PG_alloc) &&
		    virt_to_host(k, page_address(k, pg)) == x) {
			__atomic_fetch_and(&pg->flags, ~PG_reserved, __ATOMIC_RELAXED);
			__free_pages(k, pg, pg->order);   /* page-free hooks run there */
			return;
		}
	}
	slab_free_slow(k, NULL, NULL, obj, "kfree", addr);   /* reports: no slab for the object */
}

/*
 * kfree() of a vmalloc address: virt_to_folio() of it is no page of the
 * direct map, so the kernel takes it for a large kmalloc and KASAN's
 * kasan_kfree_large() check (ptr != page_address(its head page)) reports an
 * invalid-free before the page would be put.  odebug frees nothing either
 * way (the kernel would go on to put a bogus folio); without KASAN it is the
 * "no slab for object" report of any address that is no slab object.
 */
void kfree_vmalloc_addr(struct odb_kernel *k, odb_addr_t x, unsigned long ip)
{
	if (kasan_enabled(k)) {
		kasan_report_invalid_free(k, x, ip, KASAN_REPORT_INVALID_FREE);
		return;
	}
	slab_bad_free(k, "no slab for object", "SLUB %s: no slab for object 0x%llx.", "<none>",
		      (unsigned long long)x);
}

/*
 * kvmalloc (mm/slub.c's __kvmalloc_node): a physically contiguous block first
 * -- for more than a page without the allocator's warnings and without
 * __GFP_NOFAIL, since there is a fallback -- then, for more than a page and a
 * gfp that may block, vmalloc with VM_ALLOW_HUGE_VMAP.  Returns the kernel
 * address, 0 on failure.
 */
odb_addr_t kvmalloc_node(struct odb_kernel *k, size_t size, gfp_t flags, unsigned long caller)
{
	gfp_t kmalloc_flags = flags;
	void *p;

	if (size > PAGE_SIZE) {
		kmalloc_flags |= __GFP_NOWARN;
		kmalloc_flags &= ~__GFP_NOFAIL;
	}
	p = size <= KMALLOC_MAX_SIZE ? kmalloc(k, size, kmalloc_flags) : NULL;
	if (p || size <= PAGE_SIZE)
		return p ? host_to_virt(k, p) : 0;
	if (!gfpflags_allow_blocking(flags))
		return 0;   /* non-sleeping allocations are not supported by vmalloc */
	if (size > INT32_MAX)
		return 0;   /* (the kernel WARNs once unless __GFP_NOWARN) */
	return __vmalloc_node_range(k, size, flags, VM_ALLOW_HUGE_VMAP, caller);
}

/*
 * The public API's fast paths (issue 16): odb_kmalloc() / odb_kfree() whose
 * whole work is the per-vCPU freelist's pop or push on a cache no hook acts
 * on (s->fastpath: no debug flag, T, KASAN or SLUB_RCU_DEBUG; the free also
 * without debug_check_no_obj_freed and never of a debug_objects_cache
 * tracker), by a thread whose task slot knows it, on a kernel that is not
 * closed and runs no controlled scheduler (k->api_fast).  They leave out
 * odb_enter()/odb_leave()'s bookkeeping because nothing it guards can happen
 * there: no report (no check runs), no deferred callback, no error (a
 * successful call keeps the calling thread's message of its last failed
 * call, as odb_strerror() documents).  odb_kfree of an object of another
 * slab than the vCPU's runs __slab_free itself (kfree_remote_fast, below).
 * Any other case -- and a busy vCPU, an empty freelist -- tail-calls the full
 * path (slab_api.c), which does everything.
 */
/* Frameless only where the compiler makes the full path a tail call (a jump:
 * the full path's frame then chains to the caller); sanitizer builds keep the
 * call, and a frameless caller of it would drop the user's frame from every
 * stack the full path saves. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define API_FAST_ENTRY
#else
#define API_FAST_ENTRY SLAB_FAST_ENTRY
#endif

static API_FAST_ENTRY __attribute__((noinline))
int kmalloc_api_fast(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out)
{
	struct kmem_cache *s;
	void *object;

	if (likely(size - 1 < KMALLOC_MAX_CACHE_SIZE) &&
	    likely(atomic_load_explicit(&k->api_fast, memory_order_relaxed))) {
		s = slab_state(k)->kmalloc_caches[kmalloc_index(size)];
		if (likely(slab_alloc_fast(s, gfp, &object))) {
			if (unlikely(gfp & __GFP_ZERO))
				memset(object, 0, s->object_size);
			*out = host_to_virt(k, object);
			return ODB_OK;
		}
	}
	return __odb_kmalloc(k, size, gfp, out);
}

/* With KASAN on no kmalloc cache takes the fast path above: straight to
 * KASAN's (__odb_kmalloc tries it first), before the other's prologue.  Both
 * are reached by jumps, so __odb_kmalloc's frame chains to the caller's. */
API_FAST_ENTRY
int odb_kmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out)
{
	if (atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed))
		return __odb_kmalloc(k, size, gfp, out);
	return kmalloc_api_fast(k, size, gfp, out);
}

/* odb_kfree of an object of another slab than the vCPU's, on an api_fastfree
 * cache: do_slab_free's other branch, __slab_free inside the same irq-off
 * section, already entered by the caller (held, cpu).  Nothing that
 * odb_enter()/odb_leave() guard happens in it: __slab_free of a cache no hook
 * acts on checks nothing and reports nothing, and the slab pages it may free
 * run no page hook that acts (KASAN and debug objects are off for such a
 * cache), so no report, no deferred callback, no error.  Its own frame,
 * reached by a tail call from the frameless entry: the return address is the
 * caller's, as the full path's _RET_IP_ is. */
static __attribute__((noinline))
int kfree_remote_fast(struct kmem_cache *s, struct slab *sl, void *object, struct odb_task *t,
		      _Atomic(void *) *held, int cpu)
{
	struct odb_irq_fast f = { .held = held, .cpu = cpu };

	odb_irq_nest(t, cpu);
	__slab_free(s, sl, object, object, 1, (unsigned long)__builtin_return_address(0), cpu);
	odb_irq_unnest(t);
	odb_irq_fast_restore(&f);
	return ODB_OK;
}

API_FAST_ENTRY
int odb_kfree(odb_kernel *k, odb_addr_t x)
{
	uint64_t off = x - k->page_offset_base;   /* below the base: wraps, rejected */
	struct kmem_cache_cpu *c;
	struct odb_irq_fast f;
	struct kmem_cache *s;
	struct odb_task *t;
	struct slab *sl;
	void *object;

	/* (with KASAN on, no cache takes this fast path: KASAN's, in __odb_kfree) */
	if (unlikely(off >= k->ram_bytes) ||
	    atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed) ||
	    unlikely(!atomic_load_explicit(&k->api_fast, memory_order_relaxed)))
		goto full;
	object = k->ram + off;
	sl = virt_to_slab(k, object);
	if (unlikely(!sl))
		goto full;
	s = sl->slab_cache;
	if (unlikely(!s->api_fastfree) || unlikely(!check_valid_pointer(s, sl, object)))
		goto full;
	if (unlikely(!odb_current_fast(k, &t)) || unlikely(!odb_irq_fast_try(t, &f)))
		goto full;
	c = &s->cpu_slab[f.cpu];
	if (unlikely(sl != c->slab))
		return kfree_remote_fast(s, sl, object, t, f.held, f.cpu);
	cpu_freelist_push(s, c, object, object);
	odb_irq_fast_restore(&f);
	return ODB_OK;
full:
	return __odb_kfree(k, x);
}

/* ---- the public API's KASAN fast paths (issue 16; slub.h, kasan.h) ---------------------- */
/* The kmalloc cache (and its index) that serves size if the KASAN fast paths
 * may, else NULL. */
static inline struct kmem_cache *kmalloc_kasan_fast_cache(struct odb_kernel *k, size_t size,
							  unsigned int *idx)
{
	struct kmem_cache *s;

	if (!atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed) ||
	    size - 1 >= KMALLOC_MAX_CACHE_SIZE)
		return NULL;
	*idx = kmalloc_index(size);
	s = slab_state(k)->kmalloc_caches[*idx];
	return s && s->api_kasan_fast ? s : NULL;
}

/* Whether a free of s's object runs debug objects' check (a free template's key). */
static inline bool kfree_kasan_dobj(struct odb_kernel *k, const struct kmem_cache *s)
{
	return s->check_obj_freed && debug_objects_enabled_fast(k);
}

uint64_t kmalloc_kasan_tmpl_key(struct odb_kernel *k, size_t size, gfp_t gfp)
{
	unsigned int idx;
	struct kmem_cache *s = kmalloc_kasan_fast_cache(k, size, &idx);

	return s ? kasan_tmpl_key_alloc(idx, size, s->object_size, gfp) : 0;
}

uint64_t kfree_kasan_tmpl_key(struct odb_kernel *k, const void *x)
{
	struct slab *sl = atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed) ?
			  virt_to_slab(k, x) : NULL;
	struct kmem_cache *s = sl ? sl->slab_cache : NULL;

	if (!s || !s->api_kasan_fast)
		return 0;
	return kasan_tmpl_key_free(kfree_kasan_dobj(k, s));
}

/*
 * An empty per-vCPU freelist: slab_alloc_slow (___slab_alloc's refill, a new
 * slab maybe, kasan_slab_alloc), then kasan_kmalloc with the template, all
 * inside the API call's bookkeeping, as the slow path runs them (a new slab's
 * pages or an eviction may report).  A failure is the slow path's: ENOMEM
 * with its message, after kasan_kmalloc's reduce.
 */
static __attribute__((noinline)) int
kmalloc_kasan_refill(struct odb_kernel *k, struct kmem_cache *s, size_t size, gfp_t gfp,
		     const struct odb_stack_tmpl *tp, void *fp, void **out)
{
	struct odb_task *t = odb_enter(k);
	void *object;
	int r;

	if (!t)
		return 1;
	/* (addr is a debug cache's track: none here) */
	object = slab_alloc_slow(s, gfp, 0, (unsigned int)size);
	*out = object;
	if (object) {
		kasan_kmalloc_fast(s, t, object, size, gfp, tp, fp, true, false, &r);
		return odb_leave(t, ODB_OK);
	}
	if (gfpflags_allow_blocking(gfp))
		kasan_quarantine_reduce(k);     /* kasan_kmalloc's, of no object */
	return odb_leave(t, odb_err(k, ODB_ENOMEM, "kmalloc(%zu) failed", size));
}

/*
 * slab_alloc_slow + kasan_kmalloc for a kmalloc cache with KASAN and nothing
 * else on it: failslab off, the per-vCPU freelist's pop by the task whose
 * lock is biased to it (ALLOC_FASTPATH, as the slow path counts a pop), or its
 * refill (above), __GFP_ZERO, then KASAN's two hooks with the alloc track
 * through the template of this code path.  Anything else -- no template yet,
 * a busy vCPU, a corrupt free pointer, a quarantine to evict -- returns 1
 * having done nothing.
 */
int kmalloc_kasan_fast(struct odb_kernel *k, size_t size, gfp_t gfp, void *fp, void **out)
{
	const struct odb_stack_tmpl *tp;
	struct kmem_cache_cpu *c;
	struct odb_irq_fast f;
	struct kmem_cache *s;
	struct odb_task *t;
	void *object, *next;
	unsigned int idx;
	bool reduced;
	int r;

	s = kmalloc_kasan_fast_cache(k, size, &idx);
	if (!s || !atomic_load_explicit(&k->api_fast, memory_order_relaxed) ||
	    READ_ONCE(k->failslab.attr.probability))
		return 1;
	tp = kasan_tmpl_find(k, kasan_tmpl_key_alloc(idx, size, s->object_size, gfp));
	if (!tp)
		return 1;
	if (!odb_current_fast(k, &t) || !odb_irq_fast_try(t, &f))
		return 1;
	/* KASAN's two quarantine-reduce checks (kasan_slab_alloc's and
	 * kasan_kmalloc's), made at once in the section: a quarantine to evict is
	 * the slow path's; else both are counted on the vCPU below, without a
	 * locked add */
	reduced = gfpflags_allow_blocking(gfp);
	if (reduced && kasan_quarantine_over(k)) {
		odb_irq_fast_restore(&f);
		return 1;
	}
	c = &s->cpu_slab[f.cpu];
	object = c->freelist;
	if (unlikely(!object)) {
		odb_irq_fast_restore(&f);
		return kmalloc_kasan_refill(k, s, size, gfp, tp, fp, out);
	}
	next = get_freepointer(s, object);
	if (unlikely(!freeptr_valid(s, object, next))) {
		odb_irq_fast_restore(&f);
		return 1;   /* the slow path reports and cuts the chain */
	}
	c->freelist = next;
	c->tid++;
	stat_c(c, ALLOC_FASTPATH);
	if (reduced)
		quarantine_cpu_stat_add(&kasan_state(k)->q.cpu_st[f.cpu].reduce_calls, 2);
	odb_irq_fast_restore(&f);
	if (unlikely(gfp & __GFP_ZERO))
		memset(object, 0, s->object_size);
	*out = kasan_kmalloc_fast(s, t, object, size, gfp, tp, fp, false, reduced, &r);
	return r;
}

/*
 * kfree of such a cache's object that every free check passes -- a slab
 * object at a slot start (KASAN's invalid-free check, check_valid_pointer),
 * still accessible (the double-free check), nothing tracked by debug objects
 * in its chunk -- and whose quarantine put needs no flush: KASAN's free hook
 * with the free track through the template.  false: nothing done (but
 * debug_check_no_obj_freed's work scheduling and the stack's save, which the
 * slow path repeats to the same effect).
 */
bool kfree_kasan_fast(struct odb_kernel *k, void *x, void *fp)
{
	const struct odb_stack_tmpl *tp;
	struct kmem_cache *s;
	struct odb_task *t;
	struct slab *sl;
	bool dobj;

	if (!atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed) ||
	    !atomic_load_explicit(&k->api_fast, memory_order_relaxed))
		return false;
	sl = virt_to_slab(k, x);
	if (!sl)
		return false;
	s = sl->slab_cache;
	/* (an object start, check_valid_pointer, is its own nearest_obj: KASAN's
	 * invalid-free check passes without the division) */
	if (!s->api_kasan_fast || !odb_current_fast(k, &t) || !check_valid_pointer(s, sl, x) ||
	    !kasan_host_byte_accessible(k, x))
		return false;
	dobj = kfree_kasan_dobj(k, s);
	tp = kasan_tmpl_find(k, kasan_tmpl_key_free(dobj));
	if (!tp || (dobj && !debug_check_no_obj_freed_fast(k, x, s->object_size)))
		return false;
	return kasan_slab_free_fast(s, t, x, tp, fp);
}

/* __ksize / slab_ksize: what the caller may use of the object. */
static size_t slab_ksize(const struct kmem_cache *s)
{
	if (s->flags & (SLAB_RED_ZONE | SLAB_POISON))
		return s->object_size;
	if (s->kasan_meta_size)
		return s->object_size;
	if (s->flags & (SLAB_TYPESAFE_BY_RCU | SLAB_STORE_USER))
		return s->inuse;
	return s->size;
}

size_t ksize(struct odb_kernel *k, const void *x)
{
	struct kmem_cache *s;
	struct page *pg;
	struct slab *sl;

	if (!x || (const char *)x < k->ram || (const char *)x >= k->ram + k->ram_bytes)
		return 0;
	/* modern ksize: a bad pointer gives 0 (after the report); no unpoisoning */
	if (!kasan_check_byte(k, x, (unsigned long)__builtin_return_address(0)))
		return 0;
	pg = virt_to_head_page(k, host_to_virt(k, x));
	if (!(pg->flags & PG_slab)) {
		/* __ksize: a large kmalloc's block, from its start only (the kernel
		 * WARNs for anything else; odebug returns 0 without the WARN) */
		if (!(pg->flags & PG_reserved) || virt_to_host(k, page_address(k, pg)) != x)
			return 0;
		return PAGE_SIZE << pg->order;
	}
	sl = page_slab(pg);
	s = sl->slab_cache;
	/* skip_orig_size_check(): whoever asked may use all ksize() bytes, so
	 * the kmalloc redzone check (slub_debug=ZU) no longer covers the slack.
	 * Only for an object start (the kernel would write at any pointer). */
	if (check_valid_pointer(s, sl, (void *)x))
		set_orig_size(s, (void *)x, s->object_size);
	return slab_ksize(s);
}

/* kfree_sensitive (mm/slab_common.c): ksize() (whose kasan_check_byte
 * reports a freed object and gives 0), the usable bytes unpoisoned and zeroed
 * (memzero_explicit), then kfree. */
void kfree_sensitive(struct odb_kernel *k, const void *p)
{
	struct slab *sl;
	size_t ks;

	ks = ksize(k, p);
	/* odebug deviation: a pointer inside a slab object is not zeroed (the
	 * kernel would zero ksize() bytes from it, past the object, into the
	 * next slot's metadata); kfree() then reports it (invalid-free) */
	sl = p ? virt_to_slab(k, p) : NULL;
	if (sl && !check_valid_pointer(sl->slab_cache, sl, (void *)p))
		ks = 0;
	if (ks) {
		if (kasan_enabled(k))
			kasan_unpoison(k, host_to_virt(k, p), ks);   /* kasan_unpoison_range */
		memset((void *)p, 0, ks);
	}
	kfree(k, p);
}

/* p is the first byte of a large kmalloc (pages of its own). */
static bool krealloc_large_start(struct odb_kernel *k, const void *p)
{
	odb_addr_t a = host_to_virt(k, p);
	struct page *pg = virt_to_head_page(k, a);

	return (pg->flags & PG_reserved) && page_address(k, pg) == a;
}

void *krealloc(struct odb_kernel *k, const void *p, size_t new_size, gfp_t gfp)
{
	struct kmem_cache *s = NULL;
	size_t ks = 0, orig_size = 0;
	struct slab *sl;
	void *ret;

	if (!new_size) {
		kfree(k, p);
		return NULL;
	}
	if (p) {
		/* a freed pointer is caught first and gives NULL */
		if (!kasan_check_byte(k, p, (unsigned long)__builtin_return_address(0)))
			return NULL;
		sl = virt_to_slab(k, p);
		/* Not an object odebug gave out (an interior pointer, a page that
		 * is no kmalloc): the kfree() krealloc would end with reports it
		 * (invalid-free, "Invalid object pointer") and frees nothing, and
		 * nothing is copied from or zeroed past it: NULL, no new object
		 * (odebug deviation: the kernel would copy ksize() bytes first). */
		if (sl ? !check_valid_pointer(sl->slab_cache, sl, (void *)p)
		       : !krealloc_large_start(k, p)) {
			kfree(k, p);
			return NULL;
		}
		if (sl) {
			s = sl->slab_cache;
			orig_size = get_orig_size(s, (void *)p);
			ks = s->object_size;
		} else {
			ks = ksize(k, p);
		}
		if (new_size > ks)
			goto alloc_new;
		/* zero the spare memory */
		if (gfp & __GFP_ZERO) {
			if (orig_size && orig_size < new_size)
				memset((char *)p + orig_size, 0, new_size - orig_size);
			else
				memset((char *)p + new_size, 0, ks - new_size);
		}
		/* kmalloc redzone tracking */
		if (s && slub_debug_orig_size(s)) {
			set_orig_size(s, (void *)p, (unsigned int)new_size);
			if ((s->flags & SLAB_RED_ZONE) && new_size < ks)
				memset((char *)p + new_size, SLUB_RED_ACTIVE, ks - new_size);
		}
		return kasan_krealloc(k, (void *)p, new_size, gfp);   /* repoison precisely */
	}
alloc_new:
	ret = kmalloc(k, new_size, gfp);
	if (ret && p) {
		size_t n = orig_size ? orig_size : ks;
		memcpy(ret, p, n < new_size ? n : new_size);
		kfree(k, p);
	}
	return ret;
}

/* ---- caches ------------------------------------------------------------------------------ */
static void set_min_partial(struct kmem_cache *s, unsigned long min)
{
	if (min < MIN_PARTIAL)
		min = MIN_PARTIAL;
	else if (min > MAX_PARTIAL)
		min = MAX_PARTIAL;
	s->min_partial = min;
}

static void set_cpu_partial(struct kmem_cache *s)
{
	if (!kmem_cache_has_cpu_partial(s))
		s->cpu_partial = 0;
	else if (s->size >= PAGE_SIZE)
		s->cpu_partial = 2;
	else if (s->size >= 1024)
		s->cpu_partial = 6;
	else if (s->size >= 256)
		s->cpu_partial = 13;
	else
		s->cpu_partial = 30;
}

static void free_all_slabs(struct kmem_cache *s);

/* CONFIG_SLUB_RCU_DEBUG (odebug.slub_rcu_debug=; default: with KASAN) */
static bool slub_rcu_debug_on(struct odb_kernel *k)
{
	int v = slab_state(k)->rcu_debug;

	return v < 0 ? kasan_enabled(k) : v > 0;
}
static int ilog2_u(unsigned long x) { return x ? 63 - __builtin_clzl(x) : 0; }

static struct kmem_cache *create_cache(struct odb_kernel *k, const char *name, unsigned int size,
				       unsigned int align, slab_flags_t flags, void (*ctor)(void *),
				       odb_ctor_fn pctor, void *pctor_ctx, bool is_kmalloc)
{
	struct kmem_cache *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->k = k;
	s->fp_bias = (uintptr_t)k->ram - (uintptr_t)k->page_offset_base;
	s->name = strdup(name);
	s->cpu_slab = aligned_alloc(64, sizeof(struct kmem_cache_cpu) * k->nr_cpu_ids);
	if (!s->name || !s->cpu_slab) {
		free(s->name);
		free(s->cpu_slab);
		free(s);
		return NULL;
	}
	memset(s->cpu_slab, 0, sizeof(struct kmem_cache_cpu) * k->nr_cpu_ids);
	s->object_size = size;
	s->align = align;
	s->ctor = ctor;
	s->pctor = pctor;
	s->pctor_ctx = pctor_ctx;
	s->kmalloc = is_kmalloc;
	s->flags = kmem_cache_flags(k, size, flags | (is_kmalloc ? SLAB_KMALLOC : 0), name);
	s->refcount = 1;
	odb_bspin_lock_init(k, &s->node.list_lock);
	INIT_LIST_HEAD(&s->node.partial);
	INIT_LIST_HEAD(&s->node.full);
	if (calculate_sizes(s)) {
		odb_err(k, ODB_EINVAL, "kmem_cache_create(%s): cannot lay out objects of size %u",
			name, size);
		spin_lock_destroy(&s->node.list_lock.l);
		free(s->name);
		free(s->cpu_slab);
		free(s);
		return NULL;
	}
	/* 2016: cmpxchg unless F/U/T; before it: unless any debug flag */
	if (slab_state(k)->path == SLUB_PATH_LOCKED ? !kmem_cache_debug(s) :
	    !(s->flags & SLAB_NO_CMPXCHG))
		s->flags |= __CMPXCHG_DOUBLE;
	if (k->sched_controlled)
		s->flags |= __SCHED_POINTS;
	set_min_partial(s, (unsigned long)ilog2_u(s->size) / 2);
	set_cpu_partial(s);
	/* No hook could act on an allocation or free of this cache (KASAN is
	 * fixed at boot, before the first cache): slab_alloc and kmem_cache_free
	 * may take their inline fast paths. */
	s->rcu_debug = (s->flags & SLAB_TYPESAFE_BY_RCU) && slub_rcu_debug_on(k);
	s->fastpath = !(s->flags & (SLAB_DEBUG_FLAGS | SLAB_TRACE)) && !kasan_enabled(k) &&
		      !s->rcu_debug &&
		      !k->sched_controlled;   /* a controlled kernel's every step is a slow path */
	/* debug objects are set up before the first cache and are never turned
	 * on later (only off, after which the slow path's gate skips the check) */
	s->check_obj_freed = !(s->flags & SLAB_DEBUG_OBJECTS) && debug_objects_enabled_fast(k);
	s->fastfree = s->fastpath && !s->check_obj_freed;
	/* odb_kfree's fast path: never for a tracker (debug_objects_refuse_free) */
	s->api_fastfree = s->fastfree && !(s->flags & SLAB_DEBUG_OBJECTS);
	s->kasan = kasan_enabled(k);
	/* the quarantine's runs: no free debug processing (any debug flag, so the
	 * modern debug flows too) and no scheduling points */
	s->free_runs = !kmem_cache_debug(s) && !k->sched_controlled;
	s->api_kasan_fast = s->kasan && (s->flags & SLAB_KMALLOC) &&
			    !(s->flags & (SLAB_DEBUG_FLAGS | SLAB_TRACE | SLAB_DEBUG_OBJECTS |
					  SLAB_TYPESAFE_BY_RCU)) &&
			    !s->rcu_debug && !k->sched_controlled &&
			    s->kasan_meta_size && s->kasan_alloc_meta_offset > 0 &&
			    s->kasan_free_meta_offset != KASAN_NO_FREE_META;
	if (s->api_kasan_fast)
		atomic_store_explicit(&k->api_kasan_fast, true, memory_order_relaxed);
	s->modern_debug = kmem_cache_debug(s) && slab_state(k)->path == SLUB_PATH_MODERN;
	/* 2016 on: consistency checks only with F; before: with any debug flag */
	s->debug_checks = (s->flags & SLAB_CONSISTENCY_CHECKS) ||
			  (kmem_cache_debug(s) && slab_state(k)->path == SLUB_PATH_LOCKED);
	s->init_poison_only = (s->flags & __OBJECT_POISON) && !(s->flags & SLAB_RED_ZONE) &&
			      !slub_debug_orig_size(s);
	s->debug_init_only = s->modern_debug && !s->debug_checks &&
			     !(s->flags & (SLAB_STORE_USER | SLAB_TRACE));
	s->modern_fast = s->debug_init_only && s->init_poison_only && !s->kasan && !s->rcu_debug &&
			 !s->check_obj_freed && s->object_size >= 16 && s->object_size <= 64 &&
			 !k->sched_controlled;
	/* create_cache: kmem_cache_zalloc(kmem_cache, GFP_KERNEL); the
	 * "kmem_cache" cache's own descriptor is one of its objects (bootstrap).
	 * __GFP_NOFAIL: failslab= keeps counting the allocations it always did. */
	{
		struct kmem_cache *kc = slab_state(k)->kmem_cache ? slab_state(k)->kmem_cache : s;

		s->desc = kmem_cache_alloc(k, kc, GFP_KERNEL | __GFP_ZERO | __GFP_NOFAIL);
		if (!s->desc) {
			if (kc == s)
				free_all_slabs(s);
			spin_lock_destroy(&s->node.list_lock.l);
			free(s->name);
			free(s->cpu_slab);
			free(s);
			return NULL;
		}
	}
	mutex_lock_nocb(k, &slab_state(k)->slab_mutex);
	list_add_tail(&s->list, &slab_state(k)->slab_caches);
	mutex_unlock_nocb(k, &slab_state(k)->slab_mutex);
	return s;
}

struct kmem_cache *kmem_cache_find(struct odb_kernel *k, const char *name)
{
	struct odb_slab_state *ss = slab_state(k);
	struct list_head *pos, *n;
	struct kmem_cache *found = NULL;

	mutex_lock_nocb(k, &ss->slab_mutex);
	list_for_each_safe(pos, n, &ss->slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		if (!strcmp(s->name, name)) {
			found = s;
			break;
		}
	}
	mutex_unlock_nocb(k, &ss->slab_mutex);
	return found;
}

struct kmem_cache *kmem_cache_create(struct odb_kernel *k, const char *name, unsigned int size,
				     unsigned int align, slab_flags_t flags, void (*ctor)(void *))
{
	int err;
	return __kmem_cache_create(k, name, size, align, flags, ctor, NULL, NULL, &err);
}

struct kmem_cache *__kmem_cache_create(struct odb_kernel *k, const char *name, unsigned int size,
				       unsigned int align, slab_flags_t flags, void (*ctor)(void *),
				       odb_ctor_fn pctor, void *pctor_ctx, int *err)
{
	struct kmem_cache *s;

	if (!name || !*name) {
		*err = odb_err(k, ODB_EINVAL, "kmem_cache_create: a cache needs a name");
		return NULL;
	}
	if (size < 1 || size > KMALLOC_MAX_SIZE) {
		*err = odb_err(k, ODB_EINVAL, "kmem_cache_create(%s): size %u out of range (1..%lu)",
			       name, size, (unsigned long)KMALLOC_MAX_SIZE);
		return NULL;
	}
	if (align & (align - 1)) {
		*err = odb_err(k, ODB_EINVAL, "kmem_cache_create(%s): align %u is not a power of two",
			       name, align);
		return NULL;
	}
	if (align > PAGE_SIZE) {
		*err = odb_err(k, ODB_EINVAL, "kmem_cache_create(%s): align %u > PAGE_SIZE", name, align);
		return NULL;
	}
	if (kmem_cache_find(k, name)) {
		*err = odb_err(k, ODB_EBUSY, "kmem_cache_create(%s): a cache of that name exists", name);
		return NULL;
	}
	/* calculate_alignment */
	if (flags & SLAB_HWCACHE_ALIGN) {
		unsigned int ralign = 64;
		while (size <= ralign / 2)
			ralign /= 2;
		if (ralign > align)
			align = ralign;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	s = create_cache(k, name, size, align, flags, ctor, pctor, pctor_ctx, flags & SLAB_KMALLOC);
	*err = s ? ODB_OK : (odb_strerror(k)[0] ? ODB_EINVAL : ODB_ENOMEM);
	return s;
}

/* __kmem_cache_shutdown: flush, then the node must hold only empty slabs. */
static int kmem_cache_shutdown(struct kmem_cache *s)
{
	struct kmem_cache_node *n = &s->node;
	struct list_head *pos, *tmp;
	int leaked = 0;

	flush_all(s);
	node_lock(s, n);
	list_for_each_safe(pos, tmp, &n->partial) {
		struct slab *sl = list_entry(pos, struct slab, slab_list);
		if (!SLAB_INUSE(sl->counters)) {
			remove_partial(n, sl);
			node_unlock(s, n);
			discard_slab(s, sl);
			node_lock(s, n);
		} else {
			list_slab_objects(s, sl, "Objects remaining in %s on __kmem_cache_shutdown()");
			leaked++;
		}
	}
	if (!list_empty(&n->full)) {
		list_for_each_safe(pos, tmp, &n->full) {
			struct slab *sl = list_entry(pos, struct slab, slab_list);
			list_slab_objects(s, sl, "Objects remaining in %s on __kmem_cache_shutdown()");
			leaked++;
		}
	}
	node_unlock(s, n);
	return leaked || atomic_load(&n->nr_slabs) ? -1 : 0;
}

/* Free every slab of s, in use or not (teardown of a kernel, or after a leak
 * was reported on destroy: odebug then keeps the pages accounted to nobody). */
static void free_all_slabs(struct kmem_cache *s)
{
	struct odb_kernel *k = s->k;

	for (uint64_t pfn = 0; pfn < k->nr_pages; pfn++) {
		struct page *pg = &k->pages[pfn];
		if ((pg->flags & PG_slab) && page_slab(pg)->slab_cache == s) {
			struct slab *sl = page_slab(pg);
			atomic_fetch_sub(&s->node.nr_slabs, 1);
			atomic_fetch_sub(&s->node.total_objects, SLAB_OBJECTS(sl->counters));
			pg->flags &= ~PG_slab;
			__free_pages(k, pg, sl->order);
		}
	}
}

static void free_cache(struct kmem_cache *s)
{
	spin_lock_destroy(&s->node.list_lock.l);
	free(s->name);
	free(s->cpu_slab);
	free(s);
}

/* slab_kmem_cache_release: the descriptor goes back to the "kmem_cache"
 * cache (KASAN poisons and quarantines it); the host struct becomes a
 * tombstone that only a later kmem_cache_destroy() looks at (its check_byte). */
static void kmem_cache_release(struct odb_kernel *k, struct kmem_cache *s, bool zombie)
{
	struct odb_slab_state *ss = slab_state(k);

	kmem_cache_free(k, ss->kmem_cache, s->desc);
	if (zombie) {
		s->zombie = true;   /* its slabs stay usable: frees into it, slab_object */
		return;
	}
	s->destroyed = true;
	free(s->cpu_slab);
	s->cpu_slab = NULL;
	mutex_lock_nocb(k, &ss->slab_mutex);
	list_add_tail(&s->list, &ss->dead);
	mutex_unlock_nocb(k, &ss->slab_mutex);
}

void kmem_cache_destroy(struct odb_kernel *k, struct kmem_cache *s)
{
	int err;

	/* A destroyed cache's descriptor is freed memory: KASAN reports
	 * (slab-use-after-free) and the destroy stops there. */
	if (!s || !kasan_check_byte(k, s->desc, (unsigned long)__builtin_return_address(0)))
		return;
	if (s->destroyed || s->zombie)
		return;     /* its descriptor's slot was reused, or KASAN is off */
	kvfree_rcu_barrier(k);      /* v6.12+: in-flight kfree_rcu()s may hold our objects */
	if (s->rcu_debug)
		rcu_barrier(k);     /* SLUB_RCU_DEBUG: and its deferred frees (call_rcu) */
	cpus_read_lock(k);          /* no vCPU comes or goes during the destroy */
	mutex_lock_nocb(k, &slab_state(k)->slab_mutex);
	list_del(&s->list);
	mutex_unlock_nocb(k, &slab_state(k)->slab_mutex);
	kasan_cache_shutdown(s);          /* quarantined objects go back first */
	err = kmem_cache_shutdown(s);
	cpus_read_unlock(k);
	if (err) {
		/* As the kernel does, the cache stays with its slabs (a later free of
		 * one of its objects -- from a quarantine that missed it, say -- goes
		 * into it as into any cache); odebug keeps it off the list of names
		 * so that the name can be used again, and frees it with the kernel. */
		char msg[160];

		/* if (!slab_in_kunit_test()) WARN(err, "%s %s: Slab cache still has
		 * objects when called from %pS") */
		snprintf(msg, sizeof(msg), "kmem_cache_destroy %s: Slab cache still has objects when "
			 "called from %s", s->name, "kmem_cache_destroy");
		if (!slab_in_kunit_test(k))
			odb_warn(k, "slub", "Slab cache still has objects", s->name, 0, NULL, msg,
				 "mm/slab_common.c", __LINE__, (const void *)kmem_cache_destroy);
		mutex_lock_nocb(k, &slab_state(k)->slab_mutex);
		list_add_tail(&s->list, &slab_state(k)->zombies);
		mutex_unlock_nocb(k, &slab_state(k)->slab_mutex);
		kmem_cache_release(k, s, true);
		return;
	}
	kmem_cache_release(k, s, false);
}

const char *kmem_cache_name(const struct kmem_cache *s) { return s->name; }
unsigned int kmem_cache_object_size(const struct kmem_cache *s) { return s->object_size; }
unsigned int kmem_cache_size(const struct kmem_cache *s) { return s->size; }

/* ---- boot ------------------------------------------------------------------------------- */
static const char *const slub_path_names[] = { "relaxed", "locked", "modern", NULL };

static int set_slub_path(struct odb_kernel *k, const char *val)
{
	int i, r = odb_param_choice(k, "odebug.slub_path", val, slub_path_names, &i);

	if (!r)
		slab_state(k)->path = (enum slub_path)i;
	return r;
}

int odb_slub_path_param(struct odb_kernel *k, const char *val) { return set_slub_path(k, val); }

/* odebug.slub_rcu_debug=on|off: CONFIG_SLUB_RCU_DEBUG, which the kernel turns
 * on by default with generic KASAN (v6.12): odebug's default follows kasan=. */
int odb_slub_rcu_debug_param(struct odb_kernel *k, const char *val)
{
	bool b;

	if (odb_kstrtobool(val, &b))
		return odb_err(k, ODB_EINVAL, "odebug.slub_rcu_debug: `%s' invalid for parameter "
			       "`odebug.slub_rcu_debug' (on or off)", val ? val : "");
	slab_state(k)->rcu_debug = b;
	return 0;
}

void odb_slub_rcu_debug_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", slub_rcu_debug_on(k) ? "on" : "off");
}
int odb_slub_debug_param(struct odb_kernel *k, const char *val) { return setup_slub_debug(k, val); }
void odb_slub_debug_show(struct odb_kernel *k, char *buf, size_t len) { slub_debug_show(k, buf, len); }

void odb_slub_path_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", slub_path_names[slab_state(k)->path]);
}

/* The slab state must exist before the command line is parsed (slub_debug=). */
int odb_slab_early_init(struct odb_kernel *k)
{
	struct odb_slab_state *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return -1;
	mutex_init(&ss->slab_mutex);
	INIT_LIST_HEAD(&ss->slab_caches);
	INIT_LIST_HEAD(&ss->zombies);
	INIT_LIST_HEAD(&ss->dead);
	ss->rcu_debug = -1;
	k->slab = ss;
	return 0;
}

int odb_slab_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	struct odb_slab_state *ss = slab_state(k);
	char name[32];

	if (odb_rcu_init(k) || odb_mempool_init(k)) {
		snprintf(errbuf, errlen, "kmem_cache_init: out of memory");
		return ODB_ENOMEM;
	}

	/* kmem_cache_init: the cache of cache descriptors first.  odebug's host
	 * struct kmem_cache is not arena memory; its arena stand-in has the size
	 * of an x86-64 v6.12 struct kmem_cache (one node, SLAB_HWCACHE_ALIGN). */
	ss->kmem_cache = create_cache(k, "kmem_cache", KMEM_CACHE_DESC_SIZE, 64, SLAB_HWCACHE_ALIGN | SLAB_PANIC,
				      NULL, NULL, NULL, false);
	if (!ss->kmem_cache) {
		snprintf(errbuf, errlen, "kmem_cache_init: cannot create kmem_cache");
		return ODB_ENOMEM;
	}
	ss->kmem_cache->internal = true;
	for (unsigned int i = KMALLOC_SHIFT_LOW; i <= KMALLOC_SHIFT_HIGH; i++) {
		unsigned int idxs[3] = { i, 0, 0 }, n = 1;
		if (i == 6) { idxs[n++] = 1; }     /* kmalloc-96 after kmalloc-64 */
		if (i == 7) { idxs[n++] = 2; }     /* kmalloc-192 after kmalloc-128 */
		for (unsigned int j = 0; j < n; j++) {
			unsigned int idx = idxs[j];
			snprintf(name, sizeof(name), "kmalloc-%u", kmalloc_size(idx));
			ss->kmalloc_caches[idx] = create_cache(k, name, kmalloc_size(idx), 8, 0, NULL, NULL, NULL,
							     true);
			if (!ss->kmalloc_caches[idx]) {
				snprintf(errbuf, errlen, "kmem_cache_init: cannot create %s", name);
				return ODB_ENOMEM;
			}
			ss->kmalloc_caches[idx]->internal = true;   /* never destroyed */
		}
	}
	return 0;
}

void odb_slab_exit(struct odb_kernel *k)
{
	struct odb_slab_state *ss = slab_state(k);
	struct list_head *pos, *n;

	if (!ss)
		return;
	odb_rcu_exit(k);
	odb_mempool_exit(k);
	list_for_each_safe(pos, n, &ss->dead) {     /* tombstones: no slab, no cpu_slab */
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		list_del(&s->list);
		free_cache(s);
	}
	list_splice_tail(&ss->zombies, &ss->slab_caches);
	list_for_each_safe(pos, n, &ss->slab_caches) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		list_del(&s->list);
		if (k->pages)
			free_all_slabs(s);
		free_cache(s);
	}
	slub_debug_exit(k);
	mutex_destroy(&ss->slab_mutex);
	free(ss);
	k->slab = NULL;
}
