/*
 * KASAN reports (mm/kasan/report.c + report_generic.c), modern Generic format:
 * bug-type classification, the access line, the stack, the object's tracks
 * and description, the page, and the shadow dump around the bad address.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kasan/kasan.h"
#include "kasan/meta.h"
#include "slab/slub.h"

#define META_BYTES_PER_BLOCK   1
#define META_BLOCKS_PER_ROW    16
#define META_BYTES_PER_ROW     (META_BLOCKS_PER_ROW * META_BYTES_PER_BLOCK)
#define META_MEM_BYTES_PER_ROW (META_BYTES_PER_ROW * KASAN_GRANULE_SIZE)
#define META_ROWS_AROUND_ADDR  2

#define SEP66 "=================================================================="

/* ---- classification (report_generic.c) --------------------------------------------------- */
static const char *get_shadow_bug_type(struct odb_kernel *k, odb_addr_t first_bad)
{
	const uint8_t *sh = kasan_mem_to_shadow(k, first_bad);
	uint8_t v = *sh;

	/* a partially accessible granule: the next one tells why */
	if (v > 0 && v < KASAN_GRANULE_SIZE &&
	    first_bad + KASAN_GRANULE_SIZE < kasan_region_end(k, first_bad))
		v = sh[1];
	switch (v) {
	case 0 ... KASAN_GRANULE_SIZE - 1:
		return "out-of-bounds";
	case KASAN_PAGE_REDZONE:
	case KASAN_SLAB_REDZONE:
		return "slab-out-of-bounds";
	case KASAN_GLOBAL_REDZONE:
		return "global-out-of-bounds";
	case KASAN_STACK_LEFT:
	case KASAN_STACK_MID:
	case KASAN_STACK_RIGHT:
	case KASAN_STACK_PARTIAL:
		return "stack-out-of-bounds";
	case KASAN_PAGE_FREE:
		return "use-after-free";
	case KASAN_SLAB_FREE:
	case KASAN_SLAB_FREE_META:
		return "slab-use-after-free";
	case KASAN_ALLOCA_LEFT:
	case KASAN_ALLOCA_RIGHT:
		return "alloca-out-of-bounds";
	case KASAN_VMALLOC_INVALID:
		return "vmalloc-out-of-bounds";
	default:
		return "unknown-crash";
	}
}

static const char *get_wild_bug_type(odb_addr_t addr)
{
	if (addr < PAGE_SIZE)
		return "null-ptr-deref";
	if (addr < KASAN_TASK_SIZE)
		return "user-memory-access";
	return "wild-memory-access";
}

/* report_generic.c's get_bug_type: an address with shadow is classified by
 * the shadow of the first bad byte (an access starting in RAM at a freed page
 * and running past the end of RAM is a use-after-free); the first bad byte
 * itself without shadow -- the access runs off the end of RAM or of vmalloc
 * space with every byte before accessible -- is odebug's wild-memory-access
 * (the kernel's shadow for memory past the end of RAM reads 0 there, and the
 * access faults instead). */
const char *kasan_bug_type(struct odb_kernel *k, odb_addr_t addr, size_t size, odb_addr_t first_bad)
{
	if (addr + size < addr)
		return "out-of-bounds";
	if (!addr_has_metadata(k, addr))
		return get_wild_bug_type(addr);
	if (!addr_has_metadata(k, first_bad))
		return "wild-memory-access";
	return get_shadow_bug_type(k, first_bad);
}

/* ---- report pieces ------------------------------------------------------------------------- */
struct kasan_report_info {
	enum kasan_report_type type;
	odb_addr_t access_addr, first_bad_addr;
	size_t access_size;
	bool is_write;
	unsigned long ip;
	const char *bug_type;
	struct kmem_cache *cache;
	void *object;                 /* host pointer */
	size_t alloc_size;
	struct kasan_track alloc_track, free_track;
	uint32_t aux_stack[2];        /* kasan_record_aux_stack's, newest first */
	uint32_t here;                /* stack of the bad access */
	const struct odb_kasan_foreign *foreign;   /* odb_kasan_report_foreign */
	bool from_ip;                 /* an instrumented access: "in <ip's function>" */
};

static void print_track(struct odb_kernel *k, struct odb_report_impl *r,
			const struct kasan_track *t, const char *prefix)
{
	report_line(r, "%s by task %u:", prefix, t->pid);
	if (t->stack) {
		char *s = odb_stack_text(k, t->stack);
		if (s) {
			stack_depot_print_to(k, t->stack, r);
			free(s);
		} else {
			report_line(r, "(stack is not available)");
		}
	} else {
		report_line(r, "(stack is not available)");
	}
}

