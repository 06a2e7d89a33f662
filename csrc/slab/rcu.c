/*
 * kvfree_rcu() and call_rcu(): work deferred past a grace period.  odebug has
 * no RCU readers, so a grace period is one jiffy of the kernel's clock: the
 * objects are freed, and the callbacks run, by delayed work items, each in
 * call order.  kvfree_rcu_barrier() (called by kmem_cache_destroy, as in
 * v6.12+) runs the pending frees now, rcu_barrier() the pending callbacks.
 * Both record the caller's stack as the object's "work creation" for KASAN
 * reports (kasan_record_aux_stack), as kvfree_call_rcu and __call_rcu_common
 * do.  SLUB_RCU_DEBUG's deferred frees are call_rcu callbacks on their
 * rcu_delayed_free records, as in the kernel (call_rcu_slab_free).
 */
#include <stdlib.h>

#include "slab/slub.h"
#include "kasan/kasan.h"
#include "debugobjects/debugobjects.h"

/* A call_rcu callback: host memory only (the rcu_head in the arena is the
 * caller's; odebug neither reads nor writes it). */
struct rcu_cb {
	void *head;
	odb_rcu_callback_fn fn;
	void *ctx;
};

struct odb_rcu {
	spinlock_t lock;
	void **objs;                  /* kvfree_rcu */
	size_t n, cap;
	struct odb_work work;
	struct rcu_cb *cbs;           /* call_rcu */
	size_t ncbs, cbcap;
	struct odb_work cb_work;
};

static void kfree_rcu_work(struct odb_kernel *k, void *arg)
{
	struct odb_rcu *r = arg;
	void **objs;
	size_t n;

	spin_lock(k, &r->lock);
	objs = r->objs;
	n = r->n;
	r->objs = NULL;
	r->n = r->cap = 0;
	spin_unlock(k, &r->lock);
	for (size_t i = 0; i < n; i++)
		kfree(k, objs[i]);
	free(objs);
}

/* The grace period is over: the callbacks queued so far run, in call order,
 * with no lock held (a callback may call into odebug, call_rcu included: its
 * callback then waits for the next grace period). */
static void rcu_cb_work(struct odb_kernel *k, void *arg)
{
	struct odb_rcu *r = arg;
	struct rcu_cb *cbs;
	size_t n;

	spin_lock(k, &r->lock);
	cbs = r->cbs;
	n = r->ncbs;
	r->cbs = NULL;
	r->ncbs = r->cbcap = 0;
	spin_unlock(k, &r->lock);
	for (size_t i = 0; i < n; i++)
		cbs[i].fn(k, host_to_virt(k, cbs[i].head), cbs[i].ctx);
	free(cbs);
}

int odb_rcu_init(struct odb_kernel *k)
{
	struct odb_rcu *r = calloc(1, sizeof(*r));

	if (!r)
		return -1;
	spin_lock_init(&r->lock);
	INIT_DELAYED_WORK(&r->work, kfree_rcu_work, r);
	INIT_DELAYED_WORK(&r->cb_work, rcu_cb_work, r);
	slab_state(k)->rcu = r;
	return 0;
}

void odb_rcu_exit(struct odb_kernel *k)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	if (!r)
		return;
	cancel_delayed_work_sync(k, &r->work);
	cancel_delayed_work_sync(k, &r->cb_work);
	free(r->objs);           /* the objects go with the arena */
	free(r->cbs);            /* callbacks never run: the kernel is going away */
	spin_lock_destroy(&r->lock);
	free(r);
	slab_state(k)->rcu = NULL;
}

int kvfree_rcu(struct odb_kernel *k, void *obj)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	if (!obj)
		return 0;
	spin_lock(k, &r->lock);
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		void **no = realloc(r->objs, ncap * sizeof(*no));
		if (!no) {
			spin_unlock(k, &r->lock);
			return odb_err(k, ODB_ENOMEM, "kfree_rcu: out of memory");
		}
		r->objs = no;
		r->cap = ncap;
	}
	r->objs[r->n++] = obj;
	spin_unlock(k, &r->lock);
	kasan_record_aux_stack(k, obj);
	schedule_delayed_work(k, &r->work, 1);
	return 0;
}

int call_rcu(struct odb_kernel *k, void *head, odb_rcu_callback_fn fn, void *ctx)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	spin_lock(k, &r->lock);
	if (r->ncbs == r->cbcap) {
		size_t ncap = r->cbcap ? r->cbcap * 2 : 16;
		struct rcu_cb *nc = realloc(r->cbs, ncap * sizeof(*nc));
		if (!nc) {
			spin_unlock(k, &r->lock);
			return odb_err(k, ODB_ENOMEM, "call_rcu: out of memory");
		}
		r->cbs = nc;
		r->cbcap = ncap;
	}
	r->cbs[r->ncbs++] = (struct rcu_cb){ head, fn, ctx };
	spin_unlock(k, &r->lock);
	kasan_record_aux_stack(k, head);
	schedule_delayed_work(k, &r->cb_work, 1);
	return 0;
}

/* SLUB_RCU_DEBUG: call_rcu(&delayed_free->head, slab_free_after_rcu_debug),
 * the object kept in the callback's host context (never read back from the
 * record). */
static void slab_free_after_rcu_debug_cb(struct odb_kernel *k, odb_addr_t head, void *object)
{
	slab_free_after_rcu_debug(k, object, virt_to_host(k, head));
}

int call_rcu_slab_free(struct odb_kernel *k, void *obj, void *rec)
{
	return call_rcu(k, rec, slab_free_after_rcu_debug_cb, obj);
}

void rcu_barrier(struct odb_kernel *k)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	if (r)
		flush_delayed_work(k, &r->cb_work);
}

void kvfree_rcu_barrier(struct odb_kernel *k)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	if (r)
		flush_delayed_work(k, &r->work);
}

int odb_kfree_rcu(odb_kernel *k, odb_addr_t x)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	if (x <= ODB_ZERO_SIZE_PTR)
		return odb_leave(t, ODB_OK);
	if (!odb_in_arena(k, x, 1))
		return odb_leave(t, odb_err(k, ODB_EINVAL, "0x%llx is not an address in this kernel's memory",
					    (unsigned long long)x));
	if (debug_objects_refuse_free(k, virt_to_host(k, x), "kfree_rcu"))
		return odb_leave(t, ODB_OK);
	return odb_leave(t, kvfree_rcu(k, virt_to_host(k, x)));
}

int odb_call_rcu(odb_kernel *k, odb_addr_t head, odb_rcu_callback_fn fn, void *ctx)
{
	struct odb_task *t = odb_enter(k);

	if (!t)
		return odb_enter_failed(k);
	if (!fn)
		return odb_leave(t, odb_err(k, ODB_EINVAL, "call_rcu: no callback"));
	if (!odb_in_arena(k, head, 1))
		return odb_leave(t, odb_err(k, ODB_EINVAL, "call_rcu: 0x%llx is not an address in this "
					    "kernel's memory", (unsigned long long)head));
	return odb_leave(t, call_rcu(k, virt_to_host(k, head), fn, ctx));
}

void odb_rcu_barrier(odb_kernel *k)
{
	kvfree_rcu_barrier(k);
	rcu_barrier(k);
}
