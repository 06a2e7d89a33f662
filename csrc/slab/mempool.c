/*
 * Memory pools (mm/mempool.c): a reserve of min_nr preallocated elements
 * that mempool_alloc falls back on when the underlying allocator fails, over
 * the three standard pools -- kmalloc of a fixed size, a slab cache, pages of
 * an order.  An element given back while the reserve is short goes into it
 * instead of back to the allocator, and KASAN poisons it there as a free
 * would (kasan_poison_element: kasan_mempool_poison_object/_pages), so a
 * use-after-free, double free or invalid free of a pool element is reported
 * as the kernel's KASAN reports it; taken out again it is unpoisoned
 * (kasan_unpoison_element).
 *
 * odebug's differences:
 *  - the pool and its element array are host memory (the kernel kmallocs
 *    them), so pools add no slab traffic; the array holds arena addresses,
 *    each checked to be in the arena before it is kept;
 *  - an element of a page pool is its first page's address (the kernel's is
 *    the struct page);
 *  - a page element that is not an allocated block of the pool's order (a slab
 *    page, another order) is refused with ODB_EINVAL where the kernel would
 *    corrupt its page allocator;
 *  - the standard pools only (no user alloc/free callbacks), and no
 *    CONFIG_SLUB_DEBUG_ON element poisoning (poison_element/check_element);
 *  - a blocking mempool_alloc that finds the reserve empty waits for a
 *    mempool_free (or 5 s of host time, then retries the allocator, as
 *    io_schedule_timeout(5*HZ) does), interruptible through the poll hook;
 *    a task of the controlled scheduler waits as a scheduler task (no one to
 *    give an element back: the run ends in a deadlock report).
 *
 * Pools are per kernel (a list in the slab room's state).  A destroyed pool's
 * host struct stays, as a tombstone, until the kernel goes: a second destroy
 * or any late call is ODB_ESTATE, never a host use-after-free.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "slab/slub.h"
#include "kasan/kasan.h"
#include "debugobjects/debugobjects.h"

#define MEMPOOL_MAX_NR (1 << 20)        /* odebug's bound on min_nr (host memory) */
#define MEMPOOL_RETRY_NS (5 * NSEC_PER_SEC)   /* io_schedule_timeout(5*HZ) */

enum mempool_kind { MEMPOOL_KMALLOC = ODB_MEMPOOL_KMALLOC, MEMPOOL_SLAB = ODB_MEMPOOL_SLAB,
		    MEMPOOL_PAGE = ODB_MEMPOOL_PAGE };

/* mempool_t */
struct mempool {
	struct list_head node;          /* the kernel's pools (tombstones too) */
	struct odb_kernel *k;
	spinlock_t lock;
	int min_nr;                     /* nr of elements at *elements */
	int curr_nr;                    /* current nr of elements at *elements */
	odb_addr_t *elements;           /* host array of arena addresses */
	enum mempool_kind kind;
	/* pool_data */
	size_t size;                    /* mempool_kmalloc */
	struct kmem_cache *cache;       /* mempool_alloc_slab */
	unsigned int order;             /* mempool_alloc_pages */
	bool destroyed;
	/* pool->wait: wake_seq moves at every element put back; waiters sleep
	 * on wait_cv under wait_mu */
	pthread_mutex_t wait_mu;
	pthread_cond_t wait_cv;
	atomic_ullong wake_seq;
	atomic_uint waiters;
};

struct odb_mempools {
	pthread_mutex_t lock;
	struct list_head pools;
};

static struct odb_mempools *mempools(struct odb_kernel *k)
{
	return slab_state(k)->mempools;
}

int odb_mempool_init(struct odb_kernel *k)
{
	struct odb_mempools *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	pthread_mutex_init(&m->lock, NULL);
	INIT_LIST_HEAD(&m->pools);
	slab_state(k)->mempools = m;
	return 0;
}

static void pool_free_struct(struct mempool *pool)
{
	free(pool->elements);
	pthread_cond_destroy(&pool->wait_cv);
	pthread_mutex_destroy(&pool->wait_mu);
	spin_lock_destroy(&pool->lock);
	free(pool);
}

