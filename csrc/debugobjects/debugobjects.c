/*
 * debugobjects: object lifetime tracking as lib/debugobjects.c does it in
 * Linux v5.3 (the pool after Waiman Long's 2019 series, whose patch 4/5 is
 * "less aggressive freeing of excess debug objects"), written from the
 * behavioural spec (shared/spec/debugobjects.md), not from kernel source.
 *
 * Pieces, with the kernel's names:
 *   tracker     struct debug_obj in a 16384-bucket hash keyed by 4 KiB chunk
 *               (get_bucket, lookup_object), per-bucket raw spinlocks;
 *   pool        static boot pool of 1024 trackers, then a slab cache
 *               (debug_objects_cache); global obj_pool under pool_lock,
 *               per-vCPU free lists of <= 64 with 16-object lookahead both
 *               ways (alloc_object, __free_object), fill_pool in batches of
 *               16 (with the v5.3 obj_pool_min_free quirk), obj_to_free
 *               returned to the slab by free_obj_work;
 *   policies    lazy (v5.3, default): delayed work at HZ/10 guarded by
 *               obj_freeing, to-free list capped at ODEBUG_FREE_WORK_MAX
 *               with the extra 16-tracker batch, a run that finds the pool
 *               below full only refills;  eager (patches 1-3, spec 5.8):
 *               immediate schedule_work whenever a free went to the to-free
 *               list, refill then free the rest in the same run;
 *   API         debug_object_{init,init_on_stack,activate,deactivate,destroy,
 *               free,assert_init,active_state}, debug_check_no_obj_freed,
 *               warnings (debug_print_object, 5 printed), fixups
 *               (debug_object_fixup), OOM (debug_objects_oom), the boot
 *               sequence and the selftest.
 *
 * Locking: vCPU irq lock > bucket lock > pool_lock (kernel/kernel.h).  No
 * lock is held while a descriptor callback runs (warnings are printed, hints
 * computed, fixups and is_static_object called after the bucket lock is
 * dropped, as in v5.3 after patch 5/5); the tracker's fields are copied under
 * the lock first, so a concurrent free cannot make the warning read freed
 * memory (the copy is what later kernels print too).
 *
 * Deliberate deviations.  Trackers hold no host pointer (issue 18, "never
 * escape the arena"; see "trackers and their lists" below): links are checked
 * references, the kernel's pprev is a list tag, the descriptor an id into a
 * per-kernel table (at most ODEBUG_MAX_DESCRS types; a further one is not
 * tracked, with an error line).  A corrupt link, tag, state or descriptor id
 * is a report, "ODEBUG: tracker list corrupt at <addr> (<list>): <why>, <n>
 * trackers dropped", where the kernel would oops or call through a forged
 * pointer; the list is cut and the trackers behind the cut are leaked.  A
 * user's kfree/kmem_cache_free/kfree_rcu/krealloc of a tracker is a report
 * ("free of a tracker") and frees nothing (debug_objects_refuse_free).
 *
 * Deliberate deviation: the endless rescan of debug_check_no_obj_freed (an
 * ACTIVE object whose fixup_free does not remove it is found again, forever,
 * in every kernel version) is bounded: within one call, an ACTIVE object is
 * warned about and fixed up at most once; if it is still there on the rescan
 * it is left tracked and skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"
#include "kernel/params.h"
#include "slab/slab.h"
#include "slab/slub.h"
#include "debugobjects/debugobjects.h"

/* ---- trackers and their lists ---------------------------------------------------- */
/*
 * odebug deviation (issue 18, "never escape the arena"): the kernel's struct
 * debug_obj holds host pointers (hlist next/pprev, the descriptor whose
 * callbacks get called), but odebug's slab trackers lie in the arena, which
 * users overwrite at will.  So a tracker holds no host pointer:
 *
 *  - a link is a reference (obj_ref_t): 0 for none, 1..ODEBUG_POOL_SIZE for a
 *    tracker of the static boot pool (host memory, while it is in use), else
 *    the arena address of a tracker; obj_at() resolves one only if it names
 *    exactly an object of debug_objects_cache (virt_to_slab, slab_cache,
 *    check_valid_pointer) or a live static tracker;
 *  - the kernel's pprev is replaced by the tag of the list the tracker is on
 *    (a bucket, the global pool, the to-free list, a vCPU's free list; 0 once
 *    it is taken off).  Deleting from the middle of a bucket uses the link
 *    that was followed to reach the tracker (lookup_object returns it), so no
 *    back link is ever read from memory;
 *  - the descriptor is an id: index + 1 into the kernel's descriptor table
 *    (host memory, registered on first use, append-only), resolved with a
 *    bounds check.
 *
 * Every link read from a tracker is checked before it is followed: it must
 * name a tracker whose tag is the list's (a hashed one also a state below
 * ODEBUG_STATE_MAX and a registered descriptor id, a bucket no more trackers
 * than its count).  A link that fails is a report ("ODEBUG: tracker list
 * corrupt ..."; the kernel would follow it and oops): the list is cut at the
 * last good tracker, the bad one and those behind it are dropped (leaked:
 * neither used nor freed into the slab) and leave the books (obj_pool_used,
 * the free-list counters; objs_freed when they were about to be freed), so
 * the pool's counters keep adding up; the slab then holds obj_dropped
 * trackers the pool does not.
 */
typedef odb_addr_t obj_ref_t;

struct hlist_head { obj_ref_t first; };

/* List tags (debug_obj.list): 0 none, then the buckets, then the free lists. */
#define ODEBUG_LIST_NONE	0u
#define ODEBUG_LIST_BUCKET(i)	((uint32_t)(i) + 1u)
#define ODEBUG_LIST_POOL	(ODEBUG_HASH_SIZE + 1u)
#define ODEBUG_LIST_TOFREE	(ODEBUG_HASH_SIZE + 2u)
#define ODEBUG_LIST_PCP(cpu)	(ODEBUG_HASH_SIZE + 3u + (uint32_t)(cpu))

/* Descriptor ids: up to ODEBUG_MAX_DESCRS types per kernel. */
#define ODEBUG_DESCR_HASH_BITS	13
#define ODEBUG_DESCR_HASH_SIZE	(1u << ODEBUG_DESCR_HASH_BITS)
#define ODEBUG_MAX_DESCRS	(ODEBUG_DESCR_HASH_SIZE / 2)

/* 40 bytes, the kernel's layout (node, state, astate, object, descr). */
struct debug_obj {
	obj_ref_t next;         /* hlist next: a reference, checked before it is followed */
	uint32_t list;          /* in place of pprev: the tag of the list it is on */
	uint32_t _pad;
	uint32_t state;         /* debug_obj_state_t */
	unsigned int astate;
	odb_addr_t object;
	uint32_t descr;         /* descriptor id (0: none) */
	uint32_t _pad2;
};
_Static_assert(sizeof(struct debug_obj) == 40, "struct debug_obj is the kernel's 40 bytes");

/* A tracker's fields as the warnings use them (copied under the bucket lock,
 * the descriptor resolved). */
struct debug_obj_copy {
	debug_obj_state_t state;
	unsigned int astate;
	odb_addr_t object;
	const struct debug_obj_descr *descr;
};

struct debug_bucket {
	struct hlist_head list;
	raw_spinlock_t lock;
	int count;              /* trackers on the list: bounds a walk */
};

/* Per-vCPU free list; protected by that vCPU's "interrupts disabled". */
struct debug_percpu_free {
	struct hlist_head free_objs;
	int obj_free;
} __attribute__((aligned(64)));

/* The selftest's object type (lib/debugobjects.c: struct self_test). */
struct self_test {
	unsigned long dummy1[6];
	int static_init;
	unsigned long dummy2[3];
};

struct debug_descr_slot {
	const struct debug_obj_descr *key;    /* release-stored after id */
	uint32_t id;
};

struct debug_objects {
	/* configuration (boot parameters); first: the slab's free path reads it inline */
	struct debug_objects_gate gate;       /* .debug_objects_enabled: READ_ONCE/WRITE_ONCE */
	enum odebug_free_policy policy;
	enum odebug_warn_format warn_format;
	enum odebug_fixes fixes;
	bool selftest;                        /* CONFIG_DEBUG_OBJECTS_SELFTEST */

	struct debug_bucket *obj_hash;        /* [ODEBUG_HASH_SIZE] */
	struct debug_obj *obj_static_pool;    /* [ODEBUG_POOL_SIZE] */
	bool static_live;                     /* static trackers in use (until replaced) */
	bool early_done;

	raw_spinlock_t pool_lock;
	struct hlist_head obj_pool;
	int obj_pool_min_free;
	int obj_pool_free;
	int obj_pool_used;
	int obj_pool_max_used;
	bool obj_freeing;
	int obj_nr_tofree;
	struct hlist_head obj_to_free;

	struct debug_percpu_free *percpu_obj_pool;   /* [nr_cpu_ids] */
	struct kmem_cache *obj_cache;

	int debug_objects_maxchain;
	int debug_objects_maxchecked;
	int64_t debug_objects_fixups;
	int64_t debug_objects_warnings;
	int debug_objects_pool_size;
	int debug_objects_pool_min_level;
	int64_t debug_objects_allocated;
	int64_t debug_objects_freed;

	/* the descriptor table: ids 1..nr_descrs (registration under pool_lock) */
	uint32_t nr_descrs;                   /* release-stored after descrs[] */
	const struct debug_obj_descr *descrs[ODEBUG_MAX_DESCRS + 1];
	struct debug_descr_slot descr_hash[ODEBUG_DESCR_HASH_SIZE];

	const struct debug_obj_descr *descr_test;
	struct odb_work debug_obj_work;
	int print_limit;                      /* debug_print_object's "limit" */
	int stack_limit;                      /* debug_object_is_on_stack's "limit" */
	int corrupt_limit;                    /* the corruption reports printed */

	/* the selftest's fixture */
	struct self_test selftest_obj;
	struct debug_obj_descr descr_type_test;
	bool selftest_passed;

	/* test hooks and accounting */
	int fail_trylock;
	int64_t work_runs, trylock_failed;
	int64_t work_runs_worker;     /* of the runs, those on the real clock's worker thread */
	int64_t offline_freed;        /* trackers v5.3's CPU offline gave back uncounted */
	int64_t obj_dropped;          /* trackers behind a corrupt link: off the books, leaked */
};

static const char *const obj_states[ODEBUG_STATE_MAX] = {
	[ODEBUG_STATE_NONE]		= "none",
	[ODEBUG_STATE_INIT]		= "initialized",
	[ODEBUG_STATE_INACTIVE]		= "inactive",
	[ODEBUG_STATE_ACTIVE]		= "active",
	[ODEBUG_STATE_DESTROYED]	= "destroyed",
	[ODEBUG_STATE_NOTAVAILABLE]	= "not available",
};

static inline struct debug_objects *dobj(struct odb_kernel *k)
{
	return (struct debug_objects *)k->debugobjects;
}

#define ADD_ONCE(x, v) __atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

