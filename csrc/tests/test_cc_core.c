/*
 * The core entries behind odebug.cc's runtime (csrc/cc/), tested without it
 * (so under the sanitizer builds too): odb_virt_addr, destroy notifiers,
 * odb_kasan_check_ip (the report starts at the instrumented caller) and
 * odb_kasan_report_foreign (the caller's bug type, description and shadow),
 * and what kernel_compat.h's call_rcu / queue_work / stack reports use:
 * odb_call_rcu, odb_kasan_record_aux_stack, odb_current_comm,
 * odb_sprint_symbol.
 */
#include "check.h"

static int hook_runs[2];

static void on_destroy(odb_kernel *k, void *ctx)
{
	(void)k;
	hook_runs[(intptr_t)ctx]++;
}

static void test_virt_addr_and_hooks(void)
{
	odb_kernel *k = odb_test_boot("", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 0);
	odb_addr_t a;
	char *p;

	if (!k)
		return;
	CHECK(odb_kmalloc(k, 32, ODB_GFP_KERNEL, &a) == ODB_OK);
	p = odb_host_ptr(k, a, 32);
	CHECK(p != NULL);
	CHECK_EQ(odb_virt_addr(k, p), a);
	CHECK_EQ(odb_virt_addr(k, p + 5), a + 5);
	CHECK_EQ(odb_virt_addr(k, &a), 0);           /* the stack: not in the arena */
	CHECK_EQ(odb_virt_addr(k, NULL), 0);
	CHECK(odb_kernel_on_destroy(k, NULL, NULL) == ODB_EINVAL);
	CHECK(odb_kernel_on_destroy(k, on_destroy, (void *)0) == ODB_OK);
	CHECK(odb_kernel_on_destroy(k, on_destroy, (void *)1) == ODB_OK);
	CHECK(odb_kernel_on_destroy_remove(k, on_destroy, (void *)1) == ODB_OK);
	CHECK(odb_kernel_on_destroy_remove(k, on_destroy, (void *)1) == ODB_ENOENT);
	odb_kernel_destroy(k);
	CHECK_EQ(hook_runs[0], 1);
	CHECK_EQ(hook_runs[1], 0);
}

/* stands for a runtime callback (__asan_load1): its return address is in the
 * "instrumented" function below */
static __attribute__((noinline)) bool fake_asan_load1(odb_kernel *k, odb_addr_t a)
{
	bool ok = true;

	CHECK(odb_kasan_check_ip(k, a, 1, false, (unsigned long)__builtin_return_address(0),
				 &ok) == ODB_OK);
	__asm__ volatile("" ::: "memory");
	return ok;
}

__attribute__((noinline)) bool planted_instrumented_fn(odb_kernel *k, odb_addr_t a);
__attribute__((noinline)) bool planted_instrumented_fn(odb_kernel *k, odb_addr_t a)
{
	bool ok = fake_asan_load1(k, a);

	__asm__ volatile("" ::: "memory");
	return ok;
}

static int shadow_of(void *ctx, uint64_t g)
{
	uint64_t base = *(uint64_t *)ctx;

	if (g < base || g >= base + 64)
		return -1;
	return g < base + 40 ? 0 : 0xf9;
}

