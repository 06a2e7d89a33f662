/*
 * The controlled scheduler (odebug.sched=controlled).
 *
 * The tasks of a run are real threads, but only one of them runs at a time:
 * it holds the run's token until it reaches a scheduling point, where the
 * strategy picks the task that goes on.  A task that waits for a lock another
 * task holds is blocked: it is not chosen until the lock is free.  When no task
 * can go on the run is a deadlock; when the running task reaches no point for
 * too long, a stall.  Every choice is recorded: the schedule text replays it.
 *
 * The scheduling points (the one list of them):
 *   - every acquire and release of a spinlock_t / raw_spinlock_t (spin_lock,
 *     raw_spin_lock_irqsave, ...), of a cache's list_lock (odb_bspin_lock),
 *     of a struct mutex (slab_mutex, advance_lock), of a slab's bit lock
 *     (slab_lock), and of a vCPU's irq lock (local_irq_save / restore, the
 *     slab slow paths' irq-off sections, the visits of every vCPU);
 *     a trylock is a point too (it never waits);
 *   - every cmpxchg of a slab's freelist+counters (cmpxchg_double_slab);
 *   - every READ_ONCE_RACY / WRITE_ONCE_RACY: state the kernel reads without
 *     its lock (the quarantine's size, the debug-objects pool counters and
 *     obj_freeing, debug_objects_enabled, a node's nr_partial);
 *   - the start of every work item (odb_advance runs them);
 *   - explicit odb_sched_point() marks where the kernel has a racy window;
 *   - waits the scheduler knows of: SRCU's synchronize, a work item that runs
 *     elsewhere (cancel/flush);
 *   - a task's start and its end (decisions, not points).
 * Nothing else switches tasks: the inline fast paths are never taken by a
 * controlled kernel (its caches boot without them, its locks are never
 * biased), and the leaf locks of the log, the reports, the stack depot, the
 * task list and the workqueue list are plain mutexes no point sits inside.
 *
 * Determinism: with the virtual clock, pids handed out at spawn, and the
 * kernel's own measurements on odb_stat_ns (points passed), the same choices
 * give the same dmesg, reports, stats and trace hash in any process.
 *
 * The strategies (random, PCT, DFS with iterative preemption bounding,
 * replay, a preemption list) live here too; they hold no kernel and drive
 * successive runs on fresh kernels.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernel/kernel.h"

#define TS_READY   0
#define TS_BLOCKED 1
#define TS_DONE    2

#define WAIT_LOCK 1
#define WAIT_PRED 2

#define MAX_HELD 16
#define DEFAULT_TIMEOUT_MS 30000u

/* ---- strategies --------------------------------------------------------------------- */
enum { STRAT_RANDOM, STRAT_PCT, STRAT_DFS, STRAT_REPLAY, STRAT_PREEMPT };
static const char *const strat_names[] = { "random", "pct", "dfs", "replay", "preemptions" };

struct dfs_node {
	uint64_t runnable;            /* the runnable set at this decision */
	uint64_t tried;               /* choices explored (or pruned) here */
	int16_t cur;                  /* the task at the point, -1 none */
	int16_t chosen;
	bool cur_runnable;
	uint32_t pre_before;          /* preemptions before this decision */
};

struct odb_sched_strategy {
	int kind;
	uint64_t seed;
	struct odb_rng rng;
	uint64_t runs;
	/* per run */
	uint64_t pre_run;             /* preemptions so far */
	int64_t diverged_at;
	char why[224];
	bool fallback;                /* replay: past the divergence, random from here */
	/* pct */
	unsigned int depth;
	uint64_t steps, steps_max;
	uint64_t change[16];
	uint64_t prio[ODB_SCHED_MAX_TASKS];
	bool prio_set[ODB_SCHED_MAX_TASKS];
	/* dfs */
	unsigned int bound, cur_bound;
	struct dfs_node *nodes;
	size_t nnodes, cap, pos;
	bool exhausted;
	/* replay */
	uint16_t *choices;
	size_t nchoices;
	uint64_t want_hash;
	bool has_hash;
	/* preemptions */
	uint64_t *at;
	uint32_t *who;
	size_t npre, next_pre;
	/* distinct schedules (hashes of the choice lists) */
	uint64_t *seen;
	size_t seen_n, seen_cap;
};

struct decision {
	uint64_t index;
	int cur;                      /* the task at the point, -1: none (start, or it ended) */
	bool cur_runnable;
	const int *R;                 /* runnable ids, ascending */
	unsigned int n;
};

static odb_sched_strategy *strat_new(int kind, uint64_t seed)
{
	odb_sched_strategy *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kind = kind;
	s->seed = seed;
	odb_rng_seed(&s->rng, seed);
	s->diverged_at = -1;
	return s;
}

odb_sched_strategy *odb_sched_random(uint64_t seed) { return strat_new(STRAT_RANDOM, seed); }

odb_sched_strategy *odb_sched_pct(uint64_t seed, unsigned int depth, uint64_t steps)
{
	odb_sched_strategy *s;

	if (depth < 1 || depth > ARRAY_SIZE(s->change) + 1)
		return NULL;
	s = strat_new(STRAT_PCT, seed);
	if (s) {
		s->depth = depth;
		s->steps = steps;
	}
	return s;
}

odb_sched_strategy *odb_sched_dfs(unsigned int preemption_bound)
{
	odb_sched_strategy *s = strat_new(STRAT_DFS, 0);

	if (s)
		s->bound = preemption_bound;
	return s;
}

odb_sched_strategy *odb_sched_preemptions(const uint64_t *gaps, const uint32_t *whos, size_t n)
{
	odb_sched_strategy *s = strat_new(STRAT_PREEMPT, 0);
	uint64_t at = 0;

	if (!s)
		return NULL;
	if (n) {
		s->at = malloc(n * sizeof(*s->at));
		s->who = malloc(n * sizeof(*s->who));
		if (!s->at || !s->who) {
			odb_sched_strategy_free(s);
			return NULL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		at += gaps[i];
		s->at[i] = at++;
		s->who[i] = whos[i];
	}
	s->npre = n;
	return s;
}

/* "v1:0*57,1*12,0*40;h=3fa2c1d09e8b7a65": the chosen task at each decision,
 * run-length encoded, and the trace hash of the run that made it. */
odb_sched_strategy *odb_sched_replay(const char *text, uint64_t seed, char *errbuf, size_t errlen)
{
	odb_sched_strategy *s;
	const char *p = text;
	size_t cap = 0;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!text || strncmp(text, "v1:", 3)) {
		if (errbuf)
			snprintf(errbuf, errlen, "schedule: expected a text starting with 'v1:'");
		return NULL;
	}
	s = strat_new(STRAT_REPLAY, seed);
	if (!s)
		return NULL;
	p += 3;
	while (*p && *p != ';') {
		char *end;
		unsigned long id, cnt = 1;

		errno = 0;
		id = strtoul(p, &end, 10);
		if (end == p || errno || id >= ODB_SCHED_MAX_TASKS)
			goto bad;
		p = end;
		if (*p == '*') {
			p++;
			cnt = strtoul(p, &end, 10);
			if (end == p || errno || !cnt || cnt > (1ul << 30))
				goto bad;
			p = end;
		}
		if (s->nchoices + cnt > cap) {
			size_t ncap = cap ? cap * 2 : 64;
			uint16_t *nc;

			while (ncap < s->nchoices + cnt)
				ncap *= 2;
			if (ncap > (1ul << 30) || !(nc = realloc(s->choices, ncap * sizeof(*nc))))
				goto bad;
			s->choices = nc;
			cap = ncap;
		}
		for (unsigned long i = 0; i < cnt; i++)
			s->choices[s->nchoices++] = (uint16_t)id;
		if (*p == ',')
			p++;
		else if (*p && *p != ';')
			goto bad;
	}
	if (*p == ';') {
		char *end;

		if (strncmp(p, ";h=", 3))
			goto bad;
		errno = 0;
		s->want_hash = strtoull(p + 3, &end, 16);
		if (end == p + 3 || errno || *end)
			goto bad;
		s->has_hash = true;
	}
	return s;
bad:
	if (errbuf)
		snprintf(errbuf, errlen, "schedule: malformed text near offset %zu (expected "
			 "'v1:<task>[*<count>],...[;h=<hex>]')", (size_t)(p - text));
	odb_sched_strategy_free(s);
	return NULL;
}

