/*
 * The public API's KASAN fast paths (issue 16) change nothing observable: one
 * seeded workload of odb_kmalloc/odb_kfree (sizes across every kmalloc cache
 * and past them, GFP_KERNEL / GFP_ATOMIC / __GFP_ZERO / GFP_NOWAIT, frees in
 * random order, double and invalid frees, use-after-free and out-of-bounds
 * reads, quarantine flushes and evictions, a Python-style frame hook on and
 * off), run on a kernel whose kmalloc caches take the fast paths and on one
 * whose caches never do, leaves the same arena bytes (objects, free pointers,
 * KASAN's metadata with its stack handles), the same shadow, the same stack
 * records (symbolised), dmesg, slabinfo, SLUB and quarantine statistics.
 * Built with the core by tests/test_c_units.py (also under ASan+UBSan, TSan).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check.h"
#include "slab/slub.h"
#include "kasan/kasan.h"

struct snapshot {
	unsigned char *ram, *shadow, *skip;
	size_t ram_bytes, shadow_bytes;
	char *dmesg, *slabinfo, *stacks, *qstats, *stats;
	uint64_t depot, results;      /* a hash of every call's result and error message */
	unsigned long runs[2];        /* objects the quarantine freed in runs (slub.h free_run_objs) */
	unsigned int enomem;
	unsigned int tmpls;
};


static uint64_t rng_state;
static _Thread_local uint64_t results;      /* (the churn threads call the helpers too) */
static _Thread_local unsigned int enomem;

static void note_result(odb_kernel *k, int r, odb_addr_t a)
{
	const char *m = r ? odb_strerror(k) : "";

	results = (results ^ (uint64_t)(int64_t)r ^ (a ? 1 : 0)) * 0x100000001b3ULL;
	for (; *m; m++)
		results = (results ^ (unsigned char)*m) * 0x100000001b3ULL;
	enomem += r == ODB_ENOMEM;
}
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static char *append(char *s, const char *t)
{
	size_t a = s ? strlen(s) : 0, b = strlen(t);
	char *n = realloc(s, a + b + 1);

	if (!n)
		abort();
	memcpy(n + a, t, b + 1);
	return n;
}

/* Every kmalloc cache's SLUB statistics as text lines; returns the sum of
 * their free_slowpath counts. */
static uint64_t kmalloc_stats(odb_kernel *k, char **text)
{
	uint64_t slow = 0;
	char line[256];

	CHECK(odb_slub_stat_count() <= 64);
	for (unsigned int i = 0; i <= KMALLOC_SHIFT_HIGH; i++) {
		struct kmem_cache *c = slab_state(k)->kmalloc_caches[i];
		uint64_t v[64] = { 0 };

		if (!c)
			continue;
		CHECK_EQ(odb_kmem_cache_stats(k, c, v, NULL), 0);
		for (unsigned int j = 0; j < odb_slub_stat_count(); j++) {
			snprintf(line, sizeof(line), "%s %s %llu\n", c->name, odb_slub_stat_name(j),
				 (unsigned long long)v[j]);
			*text = append(*text, line);
		}
		slow += v[FREE_SLOWPATH];
	}
	return slow;
}

/* Two call sites a caller would have: an alloc and a free helper each. */
static __attribute__((noinline)) int do_alloc(odb_kernel *k, size_t size, unsigned int gfp,
					       odb_addr_t *out)
{
	int r = odb_kmalloc(k, size, gfp, out);
	__asm__ volatile("" ::: "memory");
	note_result(k, r, *out);
	return r;
}

static __attribute__((noinline)) int do_free(odb_kernel *k, odb_addr_t a)
{
	int r = odb_kfree(k, a);
	__asm__ volatile("" ::: "memory");
	note_result(k, r, 0);
	return r;
}

#define LIVE 600

/*
 * Objects allocated together and freed together: their quarantine entries
 * follow each other and share slabs, so evictions free them in runs
 * (do_slab_free_run) onto the vCPU's slab, onto frozen slabs, onto partial
 * ones, emptying them or not, and from full ones (the run's first free moves
 * the slab).  Some are kept a while, some freed in reverse or every other.
 */
