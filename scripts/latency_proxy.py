"""A TCP relay that adds latency: every chunk read from either side is written to the other side
`delay / 2` milliseconds later, in order, so a connection through it has its round trip lengthened by
`delay` while its throughput stays what the two ends can do (chunks in flight are not waited for one
by one). The delay is read from a file (milliseconds, a number; absent or empty: 0) ten times a
second, so a run can change it while connections stay open.

This kernel has no `netem` qdisc, so the network fault run (scripts/faults.py --network) puts this
relay in front of Redis on Redis's test host; iptables there still drops what a partition or packet
loss drops, on the relay's links as on Redis's.

    python3 scripts/latency_proxy.py --listen HOST:PORT --upstream HOST:PORT --delay-file PATH
"""

import argparse
import asyncio
import os
import time

CHUNK = 256 * 1024


class Delay:
    """The current one-way delay in seconds, re-read from `path` every 100 ms."""

    def __init__(self, path):
        self.path, self.seconds = path, 0.0

    async def watch(self):
        while True:
            try:
                with open(self.path) as file:
                    text = file.read().strip()
                self.seconds = float(text) / 2000 if text else 0.0
            except (OSError, ValueError):
                self.seconds = 0.0
            await asyncio.sleep(0.1)


async def pump(reader, writer, delay):
    """Copies `reader` to `writer`, each chunk no earlier than `delay` after it was read."""
    queue = asyncio.Queue()

    async def send():
        while True:
            due, chunk = await queue.get()
            if chunk is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while chunk := await reader.read(CHUNK):
            queue.put_nowait((time.monotonic() + delay.seconds, chunk))
            if sender.done():
                break
        queue.put_nowait((0, None))
        await sender
    except (ConnectionError, OSError):
        pass
    finally:
        sender.cancel()
        writer.close()


async def relay(client_reader, client_writer, upstream, delay):
    try:
        server_reader, server_writer = await asyncio.open_connection(*upstream)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pump(client_reader, server_writer, delay), pump(server_reader, client_writer, delay))


def address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=address, required=True)
    parser.add_argument("--upstream", type=address, required=True)
    parser.add_argument("--delay-file", required=True)
    args = parser.parse_args()
    delay = Delay(os.path.abspath(args.delay_file))
    watcher = asyncio.create_task(delay.watch())
    server = await asyncio.start_server(lambda r, w: relay(r, w, args.upstream, delay), *args.listen)
    async with server:
        await asyncio.gather(server.serve_forever(), watcher)


if __name__ == "__main__":
    asyncio.run(main())
