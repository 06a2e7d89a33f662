/*
 * The C unit tests' harness: CHECK/CHECK_EQ counting into a summary line
 * ("N passed, M failed", printed by odb_test_summary), and a boot helper.
 * Each csrc/tests/test_*.c is one program (one translation unit).
 */
#ifndef ODB_TESTS_CHECK_H
#define ODB_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

static int failures, checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); checks++; \
	if (_a != _b) { failures++; fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n", \
	__FILE__, __LINE__, #a, #b, _a, _b); } } while (0)

/* Boot a kernel for a test; NULL (with the reason on stderr) on failure. */
static inline odb_kernel *odb_test_boot(const char *cmdline, enum odb_clock_kind clock,
					unsigned cpus, uint64_t ram, uint64_t seed)
{
	struct odb_config cfg;
	odb_kernel *k = NULL;
	char err[256];
	int ret;

	odb_config_init(&cfg);
	cfg.cmdline = cmdline;
	cfg.clock = clock;
	cfg.cpus = cpus;
	cfg.ram = ram;
	cfg.seed = seed;
	ret = odb_kernel_create(&cfg, &k, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "boot(%s) failed: %d %s\n", cmdline, ret, err);
		return NULL;
	}
	return k;
}

static inline bool dmesg_has(odb_kernel *k, const char *needle)
{
	char *s = odb_dmesg(k, false);
	bool r = s && strstr(s, needle);
	free(s);
	return r;
}

/* A Python-style frame hook (odb_set_frame_hook(k, test_py_hook, NULL)): the
 * caller's location is test_py_loc, none while it is NULL. */
static const char *test_py_loc;
static inline bool test_py_hook(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	if (!test_py_loc)
		return false;
	snprintf(buf, len, "%s", test_py_loc);
	return true;
}

static inline int odb_test_summary(void)
{
	printf("%d passed, %d failed\n", checks - failures, failures);
	return failures != 0;
}

#endif