static inline void max_once(int *p, int v)
{
	int cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static inline bool enabled(struct debug_objects *d)
{
	return d && READ_ONCE(d->gate.debug_objects_enabled);
}

/* The pool counters the kernel reads without pool_lock: each such read is a
 * scheduling point (the racy window) and, like every write of them under the
 * lock, an access KCSAN checks; marked from v5.6 on (plain in v5.3). */
#define MARKED(d) ((d)->fixes >= ODEBUG_FIXES_V56)
#define POOL_READ(k, d, lv) READ_ONCE_RACY(k, lv, MARKED(d))
#define POOL_WRITE(k, d, lv, v) do { KCSAN_ACCESS(k, lv, true, MARKED(d)); WRITE_ONCE(lv, v); } while (0)

/* The kernel's room struct is made by the first boot parameter that needs
 * it, or by early init. */
static struct debug_objects *dobj_alloc(struct odb_kernel *k)
{
	struct debug_objects *d = dobj(k);

	if (d)
		return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->gate.debug_objects_enabled = 1;         /* CONFIG_DEBUG_OBJECTS_ENABLE_DEFAULT=1 */
	d->policy = ODEBUG_FREE_LAZY;
	d->warn_format = ODEBUG_WARN_V62;
	d->selftest = true;
	k->debugobjects = d;
	return d;
}

/* ---- boot parameters ------------------------------------------------------------------- */
/* early_param("debug_objects") / ("no_debug_objects"): the value is ignored. */
int debug_objects_param_enable(struct odb_kernel *k, const char *val)
{
	struct debug_objects *d = dobj_alloc(k);

	if (!d)
		return ODB_ENOMEM;
	d->gate.debug_objects_enabled = 1;
	return 0;
}

int debug_objects_param_disable(struct odb_kernel *k, const char *val)
{
	struct debug_objects *d = dobj_alloc(k);

	if (!d)
		return ODB_ENOMEM;
	d->gate.debug_objects_enabled = 0;
	return 0;
}

void debug_objects_param_enable_get(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%d", enabled(dobj(k)) ? 1 : 0);
}

void debug_objects_param_disable_get(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%d", enabled(dobj(k)) ? 0 : 1);
}

int debug_objects_param_free(struct odb_kernel *k, const char *val)
{
	static const char *const names[] = { "lazy", "eager", NULL };
	struct debug_objects *d = dobj_alloc(k);
	int i, r;

	if (!d)
		return ODB_ENOMEM;
	r = odb_param_choice(k, "odebug.objects_free", val, names, &i);
	if (!r)
		d->policy = i ? ODEBUG_FREE_EAGER : ODEBUG_FREE_LAZY;
	return r;
}

void debug_objects_param_free_get(struct odb_kernel *k, char *buf, size_t len)
{
	struct debug_objects *d = dobj(k);

	snprintf(buf, len, "%s", d && d->policy == ODEBUG_FREE_EAGER ? "eager" : "lazy");
}

int debug_objects_param_warn(struct odb_kernel *k, const char *val)
{
	static const char *const names[] = { "v6.2", "v5.3", NULL };
	struct debug_objects *d = dobj_alloc(k);
	int i, r;

	if (!d)
		return ODB_ENOMEM;
	r = odb_param_choice(k, "odebug.objects_warn", val, names, &i);
	if (!r)
		d->warn_format = i ? ODEBUG_WARN_V53 : ODEBUG_WARN_V62;
	return r;
}

void debug_objects_param_warn_get(struct odb_kernel *k, char *buf, size_t len)
{
	struct debug_objects *d = dobj(k);

	snprintf(buf, len, "%s", d && d->warn_format == ODEBUG_WARN_V53 ? "v5.3" : "v6.2");
}

static const char *const fixes_names[] = { "v5.3", "v5.6", "v6.4", "v6.5", NULL };

int debug_objects_param_fixes(struct odb_kernel *k, const char *val)
{
	struct debug_objects *d = dobj_alloc(k);
	int i, r;

	if (!d)
		return ODB_ENOMEM;
	r = odb_param_choice(k, "odebug.objects_fixes", val, fixes_names, &i);
	if (!r)
		d->fixes = (enum odebug_fixes)i;
	return r;
}

void debug_objects_param_fixes_get(struct odb_kernel *k, char *buf, size_t len)
{
	struct debug_objects *d = dobj(k);

	snprintf(buf, len, "%s", fixes_names[d ? d->fixes : ODEBUG_FIXES_V53]);
}

/* odebug.objects_selftest=on|off: CONFIG_DEBUG_OBJECTS_SELFTEST (default on). */
int debug_objects_param_selftest(struct odb_kernel *k, const char *val)
{
	struct debug_objects *d = dobj_alloc(k);
	bool b;

	if (!d)
		return ODB_ENOMEM;
	if (odb_kstrtobool(val, &b))
		return odb_err(k, ODB_EINVAL,
			       "odebug.objects_selftest: `%s' invalid for parameter `odebug.objects_selftest' (on or off)",
			       val ? val : "");
	d->selftest = b;
	return 0;
}

void debug_objects_param_selftest_get(struct odb_kernel *k, char *buf, size_t len)
{
	struct debug_objects *d = dobj(k);

	snprintf(buf, len, "%s", !d || d->selftest ? "on" : "off");
}

/* ---- hashing ------------------------------------------------------------------------ */
/* hash_long() on 64-bit: multiply by GOLDEN_RATIO_64, keep the top bits. */
static inline unsigned long hash_long(uint64_t val, unsigned int bits)
{
	return (unsigned long)((val * 0x61C8864680B583EBULL) >> (64 - bits));
}

static struct debug_bucket *get_bucket(struct debug_objects *d, odb_addr_t addr)
{
	unsigned long hash = hash_long(addr >> ODEBUG_CHUNK_SHIFT, ODEBUG_HASH_BITS);

	return &d->obj_hash[hash];
}

static inline uint32_t bucket_tag(struct debug_objects *d, struct debug_bucket *b)
{
	return ODEBUG_LIST_BUCKET(b - d->obj_hash);
}

/* ---- descriptor ids --------------------------------------------------------------------- */
static inline const struct debug_obj_descr *descr_of(struct debug_objects *d, uint32_t id)
{
	if (id - 1u >= __atomic_load_n(&d->nr_descrs, __ATOMIC_ACQUIRE))
		return NULL;
	return d->descrs[id];
}

static void odebug_warn(struct odb_kernel *k, const char *kind, odb_addr_t object,
			const char *pre, const char *msg, const void *fn, int line);

/* A hashed tracker's fields (bucket lock held; the walk that found it checked
 * its state and descriptor id). */
static inline struct debug_obj_copy obj_copy(struct debug_objects *d, const struct debug_obj *obj)
{
	struct debug_obj_copy o = { .state = (debug_obj_state_t)obj->state, .astate = obj->astate,
				    .object = obj->object, .descr = descr_of(d, obj->descr) };

	return o;
}

static __attribute__((noinline, cold))
uint32_t debug_descr_register(struct odb_kernel *k, struct debug_objects *d,
			      const struct debug_obj_descr *descr, unsigned long h)
{
	unsigned long flags;
	uint32_t id = 0;
	bool full = false;

	raw_spin_lock_irqsave(k, &d->pool_lock, flags);
	for (unsigned int i = 0; i < ODEBUG_DESCR_HASH_SIZE; i++, h = (h + 1) & (ODEBUG_DESCR_HASH_SIZE - 1)) {
		struct debug_descr_slot *s = &d->descr_hash[h];

		if (s->key == descr) {
			id = s->id;
			break;
		}
		if (s->key)
			continue;
		if (d->nr_descrs >= ODEBUG_MAX_DESCRS) {
			full = true;
			break;
		}
		id = d->nr_descrs + 1;
		d->descrs[id] = descr;
		s->id = id;
		__atomic_store_n(&s->key, descr, __ATOMIC_RELEASE);
		__atomic_store_n(&d->nr_descrs, id, __ATOMIC_RELEASE);
		break;
	}
	raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	if (full)
		pr_err(k, "ODEBUG: more than %d object types: %s not tracked", ODEBUG_MAX_DESCRS,
		       descr->name);
	return id;
}

/* The descriptor's id in this kernel (registered on first use); 0 when the
 * table is full (the object is then not tracked). */
static inline uint32_t descr_id(struct odb_kernel *k, struct debug_objects *d,
				const struct debug_obj_descr *descr)
{
	unsigned long h = hash_long((uintptr_t)descr, ODEBUG_DESCR_HASH_BITS);
	const struct debug_descr_slot *s = &d->descr_hash[h];

	if (likely(__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == descr))
		return s->id;
	for (unsigned int i = 1; i < ODEBUG_DESCR_HASH_SIZE && s->key; i++) {
		s = &d->descr_hash[(h + i) & (ODEBUG_DESCR_HASH_SIZE - 1)];
		if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == descr)
			return s->id;
	}
	return debug_descr_register(k, d, descr, h);
}

/* ---- references ----------------------------------------------------------------------------- */
/* The tracker ref names, or NULL if it names none: a static boot tracker while
 * they are in use, else exactly an object of debug_objects_cache. */
static inline struct debug_obj *obj_at(struct odb_kernel *k, struct debug_objects *d, obj_ref_t ref)
{
	struct kmem_cache *s = d->obj_cache;
	struct slab *sl;
	void *p;

	if (ref <= ODEBUG_POOL_SIZE)
		return ref && d->static_live ? &d->obj_static_pool[ref - 1] : NULL;
	if (unlikely(!s) || ref - k->page_offset_base > k->ram_bytes - sizeof(struct debug_obj))
		return NULL;
	p = virt_to_host(k, ref);
	sl = virt_to_slab(k, p);
	if (unlikely(!sl || sl->slab_cache != s || !check_valid_pointer(s, sl, p)))
		return NULL;
	return p;
}

static inline obj_ref_t obj_ref(struct odb_kernel *k, struct debug_objects *d,
				const struct debug_obj *obj)
{
	uintptr_t off = (uintptr_t)obj - (uintptr_t)d->obj_static_pool;

	if (off < ODEBUG_POOL_SIZE * sizeof(*obj))
		return off / sizeof(*obj) + 1;
	return host_to_virt(k, obj);
}

static void list_name(struct debug_objects *d, uint32_t tag, char *buf, size_t len)
{
	if (tag >= ODEBUG_LIST_BUCKET(0) && tag <= ODEBUG_LIST_BUCKET(ODEBUG_HASH_SIZE - 1))
		snprintf(buf, len, "bucket %u", tag - ODEBUG_LIST_BUCKET(0));
	else if (tag == ODEBUG_LIST_POOL)
		snprintf(buf, len, "pool");
	else if (tag == ODEBUG_LIST_TOFREE)
		snprintf(buf, len, "to-free list");
	else
		snprintf(buf, len, "per-CPU pool %u", tag - ODEBUG_LIST_PCP(0));
}

/*
 * Report a corrupt link (odebug's; the kernel would follow it): ref, found on
 * list tag, names no tracker of that list.  The first is a WARN, the others
 * quiet reports.  lost < 0: not known here (the caller's books say).
 */
static __attribute__((noinline, cold))
void debug_objects_corrupt(struct odb_kernel *k, struct debug_objects *d, uint32_t tag,
			   obj_ref_t ref, const struct debug_obj *obj, int lost)
{
	char where[40], why[64], text[256], n[32] = "rest";

	list_name(d, tag, where, sizeof(where));
	if (!ref)
		snprintf(why, sizeof(why), "list ends short of its count");
	else if (!obj)
		snprintf(why, sizeof(why), "not a tracker");
	else if (obj->list != tag)
		snprintf(why, sizeof(why), "tracker of another list (tag %u)", obj->list);
	else if (obj->state >= ODEBUG_STATE_MAX)
		snprintf(why, sizeof(why), "bad state %u", obj->state);
	else if (!descr_of(d, obj->descr))
		snprintf(why, sizeof(why), "bad descriptor id %u", obj->descr);
	else
		snprintf(why, sizeof(why), "chain longer than its count");
	if (lost >= 0)
		snprintf(n, sizeof(n), "%d trackers", lost);
	snprintf(text, sizeof(text), "ODEBUG: tracker list corrupt at %016llx (%s): %s, %s dropped",
		 (unsigned long long)ref, where, why, n);
	if (__atomic_fetch_add(&d->corrupt_limit, 1, __ATOMIC_RELAXED) < 1) {
		odebug_warn(k, "tracker list corrupt", ref, NULL, text,
			    (const void *)debug_objects_corrupt, __LINE__);
	} else {
		struct odb_report_impl *r = report_new(k, "odebug", "tracker list corrupt");

		if (r) {
			r->quiet = true;
			r->pub.addr = ref;
			report_line(r, "%s", text);
			report_publish(k, r);
		}
	}
}

/* A bucket's link *link fails its check (db->lock held): cut the list there;
 * the trackers behind it leave the books. */
static __attribute__((noinline, cold))
void bucket_corrupt(struct odb_kernel *k, struct debug_objects *d, struct debug_bucket *db,
		    obj_ref_t *link, const struct debug_obj *obj, int reached)
{
	obj_ref_t ref = *link;
	int lost = db->count - reached;

	WRITE_ONCE(*link, 0);
	db->count = reached;
	raw_spin_lock(k, &d->pool_lock);
	d->obj_pool_used -= lost;
	d->obj_dropped += lost;
	raw_spin_unlock(k, &d->pool_lock);
	debug_objects_corrupt(k, d, bucket_tag(d, db), ref, obj, lost);
}

