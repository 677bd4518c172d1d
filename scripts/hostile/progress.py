"""Progress lines on stdout, time-stamped: the run takes minutes and says what it is doing."""

import time


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)
