/*
 * slub_debug: the boot parameter, the debug object layout (calculate_sizes),
 * poisoning and red zones, alloc/free tracks, the consistency checks with
 * their kernel-format reports (modern strings), the debug alloc/free
 * processing of both policies, validate_slab_cache and the KUnit error rule.
 *
 * Policies (odebug.slub_path=):
 *   relaxed (default, the 2016 series): consistency checks only with F, the
 *           node lock is dropped at the end of free_debug_processing, any
 *           failed check means "not freed";
 *   locked  (before it): every debug cache runs the checks; the node lock is
 *           kept until __slab_free drops it; a failed check_object on free
 *           jumps to the success exit, so the object is freed anyway.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "slab/slub.h"
#include "kasan/kasan.h"

#define SEP77 "============================================================================="
#define DASH77 "-----------------------------------------------------------------------------"

struct slub_debug_block { char *str; };

static inline bool slub_locked(const struct kmem_cache *s)
{
	return slab_state(s->k)->path == SLUB_PATH_LOCKED;
}

static inline unsigned long long V(struct kmem_cache *s, const void *p) { return slab_virt(s, p); }

/* A vmemmap-like, deterministic address for a struct slab in messages. */
static unsigned long long slab_vaddr(struct kmem_cache *s, const struct slab *sl)
{
	return 0xffffea0000000000ULL + page_to_pfn(s->k, slab_page(sl)) * 64;
}

void slab_add_kunit_errors(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	if (t)
		t->slab_errors++;
}

bool slab_in_kunit_test(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	return t && t->slab_kunit;
}

/* ---- boot parameter --------------------------------------------------------------- */
/* parse_slub_debug_flags: one ';' block.  Returns the next block or NULL. */
static const char *parse_slub_debug_flags(struct odb_kernel *k, const char *str,
					  slab_flags_t *flags, const char **slabs, bool init)
{
	bool higher_order_disable = false;

	while (*str == ';')
		str++;
	if (*str == ',') {
		*flags = DEBUG_DEFAULT_FLAGS;
		goto check_slabs;
	}
	*flags = 0;
	for (; *str && *str != ',' && *str != ';'; str++) {
		switch (tolower((unsigned char)*str)) {
		case '-': *flags = 0; break;
		case 'f': *flags |= SLAB_CONSISTENCY_CHECKS; break;
		case 'z': *flags |= SLAB_RED_ZONE; break;
		case 'p': *flags |= SLAB_POISON; break;
		case 'u': *flags |= SLAB_STORE_USER; break;
		case 't': *flags |= SLAB_TRACE; break;
		case 'a': *flags |= SLAB_FAILSLAB; break;
		case 'o': higher_order_disable = true; break;
		default:
			if (init)
				printk(k, "slub_debug option '%c' unknown. skipped", *str);
		}
	}
check_slabs:
	*slabs = *str == ',' ? ++str : NULL;
	while (*str && *str != ';')
		str++;
	while (*str == ';')
		str++;
	if (init && higher_order_disable)
		slab_state(k)->disable_higher_order_debug = true;
	return *str ? str : NULL;
}

int setup_slub_debug(struct odb_kernel *k, const char *val)
{
	struct odb_slab_state *ss = slab_state(k);
	slab_flags_t flags, global_flags = DEBUG_DEFAULT_FLAGS;
	bool changed = false, listed = false;
	const char *str = val, *slabs;

	free(ss->slub_debug_str);
	ss->slub_debug_str = NULL;
	if (str && *str) {
		while (str) {
			str = parse_slub_debug_flags(k, str, &flags, &slabs, true);
			if (!slabs) {
				global_flags = flags;
				changed = true;
			} else {
				listed = true;
			}
		}
		if (listed) {
			if (!changed)
				global_flags = 0;   /* slub_debug was 0 before (no DEBUG_ON) */
			ss->slub_debug_str = strdup(val);
			if (!ss->slub_debug_str)
				return odb_err(k, ODB_ENOMEM, "slub_debug: out of memory");
		}
	}
	ss->slub_debug = global_flags;
	return 0;
}

void slub_debug_show(struct odb_kernel *k, char *buf, size_t len)
{
	struct odb_slab_state *ss = slab_state(k);
	static const struct { slab_flags_t f; char c; } letters[] = {
		{ SLAB_CONSISTENCY_CHECKS, 'F' }, { SLAB_RED_ZONE, 'Z' }, { SLAB_POISON, 'P' },
		{ SLAB_STORE_USER, 'U' }, { SLAB_TRACE, 'T' }, { SLAB_FAILSLAB, 'A' },
	};
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(letters) && n + 1 < len; i++)
		if (ss->slub_debug & letters[i].f)
			buf[n++] = letters[i].c;
	if (!n && len > 1)
		buf[n++] = '-';
	buf[n] = '\0';
	if (ss->slub_debug_str)
		snprintf(buf + n, len - n, ";%s", ss->slub_debug_str);
}

void slub_debug_exit(struct odb_kernel *k)
{
	free(slab_state(k)->slub_debug_str);
	slab_state(k)->slub_debug_str = NULL;
}

slab_flags_t kmem_cache_flags(struct odb_kernel *k, unsigned int object_size,
			      slab_flags_t flags, const char *name)
{
	struct odb_slab_state *ss = slab_state(k);
	slab_flags_t local = ss->slub_debug, block_flags;
	const char *next = ss->slub_debug_str, *iter;
	size_t len = strlen(name);

	if (flags & SLAB_NO_USER_FLAGS)
		return flags;
	if (flags & SLAB_NOLEAKTRACE)
		local &= ~SLAB_STORE_USER;
	while (next) {
		next = parse_slub_debug_flags(k, next, &block_flags, &iter, false);
		if (!iter)
			continue;
		while (*iter) {
			const char *end = strchr(iter, ',');
			const char *glob;
			size_t cmplen;

			if (!end)
				end = iter + strlen(iter);
			if (next && next < end)
				end = next - 1;
			{
				const char *semi = memchr(iter, ';', (size_t)(end - iter));
				if (semi)
					end = semi;
			}
			glob = memchr(iter, '*', (size_t)(end - iter));
			cmplen = glob ? (size_t)(glob - iter) : max_t(size_t, len, (size_t)(end - iter));
			if (!strncmp(name, iter, cmplen) && (glob || (size_t)(end - iter) == len))
				return flags | block_flags;
			if (!*end || *end == ';')
				break;
			iter = end + 1;
		}
	}
	return flags | local;
}