void odb_sched_strategy_free(odb_sched_strategy *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->choices);
	free(s->at);
	free(s->who);
	free(s->seen);
	free(s);
}

void odb_sched_strategy_info(odb_sched_strategy *s, struct odb_sched_strategy_info *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = strat_names[s->kind];
	out->runs = s->runs;
	out->distinct = s->seen_n;
	out->bound = s->kind == STRAT_DFS ? s->cur_bound : 0;
	out->exhausted = s->exhausted;
	out->steps = s->kind == STRAT_PCT ? (s->steps ? s->steps : s->steps_max ? s->steps_max : 100) : 0;
}

static uint64_t rng_below(struct odb_rng *r, uint64_t n)
{
	return n ? odb_rng_next(r) % n : 0;
}

static void strat_begin(odb_sched_strategy *s)
{
	s->pre_run = 0;
	s->pos = 0;
	s->next_pre = 0;
	s->diverged_at = -1;
	s->why[0] = '\0';
	s->fallback = false;
	if (s->kind == STRAT_PCT) {
		uint64_t steps = s->steps ? s->steps : s->steps_max ? s->steps_max : 100;

		memset(s->prio_set, 0, sizeof(s->prio_set));
		for (unsigned int i = 0; i + 1 < s->depth; i++)
			s->change[i] = rng_below(&s->rng, steps);
	}
	if (s->kind == STRAT_REPLAY)
		odb_rng_seed(&s->rng, s->seed);   /* the fallback is the same in every replay */
}

static int default_choice(const struct decision *d)
{
	return d->cur_runnable ? d->cur : d->R[0];
}

static bool in_set(const struct decision *d, int id)
{
	for (unsigned int i = 0; i < d->n; i++)
		if (d->R[i] == id)
			return true;
	return false;
}

static uint64_t set_of(const struct decision *d)
{
	uint64_t m = 0;

	for (unsigned int i = 0; i < d->n; i++)
		m |= 1ull << d->R[i];
	return m;
}

static int choose_random(odb_sched_strategy *s, const struct decision *d)
{
	return d->R[rng_below(&s->rng, d->n)];
}

static int choose_pct(odb_sched_strategy *s, const struct decision *d)
{
	int best = -1;

	for (unsigned int i = 0; i + 1 < s->depth; i++)
		if (d->index == s->change[i] && d->cur >= 0)
			s->prio[d->cur] = s->depth - 1 - i;   /* change point: below every start priority */
	for (unsigned int i = 0; i < d->n; i++) {
		int id = d->R[i];

		if (!s->prio_set[id]) {
			s->prio[id] = (odb_rng_next(&s->rng) >> 8) + 64;   /* above every change point */
			s->prio_set[id] = true;
		}
		if (best < 0 || s->prio[id] > s->prio[best])
			best = id;
	}
	return best;
}

static bool dfs_push(odb_sched_strategy *s, const struct dfs_node *n)
{
	if (s->nnodes == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 256;
		struct dfs_node *nn = realloc(s->nodes, ncap * sizeof(*nn));

		if (!nn)
			return false;
		s->nodes = nn;
		s->cap = ncap;
	}
	s->nodes[s->nnodes++] = *n;
	return true;
}

static int choose_dfs(odb_sched_strategy *s, const struct decision *d)
{
	struct dfs_node n;

	if (s->pos < s->nnodes) {
		struct dfs_node *o = &s->nodes[s->pos];

		if (o->runnable == set_of(d) && o->cur == d->cur && o->cur_runnable == d->cur_runnable) {
			s->pos++;
			return o->chosen;
		}
		/* the same choices led elsewhere: the program is not deterministic */
		if (s->diverged_at < 0) {
			s->diverged_at = (int64_t)d->index;
			snprintf(s->why, sizeof(s->why),
				 "nondeterministic: decision %llu found other runnable tasks than "
				 "the same choices found before (something the scheduler does not control)",
				 (unsigned long long)d->index);
		}
		s->nnodes = s->pos;   /* explore on from here */
	}
	n = (struct dfs_node){ .runnable = set_of(d), .cur = (int16_t)d->cur,
			       .cur_runnable = d->cur_runnable, .chosen = (int16_t)default_choice(d),
			       .pre_before = (uint32_t)s->pre_run };
	n.tried = 1ull << n.chosen;
	if (dfs_push(s, &n))
		s->pos++;
	return n.chosen;
}

/* Backtrack to the deepest decision with an untried choice within the bound. */
static bool dfs_next(odb_sched_strategy *s)
{
	for (;;) {
		while (s->nnodes) {
			struct dfs_node *n = &s->nodes[s->nnodes - 1];
			uint64_t left = n->runnable & ~n->tried;

			while (left) {
				int id = __builtin_ctzll(left);
				uint32_t pre = n->pre_before + (n->cur_runnable && id != n->cur);

				left &= left - 1;
				n->tried |= 1ull << id;
				if (pre <= s->cur_bound) {
					n->chosen = (int16_t)id;
					return true;
				}
			}
			s->nnodes--;
		}
		if (s->cur_bound >= s->bound) {
			s->exhausted = true;
			return false;
		}
		s->cur_bound++;   /* iterative bounding: all schedules again with one more preemption */
		return true;
	}
}

static int choose_replay(odb_sched_strategy *s, const struct decision *d)
{
	if (!s->fallback) {
		if (s->pos < s->nchoices && in_set(d, s->choices[s->pos]))
			return s->choices[s->pos++];
		s->fallback = true;
		s->diverged_at = (int64_t)d->index;
		if (s->pos >= s->nchoices)
			snprintf(s->why, sizeof(s->why),
				 "the schedule ended at decision %llu (it has %zu choices): random(%llu) "
				 "from here", (unsigned long long)d->index, s->nchoices,
				 (unsigned long long)s->seed);
		else
			snprintf(s->why, sizeof(s->why),
				 "diverged at decision %llu: the schedule chose task %u, which cannot run "
				 "there (%u runnable): random(%llu) from here",
				 (unsigned long long)d->index, s->choices[s->pos], d->n,
				 (unsigned long long)s->seed);
	}
	return choose_random(s, d);
}

static int choose_preempt(odb_sched_strategy *s, const struct decision *d)
{
	int others[ODB_SCHED_MAX_TASKS], no = 0, skip = d->cur_runnable ? d->cur : default_choice(d);

	if (s->next_pre >= s->npre || d->index != s->at[s->next_pre])
		return default_choice(d);
	for (unsigned int i = 0; i < d->n; i++)
		if (d->R[i] != skip)
			others[no++] = d->R[i];
	return others[s->who[s->next_pre++] % (unsigned int)no];
}

static int strat_choose(odb_sched_strategy *s, const struct decision *d)
{
	int c;

	switch (s->kind) {
	case STRAT_RANDOM: c = choose_random(s, d); break;
	case STRAT_PCT: c = choose_pct(s, d); break;
	case STRAT_DFS: c = choose_dfs(s, d); break;
	case STRAT_REPLAY: c = choose_replay(s, d); break;
	default: c = choose_preempt(s, d); break;
	}
	if (d->cur_runnable && c != d->cur)
		s->pre_run++;
	return c;
}

static uint64_t fnv64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV0 0xcbf29ce484222325ull

