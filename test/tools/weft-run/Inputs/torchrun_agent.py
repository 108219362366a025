"""A stand-in for torchrun's local elastic agent, for tests where PyTorch is
not installed (Debian's torch 1.13 torchrun fails on Python 3.11; PyPI's
wheels need CUDA's libraries).

    torchrun_agent.py --nproc N [--max-restarts K] -- COMMAND...

Like `torchrun --standalone --nproc-per-node N --max-restarts K`: it serves
a TCPStore on a free port (written here from PyTorch's protocol, not taken
from it), starts N workers with torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT,
TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_USE_AGENT_STORE=True), and when one
fails stops the others and starts them all again, at most K times. The
store is strict: a connection whose first request is not VALIDATE with the
magic number, or that sends a malformed request, is a protocol error, and
the agent exits 3 at the end. It prints the keys' namespaces it saw.
"""
import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

MAGIC = 0x3C85F7CE
(VALIDATE, SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS, DELETE_KEY,
 APPEND, MULTI_GET, MULTI_SET, CANCEL_WAIT, PING) = range(14)


class Store:
    def __init__(self):
        self.values = {}
        self.cond = threading.Condition()
        self.errors = []

    def serve(self, conn):
        def read(n):
            data = b""
            while len(data) < n:
                chunk = conn.recv(n - len(data))
                if not chunk:
                    raise EOFError
                data += chunk
            return data

        def u64():
            return struct.unpack("<Q", read(8))[0]

        def string():
            n = u64()
            if n > 1 << 30:
                raise ValueError(f"a length of {n}")
            return read(n)

        validated = False
        try:
            while True:
                try:
                    query = read(1)[0]
                except EOFError:
                    return
                if not validated:
                    if query != VALIDATE or struct.unpack("<I", read(4))[0] != MAGIC:
                        raise ValueError(f"first request {query} is not VALIDATE with the magic number")
                    validated = True
                elif query == SET:
                    key, value = string(), string()
                    with self.cond:
                        self.values[key] = value
                        self.cond.notify_all()
                elif query == GET:
                    key = string()
                    with self.cond:
                        value = self.values.get(key, b"")
                    conn.sendall(struct.pack("<Q", len(value)) + value)
                elif query == ADD:
                    key, delta = string(), struct.unpack("<q", read(8))[0]
                    with self.cond:
                        total = int(self.values.get(key, b"0")) + delta
                        self.values[key] = str(total).encode()
                        self.cond.notify_all()
                    conn.sendall(struct.pack("<q", total))
                elif query in (CHECK, WAIT):
                    keys = [string() for _ in range(u64())]
                    with self.cond:
                        if query == WAIT:
                            self.cond.wait_for(lambda: all(k in self.values for k in keys))
                            conn.sendall(b"\x00")
                        else:
                            ready = all(k in self.values for k in keys)
                            conn.sendall(b"\x00" if ready else b"\x01")
                elif query == PING:
                    conn.sendall(read(4))
                elif query == GETNUMKEYS:
                    with self.cond:
                        conn.sendall(struct.pack("<q", len(self.values)))
                else:
                    raise ValueError(f"request {query} is not one this store serves")
        except (ValueError, EOFError, ConnectionError) as e:
            self.errors.append(str(e))
        finally:
            conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, required=True)
    ap.add_argument("--max-restarts", type=int, default=0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    store = Store()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    port = server.getsockname()[1]

    def accept():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=store.serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    rc = 1
    for attempt in range(args.max_restarts + 1):
        workers = []
        for rank in range(args.nproc):
            env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                       GROUP_RANK="0", ROLE_RANK=str(rank), ROLE_NAME="default",
                       WORLD_SIZE=str(args.nproc), LOCAL_WORLD_SIZE=str(args.nproc),
                       GROUP_WORLD_SIZE="1", ROLE_WORLD_SIZE=str(args.nproc),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       TORCHELASTIC_RUN_ID="none",
                       TORCHELASTIC_RESTART_COUNT=str(attempt),
                       TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts),
                       TORCHELASTIC_USE_AGENT_STORE="True")
            workers.append(subprocess.Popen(command, env=env))
        failed = None
        while failed is None and any(w.poll() is None for w in workers):
            for rank, w in enumerate(workers):
                if w.poll() not in (None, 0):
                    failed = (rank, w.returncode)
            time.sleep(0.05)
        if failed is None:
            failed = next(((r, w.returncode) for r, w in enumerate(workers) if w.returncode), None)
        if failed is None:
            rc = 0
            break
        print(f"agent: worker {failed[0]} failed (exit status {failed[1]})", file=sys.stderr, flush=True)
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        if attempt < args.max_restarts:
            print(f"agent: restarting the workers ({attempt + 1} of {args.max_restarts})",
                  file=sys.stderr, flush=True)
    with store.cond:
        # "/weft/attempt_0/pid/1" -> "/weft/attempt_0/"
        spaces = sorted({"/".join(k.decode().split("/")[:3]) + "/" for k in store.values})
    print("agent: store namespaces: " + " ".join(spaces), file=sys.stderr, flush=True)
    if store.errors:
        print("agent: protocol errors: " + "; ".join(sorted(set(store.errors))), file=sys.stderr)
        sys.exit(3)
    sys.exit(rc)


if __name__ == "__main__":
    main()
