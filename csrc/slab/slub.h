/*
 * SLUB internals shared by slub.c (the allocator) and slub_debug.c
 * (slub_debug: layout, checks, reports, validate, the boot parameter).
 */
#ifndef ODB_SLAB_SLUB_H
#define ODB_SLAB_SLUB_H

#include "slab/slab.h"

/* CONFIG_SLUB_STATS items, in the kernel's order and sysfs names. */
enum stat_item {
	ALLOC_FASTPATH, ALLOC_SLOWPATH, FREE_FASTPATH, FREE_SLOWPATH, FREE_FROZEN,
	FREE_ADD_PARTIAL, FREE_REMOVE_PARTIAL, ALLOC_FROM_PARTIAL, ALLOC_SLAB, ALLOC_REFILL,
	ALLOC_NODE_MISMATCH, FREE_SLAB, CPUSLAB_FLUSH, DEACTIVATE_FULL, DEACTIVATE_EMPTY,
	DEACTIVATE_TO_HEAD, DEACTIVATE_TO_TAIL, DEACTIVATE_REMOTE_FREES, DEACTIVATE_BYPASS,
	ORDER_FALLBACK, CMPXCHG_DOUBLE_CPU_FAIL, CMPXCHG_DOUBLE_FAIL, CPU_PARTIAL_ALLOC,
	CPU_PARTIAL_FREE, CPU_PARTIAL_NODE, CPU_PARTIAL_DRAIN, NR_SLUB_STAT_ITEMS
};
extern const char *const slub_stat_names[NR_SLUB_STAT_ITEMS];

/* counters word: inuse:16 | objects:15 | frozen:1 (the kernel's bitfields) */
#define SLAB_INUSE(c)    ((unsigned int)((c) & 0xffff))
#define SLAB_OBJECTS(c)  ((unsigned int)(((c) >> 16) & 0x7fff))
#define SLAB_FROZEN(c)   ((unsigned int)(((c) >> 31) & 1))
/* Each field wraps within its own bits, as the kernel's bitfields do: a double
 * free that takes inuse below 0 leaves 0xffff there, never borrows from objects
 * (objects bounds every walk over the slab's memory). */
#define SLAB_COUNTERS(inuse, objects, frozen) \
	((unsigned long)((inuse) & 0xffffu) | ((unsigned long)((objects) & 0x7fffu) << 16) | \
	 ((unsigned long)((frozen) & 1u) << 31))
#define MAX_OBJS_PER_PAGE 32767

/* struct slab overlays struct page's priv[] (include/linux/mm_types.h).  Its
 * field order is host cache-line placement (the kernel's is not observable):
 * priv[] starts at byte 16 of the 128-byte struct page, so the
 * words that every free, quarantine eviction and per-CPU partial push touch
 * -- freelist, counters, slab_cache, base, next, slabs, pobjects -- share the
 * page's first cache line with flags and head: a cold slab costs one line,
 * not two.  The node-list words and the debug lock take the second. */
struct slab {
	_Alignas(16) void *freelist;    /* freelist + counters: one double word */
	unsigned long counters;
	struct kmem_cache *slab_cache;
	void *base;                     /* slab_address(), cached at allocation */
	struct slab *next;              /* per-CPU partial chain */
	int slabs;                      /* slabs left on the chain from here */
	int pobjects;                   /* approximate free objects on the chain */
	struct list_head slab_list;     /* node partial or full list */
	atomic_int lock;                /* slab_lock() when cmpxchg is not allowed */
	unsigned int order;
};
_Static_assert(sizeof(struct slab) <= sizeof(((struct page *)0)->priv), "struct slab fits in page");
_Static_assert(offsetof(struct page, priv) + offsetof(struct slab, slab_list) <= 64,
	       "the hot struct slab words share the struct page's first cache line");
/* a large kmalloc's size: the last word of priv[], past struct slab */
#define ODB_PAGE_PRIV_LARGE_SIZE 11
_Static_assert(sizeof(struct slab) <= ODB_PAGE_PRIV_LARGE_SIZE * sizeof(uint64_t),
	       "the large kmalloc size word is past struct slab");

/* struct track (SLAB_STORE_USER): 32 bytes with a stack-depot handle. */
enum track_item { TRACK_ALLOC, TRACK_FREE };
struct track {
	unsigned long addr;             /* caller */
	uint32_t handle;                /* depot stack */
	int cpu;
	int pid;
	int _pad;
	unsigned long when;             /* jiffies */
};
_Static_assert(sizeof(struct track) == 32, "struct track is 32 bytes");

