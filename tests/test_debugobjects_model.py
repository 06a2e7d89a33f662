"""The hypothesis state machine of odebug.testing.DebugObjectsMachine: the C
debugobjects against odebug/_models.py, step by step (states, return values,
warnings in order, fixups, every pool counter, the work's scheduling), under
both freeing policies, with and without the boot selftest, several vCPUs,
static objects, re-entrant fixups, range checks, OOM and failed trylocks."""
import pytest
from hypothesis import HealthCheck, settings

import odebug
from odebug import _models as model
from odebug.testing import DebugObjectsMachine


class NoSelftestMachine(DebugObjectsMachine):
    selftest = False


class EagerMachine(DebugObjectsMachine):
    policy = "eager"


class EagerNoSelftestMachine(EagerMachine):
    selftest = False


SETTINGS = settings(max_examples=13, stateful_step_count=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TestLazy = DebugObjectsMachine.TestCase
TestLazy.settings = SETTINGS
TestLazyNoSelftest = NoSelftestMachine.TestCase
TestLazyNoSelftest.settings = SETTINGS
TestEager = EagerMachine.TestCase
TestEager.settings = SETTINGS
TestEagerNoSelftest = EagerNoSelftestMachine.TestCase
TestEagerNoSelftest.settings = SETTINGS


@pytest.mark.parametrize("selftest", [False, True])
def test_model_scaled_start_state(selftest):
    """The model's start state matches a booted kernel."""
    cmd = "" if selftest else "odebug.objects_selftest=off"
    with odebug.Kernel(cmd, cpus=3, ram="32M") as k:
        m = model.Model(ncpus=3, start=k.debug_objects.internals() if selftest else None)
        s = k.debug_objects.stats()
        assert {f: s[f] for f in m.pool.stats()} == m.pool.stats()
