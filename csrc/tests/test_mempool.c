/*
 * C unit tests of mempools (csrc/slab/mempool.c) and KASAN's public poisoning
 * API (kasan_poison, the mempool hooks, kasan_disable_current): the reserve,
 * the reports of bad frees of pool elements, the blocking wait, threads on
 * one pool; built with the core by tests/test_c_units.py (also under
 * ASan+UBSan and TSan).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "kasan/kasan.h"
#include "slab/slub.h"

static odb_kernel *boot(const char *cmdline)
{
	return odb_test_boot(cmdline, ODB_CLOCK_VIRTUAL, 4, 64 << 20, 0);
}

/* kinds of the reports made since before, joined by ',' */
static const char *kinds_since(odb_kernel *k, size_t before)
{
	static char buf[512];
	size_t n = odb_report_count(k), len = 0;

	buf[0] = '\0';
	for (size_t i = before; i < n; i++) {
		const struct odb_report *r = odb_report_get(k, i);

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "," : "", r->kind);
		odb_report_put(r);
		if (len >= sizeof(buf))
			break;
	}
	return buf;
}

static uint8_t shadow_at(odb_kernel *k, odb_addr_t a)
{
	uint8_t sh[4];
	size_t n;

	return odb_kasan_shadow(k, a, 1, sh, &n) == ODB_OK ? sh[0] : 0x42;
}

static void test_shadow_primitives(void)
{
	odb_kernel *k = boot("kasan_multi_shot no_debug_objects");
	odb_addr_t p, pg;
	bool reuse;
	size_t c;

	CHECK(k != NULL);
	CHECK(odb_kmalloc(k, 64, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kasan_poison(k, p + 16, 16, KASAN_SLAB_REDZONE) == ODB_OK);
	CHECK(shadow_at(k, p + 8) == 0 && shadow_at(k, p + 16) == KASAN_SLAB_REDZONE &&
	      shadow_at(k, p + 24) == KASAN_SLAB_REDZONE && shadow_at(k, p + 32) == 0);
	c = odb_report_count(k);
	CHECK(odb_kasan_check_read(k, p + 20, 1) == ODB_OK && !strcmp(kinds_since(k, c), "slab-out-of-bounds"));
	/* unpoison of 13 bytes: one whole granule and a partial one of 5 */
	CHECK(odb_kasan_unpoison(k, p + 16, 13) == ODB_OK);
	CHECK(shadow_at(k, p + 16) == 0 && shadow_at(k, p + 24) == 5);
	c = odb_report_count(k);
	CHECK(odb_kasan_check_read(k, p + 28, 1) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_check_read(k, p + 29, 1) == ODB_OK && odb_report_count(k) == c + 1);
	/* bad arguments: nothing changes */
	CHECK(odb_kasan_poison(k, p + 4, 8, 0xFC) == ODB_EINVAL);
	CHECK(odb_kasan_poison(k, p, 12, 0xFC) == ODB_EINVAL);
	CHECK(odb_kasan_unpoison(k, p + 1, 8) == ODB_EINVAL);
	CHECK(shadow_at(k, p) == 0);
	CHECK(odb_kasan_poison(k, 0x1000, 8, 0xFC) == ODB_EFAULT);
	CHECK(odb_kasan_poison(k, odb_arena_end(k) - 8, 16, 0xFC) == ODB_EFAULT);
	CHECK(odb_kasan_unpoison(k, ~7ULL, 16) == ODB_EFAULT);
	CHECK(odb_kasan_poison(k, p, 0, 0xFC) == ODB_OK && odb_kasan_unpoison(k, 8, 0) == ODB_OK);
	CHECK(odb_kasan_poison_pages(k, p | 8, 0) == ODB_EINVAL);      /* not a page */
	CHECK(odb_kasan_poison_pages(k, odb_arena_start(k), ODB_MAX_ORDER + 1) == ODB_EINVAL);
	CHECK(odb_kasan_mempool_poison_object(k, 64, &reuse) == ODB_EFAULT && !reuse);
	CHECK(odb_kasan_mempool_unpoison_object(k, p + 8, 8) == ODB_EINVAL);   /* not an object */
	CHECK(odb_kasan_mempool_unpoison_object(k, p, 65) == ODB_EINVAL);      /* > object_size */
	/* pages */
	CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL, 1, &pg) == ODB_OK);
	CHECK(odb_kasan_poison_pages(k, pg, 1) == ODB_OK);
	CHECK(shadow_at(k, pg) == KASAN_PAGE_FREE && shadow_at(k, pg + 8191) == KASAN_PAGE_FREE);
	CHECK(odb_kasan_unpoison_pages(k, pg, 1) == ODB_OK && shadow_at(k, pg + 8191) == 0);
	/* the mempool hooks by hand: poison, a second poison is a double free,
	 * inside the object an invalid free; unpoison gives it back */
	c = odb_report_count(k);
	CHECK(odb_kasan_unpoison(k, p, 64) == ODB_OK);
	CHECK(odb_kasan_mempool_poison_object(k, p, &reuse) == ODB_OK && reuse);
	CHECK(shadow_at(k, p) == KASAN_SLAB_FREE_META && shadow_at(k, p + 8) == KASAN_SLAB_FREE);
	CHECK(odb_kasan_mempool_poison_object(k, p, &reuse) == ODB_OK && !reuse);
	CHECK(odb_kasan_mempool_poison_object(k, p + 8, &reuse) == ODB_OK && !reuse);
	CHECK(!strcmp(kinds_since(k, c), "double-free,invalid-free"));
	CHECK(odb_kasan_mempool_unpoison_object(k, p, 60) == ODB_OK);
	CHECK(shadow_at(k, p) == 0 && shadow_at(k, p + 56) == 4);
	c = odb_report_count(k);
	CHECK(odb_kasan_mempool_poison_pages(k, pg, 1, &reuse) == ODB_OK && reuse);
	CHECK(odb_kasan_mempool_poison_pages(k, pg, 1, &reuse) == ODB_OK && !reuse);
	CHECK(odb_kasan_mempool_poison_pages(k, pg + 4096, 0, &reuse) == ODB_OK && !reuse);
	CHECK(!strcmp(kinds_since(k, c), "double-free,invalid-free"));
	CHECK(odb_kasan_mempool_unpoison_pages(k, pg, 1) == ODB_OK);
	CHECK(odb_free_pages(k, pg, 1) == ODB_OK);
	CHECK(odb_kfree(k, p) == ODB_OK);
	odb_kernel_destroy(k);

	/* kasan=off: the checks of the arguments, nothing else */
	k = boot("kasan=off no_debug_objects");
	CHECK(k != NULL);
	CHECK(odb_kmalloc(k, 64, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kasan_poison(k, p, 8, 0xFC) == ODB_OK && odb_kasan_poison(k, p + 1, 8, 0xFC) == ODB_EINVAL);
	CHECK(odb_kasan_mempool_poison_object(k, p, &reuse) == ODB_OK && reuse);
	odb_kernel_destroy(k);
}

