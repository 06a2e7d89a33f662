/*
 * The simulated kernel's environment: the instance (struct odb_kernel) and
 * what kernel code expects around it -- current task, vCPUs and "interrupts
 * disabled", locks, time and delayed work, the page allocator, printk and
 * structured reports, the stack depot, fault injection and the boot command
 * line.  Every room (slab/, kasan/, debugobjects/) includes this header.
 *
 * Lock order (outer to inner), for every room:
 *   advance_lock > vCPU irq lock > subsystem locks (list_lock, pool_lock,
 *   quarantine_lock, bucket locks) > zone lock > depot lock > log/report lock.
 * A thread never takes another vCPU's irq lock while holding its own; code
 * that visits every vCPU (flush_all-like) takes them one at a time.
 * No lock is held while calling out to a registered callback (work items,
 * fixups, the frame hook runs without blocking).
 */
#ifndef ODB_KERNEL_KERNEL_H
#define ODB_KERNEL_KERNEL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "odebug/odebug.h"

/* ---- compiler helpers ------------------------------------------------------ */
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define ALIGN(x, a)      (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define READ_ONCE(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define __printf(a, b) __attribute__((format(printf, a, b)))

#define PAGE_SHIFT ODB_PAGE_SHIFT
#define PAGE_SIZE  ODB_PAGE_SIZE
#define MAX_PAGE_ORDER ODB_MAX_ORDER
#define NR_PAGE_ORDERS (MAX_PAGE_ORDER + 1)

/* ---- intrusive doubly linked list ------------------------------------------ */
struct list_head { struct list_head *next, *prev; };
#define LIST_HEAD_INIT(n) { &(n), &(n) }
static inline void INIT_LIST_HEAD(struct list_head *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct list_head *h) { return h->next == h; }
static inline void __list_add(struct list_head *n, struct list_head *p, struct list_head *nx)
{ nx->prev = n; n->next = nx; n->prev = p; p->next = n; }
static inline void list_add(struct list_head *n, struct list_head *h) { __list_add(n, h, h->next); }
static inline void list_add_tail(struct list_head *n, struct list_head *h) { __list_add(n, h->prev, h); }
static inline void list_del(struct list_head *e)
{ e->next->prev = e->prev; e->prev->next = e->next; e->next = e->prev = e; }
/* Move every entry of list to the tail of head (list is left empty). */
static inline void list_splice_tail(struct list_head *list, struct list_head *head)
{
	if (list_empty(list))
		return;
	list->next->prev = head->prev;
	head->prev->next = list->next;
	list->prev->next = head;
	head->prev = list->prev;
	INIT_LIST_HEAD(list);
}
#define list_entry(p, t, m) container_of(p, t, m)
#define list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)

/* ---- scheduling points (kernel/sched.c) ---------------------------------------- *
 * With odebug.sched=controlled the kernel's tasks run one at a time and every
 * scheduling point below hands control to the scheduler, which picks the next
 * task (kernel/sched.c has the list of points).  A site names a point: what
 * happens there and the source line.  With odebug.sched=free (the default)
 * each point is one predictable test of k->sched in a slow path; the inline
 * fast paths are never entered by a controlled kernel (its caches boot without
 * them), so they carry no point at all. */
enum odb_sp_kind {
	ODB_SP_LOCK,        /* a lock acquire (spinlock, list_lock, mutex, slab_lock, irq lock) */
	ODB_SP_UNLOCK,      /* its release */
	ODB_SP_CMPXCHG,     /* a cmpxchg of slab freelist+counters */
	ODB_SP_READ,        /* a READ_ONCE of state the kernel reads without its lock */
	ODB_SP_WRITE,       /* a WRITE_ONCE of such state */
	ODB_SP_WORK,        /* a work item starts */
	ODB_SP_MARK,        /* an explicit odb_sched_point(): a racy window of the kernel code */
	ODB_SP_NR
};
struct odb_sched_site {
	const char *what;             /* "spin_lock(&d->pool_lock)", "cmpxchg_double_slab", "d->obj_freeing" */
	const char *func;             /* the function it is in */
	const char *file;
	unsigned int line;
	unsigned int kind;            /* enum odb_sp_kind */
};
/* The site of the expansion point (static: one per call site, never on a hot path's way). */
#define ODB_SITE(kind_, what_) __extension__ ({ \
	static const struct odb_sched_site odb_site_ = { (what_), __func__, __FILE__, __LINE__, (kind_) }; \
	&odb_site_; })
/* Lock kinds the scheduler knows how to try, test and release. */
enum odb_lock_kind { ODB_LK_SPIN, ODB_LK_FAST, ODB_LK_BIT, ODB_LK_MUTEX };

struct odb_kernel;
/* k runs under the controlled scheduler (defined below struct odb_kernel). */
static inline bool odb_sched_on(const struct odb_kernel *k);
/* The slow halves (kernel/sched.c).  A thread that is not one of the
 * scheduler's tasks, or no run in progress: the plain lock operation. */
void odb_sched_point_slow(struct odb_kernel *k, const struct odb_sched_site *site, const void *obj);
void odb_sched_acquire(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock);
bool odb_sched_tryacquire(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock);
void odb_sched_release(struct odb_kernel *k, const struct odb_sched_site *site, int kind, void *lock);
/* Wait until pred(arg) holds (another task makes it true): false when the
 * caller is not a task of a controlled run (it then waits its own way). */
bool odb_sched_wait(struct odb_kernel *k, const struct odb_sched_site *site, bool (*pred)(void *),
		    void *arg);
/* A scheduling point: where the kernel code has a racy window, another task
 * may run here.  obj: what it concerns (a lock, a variable), or NULL. */
#define odb_sched_point(k, what) \
	do { if (unlikely(odb_sched_on(k))) odb_sched_point_slow((k), ODB_SITE(ODB_SP_MARK, (what)), NULL); } while (0)
/* An access to state the kernel reads without its lock (READ_ONCE_RACY /
 * WRITE_ONCE_RACY: a scheduling point first, the racy window), or a write
 * of it under the lock (KCSAN_ACCESS: no point).  Under odebug.kcsan=on the
 * controlled scheduler checks each one for data races as KCSAN does: two
 * accesses of different tasks, one a write, not ordered by a lock, not both
 * marked.  marked: READ_ONCE/WRITE_ONCE in the design of the time; false for
 * an access it left plain. */
void odb_sched_access(struct odb_kernel *k, const struct odb_sched_site *site, const void *addr,
		      unsigned int size, bool write, bool marked, bool point);
#define READ_ONCE_RACY(k, x, marked) __extension__ ({ \
	if (unlikely(odb_sched_on(k))) \
		odb_sched_access((k), ODB_SITE(ODB_SP_READ, #x), &(x), sizeof(x), false, (marked), true); \
	READ_ONCE(x); })
