/*
 * Binding of the slab allocator: the Cache type and module functions taking
 * the Kernel first (kmalloc, kfree, ksize, krealloc, slabinfo_text, ...).
 * O(1) calls keep the GIL (the Python caller then appears in tracks); O(n)
 * calls (validate, destroy, bulk, slabinfo) release it, except on caches with
 * a Python constructor, which needs the GIL inside the allocator.
 */
#include "python/binding.h"

typedef struct {
	PyObject_HEAD
	KernelObject *kernel;
	odb_cache *s;             /* kept once destroyed: the core keeps a tombstone */
	bool dead;                /* destroy() returned: every call but destroy() refuses */
	PyObject *ctor;           /* Python constructor or NULL */
	PyObject *name;
	/* binding calls on this cache in progress, on any thread (counted under
	 * the GIL): destroy() refuses while there are any, so that a call whose
	 * callback or released GIL let another thread in never finds its cache
	 * freed under it (issue 18) */
	Py_ssize_t busy;
} CacheObject;

static core_state *cache_state(CacheObject *c) { return c->kernel->st; }

#define CACHE_READY(c) \
	do { \
		if (!(c)->s || (c)->dead) \
			return PyErr_Format(cache_state(c)->StateError, "cache %U was destroyed", (c)->name), NULL; \
		CHECK_OPEN((c)->kernel); \
	} while (0)

/* A Python constructor, called by the core with no core lock held (slub.c,
 * new_slab_irqs_on).  A constructor cannot fail in the kernel: its exception
 * goes to sys.unraisablehook and the object is handed out as it left it.  An
 * exception a callback of the same call left pending is kept aside meanwhile. */
static void py_ctor(odb_kernel *k, odb_addr_t obj, void *ctx)
{
	CacheObject *c = ctx;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *et, *ev, *tb, *r;

	PyErr_Fetch(&et, &ev, &tb);
	r = PyObject_CallFunction(c->ctor, "K", (unsigned long long)obj);
	if (!r)
		PyErr_WriteUnraisable(c->ctor);
	Py_XDECREF(r);
	PyErr_Restore(et, ev, tb);
	PyGILState_Release(g);
}

static PyObject *new_cache(core_state *st, KernelObject *ko, odb_cache *s, PyObject *ctor)
{
	struct odb_cache_info info;
	CacheObject *c = PyObject_GC_New(CacheObject, (PyTypeObject *)st->CacheType);

	if (!c)
		return NULL;
	c->kernel = (KernelObject *)Py_NewRef(ko);
	c->s = s;
	c->dead = false;
	c->busy = 0;
	c->ctor = ctor ? Py_NewRef(ctor) : NULL;
	odb_kmem_cache_info(ko->k, s, &info);
	c->name = PyUnicode_FromString(info.name);
	PyObject_GC_Track(c);
	if (!c->name) {
		Py_DECREF(c);
		return NULL;
	}
	return (PyObject *)c;
}

/* cache_create(kernel, name, size, align, flags, ctor) -> Cache */
static PyObject *py_cache_create(PyObject *m, PyObject *args)
{
	PyObject *kobj, *ctor;
	const char *name;
	unsigned int size, align, flags;
	KernelObject *ko;
	CacheObject *c;
	odb_cache *s;
	int ret;

	if (!PyArg_ParseTuple(args, "OsIIIO", &kobj, &name, &size, &align, &flags, &ctor))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (ctor != Py_None && !PyCallable_Check(ctor))
		return PyErr_SetString(PyExc_TypeError, "ctor must be callable or None"), NULL;
	if (ctor == Py_None) {
		ret = odb_kmem_cache_create(ko->k, name, size, align, flags, NULL, NULL, &s);
		if (ret)
			return odb_raise(ko, ret);
		return new_cache(ko->st, ko, s, NULL);
	}
	/* The Python object must exist before the first slab's ctor calls. */
	c = PyObject_GC_New(CacheObject, (PyTypeObject *)ko->st->CacheType);
	if (!c)
		return NULL;
	c->kernel = (KernelObject *)Py_NewRef(ko);
	c->s = NULL;
	c->dead = false;
	c->busy = 0;
	c->ctor = Py_NewRef(ctor);
	c->name = PyUnicode_FromString(name);
	PyObject_GC_Track(c);
	if (!c->name) {
		Py_DECREF(c);
		return NULL;
	}
	ret = odb_kmem_cache_create(ko->k, name, size, align, flags, py_ctor, c, &s);
	if (ret) {
		Py_DECREF(c);
		return odb_raise(ko, ret);
	}
	c->s = s;
	return (PyObject *)c;
}

