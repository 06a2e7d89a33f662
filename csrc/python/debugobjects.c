/*
 * The debugobjects room's binding: the ObjectDescr type (a descriptor whose
 * callbacks are Python callables) and module-level functions taking the
 * Kernel first (odebug/debugobjects.py wraps them as k.debug_objects).
 *
 * Thin by rule: argument parsing, references, GIL handling.  O(n) calls
 * (the range check, stats_text, internals, churn) release the GIL; callbacks
 * take it with PyGILState_Ensure either way, so a fixup may call into
 * k.debug_objects again.
 *
 * Callbacks: fixup_*(addr, state) -> bool, is_static_object(addr) -> bool,
 * debug_hint(addr) -> int (an address, printed as %pS) or str (the text).
 * An exception in a callback counts as "returned false" for the core and is
 * raised by the API call that ran it once the core is done (the state
 * changes made up to there stay) -- any call of this module, a kfree whose
 * page free found an active object included; on a thread that is in no such
 * call (a C scenario's or the workqueue's thread, which has no Python thread
 * state of its own) it goes to sys.unraisablehook.  Later callbacks of the
 * same call are skipped (they return false) once one has raised.
 *
 * Lifetime: the core keeps descriptor pointers in its trackers, so a
 * descriptor used with a kernel is kept alive as long as that kernel (it is
 * appended to the Kernel's list of objects that live as long as it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <structmember.h>

#include "python/binding.h"

/* Callbacks in progress on this thread that run on a thread with no Python
 * thread state of its own (PyGILState_Ensure made one): no binding call is
 * there to raise their exception (unraisable then).  Binding-only state. */
static _Thread_local int cb_foreign;

enum { CB_STATIC, CB_INIT, CB_ACTIVATE, CB_DESTROY, CB_FREE, CB_ASSERT_INIT, CB_HINT, CB_MAX };
static const char *const cb_names[CB_MAX] = {
	"is_static_object", "fixup_init", "fixup_activate", "fixup_destroy", "fixup_free",
	"fixup_assert_init", "debug_hint",
};

typedef struct {
	PyObject_HEAD
	struct odb_debug_obj_descr cd;
	PyObject *name;
	char *cname;
	PyObject *cb[CB_MAX];
	PyObject *last_kernel;      /* weakref to the last kernel it was pinned in */
} DescrObject;

static void Descr_dealloc(DescrObject *self);

static bool is_descr(PyObject *o)
{
	return PyType_GetSlot(Py_TYPE(o), Py_tp_dealloc) == (void *)Descr_dealloc;
}

/* ---- callbacks (called by the core, with no odebug lock held) ----------------------- */
static void cb_failed(PyObject *fn)
{
	if (cb_foreign)
		PyErr_WriteUnraisable(fn);
	/* else: left set, raised by the binding call that is running */
}

/* Take the interpreter lock for a callback (and note a foreign thread). */
static PyGILState_STATE cb_enter(bool *foreign)
{
	PyGILState_STATE g;

	*foreign = PyGILState_GetThisThreadState() == NULL;
	g = PyGILState_Ensure();
	cb_foreign += *foreign;
	return g;
}

static void cb_exit(PyGILState_STATE g, bool foreign)
{
	cb_foreign -= foreign;
	PyGILState_Release(g);
}

static int call_bool(PyObject *fn, PyObject *args)
{
	PyObject *res;
	int t = 0;

	if (!args) {
		cb_failed(fn);
		return 0;
	}
	res = PyObject_Call(fn, args, NULL);
	Py_DECREF(args);
	if (!res) {
		cb_failed(fn);
		return 0;
	}
	t = PyObject_IsTrue(res);
	Py_DECREF(res);
	if (t < 0) {
		cb_failed(fn);
		return 0;
	}
	return t;
}

static bool py_fixup(DescrObject *d, int which, odb_addr_t addr, enum odb_debug_obj_state state)
{
	bool foreign, r = false;
	PyGILState_STATE g = cb_enter(&foreign);

	if (!PyErr_Occurred())   /* an earlier callback of this call failed: skip */
		r = call_bool(d->cb[which], Py_BuildValue("(Ki)", (unsigned long long)addr, (int)state));
	cb_exit(g, foreign);
	return r;
}

