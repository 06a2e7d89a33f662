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
 * that kernel's shadow describes the memory); inside a registered global
 * its shadow here decides; inside the calling thread's own stack the real
 * shadow the compiler writes for stack frames decides (below); a bad global
 * or stack access is reported by the calling thread's current kernel (else
 * the last kernel registered) through odb_kasan_report_foreign; any other
 * host memory passes unchecked.
 *
 * Stacks.  gcc and clang poison a frame's red zones (KASAN_STACK_*) by
 * storing shadow bytes inline at (addr >> 3) + the shadow offset, with no
 * call to route.  So the runtime gives host memory a real shadow: at load it
 * reserves, MAP_NORESERVE, the shadow of the whole user address space
 * (2^47 / 8 = 16 TiB of address space at STACK_SHADOW_OFFSET, the offset
 * odebug.cc passes to the compiler; pages cost memory only once a frame's
 * shadow is written), and dynamic allocas (__asan_alloca_poison) and clang's
 * __asan_set_shadow_* write there too.  Only the calling thread's own stack
 * is checked against it (as the kernel describes only the task's own stack):
 * any other host memory's shadow may be stale (a thread that died mid-frame,
 * its stack reused by malloc) and is never read.  Without the reservation
 * (vm.overcommit_memory=2, the range taken) stack-instrumented code cannot
 * run: odb_cc_stack_shadow() says so and odebug.cc refuses to load.
 *
 * Not instrumented itself, and a separate library so that libodebug.so never
 * defines __asan_* (gcc's libasan, preloaded in sanitizer builds, does).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"

#define GRANULE 8u
#define GLOBAL_REDZONE 0xF9
#define CC_MAX_DEPTH 64

/* The shadow of host memory for stack frames: must be odebug/cc.py's
 * SHADOW_OFFSET.  2^44: the shadow of [0, 2^47) is [16 TiB, 32 TiB), a
 * range nothing maps in an x86-64 process (PIE images and the heap sit near
 * 85 TiB, mmap and stacks near 127 TiB). */
#define STACK_SHADOW_OFFSET 0x100000000000ULL
#define USER_ADDR_END       (1ULL << 47)
#define STACK_SHADOW_SIZE   (USER_ADDR_END >> 3)
#define KASAN_STACK_LEFT    0xF1
#define KASAN_ALLOCA_LEFT   0xCA
#define KASAN_ALLOCA_RIGHT  0xCB
#define KASAN_ALLOCA_REDZONE_SIZE 32u
#define KASAN_CURRENT_STACK_FRAME_MAGIC 0x41B58AB3UL
/* stacks are smaller than this (8 MiB by default): accesses farther from the
 * current frame are not to the calling thread's stack */
#define STACK_NEAR          ((uintptr_t)64 << 20)

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

/* set once, by the constructor, before any instrumented code of the process
 * can run (the runtime is a dependency of every instrumented object) */
static bool stack_shadow;
static __thread uintptr_t stk_lo, stk_hi;      /* the calling thread's stack, once known */
static __thread bool stk_known;

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

/* ---- host stacks: the real shadow ------------------------------------------------ */
__attribute__((constructor)) static void stack_shadow_init(void)
{
	void *want = (void *)(uintptr_t)STACK_SHADOW_OFFSET;
	void *p = mmap(want, STACK_SHADOW_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == want) {
		madvise(p, STACK_SHADOW_SIZE, MADV_DONTDUMP);
		stack_shadow = true;
		return;
	}
	if (p != MAP_FAILED)           /* a kernel without MAP_FIXED_NOREPLACE: a hint */
		munmap(p, STACK_SHADOW_SIZE);
	fprintf(stderr, "odebug.cc: cannot reserve the stack shadow (%#llx bytes at %#llx); code "
		"built with odebug.cc's flags cannot run in this process\n",
		(unsigned long long)STACK_SHADOW_SIZE, (unsigned long long)STACK_SHADOW_OFFSET);
}

/* Whether the stack shadow is there (odebug.cc checks it before loading code). */
RT_API bool odb_cc_stack_shadow(void)
{
	return stack_shadow;
}

static inline uint8_t *mem_to_shadow(uintptr_t a)
{
	return (uint8_t *)(uintptr_t)((a >> 3) + STACK_SHADOW_OFFSET);
}

static bool shadow_covers(uintptr_t a, size_t n)
{
	return stack_shadow && a < USER_ADDR_END && n <= USER_ADDR_END - a;
}

static void shadow_set(uintptr_t a, size_t n, uint8_t v)     /* a, n granule-aligned */
{
	if (n && shadow_covers(a, n))
		memset(mem_to_shadow(a), v, n / GRANULE);
}

static void thread_stack(void)
{
	pthread_attr_t at;
	void *addr;
	size_t size;

	stk_known = true;
	if (pthread_getattr_np(pthread_self(), &at))
		return;
	if (!pthread_attr_getstack(&at, &addr, &size) && shadow_covers((uintptr_t)addr, size)) {
		stk_lo = (uintptr_t)addr;
		stk_hi = stk_lo + size;
	}
	pthread_attr_destroy(&at);
}

/* The bug type of a bad stack byte, as report_generic.c names shadow values
 * (a partial granule: the next byte tells). */
static const char *stack_bug_type(uintptr_t bad)
{
	uint8_t v = *mem_to_shadow(bad);

	if (v > 0 && v < GRANULE)
		v = mem_to_shadow(bad)[1];
	switch (v) {
	case 0xF1: case 0xF2: case 0xF3: case 0xF4:
		return "stack-out-of-bounds";
	case KASAN_ALLOCA_LEFT: case KASAN_ALLOCA_RIGHT:
		return "alloca-out-of-bounds";
	case 0xF8:
		return "vmalloc-out-of-bounds";      /* the modern kernel's name for 0xF8 */
	default:
		return v < GRANULE ? "out-of-bounds" : "unknown-crash";
	}
}

/* The first bad byte of [a, a+n) (inside the thread's stack), or 0. */
static uintptr_t stack_first_bad(uintptr_t a, size_t n)
{
	uintptr_t end = a + n > stk_hi ? stk_hi : a + n;

	for (uintptr_t g = a & ~(uintptr_t)(GRANULE - 1); g < end; g += GRANULE) {
		uint8_t v = *mem_to_shadow(g);
		uintptr_t from = g < a ? a : g;

		if (!v)
			continue;
		if (v >= GRANULE)
			return from;
		if (g + v < end && from < end) {
			uintptr_t bad = g + v > from ? g + v : from;
			return bad;
		}
	}
	return 0;
}

static int stack_snap_byte(void *ctx, uint64_t granule)
{
	(void)ctx;
	if (granule < stk_lo || granule >= stk_hi)
		return -1;
	return *mem_to_shadow((uintptr_t)granule);
}

/*
 * "The buggy address belongs to stack of task ..." and, when the bad byte
 * lies in an instrumented frame, the frame's function and its objects, from
 * the frame's header that the compiler writes at the frame's first granule
 * after its left red zone: { KASAN_CURRENT_STACK_FRAME_MAGIC, description,
 * pc }, the description being "N off size len name[:line] ..." (the kernel's
 * print_address_stack_frame / print_decoded_frame_descr).  Walked as the
 * kernel walks it: down the shadow to the frame's KASAN_STACK_LEFT bytes.
 * The header lives in user-writable memory: the description is read only
 * if it lies in a loaded module, and parsed within bounds.
 */
static void describe_stack(odb_kernel *k, uintptr_t bad, char *out, size_t len)
{
	char comm[32], sym[160];
	uintptr_t g = bad & ~(uintptr_t)(GRANULE - 1);
	const unsigned long *frame;
	const char *descr, *p;
	unsigned long nobj;
	size_t used;
	Dl_info di;
	int n;

	odb_current_comm(k, comm, sizeof(comm));
	n = snprintf(out, len, "The buggy address belongs to stack of task %s/%d", comm,
		     odb_current_pid(k));
	used = n > 0 && (size_t)n < len ? (size_t)n : len - 1;
	while (g >= stk_lo && *mem_to_shadow(g) != KASAN_STACK_LEFT)
		g -= GRANULE;
	while (g >= stk_lo && *mem_to_shadow(g) == KASAN_STACK_LEFT)
		g -= GRANULE;
	if (g < stk_lo || g + GRANULE + 3 * sizeof(long) > stk_hi)
		return;
	frame = (const unsigned long *)(g + GRANULE);
	if (frame[0] != KASAN_CURRENT_STACK_FRAME_MAGIC)
		return;
	descr = (const char *)frame[1];
	odb_sprint_symbol(k, frame[2], sym, sizeof(sym));     /* %pS of the frame's pc */
	n = snprintf(out + used, len - used, "\n and is located at offset %lu in frame:\n %s",
		     (unsigned long)(bad - (uintptr_t)frame), sym);
	used += n > 0 && (size_t)n < len - used ? (size_t)n : 0;
	if (!dladdr(descr, &di))
		return;
	p = descr;
	nobj = strtoul(p, (char **)&p, 10);
	if (p == descr || nobj > 64)
		return;
	n = snprintf(out + used, len - used, "\n\nThis frame has %lu %s:", nobj,
		     nobj == 1 ? "object" : "objects");
	used += n > 0 && (size_t)n < len - used ? (size_t)n : 0;
	for (unsigned long i = 0; i < nobj; i++) {
		unsigned long off, size, nlen;
		const char *q = p, *name;
		size_t show;

		off = strtoul(q, (char **)&p, 10);
		size = strtoul(q = p, (char **)&p, 10);
		nlen = strtoul(q = p, (char **)&p, 10);
		if (p == q || *p != ' ' || nlen > 128)
			return;
		name = p + 1;
		if (strnlen(name, nlen) < nlen)
			return;
		p = name + nlen;
		/* the kernel drops ":line" (no file name, not very helpful) */
		for (show = 0; show < nlen && name[show] != ':'; show++)
			;
		n = snprintf(out + used, len - used, "\n [%lu, %lu) '%.*s'", off, off + size,
			     (int)show, name);
		used += n > 0 && (size_t)n < len - used ? (size_t)n : 0;
	}
}

/* A bad byte in the calling thread's stack: true if all is well. */
static bool check_stack(uintptr_t a, size_t n, bool write, unsigned long ip)
{
	struct snapshot snap;
	struct odb_kasan_foreign f;
	char desc[1024];
	uintptr_t bad = stack_first_bad(a, n);
	odb_kernel *k;

	if (!bad)
		return true;
	pthread_rwlock_rdlock(&reg_lock);
	k = odb_cc_current();
	if (!k)
		k = last_kernel;
	pthread_rwlock_unlock(&reg_lock);
	if (!k) {
		atomic_fetch_add(&unreported, 1);
		return false;
	}
	describe_stack(k, bad, desc, sizeof(desc));
	snap.first = (bad & ~(uintptr_t)(16 * GRANULE - 1)) - 2 * 16 * GRANULE;
	for (unsigned int i = 0; i < SNAP_GRANULES; i++)
		snap.snap[i] = (int16_t)stack_snap_byte(NULL, snap.first + (uintptr_t)i * GRANULE);
	f = (struct odb_kasan_foreign){ stack_bug_type(bad), desc, bad, snap_byte, &snap };
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
	/* the calling thread's stack holds this frame: an address far from it is
	 * not on that stack (no thread-local lookup for the heap and the main
	 * thread's mmaps, which sit at least 128 MiB below its stack) */
	if (a - ((uintptr_t)__builtin_frame_address(0) - STACK_NEAR) < 2 * STACK_NEAR) {
		if (!stk_known)
			thread_stack();
		if (a < stk_hi && a >= stk_lo)
			return check_stack(a, n, write, ip);
	}
	return true;
}

bool odb_rt_check(const void *p, size_t n, bool write, unsigned long ip)
{
	return check(p, n, write, ip);
}

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

/* mm/kasan/shadow.c's kasan_check_read / kasan_check_write (what the
 * kernel's instrumented atomics, bitops and read_word_at_a_time call):
 * kernel_compat.h maps them here.  True if the access was good. */
RT_API bool __kasan_check_read(const volatile void *p, unsigned int size)
{
	return check((const void *)p, size, false, RET_IP);
}

RT_API bool __kasan_check_write(const volatile void *p, unsigned int size)
{
	return check((const void *)p, size, true, RET_IP);
}

/* A noreturn call (longjmp, exit, a thread's end) leaves the frames it
 * skips poisoned: the thread's stack from here up is unpoisoned, as the
 * user-space ASan runtime does (the kernel's generic KASAN has nothing to do
 * there). */
RT_API void __asan_handle_no_return(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) & ~(uintptr_t)(GRANULE - 1);

	if (!stk_known)
		thread_stack();
	if (sp >= stk_lo && sp < stk_hi)
		shadow_set(sp, stk_hi - sp, 0);
}