struct kmem_cache_cpu {
	void *freelist;
	unsigned long tid;
	struct slab *slab;
	struct slab *partial;
	unsigned long stat[NR_SLUB_STAT_ITEMS];
} __attribute__((aligned(64)));

struct kmem_cache_node {
	struct odb_bspinlock list_lock; /* a spinlock that may be biased to one thread (kernel.h) */
	unsigned long nr_partial;
	struct list_head partial;
	struct list_head full;          /* only with SLAB_STORE_USER */
	_Atomic long nr_slabs;
	_Atomic long total_objects;
};

/*
 * check_object's plan (issue 16): the 16-byte chunks of a slot, counted from
 * object - red_left_pad, in which check_object compares bytes with a constant
 * (red zones, poison, alignment and object padding), each with the expected
 * bytes and the mask of its compared bytes (two host-order words each).  A
 * slot of a length that is no multiple of 16 ends with a chunk that overlaps
 * the one before it.  The kmalloc red zone past orig_size varies by object
 * and is checked on its own.  ok = false: no plan (a slot shorter than 16 or
 * longer than CHECK_PLAN_BYTES bytes or not a whole number of words, more than
 * CHECK_PLAN_CHUNKS such chunks, or ranges that overlap): the checks one by one.
 */
#define CHECK_PLAN_CHUNKS 24
#define CHECK_PLAN_BYTES 1024
struct check_plan {
	bool ok;
	uint8_t val;                        /* the red zones' value it was made for */
	uint16_t n;
	uint16_t off[CHECK_PLAN_CHUNKS];    /* byte offset of the chunk */
	uint64_t exp[CHECK_PLAN_CHUNKS][2]; /* its expected bytes */
	uint64_t mask[CHECK_PLAN_CHUNKS][2];/* 0xff where a check reads the byte */
};

struct kmem_cache {
	struct kmem_cache_cpu *cpu_slab;    /* [nr_cpu_ids] */
	slab_flags_t flags;
	unsigned long min_partial;
	unsigned int size;                  /* slot size, with metadata */
	unsigned int object_size;
	unsigned int offset;                /* free pointer offset */
	unsigned int cpu_partial;
	unsigned int order;                 /* oo */
	unsigned int objects;
	unsigned int min_order, min_objects;
	unsigned int inuse;                 /* object + right redzone */
	unsigned int align;
	unsigned int red_left_pad;
	unsigned int reserved;
	/* size = odd << size_shift; size_inv = odd's inverse mod 2^64: the
	 * division-free exact-division test of check_valid_pointer */
	uint64_t size_inv;
	unsigned int size_shift;
	/* ceil(2^64 / size): slab_div's multiplier */
	uint64_t size_recip;
	void (*ctor)(void *);
	odb_ctor_fn pctor;                  /* public-API constructor (with context) */
	void *pctor_ctx;
	char *name;
	struct list_head list;              /* k->slab_caches */
	int refcount;
	struct kmem_cache_node node;
	struct odb_kernel *k;
	bool kmalloc;
	bool internal;                      /* odebug's own (debug_objects_cache, a scenario's) */
	bool destroyed;                     /* kmem_cache_destroy() ran: a tombstone */
	bool zombie;                        /* destroyed with objects left (kept with its slabs) */
	/* The cache's descriptor as the kernel sees it: an object of the
	 * "kmem_cache" cache in the arena, freed by kmem_cache_destroy() (whose
	 * kasan_check_byte() on it catches a second destroy).  This host struct
	 * stays, as a tombstone, until the kernel goes. */
	void *desc;
	uintptr_t fp_bias;                  /* host - kernel address: k->ram - k->page_offset_base */
	uintptr_t fp_ram;                   /* k->ram: freeptr_valid()'s arena offsets */
	uintptr_t fp_mask;                  /* (PAGE_SIZE << order) - 1 */
	uintptr_t fp_last;                  /* (PAGE_SIZE << order) - size: last slot's offset */
	uintptr_t fp_base;                  /* k->ram + red_left_pad */
	bool fastpath;                      /* no debug flag, T or KASAN: the inline fast paths run */
	bool fastfree;                      /* fastpath, and no debug_check_no_obj_freed on free */
	bool check_obj_freed;               /* debug_check_no_obj_freed on free (while debug objects are on) */
	bool rcu_debug;                     /* SLAB_TYPESAFE_BY_RCU with SLUB_RCU_DEBUG: frees deferred */
	bool api_fastfree;                  /* fastfree, and odb_kfree's fast path may free here */
	bool kasan;                         /* kasan_enabled() (fixed at boot), read on every slow path */
	bool api_kasan_fast;                /* a kmalloc cache with KASAN and nothing else: the
					       public API's KASAN fast paths (issue 16) */
	bool modern_debug;                  /* a debug cache on the modern flows (odebug.slub_path=modern) */
	bool free_runs;                     /* the quarantine may free runs (do_slab_free_run): no
					       debug flag, no controlled scheduler (tests clear
					       it, to compare with the single frees) */
	_Atomic unsigned long free_run_objs[2]; /* for tests: objects of runs of more than one
					       freed onto the vCPU's slab [0], by one cmpxchg [1] */
	bool debug_checks;                  /* consistency checks on alloc/free: F, or any debug flag when locked */
	bool init_poison_only;              /* init_object = the poison alone (P without Z, no orig_size) */
	bool modern_fast;                   /* modern flows, poison alone, 16..64 B, no hook: inline cases */
	bool debug_init_only;               /* modern flows, no checks, no U, no T: debug processing = init_object */
	/* KASAN (generic) metadata offsets, set by kasan_cache_create */
	int kasan_alloc_meta_offset;
	int kasan_free_meta_offset;
	unsigned int kasan_meta_size;
	/* check_object's plans: [0] for SLUB_RED_ACTIVE, [1] for SLUB_RED_INACTIVE */
	struct check_plan check_plan[2];
};

