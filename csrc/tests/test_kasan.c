/*
 * C unit tests of the KASAN room (csrc/kasan/): shadow encoding, the access
 * rules, classification, reports, both quarantines and the geometry; built
 * with the core by tests/test_c_units.py (also under ASan+UBSan and TSan).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "kasan/kasan.h"
#include "slab/slub.h"

static odb_kernel *boot(const char *cmdline, unsigned cpus, uint64_t ram)
{
	return odb_test_boot(cmdline, ODB_CLOCK_VIRTUAL, cpus, ram, 0);
}

static const char *last_kind(odb_kernel *k, size_t before)
{
	static char buf[96];
	const struct odb_report *r;
	size_t n = odb_report_count(k);

	if (n == before)
		return "";
	r = odb_report_get(k, n - 1);
	snprintf(buf, sizeof(buf), "%s", r->kind);
	odb_report_put(r);
	return buf;
}

static void test_shadow_and_rules(void)
{
	odb_kernel *k = boot("kasan_multi_shot no_debug_objects", 2, 64 << 20);
	odb_addr_t p, q;
	uint8_t sh[32], buf[256];
	size_t n, c;

	CHECK(k && odb_kasan_enabled(k));
	CHECK(odb_kmalloc(k, 115, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kasan_shadow(k, p, 128, sh, &n) == ODB_OK && n == 16);
	CHECK(sh[13] == 0 && sh[14] == 3 && sh[15] == KASAN_SLAB_REDZONE);
	c = odb_report_count(k);
	CHECK(odb_kasan_read(k, p, buf, 115) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_read(k, p + 112, buf, 3) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_read(k, p + 112, buf, 4) == ODB_OK && !strcmp(last_kind(k, c), "slab-out-of-bounds"));
	c = odb_report_count(k);
	CHECK(odb_kasan_check_write(k, p + 99, 16) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_check_write(k, p + 105, 16) == ODB_OK && odb_report_count(k) == c + 1);
	c = odb_report_count(k);
	CHECK(odb_kasan_memset(k, p, 0, 0) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kasan_memcpy(k, p, p + 4, (size_t)-2) == ODB_OK && !strcmp(last_kind(k, c), "out-of-bounds"));
	c = odb_report_count(k);
	CHECK(odb_kasan_check_read(k, 16, 1) == ODB_OK && !strcmp(last_kind(k, c), "null-ptr-deref"));
	c = odb_report_count(k);
	CHECK(odb_kasan_check_read(k, 0xffffea0000000000ULL, 8) == ODB_OK &&   /* vmemmap: no shadow */
	      !strcmp(last_kind(k, c), "wild-memory-access"));
	c = odb_report_count(k);
	CHECK(odb_kasan_check_read(k, odb_vmalloc_start(k), 8) == ODB_OK &&      /* unused vmalloc space */
	      !strcmp(last_kind(k, c), "vmalloc-out-of-bounds"));
	CHECK(odb_kfree(k, p) == ODB_OK);
	CHECK(odb_kasan_shadow(k, p, 16, sh, &n) == ODB_OK && sh[0] == KASAN_SLAB_FREE_META && sh[1] == KASAN_SLAB_FREE);
	c = odb_report_count(k);
	CHECK(odb_kasan_write(k, p + 8, buf, 1) == ODB_OK && !strcmp(last_kind(k, c), "slab-use-after-free"));
	c = odb_report_count(k);
	CHECK(odb_kfree(k, p) == ODB_OK && !strcmp(last_kind(k, c), "double-free"));
	CHECK(odb_kmalloc(k, 100, ODB_GFP_KERNEL, &q) == ODB_OK);
	c = odb_report_count(k);
	CHECK(odb_kfree(k, q + 8) == ODB_OK && !strcmp(last_kind(k, c), "invalid-free"));
	CHECK(odb_kfree(k, q) == ODB_OK);
	{
		struct odb_kasan_counters ct;
		odb_kasan_counters(k, &ct);
		CHECK(ct.detections == ct.reports && ct.suppressed == 0 && ct.reports >= 8);
	}
	odb_kernel_destroy(k);
}

