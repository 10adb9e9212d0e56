"""Runs the stand-in operators against a control plane until stopped:

    python -m standins.operators --kubeconfig PATH --workdir DIR

scripts/control-plane.sh starts it with each instance; its log is the instance's
logs/stand-in-operators.log.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Protocol

from standins.operators.cluster import Cluster
from standins.operators.gpu_fractioning import GpuFractioningOperator
from standins.operators.gpu_operator import GpuOperator
from standins.operators.kai_operator import KaiOperator
from standins.operators.knobs import Knobs
from standins.operators.node_daemons import DevicePlugins, FeatureDiscovery, NvmlMock

INTERVAL_SECONDS = 1.0


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
        FeatureDiscovery(),
        DevicePlugins(),
        NvmlMock(),
        KaiOperator(args.workdir),
        GpuFractioningOperator(args.workdir),
    ]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("stand-in operators running", file=sys.stderr, flush=True)
    while not stop.wait(INTERVAL_SECONDS):
        try:
            knobs = Knobs.read(cluster)
        except Exception as error:  # the API server may be restarting
            print(f"cannot read the knobs: {error!r}", file=sys.stderr, flush=True)
            continue
        for operator in operators:
            try:
                operator.step(cluster, knobs, time.monotonic())
            except Exception as error:  # one failing step must not stop the others
                print(f"{type(operator).__name__}: {error!r}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