static void test_check_ip_and_foreign(void)
{
	odb_kernel *k = odb_test_boot("kasan_multi_shot", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 0);
	const struct odb_report *r;
	odb_addr_t a;
	uint64_t base = 0x7f0000001000ULL;
	struct odb_kasan_foreign f = {
		"global-out-of-bounds", "The buggy address belongs to the variable:\n table+0x28/0x40",
		0x7f0000001028ULL, shadow_of, &base,
	};

	if (!k)
		return;
	CHECK(odb_kmalloc(k, 13, ODB_GFP_KERNEL, &a) == ODB_OK);
	CHECK(planted_instrumented_fn(k, a + 12));              /* in bounds */
	CHECK_EQ(odb_report_count(k), 0);
	CHECK(!planted_instrumented_fn(k, a + 13));             /* one past the end */
	CHECK_EQ(odb_report_count(k), 1);
	r = odb_report_get(k, 0);
	CHECK(r && !strcmp(r->kind, "slab-out-of-bounds"));
	CHECK(r && strstr(r->text, "BUG: KASAN: slab-out-of-bounds in planted_instrumented_fn+"));
	CHECK(r && strstr(r->text, " <TASK>\n planted_instrumented_fn+"));
	odb_report_put(r);

	CHECK(odb_kasan_report_foreign(k, 0x7f0000001028ULL, 4, true, 0, NULL) == ODB_EINVAL);
	CHECK(odb_kasan_report_foreign(k, 0x7f0000001028ULL, 4, true,
				       (unsigned long)__builtin_return_address(0), &f) == ODB_OK);
	CHECK_EQ(odb_report_count(k), 2);
	r = odb_report_get(k, 1);
	CHECK(r && !strcmp(r->kind, "global-out-of-bounds") && r->is_write == 1 && r->size == 4);
	CHECK(r && r->addr == 0x7f0000001028ULL && !r->cache);
	CHECK(r && strstr(r->text, "Write of size 4 at addr 00007f0000001028 by task"));
	CHECK(r && strstr(r->text, "The buggy address belongs to the variable:\n table+0x28/0x40\n"));
	CHECK(r && strstr(r->text, ">00007f0000001000: 00 00 00 00 00 f9 f9 f9 ?? ?? ??"));
	CHECK(r && !strstr(r->text, "physical page"));
	odb_report_put(r);
	CHECK(dmesg_has(k, "BUG: KASAN: global-out-of-bounds in "));
	odb_kernel_destroy(k);
}

/* ---- call_rcu ------------------------------------------------------------------------------ */
struct rcu_log {
	odb_addr_t heads[8];
	int ctx[8];
	int n;
	odb_addr_t requeue;           /* the first callback queues this head again */
};

static struct rcu_log *rcu_log;

static void rcu_cb(odb_kernel *k, odb_addr_t head, void *ctx)
{
	struct rcu_log *log = rcu_log;

	if (log->n < 8) {
		log->heads[log->n] = head;
		log->ctx[log->n] = (int)(intptr_t)ctx;
		log->n++;
	}
	if (log->requeue) {
		odb_addr_t again = log->requeue;

		log->requeue = 0;
		CHECK(odb_call_rcu(k, again, rcu_cb, (void *)(intptr_t)99) == ODB_OK);
	}
}

static odb_addr_t rcu_object(odb_kernel *k)
{
	odb_addr_t a = 0;

	CHECK(odb_kmalloc(k, 32, ODB_GFP_KERNEL, &a) == ODB_OK);
	return a;
}

static void test_call_rcu(void)
{
	odb_kernel *k = odb_test_boot("kasan_multi_shot", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 0);
	struct rcu_log log;
	odb_addr_t a, b, c;
	char *s;

	if (!k)
		return;
	memset(&log, 0, sizeof(log));
	rcu_log = &log;
	a = rcu_object(k);
	b = rcu_object(k);
	c = rcu_object(k);
	CHECK(odb_call_rcu(k, a, NULL, NULL) == ODB_EINVAL);
	CHECK(odb_call_rcu(k, 0x1000, rcu_cb, NULL) == ODB_EINVAL);
	CHECK(odb_call_rcu(k, odb_arena_end(k), rcu_cb, NULL) == ODB_EINVAL);
	log.requeue = c;
	CHECK(odb_call_rcu(k, a, rcu_cb, (void *)(intptr_t)1) == ODB_OK);
	CHECK(odb_call_rcu(k, b + 8, rcu_cb, (void *)(intptr_t)2) == ODB_OK);
	CHECK_EQ(log.n, 0);                       /* not before a grace period */
	CHECK(odb_advance(k, 1000000) == ODB_OK);  /* one jiffy (HZ=1000) */
	CHECK_EQ(log.n, 2);                       /* in call order, each with its ctx */
	CHECK_EQ(log.heads[0], a);
	CHECK_EQ(log.ctx[0], 1);
	CHECK_EQ(log.heads[1], b + 8);
	CHECK_EQ(log.ctx[1], 2);
	/* the one queued from a callback waits for the next grace period */
	CHECK(odb_kasan_record_aux_stack(k, 0) == ODB_OK);    /* outside the arena: ignored */
	odb_rcu_barrier(k);
	CHECK_EQ(log.n, 3);
	CHECK_EQ(log.heads[2], c);
	CHECK_EQ(log.ctx[2], 99);
	odb_rcu_barrier(k);
	CHECK_EQ(log.n, 3);
	/* each call recorded its stack in the object's alloc meta: a report on
	 * the object prints it (b's head is inside the object) */
	CHECK(odb_kfree(k, b) == ODB_OK);
	CHECK(odb_kasan_check_read(k, b, 1) == ODB_OK);
	s = odb_dmesg(k, false);
	CHECK(s && strstr(s, "Last potentially related work creation:\n"));
	CHECK(s && !strstr(s, "Second to last potentially related work creation:"));
	odb_free(s);
	/* pending callbacks of a destroyed kernel never run */
	CHECK(odb_call_rcu(k, a, rcu_cb, (void *)(intptr_t)3) == ODB_OK);
	odb_kernel_destroy(k);
	CHECK_EQ(log.n, 3);
}