/* The object an address belongs to, and its tracks (complete_report_info). */
static void complete_report_info(struct odb_kernel *k, struct kasan_report_info *info)
{
	odb_addr_t a = info->access_addr;
	struct slab *sl;

	if (!odb_in_arena(k, a, 1))
		return;
	sl = virt_to_slab(k, virt_to_host(k, a));
	if (!sl)
		return;
	/* another thread may be freeing this slab (a free of one of its objects
	 * racing the slab's discard is the caller's use-after-free): its fields
	 * are read once and the object they give is checked to lie in RAM */
	{
		struct kmem_cache *s = READ_ONCE(sl->slab_cache);
		void *obj;

		if (!s || !READ_ONCE(sl->base))
			return;
		obj = nearest_obj(s, sl, virt_to_host(k, a));
		if (!odb_in_arena(k, host_to_virt(k, obj), s->object_size ? s->object_size : 1))
			return;
		info->cache = s;
		info->object = obj;
	}
	/* alloc_size from the shadow: whole granules, then a partial one */
	{
		odb_addr_t o = host_to_virt(k, info->object);
		size_t n = 0;
		unsigned int g = ALIGN(info->cache->object_size, KASAN_GRANULE_SIZE) / KASAN_GRANULE_SIZE;
		const uint8_t *sh = kasan_mem_to_shadow(k, o);

		for (unsigned int i = 0; i < g; i++) {
			if (sh[i] == 0) {
				n += KASAN_GRANULE_SIZE;
				continue;
			}
			if (sh[i] < KASAN_GRANULE_SIZE)
				n += sh[i];
			break;
		}
		info->alloc_size = n ? n : info->cache->object_size;
	}
	{
		struct kasan_alloc_meta *am = kasan_get_alloc_meta(info->cache, info->object);
		struct kasan_free_meta *fm = kasan_get_free_meta(info->cache, info->object);

		if (am) {
			memcpy(&info->alloc_track, &am->alloc_track, sizeof(info->alloc_track));
			memcpy(info->aux_stack, am->aux_stack, sizeof(info->aux_stack));
		}
		if (fm && *kasan_host_to_shadow(k, info->object) == KASAN_SLAB_FREE_META)
			memcpy(&info->free_track, &fm->free_track, sizeof(info->free_track));
	}
}

static void describe_object(struct odb_kernel *k, struct odb_report_impl *r,
			    struct kasan_report_info *info)
{
	odb_addr_t obj = host_to_virt(k, info->object), a = info->access_addr;
	const char *rel_type, *state = "";
	long rel;

	if (info->alloc_track.stack) {
		print_track(k, r, &info->alloc_track, "Allocated");
		report_line(r, "%s", "");
	}
	if (info->free_track.stack) {
		print_track(k, r, &info->free_track, "Freed");
		report_line(r, "%s", "");
	}
	/* kasan_print_aux_stacks (generic): call_rcu / queue_work stacks */
	for (int i = 0; i < 2; i++) {
		/* (a handle the arena's meta holds: only a stored stack is printed) */
		if (!info->aux_stack[i] || info->aux_stack[i] > odb_stack_depot_count(k))
			continue;
		report_line(r, "%s", i ? "Second to last potentially related work creation:"
				       : "Last potentially related work creation:");
		stack_depot_print_to(k, info->aux_stack[i], r);
		report_line(r, "%s", "");
	}
	report_line(r, "The buggy address belongs to the object at %016llx",
		    (unsigned long long)obj);
	report_line(r, " which belongs to the cache %s of size %u", info->cache->name,
		    info->cache->object_size);
	if (a < obj) {
		rel_type = "to the left";
		rel = (long)(obj - a);
	} else if (a >= obj + info->alloc_size) {
		rel_type = "to the right";
		rel = (long)(a - (obj + info->alloc_size));
	} else {
		rel_type = "inside";
		rel = (long)(a - obj);
	}
	if (!strcmp(info->bug_type, "slab-out-of-bounds"))
		state = "allocated ";
	else if (!strcmp(info->bug_type, "slab-use-after-free"))
		state = "freed ";
	report_line(r, "The buggy address is located %ld bytes %s of", rel, rel_type);
	report_line(r, " %s%zu-byte region [%016llx, %016llx)", state, info->alloc_size,
		    (unsigned long long)obj, (unsigned long long)(obj + info->alloc_size));
}

