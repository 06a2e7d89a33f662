/*
 * The KASAN quarantine (mm/kasan/quarantine.c), both designs:
 *
 *  batched (default, Q-2016 "kasan: eliminate long stalls during quarantine
 *  reduction", unchanged since): per-vCPU qlists of up to
 *  QUARANTINE_PERCPU_SIZE bytes are moved under quarantine_lock into the tail
 *  slot of a FIFO ring of QUARANTINE_BATCHES batches; a reduce evicts exactly
 *  one whole batch, outside the lock.
 *
 *  quarter (Q-old, v4.8-v4.9): one global list; reduce walks it under the lock
 *  and frees down to 3/4 of the maximum (about a quarter at a time).
 *
 * Objects are linked through their KASAN free meta (no allocation to
 * quarantine an object) and leave through the real slab free path
 * (do_slab_free: SLUB's free debug processing included).  Quirks kept: the
 * sizing is 0 until the first over-budget reduce; head may pass tail;
 * remove_cache never lowers quarantine_size; Q-old's unsigned low-water
 * arithmetic (the first reduce frees the whole list).
 */
#include <stdio.h>
#include <stdlib.h>

#include "kasan/kasan.h"
#include "kasan/meta.h"
#include "slab/slub.h"

/* ---- qlist primitives ------------------------------------------------------------------ *
 * Links inside the arena hold arena addresses; a link that does not decode to
 * an arena address ends the list (only a deliberate raw() corruption makes one). */
static inline struct qlist_node *qlink_next(struct odb_kernel *k, struct qlist_node *n)
{
	odb_addr_t v;

	memcpy(&v, &n->next, sizeof(v));
	if (!v || !odb_in_arena(k, v, sizeof(struct qlist_node)))
		return NULL;
	return virt_to_host(k, v);
}

static inline void qlink_set_next(struct odb_kernel *k, struct qlist_node *n, struct qlist_node *nx)
{
	odb_addr_t v = nx ? host_to_virt(k, nx) : 0;

	memcpy(&n->next, &v, sizeof(v));
}

static inline bool qlist_empty(const struct qlist_head *q) { return !q->head; }

static inline void qlist_init(struct qlist_head *q)
{
	q->head = q->tail = NULL;
	WRITE_ONCE(q->bytes, 0);      /* per-CPU bytes are read by stats/peak */
}

static inline void qlist_put(struct odb_kernel *k, struct qlist_head *q, struct qlist_node *n,
			     size_t size)
{
	if (unlikely(qlist_empty(q)))
		q->head = n;
	else
		qlink_set_next(k, q->tail, n);
	q->tail = n;
	qlink_set_next(k, n, NULL);
	WRITE_ONCE(q->bytes, q->bytes + size);
}

static inline void qlist_move_all(struct odb_kernel *k, struct qlist_head *from,
				  struct qlist_head *to)
{
	if (unlikely(qlist_empty(from)))
		return;
	if (qlist_empty(to)) {
		to->head = from->head;
		to->tail = from->tail;
		WRITE_ONCE(to->bytes, from->bytes);
		to->offline = from->offline;   /* quirk: copies `offline' too */
		qlist_init(from);
		return;
	}
	qlink_set_next(k, to->tail, from->head);
	to->tail = from->tail;
	WRITE_ONCE(to->bytes, to->bytes + from->bytes);
	qlist_init(from);
}

/* The object and cache of a link (qlink_to_object / qlink_to_cache). */
static inline struct kmem_cache *qlink_to_cache(struct odb_kernel *k, struct qlist_node *n)
{
	struct slab *sl = virt_to_slab(k, n);
	return sl ? sl->slab_cache : NULL;
}

static inline void *qlink_to_object(struct qlist_node *n, struct kmem_cache *s)
{
	return (char *)n - s->kasan_free_meta_offset;
}

/* qlist_move_cache: nodes of `cache' from `from' to `to', the others stay in order. */
void qlist_move_cache(struct odb_kernel *k, struct qlist_head *from, struct qlist_head *to,
		      struct kmem_cache *cache);
void qlist_move_cache(struct odb_kernel *k, struct qlist_head *from, struct qlist_head *to,
		      struct kmem_cache *cache)
{
	struct qlist_node *curr;

	if (unlikely(qlist_empty(from)))
		return;
	curr = from->head;
	qlist_init(from);
	while (curr) {
		struct qlist_node *next = qlink_next(k, curr);
		struct kmem_cache *obj_cache = qlink_to_cache(k, curr);

		if (obj_cache == cache)
			qlist_put(k, to, curr, obj_cache->size);
		else if (obj_cache)
			qlist_put(k, from, curr, obj_cache->size);
		curr = next;
	}
}

