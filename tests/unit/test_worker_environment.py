"""Each pytest worker reads its own control plane's environment (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import worker_environment


def test_each_worker_takes_the_file_at_its_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    files = []
    for n, instance in enumerate(("test", "test2")):
        path = tmp_path / f"{instance}.sh"
        path.write_text(
            f"export KUBECONFIG=/state/control-plane/{instance}/kube\\ config\n"
            "export PATH=/cache/bin:$PATH\n"
            f"export KGF_REGISTRY=127.0.0.1:1{n}543\n"
        )
        files.append(str(path))
    second = worker_environment(" ".join(files), "gw1")
    assert second == {
        "KUBECONFIG": "/state/control-plane/test2/kube config",
        "PATH": "/cache/bin:/usr/bin",
        "KGF_REGISTRY": "127.0.0.1:11543",
    }
    assert worker_environment(" ".join(files), "gw0")["KUBECONFIG"] == "/state/control-plane/test/kube config"
    with pytest.raises(RuntimeError, match="gw2 has no control plane"):
        worker_environment(" ".join(files), "gw2")
