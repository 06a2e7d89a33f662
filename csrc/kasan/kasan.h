/*
 * Generic KASAN (mm/kasan/): shadow memory over the RAM arena, the hooks the
 * slab and page allocators call, checked accesses, reports, and the
 * quarantine in both designs (odebug.quarantine=batched|quarter).
 *
 * Files: kasan.c (common.c: the allocator hooks, boot, parameters),
 * generic.c (shadow.c + generic.c: poisoning, the access checks, the public
 * access API), report.c (report.c + report_generic.c), quarantine.c.
 *
 * All state hangs off k->kasan (struct kasan_state).  Two regions of kernel
 * addresses have shadow: the arena (the direct map) and vmalloc space.  Shadow
 * byte i of a region covers its bytes [8i, 8i+8): shadow(addr) = region's
 * shadow + ((addr - region start) >> 3), the kernel's (addr >> 3) +
 * KASAN_SHADOW_OFFSET with those regions as its memory.  Each shadow is its
 * own NORESERVE mapping, never the page allocator's RAM.  Any other address
 * has no shadow (addr_has_metadata() false): a "wild" access.
 */
#ifndef ODB_KASAN_KASAN_H
#define ODB_KASAN_KASAN_H

#include "slab/slab.h"

struct slab;
struct kmem_cache;

/* ---- constants (spec §1.2, §2.1, §2.2) ---------------------------------------- */
#define KASAN_SHADOW_SCALE_SHIFT 3
#define KASAN_GRANULE_SIZE       (1UL << KASAN_SHADOW_SCALE_SHIFT)
#define KASAN_GRANULE_MASK       (KASAN_GRANULE_SIZE - 1)

#define KASAN_PAGE_FREE         0xFF  /* freed page */
#define KASAN_PAGE_REDZONE      0xFE  /* redzone of a kmalloc_large allocation */
#define KASAN_SLAB_REDZONE      0xFC  /* slab redzone, unallocated slab space */
#define KASAN_SLAB_FREE         0xFB  /* freed slab object */
#define KASAN_SLAB_FREE_META    0xFA  /* freed object, free meta valid */
#define KASAN_GLOBAL_REDZONE    0xF9
#define KASAN_VMALLOC_INVALID   0xF8
#define KASAN_STACK_LEFT        0xF1
#define KASAN_STACK_MID         0xF2
#define KASAN_STACK_RIGHT       0xF3
#define KASAN_STACK_PARTIAL     0xF4
#define KASAN_ALLOCA_LEFT       0xCA
#define KASAN_ALLOCA_RIGHT      0xCB

#define QUARANTINE_PERCPU_SIZE  (1UL << 20)
#define QUARANTINE_FRACTION     32
#define QUARANTINE_BATCHES_FOR(nr_cpus) \
	(1024 > 4 * (unsigned long)(nr_cpus) ? 1024UL : 4 * (unsigned long)(nr_cpus))

#define KASAN_NO_FREE_META      0x7fffffff   /* free_meta_offset: no free meta */
#define KASAN_TASK_SIZE         0x00007ffffffff000ULL   /* x86-64 TASK_SIZE_MAX */

/* ---- per-object metadata (generic) ----------------------------------------------- *
 * Both live in the arena (alloc meta after the object, free meta at offset 0 of
 * the freed object or in the redzone), so they are read/written with memcpy. */
struct kasan_track {
	uint32_t pid;
	uint32_t stack;                 /* depot handle, 0 = none */
};
/* The link lives in the free meta, which the kernel's layout can place at a
 * 4-byte offset (slub_debug=U on a kmalloc cache adds the 4-byte orig_size
 * before KASAN's metadata; x86 does not mind, C does): the arena address is
 * kept as bytes (alignment 1) and read and written with memcpy only. */
struct qlist_node {
	unsigned char next[sizeof(odb_addr_t)];   /* arena address of the next node, 0 = end */
};
struct kasan_alloc_meta {
	struct kasan_track alloc_track;
	uint32_t aux_stack[2];
};
struct kasan_free_meta {
	struct qlist_node quarantine_link;
	struct kasan_track free_track;
};
_Static_assert(sizeof(struct kasan_alloc_meta) == 16, "alloc meta is 16 bytes");
_Static_assert(sizeof(struct kasan_free_meta) == 16, "free meta is 16 bytes");
_Static_assert(_Alignof(struct kasan_free_meta) <= 4 && _Alignof(struct kasan_alloc_meta) <= 4,
	       "KASAN metadata may sit at a 4-byte offset");