static PyObject *py_cache_find(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	const char *name;
	KernelObject *ko;
	odb_cache *s;

	if (!PyArg_ParseTuple(args, "Os", &kobj, &name))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	s = odb_kmem_cache_find(ko->k, name);
	if (!s)
		Py_RETURN_NONE;
	return new_cache(ko->st, ko, s, NULL);
}

static PyObject *py_cache_names(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, true);
	odb_cache **arr;
	size_t n, got;
	PyObject *list;

	if (!ko)
		return NULL;
	n = odb_kmem_cache_list(ko->k, NULL, 0);
	arr = PyMem_Calloc(n + 1, sizeof(*arr));
	if (!arr)
		return PyErr_NoMemory();
	got = odb_kmem_cache_list(ko->k, arr, n);
	if (got > n)
		got = n;
	list = PyList_New(0);
	for (size_t i = 0; list && i < got; i++) {
		struct odb_cache_info info;
		PyObject *s;

		odb_kmem_cache_info(ko->k, arr[i], &info);
		s = PyUnicode_FromString(info.name);
		if (!s || PyList_Append(list, s)) {
			Py_XDECREF(s);
			Py_CLEAR(list);
			break;
		}
		Py_DECREF(s);
	}
	PyMem_Free(arr);
	return list;
}

/* The hottest calls (kmalloc, kfree) take their arguments as a vector
 * (METH_FASTCALL), converted as PyArg_ParseTuple's "O&" would (issue 16). */
static PyObject *py_kmalloc(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	Py_ssize_t size;
	unsigned int gfp;
	KernelObject *ko;
	odb_addr_t a;
	int ret;

	if (!odb_py_nargs(nargs, 3) || !odb_conv_size(args[1], &size) || !odb_conv_gfp(args[2], &gfp))
		return NULL;
	if (!(ko = odb_py_kernel(m, args[0], true)))
		return NULL;
	if (size < 0)
		return PyErr_Format(ko->st->InvalidArgument, "kmalloc: negative size %zd", size), NULL;
	ret = odb_kmalloc(ko->k, (size_t)size, gfp, &a);
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

/* (kernel, address) calls that return nothing: kfree, kfree_rcu */
static PyObject *addr_call(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
			   int (*fn)(odb_kernel *, odb_addr_t))
{
	unsigned long long a;
	KernelObject *ko;
	int ret;

	if (!odb_py_nargs(nargs, 2) || !odb_conv_addr(args[1], &a))
		return NULL;
	if (!(ko = odb_py_kernel(m, args[0], true)))
		return NULL;
	ret = fn(ko->k, a);
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kfree(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	return addr_call(m, args, nargs, odb_kfree);
}
static PyObject *py_kfree_rcu(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	return addr_call(m, args, nargs, odb_kfree_rcu);
}
static PyObject *py_kfree_sensitive(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	return addr_call(m, args, nargs, odb_kfree_sensitive);
}

static PyObject *py_rcu_barrier(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, true);

	if (!ko)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	odb_rcu_barrier(ko->k);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *py_ksize(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long a;
	KernelObject *ko;
	size_t n;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&", &kobj, odb_conv_addr, &a))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	ret = odb_ksize(ko->k, a, &n);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromSize_t(n));
}

static PyObject *py_krealloc(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long a;
	Py_ssize_t size;
	unsigned int gfp;
	KernelObject *ko;
	odb_addr_t out;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&O&", &kobj, odb_conv_addr, &a, odb_conv_size, &size,
			      odb_conv_gfp, &gfp))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (size < 0)
		return PyErr_Format(ko->st->InvalidArgument, "krealloc: negative size %zd", size), NULL;
	ret = odb_krealloc(ko->k, a, (size_t)size, gfp, &out);
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(out));
}

static PyObject *py_slabinfo_text(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, true);
	char *s;
	PyObject *r;

	if (!ko)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	s = odb_slabinfo_text(ko->k);
	Py_END_ALLOW_THREADS
	if (!s)
		return PyErr_NoMemory();
	r = PyUnicode_FromString(s);
	odb_free(s);
	return r;
}

static PyObject *py_slab_flags_parse(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	const char *letters;
	KernelObject *ko;
	unsigned int f;
	int ret;

	if (!PyArg_ParseTuple(args, "Os", &kobj, &letters))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	ret = odb_slab_flags_parse(ko->k, letters, &f);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLong(f));
}

