/*
 * The out-of-line half of kernel_compat.h, in libodebug_kasan_rt.so: the
 * string functions, user copies and copy_to_kernel_nofault with the checks
 * the kernel's instrumented versions make, call_rcu's and the workqueues'
 * trampolines back into instrumented code, msleep.
 *
 * The runtime is not instrumented: every access these functions make on the
 * caller's behalf is checked explicitly (odb_rt_check), access by access as
 * the kernel's KASAN-built lib/string.c, mm/maccess.c and lib/usercopy.c
 * check them, and a bad access is reported with the caller's return address
 * (the report names the function that called strlen, as odebug's mem*
 * interceptors do).  As in the kernel, a string function goes on after a
 * report: the report does not change what it reads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "rt.h"

int odb_cc_enter(odb_kernel *k);
int odb_cc_leave(void);

#define WORD sizeof(unsigned long)
#define E2BIG_ 7

/* one instrumented byte load */
static inline unsigned char ld1(const void *p, unsigned long ip)
{
	odb_rt_check(p, 1, false, ip);
	return *(const volatile unsigned char *)p;
}

/* one instrumented word load (memcmp's get_unaligned) */
static inline unsigned long ldw(const void *p, unsigned long ip)
{
	unsigned long v;

	odb_rt_check(p, WORD, false, ip);
	memcpy(&v, p, WORD);
	return v;
}

/* ---- lib/string.c ------------------------------------------------------------ */
RT_API void *odb_cc_memchr(const void *s, int c, size_t n)
{
	unsigned long ip = RET_IP;
	const unsigned char *p = s;

	for (; n; n--, p++)
		if (ld1(p, ip) == (unsigned char)c)
			return (void *)p;
	return NULL;
}

/* x86-64 has efficient unaligned access: whole words while they compare
 * equal, then bytes */
RT_API int odb_cc_memcmp(const void *a, const void *b, size_t n)
{
	unsigned long ip = RET_IP;
	const unsigned char *x = a, *y = b;

	for (; n >= WORD; n -= WORD, x += WORD, y += WORD)
		if (ldw(x, ip) != ldw(y, ip))
			break;
	for (; n; n--, x++, y++) {
		int d = (int)ld1(x, ip) - (int)ld1(y, ip);

		if (d)
			return d;
	}
	return 0;
}

RT_API char *odb_cc_strchr(const char *s, int c)
{
	unsigned long ip = RET_IP;

	for (;; s++) {
		unsigned char ch = ld1(s, ip);

		if (ch == (unsigned char)c)
			return (char *)s;
		if (!ch)
			return NULL;
	}
}

RT_API char *odb_cc_strrchr(const char *s, int c)
{
	unsigned long ip = RET_IP;
	const char *last = NULL;

	for (;; s++) {
		unsigned char ch = ld1(s, ip);

		if (ch == (unsigned char)c)
			last = s;
		if (!ch)
			return (char *)last;
	}
}

RT_API int odb_cc_strcmp(const char *a, const char *b)
{
	unsigned long ip = RET_IP;

	for (;; a++, b++) {
		unsigned char x = ld1(a, ip), y = ld1(b, ip);

		if (x != y)
			return x < y ? -1 : 1;
		if (!x)
			return 0;
	}
}

RT_API int odb_cc_strncmp(const char *a, const char *b, size_t n)
{
	unsigned long ip = RET_IP;

	for (; n; n--, a++, b++) {
		unsigned char x = ld1(a, ip), y = ld1(b, ip);

		if (x != y)
			return x < y ? -1 : 1;
		if (!x)
			break;
	}
	return 0;
}

RT_API size_t odb_cc_strlen(const char *s)
{
	unsigned long ip = RET_IP;
	size_t n = 0;

	while (ld1(s + n, ip))
		n++;
	return n;
}

RT_API size_t odb_cc_strnlen(const char *s, size_t max)
{
	unsigned long ip = RET_IP;
	size_t n = 0;

	while (n < max && ld1(s + n, ip))
		n++;
	return n;
}

/*
 * strscpy: the kernel's copies a word at a time through read_word_at_a_time,
 * which checks only the word's first byte (a string may end before poisoned
 * bytes the word also covers), then bytes one by one.  Here: per word, the
 * first byte is checked and the word's bytes up to the NUL are taken; the
 * destination is written as the kernel writes it, a word (checked) at a
 * time.  Words never cross a page the source did not start in (an
 * unaligned source could end just before an unmapped page).  Returns the
 * length copied or -E2BIG (truncated, or count 0).
 */