static void strat_seen(odb_sched_strategy *s, uint64_t h)
{
	size_t i;

	if (!h)
		h = 1;
	if (2 * (s->seen_n + 1) > s->seen_cap) {
		size_t ncap = s->seen_cap ? s->seen_cap * 2 : 1024;
		uint64_t *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return;
		for (size_t j = 0; j < s->seen_cap; j++)
			if (s->seen[j]) {
				for (i = s->seen[j] & (ncap - 1); ns[i]; i = (i + 1) & (ncap - 1))
					;
				ns[i] = s->seen[j];
			}
		free(s->seen);
		s->seen = ns;
		s->seen_cap = ncap;
	}
	for (i = h & (s->seen_cap - 1); s->seen[i]; i = (i + 1) & (s->seen_cap - 1))
		if (s->seen[i] == h)
			return;
	s->seen[i] = h;
	s->seen_n++;
}

static void strat_end(odb_sched_strategy *s, const uint16_t *choices, size_t n)
{
	s->runs++;
	strat_seen(s, fnv64(FNV0, choices, n * sizeof(*choices)));
	if (n > s->steps_max)
		s->steps_max = n;
	if (s->kind == STRAT_DFS)
		s->nnodes = s->pos < s->nnodes ? s->pos : s->nnodes;
}

bool odb_sched_strategy_next(odb_sched_strategy *s)
{
	switch (s->kind) {
	case STRAT_DFS:
		return !s->exhausted && dfs_next(s);
	case STRAT_REPLAY:
	case STRAT_PREEMPT:
		return false;
	default:
		return true;
	}
}

/* ---- the scheduler ------------------------------------------------------------------ */
struct held_lock {
	const void *lock;
	const struct odb_sched_site *site;
	int kind;
};

struct odb_stask {
	struct odb_sched *S;
	int id, pid, cpu;
	char name[TASK_COMM_LEN];
	odb_task_fn fn;
	void *arg;
	pthread_t th;
	bool thread_started;
	int state;
	pthread_cond_t cv;
	/* what it waits for while blocked */
	int wait;
	int wait_kind;
	const void *wait_obj;
	bool (*wait_pred)(void *);
	void *wait_arg;
	const struct odb_sched_site *wait_site;
	uint32_t wait_stack;          /* its stack when it began to wait */
	struct held_lock held[MAX_HELD];
	unsigned int nheld;
	const struct odb_sched_site *last_site;
	uint32_t vc[ODB_SCHED_MAX_TASKS];   /* KCSAN: its vector clock */
};

/* KCSAN: the clock a synchronisation object passes on (a lock's release to its
 * next acquire, an SRCU section's end to synchronize_srcu, a work item's queue
 * to its start), and the last accesses of each instrumented variable. */
struct sync_clock {
	const void *obj;
	uint32_t vc[ODB_SCHED_MAX_TASKS];
};
struct kcsan_access {
	const struct odb_sched_site *site;
	uint32_t clk;                 /* the task's own clock at the access */
	uint32_t stack;
	int16_t tid, cpu;
	bool marked, valid;
};
struct shadow_var {
	const void *addr;
	unsigned int size;
	struct kcsan_access w;
	struct kcsan_access r[ODB_SCHED_MAX_TASKS];
};

struct site_ent {
	const struct odb_sched_site *site;
	uint64_t hash;
};

struct odb_sched {
	struct odb_kernel *k;
	pthread_mutex_t mu;
	pthread_cond_t ctl_cv;        /* the controller: the run is over */
	pthread_cond_t gate_cv;       /* threads outside the run wait for its end */
	struct odb_stask *tasks[ODB_SCHED_MAX_TASKS];
	unsigned int ntasks;
	struct odb_stask *running;
	bool active;                  /* a run is in progress */
	bool wedged;                  /* a run ended in a deadlock or a stall: tasks are stuck */
	unsigned int live;            /* tasks of the run not done */
	int status;
	odb_sched_strategy *strat, *own_strat;
	/* the run's record */
	uint16_t *choices;
	size_t nchoices, choices_cap;
	uint64_t points, decisions, preemptions, switches;
	uint64_t run_hash;
	uint64_t *gaps;               /* the choices that were not the default */
	uint32_t *whos;
	size_t npairs, pairs_cap;
	uint64_t last_pair;           /* decision index after the last of them */
	bool record;
	struct odb_sched_event *ev;
	size_t nev, ev_cap;
	/* since boot */
	uint64_t total_hash;
	_Atomic uint64_t clock;       /* points passed (odb_stat_ns) */
	_Atomic uint64_t progress;    /* the watchdog's view of it */
	/* interned sites */
	struct site_ent *sites;       /* by id */
	uint32_t nsites, sites_cap;
	uint32_t *site_index;         /* open addressing, id + 1 */
	uint32_t index_cap;
	/* KCSAN (odebug.kcsan=on), reset at every run */
	struct sync_clock *clocks;
	size_t nclocks, clocks_cap;
	struct shadow_var *vars;
	size_t nvars, vars_cap;
	const struct odb_sched_site **reported;   /* pairs already reported (a, b) */
	size_t nreported, reported_cap;
	/* hooks */
	void (*before)(void *ctx, void **cookie);
	void (*after)(void *ctx, void *cookie);
	void *hook_ctx;
};

static inline struct odb_stask *cur_stask(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	return t ? t->st : NULL;
}

uint64_t odb_sched_clock(struct odb_kernel *k)
{
	return atomic_load_explicit(&k->sched->clock, memory_order_relaxed);
}

/* ---- sites: interned, hashed by what they are (not where they live) ---------------------- */
static uint32_t site_id(struct odb_sched *S, const struct odb_sched_site *site)
{
	uint32_t i, id;
	uintptr_t key = (uintptr_t)site;

	if (2 * (S->nsites + 1) > S->index_cap) {
		uint32_t ncap = S->index_cap ? S->index_cap * 2 : 256;
		uint32_t *ni = calloc(ncap, sizeof(*ni));
		struct site_ent *ns = realloc(S->sites, ncap * sizeof(*ns));

		if (!ni || !ns) {
			free(ni);
			if (ns)
				S->sites = ns;
			return UINT32_MAX;
		}
		S->sites = ns;
		for (uint32_t j = 0; j < S->nsites; j++) {
			for (i = (uint32_t)(((uintptr_t)ns[j].site >> 4) * 0x9e3779b9u) & (ncap - 1); ni[i];
			     i = (i + 1) & (ncap - 1))
				;
			ni[i] = j + 1;
		}
		free(S->site_index);
		S->site_index = ni;
		S->index_cap = ncap;
	}
	for (i = (uint32_t)((key >> 4) * 0x9e3779b9u) & (S->index_cap - 1); S->site_index[i];
	     i = (i + 1) & (S->index_cap - 1))
		if (S->sites[S->site_index[i] - 1].site == site)
			return S->site_index[i] - 1;
	id = S->nsites++;
	S->site_index[i] = id + 1;
	{
		const char *base = strrchr(site->file, '/');
		uint64_t h = fnv64(FNV0, site->what, strlen(site->what));

		base = base ? base + 1 : site->file;
		h = fnv64(h, base, strlen(base));
		h = fnv64(h, &site->line, sizeof(site->line));
		S->sites[id] = (struct site_ent){ site, h };
	}
	return id;
}

int odb_sched_site_info(odb_kernel *k, uint32_t site, const char **what, const char **file,
			unsigned int *line, unsigned int *kind)
{
	struct odb_sched *S = k->sched;
	const struct odb_sched_site *s;

	if (!S)
		return ODB_ESTATE;
	pthread_mutex_lock(&S->mu);
	if (site >= S->nsites) {
		pthread_mutex_unlock(&S->mu);
		return ODB_ENOENT;
	}
	s = S->sites[site].site;
	pthread_mutex_unlock(&S->mu);
	if (what)
		*what = s->what;
	if (file) {
		const char *b = strrchr(s->file, '/');
		*file = b ? b + 1 : s->file;
	}
	if (line)
		*line = s->line;
	if (kind)
		*kind = s->kind;
	return ODB_OK;
}

