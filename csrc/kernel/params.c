/*
 * The table of boot parameters, gathered from every room.  The table itself
 * is constant; values live in struct odb_kernel (and the rooms' structs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"
#include "kernel/params.h"

/* Parse an unsigned decimal (kstrtoul, base 10, no sign, no trailing junk). */
int odb_kstrtoul(const char *s, unsigned long *out)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || *end)
		return -1;
	return 0;
}

/* kstrtobool: 1/y/Y/on and 0/n/N/off; a bare key means true. */
int odb_kstrtobool(const char *s, bool *out)
{
	if (!s) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "1") || !strcasecmp(s, "y") || !strcasecmp(s, "yes") || !strcasecmp(s, "on")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcasecmp(s, "n") || !strcasecmp(s, "no") || !strcasecmp(s, "off")) {
		*out = false;
		return 0;
	}
	return -1;
}

int odb_param_choice(struct odb_kernel *k, const char *name, const char *val,
		     const char *const choices[], int *out)
{
	char list[128];
	size_t n = 0;

	for (int i = 0; choices[i]; i++) {
		if (val && !strcmp(val, choices[i])) {
			*out = i;
			return 0;
		}
		n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s",
				      i ? "|" : "", choices[i]);
	}
	return odb_err(k, ODB_EINVAL, "%s: `%s' invalid for parameter `%s' (%s)", name,
		       val ? val : "", name, list);
}

static int set_panic_on_warn(struct odb_kernel *k, const char *val)
{
	unsigned long v;
	bool b;

	if (val && !odb_kstrtoul(val, &v)) {
		k->panic_on_warn = v != 0;
		return 0;
	}
	if (odb_kstrtobool(val, &b))
		return odb_err(k, ODB_EINVAL, "panic_on_warn: `%s' invalid for parameter `panic_on_warn'",
			       val);
	k->panic_on_warn = b;
	return 0;
}

static void get_panic_on_warn(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%d", k->panic_on_warn ? 1 : 0);
}

static int set_hz(struct odb_kernel *k, const char *val)
{
	unsigned long v;

	if (odb_kstrtoul(val, &v) || v < 1 || v > 100000)
		return odb_err(k, ODB_EINVAL, "hz: `%s' invalid for parameter `hz' (1..100000)",
			       val ? val : "");
	k->hz = (unsigned int)v;
	return 0;
}

static void get_hz(struct odb_kernel *k, char *buf, size_t len) { snprintf(buf, len, "%u", k->hz); }

static int set_failslab(struct odb_kernel *k, const char *val)
{
	if (!val)
		return odb_err(k, ODB_EINVAL, "failslab: needs <interval>,<probability>,<space>,<times>");
	return setup_fault_attr(k, &k->failslab.attr, val);
}

static int set_fail_page_alloc(struct odb_kernel *k, const char *val)
{
	if (!val)
		return odb_err(k, ODB_EINVAL,
			       "fail_page_alloc: needs <interval>,<probability>,<space>,<times>");
	return setup_fault_attr(k, &k->fail_page_alloc.attr, val);
}

static void get_fault(struct odb_kernel *k, struct fault_attr *a, char *buf, size_t len)
{
	spin_lock(k, &a->lock);
	snprintf(buf, len, "%lu,%lu,%ld,%ld", a->interval, a->probability, a->space, a->times);
	spin_unlock(k, &a->lock);
}

static void get_failslab(struct odb_kernel *k, char *buf, size_t len) { get_fault(k, &k->failslab.attr, buf, len); }
static void get_fail_page_alloc(struct odb_kernel *k, char *buf, size_t len) { get_fault(k, &k->fail_page_alloc.attr, buf, len); }

/* odebug.lock_bias=on|off|<n>: whether locks taken again and again by one
 * thread are biased to it (kernel.h); off keeps one atomic operation per
 * acquisition; n sets the first threshold (on = 1024), small n for tests that
 * want bias and revocation all the time. */
