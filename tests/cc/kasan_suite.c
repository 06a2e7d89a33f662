/*
 * The generic-mode cases of the kernel's KASAN KUnit suite (kasan_test_c.c)
 * as an instrumented C file for odebug, built with odebug.cc's flags and run
 * case by case, each in a fresh kernel, by tests/test_cc_kasan_suite.py.
 *
 * Written for odebug from the behaviour the kernel's test table describes
 * (sizes, offsets, the accesses and which of them must be reported), not
 * copied from the kernel.  Each case keeps its kernel name and does what the
 * kernel's does through kernel_compat.h's kernel-named calls; the Python side
 * then checks the exact bug type, size and direction of every report.
 *
 * Left out: the cases of the tag-based modes, which the kernel skips in
 * generic mode
 * (page_alloc_oob_right, kmalloc_uaf3,
 * kasan_bitops_tags, vmalloc_helpers_tags, vmap_tags, vm_map_ram_tags,
 * match_all_*), and rust_uaf.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <odebug/kernel_compat.h>

#define NOINLINE __attribute__((noinline))

/* ---- a small KUnit ------------------------------------------------------------------ */
enum { KUNIT_SUCCESS = 0, KUNIT_FAILURE = 1, KUNIT_SKIPPED = 2 };

struct kunit {
	odb_kernel *k;
	const char *name;
	int status;
	char log[2048];
	size_t used;
	size_t seen;            /* reports of k already accounted for */
};

/* a failure at the case's source line `line` (0: the case's end), logged
 * "case:line: message" */
static void kunit_fail_at(struct kunit *test, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kunit_fail_at(struct kunit *test, int line, const char *fmt, ...)
{
	size_t room = sizeof(test->log) - test->used;
	va_list ap;
	int n;

	if (test->status != KUNIT_SKIPPED)
		test->status = KUNIT_FAILURE;
	if (room < 2)
		return;
	n = line > 0 ? snprintf(test->log + test->used, room, "%s:%d: ", test->name, line)
		     : snprintf(test->log + test->used, room, "%s: ", test->name);
	if (n > 0)
		test->used += (size_t)n < room ? (size_t)n : room - 1;
	room = sizeof(test->log) - test->used;
	va_start(ap, fmt);
	n = vsnprintf(test->log + test->used, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		test->used += (size_t)n < room ? (size_t)n : room - 1;
	if (test->used < sizeof(test->log) - 1)
		test->log[test->used++] = '\n';
	test->log[test->used] = '\0';
}

#define KUNIT_FAIL(test, ...) kunit_fail_at((test), __LINE__, __VA_ARGS__)

/* the rest of the case does not run (KUnit's kunit_skip) */
#define kunit_skip(test, reason) do {                                           \
	(test)->status = KUNIT_SKIPPED;                                        \
	snprintf((test)->log, sizeof((test)->log), "%s", (reason));            \
	return;                                                                \
} while (0)

/* KASAN reports of the kernel since report number `from`: how many, and
 * whether all are of bug type `type` (NULL: any).  A report counts when its
 * text has "BUG: KASAN: ", the line the kernel's console probe looks for. */
static size_t kasan_reports_since(struct kunit *test, size_t from, const char *type, bool *all_of_type)
{
	size_t n = odb_report_count(test->k), found = 0;

	*all_of_type = true;
	for (size_t i = from; i < n; i++) {
		const struct odb_report *r = odb_report_get(test->k, i);

		if (!r)
			continue;
		if (r->text && strstr(r->text, "BUG: KASAN: ")) {
			found++;
			if (type && strcmp(r->kind, type))
				*all_of_type = false;
		}
		odb_report_put(r);
	}
	return found;
}

/* kasan_test_exit's rule, also checked before every expectation: no report
 * may happen outside KUNIT_EXPECT_KASAN_FAIL. */
static void kunit_no_stray_reports(struct kunit *test, int line, const char *where)
{
	bool any;
	size_t n = kasan_reports_since(test, test->seen, NULL, &any);

	if (n)
		kunit_fail_at(test, line, "%zu KASAN report(s) outside an expectation (%s)", n, where);
	test->seen = odb_report_count(test->k);
}

static void kunit_expect_reports(struct kunit *test, int line, const char *expr, const char *type)
{
	bool typed;
	size_t n = kasan_reports_since(test, test->seen, type, &typed);

	if (!n)
		kunit_fail_at(test, line, "KASAN failure expected in \"%s\", but none occurred", expr);
	else if (!typed)
		kunit_fail_at(test, line, "\"%s\": a KASAN report of another type than %s", expr, type);
	test->seen = odb_report_count(test->k);
}

/* The expression must make at least one KASAN report (of bug type `type`),
 * and none may have happened since the previous expectation. */
#define KUNIT_EXPECT_KASAN_FAIL_TYPE(test, type, ...) do {                      \
	kunit_no_stray_reports((test), __LINE__, "before \"" #__VA_ARGS__ "\"");\
	barrier();                                                             \
	__VA_ARGS__;                                                           \
	barrier();                                                             \
	kunit_expect_reports((test), __LINE__, #__VA_ARGS__, (type));          \
} while (0)
#define KUNIT_EXPECT_KASAN_FAIL(test, ...) KUNIT_EXPECT_KASAN_FAIL_TYPE(test, NULL, __VA_ARGS__)

#define KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p) do {                              \
	if ((uintptr_t)(p) < 4096 || (uintptr_t)(p) >= (uintptr_t)-4095) {    \
		KUNIT_FAIL((test), "%s is NULL or an error (%p)", #p, (void *)(p)); \
		return;                                                        \
	}                                                                      \
} while (0)
#define KUNIT_ASSERT_NULL(test, p) do {                                         \
	if ((p) != NULL) {                                                     \
		KUNIT_FAIL((test), "%s is not NULL", #p);                      \
		return;                                                        \
	}                                                                      \
} while (0)
#define KUNIT_EXPECT_CMP(test, a, op, b) do {                                   \
	long long a_ = (long long)(a), b_ = (long long)(b);                    \
	if (!(a_ op b_))                                                       \
		KUNIT_FAIL((test), "expected %s %s %s (%lld vs %lld)", #a, #op, #b, a_, b_); \
} while (0)
#define KUNIT_EXPECT_EQ(test, a, b) KUNIT_EXPECT_CMP(test, a, ==, b)
#define KUNIT_EXPECT_GT(test, a, b) KUNIT_EXPECT_CMP(test, a, >, b)
#define KUNIT_EXPECT_LE(test, a, b) KUNIT_EXPECT_CMP(test, a, <=, b)
#define KUNIT_EXPECT_PTR_EQ(test, a, b) do {                                    \
	if ((const void *)(a) != (const void *)(b))                            \
		KUNIT_FAIL((test), "expected %s == %s (%p vs %p)", #a, #b,     \
			   (const void *)(a), (const void *)(b));              \
} while (0)
#define KUNIT_EXPECT_PTR_NE(test, a, b) do {                                    \
	if ((const void *)(a) == (const void *)(b))                            \
		KUNIT_FAIL((test), "expected %s != %s", #a, #b);               \
} while (0)

#define KASAN_GRANULE_SIZE 8u
#define round_up(x, y)   ((((x) + (y) - 1) / (y)) * (y))
#define round_down(x, y) (((x) / (y)) * (y))
#define container_of(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

/* kept so that the compiler cannot drop the reads whose reports are expected */
static volatile void *kasan_ptr_result;
static volatile long kasan_int_result;

/* ---- slab out-of-bounds --------------------------------------------------------------- */
/* 115 bytes from kmalloc-128: the byte just past them (generic KASAN is
 * exact), the first byte of the next granule, and one past the slot's object */
static void kmalloc_oob_right(struct kunit *test)
{
	size_t len = 128 - KASAN_GRANULE_SIZE - 5;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len] = 'x');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len + 5] = 'y');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     buf[0] = buf[len + KASAN_GRANULE_SIZE + 5]);
	kfree(buf);
}