#define FIXUP_TRAMPOLINE(fname, which) \
	static bool fname(odb_kernel *k, odb_addr_t addr, enum odb_debug_obj_state state, void *ctx) \
	{ return py_fixup(ctx, which, addr, state); }

FIXUP_TRAMPOLINE(tr_fixup_init, CB_INIT)
FIXUP_TRAMPOLINE(tr_fixup_activate, CB_ACTIVATE)
FIXUP_TRAMPOLINE(tr_fixup_destroy, CB_DESTROY)
FIXUP_TRAMPOLINE(tr_fixup_free, CB_FREE)
FIXUP_TRAMPOLINE(tr_fixup_assert_init, CB_ASSERT_INIT)

static bool tr_is_static(odb_kernel *k, odb_addr_t addr, void *ctx)
{
	DescrObject *d = ctx;
	bool foreign, r = false;
	PyGILState_STATE g = cb_enter(&foreign);

	if (!PyErr_Occurred())
		r = call_bool(d->cb[CB_STATIC], Py_BuildValue("(K)", (unsigned long long)addr));
	cb_exit(g, foreign);
	return r;
}

static bool tr_hint_text(odb_kernel *k, odb_addr_t addr, void *ctx, char *buf, size_t len)
{
	DescrObject *d = ctx;
	bool foreign;
	PyGILState_STATE g = cb_enter(&foreign);
	PyObject *res = NULL;

	snprintf(buf, len, "0x0");
	if (!PyErr_Occurred())
		res = PyObject_CallFunction(d->cb[CB_HINT], "K", (unsigned long long)addr);
	if (res) {
		if (PyUnicode_Check(res)) {
			const char *s = PyUnicode_AsUTF8(res);
			if (s)
				snprintf(buf, len, "%s", s);
			else
				cb_failed(d->cb[CB_HINT]);
		} else if (PyLong_Check(res)) {
			unsigned long long v = PyLong_AsUnsignedLongLong(res);
			if (v == (unsigned long long)-1 && PyErr_Occurred())
				cb_failed(d->cb[CB_HINT]);
			else if (v)
				snprintf(buf, len, "0x%llx", v);
		} else if (res != Py_None) {
			PyErr_Format(PyExc_TypeError, "debug_hint must return an int, a str or None, not %.100s",
				     Py_TYPE(res)->tp_name);
			cb_failed(d->cb[CB_HINT]);
		}
		Py_DECREF(res);
	} else if (PyErr_Occurred()) {
		cb_failed(d->cb[CB_HINT]);
	}
	cb_exit(g, foreign);
	return true;
}

/* ---- ObjectDescr ------------------------------------------------------------------------ */
static PyObject *Descr_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "is_static_object", "fixup_init", "fixup_activate",
				  "fixup_destroy", "fixup_free", "fixup_assert_init", "debug_hint",
				  NULL };
	PyObject *name, *cb[CB_MAX] = { NULL };
	DescrObject *self;
	const char *cname;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|$OOOOOOO", kwlist, &name,
					 &cb[CB_STATIC], &cb[CB_INIT], &cb[CB_ACTIVATE],
					 &cb[CB_DESTROY], &cb[CB_FREE], &cb[CB_ASSERT_INIT],
					 &cb[CB_HINT]))
		return NULL;
	cname = PyUnicode_AsUTF8(name);
	if (!cname)
		return NULL;
	if (!cname[0] || strlen(cname) > 64)
		return PyErr_Format(PyExc_ValueError, "ObjectDescr: name must be 1..64 characters, not %R",
				    name), NULL;
	for (int i = 0; i < CB_MAX; i++) {
		if (cb[i] == Py_None)
			cb[i] = NULL;
		if (cb[i] && !PyCallable_Check(cb[i]))
			return PyErr_Format(PyExc_TypeError, "ObjectDescr: %s must be callable or None, not %.100s",
					    cb_names[i], Py_TYPE(cb[i])->tp_name), NULL;
	}
	self = (DescrObject *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->cname = strdup(cname);
	if (!self->cname) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	self->name = Py_NewRef(name);
	for (int i = 0; i < CB_MAX; i++)
		self->cb[i] = Py_XNewRef(cb[i]);
	self->cd.name = self->cname;
	self->cd.ctx = self;
	self->cd.flags = ODB_DESCR_DEFER_ATOMIC;   /* callbacks take the GIL: never under a core lock */
	self->cd.is_static_object = cb[CB_STATIC] ? tr_is_static : NULL;
	self->cd.fixup_init = cb[CB_INIT] ? tr_fixup_init : NULL;
	self->cd.fixup_activate = cb[CB_ACTIVATE] ? tr_fixup_activate : NULL;
	self->cd.fixup_destroy = cb[CB_DESTROY] ? tr_fixup_destroy : NULL;
	self->cd.fixup_free = cb[CB_FREE] ? tr_fixup_free : NULL;
	self->cd.fixup_assert_init = cb[CB_ASSERT_INIT] ? tr_fixup_assert_init : NULL;
	self->cd.debug_hint_text = cb[CB_HINT] ? tr_hint_text : NULL;
	return (PyObject *)self;
}