static odb_addr_t burst_kept[32];

static void burst(odb_kernel *k, uint64_t r)
{
	static const size_t sizes[] = { 8, 64, 96, 192, 512, 1024, 1500, 4096 };
	odb_addr_t a[120];
	unsigned int n = 8 + (unsigned int)((r >> 8) % 112), got = 0, mode = (unsigned int)(r >> 20) % 3;
	size_t size = sizes[(r >> 40) % 8];

	for (unsigned int i = 0; i < n; i++)
		if (do_alloc(k, size, ODB_GFP_KERNEL, &a[got]) == ODB_OK)
			got++;
	for (unsigned int i = 0; i < got; i++) {
		unsigned int j = mode == 0 ? i : mode == 1 ? got - 1 - i
				 : (2 * i < got ? 2 * i : 2 * (i - (got + 1) / 2) + 1);

		if ((r >> (i % 48)) % 11 == 0) {
			unsigned int kept = (unsigned int)((r >> 3) + i) % 32;

			if (burst_kept[kept])
				(void)do_free(k, burst_kept[kept]);
			burst_kept[kept] = a[j];
		} else {
			(void)do_free(k, a[j]);
		}
	}
}

static void workload(odb_kernel *k, uint64_t seed, int steps, size_t small, bool kasan)
{
	static const unsigned int gfps[] = { ODB_GFP_KERNEL, ODB_GFP_KERNEL, ODB_GFP_KERNEL,
					     ODB_GFP_ATOMIC, ODB_GFP_KERNEL | ODB_GFP_ZERO,
					     ODB_GFP_NOWAIT };
	static const char *locs[] = { NULL, "w.py:10:f", "w.py:11:f", "v.py:3:g" };
	odb_addr_t live[LIVE] = { 0 }, freed[64] = { 0 };
	size_t nfreed = 0;
	unsigned char buf[16];

	rng_state = seed;
	results = 0;
	enomem = 0;
	for (int i = 0; i < steps; i++) {
		uint64_t r = rnd();
		unsigned int slot = (unsigned int)(r % LIVE), op = (unsigned int)((r >> 16) % 100);

		test_py_loc = locs[(r >> 24) % 4];
		if (!kasan && (op < 2 || op == 3))
			op = 4;   /* no KASAN: no double free (it would corrupt the freelist) nor checked read */
		if (op < 2 && nfreed) {
			/* a double free, or a use after free */
			odb_addr_t a = freed[(r >> 32) % nfreed];
			if (op == 0)
				(void)do_free(k, a);
			else
				(void)odb_kasan_read(k, a, buf, 1);
		} else if (op < 3 && live[slot]) {
			(void)do_free(k, live[slot] + 8);          /* an invalid free */
		} else if (op < 4 && live[slot]) {
			(void)odb_kasan_read(k, live[slot], buf, 16);   /* maybe out of bounds */
		} else if (op == 4 && (r >> 32) % 16 == 0) {
			burst(k, r);
		} else if (live[slot]) {
			(void)do_free(k, live[slot]);
			freed[nfreed < 64 ? nfreed++ : (r >> 40) % 64] = live[slot];
			live[slot] = 0;
		} else {
			size_t size = (r >> 40) % 8 == 0 ? 1 + (r >> 44) % 9000 : 1 + (r >> 44) % small;
			(void)do_alloc(k, size, gfps[(r >> 56) % 6], &live[slot]);
		}
	}
	test_py_loc = NULL;
	for (unsigned int i = 0; i < LIVE; i++)
		if (live[i])
			(void)do_free(k, live[i]);
	for (unsigned int i = 0; i < 32; i++)
		if (burst_kept[i])
			(void)do_free(k, burst_kept[i]);
	memset(burst_kept, 0, sizeof(burst_kept));
}