/* the byte before a 15-byte object: the previous slot's red zone */
static void kmalloc_oob_left(struct kunit *test)
{
	char *buf = kmalloc(15, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", *buf = *(buf - 1));
	kfree(buf);
}

static void kmalloc_node_oob_right(struct kunit *test)
{
	size_t len = 4096;
	char *buf = kmalloc_node(len, GFP_KERNEL, 0);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[0] = buf[len]);
	kfree(buf);
}

static void kmalloc_track_caller_oob_right(struct kunit *test)
{
	size_t len = 128 - KASAN_GRANULE_SIZE;
	char *buf = kmalloc_track_caller(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len] = 'y');
	kfree(buf);

	buf = kmalloc_node_track_caller(len, GFP_KERNEL, 0);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len] = 'y');
	kfree(buf);
}

/* the largest kmalloc caches, still slab (not the page allocator) */
static void kmalloc_big_oob_right(struct kunit *test)
{
	size_t len = KMALLOC_MAX_CACHE_SIZE - 256;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len] = 0);
	kfree(buf);
}

/* ---- large kmalloc (pages) ------------------------------------------------------------- */
static void kmalloc_large_oob_right(struct kunit *test)
{
	size_t len = KMALLOC_MAX_CACHE_SIZE + 10;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[len] = 0);
	kfree(buf);
}

static void kmalloc_large_uaf(struct kunit *test)
{
	char *buf = kmalloc(KMALLOC_MAX_CACHE_SIZE + 10, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	kfree(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "use-after-free", ((volatile char *)buf)[0]);
}

static void kmalloc_large_invalid_free(struct kunit *test)
{
	char *buf = kmalloc(KMALLOC_MAX_CACHE_SIZE + 10, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "invalid-free", kfree(buf + 1));
	kfree(buf);             /* the bad free freed nothing */
}

/* ---- pages --------------------------------------------------------------------------------- */
static void page_alloc_uaf(struct kunit *test)
{
	unsigned int order = 4;
	struct page *pages = alloc_pages(GFP_KERNEL, order);
	char *p;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pages);
	p = page_address(pages);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	free_pages((unsigned long)(uintptr_t)p, order);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "use-after-free", ((volatile char *)p)[0]);
}

/* ---- krealloc ----------------------------------------------------------------------------- */
/* grown in place: everything up to the new size is usable, the byte after it
 * (and its granule's successor) is not */
static void grow_then_overflow(struct kunit *test, size_t from, size_t to)
{
	size_t mid = from + (to - from) / 2;
	char *old, *buf;

	old = kmalloc(from, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, old);
	buf = krealloc(old, to, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	buf[from - 1] = 'x';
	buf[from] = 'x';
	buf[mid] = 'x';
	buf[to - 1] = 'x';
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[to] = 'x');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     buf[round_up(to, KASAN_GRANULE_SIZE)] = 'x');
	kfree(buf);
}

/* shrunk: only the new size is usable; the new end, the old middle, the old
 * last byte and the old end are all in distinct poisoned granules */
static void shrink_then_overflow(struct kunit *test, size_t from, size_t to)
{
	size_t mid = to + (from - to) / 2;
	char *old, *buf;

	old = kmalloc(from, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, old);
	buf = krealloc(old, to, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	buf[to - 1] = 'x';
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[to] = 'x');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     buf[round_up(to, KASAN_GRANULE_SIZE)] = 'x');
	KUNIT_EXPECT_LE(test, round_up(to, KASAN_GRANULE_SIZE), round_down(mid, KASAN_GRANULE_SIZE));
	KUNIT_EXPECT_LE(test, round_up(mid, KASAN_GRANULE_SIZE), round_down(from, KASAN_GRANULE_SIZE));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[mid] = 'x');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[from - 1] = 'x');
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", buf[from] = 'x');
	kfree(buf);
}

static void krealloc_more_oob(struct kunit *test) { grow_then_overflow(test, 201, 235); }
static void krealloc_less_oob(struct kunit *test) { shrink_then_overflow(test, 235, 201); }