/* With the kernel: the pools' host memory (their elements are arena memory,
 * which goes with the arena). */
void odb_mempool_exit(struct odb_kernel *k)
{
	struct odb_mempools *m = slab_state(k) ? mempools(k) : NULL;
	struct list_head *pos, *n;

	if (!m)
		return;
	list_for_each_safe(pos, n, &m->pools) {
		struct mempool *pool = list_entry(pos, struct mempool, node);

		list_del(&pool->node);
		pool_free_struct(pool);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
	slab_state(k)->mempools = NULL;
}

/* ---- the standard pools' alloc and free functions ---------------------------------- */
/* A page element: the first page of an allocated (non-slab) block of order. */
static bool mempool_page_block(struct odb_kernel *k, odb_addr_t a, unsigned int order)
{
	struct page *pg;

	if (!odb_in_arena(k, a, PAGE_SIZE) || (a & (PAGE_SIZE - 1)))
		return false;
	pg = virt_to_page(k, a);
	return pg && (READ_ONCE(pg->flags) & PG_alloc) && !(READ_ONCE(pg->flags) & PG_slab) &&
	       READ_ONCE(pg->order) == order;
}

static void *mempool_kmalloc(gfp_t gfp_mask, struct mempool *pool)
{
	return kmalloc(pool->k, pool->size, gfp_mask);
}

static void mempool_kfree(void *element, struct mempool *pool)
{
	kfree(pool->k, element);
}

static void *mempool_alloc_slab(gfp_t gfp_mask, struct mempool *pool)
{
	return kmem_cache_alloc(pool->k, pool->cache, gfp_mask);
}

static void mempool_free_slab(void *element, struct mempool *pool)
{
	kmem_cache_free(pool->k, pool->cache, element);
}

static void *mempool_alloc_pages(gfp_t gfp_mask, struct mempool *pool)
{
	struct page *pg = alloc_pages(pool->k, gfp_mask, pool->order);

	return pg ? virt_to_host(pool->k, page_address(pool->k, pg)) : NULL;
}

/* false: not an allocated block of the pool's order, not freed */
static bool mempool_free_pages(void *element, struct mempool *pool)
{
	struct odb_kernel *k = pool->k;
	odb_addr_t a = host_to_virt(k, element);

	if (!mempool_page_block(k, a, pool->order))
		return false;
	__free_pages(k, virt_to_page(k, a), pool->order);
	return true;
}

/* pool->alloc(gfp, pool->pool_data) */
static void *pool_alloc(struct mempool *pool, gfp_t gfp_mask)
{
	switch (pool->kind) {
	case MEMPOOL_KMALLOC: return mempool_kmalloc(gfp_mask, pool);
	case MEMPOOL_SLAB: return mempool_alloc_slab(gfp_mask, pool);
	default: return mempool_alloc_pages(gfp_mask, pool);
	}
}

/* pool->free(element, pool->pool_data): false if a page element was refused */
static bool pool_free(struct mempool *pool, void *element)
{
	switch (pool->kind) {
	case MEMPOOL_KMALLOC: mempool_kfree(element, pool); return true;
	case MEMPOOL_SLAB: mempool_free_slab(element, pool); return true;
	default: return mempool_free_pages(element, pool);
	}
}

/* ---- the reserve ------------------------------------------------------------------- */
/* KASAN's view of an element going into the reserve: poisoned as freed, or
 * (false, after a report) a bad free that must not be kept. */
static bool kasan_poison_element(struct mempool *pool, void *element, unsigned long ip)
{
	struct odb_kernel *k = pool->k;

	if (pool->kind == MEMPOOL_PAGE)
		return kasan_mempool_poison_pages(k, host_to_virt(k, element), pool->order, ip);
	return kasan_mempool_poison_object(k, element, ip);
}

static void kasan_unpoison_element(struct mempool *pool, void *element)
{
	struct odb_kernel *k = pool->k;

	switch (pool->kind) {
	case MEMPOOL_KMALLOC:
		kasan_mempool_unpoison_object(k, element, pool->size);
		break;
	case MEMPOOL_SLAB:
		kasan_mempool_unpoison_object(k, element, kmem_cache_object_size(pool->cache));
		break;
	default:
		kasan_mempool_unpoison_pages(k, host_to_virt(k, element), pool->order);
	}
}

/* add_element, under pool->lock: ODB_OK (kept, or a bad free KASAN reported
 * and did not keep, as the kernel does), or ODB_EINVAL for a page element
 * that is no block of the pool's order (not kept). */
static int add_element(struct mempool *pool, void *element, unsigned long ip)
{
	struct odb_kernel *k = pool->k;

	if (pool->kind == MEMPOOL_PAGE) {
		odb_addr_t a = host_to_virt(k, element);
		struct page *pg = virt_to_page(k, a);
		bool head = !(a & (PAGE_SIZE - 1)) && pg && (READ_ONCE(pg->flags) & PG_alloc);

		/* odebug's check first: an allocated block of another kind or
		 * order would corrupt the page allocator when freed as this pool's */
		if (head && !mempool_page_block(k, a, pool->order))
			return odb_err(k, ODB_EINVAL, "mempool_free: 0x%llx is not a block of order %u "
				       "(%s)", (unsigned long long)a, pool->order,
				       (READ_ONCE(pg->flags) & PG_slab) ? "a slab page" : "another order");
		/* KASAN: a free page (double-free), inside a block (invalid-free) */
		if (!kasan_poison_element(pool, element, ip))
			return ODB_OK;
		if (!head)
			return odb_err(k, ODB_EINVAL, "mempool_free: 0x%llx is not an allocated page block",
				       (unsigned long long)a);
	} else if (!kasan_poison_element(pool, element, ip)) {
		return ODB_OK;
	}
	pool->elements[pool->curr_nr] = host_to_virt(k, element);
	KCSAN_ACCESS(k, pool->curr_nr, true, true);
	WRITE_ONCE(pool->curr_nr, pool->curr_nr + 1);
	return ODB_OK;
}

/* remove_element, under pool->lock (curr_nr > 0) */
static void *remove_element(struct mempool *pool)
{
	struct odb_kernel *k = pool->k;
	void *element;

	KCSAN_ACCESS(k, pool->curr_nr, true, true);
	WRITE_ONCE(pool->curr_nr, pool->curr_nr - 1);
	element = virt_to_host(k, pool->elements[pool->curr_nr]);
	kasan_unpoison_element(pool, element);
	return element;
}

/* wake_up(&pool->wait) */
static void mempool_wake_up(struct mempool *pool)
{
	atomic_fetch_add(&pool->wake_seq, 1);
	if (atomic_load(&pool->waiters)) {
		pthread_mutex_lock(&pool->wait_mu);
		pthread_cond_broadcast(&pool->wait_cv);
		pthread_mutex_unlock(&pool->wait_mu);
	}
}

/* mempool_destroy: every element of the reserve back to the allocator; the
 * host struct stays as a tombstone (the kernel's pool goes). */
static __attribute__((noinline)) void mempool_destroy(struct mempool *pool)
{
	struct odb_kernel *k = pool->k;
	bool cache_gone = pool->kind == MEMPOOL_SLAB && pool->cache->destroyed;
	unsigned long flags;

	spin_lock_irqsave(k, &pool->lock, flags);
	while (pool->curr_nr) {
		void *element = remove_element(pool);

		spin_unlock_irqrestore(k, &pool->lock, flags);
		if (!cache_gone)
			pool_free(pool, element);
		spin_lock_irqsave(k, &pool->lock, flags);
	}
	WRITE_ONCE(pool->destroyed, true);
	free(pool->elements);
	pool->elements = NULL;
	WRITE_ONCE(pool->min_nr, 0);
	spin_unlock_irqrestore(k, &pool->lock, flags);
	mempool_wake_up(pool);          /* waiters see it destroyed */
}

/* mempool_create_node: the pool with min_nr elements preallocated
 * (GFP_KERNEL), or NULL (with the ODB_* status in *err). */
static __attribute__((noinline))
struct mempool *mempool_create(struct odb_kernel *k, int min_nr, enum mempool_kind kind,
			       size_t size, struct kmem_cache *cache, unsigned int order,
			       unsigned long ip, int *err)
{
	struct mempool *pool = calloc(1, sizeof(*pool));
	struct odb_mempools *m = mempools(k);

	if (pool)
		pool->elements = calloc((size_t)min_nr + 1, sizeof(*pool->elements));
	if (!pool || !pool->elements) {
		free(pool);
		*err = odb_err(k, ODB_ENOMEM, "mempool_create: out of host memory");
		return NULL;
	}
	spin_lock_init(&pool->lock);
	pthread_mutex_init(&pool->wait_mu, NULL);
	pthread_cond_init(&pool->wait_cv, NULL);
	atomic_init(&pool->wake_seq, 0);
	atomic_init(&pool->waiters, 0);
	pool->k = k;
	pool->min_nr = min_nr;
	pool->kind = kind;
	pool->size = size;
	pool->cache = cache;
	pool->order = order;
	pthread_mutex_lock(&m->lock);
	list_add_tail(&pool->node, &m->pools);
	pthread_mutex_unlock(&m->lock);
	/* First pre-allocate the guaranteed number of buffers. */
	while (pool->curr_nr < pool->min_nr) {
		void *element = pool_alloc(pool, GFP_KERNEL);
		int before = pool->curr_nr, r;

		if (unlikely(!element)) {
			*err = odb_err(k, ODB_ENOMEM, "mempool_create: element %d of %d could not be "
				       "allocated", pool->curr_nr + 1, min_nr);
			mempool_destroy(pool);
			return NULL;
		}
		{
			unsigned long flags;

			spin_lock_irqsave(k, &pool->lock, flags);
			r = add_element(pool, element, ip);
			spin_unlock_irqrestore(k, &pool->lock, flags);
		}
		if (unlikely(r || pool->curr_nr == before)) {
			/* a fresh element the reserve did not take (cannot happen) */
			pool_free(pool, element);
			*err = odb_err(k, ODB_ENOMEM, "mempool_create: element %d of %d was refused",
				       before + 1, min_nr);
			mempool_destroy(pool);
			return NULL;
		}
	}
	*err = ODB_OK;
	return pool;
}

static bool pool_has_element(void *arg)
{
	struct mempool *pool = arg;

	return READ_ONCE(pool->curr_nr) || READ_ONCE(pool->destroyed) ||
	       atomic_load(&pool->k->closed);
}

/* Wait for a mempool_free (pool->wait) or MEMPOOL_RETRY_NS; seq is wake_seq
 * as it was under pool->lock when the reserve was found empty.  ODB_EINTR
 * when the poll hook asks to stop. */
static int mempool_wait(struct mempool *pool, unsigned long long seq, uint64_t *poll_last)
{
	struct odb_kernel *k = pool->k;
	uint64_t deadline;
	void *cookie = NULL;
	int r = ODB_OK;

	if (odb_sched_wait(k, ODB_SITE(ODB_SP_LOCK, "mempool_alloc: wait for an element"),
			   pool_has_element, pool))
		return ODB_OK;
	if (k->wait_before)
		k->wait_before(k->wait_hook_ctx, &cookie);
	deadline = odb_host_ns() + MEMPOOL_RETRY_NS;
	pthread_mutex_lock(&pool->wait_mu);
	while (atomic_load(&pool->wake_seq) == seq && !READ_ONCE(pool->destroyed) &&
	       !atomic_load(&k->closed)) {
		uint64_t now = odb_host_ns(), until;
		struct timespec ts;

		if (now >= deadline)
			break;
		until = deadline - now < ODB_POLL_NS ? deadline - now : ODB_POLL_NS;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(until / NSEC_PER_SEC);
		ts.tv_nsec += (long)(until % NSEC_PER_SEC);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&pool->wait_cv, &pool->wait_mu, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&pool->wait_mu);
			r = odb_poll(k, poll_last);
			pthread_mutex_lock(&pool->wait_mu);
			if (r)
				break;
		}
	}
	pthread_mutex_unlock(&pool->wait_mu);
	if (cookie && k->wait_after)
		k->wait_after(k->wait_hook_ctx, cookie);
	return r;
}

