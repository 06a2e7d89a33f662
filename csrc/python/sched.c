/*
 * Binding of the controlled scheduler: strategy objects, spawning Python
 * callables as tasks, runs, the trace hash.  odebug/sched.py wraps these.
 *
 * A Python task is a core task whose function takes the interpreter lock,
 * calls the callable and keeps its exception in the task's box (a list
 * [callable, exception]).  The scheduler's hooks give the interpreter lock up
 * while a thread waits for its turn and take it back when its turn comes, so
 * tasks that call into the kernel with the lock held switch freely.
 */
#include "python/binding.h"

typedef struct {
	PyObject_HEAD
	odb_sched_strategy *s;
	int busy;                 /* a run is using it */
} StrategyObject;

static PyObject *strategy_type(PyObject *m)
{
	return Py_NewRef(get_state(m)->StrategyType);
}

static PyObject *wrap_strategy(PyObject *m, odb_sched_strategy *s)
{
	PyObject *tp;
	StrategyObject *o;

	if (!s)
		return PyErr_NoMemory();
	tp = strategy_type(m);
	if (!tp) {
		odb_sched_strategy_free(s);
		return NULL;
	}
	o = PyObject_New(StrategyObject, (PyTypeObject *)tp);
	Py_DECREF(tp);
	if (!o) {
		odb_sched_strategy_free(s);
		return NULL;
	}
	o->s = s;
	o->busy = 0;
	return (PyObject *)o;
}

static void Strategy_dealloc(StrategyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	odb_sched_strategy_free(self->s);
	tp->tp_free(self);
	Py_DECREF(tp);
}

static PyObject *Strategy_next(StrategyObject *self, PyObject *unused)
{
	if (self->busy)
		return PyErr_SetString(PyExc_RuntimeError, "the strategy is driving a run"), NULL;
	return odb_py_checked(PyBool_FromLong(odb_sched_strategy_next(self->s)));
}

static PyObject *Strategy_info(StrategyObject *self, PyObject *unused)
{
	struct odb_sched_strategy_info i;

	odb_sched_strategy_info(self->s, &i);
	return Py_BuildValue("{s:s,s:K,s:K,s:I,s:O,s:K}", "kind", i.kind,
			     "runs", (unsigned long long)i.runs, "distinct", (unsigned long long)i.distinct,
			     "bound", i.bound, "exhausted", i.exhausted ? Py_True : Py_False,
			     "steps", (unsigned long long)i.steps);
}

static PyMethodDef Strategy_methods[] = {
	{ "next", (PyCFunction)Strategy_next, METH_NOARGS,
	  "next($self, /)\n--\n\nMove to the next schedule; False when there is none." },
	{ "info", (PyCFunction)Strategy_info, METH_NOARGS,
	  "info($self, /)\n--\n\nkind, runs, distinct schedules, dfs bound and exhaustion, pct steps." },
	{ NULL }
};

static PyType_Slot Strategy_slots[] = {
	{ Py_tp_dealloc, Strategy_dealloc },
	{ Py_tp_methods, Strategy_methods },
	{ Py_tp_doc, "A scheduling strategy of the controlled scheduler (see odebug.sched)." },
	{ 0, NULL }
};