static void krealloc_large_more_oob(struct kunit *test)
{
	grow_then_overflow(test, KMALLOC_MAX_CACHE_SIZE + 201, KMALLOC_MAX_CACHE_SIZE + 235);
}

static void krealloc_large_less_oob(struct kunit *test)
{
	shrink_then_overflow(test, KMALLOC_MAX_CACHE_SIZE + 235, KMALLOC_MAX_CACHE_SIZE + 201);
}

/* krealloc of a freed object: reported (kasan_check_byte), NULL, and the
 * object stays poisoned */
static void krealloc_uaf(struct kunit *test)
{
	char *old = kmalloc(201, GFP_KERNEL), *buf = (char *)1;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, old);
	kfree(old);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", buf = krealloc(old, 235, GFP_KERNEL));
	KUNIT_ASSERT_NULL(test, buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", *(volatile char *)old);
}

/* ---- 16-byte accesses ------------------------------------------------------------------- */
struct sixteen {
	uint64_t w[2];
};

/* a 16-byte copy into a 13-byte object: its last granule has 5 bytes */
static void kmalloc_oob_16(struct kunit *test)
{
	struct sixteen *dst, *src;

	dst = kmalloc(sizeof(*dst) - 3, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dst);
	src = kmalloc(sizeof(*src), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, src);
	OPTIMIZER_HIDE_VAR(dst);
	OPTIMIZER_HIDE_VAR(src);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", *dst = *src);
	kfree(dst);
	kfree(src);
}

static void kmalloc_uaf_16(struct kunit *test)
{
	struct sixteen *dst, *src;

	dst = kmalloc(sizeof(*dst), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dst);
	src = kmalloc(sizeof(*src), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, src);
	kfree(src);
	OPTIMIZER_HIDE_VAR(src);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", *dst = *src);
	kfree(dst);
}

/* ---- mem* -------------------------------------------------------------------------------------- */
/* 120 bytes (kmalloc-128): ranges that start inside and end past the object */
static void kmalloc_oob_in_memset(struct kunit *test)
{
	size_t len = 128 - KASAN_GRANULE_SIZE;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(len);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", memset(buf, 0, len + KASAN_GRANULE_SIZE));
	kfree(buf);
}

static void memset_across_the_end(struct kunit *test, size_t n)
{
	size_t len = 128 - KASAN_GRANULE_SIZE;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(len);
	OPTIMIZER_HIDE_VAR(n);
	/* the range's first byte is the object's (len - n + 1)th-from-last */
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", memset(buf + len - (n - 1), 0, n));
	kfree(buf);
}

static void kmalloc_oob_memset_2(struct kunit *test) { memset_across_the_end(test, 2); }
static void kmalloc_oob_memset_4(struct kunit *test) { memset_across_the_end(test, 4); }
static void kmalloc_oob_memset_8(struct kunit *test) { memset_across_the_end(test, 8); }
static void kmalloc_oob_memset_16(struct kunit *test) { memset_across_the_end(test, 16); }

/* a "negative" size wraps the address space: out-of-bounds at once */
static void kmalloc_memmove_negative_size(struct kunit *test)
{
	size_t bad = (size_t)-2;
	char *buf = kmalloc(64, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	memset(buf, 0, 64);
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(bad);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "out-of-bounds", memmove(buf, buf + 4, bad));
	kfree(buf);
}

