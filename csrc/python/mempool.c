/*
 * Binding of mempools (mm/mempool.c): the Mempool type and its constructor
 * mempool_create(kernel, kind, min_nr, size | cache | order).  The calls keep
 * the GIL (the Python caller is then named in tracks and reports); a blocking
 * alloc() that has to wait for an element gives it up while it waits (the
 * core's wait hooks, set for every kernel by python/sched.c).  A slab pool
 * keeps its Cache alive and counts as a call in progress on it for the length
 * of each call, so the cache is not destroyed under a waiting alloc().
 */
#include <limits.h>

#include "python/binding.h"

typedef struct {
	PyObject_HEAD
	KernelObject *kernel;
	odb_mempool *pool;        /* the core keeps it (a tombstone once destroyed) */
	PyObject *cache;          /* the Cache of a slab pool, or NULL */
	int kind;
} MempoolObject;

#define POOL_READY(p) CHECK_OPEN((p)->kernel)

static void busy(MempoolObject *p, int delta)
{
	if (p->cache)
		odb_py_cache_busy(p->cache, delta);
}

static PyObject *py_mempool_create(PyObject *m, PyObject *args)
{
	PyObject *kobj, *arg;
	odb_uarg kind = ODB_UARG("kind", ODB_MEMPOOL_KMALLOC, ODB_MEMPOOL_PAGE);
	odb_uarg min_nr = ODB_UARG("min_nr", 0, INT_MAX);
	KernelObject *ko;
	MempoolObject *p;
	odb_mempool *pool = NULL;
	odb_cache *s = NULL;
	unsigned long long v = 0;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&O", &kobj, odb_conv_uarg, &kind, odb_conv_uarg, &min_nr, &arg))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (kind.v == ODB_MEMPOOL_SLAB) {
		if (!(s = odb_py_cache_get(ko->st, arg)))
			return NULL;
	} else {
		odb_uarg a = kind.v == ODB_MEMPOOL_KMALLOC ? (odb_uarg)ODB_UARG("size", 0, ULLONG_MAX)
							   : (odb_uarg)ODB_UARG("order", 0, UINT_MAX);
		if (!odb_conv_uarg(arg, &a))
			return NULL;
		v = a.v;
		if (kind.v == ODB_MEMPOOL_KMALLOC && v > SIZE_MAX)
			return PyErr_Format(ko->st->InvalidArgument, "size: %llu is too large", v), NULL;
	}
	p = PyObject_GC_New(MempoolObject, (PyTypeObject *)ko->st->MempoolType);
	if (!p)
		return NULL;
	p->kernel = (KernelObject *)Py_NewRef(ko);
	p->pool = NULL;
	p->cache = s ? Py_NewRef(arg) : NULL;
	p->kind = (int)kind.v;
	PyObject_GC_Track(p);
	busy(p, 1);
	switch (p->kind) {
	case ODB_MEMPOOL_KMALLOC:
		ret = odb_mempool_create_kmalloc_pool(ko->k, (int)min_nr.v, (size_t)v, &pool);
		break;
	case ODB_MEMPOOL_SLAB:
		ret = odb_mempool_create_slab_pool(ko->k, (int)min_nr.v, s, &pool);
		break;
	default:
		ret = odb_mempool_create_page_pool(ko->k, (int)min_nr.v, (unsigned int)v, &pool);
	}
	busy(p, -1);
	if (ret) {
		Py_DECREF(p);
		if (ret == ODB_ENOMEM)   /* the preallocation failed: as kmalloc's failure */
			Py_RETURN_NONE;
		return odb_raise(ko, ret);
	}
	p->pool = pool;
	return odb_py_checked((PyObject *)p);
}

