/*
 * odebug._core: the thin CPython binding of the C core.
 *
 * It parses arguments, holds references, releases the GIL around work that
 * may take long or block (advance, close, dmesg, reports, anything O(n)),
 * and turns a C status (+ the thread's message or the panic report) into an
 * exception in one place: odb_raise().  No algorithm lives here.
 *
 * Multi-phase init, module state and heap types throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "python/binding.h"


/* ---- argument converters ("O&"): unlike "K"/"I"/"n", they refuse values that do not
 * fit -- negative, too large, or outside the argument's range -- with
 * odebug.InvalidArgument (a ValueError) naming the argument, and a non-int with
 * TypeError, instead of wrapping silently or raising a bare OverflowError. ---------- */

/* odebug.InvalidArgument, for converters (which get no module): looked up on
 * the error path only, in this interpreter's odebug._core. */
static PyObject *invalid_argument_type(void)
{
	PyObject *m = PyImport_ImportModule("odebug._core"), *t = NULL;

	if (m) {
		t = PyObject_GetAttrString(m, "InvalidArgument");
		Py_DECREF(m);
	}
	if (!t) {
		PyErr_Clear();
		t = Py_NewRef(PyExc_ValueError);
	}
	return t;
}

int odb_conv_uarg(PyObject *o, void *out)
{
	odb_uarg *a = out;
	unsigned long long v;
	int overflow = 0;
	long long sv;
	PyObject *t;

	/* the common case first (issue 16): an exact int of at most 64 bits, not
	 * negative, in range -- no overflow dance, no byte-array conversion */
	if (PyLong_CheckExact(o) && _PyLong_Sign(o) >= 0 && _PyLong_NumBits(o) <= 64) {
		v = PyLong_AsUnsignedLongLongMask(o);
		if (v >= a->lo && v <= a->hi) {
			a->v = v;
			return 1;
		}
	}
	if (!PyLong_Check(o) || PyBool_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s: expected int, not %.100s", a->name,
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	bool bad = false;

	sv = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (sv == -1 && PyErr_Occurred())
		return 0;
	if (overflow > 0) {             /* > LLONG_MAX: maybe still a 64-bit unsigned */
		v = PyLong_AsUnsignedLongLong(o);
		if (v == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();
			bad = true;             /* >= 2**64 */
		}
	} else {
		bad = overflow < 0 || sv < 0;   /* negative */
		v = (unsigned long long)sv;
	}
	if (bad || v < a->lo || v > a->hi) {
		t = invalid_argument_type();
		PyErr_Format(t, "%s: must be %llu..%llu, not %R", a->name, a->lo, a->hi, o);
		Py_DECREF(t);
		return 0;
	}
	a->v = v;
	return 1;
}

/* unsigned types of the kernel's arguments, by name */
#define NAMED_CONV(fn, type, name, hi) \
	int fn(PyObject *o, void *out) \
	{ \
		odb_uarg a = ODB_UARG(name, 0, hi); \
		if (!odb_conv_uarg(o, &a)) \
			return 0; \
		*(type *)out = (type)a.v; \
		return 1; \
	}
NAMED_CONV(odb_conv_size, Py_ssize_t, "size", PY_SSIZE_T_MAX)
NAMED_CONV(odb_conv_addr, unsigned long long, "addr", ULLONG_MAX)
NAMED_CONV(odb_conv_gfp, unsigned int, "gfp", UINT_MAX)
NAMED_CONV(conv_ram, unsigned long long, "ram", ULLONG_MAX)
NAMED_CONV(conv_cpus, unsigned int, "cpus", UINT_MAX)
NAMED_CONV(conv_hz, unsigned int, "hz", UINT_MAX)
NAMED_CONV(conv_nr_cpus, unsigned int, "nr_cpus", UINT_MAX)
NAMED_CONV(conv_order, unsigned int, "order", UINT_MAX)
NAMED_CONV(conv_ns, unsigned long long, "ns", ULLONG_MAX)
NAMED_CONV(conv_delay, unsigned long long, "delay", ULLONG_MAX)
NAMED_CONV(conv_handle, unsigned long long, "handle", UINT32_MAX)
NAMED_CONV(conv_probability, unsigned long, "probability", ULONG_MAX)
NAMED_CONV(conv_interval, unsigned long, "interval", ULONG_MAX)
NAMED_CONV(conv_verbose, unsigned long, "verbose", ULONG_MAX)
NAMED_CONV(conv_value, unsigned long, "value", ULONG_MAX)

/* signed ints (vCPU numbers): out of int range is InvalidArgument too */
static int conv_cpu(PyObject *o, void *out)
{
	odb_uarg a = ODB_UARG("cpu", 0, INT_MAX);
	int overflow = 0;
	long v;

	if (PyLong_Check(o) && !PyBool_Check(o)) {
		v = PyLong_AsLongAndOverflow(o, &overflow);
		if (v == -1 && PyErr_Occurred())
			return 0;
		if (!overflow && v >= -1 && v <= INT_MAX) {
			*(int *)out = (int)v;
			return 1;
		}
	}
	return odb_conv_uarg(o, &a);   /* raises the matching error */
}

/* ---- errors ---------------------------------------------------------------------- */
static PyObject *report_to_python(core_state *st, odb_kernel *k, const struct odb_report *r);

/* THE table: every C status and the exception it becomes (README, "Errors").
 * exc is the offset of the class in core_state, or NO_STATE for a builtin. */
#define NO_STATE ((size_t)-1)
static const struct odb_errmap {
	int status;
	size_t exc;
	PyObject *const *builtin;
	const char *dflt;
	bool keep_msg;        /* use odb_strerror() when the core left one */
} odb_errmap[] = {
	{ ODB_EINVAL,  offsetof(core_state, InvalidArgument), NULL, "invalid argument", true },
	{ ODB_ERANGE,  offsetof(core_state, InvalidArgument), NULL, "value out of range", true },
	{ ODB_EFAULT,  offsetof(core_state, InvalidArgument), NULL, "address outside the kernel's memory", true },
	{ ODB_ENOENT,  offsetof(core_state, NotFound), NULL, "not found", true },
	{ ODB_EBUSY,   offsetof(core_state, StateError), NULL, "busy", true },
	{ ODB_ESTATE,  offsetof(core_state, StateError), NULL, "not valid in this state", true },
	{ ODB_ECLOSED, offsetof(core_state, ClosedError), NULL, "the kernel is closed", false },
	{ ODB_ENOMEM,  NO_STATE, &PyExc_MemoryError, "out of memory", true },
	/* the poll hook stopped the call: the pending exception (KeyboardInterrupt
	 * from the signal handler) is raised; this one only if none is pending */
	{ ODB_EINTR,   NO_STATE, &PyExc_KeyboardInterrupt, "interrupted", true },
};

PyObject *odb_raise_status(core_state *st, int status, const char *msg)
{
	if (status == ODB_EINTR && PyErr_Occurred())
		return NULL;
	for (size_t i = 0; i < sizeof(odb_errmap) / sizeof(odb_errmap[0]); i++) {
		const struct odb_errmap *e = &odb_errmap[i];
		PyObject *exc;

		if (e->status != status)
			continue;
		exc = e->exc == NO_STATE ? *e->builtin : *(PyObject **)((char *)st + e->exc);
		PyErr_SetString(exc, e->keep_msg && msg && msg[0] ? msg : e->dflt);
		return NULL;
	}
	PyErr_Format(st->Error, "odebug error %d%s%s", status, msg && msg[0] ? ": " : "",
		     msg ? msg : "");
	return NULL;
}

/* The one place where a C status of a kernel call becomes a Python exception
 * (the table above; a report under panic_on_warn becomes KernelBug).  Returns NULL. */
PyObject *odb_raise(KernelObject *self, int status)
{
	core_state *st = self->st;

	if (status == ODB_EBUG) {
		const struct odb_report *r = odb_last_bug(self->k);
		PyObject *rep = r ? report_to_python(st, self->k, r) : NULL, *exc;

		if (r)
			odb_report_put(r);
		if (r && !rep)
			return NULL;
		exc = PyObject_CallFunction(st->KernelBug, "s", r ? r->kind : "kernel bug");
		if (exc) {
			if (PyObject_SetAttrString(exc, "report", rep ? rep : Py_None) == 0)
				PyErr_SetObject(st->KernelBug, exc);
			Py_DECREF(exc);
		}
		Py_XDECREF(rep);
		return NULL;
	}
	return odb_raise_status(st, status, self->k ? odb_strerror(self->k) : "");
}

/* The binding's poll hook (odb_set_poll_hook): called by long calls from the
 * thread that made them, between rounds, with no core lock held and the GIL
 * released: take the GIL, run the pending signal handlers (Ctrl-C raises
 * KeyboardInterrupt there), and ask the call to stop if one raised.  The
 * exception stays set for the binding to raise when the call returns. */
static int py_poll_hook(void *ctx)
{
	PyGILState_STATE g;
	int stop;

	(void)ctx;
	g = PyGILState_Ensure();
	stop = PyErr_Occurred() != NULL || PyErr_CheckSignals() != 0;
	PyGILState_Release(g);
	return stop;
}

KernelObject *odb_py_kernel(PyObject *module, PyObject *obj, bool open)
{
	core_state *st = get_state(module);
	PyObject *tp = (PyObject *)Py_TYPE(obj);

	if (tp == st->kernel_subtype) {
		/* (checked before, and kept alive since) */
	} else if (PyObject_TypeCheck(obj, (PyTypeObject *)st->KernelType)) {
		Py_XSETREF(st->kernel_subtype, Py_NewRef(tp));
	} else {
		PyErr_Format(PyExc_TypeError, "expected an odebug.Kernel, not %.100s",
			     Py_TYPE(obj)->tp_name);
		return NULL;
	}
	if (!((KernelObject *)obj)->k || (open && odb_kernel_closed(((KernelObject *)obj)->k))) {
		PyErr_SetString(st->ClosedError, "the kernel is closed");
		return NULL;
	}
	return (KernelObject *)obj;
}

/* ---- reports ------------------------------------------------------------------- */
static PyObject *track_to_python(odb_kernel *k, const struct odb_track *t)
{
	char *stack = NULL;
	PyObject *d;

	if (t->handle) {
		Py_BEGIN_ALLOW_THREADS
		stack = odb_stack_text(k, t->handle);
		Py_END_ALLOW_THREADS
	}
	d = Py_BuildValue("{s:K,s:i,s:i,s:K,s:I,s:s}",
			  "addr", (unsigned long long)t->addr, "cpu", t->cpu, "pid", t->pid,
			  "when", (unsigned long long)t->when, "handle", t->handle,
			  "stack", stack ? stack : "");
	odb_free(stack);
	return d;
}

static PyObject *report_to_python(core_state *st, odb_kernel *k, const struct odb_report *r)
{
	PyObject *d, *at = NULL, *ft = NULL, *res;

	if (r->has_alloc_track && !(at = track_to_python(k, &r->alloc_track)))
		return NULL;
	if (r->has_free_track && !(ft = track_to_python(k, &r->free_track))) {
		Py_XDECREF(at);
		return NULL;
	}
	d = Py_BuildValue("{s:K,s:s,s:s,s:s,s:K,s:K,s:O,s:z,s:K,s:l,s:O,s:O}",
			  "seq", (unsigned long long)r->seq,
			  "subsystem", r->subsystem, "kind", r->kind, "text", r->text,
			  "addr", (unsigned long long)r->addr, "size", (unsigned long long)r->size,
			  "is_write", r->is_write < 0 ? Py_None : (r->is_write ? Py_True : Py_False),
			  "cache", r->cache,
			  "object", (unsigned long long)r->object, "offset", r->offset,
			  "alloc_track", at ? at : Py_None, "free_track", ft ? ft : Py_None);
	Py_XDECREF(at);
	Py_XDECREF(ft);
	if (!d || !st->report_factory)
		return d;
	res = PyObject_CallOneArg(st->report_factory, d);
	Py_DECREF(d);
	return res;
}

/* ---- the Python frame hook for the stack depot ---------------------------------------- */
/* The hook runs under core locks (the stack depot saves with a vCPU's irq lock
 * held), so it must never run Python code: Python code may hand the GIL to a
 * thread that holds the GIL's next claim and waits for that lock (a deadlock the
 * fuzzer found: a frame object's allocation started a GC whose weakref callback
 * let the GIL go).  So the walk runs with the GC disabled, and a cache entry is
 * replaced only if that does not free its code object (a code object's last
 * reference can run weakref callbacks). */
static bool evictable(PyObject *old)
{
	return !old || Py_REFCNT(old) > 1;
}

/* Is this code object odebug's own (its file under skip_prefix)?  1 yes, 0 no,
 * -1 on an error (cleared: the hook then names no caller). */
static int frame_code_skipped(KernelObject *self, PyCodeObject *code)
{
	struct odb_frame_cache *fc = self->fcache;
	size_t i = ((uintptr_t)code >> 4) & (ODB_CODE_CACHE - 1);
	const char *fn;
	bool skip;

	if (fc->code[i].code == (PyObject *)code)
		return fc->code[i].skip;
	fn = PyUnicode_AsUTF8(code->co_filename);
	if (!fn) {
		PyErr_Clear();
		return -1;
	}
	skip = self->skip_prefix && !strncmp(fn, self->skip_prefix, strlen(self->skip_prefix));
	if (!evictable(fc->code[i].code))
		return skip;            /* not cached this time */
	Py_XSETREF(fc->code[i].code, Py_NewRef((PyObject *)code));
	fc->code[i].skip = skip;
	return skip;
}

/* "file:line:function" of frame f running code, cached by (code, instruction). */
static const char *frame_text(KernelObject *self, PyFrameObject *f, PyCodeObject *code)
{
	struct odb_frame_cache *fc = self->fcache;
	int lasti = PyFrame_GetLasti(f);
	size_t i = (((uintptr_t)code >> 4) ^ ((size_t)(unsigned int)lasti * 0x9e3779b1u)) &
		   (ODB_LINE_CACHE - 1);
	const char *fn, *name, *base;
	char tmp[256], *text;

	if (fc->line[i].code == (PyObject *)code && fc->line[i].lasti == lasti)
		return fc->line[i].text;
	fn = PyUnicode_AsUTF8(code->co_filename);
	name = fn ? PyUnicode_AsUTF8(code->co_name) : NULL;
	if (!fn || !name)
		PyErr_Clear();
	if (!fn)
		return NULL;
	base = strrchr(fn, '/');
	snprintf(tmp, sizeof(tmp), "%s:%d:%s", base ? base + 1 : fn, PyFrame_GetLineNumber(f),
		 name ? name : "?");
	if (!evictable(fc->line[i].code)) {
		/* not cached this time: the text goes into the spare slot */
		free(fc->spare);
		fc->spare = strdup(tmp);
		return fc->spare;
	}
	text = strdup(tmp);
	if (!text)
		return NULL;
	free(fc->line[i].text);
	Py_XSETREF(fc->line[i].code, Py_NewRef((PyObject *)code));
	fc->line[i].lasti = lasti;
	fc->line[i].text = text;
	return text;
}

static void frame_cache_free(KernelObject *self)
{
	struct odb_frame_cache *fc = self->fcache;

	if (!fc)
		return;
	self->fcache = NULL;
	for (size_t i = 0; i < ODB_CODE_CACHE; i++)
		Py_XDECREF(fc->code[i].code);
	for (size_t i = 0; i < ODB_LINE_CACHE; i++) {
		Py_XDECREF(fc->line[i].code);
		free(fc->line[i].text);
	}
	free(fc->spare);
	free(fc);
}

static bool py_frame_hook(void *ctx, char *buf, size_t len)
{
	KernelObject *self = ctx;
	PyFrameObject *f;
	bool found = false;
	int gc_was_on;

	if (!PyGILState_Check())
		return false;   /* C thread or GIL released: no Python caller to name */
	if (!self->fcache && !(self->fcache = calloc(1, sizeof(*self->fcache))))
		return false;
	gc_was_on = PyGC_Disable();
	f = PyEval_GetFrame();  /* borrowed */
	Py_XINCREF(f);
	while (f) {
		PyCodeObject *code = PyFrame_GetCode(f);
		int skip = frame_code_skipped(self, code);
		PyFrameObject *back;

		if (skip < 0) {
			Py_DECREF(code);
			break;
		}
		if (!skip) {
			const char *text = frame_text(self, f, code);

			if (text && len) {
				/* a copy, not snprintf's "%s": this runs on every
				 * tracked alloc and free (issue 16) */
				size_t n = strlen(text);

				if (n >= len)
					n = len - 1;
				memcpy(buf, text, n);
				buf[n] = '\0';
				found = true;
			}
			Py_DECREF(code);
			break;
		}
		Py_DECREF(code);
		back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	if (gc_was_on)
		PyGC_Enable();
	return found;
}

/* ---- Kernel ----------------------------------------------------------------------- */
static int Kernel_init(KernelObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "cpus", "ram", "clock", "seed", "cmdline", "hz", "nr_cpus",
				  "skip_prefix", NULL };
	struct odb_config cfg;
	unsigned int cpus = 2, hz = 0, nr_cpus = 0;
	unsigned long long ram = 256ULL << 20, seed = 0;
	const char *clock = "virtual", *cmdline = "", *skip = NULL;
	char err[256];
	odb_kernel *k = NULL;
	int ret;

	if (self->k) {
		PyErr_SetString(PyExc_RuntimeError, "Kernel already initialised");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&O&sKsO&O&z", kwlist, conv_cpus, &cpus,
					 conv_ram, &ram, &clock, &seed, &cmdline, conv_hz, &hz,
					 conv_nr_cpus, &nr_cpus, &skip))
		return -1;
	odb_config_init(&cfg);
	cfg.cpus = cpus;
	cfg.ram = ram;
	cfg.seed = seed;
	cfg.hz = hz;
	cfg.nr_cpus = nr_cpus;
	cfg.cmdline = cmdline;
	if (!strcmp(clock, "virtual")) {
		cfg.clock = ODB_CLOCK_VIRTUAL;
	} else if (!strcmp(clock, "real")) {
		cfg.clock = ODB_CLOCK_REAL;
	} else {
		PyErr_Format(self->st->InvalidArgument, "clock: must be 'virtual' or 'real', not '%s'", clock);
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kernel_create(&cfg, &k, err, sizeof(err));
	Py_END_ALLOW_THREADS
	if (ret) {
		/* a boot fails on a bad command line or configuration, or for memory */
		odb_raise_status(self->st, ret == ODB_ENOMEM ? ret : ODB_EINVAL, err);
		return -1;
	}
	if (skip) {
		self->skip_prefix = strdup(skip);
		if (!self->skip_prefix) {
			odb_kernel_destroy(k);
			PyErr_NoMemory();
			return -1;
		}
	}
	self->works = PyList_New(0);
	if (!self->works) {
		odb_kernel_destroy(k);
		return -1;
	}
	self->k = k;
	odb_set_frame_hook(k, py_frame_hook, self);
	odb_set_poll_hook(k, py_poll_hook, NULL);
	odb_py_sched_hooks(k);
	return 0;
}

static PyModuleDef core_module;

static PyObject *Kernel_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *mod = PyType_GetModuleByDef(type, &core_module);
	KernelObject *self;

	if (!mod)
		return NULL;
	self = (KernelObject *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	self->module = Py_NewRef(mod);
	self->st = get_state(mod);
	return (PyObject *)self;
}

static void kernel_close_nogil(KernelObject *self)
{
	if (self->k && !odb_kernel_closed(self->k)) {
		Py_BEGIN_ALLOW_THREADS
		odb_kernel_close(self->k);
		Py_END_ALLOW_THREADS
	}
}

static int Kernel_traverse(KernelObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(self->works);
	return 0;
}

static int Kernel_clear(KernelObject *self)
{
	Py_CLEAR(self->works);
	return 0;
}

static void Kernel_dealloc(KernelObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	if (self->weakreflist)
		PyObject_ClearWeakRefs((PyObject *)self);
	kernel_close_nogil(self);
	Kernel_clear(self);
	if (self->k) {
		odb_kernel *k = self->k;
		self->k = NULL;
		Py_BEGIN_ALLOW_THREADS
		odb_kernel_destroy(k);
		Py_END_ALLOW_THREADS
	}
	free(self->skip_prefix);
	frame_cache_free(self);
	Py_CLEAR(self->module);
	tp->tp_free(self);
	Py_DECREF(tp);
}

static PyObject *Kernel_close(KernelObject *self, PyObject *unused)
{
	kernel_close_nogil(self);
	Py_RETURN_NONE;
}

static PyObject *Kernel_get_closed(KernelObject *self, void *c)
{
	return odb_py_checked(PyBool_FromLong(!self->k || odb_kernel_closed(self->k)));
}

/* The odb_kernel * for C code (odebug.cc: instrumented libraries, cffi). */
static PyObject *Kernel_get_c_pointer(KernelObject *self, void *c)
{
	if (!self->k || odb_kernel_closed(self->k)) {
		PyErr_SetString(self->st->ClosedError, "the kernel is closed");
		return NULL;
	}
	return PyLong_FromVoidPtr(self->k);
}

static PyObject *Kernel_bind_cpu(KernelObject *self, PyObject *arg)
{
	int cpu, old = -1, ret;

	if (!conv_cpu(arg, &cpu))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_bind_cpu(self->k, cpu, &old);
	if (ret)
		return odb_raise(self, ret);
	return odb_py_checked(PyLong_FromLong(old));
}

static PyObject *Kernel_cpu_hotplug(KernelObject *self, PyObject *args)
{
	int cpu, online, ret;

	if (!PyArg_ParseTuple(args, "O&p", conv_cpu, &cpu, &online))
		return NULL;
	CHECK_OPEN(self);
	Py_BEGIN_ALLOW_THREADS
	ret = online ? odb_cpu_online(self->k, cpu) : odb_cpu_offline(self->k, cpu);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

static PyObject *Kernel_cpu_is_online(KernelObject *self, PyObject *arg)
{
	int cpu;

	if (!conv_cpu(arg, &cpu))
		return NULL;
	CHECK_OPEN(self);
	return odb_py_checked(PyBool_FromLong(odb_cpu_is_online(self->k, cpu)));
}

static PyObject *Kernel_current_cpu(KernelObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	return odb_py_checked(PyLong_FromLong(odb_current_cpu(self->k)));
}

static PyObject *Kernel_current_pid(KernelObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	return odb_py_checked(PyLong_FromLong(odb_current_pid(self->k)));
}

static PyObject *Kernel_lock_bias_info(KernelObject *self, PyObject *unused)
{
	struct odb_lock_bias_info bi;

	CHECK_OPEN(self);
	odb_lock_bias_info(self->k, &bi);
	return Py_BuildValue("{s:I,s:K,s:K}", "threshold", bi.threshold,
			     "grants", (unsigned long long)bi.grants,
			     "revocations", (unsigned long long)bi.revocations);
}

static PyObject *Kernel_set_comm(KernelObject *self, PyObject *arg)
{
	const char *s = PyUnicode_AsUTF8(arg);

	if (!s)
		return NULL;
	CHECK_OPEN(self);
	odb_set_comm(self->k, s);
	Py_RETURN_NONE;
}

static PyObject *Kernel_advance(KernelObject *self, PyObject *arg)
{
	unsigned long long ns;
	int ret;

	if (!conv_ns(arg, &ns))
		return NULL;
	CHECK_OPEN(self);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_advance(self->k, ns);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

#define KERNEL_U64_GETTER(name, expr) \
	static PyObject *Kernel_get_##name(KernelObject *self, void *c) \
	{ CHECK_OPEN(self); return PyLong_FromUnsignedLongLong((unsigned long long)(expr)); }

KERNEL_U64_GETTER(hz, odb_hz(self->k))
KERNEL_U64_GETTER(jiffies, odb_jiffies(self->k))
KERNEL_U64_GETTER(now_ns, odb_now_ns(self->k))
KERNEL_U64_GETTER(nr_cpus, odb_nr_cpus(self->k))
KERNEL_U64_GETTER(config_nr_cpus, odb_config_nr_cpus(self->k))
KERNEL_U64_GETTER(totalram_pages, odb_totalram_pages(self->k))
KERNEL_U64_GETTER(nr_free_pages, odb_nr_free_pages(self->k))
KERNEL_U64_GETTER(arena_start, odb_arena_start(self->k))
KERNEL_U64_GETTER(arena_end, odb_arena_end(self->k))
/* the log and the reports stay readable after close() */
#define KERNEL_LOG_GETTER(name, expr) \
	static PyObject *Kernel_get_##name(KernelObject *self, void *c) \
	{ if (!self->k) return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL; \
	  return PyLong_FromUnsignedLongLong((unsigned long long)(expr)); }
KERNEL_LOG_GETTER(report_count, odb_report_count(self->k))
KERNEL_LOG_GETTER(reports_dropped, odb_reports_dropped(self->k))
KERNEL_U64_GETTER(stack_depot_count, odb_stack_depot_count(self->k))

static PyObject *Kernel_get_clock(KernelObject *self, void *c)
{
	CHECK_OPEN(self);
	return PyUnicode_FromString(odb_clock(self->k) == ODB_CLOCK_REAL ? "real" : "virtual");
}

static PyObject *Kernel_get_cmdline(KernelObject *self, void *c)
{
	if (!self->k)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL;
	return PyUnicode_FromString(odb_cmdline(self->k));
}

static PyObject *Kernel_param(KernelObject *self, PyObject *arg)
{
	const char *name = PyUnicode_AsUTF8(arg);
	char *v;
	PyObject *res;

	if (!name)
		return NULL;
	CHECK_OPEN(self);
	v = odb_param_get(self->k, name);
	if (!v)
		return PyErr_Format(self->st->NotFound, "no boot parameter '%s'", name), NULL;
	res = PyUnicode_FromString(v);
	odb_free(v);
	return res;
}

static PyObject *Kernel_alloc_pages(KernelObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "order", "gfp", NULL };
	unsigned int order = 0, gfp = ODB_GFP_KERNEL;
	odb_addr_t addr;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&O&", kwlist, conv_order, &order,
					 odb_conv_gfp, &gfp))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_alloc_pages(self->k, gfp, order, &addr);
	if (ret == ODB_ENOMEM)
		Py_RETURN_NONE;   /* allocation failure is a normal outcome */
	if (ret)
		return odb_raise(self, ret);
	return odb_py_checked(PyLong_FromUnsignedLongLong(addr));
}