static PyObject *py_slab_flags_letters(PyObject *m, PyObject *arg)
{
	unsigned long f = PyLong_AsUnsignedLong(arg);
	char buf[16];

	if (f == (unsigned long)-1 && PyErr_Occurred())
		return NULL;
	odb_slab_flags_letters((unsigned int)f, buf, sizeof(buf));
	return PyUnicode_FromString(buf);
}

static PyObject *py_slab_object(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long a;
	KernelObject *ko;
	odb_cache *s;
	odb_addr_t obj;
	struct odb_cache_info info;

	if (!PyArg_ParseTuple(args, "OO&", &kobj, odb_conv_addr, &a))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (odb_slab_object(ko->k, a, &s, &obj))
		Py_RETURN_NONE;
	if (odb_kmem_cache_info(ko->k, s, &info))
		return odb_raise(ko, ODB_ESTATE);
	return Py_BuildValue("(sK)", info.name, (unsigned long long)obj);
}

static PyObject *py_slab_kunit_begin(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, true);
	int ret;

	if (!ko)
		return NULL;
	ret = odb_slab_kunit_begin(ko->k);
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_slab_kunit_end(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, false);
	unsigned long n = 0;
	int ret;

	if (!ko)
		return NULL;
	ret = odb_slab_kunit_end(ko->k, &n);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLong(n));
}

static PyObject *py_slab_errors(PyObject *m, PyObject *kobj)
{
	KernelObject *ko = odb_py_kernel(m, kobj, true);

	if (!ko)
		return NULL;
	return odb_py_checked(PyLong_FromUnsignedLong(odb_slab_errors(ko->k)));
}

static PyObject *py_stat_names(PyObject *m, PyObject *unused)
{
	unsigned int n = odb_slub_stat_count();
	PyObject *t = PyTuple_New(n);

	for (unsigned int i = 0; t && i < n; i++) {
		PyObject *s = PyUnicode_FromString(odb_slub_stat_name(i));
		if (!s) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, i, s);
	}
	return t;
}

