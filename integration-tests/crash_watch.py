"""Runs crash_child.py drivers and kills them with SIGKILL when a chosen kind of file first appears
in the table directory: no hook in the product, only a tight watch on what it writes.

Order of a sparklance write: tasks create data files under data/; then the driver writes deletion
files (_deletions/), the transaction file (_transactions/), the manifest as a `.tmp-*.partial`
file in _versions/ that is hard-linked to `<version>.manifest` (the commit) and then removed, and
last the latest_version_hint.json (through another temp file, moved over the old hint).
"""
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

CHILD = Path(__file__).with_name("crash_child.py")
WRITTEN_DIRS = ("data", "_deletions", "_transactions", "_versions")
HINT = "latest_version_hint.json"
BOOT_TIMEOUT = 300
STATEMENT_TIMEOUT = 180
# Between polls the watch pauses, leaving both cores to the driver, except once a commit is in
# flight (its transaction file exists) and the trigger is one of the commit's last, brief files.
POLL_PAUSE = 0.001
SPIN_ONCE = {"manifest temp": "transaction", "manifest": "transaction"}


def listing(table):
    """The names in each directory a write adds files to."""
    return {d: set(os.listdir(table / d)) if (table / d).is_dir() else set() for d in WRITTEN_DIRS}


def _appeared(directory, suffix=""):
    def check(table, before):
        try:
            names = os.listdir(table / directory)
        except FileNotFoundError:
            return False
        return any(n.endswith(suffix) and n not in before[directory] for n in names)
    return check


# Each trigger fires when the first file of its kind appears; "random" fires at once, so the kill
# comes after the delay alone.
TRIGGERS = {
    "data": _appeared("data"),
    "deletion": _appeared("_deletions"),
    "transaction": _appeared("_transactions"),
    "manifest temp": _appeared("_versions", ".partial"),
    "manifest": _appeared("_versions", ".manifest"),
    "random": lambda table, before: True,
}


def manifest_version(name):
    """The version a V2 manifest name (u64::MAX - version, zero-padded) stands for."""
    return (1 << 64) - 1 - int(name[:-len(".manifest")])


def reached(table, before):
    """How far the dead write got, told by what it left behind (newest step first)."""
    new = {d: names - before[d] for d, names in listing(table).items()}
    versions = table / "_versions"
    manifests = [n for n in new["_versions"] if n.endswith(".manifest")]
    temps = [n for n in new["_versions"] if n.endswith(".partial")]
    if manifests:
        if json.loads((versions / HINT).read_text())["version"] == manifest_version(manifests[0]):
            return "committed, hint written"
        linked = os.stat(versions / manifests[0]).st_ino
        if any(os.stat(versions / t).st_ino == linked for t in temps):
            return "manifest linked, its temp file not yet removed"
        return "committed, hint being written" if temps else "committed, hint not written"
    if temps:
        return "manifest temp file written, not linked"
    for directory, step in (("_transactions", "transaction file written"), ("_deletions", "deletion files written"),
                            ("data", "data files written")):
        if new[directory]:
            return step
    return "nothing written"


def _gone(pid):
    """True once `pid` has exited (a zombie that nobody reaps counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


class Driver:
    """One driver script's process and its driver JVM, in a process group of their own."""

    def __init__(self, warehouse, local_dir, ident, statement, log_path, jvm_options=(), child=CHILD):
        """`child` is the driver script: crash_child.py, or stream_child.py whose `statement` is a
        streaming query's spec."""
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(child), str(warehouse), str(local_dir), ident, statement, *jvm_options],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                bufsize=0)  # unbuffered, so that select() sees every line readline() has not taken
        self.jvm_pid = None

    def _log_tail(self):
        return Path(self.log_path).read_text()[-4000:]

    def wait_ready(self):
        # The JVM shares this stdout and may print warnings of its own before READY.
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = self.proc.stdout.readline().decode() if ready else ""
            if not line or line.startswith("READY"):
                break
        if not line:
            self.kill()
            raise AssertionError(f"driver did not start; its log ends with:\n{self._log_tail()}")
        self.jvm_pid = int(line.split()[1])
        # SIGKILL to the group must take the JVM down with the Python process, not leave it running.
        assert os.getpgid(self.jvm_pid) == self.proc.pid

    def _go(self):
        self.proc.stdin.write(b"go\n")
        return time.monotonic()

    def _await_done(self):
        for line in iter(self.proc.stdout.readline, b""):
            if line.startswith(b"DONE"):
                return
        raise AssertionError(f"statement failed:\n{self._log_tail()}")

    def run_to_end(self):
        """Runs the statement undisturbed; returns once it has finished."""
        self._go()
        self._await_done()

    def wait_exit(self):
        """Waits until the driver, JVM included, has exited by itself."""
        self.proc.stdout.read()
        assert self.proc.wait() == 0, f"driver failed:\n{self._log_tail()}"
        self._wait_jvm_gone()

    def run_and_kill(self, table, before, trigger, delay):
        """Starts the statement and kills the driver `delay` seconds after `trigger` fires.

        Returns the seconds from the start to the trigger, or None when the statement finished
        first (then it must have succeeded)."""
        check = TRIGGERS[trigger]
        spin = False
        start = self._go()
        while not check(table, before):
            if self.proc.poll() is not None:
                self._await_done()
                self.kill()
                return None
            if time.monotonic() - start > STATEMENT_TIMEOUT:
                self.kill()
                raise AssertionError(f"no {trigger} file within {STATEMENT_TIMEOUT}s:\n{self._log_tail()}")
            spin = spin or trigger in SPIN_ONCE and TRIGGERS[SPIN_ONCE[trigger]](table, before)
            if not spin:
                time.sleep(POLL_PAUSE)
        fired = time.monotonic() - start
        time.sleep(delay)
        self.kill()
        return fired

    def kill(self):
        """SIGKILL to the whole group; returns once the Python process and the JVM are both gone."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
        self._wait_jvm_gone()

    def _wait_jvm_gone(self):
        deadline = time.monotonic() + 60
        while self.jvm_pid is not None and not _gone(self.jvm_pid):
            assert time.monotonic() < deadline, f"driver JVM {self.jvm_pid} is still running"
            time.sleep(0.01)