/*
 * Two levels of checks.  A walk only reads the trackers it passes: before a
 * link is followed it must name 8-byte-aligned memory inside the arena (or a
 * live static tracker), the tracker there must carry the list's tag, and the
 * walk must not pass more trackers than the list's count (obj_peek, a few
 * instructions: the hot loops of lookup_object).  A tracker the core then uses
 * (returns, changes, unlinks, or whose next it rewrites) gets the full check:
 * exactly an object of debug_objects_cache, a state below ODEBUG_STATE_MAX, a
 * registered descriptor id (hashed_ok, obj_owned).  Any failure sends the
 * bucket to bucket_repair(), which walks it with the full check and cuts it
 * at the first bad link; the caller then walks it again.
 */
static inline struct debug_obj *obj_peek(struct odb_kernel *k, struct debug_objects *d, obj_ref_t ref)
{
	if (likely(ref - k->page_offset_base <= k->ram_bytes - sizeof(struct debug_obj) && !(ref & 7)))
		return virt_to_host(k, ref);
	if (ref && ref <= ODEBUG_POOL_SIZE && d->static_live)
		return &d->obj_static_pool[ref - 1];
	return NULL;
}

/* The full check of a tracker obj_peek gave. */
static inline bool obj_owned(struct odb_kernel *k, struct debug_objects *d, const struct debug_obj *obj)
{
	struct kmem_cache *s = d->obj_cache;
	struct slab *sl;

	if ((uintptr_t)obj - (uintptr_t)d->obj_static_pool < ODEBUG_POOL_SIZE * sizeof(*obj))
		return d->static_live;
	if (unlikely(!s))
		return false;
	sl = virt_to_slab(k, obj);
	return sl && sl->slab_cache == s && check_valid_pointer(s, sl, (void *)obj);
}

static inline bool hashed_ok(struct odb_kernel *k, struct debug_objects *d,
			     const struct debug_obj *obj, uint32_t tag)
{
	return obj->list == tag && obj->state < ODEBUG_STATE_MAX &&
	       obj->descr - 1u < __atomic_load_n(&d->nr_descrs, __ATOMIC_RELAXED) &&
	       obj_owned(k, d, obj);
}

/* Walk db with the full check; cut it at the first bad link, or note that it
 * ends short of its count (db->lock held).  True: something was wrong. */
static __attribute__((noinline, cold))
bool bucket_repair(struct odb_kernel *k, struct debug_objects *d, struct debug_bucket *db)
{
	uint32_t tag = bucket_tag(d, db);
	obj_ref_t *link = &db->list.first;
	int reached = 0;

	for (;;) {
		obj_ref_t ref = *link;
		struct debug_obj *obj;

		if (!ref) {
			if (reached == db->count)
				return false;
			bucket_corrupt(k, d, db, link, NULL, reached);
			return true;
		}
		obj = obj_at(k, d, ref);
		if (!obj || !hashed_ok(k, d, obj, tag) || reached >= db->count) {
			bucket_corrupt(k, d, db, link, obj, reached);
			return true;
		}
		reached++;
		link = &obj->next;
	}
}

/* hlist_add_head: obj, whose reference is ref, first on list h (tag). */
static inline void hlist_add_head(struct debug_obj *obj, obj_ref_t ref, struct hlist_head *h,
				  uint32_t tag)
{
	obj->next = h->first;
	obj->list = tag;
	WRITE_ONCE(h->first, ref);   /* as the kernel's: a bucket's head is peeked unlocked */
}

static inline void bucket_add(struct odb_kernel *k, struct debug_objects *d, struct debug_obj *obj,
			      struct debug_bucket *db)
{
	hlist_add_head(obj, obj_ref(k, d, obj), &db->list, bucket_tag(d, db));
	db->count++;
}

/* hlist_del of the tracker *link names (checked by the walk that found it). */
static inline void bucket_del(struct debug_bucket *db, obj_ref_t *link, struct debug_obj *obj)
{
	WRITE_ONCE(*link, obj->next);   /* checked when followed */
	obj->next = 0;
	obj->list = ODEBUG_LIST_NONE;
	db->count--;
}

/* Move the whole list from old to new (new must be empty); the trackers keep
 * their tag. */
static inline void hlist_move_list(struct hlist_head *old, struct hlist_head *new)
{
	WRITE_ONCE(new->first, old->first);
	WRITE_ONCE(old->first, 0);
}

/* Bucket lock held: the tracker of addr, or NULL; with linkp (an unlink to
 * come), *linkp is the link to it and the tracker holding that link has had
 * the full check too.  max_chain is updated on a miss only. */
static inline __attribute__((always_inline))
struct debug_obj *lookup_object_link(struct odb_kernel *k, struct debug_objects *d,
				     odb_addr_t addr, struct debug_bucket *b, obj_ref_t **linkp)
{
	const uint64_t limit = k->ram_bytes - sizeof(struct debug_obj);
	char *const ram = k->ram;
	uint32_t tag = bucket_tag(d, b);
	int tries = 0;

again:;
	obj_ref_t *link = &b->list.first, ref;
	struct debug_obj *obj, *prev = NULL;

	/* at most count trackers: a cycle ends the walk */
	for (int left = b->count; left > 0; left--) {
		/* obj_peek, inline and cheaper: the hot loop.  An unaligned
		 * reference reads the aligned slot below it (inside the arena);
		 * the full check of what is used comes later. */
		uint64_t off;

		ref = *link;
		if (unlikely(!ref))
			goto repair;   /* ends short of its count */
		off = ref - k->page_offset_base;
		if (likely(off <= limit))
			obj = (struct debug_obj *)(ram + (off & ~(uint64_t)7));
		else if (!(obj = obj_peek(k, d, ref)))   /* a static tracker? */
			goto repair;
		if (unlikely(obj->list != tag))
			goto repair;
		if (obj->object == addr) {
			if (unlikely((ref & 7) || !hashed_ok(k, d, obj, tag) ||
				     (linkp && prev && !obj_owned(k, d, prev))))
				goto repair;
			if (linkp)
				*linkp = link;
			return obj;
		}
		prev = obj;
		link = &obj->next;
	}
	if (unlikely(*link))
		goto repair;   /* longer than its count */
	max_once(&d->debug_objects_maxchain, b->count);
	return NULL;
repair:
	if (bucket_repair(k, d, b) && ++tries < 3)
		goto again;
	return NULL;
}

static inline struct debug_obj *lookup_object(struct odb_kernel *k, struct debug_objects *d,
					      odb_addr_t addr, struct debug_bucket *b)
{
	return lookup_object_link(k, d, addr, b, NULL);
}

/* ---- the pool --------------------------------------------------------------------------- */
/* Pop the head of free list h (tag); NULL when it is empty, or when its head
 * link names no tracker of the list (then the list is cut and reported: the
 * caller takes what its counter still says off the books, pool_lost). */
static inline struct debug_obj *__alloc_object(struct odb_kernel *k, struct debug_objects *d,
					       struct hlist_head *list, uint32_t tag)
{
	obj_ref_t ref = list->first;
	struct debug_obj *obj;

	if (!ref)
		return NULL;
	obj = obj_at(k, d, ref);
	if (unlikely(!obj || obj->list != tag)) {
		WRITE_ONCE(list->first, 0);
		debug_objects_corrupt(k, d, tag, ref, obj, -1);
		return NULL;
	}
	WRITE_ONCE(list->first, obj->next);   /* checked when popped */
	obj->next = 0;
	obj->list = ODEBUG_LIST_NONE;   /* met again through a bad link: not this list's */
	return obj;
}

/* n trackers a free list's books still count were behind a corrupt link. */
static __attribute__((noinline, cold))
void pool_lost(struct odb_kernel *k, struct debug_objects *d, int n, bool locked)
{
	unsigned long flags = 0;

	if (n <= 0)
		return;
	if (!locked)
		raw_spin_lock_irqsave(k, &d->pool_lock, flags);
	d->obj_dropped += n;
	if (!locked)
		raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
}

/* A vCPU's free list came up short: its count goes, and those trackers with
 * it from obj_pool_used (which counts the per-CPU trackers). */
static __attribute__((noinline, cold))
void pcp_lost(struct odb_kernel *k, struct debug_objects *d, struct debug_percpu_free *pcp)
{
	int n = pcp->obj_free;

	WRITE_ONCE(pcp->obj_free, 0);
	raw_spin_lock(k, &d->pool_lock);
	d->obj_pool_used -= n;
	d->obj_dropped += n;
	raw_spin_unlock(k, &d->pool_lock);
}

static void fill_pool(struct odb_kernel *k, struct debug_objects *d)
{
	const gfp_t gfp = GFP_ATOMIC | __GFP_NOWARN;   /* atomic, no retry, no warning */
	unsigned long flags;

	if (likely(POOL_READ(k, d, d->obj_pool_free) >= d->debug_objects_pool_min_level))
		return;

	/* Reuse trackers waiting on the to-free list.  v5.3 compares with the
	 * historical low-water mark obj_pool_min_free, not the refill level
	 * (fixed only in 2024): so this rarely happens. */
	while (POOL_READ(k, d, d->obj_nr_tofree) &&
	       POOL_READ(k, d, d->obj_pool_free) < POOL_READ(k, d, d->obj_pool_min_free)) {
		raw_spin_lock_irqsave(k, &d->pool_lock, flags);
		while (d->obj_nr_tofree && d->obj_pool_free < d->obj_pool_min_free) {
			struct debug_obj *obj = __alloc_object(k, d, &d->obj_to_free, ODEBUG_LIST_TOFREE);

			if (unlikely(!obj)) {
				pool_lost(k, d, d->obj_nr_tofree, true);
				POOL_WRITE(k, d, d->obj_nr_tofree, 0);
				break;
			}
			POOL_WRITE(k, d, d->obj_nr_tofree, d->obj_nr_tofree - 1);
			hlist_add_head(obj, obj_ref(k, d, obj), &d->obj_pool, ODEBUG_LIST_POOL);
			POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free + 1);
		}
		raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	}

	if (unlikely(!d->obj_cache))
		return;

	/* Refill from the slab, a batch of up to 16 per pool_lock hold. */
	while (POOL_READ(k, d, d->obj_pool_free) < d->debug_objects_pool_min_level) {
		struct debug_obj *batch[ODEBUG_BATCH_SIZE];
		int cnt = 0;

		while (cnt < ODEBUG_BATCH_SIZE) {
			batch[cnt] = kmem_cache_zalloc(k, d->obj_cache, gfp);
			if (!batch[cnt])
				break;
			cnt++;
		}
		if (!cnt)
			return;
		raw_spin_lock_irqsave(k, &d->pool_lock, flags);
		while (cnt) {
			struct debug_obj *obj = batch[--cnt];

			hlist_add_head(obj, host_to_virt(k, obj), &d->obj_pool, ODEBUG_LIST_POOL);
			d->debug_objects_allocated++;
			POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free + 1);
		}
		raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	}
}

/* Pop the global pool (pool_lock held); a cut pool leaves the books. */
static inline struct debug_obj *pool_pop(struct odb_kernel *k, struct debug_objects *d)
{
	obj_ref_t head = d->obj_pool.first;
	struct debug_obj *obj = __alloc_object(k, d, &d->obj_pool, ODEBUG_LIST_POOL);

	if (unlikely(!obj && d->obj_pool_free)) {
		if (!head)   /* empty, not cut: a link was rewritten to 0 */
			debug_objects_corrupt(k, d, ODEBUG_LIST_POOL, 0, NULL, d->obj_pool_free);
		pool_lost(k, d, d->obj_pool_free, true);
		POOL_WRITE(k, d, d->obj_pool_free, 0);
	}
	return obj;
}