static PyType_Spec Strategy_spec = {
	.name = "odebug._core.SchedStrategy",
	.basicsize = sizeof(StrategyObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = Strategy_slots,
};

/* ---- constructors ------------------------------------------------------------------ */
static PyObject *py_sched_random(PyObject *m, PyObject *args)
{
	unsigned long long seed = 0;

	if (!PyArg_ParseTuple(args, "|K", &seed))
		return NULL;
	return wrap_strategy(m, odb_sched_random(seed));
}

static PyObject *py_sched_pct(PyObject *m, PyObject *args)
{
	unsigned long long seed = 0, steps = 0;
	unsigned int depth = 2;

	if (!PyArg_ParseTuple(args, "|KIK", &seed, &depth, &steps))
		return NULL;
	if (depth < 1 || depth > 17)
		return PyErr_Format(PyExc_ValueError, "pct: depth must be 1..17, not %u", depth), NULL;
	return wrap_strategy(m, odb_sched_pct(seed, depth, steps));
}

static PyObject *py_sched_dfs(PyObject *m, PyObject *args)
{
	unsigned int bound = 2;

	if (!PyArg_ParseTuple(args, "|I", &bound))
		return NULL;
	return wrap_strategy(m, odb_sched_dfs(bound));
}

static PyObject *py_sched_replay(PyObject *m, PyObject *args)
{
	const char *text;
	unsigned long long seed = 0;
	char err[200];
	odb_sched_strategy *s;

	if (!PyArg_ParseTuple(args, "s|K", &text, &seed))
		return NULL;
	s = odb_sched_replay(text, seed, err, sizeof(err));
	if (!s)
		return PyErr_SetString(PyExc_ValueError, err[0] ? err : "schedule: out of memory"), NULL;
	return wrap_strategy(m, s);
}

static PyObject *py_sched_preemptions(PyObject *m, PyObject *args)
{
	PyObject *seq, *fast;
	Py_ssize_t n;
	uint64_t *gaps;
	uint32_t *whos;
	odb_sched_strategy *s;

	if (!PyArg_ParseTuple(args, "O", &seq))
		return NULL;
	fast = PySequence_Fast(seq, "preemptions: expected a sequence of (gap, who) pairs");
	if (!fast)
		return NULL;
	n = PySequence_Fast_GET_SIZE(fast);
	gaps = PyMem_Calloc((size_t)n + 1, sizeof(*gaps));
	whos = PyMem_Calloc((size_t)n + 1, sizeof(*whos));
	if (!gaps || !whos) {
		Py_DECREF(fast);
		PyMem_Free(gaps);
		PyMem_Free(whos);
		return PyErr_NoMemory();
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		unsigned long long g;
		unsigned int w;

		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "KI;preemptions: each item is "
				      "(gap, who), two non-negative ints", &g, &w)) {
			Py_DECREF(fast);
			PyMem_Free(gaps);
			PyMem_Free(whos);
			return NULL;
		}
		gaps[i] = g;
		whos[i] = w;
	}
	Py_DECREF(fast);
	s = odb_sched_preemptions(gaps, whos, (size_t)n);
	PyMem_Free(gaps);
	PyMem_Free(whos);
	return wrap_strategy(m, s);
}

/* ---- tasks -------------------------------------------------------------------------- */
/* box: [callable, exception or None]; the task owns a reference until it returns. */
static void py_task_trampoline(odb_kernel *k, void *arg)
{
	PyObject *box = arg, *fn, *r;
	PyGILState_STATE g = PyGILState_Ensure();

	(void)k;
	fn = Py_NewRef(PyList_GET_ITEM(box, 0));
	r = PyObject_CallNoArgs(fn);
	if (!r) {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		PyErr_NormalizeException(&t, &v, &tb);
		if (tb && v)
			PyException_SetTraceback(v, tb);
		if (v)
			PyList_SetItem(box, 1, Py_NewRef(v));   /* steals the new reference */
		Py_XDECREF(t);
		Py_XDECREF(v);
		Py_XDECREF(tb);
	}
	Py_XDECREF(r);
	Py_DECREF(fn);
	Py_DECREF(box);
	PyGILState_Release(g);
}

static PyObject *py_sched_spawn(PyObject *m, PyObject *args)
{
	PyObject *kobj, *box;
	KernelObject *ko;
	int cpu = -1, ret;
	const char *name = NULL;

	if (!PyArg_ParseTuple(args, "OO!|iz", &kobj, &PyList_Type, &box, &cpu, &name))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (PyList_GET_SIZE(box) != 2 || !PyCallable_Check(PyList_GET_ITEM(box, 0)))
		return PyErr_SetString(PyExc_TypeError, "spawn: box must be [callable, None]"), NULL;
	Py_INCREF(box);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_sched_spawn(ko->k, py_task_trampoline, box, cpu, name);
	Py_END_ALLOW_THREADS
	if (ret < 0) {
		Py_DECREF(box);
		return odb_raise(ko, ret);
	}
	return odb_py_checked(PyLong_FromLong(ret));
}

