/*
 * Stack depot: deduplicated call stacks behind 32-bit handles.
 *
 * A stack is the C frames of the caller (glibc backtrace over the unwind
 * tables) plus, when the binding registered a frame hook, the Python caller
 * as "file:line:function".  Stacks are hashed and kept forever, as the
 * kernel's depot keeps them; a handle is the record index + 1 (0 = none).
 *
 * Saving a stack the depot already holds takes no lock, as the kernel's
 * stack_depot_save finds existing stacks locklessly: records are immutable
 * once published and never freed while the kernel lives, a bucket is a chain
 * of record pointers whose head is published with a release store after the
 * record is complete, and readers walk it with acquire loads.  Only an insertion
 * takes the depot lock (and walks the bucket again under it, so two threads
 * saving the same new stack get one record).  Handle -> record look-ups (for
 * printing) take the lock: the handle table may be reallocated by an insertion.
 *
 * Printing symbolises like %pS ("name+0xoff/0xsize"): libodebug's own
 * functions are hidden from the dynamic symbol table, so the depot reads the
 * ELF .symtab of each module it meets once (per kernel) and falls back to
 * dladdr's dynamic symbols.
 */
#include <dlfcn.h>
#include <link.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"

#define DEPOT_HASH_BITS 14
#define DEPOT_RAW_FRAMES 48

struct elf_sym { uintptr_t start, size; const char *name; };
struct elf_module {
	char *path;
	uintptr_t base;
	struct elf_sym *syms;
	size_t nsyms;
	char *strtab;              /* owned copy of the names */
	bool hide;                 /* interpreter / libc / binding frames: not printed */
};

struct odb_depot {
	pthread_mutex_t lock;
	struct stack_record *_Atomic buckets[1u << DEPOT_HASH_BITS];
	struct stack_record **recs;   /* handle - 1 -> record, under lock */
	size_t nr, cap;
	struct elf_module *mods;
	size_t nmods;
	void *self_base;           /* load base of libodebug */
	uintptr_t text_lo, text_hi; /* its executable segment: frame-pointer walk range */
};

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	struct odb_depot *d = data;
	uintptr_t me = (uintptr_t)(void *)odb_depot_init;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
			d->text_lo = lo;
			d->text_hi = hi;
			return 1;
		}
	}
	return 0;
}

int odb_depot_init(struct odb_kernel *k)
{
	struct odb_depot *d = calloc(1, sizeof(*d));
	Dl_info di;

	if (!d)
		return -1;
	pthread_mutex_init(&d->lock, NULL);
	if (dladdr((void *)odb_depot_init, &di))
		d->self_base = di.dli_fbase;
	dl_iterate_phdr(find_text, d);
	k->depot = d;
	return 0;
}

void odb_depot_exit(struct odb_kernel *k)
{
	struct odb_depot *d = k->depot;

	if (!d)
		return;
	for (size_t i = 0; i < d->nr; i++) {
		free(d->recs[i]->py);
		free(d->recs[i]);
	}
	free(d->recs);
	for (size_t i = 0; i < d->nmods; i++) {
		free(d->mods[i].path);
		free(d->mods[i].syms);
		free(d->mods[i].strtab);
	}
	free(d->mods);
	pthread_mutex_destroy(&d->lock);
	free(d);
	k->depot = NULL;
}

/*
 * The bucket hash (own choice): the frames are words, so it mixes a word at a
 * time (multiply by a 64-bit odd constant, fold the high half down), and the
 * Python location 8 bytes at a time with a zero-padded last word.  Only
 * bucketing and a quick reject depend on it: handles are insertion indices.
 */
static inline uint64_t depot_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static uint32_t stack_hash(void *const *e, unsigned int n, const char *py)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;

	for (unsigned int i = 0; i < n; i++)
		h = depot_mix(h, (uint64_t)(uintptr_t)e[i]);
	if (py) {
		size_t len = strlen(py), i;
		uint64_t w;

		for (i = 0; i + 8 <= len; i += 8) {
			memcpy(&w, py + i, 8);
			h = depot_mix(h, w);
		}
		w = 0;
		memcpy(&w, py + i, len - i);
		h = depot_mix(h, w ^ ((uint64_t)len << 56) ^ 1);
	}
	return (uint32_t)(h ^ (h >> 32));
}