/* ---- freeing out of quarantine ------------------------------------------------------------ */
static inline __attribute__((always_inline)) void
kasan_release_object_meta(struct kmem_cache *s, void *object)
{
	struct kasan_alloc_meta *am = kasan_get_alloc_meta(s, object);
	uint8_t *sh = kasan_host_to_shadow(s->k, object);

	if (am)
		memset(am, 0, sizeof(*am));       /* the alloc stack is forgotten */
	if (*sh == KASAN_SLAB_FREE_META)
		*sh = KASAN_SLAB_FREE;            /* the free track is no longer valid */
}

void qlink_free(struct odb_kernel *k, struct qlist_node *qlink, struct kmem_cache *cache);
void qlink_free(struct odb_kernel *k, struct qlist_node *qlink, struct kmem_cache *cache)
{
	void *object = qlink_to_object(qlink, cache);
	struct slab *sl = virt_to_slab(k, object);

	if (!sl)
		return;
	kasan_release_object_meta(cache, object);
	/* ___cache_free: onto the freelist without the KASAN free hook again;
	 * the shadow stays poisoned as freed until the slot is allocated again */
	do_slab_free(cache, sl, object, object, 1, (unsigned long)__builtin_return_address(0));
}

/* Objects waiting to go back to one slab, in quarantine order (host-side). */
struct qlink_run {
	struct kmem_cache *s;
	struct slab *sl;
	unsigned int n;
	void *objs[SLAB_FREE_RUN_MAX];
};

static void qlink_run_flush(struct qlink_run *r, unsigned long addr)
{
	if (r->n)
		do_slab_free_run(r->s, r->sl, r->objs, r->n, addr);
	r->n = 0;
}

/*
 * Returns the number of objects freed.  Each object is released and freed in
 * quarantine order, as qlink_free() does; objects that follow each other in
 * the quarantine and share a slab -- objects freed together, allocated
 * together -- are handed to the slab as one run (do_slab_free_run), which
 * frees them as the single frees would, with one irq-off section and one
 * cmpxchg where no free of the run moves the slab.
 */
uint64_t qlist_free_all(struct odb_kernel *k, struct qlist_head *q, struct kmem_cache *cache);
uint64_t qlist_free_all(struct odb_kernel *k, struct qlist_head *q, struct kmem_cache *cache)
{
	unsigned long addr = (unsigned long)__builtin_return_address(0);
	struct qlist_node *qlink;
	struct qlink_run run;
	uint64_t n = 0;

	if (unlikely(qlist_empty(q)))
		return 0;
	run.n = 0;
	qlink = q->head;
	while (qlink) {
		/* (qlink_to_cache, keeping the link's slab) */
		struct slab *lsl = cache ? NULL : virt_to_slab(k, qlink);
		struct kmem_cache *obj_cache = cache ? cache : lsl ? lsl->slab_cache : NULL;
		struct qlist_node *next = qlink_next(k, qlink);

		if (obj_cache && obj_cache->free_runs) {
			void *object = qlink_to_object(qlink, obj_cache);
			/* the object's slab: the link's when both lie in one page */
			struct slab *sl = lsl && !(((uintptr_t)object ^ (uintptr_t)qlink) >> PAGE_SHIFT) ?
					  lsl : virt_to_slab(k, object);

			if (sl) {
				if (run.n && (sl != run.sl || run.n == SLAB_FREE_RUN_MAX))
					qlink_run_flush(&run, addr);
				kasan_release_object_meta(obj_cache, object);
				run.s = obj_cache;
				run.sl = sl;
				run.objs[run.n++] = object;
			}
			n++;
		} else if (obj_cache) {
			qlink_run_flush(&run, addr);
			qlink_free(k, qlink, obj_cache);
			n++;
		}
		qlink = next;
	}
	qlink_run_flush(&run, addr);
	qlist_init(q);
	return n;
}

/* ---- statistics ------------------------------------------------------------------------------ */
static unsigned int log2_bucket(uint64_t v)
{
	return v ? 64 - (unsigned int)__builtin_clzll(v) : 0;   /* [2^(i-1), 2^i) */
}

static unsigned int time_bucket(uint64_t ns)
{
	unsigned int e;

	if (ns < 4)
		return (unsigned int)ns;
	e = 63 - (unsigned int)__builtin_clzll(ns);
	return 4 * e + (unsigned int)((ns >> (e - 2)) & 3);
}

static uint64_t time_bucket_upper(unsigned int b)
{
	unsigned int e = b / 4, m = b % 4;

	if (b < 4)
		return b;
	return ((uint64_t)(4 + m + 1) << (e - 2)) - 1;
}

static uint64_t hist_percentile(const uint64_t *h, uint64_t max, double p)
{
	uint64_t total = 0, need, acc = 0;

	for (unsigned int i = 0; i < KASAN_TIME_BUCKETS; i++)
		total += h[i];
	if (!total)
		return 0;
	need = (uint64_t)(p * (double)total + 0.999999);
	if (need < 1)
		need = 1;
	for (unsigned int i = 0; i < KASAN_TIME_BUCKETS; i++) {
		acc += h[i];
		if (acc >= need) {
			uint64_t u = time_bucket_upper(i);
			return u < max ? u : max;
		}
	}
	return max;
}