static PyObject *py_sched_run(PyObject *m, PyObject *args)
{
	PyObject *kobj, *so, *d = NULL, *ev = Py_None, *pairs;
	KernelObject *ko;
	StrategyObject *sobj = NULL;
	struct odb_sched_run_opts opts = { 0 };
	struct odb_sched_result r;
	unsigned int timeout_ms = 0;
	int record = 0, ret;
	PyObject *tp;

	if (!PyArg_ParseTuple(args, "OO|Ip", &kobj, &so, &timeout_ms, &record))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	if (so != Py_None) {
		tp = strategy_type(m);
		if (!tp)
			return NULL;
		if (!PyObject_TypeCheck(so, (PyTypeObject *)tp)) {
			Py_DECREF(tp);
			return PyErr_Format(PyExc_TypeError, "run: expected a scheduler from odebug.sched, not %.100s",
					    Py_TYPE(so)->tp_name), NULL;
		}
		Py_DECREF(tp);
		sobj = (StrategyObject *)so;
		if (sobj->busy)
			return PyErr_SetString(PyExc_RuntimeError, "run: the scheduler drives another run"), NULL;
		sobj->busy = 1;
	}
	opts.timeout_ms = timeout_ms;
	opts.record = record;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_sched_run(ko->k, sobj ? sobj->s : NULL, &opts, &r);
	Py_END_ALLOW_THREADS
	if (sobj)
		sobj->busy = 0;
	if (ret) {
		odb_free(r.schedule);
		odb_free(r.events);
		odb_free(r.gaps);
		odb_free(r.whos);
		return odb_raise(ko, ret);
	}
	pairs = PyList_New((Py_ssize_t)r.npairs);
	for (size_t i = 0; pairs && i < r.npairs; i++) {
		PyObject *t = Py_BuildValue("(KI)", (unsigned long long)r.gaps[i], r.whos[i]);

		if (!t) {
			Py_CLEAR(pairs);
			break;
		}
		PyList_SET_ITEM(pairs, (Py_ssize_t)i, t);
	}
	if (record) {
		ev = PyList_New((Py_ssize_t)r.nevents);
		for (size_t i = 0; ev && i < r.nevents; i++) {
			struct odb_sched_event *e = &r.events[i];
			PyObject *t = Py_BuildValue("(IiIII)", e->task, e->cpu, e->site, e->next, e->flags);

			if (!t) {
				Py_CLEAR(ev);
				break;
			}
			PyList_SET_ITEM(ev, (Py_ssize_t)i, t);
		}
	} else {
		Py_INCREF(ev);
	}
	if (ev && pairs)
		d = Py_BuildValue("{s:i,s:I,s:K,s:K,s:K,s:K,s:K,s:L,s:s,s:s,s:N,s:N}", "status", r.status,
				  "tasks", r.tasks, "points", (unsigned long long)r.points,
				  "decisions", (unsigned long long)r.decisions,
				  "preemptions", (unsigned long long)r.preemptions,
				  "switches", (unsigned long long)r.switches,
				  "trace_hash", (unsigned long long)r.trace_hash,
				  "diverged_at", (long long)r.diverged_at, "divergence", r.divergence,
				  "schedule", r.schedule ? r.schedule : "", "events", ev, "pairs", pairs);
	else {
		Py_XDECREF(ev);
		Py_XDECREF(pairs);
	}
	odb_free(r.schedule);
	odb_free(r.events);
	odb_free(r.gaps);
	odb_free(r.whos);
	return d;
}

static PyObject *py_sched_trace_hash(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, false)))
		return NULL;
	return odb_py_checked(PyLong_FromUnsignedLongLong(odb_sched_trace_hash(ko->k)));
}