/* ---- layout --------------------------------------------------------------------------- */
unsigned int get_info_end(const struct kmem_cache *s)
{
	if (freeptr_outside_object(s))
		return s->inuse + (unsigned int)sizeof(void *);
	return s->inuse;
}

struct track *get_track(struct kmem_cache *s, void *object, enum track_item alloc)
{
	return (struct track *)((char *)object + get_info_end(s)) + alloc;
}

unsigned int *get_orig_size_ptr(struct kmem_cache *s, void *object)
{
	return (unsigned int *)((char *)object + get_info_end(s) + 2 * sizeof(struct track));
}

void set_orig_size(struct kmem_cache *s, void *object, unsigned int orig_size)
{
	if (!slub_debug_orig_size(s))
		return;
	memcpy(get_orig_size_ptr(s, object), &orig_size, sizeof(orig_size));
}

unsigned int get_orig_size(struct kmem_cache *s, void *object)
{
	unsigned int v;

	if (!slub_debug_orig_size(s))
		return s->object_size;
	memcpy(&v, get_orig_size_ptr(s, object), sizeof(v));
	/* It lives in the arena, where a stray write can make it anything: never
	 * more than the object (krealloc copies that many bytes; the kernel, which
	 * trusts it, would copy past the object). */
	return v > s->object_size ? s->object_size : v;
}

int slub_set_order(struct kmem_cache *s);

static int calculate_sizes_once(struct kmem_cache *s)
{
	slab_flags_t flags = s->flags;
	unsigned int size = s->object_size;

	size = ALIGN(size, (unsigned int)sizeof(void *));
	if ((flags & SLAB_POISON) && !(flags & SLAB_TYPESAFE_BY_RCU) && !cache_has_ctor(s))
		s->flags |= __OBJECT_POISON;
	else
		s->flags &= ~__OBJECT_POISON;
	if ((flags & SLAB_RED_ZONE) && size == s->object_size)
		size += sizeof(void *);
	s->inuse = size;
	if ((flags & (SLAB_TYPESAFE_BY_RCU | SLAB_POISON)) || cache_has_ctor(s) ||
	    ((flags & SLAB_RED_ZONE) && s->object_size < sizeof(void *)) || slub_debug_orig_size(s)) {
		s->offset = size;
		size += sizeof(void *);
	} else {
		s->offset = ALIGN_DOWN(s->object_size / 2, (unsigned int)sizeof(void *));
	}
	if (flags & SLAB_STORE_USER) {
		size += 2 * sizeof(struct track);
		if (flags & SLAB_KMALLOC)
			size += sizeof(unsigned int);
	}
	kasan_cache_create(s, &size, &s->flags);
	s->red_left_pad = 0;
	if (flags & SLAB_RED_ZONE) {
		size += sizeof(void *);
		s->red_left_pad = ALIGN((unsigned int)sizeof(void *), s->align);
		size += s->red_left_pad;
	}
	size = ALIGN(size, s->align);
	s->size = size;
	s->reserved = 0;
	return slub_set_order(s);
}

static int calculate_sizes_layout(struct kmem_cache *s)
{
	if (calculate_sizes_once(s))
		return -1;
	/* slub_debug=O: no debug metadata where it would raise the minimum order */
	if (slab_state(s->k)->disable_higher_order_debug && (s->flags & DEBUG_METADATA_FLAGS)) {
		unsigned int o = 0, os = 0;
		size_t a = s->size - 1, b = s->object_size - 1;
		for (a >>= PAGE_SHIFT; a; a >>= 1) o++;
		for (b >>= PAGE_SHIFT; b; b >>= 1) os++;
		if (o > os) {
			s->flags &= ~DEBUG_METADATA_FLAGS;
			s->offset = 0;
			return calculate_sizes_once(s);
		}
	}
	return 0;
}

int calculate_sizes(struct kmem_cache *s)
{
	if (calculate_sizes_layout(s))
		return -1;
	check_plan_build(s);
	return 0;
}

/* ---- init ------------------------------------------------------------------------------- */

void init_tracking(struct kmem_cache *s, void *object)
{
	if (!(s->flags & SLAB_STORE_USER))
		return;
	memset(get_track(s, object, TRACK_ALLOC), 0, 2 * sizeof(struct track));
	if (slub_debug_orig_size(s)) {
		unsigned int v = s->object_size;
		memcpy(get_orig_size_ptr(s, object), &v, sizeof(v));
	}
}

void setup_object_debug(struct kmem_cache *s, void *object)
{
	if (!(s->flags & (SLAB_STORE_USER | SLAB_RED_ZONE | __OBJECT_POISON)))
		return;
	init_object(s, object, SLUB_RED_INACTIVE);
	init_tracking(s, object);
}

void setup_slab_debug(struct kmem_cache *s, struct slab *sl, void *addr)
{
	if (!(s->flags & SLAB_POISON))
		return;
	memset(addr, POISON_INUSE, slab_size(sl));
}

void set_track(struct kmem_cache *s, void *object, enum track_item alloc, unsigned long addr)
{
	struct odb_kernel *k = s->k;
	struct odb_task *t = odb_current(k);
	struct track tr = {
		.addr = addr,
		.handle = stack_depot_save_current(k, 2),
		.cpu = t ? smp_processor_id_task(t) : 0,
		.pid = t ? t->pid : 0,
		.when = jiffies(k),
	};

	memcpy(get_track(s, object, alloc), &tr, sizeof(tr));
}