/* the arena stand-in of a struct kmem_cache (the "kmem_cache" cache's objects) */
#define KMEM_CACHE_DESC_SIZE 256

/* Per-kernel slab state (k->slab). */
#define KMALLOC_SHIFT_LOW  3
#define KMALLOC_SHIFT_HIGH 13        /* kmalloc-8192: PAGE_SHIFT + 1 */
#define KMALLOC_MAX_CACHE_SIZE (1UL << KMALLOC_SHIFT_HIGH)
#define KMALLOC_MAX_SIZE (PAGE_SIZE << MAX_PAGE_ORDER)
struct slub_debug_block;

/* relaxed: the 2016 series; locked: before it; modern: the v6.2+ debug flows
 * (one object at a time from partial/new slabs under list_lock, no freezing,
 * frees through free_to_partial_list) with the relaxed rules for checks. */
enum slub_path { SLUB_PATH_RELAXED = 0, SLUB_PATH_LOCKED = 1, SLUB_PATH_MODERN = 2 };

struct odb_slab_state {
	struct mutex slab_mutex;            /* slab_caches list, create/destroy */
	struct list_head slab_caches;
	struct list_head zombies;           /* destroyed with objects left: kept, as the kernel keeps them */
	struct list_head dead;              /* destroyed: tombstones, freed with the kernel */
	struct kmem_cache *kmem_cache;      /* the "kmem_cache" cache: every cache's descriptor */
	struct kmem_cache *kmalloc_caches[KMALLOC_SHIFT_HIGH + 1];
	/* slub_debug= */
	slab_flags_t slub_debug;            /* global flags */
	bool disable_higher_order_debug;
	struct slub_debug_block *blocks;    /* per-cache-list blocks */
	size_t nblocks;
	char *slub_debug_str;
	enum slub_path path;
	struct odb_rcu *rcu;                /* kvfree_rcu (rcu.c) */
	int rcu_debug;                      /* odebug.slub_rcu_debug=: -1 default (with KASAN), 0, 1 */
	struct odb_mempools *mempools;      /* the kernel's mempools (mempool.c) */
};

/* spin_lock(&n->list_lock) / spin_unlock(): through its bias when it has one */
#define node_lock(s, n)   odb_bspin_lock(&(n)->list_lock, odb_current_slot((s)->k))
#define node_unlock(s, n) odb_bspin_unlock(&(n)->list_lock, odb_current_slot((s)->k))

static inline struct odb_slab_state *slab_state(struct odb_kernel *k)
{
	return (struct odb_slab_state *)k->slab;
}

