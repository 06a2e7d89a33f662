/*
 * printk ring and structured reports.
 *
 * The log keeps whole lines, each prefixed with the kernel's timestamp
 * "[%5lu.%06lu] " taken from the kernel's clock, in a ring bounded by bytes:
 * the oldest lines go first, as with the kernel's log buffer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"

struct odb_line { size_t len; char s[]; };

struct odb_logring {
	struct odb_line **lines;
	size_t cap_lines, first, count, bytes, cap_bytes;
};

int odb_log_init(struct odb_log *l, size_t cap)
{
	struct odb_logring *r = calloc(1, sizeof(*r));

	pthread_mutex_init(&l->lock, NULL);
	if (!r)
		return -1;
	r->cap_lines = 4096;
	r->lines = calloc(r->cap_lines, sizeof(*r->lines));
	if (!r->lines) {
		free(r);
		return -1;
	}
	r->cap_bytes = cap;
	l->buf = (char *)r;
	return 0;
}

void odb_log_exit(struct odb_log *l)
{
	struct odb_logring *r = (struct odb_logring *)l->buf;

	if (r) {
		for (size_t i = 0; i < r->count; i++)
			free(r->lines[(r->first + i) % r->cap_lines]);
		free(r->lines);
		free(r);
		l->buf = NULL;
	}
	pthread_mutex_destroy(&l->lock);
}

size_t odb_log_cap(struct odb_log *l)
{
	struct odb_logring *r = (struct odb_logring *)l->buf;
	size_t cap;

	pthread_mutex_lock(&l->lock);
	cap = r ? r->cap_bytes : 0;
	pthread_mutex_unlock(&l->lock);
	return cap;
}

void odb_log_grow(struct odb_log *l, size_t cap)
{
	struct odb_logring *r = (struct odb_logring *)l->buf;

	pthread_mutex_lock(&l->lock);
	if (r && cap > r->cap_bytes)
		r->cap_bytes = cap;   /* lines are kept one by one: nothing to move */
	pthread_mutex_unlock(&l->lock);
}

static void ring_drop_oldest(struct odb_logring *r)
{
	struct odb_line *ln = r->lines[r->first];

	r->bytes -= ln->len;
	free(ln);
	r->lines[r->first] = NULL;
	r->first = (r->first + 1) % r->cap_lines;
	r->count--;
}

/* Append one line (without newline).  Caller holds l->lock. */
static void ring_push(struct odb_logring *r, const char *prefix, const char *s, size_t n)
{
	size_t plen = strlen(prefix);
	struct odb_line *ln = malloc(sizeof(*ln) + plen + n + 2);

	if (!ln)
		return;   /* like the kernel, a message may be lost under memory pressure */
	memcpy(ln->s, prefix, plen);
	memcpy(ln->s + plen, s, n);
	ln->s[plen + n] = '\n';
	ln->s[plen + n + 1] = '\0';
	ln->len = plen + n + 1;
	if (r->count == r->cap_lines) {
		size_t ncap = r->cap_lines * 2;
		struct odb_line **nl = NULL;

		if (ncap * sizeof(*nl) <= (64u << 20))
			nl = calloc(ncap, sizeof(*nl));
		if (nl) {
			for (size_t i = 0; i < r->count; i++)
				nl[i] = r->lines[(r->first + i) % r->cap_lines];
			free(r->lines);
			r->lines = nl;
			r->first = 0;
			r->cap_lines = ncap;
		} else {
			ring_drop_oldest(r);
		}
	}
	r->lines[(r->first + r->count) % r->cap_lines] = ln;
	r->count++;
	r->bytes += ln->len;
	while (r->bytes > r->cap_bytes && r->count > 1)
		ring_drop_oldest(r);
}

static void log_text(struct odb_kernel *k, const char *text)
{
	struct odb_logring *r = (struct odb_logring *)k->log.buf;
	uint64_t ns = ktime_get_ns(k);
	char prefix[48];
	const char *p = text;

	snprintf(prefix, sizeof(prefix), "[%5llu.%06llu] ",
		 (unsigned long long)(ns / NSEC_PER_SEC),
		 (unsigned long long)(ns % NSEC_PER_SEC / 1000));
	pthread_mutex_lock(&k->log.lock);
	for (;;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n || nl)
			ring_push(r, prefix, p, n);
		if (!nl || !nl[1])
			break;
		p = nl + 1;
	}
	pthread_mutex_unlock(&k->log.lock);
}

void vprintk(struct odb_kernel *k, const char *fmt, va_list ap)
{
	char stackbuf[512];
	char *buf = stackbuf;
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(stackbuf, sizeof(stackbuf), fmt, ap);
	if (n >= (int)sizeof(stackbuf)) {
		buf = malloc((size_t)n + 1);
		if (buf)
			vsnprintf(buf, (size_t)n + 1, fmt, ap2);
		else
			buf = stackbuf;   /* truncated rather than lost */
	}
	va_end(ap2);
	if (n >= 0)
		log_text(k, buf);
	if (buf != stackbuf)
		free(buf);
}