/* ---- reports -------------------------------------------------------------------------------- */
static struct odb_report_impl *slab_bug(struct kmem_cache *s, const char *kind, const char *fmt, ...)
	__printf(3, 4);

static struct odb_report_impl *slab_bug(struct kmem_cache *s, const char *kind, const char *fmt, ...)
{
	struct odb_report_impl *r = report_new(s->k, "slub", kind);
	char msg[256], tb[48];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report_set_cache(r, s->name);
	report_line(r, SEP77);
	report_line(r, "BUG %s (%s): %s", s->name, print_tainted(s->k, tb, sizeof(tb)), msg);
	report_line(r, DASH77);
	report_line(r, "%s", "");
	return r;
}

static void slab_report_done(struct kmem_cache *s, struct odb_report_impl *r)
{
	/* a KUnit test counting SLUB errors: the kernel returns before printing
	 * (object_err, slab_err, check_bytes_and_report), so nothing reaches
	 * dmesg, k.reports or the taint; the caller counts it */
	if (unlikely(slab_in_kunit_test(s->k))) {
		if (r)
			odb_report_put(&r->pub);
		return;
	}
	report_publish(s->k, r);
	add_taint(s->k, TAINT_BAD_PAGE);
}

/* print_hex_dump(DUMP_PREFIX_ADDRESS, 16, 1, ascii) lines */
static void print_section(struct kmem_cache *s, struct odb_report_impl *r, const char *text,
			  const uint8_t *addr, unsigned int length)
{
	for (unsigned int i = 0; i < length; i += 16) {
		char hex[64], asc[17];
		unsigned int n = length - i < 16 ? length - i : 16, lx = 0;

		for (unsigned int j = 0; j < n; j++) {
			lx += (unsigned int)snprintf(hex + lx, sizeof(hex) - lx, "%s%02x", j ? " " : "",
						     addr[i + j]);
			asc[j] = isprint(addr[i + j]) && addr[i + j] < 0x80 ? (char)addr[i + j] : '.';
		}
		asc[n] = '\0';
		while (lx < 49)
			hex[lx++] = ' ';
		hex[lx] = '\0';
		report_line(r, "%s%016llx: %s%s", text, V(s, addr + i), hex, asc);
	}
}

static void print_track(struct kmem_cache *s, struct odb_report_impl *r, const char *what,
			const struct track *t)
{
	struct odb_kernel *k = s->k;
	char caller[256];

	if (!t->addr)
		return;
	stack_depot_py(k, t->handle, caller, sizeof(caller));
	if (!caller[0])
		odb_symbolise(k, (const void *)t->addr, caller, sizeof(caller));
	report_line(r, "%s in %s age=%llu cpu=%u pid=%d", what, caller,
		    (unsigned long long)(jiffies(k) - t->when), (unsigned)t->cpu, t->pid);
	if (t->handle)
		stack_depot_print_to(k, t->handle, r);
	else
		report_line(r, "object allocation/free stack trace missing");
}

static void fill_track(struct odb_track *out, const struct track *t)
{
	out->addr = t->addr;
	out->cpu = t->cpu;
	out->pid = t->pid;
	out->when = t->when;
	out->handle = t->handle;
}

void print_tracking(struct kmem_cache *s, void *object, struct odb_report_impl *r)
{
	struct track ta, tf;

	if (!(s->flags & SLAB_STORE_USER))
		return;
	memcpy(&ta, get_track(s, object, TRACK_ALLOC), sizeof(ta));
	memcpy(&tf, get_track(s, object, TRACK_FREE), sizeof(tf));
	print_track(s, r, "Allocated", &ta);
	print_track(s, r, "Freed", &tf);
	if (ta.addr && !r->pub.has_alloc_track) {
		r->pub.has_alloc_track = true;
		fill_track(&r->pub.alloc_track, &ta);
	}
	if (tf.addr && !r->pub.has_free_track) {
		r->pub.has_free_track = true;
		fill_track(&r->pub.free_track, &tf);
	}
}

static void print_slab_info(struct kmem_cache *s, struct slab *sl, struct odb_report_impl *r)
{
	unsigned long c = slab_counters(sl);

	report_line(r, "Slab 0x%016llx objects=%u used=%u fp=0x%016llx flags=0x%x(slab%s)",
		    slab_vaddr(s, sl), SLAB_OBJECTS(c), SLAB_INUSE(c), V(s, slab_freelist(sl)),
		    slab_page(sl)->flags, sl->order ? "|head" : "");
}

static void print_stack_here(struct kmem_cache *s, struct odb_report_impl *r)
{
	struct odb_task *t = odb_current(s->k);
	char tb[48];

	report_line(r, "CPU: %d UID: 0 PID: %d Comm: %s %s 6.12.0-odebug #1",
		    t ? smp_processor_id_task(t) : 0, t ? t->pid : 0, t ? t->comm : "?",
		    print_tainted(s->k, tb, sizeof(tb)));
	report_line(r, "Call Trace:");
	report_line(r, " <TASK>");
	stack_depot_print_to(s->k, stack_depot_save_current(s->k, 3), r);
	report_line(r, " </TASK>");
}

static void print_trailer(struct kmem_cache *s, struct slab *sl, uint8_t *p, struct odb_report_impl *r)
{
	uint8_t *addr = slab_address(s->k, sl);
	unsigned int off;

	print_tracking(s, p, r);
	print_slab_info(s, sl, r);
	report_line(r, "Object 0x%016llx @offset=%tu fp=0x%016llx", V(s, p), (ptrdiff_t)(p - addr),
		    V(s, get_freepointer(s, p)));
	report_line(r, "%s", "");
	if (s->flags & SLAB_RED_ZONE)
		print_section(s, r, "Redzone  ", p - s->red_left_pad, s->red_left_pad);
	else if (p > addr + 16)
		print_section(s, r, "Bytes b4 ", p - 16, 16);
	print_section(s, r, "Object   ", p, s->object_size < PAGE_SIZE ? s->object_size : PAGE_SIZE);
	if (s->flags & SLAB_RED_ZONE)
		print_section(s, r, "Redzone  ", p + s->object_size, s->inuse - s->object_size);
	off = get_info_end(s);
	if (s->flags & SLAB_STORE_USER) {
		off += 2 * sizeof(struct track);
		if (slub_debug_orig_size(s))
			off += sizeof(unsigned int);
	}
	off += s->kasan_meta_size;
	if (off != size_from_object(s))
		print_section(s, r, "Padding  ", p + off, size_from_object(s) - off);
	print_stack_here(s, r);
	r->pub.object = V(s, p);
	if (!r->pub.addr)
		r->pub.addr = V(s, p);
	r->pub.offset = (long)(r->pub.addr - r->pub.object);
}