static inline struct slab *page_slab(struct page *p) { return (struct slab *)p->priv; }
static inline struct page *slab_page(const struct slab *s)
{
	return container_of((uint64_t *)s, struct page, priv[0]);
}
static inline void *slab_address(struct odb_kernel *k, const struct slab *s)
{
	(void)k;
	return s->base;
}
static inline size_t slab_size(const struct slab *s) { return PAGE_SIZE << s->order; }
static inline bool cache_has_ctor(const struct kmem_cache *s) { return s->ctor || s->pctor; }
static inline bool kmem_cache_debug(const struct kmem_cache *s)
{
	return s->flags & SLAB_DEBUG_FLAGS;
}
static inline bool kmem_cache_has_cpu_partial(const struct kmem_cache *s)
{
	return !kmem_cache_debug(s);
}
/* Free pointers inside objects hold kernel (arena) addresses, as the kernel's
 * do: object dumps and raw reads are the same in every run.  A corrupted value
 * outside the arena decodes to a pointer check_valid_pointer() rejects. */
static inline void *get_freepointer(const struct kmem_cache *s, void *object)
{
	odb_addr_t v;
	memcpy(&v, (char *)object + s->offset, sizeof(v));
	uintptr_t p = s->fp_bias + (uintptr_t)v;

	return (void *)(v ? p : 0);   /* a cmov rather than a branch */
}
static inline void set_freepointer(const struct kmem_cache *s, void *object, void *fp)
{
	odb_addr_t e = (odb_addr_t)((uintptr_t)fp - s->fp_bias), v = fp ? e : 0;
	memcpy((char *)object + s->offset, &v, sizeof(v));
}
/*
 * The trust boundary (issue 18): a free pointer is read from arena memory,
 * which users overwrite at will, so before the allocator follows one it must
 * be NULL or a slot that lies whole (left red zone included) in the
 * preferred-order block holding the object it was read from.  Buddy blocks are
 * aligned to their size, and the arena's mapping is RAM rounded up to the
 * largest block (page_alloc.c), so such a slot is always mapped memory: one
 * subtraction chain and one compare.  A pointer that passes may still be
 * misaligned or point into a neighbouring smaller slab; that corrupts
 * simulated memory only, never anything outside the arena.
 */
static inline bool freeptr_valid(const struct kmem_cache *s, const void *object, const void *fp)
{
	uintptr_t block = ((uintptr_t)object - s->fp_ram) & ~s->fp_mask;

	return !fp || (uintptr_t)fp - s->fp_base - block <= s->fp_last;
}
void *freelist_corrupted(struct kmem_cache *s, void *object, void *fp);
/* get_freepointer() for the allocation paths: a corrupt link is reported
 * ("Freechain corrupt"), cut ("Isolate corrupted freechain") and reads NULL. */
static inline void *get_freepointer_checked(struct kmem_cache *s, void *object)
{
	void *fp = get_freepointer(s, object);

	if (unlikely(!freeptr_valid(s, object, fp)))
		return freelist_corrupted(s, object, fp);
	return fp;
}
/* The debug allocation paths: with consistency checks (F) the kernel follows
 * the link and alloc_debug_processing() rejects a bad object before it is
 * touched ("Freelist Pointer check fails"), so F keeps that; without F the
 * kernel would oops, and odebug isolates the chain instead. */
static inline void *get_freepointer_debug(struct kmem_cache *s, void *object)
{
	return (s->flags & SLAB_CONSISTENCY_CHECKS) ? get_freepointer(s, object)
						    : get_freepointer_checked(s, object);
}
static inline unsigned int size_from_object(const struct kmem_cache *s)
{
	return (s->flags & SLAB_RED_ZONE) ? s->size - s->red_left_pad : s->size;
}
/* stat(): a per-vCPU counter, updated under that vCPU's irq lock (or, on the
 * modern debug flows, list_lock) and read without it.  One writer at a time:
 * a relaxed load and store, which on x86-64 is one add to memory (the
 * compilers do not fuse the atomic pair; the asm does, and a reader sees the
 * old or the new count, as with the pair).  Sanitizer builds keep the pair. */
static inline void stat_c(struct kmem_cache_cpu *c, enum stat_item si)
{
	unsigned long *p = &c->stat[si];
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
	__asm__("addq $1, %0" : "+m"(*p));
#else
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}
static inline void stat_cpu(struct kmem_cache *s, int cpu, enum stat_item si)
{
	stat_c(&s->cpu_slab[cpu], si);
}

/* Slab freelist/counters reads outside the slab lock. */
static inline void *slab_freelist(struct slab *sl) { return __atomic_load_n(&sl->freelist, __ATOMIC_ACQUIRE); }
static inline unsigned long slab_counters(struct slab *sl) { return __atomic_load_n(&sl->counters, __ATOMIC_ACQUIRE); }
/* slab_lock(): the bit lock of a slab that may not use cmpxchg (plain halves
 * in slub.c; under the controlled scheduler acquire and release are points). */
