/*
 * C unit tests of the controlled scheduler (csrc/kernel/sched.c): points and
 * preemption, blocked tasks, the strategies (exhaustive counts of dfs, replay
 * and divergence, determinism), deadlock and stall detection, the gate for
 * threads outside a run.  Built with the core by tests/test_c_units.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "tests/check.h"

static odb_kernel *boot(unsigned cpus)
{
	return odb_test_boot("odebug.sched=controlled kasan=off no_debug_objects",
			     ODB_CLOCK_VIRTUAL, cpus, 16 << 20, 7);
}

/* ---- a counter bumped with a point between the read and the write -------------------- */
struct counter {
	spinlock_t lock;
	long value;
	int rounds;
	bool locked;
	uint64_t trace[64];          /* who bumped, in order */
	int ntrace;
};

static void bump(odb_kernel *k, void *arg)
{
	struct counter *c = arg;

	for (int i = 0; i < c->rounds; i++) {
		long v;

		if (c->locked)
			spin_lock(k, &c->lock);
		v = c->value;
		odb_sched_point(k, "between read and write");
		c->value = v + 1;
		if (c->ntrace < 64)
			c->trace[c->ntrace++] = (uint64_t)odb_current_pid(k);
		if (c->locked)
			spin_unlock(k, &c->lock);
	}
}

static int run_counter(odb_sched_strategy *s, bool locked, int rounds, long *value, char **sched_text,
		       uint64_t *hash)
{
	odb_kernel *k = boot(2);
	struct counter c = { .rounds = rounds, .locked = locked };
	struct odb_sched_result r;
	int ret;

	if (!k)
		return -1;
	spin_lock_init(&c.lock);
	odb_sched_spawn(k, bump, &c, 0, "a");
	odb_sched_spawn(k, bump, &c, 1, "b");
	ret = odb_sched_run(k, s, NULL, &r);
	*value = c.value;
	if (sched_text)
		*sched_text = r.schedule;
	else
		free(r.schedule);
	if (hash)
		*hash = r.trace_hash;
	free(r.gaps);
	free(r.whos);
	odb_kernel_destroy(k);
	return ret ? ret : r.status;
}

static void test_lost_update_found_and_lock_protects(void)
{
	odb_sched_strategy *s = odb_sched_dfs(1);
	long v;
	int lost = 0, runs = 0;

	/* without the lock, a preemption between read and write loses an update */
	do {
		CHECK_EQ(run_counter(s, false, 2, &v, NULL, NULL), ODB_SCHED_DONE);
		lost += v != 4;
		runs++;
	} while (odb_sched_strategy_next(s) && runs < 1000);
	CHECK(lost > 0);
	odb_sched_strategy_free(s);

	/* with it, never, under any schedule of dfs(2) */
	s = odb_sched_dfs(2);
	lost = 0;
	runs = 0;
	do {
		CHECK_EQ(run_counter(s, true, 2, &v, NULL, NULL), ODB_SCHED_DONE);
		lost += v != 4;
		runs++;
	} while (odb_sched_strategy_next(s) && runs < 5000);
	CHECK_EQ(lost, 0);
	CHECK(runs > 10);
	{
		struct odb_sched_strategy_info i;

		odb_sched_strategy_info(s, &i);
		CHECK(i.exhausted);
		CHECK_EQ(i.bound, 2);
	}
	odb_sched_strategy_free(s);
}

/* ---- dfs counts: two tasks of m explicit points each ------------------------------------ */
static void m_points(odb_kernel *k, void *arg)
{
	int m = *(int *)arg;

	for (int i = 0; i < m; i++)
		odb_sched_point(k, "step");
}

static uint64_t dfs_distinct(int m, unsigned int bound, uint64_t *runs_out)
{
	odb_sched_strategy *s = odb_sched_dfs(bound);
	struct odb_sched_strategy_info i;
	uint64_t runs = 0;

	do {
		odb_kernel *k = boot(2);
		struct odb_sched_result r;

		odb_sched_spawn(k, m_points, &m, 0, NULL);
		odb_sched_spawn(k, m_points, &m, 1, NULL);
		CHECK_EQ(odb_sched_run(k, s, NULL, &r), ODB_OK);
		CHECK(r.preemptions <= bound);
		free(r.schedule);
		free(r.gaps);
		free(r.whos);
		odb_kernel_destroy(k);
		runs++;
	} while (odb_sched_strategy_next(s) && runs < 10000);
	odb_sched_strategy_info(s, &i);
	CHECK(i.exhausted);
	odb_sched_strategy_free(s);
	*runs_out = runs;
	return i.distinct;
}

