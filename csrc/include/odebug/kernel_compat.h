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
 *   kmem_cache_alloc_bulk / free_bulk                   odb_kmem_cache_*_bulk
 *   kmalloc_node / _track_caller     kmalloc (one node)
 *   alloc_pages / __free_pages / page_address / virt_to_page / virt_to_phys ...
 *                                    odb_alloc_pages / odb_free_pages (struct page
 *                                    pointers stand for page frames: never dereference)
 *   kfree_sensitive(p)               odb_kfree_sensitive
 *   mempool_t, mempool_create_*_pool, mempool_init_*_pool, mempool_alloc,
 *   mempool_alloc_preallocated, mempool_free, mempool_resize,
 *   mempool_destroy, mempool_exit    odb_mempool_* (mempool_t holds the pool; a page
 *                                    pool's elements are struct page pointers)
 *   kasan_poison / kasan_unpoison / kasan_unpoison_range, kasan_poison_pages /
 *   kasan_unpoison_pages, kasan_mempool_(un)poison_object / _pages      odb_kasan_*
 *   kasan_disable_current / kasan_enable_current     odb_kasan_disable_current / ...
 *   call_rcu / rcu_barrier / kfree_rcu  odb_call_rcu / odb_rcu_barrier / odb_kfree_rcu
 *   create_workqueue / queue_work / flush_workqueue / destroy_workqueue
 *                                    one odb_work per workqueue (the runtime's)
 *   msleep                           odb_advance on a virtual clock
 *   READ_ONCE, atomic_t / atomic_long_t, bitops   instrumented as the kernel's
 *                                    <linux/instrumented.h> wrappers: one check of the
 *                                    whole word (kasan_check_read / _write), then the
 *                                    uninstrumented operation (__atomic builtins)
 *   memcpy / memset / memmove        __asan_memcpy / ... (mm/kasan/shadow.c's checks)
 *   memchr, memcmp, str*, strscpy, copy_*_user, copy_to_kernel_nofault
 *                                    the runtime's, checked access by access as the
 *                                    kernel's KASAN-built lib/string.c and usercopy
 */
#ifndef ODEBUG_KERNEL_COMPAT_H
#define ODEBUG_KERNEL_COMPAT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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
/* mm/kasan/shadow.c's: check an access of size bytes at p as the calling
 * code's; true if it was good (else it was reported). */
bool __kasan_check_read(const volatile void *p, unsigned int size);
bool __kasan_check_write(const volatile void *p, unsigned int size);
#define kasan_check_read(p, size)  __kasan_check_read((p), (size))
#define kasan_check_write(p, size) __kasan_check_write((p), (size))
/* Whether the runtime holds the shadow stack frames are poisoned in. */
bool odb_cc_stack_shadow(void);

/* ---- gfp flags and slab flags ------------------------------------------------------- */
typedef unsigned int gfp_t;
#define GFP_KERNEL     ODB_GFP_KERNEL
#define GFP_ATOMIC     ODB_GFP_ATOMIC
#define GFP_NOWAIT     ODB_GFP_NOWAIT
#define __GFP_ZERO     ODB_GFP_ZERO
#define __GFP_NOWARN   ODB_GFP_NOWARN
#define __GFP_NOFAIL   ODB_GFP_NOFAIL
#define __GFP_HIGHMEM  ODB_GFP_HIGHMEM
#define __GFP_DIRECT_RECLAIM ODB_GFP_DIRECT_RECLAIM
#define SLAB_CONSISTENCY_CHECKS ODB_SLAB_CONSISTENCY_CHECKS
#define SLAB_RED_ZONE           ODB_SLAB_RED_ZONE
#define SLAB_POISON             ODB_SLAB_POISON
#define SLAB_HWCACHE_ALIGN      ODB_SLAB_HWCACHE_ALIGN
#define SLAB_STORE_USER         ODB_SLAB_STORE_USER
#define SLAB_TYPESAFE_BY_RCU    ODB_SLAB_TYPESAFE_BY_RCU
#define SLAB_NO_USER_FLAGS      ODB_SLAB_NO_USER_FLAGS
#define SLAB_NO_MERGE           ODB_SLAB_NO_MERGE
#define SLAB_ACCOUNT            ODB_SLAB_ACCOUNT
#define ZERO_SIZE_PTR           ((void *)16)
#define ZERO_OR_NULL_PTR(x)     ((uintptr_t)(x) <= (uintptr_t)ZERO_SIZE_PTR)
#define NUMA_NO_NODE            (-1)
#define PAGE_SHIFT              ODB_PAGE_SHIFT
#define PAGE_SIZE               ODB_PAGE_SIZE
#define PAGE_MASK               (~(PAGE_SIZE - 1))
#define KMALLOC_MAX_CACHE_SIZE  8192u            /* 2 * PAGE_SIZE: larger kmallocs are pages */
#define BITS_PER_LONG           64
#define BITS_PER_BYTE           8
#define ARRAY_SIZE(a)           (sizeof(a) / sizeof((a)[0]))
#define __user

/* ---- compiler ------------------------------------------------------------------ */
#define barrier()               __asm__ __volatile__("" ::: "memory")
/* the compiler forgets what it knew about var (its value, its object's bounds) */
#define OPTIMIZER_HIDE_VAR(var) __asm__ ("" : "+r" (var))
/* one access of the whole variable, instrumented as any access is */
#define READ_ONCE(x)            (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)        do { *(volatile __typeof__(x) *)&(x) = (v); } while (0)
#define smp_load_acquire(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- pointer conversions (always inlined: tracks name the caller) ------------------- */
static inline __attribute__((always_inline)) void *odb_cc_ptr(odb_kernel *k_, odb_addr_t a_)
{
	if (a_ == ODB_ZERO_SIZE_PTR)
		return ZERO_SIZE_PTR;
	return a_ ? odb_host_ptr(k_, a_, 0) : NULL;
}
/* A host pointer's arena address; a pointer outside the arena is passed on
 * as it is (kfree of it is then the kernel's invalid free / bad address). */
static inline __attribute__((always_inline)) odb_addr_t odb_cc_addr(odb_kernel *k_, const void *p_)
{
	odb_addr_t a_;

	if (!p_)
		return 0;
	if (p_ == ZERO_SIZE_PTR)
		return ODB_ZERO_SIZE_PTR;
	a_ = odb_virt_addr(k_, p_);
	return a_ ? a_ : (odb_addr_t)(uintptr_t)p_;
}

/* ---- kmalloc ------------------------------------------------------------------------ */
#define kmalloc(size, gfp) ({                                                   \
	odb_kernel *k_ = odb_cc_current();                                     \
	odb_addr_t a_ = 0;                                                     \
	(k_ && odb_kmalloc(k_, (size), (gfp), &a_) == ODB_OK) ? odb_cc_ptr(k_, a_) : (void *)0; })
#define kzalloc(size, gfp)  kmalloc((size), (gfp) | __GFP_ZERO)
/* one node, and tracks always name the caller */
#define kmalloc_node(size, gfp, node)  ((void)(node), kmalloc((size), (gfp)))
#define kzalloc_node(size, gfp, node)  ((void)(node), kzalloc((size), (gfp)))
#define kmalloc_track_caller(size, gfp) kmalloc((size), (gfp))
#define kmalloc_node_track_caller(size, gfp, node) kmalloc_node((size), (gfp), (node))
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
#define kfree_sensitive(p) do {                                                 \
	odb_kernel *k_ = odb_cc_current();                                     \
	const void *p_ = (p);                                                  \
	if (k_ && p_)                                                          \
		odb_kfree_sensitive(k_, odb_cc_addr(k_, p_));                  \
} while (0)

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