void __slab_lock(struct slab *sl);
void __slab_unlock(struct slab *sl);
static inline void slab_lock_at(struct kmem_cache *s, struct slab *sl, const struct odb_sched_site *site)
{
	if (unlikely(s->flags & __SCHED_POINTS))
		odb_sched_acquire(s->k, site, ODB_LK_BIT, &sl->lock);
	else
		__slab_lock(sl);
}
static inline void slab_unlock_at(struct kmem_cache *s, struct slab *sl, const struct odb_sched_site *site)
{
	if (unlikely(s->flags & __SCHED_POINTS))
		odb_sched_release(s->k, site, ODB_LK_BIT, &sl->lock);
	else
		__slab_unlock(sl);
}
#define slab_lock(s, sl)   slab_lock_at((s), (sl), ODB_SITE(ODB_SP_LOCK, "slab_lock"))
#define slab_unlock(s, sl) slab_unlock_at((s), (sl), ODB_SITE(ODB_SP_UNLOCK, "slab_unlock"))
/* Set freelist/counters with the slab lock held (or on an unshared slab). */
static inline void slab_set(struct slab *sl, void *fl, unsigned long c)
{
	__atomic_store_n(&sl->freelist, fl, __ATOMIC_RELEASE);
	__atomic_store_n(&sl->counters, c, __ATOMIC_RELEASE);
}

/* Object lookup: the slab holding host pointer x (NULL if not a slab page).
 * Inline: every free makes it (virt_to_head_page on the arena offset). */
static inline struct slab *virt_to_slab(struct odb_kernel *k, const void *x)
{
	uintptr_t off = (uintptr_t)x - (uintptr_t)k->ram;   /* below ram: wraps, rejected */
	struct page *pg;

	if (off >= k->ram_bytes)
		return NULL;
	pg = &k->pages[off >> PAGE_SHIFT];
	if (READ_ONCE(pg->flags) & PG_tail)
		pg = &k->pages[pg->head];
	if (!(READ_ONCE(pg->flags) & PG_slab))
		return NULL;
	return page_slab(pg);
}
/* Start of the object slot containing x, relative to the slab (object pointer). */
void *nearest_obj(struct kmem_cache *s, struct slab *sl, const void *x);
/* slab_div's multiplier for a slot size of at least 2: ceil(2^64 / size) */
static inline uint64_t slab_size_recip(unsigned int size)
{
	return UINT64_MAX / size + 1;
}
/* x / s->size for x < 2^32 (an offset in a slab, a slab's size) without a
 * division: the high word of x * ceil(2^64 / size), exact while x * size <
 * 2^64 (as the kernel's obj_to_index takes a reciprocal; a 64-bit divide
 * costs tens of cycles, and a debug pair made five) */
static inline uint32_t slab_div(const struct kmem_cache *s, uint64_t x)
{
	return (uint32_t)(((unsigned __int128)x * s->size_recip) >> 64);
}
/* The slot index of object in a slab at base when it is a slot's start,
 * else a value no slab reaches (an exact division by s->size: a multiply by
 * its odd part's inverse, rotated by its power of two) */
static inline uint64_t slot_index(const struct kmem_cache *s, const void *base, const void *object)
{
	uint64_t off = (uint64_t)((uintptr_t)object - s->red_left_pad - (uintptr_t)base);
	uint64_t q = off * s->size_inv;
	unsigned int r = s->size_shift;

	return (q >> r) | (q << ((64 - r) & 63));
}
/* check_valid_pointer: object is NULL or exactly the start of an object of sl.
 * Inline: every free makes it.  One multiply and a rotate: for off = object
 * slot offset from the slab base (wrapping below it), q = ror(off * size_inv,
 * size_shift) is off / size when size divides off, and exceeds
 * UINT64_MAX / size otherwise (the Granlund-Montgomery exact-division test),
 * so q < objects says "in the slab" and "on an object boundary" at once. */
static inline bool check_valid_pointer(struct kmem_cache *s, struct slab *sl, void *object)
{
	if (!object)
		return true;
	return slot_index(s, slab_address(s->k, sl), object) < SLAB_OBJECTS(slab_counters(sl));
}
struct track *get_track(struct kmem_cache *s, void *object, enum track_item alloc);
unsigned int *get_orig_size_ptr(struct kmem_cache *s, void *object);
unsigned int get_info_end(const struct kmem_cache *s);