/* ---- quarantine ------------------------------------------------------------------- */
struct qlist_head {
	struct qlist_node *head;        /* host pointers to links in the arena */
	struct qlist_node *tail;
	size_t bytes;
	bool offline;
};

enum quarantine_policy { QUARANTINE_BATCHED = 0, QUARANTINE_QUARTER = 1 };
/* odebug.quarantine_fixes=: the quarantine's concurrency as of a kernel version
 * (both designs).  v4.10: puts move a full per-CPU list with interrupts on,
 * reduce frees its batch with nothing to wait for it, remove_cache (cache
 * destroy) waits for nothing, and a vCPU going offline keeps its list;
 * v4.11 ("kasan: fix races in quarantine_remove_cache()"): interrupts off across
 * put, an SRCU read section around reduce's free, synchronize_srcu at the end of
 * remove_cache; v5.10 ("kasan: fix object remaining in offline per-cpu
 * quarantine"): the hotplug callback drains an offline vCPU's list and its puts
 * free at once. */
enum quarantine_fixes { QUARANTINE_V5_10 = 0, QUARANTINE_V4_11 = 1, QUARANTINE_V4_10 = 2 };

#define KASAN_HIST_BUCKETS 64           /* log2 buckets */
#define KASAN_TIME_BUCKETS 256          /* 4 sub-buckets per power of two (ns) */

struct quarantine_stats {
	uint64_t put_calls, put_refused, flushes;
	uint64_t reduce_calls, reduce_slow, reduce_evicting;
	uint64_t evicted_objects, evicted_bytes;
	uint64_t max_evict_bytes, max_evict_objects;
	uint64_t evict_bytes_hist[KASAN_HIST_BUCKETS];
	uint64_t evict_objects_hist[KASAN_HIST_BUCKETS];
	uint64_t free_ns_hist[KASAN_TIME_BUCKETS];
	uint64_t lock_ns_hist[KASAN_TIME_BUCKETS];
	uint64_t free_ns_max, lock_ns_max, free_ns_total, lock_ns_total;
	uint64_t lock_waits, lock_wait_ns_total, lock_wait_ns_max;   /* contended acquisitions */
	uint64_t remove_cache_calls, remove_cache_objects;
	uint64_t offline_objects;         /* freed at once by a vCPU going offline */
	uint64_t in_flight, peak_total;   /* bytes being freed by reducers; peak of all bytes */
};

/* Counts a vCPU's fast paths make inside its irq-off section: one writer at a
 * time (the section's owner), so a plain increment, no locked instruction;
 * the statistics add them to the shared ones.  One cache line each. */
struct quarantine_cpu_stats {
	_Alignas(64) _Atomic uint64_t put_calls;
	_Atomic uint64_t reduce_calls;
};
static inline void quarantine_cpu_stat_add(_Atomic uint64_t *v, uint64_t n)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

struct quarantine {
	enum quarantine_policy policy;
	enum quarantine_fixes fixes;
	struct qlist_head *cpu_quarantine;     /* [nr_cpu_ids], under each vCPU's irq lock */
	struct quarantine_cpu_stats *cpu_st;   /* [nr_cpu_ids], likewise */
	/* Q-2016 ring */
	struct qlist_head *global_quarantine;  /* [batches] */
	unsigned long batches;                 /* QUARANTINE_BATCHES */
	unsigned long quarantine_head, quarantine_tail;
	size_t quarantine_size;
	size_t quarantine_max_size;
	size_t quarantine_batch_size;
	/* Q-old: one list; its "quarantine_size" is the maximum */
	struct qlist_head old_global;
	size_t old_quarantine_size;
	raw_spinlock_t quarantine_lock;
	struct srcu_struct remove_cache_srcu;  /* reduce = reader, remove_cache synchronizes */
	pthread_mutex_t stats_lock;
	struct quarantine_stats st;
};

