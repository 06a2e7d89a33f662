/*
 * Binding of KASAN: checked accesses (read/write/memset/memcpy), the shadow,
 * counters, the quarantine's stats and controls, its geometry, and the
 * quarantine storm scenario.  Module functions take the Kernel first.
 * Accesses keep the GIL up to 64 KiB (the Python caller then appears in the
 * report's stack); larger ones and the O(n) calls release it.
 */
#include <limits.h>

#include "python/binding.h"

#define GIL_LIMIT (64u << 10)

static int conv_addr(PyObject *o, void *out)
{
	unsigned long long v;

	if (PyLong_CheckExact(o) && _PyLong_Sign(o) >= 0 && _PyLong_NumBits(o) <= 64) {
		*(unsigned long long *)out = PyLong_AsUnsignedLongLongMask(o);   /* exact */
		return 1;
	}
	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "addr: expected int, not %.100s", Py_TYPE(o)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "addr: %R is not a 64-bit address", o);
		return 0;
	}
	*(unsigned long long *)out = v;
	return 1;
}

/* a size: 0..PY_SSIZE_T_MAX, else odebug.InvalidArgument (negative or >= 2**63:
 * never a bare OverflowError) */
static int conv_size(PyObject *o, void *out)
{
	Py_ssize_t v;

	if (!odb_conv_size(o, &v))
		return 0;
	*(size_t *)out = (size_t)v;
	return 1;
}

/* memcpy/memmove sizes: any 64-bit value, as size_t (kmalloc_memmove_negative_size) */
static int conv_u64size(PyObject *o, void *out)
{
	int overflow = 0;
	long long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "size: expected int, not %.100s", Py_TYPE(o)->tp_name);
		return 0;
	}
	v = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (!overflow) {
		if (v == -1 && PyErr_Occurred())
			return 0;
		*(size_t *)out = (size_t)v;      /* negative: as size_t, e.g. (size_t)-2 */
		return 1;
	}
	if (overflow > 0) {
		unsigned long long u = PyLong_AsUnsignedLongLong(o);
		if (u == (unsigned long long)-1 && PyErr_Occurred())
			return 0;
		*(size_t *)out = (size_t)u;
		return 1;
	}
	PyErr_SetString(PyExc_ValueError, "size: out of range");
	return 0;
}

#define GET_KERNEL(m, obj, ko) \
	do { if (!((ko) = odb_py_kernel((m), (obj), true))) return NULL; } while (0)

/* (a vector call: the fuzzers' most frequent access, issue 16) */
static PyObject *py_kasan_read(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *res;
	unsigned long long addr;
	size_t n;
	KernelObject *ko;
	int ret;

	if (!odb_py_nargs(nargs, 3) || !conv_addr(args[1], &addr) || !conv_size(args[2], &n))
		return NULL;
	GET_KERNEL(m, args[0], ko);
	{
		/* only the bytes that exist (RAM, an area's mapped pages) are
		 * allocated and returned (the check and its report cover all n) */
		size_t avail = odb_backed(ko->k, addr, n), got = 0;

		res = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)avail);
		if (!res)
			return NULL;
		if (n > GIL_LIMIT) {
			Py_BEGIN_ALLOW_THREADS
			ret = odb_kasan_read_some(ko->k, addr, n, PyBytes_AS_STRING(res), avail, &got);
			Py_END_ALLOW_THREADS
		} else {
			ret = odb_kasan_read_some(ko->k, addr, n, PyBytes_AS_STRING(res), avail, &got);
		}
		if (ret) {
			Py_DECREF(res);
			return odb_raise(ko, ret);
		}
		if ((Py_ssize_t)got != PyBytes_GET_SIZE(res) && _PyBytes_Resize(&res, (Py_ssize_t)got))
			return NULL;
	}
	return res;
}

