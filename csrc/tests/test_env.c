/*
 * C unit tests of the kernel environment (csrc/kernel/), built together with
 * the core by tests/test_c_units.py (also under ASan+UBSan and TSan).
 * Prints "N passed, M failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "tests/check.h"

static odb_kernel *boot(const char *cmdline, enum odb_clock_kind clock, unsigned cpus, uint64_t ram)
{
	return odb_test_boot(cmdline, clock, cpus, ram, 42);
}

static void test_cmdline(void)
{
	odb_kernel *k = boot("a \"b=x y\" c=\"1 2\" hz=250 mod.p=3 HOME=/r d -- e f=1", ODB_CLOCK_VIRTUAL, 1, 8 << 20);
	struct odb_config cfg;
	char err[256];
	odb_kernel *bad = NULL;

	CHECK(k != NULL);
	if (!k)
		return;
	CHECK(odb_hz(k) == 250);
	CHECK(odb_jiffies(k) == 4294892296ULL);
	CHECK(dmesg_has(k, "Kernel command line: a \"b=x y\""));
	CHECK(dmesg_has(k, "Unknown kernel command line parameters \"a d b=x y c=1 2\", will be passed to user space."));
	odb_kernel_destroy(k);

	odb_config_init(&cfg);
	cfg.cmdline = "hz=fast";
	CHECK(odb_kernel_create(&cfg, &bad, err, sizeof(err)) == ODB_EINVAL);
	CHECK(bad == NULL);
	CHECK(strstr(err, "hz") != NULL);
	cfg.cmdline = "failslab=1,2,3";
	CHECK(odb_kernel_create(&cfg, &bad, err, sizeof(err)) == ODB_EINVAL);
	CHECK(strstr(err, "failslab") != NULL);
	cfg.cmdline = "odebug.nonsense=1";
	CHECK(odb_kernel_create(&cfg, &bad, err, sizeof(err)) == ODB_EINVAL);
	cfg.cmdline = "panic-on-warn=1";
	CHECK(odb_kernel_create(&cfg, &bad, err, sizeof(err)) == ODB_OK);
	if (bad) {
		char *v = odb_param_get(bad, "panic_on_warn");
		CHECK(v && !strcmp(v, "1"));
		free(v);
		CHECK(odb_report_simple(bad, "kernel", "WARNING", "boom") == ODB_EBUG);
		{
			const struct odb_report *r = odb_last_bug(bad);
			CHECK(r && !strcmp(r->kind, "WARNING"));
			odb_report_put(r);
		}
		CHECK(dmesg_has(bad, "Kernel panic - not syncing: kernel: panic_on_warn set ..."));
		odb_kernel_destroy(bad);
	}
}

static void test_buddy(void)
{
	/* no_debug_objects: its boot allocates trackers from the slab */
	odb_kernel *k = boot("no_debug_objects", ODB_CLOCK_VIRTUAL, 1, 8 << 20);
	uint64_t total, n = 0;
	odb_addr_t *addrs, a;

	if (!k)
		return;
	CHECK(odb_totalram_pages(k) == 2048);
	/* boot keeps the slab of the kmem_cache cache (every cache's descriptor) */
	total = odb_nr_free_pages(k);
	CHECK(total < odb_totalram_pages(k) && total >= 2048 - 8);
	addrs = calloc(total + 1, sizeof(*addrs));
	while (odb_alloc_pages(k, ODB_GFP_KERNEL | ODB_GFP_NOWARN, 0, &a) == ODB_OK) {
		CHECK((a & (ODB_PAGE_SIZE - 1)) == 0);
		CHECK(odb_host_ptr(k, a, ODB_PAGE_SIZE) != NULL);
		addrs[n++] = a;
		if (n > total)
			break;
	}
	CHECK(n == total);
	CHECK(odb_nr_free_pages(k) == 0);
	CHECK(odb_free_pages(k, addrs[0], 1) == ODB_EINVAL);        /* wrong order */
	CHECK(odb_free_pages(k, addrs[0] + 8, 0) == ODB_EINVAL);    /* not a page */
	for (uint64_t i = 0; i < n; i++)
		CHECK(odb_free_pages(k, addrs[i], 0) == ODB_OK);
	CHECK(odb_free_pages(k, addrs[0], 0) == ODB_EINVAL);        /* double free */
	CHECK(odb_nr_free_pages(k) == total);
	/* everything merged back: the order-10 block without the boot slab fits */
	CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL, 10, &addrs[0]) == ODB_OK);
	CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL | ODB_GFP_NOWARN, 10, &a) == ODB_ENOMEM);
	CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL, 11, &a) == ODB_EINVAL);
	CHECK(odb_free_pages(k, addrs[0], 10) == ODB_OK);
	free(addrs);
	odb_kernel_destroy(k);
}