static void take(odb_kernel *k, struct snapshot *s)
{
	struct kasan_state *ks = kasan_state(k);
	struct odb_quarantine_stats q;

	s->ram_bytes = k->ram_bytes;
	s->ram = malloc(s->ram_bytes);
	s->shadow_bytes = ks->shadow_size;
	s->shadow = malloc(s->shadow_bytes);
	if (!s->ram || !s->shadow)
		abort();
	memcpy(s->ram, k->ram, s->ram_bytes);
	/* debug objects' trackers link by host references (checked before they
	 * are followed, debugobjects.c): their pages differ between any two
	 * kernels, fast paths or not */
	s->skip = calloc(s->ram_bytes >> PAGE_SHIFT, 1);
	if (!s->skip)
		abort();
	for (size_t pg = 0; pg < s->ram_bytes >> PAGE_SHIFT; pg++) {
		struct slab *sl = virt_to_slab(k, k->ram + (pg << PAGE_SHIFT));

		s->skip[pg] = sl && sl->slab_cache && !strcmp(sl->slab_cache->name, "debug_objects_cache");
	}
	memcpy(s->shadow, ks->shadow, s->shadow_bytes);
	s->dmesg = odb_dmesg(k, false);
	s->slabinfo = odb_slabinfo_text(k);
	s->depot = odb_stack_depot_count(k);
	s->results = results;
	s->enomem = enomem;
	s->stacks = NULL;
	for (uint64_t h = 1; h <= s->depot; h++) {
		char *t = odb_stack_text(k, (uint32_t)h);
		s->stacks = append(s->stacks, t ? t : "(none)\n");
		free(t);
	}
	memset(&q, 0, sizeof(q));
	CHECK_EQ(odb_kasan_quarantine_stats(k, &q, NULL), 0);
	s->qstats = malloc(sizeof(q));
	if (!s->qstats)
		abort();
	memcpy(s->qstats, &q, sizeof(q));
	s->stats = NULL;
	(void)kmalloc_stats(k, &s->stats);
	s->runs[0] = s->runs[1] = 0;
	for (unsigned int i = 0; i <= KMALLOC_SHIFT_HIGH; i++) {
		struct kmem_cache *c = slab_state(k)->kmalloc_caches[i];

		for (unsigned int j = 0; c && j < 2; j++)
			s->runs[j] += atomic_load(&c->free_run_objs[j]);
	}
	s->tmpls = 0;
	for (size_t i = 0; i < sizeof(ks->tmpl) / sizeof(ks->tmpl[0]); i++)
		s->tmpls += atomic_load(&ks->tmpl[i].key) != 0;
}

static void drop(struct snapshot *s)
{
	free(s->ram);
	free(s->skip);
	free(s->shadow);
	free(s->dmesg);
	free(s->slabinfo);
	free(s->stacks);
	free(s->qstats);
	free(s->stats);
}

/* compare()'s kernels run with a Python-style frame hook, but for one
 * variant without any (its records have no Python location at all).  The
 * saves' inline look-up (stack_depot_save_tmpl_recent) never answers here:
 * this program's frames are in the core's module; tests/test_api_linked.py
 * runs it from a program linked with libodebug.so. */
static bool run_hook = true;

static void run(bool fast, uint64_t seed, const char *cmdline, uint64_t ram, struct snapshot *s)
{
	odb_kernel *k = odb_test_boot(cmdline, ODB_CLOCK_VIRTUAL, 2, ram, seed);

	CHECK(k != NULL);
	if (!k)
		abort();
	CHECK_EQ(odb_bind_cpu(k, 0, NULL), 0);
	if (run_hook)
		odb_set_frame_hook(k, test_py_hook, NULL);
	for (unsigned int i = 0; i <= KMALLOC_SHIFT_HIGH; i++) {
		struct kmem_cache *c = slab_state(k)->kmalloc_caches[i];

		if (c && !fast) {
			c->api_kasan_fast = false;
			c->free_runs = false;   /* and the quarantine frees one object at a time */
		}
		if (c && c->size >= 1024 && c->size < 2048)
			c->cpu_partial = 0;     /* both kernels: a freed-to slab is unfrozen at once */
	}
	if (ram < (16 << 20)) {
		/* ballast: all but ~1 MiB of the small kernel's memory in 64 KiB blocks */
		odb_addr_t a, keep[512];
		int n = 0;

		while (n < 512 && odb_kmalloc(k, 65536, ODB_GFP_KERNEL | ODB_GFP_NOWARN, &a) == ODB_OK)
			keep[n++] = a;
		for (int i = 0; i < 16 && n; i++)
			CHECK_EQ(odb_kfree(k, keep[--n]), ODB_OK);
	}
	workload(k, seed, 60000, ram < (16 << 20) ? 8000 : 300, true);
	take(k, s);

	odb_set_frame_hook(k, NULL, NULL);
	odb_kernel_destroy(k);
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return n;
}

