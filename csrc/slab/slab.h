/*
 * SLUB: the slab allocator's interface for the other rooms (include/linux/slab.h
 * equivalents).  Objects are host pointers into the kernel's RAM arena, as
 * kernel code sees them; the public C API (odebug.h) converts to odb_addr_t.
 */
#ifndef ODB_SLAB_SLAB_H
#define ODB_SLAB_SLAB_H

#include "kernel/kernel.h"

typedef unsigned int slab_flags_t;
typedef unsigned int gfp_t;

/* Flag values of include/linux/slab.h (v4.x - v6.7 numbering). */
#define SLAB_CONSISTENCY_CHECKS 0x00000100U   /* F */
#define SLAB_RED_ZONE           0x00000400U   /* Z */
#define SLAB_POISON             0x00000800U   /* P */
#define SLAB_KMALLOC            0x00001000U
#define SLAB_HWCACHE_ALIGN      0x00002000U
#define SLAB_CACHE_DMA          0x00004000U
#define SLAB_STORE_USER         0x00010000U   /* U */
#define SLAB_PANIC              0x00040000U
#define SLAB_TYPESAFE_BY_RCU    0x00080000U
#define SLAB_TRACE              0x00200000U   /* T */
#define SLAB_DEBUG_OBJECTS      0x00400000U   /* no debug_check_no_obj_freed */
#define SLAB_NOLEAKTRACE        0x00800000U
#define SLAB_NO_MERGE           0x01000000U
#define SLAB_FAILSLAB           0x02000000U   /* A */
#define SLAB_ACCOUNT            0x04000000U   /* memcg: odebug has none, no effect */
#define SLAB_NO_USER_FLAGS      0x10000000U   /* ignore slub_debug= */
/* internal */
#define __OBJECT_POISON         0x80000000U
#define __CMPXCHG_DOUBLE        0x40000000U
#define __SCHED_POINTS          0x20000000U   /* cmpxchg is a scheduling point (odebug.sched=controlled) */

#define DEBUG_DEFAULT_FLAGS (SLAB_CONSISTENCY_CHECKS | SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER)
#define SLAB_DEBUG_FLAGS (SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER | SLAB_TRACE | \
			  SLAB_CONSISTENCY_CHECKS)
#define DEBUG_METADATA_FLAGS (SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER)
#define SLAB_NO_CMPXCHG (SLAB_CONSISTENCY_CHECKS | SLAB_STORE_USER | SLAB_TRACE)

#define GFP_KERNEL ODB_GFP_KERNEL
#define GFP_ATOMIC ODB_GFP_ATOMIC
#define GFP_NOWAIT ODB_GFP_NOWAIT
#define __GFP_ZERO ODB_GFP_ZERO
#define __GFP_NOWARN ODB_GFP_NOWARN
#define __GFP_NOFAIL ODB_GFP_NOFAIL
#define __GFP_DIRECT_RECLAIM ODB_GFP_DIRECT_RECLAIM
static inline bool gfpflags_allow_blocking(gfp_t g) { return g & __GFP_DIRECT_RECLAIM; }

struct kmem_cache;

/* Create a cache; NULL on failure (odb_err names the reason).  flags may hold
 * debug letters' flags; slub_debug= applies unless SLAB_NO_USER_FLAGS. */
/* One of odebug's own caches: the public kmem_cache_destroy refuses it. */
void kmem_cache_mark_internal(struct kmem_cache *s);
struct kmem_cache *kmem_cache_create(struct odb_kernel *k, const char *name, unsigned int size,
				     unsigned int align, slab_flags_t flags, void (*ctor)(void *));
void kmem_cache_destroy(struct odb_kernel *k, struct kmem_cache *s);
void *kmem_cache_alloc(struct odb_kernel *k, struct kmem_cache *s, gfp_t gfp);
static inline void *kmem_cache_zalloc(struct odb_kernel *k, struct kmem_cache *s, gfp_t gfp)
{
	return kmem_cache_alloc(k, s, gfp | __GFP_ZERO);
}
void kmem_cache_free(struct odb_kernel *k, struct kmem_cache *s, void *x);
void *kmalloc(struct odb_kernel *k, size_t size, gfp_t gfp);
static inline void *kzalloc(struct odb_kernel *k, size_t size, gfp_t gfp)
{
	return kmalloc(k, size, gfp | __GFP_ZERO);
}
void kfree(struct odb_kernel *k, const void *x);
size_t ksize(struct odb_kernel *k, const void *x);
void kfree_sensitive(struct odb_kernel *k, const void *p);
void *krealloc(struct odb_kernel *k, const void *p, size_t new_size, gfp_t gfp);

/* Cache facts other rooms need. */
const char *kmem_cache_name(const struct kmem_cache *s);
unsigned int kmem_cache_object_size(const struct kmem_cache *s);
unsigned int kmem_cache_size(const struct kmem_cache *s);

/* Room hooks for slab/page frees (debugobjects' debug_check_no_obj_freed is
 * called by the slab on every object free unless SLAB_DEBUG_OBJECTS, and by
 * the page allocator on every page free). Defined by debugobjects/. */
void debug_check_no_obj_freed(struct odb_kernel *k, const void *address, unsigned long size);
/* The same when it has nothing to walk (one chunk, an empty bucket; not under
 * the controlled scheduler): true, done; false: nothing done, call the above. */
bool debug_check_no_obj_freed_fast(struct odb_kernel *k, const void *address, unsigned long size);

int odb_slab_init(struct odb_kernel *k, char *errbuf, size_t errlen);   /* kmem_cache_init */
void odb_slab_exit(struct odb_kernel *k);

#endif /* ODB_SLAB_SLAB_H */