static PyObject *py_sched_site_info(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;
	unsigned int id, line, kind;
	const char *what, *file;
	int ret;

	if (!PyArg_ParseTuple(args, "OI", &kobj, &id))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, false)))
		return NULL;
	ret = odb_sched_site_info(ko->k, id, &what, &file, &line, &kind);
	if (ret)
		return odb_raise(ko, ret);
	return Py_BuildValue("(ssII)", what, file, line, kind);
}

static PyMethodDef sched_methods[] = {
	{ "sched_random", py_sched_random, METH_VARARGS, "sched_random($module, seed=0, /)\n--\n\nA random scheduling strategy." },
	{ "sched_pct", py_sched_pct, METH_VARARGS, "sched_pct($module, seed=0, depth=2, steps=0, /)\n--\n\nA PCT scheduling strategy." },
	{ "sched_dfs", py_sched_dfs, METH_VARARGS, "sched_dfs($module, bound=2, /)\n--\n\nA bounded depth-first scheduling strategy." },
	{ "sched_replay", py_sched_replay, METH_VARARGS, "sched_replay($module, text, seed=0, /)\n--\n\nA strategy replaying a recorded schedule." },
	{ "sched_preemptions", py_sched_preemptions, METH_VARARGS,
	  "sched_preemptions($module, preemptions, /)\n--\n\nA strategy of [(gap, who), ...] preemptions." },
	{ "sched_spawn", py_sched_spawn, METH_VARARGS,
	  "sched_spawn($module, kernel, box, cpu=-1, name=None, /)\n--\n\nSpawn a task -> task id; box = [callable, None]." },
	{ "sched_run", py_sched_run, METH_VARARGS,
	  "sched_run($module, kernel, strategy, timeout_ms=0, record=False, /)\n--\n\nRun the spawned tasks under strategy (or None) -> dict." },
	{ "sched_trace_hash", py_sched_trace_hash, METH_VARARGS, "sched_trace_hash($module, kernel, /)\n--\n\nHash of the last run's trace." },
	{ "sched_site_info", py_sched_site_info, METH_VARARGS,
	  "sched_site_info($module, kernel, site, /)\n--\n\n(what, file, line, kind) of a scheduling site." },
	{ NULL }
};

/* ---- the interpreter lock around the scheduler's waits ------------------------------------ */
static void gil_before(void *ctx, void **cookie)
{
	(void)ctx;
	*cookie = PyGILState_Check() ? (void *)PyEval_SaveThread() : NULL;
}

static void gil_after(void *ctx, void *cookie)
{
	(void)ctx;
	if (cookie)
		PyEval_RestoreThread(cookie);
}

void odb_py_sched_hooks(odb_kernel *k)
{
	odb_sched_set_hooks(k, gil_before, gil_after, NULL);
}

int odb_py_sched_init(PyObject *module, core_state *st)
{
	st->StrategyType = PyType_FromModuleAndSpec(module, &Strategy_spec, NULL);
	if (!st->StrategyType || PyModule_AddObjectRef(module, "SchedStrategy", st->StrategyType))
		return -1;
	if (PyModule_AddIntConstant(module, "SCHED_DONE", ODB_SCHED_DONE) ||
	    PyModule_AddIntConstant(module, "SCHED_DEADLOCK", ODB_SCHED_DEADLOCK) ||
	    PyModule_AddIntConstant(module, "SCHED_STALL", ODB_SCHED_STALL) ||
	    PyModule_AddIntConstant(module, "SCHED_MAX_TASKS", ODB_SCHED_MAX_TASKS) ||
	    PyModule_AddIntConstant(module, "SCHED_EV_DECISION", ODB_SCHED_EV_DECISION) ||
	    PyModule_AddIntConstant(module, "SCHED_EV_PREEMPT", ODB_SCHED_EV_PREEMPT) ||
	    PyModule_AddIntConstant(module, "SCHED_EV_BLOCK", ODB_SCHED_EV_BLOCK) ||
	    PyModule_AddIntConstant(module, "SCHED_EV_END", ODB_SCHED_EV_END))
		return -1;
	return PyModule_AddFunctions(module, sched_methods);
}
