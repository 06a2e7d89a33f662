/*
 * Generic KASAN, common part (mm/kasan/common.c + generic.c's metadata
 * layout): boot and parameters, the per-cache metadata layout
 * (kasan_cache_create), and the hooks the slab and page allocators call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "kasan/kasan.h"
#include "kasan/meta.h"
#include "kernel/params.h"
#include "slab/slub.h"

/* ---- parameters -------------------------------------------------------------------- */
int kasan_param_on(struct odb_kernel *k, const char *val)
{
	struct kasan_state *ks = kasan_state(k);

	if (val && !strcmp(val, "off"))
		ks->enabled = false;
	else if (val && !strcmp(val, "on"))
		ks->enabled = true;
	else
		return odb_err(k, ODB_EINVAL, "kasan: `%s' invalid for parameter `kasan' (on|off)",
			       val ? val : "");
	return 0;
}

void kasan_param_on_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", kasan_state(k)->enabled ? "on" : "off");
}

int kasan_param_fault(struct odb_kernel *k, const char *val)
{
	struct kasan_state *ks = kasan_state(k);

	if (val && !strcmp(val, "report"))
		ks->fault_panic = false;
	else if (val && !strcmp(val, "panic"))
		ks->fault_panic = true;
	else
		return odb_err(k, ODB_EINVAL,
			       "kasan.fault: `%s' invalid for parameter `kasan.fault' (report|panic)",
			       val ? val : "");
	return 0;
}

void kasan_param_fault_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", kasan_state(k)->fault_panic ? "panic" : "report");
}

int kasan_param_multi_shot(struct odb_kernel *k, const char *val)
{
	if (val)
		return odb_err(k, ODB_EINVAL, "kasan_multi_shot: takes no value (`%s')", val);
	__atomic_store_n(&kasan_state(k)->multi_shot, true, __ATOMIC_RELAXED);
	return 0;
}

void kasan_param_multi_shot_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%d", __atomic_load_n(&kasan_state(k)->multi_shot, __ATOMIC_RELAXED) ? 1 : 0);
}

int kasan_param_quarantine(struct odb_kernel *k, const char *val)
{
	struct kasan_state *ks = kasan_state(k);

	if (val && !strcmp(val, "batched"))
		ks->policy_arg = QUARANTINE_BATCHED;
	else if (val && !strcmp(val, "quarter"))
		ks->policy_arg = QUARANTINE_QUARTER;
	else
		return odb_err(k, ODB_EINVAL, "odebug.quarantine: `%s' invalid (batched|quarter)",
			       val ? val : "");
	return 0;
}

void kasan_param_quarantine_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", kasan_state(k)->policy_arg == QUARANTINE_QUARTER ? "quarter" : "batched");
}

static const char *const quarantine_fixes_names[] = { "v5.10", "v4.11", "v4.10", NULL };

int kasan_param_quarantine_fixes(struct odb_kernel *k, const char *val)
{
	int i, r = odb_param_choice(k, "odebug.quarantine_fixes", val, quarantine_fixes_names, &i);

	if (!r)
		kasan_state(k)->fixes_arg = (enum quarantine_fixes)i;
	return r;
}

void kasan_param_quarantine_fixes_show(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", quarantine_fixes_names[kasan_state(k)->fixes_arg]);
}

/* The shadow, like the arena (page_alloc.c), sits between two PROT_NONE
 * guard regions: a shadow access computed for an address just outside the
 * arena faults instead of scribbling on host memory. */
#define KASAN_SHADOW_GUARD (2UL << 20)

/*
 * Boot memory is free memory: memblock_free_all() hands every page to the
 * buddy allocator, and generic KASAN poisons each freed page KASAN_PAGE_FREE
 * (0xFF), so an access to a page the allocator never handed out is reported.
 * Writing 0xFF over the whole shadow would touch RAM/8 bytes at boot (512 MB
 * for ram="4G"); instead the shadow is tiled with private (copy-on-write)
 * mappings of one small memfd full of 0xFF: reading never-touched shadow
 * costs no memory, and the first write to a shadow page copies it, as a
 * fresh anonymous page would be zeroed.  Without memfd: one memset.
 */
#define KASAN_SHADOW_TILE (2UL << 20)