static PyObject *Kernel_free_pages(KernelObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "addr", "order", NULL };
	unsigned long long addr;
	unsigned int order = 0;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&", kwlist, odb_conv_addr, &addr,
					 conv_order, &order))
		return NULL;
	CHECK_OPEN(self);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_free_pages(self->k, addr, order);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

static PyObject *Kernel_raw(KernelObject *self, PyObject *args)
{
	unsigned long long addr;
	Py_ssize_t n;
	void *p;
	RawObject *r;
	PyObject *mv, *addr_o;
	char msg[128];

	if (!PyArg_ParseTuple(args, "O!O&", &PyLong_Type, &addr_o, odb_conv_size, &n))
		return NULL;
	/* a view of a closed kernel's memory: refused (views taken before close()
	 * stay valid: each holds the Kernel, whose arena is unmapped only when the
	 * Kernel object is deallocated) */
	CHECK_OPEN(self);
	addr = PyLong_AsUnsignedLongLong(addr_o);
	if (addr == (unsigned long long)-1 && PyErr_Occurred()) {
		if (!PyErr_ExceptionMatches(PyExc_OverflowError))
			return NULL;
		PyErr_Clear();
		return PyErr_Format(self->st->InvalidArgument,
				    "raw: %R is not a 64-bit address", addr_o), NULL;
	}
	p = odb_host_ptr(self->k, addr, (size_t)n);
	if (!p) {
		/* PyErr_Format has no %llx before 3.12: format here */
		snprintf(msg, sizeof(msg), "raw: [0x%llx, +%zd) is outside the kernel's memory",
			 addr, n);
		return PyErr_SetString(self->st->InvalidArgument, msg), NULL;
	}
	r = PyObject_GC_New(RawObject, (PyTypeObject *)self->st->RawType);
	if (!r)
		return NULL;
	r->kernel = (KernelObject *)Py_NewRef(self);
	r->ptr = p;
	r->len = n;
	PyObject_GC_Track(r);
	mv = PyMemoryView_FromObject((PyObject *)r);
	Py_DECREF(r);
	return mv;
}