static int Descr_traverse(DescrObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(self->name);
	for (int i = 0; i < CB_MAX; i++)
		Py_VISIT(self->cb[i]);
	Py_VISIT(self->last_kernel);
	return 0;
}

static int Descr_clear(DescrObject *self)
{
	/* Callbacks stay until dealloc: a tracker of a live kernel may still
	 * point here while a cycle is being cleared. */
	Py_CLEAR(self->last_kernel);
	return 0;
}

static void Descr_dealloc(DescrObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	Descr_clear(self);
	Py_CLEAR(self->name);
	for (int i = 0; i < CB_MAX; i++)
		Py_CLEAR(self->cb[i]);
	free(self->cname);
	tp->tp_free(self);
	Py_DECREF(tp);
}

static PyObject *Descr_repr(DescrObject *self)
{
	return PyUnicode_FromFormat("<odebug.ObjectDescr %R>", self->name);
}

static PyObject *Descr_get_cb(DescrObject *self, void *which)
{
	PyObject *o = self->cb[(intptr_t)which];
	return Py_NewRef(o ? o : Py_None);
}

static PyObject *Descr_get_name(DescrObject *self, void *c) { return Py_NewRef(self->name); }

static PyGetSetDef Descr_getset[] = {
	{ "name", (getter)Descr_get_name, NULL, "type name printed in warnings", NULL },
	{ "is_static_object", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_STATIC },
	{ "fixup_init", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_INIT },
	{ "fixup_activate", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_ACTIVATE },
	{ "fixup_destroy", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_DESTROY },
	{ "fixup_free", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_FREE },
	{ "fixup_assert_init", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_ASSERT_INIT },
	{ "debug_hint", (getter)Descr_get_cb, NULL, NULL, (void *)(intptr_t)CB_HINT },
	{ NULL }
};

static PyType_Slot Descr_slots[] = {
	{ Py_tp_new, Descr_new },
	{ Py_tp_dealloc, Descr_dealloc },
	{ Py_tp_traverse, Descr_traverse },
	{ Py_tp_clear, Descr_clear },
	{ Py_tp_repr, Descr_repr },
	{ Py_tp_getset, Descr_getset },
	{ Py_tp_doc,
	  "ObjectDescr(name, *, is_static_object=None, fixup_init=None, fixup_activate=None,\n"
	  "            fixup_destroy=None, fixup_free=None, fixup_assert_init=None, debug_hint=None)\n--\n\n"
	  "A debug-objects type (struct debug_obj_descr).  fixup_*(addr, state) -> bool\n"
	  "(True: fixed, counted in 'fixups'); is_static_object(addr) -> bool;\n"
	  "debug_hint(addr) -> int address or str, printed after 'hint:'." },
	{ 0, NULL }
};