static PyObject *py_kasan_write(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	Py_buffer buf;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&y*", &kobj, conv_addr, &addr, &buf))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true))) {
		PyBuffer_Release(&buf);
		return NULL;
	}
	if ((size_t)buf.len > GIL_LIMIT) {
		Py_BEGIN_ALLOW_THREADS
		ret = odb_kasan_write(ko->k, addr, buf.buf, (size_t)buf.len);
		Py_END_ALLOW_THREADS
	} else {
		ret = odb_kasan_write(ko->k, addr, buf.buf, (size_t)buf.len);
	}
	PyBuffer_Release(&buf);
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_memset(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	int c;
	size_t n;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&iO&", &kobj, conv_addr, &addr, &c, conv_size, &n))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (n > GIL_LIMIT) {
		Py_BEGIN_ALLOW_THREADS
		ret = odb_kasan_memset(ko->k, addr, c, n);
		Py_END_ALLOW_THREADS
	} else {
		ret = odb_kasan_memset(ko->k, addr, c, n);
	}
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *copy_common(PyObject *m, PyObject *args, bool move)
{
	PyObject *kobj;
	unsigned long long dst, src;
	size_t n;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&O&", &kobj, conv_addr, &dst, conv_addr, &src,
			      conv_u64size, &n))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (n > GIL_LIMIT && n < ((size_t)1 << 40)) {
		Py_BEGIN_ALLOW_THREADS
		ret = move ? odb_kasan_memmove(ko->k, dst, src, n) : odb_kasan_memcpy(ko->k, dst, src, n);
		Py_END_ALLOW_THREADS
	} else {
		ret = move ? odb_kasan_memmove(ko->k, dst, src, n) : odb_kasan_memcpy(ko->k, dst, src, n);
	}
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_memcpy(PyObject *m, PyObject *args) { return copy_common(m, args, false); }
static PyObject *py_kasan_memmove(PyObject *m, PyObject *args) { return copy_common(m, args, true); }

static PyObject *py_kasan_check(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	size_t n;
	int write;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&p", &kobj, conv_addr, &addr, conv_u64size, &n, &write))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	ret = write ? odb_kasan_check_write(ko->k, addr, n) : odb_kasan_check_read(ko->k, addr, n);
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_check_byte(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	KernelObject *ko;
	bool ok;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&", &kobj, conv_addr, &addr))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	ret = odb_kasan_check_byte(ko->k, addr, &ok);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyBool_FromLong(ok));
}

static PyObject *py_kasan_shadow(PyObject *m, PyObject *args)
{
	PyObject *kobj, *res;
	unsigned long long addr;
	size_t n, cnt = 0;
	KernelObject *ko;
	uint8_t *buf;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, conv_addr, &addr, conv_size, &n))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (n > ((size_t)1 << 40))
		return PyErr_Format(PyExc_ValueError, "kasan.shadow: size %zu too large", n), NULL;
	{
		/* a range outside the arena and vmalloc space is refused by the
		 * core before any copy: no host buffer for it */
		unsigned long long lo = odb_arena_start(ko->k), hi = odb_arena_end(ko->k);
		unsigned long long vlo = odb_vmalloc_start(ko->k), vhi = odb_vmalloc_end(ko->k);
		uint8_t none[1];

		if ((addr < lo || addr > hi || n > hi - addr) &&
		    (addr < vlo || addr > vhi || n > vhi - addr)) {
			ret = odb_kasan_shadow(ko->k, addr, n, none, &cnt);
			return ret ? odb_raise(ko, ret) : PyBytes_FromStringAndSize(NULL, 0);
		}
	}
	buf = PyMem_Malloc(n / 8 + 2);
	if (!buf)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_shadow(ko->k, addr, n, buf, &cnt);
	Py_END_ALLOW_THREADS
	if (ret) {
		PyMem_Free(buf);
		return odb_raise(ko, ret);
	}
	res = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)cnt);
	PyMem_Free(buf);
	return res;
}

