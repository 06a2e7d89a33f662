/*
 * The kernel instance: boot, close, tasks ("current"), vCPUs, interrupts
 * "disabled" per vCPU, error messages, time and the per-kernel PRNG.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <time.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "kernel/rooms.h"
#include "kasan/kasan.h"

/* ---- locks --------------------------------------------------------------- */
void spin_lock_init(spinlock_t *l) { atomic_init(&l->v, 0); }
void spin_lock_destroy(spinlock_t *l) { (void)l; }

/* The contended spin_lock: spin a little while the holder runs, then mark the
 * word "sleepers" (2) and sleep until an unlock wakes us; a woken waiter takes
 * the lock as 2, since others may still sleep (Drepper, "Futexes Are Tricky",
 * mutex 2). */
void odb_spin_lock_wait(spinlock_t *l)
{
	int c;

	for (unsigned int i = 0; i < 100; i++) {
		__builtin_ia32_pause();
		c = 0;
		if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
							   memory_order_relaxed))
			return;
	}
	while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void odb_spin_unlock_wake(spinlock_t *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
void mutex_init(struct mutex *m) { spin_lock_init(&m->l); }
void mutex_destroy(struct mutex *m) { spin_lock_destroy(&m->l); }

void odb_fastlock_wait(struct odb_fastlock *l)
{
	for (unsigned int i = 0;; i++) {
		if (!atomic_load_explicit(&l->v, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&l->v, ODB_LOCKED, memory_order_acquire))
			return;
		if (i < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
}

void odb_fastlock_lock_base(struct odb_fastlock *l, struct odb_task_slot *me)
{
	if (unlikely(l->bias.mode == ODB_BIAS_SCHED)) {
		/* interrupts off: a scheduling point, and a wait the scheduler knows of */
		odb_sched_acquire(l->bias.k, ODB_SITE(ODB_SP_LOCK, "local_irq_save"), ODB_LK_FAST, l);
		return;
	}
	if (atomic_exchange_explicit(&l->v, ODB_LOCKED, memory_order_acquire))
		odb_fastlock_wait(l);
	odb_bias_acquired(&l->bias, me, ODB_BIAS_IRQ, l);
}

/* ---- SRCU (kernel.h) ---------------------------------------------------------------- */
void init_srcu_struct(struct srcu_struct *sp)
{
	pthread_rwlock_init(&sp->rw, NULL);
	atomic_init(&sp->readers, 0);
}

void cleanup_srcu_struct(struct srcu_struct *sp)
{
	pthread_rwlock_destroy(&sp->rw);
}

static void drop_deferred(struct odb_task *t);

void srcu_read_lock(struct odb_kernel *k, struct srcu_struct *sp)
{
	odb_nocb_get(k);
	if (unlikely(odb_sched_on(k))) {
		odb_sched_point_slow(k, ODB_SITE(ODB_SP_LOCK, "srcu_read_lock"), sp);
		atomic_fetch_add_explicit(&sp->readers, 1, memory_order_acquire);
		return;
	}
	pthread_rwlock_rdlock(&sp->rw);
}

void srcu_read_unlock(struct odb_kernel *k, struct srcu_struct *sp)
{
	if (unlikely(odb_sched_on(k))) {
		odb_kcsan_release(k, sp);
		atomic_fetch_sub_explicit(&sp->readers, 1, memory_order_release);
		odb_sched_point_slow(k, ODB_SITE(ODB_SP_UNLOCK, "srcu_read_unlock"), sp);
	} else {
		pthread_rwlock_unlock(&sp->rw);
	}
	odb_nocb_put(k);
}

static bool srcu_no_readers(void *arg)
{
	return !atomic_load_explicit(&((struct srcu_struct *)arg)->readers, memory_order_acquire);
}

void synchronize_srcu(struct odb_kernel *k, struct srcu_struct *sp)
{
	if (unlikely(odb_sched_on(k))) {
		if (odb_sched_wait(k, ODB_SITE(ODB_SP_LOCK, "synchronize_srcu"), srcu_no_readers, sp))
			return;
		while (!srcu_no_readers(sp))   /* not a task of a run: no run is in progress */
			sched_yield();
		return;
	}
	pthread_rwlock_wrlock(&sp->rw);
	pthread_rwlock_unlock(&sp->rw);
}

/* ---- the reader-writer semaphore (kernel.h) ----------------------------------------- */
void odb_rwsem_init(struct odb_rwsem *s)
{
	pthread_rwlock_init(&s->rw, NULL);
	atomic_init(&s->readers, 0);
	atomic_init(&s->writer, false);
}

void odb_rwsem_destroy(struct odb_rwsem *s)
{
	pthread_rwlock_destroy(&s->rw);
}

static bool rwsem_no_writer(void *arg)
{
	return !atomic_load(&((struct odb_rwsem *)arg)->writer);
}

static bool rwsem_free(void *arg)
{
	struct odb_rwsem *s = arg;

	return !atomic_load(&s->writer) && !atomic_load(&s->readers);
}

/* Wait for pred under the scheduler (a task of a run), else by yielding (no
 * run is in progress: only threads outside any run take it then). */
static void rwsem_wait(struct odb_kernel *k, const struct odb_sched_site *site, bool (*pred)(void *),
		       struct odb_rwsem *s)
{
	if (!odb_sched_wait(k, site, pred, s))
		while (!pred(s))
			sched_yield();
}

void down_read(struct odb_kernel *k, struct odb_rwsem *s)
{
	if (unlikely(odb_sched_on(k))) {
		rwsem_wait(k, ODB_SITE(ODB_SP_LOCK, "down_read"), rwsem_no_writer, s);
		atomic_fetch_add(&s->readers, 1);   /* no point between the test and this */
		return;
	}
	pthread_rwlock_rdlock(&s->rw);
}

void up_read(struct odb_kernel *k, struct odb_rwsem *s)
{
	if (unlikely(odb_sched_on(k))) {
		odb_kcsan_release(k, s);
		atomic_fetch_sub(&s->readers, 1);
		odb_sched_point_slow(k, ODB_SITE(ODB_SP_UNLOCK, "up_read"), s);
		return;
	}
	pthread_rwlock_unlock(&s->rw);
}

void down_write(struct odb_kernel *k, struct odb_rwsem *s)
{
	if (unlikely(odb_sched_on(k))) {
		rwsem_wait(k, ODB_SITE(ODB_SP_LOCK, "down_write"), rwsem_free, s);
		atomic_store(&s->writer, true);
		return;
	}
	pthread_rwlock_wrlock(&s->rw);
}

void up_write(struct odb_kernel *k, struct odb_rwsem *s)
{
	if (unlikely(odb_sched_on(k))) {
		odb_kcsan_release(k, s);
		atomic_store(&s->writer, false);
		odb_sched_point_slow(k, ODB_SITE(ODB_SP_UNLOCK, "up_write"), s);
		return;
	}
	pthread_rwlock_unlock(&s->rw);
}

/* ---- lock bias (kernel.h) --------------------------------------------------------- */
/* Whether this process can revoke a bias: membarrier(2) with the private
 * expedited command, registered (a property of the process, set once and
 * never undone; asking again is harmless). */
static bool odb_membarrier_ready(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return false;
	return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The heavy side of the asymmetric barrier: every running thread of the
 * process executes a full memory barrier before this returns.  A forked child
 * may have lost the registration: register again, else the global command
 * (slower, needs none). */
static void odb_heavy_barrier(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return;
	syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

void odb_bias_init(struct odb_kernel *k, struct odb_bias *b)
{
	atomic_init(&b->owner, NULL);
	b->k = k;
	b->last = NULL;
	b->streak = 0;
	b->threshold = k->lock_bias;
	b->mode = k->sched_controlled ? ODB_BIAS_SCHED : !k->lock_bias ? ODB_BIAS_OFF : ODB_BIAS_ON;
}

/* The base lock is held and the lock is biased to another slot: take the bias
 * away and wait until its owner is out. */
void odb_bias_revoke(struct odb_bias *b, unsigned int cls, void *lock)
{
	struct odb_task_slot *o = atomic_load_explicit(&b->owner, memory_order_relaxed);

	atomic_store_explicit(&b->owner, NULL, memory_order_relaxed);
	odb_heavy_barrier();
	for (unsigned int i = 0; atomic_load_explicit(&o->held[cls], memory_order_acquire) == lock; i++) {
		if (i < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	if (b->threshold < ODB_BIAS_THRESHOLD_MAX)   /* a biased lock: threshold >= 1 */
		b->threshold *= 2;
	atomic_fetch_add_explicit(&b->k->bias_revocations, 1, memory_order_relaxed);
	b->last = NULL;
	b->streak = 0;
}

/* The streak of base acquisitions by one slot: a new acquirer starts it; at
 * the threshold the lock is biased to the acquirer if its slot is a real one
 * (a slot of the kernel's table, whose tp names its thread; never a task's
 * own_slot or no_slot). */
void odb_bias_streak(struct odb_bias *b, struct odb_task_slot *me, unsigned int cls)
{
	if (b->last != me) {
		b->last = me;
		b->streak = 1;
		return;
	}
	b->streak = 0;
	if (atomic_load_explicit(&me->tp, memory_order_relaxed)) {   /* a real slot */
		atomic_store_explicit(&b->owner, me, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->k->bias_grants, 1, memory_order_relaxed);
	}
}

void odb_lock_bias_info(odb_kernel *k, struct odb_lock_bias_info *out)
{
	out->threshold = k->lock_bias;
	out->grants = atomic_load_explicit(&k->bias_grants, memory_order_relaxed);
	out->revocations = atomic_load_explicit(&k->bias_revocations, memory_order_relaxed);
}

/* ---- PRNG: xoshiro256** seeded by splitmix64 (own implementation) ------------ */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void odb_rng_seed(struct odb_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int n) { return (x << n) | (x >> (64 - n)); }

uint64_t odb_rng_next(struct odb_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
	s[2] ^= t; s[3] = rotl(s[3], 45);
	return res;
}

uint32_t prandom_u32(struct odb_kernel *k)
{
	spin_lock(k, &k->rng_lock);
	uint32_t v = (uint32_t)(odb_rng_next(&k->rng) >> 32);
	spin_unlock(k, &k->rng_lock);
	return v;
}

/* ---- time ------------------------------------------------------------------- */
uint64_t odb_host_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t ktime_get_ns(struct odb_kernel *k)
{
	if (k->clock == ODB_CLOCK_REAL)
		return odb_host_ns() - k->boot_host_ns;
	return atomic_load_explicit(&k->now_ns, memory_order_acquire);
}

/* floor(t * HZ / NSEC_PER_SEC) without a 128-bit division (a slab track
 * takes one per alloc and free): t = q s + r ns gives q * HZ + r * HZ / 1e9
 * exactly, r * HZ staying far below 2^64 for any HZ the cmdline accepts. */
uint64_t jiffies(struct odb_kernel *k)
{
	uint64_t t = ktime_get_ns(k), q = t / NSEC_PER_SEC, r = t % NSEC_PER_SEC;

	return INITIAL_JIFFIES(k->hz) + q * k->hz + r * k->hz / NSEC_PER_SEC;
}

/* msecs_to_jiffies rounds up, as the kernel's does for HZ that does not
 * divide 1000. */
uint64_t msecs_to_jiffies(struct odb_kernel *k, uint64_t ms)
{
	return DIV_ROUND_UP(ms * k->hz, 1000);
}

/* The time at which jiffies first reaches j_rel ticks after boot. */
uint64_t jiffies_to_nsecs(struct odb_kernel *k, uint64_t j)
{
	unsigned __int128 n = (unsigned __int128)j * NSEC_PER_SEC + k->hz - 1;
	return (uint64_t)(n / k->hz);
}

/* ---- tasks ------------------------------------------------------------------- */
/* Runs in the exiting thread: its slot (if it has one) is freed first. */
static void task_destructor(void *p)
{
	struct odb_task *t = p;
	struct odb_kernel *k = t->k;
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
	struct odb_task_slot *sl = &k->task_slots[odb_task_slot_of(tp)];

	if (atomic_load_explicit(&sl->tp, memory_order_relaxed) == tp) {
		atomic_store_explicit(&sl->t, 0, memory_order_relaxed);
		atomic_store_explicit(&sl->tp, 0, memory_order_release);
	}

	pthread_mutex_lock(&k->tasks_lock);
	list_del(&t->node);
	pthread_mutex_unlock(&k->tasks_lock);
	if (t->bug)
		odb_report_put(t->bug);
	if (t->last_bug)
		odb_report_put(t->last_bug);
	drop_deferred(t);
	free(t);
}

static void task_stack_bounds(struct odb_task *t)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		if (pthread_attr_getstack(&a, &addr, &size) == 0) {
			t->stack_lo = (uintptr_t)addr;
			t->stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&a);
	}
}

/* Give the calling thread its slot if the slot is free (else it stays on the
 * pthread key: another live thread hashes there). */
static struct odb_task *task_cache(struct odb_kernel *k, struct odb_task *t)
{
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer(), free_tp = 0;
	struct odb_task_slot *sl = &k->task_slots[odb_task_slot_of(tp)];

	/* look before the compare-and-swap: a thread whose slot is taken comes
	 * here on every lookup and must not pull the slot's cache line away from
	 * its owner each time */
	if (atomic_load_explicit(&sl->tp, memory_order_relaxed) == 0 &&
	    atomic_compare_exchange_strong_explicit(&sl->tp, &free_tp, tp, memory_order_acq_rel,
						    memory_order_relaxed)) {
		atomic_store_explicit(&sl->t, (uintptr_t)t, memory_order_relaxed);
		t->slot = sl;
	}
	return t;
}

/* Make the calling thread's task: pid 0 takes the next one. */
static struct odb_task *task_create(struct odb_kernel *k, int pid, const char *comm)
{
	struct odb_task *t = aligned_alloc(_Alignof(struct odb_task), sizeof(*t));

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->k = k;
	t->cpu = -1;
	t->home_lock = &k->cpus[0].irq_lock;
	t->slot = &t->own_slot;
	t->irq_cpu = -1;
	task_stack_bounds(t);
	pthread_mutex_lock(&k->tasks_lock);
	t->pid = pid ? pid : ++k->next_pid;
	list_add_tail(&t->node, &k->tasks);
	pthread_mutex_unlock(&k->tasks_lock);
	if (comm)
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
	else
		snprintf(t->comm, sizeof(t->comm), t->pid == 1 ? "swapper/0" : "task%d", t->pid);
	if (pthread_setspecific(k->task_key, t) != 0) {
		pthread_mutex_lock(&k->tasks_lock);
		list_del(&t->node);
		pthread_mutex_unlock(&k->tasks_lock);
		free(t);
		return NULL;
	}
	return task_cache(k, t);
}

struct odb_task *odb_current_slow(struct odb_kernel *k)
{
	struct odb_task *t = pthread_getspecific(k->task_key);

	if (t)
		return task_cache(k, t);
	return task_create(k, 0, NULL);
}

int odb_next_pid(struct odb_kernel *k)
{
	int pid;

	pthread_mutex_lock(&k->tasks_lock);
	pid = ++k->next_pid;
	pthread_mutex_unlock(&k->tasks_lock);
	return pid;
}

/* A new thread's task with a pid given out before it started (the controlled
 * scheduler numbers its tasks in spawn order, whatever order threads start in). */
struct odb_task *odb_task_adopt(struct odb_kernel *k, int pid, const char *comm)
{
	if (pthread_getspecific(k->task_key))
		return NULL;
	return task_create(k, pid, comm);
}

int smp_processor_id(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);
	return t ? smp_processor_id_task(t) : 0;
}

struct odb_task *odb_enter(struct odb_kernel *k)
{
	struct odb_task *t;

	if (unlikely(atomic_load_explicit(&k->closed, memory_order_acquire)))
		return NULL;
	t = odb_current(k);
	if (unlikely(!t))
		return NULL;
	if (unlikely(odb_sched_on(k)) && !t->st && t->depth == 0 && !odb_sched_gate(k))
		return NULL;   /* the kernel was wedged by a controlled run */
	if (t->depth++ == 0)
		t->errmsg[0] = '\0';
	return t;
}

int odb_enter_failed(struct odb_kernel *k)
{
	return atomic_load(&k->closed) ? ODB_ECLOSED : ODB_ENOMEM;
}

uint64_t odb_stat_ns(struct odb_kernel *k)
{
	if (unlikely(odb_sched_on(k)))
		return odb_sched_clock(k);
	return odb_host_ns();
}

void odb_defer(struct odb_task *t, struct odb_deferred *d)
{
	d->next = NULL;
	if (!t->deferred_tail)
		t->deferred_tail = &t->deferred;
	*t->deferred_tail = d;
	t->deferred_tail = &d->next;
}

void odb_run_deferred(struct odb_task *t)
{
	/* one at a time off the head: a callback's own API calls run the rest */
	while (t->deferred && !odb_task_atomic(t)) {
		struct odb_deferred *d = t->deferred;

		t->deferred = d->next;
		if (!t->deferred)
			t->deferred_tail = &t->deferred;
		t->depth++;   /* inside a call: the callback's calls are nested ones */
		d->fn(t->k, d);
		t->depth--;
	}
}

static void drop_deferred(struct odb_task *t)
{
	while (t->deferred) {
		struct odb_deferred *d = t->deferred;

		t->deferred = d->next;
		free(d);
	}
}

struct odb_task *odb_nocb_get(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	if (t)
		t->nocb++;
	return t;
}

void odb_nocb_put(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	if (t && t->nocb && --t->nocb == 0 && t->deferred && t->depth == 0)
		odb_run_deferred(t);   /* not inside an API call (a worker): now */
}

int odb_leave(struct odb_task *t, int ret)
{
	if (unlikely(t->deferred))
		odb_run_deferred(t);
	if (--t->depth == 0 && unlikely(t->bug)) {
		if (t->last_bug)
			odb_report_put(t->last_bug);
		t->last_bug = t->bug;
		t->bug = NULL;
		return ODB_EBUG;
	}
	return ret;
}

int odb_err(struct odb_kernel *k, int err, const char *fmt, ...)
{
	struct odb_task *t = odb_current(k);
	va_list ap;

	if (t) {
		va_start(ap, fmt);
		vsnprintf(t->errmsg, sizeof(t->errmsg), fmt, ap);
		va_end(ap);
	}
	return err;
}

const char *odb_strerror(odb_kernel *k)
{
	struct odb_task *t = pthread_getspecific(k->task_key);

	if (!t)
		return "";
	return t->errmsg;
}

const struct odb_report *odb_last_bug(odb_kernel *k)
{
	struct odb_task *t = pthread_getspecific(k->task_key);
	struct odb_report_impl *r;

	if (!t || !t->last_bug)
		return NULL;
	r = (struct odb_report_impl *)t->last_bug;
	atomic_fetch_add(&r->refs, 1);
	return t->last_bug;
}

/* ---- vCPUs ------------------------------------------------------------------- */
unsigned int odb_nr_cpus(odb_kernel *k) { return k->nr_cpu_ids; }
unsigned int odb_config_nr_cpus(odb_kernel *k) { return k->config_nr_cpus; }

/* Rebind t (leaving an exclusive hold first). */
int task_bind_cpu(struct odb_kernel *k, struct odb_task *t, int cpu, int *old)
{
	if (cpu < -1 || cpu >= (int)k->nr_cpu_ids)
		return odb_err(k, ODB_EINVAL, "cpu %d out of range (kernel has %u vCPUs)",
			       cpu, k->nr_cpu_ids);
	if (t->exclusive && t->irq_depth == 1) {
		odb_fastlock_unlock(&k->cpus[t->irq_cpu].irq_lock, t->slot);
		t->irq_depth = 0;
		t->irq_cpu = -1;
		t->exclusive = false;
	}
	if (t->irq_depth)
		return odb_err(k, ODB_EBUSY, "cannot migrate with interrupts disabled");
	if (old)
		*old = t->cpu;
	task_set_cpu(k, t, cpu);
	return ODB_OK;
}

/* Own vCPU cpu: hold its irq lock for the whole binding, so nested
 * local_irq_save()s in the fast paths cost no atomic operation. */
int task_bind_exclusive(struct odb_kernel *k, struct odb_task *t, int cpu)
{
	int ret;

	if (cpu < 0 || cpu >= (int)k->nr_cpu_ids)
		return odb_err(k, ODB_EINVAL, "cpu %d out of range (kernel has %u vCPUs)",
			       cpu, k->nr_cpu_ids);
	ret = task_bind_cpu(k, t, cpu, NULL);
	if (ret)
		return ret;
	odb_fastlock_lock_base(&k->cpus[cpu].irq_lock, t->slot);   /* held as long as bound */
	t->irq_depth = 1;
	t->irq_cpu = cpu;
	t->exclusive = true;
	return ODB_OK;
}

int odb_bind_cpu(odb_kernel *k, int cpu, int *old)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	return odb_leave(t, task_bind_cpu(k, t, cpu, old));
}

int odb_bind_cpu_exclusive(odb_kernel *k, int cpu)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	return odb_leave(t, task_bind_exclusive(k, t, cpu));
}

/* ---- CPU hotplug ---------------------------------------------------------------- */
/* cpu_down / cpu_up under the CPU hotplug lock, in the kernel's order: the
 * dying vCPU's own teardown callbacks (KASAN's) run while it is still online,
 * then it leaves the online mask, then the DEAD callbacks (SLUB's, debug
 * objects') run; coming up, it joins the mask first. */
static int cpu_set_online(odb_kernel *k, int cpu, bool online)
{
	struct odb_task *t = odb_enter(k);
	unsigned int n = 0;
	int ret = ODB_OK;

	if (!t)
		return odb_enter_failed(k);
	if (cpu < 0 || cpu >= (int)k->nr_cpu_ids)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "cpu %d out of range (kernel has %u vCPUs)",
					    cpu, k->nr_cpu_ids));
	down_write(k, &k->cpu_hotplug_lock);
	for (unsigned int i = 0; i < k->nr_cpu_ids; i++)
		n += cpu_online(k, i);
	if (cpu_online(k, (unsigned int)cpu) == online)
		goto out;
	if (!online && n == 1) {
		ret = odb_err(k, ODB_EBUSY, "cpu %d is the last online vCPU", cpu);
		goto out;
	}
	if (online) {
		atomic_store_explicit(&k->cpus[cpu].offline, false, memory_order_release);
		odb_rooms_cpu_online(k, (unsigned int)cpu);
	} else {
		odb_rooms_cpu_teardown(k, (unsigned int)cpu);
		atomic_store_explicit(&k->cpus[cpu].offline, true, memory_order_release);
		odb_rooms_cpu_dead(k, (unsigned int)cpu);
	}
out:
	up_write(k, &k->cpu_hotplug_lock);
	return odb_leave(t, ret);
}