/* frames compared a word at a time (a stack is a handful of words: a loop
 * beats the call to memcmp) */
static inline bool frames_equal(void *const *a, void *const *b, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static bool record_matches(const struct stack_record *r, uint32_t h, void *const *e,
			   unsigned int n, const char *py)
{
	return r->hash == h && r->nr == n && frames_equal(r->entries, e, n) &&
	       ((!r->py && !py) || (r->py && py && !strcmp(r->py, py)));
}

static struct stack_record *bucket_find(struct stack_record *r, uint32_t h, void *const *e,
					unsigned int n, const char *py)
{
	for (; r; r = r->next)
		if (record_matches(r, h, e, n, py))
			return r;
	return NULL;
}

/*
 * The task's recent records (own, issue 16): a thread saves the same few
 * stacks over and over (an alloc and a free site in a loop), so the records it
 * saved last are looked at first.  Each is kept with the walk key it was found
 * by (a rotate-xor of the raw frames, computed by the walk as it goes), so a
 * record is compared -- frames and Python location, exactly -- only when its
 * key matches; a key is a filter, never an identity.  Records are immutable
 * and live as long as the kernel, and only the task's own thread touches its
 * list, so this needs no lock; a hit is the record the bucket walk would find
 * (a stack has one record), so handles stay the same.
 */
static inline uint64_t walk_key_mix(uint64_t key, const void *ret)
{
	return ((key << 7) | (key >> 57)) ^ (uint64_t)(uintptr_t)ret;
}

static uint64_t walk_key(void *const *e, unsigned int n)
{
	uint64_t key = 0;

	for (unsigned int i = 0; i < n; i++)
		key = walk_key_mix(key, e[i]);
	return key;
}

static inline bool py_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static inline struct stack_record *recent_find(const struct odb_task *t, uint64_t key,
					       void *const *e, unsigned int n, const char *py)
{
	for (unsigned int i = 0; i < ODB_DEPOT_RECENT; i++) {
		const struct stack_record *r = t->depot_recent[i];

		if (t->depot_recent_key[i] == key && r && r->nr == n &&
		    frames_equal(r->entries, e, n) && py_equal(r->py, py))
			return t->depot_recent[i];
	}
	return NULL;
}

static inline uint32_t recent_note(struct odb_task *t, uint64_t key, struct stack_record *r)
{
	if (t) {
		unsigned int i = t->depot_recent_next++ % ODB_DEPOT_RECENT;

		t->depot_recent[i] = r;
		t->depot_recent_key[i] = key;
		t->depot_recent_tmpl[i] = NULL;
	}
	return r->handle;
}

/* A stack the depot does not hold yet (or that another thread is inserting):
 * under the depot lock, out of depot_save's line so that its common case --
 * a record found without a lock -- pays for no more than it uses. */
static __attribute__((noinline)) uint32_t depot_insert(struct odb_kernel *k, struct odb_task *t,
							uint64_t key, uint32_t h, void *const *e,
							unsigned int n, const char *py)
{
	struct odb_depot *d = k->depot;
	uint32_t b = h & ((1u << DEPOT_HASH_BITS) - 1), handle = 0;
	struct stack_record *r, *head;

	pthread_mutex_lock(&d->lock);
	head = atomic_load_explicit(&d->buckets[b], memory_order_relaxed);
	r = bucket_find(head, h, e, n, py);   /* inserted meanwhile by another thread? */
	if (r) {
		handle = recent_note(t, key, r);
		goto out;
	}
	if (d->nr == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 1024;
		void *nr = realloc(d->recs, ncap * sizeof(*d->recs));
		if (!nr)
			goto out;
		d->recs = nr;
		d->cap = ncap;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out;
	r->py = py ? strdup(py) : NULL;
	if (py && !r->py) {
		free(r);
		goto out;
	}
	r->hash = h;
	r->nr = (uint16_t)n;
	memcpy(r->entries, e, n * sizeof(void *));
	r->next = head;
	d->recs[d->nr++] = r;
	handle = (uint32_t)d->nr;
	r->handle = handle;
	/* publish: the record's contents happen-before any reader that sees it */
	atomic_store_explicit(&d->buckets[b], r, memory_order_release);
	recent_note(t, key, r);
out:
	pthread_mutex_unlock(&d->lock);
	return handle;
}

/* Not among the task's recent records: the hash, the lock-free bucket walk
 * (an existing stack, the common case), else the insertion. */
static __attribute__((noinline)) uint32_t depot_lookup(struct odb_kernel *k, struct odb_task *t,
							uint64_t key, void *const *e,
							unsigned int n, const char *py)
{
	struct odb_depot *d = k->depot;
	uint32_t h = stack_hash(e, n, py);
	struct stack_record *r;

	r = bucket_find(atomic_load_explicit(&d->buckets[h & ((1u << DEPOT_HASH_BITS) - 1)],
					     memory_order_acquire), h, e, n, py);
	if (r)
		return recent_note(t, key, r);
	return depot_insert(k, t, key, h, e, n, py);
}

/* key: the walk key of the frames e[] came from (recent_find) */
static inline __attribute__((always_inline)) uint32_t
depot_save(struct odb_kernel *k, uint64_t key, void *const *e, unsigned int n, const char *py)
{
	struct odb_task *t;
	struct stack_record *r;

	/* (the task slot's look-up only: a save never creates a task) */
	if (!odb_current_fast(k, &t))
		t = NULL;
	if (t && (r = recent_find(t, key, e, n, py)))
		return r->handle;
	return depot_lookup(k, t, key, e, n, py);
}

/*
 * The C frames: a frame-pointer walk while return addresses lie in odebug's
 * own text (all of it is built with -fno-omit-frame-pointer), plus the first
 * frame outside it (the caller).  Cheap enough for every tracked alloc/free;
 * glibc's unwinder is the fallback where the range is unknown.
 */
/* Whether the walk goes on past the frame at fp, which returns to ret and
 * chains to next: ret lies in odebug's text [lo, lo + span) (else the frame
 * is the caller's, the last) and the chain is sane (next above fp, by at most
 * 1 MiB; at or below it the difference wraps). */
static inline bool walk_goes_on(uintptr_t lo, uintptr_t span, void **fp, const void *ret,
				void **next)
{
	return (uintptr_t)ret - lo < span && (uintptr_t)next - (uintptr_t)fp - 1 < (1u << 20);
}

static inline __attribute__((always_inline)) int
fp_walk_chain(const struct odb_depot *d, void **fp, void **out, int max, uint64_t *keyp)
{
	uintptr_t lo = d->text_lo, span = d->text_hi - d->text_lo;
	void **o = out, **end = out + max;
	uint64_t key = 0;

	do {
		void *ret = fp[1];
		void **next = fp[0];

		*o++ = ret;
		key = walk_key_mix(key, ret);
		if (!walk_goes_on(lo, span, fp, ret, next))
			break;
		fp = next;
	} while (o < end);
	*keyp = key;
	return (int)(o - out);
}

static __attribute__((noinline)) int fp_walk(struct odb_depot *d, void **out, int max,
					     uint64_t *keyp)
{
	/* never NULL; each next is above it */
	return fp_walk_chain(d, __builtin_frame_address(0), out, max, keyp);
}

/*
 * The walk fp_walk would make from here, compared as it goes with a recent
 * record of t (issue 16): the first in its list whose first entry is the
 * frame `from` frames up and whose Python location is py.  Its
 * handle when the walk makes exactly its entries -- the stack
 * stack_depot_save_current would save, and so the record recent_find would
 * find -- else 0 (no candidate, another frame, a walk that ends sooner or
 * goes on), and the caller walks the usual way.  The walk ends where fp_walk
 * ends (the caller outside odebug, a broken chain, DEPOT_RAW_FRAMES frames)
 * and a record holds at most ODB_STACK_DEPTH of its frames: a full record
 * matches a walk that goes on.  No frame is stored and no key computed.
 */
static __attribute__((noinline)) uint32_t
fp_walk_recent(const struct odb_depot *d, const struct odb_task *t, unsigned int from,
	       const char *py)
{
	const uintptr_t lo = d->text_lo, span = d->text_hi - d->text_lo;
	void **fp = __builtin_frame_address(0), **next, *ret;
	const struct stack_record *r = NULL;
	unsigned int nr;

	/* (so the raw walk's DEPOT_RAW_FRAMES never ends it below) */
	if (from + ODB_STACK_DEPTH >= DEPOT_RAW_FRAMES)
		return 0;
	for (unsigned int i = 0; i < from; i++) {
		ret = fp[1];
		next = fp[0];
		if (!walk_goes_on(lo, span, fp, ret, next))
			return 0;   /* (an empty stack: the usual way) */
		fp = next;
	}
	ret = fp[1];
	for (unsigned int c = 0; c < ODB_DEPOT_RECENT; c++) {
		const struct stack_record *q = t->depot_recent[c];

		if (q && q->entries[0] == ret && q->nr && py_equal(q->py, py)) {
			r = q;
			break;
		}
	}
	if (!r)
		return 0;
	nr = r->nr;
	for (unsigned int j = 1; j < nr; j++) {
		next = fp[0];
		if (!walk_goes_on(lo, span, fp, ret, next))
			return 0;   /* the walk ends before the record does */
		fp = next;
		ret = fp[1];
		if (ret != r->entries[j])
			return 0;
	}
	/* every entry: the walk must end here unless the record was cut short */
	if (nr == ODB_STACK_DEPTH || !walk_goes_on(lo, span, fp, ret, fp[0]))
		return r->handle;
	return 0;
}

/* The Python caller from the frame hook, or NULL. */
static inline const char *depot_py(struct odb_kernel *k, char *py, size_t len)
{
	if (!k->frame_hook)
		return NULL;
	py[0] = '\0';
	return k->frame_hook(k->frame_hook_ctx, py, len) && py[0] ? py : NULL;
}

uint32_t stack_depot_save_current(struct odb_kernel *k, unsigned int skip)
{
	void *raw[DEPOT_RAW_FRAMES];
	char py[256];
	const char *pyp = depot_py(k, py, sizeof(py));
	uint64_t key;
	int n;
	unsigned int from = 1 + skip, cnt;

	if (k->depot->text_hi) {
		struct odb_task *t;
		uint32_t handle;

		/* (called from here as fp_walk is: the same frames, the same from) */
		if (odb_current_fast(k, &t) && t &&
		    (handle = fp_walk_recent(k->depot, t, from, pyp)))
			return handle;
		n = fp_walk(k->depot, raw, DEPOT_RAW_FRAMES, &key);
	} else {
		n = backtrace(raw, DEPOT_RAW_FRAMES);
		if (n < 0)
			n = 0;
		key = walk_key(raw, (unsigned int)n);
	}
	if (from > (unsigned int)n)
		from = (unsigned int)n;
	cnt = (unsigned int)n - from;
	if (cnt > ODB_STACK_DEPTH)
		cnt = ODB_STACK_DEPTH;
	return depot_save(k, key, raw + from, cnt, pyp);
}

uint32_t stack_depot_save_tmpl(struct odb_kernel *k, struct odb_task *t,
			       const struct odb_stack_tmpl *tp, void *fp)
{
	void *e[DEPOT_RAW_FRAMES];
	char py[256];
	const char *pyp;
	uint64_t key;
	unsigned int n = tp->n, cnt, s;
	uint32_t handle;

	/* F's chain (the slow path's raw walk stops at DEPOT_RAW_FRAMES frames in all) */
	s = (unsigned int)fp_walk_chain(k->depot, fp, e + n, DEPOT_RAW_FRAMES - (int)tp->raw_base,
					&key);
	cnt = n + s < ODB_STACK_DEPTH ? n + s : ODB_STACK_DEPTH;
	/* (a record known to begin with tp's frames begins with those of every
	 * template that shares tp's identity: they are the same frames) */
	if (tp->canon)
		tp = tp->canon;
	key ^= (uint64_t)(uintptr_t)tp;
	pyp = depot_py(k, py, sizeof(py));
	/* a recent record known to begin with tp's frames: only F's chain and the
	 * Python location to compare */
	for (unsigned int i = 0; t && i < ODB_DEPOT_RECENT; i++) {
		const struct stack_record *r = t->depot_recent[i];

		if (t->depot_recent_key[i] == key && t->depot_recent_tmpl[i] == tp && r->nr == cnt &&
		    frames_equal(r->entries + n, e + n, cnt - n) && py_equal(r->py, pyp))
			return r->handle;
	}
	memcpy(e, tp->frames, n * sizeof(void *));
	handle = depot_lookup(k, t, key, e, cnt, pyp);
	if (t && handle) {
		/* the record depot_lookup noted last holds exactly e[] (compared or
		 * copied): it begins with tp's frames */
		unsigned int i = (t->depot_recent_next - 1) % ODB_DEPOT_RECENT;

		if (t->depot_recent[i] && t->depot_recent[i]->handle == handle &&
		    t->depot_recent_key[i] == key)
			t->depot_recent_tmpl[i] = tp;
	}
	return handle;
}

bool stack_depot_tmpl_same(const struct odb_stack_tmpl *a, const struct odb_stack_tmpl *b)
{
	return a->n == b->n && a->raw_base == b->raw_base &&
	       !memcmp(a->frames, b->frames, a->n * sizeof(void *));
}

bool stack_depot_tmpl_capture(struct odb_kernel *k, uint32_t handle, unsigned int skip, void *fp,
			      struct odb_stack_tmpl *out)
{
	struct odb_depot *d = k->depot;
	void *chain[DEPOT_RAW_FRAMES];
	struct stack_record *r = NULL;
	unsigned int n, s;
	uint64_t key;

	if (!d->text_hi || !handle)
		return false;   /* (glibc's unwinder: no frame chain to join) */
	pthread_mutex_lock(&d->lock);
	if (handle <= d->nr)
		r = d->recs[handle - 1];
	pthread_mutex_unlock(&d->lock);
	if (!r)
		return false;
	/* records are immutable and live as long as the kernel */
	s = (unsigned int)fp_walk_chain(d, fp, chain, DEPOT_RAW_FRAMES, &key);
	if (r->nr >= ODB_STACK_DEPTH || r->nr <= s)
		return false;
	n = r->nr - s;
	if (!frames_equal(r->entries + n, chain, s))
		return false;
	for (unsigned int i = 0; i < n; i++)
		if ((uintptr_t)r->entries[i] - d->text_lo >= d->text_hi - d->text_lo)
			return false;
	out->n = n;
	out->raw_base = 1 + skip + n;
	out->canon = NULL;
	out->text_lo = d->text_lo;
	out->text_span = d->text_hi - d->text_lo;
	memcpy(out->frames, r->entries, n * sizeof(void *));
	return true;
}

/*
 * From an instrumented function outwards: walk the frame-pointer chain (the
 * KASAN runtime and the instrumented code are built with frame pointers)
 * until the frame returning to ip, keep it and its callers while they lie in
 * ip's module (the user's program or library; the interpreter's or libffi's
 * frames beyond it are not walked).
 */
uint32_t stack_depot_save_from(struct odb_kernel *k, unsigned long ip, unsigned int skip)
{
	void *raw[DEPOT_RAW_FRAMES];
	void **fp = __builtin_frame_address(0);
	char py[256];
	bool found = false;
	Dl_info di;
	void *base = NULL;
	unsigned int n = 0;

	struct odb_task *t = odb_current(k);
	uintptr_t lo = t ? t->stack_lo : 0, hi = t ? t->stack_hi : 0;

	if (dladdr((void *)ip, &di))
		base = di.dli_fbase;
	for (int i = 0; fp && i < 64 && n < DEPOT_RAW_FRAMES; i++) {
		void *ret, **next;

		/* code built without frame pointers leaves anything in rbp: read
		 * only frames inside this thread's stack */
		if (!hi || (uintptr_t)fp < lo || (uintptr_t)fp + 2 * sizeof(void *) > hi)
			break;
		ret = fp[1];
		next = fp[0];

		if (!found && (unsigned long)ret == ip)
			found = true;
		if (found) {
			Dl_info d2;
			if (n && (!dladdr(ret, &d2) || d2.dli_fbase != base))
				break;
			raw[n++] = ret;
			if (n >= ODB_STACK_DEPTH)
				break;
		}
		if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (1u << 20))
			break;
		fp = next;
	}
	if (!found)
		return stack_depot_save_current(k, skip + 1);
	return depot_save(k, walk_key(raw, n), raw, n, depot_py(k, py, sizeof(py)));
}

uint32_t odb_stack_save(odb_kernel *k, unsigned int skip)
{
	return stack_depot_save_current(k, skip + 1);
}

void odb_set_frame_hook(odb_kernel *k, odb_frame_hook hook, void *ctx)
{
	k->frame_hook_ctx = ctx;
	k->frame_hook = hook;
}

uint64_t odb_stack_depot_count(odb_kernel *k)
{
	uint64_t n;

	pthread_mutex_lock(&k->depot->lock);
	n = k->depot->nr;
	pthread_mutex_unlock(&k->depot->lock);
	return n;
}

/* ---- symbolisation ------------------------------------------------------------ */
static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Read FUNC symbols from path's .symtab (or .dynsym).  Best effort. */
static void load_elf_syms(struct elf_module *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *map;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	size_t strbytes = 0;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	eh = (const Elf64_Ehdr *)map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size)
		goto out;
	sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	for (int pass = 0; pass < 2 && !m->nsyms; pass++) {
		unsigned int want = pass ? SHT_DYNSYM : SHT_SYMTAB;
		for (unsigned int i = 0; i < eh->e_shnum; i++) {
			const Elf64_Shdr *s = &sh[i], *ss;
			const Elf64_Sym *sym;
			size_t n, out = 0;
			char *p;

			if (s->sh_type != want || s->sh_link >= eh->e_shnum)
				continue;
			ss = &sh[s->sh_link];
			if (s->sh_offset + s->sh_size > (uint64_t)st.st_size ||
			    ss->sh_offset + ss->sh_size > (uint64_t)st.st_size)
				continue;
			sym = (const Elf64_Sym *)(map + s->sh_offset);
			n = s->sh_size / sizeof(Elf64_Sym);
			m->syms = calloc(n ? n : 1, sizeof(*m->syms));
			m->strtab = malloc(ss->sh_size + 1);
			if (!m->syms || !m->strtab)
				break;
			memcpy(m->strtab, map + ss->sh_offset, ss->sh_size);
			m->strtab[ss->sh_size] = '\0';
			strbytes = ss->sh_size;
			for (size_t j = 0; j < n; j++) {
				if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC || !sym[j].st_value ||
				    sym[j].st_name >= strbytes)
					continue;
				p = m->strtab + sym[j].st_name;
				m->syms[out].start = sym[j].st_value;
				m->syms[out].size = sym[j].st_size;
				m->syms[out].name = p;
				out++;
			}
			m->nsyms = out;
			qsort(m->syms, out, sizeof(*m->syms), sym_cmp);
			break;
		}
	}