static PyObject *py_kasan_set_multi_shot(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;
	int on, ret;
	bool old;

	if (!PyArg_ParseTuple(args, "Op", &kobj, &on))
		return NULL;
	ko = odb_py_kernel(m, kobj, true);
	if (!ko)
		return NULL;
	ret = odb_kasan_set_multi_shot(ko->k, on, &old);
	if (ret)
		return odb_raise(ko, ret);
	return PyBool_FromLong(old);
}

static PyObject *py_kasan_counters(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;
	struct odb_kasan_counters c;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	if (!(ko = odb_py_kernel(m, kobj, true)))
		return NULL;
	odb_kasan_counters(ko->k, &c);
	return Py_BuildValue("{s:O,s:O,s:O,s:K,s:K,s:K}", "enabled", c.enabled ? Py_True : Py_False,
			     "multi_shot", c.multi_shot ? Py_True : Py_False,
			     "fault_panic", c.fault_panic ? Py_True : Py_False,
			     "detections", (unsigned long long)c.detections,
			     "reports", (unsigned long long)c.reports,
			     "suppressed", (unsigned long long)c.suppressed);
}

static PyObject *hist_list(const uint64_t *h)
{
	PyObject *l = PyList_New(ODB_QHIST);

	if (!l)
		return NULL;
	for (Py_ssize_t i = 0; i < ODB_QHIST; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(h[i]);
		if (!v) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, i, v);
	}
	return l;
}

#define SETK(d, name, v) \
	do { PyObject *o_ = PyLong_FromUnsignedLongLong((unsigned long long)(v)); \
	     if (!o_ || PyDict_SetItemString(d, name, o_)) { Py_XDECREF(o_); goto fail; } \
	     Py_DECREF(o_); } while (0)
#define SETO(d, name, o) \
	do { PyObject *o_ = (o); \
	     if (!o_ || PyDict_SetItemString(d, name, o_)) { Py_XDECREF(o_); goto fail; } \
	     Py_DECREF(o_); } while (0)

static PyObject *py_kasan_quarantine_stats(PyObject *m, PyObject *args)
{
	PyObject *kobj, *d = NULL, *pc = NULL;
	KernelObject *ko;
	struct odb_quarantine_stats s;
	uint64_t *percpu;
	unsigned int n;
	int ret;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	n = odb_nr_cpus(ko->k);
	percpu = PyMem_Calloc(n, sizeof(*percpu));
	if (!percpu)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_quarantine_stats(ko->k, &s, percpu);
	Py_END_ALLOW_THREADS
	if (ret) {
		PyMem_Free(percpu);
		return odb_raise(ko, ret);
	}
	if (!(d = PyDict_New()) || !(pc = PyList_New(n)))
		goto fail;
	for (unsigned int i = 0; i < n; i++) {
		PyObject *v = PyLong_FromUnsignedLongLong(percpu[i]);
		if (!v)
			goto fail;
		PyList_SET_ITEM(pc, i, v);
	}
	SETO(d, "policy", PyUnicode_FromString(s.policy ? "quarter" : "batched"));
	SETK(d, "size", s.size);
	SETK(d, "max_size", s.max_size);
	SETK(d, "batch_size", s.batch_size);
	SETK(d, "batches", s.batches);
	SETK(d, "head", s.head);
	SETK(d, "tail", s.tail);
	SETK(d, "slots_used", s.slots_used);
	SETK(d, "ring_bytes", s.ring_bytes);
	SETO(d, "percpu_bytes", pc);
	pc = NULL;
	SETK(d, "percpu_total", s.percpu_total);
	SETK(d, "put_calls", s.put_calls);
	SETK(d, "put_refused", s.put_refused);
	SETK(d, "flushes", s.flushes);
	SETK(d, "reduce_calls", s.reduce_calls);
	SETK(d, "reduce_slow", s.reduce_slow);
	SETK(d, "reduce_evicting", s.reduce_evicting);
	SETK(d, "evicted_objects", s.evicted_objects);
	SETK(d, "evicted_bytes", s.evicted_bytes);
	SETK(d, "max_evict_bytes", s.max_evict_bytes);
	SETK(d, "max_evict_objects", s.max_evict_objects);
	SETO(d, "evict_bytes_hist", hist_list(s.evict_bytes_hist));
	SETO(d, "evict_objects_hist", hist_list(s.evict_objects_hist));
	SETK(d, "free_ns_max", s.free_ns_max);
	SETK(d, "free_ns_p50", s.free_ns_p50);
	SETK(d, "free_ns_p99", s.free_ns_p99);
	SETK(d, "free_ns_total", s.free_ns_total);
	SETK(d, "lock_ns_max", s.lock_ns_max);
	SETK(d, "lock_ns_p50", s.lock_ns_p50);
	SETK(d, "lock_ns_p99", s.lock_ns_p99);
	SETK(d, "lock_ns_total", s.lock_ns_total);
	SETK(d, "lock_waits", s.lock_waits);
	SETK(d, "lock_wait_ns_total", s.lock_wait_ns_total);
	SETK(d, "lock_wait_ns_max", s.lock_wait_ns_max);
	SETK(d, "remove_cache_calls", s.remove_cache_calls);
	SETK(d, "remove_cache_objects", s.remove_cache_objects);
	SETK(d, "offline_objects", s.offline_objects);
	SETK(d, "in_flight", s.in_flight);
	SETK(d, "peak_total", s.peak_total);
	PyMem_Free(percpu);
	return d;
fail:
	PyMem_Free(percpu);
	Py_XDECREF(pc);
	Py_XDECREF(d);
	return NULL;
}

