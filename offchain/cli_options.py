"""The command-line options the market's commands (offchain/cli.py) and the ledger's
(offchain/ledger/cli.py) share: one definition each, so both say the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DEFAULT_RPC = "http://127.0.0.1:8545"

Rpc = Annotated[str, typer.Option(envvar="REFEREED_RPC", help="JSON-RPC URL of the chain")]
Key = Annotated[
    str | None,
    typer.Option(
        envvar="REFEREED_KEY",
        help="private key (hex); default on chain 31337 only: the role's anvil dev account",
        show_default=False,
    ),
]
Account = Annotated[
    int | None,
    typer.Option("--account", help="on chain 31337: use anvil's dev account I instead of the role's", min=0),
]
Home = Annotated[
    Path | None, typer.Option(help="the agent's records and private store (default .refereed/<role>-<address>)")
]
StoreDir = Annotated[Path, typer.Option("--store", help="the public store shared by every party")]
Deployments = Annotated[
    Path | None,
    typer.Option(
        "--deployments",
        envvar="REFEREED_DEPLOYMENTS",
        help="folder of <chainId>.json (default: deployments/ in the repo)",
    ),
]
Keystore = Annotated[
    Path | None,
    typer.Option("--keystore", help="an encrypted keystore file (eth-account JSON; password from REFEREED_PASSWORD)"),
]
PasswordFile = Annotated[Path | None, typer.Option("--password-file", help="a file holding the --keystore's password")]
Poll = Annotated[float, typer.Option(help="seconds between looks at the chain when idle", min=0.05, max=3600)]
