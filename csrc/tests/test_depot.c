/*
 * C unit tests of the stack depot (csrc/kernel/stackdepot.c): dedup, distinct
 * stacks, and the lock-free lookup of existing stacks racing insertions from
 * several threads (run under TSan by CI's TSan stage).
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

#define NFUNCS 8
#define NTHREADS 4
#define ROUNDS 2000

/* distinct call sites: each save_N saves a stack that differs in its first frame */
#define SAVER(n) static __attribute__((noinline)) uint32_t save_##n(odb_kernel *k) \
	{ uint32_t h = stack_depot_save_current(k, 0); __asm__ volatile("" ::: "memory"); return h; }
SAVER(0) SAVER(1) SAVER(2) SAVER(3) SAVER(4) SAVER(5) SAVER(6) SAVER(7)
static uint32_t (*const savers[NFUNCS])(odb_kernel *) = {
	save_0, save_1, save_2, save_3, save_4, save_5, save_6, save_7,
};

struct worker {
	odb_kernel *k;
	int id;
	uint32_t first[NFUNCS];
	int mismatches;
	pthread_t th;
};

/* one common caller for every thread, so the stacks are equal across threads */
static __attribute__((noinline)) uint32_t save_via(odb_kernel *k, int f)
{
	uint32_t h = savers[f](k);
	__asm__ volatile("" ::: "memory");
	return h;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int round = 0; round < ROUNDS; round++) {
		int f = (round * 5 + w->id) % NFUNCS;   /* threads start on different stacks */
		uint32_t h = save_via(w->k, f);

		if (!w->first[f])
			w->first[f] = h;
		else if (w->first[f] != h)
			w->mismatches++;
	}
	return NULL;
}

static void test_dedup_and_concurrency(void)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 8 << 20, 42);
	struct worker w[NTHREADS];
	uint64_t before, after;
	int bad = 0;

	CHECK(k != NULL);
	if (!k)
		return;
	before = odb_stack_depot_count(k);
	memset(w, 0, sizeof(w));
	for (int i = 0; i < NTHREADS; i++) {
		w[i].k = k;
		w[i].id = i;
		CHECK_EQ(pthread_create(&w[i].th, NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].th, NULL);
	after = odb_stack_depot_count(k);
	for (int i = 0; i < NTHREADS; i++) {
		bad += w[i].mismatches;
		for (int f = 0; f < NFUNCS; f++) {
			CHECK(w[i].first[f] != 0);
			/* the same stack from every thread: one record, one handle */
			bad += w[i].first[f] != w[0].first[f];
		}
	}
	CHECK_EQ(bad, 0);
	/* distinct call sites: distinct handles */
	for (int f = 0; f < NFUNCS; f++)
		for (int g = f + 1; g < NFUNCS; g++)
			CHECK(w[0].first[f] != w[0].first[g]);
	/* every thread's stack below worker_main is the same (thread start), so
	 * exactly one record per call site was added, whatever the interleaving */
	CHECK_EQ(after - before, NFUNCS);
	/* a later save from this thread (another caller) is yet another record and
	 * dedups against itself */
	{
		uint32_t hs[2];

		volatile int two = 2;   /* not unrolled: one call site, the same stack twice */

		for (int i = 0; i < two; i++)
			hs[i] = save_via(k, 3);
		uint32_t a = hs[0], b = hs[1];
		CHECK_EQ(a, b);
		CHECK(a != w[0].first[3]);
		CHECK_EQ(odb_stack_depot_count(k), after + 1);
	}
	odb_kernel_destroy(k);
}

/* The task's recent-records list (issue 16) must give exactly the bucket
 * walk's answers: the same frames with another Python location are another
 * record, and more stacks than the list holds come back with their first
 * handles after eviction. */

