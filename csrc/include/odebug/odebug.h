/*
 * odebug: the Linux kernel's memory debuggers as a user-space C library.
 *
 * Public C API.  Every function takes the kernel instance explicitly: the core
 * has no mutable global state, so any number of kernels live in one process.
 *
 * Conventions
 *  - Functions returning int return 0 (ODB_OK) or a negative ODB_E* status.
 *    The calling thread's message for the last failure on a kernel is
 *    odb_strerror(k).  ODB_EBUG means a kernel report was made while
 *    panic_on_warn (or kasan.fault=panic) is set: the report is
 *    odb_last_bug(k); the operation itself completed as the kernel's would
 *    have up to the point of the report.
 *  - Addresses (odb_addr_t) are simulated kernel virtual addresses inside the
 *    kernel's RAM arena (its direct map, from odb_page_offset(k)) or its
 *    vmalloc space (odb_vmalloc_start(k)), not host pointers; they depend on
 *    the boot seed only (KASLR), so logs are deterministic.  odb_host_ptr()
 *    converts.
 *  - A calling thread acts on the vCPU it is bound to (odb_bind_cpu), CPU 0
 *    when unbound.  The first call from a thread gives it a task (pid, comm).
 *  - Thread safety: every function may be called from any thread, except
 *    odb_kernel_destroy, which must be the last call on that kernel.
 */
#ifndef ODEBUG_ODEBUG_H
#define ODEBUG_ODEBUG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ODB_BUILDING)
#define ODB_API __attribute__((visibility("default")))
#else
#define ODB_API
#endif

/* ---- status codes ----------------------------------------------------- */
enum {
	ODB_OK      = 0,
	ODB_ENOENT  = -2,     /* no such object / cache / parameter */
	ODB_ENOMEM  = -12,    /* allocation failure: a normal outcome */
	ODB_EFAULT  = -14,    /* address outside the arena */
	ODB_EBUSY   = -16,    /* object in use (e.g. cache with live objects) */
	ODB_EINVAL  = -22,    /* bad argument; odb_strerror() names it */
	ODB_ERANGE  = -34,    /* value out of range */
	ODB_ECLOSED = -1000,  /* the kernel was closed */
	ODB_EBUG    = -1001,  /* a report was made with panic_on_warn set */
	ODB_ESTATE  = -1002,  /* call not valid in this state (e.g. advance on a real clock) */
	ODB_EINTR   = -1003,  /* a long call stopped early: the poll hook asked (odb_set_poll_hook) */
};

typedef uint64_t odb_addr_t;
typedef struct odb_kernel odb_kernel;

/* The nokaslr memory layout (x86-64, 4-level paging): the direct map's base
 * (page_offset_base) and VMALLOC_START.  A kernel booted with seed 0 or
 * nokaslr has them; any other seed moves each by a multiple of 1 GiB
 * (odb_page_offset(), odb_vmalloc_start()). */
#define ODB_PAGE_OFFSET   0xffff888000000000ULL
#define ODB_VMALLOC_START 0xffffc90000000000ULL
#define ODB_PAGE_SHIFT    12
#define ODB_PAGE_SIZE     (1UL << ODB_PAGE_SHIFT)
#define ODB_MAX_ORDER     10          /* orders 0..ODB_MAX_ORDER (MAX_PAGE_ORDER) */
#define ODB_MAX_CPUS      256         /* CONFIG_NR_CPUS default */

/* gfp flags: a subset with the kernel's meanings (values are odebug's). */
#define ODB_GFP_DIRECT_RECLAIM 0x0001u  /* may block: __GFP_DIRECT_RECLAIM */
#define ODB_GFP_IO             0x0002u
#define ODB_GFP_FS             0x0004u
#define ODB_GFP_ZERO           0x0008u  /* __GFP_ZERO */
#define ODB_GFP_NOWARN         0x0010u  /* __GFP_NOWARN */
#define ODB_GFP_NOFAIL         0x0020u  /* __GFP_NOFAIL: never injected */
#define ODB_GFP_HIGH           0x0040u
#define ODB_GFP_KSWAPD_RECLAIM 0x0080u
#define ODB_GFP_HIGHMEM        0x0100u
#define ODB_GFP_ATOMIC   (ODB_GFP_HIGH | ODB_GFP_KSWAPD_RECLAIM)
#define ODB_GFP_NOWAIT   (ODB_GFP_KSWAPD_RECLAIM)
#define ODB_GFP_KERNEL   (ODB_GFP_DIRECT_RECLAIM | ODB_GFP_KSWAPD_RECLAIM | ODB_GFP_IO | ODB_GFP_FS)

/* ---- the kernel instance ----------------------------------------------- */
enum odb_clock_kind {
	ODB_CLOCK_VIRTUAL = 0,  /* time moves only with odb_advance() */
	ODB_CLOCK_REAL    = 1,  /* CLOCK_MONOTONIC, delayed work on a worker thread */
};

struct odb_config {
	unsigned int cpus;          /* online vCPUs, 1..ODB_MAX_CPUS (default 2) */
	unsigned int nr_cpus;       /* CONFIG_NR_CPUS, >= cpus (default 256) */
	uint64_t ram;               /* bytes of simulated RAM (default 256 MiB) */
	enum odb_clock_kind clock;
	uint64_t seed;              /* PRNG seed (fault injection, workloads) and the
				     * memory layout (KASLR; 0: the nokaslr one) */
	unsigned int hz;            /* HZ; 0 = 1000, or from hz= on the command line */
	const char *cmdline;        /* kernel-style boot command line, may be NULL */
};

/* Fill cfg with the defaults. */
ODB_API void odb_config_init(struct odb_config *cfg);

/*
 * Boot a kernel.  On failure returns ODB_EINVAL (malformed command line
 * value, bad config: errbuf names the parameter) or ODB_ENOMEM.
 */
ODB_API int odb_kernel_create(const struct odb_config *cfg, odb_kernel **out,
			      char *errbuf, size_t errlen);
/* Stop the worker thread (real clock) and refuse further calls with
 * ODB_ECLOSED.  Idempotent.  Memory stays mapped until destroy. */
ODB_API void odb_kernel_close(odb_kernel *k);
ODB_API bool odb_kernel_closed(odb_kernel *k);
/* Close (if needed) and free everything.  Last call on k. */
ODB_API void odb_kernel_destroy(odb_kernel *k);

/* Destroy notifiers: fn(k, ctx) runs first thing in odb_kernel_destroy (in
 * the destroying thread, no odebug lock held), so that something keeping k's
 * pointer (the KASAN runtime of instrumented C code, odebug.cc) can forget it.
 * ODB_ENOMEM; _remove: ODB_ENOENT if (fn, ctx) was not registered. */
typedef void (*odb_destroy_fn)(odb_kernel *k, void *ctx);
ODB_API int odb_kernel_on_destroy(odb_kernel *k, odb_destroy_fn fn, void *ctx);
ODB_API int odb_kernel_on_destroy_remove(odb_kernel *k, odb_destroy_fn fn, void *ctx);

/* The calling thread's message for its last failed call on k ("" if none). */
ODB_API const char *odb_strerror(odb_kernel *k);

/* ---- vCPUs and tasks ----------------------------------------------------- */
ODB_API unsigned int odb_nr_cpus(odb_kernel *k);         /* online vCPUs */
ODB_API unsigned int odb_config_nr_cpus(odb_kernel *k);  /* CONFIG_NR_CPUS */
/* Bind the calling thread to vCPU cpu (-1: unbind, i.e. CPU 0); *old gets the
 * previous binding (-1 when unbound).  ODB_EINVAL for a bad cpu, ODB_EBUSY if
 * the thread has interrupts "disabled" on its vCPU. */
ODB_API int odb_bind_cpu(odb_kernel *k, int cpu, int *old);
/* Bind exclusively: the thread then owns vCPU cpu as a CPU runs one task, and
 * the per-vCPU lock is held for the whole binding, so the fast paths take no
 * atomic operation.  Other threads acting on that vCPU (including visits of
 * every vCPU such as validate) wait until the owner unbinds (odb_bind_cpu). */
ODB_API int odb_bind_cpu_exclusive(odb_kernel *k, int cpu);
/* Lock bias (odebug.lock_bias=): a vCPU's irq lock or a cache's list_lock
 * that one thread takes again and again becomes biased to it and costs no
 * atomic operation until another thread revokes the bias (membarrier(2)).
 * threshold: base acquisitions in a row that bias a lock at first (doubled
 * per lock at each revocation); 0 = off (the option, or no membarrier).
 * grants/revocations: counts since boot, over all of k's locks. */
struct odb_lock_bias_info {
	unsigned int threshold;
	uint64_t grants, revocations;
};
ODB_API void odb_lock_bias_info(odb_kernel *k, struct odb_lock_bias_info *out);
/* CPU hotplug: vCPU cpu goes offline (every room's callback runs: SLUB
 * flushes its per-CPU slabs, KASAN's quarantine (v5.10 on) frees its list,
 * debug objects give its per-CPU pool back) or online again.  Threads bound to
 * an offline vCPU still run on it (as an interrupt on a dying CPU would).
 * ODB_EINVAL for a bad cpu, ODB_EBUSY for the last online vCPU. */
