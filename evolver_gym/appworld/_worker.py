"""Sandbox zygote and worker: a clean pre-imported interpreter that forks one confined worker per episode.

Started by :class:`evolver_gym.appworld.sandbox.Sandbox` as
``python -S -s -B -P _worker.py CTRL_FD CONFIG_JSON`` with an environment the host builds
(``PATH``, ``LANG``, ``PYTHONHASHSEED``; no secrets). It imports only the standard library (plus
``pyseccomp`` from the directory the host names, when installed), never the host package.

A cell never gets a module: ``import json`` gives a namespace of the module's public values
(``cell_module``; of ``functools`` only the helpers in ``CELL_EXPORTS``).

Zygote (this process): imports every module a cell may use, then waits on the control socket
for ``{"op": "spawn"}`` messages that carry one end of a fresh socket pair (``SCM_RIGHTS``). For
each it forks a worker and answers ``{"pid": N}``. It never runs agent code, so every worker
starts from the same clean interpreter state: nothing a cell changes survives into the next episode.

Worker (a forked child): confines itself (``confine``: session, network namespace, resource
limits, unprivileged uid/gid, no-new-privs, Landlock, seccomp), reports ``{"op": "ready",
"layers": {...}}`` and serves cells on its socket:

host -> worker: ``{"op": "exec", "cell", "code", "raw", "audit", "wall_s", "cpu_s", "max_output",
"max_calls", "max_request_bytes"}`` (``raw``: the real builtins, a test hook standing for an escaped
cell; ``audit``: arm the ``AuditGate``, on for every ordinary cell); worker -> host while a cell
runs: ``{"op": "call", "cell", "app", "api", "kwargs"}``, answered by ``{"cell", "status", "body"}``;
at the end ``{"op": "done", "cell", "output", "fault"}``. The host treats every worker message as
untrusted and keeps its own deadline, call count and reply budget.

The protocol encoder and decoder are C objects created before any cell runs, so a cell that
patches ``json`` classes changes its own prints, not the messages.
"""

import builtins
import ctypes
import errno
import json
import json.decoder
import json.encoder
import json.scanner
import linecache
import os
import re
import resource
import signal
import socket
import sys
import traceback
import types
import warnings
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
# what a cell reaches of an allowed module: its public names (``__all__``, else ``dir``), except for the
# modules named here, of which it reaches only these. The rest of functools reads or writes attributes whose
# names the caller picks (update_wrapper, wraps: ``updated=('__globals__',)`` hands over a module's
# globals), evaluates annotation strings as code (singledispatch, singledispatchmethod, through typing) or
# writes a caller-chosen key into an instance's ``__dict__`` (cached_property). ``test_reach.py`` walks
# everything a cell reaches and fails on any new helper of that kind.
CELL_EXPORTS = {
    "functools": ("cache", "cmp_to_key", "lru_cache", "partial", "reduce", "total_ordering"),
}
# modules the C code of an allowed module imports through the cell's ``__import__`` (``datetime.strptime``
# and ``time.strptime`` import ``_strptime``); a cell cannot name them itself (the syntax check refuses the import)
_C_IMPORTS = frozenset({"_strptime"})
# modules the allowed ones import lazily; imported here so a confined worker never reads a file
_PRELOAD = ("_strptime", "encodings.latin_1", "encodings.ascii", "encodings.utf_16", "encodings.utf_32",
            "encodings.idna", "encodings.cp1252", "unicodedata")
_SAFE_BUILTINS = (
    "abs all any ascii bin bool bytearray bytes callable chr complex dict dir divmod enumerate filter float format "
    "frozenset hash hex id int isinstance issubclass iter len list map max min next object oct ord pow range repr "
    "reversed round set slice sorted str sum tuple zip True False None Ellipsis NotImplemented "
    "BaseException Exception ArithmeticError AssertionError AttributeError EOFError IndexError KeyError LookupError "
    "MemoryError NameError NotImplementedError OverflowError RecursionError RuntimeError StopIteration TypeError "
    "UnboundLocalError ValueError ZeroDivisionError UnicodeError"
).split()
# attribute names a cell may not reach by string either (the static check refuses them as syntax)
_FORBIDDEN_ATTR_PREFIXES = ("_", "gi_", "cr_", "ag_", "f_", "tb_", "co_", "func_")
_FORBIDDEN_ATTRS = frozenset({"mro", "format", "format_map", "with_traceback", "im_func", "im_self"})