static int shadow_tile_fd(size_t tile, uint8_t fill)
{
	int fd = memfd_create(fill == KASAN_PAGE_FREE ? "odebug-kasan-page-free" :
			      "odebug-kasan-vmalloc-invalid", MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)tile)) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, tile, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	memset(p, fill, tile);
	munmap(p, tile);
	return fd;
}

static bool shadow_fill_tiles(char *shadow, size_t size, uint8_t fill)
{
	size_t span = ALIGN(size, (size_t)PAGE_SIZE);
	size_t tile = span < KASAN_SHADOW_TILE ? span : KASAN_SHADOW_TILE;
	int fd = shadow_tile_fd(tile, fill);

	if (fd < 0)
		return false;
	for (size_t off = 0; off < span; off += tile) {
		size_t n = span - off < tile ? span - off : tile;

		if (mmap(shadow + off, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE,
			 fd, 0) == MAP_FAILED) {
			close(fd);
			return false;
		}
	}
	close(fd);   /* the mappings keep the file */
	return true;
}

/* A shadow between its guards; with fill, reading fill everywhere
 * (KASAN_PAGE_FREE for the arena: boot memory), else left to the caller. */
static void *shadow_map(size_t size, bool fill, uint8_t value)
{
	char *base = mmap(NULL, size + 2 * KASAN_SHADOW_GUARD, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (base == MAP_FAILED)
		return NULL;
	if (mprotect(base + KASAN_SHADOW_GUARD, size, PROT_READ | PROT_WRITE)) {
		munmap(base, size + 2 * KASAN_SHADOW_GUARD);
		return NULL;
	}
	if (fill && !shadow_fill_tiles(base + KASAN_SHADOW_GUARD, size, value))
		memset(base + KASAN_SHADOW_GUARD, value, size);
	return base + KASAN_SHADOW_GUARD;
}

/*
 * vmalloc space's shadow (CONFIG_KASAN_VMALLOC) reads KASAN_VMALLOC_INVALID
 * wherever no area's bytes are.  It is reserved at boot and filled (0xF8
 * tiles, as the arena's 0xFF ones) the first time anything looks at it or
 * writes it -- every access goes through kasan_mem_to_shadow() -- so a
 * kernel that never touches vmalloc space never pays for the fill.
 */
uint8_t *kasan_vmalloc_shadow_slow(struct odb_kernel *k)
{
	struct kasan_state *ks = kasan_state(k);

	pthread_mutex_lock(&ks->vshadow_lock);
	if (!atomic_load_explicit(&ks->vshadow_ready, memory_order_relaxed)) {
		if (!shadow_fill_tiles((char *)ks->vshadow, ks->vshadow_size, KASAN_VMALLOC_INVALID))
			memset(ks->vshadow, KASAN_VMALLOC_INVALID, ks->vshadow_size);
		atomic_store_explicit(&ks->vshadow_ready, true, memory_order_release);
	}
	pthread_mutex_unlock(&ks->vshadow_lock);
	return ks->vshadow;
}

static void shadow_unmap(void *shadow, size_t size)
{
	munmap((char *)shadow - KASAN_SHADOW_GUARD, size + 2 * KASAN_SHADOW_GUARD);
}

/* ---- boot ------------------------------------------------------------------------------ */
static void kasan_page_alloc_hook(struct odb_kernel *k, odb_addr_t addr, size_t size);
static void kasan_page_free_hook(struct odb_kernel *k, odb_addr_t addr, size_t size);

int kasan_early_init(struct odb_kernel *k)
{
	struct kasan_state *ks = calloc(1, sizeof(*ks));

	if (!ks)
		return -1;
	ks->enabled = true;
	ks->policy_arg = QUARANTINE_BATCHED;
	pthread_mutex_init(&ks->report_lock, NULL);
	pthread_mutex_init(&ks->vshadow_lock, NULL);
	pthread_mutex_init(&ks->tmpl_lock, NULL);
	atomic_init(&ks->vshadow_ready, false);
	k->kasan = ks;
	return 0;
}

/* The arena's shadow unmapped: KASAN is off from here (kasan_enabled). */
static void kasan_shadow_gone(struct odb_kernel *k, struct kasan_state *ks)
{
	k->kasan_on = false;
	shadow_unmap(ks->shadow, ks->shadow_size);
	ks->shadow = NULL;
}

/* kasan_init: map the shadow (KASAN_PAGE_FREE: boot memory is free pages), then the
 * quarantine; before kmem_cache_init so every cache gets its metadata. */
int kasan_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	struct kasan_state *ks = kasan_state(k);

	if (!ks->enabled)
		return 0;
	ks->shadow_size = (size_t)(k->ram_bytes >> KASAN_SHADOW_SCALE_SHIFT);
	ks->shadow = shadow_map(ks->shadow_size, true, KASAN_PAGE_FREE);
	if (!ks->shadow) {
		snprintf(errbuf, errlen, "kasan: cannot map %zu bytes of shadow", ks->shadow_size);
		return ODB_ENOMEM;
	}
	k->kasan_on = true;
	/* CONFIG_KASAN_VMALLOC: vmalloc space's shadow, invalid until areas come */
	ks->vshadow_size = (size_t)(k->vmalloc_size >> KASAN_SHADOW_SCALE_SHIFT);
	ks->vshadow = shadow_map(ks->vshadow_size, false, 0);   /* filled on first use */
	if (!ks->vshadow) {
		kasan_shadow_gone(k, ks);
		snprintf(errbuf, errlen, "kasan: cannot map %zu bytes of vmalloc shadow", ks->vshadow_size);
		return ODB_ENOMEM;
	}
	ks->q.policy = ks->policy_arg;
	ks->q.fixes = ks->fixes_arg;
	if (quarantine_init(k)) {
		kasan_shadow_gone(k, ks);
		shadow_unmap(ks->vshadow, ks->vshadow_size);
		ks->vshadow = NULL;
		snprintf(errbuf, errlen, "kasan: out of memory for the quarantine");
		return ODB_ENOMEM;
	}
	odb_register_page_alloc_hook(k, kasan_page_alloc_hook);
	odb_register_page_free_hook(k, kasan_page_free_hook);
	ks->booted = true;
	printk(k, "KernelAddressSanitizer initialized (generic)");
	return 0;
}

