/*
 * libodebug_kasan_rt.so: the KASAN runtime of C code built with odebug.cc's
 * flags (gcc / clang -fsanitize=kernel-address, every access through a call).
 *
 * The compiler's callbacks (__asan_load4_noabort(addr), ...) carry no context,
 * so this library is the one deliberate exception to odebug's "no global
 * mutable state": a process-wide registry, under one rwlock, of
 *  - the kernels instrumented code may touch (the host ranges of their
 *    arenas and of their vmalloc windows), added by odb_cc_enter /
 *    odb_cc_register and dropped by a destroy notifier (odb_kernel_on_destroy)
 *    before the memory goes away;
 *  - the globals the instrumentation registered (__asan_register_globals),
 *    each with its own shadow (0 / partial / KASAN_GLOBAL_REDZONE);
 * and, per thread, the stack of kernels the thread is running in
 * (odb_cc_enter / odb_cc_leave: thread-local, no lock).
 *
 * Routing an access of [p, p+n): inside a registered arena or vmalloc window
 * it is that kernel's access (odb_kasan_check_ip at the kernel address: only
 * that kernel's shadow describes the memory); inside a registered global its
 * shadow here decides, and a bad access is reported by the calling thread's
 * current kernel (else the last kernel registered) through
 * odb_kasan_report_foreign; any other host memory passes unchecked.
 *
 * Not instrumented itself, and a separate library so that libodebug.so never
 * defines __asan_* (gcc's libasan, preloaded in sanitizer builds, does).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <odebug/odebug.h>

#define RT_API __attribute__((visibility("default")))
#define GRANULE 8u
#define GLOBAL_REDZONE 0xF9
#define CC_MAX_DEPTH 64

/* The compiler's descriptor of an instrumented global (the kernel's struct
 * kasan_global, ABI of gcc >= 7 and clang). */
struct asan_global {
	const void *beg;
	size_t size;
	size_t size_with_redzone;
	const char *name;
	const char *module_name;
	size_t has_dynamic_init;
	void *location;
	size_t odr_indicator;
};

struct cc_kernel {
	odb_kernel *k;
	uintptr_t lo, hi;            /* host range of the arena */
	uintptr_t vlo, vhi;          /* host range of the vmalloc window */
	odb_addr_t vstart;           /* the kernel address of vlo (VMALLOC_START) */
};

struct cc_global {
	uintptr_t beg;
	size_t size, size_rz;
	const char *name;            /* the instrumentation's static string */
	uint8_t *shadow;             /* size_rz / 8 bytes */
};

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cc_kernel *kernels;        /* under reg_lock */
static size_t nkernels, kernels_cap;
static odb_kernel *last_kernel;          /* under reg_lock */
static struct cc_global *globals;        /* under reg_lock */
static size_t nglobals, globals_cap;
/* bounds over all arenas / all globals: the unlocked fast path for host memory */
static _Atomic uintptr_t arena_lo = UINTPTR_MAX, arena_hi;
static _Atomic uintptr_t glob_lo = UINTPTR_MAX, glob_hi;
static _Atomic uint64_t unreported;      /* bad global accesses with no kernel to report them */

static __thread odb_kernel *cur_stack[CC_MAX_DEPTH];
static __thread unsigned int cur_depth;

static void widen(_Atomic uintptr_t *lo, _Atomic uintptr_t *hi, uintptr_t a, uintptr_t b)
{
	uintptr_t v = atomic_load(lo);
	while (a < v && !atomic_compare_exchange_weak(lo, &v, a))
		;
	v = atomic_load(hi);
	while (b > v && !atomic_compare_exchange_weak(hi, &v, b))
		;
}

/* ---- kernels -------------------------------------------------------------------- */
static void forget_kernel(odb_kernel *k, void *ctx)
{
	(void)ctx;
	pthread_rwlock_wrlock(&reg_lock);
	for (size_t i = 0; i < nkernels; i++)
		if (kernels[i].k == k) {
			kernels[i] = kernels[--nkernels];
			break;
		}
	if (last_kernel == k)
		last_kernel = nkernels ? kernels[nkernels - 1].k : NULL;
	pthread_rwlock_unlock(&reg_lock);
	/* (the bounds only widen: a stale range costs a locked lookup, nothing else) */
}

