"""Issue 18, classes 1c/1d and 2: the debug-objects trackers lie in the arena,
where users overwrite them at will (``k.raw`` views, KASAN-checked
``k.write``s over an allocated tracker) or free them (``kfree`` of a tracker).
The core must never follow what it reads there out of the arena: a bad link,
list tag, state or descriptor id is a report ("tracker list corrupt"), the list
is cut at the last good tracker and the rest is dropped (leaked, off the
books); a user's free of a tracker is a report and frees nothing.

Each case runs in a child process, so a crash fails the test instead of
killing pytest.  The child checks, after the corruption: the report names it;
debug objects on other objects still work (a churn and a lifecycle); the
tracker pool's books add up: pool_used == hashed, pool_free == global +
per-CPU, every cache validates, and the trackers the slab holds beyond the
pool's lists are exactly those the books dropped (the documented adjustment:
allocated + 1024 - freed - offline - pooled == dropped == held - pooled).

struct debug_obj (40 bytes): next @0 (a reference), list tag @8 (in place of
pprev), state @16, astate @20, object @24, descriptor id @32.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD_PRELUDE = r'''
import json, random, struct, sys
import odebug
from odebug import scenarios

k = odebug.Kernel(CMDLINE, cpus=2, ram="64M")
D = k.debug_objects
victim = odebug.ObjectDescr("victim")
other = odebug.ObjectDescr("other")
NEXT, TAG, STATE, ASTATE, OBJECT, DESCR = 0, 8, 16, 20, 24, 32

def snapshot():
    return bytes(k.raw(k.arena_start, k.arena_end - k.arena_start))

def tracker_of(x, b=None):
    """The debug_objects_cache object whose object field is x (in b, a
    snapshot of the arena, if given)."""
    if b is None:
        b = snapshot()
    pat = struct.pack("<Q", x)
    i = b.find(pat)
    while i >= 0:
        a = k.arena_start + i - OBJECT
        so = k.slab_object(a)
        if so and so[0] == "debug_objects_cache" and so[1] == a:
            return a
        i = b.find(pat, i + 1)
    raise AssertionError("no tracker for %#x" % x)

def raw_write(a, data):
    k.raw(a, len(data))[:] = data

def q(v):
    return struct.pack("<Q", v & (2**64 - 1))

def corrupt_reports():
    return [r for r in k.reports if r.kind == "tracker list corrupt"]

def books():
    """The pool's invariants; returns the trackers dropped (leaked)."""
    acct = scenarios.accounting(k)
    bad = {n: a["validate_errors"] for n, a in acct.items() if a["validate_errors"]}
    assert not bad, bad
    for n, a in acct.items():
        assert a["allocated"] - a["freed"] == a["held"], (n, a)
    i, s = D.internals(), D.stats()
    off = i["offline_freed"]
    assert s["pool_used"] - off == i["hashed"], (s, i)
    assert s["pool_free"] == i["obj_pool_free"] + sum(i["pcp_free"]), (s, i)
    t = acct["debug_objects_cache"]
    assert t["allocated"] == s["objs_allocated"] + 1024, (t, s)
    dropped = s["objs_allocated"] + 1024 - s["objs_freed"] - off - t["pooled"]
    assert dropped == t["held"] - t["quarantined"] - t["pooled"], (dropped, t)
    return dropped

def still_works():
    """Debug objects on other objects: a churn and a full lifecycle."""
    r = D.churn(6, 300, 2)
    assert r["cycles"] > 0
    y = k.kmalloc(128)
    D.init(y, other)
    assert D.activate(y, other) == 0
    assert D.state(y) == odebug.ObjectState.ACTIVE
    D.deactivate(y, other)
    D.free(y, other)
    assert D.lookup(y) is None
    D.init(y, other)
    D.activate(y, other)
    before = len(D.reports())
    k.kfree(y)       # debug_check_no_obj_freed: "free active"
    assert len(D.reports()) == before + 1 and D.reports()[-1].kind == "free active"
    k.advance(1000)  # the freeing work

def done(**kw):
    kw["dropped"] = books()
    kw["kinds"] = [r.kind for r in k.reports]
    kw["texts"] = [r.text for r in corrupt_reports()]
    print("RESULT " + json.dumps(kw))