/* Give the shadow back and nothing else (a wedged kernel: odb_kernel_destroy). */
void kasan_release_shadow(struct odb_kernel *k)
{
	struct kasan_state *ks = kasan_state(k);

	if (ks && ks->shadow) {
		kasan_shadow_gone(k, ks);
	}
	if (ks && ks->vshadow) {
		shadow_unmap(ks->vshadow, ks->vshadow_size);
		ks->vshadow = NULL;
	}
}

void kasan_exit(struct odb_kernel *k)
{
	struct kasan_state *ks = kasan_state(k);

	if (!ks)
		return;
	if (ks->booted)
		quarantine_exit(k);
	if (ks->shadow)
		kasan_shadow_gone(k, ks);
	if (ks->vshadow)
		shadow_unmap(ks->vshadow, ks->vshadow_size);
	pthread_mutex_destroy(&ks->report_lock);
	pthread_mutex_destroy(&ks->vshadow_lock);
	pthread_mutex_destroy(&ks->tmpl_lock);
	k->kasan = NULL;
	free(ks);
}

/* ---- page allocator hooks -------------------------------------------------------------- */
static void kasan_page_alloc_hook(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	if (kasan_enabled(k))
		kasan_unpoison(k, addr, size);         /* kasan_unpoison_pages */
}

static void kasan_page_free_hook(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	if (kasan_enabled(k))
		kasan_poison(k, addr, size, KASAN_PAGE_FREE);   /* kasan_poison_pages */
}

/* ---- metadata layout ------------------------------------------------------------------- */
static unsigned int optimal_redzone(unsigned int object_size)
{
	return object_size <= 64 - 16 ? 16 :
	       object_size <= 128 - 32 ? 32 :
	       object_size <= 512 - 64 ? 64 :
	       object_size <= 4096 - 128 ? 128 :
	       object_size <= (1 << 14) - 256 ? 256 :
	       object_size <= (1 << 15) - 512 ? 512 :
	       object_size <= (1 << 16) - 1024 ? 1024 : 2048;
}