static int set_lock_bias(struct odb_kernel *k, const char *val)
{
	unsigned long n;
	bool b;

	if (val && !odb_kstrtoul(val, &n) && n <= ODB_BIAS_THRESHOLD_MAX) {
		k->lock_bias = (unsigned int)n;
		return 0;
	}
	if (odb_kstrtobool(val, &b))   /* a bare odebug.lock_bias is on */
		return odb_err(k, ODB_EINVAL, "odebug.lock_bias: `%s' invalid for parameter "
			       "`odebug.lock_bias' (on|off|0..%u)", val ? val : "", ODB_BIAS_THRESHOLD_MAX);
	k->lock_bias = b ? ODB_BIAS_THRESHOLD : 0;
	return 0;
}

static void get_lock_bias(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%u", k->lock_bias);
}

/* odebug.sched=free|controlled: the kernel's tasks run freely on their threads,
 * or one at a time under the controlled scheduler (kernel/sched.c). */
static int set_sched(struct odb_kernel *k, const char *val)
{
	static const char *const names[] = { "free", "controlled", NULL };
	int i, r = odb_param_choice(k, "odebug.sched", val, names, &i);

	if (!r)
		k->sched_controlled = i == 1;
	return r;
}

static void get_sched(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", k->sched_controlled ? "controlled" : "free");
}

/* odebug.kcsan=on|off: KCSAN's data-race reports for controlled runs. */
static int set_kcsan(struct odb_kernel *k, const char *val)
{
	bool b;

	if (odb_kstrtobool(val, &b))
		return odb_err(k, ODB_EINVAL, "odebug.kcsan: `%s' invalid for parameter `odebug.kcsan' "
			       "(on or off)", val ? val : "");
	k->kcsan = b;
	return 0;
}

static void get_kcsan(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s", k->kcsan ? "on" : "off");
}

/*
 * log_buf_len=n[KMG]: the printk ring's size in bytes.  As the kernel's: a
 * size is rounded up to a power of two, one at or below the current size is
 * ignored, and over 2G is cut to 2G ("log_buf over 2G is not supported.");
 * the new size is announced as "log_buf_len: N bytes".  (odebug's ring keeps
 * whole lines and is bounded by bytes: it just grows.)
 */
static int set_log_buf_len(struct odb_kernel *k, const char *val)
{
	unsigned long long v = 0, pow = 1;
	unsigned int shift = 0;
	char *end = NULL;

	if (val && *val >= '0' && *val <= '9')
		v = strtoull(val, &end, 0);   /* (an overflow gives ULLONG_MAX: over 2G) */
	if (!end || end == val)
		return odb_err(k, ODB_EINVAL, "log_buf_len: `%s' invalid for parameter `log_buf_len' "
			       "(a size: n[KMG])", val ? val : "");
	switch (*end) {
	case 'G': case 'g': shift = 30; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'K': case 'k': shift = 10; end++; break;
	default: break;
	}
	if (*end)
		return odb_err(k, ODB_EINVAL, "log_buf_len: `%s' invalid for parameter `log_buf_len' "
			       "(a size: n[KMG])", val);
	v = v > ((1ULL << 31) >> shift) ? (1ULL << 31) + 1 : v << shift;
	if (v > (1ULL << 31)) {
		v = 1ULL << 31;
		printk(k, "log_buf over 2G is not supported.");
	}
	if (!v)
		return 0;
	while (pow < v)
		pow <<= 1;
	if (pow > odb_log_cap(&k->log)) {
		odb_log_grow(&k->log, (size_t)pow);
		printk(k, "log_buf_len: %llu bytes", pow);
	}
	return 0;
}

static void get_log_buf_len(struct odb_kernel *k, char *buf, size_t len)
{
	snprintf(buf, len, "%zu", odb_log_cap(&k->log));
}

const struct odb_param odb_params[] = {
	{ "log_buf_len", set_log_buf_len, get_log_buf_len },
	{ "panic_on_warn", set_panic_on_warn, get_panic_on_warn },
	{ "hz", set_hz, get_hz },
	{ "failslab", set_failslab, get_failslab },
	{ "fail_page_alloc", set_fail_page_alloc, get_fail_page_alloc },
	{ "odebug.lock_bias", set_lock_bias, get_lock_bias },
	{ "odebug.sched", set_sched, get_sched },
	{ "odebug.kcsan", set_kcsan, get_kcsan },
	{ "nokaslr", kaslr_param_nokaslr, kaslr_param_nokaslr_show },
	ODB_ROOM_PARAMS
	{ NULL, NULL, NULL },
};
