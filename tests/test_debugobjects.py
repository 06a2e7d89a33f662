"""debugobjects (lib/debugobjects.c, v5.3) through the Python API.

Spec: shared/spec/debugobjects.md.  Numbers marked "spec 12" come from the
reference model (reproduced by odebug/_models.py, our own copy).
"""
import gc
import re
import threading
import time

import pytest

import odebug
from odebug.debugobjects import EINVAL, STATS_FIELDS, State

from odebug import _models as model

A = odebug.Kernel  # noqa: N816 (short alias)
BASE = 0xffff_c900_0000_0000      # synthetic addresses outside the arena (like .data)


def kernel(cmdline="", cpus=1, **kw):
    return odebug.Kernel(cmdline, cpus=cpus, ram=kw.pop("ram", "32M"), **kw)


def fresh(cmdline="", cpus=1):
    """A kernel in the reference model's start state: no selftest run."""
    return kernel(("odebug.objects_selftest=off " + cmdline).strip(), cpus=cpus)


def pool_part(s):
    return {f: s[f] for f in ("pool_free", "pool_pcp_free", "pool_min_free", "pool_used",
                              "pool_max_used", "on_free_list", "objs_allocated", "objs_freed")}


class Recorder:
    """A descriptor whose fixups record their calls and return `ret`."""

    def __init__(self, name="rec", ret=False, static=False, hint=None):
        self.calls = []
        self.ret = ret
        self.static = static

        def mk(which):
            def f(addr, state):
                self.calls.append((which, addr, State(state)))
                return self.ret
            return f
        self.descr = odebug.ObjectDescr(
            name, is_static_object=lambda a: self.static,
            fixup_init=mk("init"), fixup_activate=mk("activate"), fixup_destroy=mk("destroy"),
            fixup_free=mk("free"), fixup_assert_init=mk("assert_init"), debug_hint=hint)


# ---- boot -------------------------------------------------------------------------------
def test_boot_selftest_and_pool_state():
    with kernel(cpus=1) as k:
        assert "ODEBUG: selftest passed" in k.dmesg()
        d = k.debug_objects
        assert d.enabled and d.policy == "lazy"
        i = d.internals()
        assert i["selftest_passed"] and i["obj_cache"]
        assert (i["pool_size"], i["pool_min_level"]) == (1040, 272)
        # spec 8.3: what the selftest leaves behind (one CPU)
        assert d.stats() == dict(max_chain=0, max_checked=0, warnings=0, fixups=0,
                                 pool_free=1024, pool_pcp_free=17, pool_min_free=1007,
                                 pool_used=0, pool_max_used=17, on_free_list=0,
                                 objs_allocated=0, objs_freed=0)
        assert k.reports == []


@pytest.mark.parametrize("cpus,size,level", [(1, 1040, 272), (2, 1056, 288), (72, 2176, 1408)])
def test_thresholds_scale_with_cpus(cpus, size, level):
    with kernel(cpus=cpus) as k:
        i = k.debug_objects.internals()
        assert (i["pool_size"], i["pool_min_level"]) == (size, level)


def test_params():
    with kernel("no_debug_objects") as k:
        d = k.debug_objects
        assert not d.enabled
        assert "selftest" not in k.dmesg()
        t = odebug.ObjectDescr("t")
        d.init(BASE, t)
        assert d.activate(BASE + 8, t) == 0          # no-op: 0
        assert d.lookup(BASE) is None
        assert k.param("debug_objects") == "0" and k.param("no_debug_objects") == "1"
    with kernel("no_debug_objects debug_objects odebug.objects_free=eager") as k:
        assert k.debug_objects.enabled and k.debug_objects.policy == "eager"
        assert k.param("odebug.objects_free") == "eager"
    with pytest.raises(ValueError, match="odebug.objects_free"):
        kernel("odebug.objects_free=sometimes")
    with pytest.raises(ValueError, match="odebug.objects_warn"):
        kernel("odebug.objects_warn=v4")