/* ---- the plain lock operations, by kind ---------------------------------------------------- */
static bool lock_try(int kind, void *lock)
{
	int z = 0;

	switch (kind) {
	case ODB_LK_FAST:
		return !atomic_exchange_explicit(&((struct odb_fastlock *)lock)->v, ODB_LOCKED,
						 memory_order_acquire);
	case ODB_LK_BIT:
		return atomic_compare_exchange_strong_explicit((atomic_int *)lock, &z, 1,
							       memory_order_acquire, memory_order_relaxed);
	default:
		return __spin_trylock(lock);
	}
}

static bool lock_free(int kind, const void *lock)
{
	switch (kind) {
	case ODB_LK_FAST:
		return !atomic_load_explicit(&((struct odb_fastlock *)lock)->v, memory_order_relaxed);
	case ODB_LK_BIT:
		return !atomic_load_explicit((atomic_int *)lock, memory_order_relaxed);
	default:
		return !atomic_load_explicit(&((spinlock_t *)lock)->v, memory_order_relaxed);
	}
}

static void lock_plain(int kind, void *lock)
{
	switch (kind) {
	case ODB_LK_FAST:
		if (atomic_exchange_explicit(&((struct odb_fastlock *)lock)->v, ODB_LOCKED,
					     memory_order_acquire))
			odb_fastlock_wait(lock);
		return;
	case ODB_LK_BIT:
		while (!lock_try(kind, lock))
			sched_yield();
		return;
	default:
		__spin_lock(lock);
	}
}

static void unlock_plain(int kind, void *lock)
{
	switch (kind) {
	case ODB_LK_FAST:
		atomic_store_explicit(&((struct odb_fastlock *)lock)->v, NULL, memory_order_release);
		return;
	case ODB_LK_BIT:
		atomic_store_explicit((atomic_int *)lock, 0, memory_order_release);
		return;
	default:
		__spin_unlock(lock);
	}
}

/* ---- KCSAN: vector clocks over the scheduler's synchronisation ------------------------------- */
static struct sync_clock *clock_of(struct odb_sched *S, const void *obj)
{
	for (size_t i = 0; i < S->nclocks; i++)
		if (S->clocks[i].obj == obj)
			return &S->clocks[i];
	if (S->nclocks == S->clocks_cap) {
		size_t ncap = S->clocks_cap ? S->clocks_cap * 2 : 32;
		struct sync_clock *nc = realloc(S->clocks, ncap * sizeof(*nc));

		if (!nc)
			return NULL;
		S->clocks = nc;
		S->clocks_cap = ncap;
	}
	memset(&S->clocks[S->nclocks], 0, sizeof(S->clocks[0]));
	S->clocks[S->nclocks].obj = obj;
	return &S->clocks[S->nclocks++];
}

static void vc_join(uint32_t *to, const uint32_t *from)
{
	for (unsigned int i = 0; i < ODB_SCHED_MAX_TASKS; i++)
		if (from[i] > to[i])
			to[i] = from[i];
}

/* me acquires obj / releases obj (S->mu held) */
static void kcsan_acquire(struct odb_sched *S, struct odb_stask *me, const void *obj)
{
	struct sync_clock *c;

	if (!S->k->kcsan || !(c = clock_of(S, obj)))
		return;
	vc_join(me->vc, c->vc);
}

static void kcsan_release(struct odb_sched *S, struct odb_stask *me, const void *obj)
{
	struct sync_clock *c;

	if (!S->k->kcsan || !(c = clock_of(S, obj)))
		return;
	vc_join(c->vc, me->vc);
	me->vc[me->id]++;
}

static struct shadow_var *var_of(struct odb_sched *S, const void *addr, unsigned int size)
{
	for (size_t i = 0; i < S->nvars; i++)
		if (S->vars[i].addr == addr)
			return &S->vars[i];
	if (S->nvars == S->vars_cap) {
		size_t ncap = S->vars_cap ? S->vars_cap * 2 : 16;
		struct shadow_var *nv = realloc(S->vars, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		S->vars = nv;
		S->vars_cap = ncap;
	}
	memset(&S->vars[S->nvars], 0, sizeof(S->vars[0]));
	S->vars[S->nvars].addr = addr;
	S->vars[S->nvars].size = size;
	return &S->vars[S->nvars++];
}

static bool pair_reported(struct odb_sched *S, const struct odb_sched_site *a,
			  const struct odb_sched_site *b)
{
	for (size_t i = 0; i < 2 * S->nreported; i += 2)
		if ((S->reported[i] == a && S->reported[i + 1] == b) ||
		    (S->reported[i] == b && S->reported[i + 1] == a))
			return true;
	if (S->nreported == S->reported_cap) {
		size_t ncap = S->reported_cap ? S->reported_cap * 2 : 8;
		const struct odb_sched_site **nr = realloc(S->reported, 2 * ncap * sizeof(*nr));

		if (!nr)
			return true;
		S->reported = nr;
		S->reported_cap = ncap;
	}
	S->reported[2 * S->nreported] = a;
	S->reported[2 * S->nreported + 1] = b;
	S->nreported++;
	return false;
}

static void kcsan_print_access(struct odb_sched *S, struct odb_report_impl *r, const struct kcsan_access *a,
			       unsigned int size, bool write)
{
	struct odb_stask *t = S->tasks[a->tid];

	report_line(r, "%s%s to %s of %u bytes by task %d on cpu %d:", write ? "write" : "read",
		    a->marked ? " (marked)" : "", a->site->what, size, t->pid, a->cpu);
	if (a->stack)
		stack_depot_print_to(S->k, a->stack, r);
	else
		report_line(r, " %s", a->site->func);
	report_line(r, "%s", "");
}

/* "BUG: KCSAN: data-race in f / g", the two accesses with their stacks, once
 * per pair of sites. */
static void kcsan_report(struct odb_sched *S, struct odb_stask *me, const struct shadow_var *v,
			 const struct kcsan_access *old, bool old_write, const struct kcsan_access *cur,
			 bool cur_write)
{
	struct odb_report_impl *r;
	const char *fa = old->site->func, *fb = cur->site->func;
	char tb[48];

	if (pair_reported(S, old->site, cur->site))
		return;
	r = report_new(S->k, "kcsan", "data-race");
	if (!r)
		return;
	if (strcmp(fa, fb) > 0) {
		const char *x = fa;
		fa = fb;
		fb = x;
	}
	report_line(r, "==================================================================");
	report_line(r, "BUG: KCSAN: data-race in %s / %s", fa, fb);
	report_line(r, "%s", "");
	kcsan_print_access(S, r, old, v->size, old_write);
	kcsan_print_access(S, r, cur, v->size, cur_write);
	report_line(r, "Reported by Kernel Concurrency Sanitizer on:");
	report_line(r, "CPU: %d UID: 0 PID: %d Comm: %s %s 6.12.0-odebug #1", cur->cpu, me->pid, me->name,
		    print_tainted(S->k, tb, sizeof(tb)));
	report_line(r, "==================================================================");
	report_publish(S->k, r);
}

/* An instrumented access of me (S->mu held): conflicts with the last write
 * and, for a write, with the reads since, when neither is ordered before it
 * and not both are marked; then it is recorded. */
static void kcsan_check(struct odb_sched *S, struct odb_stask *me, const struct odb_sched_site *site,
			const void *addr, unsigned int size, bool write, bool marked, uint32_t stack)
{
	struct shadow_var *v = var_of(S, addr, size);
	struct kcsan_access cur = { site, me->vc[me->id], stack, (int16_t)me->id,
				    (int16_t)(me->cpu < 0 ? 0 : me->cpu), marked, true };

	if (!v)
		return;
	if (v->w.valid && v->w.tid != me->id && v->w.clk > me->vc[v->w.tid] && !(v->w.marked && marked))
		kcsan_report(S, me, v, &v->w, true, &cur, write);
	if (write) {
		for (unsigned int i = 0; i < ODB_SCHED_MAX_TASKS; i++) {
			struct kcsan_access *a = &v->r[i];

			if (a->valid && a->tid != me->id && a->clk > me->vc[a->tid] && !(a->marked && marked))
				kcsan_report(S, me, v, a, false, &cur, true);
		}
		memset(v->r, 0, sizeof(v->r));
		v->w = cur;
	} else {
		v->r[me->id] = cur;
	}
}

void odb_kcsan_release(struct odb_kernel *k, const void *obj)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me;

