/*
 * The slab's public C API (odebug.h): argument checks, address conversion,
 * odb_enter/odb_leave, and /proc/slabinfo.  No allocator logic here.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "slab/slub.h"
#include "kasan/kasan.h"
#include "debugobjects/debugobjects.h"

#define ENTER(k) struct odb_task *t_ = odb_enter(k); if (!t_) return odb_enter_failed(k)
#define LEAVE(r) return odb_leave(t_, (r))

static int bad_cache(struct odb_kernel *k, odb_cache *s)
{
	if (!s)
		return odb_err(k, ODB_EINVAL, "no cache given");
	if (s->k != k)
		return odb_err(k, ODB_EINVAL, "cache %s belongs to another kernel", s->name);
	if (s->destroyed)
		return odb_err(k, ODB_ESTATE, "cache %s was destroyed", s->name);
	return 0;
}

/* An arena address, as a host pointer, or NULL with an error. */
static void *obj_ptr(struct odb_kernel *k, odb_addr_t x, int *err)
{
	if (!odb_in_arena(k, x, 1)) {
		*err = odb_err(k, ODB_EINVAL, "0x%llx is not an address in this kernel's memory",
			       (unsigned long long)x);
		return NULL;
	}
	return virt_to_host(k, x);
}

int odb_slab_flags_parse(odb_kernel *k, const char *letters, unsigned int *flags)
{
	unsigned int f = 0;

	for (const char *p = letters ? letters : ""; *p; p++) {
		switch (tolower((unsigned char)*p)) {
		case 'f': f |= SLAB_CONSISTENCY_CHECKS; break;
		case 'z': f |= SLAB_RED_ZONE; break;
		case 'p': f |= SLAB_POISON; break;
		case 'u': f |= SLAB_STORE_USER; break;
		case 't': f |= SLAB_TRACE; break;
		case 'a': f |= SLAB_FAILSLAB; break;
		case '-': f = 0; break;
		default:
			return odb_err(k, ODB_EINVAL, "flags: unknown slub_debug letter '%c' (use F Z P U T A -)",
				       *p);
		}
	}
	*flags = f;
	return ODB_OK;
}

void odb_slab_flags_letters(unsigned int flags, char *buf, size_t len)
{
	static const struct { unsigned int f; char c; } l[] = {
		{ SLAB_CONSISTENCY_CHECKS, 'F' }, { SLAB_RED_ZONE, 'Z' }, { SLAB_POISON, 'P' },
		{ SLAB_STORE_USER, 'U' }, { SLAB_TRACE, 'T' }, { SLAB_FAILSLAB, 'A' },
	};
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(l) && n + 1 < len; i++)
		if (flags & l[i].f)
			buf[n++] = l[i].c;
	if (len)
		buf[n < len ? n : len - 1] = '\0';
}

int odb_kmem_cache_create(odb_kernel *k, const char *name, unsigned int size, unsigned int align,
			  unsigned int flags, odb_ctor_fn ctor, void *ctor_ctx, odb_cache **out)
{
	struct kmem_cache *s;
	ENTER(k);

	*out = NULL;
	if (flags & (__OBJECT_POISON | __CMPXCHG_DOUBLE | __SCHED_POINTS))
		LEAVE(odb_err(k, ODB_EINVAL, "flags: 0x%x has internal bits set", flags));
	if (name && strlen(name) >= 64)
		LEAVE(odb_err(k, ODB_EINVAL, "kmem_cache_create: name longer than 63 characters"));
	{
		int err;
		s = __kmem_cache_create(k, name, size, align, flags, NULL, ctor, ctor_ctx, &err);
		if (!s)
			LEAVE(err);
	}
	*out = s;
	LEAVE(ODB_OK);
}

void kmem_cache_mark_internal(struct kmem_cache *s)
{
	s->internal = true;
}