# syscalls a worker never needs once confined; each returns EPERM
SECCOMP_DENY = (
    "ptrace process_vm_readv process_vm_writev execve execveat fork vfork clone clone3 "
    "mount umount2 pivot_root chroot unshare setns mount_setattr move_mount open_tree fsopen fsconfig fsmount fspick "
    "setrlimit setuid setgid setreuid setregid setresuid setresgid setgroups setfsuid setfsgid "
    "pidfd_open pidfd_send_signal pidfd_getfd kcmp bpf perf_event_open userfaultfd keyctl add_key request_key "
    "init_module finit_module delete_module kexec_load kexec_file_load reboot swapon swapoff acct "
    "settimeofday clock_settime clock_adjtime adjtimex iopl ioperm open_by_handle_at name_to_handle_at "
    "io_uring_setup io_uring_enter io_uring_register personality prctl quotactl syslog vhangup "
    "fanotify_init mknod mknodat socket socketpair connect bind listen accept accept4"
).split()
# signalling syscalls allowed only towards the worker itself (first argument == own pid); prlimit64 only
# to read a limit (no new limit given), so no limit can be raised or changed
SECCOMP_SELF_ONLY = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self (same number on every arch)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
try:
    import pyseccomp as _seccomp
except Exception:  # not installed, or libseccomp missing: the worker runs without this layer
    _seccomp = None


class ExecutionTimeout(BaseException):
    """Raised inside the cell when its wall or CPU budget runs out."""


class ApiCallLimit(BaseException):
    """Raised inside the cell when it makes too many API calls."""


def _check(ret, what):
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


_LINUX = sys.platform.startswith("linux")


def _prctl(option, arg):
    """Linux ``prctl``; a no-op elsewhere, where the layers that need it are reported off."""
    if _LINUX:
        _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def _unshare(flags, what):
    if not _LINUX:
        raise OSError(errno.ENOSYS, f"{what}: namespaces are Linux only")
    _check(_libc.unshare(flags), what)


# -- Landlock ----------------------------------------------------------------------------------------
class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi():
    """Landlock ABI version of the running kernel (0 when unavailable)."""
    if not _LINUX:  # the syscall numbers mean other things elsewhere
        return 0
    ret = _libc.syscall(ctypes.c_long(_SYS_LANDLOCK[0]), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(ret), 0)


def read_only_paths(stdlib):
    """What the worker may read: each entry of the stdlib folder but the package folders installed there.

    Landlock grants access beneath a path and cannot carve a subfolder out, so the rule names the
    stdlib's entries one by one and leaves out ``site-packages`` and ``dist-packages`` (the base
    interpreter's installed packages, which are no part of the standard library).
    """
    return [os.path.join(stdlib, name) for name in sorted(os.listdir(stdlib))
            if name not in ("site-packages", "dist-packages")]