out:
	munmap(map, (size_t)st.st_size);
}

static struct elf_module *module_for(struct odb_depot *d, void *pc)
{
	Dl_info di;
	struct elf_module *m;
	const char *base;
	void *nm;

	if (!dladdr(pc, &di) || !di.dli_fname)
		return NULL;
	for (size_t i = 0; i < d->nmods; i++)
		if (d->mods[i].base == (uintptr_t)di.dli_fbase)
			return &d->mods[i];
	nm = realloc(d->mods, (d->nmods + 1) * sizeof(*d->mods));
	if (!nm)
		return NULL;
	d->mods = nm;
	m = &d->mods[d->nmods++];
	memset(m, 0, sizeof(*m));
	m->path = strdup(di.dli_fname);
	m->base = (uintptr_t)di.dli_fbase;
	base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	m->hide = di.dli_fbase != d->self_base &&
		  (strstr(base, "python") || strstr(base, "libc.so") || strstr(base, "_core.") ||
		   strstr(base, "libtsan") || strstr(base, "libasan") || !*base);
	if (m->path && !m->hide)
		load_elf_syms(m);
	return m;
}

static bool symbolise(struct odb_depot *d, void *pc, char *buf, size_t len)
{
	struct elf_module *m = module_for(d, pc);
	uintptr_t off;
	size_t lo = 0, hi;

	if (!m)
		goto raw;
	if (m->hide)
		return false;
	off = (uintptr_t)pc - m->base - 1;   /* return address: look up the call */
	hi = m->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->syms[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && off < m->syms[lo - 1].start + (m->syms[lo - 1].size ? m->syms[lo - 1].size : 1)) {
		const struct elf_sym *s = &m->syms[lo - 1];
		snprintf(buf, len, "%s+%#lx/%#lx", s->name, (unsigned long)(off + 1 - s->start),
			 (unsigned long)s->size);
		return true;
	}
raw:
	snprintf(buf, len, "0x%lx", (unsigned long)(uintptr_t)pc);
	return true;
}