#define KASAN_TMPL_SLOTS 64   /* the public API's stack templates (kasan_tmpl_find) */
struct kasan_state {
	bool enabled;                 /* kasan=on (default) */
	bool fault_panic;             /* kasan.fault=panic */
	bool multi_shot;              /* kasan_multi_shot */
	bool booted;
	atomic_bool reported;         /* KASAN_BIT_REPORTED */
	_Atomic uint64_t detections;  /* every bad access / bad free seen */
	_Atomic uint64_t reports;     /* reports printed */
	_Atomic uint64_t suppressed;  /* detections not printed (single shot) */
	uint8_t *shadow;
	size_t shadow_size;
	/* vmalloc space's shadow: reserved at boot, made KASAN_VMALLOC_INVALID
	 * everywhere on first use (kasan_vmalloc_shadow), so a kernel that never
	 * touches vmalloc space pays nothing for it */
	uint8_t *vshadow;
	size_t vshadow_size;
	atomic_bool vshadow_ready;
	pthread_mutex_t vshadow_lock;
	pthread_mutex_t report_lock;  /* report_lock: one report at a time */
	struct quarantine q;
	enum quarantine_policy policy_arg;
	enum quarantine_fixes fixes_arg;
	/* the public API's fast paths: stack templates by code path (kasan.c) */
	pthread_mutex_t tmpl_lock;
	struct kasan_api_tmpl {
		_Atomic uint64_t key;         /* 0: free; published last (release) */
		struct odb_stack_tmpl t;
	} tmpl[KASAN_TMPL_SLOTS];
	/* the last template found for a key (a hint: its key is compared) */
	struct kasan_api_tmpl *_Atomic tmpl_hint[2];   /* [0] alloc, [1] free */
};

static inline struct kasan_state *kasan_state(struct odb_kernel *k)
{
	return (struct kasan_state *)k->kasan;
}
static inline bool kasan_enabled(struct odb_kernel *k)
{
	return k->kasan_on;   /* (kasan_state(k)->enabled and ->shadow) */
}
/* addr_has_metadata(): a lies in the arena or in vmalloc space. */
static inline bool addr_has_metadata(const struct odb_kernel *k, odb_addr_t a)
{
	return a - k->page_offset_base < k->ram_bytes || is_vmalloc_addr(k, a);
}
/* vmalloc space's shadow, filled with KASAN_VMALLOC_INVALID on first use. */
uint8_t *kasan_vmalloc_shadow_slow(struct odb_kernel *k);
static inline uint8_t *kasan_vmalloc_shadow(struct odb_kernel *k)
{
	struct kasan_state *ks = kasan_state(k);

	if (likely(atomic_load_explicit(&ks->vshadow_ready, memory_order_acquire)))
		return ks->vshadow;
	return kasan_vmalloc_shadow_slow(k);
}
/* For an address with shadow (addr_has_metadata). */
static inline uint8_t *kasan_mem_to_shadow(struct odb_kernel *k, odb_addr_t a)
{
	struct kasan_state *ks = kasan_state(k);

	if (likely(a - k->page_offset_base < k->ram_bytes))
		return ks->shadow + ((a - k->page_offset_base) >> KASAN_SHADOW_SCALE_SHIFT);
	return kasan_vmalloc_shadow(k) + ((a - k->vmalloc_start) >> KASAN_SHADOW_SCALE_SHIFT);
}
/* The end of the shadowed region holding a (addr_has_metadata(a)). */
static inline odb_addr_t kasan_region_end(const struct odb_kernel *k, odb_addr_t a)
{
	return a - k->page_offset_base < k->ram_bytes ? k->page_offset_base + k->ram_bytes
						      : k->vmalloc_start + k->vmalloc_size;
}
/* [a, a+len) lies in one shadowed region. */
static inline bool kasan_range_has_metadata(const struct odb_kernel *k, odb_addr_t a, size_t len)
{
	return odb_in_arena(k, a, len) || odb_in_vmalloc(k, a, len);
}
static inline uint8_t *kasan_host_to_shadow(struct odb_kernel *k, const void *p)
{
	return kasan_state(k)->shadow +
	       ((size_t)((const char *)p - k->ram) >> KASAN_SHADOW_SCALE_SHIFT);
}
/* A shadow byte that leaves its granule's first byte accessible (0 or a
 * partial granule's length): kasan_byte_accessible's rule. */
static inline bool kasan_shadow_byte_accessible(uint8_t v)
{
	return (int8_t)v >= 0 && (int8_t)v < (int8_t)KASAN_GRANULE_SIZE;
}
/* kasan_byte_accessible of a host pointer already known to be in the arena
 * (a slab object's: its shadow exists), inline for the free fast path. */
static inline bool kasan_host_byte_accessible(struct odb_kernel *k, const void *p)
{
	return kasan_shadow_byte_accessible(READ_ONCE(*kasan_host_to_shadow(k, p)));
}