static void test_report_text(void)
{
	odb_kernel *k = boot("no_debug_objects", 1, 64 << 20);
	const struct odb_report *r;
	odb_addr_t p;
	uint8_t b = 1;
	char want[128];

	CHECK(odb_kmalloc(k, 115, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kasan_write(k, p + 120, &b, 1) == ODB_OK);
	r = odb_report_get(k, odb_report_count(k) - 1);
	CHECK(r && !strcmp(r->subsystem, "kasan") && !strcmp(r->kind, "slab-out-of-bounds"));
	CHECK(r->size == 1 && r->is_write == 1 && r->object == p && r->offset == 120 && r->has_alloc_track);
	CHECK(strstr(r->text, "BUG: KASAN: slab-out-of-bounds in ") != NULL);
	snprintf(want, sizeof(want), "Write of size 1 at addr %016llx by task ", (unsigned long long)(p + 120));
	CHECK(strstr(r->text, want) != NULL);
	CHECK(strstr(r->text, "located 5 bytes to the right of\n allocated 115-byte region") != NULL);
	CHECK(strstr(r->text, "Memory state around the buggy address:\n") != NULL);
	odb_report_put(r);
	/* single shot: the next one is counted, not reported */
	CHECK(odb_kasan_write(k, p + 121, &b, 1) == ODB_OK);
	{
		struct odb_kasan_counters ct;
		odb_kasan_counters(k, &ct);
		CHECK(ct.detections == 2 && ct.reports == 1 && ct.suppressed == 1);
	}
	odb_kernel_destroy(k);
}

static void test_quarantine(const char *cmd)
{
	odb_kernel *k = boot(cmd, 1, 64 << 20);
	struct odb_quarantine_stats s;
	odb_cache *c;
	odb_addr_t *objs;
	unsigned int n = 3 * 256 + 3;
	uint64_t pc[1];

	CHECK(odb_kmem_cache_create(k, "q", 3968, 0, 0, NULL, NULL, &c) == ODB_OK);
	objs = calloc(n, sizeof(*objs));
	for (unsigned int i = 0; i < n; i++)
		CHECK(odb_kmem_cache_alloc(k, c, ODB_GFP_KERNEL, &objs[i]) == ODB_OK);
	for (unsigned int i = 0; i < 257; i++)
		CHECK(odb_kmem_cache_free(k, c, objs[i]) == ODB_OK);
	CHECK(odb_kasan_quarantine_stats(k, &s, pc) == ODB_OK);
	CHECK(s.size == 257 * 4096 && pc[0] == 0);
	CHECK(odb_kasan_quarantine_reduce(k) == ODB_OK);
	CHECK(odb_kasan_quarantine_stats(k, &s, pc) == ODB_OK);
	CHECK(s.max_size == (64u << 20) / 32 - (1u << 20));
	if (strstr(cmd, "quarter")) {
		/* down to 3/4 of max: the walk stops at the first object past
		 * bytes - low = 257*4096 - 768 KiB */
		CHECK(s.evicted_objects == 66 && s.size == (257 - 66) * 4096);
		CHECK(s.size < (size_t)s.max_size * 3 / 4);
	} else {
		CHECK(s.evicted_objects == 257 && s.head == 1);   /* one whole batch */
	}
	for (unsigned int i = 257; i < n; i++)
		CHECK(odb_kmem_cache_free(k, c, objs[i]) == ODB_OK);
	CHECK(odb_kasan_quarantine_drain(k) == ODB_OK);
	CHECK(odb_kasan_quarantine_stats(k, &s, pc) == ODB_OK);
	CHECK(s.ring_bytes == 0 && pc[0] == 0);
	CHECK(odb_kmem_cache_destroy(k, c) == ODB_OK);
	{
		char *d = odb_dmesg(k, false);
		CHECK(d && !strstr(d, "still has objects"));   /* nothing lost */
		free(d);
	}
	free(objs);
	odb_kernel_destroy(k);
}

static void test_geometry(void)
{
	struct odb_quarantine_geometry g;

	CHECK(odb_quarantine_geometry(4ULL << 30, 4, 0, &g) == ODB_OK);
	CHECK(g.max_size == 130023424 && g.batch_size == 1048576 && g.batches == 1024 && g.slots_used == 124);
	CHECK(odb_quarantine_geometry(128ULL << 30, 32, 0, &g) == ODB_OK);
	CHECK(g.max_size == 4261412864ULL && g.batch_size == 8388608 && g.slots_used == 508);
	CHECK(odb_quarantine_geometry(1ULL << 40, 4096, 4096, &g) == ODB_OK);
	CHECK(g.max_size == 30064771072ULL && g.batch_size == 4194304 && g.batches == 16384 && g.slots_used == 7168);
	CHECK(odb_quarantine_geometry(64 << 20, 4, 0, &g) == ODB_OK && g.max_size == 0);
}

static void test_threads(void)
{
	odb_kernel *k = boot("no_debug_objects", 2, 64 << 20);
	struct odb_quarantine_storm cfg = { .ops_per_thread = 20000, .threads = 2, .live = 16,
					    .min_size = 8, .max_size = 700, .seed = 1 };
	struct odb_quarantine_storm_result r;
	struct odb_quarantine_stats s;

	CHECK(odb_quarantine_storm(k, &cfg, &r) == ODB_OK && r.ops == 40000);
	CHECK(odb_report_count(k) == 0);
	CHECK(odb_kasan_quarantine_drain(k) == ODB_OK);
	CHECK(odb_kasan_quarantine_stats(k, &s, NULL) == ODB_OK && s.ring_bytes == 0 && s.percpu_total == 0);
	odb_kernel_destroy(k);
}

/* kmem_cache_destroy() twice (issue 17): the descriptor is an object of the
 * "kmem_cache" cache in the arena, freed by the first destroy, so the second
 * one's kasan_check_byte() reports slab-use-after-free and stops; the host
 * struct stays a tombstone (ASan sees no host use-after-free). */
static void test_destroy_twice(void)
{
	odb_kernel *k = boot("no_debug_objects", 1, 32 << 20);
	odb_cache *s, *t;
	odb_addr_t p;
	const struct odb_report *r;
	size_t c;

	CHECK(k != NULL);
	CHECK(odb_kmem_cache_find(k, "kmem_cache") != NULL);
	CHECK(odb_kmem_cache_destroy(k, odb_kmem_cache_find(k, "kmem_cache")) == ODB_EINVAL);
	CHECK(odb_kmem_cache_create(k, "twice", 64, 0, 0, NULL, NULL, &s) == ODB_OK);
	CHECK(odb_kmem_cache_alloc(k, s, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kmem_cache_free(k, s, p) == ODB_OK);
	c = odb_report_count(k);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_OK && odb_report_count(k) == c);
	CHECK(odb_kmem_cache_find(k, "twice") == NULL);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_OK && odb_report_count(k) == c + 1);
	r = odb_report_get(k, c);
	CHECK(r && !strcmp(r->kind, "slab-use-after-free") && r->cache && !strcmp(r->cache, "kmem_cache") &&
	      r->size == 1 && !r->is_write);
	odb_report_put(r);
	/* every other call on the tombstone is refused */
	CHECK(odb_kmem_cache_alloc(k, s, ODB_GFP_KERNEL, &p) == ODB_ESTATE);
	/* the name is free again, and the kernel works on */
	CHECK(odb_kmem_cache_create(k, "twice", 64, 0, 0, NULL, NULL, &t) == ODB_OK && t != s);
	CHECK(odb_kmem_cache_destroy(k, t) == ODB_OK);
	odb_kernel_destroy(k);
	/* KASAN off: no report, an error, still no host access to freed memory */
	k = boot("kasan=off no_debug_objects", 1, 32 << 20);
	CHECK(k != NULL);
	CHECK(odb_kmem_cache_create(k, "twice", 64, 0, 0, NULL, NULL, &s) == ODB_OK);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_OK);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_ESTATE && odb_report_count(k) == 0);
	odb_kernel_destroy(k);
}