	if (!S || !k->kcsan || !(me = cur_stask(k)))
		return;
	pthread_mutex_lock(&S->mu);
	kcsan_release(S, me, obj);
	pthread_mutex_unlock(&S->mu);
}

void odb_kcsan_acquire(struct odb_kernel *k, const void *obj)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me;

	if (!S || !k->kcsan || !(me = cur_stask(k)))
		return;
	pthread_mutex_lock(&S->mu);
	kcsan_acquire(S, me, obj);
	pthread_mutex_unlock(&S->mu);
}

/* ---- switching ------------------------------------------------------------------------ */
static bool wait_over(struct odb_stask *st)
{
	if (st->wait == WAIT_LOCK)
		return lock_free(st->wait_kind, st->wait_obj);
	return st->wait_pred(st->wait_arg);
}

static void sched_deadlock(struct odb_sched *S);

static void record_event(struct odb_sched *S, struct odb_stask *me, uint32_t site, unsigned int flags)
{
	struct odb_sched_event *e;

	if (!S->record)
		return;
	if (S->nev == S->ev_cap) {
		size_t ncap = S->ev_cap ? S->ev_cap * 2 : 1024;
		struct odb_sched_event *ne = realloc(S->ev, ncap * sizeof(*ne));

		if (!ne) {
			S->record = false;
			return;
		}
		S->ev = ne;
		S->ev_cap = ncap;
	}
	e = &S->ev[S->nev++];
	e->task = (uint16_t)me->id;
	e->cpu = (int16_t)(me->cpu < 0 ? 0 : me->cpu);
	e->site = site;
	e->next = (uint16_t)me->id;
	e->flags = (uint16_t)flags;
}

/* A point passed by me at site (S->mu held): counted and hashed. */
static uint32_t sched_account(struct odb_sched *S, struct odb_stask *me, const struct odb_sched_site *site)
{
	uint32_t id = site_id(S, site);
	uint64_t h = id == UINT32_MAX ? 0 : S->sites[id].hash;
	uint32_t tid = (uint32_t)me->id;

	S->points++;
	atomic_fetch_add_explicit(&S->clock, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&S->progress, 1, memory_order_relaxed);
	S->run_hash = fnv64(fnv64(S->run_hash, &h, sizeof(h)), &tid, sizeof(tid));
	S->total_hash = fnv64(fnv64(S->total_hash, &h, sizeof(h)), &tid, sizeof(tid));
	me->last_site = site;
	return id;
}

static bool push_choice(struct odb_sched *S, int id)
{
	if (S->nchoices == S->choices_cap) {
		size_t ncap = S->choices_cap ? S->choices_cap * 2 : 256;
		uint16_t *nc = realloc(S->choices, ncap * sizeof(*nc));

		if (!nc)
			return false;
		S->choices = nc;
		S->choices_cap = ncap;
	}
	S->choices[S->nchoices++] = (uint16_t)id;
	return true;
}

/* Note a choice that was not the default, in odb_sched_preemptions' terms. */
static void push_pair(struct odb_sched *S, const struct decision *d, int chosen)
{
	int skip = default_choice(d);
	uint32_t who = 0;

	if (chosen == skip)
		return;
	for (unsigned int i = 0; i < d->n && d->R[i] != chosen; i++)
		if (d->R[i] != skip)
			who++;
	if (S->npairs == S->pairs_cap) {
		size_t ncap = S->pairs_cap ? S->pairs_cap * 2 : 64;
		uint64_t *ng = realloc(S->gaps, ncap * sizeof(*ng));
		uint32_t *nw;

		if (!ng)
			return;
		S->gaps = ng;
		nw = realloc(S->whos, ncap * sizeof(*nw));
		if (!nw)
			return;
		S->whos = nw;
		S->pairs_cap = ncap;
	}
	S->gaps[S->npairs] = d->index - S->last_pair;
	S->whos[S->npairs++] = who;
	S->last_pair = d->index + 1;
}

/* Who goes on after me (NULL: the run starts), S->mu held.  Sets S->running
 * and wakes it; on a deadlock or the end of the run S->running is NULL. */
static void sched_pick(struct odb_sched *S, struct odb_stask *me)
{
	int R[ODB_SCHED_MAX_TASKS], chosen;
	unsigned int n = 0;
	struct odb_stask *next;
	bool cur_runnable = me && me->state == TS_READY;

	for (unsigned int i = 0; i < S->ntasks; i++) {
		struct odb_stask *st = S->tasks[i];

		if (st->state == TS_BLOCKED && wait_over(st))
			st->state = TS_READY;
		if (st->state == TS_READY)
			R[n++] = st->id;
	}
	if (!n) {
		S->running = NULL;
		if (S->live) {
			sched_deadlock(S);
			return;
		}
		S->active = false;
		pthread_cond_signal(&S->ctl_cv);
		pthread_cond_broadcast(&S->gate_cv);
		return;
	}
	if (n == 1) {
		chosen = R[0];
	} else {
		struct decision d = { .index = S->decisions, .cur = me ? me->id : -1,
				      .cur_runnable = cur_runnable, .R = R, .n = n };
		uint64_t c;

		chosen = strat_choose(S->strat, &d);
		push_pair(S, &d, chosen);
		S->decisions++;
		push_choice(S, chosen);
		c = (uint64_t)chosen;
		S->run_hash = fnv64(S->run_hash, &c, sizeof(c));
		S->total_hash = fnv64(S->total_hash, &c, sizeof(c));
		if (cur_runnable && chosen != me->id)
			S->preemptions++;
		if (S->record && me && S->nev && S->ev[S->nev - 1].task == me->id) {
			S->ev[S->nev - 1].flags |= ODB_SCHED_EV_DECISION;
			if (cur_runnable && chosen != me->id)
				S->ev[S->nev - 1].flags |= ODB_SCHED_EV_PREEMPT;
		}
	}
	if (S->record && me && S->nev && S->ev[S->nev - 1].task == me->id)
		S->ev[S->nev - 1].next = (uint16_t)chosen;
	next = S->tasks[chosen];
	if (next != me)
		S->switches++;
	S->running = next;
	if (next != me)
		pthread_cond_signal(&next->cv);
}

/* A task of a wedged run: it never runs again. */
static __attribute__((noreturn)) void sched_park(struct odb_sched *S, struct odb_stask *me)
{
	void *cookie = NULL;

	if (S->before)
		S->before(S->hook_ctx, &cookie);
	for (;;)
		pthread_cond_wait(&me->cv, &S->mu);
}

/* Wait until it is me's turn: called and returns with S->mu held.  The hooks
 * run around the wait, the after hook without S->mu (it may wait for an
 * interpreter lock that a thread at the gate gives up only under S->mu). */
static void sched_wait_turn(struct odb_sched *S, struct odb_stask *me)
{
	void *cookie = NULL;

	if (S->running == me)
		return;
	if (S->before)
		S->before(S->hook_ctx, &cookie);
	while (S->running != me)
		pthread_cond_wait(&me->cv, &S->mu);
	if (cookie && S->after) {
		pthread_mutex_unlock(&S->mu);
		S->after(S->hook_ctx, cookie);
		pthread_mutex_lock(&S->mu);
	}
}

