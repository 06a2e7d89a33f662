"""Issue 18, class 4: no Python callback runs while its thread holds a core lock.

A Python callback takes the interpreter lock; if it ran under a vCPU's irq lock,
slab_mutex or the quarantine's srcu, a thread holding the interpreter lock and
waiting for that core lock (any O(1) call keeps the interpreter lock) and the
callback would wait for each other forever, and a callback calling back into
the slab (slabinfo_text, a cache's destroy) would wait for itself.  odebug runs

- a cache's constructor with the vCPU's irq lock dropped (slub.c,
  new_slab_irqs_on: as the kernel allocates a slab with interrupts enabled);
- a Python descriptor's "free active" warning (its debug_hint) and fixup_free,
  found by a slab page freed under such a lock, after the call drops it
  (ODB_DESCR_DEFER_ATOMIC: queued on the task, run when the API call returns).

Each scenario runs in a child process with a timeout, since the failure mode is
a hang.  Inside the callback a second thread makes calls that need the locks
the callback's thread might hold (an allocation on the same vCPU, slabinfo,
a cache create/destroy), and is joined: it must finish.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.threads

_TIMEOUT = 300 if os.environ.get("ODEBUG_SANITIZE") else 60

_PRELUDE = """
import json, sys, threading
import odebug

out = {"joined": [], "calls": 0}

def probe(k, cpu=0):
    '''From a callback: a second thread needs the vCPU's irq lock, slab_mutex
    (slabinfo, cache create/destroy) and the interpreter lock; join it.'''
    def other():
        with k.on_cpu(cpu):
            k.kmalloc(64)                      # not freed: no range check of ours
        k.slabinfo_text()
        c2 = k.kmem_cache_create("probe%d" % out["calls"], 32)
        c2.destroy()
    th = threading.Thread(target=other, daemon=True)
    th.start()
    th.join(20)
    out["joined"].append(not th.is_alive())
    k.slabinfo_text()                          # and this thread itself: slab_mutex
    out["calls"] += 1
"""


def _run(body: str) -> dict:
    code = _PRELUDE + textwrap.dedent(body) + "\nprint('RESULT ' + json.dumps(out))\n"
    env = dict(os.environ)
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=_TIMEOUT, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"hang: the scenario did not finish in {_TIMEOUT} s\n{e.stdout}\n{e.stderr}")
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("cmdline", ["kasan=off", "", "odebug.slub_path=modern",
                                     "slub_debug=FZPU", "slub_debug=FZPU odebug.slub_path=modern"])
def test_python_ctor_runs_without_the_vcpu_lock(cmdline):
    out = _run(f"""
    k = odebug.Kernel({cmdline!r}, cpus=1, ram="32M")
    def ctor(addr):
        if out["calls"] < 3:
            probe(k)
        k.write(addr, b"\\x5a" * 8)
    c = k.kmem_cache_create("withctor", 128, ctor=ctor)
    with k.on_cpu(0):
        objs = [c.alloc() for _ in range(3 * c.objects_per_slab)]
    out["first"] = [k.read(p, 8).hex() for p in objs[:2]]
    out["reports"] = [r.kind for r in k.reports]
    """)
    assert out["joined"] == [True, True, True]
    assert out["first"] == ["5a" * 8] * 2           # constructed before handed out
    assert out["reports"] == []


def test_python_ctor_with_threads_allocating_on_its_vcpu():
    """The issue's reproducer: a ctor that lets the interpreter lock go (here
    time.sleep) while other threads kmalloc/kfree on the same vCPU."""
    out = _run("""
    import time
    k = odebug.Kernel("", cpus=1, ram="64M")
    def ctor(addr):
        time.sleep(0.0005)
    c = k.kmem_cache_create("slowctor", 512, ctor=ctor)
    stop = []
    def churn():
        with k.on_cpu(0):
            while not stop:
                k.kfree(k.kmalloc(64))
    ths = [threading.Thread(target=churn, daemon=True) for _ in range(3)]
    for t in ths: t.start()
    with k.on_cpu(0):
        objs = [c.alloc() for _ in range(20 * c.objects_per_slab)]
    stop.append(1)
    for t in ths: t.join(20)
    out["joined"] = [not t.is_alive() for t in ths]
    out["n"] = len([p for p in objs if p])
    for p in objs: c.free(p)
    out["errors"] = c.validate()
    """)
    assert out["joined"] == [True] * 3 and out["errors"] == 0 and out["n"] > 0


_FIXUP_SETUP = """
k = odebug.Kernel({cmdline!r}, cpus=1, ram="32M")
d = k.debug_objects
def fix(addr, state):
    probe(k)
    d.deactivate(addr, t)
    d.free(addr, t)
    return True