/* ---- Cache -------------------------------------------------------------------------- */
/* (a vector call, issue 16) */
static PyObject *Cache_alloc(CacheObject *c, PyObject *const *args, Py_ssize_t nargs)
{
	unsigned int gfp = ODB_GFP_KERNEL;
	odb_addr_t a;
	int ret;

	if (nargs > 1) {
		PyErr_Format(PyExc_TypeError, "function takes at most 1 argument (%zd given)", nargs);
		return NULL;
	}
	if (nargs == 1 && !odb_conv_gfp(args[0], &gfp))
		return NULL;
	CACHE_READY(c);
	c->busy++;
	ret = odb_kmem_cache_alloc(c->kernel->k, c->s, gfp, &a);
	c->busy--;
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(c->kernel, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

static PyObject *Cache_kmalloc(CacheObject *c, PyObject *args)
{
	Py_ssize_t size;
	unsigned int gfp = ODB_GFP_KERNEL;
	odb_addr_t a;
	int ret;

	if (!PyArg_ParseTuple(args, "O&|O&", odb_conv_size, &size, odb_conv_gfp, &gfp))
		return NULL;
	CACHE_READY(c);
	if (size < 0)
		return PyErr_Format(cache_state(c)->InvalidArgument, "kmalloc: negative size %zd", size), NULL;
	c->busy++;
	ret = odb_kmem_cache_kmalloc(c->kernel->k, c->s, (size_t)size, gfp, &a);
	c->busy--;
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(c->kernel, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

static PyObject *Cache_free(CacheObject *c, PyObject *arg)
{
	unsigned long long a;
	int ret;

	if (!odb_conv_addr(arg, &a))
		return NULL;
	CACHE_READY(c);
	c->busy++;
	ret = odb_kmem_cache_free(c->kernel->k, c->s, a);
	c->busy--;
	if (ret)
		return odb_raise(c->kernel, ret);
	Py_RETURN_NONE;
}

static PyObject *Cache_alloc_bulk(CacheObject *c, PyObject *args)
{
	Py_ssize_t n;
	unsigned int gfp = ODB_GFP_KERNEL;
	odb_addr_t *arr;
	PyObject *list;
	int ret;

	if (!PyArg_ParseTuple(args, "n|I", &n, &gfp))
		return NULL;
	CACHE_READY(c);
	if (n < 0 || n > (1 << 24))
		return PyErr_Format(cache_state(c)->InvalidArgument, "alloc_bulk: count %zd out of range", n), NULL;
	arr = PyMem_Calloc((size_t)n + 1, sizeof(*arr));
	if (!arr)
		return PyErr_NoMemory();
	c->busy++;
	if (c->ctor) {
		ret = odb_kmem_cache_alloc_bulk(c->kernel->k, c->s, gfp, (size_t)n, arr);
	} else {
		Py_BEGIN_ALLOW_THREADS
		ret = odb_kmem_cache_alloc_bulk(c->kernel->k, c->s, gfp, (size_t)n, arr);
		Py_END_ALLOW_THREADS
	}
	c->busy--;
	if (ret == ODB_ENOMEM) {
		PyMem_Free(arr);
		Py_RETURN_NONE;
	}
	if (ret) {
		PyMem_Free(arr);
		return odb_raise(c->kernel, ret);
	}
	list = PyList_New(n);
	for (Py_ssize_t i = 0; list && i < n; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(arr[i]);
		if (!v) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, v);
	}
	PyMem_Free(arr);
	return odb_py_checked(list);
}

static PyObject *Cache_free_bulk(CacheObject *c, PyObject *seq)
{
	PyObject *fast = PySequence_Fast(seq, "free_bulk: expected a sequence of addresses");
	Py_ssize_t n;
	odb_addr_t *arr;
	int ret;

	if (!fast)
		return NULL;
	if (!c->s || c->dead || !c->kernel->k || odb_kernel_closed(c->kernel->k)) {
		Py_DECREF(fast);
		CACHE_READY(c);
	}
	n = PySequence_Fast_GET_SIZE(fast);
	arr = PyMem_Calloc((size_t)n + 1, sizeof(*arr));
	if (!arr) {
		Py_DECREF(fast);
		return PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		arr[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
		if (arr[i] == (unsigned long long)-1 && PyErr_Occurred()) {
			PyMem_Free(arr);
			Py_DECREF(fast);
			return NULL;
		}
	}
	Py_DECREF(fast);
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kmem_cache_free_bulk(c->kernel->k, c->s, (size_t)n, arr);
	Py_END_ALLOW_THREADS
	c->busy--;
	PyMem_Free(arr);
	if (ret)
		return odb_raise(c->kernel, ret);
	Py_RETURN_NONE;
}

static PyObject *Cache_validate(CacheObject *c, PyObject *unused)
{
	long errors;
	int ret;

	CACHE_READY(c);
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kmem_cache_validate(c->kernel->k, c->s, &errors);
	Py_END_ALLOW_THREADS
	c->busy--;
	if (ret)
		return odb_raise(c->kernel, ret);
	return odb_py_checked(PyLong_FromLong(errors));
}

static PyObject *Cache_flush(CacheObject *c, PyObject *unused)
{
	int ret;

	CACHE_READY(c);
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kmem_cache_flush(c->kernel->k, c->s);
	Py_END_ALLOW_THREADS
	c->busy--;
	if (ret)
		return odb_raise(c->kernel, ret);
	Py_RETURN_NONE;
}

static PyObject *Cache_destroy(CacheObject *c, PyObject *unused)
{
	odb_cache *s = c->s;
	int ret;

	if (s && c->dead) {
		/* kmem_cache_destroy() again: the core's kasan_check_byte() on the
		 * freed descriptor reports (slab-use-after-free); its host
		 * descriptor is a tombstone until the kernel goes, so this is safe */
		CHECK_OPEN(c->kernel);
		ret = odb_kmem_cache_destroy(c->kernel->k, s);
		if (ret)
			return odb_raise(c->kernel, ret);
		Py_RETURN_NONE;
	}
	CACHE_READY(c);
	if (c->busy)
		return PyErr_Format(cache_state(c)->StateError,
				    "cache %U is in use by another call (another thread, or a callback "
				    "of a call on it): destroy it when that call has returned", c->name), NULL;
	c->dead = true;
	if (c->ctor) {
		ret = odb_kmem_cache_destroy(c->kernel->k, s);
	} else {
		Py_BEGIN_ALLOW_THREADS
		ret = odb_kmem_cache_destroy(c->kernel->k, s);
		Py_END_ALLOW_THREADS
	}
	if (ret) {
		c->dead = false;   /* refused: the cache is still there */
		return odb_raise(c->kernel, ret);
	}
	Py_RETURN_NONE;
}

/* ---- a Cache for another binding (a mempool's slab pool) ----------------------------- */
odb_cache *odb_py_cache_get(core_state *st, PyObject *obj)
{
	CacheObject *c = (CacheObject *)obj;

	if (!PyObject_TypeCheck(obj, (PyTypeObject *)st->CacheType)) {
		PyErr_Format(PyExc_TypeError, "cache: expected an odebug Cache, not %.100s",
			     Py_TYPE(obj)->tp_name);
		return NULL;
	}
	if (!c->s || c->dead) {
		PyErr_Format(st->StateError, "cache %U was destroyed", c->name);
		return NULL;
	}
	return c->s;
}

void odb_py_cache_busy(PyObject *obj, int delta)
{
	((CacheObject *)obj)->busy += delta;
}

static PyObject *Cache_info(CacheObject *c, PyObject *unused)
{
	struct odb_cache_info i;
	int ret;

	CACHE_READY(c);
	ret = odb_kmem_cache_info(c->kernel->k, c->s, &i);
	if (ret)
		return odb_raise(c->kernel, ret);
	return Py_BuildValue("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:O,s:O,s:O,s:I,"
			     "s:k,s:k,s:k,s:k,s:I}",
			     "name", i.name, "object_size", i.object_size, "size", i.size,
			     "align", i.align, "offset", i.offset, "inuse", i.inuse,
			     "red_left_pad", i.red_left_pad, "order", i.order,
			     "objects_per_slab", i.objects_per_slab, "min_partial", i.min_partial,
			     "cpu_partial", i.cpu_partial, "flags", i.flags, "letters", i.letters,
			     "kmalloc", i.kmalloc ? Py_True : Py_False,
			     "cmpxchg_double", i.cmpxchg_double ? Py_True : Py_False,
			     "object_poison", i.object_poison ? Py_True : Py_False,
			     "info_end", i.info_end, "nr_slabs", i.nr_slabs,
			     "total_objects", i.total_objects, "nr_partial", i.nr_partial,
			     "active_objs", i.active_objs, "kasan_meta_size", i.kasan_meta_size);
}

static PyObject *Cache_stats(CacheObject *c, PyObject *args)
{
	int per_cpu = 0;
	unsigned int n = odb_slub_stat_count(), ncpu;
	uint64_t *sum, *pc;
	PyObject *d;

	if (!PyArg_ParseTuple(args, "|p", &per_cpu))
		return NULL;
	CACHE_READY(c);
	ncpu = odb_nr_cpus(c->kernel->k);
	sum = PyMem_Calloc(n, sizeof(*sum));
	pc = PyMem_Calloc((size_t)n * ncpu, sizeof(*pc));
	if (!sum || !pc) {
		PyMem_Free(sum);
		PyMem_Free(pc);
		return PyErr_NoMemory();
	}
	odb_kmem_cache_stats(c->kernel->k, c->s, sum, pc);
	d = PyDict_New();
	for (unsigned int i = 0; d && i < n; i++) {
		PyObject *v;
		if (per_cpu) {
			v = PyList_New(ncpu);
			for (unsigned int cpu = 0; v && cpu < ncpu; cpu++) {
				PyObject *x = PyLong_FromUnsignedLongLong(pc[(size_t)cpu * n + i]);
				if (!x) {
					Py_CLEAR(v);
					break;
				}
				PyList_SET_ITEM(v, cpu, x);
			}
		} else {
			v = PyLong_FromUnsignedLongLong(sum[i]);
		}
		if (!v || PyDict_SetItemString(d, odb_slub_stat_name(i), v)) {
			Py_XDECREF(v);
			Py_CLEAR(d);
			break;
		}
		Py_DECREF(v);
	}
	PyMem_Free(sum);
	PyMem_Free(pc);
	return d;
}

static PyObject *Cache_bench_pairs(CacheObject *c, PyObject *args)
{
	odb_uarg n = ODB_UARG("n", 0, ODB_BENCH_MAX_PAIRS), batch = ODB_UARG("batch", 1, ODB_BENCH_MAX_BATCH);
	int exclusive = 0;
	uint64_t ns;
	int ret;

	batch.v = 1;
	if (!PyArg_ParseTuple(args, "O&|O&p", odb_conv_uarg, &n, odb_conv_uarg, &batch, &exclusive))
		return NULL;
	CACHE_READY(c);
	if (c->ctor)
		return PyErr_SetString(cache_state(c)->StateError, "bench: not on a cache with a Python ctor"), NULL;
	c->busy++;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_bench_slab_pairs(c->kernel->k, c->s, n.v, (unsigned int)batch.v, exclusive, &ns);
	Py_END_ALLOW_THREADS
	c->busy--;
	if (ret)
		return odb_raise(c->kernel, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(ns));
}

static PyObject *py_bench_malloc(PyObject *m, PyObject *args)
{
	odb_uarg size = ODB_UARG("size", 0, ODB_BENCH_MALLOC_MAX_SIZE),
		 n = ODB_UARG("n", 0, ODB_BENCH_MALLOC_MAX_PAIRS), batch = ODB_UARG("batch", 1, ODB_BENCH_MAX_BATCH);
	uint64_t ns;
	int ret;

	batch.v = 1;
	if (!PyArg_ParseTuple(args, "O&O&|O&", odb_conv_uarg, &size, odb_conv_uarg, &n,
			      odb_conv_uarg, &batch))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_bench_malloc_pairs((size_t)size.v, n.v, (unsigned int)batch.v, &ns);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise_status(get_state(m), ret, "bench: out of memory");
	return odb_py_checked(PyLong_FromUnsignedLongLong(ns));
}

static PyObject *py_hackbench(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "kernel", "groups", "fds", "loops", "msg_size", "queue_depth",
				  "processes", "on_threads", NULL };
	PyObject *kobj;
	struct odb_hackbench_cfg cfg = { 10, 20, 100, 100, 0, true, false };
	struct odb_hackbench_result r;
	int processes = 1, on_threads = 0, ret;
	KernelObject *ko;
	/* the core's limits (hackbench.c), checked here to name the argument */
	odb_uarg groups = ODB_UARG("groups", 1, 4096), fds = ODB_UARG("fds", 1, 4096),
		 loops = ODB_UARG("loops", 1, 1u << 24), msg_size = ODB_UARG("msg_size", 0, 65536),
		 queue_depth = ODB_UARG("queue_depth", 0, 65536);

	groups.v = cfg.groups, fds.v = cfg.fds, loops.v = cfg.loops, msg_size.v = cfg.msg_size;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O&O&O&O&O&pp", kwlist, &kobj, odb_conv_uarg, &groups,
					 odb_conv_uarg, &fds, odb_conv_uarg, &loops, odb_conv_uarg,
					 &msg_size, odb_conv_uarg, &queue_depth, &processes, &on_threads))
		return NULL;
	if (groups.v * fds.v > 4096)
		return PyErr_Format(get_state(m)->InvalidArgument, "groups * fds: must be <= 4096, not %llu",
				    groups.v * fds.v), NULL;
	cfg.groups = (unsigned int)groups.v, cfg.fds = (unsigned int)fds.v;
	cfg.loops = (unsigned int)loops.v, cfg.msg_size = (unsigned int)msg_size.v;
	cfg.queue_depth = (unsigned int)queue_depth.v;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	cfg.processes = processes;
	cfg.on_threads = on_threads;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_hackbench(ko->k, &cfg, &r);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K}", "elapsed_ns", (unsigned long long)r.elapsed_ns,
			     "messages", (unsigned long long)r.messages,
			     "alloc_failures", (unsigned long long)r.alloc_failures,
			     "cpu_ns", (unsigned long long)r.cpu_ns,
			     "list_lock_acquired", (unsigned long long)r.list_lock_acquired,
			     "list_lock_contended", (unsigned long long)r.list_lock_contended));
}