/* slub_kunit's "slab_errors" resource: counted, not printed (issue 17) */
static void test_slab_kunit_counting(void)
{
	odb_kernel *k = boot("kasan=off no_debug_objects", 1, 32 << 20);
	odb_cache *s;
	odb_addr_t p;
	unsigned long n = 99;
	long errors = -1;
	uint8_t *h;

	CHECK(k != NULL);
	CHECK(odb_kmem_cache_create(k, "kunit_rz", 64, 0, SLAB_RED_ZONE | SLAB_NO_USER_FLAGS, NULL, NULL,
				    &s) == ODB_OK);
	CHECK(odb_kmem_cache_alloc(k, s, ODB_GFP_KERNEL, &p) == ODB_OK);
	h = odb_host_ptr(k, p, 65);
	CHECK(h != NULL);
	h[64] = 0x12;
	CHECK(odb_slab_kunit_end(k, &n) == ODB_ESTATE);
	CHECK(odb_slab_kunit_begin(k) == ODB_OK);
	CHECK(odb_slab_kunit_begin(k) == ODB_ESTATE);
	CHECK(odb_kmem_cache_validate(k, s, &errors) == ODB_OK && errors == 2);
	CHECK(odb_slab_kunit_end(k, &n) == ODB_OK && n == 2);
	CHECK(odb_report_count(k) == 0);
	h[64] = 0x12;
	CHECK(odb_kmem_cache_validate(k, s, &errors) == ODB_OK && errors == 2 && odb_report_count(k) == 1);
	CHECK(odb_kmem_cache_free(k, s, p) == ODB_OK);
	CHECK(odb_kmem_cache_destroy(k, s) == ODB_OK);
	odb_kernel_destroy(k);
}