/* The pool is gone under a caller (destroyed, its cache destroyed, the
 * kernel closed): ODB_* status, 0 if it is usable. */
static int pool_gone(struct mempool *pool, const char *what)
{
	struct odb_kernel *k = pool->k;

	if (atomic_load(&k->closed))
		return odb_err(k, ODB_ECLOSED, "%s: the kernel was closed", what);
	if (READ_ONCE(pool->destroyed))
		return odb_err(k, ODB_ESTATE, "%s: the mempool was destroyed", what);
	if (pool->kind == MEMPOOL_SLAB && pool->cache->destroyed)
		return odb_err(k, ODB_ESTATE, "%s: the mempool's cache %s was destroyed", what,
			       pool->cache->name);
	return 0;
}

/* mempool_alloc: the allocator first (without direct reclaim or IO), then
 * the reserve, then the allocator with the caller's gfp, then -- for a
 * caller that may block -- a wait for an element given back, and again.
 * NULL with *err ODB_ENOMEM (may not block), or another status. */
static __attribute__((noinline)) void *mempool_alloc(struct mempool *pool, gfp_t gfp_mask, int *err)
{
	struct odb_kernel *k = pool->k;
	uint64_t poll_last = 0;
	unsigned long flags;
	gfp_t gfp_temp;
	void *element;

	*err = ODB_OK;
	gfp_mask |= __GFP_NOWARN;       /* failures are OK (no __GFP_NOMEMALLOC/NORETRY here) */
	gfp_temp = gfp_mask & ~(__GFP_DIRECT_RECLAIM | ODB_GFP_IO);

repeat_alloc:
	if ((*err = pool_gone(pool, "mempool_alloc")))
		return NULL;
	element = pool_alloc(pool, gfp_temp);
	if (likely(element != NULL))
		return element;

	spin_lock_irqsave(k, &pool->lock, flags);
	if (unlikely(pool->destroyed)) {
		spin_unlock_irqrestore(k, &pool->lock, flags);
		goto repeat_alloc;      /* pool_gone says so */
	}
	if (likely(pool->curr_nr)) {
		element = remove_element(pool);
		spin_unlock_irqrestore(k, &pool->lock, flags);
		return element;
	}

	/* We use gfp mask w/o direct reclaim or IO for the first round: if that
	 * failed and the pool was empty, retry immediately. */
	if (gfp_temp != gfp_mask) {
		spin_unlock_irqrestore(k, &pool->lock, flags);
		gfp_temp = gfp_mask;
		goto repeat_alloc;
	}

	/* We must not sleep without __GFP_DIRECT_RECLAIM */
	if (!(gfp_mask & __GFP_DIRECT_RECLAIM)) {
		spin_unlock_irqrestore(k, &pool->lock, flags);
		*err = odb_err(k, ODB_ENOMEM, "mempool_alloc: the allocator failed and the reserve "
			       "is empty");
		return NULL;
	}

	/* Wait for someone else to return an element to the pool. */
	{
		unsigned long long seq = atomic_load(&pool->wake_seq);

		atomic_fetch_add(&pool->waiters, 1);
		spin_unlock_irqrestore(k, &pool->lock, flags);
		*err = mempool_wait(pool, seq, &poll_last);
		atomic_fetch_sub(&pool->waiters, 1);
		if (*err)
			return NULL;
	}
	goto repeat_alloc;
}

