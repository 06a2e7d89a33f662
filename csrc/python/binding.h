/*
 * Shared declarations of the binding's files: the module state, the Kernel
 * object, the one error-mapping function, and the rooms' registration hooks.
 * Each room's binding (csrc/python/<room>.c) adds module-level functions that
 * take the Kernel as their first argument; odebug/ wraps them in classes.
 */
#ifndef ODB_PYTHON_BINDING_H
#define ODB_PYTHON_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include "odebug/odebug.h"

typedef struct {
	PyObject *KernelType;
	PyObject *WorkType;
	PyObject *RawType;
	PyObject *CacheType;      /* slab.c */
	PyObject *MempoolType;    /* mempool.c */
	PyObject *StrategyType;   /* sched.c */
	PyObject *Error;          /* odebug.Error */
	PyObject *InvalidArgument;/* Error, ValueError */
	PyObject *ClosedError;    /* Error, RuntimeError */
	PyObject *StateError;     /* Error, RuntimeError */
	PyObject *NotFound;       /* Error, LookupError */
	PyObject *KernelBug;      /* Error: a report under panic_on_warn */
	PyObject *report_factory; /* callable(dict) -> Report, set by odebug */
	/* the last subclass of Kernel odb_py_kernel accepted (a strong reference,
	 * so the pointer can never name another type): odebug.Kernel, usually,
	 * checked with one compare instead of an MRO walk (issue 16) */
	PyObject *kernel_subtype;
} core_state;

/* The Python frame hook's caches (issue 16: naming the Python caller of every
 * tracked alloc/free cost ~650 ns, mostly the line-number table walk and the
 * formatting).  Both are direct-mapped; each entry holds a strong reference to
 * its code object, so a cached pointer can never name another code object. */
#define ODB_CODE_CACHE 256      /* code object -> is it odebug's own (skipped) */
#define ODB_LINE_CACHE 1024     /* (code object, instruction offset) -> "file:line:func" */
struct odb_frame_cache {
	struct { PyObject *code; bool skip; } code[ODB_CODE_CACHE];
	struct { PyObject *code; int lasti; char *text; } line[ODB_LINE_CACHE];
	char *spare;            /* the last text that could not be cached */
};

typedef struct {
	PyObject_HEAD
	odb_kernel *k;
	core_state *st;           /* borrowed: the module outlives its types' instances */
	PyObject *module;         /* strong ref keeps st alive */
	PyObject *works;          /* list of Work objects: alive as long as the kernel */
	char *skip_prefix;        /* frames under this path are odebug's own */
	struct odb_frame_cache *fcache;   /* the frame hook's, made on first use (GIL) */
	PyObject *weakreflist;
} KernelObject;

typedef struct {
	PyObject_HEAD
	KernelObject *kernel;
	odb_work *w;
	PyObject *fn;
	PyObject *name;
} WorkObject;

typedef struct {
	PyObject_HEAD
	KernelObject *kernel;
	void *ptr;
	Py_ssize_t len;
} RawObject;

static inline core_state *get_state(PyObject *module)
{
	return (core_state *)PyModule_GetState(module);
}

/* Turn a C status into the matching exception (reads the thread's message or
 * the panic report).  Always returns NULL.  The status -> exception table is
 * in core.c (odb_errmap), the only one; odb_raise_status is the same without
 * a kernel (msg: the core's message, may be empty). */
PyObject *odb_raise(KernelObject *self, int status);
PyObject *odb_raise_status(core_state *st, int status, const char *msg);

/* Integer arguments, range-checked ("O&" converters): a value out of
 * [lo, hi] -- negative, or too large for the C type -- raises
 * odebug.InvalidArgument (a ValueError) naming the argument; a non-int,
 * TypeError.  Never a bare OverflowError, never a silent wrap. */
typedef struct {
	const char *name;
	unsigned long long lo, hi, v;
} odb_uarg;
#define ODB_UARG(name, lo, hi) { (name), (lo), (hi), 0 }
int odb_conv_uarg(PyObject *o, void *out);   /* out: odb_uarg *, result in .v */
int odb_conv_size(PyObject *o, void *out);   /* Py_ssize_t >= 0, "size" */
int odb_conv_addr(PyObject *o, void *out);   /* unsigned long long, "addr" */
int odb_conv_gfp(PyObject *o, void *out);    /* unsigned int, "gfp" */

/* obj as an open (or, with open=false, any not yet destroyed) Kernel, else
 * NULL with TypeError / ClosedError set. */
KernelObject *odb_py_kernel(PyObject *module, PyObject *obj, bool open);
/* A METH_FASTCALL function's positional count: false (TypeError raised, in
 * PyArg_ParseTuple's words) unless it is want. */
static inline bool odb_py_nargs(Py_ssize_t nargs, Py_ssize_t want)
{
	if (nargs == want)
		return true;
	PyErr_Format(PyExc_TypeError, "function takes exactly %zd argument%s (%zd given)", want,
		     want == 1 ? "" : "s", nargs);
	return false;
}

#define CHECK_OPEN(self) \
	do { if (!(self)->k || odb_kernel_closed((self)->k)) \
		return PyErr_SetString((self)->st->ClosedError, "the kernel is closed"), NULL; } while (0)

/* Rooms' exec hooks: add functions/types/constants to the module.  Each
 * returns 0 or -1 with an exception set.  The list is NULL-terminated. */
typedef int (*odb_py_room_init)(PyObject *module, core_state *st);
extern const odb_py_room_init odb_py_rooms[];
int odb_py_slab_init(PyObject *module, core_state *st);
/* A Cache object's cache (TypeError / StateError set, NULL, for anything
 * else or a destroyed one), and its count of calls in progress, which
 * Cache.destroy() waits to see at zero (python/slab.c). */
odb_cache *odb_py_cache_get(core_state *st, PyObject *obj);
void odb_py_cache_busy(PyObject *obj, int delta);
/* The scheduler's wait hooks on a new kernel (python/sched.c). */
void odb_py_sched_hooks(odb_kernel *k);

/*
 * A core call may run Python callbacks (a debug-objects fixup on a free, a
 * cache ctor): one that raised leaves its exception set, and the call that ran
 * it must then return NULL so that the exception propagates (returning a value
 * with an exception set is CPython's SystemError).  Every binding function of
 * this module returns None through this Py_RETURN_NONE, and its address and
 * object results through odb_py_checked().
 */
static inline PyObject *odb_py_checked(PyObject *r)
{
	if (r && PyErr_Occurred()) {
		Py_DECREF(r);
		return NULL;
	}
	return r;
}
#undef Py_RETURN_NONE
#define Py_RETURN_NONE return odb_py_checked(Py_NewRef(Py_None))

#endif