/* Take quarantine_lock, counting the time spent waiting when it is contended
 * (the seed's "threads wait on quarantine_lock while one thread grabs a large
 * batch of objects to evict"). */
static void quarantine_lock_acquire(struct odb_kernel *k, struct quarantine *q)
{
	uint64_t t0, w;

	if (raw_spin_trylock(k, &q->quarantine_lock))
		return;
	t0 = odb_stat_ns(k);
	raw_spin_lock(k, &q->quarantine_lock);
	w = odb_stat_ns(k) - t0;
	q->st.lock_waits++;                  /* under quarantine_lock */
	q->st.lock_wait_ns_total += w;
	if (w > q->st.lock_wait_ns_max)
		q->st.lock_wait_ns_max = w;
}

static void note_lock(struct quarantine *q, uint64_t ns)
{
	pthread_mutex_lock(&q->stats_lock);
	q->st.lock_ns_hist[time_bucket(ns)]++;
	q->st.lock_ns_total += ns;
	if (ns > q->st.lock_ns_max)
		q->st.lock_ns_max = ns;
	pthread_mutex_unlock(&q->stats_lock);
}

static uint64_t percpu_total(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;
	uint64_t t = 0;

	for (unsigned int c = 0; c < k->nr_cpu_ids; c++)
		t += READ_ONCE(q->cpu_quarantine[c].bytes);
	return t;
}

static void note_peak(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;
	uint64_t ring = q->policy == QUARANTINE_BATCHED ? READ_ONCE(q->quarantine_size)
							: READ_ONCE(q->old_global.bytes);
	uint64_t tot = ring + percpu_total(k) + READ_ONCE(q->st.in_flight);

	if (tot > READ_ONCE(q->st.peak_total)) {
		pthread_mutex_lock(&q->stats_lock);
		if (tot > q->st.peak_total)
			WRITE_ONCE(q->st.peak_total, tot);
		pthread_mutex_unlock(&q->stats_lock);
	}
}

static void note_eviction(struct odb_kernel *k, uint64_t bytes, uint64_t objects, uint64_t free_ns)
{
	struct quarantine *q = &kasan_state(k)->q;

	pthread_mutex_lock(&q->stats_lock);
	WRITE_ONCE(q->st.in_flight, q->st.in_flight - bytes);
	if (objects || bytes)
		q->st.reduce_evicting++;
	q->st.evicted_objects += objects;
	q->st.evicted_bytes += bytes;
	if (bytes > q->st.max_evict_bytes)
		q->st.max_evict_bytes = bytes;
	if (objects > q->st.max_evict_objects)
		q->st.max_evict_objects = objects;
	q->st.evict_bytes_hist[log2_bucket(bytes)]++;
	q->st.evict_objects_hist[log2_bucket(objects)]++;
	q->st.free_ns_hist[time_bucket(free_ns)]++;
	q->st.free_ns_total += free_ns;
	if (free_ns > q->st.free_ns_max)
		q->st.free_ns_max = free_ns;
	pthread_mutex_unlock(&q->stats_lock);
}

static void note_in_flight(struct quarantine *q, uint64_t bytes)
{
	pthread_mutex_lock(&q->stats_lock);
	WRITE_ONCE(q->st.in_flight, q->st.in_flight + bytes);
	pthread_mutex_unlock(&q->stats_lock);
}

#define STAT_INC(q, f) __atomic_fetch_add(&(q)->st.f, 1, __ATOMIC_RELAXED)

/* ---- sizing (§1.4) ----------------------------------------------------------------------------- */
static void quarantine_sizing(uint64_t totalram_bytes, unsigned int online, unsigned long batches,
			      size_t *max_size, size_t *batch_size)
{
	size_t total_size = (size_t)(totalram_bytes / QUARANTINE_FRACTION);
	size_t percpu = QUARANTINE_PERCPU_SIZE * online;

	*max_size = total_size < percpu ? 0 : total_size - percpu;
	*batch_size = 2 * total_size / batches;
	if (*batch_size < QUARANTINE_PERCPU_SIZE)
		*batch_size = QUARANTINE_PERCPU_SIZE;
}

int odb_quarantine_geometry(uint64_t ram, unsigned int cpus, unsigned int nr_cpus,
			    struct odb_quarantine_geometry *out)
{
	uint64_t totalram = (ram >> PAGE_SHIFT) << PAGE_SHIFT;
	size_t max, batch;