# ---- the selftest, ported step by step (spec 8.2) -----------------------------------------
class SelfTest:
    def __init__(self, d):
        self.d = d
        self.static_init = False
        self.descr = odebug.ObjectDescr(
            "selftest", is_static_object=lambda a: self.static_init,
            fixup_init=self.fixup_init, fixup_activate=self.fixup_activate,
            fixup_destroy=self.fixup_destroy, fixup_free=self.fixup_free)

    def fixup_init(self, addr, state):
        if state == State.ACTIVE:
            self.d.deactivate(addr, self.descr)
            self.d.init(addr, self.descr)
            return True
        return False

    def fixup_activate(self, addr, state):
        if state == State.NOTAVAILABLE:
            return True
        if state == State.ACTIVE:
            self.d.deactivate(addr, self.descr)
            self.d.activate(addr, self.descr)
            return True
        return False

    def fixup_destroy(self, addr, state):
        if state == State.ACTIVE:
            self.d.deactivate(addr, self.descr)
            self.d.destroy(addr, self.descr)
            return True
        return False

    def fixup_free(self, addr, state):
        if state == State.ACTIVE:
            self.d.deactivate(addr, self.descr)
            self.d.free(addr, self.descr)
            return True
        return False


SELFTEST_STEPS = [
    # (action, expected state, dfixups, dwarnings) -- spec 8.2, cumulative
    ("init", State.INIT, 0, 0),
    ("activate", State.ACTIVE, 0, 0),
    ("activate", State.ACTIVE, 1, 1),
    ("deactivate", State.INACTIVE, 1, 1),
    ("destroy", State.DESTROYED, 1, 1),
    ("init", State.DESTROYED, 1, 2),
    ("activate", State.DESTROYED, 1, 3),
    ("deactivate", State.DESTROYED, 1, 4),
    ("free", State.NONE, 1, 4),
    ("static+activate", State.ACTIVE, 1, 4),
    ("init", State.INIT, 2, 5),
    ("free", State.NONE, 2, 5),
    ("init", State.INIT, 2, 5),
    ("activate", State.ACTIVE, 2, 5),
    ("check_no_obj_freed", State.NONE, 3, 6),
]


def test_selftest_ported_step_by_step():
    with fresh(cpus=1) as k:
        d = k.debug_objects
        st = SelfTest(d)
        obj = BASE + 0x100                       # struct self_test: 80 bytes
        for i, (action, state, dfix, dwarn) in enumerate(SELFTEST_STEPS, 1):
            if action == "static+activate":
                st.static_init = True
                ret = d.activate(obj, st.descr)
            elif action == "check_no_obj_freed":
                d.check_no_obj_freed(obj, 80)
            else:
                ret = getattr(d, action)(obj, st.descr)
                if action == "activate":
                    assert ret == (-EINVAL if i == 7 else 0), i
            s = d.stats()
            assert d.state(obj) == state, i
            assert (s["fixups"], s["warnings"]) == (dfix, dwarn), i
        # the pool state it leaves (spec 8.3)
        assert pool_part(d.stats()) == dict(pool_free=1024, pool_pcp_free=17, pool_min_free=1007,
                                            pool_used=0, pool_max_used=17, on_free_list=0,
                                            objs_allocated=0, objs_freed=0)
        assert [r.kind for r in d.reports()] == [
            "activate active", "init destroyed", "activate destroyed", "deactivate destroyed",
            "init active", "free active"]


# ---- the master transition table (spec 4.2) -------------------------------------------------
def reach(d, addr, descr, state):
    """Put addr into `state` (None: untracked) without warnings."""
    if state is None:
        return
    d.init(addr, descr)
    if state == State.INACTIVE:
        d.deactivate(addr, descr)
    elif state == State.ACTIVE:
        d.activate(addr, descr)
    elif state == State.DESTROYED:
        d.destroy(addr, descr)