/* ---- boot (kasan.c) ------------------------------------------------------------------ */
int kasan_early_init(struct odb_kernel *k);                 /* before the command line */
int kasan_init(struct odb_kernel *k, char *errbuf, size_t errlen);  /* before the slab */
void kasan_release_shadow(struct odb_kernel *k);
void kasan_exit(struct odb_kernel *k);
int kasan_param_on(struct odb_kernel *k, const char *val);
void kasan_param_on_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_fault(struct odb_kernel *k, const char *val);
void kasan_param_fault_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_multi_shot(struct odb_kernel *k, const char *val);
void kasan_param_multi_shot_show(struct odb_kernel *k, char *buf, size_t len);
int kasan_param_quarantine(struct odb_kernel *k, const char *val);
void kasan_param_quarantine_show(struct odb_kernel *k, char *buf, size_t len);

/* ---- the allocator hooks (kasan.c): called by slab/ where the kernel calls them ------ */
/* kasan_cache_create: may append KASAN metadata to the slot (sets
 * s->kasan_* and grows *size). */
void kasan_cache_create(struct kmem_cache *s, unsigned int *size, slab_flags_t *flags);
void kasan_poison_slab(struct kmem_cache *s, struct slab *sl);
void kasan_init_slab_obj(struct kmem_cache *s, void *object);
void kasan_unpoison_new_object(struct kmem_cache *s, void *object);
void kasan_poison_new_object(struct kmem_cache *s, void *object);
/* slab_post_alloc_hook: reduce the quarantine (may block), unpoison, alloc track */
void *kasan_slab_alloc(struct kmem_cache *s, void *object, gfp_t flags);
/* kmalloc's own hook: reduce again (may block), exact size, kmalloc redzone */
void *kasan_kmalloc(struct kmem_cache *s, void *object, size_t size, gfp_t flags);
void *kasan_kmalloc_large(struct odb_kernel *k, void *ptr, size_t size, gfp_t flags);
void *kasan_krealloc(struct odb_kernel *k, void *object, size_t new_size, gfp_t flags);
/* Invalid-free check (pointer not at an object start): true = reported, do
 * not free.  Called before SLUB looks at the pointer. */
bool kasan_slab_invalid_free(struct kmem_cache *s, struct slab *sl, void *object,
			     unsigned long ip);
/* kasan_slab_pre_free: true = a double free was reported: do not free. */
bool kasan_slab_pre_free(struct kmem_cache *s, void *object, unsigned long ip);
/* slab_free_hook: true = KASAN keeps the object (quarantine): the slab must
 * not free it.  still_accessible: an SLAB_TYPESAFE_BY_RCU object before its
 * grace period (neither poisoned nor quarantined). */
bool kasan_slab_free(struct kmem_cache *s, void *object, bool still_accessible);
/* kfree of a large kmalloc: true = invalid free reported, do not free. */
bool kasan_kfree_large(struct odb_kernel *k, void *ptr, unsigned long ip);
/* kasan_check_byte: false (after a report) if the byte is not accessible */
bool kasan_check_byte(struct odb_kernel *k, const void *addr, unsigned long ip);
/* call_rcu / kvfree_rcu / queue_work: remember the caller's stack in the alloc
 * meta of the slab object holding addr (host pointer); no-op for anything else */
void kasan_record_aux_stack(struct odb_kernel *k, void *addr);
/* kmem_cache_destroy: quarantined objects of s go back before shutdown */
void kasan_cache_shutdown(struct kmem_cache *s);
/* kasan_poison_pages / kasan_unpoison_pages (KASAN_PAGE_FREE / accessible) */
void kasan_poison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order);
void kasan_unpoison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order);
/* mempool's hooks (mm/kasan/common.c's kasan_mempool_*): poison returns
 * whether the element may be kept for reuse; false after an invalid-free or
 * double-free report (nothing poisoned).  ip: the caller named in a report. */
bool kasan_mempool_poison_object(struct odb_kernel *k, void *ptr, unsigned long ip);
void kasan_mempool_unpoison_object(struct odb_kernel *k, void *ptr, size_t size);
bool kasan_mempool_poison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order,
				unsigned long ip);
void kasan_mempool_unpoison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order);