/* ODB_ENOMEM -> None, other failures raise, else the address */
static PyObject *addr_result(MempoolObject *p, int ret, odb_addr_t a)
{
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(p->kernel, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

static PyObject *Mempool_alloc(MempoolObject *p, PyObject *args)
{
	unsigned int gfp = ODB_GFP_KERNEL;
	odb_addr_t a = 0;
	int ret;

	if (!PyArg_ParseTuple(args, "|O&", odb_conv_gfp, &gfp))
		return NULL;
	POOL_READY(p);
	busy(p, 1);
	ret = odb_mempool_alloc(p->kernel->k, p->pool, gfp, &a);
	busy(p, -1);
	if (ret == ODB_EINTR && PyErr_Occurred())
		return NULL;             /* the signal handler's exception */
	return addr_result(p, ret, a);
}

static PyObject *Mempool_alloc_preallocated(MempoolObject *p, PyObject *unused)
{
	odb_addr_t a = 0;
	int ret;

	POOL_READY(p);
	busy(p, 1);
	ret = odb_mempool_alloc_preallocated(p->kernel->k, p->pool, &a);
	busy(p, -1);
	return addr_result(p, ret, a);
}

static PyObject *Mempool_free(MempoolObject *p, PyObject *arg)
{
	unsigned long long a;
	int ret;

	if (!odb_conv_addr(arg, &a))
		return NULL;
	POOL_READY(p);
	busy(p, 1);
	ret = odb_mempool_free(p->kernel->k, p->pool, a);
	busy(p, -1);
	if (ret)
		return odb_raise(p->kernel, ret);
	Py_RETURN_NONE;
}

static PyObject *Mempool_resize(MempoolObject *p, PyObject *arg)
{
	odb_uarg n = ODB_UARG("new_min_nr", 0, INT_MAX);
	int ret;

	if (!odb_conv_uarg(arg, &n))
		return NULL;
	POOL_READY(p);
	busy(p, 1);
	ret = odb_mempool_resize(p->kernel->k, p->pool, (int)n.v);
	busy(p, -1);
	if (ret)
		return odb_raise(p->kernel, ret);
	Py_RETURN_NONE;
}

static PyObject *Mempool_destroy(MempoolObject *p, PyObject *unused)
{
	int ret;

	POOL_READY(p);
	busy(p, 1);
	ret = odb_mempool_destroy(p->kernel->k, p->pool);
	busy(p, -1);
	if (ret)
		return odb_raise(p->kernel, ret);
	Py_RETURN_NONE;
}

static const char *const kind_names[] = { "kmalloc", "slab", "page" };

static PyObject *Mempool_info(MempoolObject *p, PyObject *unused)
{
	struct odb_mempool_info i;
	int ret;

	POOL_READY(p);
	ret = odb_mempool_info(p->kernel->k, p->pool, &i);
	if (ret)
		return odb_raise(p->kernel, ret);
	return Py_BuildValue("{s:s,s:i,s:i,s:n,s:I,s:O,s:O}", "kind", kind_names[i.kind],
			     "min_nr", i.min_nr, "curr_nr", i.curr_nr, "size", (Py_ssize_t)i.size,
			     "order", i.order, "cache", p->cache ? p->cache : Py_None,
			     "destroyed", i.destroyed ? Py_True : Py_False);
}

static PyObject *Mempool_elements(MempoolObject *p, PyObject *unused)
{
	odb_addr_t *arr = NULL;
	size_t n = 0, cap = 0;
	PyObject *list;
	int ret;

	POOL_READY(p);
	for (;;) {
		ret = odb_mempool_elements(p->kernel->k, p->pool, arr, cap, &n);
		if (ret) {
			PyMem_Free(arr);
			return odb_raise(p->kernel, ret);
		}
		if (n <= cap)
			break;
		PyMem_Free(arr);
		cap = n;
		if (!(arr = PyMem_Calloc(cap, sizeof(*arr))))
			return PyErr_NoMemory();
	}
	list = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; list && i < n; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(arr[i]);
		if (!v) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, v);
	}
	PyMem_Free(arr);
	return list;
}

