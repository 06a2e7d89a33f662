/*
 * debugobjects: the object lifetime tracker of lib/debugobjects.c (v5.3) and
 * its pool of trackers.  The room's interface for the other rooms:
 *
 *  - boot: debug_objects_early_init() before the slab exists (static pool of
 *    1024 trackers), debug_objects_mem_init() after it (slab cache
 *    "debug_objects_cache", replacement of the static trackers, the
 *    selftest, per-CPU threshold scaling); debug_objects_exit() at shutdown;
 *  - the slab calls debug_check_no_obj_freed() (declared in slab/slab.h) on
 *    every object free of a cache without SLAB_DEBUG_OBJECTS; the page
 *    allocator calls it through the page-free hook registered at early init.
 *    Callers must not hold a lock that a fixup callback could need (the
 *    kernel calls it from slab_free_hook, before the irq-off fast path);
 *  - boot parameters: debug_objects, no_debug_objects, odebug.objects_free=,
 *    odebug.objects_warn=, odebug.objects_selftest=, odebug.objects_fixes= (see
 *    ODB_ROOM_PARAMS in kernel/params.h).
 *
 * All state hangs off k->debugobjects (struct debug_objects, private to
 * debugobjects.c).
 */
#ifndef ODB_DEBUGOBJECTS_DEBUGOBJECTS_H
#define ODB_DEBUGOBJECTS_DEBUGOBJECTS_H

#include "kernel/kernel.h"

#define ODEBUG_HASH_BITS	14
#define ODEBUG_HASH_SIZE	(1 << ODEBUG_HASH_BITS)

#define ODEBUG_POOL_SIZE	1024
#define ODEBUG_POOL_MIN_LEVEL	256
#define ODEBUG_POOL_PERCPU_SIZE	64
#define ODEBUG_BATCH_SIZE	16

#define ODEBUG_CHUNK_SHIFT	PAGE_SHIFT
#define ODEBUG_CHUNK_SIZE	(1UL << ODEBUG_CHUNK_SHIFT)
#define ODEBUG_CHUNK_MASK	(~(ODEBUG_CHUNK_SIZE - 1))

/* The freeing work runs at most at 10 Hz and frees about 1024 trackers per
 * run (v5.3, "less aggressive freeing"). */
#define ODEBUG_FREE_WORK_MAX	1024
#define ODEBUG_FREE_WORK_DELAY(hz)	DIV_ROUND_UP((hz), 10)

/* odebug's bound on the rescan of one chunk in debug_check_no_obj_freed()
 * (see there): an ACTIVE object whose fixup leaves it ACTIVE is reported once
 * per call instead of forever. */

typedef enum odb_debug_obj_state debug_obj_state_t;
#define ODEBUG_STATE_NONE		ODB_ODEBUG_STATE_NONE
#define ODEBUG_STATE_INIT		ODB_ODEBUG_STATE_INIT
#define ODEBUG_STATE_INACTIVE		ODB_ODEBUG_STATE_INACTIVE
#define ODEBUG_STATE_ACTIVE		ODB_ODEBUG_STATE_ACTIVE
#define ODEBUG_STATE_DESTROYED		ODB_ODEBUG_STATE_DESTROYED
#define ODEBUG_STATE_NOTAVAILABLE	ODB_ODEBUG_STATE_NOTAVAILABLE
#define ODEBUG_STATE_MAX		ODB_ODEBUG_STATE_MAX

/* The descriptor type is the public one. */
#define debug_obj_descr odb_debug_obj_descr

/* odebug.objects_fixes=: the tracker's race fixes as of a kernel version.
 * v5.3: the seed's design: pool counters read without pool_lock and written
 * under it with plain accesses, activate/assert_init of an untracked static
 * object track it in a second step (the init race), CPU offline frees the
 * per-CPU pool uncounted;  v5.6: READ_ONCE/WRITE_ONCE on those counters
 * (35fd7a637c42, the data races KCSAN reported);  v6.4: the static-object
 * race closed (63a759694eed, lookup_object_or_alloc; refills in activate and
 * assert_init, 0af462f19e63) and CPU offline accounted (eabb7f1ace53);
 * v6.5: no report once debug objects are off (8b64d420fe24). */