static PyObject *Cache_get_destroyed(CacheObject *c, void *x) { return PyBool_FromLong(c->s == NULL || c->dead); }
static PyObject *Cache_get_name(CacheObject *c, void *x) { return Py_NewRef(c->name); }

static PyObject *Cache_repr(CacheObject *c)
{
	return PyUnicode_FromFormat("<odebug cache %U%s>", c->name, c->s && !c->dead ? "" : " (destroyed)");
}

static int Cache_traverse(CacheObject *c, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(c));
	Py_VISIT(c->kernel);
	Py_VISIT(c->ctor);
	return 0;
}

static int Cache_clear(CacheObject *c)
{
	Py_CLEAR(c->ctor);
	Py_CLEAR(c->kernel);
	return 0;
}

static void Cache_dealloc(CacheObject *c)
{
	PyTypeObject *tp = Py_TYPE(c);

	PyObject_GC_UnTrack(c);
	/* A cache with a Python ctor keeps a pointer to this object: it cannot
	 * outlive its Cache, so it is destroyed with it (a kernel teardown first
	 * closes it through Kernel.close). */
	if (c->ctor && c->s && !c->dead && c->kernel && c->kernel->k &&
	    !odb_kernel_closed(c->kernel->k)) {
		odb_kmem_cache_destroy(c->kernel->k, c->s);
		c->dead = true;
	}
	Cache_clear(c);
	Py_XDECREF(c->name);
	tp->tp_free(c);
	Py_DECREF(tp);
}