static PyObject *fault_dict(const struct odb_fault_attr_info *i)
{
	return Py_BuildValue("{s:k,s:k,s:l,s:l,s:k,s:k,s:k}", "probability", i->probability,
			     "interval", i->interval, "times", i->times, "space", i->space,
			     "verbose", i->verbose, "calls", i->calls, "failures", i->failures);
}

static PyObject *Kernel_fault_get(KernelObject *self, PyObject *arg)
{
	const char *name = PyUnicode_AsUTF8(arg);
	struct odb_fault_attr_info info;
	int ret;

	if (!name)
		return NULL;
	CHECK_OPEN(self);
	ret = odb_fault_get(self->k, name, &info);
	if (ret)
		return odb_raise(self, ret);
	return fault_dict(&info);
}

static PyObject *Kernel_fault_set(KernelObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "probability", "interval", "times", "space", "verbose", NULL };
	const char *name;
	unsigned long probability, interval = 1, verbose = 0;
	long times = -1, space = 0;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "sO&|O&llO&", kwlist, &name, conv_probability,
					 &probability, conv_interval, &interval, &times, &space,
					 conv_verbose, &verbose))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_fault_set(self->k, name, probability, interval, times, space, verbose);
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

static PyObject *Kernel_fault_set_flag(KernelObject *self, PyObject *args)
{
	const char *name, *knob;
	unsigned long v;
	int ret;

	if (!PyArg_ParseTuple(args, "ssO&", &name, &knob, conv_value, &v))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_fault_set_flag(self->k, name, knob, v);
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

static PyObject *Kernel_fault_get_flag(KernelObject *self, PyObject *args)
{
	const char *name, *knob;
	unsigned long v;
	int ret;

	if (!PyArg_ParseTuple(args, "ss", &name, &knob))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_fault_get_flag(self->k, name, knob, &v);
	if (ret)
		return odb_raise(self, ret);
	return PyLong_FromUnsignedLong(v);
}

static PyObject *Kernel_dmesg(KernelObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "clear", NULL };
	int clear = 0;
	char *s;
	PyObject *res;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &clear))
		return NULL;
	if (!self->k)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL;
	Py_BEGIN_ALLOW_THREADS
	s = odb_dmesg(self->k, clear);
	Py_END_ALLOW_THREADS
	if (!s)
		return PyErr_NoMemory();
	res = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
	odb_free(s);
	return res;
}