int odb_cpu_offline(odb_kernel *k, int cpu) { return cpu_set_online(k, cpu, false); }
int odb_cpu_online(odb_kernel *k, int cpu) { return cpu_set_online(k, cpu, true); }

bool odb_cpu_is_online(odb_kernel *k, int cpu)
{
	return cpu >= 0 && cpu < (int)k->nr_cpu_ids && cpu_online(k, (unsigned int)cpu);
}

int odb_current_cpu(odb_kernel *k) { return smp_processor_id(k); }

int odb_current_pid(odb_kernel *k)
{
	struct odb_task *t = odb_current(k);
	return t ? t->pid : 0;
}

void odb_current_comm(odb_kernel *k, char *buf, size_t len)
{
	struct odb_task *t = odb_current(k);

	if (buf && len)
		snprintf(buf, len, "%s", t ? t->comm : "");
}

void odb_set_comm(odb_kernel *k, const char *comm)
{
	struct odb_task *t = odb_current(k);
	if (t && comm)
		snprintf(t->comm, sizeof(t->comm), "%s", comm);
}

unsigned long odb_local_irq_save(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);
	int cpu;

	if (unlikely(!t))
		return 0;   /* no task: nothing can be nested; run unprotected */
	cpu = smp_processor_id_task(t);
	if (t->irq_depth++ == 0) {
		odb_fastlock_lock(&k->cpus[cpu].irq_lock, t->slot);
		t->irq_cpu = cpu;
	}
	return (unsigned long)t->irq_cpu + 1;
}