RT_API int odb_cc_register(odb_kernel *k)
{
	uintptr_t lo, hi, vlo, vhi;
	void *base, *vbase;
	size_t len, vlen;
	int rc = ODB_OK;

	if (!k)
		return ODB_EINVAL;
	if (odb_host_region(k, ODB_REGION_ARENA, &base, &len) != ODB_OK ||
	    odb_host_region(k, ODB_REGION_VMALLOC, &vbase, &vlen) != ODB_OK)
		return ODB_EFAULT;
	lo = (uintptr_t)base;
	hi = lo + len;
	vlo = (uintptr_t)vbase;
	vhi = vlo + vlen;
	pthread_rwlock_wrlock(&reg_lock);
	for (size_t i = 0; i < nkernels; i++)
		if (kernels[i].k == k) {
			last_kernel = k;
			goto out;
		}
	if (nkernels == kernels_cap) {
		size_t cap = kernels_cap ? 2 * kernels_cap : 8;
		void *n = realloc(kernels, cap * sizeof(*kernels));
		if (!n) {
			rc = ODB_ENOMEM;
			goto out;
		}
		kernels = n;
		kernels_cap = cap;
	}
	rc = odb_kernel_on_destroy(k, forget_kernel, NULL);
	if (rc != ODB_OK)
		goto out;
	kernels[nkernels++] = (struct cc_kernel){ k, lo, hi, vlo, vhi, odb_vmalloc_start(k) };
	last_kernel = k;
	widen(&arena_lo, &arena_hi, lo, hi);
	widen(&arena_lo, &arena_hi, vlo, vhi);
out:
	pthread_rwlock_unlock(&reg_lock);
	return rc;
}

RT_API int odb_cc_enter(odb_kernel *k)
{
	int rc = odb_cc_register(k);

	if (rc != ODB_OK)
		return rc;
	if (cur_depth >= CC_MAX_DEPTH)
		return ODB_ERANGE;
	cur_stack[cur_depth++] = k;
	return ODB_OK;
}

RT_API int odb_cc_leave(void)
{
	if (!cur_depth)
		return ODB_ESTATE;
	cur_stack[--cur_depth] = NULL;
	return ODB_OK;
}

RT_API odb_kernel *odb_cc_current(void)
{
	return cur_depth ? cur_stack[cur_depth - 1] : NULL;
}

RT_API uint64_t odb_cc_unreported(void)
{
	return atomic_load(&unreported);
}

/* kmem_cache_create's ctor(void *) of kernel_compat.h, as an odb_ctor_fn */
RT_API void odb_cc_ctor_adapter(odb_kernel *k, odb_addr_t object, void *ctx)
{
	void (*ctor)(void *);

	memcpy(&ctor, &ctx, sizeof(ctor));
	ctor(odb_host_ptr(k, object, 1));
}

/* ---- globals -------------------------------------------------------------------- */
RT_API void __asan_register_globals(struct asan_global *g, size_t n)
{
	pthread_rwlock_wrlock(&reg_lock);
	for (size_t i = 0; i < n; i++) {
		struct cc_global cg;
		size_t ng;

		if (!g[i].beg || g[i].size_with_redzone < g[i].size)
			continue;
		if (nglobals == globals_cap) {
			size_t cap = globals_cap ? 2 * globals_cap : 64;
			void *nb = realloc(globals, cap * sizeof(*globals));
			if (!nb)
				break;
			globals = nb;
			globals_cap = cap;
		}
		ng = (g[i].size_with_redzone + GRANULE - 1) / GRANULE;
		cg.beg = (uintptr_t)g[i].beg;
		cg.size = g[i].size;
		cg.size_rz = g[i].size_with_redzone;
		cg.name = g[i].name ? g[i].name : "?";
		cg.shadow = malloc(ng ? ng : 1);
		if (!cg.shadow)
			break;
		/* as the kernel's register_global: accessible bytes, a partial
		 * granule, then KASAN_GLOBAL_REDZONE up to size_with_redzone */
		for (size_t j = 0; j < ng; j++) {
			size_t at = j * GRANULE;
			cg.shadow[j] = at + GRANULE <= cg.size ? 0 :
				       at < cg.size ? (uint8_t)(cg.size - at) : GLOBAL_REDZONE;
		}
		globals[nglobals++] = cg;
		widen(&glob_lo, &glob_hi, cg.beg, cg.beg + cg.size_rz);
	}
	pthread_rwlock_unlock(&reg_lock);
}