	memset(out, 0, sizeof(*out));
	if (!cpus)
		return ODB_EINVAL;
	if (!nr_cpus)
		nr_cpus = cpus > ODB_MAX_CPUS ? cpus : ODB_MAX_CPUS;
	if (nr_cpus < cpus)
		return ODB_EINVAL;
	out->batches = QUARANTINE_BATCHES_FOR(nr_cpus);
	quarantine_sizing(totalram, cpus, out->batches, &max, &batch);
	out->total_size = totalram / QUARANTINE_FRACTION;
	out->percpu_reserve = QUARANTINE_PERCPU_SIZE * (uint64_t)cpus;
	out->max_size = max;
	out->batch_size = batch;
	out->slots_used = batch ? max / batch : 0;
	out->old_max_size = out->total_size - out->percpu_reserve;   /* no clamp (Q-old) */
	out->old_low_size = out->old_max_size * 3 / 4;
	out->old_reduce_bytes = out->old_max_size - out->old_low_size;
	return ODB_OK;
}

/* ---- put: both designs ------------------------------------------------------------------------ */
/* A full per-CPU list into the global quarantine (quarantine_lock held): the
 * tail slot of the ring (batched), or the one list (quarter). */
static void global_put_locked(struct odb_kernel *k, struct quarantine *q, struct qlist_head *temp)
{
	if (q->policy == QUARANTINE_QUARTER) {
		qlist_move_all(k, temp, &q->old_global);
		return;
	}
	WRITE_ONCE(q->quarantine_size, q->quarantine_size + temp->bytes);
	qlist_move_all(k, temp, &q->global_quarantine[q->quarantine_tail]);
	if (q->global_quarantine[q->quarantine_tail].bytes >= READ_ONCE(q->quarantine_batch_size)) {
		unsigned long new_tail = q->quarantine_tail + 1;

		if (new_tail == q->batches)
			new_tail = 0;
		if (new_tail != q->quarantine_head)
			q->quarantine_tail = new_tail;
	}
}

/* quarantine_put: false when the object is to be freed at once (an offline
 * vCPU's list under v5.10, or no task).  From v4.11 on interrupts stay off for
 * the whole put; the 2016 put (v4.10) moves a full list to the global
 * quarantine with them on, so that a cache destroy's per-CPU pass can run in
 * between and miss the list in flight. */
static bool quarantine_put_common(struct kmem_cache *cache, struct qlist_node *link)
{
	struct odb_kernel *k = cache->k;
	struct quarantine *q = &kasan_state(k)->q;
	unsigned long flags;
	struct qlist_head *cq;
	bool flushed = false;

	local_irq_save(k, flags);
	if (unlikely(!flags))
		return false;         /* no task (OOM): freed at once */
	cq = &q->cpu_quarantine[flags - 1];
	if (unlikely(cq->offline)) {
		local_irq_restore(k, flags);
		STAT_INC(q, put_refused);
		return false;
	}
	qlist_put(k, cq, link, cache->size);
	if (unlikely(cq->bytes > QUARANTINE_PERCPU_SIZE)) {
		struct qlist_head temp = { 0 };
		uint64_t t0;

		qlist_move_all(k, cq, &temp);
		temp.offline = false;
		if (q->fixes == QUARANTINE_V4_10) {
			/* local_irq_restore(); spin_lock_irqsave(&quarantine_lock) */
			local_irq_restore(k, flags);
			local_irq_save(k, flags);
		}
		quarantine_lock_acquire(k, q);
		t0 = odb_stat_ns(k);
		global_put_locked(k, q, &temp);
		note_lock(q, odb_stat_ns(k) - t0);
		raw_spin_unlock(k, &q->quarantine_lock);
		flushed = true;
	}
	local_irq_restore(k, flags);
	STAT_INC(q, put_calls);
	if (flushed) {
		STAT_INC(q, flushes);
		note_peak(k);
	}
	return true;
}

int kasan_quarantine_reduce_api_slow(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;
	struct odb_task *t;

	/* an eviction frees objects of any cache, a debug cache's with its
	 * checks: inside an API call, so that a report is the call's */
	t = odb_enter(k);
	if (!t) {
		STAT_INC(q, reduce_calls);
		return ODB_OK;
	}
	kasan_quarantine_reduce(k);
	return odb_leave(t, ODB_OK);
}

/* quarantine_put_common's put without a flush (kasan_quarantine_fits said so),
 * its caller already inside the vCPU's irq-off section. */
void kasan_quarantine_put_locked(struct kmem_cache *cache, void *object, int cpu)
{
	struct odb_kernel *k = cache->k;
	struct quarantine *q = &kasan_state(k)->q;
	/* (an api_kasan_fast cache's objects have their free meta) */
	struct kasan_free_meta *m = (void *)((char *)object + cache->kasan_free_meta_offset);

	qlist_put(k, &q->cpu_quarantine[cpu], &m->quarantine_link, cache->size);
	quarantine_cpu_stat_add(&q->cpu_st[cpu].put_calls, 1);   /* STAT_INC(q, put_calls) */
}

/* ---- reduce -------------------------------------------------------------------------------------- */
/* The batch taken off the global quarantine is freed outside quarantine_lock;
 * from v4.11 on inside an SRCU read section, which a cache destroy waits for. */