/* A dynamic alloca of size bytes at addr (aligned to 32): its bytes
 * accessible, KASAN_ALLOCA_REDZONE_SIZE bytes of KASAN_ALLOCA_LEFT before
 * it, KASAN_ALLOCA_RIGHT from the end of its last granule to the next
 * 32-byte boundary plus one more red zone (mm/kasan/generic.c). */
RT_API void __asan_alloca_poison(void *addr, size_t size)
{
	uintptr_t a = (uintptr_t)addr;
	size_t whole = size & ~(size_t)(GRANULE - 1);
	size_t up = (size + GRANULE - 1) & ~(size_t)(GRANULE - 1);
	size_t right = ((size + KASAN_ALLOCA_REDZONE_SIZE - 1) & ~(size_t)(KASAN_ALLOCA_REDZONE_SIZE - 1)) -
		       up + KASAN_ALLOCA_REDZONE_SIZE;

	if (a < KASAN_ALLOCA_REDZONE_SIZE || (a & (GRANULE - 1)) || size > USER_ADDR_END ||
	    !shadow_covers(a - KASAN_ALLOCA_REDZONE_SIZE, up + right + KASAN_ALLOCA_REDZONE_SIZE))
		return;
	shadow_set(a - KASAN_ALLOCA_REDZONE_SIZE, KASAN_ALLOCA_REDZONE_SIZE, KASAN_ALLOCA_LEFT);
	shadow_set(a, whole, 0);
	if (size & (GRANULE - 1))
		*mem_to_shadow(a + whole) = (uint8_t)(size & (GRANULE - 1));
	shadow_set(a + up, right, KASAN_ALLOCA_RIGHT);
}