RT_API void __asan_unregister_globals(struct asan_global *g, size_t n)
{
	pthread_rwlock_wrlock(&reg_lock);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < nglobals; j++)
			if (globals[j].beg == (uintptr_t)g[i].beg) {
				free(globals[j].shadow);
				globals[j] = globals[--nglobals];
				break;
			}
	pthread_rwlock_unlock(&reg_lock);
}

static const struct cc_global *global_at(uintptr_t a)     /* under reg_lock */
{
	for (size_t i = 0; i < nglobals; i++)
		if (a >= globals[i].beg && a < globals[i].beg + globals[i].size_rz)
			return &globals[i];
	return NULL;
}

static int global_shadow(uintptr_t a)                       /* under reg_lock */
{
	const struct cc_global *g = global_at(a);

	return g ? g->shadow[(a - g->beg) / GRANULE] : -1;
}

#define SNAP_GRANULES 96      /* covers the report's five rows of 16 granules */
struct snapshot {
	uintptr_t first;          /* granule address of snap[0] */
	int16_t snap[SNAP_GRANULES];
};

static int snap_byte(void *ctx, uint64_t granule)
{
	const struct snapshot *s = ctx;
	uint64_t i;

	if (granule < s->first)
		return -1;
	i = (granule - s->first) / GRANULE;
	return i < SNAP_GRANULES ? s->snap[i] : -1;
}

/* A bad byte of [a, a+n) in registered globals: true if all is well. */
static bool check_global(uintptr_t a, size_t n, bool write, unsigned long ip)
{
	struct snapshot snap;
	struct odb_kasan_foreign f;
	char desc[384];
	uintptr_t bad = 0;
	bool found = false;
	odb_kernel *k;

	pthread_rwlock_rdlock(&reg_lock);
	for (uintptr_t p = a; p < a + n && p >= a; p++) {
		const struct cc_global *g = global_at(p);
		uint8_t v;

		if (!g) {
			p |= GRANULE - 1;        /* not a global's granule: next one */
			continue;
		}
		v = g->shadow[(p - g->beg) / GRANULE];
		if (v && (v >= GRANULE || (p & (GRANULE - 1)) >= v)) {
			bad = p;
			found = true;
			break;
		}
	}
	if (!found) {
		pthread_rwlock_unlock(&reg_lock);
		return true;
	}
	{
		/* "The buggy address belongs to the variable:" with %pS of the
		 * address: the global whose red zone it is in */
		const struct cc_global *g = global_at(a) ? global_at(a) : global_at(bad);
		snprintf(desc, sizeof(desc), "The buggy address belongs to the variable:\n %s+%#lx/%#lx",
			 g->name, (unsigned long)((global_at(a) ? a : bad) - g->beg),
			 (unsigned long)g->size_rz);
	}
	snap.first = (bad & ~(uintptr_t)(16 * GRANULE - 1)) - 2 * 16 * GRANULE;
	for (unsigned int i = 0; i < SNAP_GRANULES; i++)
		snap.snap[i] = (int16_t)global_shadow(snap.first + (uintptr_t)i * GRANULE);
	k = odb_cc_current();
	if (!k)
		k = last_kernel;
	pthread_rwlock_unlock(&reg_lock);
	if (!k) {
		atomic_fetch_add(&unreported, 1);
		return false;
	}
	f = (struct odb_kasan_foreign){ "global-out-of-bounds", desc, bad, snap_byte, &snap };
	/* (a kernel destroyed by another thread right now: the caller's race, as
	 * for any call on a kernel being destroyed) */
	odb_kasan_report_foreign(k, a, n, write, ip, &f);
	return false;
}