'''


def run_child(body: str, cmdline: str = "") -> dict:
    code = CHILD_PRELUDE.replace("CMDLINE", repr(cmdline)) + textwrap.dedent(body)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, cwd=os.getcwd(), env=env)
    assert p.returncode == 0, f"child died ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_descriptor_id_overwritten_is_a_report_not_a_call():
    """Class 1c: the tracker's descriptor is an id; an attacker's 'pointer' to
    a function table names no descriptor: reported, nothing called."""
    r = run_child('''
        x = k.kmalloc(64)
        D.init(x, victim)
        t = tracker_of(x)
        raw_write(t + DESCR, struct.pack("<I", 0x41414141))
        assert D.activate(x, victim) == -22           # not found any more: "activate not available"
        assert D.lookup(x) is None
        still_works()
        done()
    ''')
    assert r["texts"] and "bad descriptor id 1094795585" in r["texts"][0], r
    assert "activate not available" in r["kinds"]
    assert r["dropped"] == 1


def test_next_link_to_non_tracker_cuts_the_bucket():
    """A next link naming arena memory that is no tracker (a kmalloc object),
    and one naming host memory: the bucket is cut at the last good tracker."""
    r = run_child('''
        page = k.kmalloc(4096)
        a, b, c = page, page + 64, page + 128        # one 4 KiB chunk: one bucket
        for o in (a, b, c):
            D.init(o, victim)                        # bucket: c -> b -> a
        tb = tracker_of(b)
        raw_write(tb + NEXT, q(k.kmalloc(64)))       # b's next: not a tracker
        assert D.state(c) == odebug.ObjectState.INIT       # before the bad link: fine
        assert D.lookup(a) is None                   # behind it: reported, dropped
        D.activate(b, victim)                        # b itself was good: kept
        assert D.state(b) == odebug.ObjectState.ACTIVE
        d1 = books()
        tc = tracker_of(c)
        raw_write(tc + NEXT, q(0x00007f0000001000))  # a host-looking pointer
        assert D.lookup(b) is None
        still_works()
        done(d1=d1)
    ''')
    assert r["d1"] == 1 and r["dropped"] == 2, r
    assert len(r["texts"]) == 2
    assert all("not a tracker" in t and "bucket" in t for t in r["texts"]), r["texts"]
    assert "1 trackers dropped" in r["texts"][0]


def test_next_link_to_another_lists_tracker_and_cycle():
    """A next link naming a real tracker of another bucket (a cross link), and
    one naming its own tracker (a cycle): both reported, neither followed."""
    r = run_child('''
        p1, p2 = k.kmalloc(4096), k.kmalloc(4096)
        D.init(p1, victim); D.init(p1 + 64, victim)  # bucket 1: p1+64 -> p1
        D.init(p2, victim)                           # another bucket
        t1 = tracker_of(p1 + 64)
        raw_write(t1 + NEXT, q(tracker_of(p2)))
        assert D.lookup(p1) is None
        assert D.state(p2) == odebug.ObjectState.INIT      # the other bucket is untouched
        t0 = tracker_of(p2)
        raw_write(t0 + NEXT, q(t0))                  # p2's tracker -> itself
        assert D.lookup(p2 + 8) is None              # walks, finds the cycle
        assert D.state(p2) == odebug.ObjectState.INIT      # the cut is after p2: p2 kept
        still_works()
        done()
    ''')
    assert len(r["texts"]) == 2, r
    assert "tracker of another list" in r["texts"][0]
    assert "chain longer than its count" in r["texts"][1]
    assert r["dropped"] == 1


def test_list_tag_in_place_of_pprev():
    """The word where the kernel keeps pprev is the list tag: overwritten, the
    tracker is not this bucket's and is dropped, the bucket head cut."""
    r = run_child('''
        x = k.kmalloc(64)
        D.init(x, victim)
        raw_write(tracker_of(x) + TAG, q(0xffff888000000000))
        D.free(x, victim)                            # untracked now: silent
        assert D.lookup(x) is None
        still_works()
        done()
    ''')
    assert len(r["texts"]) == 1 and "tracker of another list" in r["texts"][0], r
    assert r["dropped"] == 1


def test_state_out_of_range():
    r = run_child('''
        x = k.kmalloc(64)
        D.init(x, victim)
        D.activate(x, victim)
        raw_write(tracker_of(x) + STATE, struct.pack("<I", 0x77))
        D.deactivate(x, victim)                      # "deactivate not available"
        still_works()
        done()
    ''')
    assert len(r["texts"]) == 1 and "bad state 119" in r["texts"][0], r
    assert "deactivate not available" in r["kinds"]
    assert r["dropped"] == 1


@pytest.mark.parametrize("how", ["raw", "kasan_write"])
def test_whole_tracker_random_bytes(how):
    """Class 1d: the whole tracker overwritten with random bytes, by a raw view
    or by a KASAN-checked k.write over the allocated object, then init/activate
    calls on its bucket and elsewhere."""
    r = run_child(f'''
        rng = random.Random(18)
        page = k.kmalloc(4096)
        objs = [page + 64 * i for i in range(8)]
        for o in objs:
            D.init(o, victim)
        t = tracker_of(objs[3])
        junk = bytes(rng.randrange(256) for _ in range(40))
        if {how!r} == "raw":
            raw_write(t, junk)
        else:
            k.write(t, junk)
        for o in objs:
            D.init(o, victim)
            D.activate(o, victim)
        still_works()
        done()
    ''')
    assert len(r["texts"]) >= 1, r
    assert "(bucket" in r["texts"][0]
    # the bucket was 7 -> ... -> 0; objs[3] and those behind it (2, 1, 0) are
    # dropped, then re-tracked by the second init round
    assert r["dropped"] == 4
    assert not [kd for kd in r["kinds"] if kd.startswith("kasan") or "KASAN" in kd], r["kinds"]


def test_free_list_link_corrupt():
    """A tracker back on a per-CPU free list: its next overwritten.  The next
    allocations pop it, then meet the bad link: the per-CPU list is cut, its
    count leaves the books, allocation goes on from the global pool."""
    r = run_child('''
        x = k.kmalloc(64)
        with k.on_cpu(0):
            D.init(x, victim)
            D.free(x, victim)                        # the tracker: head of CPU 0's list
        t = tracker_of(x)
        raw_write(t + NEXT, q(0x4141414141414141))
        pcp_before = D.internals()["pcp_free"][0]
        ys = [k.kmalloc(32) for _ in range(4)]
        with k.on_cpu(0):
            for y in ys:
                D.init(y, other)
        for y in ys:
            assert D.state(y) == odebug.ObjectState.INIT
        still_works()
        done(pcp_before=pcp_before)
    ''')
    assert len(r["texts"]) == 1, r
    assert "per-CPU pool 0" in r["texts"][0] and "not a tracker" in r["texts"][0]
    assert r["dropped"] == r["pcp_before"] - 1


@pytest.mark.parametrize("how", ["kfree", "kmem_cache_free", "kfree_rcu", "krealloc", "free_bulk"])
def test_user_free_of_a_tracker_is_refused(how):
    """Class 2: the user frees a tracker (hashed, or in the pool): a report,
    nothing freed, the pool intact."""
    r = run_child(f'''
        x = k.kmalloc(64)
        D.init(x, victim)
        hashed = tracker_of(x)
        D.init(x + 8, victim); D.free(x + 8, victim)
        pooled = tracker_of(x + 8)                   # on a per-CPU free list
        c = k.cache("debug_objects_cache")
        for t in (hashed, pooled):
            if {how!r} == "kfree":
                k.kfree(t)
            elif {how!r} == "kmem_cache_free":
                c.free(t)
            elif {how!r} == "kfree_rcu":
                k.kfree_rcu(t); k.rcu_barrier()
            elif {how!r} == "krealloc":
                assert not k.krealloc(t, 128)
            else:
                c.free_bulk([t])
        assert D.state(x) == odebug.ObjectState.INIT
        D.activate(x, victim); D.deactivate(x, victim); D.free(x, victim)
        still_works()
        done(n=len([r for r in k.reports if r.kind == "free of a tracker"]),
             text=[r.text for r in k.reports if r.kind == "free of a tracker"][0])
    ''')
    assert r["n"] == 2, r
    assert "ODEBUG: " in r["text"] and "of tracker" in r["text"] and "not freed" in r["text"]
    assert r["dropped"] == 0 and not r["texts"]


def test_to_free_list_corrupt_during_freeing_work():
    """The lazy freeing work's to-free list: a tracker on it overwritten; the
    work frees what is before the bad link, drops the rest, and objs_freed
    counts only what it freed."""
    r = run_child('''
        page = k.kmalloc(1 << 20)
        objs = [page + 64 * i for i in range(3000)]
        for o in objs:
            D.init(o, victim)
        for o in objs:
            D.free(o, victim)                        # the excess goes to the to-free list
        i = D.internals()
        assert i["obj_nr_tofree"] > 100, i
        # the 20th tracker found on the to-free list: its next overwritten
        snap, hit = snapshot(), 0
        for o in reversed(objs[::5]):
            t = tracker_of(o, snap)
            off = t - k.arena_start + TAG
            if struct.unpack("<I", snap[off:off + 4])[0] == 16384 + 2:   # ODEBUG_LIST_TOFREE
                hit += 1
                if hit == 20:
                    raw_write(t + NEXT, q(0x4242424242424242))
                    break
        assert hit == 20, hit
        k.advance(1000)                              # runs the work
        k.advance(1000)
        still_works()
        done()
    ''')
    assert r["texts"] and "to-free list" in r["texts"][0], r
    assert r["dropped"] > 0


def test_free_list_link_zeroed_is_reported():
    """A free list's link rewritten to 0: the list ends short of its count;
    the pop that finds it empty reports it and the count leaves the books."""
    r = run_child('''
        with k.on_cpu(1):
            xs = [k.kmalloc(64) for _ in range(3)]
            for x in xs:
                D.init(x, victim)
            for x in xs:
                D.free(x, victim)                    # CPU 1's list: xs[2] -> xs[1] -> xs[0] -> ...
            n = D.internals()["pcp_free"][1]
            raw_write(tracker_of(xs[1]) + NEXT, q(0))
            for i in range(4):
                D.init(k.kmalloc(32), other)
        still_works()
        done(n=n)
    ''')
    assert len(r["texts"]) == 1 and "per-CPU pool 1" in r["texts"][0], r
    assert "list ends short of its count" in r["texts"][0]
    assert r["dropped"] == r["n"] - 2
