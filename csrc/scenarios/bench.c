/*
 * Microbenchmark loops in C (no Python in the timed region): alloc+free pairs
 * on a slab cache, and the same pattern on glibc malloc/free for a side-by-side
 * ratio in one run.
 */
#include <stdlib.h>

#include "slab/slub.h"

/* The timed loop, the same for both allocators: batches of `batch` objects
 * allocated, then freed last-first; the empty asm keeps the compiler from
 * eliding a malloc/free pair.  Leaves with *ok false when an allocation
 * failed (after freeing what the batch holds). */
#define BENCH_LOOP(ALLOC, FREE, live, n, batch, ok)					\
	do {										\
		for (uint64_t done_ = 0; done_ < (n) && (ok); done_ += (batch)) {	\
			unsigned int b_ = (unsigned int)((n) - done_ < (batch) ? (n) - done_ : (batch)), i_; \
			for (i_ = 0; i_ < b_; i_++) {					\
				void *p_ = (ALLOC);					\
				__asm__ volatile("" : : "r"(p_) : "memory");		\
				if (unlikely(!p_)) {					\
					(ok) = false;					\
					break;						\
				}							\
				(live)[i_] = p_;					\
			}								\
			while (i_--)							\
				FREE((live)[i_]);					\
		}									\
	} while (0)

int odb_bench_slab_pairs(odb_kernel *k, odb_cache *s, uint64_t n, unsigned int batch,
			 bool exclusive, uint64_t *elapsed_ns)
{
	struct odb_task *t = odb_enter(k);
	void **live;
	uint64_t t0, last_poll = 0, chunk;
	int ret = ODB_OK, old_cpu = -1;
	bool ok = true;

	if (!t)
		return odb_enter_failed(k);
	*elapsed_ns = 0;
	if (!s || s->k != k || !batch || batch > ODB_BENCH_MAX_BATCH || n > ODB_BENCH_MAX_PAIRS)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "bench: bad cache, batch (1..%u) or n "
					    "(0..2^40)", ODB_BENCH_MAX_BATCH));
	/* whole batches between polls of the interrupt hook (no lock held there) */
	chunk = (uint64_t)batch * ((65536 + batch - 1) / batch);
	live = calloc(batch, sizeof(*live));
	if (!live)
		return odb_leave(t, ODB_ENOMEM);
	if (exclusive) {
		old_cpu = t->cpu;
		ret = task_bind_exclusive(k, t, smp_processor_id_task(t));
		if (ret) {
			free(live);
			return odb_leave(t, ret);
		}
	}
	t0 = odb_host_ns();
#define SLAB_FREE(x) kmem_cache_free(k, s, (x))
	for (uint64_t left = n; left && ok; ) {
		uint64_t now = left < chunk ? left : chunk;

		BENCH_LOOP(kmem_cache_alloc(k, s, GFP_KERNEL), SLAB_FREE, live, now, batch, ok);
		left -= now;
		if (left && odb_poll(k, &last_poll)) {
			ret = odb_err(k, ODB_EINTR, "bench: interrupted");
			break;
		}
	}
#undef SLAB_FREE
	*elapsed_ns = odb_host_ns() - t0;
	if (!ok)
		ret = odb_err(k, ODB_ENOMEM, "bench: allocation failed");
	if (exclusive)
		task_bind_cpu(k, t, old_cpu, NULL);   /* drop the exclusive hold */
	free(live);
	return odb_leave(t, ret);
}

int odb_bench_malloc_pairs(size_t size, uint64_t n, unsigned int batch, uint64_t *elapsed_ns)
{
	void **live;
	uint64_t t0;
	bool ok = true;

	*elapsed_ns = 0;
	if (!batch || batch > ODB_BENCH_MAX_BATCH || n > ODB_BENCH_MALLOC_MAX_PAIRS ||
	    size > ODB_BENCH_MALLOC_MAX_SIZE)
		return ODB_EINVAL;
	live = calloc(batch, sizeof(*live));
	if (!live)
		return ODB_ENOMEM;
	t0 = odb_host_ns();
	BENCH_LOOP(malloc(size), free, live, n, batch, ok);
	*elapsed_ns = odb_host_ns() - t0;
	free(live);
	return ok ? ODB_OK : ODB_ENOMEM;
}