U = None  # untracked
# (call, start, fixup return) -> (state after, warning kind or None, fixup call or None, activate ret)
TABLE = [
    ("init", U, False, State.INIT, None, None, None),
    ("init", State.INIT, False, State.INIT, None, None, None),
    ("init", State.INACTIVE, False, State.INIT, None, None, None),
    ("init", State.ACTIVE, False, State.ACTIVE, "init active", ("init", State.ACTIVE), None),
    ("init", State.DESTROYED, False, State.DESTROYED, "init destroyed", None, None),
    ("activate", U, False, State.NONE, "activate not available", ("activate", State.NOTAVAILABLE), -EINVAL),
    ("activate", U, True, State.NONE, "activate not available", ("activate", State.NOTAVAILABLE), 0),
    ("activate", State.INIT, False, State.ACTIVE, None, None, 0),
    ("activate", State.INACTIVE, False, State.ACTIVE, None, None, 0),
    ("activate", State.ACTIVE, False, State.ACTIVE, "activate active", ("activate", State.ACTIVE), -EINVAL),
    ("activate", State.ACTIVE, True, State.ACTIVE, "activate active", ("activate", State.ACTIVE), 0),
    ("activate", State.DESTROYED, True, State.DESTROYED, "activate destroyed", None, -EINVAL),
    ("deactivate", U, True, State.NONE, "deactivate not available", None, None),
    ("deactivate", State.INIT, False, State.INACTIVE, None, None, None),
    ("deactivate", State.INACTIVE, False, State.INACTIVE, None, None, None),
    ("deactivate", State.ACTIVE, False, State.INACTIVE, None, None, None),
    ("deactivate", State.DESTROYED, True, State.DESTROYED, "deactivate destroyed", None, None),
    ("destroy", U, True, State.NONE, None, None, None),
    ("destroy", State.INIT, False, State.DESTROYED, None, None, None),
    ("destroy", State.INACTIVE, False, State.DESTROYED, None, None, None),
    ("destroy", State.ACTIVE, False, State.ACTIVE, "destroy active", ("destroy", State.ACTIVE), None),
    ("destroy", State.DESTROYED, True, State.DESTROYED, "destroy destroyed", None, None),
    ("free", U, True, State.NONE, None, None, None),
    ("free", State.INIT, False, State.NONE, None, None, None),
    ("free", State.INACTIVE, False, State.NONE, None, None, None),
    ("free", State.ACTIVE, False, State.ACTIVE, "free active", ("free", State.ACTIVE), None),
    ("free", State.DESTROYED, True, State.NONE, None, None, None),
    ("assert_init", U, False, State.NONE, "assert_init not available", ("assert_init", State.NOTAVAILABLE), None),
    ("assert_init", State.INIT, True, State.INIT, None, None, None),
    ("assert_init", State.INACTIVE, True, State.INACTIVE, None, None, None),
    ("assert_init", State.ACTIVE, True, State.ACTIVE, None, None, None),
    ("assert_init", State.DESTROYED, True, State.DESTROYED, None, None, None),   # no check!
]


@pytest.mark.parametrize("call,start,fret,after,warn,fix,ret", TABLE,
                         ids=[f"{c[0]}-{c[1].name if c[1] is not None else 'untracked'}-{c[2]}"
                              for c in TABLE])
def test_master_table(call, start, fret, after, warn, fix, ret):
    with kernel() as k:
        d = k.debug_objects
        rec = Recorder(ret=fret)
        a = BASE + 0x40
        reach(d, a, rec.descr, start)
        assert d.stats()["warnings"] == 0
        s0 = d.stats()
        r = getattr(d, call)(a, rec.descr)
        s1 = d.stats()
        assert d.state(a) == after
        if call == "activate":
            assert r == ret
        assert s1["warnings"] - s0["warnings"] == (1 if warn else 0)
        assert [x.kind for x in d.reports()] == ([warn] if warn else [])
        assert rec.calls == ([(fix[0], a, fix[1])] if fix else [])
        assert s1["fixups"] - s0["fixups"] == (1 if fix and fret else 0)


@pytest.mark.parametrize("call", ["activate", "deactivate", "destroy", "active_state"])
def test_astate_blocks_deactivate_and_active_state(call):
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("as")
        a = BASE + 0x80
        d.init(a, t)
        d.activate(a, t)
        d.active_state(a, t, 0, 7)
        assert d.lookup(a) == (State.ACTIVE, 7)
        assert d.stats()["warnings"] == 0
        d.deactivate(a, t)                      # astate != 0: warning, unchanged
        assert d.lookup(a) == (State.ACTIVE, 7)
        assert [r.kind for r in d.reports()] == ["deactivate active"]
        assert "(active state 7)" in d.reports()[0].text
        d.active_state(a, t, 3, 0)              # wrong expectation
        assert [r.kind for r in d.reports()][-1] == "active_state active"
        d.active_state(a, t, 7, 0)
        d.deactivate(a, t)
        assert d.lookup(a) == (State.INACTIVE, 0)
        d.active_state(a, t, 0, 0)
        assert d.reports()[-1].kind == "active_state inactive"
        d.active_state(a + 8, t, 0, 0)
        assert d.reports()[-1].kind == "active_state not available"