struct order_rec { int seen[8]; int n; odb_kernel *k; int cpus[8]; };
struct item { struct order_rec *rec; int id; };

static void record(odb_kernel *k, void *arg)
{
	struct item *it = arg;
	it->rec->cpus[it->rec->n] = odb_current_cpu(k);
	it->rec->seen[it->rec->n++] = it->id;
}

static void test_workqueue_virtual(void)
{
	odb_kernel *k = boot("", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
	struct order_rec rec = { .n = 0 };
	struct item items[4];
	odb_work *w[4];
	int old;

	if (!k)
		return;
	for (int i = 0; i < 4; i++) {
		items[i].rec = &rec;
		items[i].id = i;
		w[i] = odb_work_create(k, record, &items[i]);
	}
	CHECK(odb_schedule_delayed_work(k, w[0], 30));
	CHECK(!odb_schedule_delayed_work(k, w[0], 5));          /* already pending: unchanged */
	odb_bind_cpu(k, 1, &old);
	CHECK(odb_schedule_delayed_work(k, w[1], 10));
	odb_bind_cpu(k, old, NULL);
	CHECK(odb_schedule_delayed_work(k, w[2], 10));          /* same due: queue order */
	CHECK(odb_schedule_work(k, w[3]));
	CHECK(odb_advance(k, 0) == ODB_OK);
	CHECK(rec.n == 1 && rec.seen[0] == 3);
	CHECK(odb_advance(k, 9 * NSEC_PER_MSEC) == ODB_OK);
	CHECK(rec.n == 1);
	CHECK(odb_advance(k, 1 * NSEC_PER_MSEC) == ODB_OK);
	CHECK(rec.n == 3 && rec.seen[1] == 1 && rec.seen[2] == 2);
	CHECK(rec.cpus[1] == 1 && rec.cpus[2] == 0);            /* runs on the queuing vCPU */
	CHECK(odb_cancel_work(k, w[0]));
	CHECK(!odb_cancel_work(k, w[0]));
	CHECK(odb_advance(k, 100 * NSEC_PER_MSEC) == ODB_OK);
	CHECK(rec.n == 3);
	CHECK(odb_schedule_delayed_work(k, w[0], 1000));
	CHECK(odb_flush_work(k, w[0]));
	CHECK(rec.n == 4 && rec.seen[3] == 0);
	CHECK(odb_jiffies(k) == INITIAL_JIFFIES(1000) + 110);
	for (int i = 0; i < 4; i++)
		odb_work_destroy(k, w[i]);
	odb_kernel_destroy(k);
}

static void bump(odb_kernel *k, void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void test_workqueue_real(void)
{
	odb_kernel *k = boot("", ODB_CLOCK_REAL, 1, 8 << 20);
	atomic_int n = 0;
	odb_work *w;

	if (!k)
		return;
	w = odb_work_create(k, bump, &n);
	CHECK(odb_advance(k, 1) == ODB_ESTATE);
	CHECK(odb_schedule_delayed_work(k, w, 5));
	for (int i = 0; i < 500 && atomic_load(&n) == 0; i++)
		usleep(10000);
	CHECK(atomic_load(&n) == 1);
	odb_kernel_close(k);
	odb_kernel_close(k);
	CHECK(!odb_schedule_work(k, w));
	usleep(20000);
	CHECK(atomic_load(&n) == 1);
	odb_work_destroy(k, w);
	odb_kernel_destroy(k);
}

static void test_fault(void)
{
	odb_kernel *k = boot("fail_page_alloc=3,100,0,-1", ODB_CLOCK_VIRTUAL, 1, 8 << 20);
	odb_addr_t a;
	int fails = 0;
	struct odb_fault_attr_info fi;

	if (!k)
		return;
	odb_fault_set(k, "fail_page_alloc", 100, 3, -1, 0, 0);
	for (int i = 0; i < 9; i++) {
		int r = odb_alloc_pages(k, ODB_GFP_ATOMIC | ODB_GFP_NOWARN, 1, &a);
		if (r == ODB_OK)
			odb_free_pages(k, a, 1);
		else
			fails += (i % 3 == 2);
	}
	CHECK(fails == 3);
	CHECK(odb_alloc_pages(k, ODB_GFP_KERNEL, 1, &a) == ODB_OK);   /* ignore-gfp-wait */
	odb_free_pages(k, a, 1);
	CHECK(odb_alloc_pages(k, ODB_GFP_ATOMIC, 0, &a) == ODB_OK);   /* min-order 1 */
	odb_free_pages(k, a, 0);
	/* times: exactly 2 failures; space: the first 3 pages' worth pass.
	 * Without __GFP_NOWARN, verbose=1 prints the dump. */
	odb_fault_set(k, "fail_page_alloc", 100, 1, 2, 0, 1);
	fails = 0;
	for (int i = 0; i < 6; i++) {
		if (odb_alloc_pages(k, ODB_GFP_ATOMIC, 1, &a) == ODB_OK)
			odb_free_pages(k, a, 1);
		else
			fails++;
	}
	CHECK(fails == 2);
	CHECK(dmesg_has(k, "FAULT_INJECTION: forcing a failure."));
	CHECK(dmesg_has(k, "name fail_page_alloc, interval 1, probability 100, space 0, times 2"));
	odb_fault_set(k, "fail_page_alloc", 100, 1, -1, 6, 0);
	CHECK(odb_alloc_pages(k, ODB_GFP_ATOMIC | ODB_GFP_NOWARN, 1, &a) == ODB_OK);  /* 6 > 2 */
	odb_free_pages(k, a, 1);
	CHECK(odb_alloc_pages(k, ODB_GFP_ATOMIC | ODB_GFP_NOWARN, 1, &a) == ODB_OK);  /* 4 > 2 */
	odb_free_pages(k, a, 1);
	CHECK(odb_alloc_pages(k, ODB_GFP_ATOMIC | ODB_GFP_NOWARN, 1, &a) == ODB_ENOMEM); /* 2 <= 2 */
	CHECK(odb_fault_get(k, "fail_page_alloc", &fi) == ODB_OK && fi.space == 2);
	CHECK(odb_fault_get(k, "nope", &fi) == ODB_ENOENT);
	{
		unsigned long v = 7;

		CHECK(odb_fault_get_flag(k, "fail_page_alloc", "min-order", &v) == ODB_OK && v == 1);
		CHECK(odb_fault_set_flag(k, "fail_page_alloc", "min-order", 3) == ODB_OK);
		CHECK(odb_fault_get_flag(k, "fail_page_alloc", "min-order", &v) == ODB_OK && v == 3);
		CHECK(odb_fault_set_flag(k, "failslab", "cache-filter", 5) == ODB_OK);
		CHECK(odb_fault_get_flag(k, "failslab", "cache-filter", &v) == ODB_OK && v == 1);
		CHECK(odb_fault_get_flag(k, "failslab", "min-order", &v) == ODB_EINVAL);
		CHECK(odb_fault_get_flag(k, "nope", "min-order", &v) == ODB_ENOENT);
	}
	odb_kernel_destroy(k);
}

struct irq_arg { odb_kernel *k; int cpu; atomic_int *inside; atomic_int *max; int loops; };

static void *irq_thread(void *p)
{
	struct irq_arg *a = p;
	unsigned long f1, f2;

	odb_bind_cpu(a->k, a->cpu, NULL);
	for (int i = 0; i < a->loops; i++) {
		local_irq_save(a->k, f1);
		local_irq_save(a->k, f2);            /* nesting */
		int now = atomic_fetch_add(a->inside, 1) + 1;
		int m = atomic_load(a->max);
		while (now > m && !atomic_compare_exchange_weak(a->max, &m, now))
			;
		atomic_fetch_sub(a->inside, 1);
		local_irq_restore(a->k, f2);
		local_irq_restore(a->k, f1);
	}
	return NULL;
}

static void test_irq_per_cpu(void)
{
	odb_kernel *k = boot("", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
	atomic_int inside0 = 0, max0 = 0;
	pthread_t th[4];
	struct irq_arg args[4];

	if (!k)
		return;
	/* two threads on vCPU 0 exclude each other; vCPU 1 runs independently */
	for (int i = 0; i < 4; i++) {
		static atomic_int other_inside, other_max;   /* test-local, not core state */
		args[i] = (struct irq_arg){ k, i < 2 ? 0 : 1, i < 2 ? &inside0 : &other_inside,
					    i < 2 ? &max0 : &other_max, 20000 };
		pthread_create(&th[i], NULL, irq_thread, &args[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&max0) == 1);
	odb_kernel_destroy(k);
}

/* ---- lock bias: mutual exclusion while biases are granted and revoked ---- *
 * Threads share vCPU 0 and NR_BIAS_LOCKS bspinlocks and bump plain
 * (non-atomic) counters inside, slowly: a lost update or a ThreadSanitizer
 * report means a biased entry let two threads in.  Each thread runs bursts on
 * one lock after another (each lock is biased at its second acquisition in a
 * row at first: odebug.lock_bias=1), the others revoke. */
#define NR_BIAS_LOCKS 32
struct bias_arg {
	odb_kernel *k;
	struct odb_bspinlock *bl;     /* [NR_BIAS_LOCKS] */
	long *irq_count, *lock_count; /* 1, [NR_BIAS_LOCKS] */
	int bursts, burst;
};

/* a read-modify-write wide enough for another thread to slip in; a long
 * one outlasts a revoker's membarrier(), which a short one does not */
static void slow_bump(long *c, int spin)
{
	long v = *c;

	for (volatile int j = 0; j < spin; j++)
		;
	*c = v + 1;
}

static void *bias_thread(void *p)
{
	struct bias_arg *a = p;
	unsigned long f;

	odb_bind_cpu(a->k, 0, NULL);
	for (int b = 0; b < a->bursts; b++) {
		struct odb_bspinlock *bl = &a->bl[b % NR_BIAS_LOCKS];

		for (int i = 0; i < a->burst; i++) {
			if (i % 8 == 0) {
				local_irq_save(a->k, f);
				slow_bump(a->irq_count, i % 32 ? 30 : 20000);
				local_irq_restore(a->k, f);
			}
			odb_bspin_lock(bl, odb_current_slot(a->k));
			slow_bump(&a->lock_count[b % NR_BIAS_LOCKS], i % 16 ? 30 : 20000);
			odb_bspin_unlock(bl, odb_current_slot(a->k));
		}
	}
	return NULL;
}

static void test_lock_bias(void)
{
	struct odb_lock_bias_info bi;
	unsigned long f;

	/* one thread: biased once, never revoked, and then takes no atomic op */
	odb_kernel *k = boot("", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
	if (!k)
		return;
	odb_lock_bias_info(k, &bi);
	CHECK(bi.threshold == 1024);
	for (int i = 0; i < 3000; i++) {
		local_irq_save(k, f);
		local_irq_restore(k, f);
	}
	odb_lock_bias_info(k, &bi);
	CHECK(bi.grants >= 1 && bi.revocations == 0);
	CHECK(atomic_load(&k->cpus[0].irq_lock.bias.owner) == odb_current_slot(k));
	local_irq_save(k, f);          /* biased: the base lock word stays free */
	CHECK(atomic_load(&k->cpus[0].irq_lock.v) == NULL);
	local_irq_restore(k, f);
	odb_kernel_destroy(k);

	k = boot("odebug.lock_bias=off", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
	if (!k)
		return;
	for (int i = 0; i < 3000; i++) {
		local_irq_save(k, f);
		local_irq_restore(k, f);
	}
	odb_lock_bias_info(k, &bi);
	CHECK(bi.threshold == 0 && bi.grants == 0);
	odb_kernel_destroy(k);

	/* four threads on one vCPU and shared locks, biases granted and revoked
	 * (three rounds: a broken revocation shows in most single rounds) */
	for (int round = 0; round < 3; round++) {
		static struct odb_bspinlock bl[NR_BIAS_LOCKS];   /* test data, not core state */
		static long counts[NR_BIAS_LOCKS];
		long irq_count = 0, sum = 0;
		struct bias_arg args[4];
		pthread_t th[4];
		const int bursts = 8 * NR_BIAS_LOCKS, burst = 100;

		k = boot("odebug.lock_bias=1", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
		if (!k)
			return;
		for (int i = 0; i < NR_BIAS_LOCKS; i++) {
			odb_bspin_lock_init(k, &bl[i]);
			counts[i] = 0;
		}
		for (int i = 0; i < 4; i++) {
			args[i] = (struct bias_arg){ k, bl, &irq_count, counts, bursts, burst };
			pthread_create(&th[i], NULL, bias_thread, &args[i]);
		}
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < NR_BIAS_LOCKS; i++)
			sum += counts[i];
		CHECK(sum == 4L * bursts * burst);
		CHECK(irq_count == 4L * bursts * (burst / 8 + (burst % 8 != 0)));
		odb_lock_bias_info(k, &bi);
		CHECK(bi.grants >= NR_BIAS_LOCKS && bi.revocations >= NR_BIAS_LOCKS);
		printf("lock bias stress: %llu grants, %llu revocations\n",
		       (unsigned long long)bi.grants, (unsigned long long)bi.revocations);
		for (int i = 0; i < NR_BIAS_LOCKS; i++)
			spin_lock_destroy(&bl[i].l);
		odb_kernel_destroy(k);
	}
}

struct excl_arg { odb_kernel *k; atomic_int *stage; };

static void *excl_other(void *p)
{
	struct excl_arg *a = p;
	unsigned long f;

	odb_bind_cpu(a->k, 0, NULL);
	atomic_store(a->stage, 1);
	local_irq_save(a->k, f);          /* waits for the exclusive owner */
	atomic_store(a->stage, 2);
	local_irq_restore(a->k, f);
	return NULL;
}

static void test_exclusive_binding(void)
{
	odb_kernel *k = boot("", ODB_CLOCK_VIRTUAL, 2, 8 << 20);
	atomic_int stage = 0;
	struct excl_arg a = { k, &stage };
	unsigned long f;
	pthread_t th;

	if (!k)
		return;
	CHECK(odb_bind_cpu_exclusive(k, 2) == ODB_EINVAL);
	CHECK(odb_bind_cpu_exclusive(k, 0) == ODB_OK);
	CHECK(odb_current_cpu(k) == 0);
	local_irq_save(k, f);             /* nested in the hold: no lock taken */
	local_irq_restore(k, f);
	pthread_create(&th, NULL, excl_other, &a);
	while (atomic_load(&stage) == 0)
		usleep(1000);
	usleep(20000);
	CHECK(atomic_load(&stage) == 1);  /* still waiting: the vCPU is owned */
	CHECK(odb_bind_cpu(k, 1, NULL) == ODB_OK);   /* leave vCPU 0 */
	pthread_join(th, NULL);
	CHECK(atomic_load(&stage) == 2);
	CHECK(odb_current_cpu(k) == 1);
	odb_kernel_destroy(k);
}

static __attribute__((noinline)) uint32_t save_here(odb_kernel *k)
{
	uint32_t h = odb_stack_save(k, 0);
	__asm__ volatile("" ::: "memory");   /* no tail call: keep this frame */
	return h;
}

static __attribute__((noinline)) void test_depot_and_reports(void)
{
	odb_kernel *k = boot("", ODB_CLOCK_VIRTUAL, 1, 8 << 20);
	uint32_t h[3];
	char *txt;
	const struct odb_report *r;

	if (!k)
		return;
	for (volatile int i = 0; i < 2; i++)
		h[i] = save_here(k);      /* same stack twice: same handle */
	h[2] = odb_stack_save(k, 0);
	CHECK(h[0] && h[0] == h[1]);
	CHECK(h[2] && h[2] != h[0]);
	txt = odb_stack_text(k, h[0]);
	CHECK(txt && strstr(txt, " save_here+0x") && strstr(txt, " test_depot_and_reports+0x"));
	free(txt);
	CHECK(odb_stack_text(k, 9999) == NULL);
	CHECK(odb_report_simple(k, "slub", "Poison overwritten", "line one") == ODB_OK);
	CHECK(odb_report_count(k) == 1);
	r = odb_report_get(k, 0);
	CHECK(r && !strcmp(r->subsystem, "slub") && !strcmp(r->kind, "Poison overwritten"));
	odb_reports_clear(k);                     /* r stays valid: it holds a reference */
	CHECK(r && !strcmp(r->text, "line one\n"));
	odb_report_put(r);
	CHECK(odb_report_count(k) == 0);
	CHECK(odb_report_get(k, 0) == NULL);
	odb_kernel_destroy(k);
}

static void test_many_kernels(void)
{
	odb_kernel *ks[100];
	odb_addr_t a;

	for (int i = 0; i < 100; i++)
		ks[i] = boot("", ODB_CLOCK_VIRTUAL, 1, 16 << 20);
	for (int i = 0; i < 100; i++) {
		CHECK(ks[i] != NULL);
		if (ks[i]) {
			CHECK(odb_alloc_pages(ks[i], ODB_GFP_KERNEL, 2, &a) == ODB_OK);
			memset(odb_host_ptr(ks[i], a, 4 * ODB_PAGE_SIZE), i, 4 * ODB_PAGE_SIZE);
		}
	}
	for (int i = 0; i < 100; i++)
		odb_kernel_destroy(ks[i]);
}

/* jiffies() in 64-bit arithmetic (q * HZ + r * HZ / 1e9, issue 16) against
 * floor(t * HZ / 1e9) in 128 bits, for HZ that divide 1e9 and HZ that do not,
 * at times on, just before and after second boundaries and far from boot. */
static void test_jiffies_exact(void)
{
	static const char *hzs[] = { "hz=100", "hz=250", "hz=300", "hz=1000", "hz=1024",
				     "hz=100000" };
	static const uint64_t steps[] = { 999999999, 1, 1, 1000000000ULL * 86400 * 400 + 999999997,
					   333333333, 3, 1000000000ULL * 1000 - 1, 2 };
	int bad = 0;

	for (size_t h = 0; h < sizeof(hzs) / sizeof(hzs[0]); h++) {
		odb_kernel *k = boot(hzs[h], ODB_CLOCK_VIRTUAL, 1, 8 << 20);
		uint64_t t = 0;

		CHECK(k != NULL);
		if (!k)
			continue;
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			unsigned __int128 want;

			CHECK_EQ(odb_advance(k, steps[i]), 0);
			t += steps[i];
			want = (unsigned __int128)odb_now_ns(k) * odb_hz(k) / 1000000000ULL;
			bad += odb_jiffies(k) != INITIAL_JIFFIES(odb_hz(k)) + (uint64_t)want;
		}
		CHECK(odb_now_ns(k) >= t);
		odb_kernel_destroy(k);
	}
	CHECK_EQ(bad, 0);
}

int main(void)
{
	test_cmdline();
	test_jiffies_exact();
	test_buddy();
	test_workqueue_virtual();
	test_workqueue_real();
	test_fault();
	test_irq_per_cpu();
	test_lock_bias();
	test_depot_and_reports();
	test_exclusive_binding();
	test_many_kernels();
	return odb_test_summary();
}
