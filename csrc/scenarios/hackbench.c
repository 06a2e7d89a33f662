/*
 * hackbench on the slab: groups of `fds` senders and `fds` receivers, each
 * sender sending `loops` messages to every receiver of its group.  A message
 * is what a socket write costs the allocator: an sk_buff head from
 * skbuff_head_cache and its data from kmalloc (msg_size + the shared info),
 * allocated on the sender's vCPU and freed on the receiver's, through a
 * bounded queue per receiver (the socket buffer): the cross-CPU free pattern
 * of the real hackbench.
 *
 * Two ways to run the tasks:
 *  - on the vCPUs (default): one host thread per vCPU runs the senders and
 *    receivers bound to it, switching between them only where a task blocks
 *    (its queue full or empty), as the kernel schedules tasks on a CPU: no
 *    lock holder is ever preempted by the host's scheduler, and the figure
 *    measures the allocator, not the host;
 *  - on threads: one pthread per sender and receiver (hundreds of threads on
 *    a few cores: lock holders do get preempted).
 * Either way the run counts what the allocator did (list_lock acquisitions
 * and contended ones, the time the vCPU threads spent on a CPU).
 */
#include <stdlib.h>
#include <time.h>

#include "slab/slub.h"

#define SKB_HEAD_SIZE   232     /* sizeof(struct sk_buff), roughly */
#define SKB_SHINFO      320     /* SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) */
#define HB_MAX_TASKS    4096u   /* groups * fds (senders, and as many receivers) */
#define HB_MAX_LOOPS    (1u << 24)

struct hb_msg { void *skb, *data; };

struct hb_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_full, not_empty;
	struct hb_msg *ring;
	unsigned int cap, head, count;
	unsigned int reserved;            /* vCPU mode: slots claimed by senders allocating */
};

struct hb_ctx {
	odb_kernel *k;
	struct kmem_cache *skb_cache;
	const struct odb_hackbench_cfg *cfg;
	struct hb_queue *queues;          /* one per receiver */
	pthread_mutex_t gate_lock;        /* start gate: 0 wait, 1 go, 2 abort */
	pthread_cond_t gate_cond;
	int gate;
	atomic_bool cancel;               /* the caller was interrupted: every task stops */
	atomic_int failures;
	_Atomic uint64_t cpu_ns;          /* vCPU threads' CPU time */
};

/* A sender or receiver: a pthread of its own (threads mode), or a state
 * machine that its vCPU's thread steps (vCPU mode). */
struct hb_task {
	struct hb_ctx *c;
	unsigned int group, index, cpu;
	bool sender;
	pthread_t th;
	/* vCPU mode: progress */
	unsigned int loop, rcv;           /* sender: loop, receiver in it */
	uint64_t got;                     /* receiver: messages taken (of loops * fds) */
	bool done;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct hb_msg send_one(struct hb_ctx *c)
{
	struct hb_msg m;

	m.skb = kmem_cache_alloc(c->k, c->skb_cache, GFP_KERNEL);
	m.data = kmalloc(c->k, c->cfg->msg_size + SKB_SHINFO, GFP_KERNEL);
	if (!m.skb || !m.data)
		atomic_fetch_add(&c->failures, 1);
	return m;
}

static void receive_one(struct hb_ctx *c, struct hb_msg m)
{
	kfree(c->k, m.data);
	if (m.skb)
		kmem_cache_free(c->k, c->skb_cache, m.skb);
}

static bool hb_cancelled(struct hb_ctx *c)
{
	return atomic_load_explicit(&c->cancel, memory_order_relaxed);
}

/* The caller was interrupted (odb_join_polling): every task stops, and those
 * waiting on a queue wake up.  What the queues hold is freed after the joins. */
static void hb_cancel(void *arg)
{
	struct hb_ctx *c = arg;
	unsigned int nq = c->cfg->groups * c->cfg->fds;

	atomic_store(&c->cancel, true);
	for (unsigned int i = 0; i < nq; i++) {
		pthread_mutex_lock(&c->queues[i].lock);
		pthread_cond_broadcast(&c->queues[i].not_full);
		pthread_cond_broadcast(&c->queues[i].not_empty);
		pthread_mutex_unlock(&c->queues[i].lock);
	}
}

/* ---- threads: one pthread per task, blocking queues ------------------------------------------------ */
/* false (m not queued) if the run was cancelled meanwhile */
static bool q_put(struct hb_ctx *c, struct hb_queue *q, struct hb_msg m)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == q->cap && !hb_cancelled(c))
		pthread_cond_wait(&q->not_full, &q->lock);
	if (q->count == q->cap) {
		pthread_mutex_unlock(&q->lock);
		return false;
	}
	q->ring[(q->head + q->count) % q->cap] = m;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
	return true;
}