static void dump_page(struct odb_kernel *k, struct odb_report_impl *r, struct page *pg)
{
	struct page *head = (READ_ONCE(pg->flags) & PG_tail) ? &k->pages[pg->head] : pg;
	const char *what = (head->flags & PG_slab) ? "slab" :
			   (head->flags & PG_buddy) || !(head->flags & (PG_alloc | PG_tail)) ? "buddy" : "";

	report_line(r, "page: refcount:%d mapcount:0 mapping:0000000000000000 index:0x0 pfn:0x%llx",
		    (head->flags & PG_alloc) ? 1 : 0, (unsigned long long)page_to_pfn(k, pg));
	if (head != pg)
		report_line(r, "head: order:%u pfn:0x%llx", head->order,
			    (unsigned long long)page_to_pfn(k, head));
	report_line(r, "flags: 0x%x(%s%snode=0|zone=0)", pg->flags, what, *what ? "|" : "");
	report_line(r, "page dumped because: kasan: bad access detected");
}

static void print_address_description(struct odb_kernel *k, struct odb_report_impl *r,
				      struct kasan_report_info *info)
{
	struct odb_task *t = odb_current(k);
	struct page *page = NULL;
	char tb[48];

	report_line(r, "CPU: %d UID: 0 PID: %d Comm: %s %s 6.12.0-odebug #1",
		    t ? smp_processor_id_task(t) : 0, t ? t->pid : 0, t ? t->comm : "?",
		    print_tainted(k, tb, sizeof(tb)));
	report_line(r, "Call Trace:");
	report_line(r, " <TASK>");
	stack_depot_print_to(k, info->here, r);
	report_line(r, " </TASK>");
	report_line(r, "%s", "");
	if (info->cache && info->object) {
		describe_object(k, r, info);
		report_line(r, "%s", "");
	}
	if (info->foreign && info->foreign->description && *info->foreign->description) {
		const char *p = info->foreign->description;

		while (*p) {
			const char *e = strchr(p, '\n');
			int n = e ? (int)(e - p) : (int)strlen(p);

			report_line(r, "%.*s", n, p);
			p += n + (e ? 1 : 0);
		}
		report_line(r, "%s", "");
	}
	if (is_vmalloc_addr(k, info->access_addr)) {
		struct vm_area_info va;

		if (find_vm_area_info(k, info->access_addr, &va)) {
			report_line(r, "The buggy address belongs to the virtual mapping at");
			report_line(r, " [%016llx, %016llx) created by:", (unsigned long long)va.start,
				    (unsigned long long)va.end);
			report_line(r, " %s", va.caller);
			report_line(r, "%s", "");
			page = va.page;       /* vmalloc_to_page(): none for the guard page */
		}
	} else if (odb_in_arena(k, info->access_addr, 1)) {
		page = virt_to_page(k, info->access_addr);
	}
	if (page) {
		report_line(r, "The buggy address belongs to the physical page:");
		dump_page(k, r, page);
		report_line(r, "%s", "");
	}
}

void print_memory_metadata(struct odb_kernel *k, struct odb_report_impl *r, odb_addr_t addr);
void print_memory_metadata(struct odb_kernel *k, struct odb_report_impl *r, odb_addr_t addr)
{
	odb_addr_t row = ALIGN_DOWN(addr, (odb_addr_t)META_MEM_BYTES_PER_ROW) -
			 META_ROWS_AROUND_ADDR * META_MEM_BYTES_PER_ROW;

	report_line(r, "Memory state around the buggy address:");
	for (int i = -META_ROWS_AROUND_ADDR; i <= META_ROWS_AROUND_ADDR; i++) {
		char line[128];
		int n;

		n = snprintf(line, sizeof(line), "%c%016llx:", i == 0 ? '>' : ' ',
			     (unsigned long long)row);
		for (int j = 0; j < META_BLOCKS_PER_ROW; j++) {
			odb_addr_t g = row + (odb_addr_t)j * KASAN_GRANULE_SIZE;
			if (addr_has_metadata(k, g))
				n += snprintf(line + n, sizeof(line) - (size_t)n, " %02x",
					      *kasan_mem_to_shadow(k, g));
			else
				n += snprintf(line + n, sizeof(line) - (size_t)n, " ??");
		}
		report_line(r, "%s", line);
		if (i == 0) {
			/* '^' under the first hex digit of the bad granule's byte:
			 * column 3 + 2*sizeof(long) + 3*k + 1 (1-based) */
			int col = 3 + 2 * (int)sizeof(long) +
				  3 * (int)((addr - row) / KASAN_GRANULE_SIZE);
			report_line(r, "%*s^", col, "");
		}
		row += META_MEM_BYTES_PER_ROW;
	}
}