/* mempool_alloc_preallocated: an element of the reserve, or NULL */
static __attribute__((noinline)) void *mempool_alloc_preallocated(struct mempool *pool)
{
	struct odb_kernel *k = pool->k;
	void *element = NULL;
	unsigned long flags;

	spin_lock_irqsave(k, &pool->lock, flags);
	if (likely(pool->curr_nr))
		element = remove_element(pool);
	spin_unlock_irqrestore(k, &pool->lock, flags);
	return element;
}

/* mempool_free: into the reserve while it is short of min_nr (KASAN poisons
 * it there), else back to the allocator. */
static __attribute__((noinline))
int mempool_free(void *element, struct mempool *pool, unsigned long ip)
{
	struct odb_kernel *k = pool->k;
	unsigned long flags;
	int r;

	if (unlikely(element == NULL))
		return ODB_OK;
	/* Testing curr_nr < min_nr without the lock: see the kernel's comment
	 * (a value after the element's allocation, refilled as soon as can be). */
	if (unlikely(READ_ONCE_RACY(k, pool->curr_nr, true) < READ_ONCE(pool->min_nr))) {
		spin_lock_irqsave(k, &pool->lock, flags);
		if (likely(pool->curr_nr < pool->min_nr)) {
			r = add_element(pool, element, ip);
			spin_unlock_irqrestore(k, &pool->lock, flags);
			mempool_wake_up(pool);
			return r;
		}
		spin_unlock_irqrestore(k, &pool->lock, flags);
	}
	if (!pool_free(pool, element))
		return odb_err(k, ODB_EINVAL, "mempool_free: 0x%llx is not an allocated block of "
			       "order %u: not freed", (unsigned long long)host_to_virt(k, element),
			       pool->order);
	return ODB_OK;
}

