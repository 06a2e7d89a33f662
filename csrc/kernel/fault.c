/*
 * Fault injection with lib/fault-inject.c's semantics (should_fail_ex):
 * probability 0 short-circuits; then times, space, interval, probability
 * against a uniform 0..99 draw from the kernel's seeded PRNG; on failure the
 * dump (verbose > 0: two lines, verbose > 1: plus a stack) comes before the
 * decrement of times, and times == -1 means unlimited.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"

void fault_attr_init(struct fault_attr *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->name = name;
	spin_lock_init(&a->lock);
	a->interval = 1;
	a->times = 1;
	a->verbose = 2;
}

void odb_fault_init(struct odb_kernel *k)
{
	fault_attr_init(&k->failslab.attr, "failslab");
	k->failslab.ignore_gfp_reclaim = true;
	k->failslab.cache_filter = false;
	fault_attr_init(&k->fail_page_alloc.attr, "fail_page_alloc");
	k->fail_page_alloc.ignore_gfp_reclaim = true;
	k->fail_page_alloc.ignore_gfp_highmem = true;
	k->fail_page_alloc.min_order = 1;
}

void odb_fault_exit(struct odb_kernel *k)
{
	spin_lock_destroy(&k->failslab.attr.lock);
	spin_lock_destroy(&k->fail_page_alloc.attr.lock);
}

static void fail_dump(struct odb_kernel *k, struct fault_attr *a, long space, long times)
{
	if (!a->verbose)
		return;
	printk(k, "FAULT_INJECTION: forcing a failure.\n"
		  "name %s, interval %lu, probability %lu, space %ld, times %ld",
	       a->name, a->interval, a->probability, space, times);
	if (a->verbose > 1)
		dump_stack(k);
}

bool should_fail(struct odb_kernel *k, struct fault_attr *a, size_t size)
{
	return should_fail_ex(k, a, size, 0);
}

bool should_fail_ex(struct odb_kernel *k, struct fault_attr *a, size_t size, unsigned int flags)
{
	long space, times;

	if (READ_ONCE(a->probability) == 0)
		return false;
	spin_lock(k, &a->lock);
	a->calls++;
	if (a->times == 0)
		goto no;
	if (a->space > (long)size) {
		a->space -= (long)size;
		goto no;
	}
	if (a->interval > 1) {
		a->count++;
		if (a->count % a->interval)
			goto no;
	}
	if (a->probability <= prandom_u32(k) % 100)
		goto no;
	a->failures++;
	space = a->space;
	times = a->times;
	if (a->times != -1 && a->times != 0)
		a->times--;
	spin_unlock(k, &a->lock);
	if (!(flags & FAULT_NOWARN))
		fail_dump(k, a, space, times);
	return true;
no:
	spin_unlock(k, &a->lock);
	return false;
}

/* Strict sscanf("%lu,%lu,%d,%d") as the kernel's vsscanf would accept it. */
static bool scan_num(const char **s, bool is_signed, long long *out)
{
	const char *p = *s;
	char *end;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!is_signed && *p == '-')
		return false;
	if (!((*p >= '0' && *p <= '9') || (is_signed && *p == '-' && p[1] >= '0' && p[1] <= '9')))
		return false;
	errno = 0;
	*out = strtoll(p, &end, 10);
	if (errno)
		return false;
	*s = end;
	return true;
}

int setup_fault_attr(struct odb_kernel *k, struct fault_attr *a, const char *str)
{
	long long v[4];
	const char *p = str;

	for (int i = 0; i < 4; i++) {
		if (i && *p++ != ',')
			goto bad;
		if (!scan_num(&p, i >= 2, &v[i]))
			goto bad;
		if (i >= 2 && (v[i] < INT32_MIN || v[i] > INT32_MAX))
			goto bad;
	}
	spin_lock(k, &a->lock);
	a->interval = (unsigned long)v[0];
	a->probability = (unsigned long)v[1];
	a->space = (long)v[2];
	a->times = (long)v[3];
	spin_unlock(k, &a->lock);
	return 0;
bad:
	printk(k, "FAULT_INJECTION: failed to parse arguments");
	return odb_err(k, ODB_EINVAL,
		       "%s: '%s' invalid for parameter '%s' (expected <interval>,<probability>,<space>,<times>)",
		       a->name, str, a->name);
}