ODB_API int odb_cpu_offline(odb_kernel *k, int cpu);
ODB_API int odb_cpu_online(odb_kernel *k, int cpu);
ODB_API bool odb_cpu_is_online(odb_kernel *k, int cpu);
/* smp_processor_id() of the calling thread. */
ODB_API int odb_current_cpu(odb_kernel *k);
/* The calling thread's task id (pid) in k; assigned on first use from 1. */
ODB_API int odb_current_pid(odb_kernel *k);
/* The calling thread's comm in k (task name, as reports print it), into buf
 * ("" when the thread has no task there). */
ODB_API void odb_current_comm(odb_kernel *k, char *buf, size_t len);
/* Set the calling thread's comm (task name, at most 15 chars kept). */
ODB_API void odb_set_comm(odb_kernel *k, const char *comm);

/* ---- time and delayed work ----------------------------------------------- */
ODB_API unsigned int odb_hz(odb_kernel *k);
ODB_API uint64_t odb_jiffies(odb_kernel *k);      /* starts at INITIAL_JIFFIES */
ODB_API uint64_t odb_now_ns(odb_kernel *k);       /* ns since boot */
ODB_API enum odb_clock_kind odb_clock(odb_kernel *k);
/* Virtual clock: move time forward by ns, running every work item that falls
 * due, in due order, in the calling thread.  ODB_ESTATE on a real clock. */
ODB_API int odb_advance(odb_kernel *k, uint64_t ns);

typedef struct odb_work odb_work;
typedef void (*odb_work_fn)(odb_kernel *k, void *arg);
/* A work item (a delayed_work).  fn runs on the vCPU that queued it. */
ODB_API odb_work *odb_work_create(odb_kernel *k, odb_work_fn fn, void *arg);
/* Cancel (waiting for a running instance) and free. */
ODB_API void odb_work_destroy(odb_kernel *k, odb_work *w);
/* schedule_work / schedule_delayed_work: true if queued, false if it was
 * already pending (then nothing changes, as in the kernel). */
ODB_API bool odb_schedule_work(odb_kernel *k, odb_work *w);
ODB_API bool odb_schedule_delayed_work(odb_kernel *k, odb_work *w, uint64_t delay_jiffies);
/* cancel_delayed_work_sync: true if it was pending. */
ODB_API bool odb_cancel_work(odb_kernel *k, odb_work *w);
/* flush_delayed_work: run it now if pending and wait for it; true if it ran
 * or was running. */
ODB_API bool odb_flush_work(odb_kernel *k, odb_work *w);
ODB_API bool odb_work_pending(odb_kernel *k, odb_work *w);
/* Jiffies at which a pending item falls due (0 if not pending). */
ODB_API uint64_t odb_work_due(odb_kernel *k, odb_work *w);

/* ---- the controlled scheduler (odebug.sched=controlled) ----------------------
 * A kernel booted with odebug.sched=controlled runs the tasks of a run one at
 * a time: every scheduling point of the core (each lock acquire and release,
 * interrupts off, each cmpxchg of a slab's freelist, each racy READ_ONCE /
 * WRITE_ONCE, each work item's start, and explicit points where the kernel
 * code has a racy window) asks a strategy which task goes on.  A task that
 * waits for a lock another task holds is never chosen; when no task can go
 * on, the run ends in a deadlock report.  The same strategy choices give the
 * same dmesg, reports, stats and trace hash in every process.
 *
 * Tasks are spawned before a run (or by a task during one): each runs fn(k,
 * arg) on a thread of its own, bound to vCPU cpu (-1: unbound).  A thread that
 * is not a task and calls into k during a run waits until the run is over.
 * Needs the virtual clock. */
typedef void (*odb_task_fn)(odb_kernel *k, void *arg);
/* Returns the task's id in its run (0, 1, ... in spawn order; at most
 * ODB_SCHED_MAX_TASKS), or ODB_ESTATE (not a controlled kernel), ODB_EINVAL. */
ODB_API int odb_sched_spawn(odb_kernel *k, odb_task_fn fn, void *arg, int cpu, const char *name);
#define ODB_SCHED_MAX_TASKS 64

/* Strategies: who runs at each decision (a point where more than one task
 * could run).  A strategy is independent of kernels: the same one may drive
 * successive runs on fresh kernels (exploration), and odb_sched_strategy_next
 * moves it to its next schedule.
 *  random(seed)  uniform among the runnable tasks at every decision;
 *  pct(seed, depth, steps)  Burckhardt et al. (ASPLOS 2010): random task
 *                priorities, depth-1 change points among `steps' decisions
 *                (0: the most seen so far, 100 at first);
 *  dfs(bound)    every schedule with at most `bound' preemptions, 0 first,
 *                then 1, ... (CHESS's iterative preemption bounding);
 *  replay(text, seed)  the choices of a schedule text; from the first one
 *                that does not fit (or past its end) on, random(seed), and
 *                the run says where it diverged;
 *  preemptions(gaps, whos, n)  no preemption but n: the i-th comes gaps[i]
 *                decisions after the previous one and switches to the
 *                whos[i]-th (mod their number) other runnable task; the
 *                shape hypothesis draws and shrinks. */
typedef struct odb_sched_strategy odb_sched_strategy;
ODB_API odb_sched_strategy *odb_sched_random(uint64_t seed);
ODB_API odb_sched_strategy *odb_sched_pct(uint64_t seed, unsigned int depth, uint64_t steps);
ODB_API odb_sched_strategy *odb_sched_dfs(unsigned int preemption_bound);
/* NULL with errbuf set for a malformed text. */
ODB_API odb_sched_strategy *odb_sched_replay(const char *schedule, uint64_t seed, char *errbuf,
					     size_t errlen);
ODB_API odb_sched_strategy *odb_sched_preemptions(const uint64_t *gaps, const uint32_t *whos,
						  size_t n);
/* Move to the next schedule: false when there is none (dfs explored all
 * within its bound; replay and preemptions have one). */
ODB_API bool odb_sched_strategy_next(odb_sched_strategy *s);
struct odb_sched_strategy_info {
	const char *kind;             /* "random", "pct", "dfs", "replay", "preemptions" */
	uint64_t runs;                /* runs driven so far */
	uint64_t distinct;            /* distinct schedules among them */
	unsigned int bound;           /* dfs: the preemption bound being explored */
	bool exhausted;               /* dfs: nothing left within the bound */
	uint64_t steps;               /* pct: decisions assumed per run */
};
ODB_API void odb_sched_strategy_info(odb_sched_strategy *s, struct odb_sched_strategy_info *out);
ODB_API void odb_sched_strategy_free(odb_sched_strategy *s);

enum odb_sched_status {
	ODB_SCHED_DONE = 0,           /* every task returned */
	ODB_SCHED_DEADLOCK = 1,       /* no task could go on: a "deadlock" report, k is closed */
	ODB_SCHED_STALL = 2,          /* a task reached no scheduling point within the timeout */
};
/* One scheduling point of a recorded run. */
struct odb_sched_event {
	uint16_t task;                /* the task at the point */
	int16_t cpu;                  /* its vCPU */
	uint32_t site;                /* odb_sched_site_info() */
	uint16_t next;                /* the task that runs after it */
	uint16_t flags;               /* ODB_SCHED_EV_* */
};
#define ODB_SCHED_EV_DECISION 1u      /* more than one task could run here */
#define ODB_SCHED_EV_PREEMPT  2u      /* the task could go on but another was chosen */
#define ODB_SCHED_EV_BLOCK    4u      /* the task waits (a lock another task holds) */
#define ODB_SCHED_EV_END      8u      /* the task returned */
struct odb_sched_run_opts {
	unsigned int timeout_ms;      /* stall detection, 0: 30 s */
	bool record;                  /* keep the events */
};
struct odb_sched_result {
	int status;                   /* enum odb_sched_status */
	unsigned int tasks;
	uint64_t points, decisions, preemptions, switches;
	uint64_t trace_hash;          /* of this run's points and choices */
	int64_t diverged_at;          /* replay / dfs: the first decision that did not fit, -1: none */
	char divergence[224];         /* what did not fit, "" if nothing */
	char *schedule;               /* the schedule text (odb_free) */
	struct odb_sched_event *events;   /* with record (odb_free) */
	size_t nevents;
	/* the same schedule as odb_sched_preemptions() takes it: each decision
	 * that did not go to the default (the task at the point if it could go
	 * on, else the lowest runnable id), as (decisions since the previous one,
	 * index among the other runnable tasks); odb_free both */
	uint64_t *gaps;
	uint32_t *whos;
	size_t npairs;
};
/* Run the spawned tasks to the end under strategy s (NULL: random(seed of
 * k)).  ODB_OK with out->status; ODB_ESTATE (not controlled, or from a task),
 * ODB_EINVAL (nothing spawned), ODB_EBUSY (a run is in progress). */
ODB_API int odb_sched_run(odb_kernel *k, odb_sched_strategy *s, const struct odb_sched_run_opts *opts,
			  struct odb_sched_result *out);