static PyObject *Kernel_printk(KernelObject *self, PyObject *arg)
{
	const char *s = PyUnicode_AsUTF8(arg);

	if (!s)
		return NULL;
	CHECK_OPEN(self);
	odb_printk(self->k, "%s", s);
	Py_RETURN_NONE;
}

static PyObject *Kernel_reports(KernelObject *self, PyObject *args)
{
	Py_ssize_t start = 0, n;
	PyObject *list;

	if (!PyArg_ParseTuple(args, "|n", &start))
		return NULL;
	if (!self->k)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL;
	if (start < 0)
		start = 0;
	n = (Py_ssize_t)odb_report_count(self->k);
	list = PyList_New(0);
	if (!list)
		return NULL;
	for (Py_ssize_t i = start; i < n; i++) {
		const struct odb_report *r = odb_report_get(self->k, (size_t)i);
		PyObject *o;

		if (!r)
			break;
		o = report_to_python(self->st, self->k, r);
		odb_report_put(r);
		if (!o || PyList_Append(list, o)) {
			Py_XDECREF(o);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(o);
	}
	return list;
}

static PyObject *Kernel_clear_reports(KernelObject *self, PyObject *unused)
{
	if (!self->k)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL;
	Py_BEGIN_ALLOW_THREADS
	odb_reports_clear(self->k);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *Kernel_report(KernelObject *self, PyObject *args)
{
	const char *ss, *kind, *text = "";
	int ret;

	if (!PyArg_ParseTuple(args, "ss|s", &ss, &kind, &text))
		return NULL;
	CHECK_OPEN(self);
	ret = odb_report_simple(self->k, ss, kind, text);
	if (ret)
		return odb_raise(self, ret);
	Py_RETURN_NONE;
}

static PyObject *Kernel_stack_save(KernelObject *self, PyObject *unused)
{
	CHECK_OPEN(self);
	return odb_py_checked(PyLong_FromUnsignedLong(odb_stack_save(self->k, 0)));
}

static PyObject *Kernel_stack_text(KernelObject *self, PyObject *arg)
{
	unsigned long long h;
	char *s;
	PyObject *res;

	if (!conv_handle(arg, &h))
		return NULL;
	if (!self->k)
		return PyErr_SetString(self->st->ClosedError, "the kernel is closed"), NULL;
	Py_BEGIN_ALLOW_THREADS
	s = odb_stack_text(self->k, (uint32_t)h);
	Py_END_ALLOW_THREADS
	if (!s)
		return PyErr_Format(self->st->NotFound, "no stack with handle %lu", (unsigned long)h), NULL;
	res = PyUnicode_FromString(s);
	odb_free(s);
	return res;
}

/* ---- Work ------------------------------------------------------------------------ */
static void work_trampoline(odb_kernel *k, void *arg)
{
	WorkObject *w = arg;
	PyGILState_STATE g = PyGILState_Ensure();
	/* own reference: the Work (even the kernel) may be collected inside fn */
	PyObject *fn = Py_NewRef(w->fn);
	PyObject *et, *ev, *tb, *r;

	PyErr_Fetch(&et, &ev, &tb);   /* a callback's pending exception, kept aside */
	r = PyObject_CallNoArgs(fn);
	if (!r)
		PyErr_WriteUnraisable(fn);   /* a work item cannot fail */
	Py_XDECREF(r);
	Py_DECREF(fn);
	PyErr_Restore(et, ev, tb);
	PyGILState_Release(g);
}

static PyObject *Kernel_work(KernelObject *self, PyObject *args)
{
	PyObject *fn, *name = NULL;
	WorkObject *w;

	if (!PyArg_ParseTuple(args, "O|O", &fn, &name))
		return NULL;
	if (!PyCallable_Check(fn))
		return PyErr_SetString(PyExc_TypeError, "work: fn must be callable"), NULL;
	if (name == Py_None)
		name = NULL;		/* None: the default name, repr(fn) */
	else if (name && !PyUnicode_Check(name))
		return PyErr_Format(PyExc_TypeError, "work: name must be a str or None, not %.100s",
				    Py_TYPE(name)->tp_name), NULL;
	CHECK_OPEN(self);
	w = PyObject_GC_New(WorkObject, (PyTypeObject *)self->st->WorkType);
	if (!w)
		return NULL;
	w->kernel = (KernelObject *)Py_NewRef(self);
	w->fn = Py_NewRef(fn);
	w->name = name ? Py_NewRef(name) : PyObject_Repr(fn);
	w->w = odb_work_create(self->k, work_trampoline, w);
	PyObject_GC_Track(w);
	if (!w->name || !w->w || PyList_Append(self->works, (PyObject *)w)) {
		if (!w->w && !PyErr_Occurred())
			PyErr_NoMemory();
		Py_DECREF(w);
		return NULL;
	}
	return (PyObject *)w;
}

static int Work_traverse(WorkObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(self->kernel);
	Py_VISIT(self->fn);
	Py_VISIT(self->name);
	return 0;
}

static int Work_clear(WorkObject *self)
{
	/* The C item must be gone before fn can go: cancel it first. */
	if (self->w && self->kernel && self->kernel->k) {
		odb_work *cw = self->w;
		odb_kernel *k = self->kernel->k;
		self->w = NULL;
		Py_BEGIN_ALLOW_THREADS
		odb_work_destroy(k, cw);
		Py_END_ALLOW_THREADS
	}
	Py_CLEAR(self->fn);
	Py_CLEAR(self->name);
	Py_CLEAR(self->kernel);
	return 0;
}

static void Work_dealloc(WorkObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	Work_clear(self);
	tp->tp_free(self);
	Py_DECREF(tp);
}

#define WORK_READY(self) \
	do { if (!(self)->w || !(self)->kernel || !(self)->kernel->k) \
		return PyErr_SetString(PyExc_RuntimeError, "work item is gone"), NULL; } while (0)

static PyObject *Work_schedule(WorkObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "delay", NULL };
	unsigned long long delay = 0;
	bool q;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&", kwlist, conv_delay, &delay))
		return NULL;
	WORK_READY(self);
	CHECK_OPEN(self->kernel);
	q = odb_schedule_delayed_work(self->kernel->k, self->w, delay);
	return odb_py_checked(PyBool_FromLong(q));
}

static PyObject *Work_cancel(WorkObject *self, PyObject *unused)
{
	bool r;

	WORK_READY(self);
	Py_BEGIN_ALLOW_THREADS
	r = odb_cancel_work(self->kernel->k, self->w);
	Py_END_ALLOW_THREADS
	return odb_py_checked(PyBool_FromLong(r));
}

static PyObject *Work_flush(WorkObject *self, PyObject *unused)
{
	bool r;

	WORK_READY(self);
	CHECK_OPEN(self->kernel);
	Py_BEGIN_ALLOW_THREADS
	r = odb_flush_work(self->kernel->k, self->w);
	Py_END_ALLOW_THREADS
	return odb_py_checked(PyBool_FromLong(r));
}

static PyObject *Work_get_pending(WorkObject *self, void *c)
{
	WORK_READY(self);
	return odb_py_checked(PyBool_FromLong(odb_work_pending(self->kernel->k, self->w)));
}

static PyObject *Work_get_due(WorkObject *self, void *c)
{
	WORK_READY(self);
	if (!odb_work_pending(self->kernel->k, self->w))
		Py_RETURN_NONE;
	return odb_py_checked(PyLong_FromUnsignedLongLong(odb_work_due(self->kernel->k, self->w)));
}

static PyObject *Work_repr(WorkObject *self)
{
	return PyUnicode_FromFormat("<odebug work %R>", self->name ? self->name : Py_None);
}

/* ---- Raw (buffer over kernel memory) ----------------------------------------------- */
static int Raw_getbuffer(RawObject *self, Py_buffer *view, int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, self->len, 0, flags);
}