void odb_local_irq_restore(struct odb_kernel *k, unsigned long flags)
{
	struct odb_task *t;

	if (unlikely(!flags))
		return;
	t = odb_current(k);   /* the one local_irq_save found: it exists */
	if (--t->irq_depth == 0) {
		odb_fastlock_unlock(&k->cpus[flags - 1].irq_lock, t->slot);
		t->irq_cpu = -1;
	}
}

/* ---- boot and shutdown --------------------------------------------------------- */
void odb_config_init(struct odb_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cpus = 2;
	cfg->nr_cpus = ODB_MAX_CPUS;
	cfg->ram = 256ULL << 20;
	cfg->clock = ODB_CLOCK_VIRTUAL;
	cfg->hz = 0;
}

static int cfg_err(char *errbuf, size_t errlen, int err, const char *msg)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", msg);
	return err;
}

int odb_kernel_create(const struct odb_config *cfg, odb_kernel **out,
		      char *errbuf, size_t errlen)
{
	struct odb_kernel *k;
	char eb[ODB_ERRMSG_LEN] = "";
	int ret = ODB_ENOMEM;
	unsigned int i;

	*out = NULL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (cfg->cpus < 1 || cfg->cpus > ODB_MAX_CPUS)
		return cfg_err(errbuf, errlen, ODB_EINVAL, "cpus: must be between 1 and 256");
	if (cfg->nr_cpus && cfg->nr_cpus < cfg->cpus)
		return cfg_err(errbuf, errlen, ODB_EINVAL, "nr_cpus: must be >= cpus");
	if (cfg->nr_cpus > 8192)
		return cfg_err(errbuf, errlen, ODB_EINVAL, "nr_cpus: at most 8192");
	if (cfg->ram < (4ULL << 20) || cfg->ram > (1ULL << 44))
		return cfg_err(errbuf, errlen, ODB_EINVAL, "ram: must be between 4M and 16T");
	if (cfg->clock != ODB_CLOCK_VIRTUAL && cfg->clock != ODB_CLOCK_REAL)
		return cfg_err(errbuf, errlen, ODB_EINVAL, "clock: must be 'virtual' or 'real'");

	k = aligned_alloc(_Alignof(struct odb_kernel), sizeof(*k));   /* task slots: 64-byte lines */
	if (!k)
		return cfg_err(errbuf, errlen, ODB_ENOMEM, "out of memory");
	memset(k, 0, sizeof(*k));
	k->nr_cpu_ids = cfg->cpus;
	k->config_nr_cpus = cfg->nr_cpus ? cfg->nr_cpus : ODB_MAX_CPUS;
	if (k->config_nr_cpus < k->nr_cpu_ids)
		k->config_nr_cpus = k->nr_cpu_ids;
	k->hz = cfg->hz ? cfg->hz : 1000;
	k->clock = cfg->clock;
	k->seed = cfg->seed;
	k->ram_bytes = cfg->ram & ~(uint64_t)(PAGE_SIZE - 1);
	k->vmalloc_size = vmalloc_region_size(k->ram_bytes);
	INIT_LIST_HEAD(&k->kaslr_node);
	k->cmdline = strdup(cfg->cmdline ? cfg->cmdline : "");
	INIT_LIST_HEAD(&k->tasks);
	pthread_mutex_init(&k->tasks_lock, NULL);
	mutex_init(&k->advance_lock);
	odb_rwsem_init(&k->cpu_hotplug_lock);
	pthread_mutex_init(&k->reports_lock, NULL);
	pthread_mutex_init(&k->destroy_hooks_lock, NULL);
	spin_lock_init(&k->rng_lock);
	odb_rng_seed(&k->rng, cfg->seed);
	k->boot_host_ns = odb_host_ns();
	if (!k->cmdline || pthread_key_create(&k->task_key, task_destructor) != 0) {
		free(k->cmdline);
		free(k);
		return cfg_err(errbuf, errlen, ODB_ENOMEM, "out of memory");
	}
	k->cpus = aligned_alloc(64, sizeof(struct odb_cpu) * k->nr_cpu_ids);
	if (!k->cpus)
		goto fail;
	for (i = 0; i < ODB_BIAS_NR; i++)
		atomic_init(&k->no_slot.held[i], ODB_BIAS_NEVER);
	k->lock_bias = ODB_BIAS_THRESHOLD;   /* odebug.lock_bias=; the vCPU locks' thresholds after the command line */
	for (i = 0; i < k->nr_cpu_ids; i++) {
		atomic_init(&k->cpus[i].irq_lock.v, NULL);
		atomic_init(&k->cpus[i].offline, false);
		odb_bias_init(k, &k->cpus[i].irq_lock.bias);
	}
	odb_fault_init(k);
	if (odb_log_init(&k->log, 1u << 20))
		goto fail;
	if (odb_depot_init(k))
		goto fail;
	if (odb_mem_init(k)) {
		snprintf(eb, sizeof(eb), "ram: cannot map %llu bytes",
			 (unsigned long long)k->ram_bytes);
		goto fail;
	}
	/* The command line is parsed before the rooms start (early params);
	 * hz= may change HZ, so the workqueue starts after it. */
	if (odb_rooms_early_init(k))
		goto fail;
	ret = odb_parse_cmdline(k, k->cmdline, eb, sizeof(eb));
	if (ret)
		goto fail;
	/* the memory layout (after nokaslr), before anything computes an address */
	ret = ODB_ENOMEM;
	if (kernel_randomize_memory(k, eb, sizeof(eb)))
		goto fail;
	if (vmalloc_init(k)) {
		snprintf(eb, sizeof(eb), "vmalloc: cannot map %llu bytes of vmalloc space",
			 (unsigned long long)k->vmalloc_size);
		goto fail;
	}
	if (k->lock_bias && !odb_membarrier_ready())
		k->lock_bias = 0;
	if (k->sched_controlled) {
		ret = odb_sched_init(k, eb, sizeof(eb));
		if (ret)
			goto fail;
	}
	for (i = 0; i < k->nr_cpu_ids; i++)
		odb_bias_init(k, &k->cpus[i].irq_lock.bias);
	ret = ODB_ENOMEM;
	if (odb_wq_init(k))
		goto fail;
	ret = odb_rooms_init(k, eb, sizeof(eb));
	if (ret)
		goto fail;
	atomic_store(&k->api_fast, !k->sched_controlled);
	*out = k;
	return ODB_OK;
fail:
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", eb[0] ? eb : "out of memory");
	odb_kernel_destroy(k);
	return ret;
}