RT_API ssize_t odb_cc_strscpy(char *dst, const char *src, size_t count)
{
	unsigned long ip = RET_IP;
	size_t res = 0, max = count;

	if (!count || count > 0x7fffffff)
		return -E2BIG_;
	if ((uintptr_t)src & (WORD - 1)) {
		size_t to_page = 4096 - ((uintptr_t)src & 4095);
		if (to_page < max)
			max = to_page;
	}
	while (max >= WORD) {
		unsigned char w[sizeof(unsigned long)];
		size_t z;

		odb_rt_check(src + res, 1, false, ip);
		memcpy(w, src + res, WORD);
		for (z = 0; z < WORD && w[z]; z++)
			;
		if (z < WORD) {                       /* the NUL is in this word */
			memset(w + z, 0, WORD - z);
			odb_rt_check(dst + res, WORD, true, ip);
			memcpy(dst + res, w, WORD);
			return (ssize_t)(res + z);
		}
		count -= WORD;
		if (!count) {                         /* truncated: NUL in the last byte */
			w[WORD - 1] = 0;
			odb_rt_check(dst + res, WORD, true, ip);
			memcpy(dst + res, w, WORD);
			return -E2BIG_;
		}
		odb_rt_check(dst + res, WORD, true, ip);
		memcpy(dst + res, w, WORD);
		res += WORD;
		max -= WORD;
	}
	for (; count > 1; count--, res++) {
		char c = (char)ld1(src + res, ip);

		odb_rt_check(dst + res, 1, true, ip);
		dst[res] = c;
		if (!c)
			return (ssize_t)res;
	}
	odb_rt_check(dst + res, 1, true, ip);
	dst[res] = '\0';
	return ld1(src + res, ip) ? -E2BIG_ : (ssize_t)res;
}

/* ---- mm/maccess.c, lib/usercopy.c ------------------------------------------------- */
/* copy_to_kernel_nofault: the destination is checked as a write and the
 * source as a read (both, then the copy: the kernel only reports).  odebug
 * cannot survive a fault: both ranges must be mapped host memory. */
RT_API long odb_cc_copy_to_kernel_nofault(void *dst, const void *src, size_t size)
{
	unsigned long ip = RET_IP;

	odb_rt_check(dst, size, true, ip);
	odb_rt_check(src, size, false, ip);
	memmove(dst, src, size);
	return 0;
}

/* "User memory" is host memory outside the current kernel's arena: access_ok
 * refuses a range that touches the arena. */
static bool access_ok(const void *p, size_t n)
{
	odb_kernel *k = odb_cc_current();
	uintptr_t a = (uintptr_t)p;

	if (n && a + n < a)
		return false;
	if (!k)
		return true;
	return !odb_virt_addr(k, p) && (!n || !odb_virt_addr(k, (const char *)p + n - 1));
}

/* copy_from_user family: the kernel buffer is checked as a write (the user
 * one is not KASAN's); returns the bytes not copied (a refused source: all,
 * and the destination is zeroed, as _copy_from_user does). */
static unsigned long from_user(void *to, const void *from, unsigned long n, bool check_user,
			       unsigned long ip)
{
	if (check_user && !access_ok(from, n)) {
		memset(to, 0, n);
		return n;
	}
	odb_rt_check(to, n, true, ip);
	memcpy(to, from, n);
	return 0;
}

static unsigned long to_user(void *to, const void *from, unsigned long n, bool check_user,
			     unsigned long ip)
{
	if (check_user && !access_ok(to, n))
		return n;
	odb_rt_check(from, n, false, ip);
	memcpy(to, from, n);
	return 0;
}

RT_API unsigned long odb_cc_copy_from_user(void *to, const void *from, unsigned long n)
{
	return from_user(to, from, n, true, RET_IP);
}

RT_API unsigned long odb_cc_copy_to_user(void *to, const void *from, unsigned long n)
{
	return to_user(to, from, n, true, RET_IP);
}

/* __copy_*_user and the _inatomic variants: no access_ok (the caller did it) */
RT_API unsigned long odb_cc___copy_from_user(void *to, const void *from, unsigned long n)
{
	return from_user(to, from, n, false, RET_IP);
}

RT_API unsigned long odb_cc___copy_to_user(void *to, const void *from, unsigned long n)
{
	return to_user(to, from, n, false, RET_IP);
}

/* strncpy_from_user: the whole destination (count bytes) is checked first,
 * then the string is copied up to its NUL; returns its length, count if no
 * NUL came within count bytes, -EFAULT for a refused source. */
RT_API long odb_cc_strncpy_from_user(char *dst, const char *src, long count)
{
	unsigned long ip = RET_IP;
	long n;

	if (count <= 0)
		return 0;
	odb_rt_check(dst, (size_t)count, true, ip);
	for (n = 0; n < count; n++) {
		if (!access_ok(src + n, 1))
			return -EFAULT;
		dst[n] = src[n];
		if (!src[n])
			return n;
	}
	return count;
}

/* ---- call_rcu ---------------------------------------------------------------------- */
/* The callback of kernel_compat.h's call_rcu: ctx is the user's
 * void (*)(struct rcu_head *), run in k (made current for it: the RCU work
 * may run on the real clock's worker thread). */
