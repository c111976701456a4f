# Threads parked in time.sleep inside methods, recursion, a generator, a closure, a
# lambda, a decorated function and a class method, for tests/python.rs: it prints "ready"
# once every thread is parked, then sleeps until it is killed. Runs on CPython 3.6+.
import functools
import sys
import threading
import time

parked = []
lock = threading.Lock()


def park():
    with lock:
        parked.append(threading.get_ident())
    time.sleep(3600)


class Worker:
    def run(self):
        self.step()

    def step(self):
        park()

    @classmethod
    def start_class(cls):
        cls().run()

    @staticmethod
    def static():
        park()


def recurse(depth):
    if depth == 0:
        park()
    else:
        recurse(depth - 1)


def generator():
    yield 1
    park()
    yield 2


def consume():
    for _ in generator():
        pass


def make_closure():
    captured = 3

    def inner():
        return park() or captured

    return inner


def decorate(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


@decorate
def decorated():
    park()


as_lambda = lambda: park()  # noqa: E731


targets = [
    Worker().run,
    Worker.start_class,
    Worker.static,
    lambda: recurse(5),
    consume,
    make_closure(),
    decorated,
    as_lambda,
]
for target in targets:
    threading.Thread(target=target, daemon=True).start()
while True:
    with lock:
        if len(parked) == len(targets):
            break
    time.sleep(0.01)
time.sleep(0.2)
print("ready", flush=True)
sys.stdout.close()
time.sleep(3600)
