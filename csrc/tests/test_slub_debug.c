/*
 * C unit tests of slub_debug's helpers (csrc/slab/slub_debug.c), built with the
 * core by tests/test_c_units.py (also under ASan+UBSan).
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "slab/slub.h"

static uint8_t *memchr_inv_ref(uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return p + i;
	return NULL;
}

/*
 * The word-wise memchr_inv against a byte-wise reference: every start offset
 * 0..15 (every alignment, twice), every length 0..200 (the byte-only, the
 * word and the four-word rounds, and their tails), no mismatch, and a single
 * mismatch at every position, for three fill values (0x00, the poison 0x6b, 0xff)
 * and mismatching bytes that differ in one bit or in all bits.  The buffer is
 * malloc'd to its exact end so an over-read is an ASan error.
 */
static void test_memchr_inv(void)
{
	static const uint8_t fills[] = { 0x00, 0x6b, 0xff };
	int bad = 0, runs = 0;

	for (size_t f = 0; f < sizeof(fills); f++) {
		uint8_t v = fills[f];

		for (size_t off = 0; off < 16; off++) {
			for (size_t n = 0; n <= 200; n++) {
				uint8_t *buf = malloc(off + n + 1), *p = buf + off;

				if (!buf)
					return;
				memset(buf, v, off + n);
				runs++;
				bad += memchr_inv(p, v, n) != NULL;
				for (size_t i = 0; i < n; i++) {
					for (int flip = 0; flip < 2; flip++) {
						p[i] = (uint8_t)(v ^ (flip ? 0xff : 0x10));
						runs++;
						bad += memchr_inv(p, v, n) != memchr_inv_ref(p, v, n);
						/* a second mismatch after the first: still the first */
						if (i + 3 < n) {
							p[i + 3] = (uint8_t)(v ^ 1);
							bad += memchr_inv(p, v, n) != p + i;
							p[i + 3] = v;
						}
						p[i] = v;
					}
				}
				/* the byte before the range never counts */
				if (off) {
					buf[off - 1] = (uint8_t)(v ^ 1);
					bad += memchr_inv(p, v, n) != NULL;
				}
				free(buf);
			}
		}
	}
	/* longer ranges (the AVX2 rounds of 64 bytes, where the CPU has it): a
	 * mismatch at every position of lengths 201..700 */
	for (size_t n = 201; n <= 700; n += 7) {
		uint8_t *p = malloc(n);

		if (!p)
			return;
		memset(p, 0x6b, n);
		runs++;
		bad += memchr_inv(p, 0x6b, n) != NULL;
		for (size_t i = 0; i < n; i++) {
			p[i] = 0x6a;
			runs++;
			bad += memchr_inv(p, 0x6b, n) != p + i;
			p[i] = 0x6b;
		}
		free(p);
	}
	CHECK(runs > 100000);
	CHECK_EQ(bad, 0);
}

/* A Right Redzone overwrite found by the word-wise scan is reported exactly as
 * before: first byte, range and FIX line. */
