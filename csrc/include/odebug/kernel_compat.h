/*
 * odebug/kernel_compat.h: kernel-named allocator calls over odebug.h, so that
 * kernel-style C (kmalloc, kfree, kmem_cache_*) runs on an odebug kernel.
 *
 * Optional; for code built with odebug.cc's flags (python -m odebug cc -- gcc
 * ...) and linked with libodebug_kasan_rt.so.  Objects are host pointers into
 * the arena of the calling thread's current kernel (odb_cc_enter(k) ...
 * odb_cc_leave()), converted with odb_host_ptr / odb_virt_addr: instrumented
 * code dereferences them directly and every access is KASAN-checked by that
 * kernel.  The macros are GNU C (statement expressions), as the kernel is:
 * each call is made from the user's function itself, so alloc/free tracks
 * name it.  Without a current kernel an allocation returns NULL.
 *
 *   kernel                           here
 *   kmalloc(n, GFP_KERNEL)           odb_kmalloc(k, n, ODB_GFP_KERNEL, &a) + odb_host_ptr
 *   kzalloc / kcalloc / kmalloc_array  with __GFP_ZERO / overflow-checked n * size
 *   kfree(p), ksize(p), krealloc     odb_kfree / odb_ksize / odb_krealloc (odb_virt_addr(k, p))
 *   vmalloc / vzalloc / __vmalloc    odb_vmalloc / odb_vzalloc / odb_vmalloc_gfp: a pointer into
 *                                    the kernel's vmalloc window (same pages as the direct map)
 *   vfree(p), kvmalloc, kvzalloc, kvfree  odb_vfree / odb_kvmalloc / odb_kvfree
 *   kmem_cache_create(name, size, align, flags, ctor)  odb_kmem_cache_create (ctor(void *))
 *   kmem_cache_alloc / zalloc / free / destroy          odb_kmem_cache_*
 *   memcpy / memset / memmove        __asan_memcpy / ... (mm/kasan/shadow.c's checks)
 */
#ifndef ODEBUG_KERNEL_COMPAT_H
#define ODEBUG_KERNEL_COMPAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <odebug/odebug.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the runtime's thread state (libodebug_kasan_rt.so) ---------------------- */
/* Make k the calling thread's current kernel (nests; also registers k's arena
 * with the runtime, which forgets it when k is destroyed). */
int odb_cc_enter(odb_kernel *k);
/* Back to the previous current kernel (ODB_ESTATE if none was entered). */
int odb_cc_leave(void);
/* The calling thread's current kernel, or NULL. */
odb_kernel *odb_cc_current(void);
/* Register k's arena without making it current. */
int odb_cc_register(odb_kernel *k);
/* Bad global accesses seen while no kernel was registered to report them. */
uint64_t odb_cc_unreported(void);
void odb_cc_ctor_adapter(odb_kernel *k, odb_addr_t object, void *ctx);

void *__asan_memcpy(void *dest, const void *src, size_t len);
void *__asan_memset(void *addr, int c, size_t len);
void *__asan_memmove(void *dest, const void *src, size_t len);

/* ---- gfp flags and slab flags ------------------------------------------------------- */
typedef unsigned int gfp_t;
#define GFP_KERNEL     ODB_GFP_KERNEL
#define GFP_ATOMIC     ODB_GFP_ATOMIC
#define GFP_NOWAIT     ODB_GFP_NOWAIT
#define __GFP_ZERO     ODB_GFP_ZERO
#define __GFP_NOWARN   ODB_GFP_NOWARN
#define __GFP_NOFAIL   ODB_GFP_NOFAIL
#define __GFP_HIGHMEM  ODB_GFP_HIGHMEM
#define SLAB_CONSISTENCY_CHECKS ODB_SLAB_CONSISTENCY_CHECKS
#define SLAB_RED_ZONE           ODB_SLAB_RED_ZONE
#define SLAB_POISON             ODB_SLAB_POISON
#define SLAB_HWCACHE_ALIGN      ODB_SLAB_HWCACHE_ALIGN
#define SLAB_STORE_USER         ODB_SLAB_STORE_USER
#define SLAB_TYPESAFE_BY_RCU    ODB_SLAB_TYPESAFE_BY_RCU
#define SLAB_NO_USER_FLAGS      ODB_SLAB_NO_USER_FLAGS
#define ZERO_SIZE_PTR           ((void *)16)
#define ZERO_OR_NULL_PTR(x)     ((uintptr_t)(x) <= (uintptr_t)ZERO_SIZE_PTR)

/* ---- pointer conversions (always inlined: tracks name the caller) ------------------- */
static inline __attribute__((always_inline)) void *odb_cc_ptr(odb_kernel *k, odb_addr_t a)
{
	if (a == ODB_ZERO_SIZE_PTR)
		return ZERO_SIZE_PTR;
	return a ? odb_host_ptr(k, a, 0) : NULL;
}
/* A host pointer's arena address; a pointer outside the arena is passed on
 * as it is (kfree of it is then the kernel's invalid free / bad address). */
