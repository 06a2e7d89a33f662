/*
 * kvfree_rcu() and SLUB_RCU_DEBUG's deferred frees: work deferred past a
 * grace period.  odebug has no RCU readers, so a grace period is one jiffy of
 * the kernel's clock: the callbacks run from a delayed work item, in call
 * order.  kvfree_rcu_barrier() / rcu_barrier() (kmem_cache_destroy calls it,
 * as v6.12 does for both) runs the pending ones now.
 *
 * The pending list is host memory (object pointers odebug computed itself,
 * never read back from the arena).
 */
#include <stdlib.h>

#include "slab/slub.h"
#include "debugobjects/debugobjects.h"
#include "kasan/kasan.h"

struct rcu_cb {
	void *obj;
	void *rec;      /* SLUB_RCU_DEBUG: the rcu_delayed_free record; NULL: kvfree_rcu */
};

struct odb_rcu {
	spinlock_t lock;
	struct rcu_cb *cbs;
	size_t n, cap;
	struct odb_work work;
};

static void kfree_rcu_work(struct odb_kernel *k, void *arg)
{
	struct odb_rcu *r = arg;
	struct rcu_cb *cbs;
	size_t n;

	spin_lock(k, &r->lock);
	cbs = r->cbs;
	n = r->n;
	r->cbs = NULL;
	r->n = r->cap = 0;
	spin_unlock(k, &r->lock);
	for (size_t i = 0; i < n; i++) {
		if (cbs[i].rec)
			slab_free_after_rcu_debug(k, cbs[i].obj, cbs[i].rec);
		else
			kfree(k, cbs[i].obj);
	}
	free(cbs);
}

int odb_rcu_init(struct odb_kernel *k)
{
	struct odb_rcu *r = calloc(1, sizeof(*r));

	if (!r)
		return -1;
	spin_lock_init(&r->lock);
	INIT_DELAYED_WORK(&r->work, kfree_rcu_work, r);
	slab_state(k)->rcu = r;
	return 0;
}

void odb_rcu_exit(struct odb_kernel *k)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	if (!r)
		return;
	cancel_delayed_work_sync(k, &r->work);
	free(r->cbs);            /* the objects go with the arena */
	spin_lock_destroy(&r->lock);
	free(r);
	slab_state(k)->rcu = NULL;
}

static int rcu_queue(struct odb_kernel *k, void *obj, void *rec)
{
	struct odb_rcu *r = slab_state(k)->rcu;

	spin_lock(k, &r->lock);
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		struct rcu_cb *nc = realloc(r->cbs, ncap * sizeof(*nc));

		if (!nc) {
			spin_unlock(k, &r->lock);
			return odb_err(k, ODB_ENOMEM, "%s: out of memory", rec ? "call_rcu" : "kfree_rcu");
		}
		r->cbs = nc;
		r->cap = ncap;
	}
	r->cbs[r->n].obj = obj;
	r->cbs[r->n].rec = rec;
	r->n++;
	spin_unlock(k, &r->lock);
	schedule_delayed_work(k, &r->work, 1);
	return 0;
}

int kvfree_rcu(struct odb_kernel *k, void *obj)
{
	if (!obj)
		return 0;
	/* kvfree_call_rcu: the caller as the object's related work creation */
	kasan_record_aux_stack(k, obj);
	return rcu_queue(k, obj, NULL);
}

int call_rcu_slab_free(struct odb_kernel *k, void *obj, void *rec)
{
	return rcu_queue(k, obj, rec);
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

void odb_rcu_barrier(odb_kernel *k)
{
	kvfree_rcu_barrier(k);
}