/* Every scheduling point since boot, hashed (what, where, which task). */
ODB_API uint64_t odb_sched_trace_hash(odb_kernel *k);
/* A site of the events: what happens there, the source file and line, the kind. */
ODB_API int odb_sched_site_info(odb_kernel *k, uint32_t site, const char **what, const char **file,
				unsigned int *line, unsigned int *kind);
/* Hooks around every wait of a thread in the scheduler (a binding releases
 * its interpreter lock in before and takes it back in after), and around the
 * waits of any kernel's callers that block outside the scheduler (a blocking
 * odb_mempool_alloc waiting for an element).  Set them before any such call. */
ODB_API void odb_sched_set_hooks(odb_kernel *k, void (*before)(void *ctx, void **cookie),
				 void (*after)(void *ctx, void *cookie), void *ctx);

/* ---- memory: the page allocator ------------------------------------------ */
ODB_API uint64_t odb_totalram_pages(odb_kernel *k);
ODB_API uint64_t odb_nr_free_pages(odb_kernel *k);
/* alloc_pages: *addr gets the first page's address; ODB_ENOMEM on failure
 * (including injected failures), ODB_EINVAL for order > ODB_MAX_ORDER. */
ODB_API int odb_alloc_pages(odb_kernel *k, unsigned int gfp, unsigned int order,
			    odb_addr_t *addr);
/* __free_pages: ODB_EINVAL if addr is not the head of an allocated block of
 * that order (nothing is freed then). */
ODB_API int odb_free_pages(odb_kernel *k, odb_addr_t addr, unsigned int order);
/* Host pointer for [addr, addr+len) if it lies inside the arena or inside the
 * mapped pages of one vmalloc area, else NULL.  Unchecked: no KASAN, for
 * deliberate stray writes.  (A vmalloc pointer kept past the area's vfree
 * points at scratch memory from then on.) */
ODB_API void *odb_host_ptr(odb_kernel *k, odb_addr_t addr, size_t len);
/* The inverse of odb_host_ptr: the kernel address of host pointer p inside
 * the arena or the vmalloc window (mapped or not), or 0 if p is in neither. */
ODB_API odb_addr_t odb_virt_addr(odb_kernel *k, const void *p);
ODB_API odb_addr_t odb_arena_start(odb_kernel *k);
ODB_API odb_addr_t odb_arena_end(odb_kernel *k);

/* ---- memory layout (KASLR) ---------------------------------------------------
 * Each kernel's direct map (the arena) starts at odb_page_offset(k) (x86-64's
 * page_offset_base) and its vmalloc space is [odb_vmalloc_start(k),
 * odb_vmalloc_end(k)).  Both are 1 GiB aligned and derived from the boot seed
 * alone: seed 0, or `nokaslr' on the command line, gives ODB_PAGE_OFFSET and
 * ODB_VMALLOC_START.  No two live kernels of a process overlap (a taken slot
 * moves the next kernel to the next free one), so an address of one kernel is
 * never another kernel's memory.  A kernel leaves the layout at close. */
ODB_API odb_addr_t odb_page_offset(odb_kernel *k);
ODB_API odb_addr_t odb_vmalloc_start(odb_kernel *k);
ODB_API odb_addr_t odb_vmalloc_end(odb_kernel *k);
/* The host memory behind a region: the arena (RAM) or the vmalloc window
 * (vmalloc_start maps to *base).  Window pages no area maps are scratch
 * memory of the host, never a hole.  ODB_EINVAL for another region. */
enum { ODB_REGION_ARENA = 0, ODB_REGION_VMALLOC = 1 };
ODB_API int odb_host_region(odb_kernel *k, int region, void **base, size_t *len);

/* ---- vmalloc (mm/vmalloc.c, with generic KASAN's CONFIG_KASAN_VMALLOC) --------
 * Virtually contiguous areas in vmalloc space, their pages from the page
 * allocator one by one, each area followed by a guard page.  KASAN: the
 * caller's size is accessible (a partial last granule), the rest of the last
 * page, the guard page and every unused or freed byte of vmalloc space are
 * KASAN_VMALLOC_INVALID, so an access there is vmalloc-out-of-bounds.  The
 * vmalloc address and the page's direct-map address are the same memory.
 * Allocation failure: ODB_ENOMEM, *out 0 (a "vmalloc error" report unless
 * ODB_GFP_NOWARN).  odb_vmalloc: GFP_KERNEL; odb_vzalloc: zeroed;
 * odb_vmalloc_gfp (the kernel's __vmalloc): with gfp (ODB_GFP_ZERO, ODB_GFP_NOWARN, ...). */
ODB_API int odb_vmalloc(odb_kernel *k, size_t size, odb_addr_t *out);
ODB_API int odb_vzalloc(odb_kernel *k, size_t size, odb_addr_t *out);
ODB_API int odb_vmalloc_gfp(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out);
/* vfree: the area holding addr (page aligned; the kernel looks the area up
 * by any address in it) is poisoned, unmapped and its pages freed.  An
 * address that is no area's is the kernel's WARN ("Trying to vfree()
 * nonexistent vm area", after "Trying to vfree() bad address" if unaligned)
 * and frees nothing; either way ODB_OK (ODB_EBUG under panic_on_warn).
 * vfree(0) does nothing. */
ODB_API int odb_vfree(odb_kernel *k, odb_addr_t addr);
/* vmap: count pages (direct-map page addresses, e.g. from odb_alloc_pages)
 * mapped contiguously in vmalloc space, all accessible; the pages stay the
 * caller's (odb_vunmap does not free them).  ODB_EINVAL for an address that
 * is not a page of the arena; ODB_ENOMEM (*out 0) when it cannot be done. */
ODB_API int odb_vmap(odb_kernel *k, const odb_addr_t *pages, size_t count, odb_addr_t *out);
/* vunmap: remove the mapping (no page is freed); a bad address: the WARN
 * "Trying to vunmap() nonexistent vm area", as odb_vfree's. */
ODB_API int odb_vunmap(odb_kernel *k, odb_addr_t addr);
/* kvmalloc: kmalloc first (for more than a page without warnings and never
 * __GFP_NOFAIL), and if that fails and the size is over a page and gfp may
 * block, vmalloc (2 MiB mappings for 2 MiB or more, as VM_ALLOW_HUGE_VMAP).
 * kvfree: vfree for a vmalloc address, else kfree. */
ODB_API int odb_kvmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out);
ODB_API int odb_kvfree(odb_kernel *k, odb_addr_t addr);
/* Pages held by vmalloc'd areas now. */
ODB_API uint64_t odb_vmalloc_nr_pages(odb_kernel *k);
/* Bytes of [addr, addr+n) that exist from addr on: up to the end of RAM in
 * the arena, up to the end of the area's pages in vmalloc space; 0 for any
 * other address. */
ODB_API size_t odb_backed(odb_kernel *k, odb_addr_t addr, size_t n);

/* ---- fault injection (lib/fault-inject.c semantics) ----------------------- */
struct odb_fault_attr_info {
	unsigned long probability;  /* percent */
	unsigned long interval;
	long times;                 /* -1: unlimited */
	long space;
	unsigned long verbose;
	unsigned long calls;        /* should_fail() calls that reached the checks */
	unsigned long failures;     /* injected failures */
};
/* name: "failslab" or "fail_page_alloc".  ODB_ENOENT for another name. */
ODB_API int odb_fault_get(odb_kernel *k, const char *name, struct odb_fault_attr_info *out);
/* Set the four knobs (as the debugfs files would). */
ODB_API int odb_fault_set(odb_kernel *k, const char *name, unsigned long probability,
			  unsigned long interval, long times, long space, unsigned long verbose);

/* The debugfs extras: "ignore-gfp-wait" (both), "ignore-gfp-highmem" and
 * "min-order" (fail_page_alloc), "cache-filter" (failslab). */
ODB_API int odb_fault_set_flag(odb_kernel *k, const char *name, const char *knob,
			       unsigned long value);
/* Read one of those knobs into *value (a bool knob reads 0 or 1). */
ODB_API int odb_fault_get_flag(odb_kernel *k, const char *name, const char *knob,
			       unsigned long *value);

/* ---- log and reports ------------------------------------------------------- */
/* The printk ring as text, one "[    0.000000] message" line each.
 * Returns a malloc'd NUL-terminated string (free with odb_free); clear empties
 * the ring after reading. */
