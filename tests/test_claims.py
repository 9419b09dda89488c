"""The per-harvest claim: exclusive across processes and claim objects, dropped when its holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from swath.harvesters.claims import HarvestClaim

ROOT = Path(__file__).resolve().parents[1]


def test_a_claim_is_exclusive_until_released_and_leaves_no_file(tmp_path):
    first, second = (HarvestClaim(data_root=tmp_path, harvest_id="h:1") for _ in range(2))
    assert first.try_acquire()
    assert not second.try_acquire()
    assert second.holder() == f"pid {os.getpid()} on {os.uname().nodename}"
    assert HarvestClaim(data_root=tmp_path, harvest_id="h:2").try_acquire()  # other ids are independent
    first.release()
    assert not first.path.exists()
    assert second.try_acquire()
    second.check()  # still the claim file: no ClaimLost
    second.release()


def test_waiting_gives_up_when_asked(tmp_path):
    holder = HarvestClaim(data_root=tmp_path, harvest_id="h")
    assert holder.try_acquire()
    give_up = threading.Event()
    give_up.set()
    assert not HarvestClaim(data_root=tmp_path, harvest_id="h").acquire(give_up=give_up)


def test_the_claim_of_a_killed_process_is_free_at_once(tmp_path):
    code = ("import sys; from pathlib import Path; from harvesters.claims import HarvestClaim; "
            "c = HarvestClaim(data_root=Path(sys.argv[1]), harvest_id='h'); assert c.try_acquire(); "
            "print('held', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        waiter = HarvestClaim(data_root=tmp_path, harvest_id="h")
        assert not waiter.try_acquire()
        assert waiter.holder() == f"pid {child.pid} on {os.uname().nodename}"
        child.send_signal(signal.SIGKILL)
        child.wait(60)
        assert waiter.try_acquire()  # the kernel dropped the dead holder's lock
        waiter.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