def test_descriptor_is_not_part_of_the_key():
    with kernel() as k:
        d = k.debug_objects
        a_rec, b_rec = Recorder("type_a"), Recorder("type_b")
        a = BASE + 0x200
        d.init(a, a_rec.descr)
        d.activate(a, a_rec.descr)
        d.activate(a, b_rec.descr)              # found; stored name printed, passed fixup
        assert "object type: type_a" in d.reports()[0].text
        assert b_rec.calls == [("activate", a, State.ACTIVE)] and a_rec.calls == []


# ---- static objects (spec 4.3) ------------------------------------------------------------------
def test_static_objects():
    with kernel() as k:
        d = k.debug_objects
        rec = Recorder(static=True)
        a = BASE + 0x300
        assert d.activate(a, rec.descr) == 0
        assert d.state(a) == State.ACTIVE
        d.assert_init(a + 8, rec.descr)
        assert d.state(a + 8) == State.INIT
        assert d.stats()["warnings"] == 0 and rec.calls == []
        plain = odebug.ObjectDescr("plain")             # no is_static_object: not available
        assert d.activate(a + 16, plain) == -EINVAL
        d.assert_init(a + 24, plain)
        assert [r.kind for r in d.reports()] == ["activate not available", "assert_init not available"]


# ---- messages, reports, the print limit ------------------------------------------------------------
def test_message_formats_and_print_limit():
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("timer_list", debug_hint=lambda a: "nci_cmd_timer+0x0/0xb0")
        n = odebug.ObjectDescr("work_struct")
        a = BASE + 0x1000
        d.init(a, t)
        d.activate(a, t)
        d.free(a, t)
        line = "ODEBUG: free active (active state 0) object: ffffc90000001000 object type: timer_list hint: nci_cmd_timer+0x0/0xb0"
        assert line in k.dmesg()
        r = d.reports()[0]
        assert r.kind == "free active" and r.subsystem == "odebug"
        assert r.addr == a and r.object == a
        assert r.text.splitlines()[0] == "------------[ cut here ]------------"
        assert "WARNING: CPU: 0 PID: " in r.text and "test_debugobjects.py" in r.text
        for i in range(10):                     # 10 more, with another type
            d.deactivate(BASE + 0x2000 + 8 * i, n)
        assert d.stats()["warnings"] == 11
        assert len(d.reports()) == 11
        assert k.dmesg().count("ODEBUG: deactivate not available") == 4   # 5 printed in all
        assert "object type: work_struct hint: 0x0" in k.dmesg()


def test_v53_message_format_and_int_hint():
    with kernel("odebug.objects_warn=v5.3") as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("timer_list", debug_hint=lambda a: a + 0x10)
        d.deactivate(BASE, t)
        assert ("ODEBUG: deactivate not available (active state 0) object type: timer_list "
                "hint: 0xffffc90000000010") in k.dmesg()


def test_panic_on_warn():
    with kernel("panic_on_warn=1") as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        with pytest.raises(odebug.KernelBug) as e:
            d.deactivate(BASE, t)
        assert e.value.report.kind == "deactivate not available"
        d.init(BASE, t)                         # the kernel is intact
        assert d.state(BASE) == State.INIT