static void test_redzone_report_unchanged(void)
{
	odb_kernel *k = odb_test_boot("slub_debug=FZPU kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 42);
	odb_cache *c = NULL;
	odb_addr_t p = 0;
	const struct odb_report *rep;
	uint8_t *h;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK_EQ(odb_kmem_cache_create(k, "rz", 40, 8, 0, NULL, NULL, &c), 0);
	CHECK_EQ(odb_kmem_cache_alloc(k, c, 0xcc0, &p), 0);
	h = odb_host_ptr(k, p, 64);
	CHECK(h != NULL);
	if (h) {
		h[40 + 5] = 0x11;       /* inside the right red zone, past a word boundary */
		h[40 + 6] = 0x22;
	}
	CHECK_EQ(odb_kmem_cache_free(k, c, p), 0);
	CHECK(odb_report_count(k) >= 1);
	rep = odb_report_get(k, 0);
	CHECK(rep != NULL);
	if (rep) {
		CHECK(strcmp(rep->kind, "Right Redzone overwritten") == 0);
		CHECK_EQ(rep->addr, p + 45);
		CHECK_EQ(rep->size, 2);
		CHECK(strstr(rep->text, "First byte 0x11 instead of 0xcc") != NULL);
		odb_report_put(rep);
	}
	odb_kernel_destroy(k);
}

/*
 * check_object's plan (one pass over the slot's checked bytes) against its
 * checks one by one: for every byte of the slot, corrupted, the plan must
 * fail exactly when a check reports.  Allocated (SLUB_RED_ACTIVE) and free
 * (SLUB_RED_INACTIVE, as init_object leaves it) objects of many layouts:
 * each debug flag alone and together, odd sizes, alignments, a constructor
 * and SLAB_TYPESAFE_BY_RCU (no object poison), KASAN's metadata, and kmalloc
 * objects smaller than their cache (the kmalloc red zone, checked apart).
 */
static unsigned long plan_slots, plan_planned;

static size_t report_total(odb_kernel *k)
{
	return odb_report_count(k) + (size_t)odb_reports_dropped(k);
}

static void plan_check_slot(odb_kernel *k, struct kmem_cache *s, uint8_t *obj)
{
	struct slab *sl = virt_to_slab(k, obj);
	uint8_t *base = obj - s->red_left_pad;
	size_t len = s->size;
	uint8_t *orig = malloc(len), *snap = malloc(len);
	struct odb_task *t = odb_enter(k);

	CHECK(sl != NULL && orig && snap && t);
	if (!sl || !orig || !snap || !t) {
		free(orig);
		free(snap);
		if (t)
			odb_leave(t, 0);
		return;
	}
	plan_slots++;
	memcpy(orig, base, len);
	for (int a = 0; a < 2; a++) {
		uint8_t val = a ? SLUB_RED_INACTIVE : SLUB_RED_ACTIVE;
		bool ok = s->check_plan[a].ok;
		size_t before;

		if (a)
			init_object(s, obj, val);
		memcpy(snap, base, len);
		plan_planned += ok;
		/* intact: the plan passes where there is one, and nothing reports */
		before = report_total(k);
		CHECK_EQ(check_object_planned(s, obj, val), ok);
		CHECK_EQ(check_object_bytes(s, sl, obj, val), 1);
		CHECK_EQ(report_total(k), before);
		for (size_t i = 0; ok && i < len; i++) {
			bool planned, reported;
			int r;

			base[i] ^= 0x01;
			planned = check_object_planned(s, obj, val);
			before = report_total(k);
			r = check_object_bytes(s, sl, obj, val);
			reported = !r || report_total(k) != before;
			if (planned == reported) {
				fprintf(stderr, "%s size %u flags %#lx val %#x: byte %zu: plan %s, checks %s\n",
					s->name, s->size, (unsigned long)s->flags, val, i,
					planned ? "passes" : "fails", reported ? "report" : "pass");
			}
			CHECK(planned != reported);
			memcpy(base, snap, len);
		}
	}
	memcpy(base, orig, len);
	odb_leave(t, 0);
	free(orig);
	free(snap);
}

static void test_check_plan_matches_checks(void)
{
	static const char *const boots[] = { "kasan=off no_debug_objects", "no_debug_objects" };
	static const unsigned int flagsets[] = {
		ODB_SLAB_CONSISTENCY_CHECKS | ODB_SLAB_RED_ZONE | ODB_SLAB_POISON | ODB_SLAB_STORE_USER,
		ODB_SLAB_RED_ZONE | ODB_SLAB_POISON, ODB_SLAB_POISON, ODB_SLAB_RED_ZONE,
		ODB_SLAB_RED_ZONE | ODB_SLAB_STORE_USER, ODB_SLAB_POISON | ODB_SLAB_STORE_USER,
		ODB_SLAB_STORE_USER,
		ODB_SLAB_RED_ZONE | ODB_SLAB_POISON | ODB_SLAB_STORE_USER | ODB_SLAB_KMALLOC,
		ODB_SLAB_RED_ZONE | ODB_SLAB_POISON | ODB_SLAB_HWCACHE_ALIGN,
		ODB_SLAB_RED_ZONE | ODB_SLAB_POISON | ODB_SLAB_TYPESAFE_BY_RCU,
	};
	static const unsigned int sizes[] = { 1, 7, 8, 13, 24, 40, 64, 100, 128, 200, 500 };
	static const size_t kmallocs[] = { 1, 13, 50, 64, 100, 700 };
	unsigned int n = 0;

	for (size_t b = 0; b < sizeof(boots) / sizeof(boots[0]); b++) {
		odb_kernel *k = odb_test_boot(boots[b], ODB_CLOCK_VIRTUAL, 1, 32 << 20, 42);
		odb_kernel *kk;
		char cmd[96];

		CHECK(k != NULL);
		if (!k)
			return;
		for (size_t f = 0; f < sizeof(flagsets) / sizeof(flagsets[0]); f++) {
			for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
				odb_cache *c = NULL;
				odb_addr_t p = 0;
				char name[32];

				snprintf(name, sizeof(name), "plan%u", n++);
				if (odb_kmem_cache_create(k, name, sizes[z], f == 2 ? 16 : 0, flagsets[f],
							  NULL, NULL, &c) != ODB_OK)
					continue;
				CHECK_EQ(odb_kmem_cache_alloc(k, c, 0, &p), ODB_OK);
				if (p) {
					size_t before;

					plan_check_slot(k, c, odb_host_ptr(k, p, 1));
					/* the slot as it was: its free finds nothing */
					before = report_total(k);
					CHECK_EQ(odb_kmem_cache_free(k, c, p), ODB_OK);
					CHECK_EQ(report_total(k), before);
				}
			}
		}
		odb_kernel_destroy(k);
		/* kmalloc objects below their cache's size: the kmalloc red zone */
		snprintf(cmd, sizeof(cmd), "slub_debug=FZPU %s", boots[b]);
		kk = odb_test_boot(cmd, ODB_CLOCK_VIRTUAL, 1, 32 << 20, 42);
		CHECK(kk != NULL);
		if (!kk)
			return;
		for (size_t z = 0; z < sizeof(kmallocs) / sizeof(kmallocs[0]); z++) {
			odb_addr_t p = 0;
			uint8_t *h;

			CHECK_EQ(odb_kmalloc(kk, kmallocs[z], 0xcc0, &p), ODB_OK);
			h = p ? odb_host_ptr(kk, p, 1) : NULL;
			if (h) {
				size_t before;

				plan_check_slot(kk, virt_to_slab(kk, h)->slab_cache, h);
				before = report_total(kk);
				CHECK_EQ(odb_kfree(kk, p), ODB_OK);
				CHECK_EQ(report_total(kk), before);
			}
		}
		odb_kernel_destroy(kk);
	}
	/* the plans are there to be compared: most of these layouts have one */
	CHECK(plan_slots >= 200);
	CHECK(plan_planned * 10 >= plan_slots * 2 * 8);
}