/* kmem_cache_create with a public constructor; *err gets the ODB_* status. */
struct kmem_cache *__kmem_cache_create(struct odb_kernel *k, const char *name, unsigned int size,
				       unsigned int align, slab_flags_t flags, void (*ctor)(void *),
				       odb_ctor_fn pctor, void *pctor_ctx, int *err);
struct kmem_cache *kmem_cache_find(struct odb_kernel *k, const char *name);
/* The kmalloc cache of a size (NULL: 0 or past KMALLOC_MAX_CACHE_SIZE). */
struct kmem_cache *kmalloc_slab(struct odb_kernel *k, size_t size);
/*
 * The public API's KASAN fast paths (issue 16), for odb_kmalloc/odb_kfree
 * before their API call's bookkeeping (odb_enter), like the no-debug fast
 * paths: the slow path's work, the same state, without its layers; fp is the
 * API function's frame (the saved stacks are its chain after the slow path's
 * inner frames: kasan.h).
 * kmalloc_kasan_fast: 1 when it did nothing (the caller takes the slow
 * path), else the API call's result (ODB_OK; ODB_EBUG when an eviction or a
 * new slab it needed reported; ODB_ENOMEM, with odb_strerror()'s message,
 * when no slab could be had) with *out the object (NULL on ODB_ENOMEM).
 * kfree_kasan_fast: false when it did nothing.
 */
int kmalloc_kasan_fast(struct odb_kernel *k, size_t size, gfp_t gfp, void *fp, void **out);
bool kfree_kasan_fast(struct odb_kernel *k, void *x, void *fp);
/* The template key of a slow kmalloc(size, gfp) (0: no fast path for it). */
uint64_t kmalloc_kasan_tmpl_key(struct odb_kernel *k, size_t size, gfp_t gfp);
/* The template key of a slow kfree(x) (0: no fast path for it). */
uint64_t kfree_kasan_tmpl_key(struct odb_kernel *k, const void *x);
/* odb_kmalloc / odb_kfree's full paths (slab_api.c), which their fast paths
 * (slub.c) tail-call */
int __odb_kmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out);
int __odb_kfree(odb_kernel *k, odb_addr_t x);
void *slab_alloc_public(struct kmem_cache *s, gfp_t gfp, unsigned long addr, unsigned int orig_size);

/* mempools (mempool.c) */
int odb_mempool_init(struct odb_kernel *k);
void odb_mempool_exit(struct odb_kernel *k);

/* kvfree_rcu and SLUB_RCU_DEBUG's deferred frees (rcu.c) */
int odb_rcu_init(struct odb_kernel *k);
void odb_rcu_exit(struct odb_kernel *k);
int kvfree_rcu(struct odb_kernel *k, void *obj);
void kvfree_rcu_barrier(struct odb_kernel *k);
/* call_rcu: fn(k, head's arena address, ctx) after a grace period */
int call_rcu(struct odb_kernel *k, void *head, odb_rcu_callback_fn fn, void *ctx);
void rcu_barrier(struct odb_kernel *k);
/* call_rcu(&delayed_free->head, slab_free_after_rcu_debug) for object obj
 * and its record rec; ODB_ENOMEM if it could not be queued. */
int call_rcu_slab_free(struct odb_kernel *k, void *obj, void *rec);
/* SLUB_RCU_DEBUG (slub.c): sizeof(struct rcu_delayed_free): rcu_head + object */
#define SLUB_RCU_DELAYED_FREE_SIZE 24
bool slab_free_defer_rcu_debug(struct kmem_cache *s, void *x);
void slab_free_after_rcu_debug(struct odb_kernel *k, void *object, void *rec);

/* ---- slub_debug (slub_debug.c) --------------------------------------------- */
#define SLUB_RED_INACTIVE 0xbb
#define SLUB_RED_ACTIVE   0xcc
#define POISON_INUSE      0x5a
#define POISON_FREE       0x6b
#define POISON_END        0xa5

slab_flags_t kmem_cache_flags(struct odb_kernel *k, unsigned int object_size,
			      slab_flags_t flags, const char *name);
int calculate_sizes(struct kmem_cache *s);
void setup_slab_debug(struct kmem_cache *s, struct slab *sl, void *addr);
void setup_object_debug(struct kmem_cache *s, void *object);
void set_track(struct kmem_cache *s, void *object, enum track_item alloc, unsigned long addr);
void init_tracking(struct kmem_cache *s, void *object);
void set_orig_size(struct kmem_cache *s, void *object, unsigned int orig_size);
unsigned int get_orig_size(struct kmem_cache *s, void *object);
/* kmalloc caches with U track the requested size (v6.2-6.11 rule). */
static inline bool slub_debug_orig_size(const struct kmem_cache *s)
{
	return (s->flags & SLAB_STORE_USER) && (s->flags & SLAB_KMALLOC);
}
/* POISON_FREE over [p, p + n), 16 <= n <= 64: four overlapping 16-byte stores
 * and no call (the debug flows keep their registers across it). */