def test_on_stack_check():
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        lo, hi = d.stack_bounds()
        assert lo < hi
        d.init_on_stack(BASE, t)                 # not on the stack, but annotated
        d.init((lo + hi) // 2, t)                # on the stack, not annotated
        d.init_on_stack((lo + hi) // 2 + 64, t)  # fine
        assert [r.kind for r in d.reports()] == ["object is NOT on stack, but annotated",
                                                 "object is on stack, but NOT annotated"]
        assert d.stats()["warnings"] == 0
        assert d.state(BASE) == State.INIT
        assert re.search(r"ODEBUG: object ffffc90000000000 is NOT on stack [0-9a-f]{16}, but annotated\.",
                         k.dmesg())


def test_fixup_reentrancy_and_exceptions():
    with kernel() as k:
        d = k.debug_objects
        seen = []

        def bad(addr, state):
            seen.append(state)
            raise RuntimeError("fixup exploded")
        t = odebug.ObjectDescr("t", fixup_activate=bad)
        with pytest.raises(RuntimeError, match="exploded"):
            d.activate(BASE, t)                 # untracked: warning, then the fixup raises
        assert seen == [State.NOTAVAILABLE]
        s = d.stats()
        assert (s["warnings"], s["fixups"]) == (1, 0)
        assert d.activate(BASE, odebug.ObjectDescr("u")) == -EINVAL   # still usable


def test_descriptor_lifetime():
    with kernel() as k:
        d = k.debug_objects
        for i in range(50):
            t = odebug.ObjectDescr(f"tmp{i}", debug_hint=lambda a: "h+0x0/0x1")
            d.init(BASE + 64 * i, t)
            d.activate(BASE + 64 * i, t)
        del t
        gc.collect()
        d.check_no_obj_freed(BASE, 64 * 50)      # reads the stored descriptors
        assert d.stats()["warnings"] == 50
        # newest first in the bucket: the first printed is the last made
        assert "object type: tmp49 hint: h+0x0/0x1" in k.dmesg()


def test_bad_input():
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        with pytest.raises(TypeError):
            d.init(BASE, "not a descr")
        with pytest.raises(TypeError):
            d.init("0x10", t)
        with pytest.raises(ValueError):
            d.init(-1, t)
        with pytest.raises(ValueError):
            d.check_no_obj_freed(BASE, -1)
        with pytest.raises(ValueError):
            d.check_no_obj_freed(BASE, 1 << 50)
        with pytest.raises(ValueError):
            odebug.ObjectDescr("")
        with pytest.raises(TypeError):
            odebug.ObjectDescr("x", fixup_free=3)
    with pytest.raises(odebug.ClosedError):
        k.debug_objects.init(BASE, t)


# ---- the range check (spec 6) ---------------------------------------------------------------------
def test_range_check_start_address_rule_and_chunks():
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        s = BASE + 0x10_0000
        for off in (-8, 0, 4096 * 3 + 8, 4096 * 5 - 8, 4096 * 5):
            d.init(s + off, t)
        d.check_no_obj_freed(s, 4096 * 5)
        assert d.lookup(s - 8) is not None           # starts before: not detected
        assert d.lookup(s) is None and d.lookup(s + 4096 * 3 + 8) is None
        assert d.lookup(s + 4096 * 5 - 8) is None    # starts inside, extends past the end
        assert d.lookup(s + 4096 * 5) is not None    # starts at the end: outside
        assert d.stats()["warnings"] == 0
        d.check_no_obj_freed(s + 4096 * 5, 0)        # size 0 frees nothing
        assert d.lookup(s + 4096 * 5) is not None
        assert d.stats()["max_checked"] >= 3


def test_range_check_uses_stored_descriptor_and_bounds_rescan():
    with kernel() as k:
        d = k.debug_objects
        freeing = Recorder("stored")
        d.init(BASE, freeing.descr)
        d.activate(BASE, freeing.descr)

        def fixup_free(addr, state):             # really frees
            d.deactivate(addr, st)
            d.free(addr, st)
            return True
        st = odebug.ObjectDescr("good", fixup_free=fixup_free)
        d.init(BASE + 64, st)
        d.activate(BASE + 64, st)
        d.check_no_obj_freed(BASE, 4096)
        assert freeing.calls == [("free", BASE, State.ACTIVE)]   # stored descr, once (bounded)
        assert d.state(BASE) == State.ACTIVE and d.state(BASE + 64) == State.NONE
        s = d.stats()
        assert (s["warnings"], s["fixups"]) == (2, 1)


def test_slab_frees_are_checked():
    with kernel() as k:
        d = k.debug_objects
        rec = Recorder("timer_list")
        p = k.kmalloc(128)
        d.init(p + 16, rec.descr)
        d.activate(p + 16, rec.descr)
        k.kfree(p)                                  # slab_free_hook -> debug_check_no_obj_freed
        assert [r.kind for r in d.reports()] == ["free active"]
        assert rec.calls == [("free", p + 16, State.ACTIVE)]
        q = k.alloc_pages(0)
        d.init(q + 256, rec.descr)
        k.free_pages(q, 0)                          # page free hook
        assert d.lookup(q + 256) is None


@pytest.mark.parametrize("cmdline,how", [("", "kmalloc"), ("", "cache"), ("kasan=off", "cache")])
@pytest.mark.parametrize("where", ["first", "second"])
def test_free_of_an_object_across_two_chunks_checks_both(cmdline, how, where):
    """An object whose slot crosses a page (ODEBUG_CHUNK_SIZE) boundary -- a
    kmalloc-1k object with KASAN's red zone, a 1000-byte cache's -- is checked
    in the buckets of both chunks, so an ACTIVE tracker in either part is found:
    on the public API's fast path too (kmalloc), whose empty-buckets shortcut
    (nothing_tracked) must look at both, as the walk does."""
    with kernel(cmdline) as k:
        d = k.debug_objects
        rec = Recorder("timer_list")
        if how == "kmalloc":
            alloc, free = (lambda: k.kmalloc(1000)), k.kfree
        else:
            c = k.kmem_cache_create("x1000", 1000)
            alloc, free = c.alloc, c.free
        for _ in range(64):                         # the fast path's templates
            free(alloc())
        objs = [alloc() for _ in range(64)]
        cross = [p for p in objs if p // 4096 != (p + 999) // 4096]
        assert len(cross) >= 3, "too few objects cross a page boundary"
        for p in cross[:3]:
            addr = p + 8 if where == "first" else ((p + 999) & ~4095) + 8
            d.init(addr, rec.descr)
            d.activate(addr, rec.descr)
            free(p)
            assert rec.calls[-1] == ("free", addr, State.ACTIVE)
        assert [r.kind for r in d.reports()] == ["free active"] * 3
        for p in objs:
            if p not in cross[:3]:
                free(p)
        assert [r.kind for r in d.reports()] == ["free active"] * 3


# ---- stats ----------------------------------------------------------------------------------------------
def test_stats_text_format():
    with kernel(cpus=2) as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        for i in range(40):
            d.init(BASE + 64 * i, t, cpu=i % 2)
        text = d.stats_text()
        lines = text.split("\n")
        assert lines[-1] == "" and len(lines) == 13
        for line, name in zip(lines, STATS_FIELDS):
            assert re.fullmatch(r"[a-z_]+ *:-?\d+", line)
            assert line.index(":") == 14 and line[:14].rstrip() == name
        s = d.stats()
        assert list(s) == list(STATS_FIELDS)
        assert text == "".join(f"{n:<14}:{s[n]}\n" for n in STATS_FIELDS)
        i = d.internals()
        P = sum(i["pcp_free"])
        assert s["pool_pcp_free"] == P
        assert s["pool_free"] == i["obj_pool_free"] + P
        assert s["pool_used"] == i["obj_pool_used"] - P == 40
        assert s["pool_min_free"] == i["obj_pool_min_free"]     # raw, uncorrected
        assert s["pool_max_used"] == i["obj_pool_max_used"]


def test_max_chain_only_on_miss():
    with kernel() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        for i in range(10):
            d.init(BASE + 64 * i, t)            # one chunk: one bucket
        assert d.stats()["max_chain"] == 9      # the 10th init's miss walked 9
        d.activate(BASE + 64 * 9, t)            # hits never update it
        d.activate(BASE, t)
        assert d.stats()["max_chain"] == 9
        d.deactivate(BASE + 64 * 10, t)         # a miss over 10
        assert d.stats()["max_chain"] == 10


# ---- spec 12: the model's numbers ---------------------------------------------------------------------
def test_spec12_A():
    with fresh() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        d.init(BASE, t)
        s = d.stats()
        assert (s["pool_free"], s["pool_pcp_free"], s["pool_min_free"], s["pool_used"],
                s["pool_max_used"]) == (1023, 16, 1007, 1, 17)
        d.free(BASE, t)
        s = d.stats()
        assert (s["pool_free"], s["pool_pcp_free"], s["pool_used"]) == (1024, 17, 0)
        assert not d.internals()["work_pending"]


@pytest.mark.parametrize("n,inits,frees,work", [
    (100, (924, 2, 922, 100, 102, 0), (1024, 51, 0, False), (0, 0, 1024)),
    (2000, (288, 6, 255, 2000, 2006, 1264), (1248, 51, 1040, True), (0, 1040, 1248)),
    (5000, (296, 15, 255, 5000, 5015, 4272), (4256, 51, 1040, True), (0, 1040, 4256)),
])
def test_spec12_B(n, inits, frees, work):
    with fresh() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        for i in range(n):
            d.init(BASE + 64 * i, t)
        s = d.stats()
        assert (s["pool_free"], s["pool_pcp_free"], s["pool_min_free"], s["pool_used"],
                s["pool_max_used"], s["objs_allocated"]) == inits
        for i in range(n):
            d.free(BASE + 64 * i, t)
        s = d.stats()
        assert (s["pool_free"], s["pool_pcp_free"], s["on_free_list"],
                d.internals()["obj_freeing"]) == frees
        k.advance(ms=100)
        s = d.stats()
        assert (s["on_free_list"], s["objs_freed"], s["pool_free"]) == work
        k.advance(ms=1000)                      # a second run would free nothing more
        assert d.stats()["objs_freed"] == work[1]


@pytest.mark.parametrize("burst", [2000, 5000])
def test_spec12_C_policies(burst):
    expect = {2000: ((59344, 59262), (52224, 52000)), 5000: ((209872, 209797), (55232, 52000))}
    got = {}
    for policy in ("eager", "lazy"):
        with fresh(f"odebug.objects_free={policy}") as k:
            d = k.debug_objects
            t = odebug.ObjectDescr("t")
            for _ in range(50):
                for i in range(burst):
                    d.init(BASE + 64 * i, t)
                for i in range(burst):
                    d.free(BASE + 64 * i, t)
                    if policy == "eager":
                        k.advance(ns=0)        # the immediate work runs right away
                k.advance(ms=100)
            s = d.stats()
            got[policy] = (s["objs_allocated"], s["objs_freed"])
            assert s == {**s, **model.scenario_burst(policy == "eager", 50, burst)}
    assert got["eager"] == expect[burst][0] and got["lazy"] == expect[burst][1]


# ---- the freeing policies --------------------------------------------------------------------------------
def churn_ops(d, t, rounds=6, n=3000, step=None):
    for r in range(rounds):
        for i in range(n):
            d.init(BASE + 64 * i, t)
            if i % 3 == 0:
                d.activate(BASE + 64 * i, t)
        for i in range(n):
            if i % 3 == 0:
                d.deactivate(BASE + 64 * i, t)
            if i % 5 != 4 or r == rounds - 1:
                d.free(BASE + 64 * i, t)
            if step:
                step(i)


def test_policies_same_states_different_traffic():
    res = {}
    for policy in ("lazy", "eager"):
        with kernel(f"odebug.objects_free={policy}", cpus=1) as k:
            d = k.debug_objects
            t = odebug.ObjectDescr("t")
            churn_ops(d, t, step=lambda i: k.advance(ms=1) if i % 100 == 0 else None)
            states = [d.lookup(BASE + 64 * i) for i in range(3000)]
            k.advance(ms=500)
            res[policy] = (states, d.stats(), d.internals())
    assert res["lazy"][0] == res["eager"][0]
    sl, se = res["lazy"][1], res["eager"][1]
    assert (sl["warnings"], sl["fixups"]) == (se["warnings"], se["fixups"])
    assert sl["objs_allocated"] < se["objs_allocated"]
    assert sl["objs_freed"] < se["objs_freed"]


def test_lazy_bounds_and_rate():
    with kernel(cpus=1) as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        runs = []
        for r in range(8):
            for i in range(6000):
                d.init(BASE + 64 * i, t)
            for i in range(6000):
                d.free(BASE + 64 * i, t)
                assert d.stats()["on_free_list"] <= 1040 if i % 500 == 0 else True
            assert d.stats()["on_free_list"] <= 1040
            before = d.internals()["work_runs"]
            k.advance(ms=99)                      # not yet: at most 10 Hz
            assert d.internals()["work_runs"] == before
            k.advance(ms=1)
            runs.append(d.internals()["work_runs"] - before)
        assert runs == [1] * 8


def test_lazy_refill_first_and_trylock():
    with fresh() as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        for i in range(3000):
            d.init(BASE + 64 * i, t)
        for i in range(3000):
            d.free(BASE + 64 * i, t)
        assert d.stats()["on_free_list"] == 1040
        for i in range(1500):                     # the pool drops below full again
            d.init(BASE + 64 * i, t)
        i0 = d.internals()
        assert i0["obj_pool_free"] < i0["pool_size"]
        k.advance(ms=100)                         # refill only: nothing freed
        s = d.stats()
        assert s["objs_freed"] == 0 and s["on_free_list"] < 1040
        # a failed trylock: nothing happens and nothing reschedules the work
        for i in range(1500):
            d.free(BASE + 64 * i, t)
        assert d.internals()["obj_freeing"]
        d.fail_trylock(1)
        before = d.stats()
        k.advance(ms=100)
        i1 = d.internals()
        assert i1["trylock_failed"] == 1 and not i1["work_pending"] and not i1["obj_freeing"]
        assert pool_part(d.stats()) == pool_part(before)
        d.init(BASE, t)
        d.free(BASE, t)                            # the next free reschedules
        assert d.internals()["work_pending"]


def test_eager_frees_immediately():
    with fresh("odebug.objects_free=eager") as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        for i in range(3000):
            d.init(BASE + 64 * i, t)
        for i in range(3000):
            d.free(BASE + 64 * i, t)
        assert d.internals()["work_pending"]
        k.advance(ns=0)
        s = d.stats()
        assert s["on_free_list"] == 0 and s["objs_freed"] > 0
        # the frees that found the pool at or below full went to it (with their
        # lookahead batch): it ends between full and full + 16
        assert 1040 <= d.internals()["obj_pool_free"] <= 1040 + 16


# ---- OOM (spec 5.6) ----------------------------------------------------------------------------------------
def test_oom():
    with kernel(cpus=1) as k:
        d = k.debug_objects
        t = odebug.ObjectDescr("t")
        k.set_fault("failslab", probability=100, times=-1)
        n = 0
        while d.enabled:
            d.init(BASE + 64 * n, t)
            n += 1
        assert n == 1025                           # 1024 trackers, the next init fails
        assert "ODEBUG: Out of memory. ODEBUG disabled" in k.dmesg()
        s = d.stats()                              # still readable
        assert s["pool_used"] == 0 and s["pool_free"] == 1024
        assert d.lookup(BASE) is None
        assert d.activate(BASE, t) == 0            # no-ops from now on
        d.deactivate(BASE, t)
        assert d.stats()["warnings"] == 0
        assert d.internals()["hashed"] == 0


# ---- threads ------------------------------------------------------------------------------------------------
@pytest.mark.threads
@pytest.mark.parametrize("policy", ["lazy", "eager"])
def test_threaded_churn_invariants(policy):
    with kernel(f"odebug.objects_free={policy}", cpus=4, clock="real") as k:
        d = k.debug_objects
        r = d.churn(rounds=30, wave=400, lifetime=4, threads=True)
        assert r["cycles"] > 0
        # With clock="real" the kernel's worker thread may still be running
        # free_obj_work: internals() and stats() are two snapshots, so read them
        # until two rounds agree (work_runs moves with every run of the worker).
        deadline = time.monotonic() + 10
        while True:
            i, s = d.internals(), d.stats()
            if (i, s) == (d.internals(), d.stats()) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        P = sum(i["pcp_free"])
        assert i["hashed"] == 0 and s["warnings"] == 0
        assert all(0 <= c <= 64 for c in i["pcp_free"])
        assert i["obj_pool_used"] - P == i["hashed"]
        assert (i["obj_pool_free"] + P + i["obj_nr_tofree"] + i["hashed"]
                == 1024 + s["objs_allocated"] - s["objs_freed"])


@pytest.mark.threads
def test_python_threads_with_reentrant_fixups():
    with kernel(cpus=2) as k:
        d = k.debug_objects
        errors = []

        def fixup_activate(addr, state):
            if state == State.ACTIVE:
                d.deactivate(addr, t)
                d.activate(addr, t)
                return True
            return False
        t = odebug.ObjectDescr("t", fixup_activate=fixup_activate)

        def worker(cpu):
            try:
                base = BASE + (cpu << 30)
                for i in range(300):
                    d.init(base + 64 * i, t, cpu=cpu)
                    d.activate(base + 64 * i, t, cpu=cpu)
                    d.activate(base + 64 * i, t, cpu=cpu)      # warning + fixup
                    d.deactivate(base + 64 * i, t, cpu=cpu)
                    d.free(base + 64 * i, t, cpu=cpu)
            except Exception as e:  # pragma: no cover
                errors.append(e)
        ths = [threading.Thread(target=worker, args=(c,)) for c in range(2)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        assert not errors
        s = d.stats()
        assert (s["warnings"], s["fixups"]) == (600, 600)
        assert d.internals()["hashed"] == 0