/* the source range ends 4 bytes past the object */
static void kmalloc_memmove_invalid_size(struct kunit *test)
{
	size_t n = 64;
	char *buf = kmalloc(64, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	memset(buf, 0, 64);
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(n);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", memmove(buf, buf + 4, n));
	kfree(buf);
}

/* ---- use-after-free ------------------------------------------------------------------------ */
static void kmalloc_uaf(struct kunit *test)
{
	char *buf = kmalloc(10, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	kfree(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", ((volatile char *)buf)[8]);
}

/* the quarantine holds the freed object: the memset is reported and skipped */
static void kmalloc_uaf_memset(struct kunit *test)
{
	size_t len = 33;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	kfree(buf);
	OPTIMIZER_HIDE_VAR(len);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", memset(buf, 0, len));
}

/* a second allocation of the same size does not get the freed object back
 * (it waits in the quarantine) */
static void kmalloc_uaf2(struct kunit *test)
{
	char *first, *second;

	first = kmalloc(43, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, first);
	kfree(first);
	second = kmalloc(43, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, second);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", ((volatile char *)first)[40]);
	KUNIT_EXPECT_PTR_NE(test, first, second);
	kfree(second);
}

/* ---- atomics on a red zone ------------------------------------------------------------ */
static void atomics_on(struct kunit *test, void *bad, void *good)
{
	int *ibad = bad;

	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = READ_ONCE(*ibad));
	KUNIT_EXPECT_KASAN_FAIL(test, WRITE_ONCE(*ibad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = smp_load_acquire(ibad));
	KUNIT_EXPECT_KASAN_FAIL(test, smp_store_release(ibad, 42));

	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_read(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_set(bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_add(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_sub(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_inc(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_dec(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_and(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_andnot(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_or(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_xor(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_xchg(bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_cmpxchg(bad, 21, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_try_cmpxchg(bad, good, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_try_cmpxchg(good, bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_sub_and_test(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_dec_and_test(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_inc_and_test(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_add_negative(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_add_unless(bad, 21, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_inc_not_zero(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_inc_unless_negative(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_dec_unless_positive(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_dec_if_positive(bad));

	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_read(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_set(bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_add(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_sub(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_inc(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_dec(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_and(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_andnot(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_or(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, atomic_long_xor(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_xchg(bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_cmpxchg(bad, 21, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_try_cmpxchg(bad, good, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_try_cmpxchg(good, bad, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_sub_and_test(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_dec_and_test(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_inc_and_test(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_add_negative(42, bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_add_unless(bad, 21, 42));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_inc_not_zero(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_inc_unless_negative(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_dec_unless_positive(bad));
	KUNIT_EXPECT_KASAN_FAIL(test, kasan_int_result = atomic_long_dec_if_positive(bad));
}

/* 48 bytes from kmalloc-64: the 16 after them are the red zone */
static void kasan_atomics(struct kunit *test)
{
	char *obj = kzalloc(48, GFP_KERNEL);
	atomic_long_t *other;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, obj);
	other = kzalloc(sizeof(*other), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, other);
	atomics_on(test, obj + 48, other);
	kfree(obj);
	kfree(other);
}

/* ---- ksize ------------------------------------------------------------------------------------- */
/* ksize() reports the slot's size but leaves the slack poisoned */
/* kfree_sensitive twice: the second one's ksize() reports the freed object
 * (kasan_check_byte, a read of 1), then its kfree the double free */
static void kmalloc_double_kzfree(struct kunit *test)
{
	char *ptr = kmalloc(16, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ptr);
	kfree_sensitive(ptr);
	KUNIT_EXPECT_KASAN_FAIL(test, kfree_sensitive(ptr));
}

static void ksize_unpoisons_memory(struct kunit *test)
{
	size_t len = 128 - KASAN_GRANULE_SIZE - 5, real;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	real = ksize(buf);
	KUNIT_EXPECT_GT(test, real, len);
	OPTIMIZER_HIDE_VAR(buf);
	buf[0] = 'x';
	buf[len - 1] = 'x';
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", ((volatile char *)buf)[len]);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", ((volatile char *)buf)[len + 5]);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", ((volatile char *)buf)[real - 1]);
	kfree(buf);
}

static void ksize_uaf(struct kunit *test)
{
	size_t len = 128 - KASAN_GRANULE_SIZE;
	char *buf = kmalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	kfree(buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kasan_int_result = (long)ksize(buf));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", ((volatile char *)buf)[0]);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", ((volatile char *)buf)[len]);
}

/* ---- deferred work: the report names where it was queued --------------------------------- */
struct rcu_victim {
	int value;
	struct rcu_head rcu;
};

static struct rcu_victim *rcu_victim;

/* the callback frees its own object, then reads it */
static void rcu_victim_reclaim(struct rcu_head *head)
{
	struct rcu_victim *v = container_of(head, struct rcu_victim, rcu);

	kfree(v);
	kasan_int_result = ((volatile struct rcu_victim *)v)->value;
}

static NOINLINE void rcu_uaf(struct kunit *test)
{
	struct rcu_victim *v = kmalloc(sizeof(*v), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, v);
	rcu_victim = v;
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free",
				     call_rcu(&rcu_victim->rcu, rcu_victim_reclaim); rcu_barrier());
}

static void self_freeing_work(struct work_struct *work)
{
	kfree(work);
}

/* the work item frees itself; the queue is gone; the item is read */
static NOINLINE void workqueue_uaf(struct kunit *test)
{
	struct workqueue_struct *wq = create_workqueue("kasan_workqueue_test");
	struct work_struct *work;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, wq);
	work = kmalloc(sizeof(*work), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, work);
	INIT_WORK(work, self_freeing_work);
	queue_work(wq, work);
	destroy_workqueue(wq);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free",
				     kasan_int_result = ((volatile struct work_struct *)work)->data.counter);
}

/* ---- other names of the same object: freeing through them is fine ------------------------- */
static void kfree_via_page(struct kunit *test)
{
	char *buf = kmalloc(8, GFP_KERNEL);
	struct page *page;
	unsigned long off;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	page = virt_to_page(buf);
	off = offset_in_page(buf);
	kfree((char *)page_address(page) + off);
}

static void kfree_via_phys(struct kunit *test)
{
	char *buf = kmalloc(8, GFP_KERNEL);
	phys_addr_t phys;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	phys = virt_to_phys(buf);
	kfree(phys_to_virt(phys));
}

/* ---- kmem_cache ----------------------------------------------------------------------------- */
static void kmem_cache_oob(struct kunit *test)
{
	size_t len = 200;
	struct kmem_cache *s = kmem_cache_create("test_cache", len, 0, 0, NULL);
	char *obj;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	obj = kmem_cache_alloc(s, GFP_KERNEL);
	if (!obj) {
		KUNIT_FAIL(test, "allocation failed");
		kmem_cache_destroy(s);
		return;
	}
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", *obj = obj[len]);
	kmem_cache_free(s, obj);
	kmem_cache_destroy(s);
}

static void kmem_cache_double_free(struct kunit *test)
{
	struct kmem_cache *s = kmem_cache_create("test_cache", 200, 0, 0, NULL);
	char *obj;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	obj = kmem_cache_alloc(s, GFP_KERNEL);
	if (!obj) {
		KUNIT_FAIL(test, "allocation failed");
		kmem_cache_destroy(s);
		return;
	}
	kmem_cache_free(s, obj);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "double-free", kmem_cache_free(s, obj));
	kmem_cache_destroy(s);
}

/* a pointer inside an object of an RCU cache: the invalid free is caught
 * before the cache's RCU rule (no poisoning on free) applies */
static void kmem_cache_invalid_free(struct kunit *test)
{
	struct kmem_cache *s = kmem_cache_create("test_cache", 200, 0, SLAB_TYPESAFE_BY_RCU, NULL);
	char *obj;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	obj = kmem_cache_alloc(s, GFP_KERNEL);
	if (!obj) {
		KUNIT_FAIL(test, "allocation failed");
		kmem_cache_destroy(s);
		return;
	}
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "invalid-free", kmem_cache_free(s, obj + 1));
	kmem_cache_free(s, obj);          /* the bad free freed nothing */
	kmem_cache_destroy(s);
}

/* CONFIG_SLUB_RCU_DEBUG (odebug.slub_rcu_debug=, on with KASAN): a free is
 * deferred past a grace period, so a read inside it is legal, one after
 * rcu_barrier() a use-after-free */
static bool slub_rcu_debug_on(struct kunit *test)
{
	char *v = odb_param_get(test->k, "odebug.slub_rcu_debug");
	bool on = v && !strcmp(v, "on");

	odb_free(v);
	return on;
}

static void kmem_cache_rcu_uaf(struct kunit *test)
{
	struct kmem_cache *s;
	char *obj;

	if (!slub_rcu_debug_on(test))
		kunit_skip(test, "needs CONFIG_SLUB_RCU_DEBUG (odebug.slub_rcu_debug=on)");
	s = kmem_cache_create("test_cache", 200, 0, SLAB_TYPESAFE_BY_RCU, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	obj = kmem_cache_alloc(s, GFP_KERNEL);
	if (!obj) {
		KUNIT_FAIL(test, "allocation failed");
		kmem_cache_destroy(s);
		return;
	}
	*obj = 1;
	rcu_read_lock();
	kmem_cache_free(s, obj);
	KUNIT_EXPECT_EQ(test, *(volatile char *)obj, 1);   /* still inside the grace period */
	rcu_read_unlock();
	rcu_barrier();
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", *(volatile char *)obj);
	kmem_cache_destroy(s);
}

/* without CONFIG_SLUB_RCU_DEBUG an RCU object is reused at once, in place */
static void kmem_cache_rcu_reuse(struct kunit *test)
{
	struct kmem_cache *s;
	char *p, *p2;

	if (slub_rcu_debug_on(test))
		kunit_skip(test, "needs CONFIG_SLUB_RCU_DEBUG off (odebug.slub_rcu_debug=off)");
	s = kmem_cache_create("test_cache", 16, 0, SLAB_TYPESAFE_BY_RCU, NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	migrate_disable();
	p = kmem_cache_alloc(s, GFP_KERNEL);
	if (!p) {
		KUNIT_FAIL(test, "allocation failed");
		goto out;
	}
	kmem_cache_free(s, p);
	p2 = kmem_cache_alloc(s, GFP_KERNEL);
	if (!p2) {
		KUNIT_FAIL(test, "allocation failed");
		goto out;
	}
	KUNIT_EXPECT_PTR_EQ(test, p, p2);
	kmem_cache_free(s, p2);
out:
	migrate_enable();
	kmem_cache_destroy(s);
}

/* the cache's descriptor is a freed object of the kmem_cache cache */
static void kmem_cache_double_destroy(struct kunit *test)
{
	struct kmem_cache *s = kmem_cache_create("test_cache", 200, 0, SLAB_NO_MERGE, NULL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	kmem_cache_destroy(s);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kmem_cache_destroy(s));
}

static void kmem_cache_accounted(struct kunit *test)
{
	struct kmem_cache *s = kmem_cache_create("test_cache", 200, 0, SLAB_ACCOUNT, NULL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	for (int round = 0; round < 5; round++) {
		char *obj = kmem_cache_alloc(s, GFP_KERNEL);

		if (!obj) {
			KUNIT_FAIL(test, "allocation failed");
			break;
		}
		kmem_cache_free(s, obj);
		msleep(100);
	}
	kmem_cache_destroy(s);
}

static void kmem_cache_bulk(struct kunit *test)
{
	size_t len = 200;
	struct kmem_cache *s = kmem_cache_create("test_cache", len, 0, 0, NULL);
	char *objs[10];

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	if (!kmem_cache_alloc_bulk(s, GFP_KERNEL, ARRAY_SIZE(objs), (void **)objs)) {
		KUNIT_FAIL(test, "bulk allocation failed");
		kmem_cache_destroy(s);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(objs); i++)
		objs[i][0] = objs[i][len - 1] = 42;
	kmem_cache_free_bulk(s, ARRAY_SIZE(objs), (void **)objs);
	kmem_cache_destroy(s);
}

/* ---- mempool ---------------------------------------------------------------------------------- *
 * Each pool holds 4 elements and one is taken out at once: the cases' frees
 * then go back into the reserve (mempool_free's add_element), where KASAN
 * poisons them, rather than to the allocator. */
#define MEMPOOL_TEST_SIZE 4

static void *mempool_prepare_kmalloc(struct kunit *test, mempool_t *pool, size_t size)
{
	void *elem;

	if (mempool_init_kmalloc_pool(pool, MEMPOOL_TEST_SIZE, size)) {
		KUNIT_FAIL(test, "mempool_init_kmalloc_pool failed");
		return NULL;
	}
	elem = mempool_alloc_preallocated(pool);
	if (!elem) {
		KUNIT_FAIL(test, "the reserve is empty");
		mempool_exit(pool);
	}
	return elem;
}

static struct kmem_cache *mempool_prepare_slab(struct kunit *test, mempool_t *pool, size_t size,
					       void **extra)
{
	struct kmem_cache *cache = kmem_cache_create("test_cache", size, 0, 0, NULL);

	*extra = NULL;
	if (!cache) {
		KUNIT_FAIL(test, "kmem_cache_create failed");
		return NULL;
	}
	if (mempool_init_slab_pool(pool, MEMPOOL_TEST_SIZE, cache)) {
		KUNIT_FAIL(test, "mempool_init_slab_pool failed");
		kmem_cache_destroy(cache);
		return NULL;
	}
	*extra = mempool_alloc_preallocated(pool);
	if (!*extra) {
		KUNIT_FAIL(test, "the reserve is empty");
		mempool_exit(pool);
		kmem_cache_destroy(cache);
		return NULL;
	}
	return cache;
}

static void *mempool_prepare_page(struct kunit *test, mempool_t *pool, unsigned int order)
{
	void *elem;

	if (mempool_init_page_pool(pool, MEMPOOL_TEST_SIZE, order)) {
		KUNIT_FAIL(test, "mempool_init_page_pool failed");
		return NULL;
	}
	elem = mempool_alloc_preallocated(pool);
	if (!elem) {
		KUNIT_FAIL(test, "the reserve is empty");
		mempool_exit(pool);
	}
	return elem;
}

static void mempool_finish(mempool_t *pool, void *extra, struct kmem_cache *cache)
{
	mempool_free(extra, pool);
	mempool_exit(pool);
	if (cache)
		kmem_cache_destroy(cache);
}

/* the byte just past an element (generic KASAN is exact) */
static void mempool_oob_right_helper(struct kunit *test, mempool_t *pool, size_t size)
{
	char *elem = mempool_alloc_preallocated(pool);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, elem);
	OPTIMIZER_HIDE_VAR(elem);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", ((volatile char *)&elem[size])[0]);
	mempool_free(elem, pool);
}

/* an element read after mempool_free put it back into the reserve */
static void mempool_uaf_helper(struct kunit *test, mempool_t *pool, bool page, const char *type)
{
	char *elem = mempool_alloc_preallocated(pool), *ptr;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, elem);
	mempool_free(elem, pool);
	ptr = page ? page_address((struct page *)elem) : elem;
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, type, ((volatile char *)ptr)[0]);
}

static void mempool_double_free_helper(struct kunit *test, mempool_t *pool)
{
	char *elem = mempool_alloc_preallocated(pool);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, elem);
	mempool_free(elem, pool);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "double-free", mempool_free(elem, pool));
}

static void mempool_kmalloc_invalid_free_helper(struct kunit *test, mempool_t *pool)
{
	char *elem = mempool_alloc_preallocated(pool);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, elem);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "invalid-free", mempool_free(elem + 1, pool));
	mempool_free(elem, pool);
}

static void mempool_kmalloc_oob_right(struct kunit *test)
{
	size_t size = 128 - KASAN_GRANULE_SIZE - 5;
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, size);

	if (!extra)
		return;
	mempool_oob_right_helper(test, &pool, size);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_large_oob_right(struct kunit *test)
{
	size_t size = KMALLOC_MAX_CACHE_SIZE + 1;
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, size);

	if (!extra)
		return;
	mempool_oob_right_helper(test, &pool, size);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_slab_oob_right(struct kunit *test)
{
	size_t size = 123;
	mempool_t pool;
	void *extra;
	struct kmem_cache *cache = mempool_prepare_slab(test, &pool, size, &extra);

	if (!cache)
		return;
	mempool_oob_right_helper(test, &pool, size);
	mempool_finish(&pool, extra, cache);
}

static void mempool_kmalloc_uaf(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, 128);

	if (!extra)
		return;
	mempool_uaf_helper(test, &pool, false, "slab-use-after-free");
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_large_uaf(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, KMALLOC_MAX_CACHE_SIZE + 1);

	if (!extra)
		return;
	mempool_uaf_helper(test, &pool, false, "use-after-free");
	mempool_finish(&pool, extra, NULL);
}

static void mempool_slab_uaf(struct kunit *test)
{
	mempool_t pool;
	void *extra;
	struct kmem_cache *cache = mempool_prepare_slab(test, &pool, 123, &extra);

	if (!cache)
		return;
	mempool_uaf_helper(test, &pool, false, "slab-use-after-free");
	mempool_finish(&pool, extra, cache);
}

static void mempool_page_alloc_uaf(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_page(test, &pool, 2);

	if (!extra)
		return;
	mempool_uaf_helper(test, &pool, true, "use-after-free");
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_double_free(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, 128);

	if (!extra)
		return;
	mempool_double_free_helper(test, &pool);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_large_double_free(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, KMALLOC_MAX_CACHE_SIZE + 1);

	if (!extra)
		return;
	mempool_double_free_helper(test, &pool);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_page_alloc_double_free(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_page(test, &pool, 2);

	if (!extra)
		return;
	mempool_double_free_helper(test, &pool);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_invalid_free(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, 128);

	if (!extra)
		return;
	mempool_kmalloc_invalid_free_helper(test, &pool);
	mempool_finish(&pool, extra, NULL);
}

static void mempool_kmalloc_large_invalid_free(struct kunit *test)
{
	mempool_t pool;
	void *extra = mempool_prepare_kmalloc(test, &pool, KMALLOC_MAX_CACHE_SIZE + 1);

	if (!extra)
		return;
	mempool_kmalloc_invalid_free_helper(test, &pool);
	mempool_finish(&pool, extra, NULL);
}

/* ---- globals, stack, allocas ------------------------------------------------------------------- */
static char global_array[10];

/* through a volatile pointer: the compiler cannot know the array's bounds */
static void kasan_global_oob_right(struct kunit *test)
{
	char *volatile array = global_array;
	char *p = &array[ARRAY_SIZE(global_array) + 3];

	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "global-out-of-bounds", *(volatile char *)p);
}

/* Only clang leaves a red zone before a global (the previous global's);
 * gcc places none, and the kernel's test needs CONFIG_CC_IS_CLANG too. */
static void kasan_global_oob_left(struct kunit *test)
{
	char *volatile array = global_array;
	char *p = array - 3;

#ifndef __clang__
	kunit_skip(test, "gcc puts no red zone before a global (the kernel's test needs clang)");
#endif
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "global-out-of-bounds", *(volatile char *)p);
}

static void kasan_stack_oob(struct kunit *test)
{
	char stack_array[10];
	char *volatile array = stack_array;
	char *p = &array[ARRAY_SIZE(stack_array)];

	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "stack-out-of-bounds", *(volatile char *)p);
}

static void kasan_alloca_oob_left(struct kunit *test)
{
	volatile int n = 10;
	char alloca_array[n];
	char *volatile array = alloca_array;
	char *p = array - 1;

	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "alloca-out-of-bounds", *(volatile char *)p);
}

static void kasan_alloca_oob_right(struct kunit *test)
{
	volatile int n = 10;
	char alloca_array[n];
	char *volatile array = alloca_array;
	char *p = array + n;

	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "alloca-out-of-bounds", *(volatile char *)p);
}

/* ---- string functions --------------------------------------------------------------------- */
static void kasan_memchr(struct kunit *test)
{
	size_t len = 24;
	char *buf = kzalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(len);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     kasan_ptr_result = memchr(buf, '1', len + 1));
	kfree(buf);
}

static void kasan_memcmp(struct kunit *test)
{
	size_t len = 24;
	int zeros[9];
	char *buf = kzalloc(len, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	memset(zeros, 0, sizeof(zeros));
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(len);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     kasan_int_result = memcmp(buf, zeros, len + 1));
	kfree(buf);
}

static void kasan_strings(struct kunit *test)
{
	char *buf = kzalloc(24, GFP_KERNEL), *src;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	src = kzalloc(KASAN_GRANULE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, src);
	strscpy(src, "f0cacc1a0000000", KASAN_GRANULE_SIZE);
	/* a word read past src's end (into its red zone) is no report: only
	 * each word's first byte is checked; 6 characters are copied */
	KUNIT_EXPECT_EQ(test, KASAN_GRANULE_SIZE - 2, strscpy(buf, src + 1, KASAN_GRANULE_SIZE));
	/* but a first byte in the red zone is */
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     strscpy(buf, src + KASAN_GRANULE_SIZE, KASAN_GRANULE_SIZE));
	kfree(src);
	kfree(buf);
	/* past the free meta at the start of the freed object: a zero byte, so
	 * each function reads one byte and stops */
	buf += 16;
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kasan_ptr_result = strchr(buf, '1'));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kasan_ptr_result = strrchr(buf, '1'));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kasan_int_result = strcmp(buf, "2"));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free",
				     kasan_int_result = strncmp(buf, "2", 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", kasan_int_result = (long)strlen(buf));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free",
				     kasan_int_result = (long)strnlen(buf, 1));
}

/* ---- bitops on a 9-byte object: each works on the whole long (bytes 8..15) ----------------- */
static void bitops_modify(struct kunit *test, long nr, unsigned long *addr)
{
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", set_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", __set_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", clear_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", __clear_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", clear_bit_unlock(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", __clear_bit_unlock(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", change_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", __change_bit(nr, addr));
}

static void bitops_test_and_modify(struct kunit *test, long nr, unsigned long *addr)
{
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = test_and_set_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = __test_and_set_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = test_and_set_bit_lock(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = test_and_clear_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = __test_and_clear_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = test_and_change_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = __test_and_change_bit(nr, addr));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", kasan_int_result = test_bit(nr, addr));
}

static void kasan_bitops_generic(struct kunit *test)
{
	unsigned long *bits = kzalloc(sizeof(*bits) + 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, bits);
	/* bit 64: in the second long, of which only the first byte is the object's */
	bitops_modify(test, BITS_PER_LONG, bits);
	/* bit 72: past the object */
	bitops_test_and_modify(test, BITS_PER_LONG + BITS_PER_BYTE, bits);
	kfree(bits);
}

/* ---- copies ------------------------------------------------------------------------------------- */
/* 128 bytes to and from a 120-byte object (the other side a stack buffer) */
/* generic KASAN with CONFIG_KASAN_VMALLOC: an area's bytes past its size, in
 * the partial last granule and in the next one, are vmalloc-out-of-bounds */
static void vmalloc_oob(struct kunit *test)
{
	size_t size = PAGE_SIZE / 2 - KASAN_GRANULE_SIZE - 5;
	char *v = vmalloc(size);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, v);
	memset(v, 0, size);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "vmalloc-out-of-bounds", ((volatile char *)v)[size]);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "vmalloc-out-of-bounds", ((volatile char *)v)[size + 5]);
	vfree(v);
}

static void copy_to_kernel_nofault_oob(struct kunit *test)
{
	char stack_buf[128];
	size_t n = sizeof(stack_buf);
	char *buf = kmalloc(n - KASAN_GRANULE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	OPTIMIZER_HIDE_VAR(buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     copy_to_kernel_nofault(&stack_buf[0], buf, n));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     copy_to_kernel_nofault(buf, &stack_buf[0], n));
	kfree(buf);
}

/* one byte too many between a 120-byte object and "user" memory (host
 * memory outside the kernel): only the kernel side is KASAN's */
static void copy_user_test_oob(struct kunit *test)
{
	size_t n = 128 - KASAN_GRANULE_SIZE;
	char *kmem = kmalloc(n, GFP_KERNEL);
	char __user *umem;
	unsigned long left;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, kmem);
	umem = calloc(1, PAGE_SIZE);
	if (!umem) {
		KUNIT_FAIL(test, "no user memory");
		kfree(kmem);
		return;
	}
	OPTIMIZER_HIDE_VAR(n);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", left = copy_from_user(kmem, umem, n + 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", left = copy_to_user(umem, kmem, n + 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", left = __copy_from_user(kmem, umem, n + 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds", left = __copy_to_user(umem, kmem, n + 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     left = __copy_from_user_inatomic(kmem, umem, n + 1));
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     left = __copy_to_user_inatomic(umem, kmem, n + 1));
	/* a string as long as the object, so that the copy reaches the end */
	memset(kmem, 'a', n);
	KUNIT_EXPECT_EQ(test, copy_to_user(umem, kmem, n), 0);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-out-of-bounds",
				     kasan_int_result = strncpy_from_user(kmem, umem, (long)n + 1));
	(void)left;
	free(umem);
	kfree(kmem);
}

/* ---- the suite ---------------------------------------------------------------------------------- */
struct kunit_case {
	const char *name;
	void (*run)(struct kunit *test);
};
#define KUNIT_CASE(fn) { #fn, fn }

/* in the kernel suite's order */
static const struct kunit_case kasan_cases[] = {
	KUNIT_CASE(kmalloc_oob_right),
	KUNIT_CASE(kmalloc_oob_left),
	KUNIT_CASE(kmalloc_node_oob_right),
	KUNIT_CASE(kmalloc_track_caller_oob_right),
	KUNIT_CASE(kmalloc_big_oob_right),
	KUNIT_CASE(kmalloc_large_oob_right),
	KUNIT_CASE(kmalloc_large_uaf),
	KUNIT_CASE(kmalloc_large_invalid_free),
	KUNIT_CASE(page_alloc_uaf),
	KUNIT_CASE(krealloc_more_oob),
	KUNIT_CASE(krealloc_less_oob),
	KUNIT_CASE(krealloc_large_more_oob),
	KUNIT_CASE(krealloc_large_less_oob),
	KUNIT_CASE(krealloc_uaf),
	KUNIT_CASE(kmalloc_oob_16),
	KUNIT_CASE(kmalloc_uaf_16),
	KUNIT_CASE(kmalloc_oob_in_memset),
	KUNIT_CASE(kmalloc_oob_memset_2),
	KUNIT_CASE(kmalloc_oob_memset_4),
	KUNIT_CASE(kmalloc_oob_memset_8),
	KUNIT_CASE(kmalloc_oob_memset_16),
	KUNIT_CASE(kmalloc_memmove_negative_size),
	KUNIT_CASE(kmalloc_memmove_invalid_size),
	KUNIT_CASE(kmalloc_uaf),
	KUNIT_CASE(kmalloc_uaf_memset),
	KUNIT_CASE(kmalloc_uaf2),
	KUNIT_CASE(kmalloc_double_kzfree),
	KUNIT_CASE(ksize_unpoisons_memory),
	KUNIT_CASE(ksize_uaf),
	KUNIT_CASE(rcu_uaf),
	KUNIT_CASE(workqueue_uaf),
	KUNIT_CASE(kfree_via_page),
	KUNIT_CASE(kfree_via_phys),
	KUNIT_CASE(kmem_cache_oob),
	KUNIT_CASE(kmem_cache_double_free),
	KUNIT_CASE(kmem_cache_invalid_free),
	KUNIT_CASE(kmem_cache_rcu_uaf),
	KUNIT_CASE(kmem_cache_rcu_reuse),
	KUNIT_CASE(kmem_cache_double_destroy),
	KUNIT_CASE(kmem_cache_accounted),
	KUNIT_CASE(kmem_cache_bulk),
	KUNIT_CASE(mempool_kmalloc_oob_right),
	KUNIT_CASE(mempool_kmalloc_large_oob_right),
	KUNIT_CASE(mempool_slab_oob_right),
	KUNIT_CASE(mempool_kmalloc_uaf),
	KUNIT_CASE(mempool_kmalloc_large_uaf),
	KUNIT_CASE(mempool_slab_uaf),
	KUNIT_CASE(mempool_page_alloc_uaf),
	KUNIT_CASE(mempool_kmalloc_double_free),
	KUNIT_CASE(mempool_kmalloc_large_double_free),
	KUNIT_CASE(mempool_page_alloc_double_free),
	KUNIT_CASE(mempool_kmalloc_invalid_free),
	KUNIT_CASE(mempool_kmalloc_large_invalid_free),
	KUNIT_CASE(kasan_global_oob_right),
	KUNIT_CASE(kasan_global_oob_left),
	KUNIT_CASE(kasan_stack_oob),
	KUNIT_CASE(kasan_alloca_oob_left),
	KUNIT_CASE(kasan_alloca_oob_right),
	KUNIT_CASE(kasan_memchr),
	KUNIT_CASE(kasan_memcmp),
	KUNIT_CASE(kasan_strings),
	KUNIT_CASE(kasan_bitops_generic),
	KUNIT_CASE(kasan_atomics),
	KUNIT_CASE(vmalloc_oob),
	KUNIT_CASE(copy_to_kernel_nofault_oob),
	KUNIT_CASE(copy_user_test_oob),
};

/* The shim's own checks: each must FAIL (tests/test_cc_kasan_suite.py). */
static void shim_expectation_without_report(struct kunit *test)
{
	char *buf = kmalloc(16, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	KUNIT_EXPECT_KASAN_FAIL(test, ((volatile char *)buf)[15]);     /* in bounds */
	kfree(buf);
}

static void shim_report_outside_expectation(struct kunit *test)
{
	char *buf = kmalloc(16, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	kasan_int_result = ((volatile char *)buf)[16];                  /* unexpected */
	kfree(buf);
}

static void shim_report_of_another_type(struct kunit *test)
{
	char *buf = kmalloc(16, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buf);
	KUNIT_EXPECT_KASAN_FAIL_TYPE(test, "slab-use-after-free", ((volatile char *)buf)[16]);
	kfree(buf);
}

static const struct kunit_case shim_cases[] = {
	KUNIT_CASE(shim_expectation_without_report),
	KUNIT_CASE(shim_report_outside_expectation),
	KUNIT_CASE(shim_report_of_another_type),
};

size_t kasan_suite_count(void);
const char *kasan_suite_case(size_t i);
int kasan_suite_run(odb_kernel *k, const char *case_name, char *msg, size_t len);

size_t kasan_suite_count(void)
{
	return ARRAY_SIZE(kasan_cases);
}

const char *kasan_suite_case(size_t i)
{
	return i < ARRAY_SIZE(kasan_cases) ? kasan_cases[i].name : NULL;
}

/*
 * Run one case on k, which becomes the calling thread's current kernel for
 * it, with KASAN multi-shot on (as the kernel's suite_init turns it on) and
 * back as it was after.  Returns KUNIT_SUCCESS, KUNIT_FAILURE or
 * KUNIT_SKIPPED, with the case's log in msg; -1 for an unknown case name,
 * -2 if k cannot be entered.
 */
int kasan_suite_run(odb_kernel *k, const char *case_name, char *msg, size_t len)
{
	const struct kunit_case *c = NULL;
	struct kunit test;
	bool multi_shot = false;

	for (size_t i = 0; !c && i < ARRAY_SIZE(kasan_cases); i++)
		if (!strcmp(kasan_cases[i].name, case_name))
			c = &kasan_cases[i];
	for (size_t i = 0; !c && i < ARRAY_SIZE(shim_cases); i++)
		if (!strcmp(shim_cases[i].name, case_name))
			c = &shim_cases[i];
	if (!c)
		return -1;
	if (odb_cc_enter(k) != ODB_OK)
		return -2;
	memset(&test, 0, sizeof(test));
	test.k = k;
	test.name = c->name;
	odb_kasan_set_multi_shot(k, true, &multi_shot);
	test.seen = odb_report_count(k);
	c->run(&test);
	if (test.status != KUNIT_SKIPPED)
		kunit_no_stray_reports(&test, 0, "at the end of the case");
	odb_kasan_set_multi_shot(k, multi_shot, NULL);
	odb_cc_leave();
	if (msg && len)
		snprintf(msg, len, "%s", test.log);
	return test.status;
}