void kasan_cache_create(struct kmem_cache *s, unsigned int *size, slab_flags_t *flags)
{
	unsigned int ok_size, optimal_size;

	(void)flags;
	s->kasan_alloc_meta_offset = 0;
	s->kasan_free_meta_offset = KASAN_NO_FREE_META;
	s->kasan_meta_size = 0;
	if (!kasan_enabled(s->k))
		return;
	ok_size = *size;
	/* alloc meta right after what SLUB placed so far */
	s->kasan_alloc_meta_offset = (int)*size;
	*size += sizeof(struct kasan_alloc_meta);
	s->kasan_meta_size = sizeof(struct kasan_alloc_meta);
	if (*size > KMALLOC_MAX_SIZE) {
		s->kasan_alloc_meta_offset = 0;
		s->kasan_meta_size = 0;
		*size = ok_size;
	}
	ok_size = *size;
	/* free meta inside the freed object, unless the object must keep its
	 * contents after free (RCU, constructor), the kmalloc redzone tracking
	 * checks the slack, or it is too small: then in the redzone */
	if ((s->flags & SLAB_TYPESAFE_BY_RCU) || cache_has_ctor(s) || slub_debug_orig_size(s) ||
	    s->object_size < sizeof(struct kasan_free_meta)) {
		s->kasan_free_meta_offset = (int)*size;
		*size += sizeof(struct kasan_free_meta);
		s->kasan_meta_size += sizeof(struct kasan_free_meta);
		if (*size > KMALLOC_MAX_SIZE) {
			s->kasan_free_meta_offset = KASAN_NO_FREE_META;
			s->kasan_meta_size -= sizeof(struct kasan_free_meta);
			*size = ok_size;
		}
	} else {
		s->kasan_free_meta_offset = 0;
	}
	optimal_size = s->object_size + optimal_redzone(s->object_size);
	if (optimal_size > KMALLOC_MAX_SIZE)
		optimal_size = KMALLOC_MAX_SIZE;
	if (*size < optimal_size)
		*size = optimal_size;
}

uint32_t kasan_save_stack(struct odb_kernel *k)
{
	return stack_depot_save_current(k, 2);
}

static void kasan_save_track(struct odb_kernel *k, void *at)
{
	struct odb_task *t = odb_current(k);
	struct kasan_track tr = { .pid = t ? (uint32_t)t->pid : 0, .stack = kasan_save_stack(k) };

	if (t) {
		t->kasan_saves++;
		t->kasan_last_stack = tr.stack;
	}
	memcpy(at, &tr, sizeof(tr));
}

/* The save_*_info and poison_kmalloc_* helpers are always inlined: with the
 * mempool hooks as second callers the compiler would outline them, and every
 * track's stack would gain a frame (tests/test_golden.py pins them). */
#define KASAN_INLINE static inline __attribute__((always_inline))

KASAN_INLINE void kasan_save_alloc_info(struct kmem_cache *s, void *object)
{
	struct kasan_alloc_meta *m = kasan_get_alloc_meta(s, object);

	if (!m)
		return;
	memset(m, 0, sizeof(*m));
	kasan_save_track(s->k, &m->alloc_track);
}

KASAN_INLINE void kasan_save_free_info(struct kmem_cache *s, void *object)
{
	struct kasan_free_meta *m = kasan_get_free_meta(s, object);

	if (!m)
		return;
	kasan_save_track(s->k, &m->free_track);
	/* the free track is valid while the first granule says so */
	*kasan_host_to_shadow(s->k, object) = KASAN_SLAB_FREE_META;
}

/*
 * kasan_record_aux_stack (generic mode): whoever queues deferred work on an
 * object (call_rcu, kvfree_rcu, queue_work) leaves the calling stack in the
 * object's alloc meta, so that a later report on the object can say where
 * the work that touched it came from ("Last potentially related work
 * creation").  Two stacks are kept, the newest first.  Anything that is not
 * a slab object with alloc meta (a large kmalloc, a page, host memory) is
 * ignored, as the kernel ignores it.  Allocation clears both
 * (kasan_save_alloc_info).
 */
void kasan_record_aux_stack(struct odb_kernel *k, void *addr)
{
	struct kasan_alloc_meta m, *am;
	struct kmem_cache *s;
	struct slab *sl;
	void *object;

	if (!kasan_enabled(k))
		return;
	sl = virt_to_slab(k, addr);
	if (!sl)
		return;
	s = sl->slab_cache;
	object = nearest_obj(s, sl, addr);
	am = kasan_get_alloc_meta(s, object);
	if (!am)
		return;
	/* the meta is arena memory (unaligned, user-writable): copied, not trusted */
	memcpy(&m, am, sizeof(m));
	m.aux_stack[1] = m.aux_stack[0];
	m.aux_stack[0] = kasan_save_stack(k);
	memcpy(am, &m, sizeof(m));
}

