/*
 * C unit tests of issue 18's "unchecked numbers": the boot command line is
 * parsed in linear work (the env list is hashed), and the interrupt hook
 * stops a long scenario early with ODB_EINTR after freeing what it made.
 * Built with the core by tests/test_c_units.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"

static char *many_params(unsigned int n, bool dup)
{
	char *s = malloc((size_t)n * 24 + 1), *p = s;

	if (!s)
		return NULL;
	for (unsigned int i = 0; i < n; i++)
		p += sprintf(p, "%sfoo%u=%u", i ? " " : "", dup ? i % 7 : i, i);
	*p = '\0';
	return s;
}

static void test_cmdline_linear(void)
{
	/* 200,000 distinct key=value parameters: a quadratic search looked at
	 * ~2e10 slots; the hash looks at a small constant per parameter. */
	const unsigned int n = 200000;
	char *line = many_params(n, false);
	odb_kernel *k;

	CHECK(line != NULL);
	if (!line)
		return;
	k = odb_test_boot(line, ODB_CLOCK_VIRTUAL, 1, 8 << 20, 1);
	CHECK(k != NULL);
	if (k) {
		CHECK(k->cmdline_env_probes >= n);
		CHECK(k->cmdline_env_probes <= 4ULL * n);
		odb_kernel_destroy(k);
	}
	free(line);
	/* repeated keys still replace the earlier value (envp_init) */
	line = many_params(1000, true);
	k = line ? odb_test_boot(line, ODB_CLOCK_VIRTUAL, 1, 8 << 20, 1) : NULL;
	CHECK(k != NULL);
	if (k) {
		char *d = odb_dmesg(k, false);
		const char *u = d ? strstr(d, "Unknown kernel command line") : NULL;

		CHECK(u != NULL);
		CHECK(u && strstr(u, "\"foo0=994 foo1=995 ") != NULL);   /* 7 keys, last values */
		CHECK(u && strstr(u, "foo0=0 ") == NULL);
		odb_free(d);
		odb_kernel_destroy(k);
	}
	free(line);
}

static int calls;
static int stop_after_two(void *ctx)
{
	(void)ctx;
	return ++calls >= 2;
}

static void test_poll_hook_stops_churn(void)
{
	odb_kernel *k = odb_test_boot("kasan=off", ODB_CLOCK_VIRTUAL, 2, 64 << 20, 1);
	struct odb_object_churn cfg = { .rounds = 1u << 24, .wave = 400, .lifetime = 3 };
	struct odb_object_churn_result r;
	uint64_t last = 0;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_poll(k, &last), ODB_OK);            /* no hook: never stops */
	odb_set_poll_hook(k, stop_after_two, NULL);
	calls = 0;
	CHECK_EQ(odb_object_churn(k, &cfg, &r), ODB_EINTR);
	CHECK_EQ(calls, 2);
	CHECK(r.cycles > 0);
	CHECK(r.cycles < (uint64_t)cfg.rounds * cfg.wave);
	/* out of range: refused before any work */
	cfg.rounds = (1u << 24) + 1;
	CHECK_EQ(odb_object_churn(k, &cfg, &r), ODB_EINVAL);
	odb_set_poll_hook(k, NULL, NULL);
	odb_kernel_destroy(k);
}

static void test_hackbench_limits(void)
{
	odb_kernel *k = odb_test_boot("kasan=off", ODB_CLOCK_VIRTUAL, 2, 64 << 20, 1);
	struct odb_hackbench_cfg cfg = { 1, 2, 1u << 31, 100, 0, true, false };
	struct odb_hackbench_result r;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_hackbench(k, &cfg, &r), ODB_EINVAL);   /* loops: was wrapped, hung */
	cfg.loops = 10;
	cfg.groups = 1u << 16;
	cfg.fds = 1u << 16;                                   /* groups * fds wraps to 0 */
	CHECK_EQ(odb_hackbench(k, &cfg, &r), ODB_EINVAL);
	cfg.groups = 1;
	cfg.fds = 2;
	odb_set_poll_hook(k, stop_after_two, NULL);
	calls = 0;
	cfg.loops = 1u << 24;
	CHECK_EQ(odb_hackbench(k, &cfg, &r), ODB_EINTR);
	odb_set_poll_hook(k, NULL, NULL);
	cfg.loops = 10;
	CHECK_EQ(odb_hackbench(k, &cfg, &r), ODB_OK);
	CHECK_EQ(r.messages, 1 * 2 * 2 * 10);
	odb_kernel_destroy(k);
}

int main(void)
{
	test_cmdline_linear();
	test_poll_hook_stops_churn();
	test_hackbench_limits();
	return odb_test_summary();
}