static inline void poison_fill_16_64(uint8_t *p, size_t n)
{
	typedef uint8_t v16 __attribute__((vector_size(16)));
	const v16 pf = { POISON_FREE, POISON_FREE, POISON_FREE, POISON_FREE,
			 POISON_FREE, POISON_FREE, POISON_FREE, POISON_FREE,
			 POISON_FREE, POISON_FREE, POISON_FREE, POISON_FREE,
			 POISON_FREE, POISON_FREE, POISON_FREE, POISON_FREE };

	memcpy(p, &pf, 16);
	memcpy(p + n - 16, &pf, 16);
	if (n > 32) {
		memcpy(p + 16, &pf, 16);
		memcpy(p + n - 32, &pf, 16);
	}
}
/* An object's poison: POISON_FREE, and POISON_END in its last byte. */
static inline void poison_object_16_64(void *object, unsigned int n)
{
	poison_fill_16_64(object, n);
	((uint8_t *)object)[n - 1] = POISON_END;
}
static inline void poison_object(void *object, unsigned int n)
{
	if (likely(n - 16 <= 64 - 16))
		poison_fill_16_64(object, n);
	else
		memset(object, POISON_FREE, n);
	((uint8_t *)object)[n - 1] = POISON_END;
}
/* init_object: red zones to val, the object to POISON_FREE..POISON_END (up to
 * orig_size when an allocation tracks it).  Inline: every debug alloc/free. */
static inline void init_object(struct kmem_cache *s, void *object, uint8_t val)
{
	uint8_t *p = object;
	unsigned int poison_size = s->object_size;

	if (likely(s->init_poison_only)) {
		poison_object(p, poison_size);
		return;
	}
	if (s->flags & SLAB_RED_ZONE)
		memset(p - s->red_left_pad, val, s->red_left_pad);
	if (slub_debug_orig_size(s) && val == SLUB_RED_ACTIVE)
		poison_size = get_orig_size(s, object);
	if (s->flags & __OBJECT_POISON) {
		poison_object(p, poison_size);
	}
	if (s->flags & SLAB_RED_ZONE)
		memset(p + poison_size, val, s->inuse - poison_size);
}
int alloc_debug_processing(struct kmem_cache *s, struct slab *sl, void *object,
			   unsigned long addr, unsigned int orig_size);
/* Returns 1 to go on freeing.  In the locked path, *locked tells the caller
 * that list_lock is held on return (the pre-2016 "keep node lock").  In the
 * modern path the caller (free_to_partial_list) holds list_lock already. */
int free_debug_processing(struct kmem_cache *s, struct slab *sl, void *head, void *tail,
			  int bulk_cnt, unsigned long addr, bool *locked);
int check_object(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val);
/* Makes s's check_object plans (calculate_sizes, once the layout is known). */
void check_plan_build(struct kmem_cache *s);
/* Whether the plan of val passes object: then every byte check of
 * check_object would (the test's hook; false also when there is no plan). */
bool check_object_planned(struct kmem_cache *s, void *object, uint8_t val);
/* check_object's byte checks one by one, reporting (its first part; the
 * test's reference for the plan). */
int check_object_bytes(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val);
int check_slab(struct kmem_cache *s, struct slab *sl);
int on_freelist(struct kmem_cache *s, struct slab *sl, void *search);
void slab_pad_check(struct kmem_cache *s, struct slab *sl);
/* lib/string.c memchr_inv: first byte of [p, p+n) other than v, or NULL (word-wise) */
uint8_t *memchr_inv(uint8_t *p, uint8_t v, size_t n);
static inline bool freeptr_outside_object(const struct kmem_cache *s)
{
	return s->offset >= s->inuse;
}
/* check_object's byte checks by the cache's plan (slub_debug.c: check_plan_build):
 * true only when every one of them would pass */
