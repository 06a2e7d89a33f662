/*
 * KASAN's per-object metadata and the per-vCPU quarantine's room, inline
 * (own, issue 16: the fast paths and the eviction call them once or twice an
 * object).  They read struct kmem_cache, so they live here, after slub.h,
 * rather than in kasan.h.
 */
#ifndef ODB_KASAN_META_H
#define ODB_KASAN_META_H

#include "kasan/kasan.h"
#include "slab/slub.h"

/* The alloc meta of s's object, or NULL (no metadata, or none for allocs). */
static inline struct kasan_alloc_meta *kasan_get_alloc_meta(struct kmem_cache *s, void *object)
{
	if (!s->kasan_meta_size || s->kasan_alloc_meta_offset <= 0)
		return NULL;
	return (struct kasan_alloc_meta *)((char *)object + s->kasan_alloc_meta_offset);
}

/* The free meta (quarantine link, free track) of s's object, or NULL. */
static inline struct kasan_free_meta *kasan_get_free_meta(struct kmem_cache *s, void *object)
{
	if (!s->kasan_meta_size || s->kasan_free_meta_offset == KASAN_NO_FREE_META)
		return NULL;
	return (struct kasan_free_meta *)((char *)object + s->kasan_free_meta_offset);
}

/* Inside vCPU cpu's irq-off section: would a put of s's object leave the
 * vCPU's list within QUARANTINE_PERCPU_SIZE (no flush)?  Then the put. */
static inline bool kasan_quarantine_fits(struct kmem_cache *s, int cpu)
{
	struct qlist_head *cq = &kasan_state(s->k)->q.cpu_quarantine[cpu];

	return !cq->offline && cq->bytes + s->size <= QUARANTINE_PERCPU_SIZE;
}

#endif