int odb_kmem_cache_destroy(odb_kernel *k, odb_cache *s)
{
	int r;
	ENTER(k);

	/* A second destroy: kmem_cache_destroy()'s kasan_check_byte() on the
	 * freed descriptor reports (slab-use-after-free) and returns, as in the
	 * kernel.  The host struct is a tombstone: no host memory is freed. */
	if (s && s->k == k && (s->destroyed || s->zombie)) {
		if (kasan_enabled(k) && !kasan_byte_accessible(k, host_to_virt(k, s->desc))) {
			kmem_cache_destroy(k, s);
			LEAVE(ODB_OK);
		}
		LEAVE(odb_err(k, ODB_ESTATE, "kmem_cache_destroy: cache %s was already destroyed", s->name));
	}
	if ((r = bad_cache(k, s)))
		LEAVE(r);
	/* The kernel never destroys its kmalloc caches, nor odebug its own
	 * (debug_objects_cache, a scenario's skbuff_head_cache): their users
	 * hold them without a reference. */
	if (s->internal)
		LEAVE(odb_err(k, ODB_EINVAL, "kmem_cache_destroy: %s is %s: it is never destroyed",
			      s->name, s->kmalloc ? "a kmalloc cache" : "one of odebug's own caches"));
	kmem_cache_destroy(k, s);
	LEAVE(ODB_OK);
}

odb_cache *odb_kmem_cache_find(odb_kernel *k, const char *name)
{
	return name ? kmem_cache_find(k, name) : NULL;
}

/* Up to max caches of one of slab_state's lists (under slab_mutex); the total. */
static size_t cache_list_copy(odb_kernel *k, struct list_head *head, odb_cache **out, size_t max)
{
	struct odb_slab_state *ss = slab_state(k);
	struct list_head *pos;
	size_t n = 0;

	mutex_lock_nocb(k, &ss->slab_mutex);
	for (pos = head->next; pos != head; pos = pos->next, n++)
		if (n < max)
			out[n] = list_entry(pos, struct kmem_cache, list);
	mutex_unlock_nocb(k, &ss->slab_mutex);
	return n;
}

size_t odb_kmem_cache_list(odb_kernel *k, odb_cache **out, size_t max)
{
	return cache_list_copy(k, &slab_state(k)->slab_caches, out, max);
}

size_t odb_kmem_cache_zombies(odb_kernel *k, odb_cache **out, size_t max)
{
	return cache_list_copy(k, &slab_state(k)->zombies, out, max);
}

int odb_kmem_cache_alloc(odb_kernel *k, odb_cache *s, unsigned int gfp, odb_addr_t *out)
{
	void *p;
	int r;
	ENTER(k);

	*out = 0;
	if ((r = bad_cache(k, s)))
		LEAVE(r);
	p = slab_alloc_public(s, gfp, (unsigned long)__builtin_return_address(0), s->object_size);
	if (!p)
		LEAVE(odb_err(k, ODB_ENOMEM, "kmem_cache_alloc(%s) failed", s->name));
	*out = host_to_virt(k, p);
	LEAVE(ODB_OK);
}

int odb_kmem_cache_kmalloc(odb_kernel *k, odb_cache *s, size_t size, unsigned int gfp,
			   odb_addr_t *out)
{
	void *p;
	int r;
	ENTER(k);

	*out = 0;
	if ((r = bad_cache(k, s)))
		LEAVE(r);
	if (!size || size > s->object_size)
		LEAVE(odb_err(k, ODB_EINVAL, "kmalloc size %zu does not fit cache %s (1..%u)", size,
			      s->name, s->object_size));
	p = slab_alloc_public(s, gfp, (unsigned long)__builtin_return_address(0), (unsigned int)size);
	p = kasan_kmalloc(s, p, size, gfp);   /* kmalloc's own KASAN hook */
	if (!p)
		LEAVE(odb_err(k, ODB_ENOMEM, "kmalloc(%zu) from %s failed", size, s->name));
	*out = host_to_virt(k, p);
	LEAVE(ODB_OK);
}