void object_err(struct kmem_cache *s, struct slab *sl, uint8_t *object, const char *reason)
{
	struct odb_report_impl *r = slab_bug(s, reason, "%s", reason);

	print_trailer(s, sl, object, r);
	slab_report_done(s, r);
	slab_add_kunit_errors(s->k);
}

void slab_err(struct kmem_cache *s, struct slab *sl, const char *kind, const char *fmt, ...)
{
	struct odb_report_impl *r;
	char buf[100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r = slab_bug(s, kind, "%s", buf);
	if (sl)
		print_slab_info(s, sl, r);
	print_stack_here(s, r);
	slab_report_done(s, r);
	slab_add_kunit_errors(s->k);
}

static void slab_fix(struct kmem_cache *s, const char *fmt, ...) __printf(2, 3);
static void slab_fix(struct kmem_cache *s, const char *fmt, ...)
{
	char buf[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!slab_in_kunit_test(s->k))
		printk(s->k, "FIX %s: %s", s->name, buf);
	slab_add_kunit_errors(s->k);
}

/*
 * freelist_corrupted(): a free pointer read from an object failed
 * freeptr_valid().  As the kernel's freelist_corrupted() does under F: report
 * the object whose link is bad, cut the chain there, and go on with the
 * objects before it; the ones after it stay counted in use (isolated), as in
 * the kernel.  Called with the vCPU's irq lock or list_lock held: it only
 * reads the arena and writes the log (no callback runs).
 */
void *freelist_corrupted(struct kmem_cache *s, void *object, void *fp)
{
	struct slab *sl = virt_to_slab(s->k, object);

	(void)fp;
	object_err(s, sl, object, "Freechain corrupt");
	set_freepointer(s, object, NULL);
	slab_fix(s, "Isolate corrupted freechain");
	return NULL;
}

/* Reports on bad frees where no cache (or the wrong one) is known. */
void slab_bad_free(struct odb_kernel *k, const char *kind, const char *fmt, ...)
{
	struct odb_report_impl *r = report_new(k, "slub", kind);
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	report_line(r, "%s", buf);
	report_publish(k, r);
	add_taint(k, TAINT_BAD_PAGE);
}

/* ---- checks ------------------------------------------------------------------------------------ */
/*
 * lib/string.c's memchr_inv: the first byte of [p, p+n) that is not v, or NULL.
 * As the kernel's, it works a word at a time: 64-bit loads (memcpy'd: no
 * aliasing or alignment assumption for the compiler, one load each on x86-64
 * and arm64, where unaligned loads cost no more than aligned ones), four words
 * per round while at least 32 bytes remain, then single words, then one last
 * word overlapping the end instead of a byte tail.  Ranges under 8 bytes (the
 * red zones of small objects, "End Poison") go byte by byte.  A mismatching
 * word is resolved to its first byte by a byte scan of that word, so the
 * result is exactly the byte-wise one (csrc/tests/test_slub_debug.c checks
 * every start offset and length against a byte-wise reference).  Long
 * ranges go 64 bytes at a time where the CPU has AVX2 (below).
 */
static inline uint64_t memchr_inv_word(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static inline uint8_t *memchr_inv_bytes(uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return p + i;
	return NULL;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MEMCHR_INV_AVX2_MIN 96
/*
 * Long ranges -- the poison of an object of a few hundred bytes or more, a
 * slab's padding -- 64 bytes a round with AVX2 where the CPU has it (issue
 * 16: P's checks scan every object on every alloc and free; the kernel's
 * word-wise loop is what it can do without the FPU, not a behaviour).  The
 * same result: a round that finds a byte is resolved byte by byte, and the
 * last 32 bytes are read from the end of the range, overlapping bytes that
 * already matched (the range has at least MEMCHR_INV_AVX2_MIN bytes).
 */
/* the 32 bytes at p, XORed with the pattern: zero where they match */
static inline __attribute__((target("avx2"), always_inline)) __m256i
memchr_inv_avx2_diff(const uint8_t *p, __m256i pat)
{
	return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), pat);
}

static __attribute__((target("avx2"), noinline)) uint8_t *
memchr_inv_avx2(uint8_t *p, uint8_t v, size_t n)
{
	const __m256i pat = _mm256_set1_epi8((char)v);
	__m256i d;

	for (; n >= 64; p += 64, n -= 64) {
		d = _mm256_or_si256(memchr_inv_avx2_diff(p, pat), memchr_inv_avx2_diff(p + 32, pat));
		if (!_mm256_testz_si256(d, d))
			return memchr_inv_bytes(p, v, 64);
	}
	if (n >= 32) {
		d = memchr_inv_avx2_diff(p, pat);
		if (!_mm256_testz_si256(d, d))
			return memchr_inv_bytes(p, v, 32);
		p += 32;
		n -= 32;
	}
	if (n) {
		d = memchr_inv_avx2_diff(p + n - 32, pat);
		if (!_mm256_testz_si256(d, d))
			return memchr_inv_bytes(p, v, n);
	}
	return NULL;
}
#endif

/* inlined into the checks below (issue 16: a call per red zone, poison and
 * padding range cost more than the scan of a small object's ranges) */
static inline __attribute__((always_inline)) uint8_t *__memchr_inv(uint8_t *p, uint8_t v, size_t n)
{
	const uint64_t pat = 0x0101010101010101ULL * v;

	if (n < 8)
		return memchr_inv_bytes(p, v, n);
#ifdef MEMCHR_INV_AVX2_MIN
	if (n >= MEMCHR_INV_AVX2_MIN && __builtin_cpu_supports("avx2"))
		return memchr_inv_avx2(p, v, n);
#endif
	for (; n >= 32; p += 32, n -= 32) {
		uint64_t d = (memchr_inv_word(p) ^ pat) | (memchr_inv_word(p + 8) ^ pat) |
			     (memchr_inv_word(p + 16) ^ pat) | (memchr_inv_word(p + 24) ^ pat);

		if (d)
			return memchr_inv_bytes(p, v, 32);
	}
	for (; n >= 8; p += 8, n -= 8)
		if (memchr_inv_word(p) != pat)
			return memchr_inv_bytes(p, v, 8);
	/* n < 8 bytes left, and at least 8 bytes of the range lie before the end:
	 * the last word of the range covers them (its first 8 - n bytes matched) */
	if (n && memchr_inv_word(p + n - 8) != pat)
		return memchr_inv_bytes(p, v, n);
	return NULL;
}

uint8_t *memchr_inv(uint8_t *p, uint8_t v, size_t n)
{
	return __memchr_inv(p, v, n);
}

/* The report of check_bytes_and_report(), out of line: the check itself is a
 * scan that finds nothing on every call but a corrupted one. */
static __attribute__((noinline)) int
bytes_overwritten(struct kmem_cache *s, struct slab *sl, uint8_t *object, const char *what,
		  uint8_t *start, uint8_t value, unsigned int bytes, uint8_t *fault)
{
	uint8_t *end = start + bytes, *base = slab_address(s->k, sl);
	struct odb_report_impl *r;
	char kind[64];

	while (end > fault && end[-1] == value)
		end--;
	snprintf(kind, sizeof(kind), "%s overwritten", what);
	r = slab_bug(s, kind, "%s overwritten", what);
	report_line(r, "0x%016llx-0x%016llx @offset=%tu. First byte 0x%x instead of 0x%x",
		    V(s, fault), V(s, end - 1), (ptrdiff_t)(fault - base), fault[0], value);
	r->pub.addr = V(s, fault);
	r->pub.size = (size_t)(end - fault);
	print_trailer(s, sl, object, r);
	report_line(r, "FIX %s: Restoring %s 0x%016llx-0x%016llx=0x%x", s->name, what, V(s, fault),
		    V(s, end - 1), value);
	slab_report_done(s, r);
	slab_add_kunit_errors(s->k);   /* the report */
	slab_add_kunit_errors(s->k);   /* the FIX */
	memset(fault, value, (size_t)(end - fault));
	return 0;
}

static inline __attribute__((always_inline)) int
check_bytes_and_report(struct kmem_cache *s, struct slab *sl, uint8_t *object, const char *what,
		       uint8_t *start, uint8_t value, unsigned int bytes)
{
	uint8_t *fault = __memchr_inv(start, value, bytes);

	if (likely(!fault))
		return 1;
	return bytes_overwritten(s, sl, object, what, start, value, bytes, fault);
}

/* Where an object's padding begins: past the free pointer, the tracks,
 * orig_size and KASAN's metadata. */
static unsigned int pad_offset(const struct kmem_cache *s)
{
	unsigned int off = get_info_end(s);

	if (s->flags & SLAB_STORE_USER) {
		off += 2 * sizeof(struct track);
		if (slub_debug_orig_size(s))
			off += sizeof(unsigned int);
	}
	return off + s->kasan_meta_size;
}

static int check_pad_bytes(struct kmem_cache *s, struct slab *sl, uint8_t *p)
{
	unsigned int off = pad_offset(s);

	if (size_from_object(s) == off)
		return 1;
	return check_bytes_and_report(s, sl, p, "Object padding", p + off, POISON_INUSE,
				      size_from_object(s) - off);
}

static __attribute__((noinline)) void
padding_overwritten(struct kmem_cache *s, struct slab *sl, uint8_t *start, uint8_t *end,
		    uint8_t *pad, size_t remainder, uint8_t *fault)
{
	struct odb_report_impl *r;

	while (end > fault && end[-1] == POISON_INUSE)
		end--;
	r = slab_bug(s, "Padding overwritten", "Padding overwritten. 0x%016llx-0x%016llx @offset=%tu",
		     V(s, fault), V(s, end - 1), (ptrdiff_t)(fault - start));
	print_slab_info(s, sl, r);
	print_section(s, r, "Padding  ", pad, (unsigned int)remainder);
	r->pub.addr = V(s, fault);
	print_stack_here(s, r);
	report_line(r, "FIX %s: Restoring slab padding 0x%016llx-0x%016llx=0x%x", s->name,
		    V(s, fault), V(s, end - 1), POISON_INUSE);
	slab_report_done(s, r);
	slab_add_kunit_errors(s->k);
	slab_add_kunit_errors(s->k);
	memset(fault, POISON_INUSE, (size_t)(end - fault));
}

void slab_pad_check(struct kmem_cache *s, struct slab *sl)
{
	uint8_t *start, *end, *fault, *pad;
	size_t length, remainder;

	if (!(s->flags & SLAB_POISON))
		return;
	start = slab_address(s->k, sl);
	length = slab_size(sl);
	end = start + length;
	remainder = length - (size_t)slab_div(s, length) * s->size;
	if (!remainder)
		return;
	pad = end - remainder;
	fault = __memchr_inv(pad, POISON_INUSE, remainder);
	if (likely(!fault))
		return;
	padding_overwritten(s, sl, start, end, pad, remainder, fault);
}

/* ---- check_object's plan ---------------------------------------------------------------- */
/* (CHECK_PLAN_NONE: a byte no check reads) */
#define CHECK_PLAN_NONE 0x100

static void plan_expect(uint16_t *e, unsigned int len, unsigned int from, unsigned int to,
			uint8_t v, bool *bad)
{
	if (from > to || to > len) {
		*bad = true;
		return;
	}
	for (unsigned int i = from; i < to; i++) {
		if (e[i] != CHECK_PLAN_NONE && e[i] != v)
			*bad = true;
		e[i] = v;
	}
}

/*
 * The bytes check_object's range checks read, each with its expected value,
 * in the order and on the conditions of check_object_bytes() below, gathered
 * into the words that hold them.  Only the verdict "every check passes" is
 * taken from a plan; anything else runs the checks themselves, so a plan that
 * read too much would cost time and never change a report.  Reading too
 * little would hide a fault: csrc/tests/test_slub_debug.c corrupts every byte
 * of slots of many layouts and compares the plan's verdict with the checks'.
 */
void check_plan_build(struct kmem_cache *s)
{
	unsigned int rlp = s->red_left_pad, sfo = size_from_object(s), len = rlp + sfo;

	for (int a = 0; a < 2; a++) {
		const uint8_t val = a ? SLUB_RED_INACTIVE : SLUB_RED_ACTIVE;
		struct check_plan *pl = &s->check_plan[a];
		uint16_t e[CHECK_PLAN_BYTES];
		bool bad = false;

		memset(pl, 0, sizeof(*pl));
		pl->val = val;
		if (len < 16 || len > CHECK_PLAN_BYTES || len % 8 || !s->object_size)
			continue;
		for (unsigned int i = 0; i < len; i++)
			e[i] = CHECK_PLAN_NONE;
		if (s->flags & SLAB_RED_ZONE) {
			plan_expect(e, len, 0, rlp, val, &bad);
			plan_expect(e, len, rlp + s->object_size, rlp + s->inuse, val, &bad);
		} else if ((s->flags & SLAB_POISON) && s->object_size < s->inuse) {
			plan_expect(e, len, rlp + s->object_size, rlp + s->inuse, POISON_INUSE, &bad);
		}
		if (s->flags & SLAB_POISON) {
			unsigned int off = pad_offset(s);

			if (val != SLUB_RED_ACTIVE && (s->flags & __OBJECT_POISON)) {
				plan_expect(e, len, rlp, rlp + s->object_size - 1, POISON_FREE, &bad);
				plan_expect(e, len, rlp + s->object_size - 1, rlp + s->object_size,
					    POISON_END, &bad);
			}
			if (off > sfo)
				bad = true;
			else if (off < sfo)
				plan_expect(e, len, rlp + off, rlp + sfo, POISON_INUSE, &bad);
		}
		for (unsigned int c = 0; !bad && c < len; c += 16) {
			unsigned int at = c + 16 <= len ? c : len - 16;   /* (the last overlaps) */
			uint64_t exp[2] = { 0, 0 }, mask[2] = { 0, 0 };

			for (unsigned int b = 0; b < 16; b++) {
				uint16_t v = e[at + b];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				unsigned int sh = 8 * (b % 8);
#else
				unsigned int sh = 8 * (7 - b % 8);
#endif
				if (v == CHECK_PLAN_NONE)
					continue;
				exp[b / 8] |= (uint64_t)v << sh;
				mask[b / 8] |= (uint64_t)0xff << sh;
			}
			if (!(mask[0] | mask[1]))
				continue;
			if (pl->n == CHECK_PLAN_CHUNKS) {
				bad = true;
				break;
			}
			pl->off[pl->n] = (uint16_t)at;
			memcpy(pl->exp[pl->n], exp, sizeof(exp));
			memcpy(pl->mask[pl->n], mask, sizeof(mask));
			pl->n++;
		}
		pl->ok = !bad;
		if (bad)
			pl->n = 0;
	}
}

bool check_object_planned(struct kmem_cache *s, void *object, uint8_t val)
{
	return __check_object_planned(s, object, val);
}

/* check_object's range checks, one by one, each reporting (and restoring) the
 * first fault it finds; 0 when one ends the check. */
static inline __attribute__((always_inline)) int
__check_object_bytes(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val)
{
	uint8_t *p = object, *endobject = p + s->object_size;

	if (s->flags & SLAB_RED_ZONE) {
		if (!check_bytes_and_report(s, sl, p, "Left Redzone", p - s->red_left_pad, val,
					    s->red_left_pad))
			return 0;
		if (!check_bytes_and_report(s, sl, p, "Right Redzone", endobject, val,
					    s->inuse - s->object_size))
			return 0;
		if (slub_debug_orig_size(s) && val == SLUB_RED_ACTIVE) {
			unsigned int orig = get_orig_size(s, object);
			if (s->object_size > orig &&
			    !check_bytes_and_report(s, sl, p, "kmalloc Redzone", p + orig, val,
						    s->object_size - orig))
				return 0;
		}
	} else if ((s->flags & SLAB_POISON) && s->object_size < s->inuse) {
		check_bytes_and_report(s, sl, p, "Alignment padding", endobject, POISON_INUSE,
				       s->inuse - s->object_size);
	}
	if (s->flags & SLAB_POISON) {
		if (val != SLUB_RED_ACTIVE && (s->flags & __OBJECT_POISON) &&
		    (!check_bytes_and_report(s, sl, p, "Poison", p, POISON_FREE, s->object_size - 1) ||
		     !check_bytes_and_report(s, sl, p, "End Poison", p + s->object_size - 1,
					     POISON_END, 1)))
			return 0;
		check_pad_bytes(s, sl, p);
	}
	return 1;
}

/* (inline in check_object: a report's call trace shows check_object, whose
 * checks they are) */
int check_object_bytes(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val)
{
	return __check_object_bytes(s, sl, object, val);
}

/* The byte checks in one pass over the plan when they all pass (the common
 * case: issue 16), else one by one; then the free pointer. */
int check_object(struct kmem_cache *s, struct slab *sl, void *object, uint8_t val)
{
	uint8_t *p = object;

	if (!__check_object_planned(s, p, val) && !__check_object_bytes(s, sl, object, val))
		return 0;
	if (!check_object_freeptr_ok(s, sl, p, val)) {
		object_err(s, sl, p, "Freepointer corrupt");
		set_freepointer(s, p, NULL);
		return 0;
	}
	return 1;
}

int check_slab(struct kmem_cache *s, struct slab *sl)
{
	unsigned long c = slab_counters(sl);
	unsigned int maxobj = slab_div(s, slab_size(sl));

	if (!(slab_page(sl)->flags & PG_slab)) {
		slab_err(s, sl, "Not a valid slab page", "Not a valid slab page");
		return 0;
	}
	if (maxobj > MAX_OBJS_PER_PAGE)
		maxobj = MAX_OBJS_PER_PAGE;
	if (SLAB_OBJECTS(c) > maxobj) {
		slab_err(s, sl, "objects > max", "objects %u > max %u", SLAB_OBJECTS(c), maxobj);
		return 0;
	}
	if (SLAB_INUSE(c) > SLAB_OBJECTS(c)) {
		slab_err(s, sl, "inuse > max", "inuse %u > max %u", SLAB_INUSE(c), SLAB_OBJECTS(c));
		return 0;
	}
	slab_pad_check(s, sl);
	return 1;
}

int on_freelist(struct kmem_cache *s, struct slab *sl, void *search)
{
	unsigned long c = slab_counters(sl);
	unsigned int objects = SLAB_OBJECTS(c), inuse = SLAB_INUSE(c), frozen = SLAB_FROZEN(c);
	unsigned int max_objects, nr = 0;
	void *fp = slab_freelist(sl), *object = NULL;
	/* (the slab's address and object count do not change under the walk:
	 * read once, as the links are) */
	const void *base = slab_address(s->k, sl);

	while (fp && nr <= objects) {
		if (fp == search)
			return 1;
		if (slot_index(s, base, fp) >= objects) {   /* (check_valid_pointer; fp != NULL) */
			if (object) {
				object_err(s, sl, object, "Freechain corrupt");
				set_freepointer(s, object, NULL);
				break;
			}
			slab_err(s, sl, "Freepointer corrupt", "Freepointer corrupt");
			slab_set(sl, NULL, SLAB_COUNTERS(objects, objects, frozen));
			slab_fix(s, "Freelist cleared");
			return 0;
		}
		object = fp;
		fp = get_freepointer(s, object);
		nr++;
	}
	max_objects = slab_div(s, slab_size(sl));
	if (max_objects > MAX_OBJS_PER_PAGE)
		max_objects = MAX_OBJS_PER_PAGE;
	if (objects != max_objects) {
		slab_err(s, sl, "Wrong number of objects",
			 "Wrong number of objects. Found %d but should be %d", objects, max_objects);
		objects = max_objects;
		slab_set(sl, slab_freelist(sl), SLAB_COUNTERS(inuse, objects, frozen));
		slab_fix(s, "Number of objects adjusted");
	}
	if (inuse != objects - nr) {
		slab_err(s, sl, "Wrong object count",
			 "Wrong object count. Counter is %d but counted were %d", inuse, objects - nr);
		slab_set(sl, slab_freelist(sl), SLAB_COUNTERS(objects - nr, objects, frozen));
		slab_fix(s, "Object count adjusted");
	}
	return search == NULL;
}

void trace_object(struct kmem_cache *s, struct slab *sl, void *object, int alloc)
{
	struct odb_kernel *k = s->k;
	unsigned long c = slab_counters(sl);

	printk(k, "TRACE %s %s 0x%016llx inuse=%d fp=0x%016llx", s->name, alloc ? "alloc" : "free",
	       V(s, object), SLAB_INUSE(c), V(s, slab_freelist(sl)));
	if (!alloc) {
		struct odb_report_impl *r = report_new(k, "slub", "TRACE");
		r->quiet = true;
		print_section(s, r, "Object ", object, s->object_size);
		printk(k, "%s", r->text ? r->text : "");
		odb_report_put(&r->pub);
	}
	dump_stack(k);
}

/* ---- the debug processing of both paths -------------------------------------------------------- */
static int alloc_consistency_checks(struct kmem_cache *s, struct slab *sl, void *object)
{
	if (!check_slab(s, sl))
		return 0;
	if (!check_valid_pointer(s, sl, object)) {
		object_err(s, sl, object, "Freelist Pointer check fails");
		return 0;
	}
	if (!check_object_inline(s, sl, object, SLUB_RED_INACTIVE))
		return 0;
	return 1;
}

int alloc_debug_processing(struct kmem_cache *s, struct slab *sl, void *object,
			   unsigned long addr, unsigned int orig_size)
{
	if (s->debug_checks) {
		if (!alloc_consistency_checks(s, sl, object)) {
			unsigned long c = slab_counters(sl);
			slab_fix(s, "Marking all objects used");
			slab_set(sl, NULL, SLAB_COUNTERS(SLAB_OBJECTS(c), SLAB_OBJECTS(c), SLAB_FROZEN(c)));
			return 0;
		}
	}
	if (s->flags & SLAB_STORE_USER)
		set_track(s, object, TRACK_ALLOC, addr);
	set_orig_size(s, object, orig_size);
	trace(s, sl, object, 1);
	init_object(s, object, SLUB_RED_ACTIVE);
	return 1;
}

/* The per-object checks of a free; -1: failed but (locked path's bug) free anyway. */
static int free_consistency_checks(struct kmem_cache *s, struct slab *sl, void *object)
{
	if (!check_valid_pointer(s, sl, object)) {
		slab_err(s, sl, "Invalid object pointer", "Invalid object pointer 0x%016llx", V(s, object));
		return 0;
	}
	if (on_freelist(s, sl, object)) {
		object_err(s, sl, object, "Object already free");
		return 0;
	}
	if (!check_object_inline(s, sl, object, SLUB_RED_ACTIVE))
		return slub_locked(s) ? -1 : 0;
	if (s != sl->slab_cache) {
		if (!sl->slab_cache)
			slab_bad_free(s->k, "no slab for object", "SLUB <none>: no slab for object 0x%016llx.",
				      V(s, object));
		else
			object_err(s, sl, object, "page slab pointer corrupt.");
		return 0;
	}
	return 1;
}

int free_debug_processing(struct kmem_cache *s, struct slab *sl, void *head, void *tail,
			  int bulk_cnt, unsigned long addr, bool *locked)
{
	struct kmem_cache_node *n = &s->node;
	bool checks = s->debug_checks;
	void *object = head;
	int cnt = 0, ret = 0;

	bool modern = s->modern_debug;

	*locked = false;
	if (!modern) {
		node_lock(s, n);
		slab_lock(s, sl);
	}
	if (checks && !check_slab(s, sl))
		goto out;
next_object:
	cnt++;
	if (checks) {
		int c = free_consistency_checks(s, sl, object);
		if (c == 0)
			goto out;
		if (c < 0) {
			/* pre-2016: check_object failed -> "goto out" of the success path:
			 * no track, no trace, no re-poison, and the object is freed */
			ret = 1;
			goto out_ok;
		}
	}
	if (s->flags & SLAB_STORE_USER)
		set_track(s, object, TRACK_FREE, addr);
	trace(s, sl, object, 0);
	init_object(s, object, SLUB_RED_INACTIVE);
	if (object != tail) {
		object = get_freepointer(s, object);
		goto next_object;
	}
	ret = 1;
out_ok:
	if (cnt != bulk_cnt)
		slab_err(s, sl, "Bulk free expected objects", "Bulk free expected %d objects but found %d",
			 bulk_cnt, cnt);
	if (modern)
		return 1;
	slab_unlock(s, sl);
	if (slub_locked(s)) {
		/* "Keep node_lock to preserve integrity until the object is actually freed" */
		*locked = true;
		return 1;
	}
	node_unlock(s, n);
	return 1;
out:
	if (cnt != bulk_cnt)
		slab_err(s, sl, "Bulk free expected objects", "Bulk free expected %d objects but found %d",
			 bulk_cnt, cnt);
	if (!modern) {
		slab_unlock(s, sl);
		node_unlock(s, n);
	}
	slab_fix(s, "Object at 0x%016llx not freed", V(s, object));
	return ret;
}

/* ---- validate ------------------------------------------------------------------------------------ */
static void validate_slab(struct kmem_cache *s, struct slab *sl)
{
	uint8_t *addr = slab_address(s->k, sl), *map;
	unsigned int objects, nr = 0;
	void *fp;

	if (!check_slab(s, sl) || !on_freelist(s, sl, NULL))
		return;
	objects = SLAB_OBJECTS(slab_counters(sl));
	map = calloc(objects ? objects : 1, 1);
	if (!map)
		return;
	for (fp = slab_freelist(sl); fp && nr <= objects; fp = get_freepointer(s, fp), nr++) {
		if (!check_valid_pointer(s, sl, fp))
			break;
		map[((uint8_t *)fp - s->red_left_pad - addr) / s->size] = 1;
	}
	for (unsigned int i = 0; i < objects; i++) {
		uint8_t *p = addr + (size_t)i * s->size + s->red_left_pad;
		if (!check_object_inline(s, sl, p, map[i] ? SLUB_RED_INACTIVE : SLUB_RED_ACTIVE))
			break;
	}
	free(map);
}

long validate_slab_cache(struct kmem_cache *s)
{
	struct kmem_cache_node *n = &s->node;
	struct odb_task *t = odb_current(s->k);
	unsigned long before = t ? t->slab_errors : 0, count = 0;
	struct list_head *pos;

	flush_all(s);
	node_lock(s, n);
	for (pos = n->partial.next; pos != &n->partial; pos = pos->next) {
		validate_slab(s, list_entry(pos, struct slab, slab_list));
		count++;
	}
	if (count != n->nr_partial) {
		printk(s->k, "SLUB %s: %lu partial slabs counted but counter=%lu", s->name, count,
		       n->nr_partial);
		slab_add_kunit_errors(s->k);
	}
	if (s->flags & SLAB_STORE_USER) {
		for (pos = n->full.next; pos != &n->full; pos = pos->next) {
			validate_slab(s, list_entry(pos, struct slab, slab_list));
			count++;
		}
		if ((long)count != atomic_load(&n->nr_slabs)) {
			printk(s->k, "SLUB: %s %lu slabs counted but counter=%ld", s->name, count,
			       atomic_load(&n->nr_slabs));
			slab_add_kunit_errors(s->k);
		}
	}
	node_unlock(s, n);
	return t ? (long)(t->slab_errors - before) : 0;
}

void list_slab_objects(struct kmem_cache *s, struct slab *sl, const char *text)
{
	uint8_t *addr = slab_address(s->k, sl), *map;
	unsigned int objects = SLAB_OBJECTS(slab_counters(sl)), nr = 0;
	struct odb_report_impl *r;
	char msg[160];
	void *fp;

	snprintf(msg, sizeof(msg), text, s->name);
	/* the kind without the cache's name (it is the report's .cache) */
	r = slab_bug(s, "Objects remaining on __kmem_cache_shutdown()", "%s", msg);
	print_slab_info(s, sl, r);
	slab_add_kunit_errors(s->k);
	map = calloc(objects ? objects : 1, 1);
	for (fp = slab_freelist(sl); map && fp && nr <= objects; fp = get_freepointer(s, fp), nr++) {
		if (!check_valid_pointer(s, sl, fp))
			break;
		map[((uint8_t *)fp - s->red_left_pad - addr) / s->size] = 1;
	}
	for (unsigned int i = 0; map && i < objects; i++) {
		uint8_t *p = addr + (size_t)i * s->size + s->red_left_pad;
		if (map[i])
			continue;
		report_line(r, "Object 0x%016llx @offset=%tu", V(s, p), (ptrdiff_t)(p - addr));
		if (!r->pub.object)
			r->pub.object = V(s, p);
		print_tracking(s, p, r);
		slab_add_kunit_errors(s->k);
	}
	free(map);
	print_stack_here(s, r);
	slab_report_done(s, r);
}