/* mempool_resize: shrink (elements beyond new_min_nr back to the allocator)
 * or grow (a larger array, filled as far as GFP_KERNEL allocations go). */
static __attribute__((noinline))
int mempool_resize(struct mempool *pool, int new_min_nr, unsigned long ip)
{
	struct odb_kernel *k = pool->k;
	odb_addr_t *new_elements;
	unsigned long flags;
	void *element;
	int r;

	spin_lock_irqsave(k, &pool->lock, flags);
	if (new_min_nr <= pool->min_nr) {
		while (new_min_nr < pool->curr_nr) {
			element = remove_element(pool);
			spin_unlock_irqrestore(k, &pool->lock, flags);
			pool_free(pool, element);
			spin_lock_irqsave(k, &pool->lock, flags);
		}
		WRITE_ONCE(pool->min_nr, new_min_nr);
		spin_unlock_irqrestore(k, &pool->lock, flags);
		return ODB_OK;
	}
	spin_unlock_irqrestore(k, &pool->lock, flags);

	/* Grow the pool */
	new_elements = calloc((size_t)new_min_nr + 1, sizeof(*new_elements));
	if (!new_elements)
		return odb_err(k, ODB_ENOMEM, "mempool_resize: out of host memory");

	spin_lock_irqsave(k, &pool->lock, flags);
	if (unlikely(new_min_nr <= pool->min_nr || pool->destroyed)) {
		/* Raced, another resize will do our work */
		spin_unlock_irqrestore(k, &pool->lock, flags);
		free(new_elements);
		return ODB_OK;
	}
	memcpy(new_elements, pool->elements, (size_t)pool->curr_nr * sizeof(*new_elements));
	free(pool->elements);
	pool->elements = new_elements;
	WRITE_ONCE(pool->min_nr, new_min_nr);

	while (pool->curr_nr < pool->min_nr) {
		spin_unlock_irqrestore(k, &pool->lock, flags);
		element = pool_alloc(pool, GFP_KERNEL);
		if (!element)
			return ODB_OK;
		spin_lock_irqsave(k, &pool->lock, flags);
		if (pool->curr_nr < pool->min_nr && !pool->destroyed) {
			r = add_element(pool, element, ip);
			if (r) {
				spin_unlock_irqrestore(k, &pool->lock, flags);
				pool_free(pool, element);
				return r;
			}
		} else {
			spin_unlock_irqrestore(k, &pool->lock, flags);
			pool_free(pool, element);       /* Raced */
			return ODB_OK;
		}
	}
	spin_unlock_irqrestore(k, &pool->lock, flags);
	return ODB_OK;
}