int odb_kmem_cache_free(odb_kernel *k, odb_cache *s, odb_addr_t x)
{
	void *p;
	int r = 0;
	ENTER(k);

	if ((r = bad_cache(k, s)))
		LEAVE(r);
	if (!x)
		LEAVE(ODB_OK);
	p = obj_ptr(k, x, &r);
	if (!p)
		LEAVE(r);
	if (!debug_objects_refuse_free(k, p, "kmem_cache_free"))   /* a tracker: reported */
		kmem_cache_free(k, s, p);
	LEAVE(ODB_OK);
}

int odb_kmem_cache_alloc_bulk(odb_kernel *k, odb_cache *s, unsigned int gfp, size_t n,
			      odb_addr_t *out)
{
	size_t i;
	int r;
	ENTER(k);

	if ((r = bad_cache(k, s)))
		LEAVE(r);
	for (i = 0; i < n; i++) {
		void *p = slab_alloc_public(s, gfp, (unsigned long)__builtin_return_address(0),
					    s->object_size);
		if (!p)
			break;
		out[i] = host_to_virt(k, p);
	}
	if (i < n) {
		/* kmem_cache_alloc_bulk: all or nothing */
		while (i--)
			kmem_cache_free(k, s, virt_to_host(k, out[i]));
		LEAVE(odb_err(k, ODB_ENOMEM, "kmem_cache_alloc_bulk(%s, %zu) failed", s->name, n));
	}
	LEAVE(ODB_OK);
}

int odb_kmem_cache_free_bulk(odb_kernel *k, odb_cache *s, size_t n, const odb_addr_t *a)
{
	int r;
	ENTER(k);

	if ((r = bad_cache(k, s)))
		LEAVE(r);
	/* All or nothing: an address outside the arena refuses the whole batch
	 * before anything is freed.  Inside the arena each object goes through
	 * kmem_cache_free(), which reports a bad one (wrong cache, not an object,
	 * double free, a debug-objects tracker) and frees nothing for it, as the
	 * kernel's bulk free does. */
	for (size_t i = 0; i < n; i++)
		if (a[i] && !obj_ptr(k, a[i], &r))
			LEAVE(odb_err(k, r, "free_bulk: item %zu (0x%llx) is not an address in this "
				      "kernel's memory; nothing was freed", i, (unsigned long long)a[i]));
	for (size_t i = 0; i < n; i++) {
		void *p = virt_to_host(k, a[i]);

		if (a[i] && !debug_objects_refuse_free(k, p, "kmem_cache_free_bulk"))
			kmem_cache_free(k, s, p);
	}
	LEAVE(ODB_OK);
}

int __odb_kmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out)
{
	bool kasan_fast = atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed);
	void *p;
	int r;

	/* KASAN's fast path (slub.h), before the call's bookkeeping */
	if (kasan_fast && (r = kmalloc_kasan_fast(k, size, gfp, __builtin_frame_address(0), &p)) != 1) {
		*out = p ? host_to_virt(k, p) : 0;
		return r;
	}
	ENTER(k);

	*out = 0;
	if (!size) {
		*out = ODB_ZERO_SIZE_PTR;
		LEAVE(ODB_OK);
	}
	if (size > KMALLOC_MAX_SIZE)
		LEAVE(odb_err(k, ODB_ENOMEM, "kmalloc(%zu): larger than KMALLOC_MAX_SIZE (%lu)", size,
			      (unsigned long)KMALLOC_MAX_SIZE));
	/* the slow path, which hands its code path's stack template over to the
	 * fast path the first time (kasan.h) */
	if (!kasan_fast) {
		p = kmalloc(k, size, gfp);
	} else {
		uint64_t key = kmalloc_kasan_tmpl_key(k, size, gfp);
		unsigned int saves = t_->kasan_saves;

		p = kmalloc(k, size, gfp);
		if (key && p && t_->kasan_saves == saves + 1 && !t_->bug && !kasan_tmpl_find(k, key))
			kasan_tmpl_capture(k, key, t_->kasan_last_stack, __builtin_frame_address(0));
	}
	if (!p)
		LEAVE(odb_err(k, ODB_ENOMEM, "kmalloc(%zu) failed", size));
	*out = host_to_virt(k, p);
	LEAVE(ODB_OK);
}

