"""Structured kernel reports, and :class:`ReportKind`, every kind odebug reports."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Pattern, Tuple, Union

# ---- the kinds ----------------------------------------------------------------------------
_KASAN_KINDS = (
    "out-of-bounds", "slab-out-of-bounds", "global-out-of-bounds", "stack-out-of-bounds",
    "alloca-out-of-bounds", "vmalloc-out-of-bounds", "use-after-free", "slab-use-after-free",
    "double-free", "invalid-free", "null-ptr-deref", "user-memory-access",
    "wild-memory-access", "unknown-crash",
)
_SLUB_KINDS = tuple(f"{w} overwritten" for w in (
    "Left Redzone", "Right Redzone", "kmalloc Redzone", "Poison", "End Poison",
    "Object padding", "Alignment padding", "Padding")) + (
    "Freechain corrupt", "Freepointer corrupt", "Freelist Pointer check fails",
    "Invalid object pointer", "Object already free", "Wrong slab cache", "no slab for object",
    "Not a valid slab page", "page slab pointer corrupt.", "objects > max", "inuse > max",
    "Wrong number of objects", "Wrong object count", "Bulk free expected objects",
    "Objects remaining on __kmem_cache_shutdown()", "Slab cache still has objects", "TRACE",
    "WARNING in slab_free_after_rcu_debug",
)
_ODEBUG_OPS = ("init", "activate", "deactivate", "destroy", "free", "assert_init", "active_state")
_ODEBUG_STATES = ("none", "initialized", "inactive", "active", "destroyed", "not available")
_ODEBUG_KINDS = tuple(f"{op} {st}" for op in _ODEBUG_OPS for st in _ODEBUG_STATES) + (
    "object is on stack, but NOT annotated", "object is NOT on stack, but annotated",
    "tracker list corrupt", "free of a tracker",
)
_VMALLOC_KINDS = ("vmalloc error", "Trying to vfree() nonexistent vm area",
                  "Trying to vfree() bad address", "Trying to vunmap() nonexistent vm area")
_OTHER_KINDS = ("data-race", "deadlock", "stall", "page allocation failure") + _VMALLOC_KINDS

#: subsystem -> its kinds (``user``: any kind a user's ``k.report()`` gives)
KINDS_BY_SUBSYSTEM = {"kasan": _KASAN_KINDS, "slub": _SLUB_KINDS, "odebug": _ODEBUG_KINDS,
                      "kcsan": ("data-race",), "sched": ("deadlock", "stall"),
                      "kernel": ("page allocation failure",) + _VMALLOC_KINDS}


def _member_name(kind: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", kind)).strip("_").upper()


#: Every report kind odebug makes, in the kernel's words (a ``StrEnum``: a member
#: equals its string, ``ReportKind.DOUBLE_FREE == "double-free"``).  KASAN's bug
#: types, SLUB's ``slab_err``/``object_err`` reasons and ``<what> overwritten``
#: checks, ODEBUG's ``<operation> <state>`` warnings and its own, KCSAN's
#: ``data-race``, the scheduler's ``deadlock``/``stall``.  A cache's name is never
#: part of a kind (it is the report's ``.cache``); the full headline is ``.title``.
ReportKind = enum.StrEnum("ReportKind",   # type: ignore[misc]
                          [(_member_name(k), k) for k in dict.fromkeys(
                              _KASAN_KINDS + _SLUB_KINDS + _ODEBUG_KINDS + _OTHER_KINDS)],
                          module=__name__)

_KIND_VALUES = frozenset(k.value for k in ReportKind)
_SEPARATOR = re.compile(r"^(=+|-+|-+\[ cut here \]-+)$")


@dataclass(frozen=True)
class Track:
    """An alloc or free track: caller address, vCPU, task id, jiffies and the stack."""
    addr: int
    cpu: int
    pid: int
    when: int
    handle: int
    stack: str

    @classmethod
    def _from_dict(cls, d: Optional[Dict[str, Any]]) -> Optional["Track"]:
        return None if d is None else cls(**d)


@dataclass(frozen=True)
class Report:
    """One detection: subsystem ('kasan', 'slub', 'odebug', 'kernel'), the kernel's
    own word for it (``kind``), its kernel-format ``text`` and the structured fields."""
    seq: int
    subsystem: str
    kind: str
    text: str
    addr: int = 0
    size: int = 0
    is_write: Optional[bool] = None
    cache: Optional[str] = None
    object: int = 0
    offset: int = 0
    alloc_track: Optional[Track] = None
    free_track: Optional[Track] = None
    extra: Dict[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def _from_dict(cls, d: Dict[str, Any]) -> "Report":
        d = dict(d)
        d["alloc_track"] = Track._from_dict(d.get("alloc_track"))
        d["free_track"] = Track._from_dict(d.get("free_track"))
        if d.get("subsystem") != "user" and d.get("kind") in _KIND_VALUES:
            d["kind"] = ReportKind(d["kind"])
        return cls(**d)

    @property
    def title(self) -> str:
        """The report's headline as the kernel prints it (its first line that is
        not a separator), e.g. ``BUG kmalloc-64 (Not tainted): kmalloc Redzone
        overwritten``, ``BUG: KASAN: double-free in f``, ``ODEBUG: free active
        (active state 0) object type: t hint: 0x0``."""
        for ln in self.text.splitlines():
            ln = ln.strip()
            if ln and not _SEPARATOR.match(ln):
                return ln
        return str(self.kind)

    @property
    def message(self) -> str:
        """What the report says, without its prefix: for a SLUB ``BUG <cache>
        (<taint>): <message>`` report the message (the kind, with the cache's name
        where the kernel puts it, e.g. ``Objects remaining in foo on
        __kmem_cache_shutdown()``); else the kind."""
        if self.subsystem == "slub":
            m = re.match(r"^BUG \S+ \([^)]*\): (.*)$", self.title)
            if m:
                return m.group(1)
        return str(self.kind)

    def matches(self, what: Union[str, "Pattern[str]", None]) -> bool:
        """``what`` is a :class:`ReportKind` (the kind, exactly), a string (the
        kind, or a substring of the title), a compiled regex (searched in the
        title) or None (any)."""
        if what is None:
            return True
        if isinstance(what, re.Pattern):
            return what.search(self.title) is not None
        if isinstance(what, ReportKind):
            return self.kind == what
        return self.kind == what or what in self.title

    def __str__(self) -> str:
        return self.text


class SuppressedReportsWarning(UserWarning):
    """KASAN found more bad accesses than it reported: without ``kasan_multi_shot``
    (the kernel's default) only the first report since boot is printed."""


class Reports(List[Report]):
    """``k.reports``: a list of :class:`Report`, oldest first.  ``suppressed`` counts
    the KASAN detections not reported because ``kasan_multi_shot`` is off (the
    kernel's default: one KASAN report per boot; ``clear_reports()`` does not
    re-arm it); the repr says so when there are any."""

    suppressed: int = 0

    def __repr__(self) -> str:
        base = super().__repr__()
        if not self.suppressed:
            return base
        return (f"{base}  # and {self.suppressed} KASAN report(s) suppressed: without "
                f"kasan_multi_shot only the first is made (k.kasan.multi_shot = True)")