static __attribute__((noinline)) void queue_first(odb_kernel *k, odb_addr_t a)
{
	CHECK(odb_kasan_record_aux_stack(k, a) == ODB_OK);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void queue_second(odb_kernel *k, odb_addr_t a)
{
	CHECK(odb_kasan_record_aux_stack(k, a) == ODB_OK);
	__asm__ volatile("" ::: "memory");
}

static void test_aux_stacks(void)
{
	odb_kernel *k = odb_test_boot("kasan_multi_shot", ODB_CLOCK_VIRTUAL, 1, 16 << 20, 0);
	const struct odb_report *r;
	odb_addr_t a, big;
	char comm[32], sym[128];
	const char *last, *second, *obj;

	if (!k)
		return;
	CHECK(odb_kmalloc(k, 64, ODB_GFP_KERNEL, &a) == ODB_OK);
	queue_first(k, a + 10);                    /* any byte of the object */
	queue_second(k, a);
	CHECK(odb_kasan_check_read(k, a + 64, 1) == ODB_OK);
	CHECK_EQ(odb_report_count(k), 1);
	r = odb_report_get(k, 0);
	last = r ? strstr(r->text, "Last potentially related work creation:\n") : NULL;
	second = r ? strstr(r->text, "Second to last potentially related work creation:\n") : NULL;
	obj = r ? strstr(r->text, "The buggy address belongs to the object at") : NULL;
	CHECK(last && second && obj && last < second && second < obj);
	/* newest first */
	CHECK(last && second && strstr(last, " queue_second+") && strstr(last, " queue_second+") < second);
	CHECK(second && strstr(second, " queue_first+") && strstr(second, " queue_first+") < obj);
	odb_report_put(r);
	/* a new allocation clears them */
	CHECK(odb_kfree(k, a) == ODB_OK);
	CHECK(odb_kasan_quarantine_drain(k) == ODB_OK);
	CHECK(odb_kmalloc(k, 64, ODB_GFP_KERNEL, &a) == ODB_OK);
	CHECK(odb_kasan_check_read(k, a + 64, 1) == ODB_OK);
	r = odb_report_get(k, 1);
	CHECK(r && !strstr(r->text, "potentially related work creation"));
	odb_report_put(r);
	/* not a slab object: ignored */
	CHECK(odb_kmalloc(k, 3 * 4096, ODB_GFP_KERNEL, &big) == ODB_OK);
	CHECK(odb_kasan_record_aux_stack(k, big) == ODB_OK);
	CHECK(odb_kasan_record_aux_stack(k, odb_arena_end(k) + 4096) == ODB_OK);

	odb_set_comm(k, "kworker/0:1");
	odb_current_comm(k, comm, sizeof(comm));
	CHECK(!strcmp(comm, "kworker/0:1"));
	odb_current_comm(k, comm, 4);
	CHECK(!strcmp(comm, "kwo"));
	odb_sprint_symbol(k, (uintptr_t)queue_first, sym, sizeof(sym));
	CHECK(!strncmp(sym, "queue_first+0x0/0x", 18));
	odb_sprint_symbol(k, 0, sym, sizeof(sym));
	CHECK(!strcmp(sym, "0x0"));
	odb_kernel_destroy(k);
}

int main(void)
{
	test_virt_addr_and_hooks();
	test_check_ip_and_foreign();
	test_call_rcu();
	test_aux_stacks();
	return odb_test_summary();
}
