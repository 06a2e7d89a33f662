/*
 * C unit tests of debugobjects (csrc/debugobjects/), built together with the
 * core by tests/test_c_units.py (also under ASan+UBSan and TSan).
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

static odb_kernel *boot(const char *cmdline, unsigned cpus)
{
	return odb_test_boot(cmdline, ODB_CLOCK_VIRTUAL, cpus, 64 << 20, 0);
}

static struct odb_debug_objects_stats stats(odb_kernel *k)
{
	struct odb_debug_objects_stats s;
	odb_debug_objects_stats(k, &s);
	return s;
}

static int state_of(odb_kernel *k, odb_addr_t a)
{
	int st = -1;
	unsigned int as;
	if (odb_debug_object_lookup(k, a, &st, &as) != ODB_OK)
		return ODB_ODEBUG_STATE_NONE;
	return st;
}

/* A C descriptor whose fixups behave like the selftest's. */
struct tctx { int fixup_calls; bool is_static; };

static bool t_static(odb_kernel *k, odb_addr_t a, void *ctx) { return ((struct tctx *)ctx)->is_static; }
static odb_addr_t t_hint(odb_kernel *k, odb_addr_t a, void *ctx) { return 0; }
static const struct odb_debug_obj_descr *g_descr;   /* set per test (read-only) */

static bool t_fixup_activate(odb_kernel *k, odb_addr_t a, enum odb_debug_obj_state s, void *ctx)
{
	((struct tctx *)ctx)->fixup_calls++;
	if (s == ODB_ODEBUG_STATE_NOTAVAILABLE)
		return true;
	if (s != ODB_ODEBUG_STATE_ACTIVE)
		return false;
	odb_debug_object_deactivate(k, a, g_descr);
	odb_debug_object_activate(k, a, g_descr);
	return true;
}

static bool t_fixup_free(odb_kernel *k, odb_addr_t a, enum odb_debug_obj_state s, void *ctx)
{
	((struct tctx *)ctx)->fixup_calls++;
	if (s != ODB_ODEBUG_STATE_ACTIVE)
		return false;
	odb_debug_object_deactivate(k, a, g_descr);
	odb_debug_object_free(k, a, g_descr);
	return true;
}

static void test_boot(void)
{
	odb_kernel *k = boot("", 1);
	struct odb_debug_objects_internals in;
	struct odb_debug_objects_stats s;
	char *txt;

	CHECK(k);
	if (!k)
		return;
	CHECK(dmesg_has(k, "ODEBUG: selftest passed"));
	CHECK(odb_debug_objects_enabled(k));
	odb_debug_objects_internals(k, &in);
	CHECK(in.obj_cache);
	CHECK(in.selftest_passed);
	CHECK_EQ(in.pool_size, 1040);
	CHECK_EQ(in.pool_min_level, 272);
	/* spec 8.3: what the selftest leaves */
	s = stats(k);
	CHECK_EQ(s.max_chain, 0);
	CHECK_EQ(s.max_checked, 0);
	CHECK_EQ(s.warnings, 0);
	CHECK_EQ(s.fixups, 0);
	CHECK_EQ(s.pool_free, 1024);
	CHECK_EQ(s.pool_pcp_free, 17);
	CHECK_EQ(s.pool_min_free, 1007);
	CHECK_EQ(s.pool_used, 0);
	CHECK_EQ(s.pool_max_used, 17);
	CHECK_EQ(s.on_free_list, 0);
	CHECK_EQ(s.objs_allocated, 0);
	CHECK_EQ(s.objs_freed, 0);
	txt = odb_debug_objects_stats_text(k);
	CHECK(txt && !strcmp(txt,
		"max_chain     :0\nmax_checked   :0\nwarnings      :0\nfixups        :0\n"
		"pool_free     :1024\npool_pcp_free :17\npool_min_free :1007\npool_used     :0\n"
		"pool_max_used :17\non_free_list  :0\nobjs_allocated:0\nobjs_freed    :0\n"));
	odb_free(txt);
	odb_kernel_destroy(k);

	k = boot("no_debug_objects", 2);
	CHECK(k && !odb_debug_objects_enabled(k));
	if (k) {
		CHECK(!dmesg_has(k, "selftest passed"));
		CHECK_EQ(odb_debug_object_activate(k, 0x1000, &(struct odb_debug_obj_descr){ .name = "x" }), 0);
		odb_kernel_destroy(k);
	}
}