static inline __attribute__((always_inline)) bool
__check_object_planned(struct kmem_cache *s, uint8_t *p, uint8_t val)
{
	typedef uint64_t v2u64 __attribute__((vector_size(16)));
	const struct check_plan *pl = &s->check_plan[val != SLUB_RED_ACTIVE];
	const uint8_t *base = p - s->red_left_pad;
	v2u64 d = { 0, 0 };

	if (!pl->ok || pl->val != val)
		return false;
	for (unsigned int i = 0; i < pl->n; i++) {
		v2u64 w, e, m;

		/* (memcpy: unaligned loads, no aliasing assumption) */
		memcpy(&w, base + pl->off[i], sizeof(w));
		memcpy(&e, pl->exp[i], sizeof(e));
		memcpy(&m, pl->mask[i], sizeof(m));
		d |= (w ^ e) & m;
	}
	if (d[0] | d[1])
		return false;
	if ((s->flags & SLAB_RED_ZONE) && slub_debug_orig_size(s) && val == SLUB_RED_ACTIVE) {
		unsigned int orig = get_orig_size(s, p);

		if (s->object_size > orig && memchr_inv(p + orig, val, s->object_size - orig))
			return false;
	}
	return true;
}
/* check_object's last check: the free pointer is NULL or an object of sl,
 * unless the object is allocated and overlaps it (then it holds data) */
static inline bool check_object_freeptr_ok(struct kmem_cache *s, struct slab *sl, void *object,
					   uint8_t val)
{
	return (!freeptr_outside_object(s) && val == SLUB_RED_ACTIVE) ||
	       check_valid_pointer(s, sl, get_freepointer(s, object));
}
/* check_object inline where it passes (issue 16): the plan's byte checks and
 * the free pointer's; anything else -- a fault to report, no plan -- is
 * check_object's own, called, so that its reports show it in their stacks. */
static inline __attribute__((always_inline)) int
check_object_inline(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val)
{
	if (likely(__check_object_planned(s, object, val)) &&
	    check_object_freeptr_ok(s, sl, object, val))
		return 1;
	return check_object(s, sl, object, val);
}
/* trace(): SLAB_TRACE's line (and the object on free) plus the stack; the
 * flag test inline, the work in trace_object(). */
void trace_object(struct kmem_cache *s, struct slab *sl, void *object, int alloc);
static inline void trace(struct kmem_cache *s, struct slab *sl, void *object, int alloc)
{
	if (unlikely(s->flags & SLAB_TRACE))
		trace_object(s, sl, object, alloc);
}
long validate_slab_cache(struct kmem_cache *s);
void list_slab_objects(struct kmem_cache *s, struct slab *sl, const char *text);
void slab_err(struct kmem_cache *s, struct slab *sl, const char *kind, const char *fmt, ...)
	__printf(4, 5);
void object_err(struct kmem_cache *s, struct slab *sl, uint8_t *object, const char *reason);
void slab_bad_free(struct odb_kernel *k, const char *kind, const char *fmt, ...) __printf(3, 4);
/* kfree() of a vmalloc address: reported (KASAN's invalid-free), nothing freed. */
void kfree_vmalloc_addr(struct odb_kernel *k, odb_addr_t x, unsigned long ip);
/* kvmalloc: kmalloc, else vmalloc (0 on failure). */
odb_addr_t kvmalloc_node(struct odb_kernel *k, size_t size, gfp_t flags, unsigned long caller);
void print_tracking(struct kmem_cache *s, void *object, struct odb_report_impl *r);
int setup_slub_debug(struct odb_kernel *k, const char *str);
void slub_debug_show(struct odb_kernel *k, char *buf, size_t len);
void slub_debug_exit(struct odb_kernel *k);
/* The KUnit counting rule: one per report, per FIX, per count mismatch. */
void slab_add_kunit_errors(struct odb_kernel *k);
/* slab_in_kunit_test(): the calling task is inside odb_slab_kunit_begin/end */
bool slab_in_kunit_test(struct odb_kernel *k);

/* allocator pieces slub_debug.c uses */
void flush_all(struct kmem_cache *s);
void discard_slab(struct kmem_cache *s, struct slab *sl);
/* the free path after the hooks (the quarantine frees through it) */
void do_slab_free(struct kmem_cache *s, struct slab *sl, void *head, void *tail, int cnt,
		  unsigned long addr);
/* do_slab_free_run: objs[0..n) of slab sl, freed exactly as n do_slab_free()
 * calls in that order free them (freelist, counters, lists, statistics), in
 * one irq-off section.  Only where s->free_runs. */
#define SLAB_FREE_RUN_MAX 64
void do_slab_free_run(struct kmem_cache *s, struct slab *sl, void *const *objs, unsigned int n,
		      unsigned long addr);
odb_addr_t slab_virt(struct kmem_cache *s, const void *p);

#endif /* ODB_SLAB_SLUB_H */
