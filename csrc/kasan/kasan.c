/* Generic KASAN hooks (placeholder until the KASAN room: no metadata). */
#include "kasan/kasan.h"

void kasan_cache_create(struct kmem_cache *s, unsigned int *size, slab_flags_t *flags)
{
	(void)s; (void)size; (void)flags;
}