/* kmem_cache_alloc_bulk: all size objects or none (0); returns size */
static inline __attribute__((always_inline)) int
kmem_cache_alloc_bulk(struct kmem_cache *s_, gfp_t gfp_, size_t size_, void **p_)
{
	odb_kernel *k_ = odb_cc_current();
	odb_addr_t a_[16];
	size_t done_ = 0;

	if (!k_)
		return 0;
	while (done_ < size_) {
		size_t n_ = size_ - done_ < 16 ? size_ - done_ : 16;

		if (odb_kmem_cache_alloc_bulk(k_, s_, gfp_, n_, a_) != ODB_OK) {
			for (size_t i_ = 0; i_ < done_; i_++)
				odb_kmem_cache_free(k_, s_, odb_cc_addr(k_, p_[i_]));
			return 0;
		}
		for (size_t i_ = 0; i_ < n_; i_++)
			p_[done_ + i_] = odb_cc_ptr(k_, a_[i_]);
		done_ += n_;
	}
	return (int)size_;
}

static inline __attribute__((always_inline)) void
kmem_cache_free_bulk(struct kmem_cache *s_, size_t size_, void **p_)
{
	odb_kernel *k_ = odb_cc_current();
	odb_addr_t a_[16];

	if (!k_)
		return;
	for (size_t done_ = 0; done_ < size_;) {
		size_t n_ = size_ - done_ < 16 ? size_ - done_ : 16;

		for (size_t i_ = 0; i_ < n_; i_++)
			a_[i_] = odb_cc_addr(k_, p_[done_ + i_]);
		odb_kmem_cache_free_bulk(k_, s_, n_, a_);
		done_ += n_;
	}
}

/* ---- pages ------------------------------------------------------------------------ */
/* A struct page pointer names page frame pfn (the arena address
 * ODB_PAGE_OFFSET + pfn * PAGE_SIZE) at the kernel's vmemmap_base + pfn *
 * 64: an address of the kernel half, which faults if dereferenced. */
struct page;
typedef uint64_t phys_addr_t;
#define ODB_CC_VMEMMAP          0xffffea0000000000ULL
#define ODB_CC_STRUCT_PAGE_SIZE 64u
#define pfn_to_page(pfn)  ((struct page *)(uintptr_t)(ODB_CC_VMEMMAP + \
				(uint64_t)(pfn) * ODB_CC_STRUCT_PAGE_SIZE))