static void test_table_and_fixups(void)
{
	odb_kernel *k = boot("odebug.objects_warn=v5.3", 2);
	struct tctx c = { 0 };
	struct odb_debug_obj_descr d = {
		.name = "ctest", .ctx = &c, .is_static_object = t_static, .debug_hint = t_hint,
		.fixup_activate = t_fixup_activate, .fixup_free = t_fixup_free,
	};
	odb_addr_t a = ODB_PAGE_OFFSET + 0x10000;

	if (!k)
		return;
	g_descr = &d;
	CHECK_EQ(odb_debug_object_init(k, a, &d), 0);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_INIT);
	CHECK_EQ(odb_debug_object_activate(k, a, &d), 0);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_ACTIVE);
	/* activate active: warning + re-entrant fixup (deactivate + activate) */
	CHECK_EQ(odb_debug_object_activate(k, a, &d), 0);
	CHECK_EQ(stats(k).warnings, 1);
	CHECK_EQ(stats(k).fixups, 1);
	CHECK(dmesg_has(k, "ODEBUG: activate active (active state 0) object type: ctest hint: 0x0"));
	/* destroy active: warning, no fixup_destroy */
	odb_debug_object_destroy(k, a, &d);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_ACTIVE);
	CHECK_EQ(stats(k).warnings, 2);
	odb_debug_object_deactivate(k, a, &d);
	odb_debug_object_destroy(k, a, &d);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_DESTROYED);
	CHECK_EQ(odb_debug_object_activate(k, a, &d), ODB_EINVAL);   /* -EINVAL */
	CHECK(!odb_strerror(k)[0]);
	CHECK_EQ(stats(k).warnings, 3);
	odb_debug_object_free(k, a, &d);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_NONE);
	/* untracked, not static: "not available" + fixup returns true -> 0 */
	CHECK_EQ(odb_debug_object_activate(k, a, &d), 0);
	CHECK_EQ(stats(k).warnings, 4);
	CHECK_EQ(stats(k).fixups, 2);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_NONE);
	/* static: tracked silently */
	c.is_static = true;
	CHECK_EQ(odb_debug_object_activate(k, a, &d), 0);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_ACTIVE);
	CHECK_EQ(stats(k).warnings, 4);
	/* range check: active -> warning, fixup_free frees it */
	CHECK_EQ(odb_debug_check_no_obj_freed(k, a - 8, 64), 0);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_NONE);
	CHECK_EQ(stats(k).warnings, 5);
	CHECK_EQ(stats(k).fixups, 3);
	/* sixth warning: counted, not printed */
	odb_debug_object_deactivate(k, a + 8, &d);
	CHECK_EQ(stats(k).warnings, 6);
	CHECK(!dmesg_has(k, "deactivate not available"));
	CHECK_EQ(odb_debug_object_init(k, a, NULL), ODB_EINVAL);
	CHECK(odb_strerror(k)[0]);
	CHECK_EQ(odb_debug_check_no_obj_freed(k, a, ~0ULL), ODB_ERANGE);
	odb_kernel_destroy(k);
}

/* The bounded rescan: an active object whose fixup does nothing. */
static void test_rescan_bound(void)
{
	odb_kernel *k = boot("", 1);
	struct odb_debug_obj_descr d = { .name = "stuck" };
	odb_addr_t a = ODB_PAGE_OFFSET + 0x20000;

	if (!k)
		return;
	odb_debug_object_init(k, a, &d);
	odb_debug_object_activate(k, a, &d);
	odb_debug_object_init(k, a + 64, &d);
	CHECK_EQ(odb_debug_check_no_obj_freed(k, a, 4096), 0);
	CHECK_EQ(stats(k).warnings, 1);
	CHECK_EQ(state_of(k, a), ODB_ODEBUG_STATE_ACTIVE);
	CHECK_EQ(state_of(k, a + 64), ODB_ODEBUG_STATE_NONE);
	CHECK_EQ(stats(k).max_checked, 1);
	odb_kernel_destroy(k);
}