/* The calling thread's task when it is one of a run's (S->mu not held); NULL:
 * plain operations.  A task of a wedged run parks. */
static struct odb_stask *managed(struct odb_kernel *k)
{
	struct odb_stask *me = cur_stask(k);
	struct odb_sched *S = k->sched;

	if (!me)
		return NULL;
	pthread_mutex_lock(&S->mu);
	if (!S->active)
		sched_park(S, me);
	return me;   /* S->mu held */
}

static void point_locked(struct odb_sched *S, struct odb_stask *me, const struct odb_sched_site *site)
{
	uint32_t id = sched_account(S, me, site);

	record_event(S, me, id, 0);
	sched_pick(S, me);
	sched_wait_turn(S, me);
}

void odb_sched_point_slow(struct odb_kernel *k, const struct odb_sched_site *site, const void *obj)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me = managed(k);

	(void)obj;
	if (!me)
		return;
	point_locked(S, me, site);
	pthread_mutex_unlock(&S->mu);
}

void odb_sched_access(struct odb_kernel *k, const struct odb_sched_site *site, const void *addr,
		      unsigned int size, bool write, bool marked, bool point)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me = cur_stask(k);
	uint32_t stack = 0;

	if (!me)
		return;
	if (k->kcsan)
		stack = stack_depot_save_current(k, 1);
	if (!(me = managed(k)))
		return;
	if (k->kcsan)
		kcsan_check(S, me, site, addr, size, write, marked, stack);
	if (point)
		point_locked(S, me, site);
	pthread_mutex_unlock(&S->mu);
}

/* Block me until wait_over (S->mu held; returns with it held, me running). */
static void block_locked(struct odb_sched *S, struct odb_stask *me, const struct odb_sched_site *site)
{
	uint32_t id = site_id(S, site);

	me->state = TS_BLOCKED;
	me->wait_site = site;
	record_event(S, me, id, ODB_SCHED_EV_BLOCK);
	sched_pick(S, me);
	sched_wait_turn(S, me);
	me->wait = 0;
}

static void held_push(struct odb_stask *me, const void *lock, const struct odb_sched_site *site, int kind)
{
	if (me->nheld < MAX_HELD)
		me->held[me->nheld] = (struct held_lock){ lock, site, kind };
	me->nheld++;
}

static void held_pop(struct odb_stask *me, const void *lock)
{
	unsigned int n = me->nheld < MAX_HELD ? me->nheld : MAX_HELD;

	for (unsigned int i = n; i-- > 0;)
		if (me->held[i].lock == lock) {
			memmove(&me->held[i], &me->held[i + 1], (n - i - 1) * sizeof(me->held[0]));
			me->nheld--;
			return;
		}
	if (me->nheld > MAX_HELD)
		me->nheld--;
}

void odb_sched_acquire(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me = managed(k);

	if (!me) {
		lock_plain(kind, lock);
		return;
	}
	point_locked(S, me, site);        /* another task may go first */
	while (!lock_try(kind, lock)) {
		uint32_t stack;

		pthread_mutex_unlock(&S->mu);
		stack = stack_depot_save_current(k, 1);
		pthread_mutex_lock(&S->mu);
		me->wait = WAIT_LOCK;
		me->wait_kind = kind;
		me->wait_obj = lock;
		me->wait_stack = stack;
		block_locked(S, me, site);
	}
	held_push(me, lock, site, kind);
	kcsan_acquire(S, me, lock);
	pthread_mutex_unlock(&S->mu);
}

bool odb_sched_tryacquire(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me = managed(k);
	bool ok;

	if (!me)
		return lock_try(kind, lock);
	point_locked(S, me, site);
	ok = lock_try(kind, lock);
	if (ok) {
		held_push(me, lock, site, kind);
		kcsan_acquire(S, me, lock);
	}
	pthread_mutex_unlock(&S->mu);
	return ok;
}

void odb_sched_release(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me = managed(k);

	if (!me) {
		unlock_plain(kind, lock);
		return;
	}
	kcsan_release(S, me, lock);
	unlock_plain(kind, lock);
	held_pop(me, lock);
	point_locked(S, me, site);
	pthread_mutex_unlock(&S->mu);
}

/* Wait until pred(arg) (a condition another task makes true): false when the
 * caller is not a task of a run (then it waits its own way). */
bool odb_sched_wait(struct odb_kernel *k, const struct odb_sched_site *site, bool (*pred)(void *),
		    void *arg)
{
	struct odb_sched *S = k->sched;
	struct odb_stask *me;

	if (!S || !(me = managed(k)))
		return false;
	point_locked(S, me, site);
	while (!pred(arg)) {
		uint32_t stack;

		pthread_mutex_unlock(&S->mu);
		stack = stack_depot_save_current(k, 1);
		pthread_mutex_lock(&S->mu);
		me->wait = WAIT_PRED;
		me->wait_pred = pred;
		me->wait_arg = arg;
		me->wait_stack = stack;
		block_locked(S, me, site);
	}
	kcsan_acquire(S, me, arg);        /* what made pred true happened before */
	pthread_mutex_unlock(&S->mu);
	return true;
}

/* ---- deadlock and stall reports ------------------------------------------------------------ */
static const char *base_name(const char *f)
{
	const char *b = strrchr(f, '/');

	return b ? b + 1 : f;
}

/* The number of a lock in the report: its first appearance (held or awaited). */
static unsigned int lock_no(const void **seen, unsigned int *n, const void *lock)
{
	for (unsigned int i = 0; i < *n; i++)
		if (seen[i] == lock)
			return i + 1;
	if (*n < 4 * MAX_HELD * 2)
		seen[(*n)++] = lock;
	return *n;
}

static struct odb_stask *holder_of(struct odb_sched *S, const void *lock)
{
	for (unsigned int i = 0; i < S->ntasks; i++) {
		struct odb_stask *st = S->tasks[i];
		unsigned int n = st->nheld < MAX_HELD ? st->nheld : MAX_HELD;

		for (unsigned int j = 0; j < n; j++)
			if (st->held[j].lock == lock)
				return st;
	}
	return NULL;
}

static void report_task(struct odb_sched *S, struct odb_report_impl *r, struct odb_stask *st,
			const void **seen, unsigned int *nseen)
{
	unsigned int n = st->nheld < MAX_HELD ? st->nheld : MAX_HELD;

	if (st->state == TS_BLOCKED) {
		const struct odb_sched_site *w = st->wait_site;

		if (st->wait == WAIT_LOCK) {
			struct odb_stask *h = holder_of(S, st->wait_obj);
			unsigned int no = lock_no(seen, nseen, st->wait_obj);

			if (h)
				report_line(r, "task %d (pid %d, %s, cpu %d) waits in %s at %s:%u for lock #%u, held by task %d",
					    st->id, st->pid, st->name, st->cpu < 0 ? 0 : st->cpu, w->what,
					    base_name(w->file), w->line, no, h->id);
			else
				report_line(r, "task %d (pid %d, %s, cpu %d) waits in %s at %s:%u for lock #%u, held by no task",
					    st->id, st->pid, st->name, st->cpu < 0 ? 0 : st->cpu, w->what,
					    base_name(w->file), w->line, no);
		} else {
			report_line(r, "task %d (pid %d, %s, cpu %d) waits in %s at %s:%u",
				    st->id, st->pid, st->name, st->cpu < 0 ? 0 : st->cpu, w->what,
				    base_name(w->file), w->line);
		}
	} else {
		const struct odb_sched_site *w = st->last_site;

		report_line(r, "task %d (pid %d, %s, cpu %d) %s %s%s%s%s", st->id, st->pid, st->name,
			    st->cpu < 0 ? 0 : st->cpu, st->state == TS_DONE ? "returned" : "ran last at",
			    w && st->state != TS_DONE ? w->what : "", w && st->state != TS_DONE ? " (" : "",
			    w && st->state != TS_DONE ? base_name(w->file) : "",
			    w && st->state != TS_DONE ? ")" : "");
	}
	if (n) {
		report_line(r, " locks held:");
		for (unsigned int j = 0; j < n; j++)
			report_line(r, "  #%u: %s at %s:%u", lock_no(seen, nseen, st->held[j].lock),
				    st->held[j].site->what, base_name(st->held[j].site->file),
				    st->held[j].site->line);
	}
	if (st->state == TS_BLOCKED && st->wait_stack) {
		report_line(r, " stack:");
		stack_depot_print_to(S->k, st->wait_stack, r);
	}
}

