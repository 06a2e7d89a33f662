"""The public C API from a program linked with libodebug.so, as a user builds it.

Only there does the KASAN fast paths' inline stack look-up run
(``stack_depot_save_tmpl_recent``: the API function's caller lies outside
odebug's text, which it never does for the Python binding or the C unit
tests, built into one module with the core).  A seeded workload -- sizes
across the kmalloc caches, GFP_KERNEL / GFP_ATOMIC / __GFP_ZERO, random frees,
bursts freed together, double and invalid frees, use-after-free reads -- runs
on two kernels booted alike: one without a frame hook (the inline look-up
answers most saves) and one with a hook that never gives a location (the same
records, through the out-of-line save every time).  The arena (objects, free
pointers, KASAN metadata with its stack handles), dmesg and every stack
record must be the same.
"""
import os
import subprocess

import pytest

import odebug

PROGRAM = r"""
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <odebug/odebug.h>

#define LIVE 400
static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static bool no_location(void *ctx, char *buf, size_t len)
{
	(void)ctx; (void)buf; (void)len;
	return false;
}

static __attribute__((noinline)) int do_alloc(odb_kernel *k, size_t n, unsigned int gfp,
					       odb_addr_t *a)
{
	int r = odb_kmalloc(k, n, gfp, a);
	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline)) int do_free(odb_kernel *k, odb_addr_t a)
{
	int r = odb_kfree(k, a);
	__asm__ volatile("" ::: "memory");
	return r;
}

struct snap {
	unsigned char *arena, *skip;
	size_t len;
	char *dmesg, *stacks;
	uint64_t depot, results;
};

static char *append(char *s, size_t *n, const char *t)
{
	size_t m = strlen(t);
	char *p = realloc(s, *n + m + 1);

	if (!p)
		abort();
	memcpy(p + *n, t, m + 1);
	*n += m;
	return p;
}

static void run(bool hook, struct snap *s)
{
	static const unsigned int gfps[] = { ODB_GFP_KERNEL, ODB_GFP_KERNEL, ODB_GFP_ATOMIC,
					     ODB_GFP_KERNEL | ODB_GFP_ZERO };
	odb_addr_t live[LIVE] = { 0 }, freed[64] = { 0 }, a;
	struct odb_config cfg;
	unsigned int nfreed = 0;
	unsigned char buf[8];
	char err[256];
	size_t n = 0;
	odb_kernel *k;
	void *base;

	odb_config_init(&cfg);
	cfg.cpus = 2;
	cfg.ram = 64ull << 20;
	cfg.seed = 5;
	cfg.cmdline = "kasan_multi_shot";
	if (odb_kernel_create(&cfg, &k, err, sizeof(err))) {
		fprintf(stderr, "boot: %s\n", err);
		exit(2);
	}
	odb_bind_cpu(k, 0, NULL);
	if (hook)
		odb_set_frame_hook(k, no_location, NULL);
	rs = 88172645463325252ULL;
	s->results = 0;
	for (int i = 0; i < 150000; i++) {
		uint64_t r = rnd();
		unsigned int slot = (unsigned int)(r % LIVE), op = (unsigned int)((r >> 16) % 200);
		int rc = 0;

		if (op == 0 && nfreed) {
			rc = do_free(k, freed[(r >> 32) % nfreed]);              /* double free */
		} else if (op == 1 && nfreed) {
			rc = odb_kasan_read(k, freed[(r >> 32) % nfreed], buf, 1);   /* use after free */
		} else if (op == 2 && live[slot]) {
			rc = do_free(k, live[slot] + 8);                          /* invalid free */
		} else if (op == 3) {
			/* a burst: allocated together, freed together */
			odb_addr_t b[48];
			unsigned int m = 0;
			size_t size = 1 + (r >> 40) % 512;

			while (m < 48 && do_alloc(k, size, ODB_GFP_KERNEL, &b[m]) == ODB_OK)
				m++;
			while (m)
				s->results = s->results * 31 + (uint64_t)do_free(k, b[--m]);
		} else if (live[slot]) {
			rc = do_free(k, live[slot]);
			freed[nfreed < 64 ? nfreed++ : (r >> 40) % 64] = live[slot];
			live[slot] = 0;
		} else {
			rc = do_alloc(k, 1 + (r >> 40) % 1024, gfps[(r >> 56) % 4], &live[slot]);
		}
		s->results = s->results * 31 + (uint64_t)rc;
	}
	for (unsigned int i = 0; i < LIVE; i++)
		if (live[i])
			s->results = s->results * 31 + (uint64_t)do_free(k, live[i]);
	(void)do_alloc(k, 64, ODB_GFP_KERNEL, &a);   /* (an allocation after the frees) */

	if (odb_host_region(k, ODB_REGION_ARENA, &base, &s->len))
		exit(2);
	s->arena = malloc(s->len);
	if (!s->arena)
		abort();
	memcpy(s->arena, base, s->len);
	/* debug objects' trackers link by host references: their pages differ
	 * between any two kernels */
	s->skip = calloc(s->len >> 12, 1);
	if (!s->skip)
		abort();
	for (size_t pg = 0; pg < s->len >> 12; pg++) {
		odb_cache *c, *dc = odb_kmem_cache_find(k, "debug_objects_cache");
		odb_addr_t o;

		s->skip[pg] = dc && odb_slab_object(k, odb_arena_start(k) + (pg << 12), &c, &o) == ODB_OK &&
			      c == dc;
	}
	s->dmesg = odb_dmesg(k, false);
	s->depot = odb_stack_depot_count(k);
	s->stacks = NULL;
	for (uint64_t h = 1; h <= s->depot; h++) {
		char *t = odb_stack_text(k, (uint32_t)h);

		s->stacks = append(s->stacks, &n, t ? t : "(none)\n");
		free(t);
	}
	odb_set_frame_hook(k, NULL, NULL);
	odb_kernel_destroy(k);
}

int main(void)
{
	struct snap a, b;
	size_t d = 0;

	run(false, &a);
	run(true, &b);
	if (a.len == b.len)
		while (d < a.len && (a.skip[d >> 12] || b.skip[d >> 12] || a.arena[d] == b.arena[d]))
			d++;
	printf("depot %llu %llu\n", (unsigned long long)a.depot, (unsigned long long)b.depot);
	printf("arena %zu %zu first difference %zu\n", a.len, b.len, d);
	printf("results %d\n", a.results == b.results);
	printf("dmesg %d %zu\n", !strcmp(a.dmesg, b.dmesg), strlen(a.dmesg));
	printf("stacks %d\n", !strcmp(a.stacks, b.stacks));
	printf("double-free %d\n", strstr(a.dmesg, "BUG: KASAN: double-free") != NULL);
	printf("invalid-free %d\n", strstr(a.dmesg, "BUG: KASAN: invalid-free") != NULL);
	printf("use-after-free %d\n", strstr(a.dmesg, "BUG: KASAN: slab-use-after-free") != NULL);
	return 0;
}
"""


def test_inline_stack_lookup_changes_nothing(tmp_path):
    src = tmp_path / "linked.c"
    src.write_text(PROGRAM)
    lib = odebug.get_library()
    libdir = os.path.dirname(lib)
    exe = tmp_path / "linked"
    cc = subprocess.run(["gcc", "-std=c11", "-O2", "-g", "-fno-omit-frame-pointer", "-Wall",
                         "-Werror", "-I", odebug.get_include(), str(src), "-o", str(exe),
                         "-L", libdir, "-l:" + os.path.basename(lib),
                         "-Wl,-rpath," + libdir], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    depot = out["depot"].split()
    assert depot[0] == depot[1] and int(depot[0]) >= 6
    size_a, size_b, _, _, first = out["arena"].split()
    assert size_a == size_b and first == size_a, f"the arenas differ at offset {first}"
    assert out["results"] == "1"
    assert out["dmesg"].split()[0] == "1" and int(out["dmesg"].split()[1]) > 1000
    assert out["stacks"] == "1"
    # the workload made reports of each kind, with their alloc and free stacks
    assert out["double-free"] == out["invalid-free"] == out["use-after-free"] == "1"


if __name__ == "__main__":
    pytest.main([__file__, "-v"])
