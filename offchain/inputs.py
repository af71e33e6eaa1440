"""Inputs checked at the edge: amounts of ETH, chain integers, folders, keys.

Every function here takes what a person typed (or a caller passed) and returns the value the
rest of the code uses, or raises `InputError` naming the input and saying how to fix it. The
CLI turns an `InputError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Final

from offchain.errors import OffchainError

WEI_PER_ETH: Final = 10**18
UINT64_MAX: Final = 2**64 - 1
UINT256_MAX: Final = 2**256 - 1


class InputError(OffchainError):
    """An input that cannot be used, with what is wrong and how to fix it."""


def parse_eth(text: object, what: str = "--reward", *, positive: bool = True) -> int:
    """An amount of ETH given as a decimal (`1.1`, `0.000000000000000001`, `2`) as an exact number of wei.

    Floats are never involved: `1.1` is 1100000000000000000 wei. NaN, infinities, exponents that leave a
    fraction of a wei, negative amounts (and zero when `positive`) are refused."""
    if isinstance(text, bool) or not isinstance(text, str | int | Decimal):
        raise InputError(f"{what}: an amount of ETH is a decimal number such as 1.5, not {type(text).__name__}")
    raw = str(text).strip()
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        raise InputError(f"{what} {raw!r} is not a number of ETH: give a decimal such as 1.5") from None
    if not amount.is_finite():
        raise InputError(f"{what} {raw}: an amount of ETH is a finite decimal such as 1.5, not {raw}")
    wei = amount * WEI_PER_ETH
    if wei != wei.to_integral_value():
        raise InputError(f"{what} {raw} ETH is not a whole number of wei: give at most 18 decimals")
    value = int(wei)
    if value < 0 or (positive and value == 0):
        raise InputError(f"{what} {raw}: the amount must be more than 0 ETH" if positive else f"{what} is negative")
    if value > UINT256_MAX:
        raise InputError(f"{what} {raw} ETH is more wei than a uint256 holds")
    return value


def check_uint(value: int, what: str, *, low: int = 0, high: int = UINT64_MAX, unit: str = "") -> int:
    """`value` if `low <= value <= high`; else an `InputError` giving the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be a whole number, not {type(value).__name__}")
    if not low <= value <= high:
        u = f" {unit}" if unit else ""
        top = "2^64 - 1" if high == UINT64_MAX else "2^256 - 1" if high == UINT256_MAX else f"{high:,}"
        raise InputError(f"{what} {value}{u} is out of range: give a whole number in {low}..{top}")
    return value


def check_folder(path: Path, what: str) -> Path:
    """`path` as a folder that exists or can be created and written; `InputError` otherwise."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {path} is a file, not a folder: give a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{what} {path} cannot be created ({e.strerror or e}): give a folder you can write") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path} is not writable: give a folder you can write")
    return path


def read_keystore(path: Path, password: str | None) -> str:
    """The private key (0x-hex) in an encrypted keystore file (eth-account's JSON); `InputError` otherwise."""
    from eth_account import Account

    path = Path(path)
    if not path.is_file():
        raise InputError(f"--keystore {path}: no such file")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"--keystore {path} is not a keystore JSON file ({e})") from None
    if not isinstance(data, dict) or "crypto" not in {k.lower() for k in data}:
        raise InputError(f"--keystore {path} is JSON but not an encrypted keystore (no 'crypto' field)")
    if password is None:
        raise InputError(f"--keystore {path} needs its password: set REFEREED_PASSWORD or pass --password-file")
    try:
        key = Account.decrypt(data, password)
    except ValueError as e:
        raise InputError(f"--keystore {path}: cannot decrypt it ({e}); is the password right?") from None
    return "0x" + bytes(key).hex()


def write_keystore(path: Path, private_key: str, password: str) -> str:
    """Encrypts `private_key` with `password` into `path` (scrypt, eth-account's format); the address."""
    from eth_account import Account

    if not password:
        raise InputError("the keystore's password is empty: give one (REFEREED_PASSWORD or --password-file)")
    path = Path(path)
    if path.exists():
        raise InputError(f"{path} exists: the keystore is not overwritten; give another path")
    from offchain.chain.client import check_private_key

    data = Account.encrypt(check_private_key(private_key), password)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return str(Account.from_key(check_private_key(private_key)).address)