#define page_to_pfn(pg)   (((uint64_t)(uintptr_t)(pg) - ODB_CC_VMEMMAP) / ODB_CC_STRUCT_PAGE_SIZE)
#define offset_in_page(p) ((unsigned long)(uintptr_t)(p) & ~PAGE_MASK)
/* (functions, not macros: they nest, as page_address(virt_to_page(p)) does) */
static inline __attribute__((always_inline, unused)) phys_addr_t virt_to_phys(const volatile void *p_)
{
	odb_kernel *k_ = odb_cc_current();

	return k_ ? (phys_addr_t)(odb_cc_addr(k_, (const void *)p_) - ODB_PAGE_OFFSET) : 0;
}
static inline __attribute__((always_inline, unused)) void *phys_to_virt(phys_addr_t x_)
{
	odb_kernel *k_ = odb_cc_current();

	return k_ ? odb_cc_ptr(k_, x_ + ODB_PAGE_OFFSET) : (void *)0;
}
#define virt_to_page(p)   pfn_to_page(virt_to_phys(p) >> PAGE_SHIFT)
#define page_to_phys(pg)  ((phys_addr_t)page_to_pfn(pg) << PAGE_SHIFT)
#define page_address(pg)  phys_to_virt(page_to_phys(pg))
static inline __attribute__((always_inline, unused)) struct page *alloc_pages(gfp_t gfp_, unsigned int order_)
{
	odb_kernel *k_ = odb_cc_current();
	odb_addr_t a_ = 0;

	if (!k_ || odb_alloc_pages(k_, gfp_, order_, &a_) != ODB_OK)
		return (struct page *)0;
	return pfn_to_page((a_ - ODB_PAGE_OFFSET) >> PAGE_SHIFT);
}
static inline __attribute__((always_inline, unused)) void __free_pages(struct page *pg_, unsigned int order_)
{
	odb_kernel *k_ = odb_cc_current();

	if (k_ && pg_)
		odb_free_pages(k_, page_to_phys(pg_) + ODB_PAGE_OFFSET, order_);
}
static inline __attribute__((always_inline, unused)) unsigned long __get_free_pages(gfp_t gfp_,
										  unsigned int order_)
{
	struct page *pg_ = alloc_pages(gfp_, order_);

	return pg_ ? (unsigned long)(uintptr_t)page_address(pg_) : 0UL;
}
static inline __attribute__((always_inline, unused)) void free_pages(unsigned long addr_, unsigned int order_)
{
	odb_kernel *k_ = odb_cc_current();

	if (k_ && addr_)
		odb_free_pages(k_, odb_cc_addr(k_, (const void *)(uintptr_t)addr_), order_);
}

/* ---- mempool (mm/mempool.c) ------------------------------------------------------- *
 * mempool_t holds the kernel's pool, so that it can be embedded and set up
 * with mempool_init_*_pool (and mempool_exit), as well as created.  A page
 * pool's elements are struct page pointers, as the kernel's. */
typedef struct odb_cc_mempool { odb_mempool *pool; odb_kernel *k; int kind; } mempool_t;

static inline __attribute__((always_inline, unused)) int
odb_cc_mempool_init(mempool_t *m_, int kind_, int min_nr_, size_t arg_, struct kmem_cache *s_)
{
	odb_kernel *k_ = odb_cc_current();
	int r_;

	m_->pool = NULL;
	m_->k = k_;
	m_->kind = kind_;
	if (!k_)
		return -ENOMEM;
	r_ = kind_ == ODB_MEMPOOL_KMALLOC ? odb_mempool_create_kmalloc_pool(k_, min_nr_, arg_, &m_->pool) :
	     kind_ == ODB_MEMPOOL_SLAB ? odb_mempool_create_slab_pool(k_, min_nr_, s_, &m_->pool) :
	     odb_mempool_create_page_pool(k_, min_nr_, (unsigned int)arg_, &m_->pool);
	return r_ == ODB_OK ? 0 : r_ == ODB_ENOMEM ? -ENOMEM : -EINVAL;
}
static inline __attribute__((always_inline, unused)) mempool_t *
odb_cc_mempool_create(int kind_, int min_nr_, size_t arg_, struct kmem_cache *s_)
{
	mempool_t *m_ = (mempool_t *)malloc(sizeof(*m_));

	if (m_ && odb_cc_mempool_init(m_, kind_, min_nr_, arg_, s_)) {
		free(m_);
		m_ = NULL;
	}
	return m_;
}
#define mempool_init_kmalloc_pool(m, min_nr, size) \
	odb_cc_mempool_init((m), ODB_MEMPOOL_KMALLOC, (min_nr), (size), NULL)
#define mempool_init_slab_pool(m, min_nr, cache) \
	odb_cc_mempool_init((m), ODB_MEMPOOL_SLAB, (min_nr), 0, (cache))
#define mempool_init_page_pool(m, min_nr, order) \
	odb_cc_mempool_init((m), ODB_MEMPOOL_PAGE, (min_nr), (order), NULL)
#define mempool_create_kmalloc_pool(min_nr, size) \
	odb_cc_mempool_create(ODB_MEMPOOL_KMALLOC, (min_nr), (size), NULL)
#define mempool_create_slab_pool(min_nr, cache) \
	odb_cc_mempool_create(ODB_MEMPOOL_SLAB, (min_nr), 0, (cache))
