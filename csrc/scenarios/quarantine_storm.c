/*
 * Quarantine storm: kmalloc/kfree churn that keeps the KASAN quarantine full
 * (the load of the 2016 seed: every free enters the quarantine, every
 * blocking allocation may evict), on one pthread per vCPU, with every call
 * timed.  Each thread keeps a ring of `live` objects: each step frees the
 * oldest (if any) and allocates a new one of a random size.
 */
#include <stdio.h>
#include <stdlib.h>

#include "slab/slub.h"

struct storm_thread {
	odb_kernel *k;
	const struct odb_quarantine_storm *cfg;
	int cpu;
	uint32_t *alloc_ns, *free_ns;
	uint64_t nfree;
	struct mutex *shared;        /* the storm's mutex (mutex_every) */
	uint64_t mutex_ops, mutex_wait_total, mutex_wait_max;
	uint64_t done;               /* steps taken (fewer than asked if interrupted) */
	atomic_bool *cancel;
	int ret;
	pthread_t th;
};

static uint64_t storm_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static void *storm_run(void *arg)
{
	struct storm_thread *st = arg;
	const struct odb_quarantine_storm *cfg = st->cfg;
	odb_kernel *k = st->k;
	void **ring = calloc(cfg->live, sizeof(*ring));
	uint64_t rng = cfg->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)st->cpu + 1;
	size_t span = cfg->max_size - cfg->min_size + 1;

	if (!ring) {
		st->ret = ODB_ENOMEM;
		return NULL;
	}
	odb_bind_cpu(k, st->cpu, NULL);
	for (uint64_t i = 0; i < cfg->ops_per_thread; i++) {
		if (atomic_load_explicit(st->cancel, memory_order_relaxed))
			break;   /* interrupted: free the ring and stop */
		st->done = i + 1;
		unsigned int slot = (unsigned int)(i % cfg->live);
		size_t size = cfg->min_size + (size_t)(storm_rand(&rng) % span);
		bool locked = cfg->mutex_every && (i % cfg->mutex_every) == 0;
		uint64_t t0, t1;

		if (locked) {
			t0 = odb_host_ns();
			mutex_lock(k, st->shared);
			t1 = odb_host_ns() - t0;
			st->mutex_ops++;
			st->mutex_wait_total += t1;
			if (t1 > st->mutex_wait_max)
				st->mutex_wait_max = t1;
		}
		if (ring[slot]) {
			t0 = odb_host_ns();
			kfree(k, ring[slot]);
			t1 = odb_host_ns();
			st->free_ns[st->nfree++] = clamp32(t1 - t0);
		}
		t0 = odb_host_ns();
		ring[slot] = kmalloc(k, size, GFP_KERNEL);
		t1 = odb_host_ns();
		st->alloc_ns[i] = clamp32(t1 - t0);
		if (locked)
			mutex_unlock(k, st->shared);
		if (!ring[slot]) {
			st->ret = ODB_ENOMEM;
			break;
		}
	}
	for (unsigned int i = 0; i < cfg->live; i++)
		kfree(k, ring[i]);
	free(ring);
	odb_bind_cpu(k, -1, NULL);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void percentiles(uint32_t *v, uint64_t n, uint64_t *p50, uint64_t *p99, uint64_t *max)
{
	*p50 = *p99 = *max = 0;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u32);
	*p50 = v[(n - 1) / 2];
	*p99 = v[(uint64_t)((double)(n - 1) * 0.99)];
	*max = v[n - 1];
}

static void storm_cancel(void *arg)
{
	atomic_store((atomic_bool *)arg, true);
}

int odb_quarantine_storm(odb_kernel *k, const struct odb_quarantine_storm *cfg,
			 struct odb_quarantine_storm_result *out)
{
	struct odb_task *t = odb_enter(k);
	struct storm_thread *ths;
	struct mutex shared;
	uint32_t *all_a = NULL, *all_f = NULL;
	uint64_t t0, na = 0, nf = 0, last_poll = 0;
	int ret = ODB_OK;
	bool interrupted = false;
	atomic_bool cancel = false;

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	if (!cfg->threads || cfg->threads > k->nr_cpu_ids || !cfg->live || cfg->live > (1u << 20) ||
	    !cfg->min_size || cfg->max_size < cfg->min_size || cfg->max_size > KMALLOC_MAX_CACHE_SIZE ||
	    cfg->ops_per_thread > (1ULL << 26))
		return odb_leave(t, odb_err(k, ODB_EINVAL, "storm: threads 1..%u, live 1..2^20, "
					    "sizes 1..8192, ops <= 2^26", k->nr_cpu_ids));
	ths = calloc(cfg->threads, sizeof(*ths));
	if (!ths)
		return odb_leave(t, ODB_ENOMEM);
	mutex_init(&shared);
	for (unsigned int i = 0; i < cfg->threads; i++) {
		ths[i].shared = &shared;
		ths[i].k = k;
		ths[i].cfg = cfg;
		ths[i].cpu = (int)i;
		ths[i].cancel = &cancel;
		ths[i].alloc_ns = malloc(sizeof(uint32_t) * (cfg->ops_per_thread + 1));
		ths[i].free_ns = malloc(sizeof(uint32_t) * (cfg->ops_per_thread + 1));
		if (!ths[i].alloc_ns || !ths[i].free_ns)
			ret = ODB_ENOMEM;
	}
	t0 = odb_host_ns();
	if (!ret) {
		unsigned int started = 0;
		for (unsigned int i = 0; i < cfg->threads; i++, started++)
			if (pthread_create(&ths[i].th, NULL, storm_run, &ths[i])) {
				ret = ODB_ENOMEM;
				break;
			}
		for (unsigned int i = 0; i < started; i++)
			odb_join_polling(k, ths[i].th, &last_poll, &interrupted, storm_cancel, &cancel);
		if (!ret && interrupted)
			ret = ODB_EINTR;
	}
	out->elapsed_ns = odb_host_ns() - t0;
	if (!ret) {
		all_a = malloc(sizeof(uint32_t) * (cfg->ops_per_thread * cfg->threads + 1));
		all_f = malloc(sizeof(uint32_t) * (cfg->ops_per_thread * cfg->threads + 1));
		if (!all_a || !all_f)
			ret = ODB_ENOMEM;
	}
	for (unsigned int i = 0; i < cfg->threads; i++) {
		if (!ret && ths[i].ret)
			ret = ths[i].ret;
		if (!ret) {
			memcpy(all_a + na, ths[i].alloc_ns, sizeof(uint32_t) * cfg->ops_per_thread);
			na += cfg->ops_per_thread;
			memcpy(all_f + nf, ths[i].free_ns, sizeof(uint32_t) * ths[i].nfree);
			nf += ths[i].nfree;
		}
		out->mutex_ops += ths[i].mutex_ops;
		out->mutex_wait_ns_total += ths[i].mutex_wait_total;
		if (ths[i].mutex_wait_max > out->mutex_wait_ns_max)
			out->mutex_wait_ns_max = ths[i].mutex_wait_max;
		free(ths[i].alloc_ns);
		free(ths[i].free_ns);
	}
	mutex_destroy(&shared);
	if (!ret) {
		out->ops = na;
		percentiles(all_a, na, &out->alloc_p50, &out->alloc_p99, &out->alloc_max);
		percentiles(all_f, nf, &out->free_p50, &out->free_p99, &out->free_max);
	}
	free(all_a);
	free(all_f);
	free(ths);
	return odb_leave(t, ret ? odb_err(k, ret, ret == ODB_EINTR ? "storm: interrupted" :
					   "storm: out of memory") : ODB_OK);
}