/* ---- slab hooks ------------------------------------------------------------------------- */
void kasan_poison_slab(struct kmem_cache *s, struct slab *sl)
{
	struct odb_kernel *k = s->k;

	if (!kasan_enabled(k))
		return;
	kasan_poison(k, host_to_virt(k, slab_address(k, sl)), slab_size(sl), KASAN_SLAB_REDZONE);
}

void kasan_init_slab_obj(struct kmem_cache *s, void *object)
{
	struct kasan_alloc_meta *m;

	if (!kasan_enabled(s->k))
		return;
	m = kasan_get_alloc_meta(s, object);
	if (m)
		memset(m, 0, sizeof(*m));
}

void kasan_unpoison_new_object(struct kmem_cache *s, void *object)
{
	if (kasan_enabled(s->k))
		kasan_unpoison(s->k, host_to_virt(s->k, object), s->object_size);
}

void kasan_poison_new_object(struct kmem_cache *s, void *object)
{
	if (kasan_enabled(s->k))
		kasan_poison(s->k, host_to_virt(s->k, object),
			     ALIGN(s->object_size, KASAN_GRANULE_SIZE), KASAN_SLAB_REDZONE);
}

void *kasan_slab_alloc(struct kmem_cache *s, void *object, gfp_t flags)
{
	struct odb_kernel *k = s->k;

	if (!kasan_enabled(k))
		return object;
	if (gfpflags_allow_blocking(flags))
		kasan_quarantine_reduce(k);
	if (!object)
		return NULL;
	/* the whole object; kmalloc() then poisons precisely */
	kasan_unpoison(k, host_to_virt(k, object), s->object_size);
	if (!(s->flags & SLAB_KMALLOC))
		kasan_save_alloc_info(s, object);
	return object;
}

KASAN_INLINE void poison_kmalloc_redzone(struct kmem_cache *s, void *object, size_t size)
{
	struct odb_kernel *k = s->k;
	odb_addr_t a = host_to_virt(k, object);
	odb_addr_t rz_start = ALIGN(a + size, (odb_addr_t)KASAN_GRANULE_SIZE);
	odb_addr_t rz_end = a + ALIGN(s->object_size, KASAN_GRANULE_SIZE);

	kasan_poison_last_granule(k, a, size);
	if (rz_end > rz_start)
		kasan_poison(k, rz_start, (size_t)(rz_end - rz_start), KASAN_SLAB_REDZONE);
	if (s->flags & SLAB_KMALLOC)
		kasan_save_alloc_info(s, object);
}

void *kasan_kmalloc(struct kmem_cache *s, void *object, size_t size, gfp_t flags)
{
	if (!kasan_enabled(s->k))
		return object;
	if (gfpflags_allow_blocking(flags))
		kasan_quarantine_reduce(s->k);
	if (!object)
		return NULL;
	poison_kmalloc_redzone(s, object, size);
	return object;
}

/* The tail of a large kmalloc's pages past size: KASAN_PAGE_REDZONE (a
 * partial last granule says how much of it is in use). */
KASAN_INLINE void poison_kmalloc_large_redzone(struct odb_kernel *k, void *ptr, size_t size)
{
	odb_addr_t a = host_to_virt(k, ptr), rz_start, rz_end;
	struct page *pg = virt_to_head_page(k, a);

	rz_start = ALIGN(a + size, (odb_addr_t)KASAN_GRANULE_SIZE);
	rz_end = a + (PAGE_SIZE << pg->order);
	kasan_poison_last_granule(k, a, size);
	if (rz_end > rz_start)
		kasan_poison(k, rz_start, (size_t)(rz_end - rz_start), KASAN_PAGE_REDZONE);
}

void *kasan_kmalloc_large(struct odb_kernel *k, void *ptr, size_t size, gfp_t flags)
{
	if (!kasan_enabled(k))
		return ptr;
	if (gfpflags_allow_blocking(flags))
		kasan_quarantine_reduce(k);
	if (!ptr)
		return NULL;
	poison_kmalloc_large_redzone(k, ptr, size);
	return ptr;
}

