"""docs/quickstart.md, run as written: every `refereed` command of its code blocks, in order.

A block whose first line says `(keeps running; ready at "X")` is a terminal left running: its command
starts as a process and the walk-through goes on once the process prints X. Any other block's commands
run to the end and must exit 0. The test points everything at its own chain and folders the way a user
could (REFEREED_RPC, REFEREED_DEPLOYMENTS, the working folder) and changes only the ports: the devnet's
(`--port`) and the dashboard's (`--port 0`). At the end every process is stopped with Ctrl-C and must
exit 0 without a traceback; the weights `task result` wrote must have the winning group's state root.
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_procs import REPO, Proc, cli_env, free_port, has_traceback, stop_all, wait_until

QUICKSTART = REPO / "docs" / "quickstart.md"
HEADER = re.compile(r'^# terminal (\d+)(?: \(keeps running; ready at "([^"]+)"\))?$')


@dataclass(frozen=True)
class Block:
    terminal: int
    ready: str | None  # None: its commands run to the end
    commands: tuple[tuple[str, ...], ...]


def blocks(text: str) -> list[Block]:
    out = []
    for body in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines = [line.strip() for line in body.strip().splitlines()]
        m = HEADER.match(lines[0])
        assert m, f"a quickstart block must start with '# terminal N': {lines[0]!r}"
        commands = tuple(tuple(shlex.split(line)[1:]) for line in lines[1:] if line.startswith("refereed "))
        out.append(Block(int(m.group(1)), m.group(2), commands))
    return out


def test_the_quickstart_parses() -> None:
    bs = blocks(QUICKSTART.read_text())
    assert [b.commands[0][0] for b in bs][:3] == ["devnet", "deploy", "oracle"]
    assert sum(b.ready is not None for b in bs) >= 6, "devnet, oracles, watcher, two trainers, the client"


@pytest.mark.anvil
def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    import subprocess
    import sys

    port = free_port()
    env = {**cli_env(), "REFEREED_RPC": f"http://127.0.0.1:{port}", "REFEREED_DEPLOYMENTS": str(tmp_path / "dep")}
    procs: list[Proc] = []
    outputs: dict[str, str] = {}
    try:
        for i, block in enumerate(blocks(QUICKSTART.read_text())):
            for j, command in enumerate(block.commands):
                args = list(command)
                if args[0] == "devnet":
                    args += ["--port", str(port)]
                if args[0] == "serve":
                    args += ["--port", "0"]
                name = f"t{block.terminal}-{i}-{j}-{args[0]}"
                if block.ready is not None:
                    proc = Proc(name, args, tmp_path).start(tmp_path, env)
                    procs.append(proc)
                    ready = block.ready
                    wait_until(f"{name} is ready", lambda p=proc, r=ready: r in p.out, procs, 300)
                    continue
                done = subprocess.run([sys.executable, "-m", "offchain.cli", *args], capture_output=True, text=True,
                                      cwd=tmp_path, env=env, timeout=900)  # fmt: skip
                assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
                assert not has_traceback(done.stderr)
                outputs[" ".join(args)] = done.stdout
        serve = next(p for p in procs if p.args[0] == "serve")
        url = re.search(r"http://[0-9.]+:\d+/", serve.out)
        assert url, serve.out
        state = json.loads(urllib.request.urlopen(url.group(0) + "api/state", timeout=30).read())
        assert state["ok"], state.get("error")
    finally:
        codes = stop_all(procs)
    for p in procs:
        assert not has_traceback(p.err), p.describe()
    assert all(code == 0 for code in codes.values()), {n: (c, next(p for p in procs if p.name == n).describe())
                                                        for n, c in codes.items() if c}  # fmt: skip
    shown = outputs["task show 1"]
    assert "waits for" in shown and "finalize" in shown
    result = outputs["task result 1 --out weights.pt"]
    root = re.search(r"state root (0x[0-9a-f]{64})", result)
    assert root, result
    assert f"state root  {root.group(1)}" in outputs["commit weights.pt"], "the weights are not the winning state"
    account = json.loads(outputs["account --account 2 --json"])
    assert account["market_credit_wei"] == "0" and account["tasks"][0]["claimed"]
    assert state["ok"] and state["tasks"][0]["status"] == "finalized"