static void compare(const char *cmdline, uint64_t seed, uint64_t ram, bool oom)
{
	struct snapshot f, s;

	/* one call site for both: the C frames of this program are in the walk */
	volatile int rounds = 2;
	for (int i = 0; i < rounds; i++)
		run(i == 0, seed, cmdline, ram, i == 0 ? &f : &s);
	/* the fast kernel did use fast paths: it captured templates (the slow one
	 * captures them too, but never uses them) */
	CHECK(f.tmpls >= 2);
	CHECK_EQ(f.ram_bytes, s.ram_bytes);
	if (f.ram_bytes == s.ram_bytes) {
		size_t d = f.ram_bytes;

		for (size_t pg = 0; pg < f.ram_bytes >> PAGE_SHIFT && d == f.ram_bytes; pg++) {
			size_t o = pg << PAGE_SHIFT, i;

			if (f.skip[pg] || s.skip[pg])
				continue;
			i = first_diff(f.ram + o, s.ram + o, PAGE_SIZE);
			if (i != PAGE_SIZE)
				d = o + i;
		}
		if (d != f.ram_bytes)
			fprintf(stderr, "[%s] arena differs at offset %zu\n", cmdline, d);
		CHECK(d == f.ram_bytes);
	}
	CHECK_EQ(f.shadow_bytes, s.shadow_bytes);
	if (f.shadow_bytes == s.shadow_bytes) {
		size_t d = first_diff(f.shadow, s.shadow, f.shadow_bytes);
		if (d != f.shadow_bytes)
			fprintf(stderr, "[%s] shadow differs at offset %zu\n", cmdline, d);
		CHECK(d == f.shadow_bytes);
	}
	/* the quarantine freed runs on the fast kernel, none on the other */
	if (!oom)
		CHECK(f.runs[0] > 100 && f.runs[1] > 1000);
	CHECK(s.runs[0] == 0 && s.runs[1] == 0);
	CHECK_EQ(f.depot, s.depot);
	CHECK_EQ(f.results, s.results);
	CHECK_EQ(f.enomem, s.enomem);
	if (oom)
		CHECK(f.enomem > 0);   /* the kernel ran out of memory, on both paths alike */
	CHECK(!strcmp(f.stacks, s.stacks));
	CHECK(!strcmp(f.dmesg, s.dmesg));
	CHECK(!strcmp(f.slabinfo, s.slabinfo));
	CHECK(!strcmp(f.stats, s.stats));
	{
		/* all but the timings (host time: free_ns_*, lock_ns_*, lock_wait_*) */
		struct odb_quarantine_stats *a = (void *)f.qstats, *b = (void *)s.qstats;

		a->free_ns_max = a->free_ns_p50 = a->free_ns_p99 = a->free_ns_total = 0;
		b->free_ns_max = b->free_ns_p50 = b->free_ns_p99 = b->free_ns_total = 0;
		a->lock_ns_max = a->lock_ns_p50 = a->lock_ns_p99 = a->lock_ns_total = 0;
		b->lock_ns_max = b->lock_ns_p50 = b->lock_ns_p99 = b->lock_ns_total = 0;
		a->lock_wait_ns_total = a->lock_wait_ns_max = 0;
		b->lock_wait_ns_total = b->lock_wait_ns_max = 0;
		CHECK(!memcmp(a, b, sizeof(*a)));
		if (!oom)
		CHECK(a->put_calls > 10000 && a->evicted_objects > 1000 && a->flushes > 10);
	}
	/* and the workload did what it is meant to: reports of each kind (the
	 * small kernel's ring is full of allocation failures) */
	if (!oom) {
		CHECK(strstr(f.dmesg, "BUG: KASAN: double-free") != NULL);
		CHECK(strstr(f.dmesg, "BUG: KASAN: invalid-free") != NULL);
		CHECK(strstr(f.dmesg, "BUG: KASAN: slab-use-after-free") != NULL);
	}
	drop(&f);
	drop(&s);
}