ODB_API char *odb_dmesg(odb_kernel *k, bool clear);
/* printk into k's log (for C users and tests). */
ODB_API void odb_printk(odb_kernel *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
ODB_API void odb_free(void *p);

struct odb_track {
	odb_addr_t addr;        /* caller (return address), 0 if unknown */
	int cpu;
	int pid;
	uint64_t when;          /* jiffies */
	uint32_t handle;        /* stack depot handle, 0 = none */
};

/* A structured report.  Immutable once published; reference counted. */
struct odb_report {
	uint64_t seq;           /* 1, 2, ... per kernel */
	const char *subsystem;  /* "kasan", "slub", "odebug", "kernel", ... */
	const char *kind;       /* bug type / BUG message / "<op> <state>" */
	const char *text;       /* the kernel-format lines, '\n'-separated */
	odb_addr_t addr;        /* buggy address (0 if none) */
	size_t size;            /* access size (0 if not an access) */
	int is_write;           /* 1 write, 0 read, -1 not an access */
	const char *cache;      /* cache name or NULL */
	odb_addr_t object;      /* object start or 0 */
	long offset;            /* addr - object, when object != 0 */
	bool has_alloc_track, has_free_track;
	struct odb_track alloc_track, free_track;
};
ODB_API size_t odb_report_count(odb_kernel *k);
/* Reference to report i (0-based, in order) or NULL; release with odb_report_put. */
ODB_API const struct odb_report *odb_report_get(odb_kernel *k, size_t i);
ODB_API void odb_report_put(const struct odb_report *r);
ODB_API void odb_reports_clear(odb_kernel *k);
/* Reports dropped because the list was full (ODB_MAX_REPORTS). */
ODB_API uint64_t odb_reports_dropped(odb_kernel *k);
#define ODB_MAX_REPORTS 100000
/* The report behind this thread's last ODB_EBUG on k (reference), or NULL. */
ODB_API const struct odb_report *odb_last_bug(odb_kernel *k);
/* Publish a report made by a C user (subsystem and kind are copied).
 * Returns ODB_EBUG when panic_on_warn is set. */
ODB_API int odb_report_simple(odb_kernel *k, const char *subsystem, const char *kind,
			      const char *text);

/* ---- stack depot -------------------------------------------------------- */
/* Hook that describes the innermost caller frame outside odebug (the binding
 * registers one giving the Python caller "file:line:function").  It must not
 * block; write NUL-terminated text into buf, return false for "none". */
typedef bool (*odb_frame_hook)(void *ctx, char *buf, size_t len);
ODB_API void odb_set_frame_hook(odb_kernel *k, odb_frame_hook hook, void *ctx);

/* Interruption of long calls (scenarios, benchmarks).  Their loops call the
 * kernel's poll hook at safe points -- from the thread that made the call,
 * between rounds, with no core lock held -- at most every ODB_POLL_NS of host
 * time.  A hook returning non-zero stops the call early: it frees everything
 * it allocated and returns ODB_EINTR (the Python binding's hook runs the
 * pending signal handlers, so Ctrl-C becomes KeyboardInterrupt).  No hook
 * (the default, or hook NULL): calls run to their end.  The hook may run
 * code that calls into the same kernel. */
#define ODB_POLL_NS 20000000ULL
typedef int (*odb_poll_hook)(void *ctx);
ODB_API void odb_set_poll_hook(odb_kernel *k, odb_poll_hook hook, void *ctx);
/* Call the hook if ODB_POLL_NS have passed since *last_ns (0: now), updating
 * *last_ns; ODB_OK, or ODB_EINTR when the hook asks to stop. */
ODB_API int odb_poll(odb_kernel *k, uint64_t *last_ns);
/* stack_depot_save() of the calling context; returns the handle (0 on failure). */
ODB_API uint32_t odb_stack_save(odb_kernel *k, unsigned int skip);
/* Print a stack as the kernel does (" func+0x1a/0x80\n" per frame) into a
 * malloc'd string (odb_free). NULL for an unknown handle. */
ODB_API char *odb_stack_text(odb_kernel *k, uint32_t handle);
/* sprint_symbol(): the %pS text of a host code address ("func+0x1a/0x80":
 * the address itself, not the call before it; "0x0" for 0), or its hex value
 * when no symbol covers it. */
ODB_API void odb_sprint_symbol(odb_kernel *k, uintptr_t pc, char *buf, size_t len);
ODB_API uint64_t odb_stack_depot_count(odb_kernel *k);

/* ---- command line ------------------------------------------------------- */
/* The command line the kernel booted with. */
ODB_API const char *odb_cmdline(odb_kernel *k);
/* Value of a boot parameter as the kernel holds it now (e.g. "panic_on_warn"
 * -> "1"), malloc'd (odb_free); NULL if unknown. */
ODB_API char *odb_param_get(odb_kernel *k, const char *name);


/* ---- the slab allocator (mm/slub.c with slub_debug) ----------------------------
 * Objects are arena addresses.  Caches are owned by the kernel: a pointer is
 * valid until odb_kmem_cache_destroy() or the kernel's destruction. */
typedef struct kmem_cache odb_cache;

/* SLAB_* flags (include/linux/slab.h values, v4.x-v6.7). */
#define ODB_SLAB_CONSISTENCY_CHECKS 0x00000100U   /* F */
#define ODB_SLAB_RED_ZONE           0x00000400U   /* Z */
#define ODB_SLAB_POISON             0x00000800U   /* P */
#define ODB_SLAB_KMALLOC            0x00001000U   /* a kmalloc-type cache (orig_size with U) */
#define ODB_SLAB_HWCACHE_ALIGN      0x00002000U
#define ODB_SLAB_STORE_USER         0x00010000U   /* U */
#define ODB_SLAB_TYPESAFE_BY_RCU    0x00080000U
#define ODB_SLAB_TRACE              0x00200000U   /* T */
#define ODB_SLAB_DEBUG_OBJECTS      0x00400000U
#define ODB_SLAB_NOLEAKTRACE        0x00800000U
#define ODB_SLAB_NO_MERGE           0x01000000U
#define ODB_SLAB_FAILSLAB           0x02000000U   /* A */
#define ODB_SLAB_ACCOUNT            0x04000000U   /* memcg accounting: accepted, no effect */
#define ODB_SLAB_NO_USER_FLAGS      0x10000000U   /* ignore slub_debug= (KUnit caches) */
#define ODB_ZERO_SIZE_PTR           ((odb_addr_t)16)

/* "FZPUTA" (any case, '-' clears) -> SLAB_* bits; ODB_EINVAL names a bad letter. */
ODB_API int odb_slab_flags_parse(odb_kernel *k, const char *letters, unsigned int *flags);
/* The debug letters of flags ("FZPU"), into buf. */
ODB_API void odb_slab_flags_letters(unsigned int flags, char *buf, size_t len);

/* kmem_cache_create: flags are ORed with slub_debug= unless NO_USER_FLAGS.
 * ctor (may be NULL) runs on every object of a new slab. */
typedef void (*odb_ctor_fn)(odb_kernel *k, odb_addr_t object, void *ctx);
ODB_API int odb_kmem_cache_create(odb_kernel *k, const char *name, unsigned int size,
				  unsigned int align, unsigned int flags, odb_ctor_fn ctor,
				  void *ctor_ctx, odb_cache **out);
/* kmem_cache_destroy: leaked objects are reported ("Objects remaining ...")
 * and their memory is reclaimed.  The cache's descriptor (an object of the
 * "kmem_cache" cache in the arena) is freed; s stays a valid tombstone until
 * the kernel is destroyed, so destroying it again is safe: with KASAN on, the
 * kernel's kasan_check_byte() reports slab-use-after-free and ODB_OK is
 * returned; otherwise ODB_ESTATE.  Every other call on it: ODB_ESTATE. */
ODB_API int odb_kmem_cache_destroy(odb_kernel *k, odb_cache *s);
ODB_API odb_cache *odb_kmem_cache_find(odb_kernel *k, const char *name);
/* Up to max caches in creation order; returns the total number. */
ODB_API size_t odb_kmem_cache_list(odb_kernel *k, odb_cache **out, size_t max);
/* The same for the caches whose kmem_cache_destroy() found objects remaining
 * (reported, as the kernel does): the kernel keeps such a cache on its list;
 * odebug takes it off (its name can be used again) and keeps it, slabs and all,
 * until the kernel goes, so that a later free of one of its objects (a
 * mempool's element, a quarantined object) goes into it as into any cache.
 * Handles that only odb_kmem_cache_info / odb_kasan_quarantine_count take. */
ODB_API size_t odb_kmem_cache_zombies(odb_kernel *k, odb_cache **out, size_t max);
/* Allocation failure is ODB_ENOMEM (a normal outcome). */
ODB_API int odb_kmem_cache_alloc(odb_kernel *k, odb_cache *s, unsigned int gfp, odb_addr_t *out);
/* kmalloc of size bytes from s (a kmalloc-type cache: orig_size tracking). */
ODB_API int odb_kmem_cache_kmalloc(odb_kernel *k, odb_cache *s, size_t size, unsigned int gfp,
				   odb_addr_t *out);
ODB_API int odb_kmem_cache_free(odb_kernel *k, odb_cache *s, odb_addr_t x);
/* kmem_cache_alloc_bulk: all n or none (ODB_ENOMEM). */
ODB_API int odb_kmem_cache_alloc_bulk(odb_kernel *k, odb_cache *s, unsigned int gfp, size_t n,
				      odb_addr_t *out);
ODB_API int odb_kmem_cache_free_bulk(odb_kernel *k, odb_cache *s, size_t n, const odb_addr_t *p);
/* kmalloc(0) gives ODB_ZERO_SIZE_PTR; > 8192 bytes comes from the page allocator.
 * odb_kmalloc and odb_kfree have fast paths for a kmalloc cache with nothing on
 * it, and for one with KASAN (and debug objects) alone: they leave the state,
 * the saved stacks and the reports of the full path (csrc/tests/test_api_fast.c
 * compares the two); like every fast path, a successful call leaves the
 * thread's odb_strerror() message as it was. */
ODB_API int odb_kmalloc(odb_kernel *k, size_t size, unsigned int gfp, odb_addr_t *out);
ODB_API int odb_kfree(odb_kernel *k, odb_addr_t x);
/* ksize: the usable size (0 for NULL/ZERO_SIZE_PTR, for a bad pointer after
 * KASAN's kasan_check_byte() report, and for anything but the start of a
 * large kmalloc outside the slab).  As the kernel's __ksize, it lifts the
 * slub_debug=ZU kmalloc redzone check off the object's slack
 * (skip_orig_size_check): the caller may use all of it. */
ODB_API int odb_ksize(odb_kernel *k, odb_addr_t x, size_t *out);
/* kfree_sensitive (mm/slab_common.c): ksize() -- a freed object is reported
 * there (slab-use-after-free, Read of size 1) and gives 0 --, the usable bytes
 * unpoisoned and zeroed, then kfree() (which reports the double free).  A
 * pointer inside a slab object is not zeroed (odebug: the kernel would zero
 * ksize() bytes from it, past the object); kfree reports it. */
ODB_API int odb_kfree_sensitive(odb_kernel *k, odb_addr_t x);
/* kfree_rcu: freed after a grace period (one jiffy of the kernel's clock).
 * As kvfree_call_rcu, records the caller's stack in the object's KASAN alloc
 * meta: a later report on it prints "Last potentially related work creation". */
ODB_API int odb_kfree_rcu(odb_kernel *k, odb_addr_t x);
/* call_rcu: fn(k, head, ctx) runs after a grace period (one jiffy of the
 * kernel's clock: in odb_advance past it, on the real clock's worker thread,
 * or in odb_rcu_barrier), callbacks in call order, with no odebug lock held
 * (fn may call odebug, and call_rcu again: that callback waits for the next
 * grace period).  head: an arena address, usually an rcu_head inside an
 * object, whose bytes odebug never reads or writes; its object gets the
 * caller's stack as KASAN's aux stack, as __call_rcu_common records it.
 * ODB_EINVAL for a NULL fn or a head outside the arena; callbacks still
 * pending when the kernel is destroyed never run. */
typedef void (*odb_rcu_callback_fn)(odb_kernel *k, odb_addr_t head, void *ctx);
ODB_API int odb_call_rcu(odb_kernel *k, odb_addr_t head, odb_rcu_callback_fn fn, void *ctx);
/* rcu_barrier + kvfree_rcu_barrier: run the pending kfree_rcu frees and
 * call_rcu callbacks now (callbacks those queue wait for the next grace
 * period, as after the kernel's rcu_barrier). */
ODB_API void odb_rcu_barrier(odb_kernel *k);
ODB_API int odb_krealloc(odb_kernel *k, odb_addr_t p, size_t new_size, unsigned int gfp,
			 odb_addr_t *out);
/* The calling thread's running count of slab errors under the KUnit rule
 * (lib/slub_kunit.c's "slab_errors"): take a difference around any call. */
ODB_API unsigned long odb_slab_errors(odb_kernel *k);
/* lib/slub_kunit.c's "slab_errors" KUnit resource: between begin and end,
 * SLUB errors the calling thread makes (reports, FIXes, count mismatches, by
 * the KUnit rule) are counted and, as in the kernel, not printed: no dmesg
 * line, no odb_report, no taint, no "Slab cache still has objects" WARN.
 * KASAN and ODEBUG reports are unaffected.  end() gives the count since
 * begin().  No nesting: a second begin (or an end without begin) on the same
 * thread is ODB_ESTATE. */
ODB_API int odb_slab_kunit_begin(odb_kernel *k);
ODB_API int odb_slab_kunit_end(odb_kernel *k, unsigned long *errors);
/* validate_slab_cache: *errors gets the KUnit-rule error count.  On the
 * modern path (v6.1+) a cache without debug flags is refused (ODB_EINVAL), as
 * the kernel's sysfs file refuses it. */
ODB_API int odb_kmem_cache_validate(odb_kernel *k, odb_cache *s, long *errors);
/* flush_all(): every vCPU's slab and per-CPU partial slabs back to the node
 * (what validate does first; for a cache the v6.1+ path will not validate). */
ODB_API int odb_kmem_cache_flush(odb_kernel *k, odb_cache *s);

struct odb_cache_info {
	char name[64];
	unsigned int object_size, size, align, offset, inuse, red_left_pad;
	unsigned int order, objects_per_slab, min_partial, cpu_partial;
	unsigned int flags;           /* SLAB_* incl. internal __OBJECT_POISON/__CMPXCHG_DOUBLE */
	char letters[8];              /* debug letters, "" for none */
	bool kmalloc, cmpxchg_double, object_poison;
	unsigned int info_end;        /* where tracks start (object-relative) */
	unsigned long nr_slabs, total_objects, nr_partial;
	unsigned long active_objs;    /* /proc/slabinfo's (node partial free counted) */
	unsigned int kasan_meta_size;
};
ODB_API int odb_kmem_cache_info(odb_kernel *k, odb_cache *s, struct odb_cache_info *out);
/* CONFIG_SLUB_STATS: names in the kernel's order. */
ODB_API unsigned int odb_slub_stat_count(void);
ODB_API const char *odb_slub_stat_name(unsigned int i);
/* Sums over vCPUs into out[odb_slub_stat_count()]; per_cpu (may be NULL) gets
 * [cpu * count + i]. */
ODB_API int odb_kmem_cache_stats(odb_kernel *k, odb_cache *s, uint64_t *out, uint64_t *per_cpu);
/* /proc/slabinfo (version 2.1), malloc'd (odb_free). */
ODB_API char *odb_slabinfo_text(odb_kernel *k);
/* Which cache and object an address belongs to: ODB_OK with the cache and
 * the object start, ODB_ENOENT if not a slab address. */
ODB_API int odb_slab_object(odb_kernel *k, odb_addr_t a, odb_cache **s, odb_addr_t *object);

/* ---- memory pools (mm/mempool.c) ----------------------------------------------
 * A pool keeps min_nr preallocated elements in reserve for when its
 * allocator fails: kmalloc of size bytes, objects of a slab cache, or blocks
 * of 2^order pages (an element is then the first page's address).
 *
 * odb_mempool_alloc tries the allocator without direct reclaim first, then
 * takes an element from the reserve (unpoisoned, with a new alloc track, as
 * kasan_unpoison_element does), then the allocator with gfp; then, without
 * ODB_GFP_DIRECT_RECLAIM, ODB_ENOMEM; with it, it waits for an element given
 * back (odb_mempool_free from another thread; every 5 s of host time it
 * tries the allocator again, as the kernel's io_schedule_timeout(5*HZ)
 * does), interruptible through the poll hook (ODB_EINTR); a task of the
 * controlled scheduler waits as one (nobody to give an element back: the
 * run ends in a deadlock report).  __GFP_ZERO is refused (ODB_EINVAL), as the
 * kernel warns.
 *
 * odb_mempool_free puts the element into the reserve while it holds fewer
 * than min_nr, else gives it back to the allocator.  Into the reserve, KASAN
 * poisons it as a free would (kasan_mempool_poison_object / _pages): a later
 * access is a use-after-free report (slab-use-after-free; use-after-free for
 * a large kmalloc or pages), and a double free (an element already in the
 * reserve, or freed) or an invalid free (not an object start) is reported
 * and the element is not kept, as in the kernel (ODB_OK returned).  An
 * address outside the arena is ODB_EINVAL; for a page pool, so is a block
 * that is a slab page or of another order (the kernel would corrupt its page
 * allocator).  The pool and its element array are host memory: no slab
 * traffic.  A destroyed pool stays valid memory until the kernel goes: any
 * later call on it is ODB_ESTATE; a slab pool whose cache was destroyed
 * likewise.  Calls on one pool may come from any thread. */
typedef struct mempool odb_mempool;
enum odb_mempool_kind { ODB_MEMPOOL_KMALLOC = 0, ODB_MEMPOOL_SLAB = 1, ODB_MEMPOOL_PAGE = 2 };
/* mempool_create_kmalloc_pool / _slab_pool / _page_pool: min_nr 0..2^20
 * elements preallocated with GFP_KERNEL (ODB_ENOMEM, nothing left, if one
 * cannot be); size 1..KMALLOC_MAX_SIZE; a cache of this kernel without a
 * constructor; order 0..ODB_MAX_ORDER.  Otherwise ODB_EINVAL. */
ODB_API int odb_mempool_create_kmalloc_pool(odb_kernel *k, int min_nr, size_t size,
					    odb_mempool **out);
ODB_API int odb_mempool_create_slab_pool(odb_kernel *k, int min_nr, odb_cache *s,
					 odb_mempool **out);
ODB_API int odb_mempool_create_page_pool(odb_kernel *k, int min_nr, unsigned int order,
					 odb_mempool **out);
/* mempool_alloc: *out the element; ODB_ENOMEM when none (see above). */
ODB_API int odb_mempool_alloc(odb_kernel *k, odb_mempool *pool, unsigned int gfp, odb_addr_t *out);
/* mempool_alloc_preallocated: an element of the reserve only; ODB_ENOMEM if empty. */
ODB_API int odb_mempool_alloc_preallocated(odb_kernel *k, odb_mempool *pool, odb_addr_t *out);
/* mempool_free (element 0: nothing). */
ODB_API int odb_mempool_free(odb_kernel *k, odb_mempool *pool, odb_addr_t element);
/* mempool_resize: new_min_nr 1..2^20; shrinking gives the reserve's extra
 * elements back, growing refills as far as GFP_KERNEL allocations go
 * (ODB_OK even when they fail, as the kernel's). */
ODB_API int odb_mempool_resize(odb_kernel *k, odb_mempool *pool, int new_min_nr);
/* mempool_destroy: the reserve back to its allocator (NULL: nothing). */
ODB_API int odb_mempool_destroy(odb_kernel *k, odb_mempool *pool);
struct odb_mempool_info {
	int kind;                     /* enum odb_mempool_kind */
	int min_nr, curr_nr;          /* guaranteed elements, elements in reserve now */
	size_t size;                  /* kmalloc size, or the cache's object size */
	unsigned int order;           /* page pool */
	odb_cache *cache;             /* slab pool */
	bool destroyed;
};
ODB_API int odb_mempool_info(odb_kernel *k, odb_mempool *pool, struct odb_mempool_info *out);
/* The reserve's elements (up to max into out); *n gets how many there are. */
ODB_API int odb_mempool_elements(odb_kernel *k, odb_mempool *pool, odb_addr_t *out, size_t max,
				 size_t *n);

/* ---- scenario drivers (csrc/scenarios/, pthreads bound to vCPUs) ------------- */
struct odb_hackbench_cfg {
	unsigned int groups;          /* -g */
	unsigned int fds;             /* -f: senders and receivers per group */
	unsigned int loops;           /* -l: messages per sender and receiver */
	unsigned int msg_size;        /* -s (bytes) */
	unsigned int queue_depth;     /* messages a receiver's queue holds (0: 64) */
	bool processes;               /* -P naming (threads either way) */
	bool on_threads;              /* one pthread per task (default: tasks on their vCPUs) */
};
struct odb_hackbench_result {
	uint64_t elapsed_ns;
	uint64_t messages;
	uint64_t alloc_failures;
	uint64_t cpu_ns;              /* time the vCPU threads were on a CPU (tasks on vCPUs) */
	uint64_t list_lock_acquired;  /* list_lock acquisitions of the two caches */
	uint64_t list_lock_contended; /* of which had to wait for another holder */
};
/* hackbench: 2 * groups * fds tasks; each message is an skbuff_head_cache
 * object plus kmalloc(msg_size + 320), allocated by the sender on its vCPU and
 * freed by the receiver on another.  By default the tasks run on their vCPUs:
 * one host thread per vCPU steps its senders and receivers and switches only
 * where one blocks on its queue (as a CPU runs tasks: no lock holder is
 * preempted by the host); on_threads: a pthread per task. */
ODB_API int odb_hackbench(odb_kernel *k, const struct odb_hackbench_cfg *cfg,
			  struct odb_hackbench_result *out);

/* ---- microbenchmarks (C loops, nothing else in the timed region) -------------- */
/* Limits (ODB_EINVAL beyond): the slab loop polls the interrupt hook
 * (odb_poll); glibc's has no kernel to poll, so it is bounded tighter. */
#define ODB_BENCH_MAX_BATCH 4096u
#define ODB_BENCH_MAX_PAIRS (1ULL << 40)
#define ODB_BENCH_MALLOC_MAX_PAIRS (1ULL << 28)
#define ODB_BENCH_MALLOC_MAX_SIZE (1ULL << 30)
/* n alloc+free pairs on s, in batches of `batch` live objects (1 = pairs);
 * exclusive: the loop owns its vCPU (odb_bind_cpu_exclusive) meanwhile. */
ODB_API int odb_bench_slab_pairs(odb_kernel *k, odb_cache *s, uint64_t n, unsigned int batch,
				 bool exclusive, uint64_t *elapsed_ns);
/* The same loop on glibc malloc/free of size bytes. */
ODB_API int odb_bench_malloc_pairs(size_t size, uint64_t n, unsigned int batch, uint64_t *elapsed_ns);

/* ---- KASAN (generic mode: shadow, checked accesses, quarantine) ----------------
 * On by default (kasan=off disables it).  A bad access is reported as the
 * kernel does ("BUG: KASAN: <type> ..."), once per boot unless
 * kasan_multi_shot; every detection is counted.  Accesses through
 * odb_kasan_read/write are one access of n bytes each, anywhere in the
 * arena or in vmalloc space (both have shadow): a bad one inside memory that
 * exists -- the arena, or the mapped pages of one vmalloc area -- is reported
 * and then performed (allocator metadata inside slab slots is restored
 * afterwards); where memory does not exist (past the end of RAM, a guard
 * page, unused vmalloc space, any other address) it is reported and never
 * performed (odb_kasan_read gives zeros for those bytes; odb_kasan_read_avail,
 * below, copies only the bytes that exist).  memset/memcpy/memmove follow
 * mm/kasan/shadow.c: the range is checked and the operation is skipped when
 * the check fails.  With kasan=off the accesses are unchecked, and a range
 * that is not all existing memory is ODB_EFAULT.  Under kasan.fault=panic
 * (or panic_on_warn without multi-shot) the call returns ODB_EBUG after the
 * report. */
ODB_API bool odb_kasan_enabled(odb_kernel *k);
ODB_API int odb_kasan_check_read(odb_kernel *k, odb_addr_t addr, size_t size);
ODB_API int odb_kasan_check_write(odb_kernel *k, odb_addr_t addr, size_t size);
/* The check of an instrumented access (the KASAN runtime's __asan_load* /
 * __asan_store* of code built with odebug.cc's flags): as odb_kasan_check_read
 * / _write, with ip the instrumented function's return address (the callback's
 * __builtin_return_address(0)): a report says "in <that function>" and its
 * stack starts at that function.  *ok (may be NULL): false if the access was
 * bad (reported or, single shot, counted). */
ODB_API int odb_kasan_check_ip(odb_kernel *k, odb_addr_t addr, size_t size, bool is_write,
			       unsigned long ip, bool *ok);
/* A KASAN report about memory outside the arena that the caller keeps its own
 * shadow for (the runtime's registered globals): the kernel's report
 * machinery (single/multi shot, dmesg, k.reports, kasan.fault, panic_on_warn)
 * with the caller's bug type and description lines (e.g. "The buggy address
 * belongs to the variable:\n name+0x28/0x40 [module]"), and a "Memory state
 * around the buggy address" dump from shadow_byte(ctx, granule address)
 * (-1: not known, printed "??"; NULL: no dump).  first_bad: the first bad
 * byte of the access.  Addresses are host addresses, printed as they are. */
struct odb_kasan_foreign {
	const char *bug_type;
	const char *description;
	uint64_t first_bad;
	int (*shadow_byte)(void *ctx, uint64_t granule);
	void *ctx;
};
ODB_API int odb_kasan_report_foreign(odb_kernel *k, uint64_t addr, size_t size, bool is_write,
				     unsigned long ip, const struct odb_kasan_foreign *f);
/* kasan_record_aux_stack(): the calling stack becomes the newest of the two
 * "work creation" stacks of the slab object holding addr (the older one is
 * kept as second), printed by later KASAN reports on the object ("Last
 * potentially related work creation:").  What call_rcu and kfree_rcu do
 * themselves; for code that queues its own deferred work on an object (the
 * kernel's insert_work does it for queue_work).  Anything but a slab object
 * (a large kmalloc, a page, an address outside the arena) is ignored, as in
 * the kernel; allocating the object clears both stacks. */
ODB_API int odb_kasan_record_aux_stack(odb_kernel *k, odb_addr_t addr);
/* kasan_check_byte(): *ok false (after a report) if the byte is not accessible */
ODB_API int odb_kasan_check_byte(odb_kernel *k, odb_addr_t addr, bool *ok);
ODB_API int odb_kasan_read(odb_kernel *k, odb_addr_t addr, void *buf, size_t n);
/* odb_kasan_read() of n bytes (checked and reported as one access of n) that
 * copies only the bytes that exist from addr on: buf holds odb_backed(k,
 * addr, n) bytes (for an arena address max(0, min(n, arena end - addr))),
 * *got says how many were copied (0 when nothing exists at addr).  A read far
 * past the end of RAM costs no host memory for bytes that are not there.
 * With kasan=off a range that is not all existing memory is ODB_EFAULT, as
 * above.  odb_kasan_read_some: the same, copying at most cap bytes (for a
 * buffer sized before the call while vmalloc areas may come and go). */
ODB_API int odb_kasan_read_avail(odb_kernel *k, odb_addr_t addr, size_t n, void *buf,
				 size_t *got);
ODB_API int odb_kasan_read_some(odb_kernel *k, odb_addr_t addr, size_t n, void *buf, size_t cap,
				size_t *got);
ODB_API int odb_kasan_write(odb_kernel *k, odb_addr_t addr, const void *buf, size_t n);
ODB_API int odb_kasan_memset(odb_kernel *k, odb_addr_t addr, int c, size_t n);
ODB_API int odb_kasan_memcpy(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n);
ODB_API int odb_kasan_memmove(odb_kernel *k, odb_addr_t dst, odb_addr_t src, size_t n);
/* The shadow bytes of the granules covering [addr, addr+n) (in the arena or
 * in vmalloc space): out needs n/8 + 2 bytes; *count gets how many were
 * written.  ODB_EFAULT for a range outside both; ODB_ESTATE if KASAN is off. */
ODB_API int odb_kasan_shadow(odb_kernel *k, odb_addr_t addr, size_t n, uint8_t *out, size_t *count);
struct odb_kasan_counters {
	bool enabled, multi_shot, fault_panic;
	uint64_t detections;        /* every bad access / bad free */
	uint64_t reports;           /* reports printed */
	uint64_t suppressed;        /* detections after the first without kasan_multi_shot */
};
ODB_API int odb_kasan_counters(odb_kernel *k, struct odb_kasan_counters *out);
/* kasan_multi_shot at run time (the kernel's kasan_save_enable_multi_shot /
 * kasan_restore_multi_shot, as its KASAN test module flips it): on, every bad
 * access is reported; off, only the first since boot (the "reported" bit is
 * never re-armed, as in the kernel).  *old (may be NULL): the previous value. */
ODB_API int odb_kasan_set_multi_shot(odb_kernel *k, bool on, bool *old);

/* The shadow primitives (mm/kasan/shadow.c, generic mode).  Shadow values:
 * 0 all 8 bytes accessible, 1..7 that many, the KASAN_* poison values
 * otherwise (0xFF page free, 0xFE page redzone, 0xFC slab redzone, 0xFB slab
 * free, 0xFA slab free with meta, 0xF9 global redzone, ...).  With kasan=off
 * they do nothing (after the argument checks).
 * kasan_poison: addr granule-aligned, size a multiple of 8 (ODB_EINVAL:
 * the kernel WARNs and does nothing); every granule gets value.
 * kasan_unpoison: addr granule-aligned; size any: the granules covering it
 * become accessible, a last partial granule says how many of its bytes are.
 * Ranges outside the arena: ODB_EFAULT; size 0: nothing. */
ODB_API int odb_kasan_poison(odb_kernel *k, odb_addr_t addr, size_t size, uint8_t value);
ODB_API int odb_kasan_unpoison(odb_kernel *k, odb_addr_t addr, size_t size);
/* kasan_poison_pages (KASAN_PAGE_FREE) / kasan_unpoison_pages of the
 * 2^order pages at addr (page-aligned, ODB_EINVAL; order <= ODB_MAX_ORDER). */
ODB_API int odb_kasan_poison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order);
ODB_API int odb_kasan_unpoison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order);
/* kasan_mempool_poison_object: poison a slab object or a large kmalloc as
 * its free would, without freeing it (mempool keeps it).  *reuse: true if
 * the object may be kept; false after a KASAN report, not poisoned: an
 * invalid-free (not an object start / not a block's start) or a double-free
 * (already freed or poisoned).  With kasan=off *reuse is true.  ODB_EFAULT
 * outside the arena. */