void *kasan_krealloc(struct odb_kernel *k, void *object, size_t size, gfp_t flags)
{
	struct slab *sl;

	if (!kasan_enabled(k) || !object)
		return object;
	kasan_unpoison(k, host_to_virt(k, object), size);
	sl = virt_to_slab(k, object);
	if (!sl)
		return kasan_kmalloc_large(k, object, size, flags);
	return kasan_kmalloc(sl->slab_cache, object, size, flags);
}

bool kasan_check_byte(struct odb_kernel *k, const void *addr, unsigned long ip)
{
	odb_addr_t a;

	if (!kasan_enabled(k))
		return true;
	a = host_to_virt(k, addr);
	if (!kasan_byte_accessible(k, a)) {
		kasan_report(k, a, 1, false, ip);
		return false;
	}
	return true;
}

bool kasan_slab_invalid_free(struct kmem_cache *s, struct slab *sl, void *object,
			     unsigned long ip)
{
	if (!kasan_enabled(s->k))
		return false;
	if (nearest_obj(s, sl, object) != object) {
		kasan_report_invalid_free(s->k, host_to_virt(s->k, object), ip,
					  KASAN_REPORT_INVALID_FREE);
		return true;
	}
	return false;
}

/* __kasan_slab_pre_free's double-free half (check_slab_allocation): the
 * invalid-free half runs first, in kasan_slab_invalid_free.  Every cache,
 * SLAB_TYPESAFE_BY_RCU ones included, as since v6.12: an RCU object is
 * poisoned only after its grace period (SLUB_RCU_DEBUG), so a second free
 * within that period is caught when its own grace period ends. */
bool kasan_slab_pre_free(struct kmem_cache *s, void *object, unsigned long ip)
{
	struct odb_kernel *k = s->k;
	odb_addr_t a;

	if (!kasan_enabled(k))
		return false;
	a = host_to_virt(k, object);
	if (!kasan_byte_accessible(k, a)) {
		kasan_report_invalid_free(k, a, ip, KASAN_REPORT_DOUBLE_FREE);
		return true;
	}
	return false;
}

bool kasan_slab_free(struct kmem_cache *s, void *object, bool still_accessible)
{
	struct odb_kernel *k = s->k;

	if (!kasan_enabled(k))
		return false;
	/* a SLAB_TYPESAFE_BY_RCU object within its grace period (SLUB_RCU_DEBUG
	 * off, or its record could not be allocated) may still be read: neither
	 * poisoned nor quarantined */
	if (unlikely(still_accessible))
		return false;
	kasan_poison(k, host_to_virt(k, object), ALIGN(s->object_size, KASAN_GRANULE_SIZE),
		     KASAN_SLAB_FREE);
	kasan_save_free_info(s, object);
	return kasan_quarantine_put(s, object);
}

