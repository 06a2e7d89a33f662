/*
 * Generic KASAN: the hooks the slab and page allocator call (mm/kasan/).
 * Until the KASAN room lands these are no-ops: no shadow, no quarantine.
 */
#ifndef ODB_KASAN_KASAN_H
#define ODB_KASAN_KASAN_H

#include "slab/slab.h"

/* kasan_cache_create: may append KASAN metadata to the slot (sets
 * s->kasan_* and grows *size). */
void kasan_cache_create(struct kmem_cache *s, unsigned int *size, slab_flags_t *flags);

#endif
