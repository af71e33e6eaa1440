"""What an agent's chain reads cost: `ChainClient`'s path against web3's own, on a fresh anvil with the protocol
deployed (docs/agents.md, "What an agent's reads cost").

Cases: a view call (`TaskMarket.taskCount`) through `ChainClient.call` against web3's `ContractFunction.call`
over web3's stock `HTTPProvider`; `eth_blockNumber` through the chain client against the stock provider. Prints a
table of medians and writes out/bench/rpc.json: {"machine": {...}, "rows": [{case, ours_s, baseline_s, ratio}]}.

    .venv/bin/python scripts/bench_rpc.py [--calls 300] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from web3 import Web3  # noqa: E402
from web3.providers.rpc import HTTPProvider  # noqa: E402

from offchain.chain.anvil import Anvil  # noqa: E402
from offchain.chain.build import compile_contracts  # noqa: E402
from offchain.chain.client import ChainClient  # noqa: E402
from offchain.chain.deploy import deploy_all  # noqa: E402


def per_call(fn: Callable[[], object], calls: int, runs: int) -> float:
    """Median over `runs` of the mean seconds of one call of `fn`, over `calls` calls."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "rpc.json")
    args = parser.parse_args()
    artifacts = compile_contracts()
    rows = []
    with Anvil() as node:
        client = ChainClient(node.rpc_url, node.accounts[0].private_key, artifacts=artifacts.values())
        deployment = deploy_all(client, artifacts=artifacts, write=False)
        market = deployment.address("TaskMarket")
        ours = client.contract(artifacts["TaskMarket"], market).functions.taskCount()
        stock = Web3(HTTPProvider(node.rpc_url))
        theirs = stock.eth.contract(address=Web3.to_checksum_address(market), abi=artifacts["TaskMarket"].abi)
        baseline_call = theirs.functions.taskCount()
        sender = {"from": client.address}
        assert client.call(ours) == baseline_call.call(sender)
        cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("eth_call view (TaskMarket.taskCount)", lambda: client.call(ours), lambda: baseline_call.call(sender)),
            ("eth_blockNumber", client.block_number, lambda: stock.eth.block_number),
        ]
        for case, mine, base in cases:
            ours_s, baseline_s = per_call(mine, args.calls, args.runs), per_call(base, args.calls, args.runs)
            rows.append({"case": case, "ours_s": ours_s, "baseline_s": baseline_s, "ratio": ours_s / baseline_s})
    machine = {
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "calls": args.calls,
        "runs": args.runs,
    }
    print(f"{'case':40} {'ours ms':>9} {'web3 ms':>9} {'ratio':>7}")
    for r in rows:
        print(f"{r['case']:40} {r['ours_s'] * 1e3:9.3f} {r['baseline_s'] * 1e3:9.3f} {r['ratio']:7.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