int __odb_kfree(odb_kernel *k, odb_addr_t x)
{
	bool kasan_fast = atomic_load_explicit(&k->api_kasan_fast, memory_order_relaxed);
	void *p;
	int r = 0;

	/* KASAN's fast path (slub.h), before the call's bookkeeping */
	if (kasan_fast && odb_in_arena(k, x, 1) &&
	    kfree_kasan_fast(k, virt_to_host(k, x), __builtin_frame_address(0)))
		return ODB_OK;
	ENTER(k);

	if (x <= ODB_ZERO_SIZE_PTR)   /* ZERO_OR_NULL_PTR */
		LEAVE(ODB_OK);
	if (is_vmalloc_addr(k, x)) {
		kfree_vmalloc_addr(k, x, (unsigned long)__builtin_return_address(0));
		LEAVE(ODB_OK);
	}
	p = obj_ptr(k, x, &r);
	if (!p)
		LEAVE(r);
	if (debug_objects_refuse_free(k, p, "kfree"))   /* a tracker: reported */
		LEAVE(ODB_OK);
	/* the slow path, handing its stack template over the first time */
	if (!kasan_fast) {
		kfree(k, p);
	} else {
		uint64_t key = kfree_kasan_tmpl_key(k, p);
		unsigned int saves = t_->kasan_saves;

		kfree(k, p);
		if (key && t_->kasan_saves == saves + 1 && !t_->bug && !kasan_tmpl_find(k, key) &&
		    kfree_kasan_tmpl_key(k, p) == key)
			kasan_tmpl_capture(k, key, t_->kasan_last_stack, __builtin_frame_address(0));
	}
	LEAVE(ODB_OK);
}

int odb_kvmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out)
{
	unsigned long caller = (unsigned long)__builtin_return_address(0);
	ENTER(k);

	*out = 0;
	if (!size) {
		*out = ODB_ZERO_SIZE_PTR;
		LEAVE(ODB_OK);
	}
	*out = kvmalloc_node(k, size, gfp, caller);
	if (!*out)
		LEAVE(odb_err(k, ODB_ENOMEM, "kvmalloc(%zu) failed", size));
	LEAVE(ODB_OK);
}

/* kvfree: is_vmalloc_addr() ? vfree : kfree */
int odb_kvfree(odb_kernel *k, odb_addr_t x)
{
	if (is_vmalloc_addr(k, x))
		return odb_vfree(k, x);
	return odb_kfree(k, x);
}

int odb_kfree_sensitive(odb_kernel *k, odb_addr_t x)
{
	void *p;
	int r = 0;
	ENTER(k);

	if (x <= ODB_ZERO_SIZE_PTR)   /* ksize(ZERO_OR_NULL) is 0, kfree does nothing */
		LEAVE(ODB_OK);
	p = obj_ptr(k, x, &r);
	if (!p)
		LEAVE(r);
	if (!debug_objects_refuse_free(k, p, "kfree_sensitive"))   /* a tracker: reported */
		kfree_sensitive(k, p);
	LEAVE(ODB_OK);
}

int odb_ksize(odb_kernel *k, odb_addr_t x, size_t *out)
{
	void *p;
	int r = 0;
	ENTER(k);

	*out = 0;
	if (x <= ODB_ZERO_SIZE_PTR)
		LEAVE(ODB_OK);
	p = obj_ptr(k, x, &r);
	if (!p)
		LEAVE(r);
	*out = ksize(k, p);
	LEAVE(ODB_OK);
}