/* ---- the access check ------------------------------------------------------------ */
static bool check(const void *ptr, size_t n, bool write, unsigned long ip)
{
	uintptr_t a = (uintptr_t)ptr;
	bool ok = true;

	if (!n)
		return true;
	if (a < atomic_load_explicit(&arena_hi, memory_order_relaxed) &&
	    a + n > atomic_load_explicit(&arena_lo, memory_order_relaxed)) {
		pthread_rwlock_rdlock(&reg_lock);
		for (size_t i = 0; i < nkernels; i++) {
			odb_kernel *k = kernels[i].k;
			odb_addr_t at;

			if (a >= kernels[i].lo && a < kernels[i].hi)
				at = odb_arena_start(k) + (a - kernels[i].lo);
			else if (a >= kernels[i].vlo && a < kernels[i].vhi)
				at = kernels[i].vstart + (a - kernels[i].vlo);
			else
				continue;
			/* checked with the lock held: the destroy notifier waits */
			odb_kasan_check_ip(k, at, n, write, ip, &ok);
			pthread_rwlock_unlock(&reg_lock);
			return ok;
		}
		pthread_rwlock_unlock(&reg_lock);
	}
	if (a < atomic_load_explicit(&glob_hi, memory_order_relaxed) &&
	    a + n > atomic_load_explicit(&glob_lo, memory_order_relaxed))
		return check_global(a, n, write, ip);
	return true;
}

#define RET_IP ((unsigned long)__builtin_return_address(0))

#define DEFINE_ASAN_SIZED(sz)                                                               \
	RT_API void __asan_load##sz(void *p) { check(p, sz, false, RET_IP); }              \
	RT_API void __asan_load##sz##_noabort(void *p) { check(p, sz, false, RET_IP); }    \
	RT_API void __asan_store##sz(void *p) { check(p, sz, true, RET_IP); }              \
	RT_API void __asan_store##sz##_noabort(void *p) { check(p, sz, true, RET_IP); }    \
	RT_API void __asan_report_load##sz(void *p) { check(p, sz, false, RET_IP); }       \
	RT_API void __asan_report_load##sz##_noabort(void *p) { check(p, sz, false, RET_IP); } \
	RT_API void __asan_report_store##sz(void *p) { check(p, sz, true, RET_IP); }       \
	RT_API void __asan_report_store##sz##_noabort(void *p) { check(p, sz, true, RET_IP); }

DEFINE_ASAN_SIZED(1)
DEFINE_ASAN_SIZED(2)
DEFINE_ASAN_SIZED(4)
DEFINE_ASAN_SIZED(8)
DEFINE_ASAN_SIZED(16)

RT_API void __asan_loadN(void *p, size_t n) { check(p, n, false, RET_IP); }
RT_API void __asan_loadN_noabort(void *p, size_t n) { check(p, n, false, RET_IP); }
RT_API void __asan_storeN(void *p, size_t n) { check(p, n, true, RET_IP); }
RT_API void __asan_storeN_noabort(void *p, size_t n) { check(p, n, true, RET_IP); }
RT_API void __asan_report_load_n(void *p, size_t n) { check(p, n, false, RET_IP); }
RT_API void __asan_report_load_n_noabort(void *p, size_t n) { check(p, n, false, RET_IP); }
RT_API void __asan_report_store_n(void *p, size_t n) { check(p, n, true, RET_IP); }
RT_API void __asan_report_store_n_noabort(void *p, size_t n) { check(p, n, true, RET_IP); }

/* Host stacks have no shadow (odebug.cc builds with --param asan-stack=0, see
 * odebug/cc.py): nothing to unpoison on a noreturn call, and alloca red zones
 * are not tracked; the callbacks exist so that code built otherwise links. */
RT_API void __asan_handle_no_return(void) {}
RT_API void __asan_alloca_poison(void *addr, size_t size) { (void)addr; (void)size; }
RT_API void __asan_allocas_unpoison(void *top, void *bottom) { (void)top; (void)bottom; }

/* mm/kasan/shadow.c's interceptors: both ranges checked, the operation not
 * performed when a check fails (kernel_compat.h maps memcpy/memset/memmove
 * here; clang emits these names itself with -asan-kernel-mem-intrinsic-prefix). */
RT_API void *__asan_memset(void *addr, int c, size_t len)
{
	if (!check(addr, len, true, RET_IP))
		return NULL;
	return memset(addr, c, len);
}

RT_API void *__asan_memmove(void *dest, const void *src, size_t len)
{
	unsigned long ip = RET_IP;

	if (!check(src, len, false, ip) || !check(dest, len, true, ip))
		return NULL;
	return memmove(dest, src, len);
}

RT_API void *__asan_memcpy(void *dest, const void *src, size_t len)
{
	unsigned long ip = RET_IP;

	if (!check(src, len, false, ip) || !check(dest, len, true, ip))
		return NULL;
	return memcpy(dest, src, len);
}
