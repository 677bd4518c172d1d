"""Watching the services while the attacks run: a supervisor that notices a crash, records where it
happened and restarts the service, and ingest's memory and descriptors sampled for their peak."""

import os
import re
import threading
import time

from harness import rss_mib
from hostile.progress import log


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def crash_site(text):
    """From a crashed service's log text: the first frame of the crashed thread that is in our sources,
    after the runtime's message."""
    message = re.search(r"\*\*\* (Swift runtime failure: [^*]+|Program crashed: [^*]+)\*\*\*", text)
    crashed = text.split(" crashed:", 1)[-1] if " crashed:" in text else ""
    frame = next((line.strip() for line in crashed.splitlines() if "/work/" in line or ".swift:" in line), "")
    frame = re.sub(r"^\d+\s+(\[\w+\]\s+)*0x[0-9a-f]+\s+", "", frame)
    return ((message.group(1).strip() + " — ") if message else "") + frame


class Supervisor(threading.Thread):
    """Restarts a service that died (up to `restarts` times each), as compose's restart policy would,
    so the run goes on and a message that kills a stage shows whether it is dead-lettered after
    MAX_ATTEMPTS or keeps killing replicas. Every exit is a crash in the report (`crashes`), with the
    run's phase and the crash site from the part of the service's log its last start wrote."""

    def __init__(self, run, services, restarts=10):
        super().__init__(daemon=True)
        self.run_state, self.services, self.restarts = run, services, restarts
        self.stop = threading.Event()
        self.crashes = []
        self.logs = {name: os.path.join(run.processes.out, name + ".log") for name in services}
        # Processes appends a restarted service's output to the same log: each crash is read from
        # where that run of it began.
        self.offsets = dict.fromkeys(services, 0)
        self.given_up = set()

    def run(self):
        while not self.stop.wait(0.5):
            for name in self.services:
                process = self.run_state.processes.running[name]
                if name in self.given_up or process.poll() is None:
                    continue
                count = self.count(name)
                with open(self.logs[name], "rb") as f:
                    f.seek(self.offsets[name])
                    site = crash_site(f.read().decode("utf-8", "replace"))
                self.crashes.append(
                    {
                        "service": name,
                        "exit_code": process.poll(),
                        "at": time.strftime("%H:%M:%S"),
                        "phase": self.run_state.phase,
                        "site": site,
                        "log": self.logs[name],
                    }
                )
                log(f"!! {name} exited with {process.poll()} during {self.run_state.phase}: {site}")
                if count < self.restarts:
                    self.offsets[name] = os.path.getsize(self.logs[name])
                    self.run_state.processes.restart(name)
                else:
                    self.given_up.add(name)

    def count(self, name):
        """Crashes of service `name` so far."""
        return sum(1 for c in self.crashes if c["service"] == name)


class MemoryMonitor(threading.Thread):
    """Samples ingest's resident memory and open descriptors every half second: the peak matters more
    than the last value (an idle-connection flood is over by the end)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak_rss, self.peak_fds = pid, threading.Event(), 0.0, 0

    def run(self):
        while not self.stop.is_set():
            self.peak_rss = max(self.peak_rss, rss_mib(self.pid))
            self.peak_fds = max(self.peak_fds, open_fds(self.pid))
            self.stop.wait(0.5)