#define mempool_create_page_pool(min_nr, order) \
	odb_cc_mempool_create(ODB_MEMPOOL_PAGE, (min_nr), (order), NULL)
/* an element as the kernel's code sees it (a page pool's: its struct page) */
static inline __attribute__((always_inline, unused)) void *odb_cc_mempool_elem(mempool_t *m_, odb_addr_t a_)
{
	if (m_->kind == ODB_MEMPOOL_PAGE)
		return (void *)pfn_to_page((a_ - ODB_PAGE_OFFSET) >> PAGE_SHIFT);
	return odb_cc_ptr(m_->k, a_);
}
static inline __attribute__((always_inline, unused)) void *mempool_alloc(mempool_t *m_, gfp_t gfp_)
{
	odb_addr_t a_ = 0;

	return (m_ && m_->k && odb_mempool_alloc(m_->k, m_->pool, gfp_, &a_) == ODB_OK) ?
		odb_cc_mempool_elem(m_, a_) : NULL;
}
static inline __attribute__((always_inline, unused)) void *mempool_alloc_preallocated(mempool_t *m_)
{
	odb_addr_t a_ = 0;

	return (m_ && m_->k && odb_mempool_alloc_preallocated(m_->k, m_->pool, &a_) == ODB_OK) ?
		odb_cc_mempool_elem(m_, a_) : NULL;
}
static inline __attribute__((always_inline, unused)) void mempool_free(void *element_, mempool_t *m_)
{
	odb_addr_t a_;

	if (!m_ || !m_->k || !element_)
		return;
	a_ = m_->kind == ODB_MEMPOOL_PAGE ?
		page_to_phys((struct page *)element_) + ODB_PAGE_OFFSET : odb_cc_addr(m_->k, element_);
	odb_mempool_free(m_->k, m_->pool, a_);
}
static inline __attribute__((always_inline, unused)) int mempool_resize(mempool_t *m_, int new_min_nr_)
{
	int r_ = m_ && m_->k ? odb_mempool_resize(m_->k, m_->pool, new_min_nr_) : ODB_EINVAL;

	return r_ == ODB_OK ? 0 : r_ == ODB_ENOMEM ? -ENOMEM : -EINVAL;
}
static inline __attribute__((always_inline, unused)) bool mempool_initialized(mempool_t *m_)
{
	return m_->pool != NULL;
}
static inline __attribute__((always_inline, unused)) void mempool_exit(mempool_t *m_)
{
	if (m_->k && m_->pool)
		odb_mempool_destroy(m_->k, m_->pool);
	m_->pool = NULL;
}
static inline __attribute__((always_inline, unused)) void mempool_destroy(mempool_t *m_)
{
	if (!m_)
		return;
	mempool_exit(m_);
	free(m_);
}

/* ---- KASAN's own API (include/linux/kasan.h, mm/kasan/kasan.h) ------------------------ */
/* mm/kasan/kasan.h's shadow values, for kasan_poison() (its KASAN_GRANULE_SIZE
 * is left to the user's code, as kasan_test_c.c defines what it needs) */
#ifndef KASAN_PAGE_FREE
#define KASAN_PAGE_FREE       0xFF
#define KASAN_PAGE_REDZONE    0xFE
#define KASAN_SLAB_REDZONE    0xFC
#define KASAN_SLAB_FREE       0xFB
#define KASAN_SLAB_FREE_META  0xFA
#define KASAN_GLOBAL_REDZONE  0xF9
#define KASAN_VMALLOC_INVALID 0xF8
#endif
#define odb_cc_kasan_(call) do {                                                \
	odb_kernel *k_ = odb_cc_current();                                     \
	if (k_)                                                                \
		call;                                                          \
} while (0)
#define kasan_poison(addr, size, value, init) \
	odb_cc_kasan_(odb_kasan_poison(k_, odb_cc_addr(k_, (addr)), (size), (value)))
#define kasan_unpoison(addr, size, init) \
	odb_cc_kasan_(odb_kasan_unpoison(k_, odb_cc_addr(k_, (addr)), (size)))
#define kasan_unpoison_range(addr, size) kasan_unpoison((addr), (size), false)
#define kasan_poison_pages(pg, order, init) \
	odb_cc_kasan_(odb_kasan_poison_pages(k_, page_to_phys(pg) + ODB_PAGE_OFFSET, (order)))
#define kasan_unpoison_pages(pg, order, init) \
	odb_cc_kasan_(odb_kasan_unpoison_pages(k_, page_to_phys(pg) + ODB_PAGE_OFFSET, (order)))
static inline __attribute__((always_inline, unused)) bool kasan_mempool_poison_object(void *ptr_)
{
	odb_kernel *k_ = odb_cc_current();
	bool reuse_ = true;

	if (k_)
		odb_kasan_mempool_poison_object(k_, odb_cc_addr(k_, ptr_), &reuse_);
	return reuse_;
}
#define kasan_mempool_unpoison_object(ptr, size) \
	odb_cc_kasan_(odb_kasan_mempool_unpoison_object(k_, odb_cc_addr(k_, (ptr)), (size)))