/* The run is over without its tasks: report, wake the controller, close k.
 * S->mu held. */
static void sched_wedge(struct odb_sched *S, int status, const char *kind, const char *title)
{
	struct odb_report_impl *r = report_new(S->k, "sched", kind);
	const void *seen[4 * MAX_HELD * 2];
	unsigned int nseen = 0;

	S->status = status;
	S->active = false;
	S->wedged = true;
	S->running = NULL;
	if (r) {
		report_line(r, "======================================================");
		report_line(r, "WARNING: %s", title);
		report_line(r, "------------------------------------------------------");
		for (unsigned int i = 0; i < S->ntasks; i++)
			report_task(S, r, S->tasks[i], seen, &nseen);
		report_line(r, "schedule: %llu decisions, %llu preemptions (the run's schedule text "
			    "replays it)", (unsigned long long)S->decisions,
			    (unsigned long long)S->preemptions);
		report_line(r, "======================================================");
		report_publish(S->k, r);
	}
	pthread_cond_signal(&S->ctl_cv);
	pthread_cond_broadcast(&S->gate_cv);
}

static void sched_deadlock(struct odb_sched *S)
{
	char title[128];

	snprintf(title, sizeof(title), "odebug: deadlock: none of %u tasks can run", S->live);
	sched_wedge(S, ODB_SCHED_DEADLOCK, "deadlock", title);
}

/* ---- tasks ------------------------------------------------------------------------------------ */
static void *task_main(void *arg)
{
	struct odb_stask *me = arg;
	struct odb_sched *S = me->S;
	struct odb_kernel *k = S->k;
	struct odb_task *t;

	pthread_mutex_lock(&S->mu);
	while (S->running != me)
		pthread_cond_wait(&me->cv, &S->mu);
	pthread_mutex_unlock(&S->mu);
	t = odb_task_adopt(k, me->pid, me->name);
	if (t) {
		t->st = me;
		task_bind_cpu(k, t, me->cpu, NULL);
		me->fn(k, me->arg);
	}
	pthread_mutex_lock(&S->mu);
	me->state = TS_DONE;
	S->live--;
	{
		uint32_t id = sched_account(S, me, ODB_SITE(ODB_SP_MARK, "task end"));

		record_event(S, me, id, ODB_SCHED_EV_END);
	}
	sched_pick(S, me);
	pthread_mutex_unlock(&S->mu);
	return NULL;
}

int odb_sched_spawn(odb_kernel *k, odb_task_fn fn, void *arg, int cpu, const char *name)
{
	struct odb_sched *S = k->sched;
	struct odb_task *t = odb_enter(k);
	struct odb_stask *st;
	int id;

	if (!t)
		return odb_enter_failed(k);
	if (!S)
		return odb_leave(t, odb_err(k, ODB_ESTATE, "spawn: the kernel was not booted with "
					    "odebug.sched=controlled"));
	if (!fn)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "spawn: no function"));
	if (cpu < -1 || cpu >= (int)k->nr_cpu_ids)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "spawn: cpu %d out of range (kernel has %u vCPUs)",
					    cpu, k->nr_cpu_ids));
	st = calloc(1, sizeof(*st));
	if (!st)
		return odb_leave(t, ODB_ENOMEM);
	st->S = S;
	st->fn = fn;
	st->arg = arg;
	st->cpu = cpu;
	st->state = TS_READY;
	pthread_cond_init(&st->cv, NULL);
	pthread_mutex_lock(&S->mu);
	if (S->ntasks >= ODB_SCHED_MAX_TASKS || (S->active && !t->st)) {
		pthread_mutex_unlock(&S->mu);
		pthread_cond_destroy(&st->cv);
		free(st);
		return odb_leave(t, odb_err(k, S->active ? ODB_EBUSY : ODB_EINVAL,
					    S->active ? "spawn: a run is in progress" :
					    "spawn: at most %d tasks in a run", ODB_SCHED_MAX_TASKS));
	}
	id = st->id = (int)S->ntasks;
	st->pid = odb_next_pid(k);
	if (name && *name)
		snprintf(st->name, sizeof(st->name), "%s", name);
	else
		snprintf(st->name, sizeof(st->name), "task%d", st->pid);
	S->tasks[S->ntasks++] = st;
	if (S->active) {
		/* spawned by a task: it joins the run at once, after what its parent did */
		if (t->st) {
			memcpy(st->vc, t->st->vc, sizeof(st->vc));
			t->st->vc[t->st->id]++;
		}
		st->vc[id] = 1;
		S->live++;
		if (pthread_create(&st->th, NULL, task_main, st) != 0) {
			S->ntasks--;
			S->live--;
			pthread_mutex_unlock(&S->mu);
			pthread_cond_destroy(&st->cv);
			free(st);
			return odb_leave(t, odb_err(k, ODB_ENOMEM, "spawn: cannot start a thread"));
		}
		st->thread_started = true;
	}
	pthread_mutex_unlock(&S->mu);
	return odb_leave(t, id);
}

/* ---- runs --------------------------------------------------------------------------------------- */
static char *schedule_text(struct odb_sched *S)
{
	size_t cap = 64 + S->nchoices * 12, n = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	n += (size_t)snprintf(s + n, cap - n, "v1:");
	for (size_t i = 0; i < S->nchoices;) {
		size_t j = i;

		while (j < S->nchoices && S->choices[j] == S->choices[i])
			j++;
		if (j - i > 1)
			n += (size_t)snprintf(s + n, cap - n, "%s%u*%zu", i ? "," : "", S->choices[i], j - i);
		else
			n += (size_t)snprintf(s + n, cap - n, "%s%u", i ? "," : "", S->choices[i]);
		i = j;
	}
	snprintf(s + n, cap - n, ";h=%016llx", (unsigned long long)S->run_hash);
	return s;
}

static void free_tasks(struct odb_sched *S)
{
	for (unsigned int i = 0; i < S->ntasks; i++) {
		pthread_cond_destroy(&S->tasks[i]->cv);
		free(S->tasks[i]);
		S->tasks[i] = NULL;
	}
	S->ntasks = 0;
}

int odb_sched_run(odb_kernel *k, odb_sched_strategy *strat, const struct odb_sched_run_opts *opts,
		  struct odb_sched_result *out)
{
	struct odb_sched *S = k->sched;
	struct odb_task *t = odb_enter(k);
	unsigned int timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	uint64_t last, last_change;
	unsigned int started = 0;
	int ret = ODB_OK;

