"""Runs the stand-in operators against a control plane until stopped:

    python -m standins.operators --kubeconfig PATH --workdir DIR

scripts/control-plane.sh starts it with each instance; its log is the instance's
logs/stand-in-operators.log. The operators run when something they read changes, when a delay one
of them waits out is over, and at a periodic resync (watching.py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Protocol

from standins.operators.cluster import Cluster
from standins.operators.driver_manager import DriverManager
from standins.operators.gpu_fractioning import GpuFractioningOperator
from standins.operators.gpu_operator import GpuOperator
from standins.operators.kai_operator import KaiOperator
from standins.operators.knobs import Knobs
from standins.operators.node_daemons import DevicePlugins, FeatureDiscovery, NvmlMock
from standins.operators.watching import ALARM, run_rounds, start_watches


class StandIn(Protocol):
    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None: ...


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m standins.operators", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--workdir", required=True, type=Path)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(args.kubeconfig)
    operators: list[StandIn] = [
        GpuOperator(),
        DriverManager(),
        FeatureDiscovery(),
        DevicePlugins(),
        NvmlMock(),
        KaiOperator(args.workdir),
        GpuFractioningOperator(args.workdir),
    ]
    stop = threading.Event()

    def terminate(*_: object) -> None:
        stop.set()
        ALARM.ring()  # the loop may be waiting for the resync: it stops now, not then

    signal.signal(signal.SIGTERM, terminate)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def round_(now: float) -> bool:
        """Every operator once; False when any of them raised, so the round is tried again soon."""
        try:
            knobs = Knobs.read(cluster)
        except Exception as error:  # the API server may be restarting
            say(f"cannot read the knobs: {error!r}")
            return False
        succeeded = True
        for operator in operators:
            try:
                operator.step(cluster, knobs, now)
            except Exception as error:  # one failing step must not stop the others
                say(f"{type(operator).__name__}: {error!r}")
                succeeded = False
        return succeeded

    start_watches(cluster.open_watch, ALARM, stop, say, cluster.store)
    say("stand-in operators running")
    run_rounds(round_, ALARM, stop)


if __name__ == "__main__":
    main()