static PyType_Spec Descr_spec = {
	.name = "odebug._core.ObjectDescr",
	.basicsize = sizeof(DescrObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.slots = Descr_slots,
};

/* ---- argument helpers -------------------------------------------------------------------- */
static int conv_addr(PyObject *o, void *out)
{
	unsigned long long v;

	if (!PyLong_Check(o) || PyBool_Check(o)) {
		PyErr_Format(PyExc_TypeError, "address: expected int, not %.100s", Py_TYPE(o)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "address: %R is not a 64-bit address", o);
		return 0;
	}
	*(odb_addr_t *)out = v;
	return 1;
}

static int conv_descr(PyObject *o, void *out)
{
	if (!is_descr(o)) {
		PyErr_Format(PyExc_TypeError, "descr: expected an odebug.ObjectDescr, not %.100s",
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	*(DescrObject **)out = (DescrObject *)o;
	return 1;
}

/* Keep d alive as long as kernel self (its trackers may point at it). */
static int pin_descr(KernelObject *self, DescrObject *d)
{
	PyObject *last = d->last_kernel ? PyWeakref_GetObject(d->last_kernel) : NULL;
	PyObject *wr;
	Py_ssize_t n;

	if (last == (PyObject *)self)
		return 0;
	if (!self->works)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), -1;
	n = PyList_GET_SIZE(self->works);
	for (Py_ssize_t i = 0; i < n; i++)
		if (PyList_GET_ITEM(self->works, i) == (PyObject *)d)
			goto cache;
	if (PyList_Append(self->works, (PyObject *)d))
		return -1;
cache:
	wr = PyWeakref_NewRef((PyObject *)self, NULL);
	if (!wr)
		return -1;
	Py_XSETREF(d->last_kernel, wr);
	return 0;
}

/* Finish a call: a callback's exception wins, then the status. */
static PyObject *finish(KernelObject *self, int ret, PyObject *ok)
{
	if (PyErr_Occurred()) {
		Py_XDECREF(ok);
		return NULL;
	}
	if (ret) {
		Py_XDECREF(ok);
		return odb_raise(self, ret);
	}
	return ok;
}

/* O(n) calls release the GIL; the short ones keep it, so that a report's
 * stack names the Python caller (the depot's frame hook needs the GIL).  That
 * is safe because the core never waits for the GIL with a lock held: every
 * callback runs with no odebug lock held. */
#define CALL_NOGIL(stmt) \
	do { Py_BEGIN_ALLOW_THREADS stmt; Py_END_ALLOW_THREADS } while (0)
#define CALL(stmt) \
	do { stmt; } while (0)

typedef int (*descr_fn)(odb_kernel *, odb_addr_t, const struct odb_debug_obj_descr *);

static PyObject *call_descr_fn(PyObject *module, PyObject *args, descr_fn fn)
{
	PyObject *ko;
	KernelObject *self;
	odb_addr_t addr;
	DescrObject *d;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &ko, conv_addr, &addr, conv_descr, &d))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self || pin_descr(self, d))
		return NULL;
	CALL(ret = fn(self->k, addr, &d->cd));
	return finish(self, ret, Py_NewRef(Py_None));
}

#define DESCR_WRAPPER(pyname, cfn) \
	static PyObject *py_##pyname(PyObject *m, PyObject *a) { return call_descr_fn(m, a, cfn); }

DESCR_WRAPPER(debug_object_init, odb_debug_object_init)
DESCR_WRAPPER(debug_object_init_on_stack, odb_debug_object_init_on_stack)
DESCR_WRAPPER(debug_object_deactivate, odb_debug_object_deactivate)
DESCR_WRAPPER(debug_object_destroy, odb_debug_object_destroy)
DESCR_WRAPPER(debug_object_free, odb_debug_object_free)
DESCR_WRAPPER(debug_object_assert_init, odb_debug_object_assert_init)

static PyObject *py_debug_object_activate(PyObject *module, PyObject *args)
{
	PyObject *ko;
	KernelObject *self;
	odb_addr_t addr;
	DescrObject *d;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &ko, conv_addr, &addr, conv_descr, &d))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self || pin_descr(self, d))
		return NULL;
	CALL(ret = odb_debug_object_activate(self->k, addr, &d->cd));
	if (ret == ODB_EINVAL && !odb_strerror(self->k)[0])
		return finish(self, 0, PyLong_FromLong(-EINVAL));
	return finish(self, ret, ret ? NULL : PyLong_FromLong(0));
}