static void print_foreign_metadata(struct odb_report_impl *r, const struct odb_kasan_foreign *f)
{
	uint64_t row = ALIGN_DOWN(f->first_bad, (uint64_t)META_MEM_BYTES_PER_ROW) -
		       META_ROWS_AROUND_ADDR * META_MEM_BYTES_PER_ROW;

	report_line(r, "Memory state around the buggy address:");
	for (int i = -META_ROWS_AROUND_ADDR; i <= META_ROWS_AROUND_ADDR; i++) {
		char line[128];
		int n = snprintf(line, sizeof(line), "%c%016llx:", i == 0 ? '>' : ' ',
				 (unsigned long long)row);

		for (int j = 0; j < META_BLOCKS_PER_ROW; j++) {
			int v = f->shadow_byte(f->ctx, row + (uint64_t)j * KASAN_GRANULE_SIZE);
			if (v >= 0)
				n += snprintf(line + n, sizeof(line) - (size_t)n, " %02x", v & 0xff);
			else
				n += snprintf(line + n, sizeof(line) - (size_t)n, " ??");
		}
		report_line(r, "%s", line);
		if (i == 0)
			report_line(r, "%*s^", 3 + 2 * (int)sizeof(long) +
				    3 * (int)((f->first_bad - row) / KASAN_GRANULE_SIZE), "");
		row += META_MEM_BYTES_PER_ROW;
	}
}

/* ---- report control ---------------------------------------------------------------------- */
static bool report_enabled(struct kasan_state *ks)
{
	if (__atomic_load_n(&ks->multi_shot, __ATOMIC_RELAXED))
		return true;
	return !atomic_exchange(&ks->reported, true);
}

static void kasan_panic(struct odb_kernel *k, struct odb_report_impl *r)
{
	struct kasan_state *ks = kasan_state(k);
	struct odb_task *t;

	if (!__atomic_load_n(&ks->multi_shot, __ATOMIC_RELAXED))
		odb_check_panic_on_warn(k, &r->pub);          /* check_panic_on_warn("KASAN") */
	if (!ks->fault_panic)
		return;
	t = odb_current(k);
	if (!t || t->bug)
		return;
	printk(k, "Kernel panic - not syncing: kasan.fault=panic set ...");
	printk(k, "---[ end Kernel panic - not syncing: kasan.fault=panic set ... ]---");
	atomic_fetch_add(&r->refs, 1);
	t->bug = &r->pub;
}

static void symbol_of(struct odb_kernel *k, struct kasan_report_info *info, char *buf, size_t len)
{
	char py[256];

	stack_depot_py(k, info->here, py, sizeof(py));
	if (py[0] && !info->from_ip)
		snprintf(buf, len, "%s", py);
	else
		odb_symbolise(k, (const void *)info->ip, buf, len);
}

static void fill_track(struct odb_kernel *k, struct odb_track *out, const struct kasan_track *t)
{
	(void)k;
	memset(out, 0, sizeof(*out));
	out->pid = (int)t->pid;
	out->cpu = -1;                 /* generic KASAN keeps pid + stack only */
	out->handle = t->stack;
}