/* slab_div (x / size by a multiply-high) against the division: every slot
 * size up to 64 KiB with offsets around each multiple up to an order-10
 * slab and the slab sizes themselves, and random sizes below 4 MiB with
 * random 32-bit offsets. */
static void test_slab_div(void)
{
	struct kmem_cache s;
	unsigned long long rng = 0x9e3779b97f4a7c15ULL, bad = 0, runs = 0;

	memset(&s, 0, sizeof(s));
	for (unsigned int size = 8; size <= 65536; size += 8) {
		s.size = size;
		s.size_recip = slab_size_recip(size);
		for (uint64_t m = 1; m * size <= (PAGE_SIZE << 10); m = m * 3 + 1)
			for (int d = -1; d <= 1; d++) {
				uint64_t x = m * size + (uint64_t)(int64_t)d;

				runs++;
				bad += slab_div(&s, x) != x / size;
			}
		for (unsigned int o = 0; o <= 10; o++) {
			uint64_t x = PAGE_SIZE << o;

			runs++;
			bad += slab_div(&s, x) != x / size || slab_div(&s, x - 1) != (x - 1) / size;
		}
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t x;

		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		s.size = 8 + (unsigned int)(rng % (4u << 20));
		s.size_recip = slab_size_recip(s.size);
		x = (rng >> 20) & 0xffffffffULL;
		runs++;
		bad += slab_div(&s, x) != x / s.size;
	}
	CHECK(runs > 300000);
	CHECK_EQ(bad, 0);
}

int main(void)
{
	test_slab_div();
	test_memchr_inv();
	test_redzone_report_unchanged();
	test_check_plan_matches_checks();
	return odb_test_summary();
}