static void test_dfs_counts(void)
{
	uint64_t runs;

	/* who starts (2), then: no preemption; one, at any of the m points of the
	 * first task; two, at one of each task's m points: 2 (1 + m + m^2) */
	for (int m = 1; m <= 4; m++) {
		CHECK_EQ(dfs_distinct(m, 0, &runs), 2);
		CHECK_EQ(dfs_distinct(m, 1, &runs), 2 * (1 + m));
		CHECK_EQ(dfs_distinct(m, 2, &runs), 2 * (1 + m + m * m));
		/* iterative bounding ran the 0- and 1-preemption schedules again */
		CHECK_EQ(runs, 2 + 2 * (1 + m) + 2 * (1 + m + m * m));
	}
}

/* ---- replay: same text, same trace; a changed program diverges and says where -------------- */
static void test_replay(void)
{
	odb_sched_strategy *s = odb_sched_random(99), *r;
	char *text = NULL, *text2 = NULL, err[200];
	uint64_t h1 = 0, h2 = 0;
	long v1 = 0, v2 = 0;
	struct counter c = { .rounds = 3 };
	odb_kernel *k;
	struct odb_sched_result res;

	CHECK_EQ(run_counter(s, false, 3, &v1, &text, &h1), ODB_SCHED_DONE);
	r = odb_sched_replay(text, 5, err, sizeof(err));
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ(run_counter(r, false, 3, &v2, &text2, &h2), ODB_SCHED_DONE);
	CHECK_EQ(h1, h2);
	CHECK_EQ(v1, v2);
	CHECK(text2 && !strcmp(text, text2));
	free(text2);
	CHECK(!odb_sched_strategy_next(r));

	/* one round more per task: the text runs out -> random(5) from there, said so */
	k = boot(2);
	spin_lock_init(&c.lock);
	c.rounds = 4;
	odb_sched_spawn(k, bump, &c, 0, NULL);
	odb_sched_spawn(k, bump, &c, 1, NULL);
	CHECK_EQ(odb_sched_run(k, r, NULL, &res), ODB_OK);
	CHECK(res.diverged_at >= 0);
	CHECK(strstr(res.divergence, "ended at decision") != NULL);
	free(res.schedule);
	free(res.gaps);
	free(res.whos);
	odb_kernel_destroy(k);
	odb_sched_strategy_free(r);

	/* malformed texts are refused with a reason */
	CHECK(odb_sched_replay("v2:0", 0, err, sizeof(err)) == NULL && strstr(err, "v1:"));
	CHECK(odb_sched_replay("v1:0*x", 0, err, sizeof(err)) == NULL && strstr(err, "offset"));
	CHECK(odb_sched_replay("v1:99", 0, err, sizeof(err)) == NULL);
	CHECK(odb_sched_replay("v1:0;h=zz", 0, err, sizeof(err)) == NULL);
	free(text);
	odb_sched_strategy_free(s);
}

/* ---- preemptions(): the pairs of a run replay it ------------------------------------------------ */
static void test_preemption_pairs(void)
{
	odb_sched_strategy *s = odb_sched_random(3), *p;
	odb_kernel *k;
	struct counter c = { .rounds = 3 };
	struct odb_sched_result r1, r2;

	k = boot(2);
	spin_lock_init(&c.lock);
	odb_sched_spawn(k, bump, &c, 0, NULL);
	odb_sched_spawn(k, bump, &c, 1, NULL);
	CHECK_EQ(odb_sched_run(k, s, NULL, &r1), ODB_OK);
	odb_kernel_destroy(k);
	p = odb_sched_preemptions(r1.gaps, r1.whos, r1.npairs);
	memset(&c, 0, sizeof(c));
	c.rounds = 3;
	k = boot(2);
	spin_lock_init(&c.lock);
	odb_sched_spawn(k, bump, &c, 0, NULL);
	odb_sched_spawn(k, bump, &c, 1, NULL);
	CHECK_EQ(odb_sched_run(k, p, NULL, &r2), ODB_OK);
	CHECK_EQ(r1.trace_hash, r2.trace_hash);
	CHECK(!strcmp(r1.schedule, r2.schedule));
	CHECK_EQ(r1.npairs, r2.npairs);
	odb_kernel_destroy(k);
	free(r1.schedule);
	free(r2.schedule);
	free(r1.gaps);
	free(r1.whos);
	free(r2.gaps);
	free(r2.whos);
	odb_sched_strategy_free(p);
	odb_sched_strategy_free(s);
}

/* ---- a lock-order inversion: dfs finds the deadlock, reported with the locks ----------------- */
struct ab { spinlock_t a, b; };

static void take_ab(odb_kernel *k, void *arg)
{
	struct ab *x = arg;

	spin_lock(k, &x->a);
	spin_lock(k, &x->b);
	spin_unlock(k, &x->b);
	spin_unlock(k, &x->a);
}