int odb_krealloc(odb_kernel *k, odb_addr_t x, size_t new_size, unsigned int gfp, odb_addr_t *out)
{
	void *p = NULL, *n;
	int r = 0;
	ENTER(k);

	*out = 0;
	if (x > ODB_ZERO_SIZE_PTR) {
		p = obj_ptr(k, x, &r);
		if (!p)
			LEAVE(r);
		if (debug_objects_refuse_free(k, p, "krealloc"))
			LEAVE(ODB_OK);   /* *out stays 0 */
	}
	if (new_size > KMALLOC_MAX_SIZE)
		LEAVE(odb_err(k, ODB_ENOMEM, "krealloc(%zu): larger than KMALLOC_MAX_SIZE", new_size));
	if (!new_size) {
		kfree(k, p);
		*out = ODB_ZERO_SIZE_PTR;
		LEAVE(ODB_OK);
	}
	n = krealloc(k, p, new_size, gfp);
	if (!n)
		LEAVE(odb_err(k, ODB_ENOMEM, "krealloc(%zu) failed", new_size));
	*out = host_to_virt(k, n);
	LEAVE(ODB_OK);
}

unsigned long odb_slab_errors(odb_kernel *k)
{
	struct odb_task *t = odb_current(k);
	return t ? t->slab_errors : 0;
}

int odb_slab_kunit_begin(odb_kernel *k)
{
	struct odb_task *t;
	ENTER(k);

	t = t_;
	if (t->slab_kunit)
		LEAVE(odb_err(k, ODB_ESTATE, "slab errors are already being counted on this thread"));
	t->slab_kunit_start = t->slab_errors;
	t->slab_kunit = true;
	LEAVE(ODB_OK);
}

int odb_slab_kunit_end(odb_kernel *k, unsigned long *errors)
{
	struct odb_task *t;
	ENTER(k);

	t = t_;
	if (!t->slab_kunit)
		LEAVE(odb_err(k, ODB_ESTATE, "slab errors are not being counted on this thread"));
	t->slab_kunit = false;
	if (errors)
		*errors = t->slab_errors - t->slab_kunit_start;
	LEAVE(ODB_OK);
}

int odb_kmem_cache_validate(odb_kernel *k, odb_cache *s, long *errors)
{
	int r;
	ENTER(k);

	*errors = 0;
	if ((r = bad_cache(k, s)))
		LEAVE(r);
	if (slab_state(k)->path == SLUB_PATH_MODERN && !kmem_cache_debug(s))
		/* c7323a5ad078 (v6.1): the lockless fast paths of a cache without
		 * debug flags race with any validation, so the sysfs file refuses */
		LEAVE(odb_err(k, ODB_EINVAL, "validate: %s has no debug flags (the v6.1+ SLUB "
			      "validates debug caches only)", s->name));
	*errors = validate_slab_cache(s);
	LEAVE(ODB_OK);
}

int odb_kmem_cache_flush(odb_kernel *k, odb_cache *s)
{
	int r;
	ENTER(k);

	if ((r = bad_cache(k, s)))
		LEAVE(r);
	flush_all(s);
	LEAVE(ODB_OK);
}

/* count_partial(n, count_free) */
static unsigned long count_partial_free(struct kmem_cache *s)
{
	struct list_head *pos;
	unsigned long x = 0;

	node_lock(s, &s->node);
	for (pos = s->node.partial.next; pos != &s->node.partial; pos = pos->next) {
		unsigned long c = slab_counters(list_entry(pos, struct slab, slab_list));
		x += SLAB_OBJECTS(c) - SLAB_INUSE(c);
	}
	node_unlock(s, &s->node);
	return x;
}