/* ---- shadow and checks (generic.c) ---------------------------------------------------- */
void kasan_poison(struct odb_kernel *k, odb_addr_t addr, size_t size, uint8_t value);
void kasan_unpoison(struct odb_kernel *k, odb_addr_t addr, size_t size);
void kasan_poison_last_granule(struct odb_kernel *k, odb_addr_t addr, size_t size);
bool kasan_byte_accessible(struct odb_kernel *k, odb_addr_t addr);
/* The access check: true if OK; else a report was made (or counted). */
bool kasan_check_range(struct odb_kernel *k, odb_addr_t addr, size_t size, bool write,
		       unsigned long ret_ip);
odb_addr_t kasan_find_first_bad_addr(struct odb_kernel *k, odb_addr_t addr, size_t size);

/* vmalloc (mm/kasan/shadow.c): the caller's bytes of a new area become
 * accessible; a removed area goes back to KASAN_VMALLOC_INVALID. */
void kasan_unpoison_vmalloc(struct odb_kernel *k, odb_addr_t start, unsigned long size);
void kasan_poison_vmalloc(struct odb_kernel *k, odb_addr_t start, unsigned long size);

/* ---- reports (report.c) ------------------------------------------------------------------ */
enum kasan_report_type { KASAN_REPORT_ACCESS, KASAN_REPORT_INVALID_FREE, KASAN_REPORT_DOUBLE_FREE };
void kasan_report(struct odb_kernel *k, odb_addr_t addr, size_t size, bool is_write,
		  unsigned long ip);
void kasan_report_invalid_free(struct odb_kernel *k, odb_addr_t ptr, unsigned long ip,
			       enum kasan_report_type type);
const char *kasan_bug_type(struct odb_kernel *k, odb_addr_t addr, size_t size,
			   odb_addr_t first_bad);
/* (the metadata accessors: kasan/meta.h, inline) */
uint32_t kasan_save_stack(struct odb_kernel *k);

/* ---- the public API's KASAN fast paths (issue 16; kasan.c, slub.c) ------------------------ *
 * odb_kmalloc/odb_kfree of a kmalloc cache with nothing but KASAN (and debug
 * objects' free check) on it do the slow path's work -- the same shadow, meta,
 * tracks, statistics and quarantine -- without its layers; the two saved
 * stacks are the slow path's records through stack templates (kernel.h),
 * captured per code path from the slow path itself.  A key names the code
 * path of a save: every input the slow path's control flow on the frame chain
 * depends on. */
static inline uint64_t kasan_tmpl_key_alloc(unsigned int cache_idx, size_t size,
					    unsigned int object_size, unsigned int gfp)
{
	return (1ULL << 62) | ((uint64_t)gfp << 16) | ((uint64_t)cache_idx << 2) |
	       ((size & KASAN_GRANULE_MASK) ? 2u : 0u) |
	       (ALIGN(size, KASAN_GRANULE_SIZE) < ALIGN(object_size, KASAN_GRANULE_SIZE) ? 1u : 0u);
}
static inline uint64_t kasan_tmpl_key_free(bool debug_check)
{
	return (1ULL << 61) | (debug_check ? 1u : 0u);
}
/* Where a key's probe starts in kasan_state's template table. */
static inline unsigned int kasan_tmpl_home(uint64_t key)
{
	return (unsigned int)((key * 0x9e3779b97f4a7c15ULL) >> 58) % KASAN_TMPL_SLOTS;
}
static inline const struct odb_stack_tmpl *kasan_tmpl_find(struct odb_kernel *k, uint64_t key)
{
	struct kasan_state *ks = kasan_state(k);
	unsigned int n = KASAN_TMPL_SLOTS, i = kasan_tmpl_home(key);
	struct kasan_api_tmpl *_Atomic *hint = &ks->tmpl_hint[(key >> 61) & 1];
	struct kasan_api_tmpl *h = atomic_load_explicit(hint, memory_order_relaxed);

	/* (a slot's key never changes once published: a hint whose key matches
	 * is that slot, and its acquire load orders the template's reads) */
	if (h && atomic_load_explicit(&h->key, memory_order_acquire) == key)
		return &h->t;
	for (unsigned int probe = 0; probe < n; probe++, i = (i + 1) % n) {
		uint64_t have = atomic_load_explicit(&ks->tmpl[i].key, memory_order_acquire);

		if (have == key) {
			atomic_store_explicit(hint, &ks->tmpl[i], memory_order_relaxed);
			return &ks->tmpl[i].t;
		}
		if (!have)
			return NULL;
	}
	return NULL;
}
/* kasan_poison / kasan_unpoison of a slab object (host pointer, granule
 * aligned, inside the arena): the shadow stores alone, the same bytes. */