static void take_ba(odb_kernel *k, void *arg)
{
	struct ab *x = arg;

	spin_lock(k, &x->b);
	spin_lock(k, &x->a);
	spin_unlock(k, &x->a);
	spin_unlock(k, &x->b);
}

static void test_deadlock(void)
{
	odb_sched_strategy *s = odb_sched_dfs(1);
	int runs = 0, done = 0, dead = 0;

	do {
		odb_kernel *k = boot(2);
		struct ab *x = calloc(1, sizeof(*x));   /* stuck tasks of a deadlock keep it */
		struct odb_sched_result r;

		spin_lock_init(&x->a);
		spin_lock_init(&x->b);
		odb_sched_spawn(k, take_ab, x, 0, "ab");
		odb_sched_spawn(k, take_ba, x, 1, "ba");
		CHECK_EQ(odb_sched_run(k, s, NULL, &r), ODB_OK);
		if (r.status == ODB_SCHED_DEADLOCK) {
			const struct odb_report *rep = odb_report_get(k, odb_report_count(k) - 1);

			dead++;
			CHECK(odb_kernel_closed(k));
			CHECK(rep && !strcmp(rep->kind, "deadlock") && !strcmp(rep->subsystem, "sched"));
			CHECK(rep && strstr(rep->text, "none of 2 tasks can run"));
			CHECK(rep && strstr(rep->text, "waits in spin_lock(&x->b)"));
			CHECK(rep && strstr(rep->text, "waits in spin_lock(&x->a)"));
			CHECK(rep && strstr(rep->text, "held by task 1"));
			CHECK(rep && strstr(rep->text, "locks held:\n  #2: spin_lock(&x->a) at test_sched.c"));
			odb_report_put(rep);
			{
				odb_addr_t a;
				CHECK_EQ(odb_kmalloc(k, 8, ODB_GFP_KERNEL, &a), ODB_ECLOSED);
			}
		} else {
			CHECK_EQ(r.status, ODB_SCHED_DONE);
			done++;
			free(x);
		}
		free(r.schedule);
		free(r.gaps);
		free(r.whos);
		odb_kernel_destroy(k);   /* a wedged kernel keeps what its stuck tasks use */
		runs++;
	} while (odb_sched_strategy_next(s) && runs < 200);
	CHECK(dead > 0);
	CHECK(done > 0);
	odb_sched_strategy_free(s);
}

/* ---- a task that waits for another outside the scheduler: a stall ---------------------------- */
static atomic_int flag, stop;

static void spin_on_flag(odb_kernel *k, void *arg)
{
	while (!atomic_load(&flag) && !atomic_load(&stop))
		sched_yield();
	odb_sched_point(k, "after the wait");
}

static void set_flag(odb_kernel *k, void *arg)
{
	odb_sched_point(k, "before the set");
	atomic_store(&flag, 1);
}

static void test_stall(void)
{
	odb_kernel *k = boot(2);
	odb_sched_strategy *s = odb_sched_dfs(0);   /* the spinner runs first */
	struct odb_sched_run_opts o = { .timeout_ms = 300 };
	struct odb_sched_result r;

	odb_sched_spawn(k, spin_on_flag, NULL, 0, "spinner");
	odb_sched_spawn(k, set_flag, NULL, 1, "setter");
	CHECK_EQ(odb_sched_run(k, s, &o, &r), ODB_OK);
	CHECK_EQ(r.status, ODB_SCHED_STALL);
	CHECK(odb_kernel_closed(k));
	{
		const struct odb_report *rep = odb_report_get(k, odb_report_count(k) - 1);
		CHECK(rep && !strcmp(rep->kind, "stall"));
		CHECK(rep && strstr(rep->text, "task 0 reached no scheduling point"));
		odb_report_put(rep);
	}
	atomic_store(&stop, 1);   /* the spinner reaches a point: it parks for good */
	usleep(50 * 1000);
	free(r.schedule);
	free(r.gaps);
	free(r.whos);
	odb_kernel_destroy(k);
	odb_sched_strategy_free(s);
}

/* ---- a thread outside the run waits at the gate until the run is over -------------------------- */
struct gate_arg { odb_kernel *k; atomic_int entered, in_run; };

static void long_task(odb_kernel *k, void *arg)
{
	struct gate_arg *g = arg;

	atomic_store(&g->in_run, 1);
	for (int i = 0; i < 200; i++) {
		odb_sched_point(k, "long task");
		if (i == 100)
			usleep(20 * 1000);
	}
	atomic_store(&g->in_run, 2);
}

