"""Structured kernel reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


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
    def _from_dict(cls, d: Optional[dict]) -> Optional["Track"]:
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
    extra: dict = field(default_factory=dict, compare=False)

    @classmethod
    def _from_dict(cls, d: dict) -> "Report":
        d = dict(d)
        d["alloc_track"] = Track._from_dict(d.get("alloc_track"))
        d["free_track"] = Track._from_dict(d.get("free_track"))
        return cls(**d)

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

