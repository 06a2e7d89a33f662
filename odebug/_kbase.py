"""The base class the Kernel's mixins (slab, kasan, sched) are type-checked against.

At run time it is ``object``: the mixins stay plain classes and ``odebug.Kernel``
derives from them and from ``_core.Kernel`` as before.  For a type checker it is
``_core.Kernel`` plus what ``odebug.Kernel`` gives the mixins, so that ``self``
can be passed to the binding's functions, which take the kernel."""
from __future__ import annotations

from typing import TYPE_CHECKING, ContextManager, Optional

from . import _core

if TYPE_CHECKING:  # pragma: no cover
    class KernelBase(_core.Kernel):
        def _cpu(self, cpu: Optional[int]) -> ContextManager[object]: ...
else:
    KernelBase = object
