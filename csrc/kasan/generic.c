/*
 * Generic KASAN: the shadow (mm/kasan/shadow.c) and the access checks
 * (mm/kasan/generic.c), plus the public checked-access API.
 *
 * Shadow encoding: 0 = all 8 bytes accessible, 1..7 = that many leading bytes,
 * negative (0x80..0xFF as s8) = poisoned with a reason (kasan.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kasan/kasan.h"
#include "slab/slub.h"

/* ---- poisoning ------------------------------------------------------------------- */
/* memset of n shadow bytes; an object of up to 128 bytes (16 shadow bytes,
 * the common case) as two overlapping word stores instead of a call */
static inline void shadow_set(uint8_t *p, uint8_t v, size_t n)
{
	uint64_t w = v * 0x0101010101010101ULL;

	if (n >= 8 && n <= 16) {
		memcpy(p, &w, 8);
		memcpy(p + n - 8, &w, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(p, &w, 4);
		memcpy(p + n - 4, &w, 4);
	} else {
		memset(p, v, n);
	}
}

void kasan_poison(struct odb_kernel *k, odb_addr_t addr, size_t size, uint8_t value)
{
	odb_addr_t end;

	if (!kasan_enabled(k) || !size)
		return;
	addr = ALIGN_DOWN(addr, (odb_addr_t)KASAN_GRANULE_SIZE);
	end = ALIGN(addr + size, (odb_addr_t)KASAN_GRANULE_SIZE);
	if (!addr_has_metadata(k, addr))
		return;
	if (end > kasan_region_end(k, addr) || end < addr)
		end = kasan_region_end(k, addr);
	shadow_set(kasan_mem_to_shadow(k, addr), value, (size_t)(end - addr) >> KASAN_SHADOW_SCALE_SHIFT);
}

void kasan_poison_last_granule(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	if (!kasan_enabled(k))
		return;
	if ((size & KASAN_GRANULE_MASK) && addr_has_metadata(k, addr + size))
		*kasan_mem_to_shadow(k, addr + size) = (uint8_t)(size & KASAN_GRANULE_MASK);
}

void kasan_unpoison(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	if (!kasan_enabled(k) || !size)
		return;
	kasan_poison(k, addr, ALIGN(size, KASAN_GRANULE_SIZE), 0);
	kasan_poison_last_granule(k, addr, size);
}

bool kasan_byte_accessible(struct odb_kernel *k, odb_addr_t addr)
{
	return addr_has_metadata(k, addr) &&
	       kasan_shadow_byte_accessible(READ_ONCE(*kasan_mem_to_shadow(k, addr)));
}

/* ---- the access checks (inline instrumentation's rules) ------------------------------- */
static inline bool memory_is_poisoned_1(struct odb_kernel *k, odb_addr_t a)
{
	int8_t s = (int8_t)*kasan_mem_to_shadow(k, a);

	if (unlikely(s)) {
		int8_t last = (int8_t)(a & KASAN_GRANULE_MASK);
		return unlikely(last >= s);
	}
	return false;
}

static inline bool memory_is_poisoned_2_4_8(struct odb_kernel *k, odb_addr_t a, size_t size)
{
	odb_addr_t last = a + size - 1;

	/* crossing a granule: the first one must be fully accessible */
	if (unlikely((a >> KASAN_SHADOW_SCALE_SHIFT) != (last >> KASAN_SHADOW_SCALE_SHIFT)))
		return *kasan_mem_to_shadow(k, a) || memory_is_poisoned_1(k, last);
	return memory_is_poisoned_1(k, last);
}

static inline bool memory_is_poisoned_16(struct odb_kernel *k, odb_addr_t a)
{
	uint16_t s;

	memcpy(&s, kasan_mem_to_shadow(k, a), sizeof(s));
	if (unlikely(s))
		return true;
	if (likely(!(a & KASAN_GRANULE_MASK)))
		return false;
	return memory_is_poisoned_1(k, a + 15);
}

/* First non-zero byte of [start, end), or NULL. */
static const uint8_t *memory_is_nonzero(const uint8_t *start, const uint8_t *end)
{
	while (start < end && ((uintptr_t)start & 7)) {
		if (*start)
			return start;
		start++;
	}
	while (end - start >= 8) {
		uint64_t w;
		memcpy(&w, start, 8);
		if (w)
			break;
		start += 8;
	}
	while (start < end) {
		if (*start)
			return start;
		start++;
	}
	return NULL;
}

static bool memory_is_poisoned_n(struct odb_kernel *k, odb_addr_t a, size_t size)
{
	const uint8_t *ret = memory_is_nonzero(kasan_mem_to_shadow(k, a),
					       kasan_mem_to_shadow(k, a + size - 1) + 1);

	if (unlikely(ret)) {
		odb_addr_t last = a + size - 1;
		const uint8_t *last_shadow = kasan_mem_to_shadow(k, last);

		if (unlikely(ret != last_shadow ||
			     (int8_t)(last & KASAN_GRANULE_MASK) >= (int8_t)*last_shadow))
			return true;
	}
	return false;
}

static bool memory_is_poisoned(struct odb_kernel *k, odb_addr_t a, size_t size)
{
	switch (size) {
	case 1: return memory_is_poisoned_1(k, a);
	case 2: case 4: case 8: return memory_is_poisoned_2_4_8(k, a, size);
	case 16: return memory_is_poisoned_16(k, a);
	default: return memory_is_poisoned_n(k, a, size);
	}
}

/* check_region_inline: true when the access is fine. */
static inline bool check_region_inline(struct odb_kernel *k, odb_addr_t addr, size_t size,
				       bool write, unsigned long ret_ip)
{
	if (unlikely(size == 0))
		return true;
	if (unlikely(addr + size < addr)) {
		kasan_report(k, addr, size, write, ret_ip);
		return false;
	}
	if (unlikely(!odb_in_arena(k, addr, size)) && !odb_in_vmalloc(k, addr, size)) {
		kasan_report(k, addr, size, write, ret_ip);
		return false;
	}
	if (likely(!memory_is_poisoned(k, addr, size)))
		return true;
	kasan_report(k, addr, size, write, ret_ip);
	return false;
}

bool kasan_check_range(struct odb_kernel *k, odb_addr_t addr, size_t size, bool write,
		       unsigned long ret_ip)
{
	return check_region_inline(k, addr, size, write, ret_ip);
}

odb_addr_t kasan_find_first_bad_addr(struct odb_kernel *k, odb_addr_t addr, size_t size)
{
	odb_addr_t p = addr, end;

	if (!addr_has_metadata(k, addr))
		return addr;
	end = kasan_region_end(k, addr);
	while (p < addr + size && p < end && !*kasan_mem_to_shadow(k, p))
		p += KASAN_GRANULE_SIZE;
	return p;
}

/* ---- vmalloc (shadow.c's kasan_unpoison_vmalloc / kasan_poison_vmalloc) ------------------ */
void kasan_unpoison_vmalloc(struct odb_kernel *k, odb_addr_t start, unsigned long size)
{
	if (kasan_enabled(k) && is_vmalloc_addr(k, start))
		kasan_unpoison(k, start, size);
}

void kasan_poison_vmalloc(struct odb_kernel *k, odb_addr_t start, unsigned long size)
{
	if (kasan_enabled(k) && is_vmalloc_addr(k, start))
		kasan_poison(k, start, ALIGN(size, KASAN_GRANULE_SIZE), KASAN_VMALLOC_INVALID);
}

/* ---- performing a bad write without corrupting allocator metadata ------------------------ *
 * The kernel reports and continues; odebug performs the write too, but puts
 * back what the allocators keep inside slab slots (SLUB's free pointer of a
 * free object, KASAN's free meta of a freed object, KASAN's alloc meta), the
 * way SLUB's FIX restores its red zones: a report never corrupts odebug. */
struct meta_save { void *at; size_t len; uint8_t bytes[16]; };

static unsigned int save_slot_meta(struct odb_kernel *k, struct kmem_cache *s, char *obj,
				   struct meta_save *sv)
{
	unsigned int n = 0;
	bool allocated = kasan_byte_accessible(k, host_to_virt(k, obj));

	if (!allocated || s->offset >= s->inuse) {
		sv[n].at = obj + s->offset;
		sv[n].len = sizeof(odb_addr_t);
		n++;
	}
	if (s->kasan_meta_size) {
		if (s->kasan_alloc_meta_offset > 0) {
			sv[n].at = obj + s->kasan_alloc_meta_offset;
			sv[n].len = sizeof(struct kasan_alloc_meta);
			n++;
		}
		if (s->kasan_free_meta_offset != KASAN_NO_FREE_META &&
		    (!allocated || s->kasan_free_meta_offset > 0)) {
			sv[n].at = obj + s->kasan_free_meta_offset;
			sv[n].len = sizeof(struct kasan_free_meta);
			n++;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		memcpy(sv[i].bytes, sv[i].at, sv[i].len);
	return n;
}

static void write_protected(struct odb_kernel *k, char *dst, const void *src, int c, size_t n)
{
	char *end = dst + n;

	while (dst < end) {
		struct slab *sl = virt_to_slab(k, dst);
		char *seg_end = end;
		struct meta_save sv[3];
		unsigned int nsv = 0;

		if (sl) {
			struct kmem_cache *s = sl->slab_cache;
			char *base = slab_address(k, sl);
			size_t idx = (size_t)(dst - base) / s->size;
			char *slot = base + idx * s->size;
			char *slot_end = slot + s->size;

			if (idx < SLAB_OBJECTS(slab_counters(sl)))
				nsv = save_slot_meta(k, s, slot + s->red_left_pad, sv);
			else
				slot_end = base + slab_size(sl);
			if (slot_end < seg_end)
				seg_end = slot_end;
		} else {
			/* up to the next page: it may be a slab */
			char *next = k->ram + ALIGN((size_t)(dst - k->ram) + 1, PAGE_SIZE);
			if (next < seg_end)
				seg_end = next;
		}
		if (src) {
			memmove(dst, src, (size_t)(seg_end - dst));
			src = (const char *)src + (seg_end - dst);
		} else {
			memset(dst, c, (size_t)(seg_end - dst));
		}
		for (unsigned int i = 0; i < nsv; i++)
			memcpy(sv[i].at, sv[i].bytes, sv[i].len);
		dst = seg_end;
	}
}

/* ---- public API ------------------------------------------------------------------------ */
#define ENTER(k) struct odb_task *t_ = odb_enter(k); if (!t_) return odb_enter_failed(k)
#define LEAVE(r) return odb_leave(t_, (r))

static int outside(struct odb_kernel *k, const char *what, odb_addr_t addr, size_t n)
{
	return odb_err(k, ODB_EFAULT, "%s: [0x%llx, +%zu) is outside the kernel's memory", what,
		       (unsigned long long)addr, n);
}

bool odb_kasan_enabled(odb_kernel *k) { return kasan_enabled(k); }

static int check_only(odb_kernel *k, odb_addr_t addr, size_t size, bool write, unsigned long ip)
{
	ENTER(k);
	if (kasan_enabled(k))
		kasan_check_range(k, addr, size, write, ip);
	LEAVE(ODB_OK);
}

int odb_kasan_check_read(odb_kernel *k, odb_addr_t addr, size_t size)
{
	return check_only(k, addr, size, false, (unsigned long)__builtin_return_address(0));
}

int odb_kasan_check_write(odb_kernel *k, odb_addr_t addr, size_t size)
{
	return check_only(k, addr, size, true, (unsigned long)__builtin_return_address(0));
}

int odb_kasan_check_ip(odb_kernel *k, odb_addr_t addr, size_t size, bool is_write,
		       unsigned long ip, bool *ok)
{
	bool good = true;
	unsigned long outer;
	ENTER(k);
	if (kasan_enabled(k)) {
		outer = t_->cc_ip;
		t_->cc_ip = ip;
		/* inside kasan_disable_current() a bad access goes on unreported,
		 * as the kernel's kasan_report() lets it */
		good = kasan_check_range(k, addr, size, is_write, ip) || t_->kasan_depth;
		t_->cc_ip = outer;
	}
	if (ok)
		*ok = good;
	LEAVE(ODB_OK);
}

int odb_kasan_record_aux_stack(odb_kernel *k, odb_addr_t addr)
{
	ENTER(k);
	if (odb_in_arena(k, addr, 1))
		kasan_record_aux_stack(k, virt_to_host(k, addr));
	LEAVE(ODB_OK);
}

int odb_kasan_check_byte(odb_kernel *k, odb_addr_t addr, bool *ok)
{
	unsigned long ip = (unsigned long)__builtin_return_address(0);
	ENTER(k);
	*ok = true;
	if (kasan_enabled(k)) {
		if (odb_in_arena(k, addr, 1)) {
			*ok = kasan_check_byte(k, virt_to_host(k, addr), ip);
		} else if (!kasan_byte_accessible(k, addr)) {
			kasan_report(k, addr, 1, false, ip);   /* vmalloc space or wild */
			*ok = false;
		}
	}
	LEAVE(ODB_OK);
}

/* Host memory of [addr, addr+n) when all of it exists: the arena, or the
 * mapped pages of one vmalloc area (their host window). */
static void *backed(struct odb_kernel *k, odb_addr_t addr, size_t n)
{
	if (odb_in_arena(k, addr, n))
		return virt_to_host(k, addr);
	return vmalloc_host_ptr(k, addr, n);
}

/* Copy out the bytes of [addr, addr+n) that exist from addr on, at most cap;
 * returns how many. */
static size_t copy_existing(struct odb_kernel *k, odb_addr_t addr, size_t n, void *buf, size_t cap)
{
	size_t avail = odb_backed_bytes(k, addr, n < cap ? n : cap);
	void *p = avail ? backed(k, addr, avail) : NULL;

	if (!p)
		return 0;
	memcpy(buf, p, avail);
	return avail;
}

/* One access of n bytes (an instrumented load): report and go on. */
int odb_kasan_read(odb_kernel *k, odb_addr_t addr, void *buf, size_t n)
{
	size_t got;
	void *p;
	ENTER(k);
	if (!n)
		LEAVE(ODB_OK);
	if (!kasan_enabled(k)) {
		p = backed(k, addr, n);
		if (!p)
			LEAVE(outside(k, "read", addr, n));
		memcpy(buf, p, n);
		LEAVE(ODB_OK);
	}
	kasan_check_range(k, addr, n, false, (unsigned long)__builtin_return_address(0));
	got = copy_existing(k, addr, n, buf, n);
	memset((char *)buf + got, 0, n - got);    /* never performed where there is no memory */
	LEAVE(ODB_OK);
}

/* inlined in each entry point: a report's stack starts at the caller of it */
static inline __attribute__((always_inline))
int read_some(odb_kernel *k, odb_addr_t addr, size_t n, void *buf, size_t cap, size_t *got,
	      unsigned long ip)
{
	void *p;
	ENTER(k);

	*got = 0;
	if (!n)
		LEAVE(ODB_OK);
	if (!kasan_enabled(k)) {
		p = backed(k, addr, n);
		if (!p)
			LEAVE(outside(k, "read", addr, n));
		*got = n < cap ? n : cap;
		memcpy(buf, p, *got);
		LEAVE(ODB_OK);
	}
	kasan_check_range(k, addr, n, false, ip);
	*got = copy_existing(k, addr, n, buf, cap);
	LEAVE(ODB_OK);
}

int odb_kasan_read_avail(odb_kernel *k, odb_addr_t addr, size_t n, void *buf, size_t *got)
{
	return read_some(k, addr, n, buf, n, got, (unsigned long)__builtin_return_address(0));
}

int odb_kasan_read_some(odb_kernel *k, odb_addr_t addr, size_t n, void *buf, size_t cap, size_t *got)
{
	return read_some(k, addr, n, buf, cap, got, (unsigned long)__builtin_return_address(0));
}

int odb_kasan_write(odb_kernel *k, odb_addr_t addr, const void *buf, size_t n)
{
	void *p;
	ENTER(k);
	if (!n)
		LEAVE(ODB_OK);
	if (!kasan_enabled(k)) {
		p = backed(k, addr, n);
		if (!p)
			LEAVE(outside(k, "write", addr, n));
		memcpy(p, buf, n);
		LEAVE(ODB_OK);
	}
	if (kasan_check_range(k, addr, n, true, (unsigned long)__builtin_return_address(0))) {
		if ((p = backed(k, addr, n)))
			memcpy(p, buf, n);
	} else if (odb_in_arena(k, addr, n)) {
		write_protected(k, virt_to_host(k, addr), buf, 0, n);
	} else if ((p = vmalloc_host_ptr(k, addr, n))) {
		memcpy(p, buf, n);      /* in an area's pages: no allocator metadata there */
	}
	LEAVE(ODB_OK);
}

/* mm/kasan/shadow.c: memset/memcpy/memmove check their range and are not
 * performed when the check fails. */
int odb_kasan_memset(odb_kernel *k, odb_addr_t addr, int c, size_t n)
{
	void *p;
	ENTER(k);
	if (!n)
		LEAVE(ODB_OK);
	if (!kasan_enabled(k)) {
		if (!backed(k, addr, n))
			LEAVE(outside(k, "memset", addr, n));
	} else if (!kasan_check_range(k, addr, n, true, (unsigned long)__builtin_return_address(0))) {
		/* kasan_disable_current(): unreported and performed, as in the
		 * kernel (allocator metadata inside slots kept) */
		if (t_->kasan_depth && odb_in_arena(k, addr, n))
			write_protected(k, virt_to_host(k, addr), NULL, c, n);
		LEAVE(ODB_OK);
	}
	if ((p = backed(k, addr, n)))
		memset(p, c, n);
	LEAVE(ODB_OK);
}

/* A copy inside kasan_disable_current() over memory that may be poisoned:
 * performed, keeping the allocators' metadata (through a bounce buffer when
 * the ranges overlap). */
static int copy_protected(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n)
{
	void *tmp = NULL;
	const void *from = virt_to_host(k, src);

	if (src < dst + n && dst < src + n) {
		tmp = malloc(n);
		if (!tmp)
			return odb_err(k, ODB_ENOMEM, "memmove: no host memory for %zu bytes", n);
		memcpy(tmp, from, n);
		from = tmp;
	}
	write_protected(k, virt_to_host(k, dst), from, 0, n);
	free(tmp);
	return ODB_OK;
}

static int copy(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n, const char *what,
		unsigned long ip)
{
	void *d, *s;
	ENTER(k);
	if (!n)
		LEAVE(ODB_OK);
	if (!kasan_enabled(k)) {
		if (!backed(k, src, n))
			LEAVE(outside(k, what, src, n));
		if (!backed(k, dst, n))
			LEAVE(outside(k, what, dst, n));
	} else if (!kasan_check_range(k, src, n, false, ip) ||
		   !kasan_check_range(k, dst, n, true, ip)) {
		if (t_->kasan_depth && odb_in_arena(k, src, n) && odb_in_arena(k, dst, n))
			LEAVE(copy_protected(k, dst, src, n));
		LEAVE(ODB_OK);
	}
	d = backed(k, dst, n);
	s = backed(k, src, n);
	if (d && s)
		memmove(d, s, n);
	LEAVE(ODB_OK);
}

int odb_kasan_memcpy(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n)
{
	return copy(k, dst, src, n, "memcpy", (unsigned long)__builtin_return_address(0));
}

int odb_kasan_memmove(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n)
{
	return copy(k, dst, src, n, "memmove", (unsigned long)__builtin_return_address(0));
}

int odb_kasan_shadow(odb_kernel *k, odb_addr_t addr, size_t n, uint8_t *out, size_t *count)
{
	size_t g;

	*count = 0;
	if (!kasan_enabled(k))
		return odb_err(k, ODB_ESTATE, "kasan: KASAN is off (kasan=off)");
	if (!n)
		return ODB_OK;
	if (addr + n < addr || !kasan_range_has_metadata(k, addr, n))
		return outside(k, "kasan.shadow", addr, n);
	g = (size_t)(((addr + n - 1) >> KASAN_SHADOW_SCALE_SHIFT) - (addr >> KASAN_SHADOW_SCALE_SHIFT)) + 1;
	memcpy(out, kasan_mem_to_shadow(k, addr), g);
	*count = g;
	return ODB_OK;
}

int odb_kasan_set_multi_shot(odb_kernel *k, bool on, bool *old)
{
	struct kasan_state *ks = kasan_state(k);
	bool was = false;

	if (ks)
		was = __atomic_exchange_n(&ks->multi_shot, on, __ATOMIC_RELAXED);
	if (old)
		*old = was;
	return ks ? ODB_OK : odb_err(k, ODB_ESTATE, "KASAN is not built into this kernel");
}

int odb_kasan_counters(odb_kernel *k, struct odb_kasan_counters *out)
{
	struct kasan_state *ks = kasan_state(k);

	memset(out, 0, sizeof(*out));
	if (!ks)
		return ODB_OK;
	out->enabled = kasan_enabled(k);
	out->multi_shot = __atomic_load_n(&ks->multi_shot, __ATOMIC_RELAXED);
	out->fault_panic = ks->fault_panic;
	out->detections = atomic_load(&ks->detections);
	out->reports = atomic_load(&ks->reports);
	out->suppressed = atomic_load(&ks->suppressed);
	return ODB_OK;
}

/* ---- the public poisoning API (include/linux/kasan.h, mm/kasan/shadow.c, common.c) ---- */
static int check_granule(odb_kernel *k, const char *what, odb_addr_t addr)
{
	if (addr & KASAN_GRANULE_MASK)
		return odb_err(k, ODB_EINVAL, "%s: address 0x%llx is not aligned to the %lu-byte granule",
			       what, (unsigned long long)addr, KASAN_GRANULE_SIZE);
	return 0;
}

static int check_range(odb_kernel *k, const char *what, odb_addr_t addr, size_t n)
{
	if (addr + n < addr || !odb_in_arena(k, addr, n))
		return outside(k, what, addr, n);
	return 0;
}

static int check_pages(odb_kernel *k, const char *what, odb_addr_t addr, unsigned int order)
{
	if (order > MAX_PAGE_ORDER)
		return odb_err(k, ODB_EINVAL, "%s: order %u > MAX_PAGE_ORDER (%d)", what, order,
			       MAX_PAGE_ORDER);
	if (addr & (PAGE_SIZE - 1))
		return odb_err(k, ODB_EINVAL, "%s: 0x%llx is not a page address", what,
			       (unsigned long long)addr);
	return check_range(k, what, addr, PAGE_SIZE << order);
}

int odb_kasan_poison(odb_kernel *k, odb_addr_t addr, size_t size, uint8_t value)
{
	int r;
	ENTER(k);

	if ((r = check_granule(k, "kasan_poison", addr)))
		LEAVE(r);
	if (size & KASAN_GRANULE_MASK)
		LEAVE(odb_err(k, ODB_EINVAL, "kasan_poison: size %zu is not a multiple of the %lu-byte "
			      "granule", size, KASAN_GRANULE_SIZE));
	if (!size)
		LEAVE(ODB_OK);
	if ((r = check_range(k, "kasan_poison", addr, size)))
		LEAVE(r);
	if (kasan_enabled(k))
		kasan_poison(k, addr, size, value);
	LEAVE(ODB_OK);
}

int odb_kasan_unpoison(odb_kernel *k, odb_addr_t addr, size_t size)
{
	int r;
	ENTER(k);

	if ((r = check_granule(k, "kasan_unpoison", addr)))
		LEAVE(r);
	if (!size)
		LEAVE(ODB_OK);
	if ((r = check_range(k, "kasan_unpoison", addr, size)))
		LEAVE(r);
	if (kasan_enabled(k))
		kasan_unpoison(k, addr, size);
	LEAVE(ODB_OK);
}

int odb_kasan_poison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order)
{
	int r;
	ENTER(k);

	if ((r = check_pages(k, "kasan_poison_pages", addr, order)))
		LEAVE(r);
	kasan_poison_pages(k, addr, order);
	LEAVE(ODB_OK);
}

int odb_kasan_unpoison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order)
{
	int r;
	ENTER(k);

	if ((r = check_pages(k, "kasan_unpoison_pages", addr, order)))
		LEAVE(r);
	kasan_unpoison_pages(k, addr, order);
	LEAVE(ODB_OK);
}

int odb_kasan_mempool_poison_object(odb_kernel *k, odb_addr_t addr, bool *reuse)
{
	int r;
	ENTER(k);

	*reuse = false;
	if ((r = check_range(k, "kasan_mempool_poison_object", addr, 1)))
		LEAVE(r);
	*reuse = kasan_mempool_poison_object(k, virt_to_host(k, addr),
					     (unsigned long)__builtin_return_address(0));
	LEAVE(ODB_OK);
}

int odb_kasan_mempool_unpoison_object(odb_kernel *k, odb_addr_t addr, size_t size)
{
	const char *what = "kasan_mempool_unpoison_object";
	void *p;
	struct slab *sl;
	int r;
	ENTER(k);

	if ((r = check_range(k, what, addr, 1)))
		LEAVE(r);
	p = virt_to_host(k, addr);
	sl = virt_to_slab(k, p);
	/* the kernel trusts its caller; odebug refuses what no allocation is */
	if (sl) {
		struct kmem_cache *s = sl->slab_cache;

		if (!check_valid_pointer(s, sl, p))
			LEAVE(odb_err(k, ODB_EINVAL, "%s: 0x%llx is not an object of %s", what,
				      (unsigned long long)addr, s->name));
		if (size > s->object_size)
			LEAVE(odb_err(k, ODB_EINVAL, "%s: size %zu > the object size of %s (%u)", what,
				      size, s->name, s->object_size));
	} else {
		struct page *pg = virt_to_head_page(k, addr);

		if (!(READ_ONCE(pg->flags) & PG_alloc) || page_address(k, pg) != addr)
			LEAVE(odb_err(k, ODB_EINVAL, "%s: 0x%llx is neither a slab object nor the start "
				      "of an allocated page block", what, (unsigned long long)addr));
		if (size > (PAGE_SIZE << pg->order))
			LEAVE(odb_err(k, ODB_EINVAL, "%s: size %zu > its %lu-byte page block", what, size,
				      PAGE_SIZE << pg->order));
	}
	kasan_mempool_unpoison_object(k, p, size);
	LEAVE(ODB_OK);
}

int odb_kasan_mempool_poison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order, bool *reuse)
{
	int r;
	ENTER(k);

	*reuse = false;
	if ((r = check_pages(k, "kasan_mempool_poison_pages", addr, order)))
		LEAVE(r);
	*reuse = kasan_mempool_poison_pages(k, addr, order, (unsigned long)__builtin_return_address(0));
	LEAVE(ODB_OK);
}

int odb_kasan_mempool_unpoison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order)
{
	int r;
	ENTER(k);

	if ((r = check_pages(k, "kasan_mempool_unpoison_pages", addr, order)))
		LEAVE(r);
	kasan_mempool_unpoison_pages(k, addr, order);
	LEAVE(ODB_OK);
}

/* kasan_disable_current / kasan_enable_current: current->kasan_depth */
int odb_kasan_disable_current(odb_kernel *k)
{
	ENTER(k);
	if (t_->kasan_depth == UINT_MAX)
		LEAVE(odb_err(k, ODB_ERANGE, "kasan_disable_current: nested too deep"));
	t_->kasan_depth++;
	LEAVE(ODB_OK);
}

int odb_kasan_enable_current(odb_kernel *k)
{
	ENTER(k);
	if (!t_->kasan_depth)
		LEAVE(odb_err(k, ODB_ESTATE, "kasan_enable_current: KASAN is not disabled on this "
			      "thread (no kasan_disable_current to undo)"));
	t_->kasan_depth--;
	LEAVE(ODB_OK);
}

int odb_kasan_current_depth(odb_kernel *k, unsigned int *depth)
{
	ENTER(k);
	*depth = t_->kasan_depth;
	LEAVE(ODB_OK);
}