/*
 * Threads: two threads on the two vCPUs allocate, free their own objects and
 * the other's (a shared ring), through the fast paths and the slow ones
 * (quarantine flushes and evictions, remote frees); then no report, every
 * object back in the quarantine's books (put_calls - evicted = quarantined),
 * one stack record per call site and Python location.  Under TSan (CI) this
 * is the fast paths' race check.
 */
struct churn {
	odb_kernel *k;
	int cpu;
	_Atomic odb_addr_t *ring;
	unsigned int bad;
};

#define RING 256

static void *churn_main(void *arg)
{
	struct churn *c = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(c->cpu + 1);

	if (odb_bind_cpu(c->k, c->cpu, NULL)) {
		c->bad++;
		return NULL;
	}
	for (int i = 0; i < 40000; i++) {
		odb_addr_t a, old;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (do_alloc(c->k, 1 + x % 512, ODB_GFP_KERNEL, &a) != ODB_OK) {
			c->bad++;
			continue;
		}
		old = atomic_exchange(&c->ring[(x >> 20) % RING], a);
		if (old && do_free(c->k, old) != ODB_OK)
			c->bad++;
	}
	return NULL;
}

/* Two threads, one a vCPU, churn through k (churn_main); then what they
 * left in the ring is freed. */
static void churn(odb_kernel *k)
{
	_Atomic odb_addr_t ring[RING];
	struct churn c[2];
	pthread_t th[2];

	for (int i = 0; i < RING; i++)
		atomic_init(&ring[i], 0);
	for (int i = 0; i < 2; i++) {
		c[i] = (struct churn){ .k = k, .cpu = i, .ring = ring };
		CHECK_EQ(pthread_create(&th[i], NULL, churn_main, &c[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(c[0].bad + c[1].bad, 0);
	for (int i = 0; i < RING; i++)
		if (atomic_load(&ring[i]))
			CHECK_EQ(do_free(k, atomic_load(&ring[i])), ODB_OK);
}

static void test_threads(void)
{
	odb_kernel *k = odb_test_boot("", ODB_CLOCK_VIRTUAL, 2, 64 << 20, 11);
	struct odb_quarantine_stats q;
	uint64_t objs = 0, bytes = 0, other[2] = { 0, 0 }, before;

	CHECK(k != NULL);
	if (!k)
		return;
	before = odb_stack_depot_count(k);
	churn(k);
	CHECK(!dmesg_has(k, "] BUG: ") && !dmesg_has(k, "] WARNING: "));   /* (not "ODEBUG:") */
	CHECK_EQ(odb_kasan_quarantine_stats(k, &q, NULL), 0);
	CHECK_EQ(odb_kasan_quarantine_count(k, NULL, 0, &objs, &bytes, other), 0);
	CHECK_EQ(q.put_calls - q.evicted_objects - q.remove_cache_objects - q.offline_objects,
		 other[0]);
	CHECK(q.evicted_objects > 1000);
	/* the alloc and the free call sites, from each thread's frames: a few records */
	CHECK(odb_stack_depot_count(k) - before <= 8);
	odb_kernel_destroy(k);
}

/*
 * The no-debug fast paths (kasan=off no_debug_objects): odb_kfree of an object
 * of another slab than the vCPU's runs __slab_free itself (kfree_remote_fast),
 * odb_kmalloc pops the per-vCPU freelist.  The same seeded workload (invalid
 * frees included: the full path reports them) on a kernel with the API's fast
 * paths and on one without (k->api_fast off: every call the full path) leaves
 * the same arena, dmesg, slabinfo and SLUB statistics, and every call the same
 * result; the fast kernel took the remote free (free_slowpath counted on it,
 * the same as on the slow one).
 */
static void run_nodebug(bool fast, uint64_t seed, struct snapshot *s)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 2, 64 << 20,
				      seed);

	CHECK(k != NULL);
	if (!k)
		abort();
	CHECK_EQ(odb_bind_cpu(k, 0, NULL), 0);
	if (!fast)
		atomic_store(&k->api_fast, false);
	workload(k, seed, 60000, 2000, false);
	memset(s, 0, sizeof(*s));
	s->ram_bytes = k->ram_bytes;
	s->ram = malloc(s->ram_bytes);
	if (!s->ram)
		abort();
	memcpy(s->ram, k->ram, s->ram_bytes);
	s->dmesg = odb_dmesg(k, false);
	s->slabinfo = odb_slabinfo_text(k);
	s->results = results;
	s->enomem = (unsigned int)kmalloc_stats(k, &s->stats);   /* (here: the remote frees) */
	odb_kernel_destroy(k);
}

static void compare_nodebug(uint64_t seed)
{
	struct snapshot f, s;
	volatile int rounds = 2;   /* one call site for both */

	for (int i = 0; i < rounds; i++)
		run_nodebug(i == 0, seed, i == 0 ? &f : &s);
	CHECK(f.enomem > 1000);              /* many frees went to another slab */
	CHECK_EQ(f.enomem, s.enomem);
	CHECK_EQ(f.results, s.results);
	CHECK_EQ(f.ram_bytes, s.ram_bytes);
	if (f.ram_bytes == s.ram_bytes) {
		size_t d = first_diff(f.ram, s.ram, f.ram_bytes);

		if (d != f.ram_bytes)
			fprintf(stderr, "[no-debug] arena differs at offset %zu\n", d);
		CHECK(d == f.ram_bytes);
	}
	CHECK(!strcmp(f.dmesg, s.dmesg));
	CHECK(strstr(f.dmesg, "Invalid object pointer") != NULL);   /* the full path's reports */
	CHECK(!strcmp(f.slabinfo, s.slabinfo));
	CHECK(!strcmp(f.stats, s.stats));
	drop(&f);
	drop(&s);
}

/* Two threads free each other's objects on a no-debug kernel: remote frees
 * through kfree_remote_fast racing the other vCPU's fast paths (TSan in CI);
 * no report, every cache validates, every object came back. */
static void test_threads_nodebug(void)
{
	odb_kernel *k = odb_test_boot("kasan=off no_debug_objects", ODB_CLOCK_VIRTUAL, 2, 64 << 20, 12);
	uint64_t remote = 0;
	long errors = 0;

	CHECK(k != NULL);
	if (!k)
		return;
	churn(k);
	CHECK(!dmesg_has(k, "] BUG ") && !dmesg_has(k, "] BUG: ") && !dmesg_has(k, "] WARNING: "));
	for (unsigned int i = 0; i <= KMALLOC_SHIFT_HIGH; i++) {
		struct kmem_cache *s = slab_state(k)->kmalloc_caches[i];
		uint64_t v[64] = { 0 };
		long e = 0;

		if (!s)
			continue;
		CHECK_EQ(odb_kmem_cache_validate(k, s, &e), 0);
		errors += e;
		CHECK_EQ(odb_kmem_cache_stats(k, s, v, NULL), 0);
		remote += v[FREE_SLOWPATH];
		/* every object allocated came back: none in use once the vCPUs' slabs
		 * are back on the node */
		{
			struct odb_cache_info info;

			CHECK_EQ(odb_kmem_cache_flush(k, s), 0);
			CHECK_EQ(odb_kmem_cache_info(k, s, &info), 0);
			CHECK_EQ(info.active_objs, 0);
		}
	}
	CHECK_EQ(errors, 0);
	CHECK(remote > 1000);
	odb_kernel_destroy(k);
}

int main(void)
{
	test_threads();
	test_threads_nodebug();
	compare_nodebug(13);
	compare("kasan_multi_shot", 7, 64 << 20, false);
	compare("kasan_multi_shot no_debug_objects", 8, 64 << 20, false);
	compare("kasan_multi_shot odebug.quarantine=quarter", 9, 64 << 20, false);
	run_hook = false;
	compare("kasan_multi_shot", 11, 64 << 20, false);
	run_hook = true;
	/* a small kernel: new slabs fail, the refill's ENOMEM is the slow path's */
	compare("kasan_multi_shot", 10, 4 << 20, true);
	return odb_test_summary();
}