def apply_landlock(read_only_paths):
    """Deny every filesystem access except reading ``read_only_paths``; deny TCP and foreign signals."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not available in this kernel")
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= 1 << 13  # REFER
    if abi >= 3:
        fs |= 1 << 14  # TRUNCATE
    if abi >= 5:
        fs |= 1 << 15  # IOCTL_DEV
    attr = _RulesetAttr(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)  # TCP bind+connect; unix+signal scopes
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = _check(
        _libc.syscall(ctypes.c_long(_SYS_LANDLOCK[0]), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)),
        "landlock_create_ruleset",
    )
    try:
        for path in read_only_paths:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                kind = os.fstat(pfd).st_mode & 0o170000
                if kind not in (0o040000, 0o100000):  # neither a folder nor a regular file (a link): skipped
                    continue
                is_dir = kind == 0o040000
                rule = _PathBeneath((1 << 2) | ((1 << 3) if is_dir else 0), pfd)  # READ_FILE (| READ_DIR)
                _check(
                    _libc.syscall(ctypes.c_long(_SYS_LANDLOCK[1]), ctypes.c_int(fd), ctypes.c_int(1),
                                  ctypes.byref(rule), ctypes.c_uint32(0)),
                    "landlock_add_rule",
                )
            finally:
                os.close(pfd)
        _check(_libc.syscall(ctypes.c_long(_SYS_LANDLOCK[2]), ctypes.c_int(fd), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(fd)
    return abi


def seccomp_base_filter():
    """The pid-independent part of the filter, built once in the zygote (each fork gets a copy)."""
    if _seccomp is None:
        return None
    flt = _seccomp.SyscallFilter(_seccomp.ALLOW)
    deny = _seccomp.ERRNO(errno.EPERM)
    for name in SECCOMP_DENY:
        try:
            flt.add_rule(deny, name)
        except Exception:  # a syscall this architecture does not have
            pass
    return flt


def apply_seccomp(pid, flt):
    if flt is None:
        raise OSError(errno.ENOSYS, "pyseccomp/libseccomp is not installed")
    deny = _seccomp.ERRNO(errno.EPERM)
    for name in SECCOMP_SELF_ONLY:
        flt.add_rule(deny, name, _seccomp.Arg(0, _seccomp.NE, pid))
    flt.add_rule(deny, "prlimit64", _seccomp.Arg(2, _seccomp.NE, 0))  # reading limits stays allowed
    flt.load()


def confine(sock_fd, cfg):
    """Apply every OS layer the platform allows; returns ``{layer: "on" | "off: reason"}``."""
    layers = {}
    skip = set(cfg.get("disable", ()))

    def layer(name, fn):
        if name in skip:
            layers[name] = "off: disabled by configuration"
            return
        try:
            fn()
            layers[name] = "on"
        except Exception as e:  # noqa: BLE001 - a missing layer is reported, never fatal
            layers[name] = f"off: {e}"

    os.closerange(3, sock_fd)
    os.closerange(sock_fd + 1, 1 << 16)
    os.setsid()
    root = os.geteuid() == 0
    if root:
        layer("netns", lambda: _unshare(_CLONE_NEWNET, "unshare(CLONE_NEWNET)"))

    def limits():  # set after the pre-imports (in the zygote), so imports never hit them
        with open("/proc/self/statm") as fh:
            vm_bytes = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm_bytes + cfg["memory_mb"] * 2**20,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
        resource.setrlimit(resource.RLIMIT_CPU, (cfg["episode_cpu_s"], cfg["episode_cpu_s"]))

    layer("rlimits", limits)

    def drop_uid():
        if root:
            uid = cfg["uid"]
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        else:  # an unprivileged user namespace, with its own network namespace
            net = "netns" not in skip
            _unshare(_CLONE_NEWUSER | (_CLONE_NEWNET if net else 0), "unshare(CLONE_NEWUSER)")
            layers["netns"] = "on" if net else "off: disabled by configuration"
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))

    layer("uid", drop_uid)
    if not root and layers["uid"] != "on":
        layers["netns"] = "off: needs root or user namespaces" if "netns" not in skip else layers["uid"]
    # die with the zygote; /proc/self owned by root; no privilege gain from here on
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != cfg["zygote_pid"]:
        os._exit(1)
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    layer("landlock", lambda: apply_landlock(cfg["read_only_paths"]))
    os.chdir("/")
    pid = os.getpid()
    layer("seccomp", lambda: apply_seccomp(pid, cfg["seccomp_filter"]))
    return layers


def _encode_default(obj):
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _dumps(obj):
    enc = json.encoder.c_make_encoder({}, _encode_default, json.encoder.encode_basestring_ascii, None, ":", ",",
                                      False, False, False)
    return "".join(enc(obj, 0))


_scan = json.scanner.c_make_scanner(json.decoder.JSONDecoder())


def _loads(text):
    return _scan(text, 0)[0]


def cell_module(name):
    """What a cell gets for ``import name``: a namespace of the module's exported values, never the module.

    Submodules are left out, and so is every name of ``CELL_EXPORTS`` missing from its list.
    """
    mod = __import__(name)
    ns = types.SimpleNamespace()
    for attr in CELL_EXPORTS.get(name) or getattr(mod, "__all__", None) or dir(mod):
        if attr.startswith("_"):
            continue
        value = getattr(mod, attr, None)
        if isinstance(value, types.ModuleType):
            continue
        setattr(ns, attr, value)
    return ns


class AuditGate:
    """A PEP 578 audit hook that, while a guarded cell runs, refuses what no cell needs.

    Armed by ``Worker.run`` around a guarded cell (not around ``raw`` test cells, which stand for a
    cell that escaped the language layer, unless they ask for it): ``open``, ``import`` of a module
    not already loaded (the zygote pre-imports what the allowed modules use), ``compile``/``exec`` of
    anything but the cell itself (and the fixed ``namedtuple`` constructor template, whose field
    names ``namedtuple`` has checked), frame and code introspection (``object.__getattr__``), ``gc``
    walks, and every ``os``, ``socket``, ``ctypes``, ``subprocess``, ``signal``, ``resource`` and
    ``marshal``/``pickle`` event. A refused event raises ``PermissionError`` naming it. This is part
    of the language layer: a second net for a route to a real module or an ``eval`` that the exports
    missed; the OS layers do not rely on it.
    """

    DENY = frozenset({"open", "object.__getattr__", "object.__delattr__", "sys._current_frames", "sys.addaudithook",
                      "sys.setprofile", "sys.settrace", "function.__new__", "code.__new__", "builtins.input",
                      "builtins.breakpoint", "setopencodehook", "sys.excepthook", "sys.unraisablehook",
                      "cpython.run_command", "cpython.run_file", "cpython.run_module", "cpython.run_startup"})
    DENY_PREFIXES = ("os.", "socket.", "ctypes.", "subprocess.", "shutil.", "gc.", "marshal.", "pickle.", "mmap.",
                     "fcntl.", "resource.", "signal.", "sqlite3.", "urllib.", "http.", "webbrowser.", "glob.",
                     "tempfile.", "_thread.", "syslog.", "ftplib.", "smtplib.", "telnetlib.", "poplib.", "imaplib.",
                     "nntplib.", "winreg.", "msvcrt.")
    _NAMEDTUPLE_NEW = re.compile(r"lambda _cls, ([\w, ]*): _tuple_new\(_cls, \(\1\)\)")

    def __init__(self):
        self.armed = False
        self.code = None
        self.template = False

    def arm(self, code):
        self.code, self.template, self.armed = code, False, True

    def disarm(self):
        self.armed, self.code = False, None

    def __call__(self, event, args):
        if not self.armed:
            return
        if event == "exec":
            if args and args[0] is self.code:
                return
            if self.template:  # the namedtuple constructor compiled just before
                self.template = False
                return
        elif event == "compile":
            src = args[0] if args else None
            if isinstance(src, bytes):
                src = src.decode("utf-8", "replace")
            if isinstance(src, str) and self._NAMEDTUPLE_NEW.fullmatch(src):
                self.template = True
                return
        elif event != "import" and event not in self.DENY and not event.startswith(self.DENY_PREFIXES):
            return
        self.armed = False  # raising from here must not re-enter the gate
        try:
            raise PermissionError(f"the sandbox does not allow {event!r} in a cell")
        finally:
            self.armed = True


def _cap(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n...[output truncated: {len(text) - limit} more characters]"


class Worker:
    def __init__(self, conn, layers, modules):
        self.conn = conn
        self.layers = layers
        self.modules = modules
        self.out, self.out_len, self.max_output = [], 0, 20000
        self.calls, self.max_calls, self.max_request_bytes = 0, 1000, 100_000
        self.cell = None
        self.timed_out = False
        self.audit = AuditGate()
        self.ns = {"__builtins__": self.make_builtins(), "__name__": "__main__", "apis": self.make_apis()}

    # -- protocol --------------------------------------------------------------------------------
    def send(self, msg):
        self.conn.send_bytes(_dumps(msg).encode())

    def recv(self):
        return _loads(self.conn.recv_bytes().decode())

    def call_api(self, app, api, kwargs):
        self.calls += 1
        if self.calls > self.max_calls:
            raise ApiCallLimit(f"Maximum number of API calls per execution ({self.max_calls}) reached.")
        try:
            text = _dumps({"op": "call", "cell": self.cell, "app": app, "api": api, "kwargs": kwargs})
        except (TypeError, ValueError) as e:
            raise TypeError(f"API arguments must be JSON-serialisable: {e}") from None
        if len(text) > self.max_request_bytes:
            raise ValueError(
                f"API arguments too large: {len(text)} bytes (at most {self.max_request_bytes} per call)"
            )
        self.conn.send_bytes(text.encode())
        reply = self.recv()
        while reply.get("cell") != self.cell:  # not an answer to this cell's call
            reply = self.recv()
        if reply["status"] != 200:
            body = _cap(json.dumps(reply["body"], indent=4), self.max_output)
            raise Exception(f"Response status code is {reply['status']}:\n{body}")
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
                except (TypeError, ValueError, RecursionError):
                    text = repr(args[0])
            else:
                text = str(sep).join(str(a) for a in args)
            worker.write(text + str(end))

        def refused(name):
            return not isinstance(name, str) or name.startswith(_FORBIDDEN_ATTR_PREFIXES) or name in _FORBIDDEN_ATTRS

        def safe_getattr(obj, name, *default):
            if refused(name):
                raise AttributeError(f"access to the attribute {name!r} is not allowed")
            return getattr(obj, name, *default)

        def safe_hasattr(obj, name):
            return not refused(name) and hasattr(obj, name)

        def safe_import(name, globals=None, locals=None, fromlist=(), level=0):
            if not level and name in _C_IMPORTS and not fromlist:  # e.g. datetime.strptime, from C
                return sys.modules[name]
            if level or name not in worker.modules:
                raise ImportError(f"import of module {name!r} is not allowed")
            for attr in fromlist or ():
                if refused(attr):
                    raise ImportError(f"importing {attr!r} from {name!r} is not allowed")
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

    # -- running a cell ----------------------------------------------------------------------------
    def traceback_text(self, exc):
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<python-input>"]
        lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
        lines += traceback.format_exception_only(type(exc), exc)
        return _cap("".join(lines).rstrip("\n"), self.max_output)

    def timeout(self, _signum, _frame):
        self.timed_out = True
        raise ExecutionTimeout()

    def run(self, msg):
        self.out, self.out_len, self.calls, self.timed_out = [], 0, 0, False
        self.cell = msg["cell"]
        self.max_output = int(msg["max_output"])
        self.max_calls = int(msg["max_calls"])
        self.max_request_bytes = int(msg["max_request_bytes"])
        wall = float(msg["wall_s"])
        code = msg["code"]
        raw = bool(msg.get("raw"))
        audited = bool(msg.get("audit", not raw))
        linecache.cache["<python-input>"] = (len(code), None, code.splitlines(True), "<python-input>")
        fault, failure = None, None
        signal.setitimer(signal.ITIMER_REAL, wall)
        signal.setitimer(signal.ITIMER_PROF, float(msg["cpu_s"]))
        try:
            # ``raw`` (the host's unguarded test hook) runs with the real builtins: it stands for a cell
            # that escaped the language layer, so tests can check the OS layers on their own
            namespace = {"__builtins__": {**vars(builtins), "print": self.ns["__builtins__"]["print"]},
                         "__name__": "__main__"} if raw else self.ns
            compiled = compile(code, "<python-input>", "exec")
            try:
                if audited:
                    self.audit.arm(compiled)
                exec(compiled, namespace)
            finally:  # before the handlers below: formatting a traceback reads frames
                self.audit.disarm()
        except ExecutionTimeout:
            pass
        except ApiCallLimit as e:
            fault, failure = "limit", f"Exception: {e}"
        except MemoryError as e:
            fault, failure = "memory", self.traceback_text(e) + "\n(the code exceeded the sandbox memory limit)"
        except RecursionError as e:
            fault, failure = "recursion", self.traceback_text(e)
        except BaseException as e:  # noqa: B036 - SystemExit and friends are cell failures too
            failure = self.traceback_text(e)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.setitimer(signal.ITIMER_PROF, 0)
        if self.timed_out:
            fault, failure = "timeout", None
        output = "".join(self.out)
        if self.out_len > self.max_output:
            more = self.out_len - self.max_output
            output = output[: self.max_output] + f"\n...[output truncated: {more} more characters]"
        if failure is not None:
            output = (output + "\n" if output else "") + "Execution failed. Traceback:\n" + failure
        elif not output and fault is None:
            output = "Execution successful."
        self.send({"op": "done", "cell": self.cell, "output": output, "fault": fault})

    def serve(self):
        signal.signal(signal.SIGALRM, self.timeout)
        signal.signal(signal.SIGPROF, self.timeout)
        sys.setrecursionlimit(400)
        self.send({"op": "ready", "layers": self.layers})
        while True:
            try:
                msg = self.recv()
            except (EOFError, OSError, ValueError):
                return
            if msg.get("op") == "exec":
                self.run(msg)


def _worker_main(sock_fd, cfg):
    try:
        layers = confine(sock_fd, cfg)
        conn = Connection(sock_fd)
        random_mod = sys.modules["random"]
        random_mod.seed(int(cfg["seed"]))
        warnings.simplefilter("ignore")  # stderr is /dev/null, and showing a warning would read source files
        worker = Worker(conn, layers, cfg["modules"])
        sys.addaudithook(worker.audit)
        worker.serve()
    finally:
        os._exit(0)


def _zygote_main(ctrl_fd, cfg):
    for name in _SAFE_MODULES + _PRELOAD:
        __import__(name)
    ctrl = socket.socket(fileno=ctrl_fd)
    # no parent-death signal here: it would fire when the host *thread* that started the zygote ends;
    # the zygote exits when the host's end of the control socket closes (the host exited or was killed)
    try:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of a worker become the zygote's, where the host finds them
    except OSError:  # an older kernel: strays are then found only while their parent lives
        pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps workers: no zombies
    cfg["zygote_pid"] = os.getpid()
    stdlib = os.path.dirname(os.__file__)
    cfg["read_only_paths"] = read_only_paths(stdlib)
    cfg["seccomp_filter"] = seccomp_base_filter()
    cfg["modules"] = {name: cell_module(name) for name in _SAFE_MODULES}  # pristine: no cell runs here
    ctrl.send(_dumps({"op": "ready", "pid": os.getpid(), "landlock_abi": landlock_abi(),
                      "seccomp": _seccomp is not None}).encode())
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(ctrl, 65536, 1)
        except OSError:
            break
        if not data:
            break
        msg = _loads(data.decode())
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            ctrl.close()
            _worker_main(fds[0], {**cfg, "seed": msg.get("seed", 100)})
        os.close(fds[0])
        ctrl.send(_dumps({"pid": pid}).encode())
    os._exit(0)


if __name__ == "__main__":
    _ctrl, _cfg = int(sys.argv[1]), json.loads(sys.argv[2])
    if _cfg.get("seccomp_path"):
        sys.path.append(_cfg["seccomp_path"])
        try:
            import pyseccomp as _seccomp
        except Exception:
            _seccomp = None
        sys.path.remove(_cfg["seccomp_path"])
    _zygote_main(_ctrl, _cfg)