static void reduce_begin(struct odb_kernel *k, struct quarantine *q)
{
	if (q->fixes != QUARANTINE_V4_10)
		srcu_read_lock(k, &q->remove_cache_srcu);
}

static void reduce_end(struct odb_kernel *k, struct quarantine *q)
{
	if (q->fixes != QUARANTINE_V4_10)
		srcu_read_unlock(k, &q->remove_cache_srcu);
}

static void reduce_batched_slow(struct odb_kernel *k, struct quarantine *q);

/* The check every blocking allocation makes (twice per kmalloc, as in the
 * kernel): inline and frameless; the eviction is out of line. */
static inline __attribute__((always_inline)) void reduce_batched(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;

	STAT_INC(q, reduce_calls);
	if (likely(READ_ONCE_RACY(k, q->quarantine_size, true) <=
		   READ_ONCE_RACY(k, q->quarantine_max_size, true)))
		return;
	reduce_batched_slow(k, q);
}

static __attribute__((noinline)) void reduce_batched_slow(struct odb_kernel *k, struct quarantine *q)
{
	struct qlist_head to_free = { 0 };
	unsigned long flags;
	uint64_t t0, t1, objs;
	size_t bytes;

	reduce_begin(k, q);
	local_irq_save(k, flags);
	quarantine_lock_acquire(k, q);
	t0 = odb_stat_ns(k);
	STAT_INC(q, reduce_slow);
	/* recomputed on every over-budget reduce: memory / CPU hotplug */
	{
		size_t max, batch;
		quarantine_sizing(k->nr_pages << PAGE_SHIFT, k->nr_cpu_ids, q->batches, &max, &batch);
		WRITE_ONCE(q->quarantine_max_size, max);
		WRITE_ONCE(q->quarantine_batch_size, batch);
	}
	if (likely(q->quarantine_size > q->quarantine_max_size)) {
		qlist_move_all(k, &q->global_quarantine[q->quarantine_head], &to_free);
		to_free.offline = false;
		WRITE_ONCE(q->quarantine_size, q->quarantine_size - to_free.bytes);
		q->quarantine_head++;
		if (q->quarantine_head == q->batches)
			q->quarantine_head = 0;
	}
	bytes = to_free.bytes;
	note_in_flight(q, bytes);
	t1 = odb_stat_ns(k);
	raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
	note_lock(q, t1 - t0);
	note_peak(k);
	objs = qlist_free_all(k, &to_free, NULL);
	note_eviction(k, bytes, objs, odb_stat_ns(k) - t1);
	reduce_end(k, q);
}

/* ---- quarter (Q-old) ----------------------------------------------------------------------------- */
void quarantine_reduce(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;
	struct qlist_head to_free = { 0 };
	size_t size_to_free = 0, low;
	struct qlist_node *last, *next;
	unsigned long flags;
	uint64_t t0, t1, objs;

	STAT_INC(q, reduce_calls);
	if (likely(READ_ONCE_RACY(k, q->old_global.bytes, true) <=
		   READ_ONCE_RACY(k, q->old_quarantine_size, true)))
		return;
	reduce_begin(k, q);
	local_irq_save(k, flags);
	quarantine_lock_acquire(k, q);
	t0 = odb_stat_ns(k);
	STAT_INC(q, reduce_slow);
	/* no underflow guard in Q-old */
	WRITE_ONCE(q->old_quarantine_size,
		   (size_t)((k->nr_pages << PAGE_SHIFT) / QUARANTINE_FRACTION) -
		   QUARANTINE_PERCPU_SIZE * k->nr_cpu_ids);
	low = q->old_quarantine_size * 3 / 4;      /* QUARANTINE_LOW_SIZE */
	/* walk under the lock: stop at the first object past the low-water mark */
	last = q->old_global.head;
	while (last) {
		struct kmem_cache *cache = qlink_to_cache(k, last);

		size_to_free += cache ? cache->size : 0;
		next = qlink_next(k, last);
		if (!next || size_to_free > q->old_global.bytes - low)
			break;
		last = next;
	}
	if (last) {
		/* qlist_move(from, last, to, size): head..last to to_free */
		to_free.head = q->old_global.head;
		to_free.tail = last;
		to_free.bytes = size_to_free;
		q->old_global.head = qlink_next(k, last);
		if (!q->old_global.head)
			q->old_global.tail = NULL;
		qlink_set_next(k, last, NULL);
		WRITE_ONCE(q->old_global.bytes, q->old_global.bytes - size_to_free);
	}
	note_in_flight(q, size_to_free);
	t1 = odb_stat_ns(k);
	raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
	note_lock(q, t1 - t0);
	note_peak(k);
	objs = qlist_free_all(k, &to_free, NULL);
	note_eviction(k, size_to_free, objs, odb_stat_ns(k) - t1);
	reduce_end(k, q);
}