#define WRITE_ONCE_RACY(k, x, v, marked) do { \
	if (unlikely(odb_sched_on(k))) \
		odb_sched_access((k), ODB_SITE(ODB_SP_WRITE, #x), &(x), sizeof(x), true, (marked), true); \
	WRITE_ONCE(x, v); } while (0)
#define KCSAN_ACCESS(k, x, write, marked) do { \
	if (unlikely(odb_sched_on(k)) && (k)->kcsan) \
		odb_sched_access((k), ODB_SITE((write) ? ODB_SP_WRITE : ODB_SP_READ, #x), &(x), sizeof(x), \
				 (write), (marked), false); } while (0)
/* Happens-before edges the scheduler cannot see (a work item queued -> run). */
void odb_kcsan_release(struct odb_kernel *k, const void *obj);
void odb_kcsan_acquire(struct odb_kernel *k, const void *obj);

/* ---- locks ----------------------------------------------------------------- *
 * spinlock_t and raw_spinlock_t: one compare-and-swap to take, one exchange to
 * drop, as cheap as the kernel's uncontended spinlock; a contended waiter
 * spins briefly, then sleeps on a futex (threads may outnumber cores by far,
 * as in hackbench, where spinning would starve the lock holder).  The word is
 * 0 free, 1 held, 2 held with sleepers (the unlock then wakes one).
 * The kernel-named operations take the kernel (spin_lock(k, l)): under the
 * controlled scheduler each acquire and release is a scheduling point. */
typedef struct { atomic_int v; } spinlock_t;
typedef spinlock_t raw_spinlock_t;
/* struct mutex: the same futex word (a holder may sleep; waiters sleep). */
struct mutex { spinlock_t l; };

void spin_lock_init(spinlock_t *l);
void spin_lock_destroy(spinlock_t *l);
void odb_spin_lock_wait(spinlock_t *l);
void odb_spin_unlock_wake(spinlock_t *l);
/* The plain operations (no scheduling point). */
static inline void __spin_lock(spinlock_t *l)
{
	int c = 0;

	if (likely(atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
							   memory_order_relaxed)))
		return;
	odb_spin_lock_wait(l);
}
static inline void __spin_unlock(spinlock_t *l)
{
	if (unlikely(atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2))
		odb_spin_unlock_wake(l);
}
static inline bool __spin_trylock(spinlock_t *l)
{
	int c = 0;

	return atomic_compare_exchange_strong_explicit(&l->v, &c, 1, memory_order_acquire,
						       memory_order_relaxed);
}
static inline void odb_spin_lock(struct odb_kernel *k, spinlock_t *l, const struct odb_sched_site *site,
				 int kind)
{
	if (unlikely(odb_sched_on(k)))
		odb_sched_acquire(k, site, kind, l);
	else
		__spin_lock(l);
}
static inline void odb_spin_unlock(struct odb_kernel *k, spinlock_t *l, const struct odb_sched_site *site,
				   int kind)
{
	if (unlikely(odb_sched_on(k)))
		odb_sched_release(k, site, kind, l);
	else
		__spin_unlock(l);
}
static inline bool odb_spin_trylock(struct odb_kernel *k, spinlock_t *l, const struct odb_sched_site *site)
{
	if (unlikely(odb_sched_on(k)))
		return odb_sched_tryacquire(k, site, ODB_LK_SPIN, l);
	return __spin_trylock(l);
}
#define spin_lock(k, l)    odb_spin_lock((k), (l), ODB_SITE(ODB_SP_LOCK, "spin_lock(" #l ")"), ODB_LK_SPIN)
#define spin_unlock(k, l)  odb_spin_unlock((k), (l), ODB_SITE(ODB_SP_UNLOCK, "spin_unlock(" #l ")"), ODB_LK_SPIN)
#define spin_trylock(k, l) odb_spin_trylock((k), (l), ODB_SITE(ODB_SP_LOCK, "spin_trylock(" #l ")"))
#define raw_spin_lock_init spin_lock_init
#define raw_spin_lock spin_lock
#define raw_spin_unlock spin_unlock
#define raw_spin_trylock spin_trylock
void mutex_init(struct mutex *m);
void mutex_destroy(struct mutex *m);
#define mutex_lock(k, m)   odb_spin_lock((k), &(m)->l, ODB_SITE(ODB_SP_LOCK, "mutex_lock(" #m ")"), ODB_LK_MUTEX)
#define mutex_unlock(k, m) odb_spin_unlock((k), &(m)->l, ODB_SITE(ODB_SP_UNLOCK, "mutex_unlock(" #m ")"), ODB_LK_MUTEX)

enum { ODB_BIAS_IRQ, ODB_BIAS_NODE, ODB_BIAS_NR };
#define ODB_BIAS_NEVER ((void *)1)
#define ODB_BIAS_THRESHOLD 1024u
#define ODB_BIAS_THRESHOLD_MAX (1u << 24)

struct odb_task_slot {
	_Atomic uintptr_t tp;         /* the owner's thread pointer, 0 = free */
	_Atomic uintptr_t t;          /* its struct odb_task */
	_Atomic(void *) held[ODB_BIAS_NR];   /* the biased lock of each class it is inside */
} __attribute__((aligned(64)));      /* written by its thread only: a line of its own */

/* ---- tasks ("current") --------------------------------------------------------- */
#define TASK_COMM_LEN 16
#define ODB_ERRMSG_LEN 256

#define ODB_DEPOT_RECENT 4
struct stack_record;
struct odb_task {
	struct list_head node;        /* k->tasks */
	struct odb_kernel *k;
	int pid;
	int cpu;                      /* bound vCPU, -1 = unbound (acts on CPU 0) */
	int home_cpu;                 /* max(cpu, 0): smp_processor_id(), the fast paths' vCPU */
	struct odb_fastlock *home_lock; /* &k->cpus[home_cpu].irq_lock */
	struct odb_task_slot *slot;   /* its task slot (lock bias identity), else &own_slot */
	_Atomic(void *) idle_note;    /* odb_irq_fast_try's note when it takes no lock (always NULL) */
	int irq_cpu;                  /* vCPU whose irq lock this task holds */
	unsigned int irq_depth;       /* local_irq_save nesting */
	char comm[TASK_COMM_LEN];
	char errmsg[ODB_ERRMSG_LEN];
	const struct odb_report *bug; /* pending ODB_EBUG report (reference) */
	const struct odb_report *last_bug;
	uintptr_t stack_lo, stack_hi; /* host stack of the thread */
	unsigned int in_work;         /* running a work item */
	unsigned int depth;           /* nesting of public API calls (callbacks) */
	unsigned long slab_errors;    /* KUnit-rule error count made by this task */
	/* inside odb_slab_kunit_begin/end (slub_kunit's "slab_errors" resource):
	 * SLUB errors are counted, not printed nor recorded */
	bool slab_kunit;
	unsigned long slab_kunit_start;
	bool exclusive;               /* holds its vCPU's irq lock while bound (odb_bind_cpu_exclusive) */
	struct odb_stask *st;         /* its task of the controlled scheduler (kernel/sched.c), or NULL */
	unsigned int nocb;            /* slab_mutex / srcu read sections held (odb_task_atomic) */
	struct odb_deferred *deferred, **deferred_tail;   /* callbacks waiting for no lock held */
	/* odb_kasan_check_ip / odb_kasan_report_foreign: the instrumented caller's
	 * return address while its check runs (a report's stack and "in <function>"
	 * start there), 0 otherwise */
	unsigned long cc_ip;
	/* kasan_disable_current() nesting (current->kasan_depth): while > 0 the
	 * task's bad accesses are not reported (bad frees still are) */
	unsigned int kasan_depth;
	/* the stack depot's records this task saved last (stackdepot.c), with
	 * the walk key each was found by: a save that walks the same frames again
	 * finds its handle here without hashing */
	struct stack_record *depot_recent[ODB_DEPOT_RECENT];
	uint64_t depot_recent_key[ODB_DEPOT_RECENT];
	/* the stack template whose frames a recent record is known to begin with
	 * (stack_depot_save_tmpl), or NULL */
	const struct odb_stack_tmpl *depot_recent_tmpl[ODB_DEPOT_RECENT];
	unsigned int depot_recent_next;
	/* KASAN's track saves by this task (kasan.c): how many, and the last
	 * handle -- how an API call's slow path hands a stack template over */
	unsigned int kasan_saves;
	uint32_t kasan_last_stack;
	/* a slotless task's notes (tp 0: never biased, never read by another thread) */
	struct odb_task_slot own_slot;
};

/* The calling thread's task in k, created on first use (NULL only on OOM):
 * odb_current (inline, below struct odb_kernel) is one pthread_getspecific on
 * the fast path; odb_current_slow creates the task. */
static inline struct odb_task *odb_current(struct odb_kernel *k);
struct odb_task *odb_current_slow(struct odb_kernel *k);
static inline int smp_processor_id_task(const struct odb_task *t)
{ return t->home_cpu; }   /* max(t->cpu, 0), kept by task_set_cpu */
int smp_processor_id(struct odb_kernel *k);
/* Rebind a task (cpu -1: unbound); exclusive: own the vCPU (its irq lock held). */
int task_bind_cpu(struct odb_kernel *k, struct odb_task *t, int cpu, int *old);
int task_bind_exclusive(struct odb_kernel *k, struct odb_task *t, int cpu);

/*
 * Deferred callbacks (issue 18: no user callback runs under a core lock).  A
 * callback of a user-supplied descriptor (a debug-objects warning's hint and
 * fixup) found necessary while the task holds a lock that another thread can
 * need or that the callback's own calls would take again -- a vCPU's irq lock
 * (other than an exclusive binding's), slab_mutex, the quarantine's srcu read
 * section -- is queued on the task and run, in order, as soon as it holds
 * none: when the API call returns (odb_leave), or after the work item.
 */
struct odb_deferred {
	struct odb_deferred *next;
	void (*fn)(struct odb_kernel *k, struct odb_deferred *d);   /* runs it, frees d */
};
struct odb_task;
static inline bool odb_task_atomic(const struct odb_task *t);
/* Queue d on t (runs when t holds no such lock). */
void odb_defer(struct odb_task *t, struct odb_deferred *d);
/* Run t's deferred callbacks if it holds no such lock now. */
void odb_run_deferred(struct odb_task *t);
/* slab_mutex's and the srcu read side's bookkeeping (a NULL task: no count). */
struct odb_task *odb_nocb_get(struct odb_kernel *k);
void odb_nocb_put(struct odb_kernel *k);
#define mutex_lock_nocb(k, m)   do { odb_nocb_get(k); mutex_lock(k, m); } while (0)
#define mutex_unlock_nocb(k, m) do { mutex_unlock(k, m); odb_nocb_put(k); } while (0)