/* ---- interruption of long calls ----------------------------------------------------- */
void odb_set_poll_hook(odb_kernel *k, odb_poll_hook hook, void *ctx)
{
	k->poll_hook_ctx = ctx;
	k->poll_hook = hook;
}

int odb_poll(odb_kernel *k, uint64_t *last_ns)
{
	uint64_t now;

	if (!k->poll_hook)
		return ODB_OK;
	now = odb_host_ns();
	if (*last_ns && now - *last_ns < ODB_POLL_NS)
		return ODB_OK;
	*last_ns = now ? now : 1;
	return k->poll_hook(k->poll_hook_ctx) ? ODB_EINTR : ODB_OK;
}

void odb_join_polling(struct odb_kernel *k, pthread_t th, uint64_t *last_ns, bool *interrupted,
		      void (*cancel)(void *arg), void *arg)
{
	while (k->poll_hook && !*interrupted) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(ODB_POLL_NS / 2);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(th, NULL, &ts) == 0)
			return;
		if (odb_poll(k, last_ns)) {
			*interrupted = true;
			cancel(arg);
		}
	}
	pthread_join(th, NULL);
}

bool odb_kernel_closed(odb_kernel *k) { return atomic_load(&k->closed); }

void odb_kernel_close(odb_kernel *k)
{
	atomic_store(&k->api_fast, false);
	if (atomic_exchange(&k->closed, true))
		return;
	kaslr_release(k);   /* its addresses may be another kernel's from now on */
	if (odb_wq_is_worker(k)) {
		/* closed from a work item: stop the loop; destroy joins the worker */
		pthread_mutex_lock(&k->wq_lock);
		k->wq_stop = true;
		pthread_cond_broadcast(&k->wq_cond);
		pthread_mutex_unlock(&k->wq_lock);
		return;
	}
	odb_wq_stop(k);
}