/* ---- the interface ---------------------------------------------------------------------------- */
bool kasan_quarantine_put(struct kmem_cache *cache, void *object)
{
	struct kasan_free_meta *m = kasan_get_free_meta(cache, object);
	struct quarantine *q = &kasan_state(cache->k)->q;

	(void)q;
	if (!m)
		return false;         /* KASAN_NO_FREE_META */
	return quarantine_put_common(cache, &m->quarantine_link);
}

void kasan_quarantine_reduce(struct odb_kernel *k)
{
	if (!kasan_enabled(k))
		return;
	if (kasan_state(k)->q.policy == QUARANTINE_QUARTER)
		quarantine_reduce(k);
	else
		reduce_batched(k);
}

/* Filter every vCPU's list (the IPI of per_cpu_remove_cache, one vCPU's irq
 * lock at a time), then the global list(s) under the lock; free outside. */
static uint64_t remove_cache_common(struct kmem_cache *cache)
{
	struct odb_cpu_visit v;
	struct odb_kernel *k = cache->k;
	struct quarantine *q = &kasan_state(k)->q;
	struct qlist_head to_free = { 0 };
	unsigned long flags;
	uint64_t n = 0;

	for (unsigned int cpu = 0; cpu < k->nr_cpu_ids; cpu++) {
		struct qlist_head mine = { 0 };

		if (!cpu_online(k, cpu))
			continue;     /* on_each_cpu(): online vCPUs only */
		odb_cpu_lock(k, cpu, &v);
		qlist_move_cache(k, &q->cpu_quarantine[cpu], &mine, cache);
		odb_cpu_unlock(k, cpu, &v);
		n += qlist_free_all(k, &mine, cache);
	}
	local_irq_save(k, flags);
	quarantine_lock_acquire(k, q);
	if (q->policy == QUARANTINE_QUARTER) {
		qlist_move_cache(k, &q->old_global, &to_free, cache);
	} else {
		for (unsigned long i = 0; i < q->batches; i++) {
			if (qlist_empty(&q->global_quarantine[i]))
				continue;
			qlist_move_cache(k, &q->global_quarantine[i], &to_free, cache);
			/* modern: drop the lock after each non-empty slot (cond_resched) */
			raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
			local_irq_save(k, flags);
			quarantine_lock_acquire(k, q);
		}
		/* quirk: quarantine_size is not lowered */
	}
	raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
	n += qlist_free_all(k, &to_free, cache);
	/* synchronize_srcu (v4.11 on): objects of this cache held by a concurrent
	 * reduce are freed before the cache goes */
	if (q->fixes != QUARANTINE_V4_10)
		synchronize_srcu(k, &q->remove_cache_srcu);
	pthread_mutex_lock(&q->stats_lock);
	q->st.remove_cache_calls++;
	q->st.remove_cache_objects += n;
	pthread_mutex_unlock(&q->stats_lock);
	return n;
}

void kasan_quarantine_remove_cache(struct kmem_cache *cache)
{
	if (!kasan_enabled(cache->k))
		return;
	remove_cache_common(cache);
}

void quarantine_remove_cache(struct kmem_cache *cache)
{
	kasan_quarantine_remove_cache(cache);
}

/* ---- boot ----------------------------------------------------------------------------------- */
int quarantine_init(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;

	q->batches = QUARANTINE_BATCHES_FOR(k->config_nr_cpus);
	q->cpu_quarantine = calloc(k->nr_cpu_ids, sizeof(*q->cpu_quarantine));
	q->cpu_st = aligned_alloc(_Alignof(struct quarantine_cpu_stats),
				  k->nr_cpu_ids * sizeof(*q->cpu_st));
	q->global_quarantine = calloc(q->batches, sizeof(*q->global_quarantine));
	if (!q->cpu_quarantine || !q->cpu_st || !q->global_quarantine) {
		free(q->cpu_quarantine);
		free(q->cpu_st);
		free(q->global_quarantine);
		q->cpu_quarantine = NULL;
		q->cpu_st = NULL;
		q->global_quarantine = NULL;
		return -1;
	}
	for (unsigned int i = 0; i < k->nr_cpu_ids; i++) {
		atomic_init(&q->cpu_st[i].put_calls, 0);
		atomic_init(&q->cpu_st[i].reduce_calls, 0);
	}
	raw_spin_lock_init(&q->quarantine_lock);
	init_srcu_struct(&q->remove_cache_srcu);
	pthread_mutex_init(&q->stats_lock, NULL);
	return 0;
}

void quarantine_exit(struct odb_kernel *k)
{
	struct quarantine *q = &kasan_state(k)->q;

	free(q->cpu_quarantine);
	free(q->cpu_st);
	free(q->global_quarantine);
	q->cpu_quarantine = NULL;
	q->cpu_st = NULL;
	q->global_quarantine = NULL;
	spin_lock_destroy(&q->quarantine_lock);
	cleanup_srcu_struct(&q->remove_cache_srcu);
	pthread_mutex_destroy(&q->stats_lock);
}