/* Pop this vCPU's free list (interrupts off); a cut list leaves the books. */
static inline struct debug_obj *pcp_pop(struct odb_kernel *k, struct debug_objects *d,
					struct debug_percpu_free *pcp, unsigned int cpu)
{
	obj_ref_t head = pcp->free_objs.first;
	struct debug_obj *obj = __alloc_object(k, d, &pcp->free_objs, ODEBUG_LIST_PCP(cpu));

	if (likely(obj)) {
		WRITE_ONCE(pcp->obj_free, pcp->obj_free - 1);
	} else if (unlikely(pcp->obj_free)) {
		if (!head)   /* empty, not cut: a link was rewritten to 0 */
			debug_objects_corrupt(k, d, ODEBUG_LIST_PCP(cpu), 0, NULL, pcp->obj_free);
		pcp_lost(k, d, pcp);
	}
	return obj;
}

/*
 * Take a tracker for addr and hash it (state NONE).  Called with the bucket
 * lock held and interrupts "disabled" on this vCPU.  NULL when the per-CPU
 * list and the global pool are both empty.
 */
static struct debug_obj *alloc_object(struct odb_kernel *k, struct debug_objects *d,
				      odb_addr_t addr, struct debug_bucket *b, uint32_t descr)
{
	struct debug_obj *obj = NULL;

	if (likely(d->obj_cache)) {
		unsigned int cpu = smp_processor_id(k);

		obj = pcp_pop(k, d, &d->percpu_obj_pool[cpu], cpu);
	}

	if (!obj) {
		raw_spin_lock(k, &d->pool_lock);
		obj = pool_pop(k, d);
		if (obj) {
			d->obj_pool_used++;
			POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free - 1);

			/* Lookahead: move up to a batch more to this vCPU's list,
			 * so the next allocations need no pool_lock. */
			if (likely(d->obj_cache)) {
				unsigned int cpu = smp_processor_id(k);
				struct debug_percpu_free *pcp = &d->percpu_obj_pool[cpu];

				for (int i = 0; i < ODEBUG_BATCH_SIZE; i++) {
					struct debug_obj *extra = pool_pop(k, d);

					if (!extra)
						break;
					hlist_add_head(extra, host_to_virt(k, extra), &pcp->free_objs,
						       ODEBUG_LIST_PCP(cpu));
					WRITE_ONCE(pcp->obj_free, pcp->obj_free + 1);
					d->obj_pool_used++;
					POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free - 1);
				}
			}
			if (d->obj_pool_used > d->obj_pool_max_used)
				d->obj_pool_max_used = d->obj_pool_used;
			if (d->obj_pool_free < d->obj_pool_min_free)
				POOL_WRITE(k, d, d->obj_pool_min_free, d->obj_pool_free);
		}
		raw_spin_unlock(k, &d->pool_lock);
	}

	if (obj) {
		obj->object = addr;
		obj->descr = descr;
		obj->state = ODEBUG_STATE_NONE;
		obj->astate = 0;
		bucket_add(k, d, obj, b);
	}
	return obj;
}

/*
 * The freeing work: give excess trackers back to the slab.
 * lazy (v5.3): clear obj_freeing; trylock; if the pool is below full, only
 * refill it from the to-free list this round; else free the whole list.
 * eager: trylock; refill up to full, then free what remains.
 */
static void free_obj_work(struct odb_kernel *k, void *arg)
{
	struct debug_objects *d = arg;
	struct hlist_head tofree = { 0 };
	unsigned long flags;
	bool lazy = d->policy == ODEBUG_FREE_LAZY;
	bool refill_only = false;
	int nfree = 0;

	if (lazy)
		WRITE_ONCE_RACY(k, d->obj_freeing, false, true);   /* WRITE_ONCE already in v5.3 */
	ADD_ONCE(d->work_runs, 1);
	if (odb_wq_is_worker(k))
		ADD_ONCE(d->work_runs_worker, 1);

	local_irq_save(k, flags);
	if (unlikely(READ_ONCE(d->fail_trylock) > 0)) {
		ADD_ONCE(d->fail_trylock, -1);
		goto busy;
	}
	if (!raw_spin_trylock(k, &d->pool_lock))
		goto busy;

	if (lazy && d->obj_pool_free < d->debug_objects_pool_size)
		refill_only = true;   /* a workload may be gearing up: free nothing now */
	if (refill_only || !lazy) {
		while (d->obj_nr_tofree && d->obj_pool_free < d->debug_objects_pool_size) {
			struct debug_obj *obj = __alloc_object(k, d, &d->obj_to_free, ODEBUG_LIST_TOFREE);

			if (unlikely(!obj)) {
				pool_lost(k, d, d->obj_nr_tofree, true);
				POOL_WRITE(k, d, d->obj_nr_tofree, 0);
				break;
			}
			hlist_add_head(obj, obj_ref(k, d, obj), &d->obj_pool, ODEBUG_LIST_POOL);
			POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free + 1);
			POOL_WRITE(k, d, d->obj_nr_tofree, d->obj_nr_tofree - 1);
		}
	}
	if (!refill_only && d->obj_nr_tofree) {
		hlist_move_list(&d->obj_to_free, &tofree);
		nfree = d->obj_nr_tofree;
		d->debug_objects_freed += d->obj_nr_tofree;
		POOL_WRITE(k, d, d->obj_nr_tofree, 0);
	}
	raw_spin_unlock(k, &d->pool_lock);
	local_irq_restore(k, flags);

	/* Back to the slab outside the lock (as many as were moved: a bad link
	 * cannot make this loop longer). */
	while (nfree) {
		struct debug_obj *obj = __alloc_object(k, d, &tofree, ODEBUG_LIST_TOFREE);

		if (unlikely(!obj))
			break;
		kmem_cache_free(k, d->obj_cache, obj);
		nfree--;
	}
	if (unlikely(nfree || tofree.first)) {
		if (tofree.first)   /* longer than counted */
			debug_objects_corrupt(k, d, ODEBUG_LIST_TOFREE, tofree.first,
					      obj_at(k, d, tofree.first), -1);
		raw_spin_lock_irqsave(k, &d->pool_lock, flags);
		d->debug_objects_freed -= nfree;
		d->obj_dropped += nfree;
		raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	}
	return;
busy:
	/* Nothing reschedules the work from here: the next free that sees
	 * trackers on the to-free list does. */
	local_irq_restore(k, flags);
	ADD_ONCE(d->trylock_failed, 1);
}

/*
 * Return a tracker to the per-CPU list, the global pool or the to-free list.
 * Returns true (eager policy only) when the freeing work should be scheduled.
 */
static bool __free_object(struct odb_kernel *k, struct debug_objects *d, struct debug_obj *obj)
{
	struct debug_obj *objs[ODEBUG_BATCH_SIZE];
	int lookahead_count = 0;
	unsigned long flags;
	bool lazy = d->policy == ODEBUG_FREE_LAZY;
	bool work;
	obj_ref_t ref = obj_ref(k, d, obj);

	local_irq_save(k, flags);
	if (likely(d->obj_cache)) {
		unsigned int cpu = smp_processor_id(k);
		struct debug_percpu_free *pcp = &d->percpu_obj_pool[cpu];

		if (pcp->obj_free < ODEBUG_POOL_PERCPU_SIZE) {
			hlist_add_head(obj, ref, &pcp->free_objs, ODEBUG_LIST_PCP(cpu));
			WRITE_ONCE(pcp->obj_free, pcp->obj_free + 1);
			local_irq_restore(k, flags);
			return false;
		}
		/* The per-CPU list is full: take a batch off it as well. */
		while (lookahead_count < ODEBUG_BATCH_SIZE) {
			struct debug_obj *o = pcp_pop(k, d, pcp, cpu);

			if (!o)
				break;
			objs[lookahead_count++] = o;
		}
	}

	raw_spin_lock(k, &d->pool_lock);
	work = d->obj_pool_free > d->debug_objects_pool_size && d->obj_cache;
	if (lazy)
		work = work && d->obj_nr_tofree < ODEBUG_FREE_WORK_MAX;
	d->obj_pool_used--;
	d->obj_pool_used -= lookahead_count;

	if (work) {
		hlist_add_head(obj, ref, &d->obj_to_free, ODEBUG_LIST_TOFREE);
		/* pushed so that the first one taken off the per-CPU list ends at the head */
		for (int i = lookahead_count - 1; i >= 0; i--)
			hlist_add_head(objs[i], host_to_virt(k, objs[i]), &d->obj_to_free,
				       ODEBUG_LIST_TOFREE);
		POOL_WRITE(k, d, d->obj_nr_tofree, d->obj_nr_tofree + 1 + lookahead_count);

		/* lazy: trim an over-full global pool by one more batch */
		if (lazy && d->obj_pool_free > d->debug_objects_pool_size &&
		    d->obj_nr_tofree < ODEBUG_FREE_WORK_MAX) {
			for (int i = 0; i < ODEBUG_BATCH_SIZE; i++) {
				struct debug_obj *o = pool_pop(k, d);

				if (!o)
					break;   /* only after a corrupt link: pool_free > pool_size */
				hlist_add_head(o, obj_ref(k, d, o), &d->obj_to_free, ODEBUG_LIST_TOFREE);
				POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free - 1);
				POOL_WRITE(k, d, d->obj_nr_tofree, d->obj_nr_tofree + 1);
			}
		}
	} else {
		hlist_add_head(obj, ref, &d->obj_pool, ODEBUG_LIST_POOL);
		for (int i = lookahead_count - 1; i >= 0; i--)
			hlist_add_head(objs[i], host_to_virt(k, objs[i]), &d->obj_pool, ODEBUG_LIST_POOL);
		POOL_WRITE(k, d, d->obj_pool_free, d->obj_pool_free + 1 + lookahead_count);
	}
	raw_spin_unlock(k, &d->pool_lock);
	local_irq_restore(k, flags);
	return work && !lazy;
}

/* Schedule the freeing work after frees (lazy: once per 100 ms at most): the
 * lock-free check-then-set of obj_freeing.  A macro, so that a data race in it
 * is named after the function it is in, as in the kernel (free_object,
 * __debug_check_no_obj_freed). */
#define schedule_free_work(k, d, eager_work) do { \
	if ((d)->policy == ODEBUG_FREE_EAGER) { \
		if (eager_work) \
			schedule_work(k, &(d)->debug_obj_work); \
	} else if (!POOL_READ(k, d, d->obj_freeing) && POOL_READ(k, d, d->obj_nr_tofree)) { \
		WRITE_ONCE_RACY(k, d->obj_freeing, true, true);   /* WRITE_ONCE already in v5.3 */ \
		schedule_delayed_work(k, &(d)->debug_obj_work, ODEBUG_FREE_WORK_DELAY((k)->hz)); \
	} \
} while (0)

static void free_object(struct odb_kernel *k, struct debug_objects *d, struct debug_obj *obj)
{
	bool work = __free_object(k, d, obj);

	schedule_free_work(k, d, work);
}

/* object_cpu_offline (v5.3): the dead vCPU's per-CPU trackers go straight back
 * to the slab and its count is zeroed; the pool counters are left as they
 * were (fixed in 2022: obj_pool_used and objs_freed were not adjusted). */
void debug_objects_cpu_offline(struct odb_kernel *k, unsigned int cpu)
{
	struct debug_objects *d = dobj(k);
	struct debug_percpu_free *pcp;
	struct hlist_head list = { 0 };
	struct odb_cpu_visit v;

	if (!d || !d->obj_cache || !d->percpu_obj_pool || !d->early_done)
		return;
	pcp = &d->percpu_obj_pool[cpu];
	int n, left;
	unsigned long flags;

	odb_cpu_lock(k, cpu, &v);
	hlist_move_list(&pcp->free_objs, &list);
	n = pcp->obj_free;
	WRITE_ONCE(pcp->obj_free, 0);
	odb_cpu_unlock(k, cpu, &v);
	raw_spin_lock_irqsave(k, &d->pool_lock, flags);
	if (d->fixes >= ODEBUG_FIXES_V64) {
		/* eabb7f1ace53 (2022): the trackers leave the pool's books too */
		d->obj_pool_used -= n;
		d->debug_objects_freed += n;
	} else {
		d->offline_freed += n;
	}
	raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	for (left = n; left; left--) {
		struct debug_obj *obj = __alloc_object(k, d, &list, ODEBUG_LIST_PCP(cpu));

		if (unlikely(!obj))
			break;
		kmem_cache_free(k, d->obj_cache, obj);
	}
	if (unlikely(left)) {
		/* behind a corrupt link: not freed after all, and out of the pool */
		raw_spin_lock_irqsave(k, &d->pool_lock, flags);
		if (d->fixes >= ODEBUG_FIXES_V64) {
			d->debug_objects_freed -= left;
		} else {
			d->offline_freed -= left;
			d->obj_pool_used -= left;
		}
		d->obj_dropped += left;
		raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	}
}