static void *deferred_destroy(void *arg)
{
	odb_kernel_destroy(arg);
	return NULL;
}

struct odb_destroy_hook {
	struct odb_destroy_hook *next;
	odb_destroy_fn fn;
	void *ctx;
};

int odb_kernel_on_destroy(odb_kernel *k, odb_destroy_fn fn, void *ctx)
{
	struct odb_destroy_hook *h;

	if (!fn)
		return odb_err(k, ODB_EINVAL, "odb_kernel_on_destroy: fn is NULL");
	h = malloc(sizeof(*h));
	if (!h)
		return odb_err(k, ODB_ENOMEM, "odb_kernel_on_destroy: out of memory");
	h->fn = fn;
	h->ctx = ctx;
	pthread_mutex_lock(&k->destroy_hooks_lock);
	h->next = k->destroy_hooks;
	k->destroy_hooks = h;
	pthread_mutex_unlock(&k->destroy_hooks_lock);
	return ODB_OK;
}

int odb_kernel_on_destroy_remove(odb_kernel *k, odb_destroy_fn fn, void *ctx)
{
	struct odb_destroy_hook **pp, *h = NULL;

	pthread_mutex_lock(&k->destroy_hooks_lock);
	for (pp = &k->destroy_hooks; *pp; pp = &(*pp)->next)
		if ((*pp)->fn == fn && (*pp)->ctx == ctx) {
			h = *pp;
			*pp = h->next;
			break;
		}
	pthread_mutex_unlock(&k->destroy_hooks_lock);
	free(h);
	return h ? ODB_OK : ODB_ENOENT;
}