/* ---- the public API's fast paths (issue 16) -------------------------------------------- */
void kasan_tmpl_capture(struct odb_kernel *k, uint64_t key, uint32_t handle, void *fp)
{
	struct kasan_state *ks = kasan_state(k);
	unsigned int n = KASAN_TMPL_SLOTS, i = kasan_tmpl_home(key);
	struct odb_stack_tmpl t;

	/* (KASAN's saves are stack_depot_save_current(k, 2): kasan_save_stack) */
	if (!stack_depot_tmpl_capture(k, handle, 2, fp, &t))
		return;
	pthread_mutex_lock(&ks->tmpl_lock);
	/* the first kept template with the same frames names this one's identity:
	 * random sizes take many code paths (one per cache, gfp and last granule)
	 * that save a few stacks, which the task's recent records then find
	 * (stack_depot_save_tmpl) */
	for (unsigned int j = 0; j < n && !t.canon; j++) {
		const struct odb_stack_tmpl *o = &ks->tmpl[j].t;

		if (atomic_load_explicit(&ks->tmpl[j].key, memory_order_relaxed) &&
		    stack_depot_tmpl_same(o, &t))
			t.canon = o->canon ? o->canon : o;
	}
	for (unsigned int probe = 0; probe < n; probe++, i = (i + 1) % n) {
		uint64_t have = atomic_load_explicit(&ks->tmpl[i].key, memory_order_relaxed);

		if (have == key)
			break;              /* another thread's capture of the same path */
		if (!have) {
			ks->tmpl[i].t = t;
			atomic_store_explicit(&ks->tmpl[i].key, key, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&ks->tmpl_lock);
}

static inline void kasan_save_track_tmpl(struct odb_task *t, struct odb_kernel *k, void *at,
					 const struct odb_stack_tmpl *tp, void *fp)
{
	struct kasan_track tr = { .pid = (uint32_t)t->pid,
				  .stack = stack_depot_save_tmpl_recent(k, t, tp, fp) };

	memcpy(at, &tr, sizeof(tr));
}

/* (an api_kasan_fast cache's objects have both metas: slub.c) */
void *kasan_kmalloc_fast(struct kmem_cache *s, struct odb_task *t, void *object, size_t size,
			 gfp_t flags, const struct odb_stack_tmpl *tp, void *fp, bool slab_hook_done,
			 bool reduced, int *ret)
{
	struct odb_kernel *k = s->k;
	struct kasan_alloc_meta *m = (void *)((char *)object + s->kasan_alloc_meta_offset);
	size_t whole = ALIGN(s->object_size, KASAN_GRANULE_SIZE);

	*ret = ODB_OK;
	/* kasan_slab_alloc (a kmalloc cache's alloc track is kasan_kmalloc's) */
	if (!slab_hook_done) {
		if (!reduced && gfpflags_allow_blocking(flags) &&
		    kasan_quarantine_reduce_api(k) == ODB_EBUG)
			*ret = ODB_EBUG;
		kasan_unpoison_obj(k, object, s->object_size);
	}
	/* kasan_kmalloc: poison_kmalloc_redzone */
	if (!reduced && gfpflags_allow_blocking(flags) && kasan_quarantine_reduce_api(k) == ODB_EBUG)
		*ret = ODB_EBUG;
	if (size & KASAN_GRANULE_MASK)
		*kasan_host_to_shadow(k, (char *)object + size) = (uint8_t)(size & KASAN_GRANULE_MASK);
	if (ALIGN(size, KASAN_GRANULE_SIZE) < whole)
		kasan_shadow_set_obj(k, (char *)object + ALIGN(size, KASAN_GRANULE_SIZE),
				     whole - ALIGN(size, KASAN_GRANULE_SIZE), KASAN_SLAB_REDZONE);
	memset(m, 0, sizeof(*m));
	kasan_save_track_tmpl(t, k, &m->alloc_track, tp, fp);
	return object;
}

bool kasan_slab_free_fast(struct kmem_cache *s, struct odb_task *t, void *object,
			  const struct odb_stack_tmpl *tp, void *fp)
{
	struct odb_kernel *k = s->k;
	struct kasan_free_meta *m = (void *)((char *)object + s->kasan_free_meta_offset);
	struct kasan_track tr;
	struct odb_irq_fast f;

	/* the stack first: the frame hook runs outside the irq-off section */
	tr.pid = (uint32_t)t->pid;
	tr.stack = stack_depot_save_tmpl_recent(k, t, tp, fp);
	if (!odb_irq_fast_try(t, &f))
		return false;
	if (!kasan_quarantine_fits(s, f.cpu)) {
		odb_irq_fast_restore(&f);
		return false;
	}
	kasan_shadow_set_obj(k, object, s->object_size, KASAN_SLAB_FREE);
	memcpy(&m->free_track, &tr, sizeof(tr));
	*kasan_host_to_shadow(k, object) = KASAN_SLAB_FREE_META;
	kasan_quarantine_put_locked(s, object, f.cpu);
	odb_irq_fast_restore(&f);
	return true;
}

bool kasan_kfree_large(struct odb_kernel *k, void *ptr, unsigned long ip)
{
	odb_addr_t a;

	if (!kasan_enabled(k))
		return false;
	a = host_to_virt(k, ptr);
	if (a != page_address(k, virt_to_head_page(k, a))) {
		kasan_report_invalid_free(k, a, ip, KASAN_REPORT_INVALID_FREE);
		return true;
	}
	return false;   /* the page allocator poisons it (KASAN_PAGE_FREE) */
}

void kasan_cache_shutdown(struct kmem_cache *s)
{
	if (!kasan_enabled(s->k))
		return;
	if (atomic_load(&s->node.nr_slabs))     /* !__kmem_cache_empty() */
		kasan_quarantine_remove_cache(s);
}

/* ---- the mempool hooks (kasan_mempool_* of mm/kasan/common.c) ------------------------ *
 * mempool keeps freed elements in its reserve instead of freeing them: these
 * poison an element as a free would (and catch the bad frees a free would), and
 * unpoison it again when the pool hands it out. */

/* A page allocation given back: true (after a report) if a is not the start
 * of its block (invalid-free) or is not accessible (double-free). */
static bool check_page_allocation(struct odb_kernel *k, odb_addr_t a, unsigned long ip)
{
	if (a != page_address(k, virt_to_head_page(k, a))) {
		kasan_report_invalid_free(k, a, ip, KASAN_REPORT_INVALID_FREE);
		return true;
	}
	if (!kasan_byte_accessible(k, a)) {
		kasan_report_invalid_free(k, a, ip, KASAN_REPORT_DOUBLE_FREE);
		return true;
	}
	return false;
}

/* A slab object given back: the same two checks against its slab. */
static bool check_slab_allocation(struct kmem_cache *s, struct slab *sl, void *object,
				  unsigned long ip)
{
	struct odb_kernel *k = s->k;

	if (nearest_obj(s, sl, object) != object) {
		kasan_report_invalid_free(k, host_to_virt(k, object), ip, KASAN_REPORT_INVALID_FREE);
		return true;
	}
	if (!kasan_byte_accessible(k, host_to_virt(k, object))) {
		kasan_report_invalid_free(k, host_to_virt(k, object), ip, KASAN_REPORT_DOUBLE_FREE);
		return true;
	}
	return false;
}

void kasan_poison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order)
{
	if (kasan_enabled(k))
		kasan_poison(k, a, PAGE_SIZE << order, KASAN_PAGE_FREE);
}

void kasan_unpoison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order)
{
	if (kasan_enabled(k))
		kasan_unpoison(k, a, PAGE_SIZE << order);
}