t = odebug.ObjectDescr("t", fixup_free=fix, debug_hint=lambda a: "hint_from_python")
c = k.kmem_cache_create("cb", 256)
n = c.objects_per_slab
with k.on_cpu(0):
    objs = [c.alloc() for _ in range(8 * n)]
slabs = {{}}
for p in objs:
    slabs.setdefault(p // (4096 << c.order), []).append(p)
ss = list(slabs.values())
"""


@pytest.mark.parametrize("cmdline", ["kasan=off slub_debug=F", "kasan=off slub_debug=F odebug.slub_path=modern"])
def test_fixup_of_a_slab_page_freed_under_the_irq_lock(cmdline):
    """A tracker left ACTIVE on a free object: the free that empties its slab
    frees the page (debug_check_no_obj_freed under the vCPU's irq lock on the
    2016 flow): the warning and fixup_free run once the lock is dropped."""
    out = _run(_FIXUP_SETUP.format(cmdline=cmdline) + """
with k.on_cpu(0):
    for s in ss[:6]:
        for p in s[1:]:
            c.free(p)
    s = ss[6]
    for p in s[:-1]:
        c.free(p)
    d.init(s[0], t)
    d.activate(s[0], t)
    c.free(s[-1])                  # the slab empties: its page goes
out["reports"] = [r.kind for r in k.reports]
out["hint"] = "hint: hint_from_python" in k.dmesg()
out["state"] = str(d.state(s[0]))
""")
    assert out["joined"] == [True]
    assert out["reports"] == ["free active"] and out["hint"]


def test_fixup_of_a_slab_page_freed_under_slab_mutex_by_destroy():
    """kmem_cache_destroy discards the slabs under slab_mutex: the fixup runs
    after it, and may call slabinfo / create and destroy caches itself."""
    out = _run(_FIXUP_SETUP.format(cmdline="kasan=off") + """
with k.on_cpu(0):
    for p in objs:
        c.free(p)
    d.init(objs[3], t)
    d.activate(objs[3], t)
    c.destroy()
out["reports"] = [r.kind for r in k.reports]
""")
    assert out["joined"] == [True]
    assert out["reports"] == ["free active"]


def test_fixup_of_a_slab_page_freed_by_quarantine_drain():
    """The issue's reproducer: quarantine.drain() holds slab_mutex while it
    gives the objects back; an emptied slab's page free finds the ACTIVE
    tracker, and its fixup calls slabinfo_text()."""
    out = _run(_FIXUP_SETUP.format(cmdline="slub_debug=F") + """
with k.on_cpu(0):
    for s in ss[:6]:
        for p in s[1:]:
            c.free(p)
    k.kasan.quarantine.drain()
    s = ss[6]
    for p in s:
        c.free(p)                  # into the quarantine
    d.init(s[0], t)
    d.activate(s[0], t)
    k.kasan.quarantine.drain()                # the slab empties under slab_mutex
out["reports"] = [r.kind for r in k.reports]
""")
    assert out["joined"] == [True]
    assert out["reports"] == ["free active"]


def test_fixup_exception_under_a_lock_propagates_from_the_call():
    """A deferred fixup that raises: the exception comes out of the call that
    freed the page (here destroy), the cache is destroyed all the same."""
    out = _run(_FIXUP_SETUP.format(cmdline="kasan=off").replace("    probe(k)\n", "    raise KeyError('deferred')\n") + """
with k.on_cpu(0):
    for p in objs:
        c.free(p)
    d.init(objs[3], t)
    d.activate(objs[3], t)
    try:
        c.destroy()
        out["raised"] = None
    except KeyError as e:
        out["raised"] = str(e)
out["destroyed"] = c.destroyed
out["reports"] = [r.kind for r in k.reports]
""")
    assert out["raised"] == "'deferred'" and out["destroyed"] is True
    assert out["reports"] == ["free active"]


def test_destroy_of_a_cache_in_use_is_refused():
    """A ctor that lets the interpreter lock go while another thread destroys its
    cache (or that destroys it itself): destroy() raises StateError while a call
    on the cache is in progress, instead of freeing the cache under it (the
    fuzzer's crash: alloc/alloc_bulk on a destroyed cache)."""
    out = _run("""
    import time
    k = odebug.Kernel("", cpus=2, ram="32M")
    errs = []
    def ctor(addr):
        if out["calls"] == 0:
            out["calls"] += 1
            try:
                c.destroy()                    # the same thread, inside its own alloc
            except odebug.StateError as e:
                errs.append("self: " + str(e))
            th = threading.Thread(target=other, daemon=True)
            th.start()
            th.join(20)
            out["joined"].append(not th.is_alive())
    def other():
        try:
            c.destroy()
        except odebug.StateError as e:
            errs.append("other: " + str(e))
    c = k.kmem_cache_create("busy", 256, ctor=ctor)
    p = c.alloc()
    out["errs"] = errs
    out["alive"] = not c.destroyed and k.read(p, 1) is not None
    c.free(p)
    c.destroy()
    out["destroyed"] = c.destroyed
    """)
    assert out["joined"] == [True] and out["alive"] and out["destroyed"]
    assert [e.split(":")[0] for e in out["errs"]] == ["self", "other"]
    assert all("in use by another call" in e for e in out["errs"])


def test_the_frame_hook_runs_no_python_under_a_vcpu_lock():
    """The stack depot names the Python caller of a tracked allocation from a hook
    that runs with the vCPU's irq lock held.  Walking the frames allocates frame
    objects; a GC started there ran a weakref callback, whose Python code handed the
    interpreter lock to a thread in kmalloc on the same vCPU (from a constructor),
    which then spun on the irq lock while the first thread waited for the
    interpreter lock (fuzz seed 23 examples 5499 and 30787, "hang").  The hook now
    walks with the GC off.  Without that, this hangs 3 times in 3."""
    code = textwrap.dedent("""
        import gc, random, sys, threading, weakref
        import odebug
        sys.setswitchinterval(1e-6)
        gc.set_threshold(20, 1, 1)
        class G: pass
        keep = []
        def run(seed):
            k = odebug.Kernel("slub_debug=FZPU kasan=off", cpus=1, ram="16M")
            def reenter(*a):
                p = k.kmalloc(24); k.kfree(p); k.debug_objects.stats()
                return False
            d = odebug.ObjectDescr("st", fixup_init=reenter, fixup_activate=reenter,
                                   fixup_free=reenter, is_static_object=reenter)
            c = k.kmem_cache_create("rc", 219, 4096, "F", reenter)
            live = [k.kmalloc(64) for _ in range(50)]
            for _ in range(200):      # garbage cycles whose weakref callbacks run Python
                g = G(); g.self = g; keep.append(weakref.ref(g, lambda r: keep.remove(r)))
            def t1():
                r = random.Random(seed)
                for _ in range(200):
                    p = r.choice(live)
                    k.debug_objects.init(p, d); k.debug_objects.activate(p, d)
            def t2():
                for o in [c.zalloc() for _ in range(40)]:
                    if o: c.free(o)
            def t3():
                for _ in range(50):
                    k.debug_objects.stats(); c.flush()
            ts = [threading.Thread(target=f) for f in (t1, t2, t3, t2)]
            for t in ts: t.start()
            for t in ts: t.join()
            for p in live:
                k.debug_objects.free(p, d)
            k.close()
        for i in range(RUNS):
            run(i)
        print("OK")
    """).replace("RUNS", "60" if os.environ.get("ODEBUG_SANITIZE") else "300")
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=_TIMEOUT * 2)
    except subprocess.TimeoutExpired:
        pytest.fail("hung: a thread waits for the interpreter lock under a vCPU lock")
    assert p.returncode == 0 and p.stdout.strip().endswith("OK"), p.stderr[-3000:]