static inline __attribute__((always_inline, unused)) bool
kasan_mempool_poison_pages(struct page *pg_, unsigned int order_)
{
	odb_kernel *k_ = odb_cc_current();
	bool reuse_ = true;

	if (k_)
		odb_kasan_mempool_poison_pages(k_, page_to_phys(pg_) + ODB_PAGE_OFFSET, order_, &reuse_);
	return reuse_;
}
#define kasan_mempool_unpoison_pages(pg, order) \
	odb_cc_kasan_(odb_kasan_mempool_unpoison_pages(k_, page_to_phys(pg) + ODB_PAGE_OFFSET, (order)))
#define kasan_disable_current() odb_cc_kasan_(odb_kasan_disable_current(k_))
#define kasan_enable_current()  odb_cc_kasan_(odb_kasan_enable_current(k_))

/* ---- RCU ----------------------------------------------------------------------------- */
/* The kernel's callback_head.  odebug never reads it; call_rcu writes it,
 * as the kernel's does (an instrumented access: a freed head is reported). */
struct rcu_head {
	struct rcu_head *next;
	void (*func)(struct rcu_head *head);
};
typedef void (*rcu_callback_t)(struct rcu_head *head);
void odb_cc_rcu_adapter(odb_kernel *k, odb_addr_t head, void *ctx);
#define rcu_read_lock()   barrier()
#define rcu_read_unlock() barrier()
#define call_rcu(head, fn) do {                                                 \
	odb_kernel *k_ = odb_cc_current();                                     \
	struct rcu_head *h_ = (head);                                          \
	rcu_callback_t f_ = (fn);                                              \
	void *x_ = NULL;                                                       \
	h_->func = f_;                                                         \
	h_->next = NULL;                                                       \
	memcpy(&x_, &f_, sizeof(f_));                                          \
	if (k_)                                                                \
		odb_call_rcu(k_, odb_cc_addr(k_, h_), odb_cc_rcu_adapter, x_); \
} while (0)
/* A thread never moves between vCPUs unless it rebinds itself: nothing for
 * migrate_disable() to do. */
#define migrate_disable()  do { } while (0)
#define migrate_enable()   do { } while (0)
#define rcu_barrier() do {                                                      \
	odb_kernel *k_ = odb_cc_current();                                     \
	if (k_)                                                                \
		odb_rcu_barrier(k_);                                           \
} while (0)
#define kfree_rcu(p, field) do {                                                \
	odb_kernel *k_ = odb_cc_current();                                     \
	const void *p_ = (p);                                                  \
	if (k_ && p_)                                                          \
		odb_kfree_rcu(k_, odb_cc_addr(k_, p_));                        \
} while (0)

/* ---- sleeping ------------------------------------------------------------------------ */
void odb_cc_msleep(unsigned int ms);
#define msleep(ms) odb_cc_msleep(ms)

/* ---- atomics (<linux/atomic/atomic-instrumented.h>'s shape) ------------------------ *
 * Each operation checks its operand once, as a read (atomic_read) or a write
 * (everything that may store: atomic_set and every read-modify-write, which
 * the kernel instruments with instrument_atomic_read_write -> kasan_check_write),
 * then runs the arch operation, which is not instrumented. */
typedef struct { int counter; } atomic_t;
typedef struct { long counter; } atomic_long_t;
#define ATOMIC_INIT(i) { (i) }

#define ODB_CC_ARCH __attribute__((no_sanitize_address, unused)) static inline
#define ODB_CC_INSTR __attribute__((always_inline, unused)) static inline

#define ODB_CC_DEFINE_ATOMICS(pfx, atype, T)                                               \
ODB_CC_ARCH T arch_##pfx##_read(const atype *v_)                                           \
{ return __atomic_load_n(&v_->counter, __ATOMIC_RELAXED); }                                \
ODB_CC_ARCH void arch_##pfx##_set(atype *v_, T i_)                                         \
{ __atomic_store_n(&v_->counter, i_, __ATOMIC_RELAXED); }                                  \
ODB_CC_ARCH T arch_##pfx##_fetch_add(atype *v_, T i_)                                      \
{ return __atomic_fetch_add(&v_->counter, i_, __ATOMIC_SEQ_CST); }                         \
ODB_CC_ARCH T arch_##pfx##_fetch_and(atype *v_, T i_)                                      \
{ return __atomic_fetch_and(&v_->counter, i_, __ATOMIC_SEQ_CST); }                         \
ODB_CC_ARCH T arch_##pfx##_fetch_or(atype *v_, T i_)                                       \
{ return __atomic_fetch_or(&v_->counter, i_, __ATOMIC_SEQ_CST); }                          \
ODB_CC_ARCH T arch_##pfx##_fetch_xor(atype *v_, T i_)                                      \
{ return __atomic_fetch_xor(&v_->counter, i_, __ATOMIC_SEQ_CST); }                         \
ODB_CC_ARCH T arch_##pfx##_xchg(atype *v_, T i_)                                           \
{ return __atomic_exchange_n(&v_->counter, i_, __ATOMIC_SEQ_CST); }                        \
ODB_CC_ARCH bool arch_##pfx##_try_cmpxchg(atype *v_, T *old_, T new_)                      \
{ return __atomic_compare_exchange_n(&v_->counter, old_, new_, false, __ATOMIC_SEQ_CST,    \
				     __ATOMIC_RELAXED); }                                                              \