static PyObject *simple_call(PyObject *m, PyObject *args, int (*fn)(odb_kernel *))
{
	PyObject *kobj;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	Py_BEGIN_ALLOW_THREADS
	ret = fn(ko->k);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_quarantine_reduce(PyObject *m, PyObject *args)
{
	return simple_call(m, args, odb_kasan_quarantine_reduce);
}

static PyObject *py_kasan_quarantine_drain(PyObject *m, PyObject *args)
{
	return simple_call(m, args, odb_kasan_quarantine_drain);
}

/* {cache name: (objects, bytes)} of what the quarantine holds now; objects of a
 * cache not listed (none, normally) under None. */
static PyObject *py_kasan_quarantine_count(PyObject *m, PyObject *args)
{
	PyObject *kobj, *d = NULL, *names = NULL;
	KernelObject *ko;
	odb_cache **caches = NULL;
	uint64_t *objs = NULL, *bytes = NULL, other[2];
	size_t n, nl, cap, lcap;
	int ret;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	/* the listed caches, then the zombies (destroyed with objects remaining):
	 * their objects may sit in the quarantine legitimately */
	lcap = odb_kmem_cache_list(ko->k, NULL, 0) + 1;
	cap = lcap + odb_kmem_cache_zombies(ko->k, NULL, 0) + 1;
	caches = PyMem_Calloc(cap, sizeof(*caches));
	objs = PyMem_Calloc(cap, sizeof(*objs));
	bytes = PyMem_Calloc(cap, sizeof(*bytes));
	if (!caches || !objs || !bytes) {
		PyErr_NoMemory();
		goto out;
	}
	nl = odb_kmem_cache_list(ko->k, caches, lcap);
	if (nl > lcap)
		nl = lcap;
	n = nl + odb_kmem_cache_zombies(ko->k, caches + nl, cap - nl);
	if (n > cap)
		n = cap;
	/* names first: the walk below only compares the cache pointers */
	if (!(names = PyList_New((Py_ssize_t)n)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct odb_cache_info info;
		PyObject *v;

		if (odb_kmem_cache_info(ko->k, caches[i], &info))
			info.name[0] = '\0';
		v = i < nl ? PyUnicode_FromString(info.name)
			   : PyUnicode_FromFormat("%s (destroyed)", info.name);
		if (!v)
			goto out;
		PyList_SET_ITEM(names, (Py_ssize_t)i, v);
	}
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_quarantine_count(ko->k, caches, n, objs, bytes, other);
	Py_END_ALLOW_THREADS
	if (ret) {
		odb_raise(ko, ret);
		goto out;
	}
	if (!(d = PyDict_New()))
		goto out;
	for (size_t i = 0; i <= n; i++) {
		PyObject *key = i < n ? PyList_GET_ITEM(names, (Py_ssize_t)i) : Py_None;
		unsigned long long o = i < n ? objs[i] : other[0], b = i < n ? bytes[i] : other[1];
		PyObject *v, *have;

		if (i == n && !o)
			break;
		/* two zombies of one name (or a cache named like one): one entry, summed */
		have = PyDict_GetItemWithError(d, key);
		if (have) {
			unsigned long long ho, hb;

			if (!PyArg_ParseTuple(have, "KK", &ho, &hb)) {
				Py_CLEAR(d);
				goto out;
			}
			o += ho;
			b += hb;
		} else if (PyErr_Occurred()) {
			Py_CLEAR(d);
			goto out;
		}
		v = Py_BuildValue("(KK)", o, b);
		if (!v || PyDict_SetItem(d, key, v)) {
			Py_XDECREF(v);
			Py_CLEAR(d);
			goto out;
		}
		Py_DECREF(v);
	}
out:
	Py_XDECREF(names);
	PyMem_Free(caches);
	PyMem_Free(objs);
	PyMem_Free(bytes);
	return d;
}

static PyObject *py_kasan_quarantine_cpu_offline(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;
	int cpu, off, ret;

	if (!PyArg_ParseTuple(args, "Oip", &kobj, &cpu, &off))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_quarantine_cpu_offline(ko->k, cpu, off);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_quarantine_geometry(PyObject *m, PyObject *args)
{
	unsigned long long ram;
	unsigned int cpus, nr_cpus;
	struct odb_quarantine_geometry g;

	if (!PyArg_ParseTuple(args, "KII", &ram, &cpus, &nr_cpus))
		return NULL;
	if (odb_quarantine_geometry(ram, cpus, nr_cpus, &g))
		return PyErr_Format(PyExc_ValueError,
				    "quarantine_geometry: need cpus >= 1 and nr_cpus >= cpus"), NULL;
	return odb_py_checked(Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
			     "total_size", (unsigned long long)g.total_size,
			     "percpu_reserve", (unsigned long long)g.percpu_reserve,
			     "max_size", (unsigned long long)g.max_size,
			     "batch_size", (unsigned long long)g.batch_size,
			     "batches", (unsigned long long)g.batches,
			     "slots_used", (unsigned long long)g.slots_used,
			     "old_max_size", (unsigned long long)g.old_max_size,
			     "old_low_size", (unsigned long long)g.old_low_size,
			     "old_reduce_bytes", (unsigned long long)g.old_reduce_bytes));
}

static PyObject *py_quarantine_storm(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	KernelObject *ko;
	struct odb_quarantine_storm c = { 0 };
	struct odb_quarantine_storm_result r;
	unsigned long long seed;
	int ret;
	/* the core's limits (quarantine_storm.c), checked here to name the argument */
	odb_uarg ops = ODB_UARG("ops", 0, 1u << 26), threads = ODB_UARG("threads", 1, ODB_MAX_CPUS),
		 live = ODB_UARG("live", 1, 1u << 20), mn = ODB_UARG("min_size", 1, 8192),
		 mx = ODB_UARG("max_size", 1, 8192), every = ODB_UARG("mutex_every", 0, UINT_MAX);

	if (!PyArg_ParseTuple(args, "OO&O&O&O&O&K|O&", &kobj, odb_conv_uarg, &ops, odb_conv_uarg, &threads,
			      odb_conv_uarg, &live, odb_conv_uarg, &mn, odb_conv_uarg, &mx, &seed,
			      odb_conv_uarg, &every))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (mx.v < mn.v)
		return PyErr_Format(ko->st->InvalidArgument, "max_size: must be >= min_size (%llu), not %llu",
				    mn.v, mx.v), NULL;
	if (threads.v > odb_nr_cpus(ko->k))
		return PyErr_Format(ko->st->InvalidArgument, "threads: must be 1..%u (the vCPUs), not %llu",
				    odb_nr_cpus(ko->k), threads.v), NULL;
	c.ops_per_thread = ops.v;
	c.threads = (unsigned int)threads.v;
	c.live = (unsigned int)live.v;
	c.min_size = (size_t)mn.v;
	c.max_size = (size_t)mx.v;
	c.seed = seed;
	c.mutex_every = (unsigned int)every.v;
	Py_BEGIN_ALLOW_THREADS
	ret = odb_quarantine_storm(ko->k, &c, &r);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
			     "elapsed_ns", (unsigned long long)r.elapsed_ns,
			     "ops", (unsigned long long)r.ops,
			     "alloc_p50", (unsigned long long)r.alloc_p50,
			     "alloc_p99", (unsigned long long)r.alloc_p99,
			     "alloc_max", (unsigned long long)r.alloc_max,
			     "free_p50", (unsigned long long)r.free_p50,
			     "free_p99", (unsigned long long)r.free_p99,
			     "free_max", (unsigned long long)r.free_max,
			     "mutex_ops", (unsigned long long)r.mutex_ops,
			     "mutex_wait_ns_total", (unsigned long long)r.mutex_wait_ns_total,
			     "mutex_wait_ns_max", (unsigned long long)r.mutex_wait_ns_max));
}

