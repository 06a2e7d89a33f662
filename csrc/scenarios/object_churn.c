/*
 * Object churn: the workload of the 2019 debugobjects seed, imitated.
 *
 * A kernel build creates and retires huge numbers of short-lived tracked
 * objects (timers, work items, RCU heads) on every CPU, while the number live
 * at any time stays in the tens of thousands per machine.  Here each vCPU
 * runs rounds: retire the wave made `lifetime` rounds ago (deactivate +
 * free), then make a new one (init + activate) of wave/2 .. 3*wave/2 objects.
 * Between rounds the virtual clock advances, so the freeing work runs as it
 * would (at most every 100 ms under the lazy policy).
 *
 * Addresses are synthetic: CPU c's objects live at
 * CHURN_BASE + c * 16 GiB + (round % lifetime) * 64 MiB + i * CHURN_STRIDE, where
 * CHURN_BASE is 1 TiB above the kernel's direct map (odb_page_offset()).
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"

#define CHURN_BASE(k) ((k)->page_offset_base + (1ULL << 40))
#define CHURN_STRIDE 192ULL          /* about a struct with a timer in it */
#define CHURN_MAX_WAVE 300000u
#define CHURN_MAX_ROUNDS (1u << 24)
#define CHURN_MAX_LIFETIME 256u     /* slots of 64 MiB in a vCPU's 16 GiB */

struct churn_cpu {
	odb_kernel *k;
	const struct odb_object_churn *cfg;
	int cpu;
	uint64_t rng;
	unsigned int *counts;        /* [lifetime]: objects in each live wave */
	uint64_t cycles;
	uint64_t live, peak;
	atomic_bool *cancel;         /* threads: the caller was interrupted */
	int ret;
};

static const struct odb_debug_obj_descr churn_descr = { .name = "churn_object" };

static uint64_t churn_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static odb_addr_t churn_addr(const struct churn_cpu *c, unsigned int slot, unsigned int i)
{
	return CHURN_BASE(c->k) + ((uint64_t)c->cpu << 34) + ((uint64_t)slot << 26) + i * CHURN_STRIDE;
}

/* One round on the calling thread (bound to c->cpu). */
static int churn_round(struct churn_cpu *c, unsigned int round)
{
	const struct odb_object_churn *cfg = c->cfg;
	unsigned int slot = round % cfg->lifetime, n, i;
	int ret;

	if (round >= cfg->lifetime) {
		for (i = 0; i < c->counts[slot]; i++) {
			odb_addr_t a = churn_addr(c, slot, i);

			ret = odb_debug_object_deactivate(c->k, a, &churn_descr);
			if (!ret)
				ret = odb_debug_object_free(c->k, a, &churn_descr);
			if (ret)
				return ret;
			c->cycles++;
		}
		c->live -= c->counts[slot];
	}
	n = cfg->wave / 2 + (cfg->wave ? (unsigned int)(churn_rand(&c->rng) % (cfg->wave + 1)) : 0);
	if (cfg->phase_rounds) {
		/* triangle 0..1..0 over phase_rounds, scaled to 0.25x .. 1.75x */
		uint64_t pos = round % cfg->phase_rounds, half = cfg->phase_rounds / 2 + 1;
		uint64_t tri = pos < half ? pos : cfg->phase_rounds - pos;

		n = (unsigned int)((uint64_t)n * (250 + 1500 * tri / half) / 1000);
	}
	if (n > CHURN_MAX_WAVE)
		n = CHURN_MAX_WAVE;
	for (i = 0; i < n; i++) {
		odb_addr_t a = churn_addr(c, slot, i);

		ret = odb_debug_object_init(c->k, a, &churn_descr);
		if (!ret) {
			ret = odb_debug_object_activate(c->k, a, &churn_descr);
			if (ret == ODB_EINVAL && !odb_strerror(c->k)[0])
				ret = 0;   /* -EINVAL from the kernel: a warning, not a failure */
		}
		if (ret)
			return ret;
	}
	c->counts[slot] = n;
	c->live += n;
	if (c->live > c->peak)
		c->peak = c->live;
	return 0;
}

/* Retire what is still live at the end (counts as cycles). */
static int churn_drain(struct churn_cpu *c)
{
	for (unsigned int s = 0; s < c->cfg->lifetime; s++) {
		for (unsigned int i = 0; i < c->counts[s]; i++) {
			odb_addr_t a = churn_addr(c, s, i);
			int ret = odb_debug_object_deactivate(c->k, a, &churn_descr);

			if (!ret)
				ret = odb_debug_object_free(c->k, a, &churn_descr);
			if (ret)
				return ret;
			c->cycles++;
		}
		c->counts[s] = 0;
	}
	c->live = 0;
	return 0;
}