/* ---- public API ------------------------------------------------------------------------ */
#define ENTER(k) struct odb_task *t_ = odb_enter(k); if (!t_) return odb_enter_failed(k)
#define LEAVE(r) return odb_leave(t_, (r))

static int bad_pool(odb_kernel *k, odb_mempool *pool, const char *what)
{
	if (!pool)
		return odb_err(k, ODB_EINVAL, "%s: no mempool given", what);
	if (pool->k != k)
		return odb_err(k, ODB_EINVAL, "%s: the mempool belongs to another kernel", what);
	return pool_gone(pool, what);
}

static int check_min_nr(odb_kernel *k, int min_nr, const char *what)
{
	if (min_nr < 0 || min_nr > MEMPOOL_MAX_NR)
		return odb_err(k, ODB_EINVAL, "%s: min_nr %d out of range (0..%d)", what, min_nr,
			       MEMPOOL_MAX_NR);
	return 0;
}

static int create_common(odb_kernel *k, int min_nr, enum mempool_kind kind, size_t size,
			 struct kmem_cache *cache, unsigned int order, unsigned long ip,
			 odb_mempool **out)
{
	int err;
	ENTER(k);

	*out = NULL;
	if ((err = check_min_nr(k, min_nr, "mempool_create")))
		LEAVE(err);
	switch (kind) {
	case MEMPOOL_KMALLOC:
		if (!size || size > KMALLOC_MAX_SIZE)
			LEAVE(odb_err(k, ODB_EINVAL, "mempool_create_kmalloc_pool: size %zu out of range "
				      "(1..%lu)", size, (unsigned long)KMALLOC_MAX_SIZE));
		break;
	case MEMPOOL_SLAB:
		if (!cache)
			LEAVE(odb_err(k, ODB_EINVAL, "mempool_create_slab_pool: no cache given"));
		if (cache->k != k)
			LEAVE(odb_err(k, ODB_EINVAL, "mempool_create_slab_pool: cache %s belongs to "
				      "another kernel", cache->name));
		if (cache->destroyed)
			LEAVE(odb_err(k, ODB_ESTATE, "mempool_create_slab_pool: cache %s was destroyed",
				      cache->name));
		if (cache_has_ctor(cache))   /* VM_BUG_ON(mem->ctor) in mempool_alloc_slab */
			LEAVE(odb_err(k, ODB_EINVAL, "mempool_create_slab_pool: cache %s has a "
				      "constructor (mempool_alloc_slab refuses one)", cache->name));
		break;
	default:
		if (order > MAX_PAGE_ORDER)
			LEAVE(odb_err(k, ODB_EINVAL, "mempool_create_page_pool: order %u > "
				      "MAX_PAGE_ORDER (%d)", order, MAX_PAGE_ORDER));
	}
	*out = mempool_create(k, min_nr, kind, size, cache, order, ip, &err);
	LEAVE(err);
}

