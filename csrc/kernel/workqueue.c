/*
 * Delayed work on the kernel's clock.
 *
 * Items sit on one list sorted by (due time, queue order).  With the virtual
 * clock, odb_advance() moves time to each due item in turn and runs it in the
 * caller, bound to the vCPU that queued it; with the real clock a per-kernel
 * worker thread sleeps until the first item falls due.  Semantics are the
 * kernel's: queueing a pending item does nothing and returns false, a delay
 * of 0 queues immediately, cancel_delayed_work_sync waits for a running
 * callback, flush_delayed_work runs a pending item now and waits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernel/kernel.h"

void INIT_DELAYED_WORK(struct odb_work *w, odb_work_fn fn, void *arg)
{
	memset(w, 0, sizeof(*w));
	INIT_LIST_HEAD(&w->node);
	w->fn = fn;
	w->arg = arg;
}

/* Insert w (not pending) in due order.  wq_lock held. */
static void wq_insert(struct odb_kernel *k, struct odb_work *w)
{
	struct list_head *pos;

	w->seq = ++k->wq_seq;
	for (pos = k->wq_list.next; pos != &k->wq_list; pos = pos->next) {
		struct odb_work *o = list_entry(pos, struct odb_work, node);
		if (o->due_ns > w->due_ns)
			break;
	}
	__list_add(&w->node, pos->prev, pos);
	w->pending = true;
}

/* The time at which jiffies reaches (jiffies now + delay), as a timer armed
 * with expires = jiffies + delay fires; saturates ("never") on overflow. */