/* issue 17: per-kernel layouts (KASLR) and vmalloc space with its shadow */
static void test_layout_and_vmalloc(void)
{
	odb_kernel *a = odb_test_boot("kasan_multi_shot no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 32 << 20, 0);
	odb_kernel *b = odb_test_boot("kasan_multi_shot no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 32 << 20, 0);
	odb_kernel *c = odb_test_boot("nokaslr", ODB_CLOCK_VIRTUAL, 1, 32 << 20, 77);
	odb_addr_t p, v, w, pages[2];
	uint8_t sh[1100], buf[16] = { 0 };
	uint64_t free0, vfree0;
	size_t n, r;

	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	/* the same seed alive twice: the next 1 GiB slot; nokaslr takes the next
	 * free one too (the nokaslr slot is a's) */
	CHECK(odb_page_offset(a) % (1ULL << 30) == 0 && odb_page_offset(b) % (1ULL << 30) == 0);
	CHECK(odb_page_offset(a) != odb_page_offset(b));
	CHECK(odb_arena_end(a) <= odb_page_offset(b) || odb_arena_end(b) <= odb_page_offset(a));
	CHECK(odb_vmalloc_end(a) <= odb_vmalloc_start(b) || odb_vmalloc_end(b) <= odb_vmalloc_start(a));
	CHECK(odb_page_offset(c) != odb_page_offset(a) && odb_page_offset(c) != odb_page_offset(b));
	odb_kernel_destroy(c);
	/* a's object in b: refused by kfree, a wild access in b */
	CHECK(odb_kmalloc(a, 64, ODB_GFP_KERNEL, &p) == ODB_OK);
	CHECK(odb_kfree(b, p) == ODB_EINVAL);
	r = odb_report_count(b);
	CHECK(odb_kasan_write(b, p, buf, 8) == ODB_OK && !strcmp(last_kind(b, r), "wild-memory-access"));
	CHECK(odb_kfree(a, p) == ODB_OK && odb_report_count(a) == 0);
	/* vmalloc_oob */
	free0 = odb_nr_free_pages(a);
	CHECK(odb_vmalloc(a, 2035, &v) == ODB_OK && odb_vmalloc_start(a) <= v && v < odb_vmalloc_end(a));
	CHECK(odb_nr_free_pages(a) == free0 - 1 && odb_vmalloc_nr_pages(a) == 1);
	CHECK(odb_kasan_shadow(a, v, 8192, sh, &n) == ODB_OK && n == 1024);
	CHECK(sh[253] == 0 && sh[254] == 3 && sh[255] == KASAN_VMALLOC_INVALID && sh[1023] == KASAN_VMALLOC_INVALID);
	r = odb_report_count(a);
	CHECK(odb_kasan_read(a, v + 2035, buf, 1) == ODB_OK && !strcmp(last_kind(a, r), "vmalloc-out-of-bounds"));
	r = odb_report_count(a);
	CHECK(odb_kasan_read(a, v + 2040, buf, 1) == ODB_OK && !strcmp(last_kind(a, r), "vmalloc-out-of-bounds"));
	CHECK(odb_kasan_write(a, v, "vmalloc", 7) == ODB_OK && odb_host_ptr(a, v, 7) &&
	      !memcmp(odb_host_ptr(a, v, 7), "vmalloc", 7));
	CHECK(odb_virt_addr(a, odb_host_ptr(a, v + 5, 1)) == v + 5);
	CHECK(odb_host_ptr(a, v, 4097) == NULL && odb_backed(a, v + 4000, 1000) == 96);
	/* kfree of it: KASAN's invalid-free, nothing freed */
	r = odb_report_count(a);
	CHECK(odb_kfree(a, v) == ODB_OK && !strcmp(last_kind(a, r), "invalid-free"));
	CHECK(odb_nr_free_pages(a) == free0 - 1);
	CHECK(odb_vfree(a, v) == ODB_OK && odb_nr_free_pages(a) == free0 && odb_vmalloc_nr_pages(a) == 0);
	r = odb_report_count(a);
	CHECK(odb_kasan_read(a, v, buf, 1) == ODB_OK && !strcmp(last_kind(a, r), "vmalloc-out-of-bounds"));
	r = odb_report_count(a);
	CHECK(odb_vfree(a, v) == ODB_OK && !strcmp(last_kind(a, r), "Trying to vfree() nonexistent vm area"));
	/* vmap: the same memory as the direct map */
	CHECK(odb_alloc_pages(a, ODB_GFP_KERNEL, 0, &pages[0]) == ODB_OK);
	CHECK(odb_alloc_pages(a, ODB_GFP_KERNEL, 0, &pages[1]) == ODB_OK);
	vfree0 = odb_nr_free_pages(a);
	CHECK(odb_kasan_write(a, pages[1] + 8, "direct", 6) == ODB_OK);
	CHECK(odb_vmap(a, pages, 2, &w) == ODB_OK && odb_vmalloc_start(a) <= w);
	CHECK(odb_kasan_read(a, w + 4096 + 8, buf, 6) == ODB_OK && !memcmp(buf, "direct", 6));
	r = odb_report_count(a);
	CHECK(odb_kasan_read(a, w + 8192, buf, 1) == ODB_OK && !strcmp(last_kind(a, r), "vmalloc-out-of-bounds"));
	CHECK(odb_vunmap(a, w) == ODB_OK && odb_nr_free_pages(a) == vfree0);
	CHECK(odb_free_pages(a, pages[0], 0) == ODB_OK && odb_free_pages(a, pages[1], 0) == ODB_OK);
	/* kvmalloc past KMALLOC_MAX_SIZE: vmalloc space; kvfree gives it back */
	CHECK(odb_kvmalloc(a, 5 << 20, ODB_GFP_KERNEL, &w) == ODB_OK && odb_vmalloc_start(a) <= w &&
	      w < odb_vmalloc_end(a));
	CHECK(odb_kvfree(a, w) == ODB_OK && odb_nr_free_pages(a) == free0);
	odb_kernel_destroy(b);
	odb_kernel_destroy(a);
}

int main(void)
{
	test_layout_and_vmalloc();
	test_slab_kunit_counting();
	test_destroy_twice();
	test_shadow_and_rules();
	test_report_text();
	test_quarantine("no_debug_objects odebug.quarantine=batched");
	test_quarantine("no_debug_objects odebug.quarantine=quarter");
	test_geometry();
	test_threads();
	return odb_test_summary();
}