static void test_recent_records(void)
{
	static const char *locs[] = { NULL, "a.py:1:f", "a.py:2:f", "b.py:1:g" };
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 8 << 20, 43);
	uint32_t first[NFUNCS][4];
	int bad = 0;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_bind_cpu(k, 0, NULL), 0);   /* this thread has a task: the list is used */
	odb_set_frame_hook(k, test_py_hook, NULL);
	memset(first, 0, sizeof(first));
	for (int round = 0; round < 3; round++)
		for (int f = 0; f < NFUNCS; f++)
			for (int l = 0; l < 4; l++) {
				volatile int two = 2;   /* one call site: the same stack twice */
				uint32_t h[2];

				test_py_loc = locs[l];
				for (int i = 0; i < two; i++)
					h[i] = save_via(k, f);
				/* the second save is a list hit: the same handle */
				bad += h[1] != h[0];
				if (!round)
					first[f][l] = h[0];
				else
					bad += h[0] != first[f][l];
			}
	CHECK_EQ(bad, 0);
	for (int f = 0; f < NFUNCS; f++)
		for (int l = 0; l < 4; l++)
			for (int m = l + 1; m < 4; m++)
				CHECK(first[f][l] != first[f][m]);
	odb_set_frame_hook(k, NULL, NULL);
	test_py_loc = NULL;
	odb_kernel_destroy(k);
}

/* Templates (kernel.h): two that differ only in one inner frame make two
 * records; a copy that names the first as its canon makes the first's record,
 * found among the task's recent records; stack_depot_tmpl_same tells them apart
 * by frames, count and raw base. */
static __attribute__((noinline)) void save_tmpls(odb_kernel *k, const struct odb_stack_tmpl *const *tp,
						 unsigned int n, uint32_t *h)
{
	struct odb_task *t = odb_current(k);

	for (unsigned int i = 0; i < n; i++)
		h[i] = stack_depot_save_tmpl(k, t, tp[i], __builtin_frame_address(0));
	__asm__ volatile("" ::: "memory");
}

static void test_templates(void)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 8 << 20, 44);
	static struct odb_stack_tmpl a, b, c, d;
	const struct odb_stack_tmpl *seq[6] = { &a, &b, &c, &a, &c, &b };
	uint32_t h[2][6];
	volatile int two = 2;   /* one call site: the same frame chain twice */

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_bind_cpu(k, 0, NULL), 0);
	a.n = 2;
	a.raw_base = 4;
	a.frames[0] = (void *)save_0;
	a.frames[1] = (void *)save_1;
	b = a;
	b.frames[1] = (void *)save_2;
	c = a;
	c.canon = &a;
	CHECK(stack_depot_tmpl_same(&a, &c));
	CHECK(!stack_depot_tmpl_same(&a, &b));
	d = a;
	d.n = 1;
	CHECK(!stack_depot_tmpl_same(&a, &d));
	d = a;
	d.raw_base = 5;
	CHECK(!stack_depot_tmpl_same(&a, &d));
	for (int pass = 0; pass < two; pass++)
		save_tmpls(k, seq, 6, h[pass]);
	CHECK(h[0][0] != 0 && h[0][1] != 0);
	CHECK(h[0][0] != h[0][1]);
	CHECK_EQ(h[0][2], h[0][0]);
	CHECK_EQ(h[0][3], h[0][0]);
	CHECK_EQ(h[0][4], h[0][0]);
	CHECK_EQ(h[0][5], h[0][1]);
	/* the same records on the second pass, all from the recent list */
	for (int i = 0; i < 6; i++)
		CHECK_EQ(h[1][i], h[0][i]);
	CHECK_EQ(odb_stack_depot_count(k) >= 2, 1);
	odb_kernel_destroy(k);
}

/*
 * The walk compared with a recent record as it goes (fp_walk_recent, issue
 * 16) must give the handle of the usual walk and look-up: stacks of every
 * depth from 0 to past ODB_STACK_DEPTH frames (records cut at 16 frames),
 * under two callers that share the inner frames (one first entry, other
 * later frames), each saved with the task's recent records as they are and
 * again with them cleared (the usual way: a bucket look-up).
 */