/* ---- the public poisoning API -------------------------------------------------------- */
static PyObject *py_kasan_poison(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	size_t n;
	odb_uarg value = ODB_UARG("value", 0, 255);
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&O&", &kobj, conv_addr, &addr, conv_size, &n,
			      odb_conv_uarg, &value))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_poison(ko->k, addr, n, (uint8_t)value.v);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_unpoison(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	size_t n;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, conv_addr, &addr, conv_size, &n))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	Py_BEGIN_ALLOW_THREADS
	ret = odb_kasan_unpoison(ko->k, addr, n);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

/* (kernel, addr, order) calls: kasan_(un)poison_pages, kasan_mempool_unpoison_pages */
static PyObject *pages_call(PyObject *m, PyObject *args, int (*fn)(odb_kernel *, odb_addr_t, unsigned int))
{
	PyObject *kobj;
	unsigned long long addr;
	odb_uarg order = ODB_UARG("order", 0, UINT_MAX);
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, conv_addr, &addr, odb_conv_uarg, &order))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	Py_BEGIN_ALLOW_THREADS
	ret = fn(ko->k, addr, (unsigned int)order.v);
	Py_END_ALLOW_THREADS
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_poison_pages(PyObject *m, PyObject *args)
{
	return pages_call(m, args, odb_kasan_poison_pages);
}