/* The hooks run without the lock (one may call odb_kernel_on_destroy_remove). */
static void run_destroy_hooks(odb_kernel *k)
{
	struct odb_destroy_hook *h;

	pthread_mutex_lock(&k->destroy_hooks_lock);
	h = k->destroy_hooks;
	k->destroy_hooks = NULL;
	pthread_mutex_unlock(&k->destroy_hooks_lock);
	while (h) {
		struct odb_destroy_hook *next = h->next;
		h->fn(k, h->ctx);
		free(h);
		h = next;
	}
}

void odb_kernel_destroy(odb_kernel *k)
{
	struct list_head *pos, *n;

	if (!k)
		return;
	if (k->forked) {
		/* an inherited kernel in a fork()ed child (kernel/kaslr.c): its memory
		 * is shared with the parent's live kernel, its worker and locks the
		 * parent's: unmap the child's view, touch nothing else */
		kaslr_forget(k);
		kasan_release_shadow(k);
		vmalloc_release_window(k);
		odb_mem_exit(k);
		return;
	}
	run_destroy_hooks(k);
	atomic_store(&k->api_fast, false);
	atomic_store(&k->closed, true);
	kaslr_forget(k);
	if (unlikely(odb_sched_on(k)) && odb_sched_wedged(k)) {
		/* Tasks of a controlled run that ended in a deadlock or a stall still
		 * wait inside k, holding its locks: give back the simulated memory
		 * (they never touch it again) and leave everything else as it is. */
		kasan_release_shadow(k);
		vmalloc_release_window(k);
		odb_mem_exit(k);
		return;
	}
	if (odb_wq_is_worker(k)) {
		/* Destroyed from one of its own work items (e.g. a garbage collection
		 * on the worker): the worker cannot join itself.  Stop it and let a
		 * detached thread finish the teardown once the worker has returned. */
		pthread_t th;
		pthread_attr_t a;

		odb_set_frame_hook(k, NULL, NULL);
		pthread_mutex_lock(&k->wq_lock);
		k->wq_stop = true;
		pthread_cond_broadcast(&k->wq_cond);
		pthread_mutex_unlock(&k->wq_lock);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &a, deferred_destroy, k) == 0) {
			pthread_attr_destroy(&a);
			return;
		}
		pthread_attr_destroy(&a);
		return;   /* cannot tear down safely: leak rather than corrupt */
	}
	odb_wq_stop(k);
	odb_rooms_exit(k);
	odb_wq_exit(k);
	pthread_key_delete(k->task_key);
	/* threads that exited ran their destructor under tasks_lock */
	pthread_mutex_lock(&k->tasks_lock);
	list_for_each_safe(pos, n, &k->tasks) {
		struct odb_task *t = list_entry(pos, struct odb_task, node);
		if (t->bug)
			odb_report_put(t->bug);
		if (t->last_bug)
			odb_report_put(t->last_bug);
		drop_deferred(t);
		free(t);
	}
	pthread_mutex_unlock(&k->tasks_lock);
	vmalloc_exit(k);
	odb_mem_exit(k);
	odb_depot_exit(k);
	odb_reports_exit(k);
	odb_log_exit(&k->log);
	odb_fault_exit(k);
	free(k->cpus);
	spin_lock_destroy(&k->rng_lock);
	pthread_mutex_destroy(&k->reports_lock);
	pthread_mutex_destroy(&k->destroy_hooks_lock);
	mutex_destroy(&k->advance_lock);
	odb_rwsem_destroy(&k->cpu_hotplug_lock);
	pthread_mutex_destroy(&k->tasks_lock);
	free(k->cmdline);
	odb_sched_exit(k);
	free(k);
}