ODB_API int odb_kasan_mempool_poison_object(odb_kernel *k, odb_addr_t addr, bool *reuse);
/* kasan_mempool_unpoison_object: accessible again as an allocation of size
 * bytes (kmalloc redzone after it for a kmalloc cache; page redzone for a
 * large kmalloc), with a new alloc track.  addr must be an object start (or
 * an allocated page block's start) and size fit it, else ODB_EINVAL (the
 * kernel trusts its caller). */
ODB_API int odb_kasan_mempool_unpoison_object(odb_kernel *k, odb_addr_t addr, size_t size);
/* kasan_mempool_poison_pages / _unpoison_pages: the same for 2^order pages
 * (a double or invalid free is reported, *reuse false). */
ODB_API int odb_kasan_mempool_poison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order,
					   bool *reuse);
ODB_API int odb_kasan_mempool_unpoison_pages(odb_kernel *k, odb_addr_t addr, unsigned int order);
/* kasan_disable_current / kasan_enable_current: the calling thread's depth
 * in k (current->kasan_depth).  While it is > 0 the thread's bad accesses are
 * not reported nor counted, and they are performed, as in the kernel
 * (odb_kasan_memset/memcpy/memmove too, keeping the allocators' metadata
 * inside slab slots, as odb_kasan_write does); invalid and double frees are
 * still reported (mm/kasan/report.c exempts them).  enable without a
 * matching disable: ODB_ESTATE.  odb_kasan_current_depth reads the depth. */