static PyMethodDef Cache_methods[] = {
	{ "alloc", (PyCFunction)(void (*)(void))Cache_alloc, METH_FASTCALL, "alloc($self, gfp=odebug._core.GFP_KERNEL, /)\n--\n\nkmem_cache_alloc(gfp) -> address or None." },
	{ "kmalloc", (PyCFunction)Cache_kmalloc, METH_VARARGS, "kmalloc($self, size, gfp=odebug._core.GFP_KERNEL, /)\n--\n\nkmalloc(size, gfp) from this cache (orig_size tracking) -> address or None." },
	{ "free", (PyCFunction)Cache_free, METH_O, "free($self, addr, /)\n--\n\nkmem_cache_free(addr)." },
	{ "alloc_bulk", (PyCFunction)Cache_alloc_bulk, METH_VARARGS, "alloc_bulk($self, n, gfp=odebug._core.GFP_KERNEL, /)\n--\n\nkmem_cache_alloc_bulk(n, gfp) -> list or None." },
	{ "free_bulk", (PyCFunction)Cache_free_bulk, METH_O, "free_bulk($self, addrs, /)\n--\n\nkmem_cache_free_bulk(addresses)." },
	{ "validate", (PyCFunction)Cache_validate, METH_NOARGS, "validate($self, /)\n--\n\nvalidate_slab_cache -> errors (KUnit rule)." },
	{ "flush", (PyCFunction)Cache_flush, METH_NOARGS, "flush($self, /)\n--\n\nflush_all: every vCPU's slabs back to the node." },
	{ "destroy", (PyCFunction)Cache_destroy, METH_NOARGS, "destroy($self, /)\n--\n\nkmem_cache_destroy." },
	{ "info", (PyCFunction)Cache_info, METH_NOARGS, "info($self, /)\n--\n\nLayout and counters as a dict." },
	{ "stats", (PyCFunction)Cache_stats, METH_VARARGS, "stats($self, per_cpu=False, /)\n--\n\nCONFIG_SLUB_STATS counters: name -> total, or -> per-vCPU list with per_cpu." },
	{ "bench_pairs", (PyCFunction)Cache_bench_pairs, METH_VARARGS, "bench_pairs($self, n, batch=1, exclusive=False, /)\n--\n\nns for n alloc+free pairs in C." },
	{ NULL }
};