bool kasan_mempool_poison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order,
				unsigned long ip)
{
	if (!kasan_enabled(k))
		return true;
	if (check_page_allocation(k, a, ip))
		return false;
	kasan_poison(k, a, PAGE_SIZE << order, KASAN_PAGE_FREE);
	return true;
}

void kasan_mempool_unpoison_pages(struct odb_kernel *k, odb_addr_t a, unsigned int order)
{
	kasan_unpoison_pages(k, a, order);
}

bool kasan_mempool_poison_object(struct odb_kernel *k, void *ptr, unsigned long ip)
{
	odb_addr_t a = host_to_virt(k, ptr);
	struct kmem_cache *s;
	struct slab *sl;

	if (!kasan_enabled(k))
		return true;
	sl = virt_to_slab(k, ptr);
	if (!sl) {
		/* a large kmalloc: the whole block, as its free would */
		if (check_page_allocation(k, a, ip))
			return false;
		kasan_poison(k, a, PAGE_SIZE << virt_to_head_page(k, a)->order, KASAN_PAGE_FREE);
		return true;
	}
	s = sl->slab_cache;
	if (check_slab_allocation(s, sl, ptr, ip))
		return false;
	/* poison_slab_object: freed, with its free track (not quarantined) */
	kasan_poison(k, a, ALIGN(s->object_size, KASAN_GRANULE_SIZE), KASAN_SLAB_FREE);
	kasan_save_free_info(s, ptr);
	return true;
}

void kasan_mempool_unpoison_object(struct odb_kernel *k, void *ptr, size_t size)
{
	struct kmem_cache *s;
	struct slab *sl;

	if (!kasan_enabled(k))
		return;
	sl = virt_to_slab(k, ptr);
	if (!sl) {
		/* a large kmalloc (its memory is the page allocator's) */
		kasan_unpoison(k, host_to_virt(k, ptr), size);
		poison_kmalloc_large_redzone(k, ptr, size);
		return;
	}
	s = sl->slab_cache;
	/* unpoison_slab_object, then the kmalloc redzone for a kmalloc cache;
	 * either records the alloc track */
	kasan_unpoison(k, host_to_virt(k, ptr), s->object_size);
	if (!(s->flags & SLAB_KMALLOC))
		kasan_save_alloc_info(s, ptr);
	else
		poison_kmalloc_redzone(s, ptr, size);
}