/* Public API entry/exit (every exit of an entered call must leave): odb_enter returns NULL when k is closed or the task
 * cannot be made (the caller returns odb_enter_failed(k)); odb_leave turns a pending report under
 * panic_on_warn into ODB_EBUG. */
struct odb_task *odb_enter(struct odb_kernel *k);
int odb_leave(struct odb_task *t, int ret);
int odb_enter_failed(struct odb_kernel *k);
/* Record the calling thread's error message and return err. */
int odb_err(struct odb_kernel *k, int err, const char *fmt, ...) __printf(3, 4);

/* ---- quickly reacquirable locks: biased to one thread ----------------------- *
 * A lock that one thread takes again and again -- a vCPU's irq lock, a cache's
 * list_lock, in the common single-threaded use -- is biased to that thread,
 * which then takes and drops it with plain loads and stores, no bus-locked
 * read-modify-write, as the kernel's this_cpu operations and a CPU-local
 * irq disable cost none (Dice, Moir and Scherer's "quickly reacquirable
 * locks"; revocation by an asymmetric barrier, membarrier(2), as user-space
 * RCU does).
 *
 * The owner enters by noting the lock in its task slot's held[class], a
 * compiler barrier, and reading the lock's owner: still itself, it is inside.
 * It leaves by clearing held[class] (release).  Any other thread takes the
 * base lock (so waiters serialise there), clears the owner, runs membarrier()
 * (every running thread of the process executes a full barrier) and waits
 * until the old owner's held[class] no longer names the lock.  Dekker's
 * argument with the barrier on one side: either the owner's note is visible
 * to the revoker, who waits for it, or the owner's read comes after the
 * barrier, sees the owner cleared, and the owner takes the base lock instead.
 *
 * The base lock's holder biases the lock to itself once it has taken it
 * `threshold` times in a row with nobody else in between: 1024 at first,
 * doubled by each revocation (a few microseconds each), so revocations stay
 * rare against the atomic operations they save.  The identity is the thread's
 * task slot, which lives as long as the kernel, so a revoker never reads
 * freed memory.  A thread without a slot is never biased: it notes into its
 * task's own_slot (tp 0, never an owner); code with no task at all uses the
 * kernel's no_slot, whose notes read ODB_BIAS_NEVER so nothing writes them.
 * odebug.lock_bias=off, or a host without membarrier(2), keeps every lock
 * unbiased (threshold 0, and the fast paths take the lock word by one
 * exchange).
 * Release/acquire pairs order every hand-over (the owner's release of its note
 * to the revoker's acquire; the base lock the other way), which is what
 * ThreadSanitizer checks. */
struct odb_bias {
	_Atomic(struct odb_task_slot *) owner;   /* NULL: unbiased */
	struct odb_kernel *k;         /* its counters */
	struct odb_task_slot *last;   /* last, streak, threshold: under the base lock */
	unsigned int streak, threshold;
	uint8_t mode;                 /* enum odb_bias_mode, fixed at init */
};
enum odb_bias_mode {
	ODB_BIAS_ON,                  /* biased after `threshold' acquisitions in a row */
	ODB_BIAS_OFF,                 /* never biased (odebug.lock_bias=off): the fast paths
				       * may take the lock word by one exchange */
	ODB_BIAS_SCHED,               /* never biased, and every acquisition goes through the
				       * controlled scheduler (odebug.sched=controlled) */
};

struct odb_kernel;
/* threshold from odebug.lock_bias= (0: never biased), mode from it and odebug.sched= */
void odb_bias_init(struct odb_kernel *k, struct odb_bias *b);
/* Between the owner's note and its read of the owner: a compiler barrier on
 * these two words only (the store cannot sink below it, the load cannot rise
 * above it), so nothing else is reloaded; the hardware's store-load
 * reordering is the revoker's membarrier() to undo. */
#define ODB_BIAS_BARRIER(note, owner) __asm__ volatile("" : "+m"(note), "+m"(owner))
/* The biased entry for a caller that knows it is inside no lock of the class
 * (an irq lock while its task's irq_depth is 0) and whose me is its own (a
 * task's slot, never the shared no_slot): true = inside (leave with
 * odb_bias_exit).  A thread notes the lock before it knows it owns it; a
 * non-owner's note is only ever read by a revoker waiting on it, who waits a
 * moment more. */
static inline bool odb_bias_enter_first(struct odb_bias *b, struct odb_task_slot *me,
					unsigned int cls, void *lock)
{
	atomic_store_explicit(&me->held[cls], lock, memory_order_relaxed);
	ODB_BIAS_BARRIER(me->held[cls], b->owner);
	if (likely(atomic_load_explicit(&b->owner, memory_order_acquire) == me))
		return true;
	atomic_store_explicit(&me->held[cls], NULL, memory_order_release);
	return false;
}
/* The same for any caller: not while me is inside another lock of the class
 * (then the base lock), nor for no_slot, whose notes read ODB_BIAS_NEVER. */
static inline bool odb_bias_enter(struct odb_bias *b, struct odb_task_slot *me, unsigned int cls,
				  void *lock)
{
	return likely(!atomic_load_explicit(&me->held[cls], memory_order_relaxed)) &&
	       odb_bias_enter_first(b, me, cls, lock);
}
static inline void odb_bias_exit(struct odb_task_slot *me, unsigned int cls)
{
	atomic_store_explicit(&me->held[cls], NULL, memory_order_release);
}
/* me holds lock through its bias (else through the base lock) */
static inline bool odb_bias_held(struct odb_task_slot *me, unsigned int cls, const void *lock)
{
	return atomic_load_explicit(&me->held[cls], memory_order_relaxed) == lock;
}
/* After taking the base lock: revoke another thread's bias, count the streak,
 * bias the lock to me at the threshold. */
void odb_bias_revoke(struct odb_bias *b, unsigned int cls, void *lock);
void odb_bias_streak(struct odb_bias *b, struct odb_task_slot *me, unsigned int cls);
static inline void odb_bias_acquired(struct odb_bias *b, struct odb_task_slot *me, unsigned int cls,
				     void *lock)
{
	struct odb_task_slot *o = atomic_load_explicit(&b->owner, memory_order_relaxed);

	if (unlikely(o && o != me))
		odb_bias_revoke(b, cls, lock);
	else if (o)
		return;   /* biased to me already (a nested entry, an exclusive binding) */
	if (b->mode)
		return;
	if (likely(b->last == me) && b->streak + 1 < b->threshold)
		b->streak++;
	else
		odb_bias_streak(b, me, cls);
}

/* ---- the vCPU lock: test-and-set with a plain release store to unlock --------- *
 * One atomic RMW to take it, none to drop it, none at all while it is biased.
 * Waiters spin briefly, then yield (threads may far outnumber cores, and
 * holders never sleep inside). */
struct odb_fastlock {
	_Atomic(void *) v;            /* NULL free, ODB_LOCKED held: pointer-sized, like a note */
	struct odb_bias bias;
};
#define ODB_LOCKED ((void *)1)
void odb_fastlock_wait(struct odb_fastlock *l);
/* The base lock, then the bias bookkeeping (an exclusive binding takes this). */
void odb_fastlock_lock_base(struct odb_fastlock *l, struct odb_task_slot *me);
static inline void odb_fastlock_lock(struct odb_fastlock *l, struct odb_task_slot *me)
{
	if (likely(odb_bias_enter(&l->bias, me, ODB_BIAS_IRQ, l)))
		return;
	odb_fastlock_lock_base(l, me);
}
static inline void odb_fastlock_unlock(struct odb_fastlock *l, struct odb_task_slot *me)
{
	if (odb_bias_held(me, ODB_BIAS_IRQ, l))
		odb_bias_exit(me, ODB_BIAS_IRQ);
	else if (unlikely(l->bias.mode == ODB_BIAS_SCHED))
		odb_sched_release(l->bias.k, ODB_SITE(ODB_SP_UNLOCK, "local_irq_restore"), ODB_LK_FAST, l);
	else
		atomic_store_explicit(&l->v, NULL, memory_order_release);
}