static PyGetSetDef Cache_getset[] = {
	{ "destroyed", (getter)Cache_get_destroyed, NULL, NULL, NULL },
	{ "name", (getter)Cache_get_name, NULL, NULL, NULL },
	{ NULL }
};

static PyType_Slot Cache_slots[] = {
	{ Py_tp_dealloc, Cache_dealloc },
	{ Py_tp_traverse, Cache_traverse },
	{ Py_tp_clear, Cache_clear },
	{ Py_tp_methods, Cache_methods },
	{ Py_tp_getset, Cache_getset },
	{ Py_tp_repr, Cache_repr },
	{ Py_tp_doc, "A slab cache (use odebug.Cache through Kernel.kmem_cache_create / Kernel.cache)." },
	{ 0, NULL }
};

static PyType_Spec Cache_spec = {
	.name = "odebug._core.Cache",
	.basicsize = sizeof(CacheObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Cache_slots,
};

static PyMethodDef slab_functions[] = {
	{ "cache_create", py_cache_create, METH_VARARGS, "cache_create($module, kernel, name, size, align, flags, ctor, /)\n--\n\nkmem_cache_create -> Cache." },
	{ "cache_find", py_cache_find, METH_VARARGS, "cache_find($module, kernel, name, /)\n--\n\nThe cache of that name, or None." },
	{ "cache_names", py_cache_names, METH_O, "cache_names($module, kernel, /)\n--\n\nNames of the kernel's caches." },
	{ "kmalloc", (PyCFunction)(void (*)(void))py_kmalloc, METH_FASTCALL, "kmalloc($module, kernel, size, gfp, /)\n--\n\nkmalloc(size, gfp) -> address or None." },
	{ "kfree", (PyCFunction)(void (*)(void))py_kfree, METH_FASTCALL, "kfree($module, kernel, addr, /)\n--\n\nkfree(addr)." },
	{ "kfree_sensitive", (PyCFunction)(void (*)(void))py_kfree_sensitive, METH_FASTCALL,
	  "kfree_sensitive($module, kernel, addr, /)\n--\n\nkfree_sensitive(addr): ksize(), zero, kfree." },
	{ "ksize", py_ksize, METH_VARARGS, "ksize($module, kernel, addr, /)\n--\n\nksize(addr) -> usable size." },
	{ "kfree_rcu", (PyCFunction)(void (*)(void))py_kfree_rcu, METH_FASTCALL, "kfree_rcu($module, kernel, addr, /)\n--\n\nkfree_rcu(addr): freed after a grace period." },
	{ "rcu_barrier", py_rcu_barrier, METH_O, "rcu_barrier($module, kernel, /)\n--\n\nrcu_barrier: wait for the pending kfree_rcu frees." },
	{ "krealloc", py_krealloc, METH_VARARGS, "krealloc($module, kernel, addr, size, gfp, /)\n--\n\nkrealloc(addr, size, gfp) -> address or None." },
	{ "slabinfo_text", py_slabinfo_text, METH_O, "slabinfo_text($module, kernel, /)\n--\n\n/proc/slabinfo as text." },
	{ "slab_flags_parse", py_slab_flags_parse, METH_VARARGS, "slab_flags_parse($module, kernel, letters, /)\n--\n\nslub_debug flag letters -> SLAB_* flags." },
	{ "slab_flags_letters", py_slab_flags_letters, METH_O, "slab_flags_letters($module, flags, /)\n--\n\nSLAB_* flags -> slub_debug letters." },
	{ "slab_object", py_slab_object, METH_VARARGS, "slab_object($module, kernel, addr, /)\n--\n\n(cache name, object start) of a slab address, or None." },
	{ "slub_stat_names", py_stat_names, METH_NOARGS, "slub_stat_names($module, /)\n--\n\nThe CONFIG_SLUB_STATS counter names." },
	{ "slab_kunit_begin", py_slab_kunit_begin, METH_O, "slab_kunit_begin($module, kernel, /)\n--\n\nStart counting this thread's SLUB errors without printing them (slub_kunit's slab_errors resource)." },
	{ "slab_kunit_end", py_slab_kunit_end, METH_O, "slab_kunit_end($module, kernel, /)\n--\n\nStop counting -> the SLUB errors counted since slab_kunit_begin." },
	{ "slab_errors", py_slab_errors, METH_O, "slab_errors($module, kernel, /)\n--\n\nNumber of slab errors reported." },
	{ "bench_malloc_pairs", py_bench_malloc, METH_VARARGS, "bench_malloc_pairs($module, size, n, batch=1, /)\n--\n\nns for n glibc malloc+free pairs." },
	{ "hackbench", (PyCFunction)(void (*)(void))py_hackbench, METH_VARARGS | METH_KEYWORDS, "hackbench($module, /, kernel, groups=10, fds=20, loops=100, msg_size=100, queue_depth=0, processes=True, on_threads=False)\n--\n\nhackbench on the kernel's slab -> dict of results." },
	{ NULL }
};

int odb_py_slab_init(PyObject *m, core_state *st)
{
	st->CacheType = PyType_FromModuleAndSpec(m, &Cache_spec, NULL);
	if (!st->CacheType)
		return -1;
	if (PyModule_AddObjectRef(m, "Cache", st->CacheType))
		return -1;
	if (PyModule_AddFunctions(m, slab_functions))
		return -1;
#define ADD(n, v) if (PyModule_AddIntConstant(m, n, (long)(v))) return -1
	ADD("SLAB_CONSISTENCY_CHECKS", ODB_SLAB_CONSISTENCY_CHECKS);
	ADD("SLAB_RED_ZONE", ODB_SLAB_RED_ZONE);
	ADD("SLAB_POISON", ODB_SLAB_POISON);
	ADD("SLAB_KMALLOC", ODB_SLAB_KMALLOC);
	ADD("SLAB_HWCACHE_ALIGN", ODB_SLAB_HWCACHE_ALIGN);
	ADD("SLAB_STORE_USER", ODB_SLAB_STORE_USER);
	ADD("SLAB_TYPESAFE_BY_RCU", ODB_SLAB_TYPESAFE_BY_RCU);
	ADD("SLAB_TRACE", ODB_SLAB_TRACE);
	ADD("SLAB_DEBUG_OBJECTS", ODB_SLAB_DEBUG_OBJECTS);
	ADD("SLAB_NOLEAKTRACE", ODB_SLAB_NOLEAKTRACE);
	ADD("SLAB_NO_MERGE", ODB_SLAB_NO_MERGE);
	ADD("SLAB_FAILSLAB", ODB_SLAB_FAILSLAB);
	ADD("SLAB_NO_USER_FLAGS", ODB_SLAB_NO_USER_FLAGS);
	ADD("ZERO_SIZE_PTR", ODB_ZERO_SIZE_PTR);
#undef ADD
	return 0;
}
