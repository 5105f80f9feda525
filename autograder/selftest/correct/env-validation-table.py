"""Reads the torchrun variables in one loop, then validates them from a table of (variable, ok, rule) rows."""
from autograder.selftest.kinds import PROCESS_GROUP, Function

EDITS = {PROCESS_GROUP: [
    Function("node_and_local_rank", '''
def node_and_local_rank(rank: int, local_world_size: int) -> tuple[int, int]:
    """Global rank -> (node index, local rank), ranks laid out node by node."""
    return rank // local_world_size, rank % local_world_size
'''),
    Function("read_torchrun_env", '''
def read_torchrun_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read and validate the torchrun variables from ``environ`` (default ``os.environ``)."""
    environ = os.environ if environ is None else environ
    values: dict[str, int | str] = {}
    for name in TORCHRUN_VARIABLES:
        raw = environ.get(name, "")
        if raw == "":
            raise DistEnvError(f"{name} is not set: start the job with torchrun (or minddp.launch)")
        if name == "MASTER_ADDR":
            values[name] = raw
            continue
        try:
            values[name] = int(raw)
        except ValueError:
            raise DistEnvError(f"{name}={raw!r} must be an integer") from None
    rank, world, local_rank, local_world, port = (values[n] for n in (
        "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"))
    rules = [  # checked in order, lazily: a row may rely on every row above it (no division by 0)
        ("WORLD_SIZE", lambda: world >= 1, "must be at least 1"),
        ("LOCAL_WORLD_SIZE", lambda: local_world >= 1 and world % local_world == 0,
         f"must be >= 1 and divide WORLD_SIZE={world}"),
        ("RANK", lambda: 0 <= rank < world, f"must be in 0..WORLD_SIZE-1 = {world - 1}"),
        ("LOCAL_RANK", lambda: 0 <= local_rank < local_world and local_rank == rank % local_world,
         f"must equal RANK % LOCAL_WORLD_SIZE (RANK={rank}, LOCAL_WORLD_SIZE={local_world})"),
        ("MASTER_PORT", lambda: 1 <= port <= 65535, "is not a TCP port (1..65535)"),
    ]
    for name, ok, rule in rules:
        if not ok():
            raise DistEnvError(f"{name}={values[name]} {rule}")
    return DistEnv(rank, world, local_rank, local_world, values["MASTER_ADDR"], port)
'''),
]}