/* ---- public API -------------------------------------------------------------------------------- */
int odb_kasan_quarantine_stats(odb_kernel *k, struct odb_quarantine_stats *out, uint64_t *percpu)
{
	struct odb_cpu_visit v;
	struct quarantine *q;
	unsigned long flags;
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	memset(out, 0, sizeof(*out));
	if (!kasan_enabled(k))
		return odb_leave(t, odb_err(k, ODB_ESTATE, "kasan: KASAN is off (kasan=off)"));
	q = &kasan_state(k)->q;
	for (unsigned int c = 0; c < k->nr_cpu_ids; c++) {
		uint64_t b;
		odb_cpu_lock(k, c, &v);
		b = q->cpu_quarantine[c].bytes;
		odb_cpu_unlock(k, c, &v);
		out->percpu_total += b;
		if (percpu)
			percpu[c] = b;
	}
	local_irq_save(k, flags);
	quarantine_lock_acquire(k, q);
	out->policy = (int)q->policy;
	if (q->policy == QUARANTINE_QUARTER) {
		out->size = q->old_global.bytes;
		out->max_size = q->old_quarantine_size;
		out->batches = 1;
		out->slots_used = !qlist_empty(&q->old_global);
		out->ring_bytes = q->old_global.bytes;
	} else {
		out->size = q->quarantine_size;
		out->max_size = q->quarantine_max_size;
		out->batch_size = q->quarantine_batch_size;
		out->batches = q->batches;
		out->head = q->quarantine_head;
		out->tail = q->quarantine_tail;
		for (unsigned long i = 0; i < q->batches; i++) {
			out->ring_bytes += q->global_quarantine[i].bytes;
			out->slots_used += !qlist_empty(&q->global_quarantine[i]);
		}
	}
	/* written under quarantine_lock by quarantine_lock_acquire */
	out->lock_waits = q->st.lock_waits;
	out->lock_wait_ns_total = q->st.lock_wait_ns_total;
	out->lock_wait_ns_max = q->st.lock_wait_ns_max;
	raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
	pthread_mutex_lock(&q->stats_lock);
	out->put_calls = READ_ONCE(q->st.put_calls);
	out->put_refused = READ_ONCE(q->st.put_refused);
	out->flushes = READ_ONCE(q->st.flushes);
	out->reduce_calls = READ_ONCE(q->st.reduce_calls);
	for (unsigned int i = 0; i < k->nr_cpu_ids; i++) {
		out->put_calls += atomic_load_explicit(&q->cpu_st[i].put_calls, memory_order_relaxed);
		out->reduce_calls += atomic_load_explicit(&q->cpu_st[i].reduce_calls,
							  memory_order_relaxed);
	}
	out->reduce_slow = READ_ONCE(q->st.reduce_slow);
	out->reduce_evicting = q->st.reduce_evicting;
	out->evicted_objects = q->st.evicted_objects;
	out->evicted_bytes = q->st.evicted_bytes;
	out->max_evict_bytes = q->st.max_evict_bytes;
	out->max_evict_objects = q->st.max_evict_objects;
	memcpy(out->evict_bytes_hist, q->st.evict_bytes_hist, sizeof(out->evict_bytes_hist));
	memcpy(out->evict_objects_hist, q->st.evict_objects_hist, sizeof(out->evict_objects_hist));
	out->free_ns_max = q->st.free_ns_max;
	out->free_ns_total = q->st.free_ns_total;
	out->free_ns_p50 = hist_percentile(q->st.free_ns_hist, q->st.free_ns_max, 0.50);
	out->free_ns_p99 = hist_percentile(q->st.free_ns_hist, q->st.free_ns_max, 0.99);
	out->lock_ns_max = q->st.lock_ns_max;
	out->lock_ns_total = q->st.lock_ns_total;
	out->lock_ns_p50 = hist_percentile(q->st.lock_ns_hist, q->st.lock_ns_max, 0.50);
	out->lock_ns_p99 = hist_percentile(q->st.lock_ns_hist, q->st.lock_ns_max, 0.99);
	out->remove_cache_calls = q->st.remove_cache_calls;
	out->remove_cache_objects = q->st.remove_cache_objects;
	out->offline_objects = q->st.offline_objects;
	out->in_flight = q->st.in_flight;
	out->peak_total = q->st.peak_total;
	pthread_mutex_unlock(&q->stats_lock);
	return odb_leave(t, ODB_OK);
}

int odb_kasan_quarantine_reduce(odb_kernel *k)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	kasan_quarantine_reduce(k);
	return odb_leave(t, ODB_OK);
}