enum odebug_fixes { ODEBUG_FIXES_V53 = 0, ODEBUG_FIXES_V56, ODEBUG_FIXES_V64, ODEBUG_FIXES_V65 };

/* Freeing policy (odebug.objects_free=). */
enum odebug_free_policy {
	ODEBUG_FREE_LAZY = 0,     /* v5.3: delayed work, capped to-free list */
	ODEBUG_FREE_EAGER = 1,    /* after patches 1-3: immediate work, free all */
};

/* Warning text (odebug.objects_warn=). */
enum odebug_warn_format {
	ODEBUG_WARN_V62 = 0,      /* v6.2+: "... object: %p object type: ..." */
	ODEBUG_WARN_V53 = 1,      /* v5.3: without the object address */
};

/* The first member of the room struct: what the slab's free path reads
 * inline to skip the call to debug_check_no_obj_freed() while the tracker is
 * off (no_debug_objects, or switched off after an allocation failure). */
struct debug_objects_gate {
	int debug_objects_enabled;
};
static inline bool debug_objects_enabled_fast(struct odb_kernel *k)
{
	const struct debug_objects_gate *g = (const struct debug_objects_gate *)k->debugobjects;

	return g && READ_ONCE(g->debug_objects_enabled);
}

/* Boot and shutdown (kernel/rooms.c). */
int debug_objects_early_init(struct odb_kernel *k, char *errbuf, size_t errlen);
int debug_objects_mem_init(struct odb_kernel *k, char *errbuf, size_t errlen);
void debug_objects_exit(struct odb_kernel *k);

/* Boot parameters (kernel/params.h). */
int debug_objects_param_enable(struct odb_kernel *k, const char *val);
int debug_objects_param_disable(struct odb_kernel *k, const char *val);
void debug_objects_param_enable_get(struct odb_kernel *k, char *buf, size_t len);
void debug_objects_param_disable_get(struct odb_kernel *k, char *buf, size_t len);
int debug_objects_param_free(struct odb_kernel *k, const char *val);
void debug_objects_param_free_get(struct odb_kernel *k, char *buf, size_t len);
int debug_objects_param_warn(struct odb_kernel *k, const char *val);
void debug_objects_param_warn_get(struct odb_kernel *k, char *buf, size_t len);
int debug_objects_param_fixes(struct odb_kernel *k, const char *val);
void debug_objects_param_fixes_get(struct odb_kernel *k, char *buf, size_t len);
int debug_objects_param_selftest(struct odb_kernel *k, const char *val);
void debug_objects_param_selftest_get(struct odb_kernel *k, char *buf, size_t len);

/* Kernel-internal API (include/linux/debugobjects.h), on simulated
 * addresses.  Callers hold no odebug lock. */
void debug_object_init(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_init_on_stack(struct odb_kernel *k, odb_addr_t addr,
				const struct debug_obj_descr *descr);
int debug_object_activate(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_deactivate(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_destroy(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_free(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_assert_init(struct odb_kernel *k, odb_addr_t addr, const struct debug_obj_descr *descr);
void debug_object_active_state(struct odb_kernel *k, odb_addr_t addr,
			       const struct debug_obj_descr *descr, unsigned int expect,
			       unsigned int next);
/* The range check on simulated addresses (the page-free hook's form). */
void debug_check_no_obj_freed_range(struct odb_kernel *k, odb_addr_t addr, uint64_t size);
/* The slab API asks before a user's free of x (a host pointer into the arena):
 * true when x is in an object of debug_objects_cache, odebug's own trackers
 * (reported, not to be freed). */
bool debug_objects_refuse_free(struct odb_kernel *k, const void *x, const char *fn);

#endif /* ODB_DEBUGOBJECTS_DEBUGOBJECTS_H */