	memset(out, 0, sizeof(*out));
	out->diverged_at = -1;
	if (!t)
		return odb_enter_failed(k);
	if (!S)
		return odb_leave(t, odb_err(k, ODB_ESTATE, "run: the kernel was not booted with "
					    "odebug.sched=controlled"));
	if (t->st)
		return odb_leave(t, odb_err(k, ODB_ESTATE, "run: called from a task of the run"));
	pthread_mutex_lock(&S->mu);
	if (S->active || S->wedged) {
		pthread_mutex_unlock(&S->mu);
		return odb_leave(t, odb_err(k, ODB_EBUSY, "run: a run is in progress"));
	}
	if (!S->ntasks) {
		pthread_mutex_unlock(&S->mu);
		return odb_leave(t, odb_err(k, ODB_EINVAL, "run: no task to run (spawn some first)"));
	}
	if (!strat) {
		if (!S->own_strat)
			S->own_strat = odb_sched_random(k->seed);
		strat = S->own_strat;
		if (!strat) {
			pthread_mutex_unlock(&S->mu);
			return odb_leave(t, ODB_ENOMEM);
		}
	}
	S->strat = strat;
	strat_begin(strat);
	S->nchoices = 0;
	S->npairs = 0;
	S->last_pair = 0;
	S->points = S->decisions = S->preemptions = S->switches = 0;
	S->run_hash = FNV0;
	S->record = opts && opts->record;
	S->nev = 0;
	S->status = ODB_SCHED_DONE;
	S->live = S->ntasks;
	S->nclocks = S->nvars = S->nreported = 0;
	for (unsigned int i = 0; i < S->ntasks; i++) {
		memset(S->tasks[i]->vc, 0, sizeof(S->tasks[i]->vc));
		S->tasks[i]->vc[i] = 1;
	}
	S->active = true;
	for (unsigned int i = 0; i < S->ntasks; i++) {
		if (pthread_create(&S->tasks[i]->th, NULL, task_main, S->tasks[i]) != 0)
			break;
		S->tasks[i]->thread_started = true;
		started++;
	}
	if (started < S->ntasks) {
		/* cannot start them all: nobody has run yet; tell the started ones to
		 * run nothing by making them... not started at all is simplest: */
		ret = odb_err(k, ODB_ENOMEM, "run: cannot start %u threads", S->ntasks);
		for (unsigned int i = 0; i < S->ntasks; i++)
			S->tasks[i]->fn = NULL;
	}
	sched_pick(S, NULL);
	last = atomic_load_explicit(&S->progress, memory_order_relaxed);
	last_change = odb_host_ns();
	while (S->active) {
		struct timespec ts;
		uint64_t now;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&S->ctl_cv, &S->mu, &ts);
		if (!S->active)
			break;
		now = atomic_load_explicit(&S->progress, memory_order_relaxed);
		if (now != last) {
			last = now;
			last_change = odb_host_ns();
			continue;
		}
		if (odb_host_ns() - last_change >= (uint64_t)timeout_ms * 1000000ull) {
			char title[192];
			struct odb_stask *r = S->running;

			snprintf(title, sizeof(title), "odebug: stall: task %d reached no scheduling point "
				 "for %u ms (it waits outside odebug's control?)", r ? r->id : -1, timeout_ms);
			sched_wedge(S, ODB_SCHED_STALL, "stall", title);
		}
	}
	strat_end(strat, S->choices, S->nchoices);
	out->status = S->status;
	out->tasks = S->ntasks;
	out->points = S->points;
	out->decisions = S->decisions;
	out->preemptions = S->preemptions;
	out->switches = S->switches;
	out->trace_hash = S->run_hash;
	out->schedule = schedule_text(S);
	out->diverged_at = strat->diverged_at;
	snprintf(out->divergence, sizeof(out->divergence), "%s", strat->why);
	if (strat->kind == STRAT_REPLAY && strat->has_hash && strat->diverged_at < 0 &&
	    strat->pos == strat->nchoices && strat->want_hash != S->run_hash)
		snprintf(out->divergence, sizeof(out->divergence),
			 "every choice fitted, but the run's trace differs from the recorded one "
			 "(trace hash %016llx, recorded %016llx): the code changed?",
			 (unsigned long long)S->run_hash, (unsigned long long)strat->want_hash);
	if (S->npairs) {
		out->gaps = malloc(S->npairs * sizeof(*out->gaps));
		out->whos = malloc(S->npairs * sizeof(*out->whos));
		if (out->gaps && out->whos) {
			memcpy(out->gaps, S->gaps, S->npairs * sizeof(*out->gaps));
			memcpy(out->whos, S->whos, S->npairs * sizeof(*out->whos));
			out->npairs = S->npairs;
		}
	}
	if (S->record) {
		out->events = S->ev;
		out->nevents = S->nev;
		S->ev = NULL;
		S->nev = S->ev_cap = 0;
	}
	if (S->wedged) {
		/* the stuck tasks keep their threads and structures (never freed) */
		for (unsigned int i = 0; i < S->ntasks; i++)
			if (S->tasks[i]->thread_started)
				pthread_detach(S->tasks[i]->th);
		pthread_mutex_unlock(&S->mu);
		odb_kernel_close(k);
		return odb_leave(t, ret);
	}
	pthread_mutex_unlock(&S->mu);
	for (unsigned int i = 0; i < S->ntasks; i++)
		if (S->tasks[i]->thread_started)
			pthread_join(S->tasks[i]->th, NULL);
	pthread_mutex_lock(&S->mu);
	free_tasks(S);
	pthread_mutex_unlock(&S->mu);
	return odb_leave(t, ret);
}

uint64_t odb_sched_trace_hash(odb_kernel *k)
{
	struct odb_sched *S = k->sched;
	uint64_t h;

	if (!S)
		return 0;
	pthread_mutex_lock(&S->mu);
	h = S->total_hash;
	pthread_mutex_unlock(&S->mu);
	return h;
}

void odb_sched_set_hooks(odb_kernel *k, void (*before)(void *ctx, void **cookie),
			 void (*after)(void *ctx, void *cookie), void *ctx)
{
	struct odb_sched *S = k->sched;

	/* the same hooks around the waits of a free kernel's callers (mempool_alloc) */
	k->wait_before = before;
	k->wait_after = after;
	k->wait_hook_ctx = ctx;
	if (!S)
		return;
	pthread_mutex_lock(&S->mu);
	S->before = before;
	S->after = after;
	S->hook_ctx = ctx;
	pthread_mutex_unlock(&S->mu);
}

bool odb_sched_gate(struct odb_kernel *k)
{
	struct odb_sched *S = k->sched;
	void *cookie = NULL;
	bool ok;

	pthread_mutex_lock(&S->mu);
	if (S->active) {
		if (S->before)
			S->before(S->hook_ctx, &cookie);
		while (S->active)
			pthread_cond_wait(&S->gate_cv, &S->mu);
	}
	ok = !S->wedged;
	pthread_mutex_unlock(&S->mu);
	if (cookie && S->after)
		S->after(S->hook_ctx, cookie);
	return ok;
}

/* ---- boot and shutdown ---------------------------------------------------------------------- */
int odb_sched_init(struct odb_kernel *k, char *errbuf, size_t errlen)
{
	struct odb_sched *S;
	pthread_condattr_t ca;

	if (k->clock != ODB_CLOCK_VIRTUAL) {
		snprintf(errbuf, errlen, "odebug.sched=controlled needs the virtual clock (clock='virtual')");
		return ODB_EINVAL;
	}
	S = calloc(1, sizeof(*S));
	if (!S)
		return ODB_ENOMEM;
	S->k = k;
	pthread_mutex_init(&S->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* the watchdog's timed waits */
	pthread_cond_init(&S->ctl_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&S->gate_cv, NULL);
	S->total_hash = FNV0;
	k->sched = S;
	return ODB_OK;
}

bool odb_sched_wedged(struct odb_kernel *k)
{
	struct odb_sched *S = k->sched;
	bool w;

	pthread_mutex_lock(&S->mu);
	w = S->wedged;
	pthread_mutex_unlock(&S->mu);
	return w;
}

void odb_sched_exit(struct odb_kernel *k)
{
	struct odb_sched *S = k->sched;

	if (!S)
		return;
	free_tasks(S);     /* spawned, never run */
	free(S->clocks);
	free(S->vars);
	free(S->reported);
	free(S->choices);
	free(S->gaps);
	free(S->whos);
	free(S->ev);
	free(S->sites);
	free(S->site_index);
	odb_sched_strategy_free(S->own_strat);
	pthread_cond_destroy(&S->ctl_cv);
	pthread_cond_destroy(&S->gate_cv);
	pthread_mutex_destroy(&S->mu);
	free(S);
	k->sched = NULL;
}
