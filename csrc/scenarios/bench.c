/*
 * Microbenchmark loops in C (no Python in the timed region): alloc+free pairs
 * on a slab cache, and the same pattern on glibc malloc/free for a side-by-side
 * ratio in one run.
 */
#include <stdlib.h>

#include "slab/slub.h"

int odb_bench_slab_pairs(odb_kernel *k, odb_cache *s, uint64_t n, unsigned int batch,
			 bool exclusive, uint64_t *elapsed_ns)
{
	struct odb_task *t = odb_enter(k);
	void **live;
	uint64_t t0, done = 0;
	int ret = ODB_OK, old_cpu = -1;

	if (!t)
		return odb_enter_failed(k);
	*elapsed_ns = 0;
	if (!s || s->k != k || !batch || batch > 4096)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "bench: bad cache or batch (1..4096)"));
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
	while (done < n) {
		unsigned int b = (unsigned int)(n - done < batch ? n - done : batch), i;

		for (i = 0; i < b; i++) {
			live[i] = kmem_cache_alloc(k, s, GFP_KERNEL);
			if (!live[i])
				break;
		}
		if (i < b)
			ret = odb_err(k, ODB_ENOMEM, "bench: allocation failed");
		while (i--)
			kmem_cache_free(k, s, live[i]);
		if (ret)
			break;
		done += b;
	}
	*elapsed_ns = odb_host_ns() - t0;
	if (exclusive)
		task_bind_cpu(k, t, old_cpu, NULL);   /* drop the exclusive hold */
	free(live);
	return odb_leave(t, ret);
}

int odb_bench_malloc_pairs(size_t size, uint64_t n, unsigned int batch, uint64_t *elapsed_ns)
{
	void **live;
	uint64_t t0, done = 0;

	*elapsed_ns = 0;
	if (!batch || batch > 4096)
		return ODB_EINVAL;
	live = calloc(batch, sizeof(*live));
	if (!live)
		return ODB_ENOMEM;
	t0 = odb_host_ns();
	while (done < n) {
		unsigned int b = (unsigned int)(n - done < batch ? n - done : batch), i;

		for (i = 0; i < b; i++) {
			live[i] = malloc(size);
			if (!live[i])
				break;
			__asm__ volatile("" : : "r"(live[i]) : "memory");   /* keep the pair */
		}
		while (i--)
			free(live[i]);
		done += b;
	}
	*elapsed_ns = odb_host_ns() - t0;
	free(live);
	return ODB_OK;
}
