/*
 * The boot command line: next_arg() tokenising (quotes, bare keys), dispatch
 * to the rooms' parameters (odb_params[], '-' and '_' equal), and the
 * kernel's handling of the rest: a key with a '.' is an unused module
 * parameter and is dropped silently, other unknown keys go to init (bare ones
 * as arguments, key=value as environment) and are listed in
 * "Unknown kernel command line parameters ..." -- arguments first.
 *
 * Deliberate deviations, for a library: a malformed value (the kernel prints
 * "`val' invalid for parameter `key'" and boots on) fails the boot with
 * ODB_EINVAL naming the parameter; an unknown "odebug.*" key (odebug's own
 * namespace, where a typo would otherwise vanish silently) is an error too.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"

/* lib/cmdline.c next_arg semantics, on a writable copy. */
static char *next_arg(char *args, char **param, char **val)
{
	unsigned int i, equals = 0;
	int in_quote = 0, quoted = 0;

	if (*args == '"') {
		args++;
		in_quote = 1;
		quoted = 1;
	}
	for (i = 0; args[i]; i++) {
		if (isspace((unsigned char)args[i]) && !in_quote)
			break;
		if (equals == 0 && args[i] == '=')
			equals = i;
		if (args[i] == '"')
			in_quote = !in_quote;
	}
	*param = args;
	if (!equals) {
		*val = NULL;
	} else {
		args[equals] = '\0';
		*val = args + equals + 1;
		if (**val == '"') {
			(*val)++;
			if (args[i - 1] == '"')
				args[i - 1] = '\0';
		}
	}
	if (quoted && i > 0 && args[i - 1] == '"')
		args[i - 1] = '\0';
	if (args[i]) {
		args[i] = '\0';
		args += i + 1;
	} else {
		args += i;
	}
	while (isspace((unsigned char)*args))
		args++;
	return args;
}

static bool parameq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
		if (x != y)
			return false;
	}
	return *a == *b;
}

struct strlist { char *s; size_t len, cap; };

static void strlist_add(struct strlist *l, const char *key, const char *val)
{
	size_t n = strlen(key) + (val ? strlen(val) + 1 : 0) + 2;
	char *ns;

	if (l->len + n + 1 > l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 128;
		while (l->len + n + 1 > ncap)
			ncap *= 2;
		ns = realloc(l->s, ncap);
		if (!ns)
			return;
		l->s = ns;
		l->cap = ncap;
	}
	l->len += (size_t)snprintf(l->s + l->len, l->cap - l->len, " %s%s%s", key,
				   val ? "=" : "", val ? val : "");
}

/* envp_init: a key=value option replaces an earlier one with the same key
 * (unknown_bootoption matches "key="), otherwise it is appended.  The keys are
 * hashed (open addressing, the table at most half full), so a command line of
 * n parameters is parsed in O(n), not O(n^2): a user may pass 200,000 of them. */
struct envlist {
	const char **key, **val;
	size_t n, cap;
	size_t *slot;               /* index + 1 into key[], 0: empty */
	size_t nslots;              /* a power of two, >= 2 * n */
	bool oom;
	uint64_t probes;            /* slots looked at, for tests of the bound */
};

static size_t env_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (size_t)h;
}

static bool envlist_grow_slots(struct envlist *e)
{
	size_t ns = e->nslots ? e->nslots * 2 : 64, *t = calloc(ns, sizeof(*t));

	if (!t)
		return false;
	for (size_t i = 0; i < e->n; i++) {
		size_t j = env_hash(e->key[i]) & (ns - 1);

		while (t[j])
			j = (j + 1) & (ns - 1);
		t[j] = i + 1;
	}
	free(e->slot);
	e->slot = t;
	e->nslots = ns;
	return true;
}