static PyObject *Mempool_repr(MempoolObject *p)
{
	return PyUnicode_FromFormat("<odebug mempool %s>", kind_names[p->kind]);
}

static int Mempool_traverse(MempoolObject *p, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(p));
	Py_VISIT(p->kernel);
	Py_VISIT(p->cache);
	return 0;
}

static int Mempool_clear(MempoolObject *p)
{
	Py_CLEAR(p->cache);
	Py_CLEAR(p->kernel);
	return 0;
}

/* The pool is the kernel's: it stays (as the kernel's caches do) until
 * destroy() or the kernel's end. */
static void Mempool_dealloc(MempoolObject *p)
{
	PyTypeObject *tp = Py_TYPE(p);

	PyObject_GC_UnTrack(p);
	Mempool_clear(p);
	tp->tp_free(p);
	Py_DECREF(tp);
}

static PyMethodDef Mempool_methods[] = {
	{ "alloc", (PyCFunction)Mempool_alloc, METH_VARARGS,
	  "alloc($self, gfp=odebug._core.GFP_KERNEL, /)\n--\n\nmempool_alloc(gfp) -> element or None." },
	{ "alloc_preallocated", (PyCFunction)Mempool_alloc_preallocated, METH_NOARGS,
	  "alloc_preallocated($self, /)\n--\n\nmempool_alloc_preallocated() -> an element of the reserve or None." },
	{ "free", (PyCFunction)Mempool_free, METH_O, "free($self, addr, /)\n--\n\nmempool_free(addr)." },
	{ "resize", (PyCFunction)Mempool_resize, METH_O, "resize($self, new_min_nr, /)\n--\n\nmempool_resize(new_min_nr)." },
	{ "destroy", (PyCFunction)Mempool_destroy, METH_NOARGS, "destroy($self, /)\n--\n\nmempool_destroy()." },
	{ "info", (PyCFunction)Mempool_info, METH_NOARGS, "info($self, /)\n--\n\nkind, min_nr, curr_nr, size, order, cache, destroyed." },
	{ "elements", (PyCFunction)Mempool_elements, METH_NOARGS, "elements($self, /)\n--\n\nThe reserve's elements." },
	{ NULL }
};

static PyType_Slot Mempool_slots[] = {
	{ Py_tp_dealloc, Mempool_dealloc },
	{ Py_tp_traverse, Mempool_traverse },
	{ Py_tp_clear, Mempool_clear },
	{ Py_tp_methods, Mempool_methods },
	{ Py_tp_repr, Mempool_repr },
	{ Py_tp_doc, "A memory pool (use odebug.Mempool through Kernel.mempool_create_*_pool)." },
	{ 0, NULL }
};

static PyType_Spec Mempool_spec = {
	.name = "odebug._core.Mempool",
	.basicsize = sizeof(MempoolObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Mempool_slots,
};

static PyMethodDef mempool_functions[] = {
	{ "mempool_create", py_mempool_create, METH_VARARGS,
	  "mempool_create($module, kernel, kind, min_nr, arg, /)\n--\n\nmempool_create_{kmalloc,slab,page}_pool(min_nr, size | cache | order) -> Mempool, or None when the preallocation fails." },
	{ NULL }
};

int odb_py_mempool_init(PyObject *m, core_state *st)
{
	st->MempoolType = PyType_FromModuleAndSpec(m, &Mempool_spec, NULL);
	if (!st->MempoolType || PyModule_AddObjectRef(m, "Mempool", st->MempoolType))
		return -1;
	if (PyModule_AddIntConstant(m, "MEMPOOL_KMALLOC", ODB_MEMPOOL_KMALLOC) ||
	    PyModule_AddIntConstant(m, "MEMPOOL_SLAB", ODB_MEMPOOL_SLAB) ||
	    PyModule_AddIntConstant(m, "MEMPOOL_PAGE", ODB_MEMPOOL_PAGE))
		return -1;
	return PyModule_AddFunctions(m, mempool_functions);
}