static void make_report(struct odb_kernel *k, struct kasan_report_info *info)
{
	struct kasan_state *ks = kasan_state(k);
	struct odb_task *t = odb_current(k);
	struct odb_report_impl *r;
	char fn[300];

	/* report_suppressed_sw(): inside kasan_disable_current() a bad access is
	 * not reported (nor counted); an invalid or double free still is */
	if (info->type == KASAN_REPORT_ACCESS && t && t->kasan_depth)
		return;
	atomic_fetch_add(&ks->detections, 1);
	if (!report_enabled(ks)) {
		atomic_fetch_add(&ks->suppressed, 1);
		return;
	}
	pthread_mutex_lock(&ks->report_lock);
	if (t && t->cc_ip && t->cc_ip == info->ip) {
		info->from_ip = true;
		info->here = stack_depot_save_from(k, info->ip, 3);
	} else {
		info->here = stack_depot_save_current(k, 3);
	}
	if (info->foreign)
		info->first_bad_addr = info->foreign->first_bad;
	else
		info->first_bad_addr = info->type == KASAN_REPORT_ACCESS ?
			kasan_find_first_bad_addr(k, info->access_addr, info->access_size) :
			info->access_addr;
	if (info->foreign)
		info->bug_type = info->foreign->bug_type;
	else if (info->type == KASAN_REPORT_ACCESS)
		info->bug_type = kasan_bug_type(k, info->access_addr, info->access_size,
						info->first_bad_addr);
	else
		info->bug_type = info->type == KASAN_REPORT_DOUBLE_FREE ? "double-free" : "invalid-free";
	if (!info->foreign && info->access_addr + info->access_size >= info->access_addr)
		complete_report_info(k, info);
	r = report_new(k, "kasan", info->bug_type);
	if (!r) {
		pthread_mutex_unlock(&ks->report_lock);
		return;
	}
	r->no_panic = true;         /* KASAN decides (multi-shot, kasan.fault) */
	symbol_of(k, info, fn, sizeof(fn));
	report_line(r, SEP66);
	report_line(r, "BUG: KASAN: %s in %s", info->bug_type, fn);
	if (info->type != KASAN_REPORT_ACCESS)
		report_line(r, "Free of addr %016llx by task %s/%d",
			    (unsigned long long)info->access_addr, t ? t->comm : "?", t ? t->pid : 0);
	else if (info->access_size)
		report_line(r, "%s of size %zu at addr %016llx by task %s/%d",
			    info->is_write ? "Write" : "Read", info->access_size,
			    (unsigned long long)info->access_addr, t ? t->comm : "?", t ? t->pid : 0);
	else
		report_line(r, "%s at addr %016llx by task %s/%d", info->is_write ? "Write" : "Read",
			    (unsigned long long)info->access_addr, t ? t->comm : "?", t ? t->pid : 0);
	report_line(r, "%s", "");
	print_address_description(k, r, info);
	if (info->foreign) {
		if (info->foreign->shadow_byte)
			print_foreign_metadata(r, info->foreign);
	} else if (addr_has_metadata(k, info->access_addr)) {
		/* as the kernel: whenever the access address has shadow, around
		 * the first bad byte (granules without shadow print "??") */
		print_memory_metadata(k, r, info->first_bad_addr);
	}
	report_line(r, SEP66);
	r->pub.addr = info->access_addr;
	if (info->type == KASAN_REPORT_ACCESS) {
		r->pub.size = info->access_size;
		r->pub.is_write = info->is_write;
	}
	if (info->cache) {
		report_set_cache(r, info->cache->name);
		r->pub.object = host_to_virt(k, info->object);
		r->pub.offset = (long)(info->access_addr - r->pub.object);
		if (info->alloc_track.stack || info->alloc_track.pid) {
			r->pub.has_alloc_track = true;
			fill_track(k, &r->pub.alloc_track, &info->alloc_track);
		}
		if (info->free_track.stack || info->free_track.pid) {
			r->pub.has_free_track = true;
			fill_track(k, &r->pub.free_track, &info->free_track);
		}
	}
	atomic_fetch_add(&ks->reports, 1);
	atomic_fetch_add(&r->refs, 1);
	report_publish(k, r);
	pthread_mutex_unlock(&ks->report_lock);
	add_taint(k, TAINT_BAD_PAGE);
	kasan_panic(k, r);
	odb_report_put(&r->pub);
}

void kasan_report(struct odb_kernel *k, odb_addr_t addr, size_t size, bool is_write,
		  unsigned long ip)
{
	struct kasan_report_info info = {
		.type = KASAN_REPORT_ACCESS, .access_addr = addr, .access_size = size,
		.is_write = is_write, .ip = ip,
	};

	make_report(k, &info);
}

void kasan_report_invalid_free(struct odb_kernel *k, odb_addr_t ptr, unsigned long ip,
			       enum kasan_report_type type)
{
	struct kasan_report_info info = { .type = type, .access_addr = ptr, .ip = ip };

	make_report(k, &info);
}

/* ---- reports about memory outside the arena, with the caller's shadow ----------------------- */
#define ENTER(k) struct odb_task *t_ = odb_enter(k); if (!t_) return odb_enter_failed(k)
#define LEAVE(r) return odb_leave(t_, (r))

int odb_kasan_report_foreign(odb_kernel *k, uint64_t addr, size_t size, bool is_write,
			     unsigned long ip, const struct odb_kasan_foreign *f)
{
	struct kasan_report_info info = {
		.type = KASAN_REPORT_ACCESS, .access_addr = addr, .access_size = size,
		.is_write = is_write, .ip = ip, .foreign = f,
	};
	unsigned long outer;
	ENTER(k);
	if (!f || !f->bug_type || !*f->bug_type)
		LEAVE(odb_err(k, ODB_EINVAL, "odb_kasan_report_foreign: no bug type"));
	if (!kasan_enabled(k))
		LEAVE(ODB_OK);
	outer = t_->cc_ip;
	t_->cc_ip = ip;
	make_report(k, &info);
	t_->cc_ip = outer;
	LEAVE(ODB_OK);
}