void printk(struct odb_kernel *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintk(k, fmt, ap);
	va_end(ap);
}

void odb_printk(odb_kernel *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintk(k, fmt, ap);
	va_end(ap);
}

char *odb_dmesg(odb_kernel *k, bool clear)
{
	struct odb_logring *r = (struct odb_logring *)k->log.buf;
	char *out, *p;

	pthread_mutex_lock(&k->log.lock);
	out = malloc(r->bytes + 1);
	if (out) {
		p = out;
		for (size_t i = 0; i < r->count; i++) {
			struct odb_line *ln = r->lines[(r->first + i) % r->cap_lines];
			memcpy(p, ln->s, ln->len);
			p += ln->len;
		}
		*p = '\0';
		if (clear)
			while (r->count)
				ring_drop_oldest(r);
	}
	pthread_mutex_unlock(&k->log.lock);
	return out;
}

/* ---- reports ------------------------------------------------------------------ */
struct odb_report_impl *report_new(struct odb_kernel *k, const char *subsystem,
				   const char *kind)
{
	struct odb_report_impl *r = calloc(1, sizeof(*r));

	(void)k;
	if (!r)
		return NULL;
	atomic_init(&r->refs, 1);
	snprintf(r->kind_buf, sizeof(r->kind_buf), "%s", kind);
	r->pub.subsystem = subsystem;
	r->pub.kind = r->kind_buf;
	r->pub.is_write = -1;
	r->pub.text = "";
	return r;
}

void report_line(struct odb_report_impl *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!r)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (r->text_len + (size_t)n + 2 > r->text_cap) {
		size_t ncap = r->text_cap ? r->text_cap : 256;
		char *nt;

		while (r->text_len + (size_t)n + 2 > ncap)
			ncap *= 2;
		nt = realloc(r->text, ncap);
		if (!nt)
			return;
		r->text = nt;
		r->text_cap = ncap;
	}
	va_start(ap, fmt);
	vsnprintf(r->text + r->text_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r->text_len += (size_t)n;
	r->text[r->text_len++] = '\n';
	r->text[r->text_len] = '\0';
	r->pub.text = r->text;
}

void report_set_cache(struct odb_report_impl *r, const char *cache)
{
	if (!r)
		return;
	snprintf(r->cache_buf, sizeof(r->cache_buf), "%s", cache ? cache : "");
	r->pub.cache = cache ? r->cache_buf : NULL;
}

void odb_report_put(const struct odb_report *rp)
{
	struct odb_report_impl *r = (struct odb_report_impl *)rp;

	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		free(r->text);
		free(r);
	}
}

void odb_check_panic_on_warn(struct odb_kernel *k, const struct odb_report *rp)
{
	struct odb_task *t;
	struct odb_report_impl *r = (struct odb_report_impl *)rp;

	if (!k->panic_on_warn)
		return;
	t = odb_current(k);
	if (!t || t->bug)
		return;
	/* check_panic_on_warn(origin): panic() prints the message and the end
	 * marker; odebug then unwinds the call with ODB_EBUG instead of halting. */
	{
		const char *origin = !strcmp(rp->subsystem, "kasan") ? "KASAN" : "kernel";
		printk(k, "Kernel panic - not syncing: %s: panic_on_warn set ...", origin);
		printk(k, "---[ end Kernel panic - not syncing: %s: panic_on_warn set ... ]---",
		       origin);
	}
	atomic_fetch_add(&r->refs, 1);
	t->bug = rp;
}

void report_publish(struct odb_kernel *k, struct odb_report_impl *r)
{
	if (!r)
		return;
	if (!r->quiet && r->text_len)
		log_text(k, r->text);
	pthread_mutex_lock(&k->reports_lock);
	r->pub.seq = ++k->report_seq;
	if (k->nr_reports < ODB_MAX_REPORTS) {
		if (k->nr_reports == k->reports_cap) {
			size_t ncap = k->reports_cap ? k->reports_cap * 2 : 16;
			void *nr = realloc(k->reports, ncap * sizeof(*k->reports));
			if (nr) {
				k->reports = nr;
				k->reports_cap = ncap;
			}
		}
		if (k->nr_reports < k->reports_cap) {
			atomic_fetch_add(&r->refs, 1);
			k->reports[k->nr_reports++] = r;
		} else {
			k->reports_dropped++;
		}
	} else {
		k->reports_dropped++;
	}
	pthread_mutex_unlock(&k->reports_lock);
	/* a quiet report (past the print limit, or counted under the KUnit rule)
	 * is not a WARN: it never panics */
	if (!r->no_panic && !r->quiet)
		odb_check_panic_on_warn(k, &r->pub);
	odb_report_put(&r->pub);
}