static PyObject *py_kasan_unpoison_pages(PyObject *m, PyObject *args)
{
	return pages_call(m, args, odb_kasan_unpoison_pages);
}

static PyObject *py_kasan_mempool_unpoison_pages(PyObject *m, PyObject *args)
{
	return pages_call(m, args, odb_kasan_mempool_unpoison_pages);
}

/* O(1) checks with a possible report: the GIL is kept (the Python caller
 * is named in the report) */
static PyObject *py_kasan_mempool_poison_object(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	KernelObject *ko;
	bool reuse;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&", &kobj, conv_addr, &addr))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	ret = odb_kasan_mempool_poison_object(ko->k, addr, &reuse);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyBool_FromLong(reuse));
}

static PyObject *py_kasan_mempool_unpoison_object(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	size_t n;
	KernelObject *ko;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, conv_addr, &addr, conv_size, &n))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	ret = odb_kasan_mempool_unpoison_object(ko->k, addr, n);
	if (ret)
		return odb_raise(ko, ret);
	Py_RETURN_NONE;
}

static PyObject *py_kasan_mempool_poison_pages(PyObject *m, PyObject *args)
{
	PyObject *kobj;
	unsigned long long addr;
	odb_uarg order = ODB_UARG("order", 0, UINT_MAX);
	KernelObject *ko;
	bool reuse;
	int ret;

	if (!PyArg_ParseTuple(args, "OO&O&", &kobj, conv_addr, &addr, odb_conv_uarg, &order))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	ret = odb_kasan_mempool_poison_pages(ko->k, addr, (unsigned int)order.v, &reuse);
	if (ret)
		return odb_raise(ko, ret);
	return odb_py_checked(PyBool_FromLong(reuse));
}