static struct fault_attr *fault_by_name(struct odb_kernel *k, const char *name)
{
	if (!name)
		return NULL;
	if (!strcmp(name, "failslab"))
		return &k->failslab.attr;
	if (!strcmp(name, "fail_page_alloc"))
		return &k->fail_page_alloc.attr;
	return NULL;
}

int odb_fault_get(odb_kernel *k, const char *name, struct odb_fault_attr_info *out)
{
	struct fault_attr *a = fault_by_name(k, name);

	if (!a)
		return odb_err(k, ODB_ENOENT, "no fault attribute '%s' (failslab, fail_page_alloc)",
			       name ? name : "(null)");
	spin_lock(k, &a->lock);
	out->probability = a->probability;
	out->interval = a->interval;
	out->times = a->times;
	out->space = a->space;
	out->verbose = a->verbose;
	out->calls = a->calls;
	out->failures = a->failures;
	spin_unlock(k, &a->lock);
	return ODB_OK;
}

int odb_fault_set(odb_kernel *k, const char *name, unsigned long probability,
		  unsigned long interval, long times, long space, unsigned long verbose)
{
	struct fault_attr *a = fault_by_name(k, name);

	if (!a)
		return odb_err(k, ODB_ENOENT, "no fault attribute '%s' (failslab, fail_page_alloc)",
			       name ? name : "(null)");
	spin_lock(k, &a->lock);
	a->probability = probability;
	a->interval = interval;
	a->times = times;
	a->space = space;
	a->verbose = verbose;
	spin_unlock(k, &a->lock);
	return ODB_OK;
}

/* The debugfs extra knob KNOB of fault attribute NAME: a bool or an unsigned int
 * field (exactly one of *b, *u set), or an error set on k. */
static int fault_knob(odb_kernel *k, const char *name, const char *knob, bool **b,
		      unsigned int **u)
{
	bool slab = name && !strcmp(name, "failslab");
	bool page = name && !strcmp(name, "fail_page_alloc");

	*b = NULL;
	*u = NULL;
	if (!slab && !page)
		return odb_err(k, ODB_ENOENT, "no fault attribute '%s' (failslab, fail_page_alloc)",
			       name ? name : "(null)");
	if (!knob)
		return odb_err(k, ODB_EINVAL, "no knob given");
	if (!strcmp(knob, "ignore-gfp-wait"))
		*b = slab ? &k->failslab.ignore_gfp_reclaim : &k->fail_page_alloc.ignore_gfp_reclaim;
	else if (page && !strcmp(knob, "ignore-gfp-highmem"))
		*b = &k->fail_page_alloc.ignore_gfp_highmem;
	else if (page && !strcmp(knob, "min-order"))
		*u = &k->fail_page_alloc.min_order;
	else if (slab && !strcmp(knob, "cache-filter"))
		*b = &k->failslab.cache_filter;
	else
		return odb_err(k, ODB_EINVAL, "%s has no knob '%s'", name, knob);
	return ODB_OK;
}

int odb_fault_set_flag(odb_kernel *k, const char *name, const char *knob, unsigned long value)
{
	bool *b;
	unsigned int *u;
	int ret = fault_knob(k, name, knob, &b, &u);

	if (ret)
		return ret;
	if (b)
		*b = value != 0;
	else
		*u = (unsigned int)value;
	return ODB_OK;
}

int odb_fault_get_flag(odb_kernel *k, const char *name, const char *knob, unsigned long *value)
{
	bool *b;
	unsigned int *u;
	int ret = fault_knob(k, name, knob, &b, &u);

	if (ret)
		return ret;
	*value = b ? *b : *u;
	return ODB_OK;
}