/* Out of trackers: switch off and give every tracker back to the pools. */
static void debug_objects_oom(struct odb_kernel *k, struct debug_objects *d)
{
	unsigned long flags;

	pr_warn(k, "ODEBUG: Out of memory. ODEBUG disabled");
	for (int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct debug_bucket *db = &d->obj_hash[i];
		struct hlist_head freelist = { 0 };
		int n;

		if (!READ_ONCE(db->list.first))
			continue;
		raw_spin_lock_irqsave(k, &db->lock, flags);
		hlist_move_list(&db->list, &freelist);
		n = db->count;
		db->count = 0;
		raw_spin_unlock_irqrestore(k, &db->lock, flags);

		for (; n; n--) {
			struct debug_obj *obj = __alloc_object(k, d, &freelist, ODEBUG_LIST_BUCKET(i));

			if (unlikely(!obj))
				break;
			free_object(k, d, obj);
		}
		if (unlikely(n)) {
			raw_spin_lock_irqsave(k, &d->pool_lock, flags);
			d->obj_pool_used -= n;
			d->obj_dropped += n;
			raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
		}
	}
}

/* ---- warnings and fixups ----------------------------------------------------------------- */
void odb_symbolise(struct odb_kernel *k, const void *pc, char *buf, size_t len);

/* A WARN() of lib/debugobjects.c (kernel/printk.c's odb_warn). */
static void odebug_warn(struct odb_kernel *k, const char *kind, odb_addr_t object,
			const char *pre, const char *msg, const void *fn, int line)
{
	odb_warn(k, "odebug", kind, NULL, object, pre, msg, "lib/debugobjects.c", line, fn);
}

/* The %pS text of the descriptor's hint for object. */
static void debug_hint_text(struct odb_kernel *k, const struct debug_obj_descr *descr,
			    odb_addr_t object, char *buf, size_t len)
{
	odb_addr_t hint = 0;

	if (descr->debug_hint_text && descr->debug_hint_text(k, object, descr->ctx, buf, len))
		return;
	if (descr->debug_hint)
		hint = descr->debug_hint(k, object, descr->ctx);
	if (!hint)
		snprintf(buf, len, "0x0");
	else if (odb_in_arena(k, hint, 1) || hint >= ODB_PAGE_OFFSET)   /* from any kernel's direct map up */
		snprintf(buf, len, "0x%llx", (unsigned long long)hint);   /* data: no symbol */
	else
		odb_sprint_symbol(k, (uintptr_t)hint, buf, len);
}

/*
 * A warning about a tracker (o is a copy taken under the bucket lock, or the
 * temporary "not available" one).  Counted always, printed for the first 5
 * (all types together), never for the selftest's descriptor.
 */
static void debug_print_object(struct odb_kernel *k, struct debug_objects *d,
			       const struct debug_obj_copy *o, const char *msg)
{
	const struct debug_obj_descr *descr = o->descr;
	const char *state = obj_states[o->state < ODEBUG_STATE_MAX ? o->state : ODEBUG_STATE_NONE];
	char kind[64], text[512], hint[160], objp[40] = "";
	bool print;

	if (d->fixes >= ODEBUG_FIXES_V65 && !enabled(d))
		return;   /* 8b64d420fe24: an OOM elsewhere emptied the hash meanwhile */
	if (descr == READ_ONCE(d->descr_test)) {
		ADD_ONCE(d->debug_objects_warnings, 1);
		return;
	}
	/* the kernel's static limit: fewer than 5 printed since boot */
	print = __atomic_fetch_add(&d->print_limit, 1, __ATOMIC_RELAXED) < 5;
	if (!print)
		__atomic_store_n(&d->print_limit, 5, __ATOMIC_RELAXED);
	debug_hint_text(k, descr, o->object, hint, sizeof(hint));
	if (d->warn_format == ODEBUG_WARN_V62)
		snprintf(objp, sizeof(objp), "object: %016llx ", (unsigned long long)o->object);
	snprintf(text, sizeof(text), "ODEBUG: %s %s (active state %u) %sobject type: %s hint: %s",
		 msg, state, o->astate, objp, descr->name, hint);
	snprintf(kind, sizeof(kind), "%s %s", msg, state);
	if (print) {
		odebug_warn(k, kind, o->object, NULL, text, (const void *)debug_print_object, __LINE__);
	} else {
		/* not printed (the kernel's WARN is skipped): a quiet report */
		struct odb_report_impl *r = report_new(k, "odebug", kind);

		if (r) {
			r->quiet = true;
			r->pub.addr = o->object;
			r->pub.object = o->object;
			report_line(r, "%s", text);
			report_publish(k, r);
		}
	}
	ADD_ONCE(d->debug_objects_warnings, 1);
}

static bool debug_object_fixup(struct odb_kernel *k, struct debug_objects *d,
			       bool (*fixup)(odb_kernel *, odb_addr_t, enum odb_debug_obj_state, void *),
			       const struct debug_obj_descr *descr, odb_addr_t addr,
			       debug_obj_state_t state)
{
	if (fixup && fixup(k, addr, state, descr->ctx)) {
		ADD_ONCE(d->debug_objects_fixups, 1);
		return true;
	}
	return false;
}

/* Warn (at most 5 times, not counted in warnings) when the on-stack
 * annotation does not match where addr is. */
static void debug_object_is_on_stack(struct odb_kernel *k, struct debug_objects *d,
				     odb_addr_t addr, int onstack)
{
	struct odb_task *t = odb_current(k);
	bool is_on_stack;
	char line[160];

	if (!t || !t->stack_hi)
		return;
	is_on_stack = addr >= t->stack_lo && addr < t->stack_hi;
	if (is_on_stack == !!onstack)
		return;
	if (__atomic_fetch_add(&d->stack_limit, 1, __ATOMIC_RELAXED) >= 5) {
		__atomic_store_n(&d->stack_limit, 5, __ATOMIC_RELAXED);
		return;
	}
	if (is_on_stack)
		snprintf(line, sizeof(line), "ODEBUG: object %016llx is on stack %016llx, but NOT annotated.",
			 (unsigned long long)addr, (unsigned long long)t->stack_lo);
	else
		snprintf(line, sizeof(line), "ODEBUG: object %016llx is NOT on stack %016llx, but annotated.",
			 (unsigned long long)addr, (unsigned long long)t->stack_lo);
	odebug_warn(k, is_on_stack ? "object is on stack, but NOT annotated" :
		    "object is NOT on stack, but annotated", addr, line, NULL,
		    (const void *)debug_object_is_on_stack, __LINE__);
}

/* ---- the API ---------------------------------------------------------------------------------- */
static void __debug_object_init(struct odb_kernel *k, odb_addr_t addr,
				const struct debug_obj_descr *descr, int onstack)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool check_stack = false, print = false;
	uint32_t id = descr_id(k, d, descr);

	if (unlikely(!id))
		return;
	fill_pool(k, d);

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (!obj) {
		obj = alloc_object(k, d, addr, db, id);
		if (!obj) {
			WRITE_ONCE(d->gate.debug_objects_enabled, 0);
			raw_spin_unlock_irqrestore(k, &db->lock, flags);
			debug_objects_oom(k, d);
			return;
		}
		check_stack = true;
	}

	switch (obj->state) {
	case ODEBUG_STATE_NONE:
	case ODEBUG_STATE_INIT:
	case ODEBUG_STATE_INACTIVE:
		obj->state = ODEBUG_STATE_INIT;
		break;
	case ODEBUG_STATE_ACTIVE:
		o = obj_copy(d, obj);
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		debug_print_object(k, d, &o, "init");
		debug_object_fixup(k, d, descr->fixup_init, descr, addr, ODEBUG_STATE_ACTIVE);
		return;
	case ODEBUG_STATE_DESTROYED:
		o = obj_copy(d, obj);
		print = true;
		break;
	default:
		break;
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (check_stack)
		debug_object_is_on_stack(k, d, addr, onstack);
	if (print)
		debug_print_object(k, d, &o, "init");
}

void debug_object_init(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	if (!enabled(dobj(k)))
		return;
	__debug_object_init(k, addr, descr, 0);
}

void debug_object_init_on_stack(struct odb_kernel *k, odb_addr_t addr,
				const struct debug_obj_descr *descr)
{
	if (!enabled(dobj(k)))
		return;
	__debug_object_init(k, addr, descr, 1);
}

static inline struct debug_obj_copy not_available(odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_obj_copy o = { .state = ODEBUG_STATE_NOTAVAILABLE, .object = addr, .descr = descr };

	return o;
}


/*
 * v6.4's lookup_object_or_alloc (63a759694eed): the lookup and, for an
 * untracked object that is_static_object confirms, its tracker in state INIT,
 * under one hold of the bucket lock, so that two first uses of a static
 * object cannot both start tracking it.  The descriptor's callback is asked
 * outside the lock (a user callback never runs under a core lock), then the
 * lookup is repeated under it: the same atomicity.  Called and returns with
 * db->lock held (*flags); *oom: no tracker left (the lock is dropped then).
 * Before v6.4 the plain lookup.
 */
static struct debug_obj *lookup_object_or_alloc(struct odb_kernel *k, struct debug_objects *d,
						odb_addr_t addr, struct debug_bucket *db,
						const struct debug_obj_descr *descr,
						unsigned long *flags, bool *new_static, bool *oom)
{
	struct debug_obj *obj = lookup_object(k, d, addr, db);
	uint32_t id;
	bool is_static;

	*new_static = *oom = false;
	if (obj || d->fixes < ODEBUG_FIXES_V64 || !descr->is_static_object)
		return obj;
	raw_spin_unlock_irqrestore(k, &db->lock, *flags);
	is_static = descr->is_static_object(k, addr, descr->ctx);
	raw_spin_lock_irqsave(k, &db->lock, *flags);
	obj = lookup_object(k, d, addr, db);
	if (obj || !is_static)
		return obj;
	id = descr_id(k, d, descr);   /* registers under pool_lock (below the bucket lock) */
	if (unlikely(!id))
		return NULL;
	obj = alloc_object(k, d, addr, db, id);
	if (!obj) {
		WRITE_ONCE(d->gate.debug_objects_enabled, 0);
		raw_spin_unlock_irqrestore(k, &db->lock, *flags);
		*oom = true;
		return NULL;
	}
	obj->state = ODEBUG_STATE_INIT;   /* static objects are considered initialised */
	*new_static = true;
	return obj;
}

int debug_object_activate(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool new_static, oom;
	int ret = 0;

	if (!enabled(d))
		return 0;
	if (d->fixes >= ODEBUG_FIXES_V64)
		fill_pool(k, d);   /* 0af462f19e63: static objects may allocate here */

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object_or_alloc(k, d, addr, db, descr, &flags, &new_static, &oom);
	if (oom) {
		debug_objects_oom(k, d);
		return 0;
	}
	if (obj) {
		bool print = false;

		switch (obj->state) {
		case ODEBUG_STATE_INIT:
		case ODEBUG_STATE_INACTIVE:
			obj->state = ODEBUG_STATE_ACTIVE;
			break;
		case ODEBUG_STATE_ACTIVE:
			o = obj_copy(d, obj);
			raw_spin_unlock_irqrestore(k, &db->lock, flags);
			debug_print_object(k, d, &o, "activate");
			return debug_object_fixup(k, d, descr->fixup_activate, descr, addr,
						  ODEBUG_STATE_ACTIVE) ? 0 : -EINVAL;
		case ODEBUG_STATE_DESTROYED:
			o = obj_copy(d, obj);
			print = true;
			ret = -EINVAL;
			break;
		default:
			break;
		}
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		if (new_static)
			debug_object_is_on_stack(k, d, addr, 0);
		if (print)
			debug_print_object(k, d, &o, "activate");
		return ret;
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);

	/* Untracked: a statically initialised object is tracked from here on
	 * (before v6.4 in two steps: the window the init race goes through);
	 * anything else is a bug the type may fix up. */
	if (d->fixes < ODEBUG_FIXES_V64 && descr->is_static_object &&
	    descr->is_static_object(k, addr, descr->ctx)) {
		debug_object_init(k, addr, descr);
		debug_object_activate(k, addr, descr);
		return 0;
	}
	o = not_available(addr, descr);
	debug_print_object(k, d, &o, "activate");
	return debug_object_fixup(k, d, descr->fixup_activate, descr, addr,
				  ODEBUG_STATE_NOTAVAILABLE) ? 0 : -EINVAL;
}

