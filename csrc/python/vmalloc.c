/*
 * Binding of the memory layout and vmalloc space (odebug.h: odb_page_offset,
 * odb_vmalloc*, odb_vmap, odb_kvmalloc ...): module functions taking the
 * Kernel first, for odebug/vmalloc.py's VmallocMixin.
 *
 * The GIL: an allocation or a free of more than GIL_LIMIT bytes (O(pages)
 * page allocator work and mappings) runs with it released; smaller ones keep
 * it, so that the area records its Python caller (the depot's frame hook
 * names it only while the GIL is held), as kmalloc's tracks do.
 */
#include "python/binding.h"

#define GIL_LIMIT (64u << 10)

#define GET_KERNEL(m, obj, ko) \
	do { if (!((ko) = odb_py_kernel((m), (obj), true))) return NULL; } while (0)

/* (kernel, size, gfp) -> address or None: vmalloc and kvmalloc */
static PyObject *alloc_call(PyObject *m, PyObject *args, const char *what,
			    int (*fn)(odb_kernel *, size_t, unsigned int, odb_addr_t *))
{
	PyObject *kobj;
	Py_ssize_t size;
	unsigned int gfp;
	KernelObject *ko;
	odb_addr_t a = 0;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, odb_conv_size, &size, odb_conv_gfp, &gfp))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (size < 0)
		return PyErr_Format(ko->st->InvalidArgument, "%s: negative size %zd", what, size), NULL;
	if ((size_t)size > GIL_LIMIT) {
		Py_BEGIN_ALLOW_THREADS
		ret = fn(ko->k, (size_t)size, gfp, &a);
		Py_END_ALLOW_THREADS
	} else {
		ret = fn(ko->k, (size_t)size, gfp, &a);
	}
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;   /* allocation failure is a normal outcome */
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

static PyObject *py_vmalloc(PyObject *m, PyObject *args)
{
	return alloc_call(m, args, "vmalloc", odb_vmalloc_gfp);
}

static PyObject *py_kvmalloc(PyObject *m, PyObject *args)
{
	return alloc_call(m, args, "kvmalloc", odb_kvmalloc);
}

/* (kernel, addr) -> None: vfree, vunmap, kvfree */
static PyObject *free_call(PyObject *m, PyObject *args, int (*fn)(odb_kernel *, odb_addr_t))
{
	PyObject *kobj;
	unsigned long long a;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&", &kobj, odb_conv_addr, &a))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	/* a big area's pages: without the GIL (any other address: O(1)) */
	if (a >= odb_vmalloc_start(ko->k) && a < odb_vmalloc_end(ko->k) &&
	    odb_backed(ko->k, a, GIL_LIMIT + 1) > GIL_LIMIT) {
		Py_BEGIN_ALLOW_THREADS
		ret = fn(ko->k, a);
		Py_END_ALLOW_THREADS
	} else {
		ret = fn(ko->k, a);
	}
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_vfree(PyObject *m, PyObject *args) { return free_call(m, args, odb_vfree); }
static PyObject *py_vunmap(PyObject *m, PyObject *args) { return free_call(m, args, odb_vunmap); }
static PyObject *py_kvfree(PyObject *m, PyObject *args) { return free_call(m, args, odb_kvfree); }

/* (kernel, sequence of page addresses) -> address or None */
static PyObject *py_vmap(PyObject *m, PyObject *args)
{
	PyObject *kobj, *seq, *fast;
	KernelObject *ko;
	odb_addr_t *pages, a = 0;
	Py_ssize_t n;
	int ret;

	if (!PyArg_ParseTuple(args, "OO", &kobj, &seq))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	fast = PySequence_Fast(seq, "vmap: pages must be a sequence of page addresses");
	if (!fast)
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	pages = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(*pages));
	if (!pages) {
		Py_DECREF(fast);
		return PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		unsigned long long v;

		if (!odb_conv_addr(PySequence_Fast_GET_ITEM(fast, i), &v)) {
			PyMem_Free(pages);
			Py_DECREF(fast);
			return NULL;
		}
		pages[i] = v;
	}
	Py_DECREF(fast);
	if ((size_t)n > GIL_LIMIT / ODB_PAGE_SIZE) {
		Py_BEGIN_ALLOW_THREADS
		ret = odb_vmap(ko->k, pages, (size_t)n, &a);
		Py_END_ALLOW_THREADS
	} else {
		ret = odb_vmap(ko->k, pages, (size_t)n, &a);
	}
	PyMem_Free(pages);
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(a));
}

/* (kernel) -> the layout and vmalloc counters */
static PyObject *py_memory_layout(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}",
			     "page_offset", (unsigned long long)odb_page_offset(ko->k),
			     "arena_end", (unsigned long long)odb_arena_end(ko->k),
			     "vmalloc_start", (unsigned long long)odb_vmalloc_start(ko->k),
			     "vmalloc_end", (unsigned long long)odb_vmalloc_end(ko->k),
			     "nr_vmalloc_pages", (unsigned long long)odb_vmalloc_nr_pages(ko->k));
}

static PyMethodDef vmalloc_functions[] = {
	{ "vmalloc", py_vmalloc, METH_VARARGS, "vmalloc($module, kernel, size, gfp, /)\n--\n\n__vmalloc(size, gfp) -> address or None." },
	{ "vfree", py_vfree, METH_VARARGS, "vfree($module, kernel, addr, /)\n--\n\nvfree(addr)." },
	{ "vmap", py_vmap, METH_VARARGS, "vmap($module, kernel, pages, /)\n--\n\nvmap(pages) -> address or None." },
	{ "vunmap", py_vunmap, METH_VARARGS, "vunmap($module, kernel, addr, /)\n--\n\nvunmap(addr)." },
	{ "kvmalloc", py_kvmalloc, METH_VARARGS, "kvmalloc($module, kernel, size, gfp, /)\n--\n\nkvmalloc(size, gfp) -> address or None." },
	{ "kvfree", py_kvfree, METH_VARARGS, "kvfree($module, kernel, addr, /)\n--\n\nkvfree(addr)." },
	{ "memory_layout", py_memory_layout, METH_VARARGS, "memory_layout($module, kernel, /)\n--\n\nThe kernel's direct map and vmalloc space (KASLR) and its vmalloc page count." },
	{ NULL },
};

int odb_py_vmalloc_init(PyObject *module, core_state *st)
{
	(void)st;
	return PyModule_AddFunctions(module, vmalloc_functions);
}