static PyObject *depth_call(PyObject *m, PyObject *args, int (*fn)(odb_kernel *))
{
	PyObject *kobj;
	KernelObject *ko;
	unsigned int depth;
	int ret;

	if (!PyArg_ParseTuple(args, "O", &kobj))
		return NULL;
	GET_KERNEL(m, kobj, ko);
	if (fn && (ret = fn(ko->k)))
		return odb_raise(ko, ret);
	if ((ret = odb_kasan_current_depth(ko->k, &depth)))
		return odb_raise(ko, ret);
	return PyLong_FromUnsignedLong(depth);
}

static PyObject *py_kasan_disable_current(PyObject *m, PyObject *args)
{
	return depth_call(m, args, odb_kasan_disable_current);
}

static PyObject *py_kasan_enable_current(PyObject *m, PyObject *args)
{
	return depth_call(m, args, odb_kasan_enable_current);
}

static PyObject *py_kasan_current_depth(PyObject *m, PyObject *args)
{
	return depth_call(m, args, NULL);
}

static PyMethodDef kasan_methods[] = {
	{ "kasan_poison", py_kasan_poison, METH_VARARGS,
	  "kasan_poison($module, kernel, addr, size, value, /)\n--\n\nkasan_poison(): every granule of [addr, addr + size) gets value." },
	{ "kasan_unpoison", py_kasan_unpoison, METH_VARARGS,
	  "kasan_unpoison($module, kernel, addr, size, /)\n--\n\nkasan_unpoison(): [addr, addr + size) accessible (a partial last granule)." },
	{ "kasan_poison_pages", py_kasan_poison_pages, METH_VARARGS,
	  "kasan_poison_pages($module, kernel, addr, order, /)\n--\n\nkasan_poison_pages(): KASAN_PAGE_FREE over 2**order pages." },
	{ "kasan_unpoison_pages", py_kasan_unpoison_pages, METH_VARARGS,
	  "kasan_unpoison_pages($module, kernel, addr, order, /)\n--\n\nkasan_unpoison_pages()." },
	{ "kasan_mempool_poison_object", py_kasan_mempool_poison_object, METH_VARARGS,
	  "kasan_mempool_poison_object($module, kernel, addr, /)\n--\n\nkasan_mempool_poison_object() -> may the object be reused." },
	{ "kasan_mempool_unpoison_object", py_kasan_mempool_unpoison_object, METH_VARARGS,
	  "kasan_mempool_unpoison_object($module, kernel, addr, size, /)\n--\n\nkasan_mempool_unpoison_object()." },
	{ "kasan_mempool_poison_pages", py_kasan_mempool_poison_pages, METH_VARARGS,
	  "kasan_mempool_poison_pages($module, kernel, addr, order, /)\n--\n\nkasan_mempool_poison_pages() -> may the pages be reused." },
	{ "kasan_mempool_unpoison_pages", py_kasan_mempool_unpoison_pages, METH_VARARGS,
	  "kasan_mempool_unpoison_pages($module, kernel, addr, order, /)\n--\n\nkasan_mempool_unpoison_pages()." },
	{ "kasan_disable_current", py_kasan_disable_current, METH_VARARGS,
	  "kasan_disable_current($module, kernel, /)\n--\n\nkasan_disable_current() -> the calling thread's new depth." },
	{ "kasan_enable_current", py_kasan_enable_current, METH_VARARGS,
	  "kasan_enable_current($module, kernel, /)\n--\n\nkasan_enable_current() -> the calling thread's new depth." },
	{ "kasan_current_depth", py_kasan_current_depth, METH_VARARGS,
	  "kasan_current_depth($module, kernel, /)\n--\n\nThe calling thread's kasan_disable_current() depth." },
	{ "kasan_read", (PyCFunction)(void (*)(void))py_kasan_read, METH_FASTCALL, "kasan_read($module, kernel, addr, n, /)\n--\n\nOne checked access -> bytes." },
	{ "kasan_write", py_kasan_write, METH_VARARGS, "kasan_write($module, kernel, addr, data, /)\n--\n\nOne checked access." },
	{ "kasan_memset", py_kasan_memset, METH_VARARGS, "kasan_memset($module, kernel, addr, c, n, /)\n--\n\nChecked memset." },
	{ "kasan_memcpy", py_kasan_memcpy, METH_VARARGS, "kasan_memcpy($module, kernel, dst, src, n, /)\n--\n\nChecked memcpy." },
	{ "kasan_memmove", py_kasan_memmove, METH_VARARGS, "kasan_memmove($module, kernel, dst, src, n, /)\n--\n\nChecked memmove." },
	{ "kasan_check", py_kasan_check, METH_VARARGS, "kasan_check($module, kernel, addr, n, is_write, /)\n--\n\nCheck only." },
	{ "kasan_check_byte", py_kasan_check_byte, METH_VARARGS, "kasan_check_byte($module, kernel, addr, /)\n--\n\nkasan_check_byte -> bool." },
	{ "kasan_shadow", py_kasan_shadow, METH_VARARGS, "kasan_shadow($module, kernel, addr, n, /)\n--\n\nThe shadow bytes of [addr, addr + n)." },
	{ "kasan_counters", py_kasan_counters, METH_VARARGS, "kasan_counters($module, kernel, /)\n--\n\nKASAN state and counters as a dict." },
	{ "kasan_set_multi_shot", py_kasan_set_multi_shot, METH_VARARGS,
	  "kasan_set_multi_shot($module, kernel, on, /)\n--\n\nSet kasan_multi_shot; returns the previous value." },
	{ "kasan_quarantine_stats", py_kasan_quarantine_stats, METH_VARARGS, "kasan_quarantine_stats($module, kernel, /)\n--\n\nQuarantine stats dict." },
	{ "kasan_quarantine_reduce", py_kasan_quarantine_reduce, METH_VARARGS, "kasan_quarantine_reduce($module, kernel, /)\n--\n\nOne quarantine reduce." },
	{ "kasan_quarantine_drain", py_kasan_quarantine_drain, METH_VARARGS, "kasan_quarantine_drain($module, kernel, /)\n--\n\nFree every quarantined object." },
	{ "kasan_quarantine_count", py_kasan_quarantine_count, METH_VARARGS,
	  "kasan_quarantine_count($module, kernel, /)\n--\n\n{cache name: (objects, bytes)} held in the quarantine." },
	{ "kasan_quarantine_cpu_offline", py_kasan_quarantine_cpu_offline, METH_VARARGS, "kasan_quarantine_cpu_offline($module, kernel, cpu, offline, /)\n--\n\nCPU hotplug of the quarantine." },
	{ "quarantine_geometry", py_quarantine_geometry, METH_VARARGS, "quarantine_geometry($module, ram, cpus, nr_cpus, /)\n--\n\nThe quarantine's sizes for that machine, as a dict." },
	{ "quarantine_storm", py_quarantine_storm, METH_VARARGS, "quarantine_storm($module, kernel, ops, threads, live, min_size, max_size, seed, mutex_every=0, /)\n--\n\nA quarantine stress run in C -> dict of results." },
	{ NULL }
};

int odb_py_kasan_init(PyObject *module, core_state *st)
{
	(void)st;
	return PyModule_AddFunctions(module, kasan_methods);
}