void debug_object_deactivate(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool print = false;

	if (!enabled(d))
		return;

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (obj) {
		switch (obj->state) {
		case ODEBUG_STATE_INIT:
		case ODEBUG_STATE_INACTIVE:
		case ODEBUG_STATE_ACTIVE:
			if (!obj->astate) {
				obj->state = ODEBUG_STATE_INACTIVE;
			} else {
				o = obj_copy(d, obj);
				print = true;
			}
			break;
		case ODEBUG_STATE_DESTROYED:
			o = obj_copy(d, obj);
			print = true;
			break;
		default:
			break;
		}
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (!obj) {
		o = not_available(addr, descr);
		print = true;
	}
	if (print)
		debug_print_object(k, d, &o, "deactivate");
}

void debug_object_destroy(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool print = false;

	if (!enabled(d))
		return;

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (!obj) {
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		return;   /* untracked: silent */
	}
	switch (obj->state) {
	case ODEBUG_STATE_NONE:
	case ODEBUG_STATE_INIT:
	case ODEBUG_STATE_INACTIVE:
		obj->state = ODEBUG_STATE_DESTROYED;
		break;
	case ODEBUG_STATE_ACTIVE:
		o = obj_copy(d, obj);
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		debug_print_object(k, d, &o, "destroy");
		debug_object_fixup(k, d, descr->fixup_destroy, descr, addr, ODEBUG_STATE_ACTIVE);
		return;
	case ODEBUG_STATE_DESTROYED:
		o = obj_copy(d, obj);
		print = true;
		break;
	default:
		break;
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (print)
		debug_print_object(k, d, &o, "destroy");
}

void debug_object_free(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	obj_ref_t *link;
	unsigned long flags;

	if (!enabled(d))
		return;

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object_link(k, d, addr, db, &link);
	if (!obj) {
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		return;   /* untracked: silent */
	}
	if (obj->state == ODEBUG_STATE_ACTIVE) {
		o = obj_copy(d, obj);
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		debug_print_object(k, d, &o, "free");
		debug_object_fixup(k, d, descr->fixup_free, descr, addr, ODEBUG_STATE_ACTIVE);
		return;
	}
	bucket_del(db, link, obj);
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	free_object(k, d, obj);
}

void debug_object_assert_init(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool new_static, oom;

	if (!enabled(d))
		return;

	if (d->fixes >= ODEBUG_FIXES_V64)
		fill_pool(k, d);
	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object_or_alloc(k, d, addr, db, descr, &flags, &new_static, &oom);
	if (oom) {
		debug_objects_oom(k, d);
		return;
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (new_static)
		debug_object_is_on_stack(k, d, addr, 0);
	if (obj)
		return;   /* tracked, whatever the state: fine */

	/* before v6.4: a static object is tracked in a second step (the window
	 * in which an activate on another CPU tracks it first) */
	if (d->fixes < ODEBUG_FIXES_V64 && descr->is_static_object &&
	    descr->is_static_object(k, addr, descr->ctx)) {
		debug_object_init(k, addr, descr);
		return;
	}
	o = not_available(addr, descr);
	debug_print_object(k, d, &o, "assert_init");
	debug_object_fixup(k, d, descr->fixup_assert_init, descr, addr, ODEBUG_STATE_NOTAVAILABLE);
}

void debug_object_active_state(struct odb_kernel *k, odb_addr_t addr,
			       const struct debug_obj_descr *descr, unsigned int expect,
			       unsigned int next)
{
	struct debug_objects *d = dobj(k);
	struct debug_bucket *db;
	struct debug_obj *obj;
	struct debug_obj_copy o;
	unsigned long flags;
	bool print = false;

	if (!enabled(d))
		return;

	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (obj) {
		if (obj->state == ODEBUG_STATE_ACTIVE && obj->astate == expect) {
			obj->astate = next;
		} else {
			o = obj_copy(d, obj);
			print = true;
		}
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (!obj) {
		o = not_available(addr, descr);
		print = true;
	}
	if (print)
		debug_print_object(k, d, &o, "active_state");
}

/* Addresses of ACTIVE objects already warned about in this chunk (the bound
 * on the rescan). */
struct warned_set {
	odb_addr_t small[8];
	odb_addr_t *v;
	size_t n, cap;
};

static bool warned_has(const struct warned_set *w, odb_addr_t a)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i] == a)
			return true;
	return false;
}

static void warned_add(struct warned_set *w, odb_addr_t a)
{
	if (w->n == w->cap) {
		size_t ncap = w->cap * 2;
		odb_addr_t *nv = malloc(ncap * sizeof(*nv));

		if (!nv)
			return;   /* then the object may be warned about again */
		memcpy(nv, w->v, w->n * sizeof(*nv));
		if (w->v != w->small)
			free(w->v);
		w->v = nv;
		w->cap = ncap;
	}
	w->v[w->n++] = a;
}

/* "free active": the warning (its hint may be a callback), then fixup_free. */
static void free_active(struct odb_kernel *k, struct debug_objects *d, const struct debug_obj_copy *o)
{
	debug_print_object(k, d, o, "free");
	debug_object_fixup(k, d, o->descr->fixup_free, o->descr, o->object, ODEBUG_STATE_ACTIVE);
}

/*
 * Deliberate deviation (issue 18), for descriptors with ODB_DESCR_DEFER_ATOMIC
 * (every Python one): an ACTIVE object found while the freeing
 * task holds a core lock (odb_task_atomic: a slab page freed under a vCPU's
 * irq lock, under slab_mutex by a cache's shrink/destroy or the quarantine's
 * drain, or under its srcu) has its warning and fixup_free deferred until the
 * task holds none (kernel/kernel.h, odb_defer): they call the descriptor's
 * callbacks, which may be user code that takes those locks again (any call
 * into the slab) or, from Python, the interpreter's lock.  The kernel calls
 * them there, in atomic context.  Within the call the object is skipped on
 * the rescan, as an object whose fixup left it active is.
 */
struct deferred_free_active {
	struct odb_deferred d;
	struct debug_obj_copy o;
};

static void run_deferred_free_active(struct odb_kernel *k, struct odb_deferred *x)
{
	struct deferred_free_active *w = container_of(x, struct deferred_free_active, d);
	struct debug_objects *d = dobj(k);
	bool still = false;

	/* still tracked, ACTIVE, of that type? (a second range check of the same
	 * call, or the object's owner meanwhile, may have settled it) */
	if (enabled(d)) {
		struct debug_bucket *db = get_bucket(d, w->o.object);
		struct debug_obj *obj;
		unsigned long flags;

		raw_spin_lock_irqsave(k, &db->lock, flags);
		obj = lookup_object(k, d, w->o.object, db);
		still = obj && obj->state == ODEBUG_STATE_ACTIVE && obj_copy(d, obj).descr == w->o.descr;
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
	}
	if (still)
		free_active(k, d, &w->o);
	free(w);
}

static void free_active_or_defer(struct odb_kernel *k, struct debug_objects *d, struct odb_task *t,
				 const struct debug_obj_copy *o)
{
	struct deferred_free_active *w;

	if (!(o->descr->flags & ODB_DESCR_DEFER_ATOMIC) || !t || !odb_task_atomic(t)) {
		free_active(k, d, o);
		return;
	}
	w = malloc(sizeof(*w));
	if (!w) {
		ADD_ONCE(d->debug_objects_warnings, 1);   /* counted, not printed: no memory */
		return;
	}
	w->o = *o;
	w->d.fn = run_deferred_free_active;
	odb_defer(t, &w->d);
}

static __attribute__((noinline)) void __debug_check_no_obj_freed(struct odb_kernel *k, odb_addr_t address,
								uint64_t size)
{
	struct debug_objects *d = dobj(k);
	odb_addr_t saddr = address, eaddr = address + size, paddr = saddr & ODEBUG_CHUNK_MASK;
	uint64_t chunks = ((eaddr - paddr) + (ODEBUG_CHUNK_SIZE - 1)) >> ODEBUG_CHUNK_SHIFT;
	struct warned_set warned = { .n = 0, .cap = ARRAY_SIZE(warned.small) };
	unsigned long flags;
	int objs_checked = 0;
	bool work = false;

	warned.v = warned.small;
	for (; chunks > 0; chunks--, paddr += ODEBUG_CHUNK_SIZE) {
		struct debug_bucket *db = get_bucket(d, paddr);
		struct debug_obj *obj, *prev;
		uint32_t tag = bucket_tag(d, db);
		obj_ref_t *link, ref;
		int cnt, kept, repairs = 0;

		warned.n = 0;
		/* An empty bucket needs no lock (own shortcut, issue 16: most frees
		 * meet one).  Its head is host memory, written only with WRITE_ONCE
		 * under db->lock, and an empty head means a count of 0 (bucket_repair
		 * has nothing to find): the walk below would check nothing and keep
		 * every stat as it is.  Not under the controlled scheduler, where the
		 * lock is a scheduling point every schedule must keep. */
		if (!READ_ONCE(db->list.first) && !k->sched_controlled)
			continue;
repeat:
		cnt = kept = 0;
		prev = NULL;
		raw_spin_lock_irqsave(k, &db->lock, flags);
		for (link = &db->list.first; (ref = *link); ) {
			odb_addr_t oaddr;

			obj = obj_peek(k, d, ref);
			if (unlikely(!obj || obj->list != tag || kept >= db->count))
				goto repair;
			oaddr = obj->object;
			cnt++;
			if (oaddr < saddr || oaddr >= eaddr) {
				prev = obj;
				link = &obj->next;
				kept++;
				continue;   /* another chunk's, or starts outside the range */
			}
			/* used from here: the full check, of the one holding the link too */
			if (unlikely(!hashed_ok(k, d, obj, tag) || (prev && !obj_owned(k, d, prev))))
				goto repair;
			if (obj->state == ODEBUG_STATE_ACTIVE) {
				struct debug_obj_copy o;

				prev = obj;
				link = &obj->next;
				kept++;
				if (warned_has(&warned, oaddr))
					continue;   /* odebug's bound: its fixup left it active */
				o = obj_copy(d, obj);
				raw_spin_unlock_irqrestore(k, &db->lock, flags);
				warned_add(&warned, oaddr);
				free_active_or_defer(k, d, odb_current(k), &o);
				goto repeat;
			}
			bucket_del(db, link, obj);   /* link now names the next one */
			work |= __free_object(k, d, obj);
		}
		if (unlikely(kept != db->count))
			goto repair;   /* ends short of its count */
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
		max_once(&d->debug_objects_maxchain, cnt);
		objs_checked += cnt;
		continue;
repair:
		if (bucket_repair(k, d, db) && ++repairs < 3) {
			raw_spin_unlock_irqrestore(k, &db->lock, flags);
			goto repeat;
		}
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
	}
	max_once(&d->debug_objects_maxchecked, objs_checked);
	if (warned.v != warned.small)
		free(warned.v);
	schedule_free_work(k, d, work);
}

/*
 * A range within one chunk, or across the boundary of two (a slab object whose
 * slot size does not divide the page: one in a few of kmalloc-1k's with
 * KASAN), whose buckets are empty (most frees: few objects are tracked) is
 * decided by the hooks below, inline, without the walk's call: the walk would
 * check nothing and keep every stat as it is (see its shortcut).  The freeing
 * work is still scheduled.  Not under the controlled scheduler, whose
 * schedules keep the walk's lock and its sites.
 */
static inline __attribute__((always_inline)) bool
nothing_tracked(struct odb_kernel *k, struct debug_objects *d, odb_addr_t addr, uint64_t size)
{
	odb_addr_t last = addr + size - 1;

	if (unlikely(!size))
		return false;
	if (unlikely((addr ^ last) & ODEBUG_CHUNK_MASK)) {
		/* two chunks: last's is the one after addr's (the walk's second) */
		if (last < addr ||
		    (last & ODEBUG_CHUNK_MASK) - (addr & ODEBUG_CHUNK_MASK) != ODEBUG_CHUNK_SIZE ||
		    READ_ONCE(get_bucket(d, last)->list.first))
			return false;
	}
	if (!READ_ONCE(get_bucket(d, addr)->list.first) &&
	    likely(!k->sched_controlled && !odb_sched_on(k))) {
		schedule_free_work(k, d, false);
		return true;
	}
	return false;
}

void debug_check_no_obj_freed_range(struct odb_kernel *k, odb_addr_t addr, uint64_t size)
{
	struct debug_objects *d = dobj(k);

	if (enabled(d) && !nothing_tracked(k, d, addr, size))
		__debug_check_no_obj_freed(k, addr, size);
}

/* The slab's hook (host pointers into the arena). */
void debug_check_no_obj_freed(struct odb_kernel *k, const void *address, unsigned long size)
{
	struct debug_objects *d = dobj(k);
	odb_addr_t addr;

	if (!enabled(d) || !address)
		return;
	addr = host_to_virt(k, address);
	if (!nothing_tracked(k, d, addr, size))
		__debug_check_no_obj_freed(k, addr, size);
}

bool debug_check_no_obj_freed_fast(struct odb_kernel *k, const void *address, unsigned long size)
{
	struct debug_objects *d = dobj(k);

	return enabled(d) && address && nothing_tracked(k, d, host_to_virt(k, address), size);
}

/* The page allocator's hook. */
static void debug_check_no_obj_freed_pages(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	debug_check_no_obj_freed_range(k, addr, size);
}

/* ---- the selftest ------------------------------------------------------------------------------- */
static odb_addr_t selftest_addr(struct debug_objects *d)
{
	return (odb_addr_t)(uintptr_t)&d->selftest_obj;
}

static bool is_static_object(odb_kernel *k, odb_addr_t addr, void *ctx)
{
	struct self_test *obj = (struct self_test *)(uintptr_t)addr;

	return obj->static_init;
}

static bool fixup_init(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx)
{
	struct debug_objects *d = ctx;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(k, addr, &d->descr_type_test);
	debug_object_init(k, addr, &d->descr_type_test);
	return true;
}

static bool fixup_activate(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx)
{
	struct debug_objects *d = ctx;

	switch (state) {
	case ODEBUG_STATE_NOTAVAILABLE:
		return true;
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(k, addr, &d->descr_type_test);
		debug_object_activate(k, addr, &d->descr_type_test);
		return true;
	default:
		return false;
	}
}

static bool fixup_destroy(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx)
{
	struct debug_objects *d = ctx;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(k, addr, &d->descr_type_test);
	debug_object_destroy(k, addr, &d->descr_type_test);
	return true;
}

static bool fixup_free(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx)
{
	struct debug_objects *d = ctx;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(k, addr, &d->descr_type_test);
	debug_object_free(k, addr, &d->descr_type_test);
	return true;
}

static int check_results(struct odb_kernel *k, struct debug_objects *d, odb_addr_t addr,
			 debug_obj_state_t state, int64_t fixups, int64_t warnings)
{
	struct debug_bucket *db = get_bucket(d, addr);
	struct debug_obj *obj;
	unsigned long flags;
	char msg[128] = "";

	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (!obj && state != ODEBUG_STATE_NONE)
		snprintf(msg, sizeof(msg), "ODEBUG: selftest object not found");
	else if (obj && obj->state != state)
		snprintf(msg, sizeof(msg), "ODEBUG: selftest wrong state: %d != %d",
			 (int)obj->state, (int)state);
	else if (fixups != READ_ONCE(d->debug_objects_fixups))
		snprintf(msg, sizeof(msg), "ODEBUG: selftest fixups failed %d != %d",
			 (int)fixups, (int)READ_ONCE(d->debug_objects_fixups));
	else if (warnings != READ_ONCE(d->debug_objects_warnings))
		snprintf(msg, sizeof(msg), "ODEBUG: selftest warnings failed %d != %d",
			 (int)warnings, (int)READ_ONCE(d->debug_objects_warnings));
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	if (!msg[0])
		return 0;
	odebug_warn(k, msg + 8, addr, NULL, msg, (const void *)check_results, __LINE__);
	WRITE_ONCE(d->gate.debug_objects_enabled, 0);
	return -EINVAL;
}

static void debug_objects_selftest(struct odb_kernel *k, struct debug_objects *d)
{
	const struct debug_obj_descr *t = &d->descr_type_test;
	odb_addr_t obj = selftest_addr(d);
	int64_t fixups, oldfixups, warnings, oldwarnings;
	unsigned long flags;

	d->descr_type_test = (struct debug_obj_descr) {
		.name = "selftest",
		.ctx = d,
		.is_static_object = is_static_object,
		.fixup_init = fixup_init,
		.fixup_activate = fixup_activate,
		.fixup_destroy = fixup_destroy,
		.fixup_free = fixup_free,
	};
	memset(&d->selftest_obj, 0, sizeof(d->selftest_obj));

	local_irq_save(k, flags);
	fixups = oldfixups = READ_ONCE(d->debug_objects_fixups);
	warnings = oldwarnings = READ_ONCE(d->debug_objects_warnings);
	WRITE_ONCE(d->descr_test, t);

#define STEP(call, st, f, w) \
	do { call; fixups += (f); warnings += (w); \
	     if (check_results(k, d, obj, st, fixups, warnings)) goto out; } while (0)

	STEP(debug_object_init(k, obj, t), ODEBUG_STATE_INIT, 0, 0);
	STEP(debug_object_activate(k, obj, t), ODEBUG_STATE_ACTIVE, 0, 0);
	STEP(debug_object_activate(k, obj, t), ODEBUG_STATE_ACTIVE, 1, 1);
	STEP(debug_object_deactivate(k, obj, t), ODEBUG_STATE_INACTIVE, 0, 0);
	STEP(debug_object_destroy(k, obj, t), ODEBUG_STATE_DESTROYED, 0, 0);
	STEP(debug_object_init(k, obj, t), ODEBUG_STATE_DESTROYED, 0, 1);
	STEP(debug_object_activate(k, obj, t), ODEBUG_STATE_DESTROYED, 0, 1);
	STEP(debug_object_deactivate(k, obj, t), ODEBUG_STATE_DESTROYED, 0, 1);
	STEP(debug_object_free(k, obj, t), ODEBUG_STATE_NONE, 0, 0);

	d->selftest_obj.static_init = 1;
	STEP(debug_object_activate(k, obj, t), ODEBUG_STATE_ACTIVE, 0, 0);
	STEP(debug_object_init(k, obj, t), ODEBUG_STATE_INIT, 1, 1);
	STEP(debug_object_free(k, obj, t), ODEBUG_STATE_NONE, 0, 0);

	/* CONFIG_DEBUG_OBJECTS_FREE */
	STEP(debug_object_init(k, obj, t), ODEBUG_STATE_INIT, 0, 0);
	STEP(debug_object_activate(k, obj, t), ODEBUG_STATE_ACTIVE, 0, 0);
	STEP(__debug_check_no_obj_freed(k, obj, sizeof(d->selftest_obj)), ODEBUG_STATE_NONE, 1, 1);
#undef STEP

	pr_info(k, "ODEBUG: selftest passed");
	d->selftest_passed = true;
out:
	WRITE_ONCE(d->debug_objects_fixups, oldfixups);
	WRITE_ONCE(d->debug_objects_warnings, oldwarnings);
	WRITE_ONCE(d->descr_test, NULL);
	local_irq_restore(k, flags);
}

/* ---- boot and shutdown ----------------------------------------------------------------------------- */
int debug_objects_early_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	struct debug_objects *d = dobj_alloc(k);

	if (!d)
		return ODB_ENOMEM;
	d->obj_hash = calloc(ODEBUG_HASH_SIZE, sizeof(*d->obj_hash));
	d->obj_static_pool = calloc(ODEBUG_POOL_SIZE, sizeof(*d->obj_static_pool));
	d->percpu_obj_pool = aligned_alloc(64, sizeof(*d->percpu_obj_pool) * k->nr_cpu_ids);
	if (!d->obj_hash || !d->obj_static_pool || !d->percpu_obj_pool) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "debug objects: out of memory");
		return ODB_ENOMEM;
	}
	memset(d->percpu_obj_pool, 0, sizeof(*d->percpu_obj_pool) * k->nr_cpu_ids);
	for (int i = 0; i < ODEBUG_HASH_SIZE; i++)
		raw_spin_lock_init(&d->obj_hash[i].lock);
	raw_spin_lock_init(&d->pool_lock);
	INIT_DELAYED_WORK(&d->debug_obj_work, free_obj_work, d);

	d->obj_pool_min_free = ODEBUG_POOL_SIZE;
	d->obj_pool_free = ODEBUG_POOL_SIZE;
	d->debug_objects_pool_size = ODEBUG_POOL_SIZE;
	d->debug_objects_pool_min_level = ODEBUG_POOL_MIN_LEVEL;
	d->static_live = true;
	for (int i = 0; i < ODEBUG_POOL_SIZE; i++)
		hlist_add_head(&d->obj_static_pool[i], (obj_ref_t)i + 1, &d->obj_pool, ODEBUG_LIST_POOL);
	d->early_done = true;
	odb_register_page_free_hook(k, debug_check_no_obj_freed_pages);
	return 0;
}

