"""Structured kernel reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional


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
        return cls(**d)

    def __str__(self) -> str:
        return self.text
