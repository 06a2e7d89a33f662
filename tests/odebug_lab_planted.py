"""A user's machine with a planted double free (imported by name in lab.fuzz_task)."""
from hypothesis import strategies as st
from hypothesis.stateful import rule

from odebug.testing import QuarantineMachine


class Planted(QuarantineMachine):
    @rule(size=st.sampled_from([16, 100]))
    def buggy(self, size):
        p = self.kernel.kmalloc(size)
        self.kernel.kfree(p)
        if size == 100:
            self.kernel.kfree(p)