int odb_mempool_create_kmalloc_pool(odb_kernel *k, int min_nr, size_t size, odb_mempool **out)
{
	return create_common(k, min_nr, MEMPOOL_KMALLOC, size, NULL, 0,
			     (unsigned long)__builtin_return_address(0), out);
}

int odb_mempool_create_slab_pool(odb_kernel *k, int min_nr, odb_cache *s, odb_mempool **out)
{
	return create_common(k, min_nr, MEMPOOL_SLAB, 0, s, 0,
			     (unsigned long)__builtin_return_address(0), out);
}

int odb_mempool_create_page_pool(odb_kernel *k, int min_nr, unsigned int order, odb_mempool **out)
{
	return create_common(k, min_nr, MEMPOOL_PAGE, 0, NULL, order,
			     (unsigned long)__builtin_return_address(0), out);
}

int odb_mempool_alloc(odb_kernel *k, odb_mempool *pool, unsigned int gfp, odb_addr_t *out)
{
	void *element;
	int r;
	ENTER(k);

	*out = 0;
	if ((r = bad_pool(k, pool, "mempool_alloc")))
		LEAVE(r);
	if (gfp & __GFP_ZERO)   /* VM_WARN_ON_ONCE(gfp_mask & __GFP_ZERO) */
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_alloc: __GFP_ZERO is not supported"));
	element = mempool_alloc(pool, gfp, &r);
	if (element)
		*out = host_to_virt(k, element);
	LEAVE(r);
}