static PyObject *py_debug_object_active_state(PyObject *module, PyObject *args)
{
	PyObject *ko;
	KernelObject *self;
	odb_addr_t addr;
	DescrObject *d;
	unsigned int expect, next;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&II", &ko, conv_addr, &addr, conv_descr, &d, &expect, &next))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self || pin_descr(self, d))
		return NULL;
	CALL(ret = odb_debug_object_active_state(self->k, addr, &d->cd, expect, next));
	return finish(self, ret, Py_NewRef(Py_None));
}

static PyObject *py_debug_check_no_obj_freed(PyObject *module, PyObject *args)
{
	PyObject *ko;
	KernelObject *self;
	odb_addr_t addr, size;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &ko, conv_addr, &addr, conv_addr, &size))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self)
		return NULL;
	CALL_NOGIL(ret = odb_debug_check_no_obj_freed(self->k, addr, size));
	return finish(self, ret, Py_NewRef(Py_None));
}

static PyObject *py_debug_object_lookup(PyObject *module, PyObject *args)
{
	PyObject *ko;
	KernelObject *self;
	odb_addr_t addr;
	int ret, state = 0;
	unsigned int astate = 0;

	if (!PyArg_ParseTuple(args, "OO&", &ko, conv_addr, &addr))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self)
		return NULL;
	CALL(ret = odb_debug_object_lookup(self->k, addr, &state, &astate));
	if (ret == ODB_ENOENT)
		Py_RETURN_NONE;
	return finish(self, ret, ret ? NULL : Py_BuildValue("(iI)", state, astate));
}

static PyObject *py_debug_objects_stats(PyObject *module, PyObject *ko)
{
	KernelObject *self = odb_py_kernel(module, ko, true);
	struct odb_debug_objects_stats s;
	int ret;

	if (!self)
		return NULL;
	CALL(ret = odb_debug_objects_stats(self->k, &s));
	if (ret)
		return odb_raise(self, ret);
	return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}",
			     "max_chain", (long long)s.max_chain, "max_checked", (long long)s.max_checked,
			     "warnings", (long long)s.warnings, "fixups", (long long)s.fixups,
			     "pool_free", (long long)s.pool_free, "pool_pcp_free", (long long)s.pool_pcp_free,
			     "pool_min_free", (long long)s.pool_min_free, "pool_used", (long long)s.pool_used,
			     "pool_max_used", (long long)s.pool_max_used,
			     "on_free_list", (long long)s.on_free_list,
			     "objs_allocated", (long long)s.objs_allocated,
			     "objs_freed", (long long)s.objs_freed);
}

static PyObject *py_debug_objects_stats_text(PyObject *module, PyObject *ko)
{
	KernelObject *self = odb_py_kernel(module, ko, true);
	PyObject *res;
	char *s;

	if (!self)
		return NULL;
	CALL_NOGIL(s = odb_debug_objects_stats_text(self->k));
	if (!s)
		return odb_raise(self, odb_kernel_closed(self->k) ? ODB_ECLOSED : ODB_ENOMEM);
	res = PyUnicode_FromString(s);
	odb_free(s);
	return res;
}

static PyObject *py_debug_objects_internals(PyObject *module, PyObject *ko)
{
	KernelObject *self = odb_py_kernel(module, ko, true);
	struct odb_debug_objects_internals *in;
	PyObject *pcp, *res = NULL;
	int ret;

	if (!self)
		return NULL;
	in = malloc(sizeof(*in));
	if (!in)
		return PyErr_NoMemory();
	CALL_NOGIL(ret = odb_debug_objects_internals(self->k, in));
	if (ret) {
		free(in);
		return odb_raise(self, ret);
	}
	pcp = PyList_New(in->nr_cpus);
	for (int i = 0; pcp && i < in->nr_cpus; i++)
		PyList_SET_ITEM(pcp, i, PyLong_FromLong(in->pcp_free[i]));
	if (pcp)
		res = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:N,s:L,s:L,s:L,s:L,s:L,s:O}",
				    "enabled", in->enabled ? Py_True : Py_False,
				    "obj_cache", in->obj_cache ? Py_True : Py_False,
				    "eager", in->eager ? Py_True : Py_False,
				    "obj_freeing", in->obj_freeing ? Py_True : Py_False,
				    "work_pending", in->work_pending ? Py_True : Py_False,
				    "obj_pool_free", in->obj_pool_free,
				    "obj_pool_min_free", in->obj_pool_min_free,
				    "obj_pool_used", in->obj_pool_used,
				    "obj_pool_max_used", in->obj_pool_max_used,
				    "obj_nr_tofree", in->obj_nr_tofree,
				    "pool_size", in->pool_size, "pool_min_level", in->pool_min_level,
				    "nr_cpus", in->nr_cpus, "pcp_free", pcp,
				    "hashed", (long long)in->hashed, "work_runs", (long long)in->work_runs,
				    "work_runs_worker", (long long)in->work_runs_worker,
				    "offline_freed", (long long)in->offline_freed,
				    "trylock_failed", (long long)in->trylock_failed,
				    "selftest_passed", in->selftest_passed ? Py_True : Py_False);
	free(in);
	return res;
}