int odb_kasan_quarantine_drain(odb_kernel *k)
{
	struct odb_task *t = odb_enter(k);
	struct odb_slab_state *ss;
	struct list_head *pos;

	if (!t)
		return odb_enter_failed(k);
	if (!kasan_enabled(k))
		return odb_leave(t, ODB_OK);
	ss = slab_state(k);
	mutex_lock_nocb(k, &ss->slab_mutex);
	for (pos = ss->slab_caches.next; pos != &ss->slab_caches; pos = pos->next)
		remove_cache_common(list_entry(pos, struct kmem_cache, list));
	mutex_unlock_nocb(k, &ss->slab_mutex);
	return odb_leave(t, ODB_OK);
}

/* The quarantine's CPU hotplug callbacks (kasan_cpu_offline / kasan_cpu_online,
 * v5.10 on): the dying vCPU's list is marked offline, so that its puts free at
 * once, and freed; before v5.10 there was none and the list just stays. */
void kasan_cpu_offline(struct odb_kernel *k, unsigned int cpu)
{
	struct odb_cpu_visit v;
	struct quarantine *q;
	struct qlist_head mine = { 0 };
	uint64_t n;

	if (!kasan_enabled(k))
		return;
	q = &kasan_state(k)->q;
	if (q->fixes != QUARANTINE_V5_10)
		return;
	odb_cpu_lock(k, cpu, &v);
	q->cpu_quarantine[cpu].offline = true;
	mine = q->cpu_quarantine[cpu];
	mine.offline = false;
	qlist_init(&q->cpu_quarantine[cpu]);
	odb_cpu_unlock(k, cpu, &v);
	n = qlist_free_all(k, &mine, NULL);
	pthread_mutex_lock(&q->stats_lock);
	q->st.offline_objects += n;
	pthread_mutex_unlock(&q->stats_lock);
}

void kasan_cpu_online(struct odb_kernel *k, unsigned int cpu)
{
	struct odb_cpu_visit v;

	if (!kasan_enabled(k))
		return;
	odb_cpu_lock(k, cpu, &v);
	kasan_state(k)->q.cpu_quarantine[cpu].offline = false;
	odb_cpu_unlock(k, cpu, &v);
}

/* The quarantine's own entry to CPU hotplug (kept for its users): the vCPU
 * goes offline or online, every room's callbacks included. */
int odb_kasan_quarantine_cpu_offline(odb_kernel *k, int cpu, bool offline)
{
	if (!kasan_enabled(k))
		return odb_err(k, ODB_ESTATE, "kasan: KASAN is off (kasan=off)");
	return offline ? odb_cpu_offline(k, cpu) : odb_cpu_online(k, cpu);
}

/* Count one list's nodes by cache: index i of caches[] when the node's cache is
 * caches[i], else *other.  Bytes as the lists count them (cache->size). */
static void qlist_count(struct odb_kernel *k, const struct qlist_head *h, odb_cache *const *caches,
			size_t n, uint64_t *objects, uint64_t *bytes, uint64_t *other)
{
	size_t last = 0;

	for (struct qlist_node *node = h->head; node; node = qlink_next(k, node)) {
		struct kmem_cache *c = qlink_to_cache(k, node);
		size_t i = last;

		if (!c)
			continue;
		if (i >= n || caches[i] != c)
			for (i = 0; i < n && caches[i] != c; i++)
				;
		if (i < n) {
			objects[i]++;
			bytes[i] += c->size;
			last = i;
		} else {
			other[0]++;
			other[1] += c->size;
		}
	}
}

int odb_kasan_quarantine_count(odb_kernel *k, odb_cache *const *caches, size_t n,
			       uint64_t *objects, uint64_t *bytes, uint64_t *other)
{
	struct odb_cpu_visit v;
	struct odb_task *t = odb_enter(k);
	struct quarantine *q;
	unsigned long flags;

	if (!t)
		return odb_enter_failed(k);
	if (!other || (n && (!caches || !objects || !bytes)))
		return odb_leave(t, odb_err(k, ODB_EINVAL, "quarantine count: NULL array"));
	for (size_t i = 0; i < n; i++)
		objects[i] = bytes[i] = 0;
	other[0] = other[1] = 0;
	if (!kasan_enabled(k))
		return odb_leave(t, odb_err(k, ODB_ESTATE, "kasan: KASAN is off (kasan=off)"));
	q = &kasan_state(k)->q;
	for (unsigned int c = 0; c < k->nr_cpu_ids; c++) {
		odb_cpu_lock(k, c, &v);
		qlist_count(k, &q->cpu_quarantine[c], caches, n, objects, bytes, other);
		odb_cpu_unlock(k, c, &v);
	}
	local_irq_save(k, flags);
	quarantine_lock_acquire(k, q);
	if (q->policy == QUARANTINE_QUARTER)
		qlist_count(k, &q->old_global, caches, n, objects, bytes, other);
	else
		for (unsigned long i = 0; i < q->batches; i++)
			qlist_count(k, &q->global_quarantine[i], caches, n, objects, bytes, other);
	raw_spin_unlock_irqrestore(k, &q->quarantine_lock, flags);
	return odb_leave(t, ODB_OK);
}