static inline __attribute__((always_inline)) odb_addr_t odb_cc_addr(odb_kernel *k, const void *p)
{
	odb_addr_t a;

	if (!p)
		return 0;
	if (p == ZERO_SIZE_PTR)
		return ODB_ZERO_SIZE_PTR;
	a = odb_virt_addr(k, p);
	return a ? a : (odb_addr_t)(uintptr_t)p;
}

/* ---- kmalloc ------------------------------------------------------------------------ */
#define kmalloc(size, gfp) ({                                                   \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_kmalloc(k_, (size), (gfp), &a_) == ODB_OK) ? odb_cc_ptr(k_, a_) : (void *)0; })
#define kzalloc(size, gfp)  kmalloc((size), (gfp) | __GFP_ZERO)
#define kmalloc_array(n, size, gfp) ({                                          \
	size_t n_ = (n), s_ = (size), t_;                                      \
	__builtin_mul_overflow(n_, s_, &t_) ? (void *)0 : kmalloc(t_, (gfp)); })
#define kcalloc(n, size, gfp) kmalloc_array((n), (size), (gfp) | __GFP_ZERO)
#define kfree(p) do {                                                           \
	odb_kernel *k_ = odb_cc_current();                                     \
	const void *p_ = (p);                                                  \
	if (k_ && p_)                                                          \
		odb_kfree(k_, odb_cc_addr(k_, p_));                            \
} while (0)
#define ksize(p) ({                                                             \
	odb_kernel *k_ = odb_cc_current();                                     \
	size_t n_ = 0;                                                         \
	if (k_)                                                                \
		odb_ksize(k_, odb_cc_addr(k_, (p)), &n_);                      \
	n_; })
#define krealloc(p, size, gfp) ({                                               \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_krealloc(k_, odb_cc_addr(k_, (p)), (size), (gfp), &a_) == ODB_OK) ? \
		odb_cc_ptr(k_, a_) : (void *)0; })

/* ---- vmalloc --------------------------------------------------------------------- */
#define __vmalloc(size, gfp) ({                                                 \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_vmalloc_gfp(k_, (size), (gfp), &a_) == ODB_OK) ? odb_cc_ptr(k_, a_) : (void *)0; })
#define vmalloc(size) __vmalloc((size), GFP_KERNEL)
#define vzalloc(size) __vmalloc((size), GFP_KERNEL | __GFP_ZERO)
#define vfree(p) do {                                                           \
	odb_kernel *k_ = odb_cc_current();                                     \
	const void *p_ = (p);                                                  \
	if (k_ && p_)                                                          \
		odb_vfree(k_, odb_cc_addr(k_, p_));                            \
} while (0)
#define kvmalloc(size, gfp) ({                                                  \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_kvmalloc(k_, (size), (gfp), &a_) == ODB_OK) ? odb_cc_ptr(k_, a_) : (void *)0; })
#define kvzalloc(size, gfp) kvmalloc((size), (gfp) | __GFP_ZERO)
#define kvfree(p) do {                                                          \
	odb_kernel *k_ = odb_cc_current();                                     \
	const void *p_ = (p);                                                  \
	if (k_ && p_)                                                          \
		odb_kvfree(k_, odb_cc_addr(k_, p_));                           \
} while (0)

/* ---- slab caches ------------------------------------------------------------------ */
#define kmem_cache_create(name, size, align, flags, ctor) ({                    \
	odb_kernel *k_ = odb_cc_current();                                     \
	struct kmem_cache *s_ = NULL;                                          \
	void (*c_)(void *) = (ctor);                                           \
	void *x_ = NULL;                                                       \
	memcpy(&x_, &c_, sizeof(c_));                                          \
	if (k_)                                                                \
		odb_kmem_cache_create(k_, (name), (size), (align), (flags),    \
				      c_ ? odb_cc_ctor_adapter : NULL, x_, &s_); \
	s_; })
#define kmem_cache_alloc(s, gfp) ({                                             \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_kmem_cache_alloc(k_, (s), (gfp), &a_) == ODB_OK) ? odb_cc_ptr(k_, a_) : (void *)0; })
#define kmem_cache_zalloc(s, gfp) kmem_cache_alloc((s), (gfp) | __GFP_ZERO)
#define kmem_cache_free(s, p) do {                                              \
	odb_kernel *k_ = odb_cc_current();                                     \
	if (k_)                                                                \
		odb_kmem_cache_free(k_, (s), odb_cc_addr(k_, (p)));            \
} while (0)
#define kmem_cache_destroy(s) do {                                              \
	odb_kernel *k_ = odb_cc_current();                                     \
	if (k_ && (s))                                                         \
		odb_kmem_cache_destroy(k_, (s));                               \
} while (0)

/* ---- checked mem* (instrumented builds only) ------------------------------------- */
#if !defined(__SANITIZE_ADDRESS__) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ODB_CC_INSTRUMENTED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(ODB_CC_INSTRUMENTED)
#undef memcpy
#undef memset
#undef memmove
#define memcpy(d, s, n)  __asan_memcpy((d), (s), (n))
#define memset(p, c, n)  __asan_memset((p), (c), (n))
#define memmove(d, s, n) __asan_memmove((d), (s), (n))
#endif

#ifdef __cplusplus
}
#endif
#endif /* ODEBUG_KERNEL_COMPAT_H */