static volatile bool clear_recent;

static __attribute__((noinline)) uint32_t save_deep(odb_kernel *k, int depth)
{
	uint32_t h;

	if (depth) {
		h = save_deep(k, depth - 1);
	} else {
		struct odb_task *t = odb_current(k);

		if (clear_recent && t)
			memset(t->depot_recent, 0, sizeof(t->depot_recent));
		h = stack_depot_save_current(k, 0);
	}
	__asm__ volatile("" ::: "memory");
	return h;
}

/* two callers of save_deep: the same inner frames, other outer ones */
#define DEEP_VIA(n) static __attribute__((noinline)) uint32_t deep_via_##n(odb_kernel *k, int d) \
	{ uint32_t h = save_deep(k, d); __asm__ volatile("" ::: "memory"); return h; }
DEEP_VIA(x) DEEP_VIA(y)

/* A save whose walk ends at a broken frame chain: save_broken's own saved
 * frame pointer made to point below its frame (fp_walk's sanity check stops
 * there), restored before it returns. */
static __attribute__((noinline)) uint32_t save_broken(odb_kernel *k, int broken)
{
	void *volatile *fp = (void *volatile *)__builtin_frame_address(0);
	void *saved = fp[0];
	uint32_t h;

	if (broken)
		fp[0] = (void *)((uintptr_t)fp - 64);
	h = save_deep(k, 1);
	fp[0] = saved;
	__asm__ volatile("" ::: "memory");
	return h;
}

static void test_recent_walk(void)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 8 << 20, 45);
	uint32_t first[2][26];
	int bad = 0;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_bind_cpu(k, 0, NULL), 0);
	memset(first, 0, sizeof(first));
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 26; i++) {
			int depth = (i * 7 + round) % 26;   /* depths in varied orders */

			for (int via = 0; via < 2; via++) {
				uint32_t (*fn)(odb_kernel *, int) = via ? deep_via_y : deep_via_x;
				uint32_t h[3], ref;
				volatile int three = 3;

				/* one call site: as they are, twice, then cleared */
				for (int c = 0; c < three; c++) {
					clear_recent = c == 2;
					h[c] = fn(k, depth);
				}
				clear_recent = false;
				ref = h[2];
				bad += h[0] != ref || h[1] != ref || !ref;
				if (!first[via][depth])
					first[via][depth] = ref;
				else
					bad += ref != first[via][depth];
			}
		}
	CHECK_EQ(bad, 0);
	/* other callers, other stacks; one more frame, another stack -- until the
	 * records are cut at ODB_STACK_DEPTH frames of save_deep alone */
	for (int d = 0; d < 26; d++)
		if (d < 12)
			CHECK(first[0][d] != first[1][d]);
	for (int d = 0; d + 1 < 12; d++)
		CHECK(first[0][d] != first[0][d + 1]);
	CHECK_EQ(first[0][20], first[0][25]);
	CHECK_EQ(first[0][20], first[1][25]);
	/* a record that ends where a walk ended at a broken chain is not the
	 * stack of a walk through the same frames that goes on */
	{
		uint32_t hb[4];
		volatile int four = 4;
		struct odb_task *t = odb_current(k);

		/* (the broken walk's record the only recent one: the candidate) */
		if (t)
			memset(t->depot_recent, 0, sizeof(t->depot_recent));
		for (int c = 0; c < four; c++)
			hb[c] = save_broken(k, c < 2);
		CHECK(hb[0] != 0 && hb[2] != 0);
		CHECK_EQ(hb[1], hb[0]);
		CHECK_EQ(hb[3], hb[2]);
		CHECK(hb[2] != hb[0]);
	}
	odb_kernel_destroy(k);
}

int main(void)
{
	test_dedup_and_concurrency();
	test_recent_records();
	test_templates();
	test_recent_walk();
	return odb_test_summary();
}