ODB_API int odb_kasan_disable_current(odb_kernel *k);
ODB_API int odb_kasan_enable_current(odb_kernel *k);
ODB_API int odb_kasan_current_depth(odb_kernel *k, unsigned int *depth);

/* The quarantine's sizing for a machine, without a kernel: totalram / 32 minus
 * 1 MiB per online CPU (clamped at 0), batches = max(1024, 4 * CONFIG_NR_CPUS),
 * batch = max(1 MiB, 2 * total / batches); slots_used = max_size / batch_size.
 * old_*: the pre-2016 "quarter" policy (no clamp; low water = 3/4 of max). */
struct odb_quarantine_geometry {
	uint64_t total_size, percpu_reserve, max_size, batch_size, batches, slots_used;
	uint64_t old_max_size, old_low_size, old_reduce_bytes;
};
ODB_API int odb_quarantine_geometry(uint64_t ram, unsigned int cpus, unsigned int nr_cpus,
				    struct odb_quarantine_geometry *out);

#define ODB_QHIST 64
struct odb_quarantine_stats {
	int policy;                   /* 0 batched (2016), 1 quarter (old) */
	uint64_t size;                /* quarantine_size (batched) / global bytes (quarter) */
	uint64_t max_size, batch_size, batches, head, tail;
	uint64_t slots_used;          /* non-empty ring slots */
	uint64_t ring_bytes;          /* sum of the slots' bytes (size may overstate it) */
	uint64_t percpu_total;        /* bytes in per-CPU lists */
	uint64_t put_calls, put_refused, flushes;
	uint64_t reduce_calls, reduce_slow, reduce_evicting;
	uint64_t evicted_objects, evicted_bytes, max_evict_bytes, max_evict_objects;
	/* [0]: 0; [i]: values in [2^(i-1), 2^i) */
	uint64_t evict_bytes_hist[ODB_QHIST], evict_objects_hist[ODB_QHIST];
	uint64_t free_ns_max, free_ns_p50, free_ns_p99, free_ns_total;   /* per evicting reduce */
	uint64_t lock_ns_max, lock_ns_p50, lock_ns_p99, lock_ns_total;   /* quarantine_lock holds */
	uint64_t lock_waits, lock_wait_ns_total, lock_wait_ns_max;       /* contended acquisitions */
	uint64_t remove_cache_calls, remove_cache_objects;
	uint64_t offline_objects;     /* freed at once when a vCPU went offline */
	/* conservation: objects quarantined now = put_calls - evicted_objects -
	 * remove_cache_objects - offline_objects (when quiescent) */
	uint64_t in_flight;           /* bytes being freed by reducers now */
	uint64_t peak_total;          /* peak of ring + per-CPU + in-flight bytes */
};
/* percpu (may be NULL) gets odb_nr_cpus(k) per-vCPU byte counts.  ODB_ESTATE if KASAN is off. */
ODB_API int odb_kasan_quarantine_stats(odb_kernel *k, struct odb_quarantine_stats *out,
				       uint64_t *percpu);
