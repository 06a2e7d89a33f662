/*
 * kvfree_rcu(): frees deferred past a grace period.  odebug has no RCU
 * readers, so a grace period is one jiffy of the kernel's clock: the objects
 * are freed by a delayed work item, in call order.  kvfree_rcu_barrier()
 * (called by kmem_cache_destroy, as in v6.12+) runs the pending frees now.
 */
#include <stdlib.h>

#include "slab/slub.h"
#include "debugobjects/debugobjects.h"

struct odb_rcu {
	spinlock_t lock;
	void **objs;
	size_t n, cap;
	struct odb_work work;
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
	free(r->objs);           /* the objects go with the arena */
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
	schedule_delayed_work(k, &r->work, 1);
	return 0;
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