/* Swap the static boot trackers for slab ones (hashed trackers are copied). */
static int debug_objects_replace_static_objects(struct odb_kernel *k, struct debug_objects *d)
{
	struct debug_obj *objects[ODEBUG_POOL_SIZE];
	unsigned long flags;
	int cnt = 0;

	for (int i = 0; i < ODEBUG_POOL_SIZE; i++) {
		objects[i] = kmem_cache_zalloc(k, d->obj_cache, GFP_KERNEL);
		if (!objects[i]) {
			while (i--)
				kmem_cache_free(k, d->obj_cache, objects[i]);
			return -ENOMEM;
		}
	}

	/* only the boot CPU runs here: interrupts off is enough.  The static
	 * trackers are in host memory: nobody else can have written them. */
	local_irq_save(k, flags);
	WRITE_ONCE(d->obj_pool.first, 0);
	for (int i = 0; i < ODEBUG_POOL_SIZE; i++)
		hlist_add_head(objects[i], host_to_virt(k, objects[i]), &d->obj_pool, ODEBUG_LIST_POOL);
	for (int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct debug_bucket *db = &d->obj_hash[i];
		struct hlist_head old = { 0 };
		int n = db->count;

		hlist_move_list(&db->list, &old);
		db->count = 0;
		while (n--) {
			struct debug_obj *obj = __alloc_object(k, d, &old, ODEBUG_LIST_BUCKET(i));
			struct debug_obj *new = __alloc_object(k, d, &d->obj_pool, ODEBUG_LIST_POOL);

			new->state = obj->state;
			new->astate = obj->astate;
			new->object = obj->object;
			new->descr = obj->descr;
			bucket_add(k, d, new, db);
			cnt++;
		}
	}
	d->static_live = false;   /* static references name nothing from here on */
	local_irq_restore(k, flags);
	(void)cnt;   /* pr_debug("%d of %d active objects replaced") */
	return 0;
}