/* ---- a spinlock that may be biased (list_lock) --------------------------------- */
struct odb_bspinlock {
	spinlock_t l;
	struct odb_bias bias;
	/* acquisitions (biased ones included) and those that waited for another
	 * holder: updated by the holder, read without the lock */
	_Atomic unsigned long acquired, contended;
};
static inline void odb_bspin_lock_init(struct odb_kernel *k, struct odb_bspinlock *bl)
{
	spin_lock_init(&bl->l);
	odb_bias_init(k, &bl->bias);
	atomic_init(&bl->acquired, 0);
	atomic_init(&bl->contended, 0);
}
/* one more acquisition (the holder alone writes it: a plain add, no atomic RMW) */
static inline void odb_bspin_count(_Atomic unsigned long *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}
static inline void odb_bspin_lock_at(struct odb_bspinlock *bl, struct odb_task_slot *me,
				     const struct odb_sched_site *site)
{
	if (likely(odb_bias_enter(&bl->bias, me, ODB_BIAS_NODE, bl))) {
		odb_bspin_count(&bl->acquired);
		return;
	}
	if (unlikely(bl->bias.mode == ODB_BIAS_SCHED)) {
		odb_sched_acquire(bl->bias.k, site, ODB_LK_SPIN, &bl->l);
		odb_bspin_count(&bl->acquired);
		return;
	}
	if (unlikely(!__spin_trylock(&bl->l))) {
		odb_spin_lock_wait(&bl->l);
		odb_bspin_count(&bl->contended);
	}
	odb_bspin_count(&bl->acquired);
	odb_bias_acquired(&bl->bias, me, ODB_BIAS_NODE, bl);
}
static inline void odb_bspin_unlock_at(struct odb_bspinlock *bl, struct odb_task_slot *me,
				       const struct odb_sched_site *site)
{
	if (odb_bias_held(me, ODB_BIAS_NODE, bl))
		odb_bias_exit(me, ODB_BIAS_NODE);
	else if (unlikely(bl->bias.mode == ODB_BIAS_SCHED))
		odb_sched_release(bl->bias.k, site, ODB_LK_SPIN, &bl->l);
	else
		__spin_unlock(&bl->l);
}
#define odb_bspin_lock(bl, me) \
	odb_bspin_lock_at((bl), (me), ODB_SITE(ODB_SP_LOCK, "spin_lock(" #bl ")"))
#define odb_bspin_unlock(bl, me) \
	odb_bspin_unlock_at((bl), (me), ODB_SITE(ODB_SP_UNLOCK, "spin_unlock(" #bl ")"))

/* ---- SRCU (the quarantine's remove_cache_srcu) ------------------------------------ *
 * srcu_read_lock/unlock around a read-side section, synchronize_srcu waits
 * until no section is in progress.  A reader-writer lock on a free kernel;
 * under the controlled scheduler a count of readers that the scheduler's wait
 * knows of (the lock and unlock are points). */
struct srcu_struct {
	pthread_rwlock_t rw;
	atomic_long readers;
};
void init_srcu_struct(struct srcu_struct *sp);
void cleanup_srcu_struct(struct srcu_struct *sp);
void srcu_read_lock(struct odb_kernel *k, struct srcu_struct *sp);
void srcu_read_unlock(struct odb_kernel *k, struct srcu_struct *sp);
void synchronize_srcu(struct odb_kernel *k, struct srcu_struct *sp);

/* ---- a reader-writer semaphore (cpus_read_lock: the CPU hotplug lock) -------------- *
 * A pthread rwlock on a free kernel; under the controlled scheduler counts
 * that the scheduler's waits know of (each operation a point). */
struct odb_rwsem {
	pthread_rwlock_t rw;
	atomic_int readers;
	atomic_bool writer;
};
void odb_rwsem_init(struct odb_rwsem *s);
void odb_rwsem_destroy(struct odb_rwsem *s);
void down_read(struct odb_kernel *k, struct odb_rwsem *s);
void up_read(struct odb_kernel *k, struct odb_rwsem *s);
void down_write(struct odb_kernel *k, struct odb_rwsem *s);
void up_write(struct odb_kernel *k, struct odb_rwsem *s);
#define cpus_read_lock(k)    down_read((k), &(k)->cpu_hotplug_lock)
#define cpus_read_unlock(k)  up_read((k), &(k)->cpu_hotplug_lock)

/* ---- vCPUs and "interrupts disabled" ----------------------------------------- */
struct odb_cpu {
	struct odb_fastlock irq_lock; /* stands in for local_irq_disable() */
	atomic_bool offline;          /* CPU hotplug (odb_cpu_offline) */
} __attribute__((aligned(64)));

/* local_irq_save/restore: takes the current vCPU's irq lock (nesting-aware);
 * flags remembers the vCPU so restore releases the same one. */
unsigned long odb_local_irq_save(struct odb_kernel *k);
void odb_local_irq_restore(struct odb_kernel *k, unsigned long flags);
#define local_irq_save(k, flags)    do { (flags) = odb_local_irq_save(k); } while (0)
#define local_irq_restore(k, flags) odb_local_irq_restore(k, flags)
#define raw_spin_lock_irqsave(k, l, flags) \
	do { local_irq_save(k, flags); \
	     odb_spin_lock((k), (l), ODB_SITE(ODB_SP_LOCK, "spin_lock_irqsave(" #l ")"), ODB_LK_SPIN); } while (0)
#define raw_spin_unlock_irqrestore(k, l, flags) \
	do { odb_spin_unlock((k), (l), ODB_SITE(ODB_SP_UNLOCK, "spin_unlock_irqrestore(" #l ")"), ODB_LK_SPIN); \
	     local_irq_restore(k, flags); } while (0)
#define spin_lock_irqsave raw_spin_lock_irqsave
#define spin_unlock_irqrestore raw_spin_unlock_irqrestore

/* ---- time -------------------------------------------------------------------- */
#define NSEC_PER_SEC  1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_USEC 1000ULL
/* INITIAL_JIFFIES on 64-bit: (unsigned long)(unsigned int)(-300 * HZ) */
#define INITIAL_JIFFIES(hz) ((uint64_t)(uint32_t)(-300 * (int64_t)(hz)))
uint64_t ktime_get_ns(struct odb_kernel *k);
uint64_t jiffies(struct odb_kernel *k);
uint64_t msecs_to_jiffies(struct odb_kernel *k, uint64_t ms);
uint64_t jiffies_to_nsecs(struct odb_kernel *k, uint64_t j);
/* host CLOCK_MONOTONIC in ns (for measurements, whatever the kernel's clock) */
uint64_t odb_host_ns(void);

/* ---- workqueue ------------------------------------------------------------- */
struct odb_work {
	struct list_head node;        /* k->wq_list, sorted by (due, seq) */
	odb_work_fn fn;
	void *arg;
	uint64_t due_ns;
	uint64_t seq;
	int cpu;                      /* vCPU that queued it */
	bool pending;
	bool running;
	bool heap;                    /* made by odb_work_create (freed by destroy) */
	bool free_after_run;          /* destroyed by its own callback: freed when it returns */
	struct odb_task *runner;
};
/* Kernel code embeds a struct odb_work (INIT_DELAYED_WORK equivalent). */
void INIT_DELAYED_WORK(struct odb_work *w, odb_work_fn fn, void *arg);
bool schedule_work(struct odb_kernel *k, struct odb_work *w);
bool schedule_delayed_work(struct odb_kernel *k, struct odb_work *w, uint64_t delay);
bool cancel_delayed_work_sync(struct odb_kernel *k, struct odb_work *w);
bool flush_delayed_work(struct odb_kernel *k, struct odb_work *w);

/* ---- memory ---------------------------------------------------------------- */
#define PG_buddy    (1u << 0)   /* head of a free block on a buddy list */
#define PG_head     (1u << 1)   /* head of an allocated block (order > 0) */
#define PG_tail     (1u << 2)
#define PG_slab     (1u << 3)
#define PG_reserved (1u << 4)
#define PG_alloc    (1u << 5)   /* head of an allocated block (any order) */
#define PG_vmalloc  (1u << 6)   /* a page of a vmalloc area (odebug's: only vfree frees it) */

/* struct page: 128 bytes.  priv[] is room-owned: slab/ overlays struct slab
 * (16-byte aligned for the freelist+counters double-word cmpxchg). */
struct page {
	uint32_t flags;
	uint32_t order;
	uint32_t head;                     /* index of the head page (tails) */
	uint32_t _pad;
	_Alignas(16) uint64_t priv[12];    /* bytes 16..111: the first 48 share flags' cache line */
	uint32_t buddy_next, buddy_prev;  /* free-list links (page index + 1) */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct page) == 128, "struct page is 128 bytes");

struct odb_zone {
	spinlock_t lock;
	uint32_t free_head[NR_PAGE_ORDERS];   /* page index + 1, 0 = empty */
	uint64_t nr_free[NR_PAGE_ORDERS];
};

static inline uintptr_t odb_ptr_add(void *p, size_t n) { return (uintptr_t)p + n; }

/* Host pointer <-> simulated address, for addresses known to be in the arena
 * (the direct map at the kernel's page_offset_base, kernel/kaslr.c). */
#define virt_to_host(k, a) ((void *)((k)->ram + ((a) - (k)->page_offset_base)))
#define host_to_virt(k, p) ((odb_addr_t)((char *)(p) - (k)->ram) + (k)->page_offset_base)
static inline bool odb_in_arena(const struct odb_kernel *k, odb_addr_t a, size_t len);
struct page *virt_to_page(struct odb_kernel *k, odb_addr_t a);
struct page *virt_to_head_page(struct odb_kernel *k, odb_addr_t a);
odb_addr_t page_address(struct odb_kernel *k, const struct page *p);
static inline uint64_t page_to_pfn(struct odb_kernel *k, const struct page *p);
/* alloc_pages/__free_pages: NULL on failure (warn_alloc unless NOWARN). */
struct page *alloc_pages(struct odb_kernel *k, unsigned int gfp, unsigned int order);
void __free_pages(struct odb_kernel *k, struct page *page, unsigned int order);
uint64_t totalram_pages(struct odb_kernel *k);
/* Hook for the rooms: runs before a page block is returned to the buddy
 * allocator (debug_check_no_obj_freed, kasan poisoning). */
typedef void (*odb_page_free_hook)(struct odb_kernel *k, odb_addr_t addr, size_t size);
/* ... and after a block is taken from it (kasan unpoisoning, post_alloc_hook). */
typedef void (*odb_page_alloc_hook)(struct odb_kernel *k, odb_addr_t addr, size_t size);

/* ---- fault injection --------------------------------------------------------- */
struct fault_attr {
	const char *name;
	spinlock_t lock;
	unsigned long probability;
	unsigned long interval;
	long times;
	long space;
	unsigned long verbose;
	unsigned long count;
	unsigned long calls, failures;
};
struct failslab_attr { struct fault_attr attr; bool ignore_gfp_reclaim; bool cache_filter; };
struct fail_page_alloc_attr {
	struct fault_attr attr;
	bool ignore_gfp_highmem;
	bool ignore_gfp_reclaim;
	unsigned int min_order;
};
void fault_attr_init(struct fault_attr *a, const char *name);
#define FAULT_NOWARN (1u << 0)   /* enum fault_flags: no fail_dump */
bool should_fail_ex(struct odb_kernel *k, struct fault_attr *a, size_t size, unsigned int flags);
bool should_fail(struct odb_kernel *k, struct fault_attr *a, size_t size);
/* Parse "<interval>,<probability>,<space>,<times>" (setup_fault_attr). */
int setup_fault_attr(struct odb_kernel *k, struct fault_attr *a, const char *str);

/* ---- PRNG (per kernel) ---------------------------------------------------------- */
struct odb_rng { uint64_t s[4]; };
void odb_rng_seed(struct odb_rng *r, uint64_t seed);
uint64_t odb_rng_next(struct odb_rng *r);
uint32_t prandom_u32(struct odb_kernel *k);

/* ---- printk and reports --------------------------------------------------------- */
void printk(struct odb_kernel *k, const char *fmt, ...) __printf(2, 3);
void vprintk(struct odb_kernel *k, const char *fmt, va_list ap);
#define pr_err(k, ...)  printk(k, __VA_ARGS__)
#define pr_warn(k, ...) printk(k, __VA_ARGS__)
#define pr_info(k, ...) printk(k, __VA_ARGS__)

/* Internal mutable view of a report while it is built. */
struct odb_report_impl {
	struct odb_report pub;
	atomic_int refs;
	char *text;                /* owned */
	size_t text_len, text_cap;
	char kind_buf[96];
	char cache_buf[64];
	char subsys_buf[32];       /* a C user's subsystem (odb_report_simple) */
	bool quiet;                /* count, do not print (KUnit rule) */
	bool no_panic;             /* a plain pr_warn (warn_alloc): never panic_on_warn */
};
struct odb_report_impl *report_new(struct odb_kernel *k, const char *subsystem,
				   const char *kind);
/* Append one line of report text (no trailing newline needed). */
void report_line(struct odb_report_impl *r, const char *fmt, ...) __printf(2, 3);
void report_set_cache(struct odb_report_impl *r, const char *cache);
/* Print (unless quiet) and store the report; panic_on_warn marks the current
 * task so its API call returns ODB_EBUG.  Consumes the builder reference. */
void report_publish(struct odb_kernel *k, struct odb_report_impl *r);
/* WARN(): a report of the kernel's format -- the "cut here" banner, pre and
 * msg, "WARNING: CPU: c PID: p at file:line fn+off/size", the CPU line, the
 * call trace, the end marker -- tainting W (panic_on_warn applies).  cache and
 * object may be NULL / 0. */
void odb_warn(struct odb_kernel *k, const char *subsystem, const char *kind, const char *cache,
	      odb_addr_t object, const char *pre, const char *msg, const char *file, int line,
	      const void *fn);
/* (odb_sprint_symbol, %pS of a host code address: public, odebug.h) */
/* panic_on_warn handling for a plain WARN: print and maybe mark the task. */
void odb_check_panic_on_warn(struct odb_kernel *k, const struct odb_report *r);

/* ---- stack depot ---------------------------------------------------------------- */
#define ODB_STACK_DEPTH 16
uint32_t stack_depot_save_current(struct odb_kernel *k, unsigned int skip);
/* The calling context from the frame that returns to ip (an instrumented C
 * function calling a KASAN callback) outwards, while the frames stay in ip's
 * module; stack_depot_save_current(k, skip) if ip is not on the frame chain. */
uint32_t stack_depot_save_from(struct odb_kernel *k, unsigned long ip, unsigned int skip);
/*
 * Stack templates (issue 16: the KASAN fast paths of the public API).  A save
 * made at a fixed depth below a known frame F (an API entry's own frame)
 * records the frames between the save and F -- always the same return
 * addresses for one code path -- and then F's chain outwards.  A template is
 * that inner part, captured from a real save of the slow path (never built
 * by hand); stack_depot_save_tmpl() then saves the template's frames followed
 * by a walk from F, which is the record the slow path's own save makes for
 * the same call (the same frames, the same truncation, the same Python
 * location), so handles and printed stacks are the same.
 */
struct odb_stack_tmpl {
	unsigned int n;               /* frames before F's */
	unsigned int raw_base;        /* where F's frames start in the raw walk */
	/* the template's identity for the task's recent records: the first kept
	 * template with the same n, raw_base and frames (code paths that differ
	 * only in a branch the stack does not show share it), or NULL for itself */
	const struct odb_stack_tmpl *canon;
	uintptr_t text_lo, text_span; /* odebug's text: the walk's range (stackdepot.c) */
	void *frames[ODB_STACK_DEPTH];
};
/* A depot record (stackdepot.c): immutable once published, lives as long as
 * the kernel. */
struct stack_record {
	uint32_t hash;
	uint32_t handle;           /* index + 1 */
	struct stack_record *next; /* bucket chain; immutable once published */
	uint16_t nr;
	char *py;                  /* Python caller or NULL */
	void *entries[ODB_STACK_DEPTH];
};
/* The save of the slow path's record for a call whose inner frames are *tp
 * and whose frame chain from F = fp outwards is the caller's; t: the calling
 * thread's task as its task slot knows it (odb_current_fast), or NULL. */
uint32_t stack_depot_save_tmpl(struct odb_kernel *k, struct odb_task *t,
			       const struct odb_stack_tmpl *tp, void *fp);
/* Whether two templates make the same records from one frame chain (the same
 * n, raw_base and inner frames): code paths that differ only in a branch the
 * stack does not show share a canon. */
bool stack_depot_tmpl_same(const struct odb_stack_tmpl *a, const struct odb_stack_tmpl *b);
/* Capture into *out the inner frames of the record behind handle, a save
 * made by stack_depot_save_current(k, skip) below F = fp in the calling
 * function: true if the record ends with F's chain (walked now), holds all of
 * its frames (not truncated) and its inner frames all lie in odebug's text. */
bool stack_depot_tmpl_capture(struct odb_kernel *k, uint32_t handle, unsigned int skip, void *fp,
			      struct odb_stack_tmpl *out);
/* dump_stack(): "CPU: ... Comm: ..." + "Call Trace:" + the current stack. */
void dump_stack(struct odb_kernel *k);
/* Print each frame of handle as " name+0xoff/0xsize" into r. */
void stack_depot_print_to(struct odb_kernel *k, uint32_t handle, struct odb_report_impl *r);

/* ---- command line ------------------------------------------------------------ */
/* A boot parameter handler: val is NULL for a bare "key".  Return 0, or
 * odb_err(k, ODB_EINVAL, ...) naming the parameter. */
typedef int (*odb_param_fn)(struct odb_kernel *k, const char *val);
struct odb_param {
	const char *name;
	odb_param_fn set;
	/* show the current value into buf (for odb_param_get), may be NULL */
	void (*get)(struct odb_kernel *k, char *buf, size_t len);
};
/* Every room's parameters, terminated by {NULL}.  Defined in kernel/params.c */
extern const struct odb_param odb_params[];

/* ---- taint ------------------------------------------------------------------ */
#define TAINT_BAD_PAGE 5              /* 'B' */
#define TAINT_WARN     9              /* 'W' */
void add_taint(struct odb_kernel *k, unsigned int flag);
/* "Not tainted" or "Tainted: G    B" (flags that are set, kernel letters). */
const char *print_tainted(struct odb_kernel *k, char *buf, size_t len);
/* %pS of a host code address into buf (the depot's symboliser). */
void odb_symbolise(struct odb_kernel *k, const void *pc, char *buf, size_t len);
/* The Python caller recorded with a depot stack ("" if none). */
const char *stack_depot_py(struct odb_kernel *k, uint32_t handle, char *buf, size_t len);

/* ---- the kernel instance -------------------------------------------------------- */
struct odb_log {
	pthread_mutex_t lock;
	char *buf;                 /* ring of NUL-separated lines */
	size_t cap, head, len;     /* byte ring */
};

#define ODB_TASK_SLOT_BITS 8
struct odb_sched;
struct odb_kernel {
	/* first, so that odb_current_fast indexes k itself */
	struct odb_task_slot task_slots[1u << ODB_TASK_SLOT_BITS];
	/* the controlled scheduler (odebug.sched=controlled), NULL when free */
	struct odb_sched *sched;
	bool sched_controlled;            /* odebug.sched=controlled was given */
	bool kcsan;                       /* odebug.kcsan=on: data races of controlled runs */
	/* configuration */
	unsigned int nr_cpu_ids;          /* online vCPUs */
	unsigned int config_nr_cpus;      /* CONFIG_NR_CPUS */
	unsigned int hz;
	enum odb_clock_kind clock;
	uint64_t seed;
	char *cmdline;
	uint64_t cmdline_env_probes;      /* hash slots the boot's env list looked at (tests) */
	bool panic_on_warn;
	atomic_bool closed;
	atomic_bool api_fast;             /* not closed, no controlled scheduler: API fast paths */
	atomic_bool api_kasan_fast;       /* a kmalloc cache takes the KASAN API fast paths
					     (set at boot, when the kmalloc caches are made) */
	_Atomic unsigned long taint;      /* TAINT_* bits */

	/* tasks */
	pthread_key_t task_key;
	struct odb_task_slot no_slot;     /* the slot of slotless tasks: never biased */
	unsigned int lock_bias;           /* first bias threshold (odebug.lock_bias=), 0 = off */
	_Atomic uint64_t bias_grants, bias_revocations;
	pthread_mutex_t tasks_lock;
	struct list_head tasks;
	int next_pid;

	/* vCPUs */
	struct odb_cpu *cpus;
	struct odb_rwsem cpu_hotplug_lock; /* cpus_read_lock(): no vCPU comes or goes meanwhile */

	/* time */
	_Atomic uint64_t now_ns;          /* virtual clock */
	uint64_t boot_host_ns;            /* real clock origin */
	struct mutex advance_lock;        /* a sleeping lock: work items run under it */

	/* workqueue */
	pthread_mutex_t wq_lock;
	pthread_cond_t wq_cond;           /* worker wake-up, and "a run ended" */
	struct list_head wq_list;
	uint64_t wq_seq;
	bool wq_stop;
	bool worker_started;
	pthread_t worker;

	/* memory layout (kernel/kaslr.c): the direct map (the arena) starts at
	 * page_offset_base, like x86-64's page_offset_base; vmalloc space is
	 * [vmalloc_start, vmalloc_start + vmalloc_size) (VMALLOC_START/END);
	 * both 1 GiB aligned, from the boot seed unless nokaslr */
	odb_addr_t page_offset_base;
	odb_addr_t vmalloc_start;
	uint64_t vmalloc_size;
	bool nokaslr;                     /* nokaslr on the command line */
	bool kaslr_live;                  /* in the registry of live layouts (under its lock) */
	struct list_head kaslr_node;      /* the registry's list */
	bool alive;                       /* in the list of undestroyed kernels (fork) */
	struct list_head alive_node;
	bool forked;                      /* inherited by a fork()ed child: closed, never torn down */
	struct vmap_state *vmap;          /* kernel/vmalloc.c */

	/* memory */
	char *ram;                        /* host base of the arena */
	uint64_t ram_bytes;
	uint64_t nr_pages;
	struct page *pages;
	struct odb_zone zone;
	_Atomic uint64_t nr_free_pages;
	odb_page_free_hook page_free_hooks[4];
	unsigned int nr_page_free_hooks;
	odb_page_alloc_hook page_alloc_hooks[4];
	unsigned int nr_page_alloc_hooks;

	/* fault injection */
	struct failslab_attr failslab;
	struct fail_page_alloc_attr fail_page_alloc;
	spinlock_t rng_lock;
	struct odb_rng rng;

	/* log and reports */
	struct odb_log log;
	pthread_mutex_t reports_lock;
	struct odb_report_impl **reports;
	size_t nr_reports, reports_cap;
	uint64_t report_seq, reports_dropped;

	/* stack depot */
	struct odb_depot *depot;
	odb_frame_hook frame_hook;
	void *frame_hook_ctx;
	odb_poll_hook poll_hook;          /* odb_poll(): interruption of long calls */
	/* around a calling thread's blocking wait outside the controlled
	 * scheduler (mempool_alloc waiting for an element): a binding gives up
	 * its interpreter lock (odb_sched_set_hooks sets them) */
	void (*wait_before)(void *ctx, void **cookie);
	void (*wait_after)(void *ctx, void *cookie);
	void *wait_hook_ctx;
	/* odb_kernel_on_destroy(): called first thing in odb_kernel_destroy */
	pthread_mutex_t destroy_hooks_lock;
	struct odb_destroy_hook *destroy_hooks;
	void *poll_hook_ctx;

	/* rooms (filled by later subsystems) */
	void *slab;
	void *kasan;
	void *debugobjects;
	/* kasan_enabled(): KASAN on and its shadow mapped (set and cleared with
	 * the shadow, kasan.c), one load where the kernel has a static key */
	bool kasan_on;
};

/*
 * stack_depot_save_tmpl() with its common case inline: F's caller lies
 * outside odebug (the user's code called the API function) so F's chain is
 * that one frame, no frame hook gives a Python location, and one of the
 * task's recent records is known to begin with tp's frames and ends with that
 * caller.  The same key and comparisons as stack_depot_save_tmpl's own
 * look-up; anything else is the out-of-line save's.
 */
static inline uint32_t stack_depot_save_tmpl_recent(struct odb_kernel *k, struct odb_task *t,
						    const struct odb_stack_tmpl *tp, void *fp)
{
	void *ret = ((void *const *)fp)[1];
	const struct odb_stack_tmpl *id = tp->canon ? tp->canon : tp;
	unsigned int n = tp->n;
	uint64_t key;

	if (!t || k->frame_hook || (uintptr_t)ret - tp->text_lo < tp->text_span ||
	    n >= ODB_STACK_DEPTH)
		return stack_depot_save_tmpl(k, t, tp, fp);
	key = (uint64_t)(uintptr_t)ret ^ (uint64_t)(uintptr_t)id;   /* the walk key of [ret], ^ id */
	for (unsigned int i = 0; i < ODB_DEPOT_RECENT; i++) {
		const struct stack_record *r = t->depot_recent[i];

		if (t->depot_recent_key[i] == key && t->depot_recent_tmpl[i] == id &&
		    r->nr == n + 1 && r->entries[n] == ret && !r->py)
			return r->handle;
	}
	return stack_depot_save_tmpl(k, t, tp, fp);
}

static inline bool odb_sched_on(const struct odb_kernel *k)
{
	return k->sched != NULL;
}
/* cpu_online(): not taken offline by odb_cpu_offline. */
static inline bool cpu_online(const struct odb_kernel *k, unsigned int cpu)
{
	return !atomic_load_explicit(&k->cpus[cpu].offline, memory_order_acquire);
}
/* A clock for the kernel's own measurements (lock hold times, eviction
 * times): the host's CLOCK_MONOTONIC, or under the controlled scheduler the
 * count of scheduling points passed, so that every figure of a controlled run
 * is the same in every replay. */
uint64_t odb_stat_ns(struct odb_kernel *k);

/* odb_current's fast lookup: the kernel's table of its threads' tasks, one
 * slot per thread hashed from the thread pointer (the TCB address, unique
 * among live threads): the stand-in for the kernel's per-CPU `current`, read
 * without a call.  A thread only ever installs, reads and clears its own
 * slot's task; others see the slot's tp, never equal to theirs.  A thread whose
 * slot is taken by another one looks its task up in the pthread key
 * (odb_current_slow) every time; nothing is lost, it is only slower. */
static inline unsigned int odb_task_slot_of(uintptr_t tp)
{
	/* multiplicative hash of the low 32 bits, where thread control blocks
	 * differ (stacks megabytes apart): one imul with an immediate */
	return (uint32_t)((uint32_t)tp * 0x9e3779b9u) >> (32 - ODB_TASK_SLOT_BITS);
}
/* The calling thread's task if its slot knows it (no side effect); a slot
 * that names the thread always holds its task, so a hit needs no NULL test. */
static inline bool odb_current_fast(struct odb_kernel *k, struct odb_task **t)
{
	uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
	struct odb_task_slot *sl = &k->task_slots[odb_task_slot_of(tp)];

	if (unlikely(atomic_load_explicit(&sl->tp, memory_order_relaxed) != tp))
		return false;
	*t = (struct odb_task *)atomic_load_explicit(&sl->t, memory_order_relaxed);
	return true;
}
static inline struct odb_task *odb_current(struct odb_kernel *k)
{
	struct odb_task *t;

	return likely(odb_current_fast(k, &t)) ? t : odb_current_slow(k);
}

/* Where the task runs: its binding (cpu -1: unbound, acts on CPU 0), a
 * visit's vCPU, a work item's vCPU; home_cpu and home_lock follow. */
static inline void task_set_cpu(struct odb_kernel *k, struct odb_task *t, int cpu)
{
	t->cpu = cpu;
	t->home_cpu = cpu < 0 ? 0 : cpu;
	t->home_lock = &k->cpus[t->home_cpu].irq_lock;
}

/* The calling thread's lock-bias identity (kernel.h's biased locks). */
static inline struct odb_task_slot *odb_current_slot(struct odb_kernel *k)
{
	struct odb_task *t = odb_current(k);

	return t ? t->slot : &k->no_slot;
}

static inline bool odb_in_arena(const struct odb_kernel *k, odb_addr_t a, size_t len)
{
	return a >= k->page_offset_base && len <= k->ram_bytes &&
	       a - k->page_offset_base <= k->ram_bytes - len;
}
/* is_vmalloc_addr(): a in [VMALLOC_START, VMALLOC_END) of this kernel (mapped
 * or not); odb_in_vmalloc: the whole [a, a+len) is. */
static inline bool is_vmalloc_addr(const struct odb_kernel *k, odb_addr_t a)
{
	return a - k->vmalloc_start < k->vmalloc_size;
}
static inline bool odb_in_vmalloc(const struct odb_kernel *k, odb_addr_t a, size_t len)
{
	return a >= k->vmalloc_start && len <= k->vmalloc_size &&
	       a - k->vmalloc_start <= k->vmalloc_size - len;
}
static inline bool odb_task_atomic(const struct odb_task *t)
{
	return t->irq_depth > (unsigned int)t->exclusive || t->nocb;
}
/* The same with the task already at hand (hot paths: one TLS lookup). */
static inline unsigned long odb_irq_save_task(struct odb_kernel *k, struct odb_task *t)
{
	if (t->irq_depth++ == 0) {
		t->irq_cpu = smp_processor_id_task(t);
		odb_fastlock_lock(&k->cpus[t->irq_cpu].irq_lock, t->slot);
	}
	return (unsigned long)t->irq_cpu + 1;
}
static inline void odb_irq_restore_task(struct odb_kernel *k, struct odb_task *t, unsigned long flags)
{
	if (--t->irq_depth == 0) {
		odb_fastlock_unlock(&k->cpus[flags - 1].irq_lock, t->slot);
		t->irq_cpu = -1;
	}
}
/* The slab fast paths' irq-off section, without the nesting bookkeeping: the
 * irq lock of the task's vCPU, unless the task has interrupts off already (a
 * nested section or an exclusive binding: then the vCPU it holds, and no lock
 * is taken).  Whichever way it is entered there is one word to clear on the
 * way out -- the slot's note (biased), the lock word (base lock), the task's
 * idle note (nothing taken) -- so leaving is one store and no test.
 * Code inside that may itself save irqs (the slow paths) runs between
 * odb_irq_nest/odb_irq_unnest, which make the section a regular
 * local_irq_save one for it. */
struct odb_irq_fast {
	_Atomic(void *) *held;        /* the word odb_irq_fast_restore clears */
	int cpu;
};
/* The inline fast paths' entry: only through the bias, an outer irq-off
 * section, or (bias off) one try of the lock word; false: nothing taken, the
 * caller's slow path does the job (with the bias on, an unbiased lock is the
 * slow path's, which counts the streak that biases it). */
static inline bool odb_irq_fast_try(struct odb_task *t, struct odb_irq_fast *f)
{
	struct odb_task_slot *me = t->slot;
	struct odb_fastlock *l = t->home_lock;

	if (unlikely(t->irq_depth)) {
		f->cpu = t->irq_cpu;
		f->held = &t->idle_note;
		return true;
	}
	f->cpu = t->home_cpu;         /* smp_processor_id() */
	if (likely(odb_bias_enter_first(&l->bias, me, ODB_BIAS_IRQ, l))) {
		f->held = &me->held[ODB_BIAS_IRQ];
		return true;
	}
	if (l->bias.mode == ODB_BIAS_OFF &&
	    !atomic_exchange_explicit(&l->v, ODB_LOCKED, memory_order_acquire)) {
		f->held = &l->v;
		return true;
	}
	return false;
}
/* The same, waiting for the base lock when the bias is not the task's. */
static inline void odb_irq_fast_save(struct odb_task *t, struct odb_irq_fast *f)
{
	if (likely(odb_irq_fast_try(t, f)))
		return;
	odb_fastlock_lock_base(t->home_lock, t->slot);
	f->held = &t->home_lock->v;
}
static inline void odb_irq_fast_restore(const struct odb_irq_fast *f)
{
	atomic_store_explicit(f->held, NULL, memory_order_release);
}
/* odb_irq_fast_restore for a section entered by odb_irq_fast_save on a slow
 * path (a controlled kernel takes no inline fast path, so there the section
 * is its vCPU's base lock or an outer one): the release of the base lock is a
 * scheduling point under the controlled scheduler. */
static inline void odb_irq_fast_release(struct odb_task *t, const struct odb_irq_fast *f)
{
	if (unlikely(odb_sched_on(t->k)) && f->held != &t->idle_note)
		odb_sched_release(t->k, ODB_SITE(ODB_SP_UNLOCK, "local_irq_restore"), ODB_LK_FAST,
				  container_of(f->held, struct odb_fastlock, v));
	else
		odb_irq_fast_restore(f);
}
static inline void odb_irq_nest(struct odb_task *t, int cpu)
{
	if (t->irq_depth++ == 0)
		t->irq_cpu = cpu;
}
static inline void odb_irq_unnest(struct odb_task *t)
{
	if (--t->irq_depth == 0)
		t->irq_cpu = -1;
}
/* Visit vCPU cpu from code that walks every vCPU (flush_all, the quarantine's
 * per-CPU lists): take its irq lock and, for the visit, run the task as if on
 * that vCPU with interrupts off there -- the kernel runs such work on each CPU
 * in turn (IPI or per-CPU work).  Nested local_irq_save()s inside the visit
 * (freeing a slab page calls debug_check_no_obj_freed, which does one) nest on
 * the visited vCPU instead of taking its lock a second time, and touch the
 * visited vCPU's per-CPU data.  No lock is taken when the task already holds
 * that vCPU's irq lock (an exclusive binding, or an outer irq-off section). */
struct odb_cpu_visit {
	struct odb_task *t;
	struct odb_task_slot *me;
	bool taken;
	int cpu, irq_cpu;
	unsigned int irq_depth;
};
static inline void odb_cpu_lock(struct odb_kernel *k, unsigned int cpu, struct odb_cpu_visit *v)
{
	struct odb_task *t = (struct odb_task *)pthread_getspecific(k->task_key);

	*v = (struct odb_cpu_visit){ .t = t, .me = t ? t->slot : &k->no_slot, .cpu = -1,
				     .irq_cpu = -1 };
	v->taken = !(t && t->irq_depth && t->irq_cpu == (int)cpu);
	if (v->taken)
		odb_fastlock_lock(&k->cpus[cpu].irq_lock, v->me);
	if (t) {
		v->cpu = t->cpu;
		v->irq_cpu = t->irq_cpu;
		v->irq_depth = t->irq_depth;
		task_set_cpu(k, t, (int)cpu);
		t->irq_cpu = (int)cpu;
		t->irq_depth = 1;
	}
}
static inline void odb_cpu_unlock(struct odb_kernel *k, unsigned int cpu, struct odb_cpu_visit *v)
{
	struct odb_task *t = v->t;

	if (t) {
		task_set_cpu(k, t, v->cpu);
		t->irq_cpu = v->irq_cpu;
		t->irq_depth = v->irq_depth;
	}
	if (v->taken)
		odb_fastlock_unlock(&k->cpus[cpu].irq_lock, v->me);
}

static inline uint64_t page_to_pfn(struct odb_kernel *k, const struct page *p)
{
	return (uint64_t)(p - k->pages);
}

/* The controlled scheduler's life (kernel/sched.c).  A wedged scheduler (a
 * run ended in a deadlock or a stall) has tasks that still wait inside it:
 * its kernel is never freed (odb_kernel_destroy gives back its memory only). */
int odb_sched_init(struct odb_kernel *k, char *errbuf, size_t errlen);
void odb_sched_exit(struct odb_kernel *k);
bool odb_sched_wedged(struct odb_kernel *k);
/* A thread that is not one of the scheduler's tasks enters the kernel: wait
 * until no run is in progress.  false: the kernel is wedged (closed). */
bool odb_sched_gate(struct odb_kernel *k);
/* Scheduling points passed since boot (odb_stat_ns of a controlled kernel). */
uint64_t odb_sched_clock(struct odb_kernel *k);
/* A task's comm and pid for a thread that is about to run as a scheduler task. */
struct odb_task *odb_task_adopt(struct odb_kernel *k, int pid, const char *comm);
int odb_next_pid(struct odb_kernel *k);

/* ---- memory layout and vmalloc (kernel/kaslr.c, kernel/vmalloc.c) ------------------------ */
/* kernel_randomize_memory(): choose page_offset_base and vmalloc_start (after
 * the command line: nokaslr) and enter them in the registry of live layouts;
 * -1 (with errbuf) if no free slot is left.  kaslr_release: leave the
 * registry (odb_kernel_close / destroy; idempotent). */
int kernel_randomize_memory(struct odb_kernel *k, char *errbuf, size_t errlen);
void kaslr_release(struct odb_kernel *k);
/* destroy: leave both registries (the layouts and the kernels a fork closes) */
void kaslr_forget(struct odb_kernel *k);
int kaslr_param_nokaslr(struct odb_kernel *k, const char *val);
void kaslr_param_nokaslr_show(struct odb_kernel *k, char *buf, size_t len);
/* vmalloc_init: the vmalloc region's host window (after the layout);
 * vmalloc_exit: unmap it and free every area's record. */
int vmalloc_init(struct odb_kernel *k);
void vmalloc_exit(struct odb_kernel *k);
/* Unmap the window only (a wedged kernel: odb_kernel_destroy). */
void vmalloc_release_window(struct odb_kernel *k);
/* vmalloc space that is backed now: host pointer of [a, a+len) when every
 * page of it is mapped (an area's pages), else NULL.  The pointer stays
 * valid host memory for the kernel's life (an unmapped page becomes scratch
 * memory, never a hole), so a racing vfree never faults a reader. */
void *vmalloc_host_ptr(struct odb_kernel *k, odb_addr_t a, size_t len);
/* Bytes of [a, a+n) that are backed, counted from a (arena or mapped vmalloc
 * pages); 0 when a itself is not. */
size_t odb_backed_bytes(struct odb_kernel *k, odb_addr_t a, size_t n);
/* The area holding vmalloc address a (guard page included), for reports:
 * its [start, end) (end past the guard, as va->va_end), its caller's %pS
 * text and the physical page mapped at a (NULL: none, e.g. the guard page).
 * false when a is in no area. */
struct vm_area_info {
	odb_addr_t start, end;
	char caller[256];
	struct page *page;
};
bool find_vm_area_info(struct odb_kernel *k, odb_addr_t a, struct vm_area_info *out);
/* vm_struct flags (include/linux/vmalloc.h values) */
#define VM_ALLOC            0x00000002
#define VM_MAP              0x00000004
#define VM_UNINITIALIZED    0x00000020
#define VM_ALLOW_HUGE_VMAP  0x00000400
/* The size of a kernel's vmalloc region for ram bytes of RAM. */
uint64_t vmalloc_region_size(uint64_t ram);
/* The core of vmalloc/vzalloc/kvmalloc's fallback (__vmalloc_node_range):
 * size bytes from the page allocator (gfp: ODB_GFP_ZERO for vzalloc) mapped
 * in vmalloc space, the caller's size unpoisoned; 0 on failure (after
 * warn_alloc's "vmalloc error" unless NOWARN).  vm_flags: VM_ALLOW_HUGE_VMAP
 * (kvmalloc) maps 2 MiB blocks when it can. */
odb_addr_t __vmalloc_node_range(struct odb_kernel *k, unsigned long size, unsigned int gfp,
				unsigned int vm_flags, unsigned long caller);
/* vfree / vunmap: true when an area was removed (else the kernel's WARN was
 * made); vfree frees a vmalloc'd area's pages, vunmap none. */
bool vfree(struct odb_kernel *k, odb_addr_t addr, unsigned long caller);
bool vunmap(struct odb_kernel *k, odb_addr_t addr);
/* vmap: count page frames mapped contiguously (VM_MAP), 0 on failure. */
odb_addr_t vmap(struct odb_kernel *k, const uint32_t *pfns, uint64_t count, unsigned long caller);
/* Pages of vmalloc'd areas now (the kernel's nr_vmalloc_pages). */
uint64_t vmalloc_nr_pages(struct odb_kernel *k);
/* %pGg of gfp flags (page_alloc.c). */
void odb_format_gfp(unsigned int gfp, char *buf, size_t len);

/* Internal pieces of kernel.c used by the other kernel/ files. */
int odb_mem_init(struct odb_kernel *k);
void odb_mem_exit(struct odb_kernel *k);
int odb_log_init(struct odb_log *l, size_t cap);
/* log_buf_len=: the ring's byte bound now (grows only, as the kernel's). */
size_t odb_log_cap(struct odb_log *l);
void odb_log_grow(struct odb_log *l, size_t cap);
void odb_log_exit(struct odb_log *l);
int odb_depot_init(struct odb_kernel *k);
void odb_depot_exit(struct odb_kernel *k);
void odb_reports_exit(struct odb_kernel *k);
int odb_wq_init(struct odb_kernel *k);
void odb_wq_stop(struct odb_kernel *k);
void odb_wq_exit(struct odb_kernel *k);
bool odb_wq_is_worker(struct odb_kernel *k);   /* the caller is k's worker thread */
/* pthread_join(th) from the thread that entered the call, polling the
 * kernel's hook (odb_poll) while waiting: the first time the hook asks to
 * stop, *interrupted is set and cancel(arg) runs (it tells the call's threads
 * to stop, waking any that wait); the join then goes on to the end. */
void odb_join_polling(struct odb_kernel *k, pthread_t th, uint64_t *last_ns, bool *interrupted,
		      void (*cancel)(void *arg), void *arg);
int odb_parse_cmdline(struct odb_kernel *k, const char *cmdline, char *errbuf, size_t errlen);
void odb_fault_init(struct odb_kernel *k);
void odb_fault_exit(struct odb_kernel *k);
void odb_register_page_free_hook(struct odb_kernel *k, odb_page_free_hook fn);
void odb_register_page_alloc_hook(struct odb_kernel *k, odb_page_alloc_hook fn);

#endif /* ODB_KERNEL_KERNEL_H */
