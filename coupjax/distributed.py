"""Many processes of one job: `jax.distributed`, its flags, and which process writes.

Every host of a multi-host job runs the same command; after `initialize` the devices
of all processes form one global `jax.devices()`, so the one mesh of `coupjax.devices`
spans every host and the existing sharded training steps average their gradients over
all of them.  The one place a command turns this on: `add_flags` gives it
``--coordinator HOST:PORT --num-processes N --process-id I [--peer-timeout S]``, and
`initialize` (called before JAX starts its backends) runs
`jax.distributed.initialize` with them.  Without the flags a job launched by SLURM
(``srun``, ``SLURM_NTASKS`` > 1) or Open MPI (``mpirun``, ``OMPI_COMM_WORLD_SIZE`` > 1),
or any job with ``COUPJAX_DISTRIBUTED=auto`` (Kubernetes, cloud TPU pods), is set up by
JAX's own detection of its environment; otherwise nothing happens (one process).

On a CPU the processes' collectives run over gloo (``jax_cpu_collectives_implementation``).
A peer that stops answering for ``--peer-timeout`` seconds ends the others (JAX's
heartbeat); a collective that fails because a peer died ends this process with one
line naming it (`fail_on_lost_peer`).  See docs/scaling.md.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

AUTO_ENV = "COUPJAX_DISTRIBUTED"
PEER_TIMEOUT = 100  # seconds without a heartbeat before a peer counts as dead (JAX's default)
BARRIER_TIMEOUT = 3600  # seconds a barrier waits for a slow peer (a dead one is caught by the heartbeat)
EXIT_LOST_PEER = 3

_STATE = {"initialized": False, "barriers": 0}


def add_flags(parser) -> None:
    """The multi-process flags of a command (`coupjax.args.Parser`)."""
    group = parser.add_argument_group("many processes (docs/scaling.md)")
    group.add_argument("--coordinator", metavar="HOST:PORT",
                       help="address of process 0's coordinator; with --num-processes and --process-id")
    group.add_argument("--num-processes", type=_count, metavar="N", help="processes in the job")
    group.add_argument("--process-id", type=_index, metavar="I", help="this process's index, 0 .. N-1")
    group.add_argument("--peer-timeout", type=_count, default=PEER_TIMEOUT, metavar="S",
                       help=f"seconds before a silent peer ends the job (default {PEER_TIMEOUT})")


def check_flags(args) -> str | None:
    """The one-line error of an inconsistent set of flags, or None."""
    given = [args.coordinator is not None, args.num_processes is not None, args.process_id is not None]
    if any(given) and not all(given):
        return "--coordinator, --num-processes and --process-id go together (all three or none)"
    if all(given):
        host, _, port = args.coordinator.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            return f"--coordinator: expected HOST:PORT, got {args.coordinator!r}"
        if args.process_id >= args.num_processes:
            return f"--process-id {args.process_id} must be below --num-processes {args.num_processes}"
    return None


def wanted(args=None) -> bool:
    """Whether this command runs as one process of many (flags, or a launcher's environment)."""
    if args is not None and args.coordinator is not None:
        return True
    if os.environ.get(AUTO_ENV, "").strip().lower() == "auto":
        return True
    return any(_int_env(name) > 1 for name in ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"))


def initialize(args=None, prog: str | None = None) -> int:
    """Join the job (flags in ``args``, else JAX's detection when `wanted`); returns the
    number of processes (1: nothing done).  Call before anything starts JAX's backends.
    With ``prog``, a job that cannot be joined (no coordinator found, peers missing past
    the timeout) ends this process with one line and status `EXIT_LOST_PEER`."""
    if _STATE["initialized"]:
        import jax

        return jax.process_count()
    if not wanted(args):
        return 1
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    timeout = int(getattr(args, "peer_timeout", None) or PEER_TIMEOUT)
    kwargs = dict(heartbeat_timeout_seconds=timeout, shutdown_timeout_seconds=timeout,
                  initialization_timeout=max(timeout, 300))  # pods and nodes may start minutes apart
    if args is not None and args.coordinator is not None:
        kwargs.update(coordinator_address=args.coordinator, num_processes=args.num_processes,
                      process_id=args.process_id)
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as err:  # noqa: BLE001 - JAX raises ValueError, RuntimeError or its runtime errors
        if prog is None:
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"{prog}: could not join the job of several processes ({first[:300]})", file=sys.stderr, flush=True)
        sys.exit(EXIT_LOST_PEER)
    _STATE["initialized"] = True
    return jax.process_count()


def process_index() -> int:
    import jax

    return jax.process_index()


def is_primary() -> bool:
    """True in the one process that writes files and logs (process 0; the only one alone)."""
    return process_index() == 0


def sum_over_processes(tree):
    """``tree`` (NumPy arrays of the same shapes in every process) summed over processes.

    Exact for parts that one process fills and the others leave at zero (x + 0 = x), the
    way a split seat table gathers its tables.  One process: ``tree`` itself.
    """
    import jax

    if jax.process_count() == 1:
        return tree
    import numpy as np
    from jax.experimental import multihost_utils

    barrier("sum_over_processes")  # gloo gives a peer 30 s to join its first collective
    gathered = multihost_utils.process_allgather(tree, tiled=False)
    return jax.tree.map(lambda x: np.asarray(x).sum(axis=0).astype(np.asarray(x).dtype), gathered)


def barrier(name: str, timeout: float = BARRIER_TIMEOUT) -> None:
    """Wait up to ``timeout`` seconds until every process reaches its same-numbered
    barrier (nothing with one process).  Through the coordination service, not a
    collective: a peer still compiling may take minutes, and gloo allows 30 s to the
    first collective of a job."""
    import jax

    if jax.process_count() == 1:
        return
    _STATE["barriers"] += 1
    from jax._src import distributed as jax_distributed  # the client `jax.distributed.initialize` made

    client = jax_distributed.global_state.client
    if client is None or not hasattr(client, "wait_at_barrier"):
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
        return
    client.wait_at_barrier(f"coupjax:{_STATE['barriers']}:{name}", int(timeout * 1000))


@contextmanager
def fail_on_lost_peer(prog: str):
    """With several processes: a runtime error of JAX (a collective whose peer died, a
    coordinator gone) ends this process with one line and status `EXIT_LOST_PEER`
    instead of a traceback or a hang.  One process: errors pass unchanged."""
    try:
        yield
    except Exception as err:  # noqa: BLE001 - only JAX's runtime errors, re-raised otherwise
        if not _STATE["initialized"] or type(err).__name__ not in ("XlaRuntimeError", "JaxRuntimeError"):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"{prog}: process {process_index()}: a peer process of this job stopped or cannot be reached "
              f"({first[:300]}); exiting", file=sys.stderr, flush=True)
        os._exit(EXIT_LOST_PEER)  # not sys.exit: JAX's shutdown at exit aborts with a stack trace on a lost peer


def _int_env(name: str) -> int:
    try:
        return int(os.environ.get(name, "0"))
    except ValueError:
        return 0


def _whole_number(minimum: int, words: str):
    """An argparse type: a whole number at least ``minimum`` (``words`` says which)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}")
        return value

    return parse


_count = _whole_number(1, "a positive whole number")
_index = _whole_number(0, "a whole number >= 0")