static PyObject *py_debug_objects_fail_trylock(PyObject *module, PyObject *args)
{
	PyObject *ko;
	KernelObject *self;
	unsigned int n;
	int ret;

	if (!PyArg_ParseTuple(args, "OI", &ko, &n))
		return NULL;
	self = odb_py_kernel(module, ko, true);
	if (!self)
		return NULL;
	ret = odb_debug_objects_fail_trylock(self->k, n);
	return finish(self, ret, Py_NewRef(Py_None));
}

static PyObject *py_debug_objects_stack_bounds(PyObject *module, PyObject *ko)
{
	KernelObject *self = odb_py_kernel(module, ko, true);
	odb_addr_t lo = 0, hi = 0;
	int ret;

	if (!self)
		return NULL;
	ret = odb_debug_objects_stack_bounds(self->k, &lo, &hi);
	return finish(self, ret, ret ? NULL : Py_BuildValue("(KK)", (unsigned long long)lo,
							       (unsigned long long)hi));
}

static PyObject *py_debug_objects_churn(PyObject *module, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "kernel", "rounds", "wave", "lifetime", "threads",
				  "advance_ns", "seed", "phase_rounds", NULL };
	struct odb_object_churn cfg = { 0 };
	struct odb_object_churn_result r;
	PyObject *ko;
	KernelObject *self;
	unsigned long long advance_ns = 0, seed = 0;
	int ret, threads = 0;
	/* the core's limits (object_churn.c), checked here to name the argument */
	odb_uarg rounds = ODB_UARG("rounds", 0, 1u << 24), wave = ODB_UARG("wave", 0, 300000),
		 lifetime = ODB_UARG("lifetime", 1, 256), phase = ODB_UARG("phase_rounds", 0, 1u << 24);

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&O&O&|pKKO&", kwlist, &ko, odb_conv_uarg, &rounds,
					 odb_conv_uarg, &wave, odb_conv_uarg, &lifetime, &threads,
					 &advance_ns, &seed, odb_conv_uarg, &phase))
		return NULL;
	cfg.rounds = (unsigned int)rounds.v, cfg.wave = (unsigned int)wave.v;
	cfg.lifetime = (unsigned int)lifetime.v, cfg.phase_rounds = (unsigned int)phase.v;
	self = odb_py_kernel(module, ko, true);
	if (!self)
		return NULL;
	cfg.threads = threads;
	cfg.advance_ns = advance_ns;
	cfg.seed = seed;
	CALL_NOGIL(ret = odb_object_churn(self->k, &cfg, &r));
	if (ret)
		return odb_raise(self, ret);
	return odb_py_checked(Py_BuildValue("{s:K,s:K,s:K,s:d,s:K}", "cycles", (unsigned long long)r.cycles,
			     "elapsed_ns", (unsigned long long)r.elapsed_ns,
			     "peak_live", (unsigned long long)r.peak_live,
			     "ns_per_cycle", r.cycles ? (double)r.elapsed_ns / (double)r.cycles : 0.0,
			     "virtual_ns", (unsigned long long)r.virtual_ns));
}