static int Raw_traverse(RawObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(self->kernel);
	return 0;
}

static int Raw_clear(RawObject *self)
{
	Py_CLEAR(self->kernel);
	return 0;
}

static void Raw_dealloc(RawObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	Raw_clear(self);
	tp->tp_free(self);
	Py_DECREF(tp);
}

/* ---- type specs ------------------------------------------------------------------- */
static PyMethodDef Kernel_methods[] = {
	{ "close", (PyCFunction)Kernel_close, METH_NOARGS, "close($self, /)\n--\n\nStop the worker and refuse further calls." },
	{ "bind_cpu", (PyCFunction)Kernel_bind_cpu, METH_O, "bind_cpu($self, cpu, /)\n--\n\nBind the calling thread to a vCPU (-1 unbinds); returns the old binding." },
	{ "current_cpu", (PyCFunction)Kernel_current_cpu, METH_NOARGS, "current_cpu($self, /)\n--\n\nsmp_processor_id() of the calling thread." },
	{ "_cpu_hotplug", (PyCFunction)Kernel_cpu_hotplug, METH_VARARGS, "_cpu_hotplug($self, cpu, online, /)\n--\n\nCPU hotplug of a vCPU." },
	{ "cpu_is_online", (PyCFunction)Kernel_cpu_is_online, METH_O, "cpu_is_online($self, cpu, /)\n--\n\ncpu_is_online(cpu) -> bool." },
	{ "current_pid", (PyCFunction)Kernel_current_pid, METH_NOARGS, "current_pid($self, /)\n--\n\nThe calling thread's task id." },
	{ "set_comm", (PyCFunction)Kernel_set_comm, METH_O, "set_comm($self, comm, /)\n--\n\nSet the calling thread's task name." },
	{ "lock_bias_info", (PyCFunction)Kernel_lock_bias_info, METH_NOARGS, "lock_bias_info($self, /)\n--\n\nLock bias: threshold, grants, revocations." },
	{ "advance", (PyCFunction)Kernel_advance, METH_O, "advance($self, ns, /)\n--\n\nAdvance the virtual clock by ns, running due work." },
	{ "param", (PyCFunction)Kernel_param, METH_O, "param($self, name, /)\n--\n\nCurrent value of a boot parameter." },
	{ "alloc_pages", (PyCFunction)(void (*)(void))Kernel_alloc_pages, METH_VARARGS | METH_KEYWORDS, "alloc_pages($self, /, order=0, gfp=odebug._core.GFP_KERNEL)\n--\n\nalloc_pages(order, gfp) -> address, or None when the allocation fails." },
	{ "free_pages", (PyCFunction)(void (*)(void))Kernel_free_pages, METH_VARARGS | METH_KEYWORDS, "free_pages($self, /, addr, order=0)\n--\n\n__free_pages(addr, order)." },
	{ "raw", (PyCFunction)Kernel_raw, METH_VARARGS, "raw($self, addr, n, /)\n--\n\nUnchecked writable memoryview of n bytes of kernel memory at addr." },
	{ "fault_get", (PyCFunction)Kernel_fault_get, METH_O, "fault_get($self, name, /)\n--\n\nState of a fault_attr as a dict." },
	{ "fault_set", (PyCFunction)(void (*)(void))Kernel_fault_set, METH_VARARGS | METH_KEYWORDS, "fault_set($self, /, name, probability, interval=1, times=-1, space=0, verbose=0)\n--\n\nSet a fault_attr's knobs." },
	{ "fault_set_flag", (PyCFunction)Kernel_fault_set_flag, METH_VARARGS, "fault_set_flag($self, name, knob, value, /)\n--\n\nSet a fault_attr's debugfs extra knob." },
	{ "fault_get_flag", (PyCFunction)Kernel_fault_get_flag, METH_VARARGS, "fault_get_flag($self, name, knob, /)\n--\n\nA fault_attr's debugfs extra knob (an int; a bool knob reads 0 or 1)." },
	{ "dmesg", (PyCFunction)(void (*)(void))Kernel_dmesg, METH_VARARGS | METH_KEYWORDS, "dmesg($self, /, clear=False)\n--\n\nThe kernel log as text; clear=True empties it after reading." },
	{ "printk", (PyCFunction)Kernel_printk, METH_O, "printk($self, msg, /)\n--\n\nprintk a message." },
	{ "reports", (PyCFunction)Kernel_reports, METH_VARARGS, "reports($self, start=0, /)\n--\n\nReports from index start on." },
	{ "clear_reports", (PyCFunction)Kernel_clear_reports, METH_NOARGS, "clear_reports($self, /)\n--\n\nForget all reports." },
	{ "report", (PyCFunction)Kernel_report, METH_VARARGS, "report($self, subsystem, kind, text='', /)\n--\n\nPublish a report (subsystem, kind, text)." },
	{ "stack_save", (PyCFunction)Kernel_stack_save, METH_NOARGS, "stack_save($self, /)\n--\n\nstack_depot_save() of the calling context." },
	{ "stack_text", (PyCFunction)Kernel_stack_text, METH_O, "stack_text($self, handle, /)\n--\n\nA depot stack as the kernel prints it." },
	{ "work", (PyCFunction)Kernel_work, METH_VARARGS, "work($self, fn, name=None, /)\n--\n\nA delayed work item (Work) running fn(); name a str, or None for repr(fn)." },
	{ NULL }
};