int odb_mempool_alloc_preallocated(odb_kernel *k, odb_mempool *pool, odb_addr_t *out)
{
	void *element;
	int r;
	ENTER(k);

	*out = 0;
	if ((r = bad_pool(k, pool, "mempool_alloc_preallocated")))
		LEAVE(r);
	element = mempool_alloc_preallocated(pool);
	if (!element)
		LEAVE(odb_err(k, ODB_ENOMEM, "mempool_alloc_preallocated: the reserve is empty"));
	*out = host_to_virt(k, element);
	LEAVE(ODB_OK);
}

int odb_mempool_free(odb_kernel *k, odb_mempool *pool, odb_addr_t element)
{
	void *p;
	int r;
	ENTER(k);

	if ((r = bad_pool(k, pool, "mempool_free")))
		LEAVE(r);
	if (!element)
		LEAVE(ODB_OK);
	if (!odb_in_arena(k, element, 1))
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_free: 0x%llx is not an address in this kernel's "
			      "memory", (unsigned long long)element));
	p = virt_to_host(k, element);
	if (pool->kind != MEMPOOL_PAGE && debug_objects_refuse_free(k, p, "mempool_free"))
		LEAVE(ODB_OK);   /* a tracker of debug objects: reported */
	LEAVE(mempool_free(p, pool, (unsigned long)__builtin_return_address(0)));
}

int odb_mempool_resize(odb_kernel *k, odb_mempool *pool, int new_min_nr)
{
	int r;
	ENTER(k);

	if ((r = bad_pool(k, pool, "mempool_resize")))
		LEAVE(r);
	if (new_min_nr <= 0 || new_min_nr > MEMPOOL_MAX_NR)   /* BUG_ON(new_min_nr <= 0) */
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_resize: new_min_nr %d out of range (1..%d)",
			      new_min_nr, MEMPOOL_MAX_NR));
	LEAVE(mempool_resize(pool, new_min_nr, (unsigned long)__builtin_return_address(0)));
}

int odb_mempool_destroy(odb_kernel *k, odb_mempool *pool)
{
	ENTER(k);

	if (!pool)
		LEAVE(ODB_OK);          /* mempool_destroy(NULL) */
	if (pool->k != k)
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_destroy: the mempool belongs to another kernel"));
	if (READ_ONCE(pool->destroyed))
		LEAVE(odb_err(k, ODB_ESTATE, "mempool_destroy: the mempool was already destroyed"));
	mempool_destroy(pool);
	LEAVE(ODB_OK);
}

int odb_mempool_info(odb_kernel *k, odb_mempool *pool, struct odb_mempool_info *out)
{
	unsigned long flags;
	ENTER(k);

	memset(out, 0, sizeof(*out));
	if (!pool)
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_info: no mempool given"));
	if (pool->k != k)
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_info: the mempool belongs to another kernel"));
	spin_lock_irqsave(k, &pool->lock, flags);
	out->kind = (int)pool->kind;
	out->min_nr = pool->min_nr;
	out->curr_nr = pool->curr_nr;
	out->size = pool->kind == MEMPOOL_SLAB ? pool->cache->object_size : pool->size;
	out->order = pool->order;
	out->cache = pool->cache;
	out->destroyed = pool->destroyed;
	spin_unlock_irqrestore(k, &pool->lock, flags);
	LEAVE(ODB_OK);
}

int odb_mempool_elements(odb_kernel *k, odb_mempool *pool, odb_addr_t *out, size_t max, size_t *n)
{
	unsigned long flags;
	ENTER(k);

	*n = 0;
	if (!pool)
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_elements: no mempool given"));
	if (pool->k != k)
		LEAVE(odb_err(k, ODB_EINVAL, "mempool_elements: the mempool belongs to another kernel"));
	spin_lock_irqsave(k, &pool->lock, flags);
	*n = (size_t)pool->curr_nr;
	for (size_t i = 0; i < *n && i < max; i++)
		out[i] = pool->elements[i];
	spin_unlock_irqrestore(k, &pool->lock, flags);
	LEAVE(ODB_OK);
}