void odb_symbolise(struct odb_kernel *k, const void *pc, char *buf, size_t len)
{
	struct odb_depot *d = k->depot;

	if (!pc) {
		snprintf(buf, len, "0x0");
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (!symbolise(d, (void *)pc, buf, len))
		snprintf(buf, len, "0x%lx", (unsigned long)(uintptr_t)pc);
	pthread_mutex_unlock(&d->lock);
}

const char *stack_depot_py(struct odb_kernel *k, uint32_t handle, char *buf, size_t len)
{
	struct odb_depot *d = k->depot;

	buf[0] = '\0';
	pthread_mutex_lock(&d->lock);
	if (handle && handle <= d->nr && d->recs[handle - 1]->py)
		snprintf(buf, len, "%s", d->recs[handle - 1]->py);
	pthread_mutex_unlock(&d->lock);
	return buf;
}

typedef void (*line_fn)(void *ctx, const char *line);

static bool depot_each_line(struct odb_kernel *k, uint32_t handle, line_fn fn, void *ctx)
{
	struct odb_depot *d = k->depot;
	struct stack_record *r;
	char sym[256], line[300];

	pthread_mutex_lock(&d->lock);
	if (!handle || handle > d->nr) {
		pthread_mutex_unlock(&d->lock);
		return false;
	}
	r = d->recs[handle - 1];
	for (unsigned int i = 0; i < r->nr; i++) {
		if (!symbolise(d, r->entries[i], sym, sizeof(sym)))
			continue;
		snprintf(line, sizeof(line), " %s", sym);
		fn(ctx, line);
	}
	if (r->py) {
		snprintf(line, sizeof(line), " %s", r->py);
		fn(ctx, line);
	}
	pthread_mutex_unlock(&d->lock);
	return true;
}

static void to_report(void *ctx, const char *line) { report_line(ctx, "%s", line); }

void stack_depot_print_to(struct odb_kernel *k, uint32_t handle, struct odb_report_impl *r)
{
	depot_each_line(k, handle, to_report, r);
}

struct strbuf { char *s; size_t len, cap; };

static void to_strbuf(void *ctx, const char *line)
{
	struct strbuf *b = ctx;
	size_t n = strlen(line);

	if (b->len + n + 2 > b->cap) {
		size_t ncap = (b->cap ? b->cap : 256);
		char *ns;
		while (b->len + n + 2 > ncap)
			ncap *= 2;
		ns = realloc(b->s, ncap);
		if (!ns)
			return;
		b->s = ns;
		b->cap = ncap;
	}
	memcpy(b->s + b->len, line, n);
	b->len += n;
	b->s[b->len++] = '\n';
	b->s[b->len] = '\0';
}

char *odb_stack_text(odb_kernel *k, uint32_t handle)
{
	struct strbuf b = { 0 };

	if (!depot_each_line(k, handle, to_strbuf, &b)) {
		free(b.s);
		return NULL;
	}
	if (!b.s)
		b.s = calloc(1, 1);
	return b.s;
}

static void to_printk(void *ctx, const char *line) { printk(ctx, "%s", line); }

/* dump_stack(): the header line and the current stack, as the kernel prints it. */
void dump_stack(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);
	uint32_t h = stack_depot_save_current(k, 1);

	char tb[48];

	printk(k, "CPU: %d UID: 0 PID: %d Comm: %s %s 6.12.0-odebug #1",
	       t ? smp_processor_id_task(t) : 0, t ? t->pid : 0, t ? t->comm : "?",
	       print_tainted(k, tb, sizeof(tb)));
	printk(k, "Call Trace:\n <TASK>");
	depot_each_line(k, h, to_printk, k);
	printk(k, " </TASK>");
}
