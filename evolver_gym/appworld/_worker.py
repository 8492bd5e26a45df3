"""Sandbox worker process: runs agent code cells in a persistent, restricted namespace.

Started by :class:`evolver_gym.appworld.sandbox.Sandbox` as ``python -I -B _worker.py RFD WFD MEM_MB``.
It imports only the standard library (never the host package), lowers its own resource limits,
and then serves JSON messages on two pipe file descriptors:

host -> worker: ``{"op": "exec", "code", "wall_s", "cpu_s", "max_output", "max_calls"}``,
``{"op": "reset", "seed"}``; worker -> host while a cell runs: ``{"op": "call", "app", "api",
"kwargs"}``, answered by ``{"status", "body"}``; at the end ``{"op": "done", "output", "fault"}``
where ``fault`` is ``None`` or the kind of contained failure (``timeout``, ``memory``,
``recursion``, ``limit``) after which the host rolls the world back.
"""

import builtins
import json
import linecache
import resource
import signal
import sys
import traceback
import types
from multiprocessing.connection import Connection

_SAFE_MODULES = (
    "json",
    "re",
    "math",
    "datetime",
    "calendar",
    "itertools",
    "random",
    "collections",
    "functools",
    "copy",
    "statistics",
    "decimal",
    "fractions",
    "heapq",
    "bisect",
    "textwrap",
    "time",
)
_SAFE_BUILTINS = (
    "abs all any ascii bin bool bytearray bytes callable chr complex dict dir divmod enumerate filter float format "
    "frozenset hash hex id int isinstance issubclass iter len list map max min next object oct ord pow range repr "
    "reversed round set slice sorted str sum tuple zip True False None Ellipsis NotImplemented "
    "BaseException Exception ArithmeticError AssertionError AttributeError EOFError IndexError KeyError LookupError "
    "MemoryError NameError NotImplementedError OverflowError RecursionError RuntimeError StopIteration TypeError "
    "UnboundLocalError ValueError ZeroDivisionError UnicodeError"
).split()


class ExecutionTimeout(BaseException):
    """Raised inside the cell when its wall or CPU budget runs out."""


class ApiCallLimit(BaseException):
    """Raised inside the cell when it makes too many API calls."""


def _proxy_module(name):
    mod = __import__(name)
    ns = types.SimpleNamespace()
    for attr in getattr(mod, "__all__", None) or dir(mod):
        if attr.startswith("_"):
            continue
        value = getattr(mod, attr, None)
        if isinstance(value, types.ModuleType):
            continue
        setattr(ns, attr, value)
    return ns


