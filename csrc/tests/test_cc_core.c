/*
 * The core entries behind odebug.cc's runtime (csrc/cc/), tested without it
 * (so under the sanitizer builds too): odb_virt_addr, destroy notifiers,
 * odb_kasan_check_ip (the report starts at the instrumented caller) and
 * odb_kasan_report_foreign (the caller's bug type, description and shadow).
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

int main(void)
{
	test_virt_addr_and_hooks();
	test_check_ip_and_foreign();
	return odb_test_summary();
}