/* The objects in the quarantine now (per-vCPU lists and the ring), by cache:
 * objects[i] / bytes[i] for caches[i]; other[0] / other[1] for any other cache.
 * A walk of every list (per-vCPU lists under their irq locks, the ring under
 * quarantine_lock): for checks, not for hot paths.  ODB_ESTATE if KASAN is off. */
ODB_API int odb_kasan_quarantine_count(odb_kernel *k, odb_cache *const *caches, size_t n,
				       uint64_t *objects, uint64_t *bytes, uint64_t *other);
/* One quarantine reduce, as a blocking allocation runs it. */
ODB_API int odb_kasan_quarantine_reduce(odb_kernel *k);
/* Give every quarantined object back to its slab (kasan_quarantine_remove_cache
 * on every cache: quarantine_size is not lowered, as in the kernel). */
ODB_API int odb_kasan_quarantine_drain(odb_kernel *k);
/* CPU hotplug of the quarantine: offline frees the vCPU's list and makes its
 * puts refuse (objects are freed at once) until it comes back online. */
ODB_API int odb_kasan_quarantine_cpu_offline(odb_kernel *k, int cpu, bool offline);

/* ---- scenario: quarantine storm (kmalloc/kfree churn that keeps the quarantine
 * full), on `threads` pthreads (vCPU i each), timing every call. */