class Worker:
    def __init__(self, rfd, wfd):
        self.rconn = Connection(rfd, writable=False)
        self.wconn = Connection(wfd, readable=False)
        self.modules = {name: _proxy_module(name) for name in _SAFE_MODULES}
        self.out = []
        self.out_len = 0
        self.max_output = 20000
        self.calls = 0
        self.max_calls = 1000
        self.ns = {}
        self.reset(100)

    # -- protocol --------------------------------------------------------------------------------
    def send(self, msg):
        self.wconn.send_bytes(json.dumps(msg).encode())

    def recv(self):
        return json.loads(self.rconn.recv_bytes().decode())

    def call_api(self, app, api, kwargs):
        self.calls += 1
        if self.calls > self.max_calls:
            raise ApiCallLimit(f"Maximum number of API calls per execution ({self.max_calls}) reached.")
        try:
            payload = json.loads(json.dumps(kwargs))
        except (TypeError, ValueError) as e:
            raise TypeError(f"API arguments must be JSON-serialisable: {e}") from None
        self.send({"op": "call", "app": app, "api": api, "kwargs": payload})
        reply = self.recv()
        if reply["status"] != 200:
            raise Exception(
                f"Response status code is {reply['status']}:\n{json.dumps(reply['body'], indent=4)}"
            )
        return reply["body"]

    # -- the restricted namespace ------------------------------------------------------------------
    def write(self, text):
        if self.out_len < self.max_output:
            self.out.append(text[: self.max_output - self.out_len + 1])
        self.out_len += len(text)

    def make_builtins(self):
        b = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
        worker = self

        def safe_print(*args, sep=" ", end="\n"):
            if len(args) == 1 and isinstance(args[0], (list, dict)):
                try:
                    text = json.dumps(args[0])
                    if len(text) >= 100:
                        text = json.dumps(args[0], indent=2)
                except (TypeError, ValueError):
                    text = repr(args[0])
            else:
                text = str(sep).join(str(a) for a in args)
            worker.write(text + str(end))

        def safe_getattr(obj, name, *default):
            if not isinstance(name, str) or name.startswith("_"):
                raise AttributeError(f"access to the attribute {name!r} is not allowed")
            return getattr(obj, name, *default)

        def safe_hasattr(obj, name):
            return isinstance(name, str) and not name.startswith("_") and hasattr(obj, name)

        def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
            if level or name not in worker.modules:
                raise ImportError(f"import of module {name!r} is not allowed")
            return worker.modules[name]

        def no_input(*_a, **_k):
            raise RuntimeError("input() is not available; the task is already described in the instruction.")

        b.update(
            print=safe_print,
            getattr=safe_getattr,
            hasattr=safe_hasattr,
            __import__=safe_import,
            input=no_input,
            __build_class__=builtins.__build_class__,
        )
        return b

    def make_apis(self):
        worker = self

        class AppApis:
            def __init__(self, app):
                self.app_name = app

            def __getattr__(self, api):
                if api.startswith("_"):
                    raise AttributeError(api)

                def call(*args, **kwargs):
                    if args:
                        raise TypeError("APIs take keyword arguments only, e.g. apis.app.api(name=value)")
                    return worker.call_api(self.app_name, api, kwargs)

                call.__name__ = api
                return call

        class Apis:
            def __getattr__(self, app):
                if app.startswith("_"):
                    raise AttributeError(app)
                return AppApis(app)

        return Apis()

    def reset(self, seed):
        self.ns = {"__builtins__": self.make_builtins(), "__name__": "__main__", "apis": self.make_apis()}
        import random

        random.seed(seed)

    # -- running a cell ----------------------------------------------------------------------------
    def traceback_text(self, exc):
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<python-input>"]
        lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
        lines += traceback.format_exception_only(type(exc), exc)
        return "".join(lines).rstrip("\n")

    def run(self, msg):
        self.out, self.out_len, self.calls = [], 0, 0
        self.max_output = int(msg.get("max_output", 20000))
        self.max_calls = int(msg.get("max_calls", 1000))
        wall = float(msg.get("wall_s", 10.0))
        used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = int(used + float(msg.get("cpu_s", wall))) + 1
        if cpu_hard != resource.RLIM_INFINITY:
            soft = min(soft, cpu_hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_hard))
        code = msg["code"]
        linecache.cache["<python-input>"] = (len(code), None, code.splitlines(True), "<python-input>")
        fault, failure = None, None
        signal.setitimer(signal.ITIMER_REAL, wall)
        try:
            exec(compile(code, "<python-input>", "exec"), self.ns)
        except ExecutionTimeout:
            fault, failure = "timeout", f"Execution timed out after {wall:g} seconds."
        except ApiCallLimit as e:
            fault, failure = "limit", f"Exception: {e}"
        except MemoryError as e:
            fault, failure = (
                "memory",
                self.traceback_text(e) + "\n(the code exceeded the sandbox memory limit)",
            )
        except RecursionError as e:
            fault, failure = "recursion", self.traceback_text(e)
        except BaseException as e:  # noqa: B036 - SystemExit and friends are cell failures too
            failure = self.traceback_text(e)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        output = "".join(self.out)
        if self.out_len > self.max_output:
            output = (
                output[: self.max_output]
                + f"\n...[output truncated: {self.out_len - self.max_output} more characters]"
            )
        if failure is not None:
            output = (output + "\n" if output else "") + "Execution failed. Traceback:\n" + failure
        elif not output:
            output = "Execution successful."
        self.send({"op": "done", "output": output, "fault": fault})

    def serve(self):
        while True:
            try:
                msg = self.recv()
            except (EOFError, OSError):
                return
            if msg["op"] == "exec":
                self.run(msg)
            elif msg["op"] == "reset":
                self.reset(int(msg.get("seed", 100)))
                self.send({"op": "ready"})
            elif msg["op"] == "ping":
                self.send({"op": "pong"})


def _raise_timeout(_signum, _frame):
    raise ExecutionTimeout()


def main():
    rfd, wfd, mem_mb = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    worker = Worker(rfd, wfd)
    signal.signal(signal.SIGALRM, _raise_timeout)
    signal.signal(signal.SIGXCPU, _raise_timeout)
    # limits are lowered after the allowed modules are imported, so imports never hit them
    with open("/proc/self/statm") as fh:
        vm_bytes = int(fh.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm_bytes + mem_mb * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    except (ValueError, OSError):
        pass
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    sys.setrecursionlimit(400)
    worker.send({"op": "ready"})
    worker.serve()


if __name__ == "__main__":
    main()