int debug_objects_mem_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	struct debug_objects *d = dobj(k);

	if (!d || !d->early_done || !enabled(d))
		return 0;

	d->obj_cache = kmem_cache_create(k, "debug_objects_cache", sizeof(struct debug_obj), 0,
					 SLAB_DEBUG_OBJECTS | SLAB_NOLEAKTRACE, NULL);
	if (d->obj_cache)
		kmem_cache_mark_internal(d->obj_cache);
	if (!d->obj_cache || debug_objects_replace_static_objects(k, d)) {
		WRITE_ONCE(d->gate.debug_objects_enabled, 0);
		if (d->obj_cache)
			kmem_cache_destroy(k, d->obj_cache);
		d->obj_cache = NULL;
		pr_warn(k, "ODEBUG: out of memory.");
	} else if (d->selftest) {
		debug_objects_selftest(k, d);
	}

	/* The thresholds grow with the number of CPUs (v5.3: a batch each). */
	d->debug_objects_pool_size += (int)k->nr_cpu_ids * ODEBUG_BATCH_SIZE;
	d->debug_objects_pool_min_level += (int)k->nr_cpu_ids * ODEBUG_BATCH_SIZE;
	return 0;
}

void debug_objects_exit(struct odb_kernel *k)
{
	struct debug_objects *d = dobj(k);

	if (!d)
		return;
	if (d->early_done) {
		cancel_delayed_work_sync(k, &d->debug_obj_work);
		for (int i = 0; i < ODEBUG_HASH_SIZE; i++)
			spin_lock_destroy(&d->obj_hash[i].lock);
		spin_lock_destroy(&d->pool_lock);
	}
	/* Slab trackers live in the arena and go with the slab. */
	free(d->obj_hash);
	free(d->obj_static_pool);
	free(d->percpu_obj_pool);
	free(d);
	k->debugobjects = NULL;
}

/* ---- public C API ------------------------------------------------------------------------------------- */
static int check_descr(struct odb_kernel *k, const struct odb_debug_obj_descr *descr)
{
	if (!descr)
		return odb_err(k, ODB_EINVAL, "debug objects: descriptor is NULL");
	if (!descr->name)
		return odb_err(k, ODB_EINVAL, "debug objects: descriptor has no name");
	return 0;
}

#define ODB_DOBJ_VOID_API(pub, fn) \
	int pub(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *descr) \
	{ \
		struct odb_task *t = odb_enter(k); \
		int ret; \
		if (!t) \
			return odb_enter_failed(k); \
		ret = check_descr(k, descr); \
		if (!ret) \
			fn(k, addr, descr); \
		return odb_leave(t, ret); \
	}

ODB_DOBJ_VOID_API(odb_debug_object_init, debug_object_init)
ODB_DOBJ_VOID_API(odb_debug_object_init_on_stack, debug_object_init_on_stack)
ODB_DOBJ_VOID_API(odb_debug_object_deactivate, debug_object_deactivate)
ODB_DOBJ_VOID_API(odb_debug_object_destroy, debug_object_destroy)
ODB_DOBJ_VOID_API(odb_debug_object_free, debug_object_free)
ODB_DOBJ_VOID_API(odb_debug_object_assert_init, debug_object_assert_init)

int odb_debug_object_activate(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *descr)
{
	struct odb_task *t = odb_enter(k);
	int ret;

	if (!t)
		return odb_enter_failed(k);
	ret = check_descr(k, descr);
	if (!ret)
		ret = debug_object_activate(k, addr, descr);
	return odb_leave(t, ret);
}

int odb_debug_object_active_state(odb_kernel *k, odb_addr_t addr,
				  const struct odb_debug_obj_descr *descr,
				  unsigned int expect, unsigned int next)
{
	struct odb_task *t = odb_enter(k);
	int ret;

	if (!t)
		return odb_enter_failed(k);
	ret = check_descr(k, descr);
	if (!ret)
		debug_object_active_state(k, addr, descr, expect, next);
	return odb_leave(t, ret);
}

int odb_debug_check_no_obj_freed(odb_kernel *k, odb_addr_t addr, uint64_t size)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	if (size > (1ULL << 40) || addr + size < addr)
		return odb_leave(t, odb_err(k, ODB_ERANGE,
					    "check_no_obj_freed: range [0x%llx, +0x%llx) too large or wraps",
					    (unsigned long long)addr, (unsigned long long)size));
	debug_check_no_obj_freed_range(k, addr, size);
	return odb_leave(t, ODB_OK);
}

int odb_debug_object_lookup(odb_kernel *k, odb_addr_t addr, int *state, unsigned int *astate)
{
	struct odb_task *t = odb_enter(k);
	struct debug_objects *d;
	struct debug_bucket *db;
	struct debug_obj *obj;
	unsigned long flags;
	int ret = ODB_ENOENT;

	if (!t)
		return odb_enter_failed(k);
	d = dobj(k);
	if (!d || !d->early_done)
		return odb_leave(t, ODB_ENOENT);
	db = get_bucket(d, addr);
	raw_spin_lock_irqsave(k, &db->lock, flags);
	obj = lookup_object(k, d, addr, db);
	if (obj) {
		if (state)
			*state = (int)obj->state;
		if (astate)
			*astate = obj->astate;
		ret = ODB_OK;
	}
	raw_spin_unlock_irqrestore(k, &db->lock, flags);
	return odb_leave(t, ret);
}

/* What the stats file shows (debug_stats_show). */
static void debug_stats_get(struct odb_kernel *k, struct debug_objects *d,
			    struct odb_debug_objects_stats *s)
{
	int64_t pcp = 0;
	unsigned long flags;

	memset(s, 0, sizeof(*s));
	if (!d || !d->early_done)
		return;
	for (unsigned int cpu = 0; cpu < k->nr_cpu_ids; cpu++)
		pcp += READ_ONCE(d->percpu_obj_pool[cpu].obj_free);
	s->max_chain = READ_ONCE(d->debug_objects_maxchain);
	s->max_checked = READ_ONCE(d->debug_objects_maxchecked);
	s->warnings = READ_ONCE(d->debug_objects_warnings);
	s->fixups = READ_ONCE(d->debug_objects_fixups);
	raw_spin_lock_irqsave(k, &d->pool_lock, flags);
	s->pool_free = d->obj_pool_free + pcp;
	s->pool_pcp_free = pcp;
	s->pool_min_free = d->obj_pool_min_free;
	s->pool_used = d->obj_pool_used - pcp;
	s->pool_max_used = d->obj_pool_max_used;
	s->on_free_list = d->obj_nr_tofree;
	s->objs_allocated = d->debug_objects_allocated;
	s->objs_freed = d->debug_objects_freed;
	raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
}

int odb_debug_objects_stats(odb_kernel *k, struct odb_debug_objects_stats *out)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	debug_stats_get(k, dobj(k), out);
	return odb_leave(t, ODB_OK);
}

char *odb_debug_objects_stats_text(odb_kernel *k)
{
	struct odb_task *t = odb_enter(k);
	struct odb_debug_objects_stats s;
	char *buf;

	if (!t)
		return NULL;
	debug_stats_get(k, dobj(k), &s);
	buf = malloc(512);
	if (buf)
		snprintf(buf, 512,
			 "max_chain     :%lld\n"
			 "max_checked   :%lld\n"
			 "warnings      :%lld\n"
			 "fixups        :%lld\n"
			 "pool_free     :%lld\n"
			 "pool_pcp_free :%lld\n"
			 "pool_min_free :%lld\n"
			 "pool_used     :%lld\n"
			 "pool_max_used :%lld\n"
			 "on_free_list  :%lld\n"
			 "objs_allocated:%lld\n"
			 "objs_freed    :%lld\n",
			 (long long)s.max_chain, (long long)s.max_checked, (long long)s.warnings,
			 (long long)s.fixups, (long long)s.pool_free, (long long)s.pool_pcp_free,
			 (long long)s.pool_min_free, (long long)s.pool_used,
			 (long long)s.pool_max_used, (long long)s.on_free_list,
			 (long long)s.objs_allocated, (long long)s.objs_freed);
	odb_leave(t, ODB_OK);
	return buf;
}

int odb_debug_objects_internals(odb_kernel *k, struct odb_debug_objects_internals *out)
{
	struct odb_task *t = odb_enter(k);
	struct debug_objects *d;
	unsigned long flags;

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	d = dobj(k);
	if (!d || !d->early_done)
		return odb_leave(t, ODB_OK);
	out->enabled = enabled(d);
	out->obj_cache = d->obj_cache != NULL;
	out->eager = d->policy == ODEBUG_FREE_EAGER;
	out->obj_freeing = READ_ONCE(d->obj_freeing);
	out->work_pending = odb_work_pending(k, &d->debug_obj_work);
	out->nr_cpus = (int)k->nr_cpu_ids;
	for (unsigned int cpu = 0; cpu < k->nr_cpu_ids && cpu < ODB_MAX_CPUS; cpu++)
		out->pcp_free[cpu] = READ_ONCE(d->percpu_obj_pool[cpu].obj_free);
	for (int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct debug_bucket *db = &d->obj_hash[i];

		if (!READ_ONCE(db->list.first))
			continue;
		raw_spin_lock_irqsave(k, &db->lock, flags);
		/* the full check of every link on the way, then the count */
		bucket_repair(k, d, db);
		out->hashed += db->count;
		raw_spin_unlock_irqrestore(k, &db->lock, flags);
	}
	raw_spin_lock_irqsave(k, &d->pool_lock, flags);
	out->obj_pool_free = d->obj_pool_free;
	out->obj_pool_min_free = d->obj_pool_min_free;
	out->obj_pool_used = d->obj_pool_used;
	out->obj_pool_max_used = d->obj_pool_max_used;
	out->obj_nr_tofree = d->obj_nr_tofree;
	raw_spin_unlock_irqrestore(k, &d->pool_lock, flags);
	out->pool_size = d->debug_objects_pool_size;
	out->pool_min_level = d->debug_objects_pool_min_level;
	out->work_runs = READ_ONCE(d->work_runs);
	out->work_runs_worker = READ_ONCE(d->work_runs_worker);
	out->offline_freed = READ_ONCE(d->offline_freed);
	out->trylock_failed = READ_ONCE(d->trylock_failed);
	out->selftest_passed = d->selftest_passed;
	return odb_leave(t, ODB_OK);
}

bool odb_debug_objects_enabled(odb_kernel *k)
{
	return !odb_kernel_closed(k) && enabled(dobj(k));
}

int odb_debug_objects_fail_trylock(odb_kernel *k, unsigned int n)
{
	struct odb_task *t = odb_enter(k);
	struct debug_objects *d;

	if (!t)
		return odb_enter_failed(k);
	d = dobj(k);
	if (d)
		WRITE_ONCE(d->fail_trylock, (int)(n > INT32_MAX ? INT32_MAX : n));
	return odb_leave(t, ODB_OK);
}

int odb_debug_objects_stack_bounds(odb_kernel *k, odb_addr_t *lo, odb_addr_t *hi)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	*lo = t->stack_lo;
	*hi = t->stack_hi;
	return odb_leave(t, ODB_OK);
}

/*
 * The slab API's check before a free a user asked for (kfree, kmem_cache_free,
 * kfree_rcu, krealloc): x, a host pointer into the arena, in an object of
 * debug_objects_cache, is a tracker of the pool (every object of that cache
 * is: the pool, a per-CPU list, the to-free list or a bucket holds it, or the
 * freeing work is about to give it back).  odebug deviation: the kernel would
 * free it and the pool would then hand out, or hash, a free object; here it is
 * a report and nothing is freed.  True: refused.
 */
bool debug_objects_refuse_free(struct odb_kernel *k, const void *x, const char *fn)
{
	struct debug_objects *d = dobj(k);
	struct slab *sl;
	char text[200];
	odb_addr_t a;

	if (!d || !d->obj_cache)
		return false;
	sl = virt_to_slab(k, x);
	if (likely(!sl || sl->slab_cache != d->obj_cache))
		return false;
	a = host_to_virt(k, x);
	snprintf(text, sizeof(text),
		 "ODEBUG: %s() of tracker %016llx: debug_objects_cache objects belong to the tracker pool; not freed",
		 fn, (unsigned long long)a);
	odebug_warn(k, "free of a tracker", a, NULL, text, (const void *)debug_objects_refuse_free,
		    __LINE__);
	return true;
}