static void *outsider(void *arg)
{
	struct gate_arg *g = arg;
	odb_addr_t a = 0;

	while (!atomic_load(&g->in_run))
		sched_yield();
	odb_kmalloc(g->k, 16, ODB_GFP_KERNEL, &a);     /* waits for the run's end */
	atomic_store(&g->entered, atomic_load(&g->in_run) == 2 ? 1 : -1);
	odb_kfree(g->k, a);
	return NULL;
}

static void test_gate(void)
{
	odb_kernel *k = boot(1);
	struct gate_arg g = { .k = k };
	struct odb_sched_result r;
	pthread_t th;

	odb_sched_spawn(k, long_task, &g, 0, "long");
	odb_sched_spawn(k, m_points, &(int){ 3 }, 0, "short");
	pthread_create(&th, NULL, outsider, &g);
	CHECK_EQ(odb_sched_run(k, NULL, NULL, &r), ODB_OK);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&g.entered), 1);
	CHECK_EQ(r.tasks, 2);
	free(r.schedule);
	free(r.gaps);
	free(r.whos);
	odb_kernel_destroy(k);
}

/* ---- argument and state errors; pids in spawn order; a free kernel refuses -------------------- */
static void pid_of(odb_kernel *k, void *arg)
{
	*(int *)arg = odb_current_pid(k) * 100 + odb_current_cpu(k);
}

static void test_errors_and_pids(void)
{
	odb_kernel *k = boot(2), *f = odb_test_boot("", ODB_CLOCK_VIRTUAL, 1, 8 << 20, 1);
	struct odb_sched_result r;
	int a = 0, b = 0;

	CHECK_EQ(odb_sched_run(k, NULL, NULL, &r), ODB_EINVAL);     /* nothing spawned */
	CHECK_EQ(odb_sched_spawn(k, NULL, NULL, 0, NULL), ODB_EINVAL);
	CHECK_EQ(odb_sched_spawn(k, pid_of, &a, 2, NULL), ODB_EINVAL);   /* cpu out of range */
	CHECK_EQ(odb_sched_spawn(f, pid_of, &a, 0, NULL), ODB_ESTATE);
	CHECK_EQ(odb_sched_run(f, NULL, NULL, &r), ODB_ESTATE);
	CHECK_EQ(odb_sched_spawn(k, pid_of, &a, 1, "first"), 0);
	CHECK_EQ(odb_sched_spawn(k, pid_of, &b, -1, "second"), 1);
	CHECK_EQ(odb_sched_run(k, NULL, NULL, &r), ODB_OK);
	free(r.schedule);
	free(r.gaps);
	free(r.whos);
	/* pids handed out at spawn, whatever order the threads start in */
	CHECK_EQ(a / 100 + 1, b / 100);
	CHECK_EQ(a % 100, 1);
	CHECK_EQ(b % 100, 0);
	odb_kernel_destroy(k);
	odb_kernel_destroy(f);
	{
		struct odb_config cfg;
		odb_kernel *bad = NULL;
		char err[256];

		odb_config_init(&cfg);
		cfg.cmdline = "odebug.sched=controlled";
		cfg.clock = ODB_CLOCK_REAL;
		CHECK_EQ(odb_kernel_create(&cfg, &bad, err, sizeof(err)), ODB_EINVAL);
		CHECK(strstr(err, "virtual clock") != NULL);
		cfg.cmdline = "odebug.sched=maybe";
		cfg.clock = ODB_CLOCK_VIRTUAL;
		CHECK_EQ(odb_kernel_create(&cfg, &bad, err, sizeof(err)), ODB_EINVAL);
		CHECK(strstr(err, "odebug.sched") != NULL);
	}
}

/* ---- pct: the same seed, the same schedules; depth 1 never preempts ------------------------- */
static void test_pct(void)
{
	for (unsigned int depth = 1; depth <= 3; depth++) {
		odb_sched_strategy *a = odb_sched_pct(11, depth, 0), *b = odb_sched_pct(11, depth, 0);

		for (int i = 0; i < 5; i++) {
			uint64_t ha, hb;
			long va, vb;

			run_counter(a, false, 3, &va, NULL, &ha);
			run_counter(b, false, 3, &vb, NULL, &hb);
			CHECK_EQ(ha, hb);
			if (depth == 1)
				CHECK_EQ(va, 6);   /* priorities only: one task runs to its end first */
			odb_sched_strategy_next(a);
			odb_sched_strategy_next(b);
		}
		odb_sched_strategy_free(a);
		odb_sched_strategy_free(b);
	}
	CHECK(odb_sched_pct(1, 0, 0) == NULL);
}

int main(void)
{
	test_lost_update_found_and_lock_protects();
	test_dfs_counts();
	test_replay();
	test_preemption_pairs();
	test_deadlock();
	test_stall();
	test_gate();
	test_errors_and_pids();
	test_pct();
	return odb_test_summary();
}