/* false if the run was cancelled while the queue was empty */
static bool q_get(struct hb_ctx *c, struct hb_queue *q, struct hb_msg *m)
{
	pthread_mutex_lock(&q->lock);
	while (!q->count && !hb_cancelled(c))
		pthread_cond_wait(&q->not_empty, &q->lock);
	if (!q->count) {
		pthread_mutex_unlock(&q->lock);
		return false;
	}
	*m = q->ring[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
	return true;
}

static bool wait_gate(struct hb_ctx *c)
{
	int gate;

	pthread_mutex_lock(&c->gate_lock);
	while (!c->gate)
		pthread_cond_wait(&c->gate_cond, &c->gate_lock);
	gate = c->gate;
	pthread_mutex_unlock(&c->gate_lock);
	return gate == 1;
}

static void *hb_thread_main(void *arg)
{
	struct hb_task *t = arg;
	struct hb_ctx *c = t->c;
	odb_kernel *k = c->k;
	unsigned int fds = c->cfg->fds;

	if (!wait_gate(c))
		return NULL;
	odb_bind_cpu(k, (int)t->cpu, NULL);
	odb_set_comm(k, t->sender ? "hackbench-snd" : "hackbench-rcv");
	if (t->sender) {
		for (unsigned int l = 0; l < c->cfg->loops && !hb_cancelled(c); l++)
			for (unsigned int r = 0; r < fds; r++) {
				struct hb_msg m = send_one(c);

				if (!q_put(c, &c->queues[t->group * fds + r], m)) {
					receive_one(c, m);   /* cancelled: not queued, free it here */
					break;
				}
			}
	} else {
		struct hb_queue *q = &c->queues[t->group * fds + t->index];
		struct hb_msg m;

		for (uint64_t n = 0; n < (uint64_t)c->cfg->loops * fds && q_get(c, q, &m); n++)
			receive_one(c, m);
	}
	odb_bind_cpu(k, -1, NULL);
	return NULL;
}

/* ---- vCPUs: one host thread per vCPU steps its tasks ---------------------------------------------- */
struct hb_vcpu {
	struct hb_ctx *c;
	unsigned int cpu;
	struct hb_task **tasks;
	unsigned int ntasks;
	pthread_t th;
};

/* Run task t until it blocks or ends (at most one queue's worth of messages,
 * so that the vCPU's other tasks get their turn); true if it did anything. */
static bool hb_step(struct hb_task *t)
{
	struct hb_ctx *c = t->c;
	unsigned int fds = c->cfg->fds;
	bool progress = false;

	if (t->sender) {
		while (t->loop < c->cfg->loops) {
			struct hb_queue *q = &c->queues[t->group * fds + t->rcv];
			bool full;

			/* claim a slot first: senders of other vCPUs fill the same queue */
			pthread_mutex_lock(&q->lock);
			full = q->count + q->reserved == q->cap;
			if (!full)
				q->reserved++;
			pthread_mutex_unlock(&q->lock);
			if (full)
				return progress;   /* blocks: another task of the vCPU runs */
			{
				struct hb_msg m = send_one(c);

				pthread_mutex_lock(&q->lock);
				q->reserved--;
				q->ring[(q->head + q->count) % q->cap] = m;
				q->count++;
				pthread_mutex_unlock(&q->lock);
			}
			progress = true;
			if (++t->rcv == fds) {
				t->rcv = 0;
				t->loop++;
			}
		}
	} else {
		struct hb_queue *q = &c->queues[t->group * fds + t->index];

		while (t->got < (uint64_t)c->cfg->loops * fds) {
			struct hb_msg m;

			pthread_mutex_lock(&q->lock);
			if (!q->count) {
				pthread_mutex_unlock(&q->lock);
				return progress;
			}
			m = q->ring[q->head];
			q->head = (q->head + 1) % q->cap;
			q->count--;
			pthread_mutex_unlock(&q->lock);
			receive_one(c, m);
			t->got++;
			progress = true;
		}
	}
	t->done = true;
	return progress;
}

static void *hb_vcpu_main(void *arg)
{
	struct hb_vcpu *v = arg;
	struct hb_ctx *c = v->c;
	uint64_t cpu0;
	unsigned int left = v->ntasks;

	if (!wait_gate(c))
		return NULL;
	odb_bind_cpu(c->k, (int)v->cpu, NULL);
	odb_set_comm(c->k, "hackbench");
	cpu0 = thread_cpu_ns();
	while (left && !hb_cancelled(c)) {
		bool progress = false;

		left = 0;
		for (unsigned int i = 0; i < v->ntasks; i++) {
			struct hb_task *t = v->tasks[i];

			if (t->done)
				continue;
			progress |= hb_step(t);
			left += !t->done;
		}
		if (left && !progress)
			sched_yield();   /* every task here waits for another vCPU */
	}
	atomic_fetch_add(&c->cpu_ns, thread_cpu_ns() - cpu0);
	odb_bind_cpu(c->k, -1, NULL);
	return NULL;
}

/* ---- the run ---------------------------------------------------------------------------------------- */
static void node_lock_counts(struct kmem_cache *s, uint64_t *acq, uint64_t *cont)
{
	*acq += atomic_load_explicit(&s->node.list_lock.acquired, memory_order_relaxed);
	*cont += atomic_load_explicit(&s->node.list_lock.contended, memory_order_relaxed);
}

int odb_hackbench(odb_kernel *k, const struct odb_hackbench_cfg *cfg,
		  struct odb_hackbench_result *out)
{
	struct odb_task *t = odb_enter(k);
	unsigned int nq, ntasks, nthreads, started = 0;
	struct hb_task *tasks = NULL;
	struct hb_vcpu *vcpus = NULL;
	struct kmem_cache *data_cache;
	struct hb_ctx c;
	uint64_t t0, acq0 = 0, cont0 = 0, acq1 = 0, cont1 = 0, last_poll = 0;
	int ret = ODB_OK, err;
	bool on_vcpus = !cfg->on_threads, interrupted = false;

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	/* each factor bounded before the product: groups * fds cannot wrap */
	if (!cfg->groups || !cfg->fds || !cfg->loops || cfg->groups > HB_MAX_TASKS ||
	    cfg->fds > HB_MAX_TASKS || cfg->groups * cfg->fds > HB_MAX_TASKS ||
	    cfg->loops > HB_MAX_LOOPS || cfg->msg_size > 65536 || cfg->queue_depth > 65536)
		return odb_leave(t, odb_err(k, ODB_EINVAL,
			"hackbench: groups, fds >= 1 with groups*fds <= %u, loops 1..%u, "
			"msg_size <= 65536, queue_depth <= 65536", HB_MAX_TASKS, HB_MAX_LOOPS));
	memset(&c, 0, sizeof(c));
	c.k = k;
	c.cfg = cfg;
	c.skb_cache = kmem_cache_find(k, "skbuff_head_cache");
	if (!c.skb_cache) {
		c.skb_cache = __kmem_cache_create(k, "skbuff_head_cache", SKB_HEAD_SIZE, 0,
						  SLAB_HWCACHE_ALIGN, NULL, NULL, NULL, &err);
		if (!c.skb_cache)
			return odb_leave(t, err);
		c.skb_cache->internal = true;   /* the next runs use it too */
	}
	data_cache = kmalloc_slab(k, cfg->msg_size + SKB_SHINFO);
	nq = cfg->groups * cfg->fds;
	ntasks = 2 * nq;
	nthreads = on_vcpus ? k->nr_cpu_ids : ntasks;
	c.queues = calloc(nq, sizeof(*c.queues));
	tasks = calloc(ntasks, sizeof(*tasks));
	if (on_vcpus) {
		vcpus = calloc(k->nr_cpu_ids, sizeof(*vcpus));
		for (unsigned int i = 0; vcpus && i < k->nr_cpu_ids; i++) {
			vcpus[i].tasks = calloc(ntasks, sizeof(*vcpus[i].tasks));
			if (!vcpus[i].tasks)
				ret = ODB_ENOMEM;
		}
	}
	if (!c.queues || !tasks || (on_vcpus && !vcpus))
		ret = ODB_ENOMEM;
	for (unsigned int i = 0; c.queues && i < nq; i++) {
		struct hb_queue *q = &c.queues[i];
		q->cap = cfg->queue_depth ? cfg->queue_depth : 64;
		q->ring = calloc(q->cap, sizeof(*q->ring));
		pthread_mutex_init(&q->lock, NULL);
		pthread_cond_init(&q->not_full, NULL);
		pthread_cond_init(&q->not_empty, NULL);
		if (!q->ring)
			ret = ODB_ENOMEM;
	}
	pthread_mutex_init(&c.gate_lock, NULL);
	pthread_cond_init(&c.gate_cond, NULL);
	for (unsigned int i = 0; ret == ODB_OK && i < ntasks; i++) {
		struct hb_task *h = &tasks[i];
		unsigned int g = i / (2 * cfg->fds), j = i % (2 * cfg->fds);

		h->c = &c;
		h->group = g;
		h->sender = j < cfg->fds;
		h->index = h->sender ? j : j - cfg->fds;
		/* senders and receivers of a pair land on different vCPUs when possible */
		h->cpu = (i + (h->sender ? 0 : 1)) % k->nr_cpu_ids;
		if (on_vcpus)
			vcpus[h->cpu].tasks[vcpus[h->cpu].ntasks++] = h;
	}
	node_lock_counts(c.skb_cache, &acq0, &cont0);
	if (data_cache)
		node_lock_counts(data_cache, &acq0, &cont0);
	for (unsigned int i = 0; ret == ODB_OK && i < nthreads; i++) {
		int e;

		if (on_vcpus) {
			vcpus[i].c = &c;
			vcpus[i].cpu = i;
			e = pthread_create(&vcpus[i].th, NULL, hb_vcpu_main, &vcpus[i]);
		} else {
			e = pthread_create(&tasks[i].th, NULL, hb_thread_main, &tasks[i]);
		}
		if (e != 0) {
			ret = odb_err(k, ODB_ENOMEM, "hackbench: cannot start thread %u", i);
			break;
		}
		started++;
	}
	/* open the gate (or, if not every thread could start, abort the run) */
	t0 = odb_host_ns();
	pthread_mutex_lock(&c.gate_lock);
	c.gate = ret == ODB_OK ? 1 : 2;
	pthread_cond_broadcast(&c.gate_cond);
	pthread_mutex_unlock(&c.gate_lock);
	for (unsigned int i = 0; i < started; i++)
		odb_join_polling(k, on_vcpus ? vcpus[i].th : tasks[i].th, &last_poll, &interrupted,
				 hb_cancel, &c);
	out->elapsed_ns = odb_host_ns() - t0;
	/* interrupted: free the messages still queued (every task has stopped) */
	for (unsigned int i = 0; interrupted && i < nq; i++) {
		struct hb_queue *q = &c.queues[i];

		for (; q->count; q->count--, q->head = (q->head + 1) % q->cap)
			receive_one(&c, q->ring[q->head]);
	}
	if (ret == ODB_OK && interrupted)
		ret = odb_err(k, ODB_EINTR, "hackbench: interrupted");
	if (ret == ODB_OK) {
		out->messages = (uint64_t)nq * cfg->fds * cfg->loops;
		out->alloc_failures = (uint64_t)atomic_load(&c.failures);
		out->cpu_ns = on_vcpus ? atomic_load(&c.cpu_ns) : 0;
		node_lock_counts(c.skb_cache, &acq1, &cont1);
		if (data_cache)
			node_lock_counts(data_cache, &acq1, &cont1);
		out->list_lock_acquired = acq1 - acq0;
		out->list_lock_contended = cont1 - cont0;
	}
	pthread_mutex_destroy(&c.gate_lock);
	pthread_cond_destroy(&c.gate_cond);
	for (unsigned int i = 0; c.queues && i < nq; i++) {
		free(c.queues[i].ring);
		pthread_mutex_destroy(&c.queues[i].lock);
		pthread_cond_destroy(&c.queues[i].not_full);
		pthread_cond_destroy(&c.queues[i].not_empty);
	}
	for (unsigned int i = 0; vcpus && i < k->nr_cpu_ids; i++)
		free(vcpus[i].tasks);
	free(vcpus);
	free(c.queues);
	free(tasks);
	return odb_leave(t, ret);
}