static PyGetSetDef Kernel_getset[] = {
	{ "closed", (getter)Kernel_get_closed, NULL, NULL, NULL },
	{ "c_pointer", (getter)Kernel_get_c_pointer, NULL,
	  "The kernel's odb_kernel * as an int, for C code called from Python (valid while the kernel is open).", NULL },
	{ "hz", (getter)Kernel_get_hz, NULL, NULL, NULL },
	{ "jiffies", (getter)Kernel_get_jiffies, NULL, NULL, NULL },
	{ "now_ns", (getter)Kernel_get_now_ns, NULL, NULL, NULL },
	{ "nr_cpus", (getter)Kernel_get_nr_cpus, NULL, NULL, NULL },
	{ "config_nr_cpus", (getter)Kernel_get_config_nr_cpus, NULL, NULL, NULL },
	{ "totalram_pages", (getter)Kernel_get_totalram_pages, NULL, NULL, NULL },
	{ "nr_free_pages", (getter)Kernel_get_nr_free_pages, NULL, NULL, NULL },
	{ "arena_start", (getter)Kernel_get_arena_start, NULL, NULL, NULL },
	{ "arena_end", (getter)Kernel_get_arena_end, NULL, NULL, NULL },
	{ "report_count", (getter)Kernel_get_report_count, NULL, NULL, NULL },
	{ "reports_dropped", (getter)Kernel_get_reports_dropped, NULL, NULL, NULL },
	{ "stack_depot_count", (getter)Kernel_get_stack_depot_count, NULL, NULL, NULL },
	{ "clock", (getter)Kernel_get_clock, NULL, NULL, NULL },
	{ "cmdline", (getter)Kernel_get_cmdline, NULL, NULL, NULL },
	{ NULL }
};