/* Spec 12 B with the model's start (no selftest, 1 CPU). */
static void test_model_b(void)
{
	static const struct { int n; int i_pool_free, i_pcp, i_min, i_used, i_max, i_alloc;
			      int f_pool_free, f_pcp, f_tofree, w_freed, w_pool_free; } tab[] = {
		{ 100, 924, 2, 922, 100, 102, 0, 1024, 51, 0, 0, 1024 },
		{ 2000, 288, 6, 255, 2000, 2006, 1264, 1248, 51, 1040, 1040, 1248 },
		{ 5000, 296, 15, 255, 5000, 5015, 4272, 4256, 51, 1040, 1040, 4256 },
	};
	struct odb_debug_obj_descr d = { .name = "b" };

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++) {
		odb_kernel *k = boot("odebug.objects_selftest=off", 1);
		struct odb_debug_objects_stats s;
		struct odb_debug_objects_internals in;
		int n = tab[i].n;

		if (!k)
			return;
		for (int j = 0; j < n; j++)
			odb_debug_object_init(k, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
		s = stats(k);
		CHECK_EQ(s.pool_free, tab[i].i_pool_free);
		CHECK_EQ(s.pool_pcp_free, tab[i].i_pcp);
		CHECK_EQ(s.pool_min_free, tab[i].i_min);
		CHECK_EQ(s.pool_used, tab[i].i_used);
		CHECK_EQ(s.pool_max_used, tab[i].i_max);
		CHECK_EQ(s.objs_allocated, tab[i].i_alloc);
		for (int j = 0; j < n; j++)
			odb_debug_object_free(k, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
		s = stats(k);
		CHECK_EQ(s.pool_free, tab[i].f_pool_free);
		CHECK_EQ(s.pool_pcp_free, tab[i].f_pcp);
		CHECK_EQ(s.on_free_list, tab[i].f_tofree);
		odb_debug_objects_internals(k, &in);
		CHECK_EQ(in.work_pending, tab[i].f_tofree > 0);
		odb_advance(k, 100 * NSEC_PER_MSEC);
		s = stats(k);
		CHECK_EQ(s.on_free_list, 0);
		CHECK_EQ(s.objs_freed, tab[i].w_freed);
		CHECK_EQ(s.pool_free, tab[i].w_pool_free);
		odb_kernel_destroy(k);
	}
}

static void test_oom(void)
{
	odb_kernel *k = boot("", 1);
	struct odb_debug_obj_descr d = { .name = "oom" };
	struct odb_debug_objects_stats s;
	int i;

	if (!k)
		return;
	odb_fault_set(k, "failslab", 100, 1, -1, 0, 0);
	for (i = 0; i < 5000 && odb_debug_objects_enabled(k); i++)
		odb_debug_object_init(k, ODB_PAGE_OFFSET + 64 * (uint64_t)i, &d);
	CHECK(!odb_debug_objects_enabled(k));
	CHECK_EQ(i, 1025);   /* 1024 trackers, the next init fails */
	CHECK(dmesg_has(k, "ODEBUG: Out of memory. ODEBUG disabled"));
	s = stats(k);
	CHECK_EQ(s.pool_used, 0);
	CHECK_EQ(s.pool_free, 1024);
	CHECK_EQ(state_of(k, ODB_PAGE_OFFSET), ODB_ODEBUG_STATE_NONE);
	CHECK_EQ(odb_debug_object_activate(k, ODB_PAGE_OFFSET, &d), 0);
	odb_kernel_destroy(k);
}

/* Concurrent churn on every vCPU; invariants after join. */
struct worker { odb_kernel *k; int cpu; int iters; };

static void *churn(void *arg)
{
	struct worker *w = arg;
	struct odb_debug_obj_descr d = { .name = "churn" };
	odb_addr_t base = ODB_PAGE_OFFSET + ((uint64_t)w->cpu << 24);

	odb_bind_cpu(w->k, w->cpu, NULL);
	for (int r = 0; r < w->iters; r++) {
		for (int j = 0; j < 300; j++) {
			odb_debug_object_init(w->k, base + 64 * (uint64_t)j, &d);
			odb_debug_object_activate(w->k, base + 64 * (uint64_t)j, &d);
		}
		for (int j = 0; j < 300; j++) {
			odb_debug_object_deactivate(w->k, base + 64 * (uint64_t)j, &d);
			odb_debug_object_free(w->k, base + 64 * (uint64_t)j, &d);
		}
		odb_debug_check_no_obj_freed(w->k, base, 300 * 64);
	}
	return NULL;
}

static void test_threads(const char *cmdline)
{
	odb_kernel *k = boot(cmdline, 4);
	struct odb_config cfg;
	pthread_t th[4];
	struct worker w[4];
	struct odb_debug_objects_internals in;
	struct odb_debug_objects_stats s;
	char err[128];
	int sum = 0;

	(void)cfg; (void)err;
	if (!k)
		return;
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ k, i, 20 };
		pthread_create(&th[i], NULL, churn, &w[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	odb_advance(k, 1000 * NSEC_PER_MSEC);
	odb_debug_objects_internals(k, &in);
	s = stats(k);
	for (int i = 0; i < 4; i++) {
		CHECK(in.pcp_free[i] >= 0 && in.pcp_free[i] <= 64);
		sum += in.pcp_free[i];
	}
	CHECK_EQ(in.hashed, 0);
	CHECK_EQ(s.warnings, 0);
	CHECK_EQ(in.obj_pool_used - sum, in.hashed);
	/* conservation: 1024 + allocated - freed trackers in the pools */
	CHECK_EQ(in.obj_pool_free + sum + in.obj_nr_tofree + in.hashed,
		 1024 + s.objs_allocated - s.objs_freed);
	CHECK(in.obj_nr_tofree <= 1040 || in.eager);
	odb_kernel_destroy(k);
}

static void test_eager_vs_lazy(void)
{
	struct odb_debug_obj_descr d = { .name = "p" };
	struct odb_debug_objects_stats sl, se;
	odb_kernel *kl = boot("odebug.objects_selftest=off", 1);
	odb_kernel *ke = boot("odebug.objects_selftest=off odebug.objects_free=eager", 1);

	if (!kl || !ke)
		return;
	for (int r = 0; r < 50; r++) {
		for (int j = 0; j < 2000; j++) {
			odb_debug_object_init(kl, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
			odb_debug_object_init(ke, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
		}
		for (int j = 0; j < 2000; j++) {
			odb_debug_object_free(kl, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
			odb_debug_object_free(ke, ODB_PAGE_OFFSET + 64 * (uint64_t)j, &d);
			odb_advance(ke, 0);   /* the immediate work runs right away */
		}
		odb_advance(kl, 100 * NSEC_PER_MSEC);
	}
	sl = stats(kl);
	se = stats(ke);
	/* spec 12 C, burst 2,000 */
	CHECK_EQ(se.objs_allocated, 59344);
	CHECK_EQ(se.objs_freed, 59262);
	CHECK_EQ(sl.objs_allocated, 52224);
	CHECK_EQ(sl.objs_freed, 52000);
	odb_kernel_destroy(kl);
	odb_kernel_destroy(ke);
}

int main(void)
{
	test_boot();
	test_table_and_fixups();
	test_rescan_bound();
	test_model_b();
	test_oom();
	test_eager_vs_lazy();
	test_threads("");
	test_threads("odebug.objects_free=eager");
	return odb_test_summary();
}