static void test_disable_current(void)
{
	odb_kernel *k = boot("kasan_multi_shot no_debug_objects");
	odb_addr_t p, q;
	unsigned int depth;
	uint8_t b[32];
	size_t c;

	CHECK(odb_kmalloc(k, 13, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kmalloc(k, 13, ODB_GFP_KERNEL, &q) == ODB_OK);
	CHECK(odb_kasan_enable_current(k) == ODB_ESTATE);
	CHECK(odb_kasan_disable_current(k) == ODB_OK && odb_kasan_disable_current(k) == ODB_OK);
	CHECK(odb_kasan_current_depth(k, &depth) == ODB_OK && depth == 2);
	c = odb_report_count(k);
	memset(b, 0x5a, sizeof(b));
	CHECK(odb_kasan_read(k, p + 16, b, 1) == ODB_OK);
	/* performed: a memset past the 13 bytes (the slot's slack written) */
	CHECK(odb_kasan_memset(k, p, 0x77, 16) == ODB_OK);
	CHECK(((uint8_t *)odb_host_ptr(k, p + 15, 1))[0] == 0x77);
	CHECK(odb_kasan_memcpy(k, q, p, 16) == ODB_OK);
	CHECK(((uint8_t *)odb_host_ptr(k, q + 14, 1))[0] == 0x77);
	CHECK(odb_kasan_memmove(k, p + 2, p, 14) == ODB_OK);
	CHECK(((uint8_t *)odb_host_ptr(k, p + 15, 1))[0] == 0x77);
	CHECK(odb_report_count(k) == c);
	{
		struct odb_kasan_counters ct;
		odb_kasan_counters(k, &ct);
		CHECK(ct.detections == 0);
	}
	/* a bad free is still reported */
	CHECK(odb_kfree(k, p + 1) == ODB_OK && !strcmp(kinds_since(k, c), "invalid-free"));
	CHECK(odb_kasan_enable_current(k) == ODB_OK && odb_kasan_enable_current(k) == ODB_OK);
	CHECK(odb_kasan_enable_current(k) == ODB_ESTATE);
	c = odb_report_count(k);
	CHECK(odb_kasan_read(k, p + 16, b, 1) == ODB_OK && !strcmp(kinds_since(k, c), "slab-out-of-bounds"));
	CHECK(odb_kfree(k, p) == ODB_OK && odb_kfree(k, q) == ODB_OK);
	c = odb_report_count(k);
	/* kfree_sensitive twice: ksize's check (slab-use-after-free) then the double free */
	CHECK(odb_kmalloc(k, 60, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kasan_memset(k, p, 's', 60) == ODB_OK);
	CHECK(odb_kfree_sensitive(k, p) == ODB_OK && odb_report_count(k) == c);
	{
		/* zeroed: all 64 bytes (ksize), past the free meta (16) and
		 * before the middle (SLUB's free pointer) */
		static const uint8_t zero[16];
		CHECK(!memcmp(odb_host_ptr(k, p + 16, 16), zero, 16));
		CHECK(((uint8_t *)odb_host_ptr(k, p + 60, 1))[0] == 0);
	}
	CHECK(odb_kfree_sensitive(k, p) == ODB_OK);
	CHECK(!strcmp(kinds_since(k, c), "slab-use-after-free,double-free"));
	odb_kernel_destroy(k);
}

struct pool_waiter {
	odb_kernel *k;
	odb_mempool *pool;
	odb_addr_t got;
	int ret;
};

static void *blocking_alloc(void *arg)
{
	struct pool_waiter *w = arg;

	w->ret = odb_mempool_alloc(w->k, w->pool, ODB_GFP_KERNEL, &w->got);
	return NULL;
}

static void test_mempool_basics(void)
{
	odb_kernel *k = boot("kasan_multi_shot no_debug_objects");
	odb_mempool *pool, *pp, *sp;
	struct odb_mempool_info info;
	odb_addr_t e, e2, extra, elems[8];
	uint64_t free_before;
	odb_cache *s;
	size_t c, n;
	uint8_t b;

	CHECK(k != NULL);
	/* bad arguments */
	CHECK(odb_mempool_create_kmalloc_pool(k, -1, 16, &pool) == ODB_EINVAL && !pool);
	CHECK(odb_mempool_create_kmalloc_pool(k, 2, 0, &pool) == ODB_EINVAL);
	CHECK(odb_mempool_create_page_pool(k, 2, ODB_MAX_ORDER + 1, &pool) == ODB_EINVAL);
	CHECK(odb_mempool_create_slab_pool(k, 2, NULL, &pool) == ODB_EINVAL);

	/* kmalloc pool of 115-byte elements: the reserve is poisoned */
	CHECK(odb_mempool_create_kmalloc_pool(k, 4, 115, &pool) == ODB_OK && pool);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.min_nr == 4 && info.curr_nr == 4 &&
	      info.kind == ODB_MEMPOOL_KMALLOC && info.size == 115);
	CHECK(odb_mempool_elements(k, pool, elems, 8, &n) == ODB_OK && n == 4);
	CHECK(shadow_at(k, elems[0]) == KASAN_SLAB_FREE_META);
	CHECK(odb_mempool_alloc_preallocated(k, pool, &extra) == ODB_OK && extra == elems[3]);
	CHECK(odb_mempool_alloc_preallocated(k, pool, &e) == ODB_OK);
	/* unpoisoned exactly: 115 bytes, kmalloc redzone after */
	CHECK(shadow_at(k, e) == 0 && shadow_at(k, e + 112) == 3 && shadow_at(k, e + 120) == KASAN_SLAB_REDZONE);
	c = odb_report_count(k);
	CHECK(odb_kasan_read(k, e + 115, &b, 1) == ODB_OK && !strcmp(kinds_since(k, c), "slab-out-of-bounds"));
	c = odb_report_count(k);
	CHECK(odb_mempool_free(k, pool, e) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_read(k, e, &b, 1) == ODB_OK);
	CHECK(odb_mempool_free(k, pool, e) == ODB_OK);            /* double free: not kept */
	CHECK(odb_mempool_alloc_preallocated(k, pool, &e2) == ODB_OK && e2 == e);
	CHECK(odb_mempool_free(k, pool, e2 + 1) == ODB_OK);       /* invalid free */
	CHECK(!strcmp(kinds_since(k, c), "slab-use-after-free,double-free,invalid-free"));
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 2);
	CHECK(odb_mempool_free(k, pool, e2) == ODB_OK && odb_mempool_free(k, pool, extra) == ODB_OK);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 4);
	CHECK(odb_mempool_free(k, pool, 0x1234) == ODB_EINVAL);   /* not in the arena */
	/* a full reserve: the element goes back to kmalloc (then in the quarantine) */
	CHECK(odb_kmalloc(k, 115, ODB_GFP_KERNEL, &e) == ODB_OK);
	c = odb_report_count(k);
	CHECK(odb_mempool_free(k, pool, e) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 4);
	/* resize */
	CHECK(odb_mempool_resize(k, pool, 0) == ODB_EINVAL);
	CHECK(odb_mempool_resize(k, pool, 2) == ODB_OK);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 2 && info.min_nr == 2);
	CHECK(odb_mempool_resize(k, pool, 6) == ODB_OK);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 6 && info.min_nr == 6);
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_KERNEL | ODB_GFP_ZERO, &e) == ODB_EINVAL);
	CHECK(odb_mempool_destroy(k, pool) == ODB_OK);
	CHECK(odb_mempool_destroy(k, pool) == ODB_ESTATE);
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_KERNEL, &e) == ODB_ESTATE);
	CHECK(odb_mempool_free(k, pool, e2) == ODB_ESTATE);

	/* failslab 100%: the reserve, then ENOMEM (atomic) */
	CHECK(odb_mempool_create_kmalloc_pool(k, 2, 64, &pool) == ODB_OK);
	CHECK(odb_fault_set(k, "failslab", 100, 1, -1, 0, 0) == ODB_OK);
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_ATOMIC, &e) == ODB_OK && e);
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_ATOMIC, &e2) == ODB_OK && e2 && e2 != e);
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_ATOMIC, &extra) == ODB_ENOMEM && !extra);
	/* GFP_KERNEL: failslab ignores blocking allocations (ignore-gfp-wait) */
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_KERNEL, &extra) == ODB_OK && extra);
	CHECK(odb_mempool_free(k, pool, extra) == ODB_OK);       /* reserve short: kept */
	CHECK(odb_mempool_alloc(k, pool, ODB_GFP_ATOMIC, &extra) == ODB_OK && extra);
	/* ignore-gfp-wait off: a blocking alloc waits for a free from another thread */
	CHECK(odb_fault_set_flag(k, "failslab", "ignore-gfp-wait", 0) == ODB_OK);
	{
		struct pool_waiter w = { k, pool, 0, -1 };
		pthread_t th;
		struct odb_mempool_info i2;

		CHECK(pthread_create(&th, NULL, blocking_alloc, &w) == 0);
		CHECK(odb_mempool_free(k, pool, e) == ODB_OK);
		pthread_join(th, NULL);
		CHECK(w.ret == ODB_OK && w.got == e);
		CHECK(odb_mempool_info(k, pool, &i2) == ODB_OK && i2.curr_nr == 0);
		CHECK(odb_mempool_free(k, pool, w.got) == ODB_OK);
	}
	CHECK(odb_fault_set(k, "failslab", 0, 1, -1, 0, 0) == ODB_OK);
	CHECK(odb_mempool_free(k, pool, e2) == ODB_OK && odb_mempool_free(k, pool, extra) == ODB_OK);
	CHECK(odb_mempool_destroy(k, pool) == ODB_OK);

	/* page pool: every page comes back */
	{
		odb_addr_t slabobj;

		CHECK(odb_kmalloc(k, 4096, ODB_GFP_KERNEL, &slabobj) == ODB_OK);
		CHECK(odb_kfree(k, slabobj) == ODB_OK);   /* its slab stays */
	}
	CHECK(odb_kasan_quarantine_drain(k) == ODB_OK);
	free_before = odb_nr_free_pages(k);
	CHECK(odb_mempool_create_page_pool(k, 3, 2, &pp) == ODB_OK);
	CHECK(odb_nr_free_pages(k) == free_before - 12);
	CHECK(odb_mempool_alloc_preallocated(k, pp, &extra) == ODB_OK);
	CHECK(odb_mempool_alloc_preallocated(k, pp, &e) == ODB_OK);
	CHECK(shadow_at(k, e + 16383) == 0);
	CHECK(odb_mempool_free(k, pp, e) == ODB_OK);
	CHECK(shadow_at(k, e) == KASAN_PAGE_FREE && shadow_at(k, e + 16383) == KASAN_PAGE_FREE);
	c = odb_report_count(k);
	CHECK(odb_kasan_read(k, e + 100, &b, 1) == ODB_OK);
	CHECK(odb_mempool_free(k, pp, e) == ODB_OK);
	CHECK(odb_mempool_free(k, pp, e + 4096) == ODB_OK);
	CHECK(!strcmp(kinds_since(k, c), "use-after-free,double-free,invalid-free"));
	{
		odb_addr_t other, slabobj;

		CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL, 1, &other) == ODB_OK);
		CHECK(odb_mempool_free(k, pp, other) == ODB_EINVAL);       /* another order */
		CHECK(odb_kmalloc(k, 4096, ODB_GFP_KERNEL, &slabobj) == ODB_OK);
		CHECK((slabobj & 4095) == 0);
		CHECK(odb_mempool_free(k, pp, slabobj) == ODB_EINVAL);  /* a slab page */
		CHECK(odb_kfree(k, slabobj) == ODB_OK);
		CHECK(odb_free_pages(k, other, 1) == ODB_OK);
		CHECK(odb_kasan_quarantine_drain(k) == ODB_OK);
	}
	CHECK(odb_mempool_free(k, pp, extra) == ODB_OK);
	CHECK(odb_mempool_info(k, pp, &info) == ODB_OK && info.curr_nr == 3);
	CHECK(odb_mempool_destroy(k, pp) == ODB_OK);
	CHECK(odb_nr_free_pages(k) == free_before);

	/* slab pool: no constructor; the cache destroyed with the pool alive */
	CHECK(odb_kmem_cache_create(k, "test_cache", 123, 0, 0, NULL, NULL, &s) == ODB_OK);
	CHECK(odb_mempool_create_slab_pool(k, 2, s, &sp) == ODB_OK);
	CHECK(odb_mempool_alloc_preallocated(k, sp, &e) == ODB_OK);
	CHECK(shadow_at(k, e + 120) == 3);
	c = odb_report_count(k);
	CHECK(odb_kasan_read(k, e + 123, &b, 1) == ODB_OK && !strcmp(kinds_since(k, c), "slab-out-of-bounds"));
	CHECK(odb_mempool_free(k, sp, e) == ODB_OK);
	CHECK(odb_mempool_destroy(k, sp) == ODB_OK);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_OK);
	CHECK(odb_mempool_create_slab_pool(k, 2, s, &sp) == ODB_ESTATE);
	odb_kernel_destroy(k);
}