void odb_free(void *p) { free(p); }

const char *odb_cmdline(odb_kernel *k) { return k->cmdline; }
unsigned int odb_hz(odb_kernel *k) { return k->hz; }
uint64_t odb_jiffies(odb_kernel *k) { return jiffies(k); }
uint64_t odb_now_ns(odb_kernel *k) { return ktime_get_ns(k); }
enum odb_clock_kind odb_clock(odb_kernel *k) { return k->clock; }

/* ---- taint ---------------------------------------------------------------------- */
void add_taint(struct odb_kernel *k, unsigned int flag)
{
	atomic_fetch_or(&k->taint, 1UL << flag);
}

const char *print_tainted(struct odb_kernel *k, char *buf, size_t len)
{
	/* taint_flags[] letters in kernel order; 'G' stands for "not proprietary" */
	static const char letters[] = "PFSRMBUDAWCIOELKXTN";
	unsigned long t = atomic_load(&k->taint);
	size_t n, last = 0;

	if (!t) {
		snprintf(buf, len, "Not tainted");
		return buf;
	}
	n = (size_t)snprintf(buf, len, "Tainted: ");
	for (size_t i = 0; i < sizeof(letters) - 1 && n + 1 < len; i++) {
		char c = (t & (1UL << i)) ? letters[i] : ' ';
		if (i == 0 && c == ' ')
			c = 'G';
		buf[n++] = c;
		if (c != ' ')
			last = n;
	}
	buf[last < len ? last : len - 1] = '\0';
	return buf;
}