int odb_kmem_cache_info(odb_kernel *k, odb_cache *s, struct odb_cache_info *o)
{
	int r;

	if ((r = bad_cache(k, s)))
		return r;
	memset(o, 0, sizeof(*o));
	snprintf(o->name, sizeof(o->name), "%s", s->name);
	o->object_size = s->object_size;
	o->size = s->size;
	o->align = s->align;
	o->offset = s->offset;
	o->inuse = s->inuse;
	o->red_left_pad = s->red_left_pad;
	o->order = s->order;
	o->objects_per_slab = s->objects;
	o->min_partial = (unsigned int)s->min_partial;
	o->cpu_partial = s->cpu_partial;
	o->flags = s->flags;
	odb_slab_flags_letters(s->flags, o->letters, sizeof(o->letters));
	o->kmalloc = s->kmalloc;
	o->cmpxchg_double = s->flags & __CMPXCHG_DOUBLE;
	o->object_poison = s->flags & __OBJECT_POISON;
	o->info_end = get_info_end(s);
	o->nr_slabs = (unsigned long)atomic_load(&s->node.nr_slabs);
	o->total_objects = (unsigned long)atomic_load(&s->node.total_objects);
	o->nr_partial = __atomic_load_n(&s->node.nr_partial, __ATOMIC_RELAXED);
	o->active_objs = o->total_objects - count_partial_free(s);
	o->kasan_meta_size = s->kasan_meta_size;
	return ODB_OK;
}

unsigned int odb_slub_stat_count(void) { return NR_SLUB_STAT_ITEMS; }

const char *odb_slub_stat_name(unsigned int i)
{
	return i < NR_SLUB_STAT_ITEMS ? slub_stat_names[i] : NULL;
}

int odb_kmem_cache_stats(odb_kernel *k, odb_cache *s, uint64_t *out, uint64_t *per_cpu)
{
	int r;

	if ((r = bad_cache(k, s)))
		return r;
	for (unsigned int i = 0; i < NR_SLUB_STAT_ITEMS; i++) {
		uint64_t sum = 0;
		for (unsigned int c = 0; c < k->nr_cpu_ids; c++) {
			uint64_t v = __atomic_load_n(&s->cpu_slab[c].stat[i], __ATOMIC_RELAXED);
			sum += v;
			if (per_cpu)
				per_cpu[(size_t)c * NR_SLUB_STAT_ITEMS + i] = v;
		}
		out[i] = sum;
	}
	return ODB_OK;
}

char *odb_slabinfo_text(odb_kernel *k)
{
	struct odb_slab_state *ss = slab_state(k);
	struct list_head *pos;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	len += (size_t)snprintf(buf, cap, "slabinfo - version: 2.1\n"
		"# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>"
		" : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs>"
		" <sharedavail>\n");
	mutex_lock_nocb(k, &ss->slab_mutex);
	/* /proc/slabinfo lists the newest cache first */
	for (pos = ss->slab_caches.prev; pos != &ss->slab_caches; pos = pos->prev) {
		struct kmem_cache *s = list_entry(pos, struct kmem_cache, list);
		unsigned long nr_slabs = (unsigned long)atomic_load(&s->node.nr_slabs);
		unsigned long nr_objs = (unsigned long)atomic_load(&s->node.total_objects);
		unsigned long nr_free = count_partial_free(s);
		char line[256];
		int n = snprintf(line, sizeof(line),
				 "%-17s %6lu %6lu %6u %4u %4d : tunables %4u %4u %4u : slabdata %6lu %6lu %6lu\n",
				 s->name, nr_objs - nr_free, nr_objs, s->size, s->objects, 1 << s->order,
				 0, 0, 0, nr_slabs, nr_slabs, 0UL);
		if (len + (size_t)n + 1 > cap) {
			char *nb;
			while (len + (size_t)n + 1 > cap)
				cap *= 2;
			nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		memcpy(buf + len, line, (size_t)n + 1);
		len += (size_t)n;
	}
	mutex_unlock_nocb(k, &ss->slab_mutex);
	return buf;
}

int odb_slab_object(odb_kernel *k, odb_addr_t a, odb_cache **s, odb_addr_t *object)
{
	struct slab *sl;

	*s = NULL;
	*object = 0;
	if (!odb_in_arena(k, a, 1))
		return ODB_ENOENT;
	sl = virt_to_slab(k, virt_to_host(k, a));
	if (!sl)
		return ODB_ENOENT;
	*s = sl->slab_cache;
	*object = host_to_virt(k, nearest_obj(sl->slab_cache, sl, virt_to_host(k, a)));
	return ODB_OK;
}
