"""`refereed`: the command line of Refereed Training.

    refereed devnet [--port 8545]        a local anvil chain, until Ctrl-C
    refereed deploy --rpc URL [--key K]  deploy the protocol, write deployments/<chainId>.json
    refereed commit PATH                 commitment of a tensor or state dict saved with torch.save

Errors a user can fix print one line on stderr and exit 1 (chain) or 2 (bad input).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    name="refereed",
    help="Refereed Training: neural-network training refereed by smart contracts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_CHAIN = 1
EXIT_INPUT = 2
ANVIL_CHAIN_ID = 31337


def _out() -> Console:
    # Commitments are 66 characters: never let a narrow (or absent) terminal cut them.
    return Console(width=None if sys.stdout.isatty() else 200, highlight=False)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


class _Stop(Exception):
    """SIGINT or SIGTERM, turned into an exception so that `devnet` stops anvil on the way out."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


@app.command()
def devnet(
    port: Annotated[int, typer.Option(help="RPC port (0: any free port)")] = 8545,
    accounts: Annotated[int, typer.Option(help="funded accounts")] = 10,
    chain_id: Annotated[int, typer.Option(help="chain id")] = ANVIL_CHAIN_ID,
) -> None:
    """Run a local anvil chain with funded accounts until Ctrl-C."""
    from offchain.chain.anvil import Anvil
    from offchain.chain.client import ChainClient
    from offchain.chain.errors import ChainError

    out = _out()
    # Explicit handlers: a shell may start a background job with SIGINT ignored.
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = Anvil(port=port, accounts=accounts, chain_id=chain_id)
    try:
        try:
            node.start()
            client = ChainClient(node.rpc_url)
            table = Table(title=f"funded accounts (chain id {node.chain_id})")
            table.add_column("#", justify="right")
            table.add_column("address", no_wrap=True)
            table.add_column("private key", no_wrap=True)
            table.add_column("balance (ETH)", justify="right")
            for i, acct in enumerate(node.accounts):
                table.add_row(str(i), acct.address, acct.private_key, f"{client.balance(acct.address) / 10**18:,.2f}")
        except ChainError as e:
            _fail(str(e), EXIT_CHAIN)
        out.print(table)
        out.print(f"RPC URL: {node.rpc_url}")
        out.print("Development keys only: anyone may know them. Press Ctrl-C to stop.")
        sys.stdout.flush()
        status = node.wait()
        _fail(f"anvil exited on its own with status {status}:\n{node.stderr.strip()}", EXIT_CHAIN)
    except (KeyboardInterrupt, _Stop):  # KeyboardInterrupt: a SIGINT before the handler was set
        node.stop()
        out.print("anvil stopped")
    finally:
        node.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command()
def deploy(
    rpc: Annotated[str, typer.Option(help="JSON-RPC URL of the chain")],
    key: Annotated[
        str | None,
        typer.Option(
            envvar="REFEREED_KEY",
            help="deployer's private key (hex); default on chain 31337 only: anvil's account 0",
            show_default=False,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="folder for <chainId>.json (default: deployments/ in the repo)")
    ] = None,
) -> None:
    """Deploy the protocol's contracts and write deployments/<chainId>.json."""
    from offchain.chain.anvil import dev_accounts
    from offchain.chain.client import ChainClient
    from offchain.chain.deploy import deploy_all
    from offchain.chain.errors import ChainError, InvalidKeyError

    out = _out()
    try:
        probe = ChainClient(rpc)
        if key is None:
            if probe.chain_id != ANVIL_CHAIN_ID:
                _fail(f"chain {probe.chain_id} is not a local anvil chain: pass --key or set REFEREED_KEY", EXIT_INPUT)
            key = dev_accounts(1)[0].private_key
        try:
            client = ChainClient(rpc, key)
        except InvalidKeyError as e:
            _fail(f"--key / REFEREED_KEY: {e}", EXIT_INPUT)
        deployment = deploy_all(client, out_dir=out_dir)
    except ChainError as e:
        _fail(str(e), EXIT_CHAIN)
    table = Table(title=f"deployed on chain {deployment.chain_id} by {deployment.deployer}")
    table.add_column("contract")
    table.add_column("address", no_wrap=True)
    table.add_column("block", justify="right")
    for name, rec in deployment.contracts.items():
        table.add_row(name, rec.address, str(rec.block_number))
    out.print(table)
    out.print(f"wrote {deployment.path}")


@app.command()
def commit(path: Annotated[Path, typer.Argument(help="a file written by torch.save")]) -> None:
    """Print the commitment of a saved tensor, or the state root of a saved state dict."""
    import torch

    from trainer.commit import CommitError, commit_tensor, state_root_from_commitments
    from trainer.commit.tensor import dtype_code

    if not path.is_file():
        _fail(f"{path}: no such file", EXIT_INPUT)
    try:
        obj: Any = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:  # torch raises many kinds (UnpicklingError, RuntimeError, EOFError, ...)
        text = str(e).strip()
        first = text.splitlines()[0].split(". ")[0][:200] if text else ""
        reason = f"{type(e).__name__}: {first}" if first else type(e).__name__
        _fail(f"{path} is not a torch.save file that loads with weights_only=True ({reason})", EXIT_INPUT)
    out = _out()
    try:
        if isinstance(obj, torch.Tensor):
            t = _dense(obj, str(path))
            out.print(f"commitment  0x{commit_tensor(t).hex()}")
            out.print(f"dtype       {str(t.dtype).removeprefix('torch.')} (code {dtype_code(t.dtype)})")
            out.print(f"shape       {tuple(t.shape)}")
            return
        if isinstance(obj, Mapping) and obj:
            bad = {
                k: type(v).__name__ for k, v in obj.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)
            }
            if bad:
                key, kind = next(iter(bad.items()))
                _fail(
                    f"{path} holds a dict, but not only str -> tensor: entry {key!r} is of type {kind} "
                    f"({len(bad)} such entries)",
                    EXIT_INPUT,
                )
            tensors = {k: _dense(v, f"{path}[{k!r}]") for k, v in obj.items()}
            commitments = {k: commit_tensor(v) for k, v in tensors.items()}
            root = state_root_from_commitments(commitments)
            table = Table(title=f"{len(commitments)} tensors")
            table.add_column("name")
            table.add_column("dtype")
            table.add_column("shape")
            table.add_column("commitment", no_wrap=True)
            for name in sorted(commitments, key=lambda n: n.encode("utf-8")):
                t = tensors[name]
                table.add_row(
                    name, str(t.dtype).removeprefix("torch."), str(tuple(t.shape)), "0x" + commitments[name].hex()
                )
            out.print(f"state root  0x{root.hex()}")
            out.print(table)
            return
    except CommitError as e:
        _fail(f"{path}: {e}", EXIT_INPUT)
    what = "an empty dict" if isinstance(obj, Mapping) else f"a {type(obj).__name__}"
    _fail(f"{path} holds {what}; expected a tensor or a dict of tensors (a state_dict)", EXIT_INPUT)


def _dense(t: Any, where: str) -> Any:
    """The tensor's row-major copy when it is strided but not contiguous (same values, same commitment)."""
    import torch

    from trainer.commit import UnsupportedTensorError

    if t.layout != torch.strided:
        raise UnsupportedTensorError(f"{where} has layout {t.layout}; only dense tensors can be committed")
    return t.contiguous()


if __name__ == "__main__":  # pragma: no cover - `python -m offchain.cli`
    app()