static uint64_t due_after(struct odb_kernel *k, uint64_t now, uint64_t delay)
{
	uint64_t rel = (uint64_t)((unsigned __int128)now * k->hz / NSEC_PER_SEC);
	unsigned __int128 n;

	if (!delay)
		return now;
	if (delay > UINT64_MAX - rel)
		return UINT64_MAX;
	n = ((unsigned __int128)(rel + delay) * NSEC_PER_SEC + k->hz - 1) / k->hz;
	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

static bool queue_at(struct odb_kernel *k, struct odb_work *w, uint64_t delay)
{
	bool queued = false;
	int cpu = smp_processor_id(k);

	if (unlikely(odb_sched_on(k)))
		odb_kcsan_release(k, w);   /* what the queuer did happens before the item runs */
	pthread_mutex_lock(&k->wq_lock);
	if (!w->pending) {
		w->due_ns = due_after(k, ktime_get_ns(k), delay);
		w->cpu = cpu;
		wq_insert(k, w);
		queued = true;
		pthread_cond_broadcast(&k->wq_cond);
	}
	pthread_mutex_unlock(&k->wq_lock);
	return queued;
}

bool schedule_work(struct odb_kernel *k, struct odb_work *w)
{
	return queue_at(k, w, 0);
}

bool schedule_delayed_work(struct odb_kernel *k, struct odb_work *w, uint64_t delay)
{
	return queue_at(k, w, delay);
}

/* Run w, which the caller took off the list; wq_lock held, dropped inside. */
static void run_work_locked(struct odb_kernel *k, struct odb_work *w)
{
	struct odb_task *t = odb_current(k);
	int saved_cpu = t ? t->cpu : -1, cpu = w->cpu;
	odb_work_fn fn = w->fn;
	void *arg = w->arg;

	/* everything read under wq_lock: the item may be queued again meanwhile */
	list_del(&w->node);
	w->pending = false;
	w->running = true;
	w->runner = t;
	pthread_mutex_unlock(&k->wq_lock);
	if (t) {
		task_set_cpu(k, t, cpu);
		t->in_work++;
	}
	if (unlikely(odb_sched_on(k))) {
		odb_sched_point_slow(k, ODB_SITE(ODB_SP_WORK, "work item start"), w);
		odb_kcsan_acquire(k, w);
	}
	fn(k, arg);
	if (t && unlikely(t->deferred) && t->depth == 0)
		odb_run_deferred(t);   /* a worker's: no API call returns to run them */
	if (t) {
		t->in_work--;
		task_set_cpu(k, t, saved_cpu);
	}
	pthread_mutex_lock(&k->wq_lock);
	w->running = false;
	w->runner = NULL;
	if (w->free_after_run)
		free(w);            /* odb_work_destroy from inside its own callback */
	pthread_cond_broadcast(&k->wq_cond);
}

struct running_wait { struct odb_work *w; struct odb_task *t; };

static bool work_stopped(void *arg)
{
	struct running_wait *x = arg;

	return !x->w->running || x->w->runner == x->t;
}

/* Wait (wq_lock held) for w to stop running in another task: a condition
 * variable, or under the controlled scheduler a wait it knows of. */
static void wait_work_stopped(struct odb_kernel *k, struct odb_work *w, struct odb_task *t)
{
	struct running_wait x = { w, t };

	if (unlikely(odb_sched_on(k)) && t && t->st) {
		pthread_mutex_unlock(&k->wq_lock);
		odb_sched_wait(k, ODB_SITE(ODB_SP_LOCK, "wait for a running work item"), work_stopped, &x);
		pthread_mutex_lock(&k->wq_lock);
		return;
	}
	pthread_cond_wait(&k->wq_cond, &k->wq_lock);
}

static void wait_not_running(struct odb_kernel *k, struct odb_work *w)
{
	struct odb_task *t = pthread_getspecific(k->task_key);

	while (w->running && w->runner != t)
		wait_work_stopped(k, w, t);
}

bool cancel_delayed_work_sync(struct odb_kernel *k, struct odb_work *w)
{
	bool was = false;

	pthread_mutex_lock(&k->wq_lock);
	if (w->pending) {
		list_del(&w->node);
		w->pending = false;
		was = true;
	}
	wait_not_running(k, w);
	pthread_mutex_unlock(&k->wq_lock);
	return was;
}

bool flush_delayed_work(struct odb_kernel *k, struct odb_work *w)
{
	bool waited = false;

	pthread_mutex_lock(&k->wq_lock);
	if (w->pending) {
		run_work_locked(k, w);
		waited = true;
	} else if (w->running) {
		struct odb_task *t = pthread_getspecific(k->task_key);
		waited = w->runner != t;
		wait_not_running(k, w);
	}
	pthread_mutex_unlock(&k->wq_lock);
	return waited;
}

/* ---- the real clock's worker --------------------------------------------------- */
static void *worker_main(void *arg)
{
	struct odb_kernel *k = arg;
	struct odb_task *t = odb_current(k);

	if (t)
		snprintf(t->comm, sizeof(t->comm), "kworker/0:1");
	pthread_mutex_lock(&k->wq_lock);
	while (!k->wq_stop) {
		struct odb_work *w;
		uint64_t now;

		if (list_empty(&k->wq_list)) {
			pthread_cond_wait(&k->wq_cond, &k->wq_lock);
			continue;
		}
		w = list_entry(k->wq_list.next, struct odb_work, node);
		if (w->running) {
			/* queued again while running: never run it concurrently with itself */
			pthread_cond_wait(&k->wq_cond, &k->wq_lock);
			continue;
		}
		now = ktime_get_ns(k);
		if (w->due_ns > now && w->due_ns > UINT64_MAX - k->boot_host_ns) {
			pthread_cond_wait(&k->wq_cond, &k->wq_lock);   /* "never" */
			continue;
		}
		if (w->due_ns > now) {
			uint64_t abs = k->boot_host_ns + w->due_ns;
			struct timespec ts = {
				.tv_sec = (time_t)(abs / NSEC_PER_SEC),
				.tv_nsec = (long)(abs % NSEC_PER_SEC),
			};
			pthread_cond_timedwait(&k->wq_cond, &k->wq_lock, &ts);
			continue;
		}
		run_work_locked(k, w);
	}
	pthread_mutex_unlock(&k->wq_lock);
	return NULL;
}

int odb_wq_init(struct odb_kernel *k)
{
	pthread_condattr_t ca;

	INIT_LIST_HEAD(&k->wq_list);
	pthread_mutex_init(&k->wq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->wq_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (k->clock == ODB_CLOCK_REAL) {
		if (pthread_create(&k->worker, NULL, worker_main, k) != 0)
			return -1;
		k->worker_started = true;
	}
	return 0;
}

void odb_wq_stop(struct odb_kernel *k)
{
	if (!k->worker_started)
		return;
	pthread_mutex_lock(&k->wq_lock);
	k->wq_stop = true;
	pthread_cond_broadcast(&k->wq_cond);
	pthread_mutex_unlock(&k->wq_lock);
	pthread_join(k->worker, NULL);
	k->worker_started = false;
}

void odb_wq_exit(struct odb_kernel *k)
{
	struct list_head *pos, *n;

	if (!k->wq_list.next)
		return;   /* never initialised */
	list_for_each_safe(pos, n, &k->wq_list) {
		struct odb_work *w = list_entry(pos, struct odb_work, node);
		list_del(&w->node);
		w->pending = false;
	}
	pthread_cond_destroy(&k->wq_cond);
	pthread_mutex_destroy(&k->wq_lock);
}

/* ---- virtual time --------------------------------------------------------------- */
int odb_advance(odb_kernel *k, uint64_t ns)
{
	struct odb_task *t = odb_enter(k);
	uint64_t target;

	if (!t)
		return odb_enter_failed(k);
	if (k->clock != ODB_CLOCK_VIRTUAL)
		return odb_leave(t, odb_err(k, ODB_ESTATE,
					    "advance() needs clock='virtual' (this kernel runs on the real clock)"));
	if (t->in_work)
		return odb_leave(t, odb_err(k, ODB_ESTATE, "advance() called from a work item"));
	mutex_lock(k, &k->advance_lock);
	target = atomic_load(&k->now_ns);
	if (ns > UINT64_MAX - target) {
		mutex_unlock(k, &k->advance_lock);
		return odb_leave(t, odb_err(k, ODB_ERANGE,
					    "advance: %llu ns would overflow the clock",
					    (unsigned long long)ns));
	}
	target += ns;
	pthread_mutex_lock(&k->wq_lock);
	for (;;) {
		struct odb_work *w;

		if (list_empty(&k->wq_list))
			break;
		w = list_entry(k->wq_list.next, struct odb_work, node);
		if (w->due_ns > target)
			break;
		if (w->running) {
			if (w->runner == t)
				break;      /* re-queued by itself from inside advance: next advance */
			wait_work_stopped(k, w, t);
			continue;
		}
		if (w->due_ns > atomic_load(&k->now_ns))
			atomic_store_explicit(&k->now_ns, w->due_ns, memory_order_release);
		run_work_locked(k, w);
	}
	atomic_store_explicit(&k->now_ns, target, memory_order_release);
	pthread_mutex_unlock(&k->wq_lock);
	mutex_unlock(k, &k->advance_lock);
	return odb_leave(t, ODB_OK);
}

/* ---- public work items ----------------------------------------------------------- */
odb_work *odb_work_create(odb_kernel *k, odb_work_fn fn, void *arg)
{
	struct odb_work *w;

	if (!fn)
		return NULL;
	w = malloc(sizeof(*w));
	if (!w)
		return NULL;
	INIT_DELAYED_WORK(w, fn, arg);
	w->heap = true;
	return w;
}

void odb_work_destroy(odb_kernel *k, odb_work *w)
{
	struct odb_task *t;

	if (!w)
		return;
	cancel_delayed_work_sync(k, w);
	t = pthread_getspecific(k->task_key);
	pthread_mutex_lock(&k->wq_lock);
	if (w->running && w->runner == t) {
		/* called from its own callback: the runner frees it on return */
		w->free_after_run = true;
		pthread_mutex_unlock(&k->wq_lock);
		return;
	}
	pthread_mutex_unlock(&k->wq_lock);
	free(w);
}

bool odb_wq_is_worker(struct odb_kernel *k)
{
	return k->worker_started && pthread_equal(pthread_self(), k->worker);
}

bool odb_schedule_work(odb_kernel *k, odb_work *w)
{
	if (atomic_load(&k->closed))
		return false;
	return schedule_work(k, w);
}

bool odb_schedule_delayed_work(odb_kernel *k, odb_work *w, uint64_t delay)
{
	if (atomic_load(&k->closed))
		return false;
	return schedule_delayed_work(k, w, delay);
}

bool odb_cancel_work(odb_kernel *k, odb_work *w) { return cancel_delayed_work_sync(k, w); }
bool odb_flush_work(odb_kernel *k, odb_work *w) { return flush_delayed_work(k, w); }

bool odb_work_pending(odb_kernel *k, odb_work *w)
{
	bool p;

	pthread_mutex_lock(&k->wq_lock);
	p = w->pending;
	pthread_mutex_unlock(&k->wq_lock);
	return p;
}

uint64_t odb_work_due(odb_kernel *k, odb_work *w)
{
	uint64_t due = 0;

	pthread_mutex_lock(&k->wq_lock);
	if (w->pending) {
		/* jiffies at the due time: the timer's expires */
		unsigned __int128 j = (unsigned __int128)w->due_ns * k->hz;
		due = INITIAL_JIFFIES(k->hz) + (uint64_t)(j / NSEC_PER_SEC);
	}
	pthread_mutex_unlock(&k->wq_lock);
	return due;
}
