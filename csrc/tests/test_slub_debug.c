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

int main(void)
{
	test_memchr_inv();
	test_redzone_report_unchanged();
	return odb_test_summary();
}