static PyMemberDef Kernel_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET, offsetof(KernelObject, weakreflist), READONLY, NULL },
	{ NULL }
};

static PyType_Slot Kernel_slots[] = {
	{ Py_tp_new, Kernel_tp_new },
	{ Py_tp_init, Kernel_init },
	{ Py_tp_dealloc, Kernel_dealloc },
	{ Py_tp_traverse, Kernel_traverse },
	{ Py_tp_clear, Kernel_clear },
	{ Py_tp_methods, Kernel_methods },
	{ Py_tp_getset, Kernel_getset },
	{ Py_tp_members, Kernel_members },
	{ Py_tp_doc, "Kernel(cpus=2, ram=268435456, clock='virtual', seed=0, cmdline='', hz=0, nr_cpus=0,\n"
		    "       skip_prefix=None)\n--\n\n"
		    "The C kernel instance (use odebug.Kernel)." },
	{ 0, NULL }
};

static PyType_Spec Kernel_spec = {
	.name = "odebug._core.Kernel",
	.basicsize = sizeof(KernelObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.slots = Kernel_slots,
};

static PyMethodDef Work_methods[] = {
	{ "schedule", (PyCFunction)(void (*)(void))Work_schedule, METH_VARARGS | METH_KEYWORDS,
	  "schedule($self, /, delay=0)\n--\n\nschedule_delayed_work (delay in jiffies) -> bool; False if already pending." },
	{ "cancel", (PyCFunction)Work_cancel, METH_NOARGS, "cancel($self, /)\n--\n\ncancel_delayed_work_sync -> True if it was pending." },
	{ "flush", (PyCFunction)Work_flush, METH_NOARGS, "flush($self, /)\n--\n\nflush_delayed_work -> True if it ran or was waited for." },
	{ NULL }
};

static PyGetSetDef Work_getset[] = {
	{ "pending", (getter)Work_get_pending, NULL, NULL, NULL },
	{ "due", (getter)Work_get_due, NULL, "jiffies at which it falls due, None if not pending", NULL },
	{ NULL }
};

static PyType_Slot Work_slots[] = {
	{ Py_tp_dealloc, Work_dealloc },
	{ Py_tp_traverse, Work_traverse },
	{ Py_tp_clear, Work_clear },
	{ Py_tp_methods, Work_methods },
	{ Py_tp_getset, Work_getset },
	{ Py_tp_repr, Work_repr },
	{ Py_tp_doc, "A delayed work item on a kernel's workqueue." },
	{ 0, NULL }
};

static PyType_Spec Work_spec = {
	.name = "odebug._core.Work",
	.basicsize = sizeof(WorkObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Work_slots,
};

static PyType_Slot Raw_slots[] = {
	{ Py_bf_getbuffer, Raw_getbuffer },
	{ Py_tp_dealloc, Raw_dealloc },
	{ Py_tp_traverse, Raw_traverse },
	{ Py_tp_clear, Raw_clear },
	{ 0, NULL }
};

static PyType_Spec Raw_spec = {
	.name = "odebug._core.RawRegion",
	.basicsize = sizeof(RawObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Raw_slots,
};

/* ---- module ---------------------------------------------------------------------- */
static PyObject *set_report_factory(PyObject *module, PyObject *fn)
{
	core_state *st = get_state(module);

	if (fn != Py_None && !PyCallable_Check(fn))
		return PyErr_SetString(PyExc_TypeError, "report factory must be callable or None"), NULL;
	Py_XSETREF(st->report_factory, fn == Py_None ? NULL : Py_NewRef(fn));
	Py_RETURN_NONE;
}

/* Nanoseconds per call of the Python frame hook, called n times from here (the
 * calling Python frame is the one it names): bench.py's ``python`` section. */
static PyObject *frame_hook_ns(PyObject *module, PyObject *args)
{
	PyObject *kobj;
	Py_ssize_t n;
	KernelObject *ko;
	struct timespec t0, t1;
	char buf[256];
	size_t named = 0;

	if (!PyArg_ParseTuple(args, "On", &kobj, &n))
		return NULL;
	if (!(ko = odb_py_kernel(module, kobj, true)))
		return NULL;
	if (n <= 0)
		return PyErr_Format(ko->st->InvalidArgument, "n: must be > 0, not %zd", n), NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (Py_ssize_t i = 0; i < n; i++)
		named += py_frame_hook(ko, buf, sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (named != (size_t)n)
		return PyErr_Format(PyExc_RuntimeError, "the hook named no Python caller"), NULL;
	return PyFloat_FromDouble(((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
				   (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n);
}

static PyObject *build_info(PyObject *module, PyObject *unused)
{
	return Py_BuildValue("{s:s,s:i,s:i,s:K,s:K}",
#if defined(__SANITIZE_ADDRESS__)
			     "sanitizer", "address",
#elif defined(__SANITIZE_THREAD__)
			     "sanitizer", "thread",
#else
			     "sanitizer", "",
#endif
			     "max_cpus", ODB_MAX_CPUS, "max_order", ODB_MAX_ORDER,
			     "page_offset", (unsigned long long)ODB_PAGE_OFFSET,
			     "vmalloc_start", (unsigned long long)ODB_VMALLOC_START);
}

static PyMethodDef module_methods[] = {
	{ "_set_report_factory", set_report_factory, METH_O, "_set_report_factory($module, factory, /)\n--\n\nSet the callable that turns report dicts into Reports (None: plain dicts)." },
	{ "_frame_hook_ns", frame_hook_ns, METH_VARARGS, "_frame_hook_ns($module, kernel, n, /)\n--\n\nNanoseconds per call of the Python frame hook, called n times (a benchmark)." },
	{ "_build_info", build_info, METH_NOARGS, "_build_info($module, /)\n--\n\nBuild facts: sanitizer, limits." },
	{ NULL }
};

static int add_exc(PyObject *m, PyObject **slot, const char *name, PyObject *bases, const char *doc)
{
	*slot = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
	if (!*slot)
		return -1;
	return PyModule_AddObjectRef(m, strrchr(name, '.') + 1, *slot);
}

static int core_exec(PyObject *m)
{
	core_state *st = get_state(m);
	PyObject *b;
	int ret;

	st->KernelType = PyType_FromModuleAndSpec(m, &Kernel_spec, NULL);
	st->WorkType = PyType_FromModuleAndSpec(m, &Work_spec, NULL);
	st->RawType = PyType_FromModuleAndSpec(m, &Raw_spec, NULL);
	if (!st->KernelType || !st->WorkType || !st->RawType)
		return -1;
	for (size_t i = 0; odb_py_rooms[i]; i++)
		if (odb_py_rooms[i](m, st))
			return -1;
	if (PyModule_AddObjectRef(m, "Kernel", st->KernelType) ||
	    PyModule_AddObjectRef(m, "Work", st->WorkType))
		return -1;
	if (add_exc(m, &st->Error, "odebug.Error", NULL, "Base class of odebug's errors."))
		return -1;
	b = PyTuple_Pack(2, st->Error, PyExc_ValueError);
	ret = b ? add_exc(m, &st->InvalidArgument, "odebug.InvalidArgument", b,
			  "A bad argument (also a ValueError).") : -1;
	Py_XDECREF(b);
	if (ret)
		return -1;
	b = PyTuple_Pack(2, st->Error, PyExc_RuntimeError);
	ret = b ? add_exc(m, &st->ClosedError, "odebug.ClosedError", b, "The kernel is closed.") : -1;
	if (!ret)
		ret = add_exc(m, &st->StateError, "odebug.StateError", b, "Call not valid in this state.");
	Py_XDECREF(b);
	if (ret)
		return -1;
	b = PyTuple_Pack(2, st->Error, PyExc_LookupError);
	ret = b ? add_exc(m, &st->NotFound, "odebug.NotFound", b, "No such object.") : -1;
	Py_XDECREF(b);
	if (ret)
		return -1;
	if (add_exc(m, &st->KernelBug, "odebug.KernelBug", st->Error,
		    "A kernel report under panic_on_warn / kasan.fault=panic; .report holds it."))
		return -1;
#define ADD_INT(name, v) if (PyModule_AddIntConstant(m, name, v)) return -1
	ADD_INT("GFP_KERNEL", ODB_GFP_KERNEL);
	ADD_INT("GFP_ATOMIC", ODB_GFP_ATOMIC);
	ADD_INT("GFP_NOWAIT", ODB_GFP_NOWAIT);
	ADD_INT("__GFP_ZERO", ODB_GFP_ZERO);
	ADD_INT("__GFP_NOWARN", ODB_GFP_NOWARN);
	ADD_INT("__GFP_NOFAIL", ODB_GFP_NOFAIL);
	ADD_INT("__GFP_HIGHMEM", ODB_GFP_HIGHMEM);
	ADD_INT("__GFP_DIRECT_RECLAIM", ODB_GFP_DIRECT_RECLAIM);
	ADD_INT("PAGE_SIZE", (long)ODB_PAGE_SIZE);
	ADD_INT("PAGE_SHIFT", ODB_PAGE_SHIFT);
	ADD_INT("MAX_PAGE_ORDER", ODB_MAX_ORDER);
#undef ADD_INT
	return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg)
{
	core_state *st = get_state(m);
	Py_VISIT(st->KernelType);
	Py_VISIT(st->WorkType);
	Py_VISIT(st->RawType);
	Py_VISIT(st->CacheType);
	Py_VISIT(st->MempoolType);
	Py_VISIT(st->StrategyType);
	Py_VISIT(st->Error);
	Py_VISIT(st->InvalidArgument);
	Py_VISIT(st->ClosedError);
	Py_VISIT(st->StateError);
	Py_VISIT(st->NotFound);
	Py_VISIT(st->KernelBug);
	Py_VISIT(st->report_factory);
	Py_VISIT(st->kernel_subtype);
	return 0;
}

static int core_clear(PyObject *m)
{
	core_state *st = get_state(m);
	Py_CLEAR(st->KernelType);
	Py_CLEAR(st->WorkType);
	Py_CLEAR(st->RawType);
	Py_CLEAR(st->CacheType);
	Py_CLEAR(st->MempoolType);
	Py_CLEAR(st->StrategyType);
	Py_CLEAR(st->Error);
	Py_CLEAR(st->InvalidArgument);
	Py_CLEAR(st->ClosedError);
	Py_CLEAR(st->StateError);
	Py_CLEAR(st->NotFound);
	Py_CLEAR(st->KernelBug);
	Py_CLEAR(st->report_factory);
	Py_CLEAR(st->kernel_subtype);
	return 0;
}

static void core_free(void *m) { core_clear((PyObject *)m); }

static PyModuleDef_Slot core_slots[] = {
	{ Py_mod_exec, core_exec },
#ifdef Py_mod_multiple_interpreters
	{ Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED },
#endif
	{ 0, NULL }
};

static PyModuleDef core_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "odebug._core",
	.m_doc = "The CPython binding of odebug's C core.",
	.m_size = sizeof(core_state),
	.m_methods = module_methods,
	.m_slots = core_slots,
	.m_traverse = core_traverse,
	.m_clear = core_clear,
	.m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
	return PyModuleDef_Init(&core_module);
}