static void *churn_thread(void *arg)
{
	struct churn_cpu *c = arg;
	const struct odb_object_churn *cfg = c->cfg;
	bool virt = odb_clock(c->k) == ODB_CLOCK_VIRTUAL;

	c->ret = odb_bind_cpu(c->k, c->cpu, NULL);
	for (unsigned int r = 0; !c->ret && r < cfg->rounds; r++) {
		if (atomic_load_explicit(c->cancel, memory_order_relaxed))
			break;   /* interrupted: retire what is live and stop */
		c->ret = churn_round(c, r);
		/* every thread moves the shared clock by its share of a round */
		if (!c->ret && virt && cfg->advance_ns)
			c->ret = odb_advance(c->k, cfg->advance_ns / odb_nr_cpus(c->k));
	}
	if (!c->ret)
		c->ret = churn_drain(c);
	return NULL;
}

static void churn_cancel(void *arg)
{
	atomic_store((atomic_bool *)arg, true);
}

int odb_object_churn(odb_kernel *k, const struct odb_object_churn *cfg,
		     struct odb_object_churn_result *out)
{
	struct odb_task *t = odb_enter(k);
	unsigned int ncpu = odb_nr_cpus(k);
	struct churn_cpu *cs;
	pthread_t *th = NULL;
	uint64_t t0, v0, last_poll = 0;
	int old = -1, ret = 0;
	bool virt, interrupted = false;
	atomic_bool cancel = false;

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	if (!cfg || cfg->lifetime < 1 || cfg->lifetime > CHURN_MAX_LIFETIME ||
	    cfg->wave > CHURN_MAX_WAVE || cfg->rounds > CHURN_MAX_ROUNDS)
		return odb_leave(t, odb_err(k, ODB_EINVAL,
					    "object churn: rounds must be 0..%u, wave 0..%u, lifetime 1..%u",
					    CHURN_MAX_ROUNDS, CHURN_MAX_WAVE, CHURN_MAX_LIFETIME));
	virt = odb_clock(k) == ODB_CLOCK_VIRTUAL;
	cs = calloc(ncpu, sizeof(*cs));
	if (!cs)
		return odb_leave(t, ODB_ENOMEM);
	for (unsigned int c = 0; c < ncpu; c++) {
		cs[c] = (struct churn_cpu){ .k = k, .cfg = cfg, .cpu = (int)c, .cancel = &cancel,
					    .rng = (cfg->seed + 1) * 0x9e3779b97f4a7c15ULL + c + 1 };
		cs[c].counts = calloc(cfg->lifetime, sizeof(unsigned int));
		if (!cs[c].counts)
			ret = ODB_ENOMEM;
	}
	t0 = odb_host_ns();
	v0 = odb_now_ns(k);
	if (!ret && cfg->threads) {
		th = calloc(ncpu, sizeof(*th));
		if (!th)
			ret = ODB_ENOMEM;
		for (unsigned int c = 0; !ret && c < ncpu; c++)
			if (pthread_create(&th[c], NULL, churn_thread, &cs[c]))
				ret = ODB_ENOMEM;
		for (unsigned int c = 0; th && c < ncpu; c++)
			if (th[c])
				odb_join_polling(k, th[c], &last_poll, &interrupted, churn_cancel, &cancel);
		for (unsigned int c = 0; !ret && c < ncpu; c++)
			ret = cs[c].ret;
		free(th);
	} else if (!ret) {
		/* deterministic: the vCPUs take turns in this thread */
		odb_bind_cpu(k, 0, &old);
		for (unsigned int r = 0; !ret && r < cfg->rounds; r++) {
			for (unsigned int c = 0; !ret && c < ncpu; c++) {
				ret = odb_bind_cpu(k, (int)c, NULL);
				if (!ret)
					ret = churn_round(&cs[c], r);
				if (!ret && virt)
					ret = odb_advance(k, 0);   /* work due now runs */
			}
			if (!ret && virt && cfg->advance_ns)
				ret = odb_advance(k, cfg->advance_ns);
			/* between rounds, no lock held: stop early if asked (then drain) */
			if (!ret && odb_poll(k, &last_poll)) {
				interrupted = true;
				break;
			}
		}
		for (unsigned int c = 0; !ret && c < ncpu; c++) {
			ret = odb_bind_cpu(k, (int)c, NULL);
			if (!ret)
				ret = churn_drain(&cs[c]);
		}
		odb_bind_cpu(k, old, NULL);
	}
	out->elapsed_ns = odb_host_ns() - t0;
	out->virtual_ns = odb_now_ns(k) - v0;
	for (unsigned int c = 0; c < ncpu; c++) {
		out->cycles += cs[c].cycles;
		out->peak_live += cs[c].peak;   /* sum of per-CPU peaks (upper bound) */
		free(cs[c].counts);
	}
	free(cs);
	if (!ret && interrupted)
		ret = odb_err(k, ODB_EINTR, "object churn: interrupted");
	return odb_leave(t, ret);
}
