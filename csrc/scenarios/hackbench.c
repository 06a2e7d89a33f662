/*
 * hackbench on the slab: groups of `fds` senders and `fds` receivers, each
 * sender sending `loops` messages to every receiver of its group.  A message
 * is what a socket write costs the allocator: an sk_buff head from
 * skbuff_head_cache and its data from kmalloc (msg_size + the shared info),
 * allocated on the sender's vCPU and freed on the receiver's, through a
 * bounded queue per receiver (the socket buffer): the cross-CPU free pattern
 * of the real hackbench.  Every thread is a pthread bound to a vCPU.
 */
#include <stdlib.h>

#include "slab/slub.h"

#define SKB_HEAD_SIZE   232     /* sizeof(struct sk_buff), roughly */
#define SKB_SHINFO      320     /* SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) */

struct hb_msg { void *skb, *data; };

struct hb_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_full, not_empty;
	struct hb_msg *ring;
	unsigned int cap, head, count;
};

struct hb_ctx {
	odb_kernel *k;
	struct kmem_cache *skb_cache;
	const struct odb_hackbench_cfg *cfg;
	struct hb_queue *queues;          /* one per receiver */
	pthread_mutex_t gate_lock;        /* start gate: 0 wait, 1 go, 2 abort */
	pthread_cond_t gate_cond;
	int gate;
	atomic_int failures;
};

struct hb_thread {
	struct hb_ctx *c;
	unsigned int group, index, cpu;
	bool sender;
	pthread_t th;
};

static void q_put(struct hb_queue *q, struct hb_msg m)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == q->cap)
		pthread_cond_wait(&q->not_full, &q->lock);
	q->ring[(q->head + q->count) % q->cap] = m;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

static struct hb_msg q_get(struct hb_queue *q)
{
	struct hb_msg m;

	pthread_mutex_lock(&q->lock);
	while (!q->count)
		pthread_cond_wait(&q->not_empty, &q->lock);
	m = q->ring[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
	return m;
}

static void *hb_main(void *arg)
{
	struct hb_thread *t = arg;
	struct hb_ctx *c = t->c;
	const struct odb_hackbench_cfg *cfg = c->cfg;
	odb_kernel *k = c->k;
	unsigned int fds = cfg->fds;

	int gate;

	pthread_mutex_lock(&c->gate_lock);
	while (!c->gate)
		pthread_cond_wait(&c->gate_cond, &c->gate_lock);
	gate = c->gate;
	pthread_mutex_unlock(&c->gate_lock);
	if (gate != 1)
		return NULL;
	odb_bind_cpu(k, (int)t->cpu, NULL);
	odb_set_comm(k, t->sender ? "hackbench-snd" : "hackbench-rcv");
	if (t->sender) {
		for (unsigned int l = 0; l < cfg->loops; l++) {
			for (unsigned int r = 0; r < fds; r++) {
				struct hb_msg m;

				m.skb = kmem_cache_alloc(k, c->skb_cache, GFP_KERNEL);
				m.data = kmalloc(k, cfg->msg_size + SKB_SHINFO, GFP_KERNEL);
				if (!m.skb || !m.data)
					atomic_fetch_add(&c->failures, 1);
				q_put(&c->queues[t->group * fds + r], m);
			}
		}
	} else {
		struct hb_queue *q = &c->queues[t->group * fds + t->index];
		for (unsigned int n = 0; n < cfg->loops * fds; n++) {
			struct hb_msg m = q_get(q);
			kfree(k, m.data);
			if (m.skb)
				kmem_cache_free(k, c->skb_cache, m.skb);
		}
	}
	odb_bind_cpu(k, -1, NULL);
	return NULL;
}

int odb_hackbench(odb_kernel *k, const struct odb_hackbench_cfg *cfg,
		  struct odb_hackbench_result *out)
{
	struct odb_task *t = odb_enter(k);
	unsigned int nq, nthreads, started = 0;
	struct hb_thread *threads = NULL;
	struct hb_ctx c;
	uint64_t t0;
	int ret = ODB_OK, err;

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	if (!cfg->groups || !cfg->fds || !cfg->loops || cfg->groups * cfg->fds > 4096 ||
	    cfg->msg_size > 65536)
		return odb_leave(t, odb_err(k, ODB_EINVAL,
			"hackbench: groups, fds, loops must be >= 1, groups*fds <= 4096, msg_size <= 65536"));
	memset(&c, 0, sizeof(c));
	c.k = k;
	c.cfg = cfg;
	c.skb_cache = kmem_cache_find(k, "skbuff_head_cache");
	if (!c.skb_cache)
		c.skb_cache = __kmem_cache_create(k, "skbuff_head_cache", SKB_HEAD_SIZE, 0,
						  SLAB_HWCACHE_ALIGN, NULL, NULL, NULL, &err);
	if (!c.skb_cache)
		return odb_leave(t, err);
	nq = cfg->groups * cfg->fds;
	nthreads = 2 * nq;
	c.queues = calloc(nq, sizeof(*c.queues));
	threads = calloc(nthreads, sizeof(*threads));
	if (!c.queues || !threads) {
		free(c.queues);
		free(threads);
		return odb_leave(t, ODB_ENOMEM);
	}
	for (unsigned int i = 0; i < nq; i++) {
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
	for (unsigned int i = 0; ret == ODB_OK && i < nthreads; i++) {
		struct hb_thread *h = &threads[i];
		unsigned int g = i / (2 * cfg->fds), j = i % (2 * cfg->fds);

		h->c = &c;
		h->group = g;
		h->sender = j < cfg->fds;
		h->index = h->sender ? j : j - cfg->fds;
		/* senders and receivers of a pair land on different vCPUs when possible */
		h->cpu = (i + (h->sender ? 0 : 1)) % k->nr_cpu_ids;
		if (pthread_create(&h->th, NULL, hb_main, h) != 0) {
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
		pthread_join(threads[i].th, NULL);
	out->elapsed_ns = odb_host_ns() - t0;
	out->messages = (uint64_t)nq * cfg->fds * cfg->loops;
	out->alloc_failures = (uint64_t)atomic_load(&c.failures);
	pthread_mutex_destroy(&c.gate_lock);
	pthread_cond_destroy(&c.gate_cond);
	for (unsigned int i = 0; i < nq; i++) {
		free(c.queues[i].ring);
		pthread_mutex_destroy(&c.queues[i].lock);
		pthread_cond_destroy(&c.queues[i].not_full);
		pthread_cond_destroy(&c.queues[i].not_empty);
	}
	free(c.queues);
	free(threads);
	return odb_leave(t, ret);
}