/* Threads on one page pool (TSan / ASan): every element is either in the
 * reserve or back with the page allocator at the end. */
struct churn {
	odb_kernel *k;
	odb_mempool *pool;
	int cpu, rounds;
	int errors;
};

static void *churn_fn(void *arg)
{
	struct churn *c = arg;
	odb_addr_t held[4];
	int old;

	odb_bind_cpu(c->k, c->cpu, &old);
	for (int r = 0; r < c->rounds; r++) {
		for (int i = 0; i < 4; i++)
			if (odb_mempool_alloc(c->k, c->pool, i & 1 ? ODB_GFP_ATOMIC : ODB_GFP_KERNEL,
					      &held[i]) != ODB_OK)
				held[i] = 0;
		for (int i = 0; i < 4; i++)
			if (held[i] && odb_mempool_free(c->k, c->pool, held[i]) != ODB_OK)
				c->errors++;
	}
	return NULL;
}

static void test_mempool_threads(void)
{
	odb_kernel *k = boot("no_debug_objects");
	struct churn ch[4];
	pthread_t th[4];
	odb_mempool *pool;
	struct odb_mempool_info info;
	uint64_t free_before;

	CHECK(k != NULL);
	free_before = odb_nr_free_pages(k);
	CHECK(odb_mempool_create_page_pool(k, 6, 0, &pool) == ODB_OK);
	CHECK(odb_fault_set(k, "fail_page_alloc", 50, 1, -1, 0, 0) == ODB_OK);
	for (int i = 0; i < 4; i++) {
		ch[i] = (struct churn){ k, pool, i, 300, 0 };
		CHECK(pthread_create(&th[i], NULL, churn_fn, &ch[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(ch[i].errors, 0);
	}
	CHECK(odb_fault_set(k, "fail_page_alloc", 0, 1, -1, 0, 0) == ODB_OK);
	CHECK(odb_mempool_info(k, pool, &info) == ODB_OK && info.curr_nr == 6);
	CHECK(odb_report_count(k) == 0);
	CHECK(odb_mempool_destroy(k, pool) == ODB_OK);
	CHECK_EQ(odb_nr_free_pages(k), free_before);
	odb_kernel_destroy(k);
}

int main(void)
{
	test_shadow_primitives();
	test_disable_current();
	test_mempool_basics();
	test_mempool_threads();
	return odb_test_summary();
}
