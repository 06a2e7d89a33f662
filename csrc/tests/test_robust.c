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
#include "slab/slub.h"

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

/* A thread freeing an arbitrary address may read a page's struct slab at any
 * moment, even while another thread discards that slab or reuses its page:
 * slab_cache and base must never read as anything but a cache and the page's
 * own address (fuzz seed 41 example 917: a NULL read there under ASan). */
static void test_freed_slab_words_stay_valid(void)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 1);
	struct kmem_cache *s = NULL;
	odb_addr_t a = 0, big = 0;
	struct page *pg;
	struct slab *sl;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_kmem_cache_create(k, "victim", 512, 0, 0, NULL, NULL, &s), ODB_OK);
	CHECK_EQ(odb_kmem_cache_alloc(k, s, ODB_GFP_KERNEL, &a), ODB_OK);
	pg = virt_to_head_page(k, a);
	sl = page_slab(pg);
	CHECK(sl->slab_cache == s);
	CHECK_EQ(odb_kmem_cache_free(k, s, a), ODB_OK);
	CHECK_EQ(odb_kmem_cache_flush(k, s), ODB_OK);
	CHECK_EQ(odb_kmem_cache_destroy(k, s), ODB_OK);       /* the slab's pages go back */
	CHECK(!(pg->flags & PG_slab));
	CHECK(READ_ONCE(sl->slab_cache) == s);                  /* a tombstone: valid host memory */
	CHECK(READ_ONCE(sl->base) == virt_to_host(k, page_address(k, pg)));
	/* the page's next owner (a large kmalloc, most likely the same block) */
	CHECK_EQ(odb_kmalloc(k, 16384, ODB_GFP_KERNEL, &big), ODB_OK);
	for (odb_addr_t p = big; p < big + 16384; p += ODB_PAGE_SIZE) {
		struct slab *o = page_slab(virt_to_page(k, p));

		CHECK(o->slab_cache == NULL || o->slab_cache == s);
		CHECK(o->base == NULL || o->base == virt_to_host(k, p));
	}
	CHECK(READ_ONCE(sl->slab_cache) == s);
	odb_kfree(k, big);
	odb_kernel_destroy(k);
}

int main(void)
{
	test_freed_slab_words_stay_valid();
	test_cmdline_linear();
	test_poll_hook_stops_churn();
	test_hackbench_limits();
	return odb_test_summary();
}