/* The allocas of a frame (or a scope) go away: [top, bottom) accessible again. */
RT_API void __asan_allocas_unpoison(void *top, void *bottom)
{
	uintptr_t t = (uintptr_t)top & ~(uintptr_t)(GRANULE - 1), b = (uintptr_t)bottom;

	if (!top || t > b)
		return;
	shadow_set(t, ((b - t) + GRANULE - 1) & ~(uintptr_t)(GRANULE - 1), 0);
}

/* clang's out-of-line frame poisoning (-asan-max-inline-poisoning-size):
 * addr is already a shadow address. */
#define DEFINE_ASAN_SET_SHADOW(byte)                                                         \
	RT_API void __asan_set_shadow_##byte(void *addr, size_t size)                        \
	{                                                                                    \
		uintptr_t s = (uintptr_t)addr;                                               \
		if (stack_shadow && s >= STACK_SHADOW_OFFSET &&                              \
		    s - STACK_SHADOW_OFFSET <= STACK_SHADOW_SIZE &&                          \
		    size <= STACK_SHADOW_SIZE - (s - STACK_SHADOW_OFFSET))                   \
			memset(addr, 0x##byte, size);                                        \
	}
DEFINE_ASAN_SET_SHADOW(00)
DEFINE_ASAN_SET_SHADOW(f1)
DEFINE_ASAN_SET_SHADOW(f2)
DEFINE_ASAN_SET_SHADOW(f3)
DEFINE_ASAN_SET_SHADOW(f5)
DEFINE_ASAN_SET_SHADOW(f8)

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

/* The memcpy/memset/memmove calls the compiler itself emits (a struct copy,
 * a loop turned into memset: gcc < 13 and clang < 16 have no option to give
 * them the __asan_ prefix in kernel-address mode) are checked too: odebug.cc's
 * ldflags link instrumented code with --wrap=memcpy,... so that they come
 * here, as the kernel's own memcpy/memset/memmove (mm/kasan/shadow.c) check
 * every call.  Host memory passes, so the rest of the program is unaffected. */
RT_API void *__wrap_memset(void *addr, int c, size_t len)
{
	if (!check(addr, len, true, RET_IP))
		return NULL;
	return memset(addr, c, len);
}

RT_API void *__wrap_memmove(void *dest, const void *src, size_t len)
{
	unsigned long ip = RET_IP;

	if (!check(src, len, false, ip) || !check(dest, len, true, ip))
		return NULL;
	return memmove(dest, src, len);
}

RT_API void *__wrap_memcpy(void *dest, const void *src, size_t len)
{
	unsigned long ip = RET_IP;

	if (!check(src, len, false, ip) || !check(dest, len, true, ip))
		return NULL;
	return memcpy(dest, src, len);
}