/* the generic fallbacks, on the arch operations */                                        \
ODB_CC_ARCH bool arch_##pfx##_add_unless(atype *v_, T a_, T u_)                            \
{ T c_ = arch_##pfx##_read(v_);                                                            \
  do { if (c_ == u_) return false; } while (!arch_##pfx##_try_cmpxchg(v_, &c_, c_ + a_));  \
  return true; }                                                                           \
ODB_CC_ARCH bool arch_##pfx##_inc_unless_negative(atype *v_)                               \
{ T c_ = arch_##pfx##_read(v_);                                                            \
  do { if (c_ < 0) return false; } while (!arch_##pfx##_try_cmpxchg(v_, &c_, c_ + 1));     \
  return true; }                                                                           \
ODB_CC_ARCH bool arch_##pfx##_dec_unless_positive(atype *v_)                               \
{ T c_ = arch_##pfx##_read(v_);                                                            \
  do { if (c_ > 0) return false; } while (!arch_##pfx##_try_cmpxchg(v_, &c_, c_ - 1));     \
  return true; }                                                                           \
ODB_CC_ARCH T arch_##pfx##_dec_if_positive(atype *v_)                                      \
{ T c_ = arch_##pfx##_read(v_);                                                            \
  do { if (c_ - 1 < 0) return c_ - 1; } while (!arch_##pfx##_try_cmpxchg(v_, &c_, c_ - 1)); \
  return c_ - 1; }                                                                         \
ODB_CC_INSTR T pfx##_read(const atype *v_)                                                 \
{ kasan_check_read(v_, sizeof(*v_)); return arch_##pfx##_read(v_); }                       \
ODB_CC_INSTR void pfx##_set(atype *v_, T i_)                                               \
{ kasan_check_write(v_, sizeof(*v_)); arch_##pfx##_set(v_, i_); }                          \
ODB_CC_INSTR T pfx##_fetch_add(T i_, atype *v_)                                            \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, i_); }             \
ODB_CC_INSTR T pfx##_add_return(T i_, atype *v_)                                           \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, i_) + i_; }        \
ODB_CC_INSTR void pfx##_add(T i_, atype *v_) { (void)pfx##_fetch_add(i_, v_); }            \
ODB_CC_INSTR void pfx##_sub(T i_, atype *v_) { (void)pfx##_fetch_add(-i_, v_); }           \
ODB_CC_INSTR void pfx##_inc(atype *v_) { (void)pfx##_fetch_add(1, v_); }                   \
ODB_CC_INSTR void pfx##_dec(atype *v_) { (void)pfx##_fetch_add(-1, v_); }                  \
ODB_CC_INSTR void pfx##_and(T i_, atype *v_)                                               \
{ kasan_check_write(v_, sizeof(*v_)); (void)arch_##pfx##_fetch_and(v_, i_); }              \
ODB_CC_INSTR void pfx##_andnot(T i_, atype *v_)                                            \
{ kasan_check_write(v_, sizeof(*v_)); (void)arch_##pfx##_fetch_and(v_, ~i_); }             \
ODB_CC_INSTR void pfx##_or(T i_, atype *v_)                                                \
{ kasan_check_write(v_, sizeof(*v_)); (void)arch_##pfx##_fetch_or(v_, i_); }               \
ODB_CC_INSTR void pfx##_xor(T i_, atype *v_)                                               \
{ kasan_check_write(v_, sizeof(*v_)); (void)arch_##pfx##_fetch_xor(v_, i_); }              \
ODB_CC_INSTR T pfx##_xchg(atype *v_, T i_)                                                 \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_xchg(v_, i_); }                  \
ODB_CC_INSTR T pfx##_cmpxchg(atype *v_, T old_, T new_)                                    \
{ kasan_check_write(v_, sizeof(*v_)); arch_##pfx##_try_cmpxchg(v_, &old_, new_); return old_; } \
/* the expected value is read and, on failure, written: checked as a write */              \
ODB_CC_INSTR bool pfx##_try_cmpxchg(atype *v_, T *old_, T new_)                            \
{ kasan_check_write(v_, sizeof(*v_)); kasan_check_write(old_, sizeof(*old_));              \
  return arch_##pfx##_try_cmpxchg(v_, old_, new_); }                                       \
ODB_CC_INSTR bool pfx##_sub_and_test(T i_, atype *v_)                                      \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, -i_) == i_; }      \
ODB_CC_INSTR bool pfx##_dec_and_test(atype *v_)                                            \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, -1) == 1; }        \
ODB_CC_INSTR bool pfx##_inc_and_test(atype *v_)                                            \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, 1) == -1; }        \
ODB_CC_INSTR bool pfx##_add_negative(T i_, atype *v_)                                      \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_fetch_add(v_, i_) + i_ < 0; }    \
ODB_CC_INSTR bool pfx##_add_unless(atype *v_, T a_, T u_)                                  \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_add_unless(v_, a_, u_); }        \
ODB_CC_INSTR bool pfx##_inc_not_zero(atype *v_) { return pfx##_add_unless(v_, 1, 0); }     \
ODB_CC_INSTR bool pfx##_inc_unless_negative(atype *v_)                                     \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_inc_unless_negative(v_); }       \
ODB_CC_INSTR bool pfx##_dec_unless_positive(atype *v_)                                     \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_dec_unless_positive(v_); }       \
ODB_CC_INSTR T pfx##_dec_if_positive(atype *v_)                                            \
{ kasan_check_write(v_, sizeof(*v_)); return arch_##pfx##_dec_if_positive(v_); }

ODB_CC_DEFINE_ATOMICS(atomic, atomic_t, int)
ODB_CC_DEFINE_ATOMICS(atomic_long, atomic_long_t, long)

/* ---- bitops (<asm-generic/bitops/instrumented-*.h>'s shape) -------------------------- *
 * Every operation checks the whole long holding bit nr (test_bit as a read,
 * all others as writes), then works on it uninstrumented. */
#define BIT_WORD(nr)  ((unsigned long)(nr) / BITS_PER_LONG)
#define BIT_MASK(nr)  (1UL << ((unsigned long)(nr) % BITS_PER_LONG))

ODB_CC_ARCH unsigned long odb_cc_bit_rmw(volatile unsigned long *w_, unsigned long mask_, int op_)
{
	unsigned long *p_ = (unsigned long *)w_;

	switch (op_) {
	case 0: return __atomic_fetch_or(p_, mask_, __ATOMIC_SEQ_CST);
	case 1: return __atomic_fetch_and(p_, ~mask_, __ATOMIC_SEQ_CST);
	case 2: return __atomic_fetch_xor(p_, mask_, __ATOMIC_SEQ_CST);
	case 3: return __atomic_fetch_and(p_, ~mask_, __ATOMIC_RELEASE);       /* _unlock */
	case 4: return __atomic_fetch_or(p_, mask_, __ATOMIC_ACQUIRE);         /* _lock */
	default: return __atomic_load_n(p_, __ATOMIC_RELAXED);
	}
}

ODB_CC_ARCH unsigned long odb_cc_bit_rmw_plain(volatile unsigned long *w_, unsigned long mask_, int op_)
{
	unsigned long old_ = *w_;

	*w_ = op_ == 0 ? old_ | mask_ : op_ == 1 ? old_ & ~mask_ : old_ ^ mask_;
	return old_;
}

#define ODB_CC_BITOP(name, check, fn, op_)                                                 \
ODB_CC_INSTR void name(long nr_, volatile unsigned long *addr_)                            \
{ check(addr_ + BIT_WORD(nr_), sizeof(long)); (void)fn(addr_ + BIT_WORD(nr_), BIT_MASK(nr_), op_); }
#define ODB_CC_TEST_BITOP(name, check, fn, op_)                                            \
ODB_CC_INSTR bool name(long nr_, volatile unsigned long *addr_)                            \
{ check(addr_ + BIT_WORD(nr_), sizeof(long));                                              \
  return (fn(addr_ + BIT_WORD(nr_), BIT_MASK(nr_), op_) & BIT_MASK(nr_)) != 0; }

ODB_CC_BITOP(set_bit, kasan_check_write, odb_cc_bit_rmw, 0)
ODB_CC_BITOP(clear_bit, kasan_check_write, odb_cc_bit_rmw, 1)
ODB_CC_BITOP(change_bit, kasan_check_write, odb_cc_bit_rmw, 2)
ODB_CC_BITOP(clear_bit_unlock, kasan_check_write, odb_cc_bit_rmw, 3)
ODB_CC_BITOP(__set_bit, kasan_check_write, odb_cc_bit_rmw_plain, 0)
ODB_CC_BITOP(__clear_bit, kasan_check_write, odb_cc_bit_rmw_plain, 1)
ODB_CC_BITOP(__change_bit, kasan_check_write, odb_cc_bit_rmw_plain, 2)
ODB_CC_BITOP(__clear_bit_unlock, kasan_check_write, odb_cc_bit_rmw, 3)
ODB_CC_TEST_BITOP(test_and_set_bit, kasan_check_write, odb_cc_bit_rmw, 0)
ODB_CC_TEST_BITOP(test_and_clear_bit, kasan_check_write, odb_cc_bit_rmw, 1)
ODB_CC_TEST_BITOP(test_and_change_bit, kasan_check_write, odb_cc_bit_rmw, 2)
ODB_CC_TEST_BITOP(test_and_set_bit_lock, kasan_check_write, odb_cc_bit_rmw, 4)
ODB_CC_TEST_BITOP(__test_and_set_bit, kasan_check_write, odb_cc_bit_rmw_plain, 0)
ODB_CC_TEST_BITOP(__test_and_clear_bit, kasan_check_write, odb_cc_bit_rmw_plain, 1)
ODB_CC_TEST_BITOP(__test_and_change_bit, kasan_check_write, odb_cc_bit_rmw_plain, 2)
ODB_CC_TEST_BITOP(test_bit, kasan_check_read, odb_cc_bit_rmw, 5)

/* ---- workqueues --------------------------------------------------------------------- *
 * The runtime's: one odb_work per workqueue runs its items in queue order
 * (in odb_advance on a virtual clock, or flush/destroy_workqueue); each
 * queue_work records the caller's stack as the item's object's KASAN aux
 * stack, as insert_work does. */
struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);
struct work_struct {
	atomic_long_t data;              /* bit 0: WORK_STRUCT_PENDING */
	struct { void *next, *prev; } entry;
	work_func_t func;
};
struct workqueue_struct;
#define WQ_MEM_RECLAIM (1u << 3)
struct workqueue_struct *odb_cc_alloc_workqueue(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
bool odb_cc_queue_work(struct workqueue_struct *wq, void *work, void (*func)(void *));
void odb_cc_flush_workqueue(struct workqueue_struct *wq);
void odb_cc_destroy_workqueue(struct workqueue_struct *wq);
#define alloc_workqueue(fmt, flags, max_active, ...) \
	((void)(flags), (void)(max_active), odb_cc_alloc_workqueue((fmt), ##__VA_ARGS__))
#define create_workqueue(name) odb_cc_alloc_workqueue("%s", (name))
#define flush_workqueue(wq)    odb_cc_flush_workqueue(wq)
#define destroy_workqueue(wq)  odb_cc_destroy_workqueue(wq)
#define INIT_WORK(w, f) do {                                                    \
	struct work_struct *w_ = (w);                                          \
	atomic_long_set(&w_->data, 0);                                         \
	w_->entry.next = w_->entry.prev = &w_->entry;                          \
	w_->func = (f);                                                        \
} while (0)
ODB_CC_INSTR bool queue_work(struct workqueue_struct *wq_, struct work_struct *work_)
{
	odb_kernel *k_ = odb_cc_current();
	void (*fn_)(void *);
	work_func_t f_;

	if (test_and_set_bit(0, (volatile unsigned long *)&work_->data.counter))
		return false;            /* already pending */
	f_ = work_->func;
	memcpy(&fn_, &f_, sizeof(fn_));
	/* insert_work's kasan_record_aux_stack, made here: the stack names the caller */
	if (k_)
		odb_kasan_record_aux_stack(k_, odb_cc_addr(k_, work_));
	return odb_cc_queue_work(wq_, work_, fn_);
}

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

/* ---- string functions, user copies (the runtime's checked versions) ------------------- */
void *odb_cc_memchr(const void *s, int c, size_t n);
int odb_cc_memcmp(const void *a, const void *b, size_t n);
char *odb_cc_strchr(const char *s, int c);
char *odb_cc_strrchr(const char *s, int c);
int odb_cc_strcmp(const char *a, const char *b);
int odb_cc_strncmp(const char *a, const char *b, size_t n);
size_t odb_cc_strlen(const char *s);
size_t odb_cc_strnlen(const char *s, size_t max);
ssize_t odb_cc_strscpy(char *dst, const char *src, size_t count);
long odb_cc_copy_to_kernel_nofault(void *dst, const void *src, size_t size);
unsigned long odb_cc_copy_from_user(void *to, const void *from, unsigned long n);
unsigned long odb_cc_copy_to_user(void *to, const void *from, unsigned long n);
unsigned long odb_cc___copy_from_user(void *to, const void *from, unsigned long n);
unsigned long odb_cc___copy_to_user(void *to, const void *from, unsigned long n);
long odb_cc_strncpy_from_user(char *dst, const char *src, long count);
#define strscpy(d, s, n)                  odb_cc_strscpy((d), (s), (n))
#define copy_to_kernel_nofault(d, s, n)   odb_cc_copy_to_kernel_nofault((d), (s), (n))
#define copy_from_user(to, from, n)       odb_cc_copy_from_user((to), (from), (n))
#define copy_to_user(to, from, n)         odb_cc_copy_to_user((to), (from), (n))
#define __copy_from_user(to, from, n)     odb_cc___copy_from_user((to), (from), (n))
#define __copy_to_user(to, from, n)       odb_cc___copy_to_user((to), (from), (n))
#define __copy_from_user_inatomic(to, from, n) odb_cc___copy_from_user((to), (from), (n))
#define __copy_to_user_inatomic(to, from, n)   odb_cc___copy_to_user((to), (from), (n))
#define strncpy_from_user(d, s, n)        odb_cc_strncpy_from_user((d), (s), (n))
#if defined(__SANITIZE_ADDRESS__) || defined(ODB_CC_INSTRUMENTED)
#undef memchr
#undef memcmp
#undef strchr
#undef strrchr
#undef strcmp
#undef strncmp
#undef strlen
#undef strnlen
#define memchr(s, c, n)   odb_cc_memchr((s), (c), (n))
#define memcmp(a, b, n)   odb_cc_memcmp((a), (b), (n))
#define strchr(s, c)      odb_cc_strchr((s), (c))
#define strrchr(s, c)     odb_cc_strrchr((s), (c))
#define strcmp(a, b)      odb_cc_strcmp((a), (b))
#define strncmp(a, b, n)  odb_cc_strncmp((a), (b), (n))
#define strlen(s)         odb_cc_strlen(s)
#define strnlen(s, n)     odb_cc_strnlen((s), (n))
#endif

#ifdef __cplusplus
}
#endif
#endif /* ODEBUG_KERNEL_COMPAT_H */