static PyMethodDef dobj_methods[] = {
	{ "debug_object_init", py_debug_object_init, METH_VARARGS, "debug_object_init($module, kernel, addr, descr, /)\n--\n\ndebug_object_init()." },
	{ "debug_object_init_on_stack", py_debug_object_init_on_stack, METH_VARARGS,
	  "debug_object_init_on_stack($module, kernel, addr, descr, /)\n--\n\ndebug_object_init_on_stack()." },
	{ "debug_object_activate", py_debug_object_activate, METH_VARARGS,
	  "debug_object_activate($module, kernel, addr, descr, /)\n--\n\ndebug_object_activate() -> 0 or -EINVAL." },
	{ "debug_object_deactivate", py_debug_object_deactivate, METH_VARARGS,
	  "debug_object_deactivate($module, kernel, addr, descr, /)\n--\n\ndebug_object_deactivate()." },
	{ "debug_object_destroy", py_debug_object_destroy, METH_VARARGS, "debug_object_destroy($module, kernel, addr, descr, /)\n--\n\ndebug_object_destroy()." },
	{ "debug_object_free", py_debug_object_free, METH_VARARGS, "debug_object_free($module, kernel, addr, descr, /)\n--\n\ndebug_object_free()." },
	{ "debug_object_assert_init", py_debug_object_assert_init, METH_VARARGS,
	  "debug_object_assert_init($module, kernel, addr, descr, /)\n--\n\ndebug_object_assert_init()." },
	{ "debug_object_active_state", py_debug_object_active_state, METH_VARARGS,
	  "debug_object_active_state($module, kernel, addr, descr, expect, next, /)\n--\n\ndebug_object_active_state()." },
	{ "debug_check_no_obj_freed", py_debug_check_no_obj_freed, METH_VARARGS,
	  "debug_check_no_obj_freed($module, kernel, addr, size, /)\n--\n\ndebug_check_no_obj_freed() (GIL released)." },
	{ "debug_object_lookup", py_debug_object_lookup, METH_VARARGS,
	  "debug_object_lookup($module, kernel, addr, /)\n--\n\n(state, astate) of the tracked object at addr, or None." },
	{ "debug_objects_stats", py_debug_objects_stats, METH_O, "debug_objects_stats($module, kernel, /)\n--\n\nThe debug-objects counters as a dict." },
	{ "debug_objects_stats_text", py_debug_objects_stats_text, METH_O,
	  "debug_objects_stats_text($module, kernel, /)\n--\n\nThe v5.3 debugfs stats file." },
	{ "debug_objects_internals", py_debug_objects_internals, METH_O,
	  "debug_objects_internals($module, kernel, /)\n--\n\nRaw pool state as a dict." },
	{ "debug_objects_fail_trylock", py_debug_objects_fail_trylock, METH_VARARGS,
	  "debug_objects_fail_trylock($module, kernel, n, /)\n--\n\nThe next n trylocks in free_obj_work fail." },
	{ "debug_objects_stack_bounds", py_debug_objects_stack_bounds, METH_O,
	  "debug_objects_stack_bounds($module, kernel, /)\n--\n\n(lo, hi) of the calling thread's stack." },
	{ "debug_objects_churn", (PyCFunction)(void (*)(void))py_debug_objects_churn,
	  METH_VARARGS | METH_KEYWORDS,
	  "debug_objects_churn($module, /, kernel, rounds, wave, lifetime, threads=False, advance_ns=0, seed=0, phase_rounds=0)\n--\n\nObject churn in C -> dict of results." },
	{ NULL }
};

int odb_py_debugobjects_init(PyObject *module, core_state *st)
{
	PyObject *t = PyType_FromModuleAndSpec(module, &Descr_spec, NULL);
	int ret;

	if (!t)
		return -1;
	ret = PyModule_AddObjectRef(module, "ObjectDescr", t);
	Py_DECREF(t);
	if (ret || PyModule_AddFunctions(module, dobj_methods))
		return -1;
	for (int i = 0; i < ODB_ODEBUG_STATE_MAX; i++) {
		static const char *const names[] = { "ODEBUG_STATE_NONE", "ODEBUG_STATE_INIT",
			"ODEBUG_STATE_INACTIVE", "ODEBUG_STATE_ACTIVE", "ODEBUG_STATE_DESTROYED",
			"ODEBUG_STATE_NOTAVAILABLE" };
		if (PyModule_AddIntConstant(module, names[i], i))
			return -1;
	}
	return 0;
}