RT_API void odb_cc_rcu_adapter(odb_kernel *k, odb_addr_t head, void *ctx)
{
	void (*fn)(void *);
	bool entered = odb_cc_enter(k) == ODB_OK;

	memcpy(&fn, &ctx, sizeof(fn));
	fn(odb_host_ptr(k, head, 0));
	if (entered)
		odb_cc_leave();
}

/* ---- workqueues -------------------------------------------------------------------- */
/* kernel_compat.h's struct work_struct begins with its atomic_long_t data,
 * bit 0 WORK_STRUCT_PENDING: set by queue_work (in the caller's instrumented
 * code), cleared here before the function runs, as process_one_work does. */
struct cc_item {
	unsigned long *data;             /* &work->data: the work's first word */
	void (*func)(void *);
};

struct workqueue_struct {
	odb_kernel *k;
	char name[32];
	pthread_mutex_t lock;
	struct cc_item *items;           /* FIFO: [head, head + n) */
	size_t head, n, cap;
	odb_work *w;
};

/* The workqueue's worker: its items in queue order, each with the lock
 * dropped (a function may queue more, or free its own work item). */
static void wq_run(odb_kernel *k, void *arg)
{
	struct workqueue_struct *wq = arg;
	bool entered = odb_cc_enter(k) == ODB_OK;

	for (;;) {
		struct cc_item it;

		pthread_mutex_lock(&wq->lock);
		if (!wq->n) {
			pthread_mutex_unlock(&wq->lock);
			break;
		}
		it = wq->items[wq->head];
		wq->head = (wq->head + 1) % wq->cap;
		wq->n--;
		pthread_mutex_unlock(&wq->lock);
		/* set_work_pool_and_clear_pending: an atomic_long_set on the item */
		odb_rt_check(it.data, sizeof(*it.data), true, (unsigned long)(uintptr_t)wq_run);
		__atomic_and_fetch(it.data, ~1UL, __ATOMIC_RELEASE);
		it.func(it.data);
	}
	if (entered)
		odb_cc_leave();
}

RT_API struct workqueue_struct *odb_cc_alloc_workqueue(const char *fmt, ...)
{
	odb_kernel *k = odb_cc_current();
	struct workqueue_struct *wq;
	va_list ap;

	if (!k || !fmt)
		return NULL;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(wq->name, sizeof(wq->name), fmt, ap);
	va_end(ap);
	wq->k = k;
	pthread_mutex_init(&wq->lock, NULL);
	wq->w = odb_work_create(k, wq_run, wq);
	if (!wq->w) {
		pthread_mutex_destroy(&wq->lock);
		free(wq);
		return NULL;
	}
	return wq;
}

/* __queue_work + insert_work, after the caller's test_and_set_bit of the
 * pending bit and kasan_record_aux_stack (kernel_compat.h's queue_work makes
 * both, so that the recorded stack starts in the caller's function). */
RT_API bool odb_cc_queue_work(struct workqueue_struct *wq, void *work, void (*func)(void *))
{
	if (!wq || !work || !func)
		return false;
	pthread_mutex_lock(&wq->lock);
	if (wq->n == wq->cap) {
		size_t cap = wq->cap ? 2 * wq->cap : 8;
		struct cc_item *ni = malloc(cap * sizeof(*ni));

		if (!ni) {
			pthread_mutex_unlock(&wq->lock);
			__atomic_and_fetch((unsigned long *)work, ~1UL, __ATOMIC_RELEASE);
			return false;
		}
		for (size_t i = 0; i < wq->n; i++)
			ni[i] = wq->items[(wq->head + i) % wq->cap];
		free(wq->items);
		wq->items = ni;
		wq->head = 0;
		wq->cap = cap;
	}
	wq->items[(wq->head + wq->n) % wq->cap] = (struct cc_item){ work, func };
	wq->n++;
	pthread_mutex_unlock(&wq->lock);
	odb_schedule_work(wq->k, wq->w);
	return true;
}

/* Every item queued so far has run when this returns (items they queue too). */
RT_API void odb_cc_flush_workqueue(struct workqueue_struct *wq)
{
	if (!wq)
		return;
	while (odb_flush_work(wq->k, wq->w))
		;
}

RT_API void odb_cc_destroy_workqueue(struct workqueue_struct *wq)
{
	if (!wq)
		return;
	odb_cc_flush_workqueue(wq);
	odb_work_destroy(wq->k, wq->w);
	pthread_mutex_destroy(&wq->lock);
	free(wq->items);
	free(wq);
}

/* ---- msleep --------------------------------------------------------------------------- */
/* On a virtual clock the sleep is the kernel's time passing (its due work
 * runs); otherwise a real sleep. */
RT_API void odb_cc_msleep(unsigned int ms)
{
	odb_kernel *k = odb_cc_current();
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	if (k && odb_clock(k) == ODB_CLOCK_VIRTUAL) {
		odb_advance(k, (uint64_t)ms * 1000000ULL);
		return;
	}
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
