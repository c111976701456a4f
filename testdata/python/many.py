# N threads (the first argument, default 50) each parked in time.sleep five Python frames
# deep (recursion), and the main thread: the workload of benches/python.rs. It prints
# "ready" once every thread is parked, then sleeps until it is killed. Runs on CPython 3.6+.
import sys
import threading
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 50
parked = threading.Barrier(count + 1)


def leaf():
    parked.wait()
    time.sleep(3600)


def descend(depth):
    if depth == 0:
        leaf()
    else:
        descend(depth - 1)


for _ in range(count):
    threading.Thread(target=descend, args=(3,), daemon=True).start()
parked.wait()
time.sleep(0.2)
print("ready", flush=True)
sys.stdout.close()
time.sleep(3600)