static inline void kasan_shadow_set_obj(struct odb_kernel *k, const void *p, size_t size,
					uint8_t v)
{
	uint8_t *sh = kasan_host_to_shadow(k, p);
	size_t n = (size + KASAN_GRANULE_SIZE - 1) >> KASAN_SHADOW_SCALE_SHIFT;
	uint64_t w = v * 0x0101010101010101ULL;

	if (n >= 8 && n <= 16) {
		memcpy(sh, &w, 8);
		memcpy(sh + n - 8, &w, 8);
	} else {
		memset(sh, v, n);
	}
}
static inline void kasan_unpoison_obj(struct odb_kernel *k, const void *p, size_t size)
{
	kasan_shadow_set_obj(k, p, size, 0);
	if (size & KASAN_GRANULE_MASK)
		*kasan_host_to_shadow(k, (const char *)p + size) = (uint8_t)(size & KASAN_GRANULE_MASK);
}
/* After a slow path's call that made exactly one KASAN save (handle), from
 * the API function whose frame is fp: keep its template under key. */
void kasan_tmpl_capture(struct odb_kernel *k, uint64_t key, uint32_t handle, void *fp);
/* kasan_slab_alloc (unless slab_hook_done: the slab's slow path ran it) +
 * kasan_kmalloc of a kmalloc object, the alloc track's stack through *tp from
 * fp; t: the task (odb_current_fast).  reduced: the caller made both hooks'
 * quarantine-reduce checks (nothing to evict) and counted them. */
void *kasan_kmalloc_fast(struct kmem_cache *s, struct odb_task *t, void *object, size_t size,
			 gfp_t flags, const struct odb_stack_tmpl *tp, void *fp, bool slab_hook_done,
			 bool reduced, int *ret);
/* kasan_slab_free of an object whose free checks passed: false (nothing
 * done) when the put would flush the vCPU's quarantine (or the vCPU's lock is
 * not the task's): the slow path does it all. */
bool kasan_slab_free_fast(struct kmem_cache *s, struct odb_task *t, void *object,
			  const struct odb_stack_tmpl *tp, void *fp);

/* ---- quarantine (quarantine.c) ----------------------------------------------------------- */
/* (kasan_quarantine_fits: kasan/meta.h, inline) */
/* Would kasan_quarantine_reduce() evict now?  (the check it begins with) */
static inline bool kasan_quarantine_over(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;

	if (q->policy == QUARANTINE_QUARTER)
		return READ_ONCE(q->old_global.bytes) > READ_ONCE(q->old_quarantine_size);
	return READ_ONCE(q->quarantine_size) > READ_ONCE(q->quarantine_max_size);
}
/* kasan_quarantine_reduce() from a fast path outside an API call: the check
 * (and its count) inline; an eviction runs inside an API call of its own
 * (odb_enter/odb_leave).  Returns odb_leave's code (ODB_EBUG when it
 * reported), else ODB_OK. */
int kasan_quarantine_reduce_api_slow(struct odb_kernel *k);
static inline int kasan_quarantine_reduce_api(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;

	if (likely(!kasan_quarantine_over(k))) {
		__atomic_fetch_add(&q->st.reduce_calls, 1, __ATOMIC_RELAXED);   /* STAT_INC */
		return ODB_OK;
	}
	return kasan_quarantine_reduce_api_slow(k);
}
void kasan_quarantine_put_locked(struct kmem_cache *s, void *object, int cpu);
int quarantine_init(struct odb_kernel *k);
void quarantine_exit(struct odb_kernel *k);
/* CPU hotplug callbacks (odb_cpu_offline / odb_cpu_online). */
void kasan_cpu_offline(struct odb_kernel *k, unsigned int cpu);
void kasan_cpu_online(struct odb_kernel *k, unsigned int cpu);
bool kasan_quarantine_put(struct kmem_cache *s, void *object);
void kasan_quarantine_reduce(struct odb_kernel *k);
void kasan_quarantine_remove_cache(struct kmem_cache *s);
/* Q-old names (the "quarter" policy) */
void quarantine_put(struct kmem_cache *s, void *object);
void quarantine_reduce(struct odb_kernel *k);
void quarantine_remove_cache(struct kmem_cache *s);

#endif