static void envlist_set(struct envlist *e, const char *key, const char *val)
{
	size_t j;

	if (e->oom)
		return;
	if (2 * (e->n + 1) > e->nslots && !envlist_grow_slots(e)) {
		e->oom = true;
		return;
	}
	for (j = env_hash(key) & (e->nslots - 1); e->slot[j]; j = (j + 1) & (e->nslots - 1)) {
		e->probes++;
		if (!strcmp(e->key[e->slot[j] - 1], key)) {
			e->val[e->slot[j] - 1] = val;
			return;
		}
	}
	e->probes++;
	if (e->n == e->cap) {
		size_t ncap = e->cap ? e->cap * 2 : 16;
		const char **nk = realloc(e->key, ncap * sizeof(*nk)), **nv;

		if (!nk) {
			e->oom = true;
			return;
		}
		e->key = nk;
		nv = realloc(e->val, ncap * sizeof(*nv));
		if (!nv) {
			e->oom = true;
			return;
		}
		e->val = nv;
		e->cap = ncap;
	}
	e->slot[j] = e->n + 1;
	e->key[e->n] = key;
	e->val[e->n++] = val;
}

int odb_parse_cmdline(struct odb_kernel *k, const char *cmdline, char *errbuf, size_t errlen)
{
	char *copy = strdup(cmdline ? cmdline : ""), *args, *param, *val;
	struct strlist argv = { 0 }, envp = { 0 };
	struct envlist env = { 0 };
	int ret = 0;

	if (!copy)
		return ODB_ENOMEM;
	printk(k, "Kernel command line: %s", cmdline ? cmdline : "");
	args = copy;
	while (isspace((unsigned char)*args))
		args++;
	while (*args) {
		const struct odb_param *p;

		args = next_arg(args, &param, &val);
		if (!val && !strcmp(param, "--"))
			break;   /* the rest are init's arguments */
		for (p = odb_params; p->name; p++)
			if (parameq(param, p->name))
				break;
		if (p->name) {
			int r = p->set(k, val);
			if (r) {
				const char *why = odb_strerror(k);
				printk(k, "Booting kernel: `%s' invalid for parameter `%s'",
				       val ? val : "", param);
				if (errbuf && errlen)
					snprintf(errbuf, errlen, "%s",
						 why[0] ? why : "invalid value");
				if (errbuf && errlen && !why[0])
					snprintf(errbuf, errlen, "%s: `%s' invalid for parameter `%s'",
						 param, val ? val : "", param);
				ret = r;
				break;
			}
			continue;
		}
		if (strchr(param, '.')) {
			if (!strncmp(param, "odebug.", 7)) {
				if (errbuf && errlen)
					snprintf(errbuf, errlen, "%s: unknown odebug parameter", param);
				ret = ODB_EINVAL;
				break;
			}
			continue;   /* unused module parameter: dropped silently */
		}
		if (val) {
			if (!strcmp(param, "HOME") || !strcmp(param, "TERM"))
				continue;   /* replaces a default env slot, not listed */
			envlist_set(&env, param, val);
		} else {
			strlist_add(&argv, param, NULL);
		}
	}
	for (size_t i = 0; i < env.n; i++)
		strlist_add(&envp, env.key[i], env.val[i]);
	k->cmdline_env_probes = env.probes;
	free(env.key);
	free(env.val);
	free(env.slot);
	if (!ret && (argv.len || envp.len))
		printk(k, "Unknown kernel command line parameters \"%s%s%s\", will be passed to user space.",
		       argv.len ? argv.s + 1 : "", argv.len && envp.len ? " " : "",
		       envp.len ? envp.s + 1 : "");
	free(argv.s);
	free(envp.s);
	free(copy);
	return ret;
}

char *odb_param_get(odb_kernel *k, const char *name)
{
	char buf[256];

	if (!name)
		return NULL;
	for (const struct odb_param *p = odb_params; p->name; p++) {
		if (parameq(name, p->name)) {
			buf[0] = '\0';
			if (p->get)
				p->get(k, buf, sizeof(buf));
			return strdup(buf);
		}
	}
	return NULL;
}