size_t odb_report_count(odb_kernel *k)
{
	size_t n;

	pthread_mutex_lock(&k->reports_lock);
	n = k->nr_reports;
	pthread_mutex_unlock(&k->reports_lock);
	return n;
}

const struct odb_report *odb_report_get(odb_kernel *k, size_t i)
{
	struct odb_report_impl *r = NULL;

	pthread_mutex_lock(&k->reports_lock);
	if (i < k->nr_reports) {
		r = k->reports[i];
		atomic_fetch_add(&r->refs, 1);
	}
	pthread_mutex_unlock(&k->reports_lock);
	return r ? &r->pub : NULL;
}

void odb_reports_clear(odb_kernel *k)
{
	struct odb_report_impl **old;
	size_t n;

	pthread_mutex_lock(&k->reports_lock);
	old = k->reports;
	n = k->nr_reports;
	k->reports = NULL;
	k->nr_reports = k->reports_cap = 0;
	k->reports_dropped = 0;
	pthread_mutex_unlock(&k->reports_lock);
	for (size_t i = 0; i < n; i++)
		odb_report_put(&old[i]->pub);
	free(old);
}

void odb_reports_exit(struct odb_kernel *k) { odb_reports_clear(k); }

uint64_t odb_reports_dropped(odb_kernel *k)
{
	uint64_t d;

	pthread_mutex_lock(&k->reports_lock);
	d = k->reports_dropped;
	pthread_mutex_unlock(&k->reports_lock);
	return d;
}

int odb_report_simple(odb_kernel *k, const char *subsystem, const char *kind,
		      const char *text)
{
	struct odb_task *t = odb_enter(k);
	struct odb_report_impl *r;
	const char *ss;

	if (!t)
		return odb_enter_failed(k);
	ss = subsystem ? subsystem : "user";
	r = report_new(k, "user", kind ? kind : "");
	if (!r)
		return odb_leave(t, ODB_ENOMEM);
	/* the caller's string is copied (the core's own are static) */
	snprintf(r->subsys_buf, sizeof(r->subsys_buf), "%s", ss);
	r->pub.subsystem = r->subsys_buf;
	if (text && *text)
		report_line(r, "%s", text);
	report_publish(k, r);
	return odb_leave(t, ODB_OK);
}

/* %pS of a host code address: "name+0xoff/0xsize" (0x0 for NULL).  The
 * depot's symboliser looks up return addresses (pc - 1), so ask for pc + 1
 * and take the one back from the printed offset. */
void odb_sprint_symbol(struct odb_kernel *k, uintptr_t pc, char *buf, size_t len)
{
	char *plus, *slash;
	unsigned long off;

	if (!pc) {
		snprintf(buf, len, "0x0");
		return;
	}
	odb_symbolise(k, (const void *)(pc + 1), buf, len);
	plus = strrchr(buf, '+');
	slash = plus ? strchr(plus, '/') : NULL;
	if (plus && slash && sscanf(plus + 1, "%lx", &off) == 1 && off > 0) {
		char rest[96];

		snprintf(rest, sizeof(rest), "%s", slash);
		snprintf(plus, len - (size_t)(plus - buf), "+0x%lx%s", off - 1, rest);
	} else if (!plus) {
		snprintf(buf, len, "0x%lx", (unsigned long)pc);
	}
}

void odb_warn(struct odb_kernel *k, const char *subsystem, const char *kind, const char *cache,
	      odb_addr_t object, const char *pre, const char *msg, const char *file, int line,
	      const void *fn)
{
	struct odb_task *t = odb_current(k);
	struct odb_report_impl *r = report_new(k, subsystem, kind);
	char where[128], tb[48];
	uint32_t h;

	if (!r)
		return;
	r->pub.addr = object;
	r->pub.object = object;
	if (cache)
		report_set_cache(r, cache);
	odb_sprint_symbol(k, (uintptr_t)fn + 1, where, sizeof(where));   /* inside fn */
	if (pre)
		report_line(r, "%s", pre);
	report_line(r, "------------[ cut here ]------------");
	if (msg)
		report_line(r, "%s", msg);
	report_line(r, "WARNING: CPU: %d PID: %d at %s:%d %s",
		    t ? smp_processor_id_task(t) : 0, t ? t->pid : 0, file, line, where);
	add_taint(k, TAINT_WARN);
	report_line(r, "CPU: %d UID: 0 PID: %d Comm: %s %s 6.12.0-odebug #1",
		    t ? smp_processor_id_task(t) : 0, t ? t->pid : 0, t ? t->comm : "?",
		    print_tainted(k, tb, sizeof(tb)));
	report_line(r, "Call Trace:");
	h = stack_depot_save_current(k, 2);
	if (h)
		stack_depot_print_to(k, h, r);
	report_line(r, "---[ end trace 0000000000000000 ]---");
	report_publish(k, r);
}