struct odb_quarantine_storm {
	uint64_t ops_per_thread;      /* kmalloc+kfree pairs per thread */
	unsigned int threads;         /* 1..nr_cpus */
	unsigned int live;            /* objects each thread keeps live (ring of this many) */
	size_t min_size, max_size;    /* kmalloc sizes, uniform */
	uint64_t seed;
	/* every mutex_every-th step (0: never) runs its kmalloc+kfree holding one
	 * mutex shared by all threads, as kmalloc under a mutex does in the kernel */
	unsigned int mutex_every;
};
struct odb_quarantine_storm_result {
	uint64_t elapsed_ns, ops;
	uint64_t alloc_p50, alloc_p99, alloc_max;   /* ns per kmalloc */
	uint64_t free_p50, free_p99, free_max;      /* ns per kfree */
	uint64_t mutex_ops;                         /* steps done holding the mutex */
	uint64_t mutex_wait_ns_total, mutex_wait_ns_max;  /* waiting to take it */
};
ODB_API int odb_quarantine_storm(odb_kernel *k, const struct odb_quarantine_storm *cfg,
				 struct odb_quarantine_storm_result *out);

/* ---- debug objects (lib/debugobjects.c, the v5.3 design) ----------------------
 * Lifetime tracking of objects by address: a tracker per address in a
 * 16384-bucket hash (by 4 KiB chunk), a state machine per tracker, warnings
 * ("ODEBUG: <op> <state> ...", first 5 printed, all counted) and fixup
 * callbacks.  Addresses are any 64-bit values (arena addresses, or stand-ins
 * for static objects); descriptors are owned by the caller and must outlive
 * every tracker that uses them (the kernel's are static).
 *
 * Every call is a no-op returning ODB_OK (activate: 0) while debug objects are
 * disabled (no_debug_objects, after an OOM or a failed selftest).  Callbacks
 * run with no odebug lock held and may call these functions again (k is the
 * kernel that called them).  A printed warning under panic_on_warn makes the
 * outermost call return ODB_EBUG (the operation itself is complete). */
enum odb_debug_obj_state {
	ODB_ODEBUG_STATE_NONE = 0,
	ODB_ODEBUG_STATE_INIT = 1,
	ODB_ODEBUG_STATE_INACTIVE = 2,
	ODB_ODEBUG_STATE_ACTIVE = 3,
	ODB_ODEBUG_STATE_DESTROYED = 4,
	ODB_ODEBUG_STATE_NOTAVAILABLE = 5,
	ODB_ODEBUG_STATE_MAX = 6,
};

/* struct debug_obj_descr.  Every callback is optional (NULL: none); a fixup
 * returns true iff it fixed something (the kernel then counts a fixup). */
struct odb_debug_obj_descr {
	const char *name;                 /* type name printed in warnings */
	void *ctx;                        /* passed to every callback */
	/* an address identifying the object (printed with %pS; 0 prints 0x0) */
	odb_addr_t (*debug_hint)(odb_kernel *k, odb_addr_t addr, void *ctx);
	/* optional: the %pS text of the hint (takes precedence over debug_hint
	 * when it returns true) */
	bool (*debug_hint_text)(odb_kernel *k, odb_addr_t addr, void *ctx, char *buf, size_t len);
	bool (*is_static_object)(odb_kernel *k, odb_addr_t addr, void *ctx);
	bool (*fixup_init)(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx);
	bool (*fixup_activate)(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx);
	bool (*fixup_destroy)(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx);
	bool (*fixup_free)(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx);
	bool (*fixup_assert_init)(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx);
	/* ODB_DESCR_* (0: the kernel's behaviour) */
	unsigned int flags;
};
/* The callbacks never run while the calling thread holds a core lock (a
 * vCPU's irq lock, slab_mutex, the quarantine's srcu): a "free active" warning
 * (its debug_hint) and fixup_free found by a slab page freed under one are
 * deferred until the API call returns.  Set it when a callback calls odebug
 * again or blocks on something another odebug caller may hold (the Python
 * binding sets it: its callbacks take the interpreter lock).  Without it the
 * callbacks run where the kernel runs them, in atomic context. */
#define ODB_DESCR_DEFER_ATOMIC 0x1u

/* The API of include/linux/debugobjects.h.  ODB_EINVAL (with a message) for a
 * NULL descriptor or one without a name. */
ODB_API int odb_debug_object_init(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
/* As init, for an object on the calling thread's stack (host stack bounds). */
ODB_API int odb_debug_object_init_on_stack(odb_kernel *k, odb_addr_t addr,
					   const struct odb_debug_obj_descr *d);
/* Returns 0 or -EINVAL (== ODB_EINVAL with odb_strerror() empty) as the
 * kernel's does; other ODB_* codes for failures. */
ODB_API int odb_debug_object_activate(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
ODB_API int odb_debug_object_deactivate(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
ODB_API int odb_debug_object_destroy(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
ODB_API int odb_debug_object_free(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
ODB_API int odb_debug_object_assert_init(odb_kernel *k, odb_addr_t addr, const struct odb_debug_obj_descr *d);
ODB_API int odb_debug_object_active_state(odb_kernel *k, odb_addr_t addr,
					  const struct odb_debug_obj_descr *d,
					  unsigned int expect, unsigned int next);
/* debug_check_no_obj_freed(addr, size): the free-range check.  ODB_ERANGE if
 * addr + size overflows or size > 1 TiB. */
ODB_API int odb_debug_check_no_obj_freed(odb_kernel *k, odb_addr_t addr, uint64_t size);
/* The tracker of addr: ODB_OK with its state and astate, or ODB_ENOENT.
 * (A test helper: no warning, no counter change.) */
ODB_API int odb_debug_object_lookup(odb_kernel *k, odb_addr_t addr, int *state, unsigned int *astate);

/* The twelve lines of /sys/kernel/debug/debug_objects/stats (v5.3), as values. */
struct odb_debug_objects_stats {
	int64_t max_chain, max_checked, warnings, fixups;
	int64_t pool_free, pool_pcp_free, pool_min_free, pool_used, pool_max_used;
	int64_t on_free_list, objs_allocated, objs_freed;
};
ODB_API int odb_debug_objects_stats(odb_kernel *k, struct odb_debug_objects_stats *out);
/* The stats file's text, byte-identical to v5.3 (malloc'd, odb_free). */
ODB_API char *odb_debug_objects_stats_text(odb_kernel *k);

/* Raw internals for tests and models (uncorrected pool counters). */
struct odb_debug_objects_internals {
	bool enabled;                 /* debug_objects_enabled */
	bool obj_cache;               /* the slab cache exists (per-CPU pools on) */
	bool eager;                   /* odebug.objects_free=eager */
	bool obj_freeing;             /* lazy: the freeing work is scheduled */
	bool work_pending;            /* the work item is queued */
	int obj_pool_free, obj_pool_min_free, obj_pool_used, obj_pool_max_used;
	int obj_nr_tofree;
	int pool_size, pool_min_level;   /* debug_objects_pool_size / _min_level */
	int nr_cpus;
	int pcp_free[ODB_MAX_CPUS];   /* per-vCPU free list lengths */
	int64_t hashed;               /* trackers in the hash */
	int64_t work_runs;            /* free_obj_work invocations */
	int64_t work_runs_worker;     /* of which on the real clock's worker thread */
	int64_t offline_freed;        /* trackers CPU offline gave back uncounted (v5.3) */
	int64_t trylock_failed;       /* of which the trylock failed */
	bool selftest_passed;
};
ODB_API int odb_debug_objects_internals(odb_kernel *k, struct odb_debug_objects_internals *out);
ODB_API bool odb_debug_objects_enabled(odb_kernel *k);
/* Test hook: make the next n trylocks of pool_lock in free_obj_work fail. */
ODB_API int odb_debug_objects_fail_trylock(odb_kernel *k, unsigned int n);
/* Bounds of the calling thread's stack, as init_on_stack checks them. */
ODB_API int odb_debug_objects_stack_bounds(odb_kernel *k, odb_addr_t *lo, odb_addr_t *hi);

/* ---- scenario: object churn (the 2019 seed's workload, imitated) ---------------
 * Waves of short-lived tracked objects on every vCPU: each round, each vCPU
 * inits + activates a wave (wave/2 .. wave*3/2 objects, from the seed) and
 * deactivates + frees the wave made `lifetime` rounds earlier, so about
 * wave * lifetime * vCPUs objects are live at the peak.  With the virtual
 * clock, time advances by advance_ns after every round (the freeing work runs
 * then; work queued for "now", the eager policy's, runs after each vCPU's
 * turn).  threads: one pthread per vCPU (else round-robin in the caller,
 * deterministic).  Addresses are synthetic (no slab objects behind them). */
struct odb_object_churn {
	unsigned int rounds;
	unsigned int wave;
	unsigned int lifetime;      /* >= 1 */
	bool threads;
	uint64_t advance_ns;
	uint64_t seed;
	/* > 0: the wave size follows a triangle of this many rounds between
	 * 0.25x and 1.75x (phases of a build: jobs starting and finishing) */
	unsigned int phase_rounds;
};
struct odb_object_churn_result {
	uint64_t cycles;            /* init+activate+deactivate+free cycles done */
	uint64_t elapsed_ns;        /* host time spent in the churn (all vCPUs, wall) */
	uint64_t peak_live;
	uint64_t virtual_ns;        /* kernel time advanced */
};
ODB_API int odb_object_churn(odb_kernel *k, const struct odb_object_churn *cfg,
			     struct odb_object_churn_result *out);

#ifdef __cplusplus
}
#endif
#endif /* ODEBUG_ODEBUG_H */
