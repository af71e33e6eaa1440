"""Compile the protocol's contracts with py-solc-x, byte-for-byte as forge does.

`compile_contracts()` builds every `.sol` file under `contracts/src` through the solc shim
(`scripts/solc`, solc-js behind a Node script) from one standard-JSON input whose settings
come from foundry.toml and whose source names are the repository-relative paths forge
uses. With `bytecode_hash = "none"` and `cbor_metadata = false` the bytes do not depend on
where the repository lies, and they equal forge's (tests/chain/test_build.py checks it).

Outputs are cached under `out/pybuild/`, keyed by a hash of the input JSON and of the
compiler; each entry records the files solc read through its import callback, so a
change in one of them invalidates the entry too.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import solcx
from solcx.exceptions import SolcError

from offchain.chain._files import write_json_atomically
from offchain.chain.errors import BuildError

SRC_DIR: Final = "contracts/src"
SOLC_SHIM: Final = "scripts/solc"
CACHE_DIR: Final = "out/pybuild"
FORGE_OUT: Final = "out/forge"
_CACHE_FORMAT: Final = 1
_CACHE_KEEP: Final = 16  # newest cache entries kept; older ones are deleted after each compile
_OUTPUTS: Final = ["abi", "evm.bytecode.object", "evm.deployedBytecode.object", "evm.methodIdentifiers"]


@dataclass(frozen=True, slots=True)
class Artifact:
    """One compiled contract (or interface or library: those have empty bytecode)."""

    name: str
    source: str  # path relative to the repository root, e.g. "contracts/src/CommitmentVerifier.sol"
    abi: list[dict[str, Any]]
    bytecode: bytes  # creation code, constructor arguments not appended
    deployed_bytecode: bytes  # runtime code

    @property
    def deployable(self) -> bool:
        return bool(self.bytecode)


def repo_root(start: Path | None = None) -> Path:
    """The nearest folder at or above `start` (default: this package) holding foundry.toml."""
    here = (start or Path(__file__)).resolve()
    for folder in [here, *here.parents]:
        if (folder / "foundry.toml").is_file():
            return folder
    raise BuildError(f"no foundry.toml found at or above {here}; pass the repository root explicitly")


def _profile(root: Path, profile: str) -> dict[str, Any]:
    path = root / "foundry.toml"
    try:
        with path.open("rb") as f:
            config = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise BuildError(f"cannot read {path}: {e}") from e
    profiles = config.get("profile", {})
    merged = {k: v for k, v in profiles.get("default", {}).items() if not isinstance(v, dict)}
    if profile != "default":
        if profile not in profiles:
            raise BuildError(f"{path} has no [profile.{profile}]")
        merged.update({k: v for k, v in profiles[profile].items() if not isinstance(v, dict)})
    return merged


def solc_settings(root: Path, profile: str = "default") -> dict[str, Any]:
    """The standard-JSON `settings` forge derives from foundry.toml (bytecode-relevant keys)."""
    cfg = _profile(root, profile)
    return {
        "remappings": list(cfg.get("remappings", [])),
        "optimizer": {"enabled": bool(cfg.get("optimizer", False)), "runs": int(cfg.get("optimizer_runs", 200))},
        "evmVersion": str(cfg.get("evm_version", "osaka")),
        "viaIR": bool(cfg.get("via_ir", False)),
        "metadata": {
            "bytecodeHash": str(cfg.get("bytecode_hash", "ipfs")),
            "appendCBOR": bool(cfg.get("cbor_metadata", True)),
        },
        "libraries": {},
        "outputSelection": {"*": {"*": list(_OUTPUTS)}},
    }


def source_files(root: Path, src: str = SRC_DIR) -> list[str]:
    """Every `.sol` file under `src`, as forge names them: posix paths relative to the root."""
    base = root / src
    if not base.is_dir():
        raise BuildError(f"no contract sources: {base} is not a folder")
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*.sol") if p.is_file())


def standard_json_input(root: Path, profile: str = "default", src: str = SRC_DIR) -> dict[str, Any]:
    sources = {name: {"content": (root / name).read_text(encoding="utf-8")} for name in source_files(root, src)}
    if not sources:
        raise BuildError(f"no .sol files under {root / src}")
    return {"language": "Solidity", "sources": sources, "settings": solc_settings(root, profile)}


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compiler_id(root: Path) -> str:
    """Identifies the compiler without starting Node: the shim's and solc-js's package bytes."""
    parts = []
    for rel in (SOLC_SHIM, "node_modules/solc/package.json", "node_modules/solc/soljson.js"):
        p = root / rel
        parts.append(f"{rel}:{_sha256_file(p) if p.is_file() else 'missing'}")
    return "\n".join(parts)


def _cache_key(input_json: dict[str, Any], compiler: str) -> str:
    canonical = json.dumps(input_json, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{_CACHE_FORMAT}\n{compiler}\n{canonical}".encode()).hexdigest()


def _load_cached(root: Path, path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != _CACHE_FORMAT:
        return None
    for rel, digest in entry.get("imported", {}).items():
        p = root / rel
        if not p.is_file() or _sha256_file(p) != digest:
            return None
    output = entry.get("output")
    return output if isinstance(output, dict) else None


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[_CACHE_KEEP:]:
        old.unlink(missing_ok=True)


def _run_solc(root: Path, input_json: dict[str, Any]) -> dict[str, Any]:
    shim = root / SOLC_SHIM
    if not shim.is_file():
        raise BuildError(f"solc shim {shim} is missing; run scripts/setup")
    try:
        output: dict[str, Any] = solcx.compile_standard(
            input_json, solc_binary=shim, base_path=root, allow_paths=[root]
        )
    except SolcError as e:
        raise BuildError(f"solc failed on {root / SRC_DIR}:\n{e.message}") from None
    except (OSError, ValueError) as e:
        raise BuildError(f"could not run the solc shim {shim}: {e}") from e
    return output


def _hex_bytes(obj: str, where: str) -> bytes:
    if "__$" in obj:
        raise BuildError(f"{where} needs library linking, which this build does not do; make the library internal")
    return bytes.fromhex(obj.removeprefix("0x"))


def _artifacts(output: Mapping[str, Any], wanted: set[str]) -> dict[str, Artifact]:
    found: dict[str, Artifact] = {}
    for source, contracts in sorted(output.get("contracts", {}).items()):
        if source not in wanted:
            continue
        for name, c in sorted(contracts.items()):
            if name in found:
                raise BuildError(f"contract name {name} is defined in both {found[name].source} and {source}")
            evm = c.get("evm", {})
            found[name] = Artifact(
                name=name,
                source=source,
                abi=c.get("abi", []),
                bytecode=_hex_bytes(evm.get("bytecode", {}).get("object", ""), f"{source}:{name}"),
                deployed_bytecode=_hex_bytes(evm.get("deployedBytecode", {}).get("object", ""), f"{source}:{name}"),
            )
    return found


def compile_contracts(
    root: Path | None = None, *, profile: str = "default", src: str = SRC_DIR, use_cache: bool = True
) -> dict[str, Artifact]:
    """Every contract, interface and library under `src`, by contract name."""
    root = (root or repo_root()).resolve()
    return _compile(root, standard_json_input(root, profile, src), use_cache=use_cache)


def compile_sources(
    sources: Mapping[str, str], root: Path | None = None, *, profile: str = "default", use_cache: bool = True
) -> dict[str, Artifact]:
    """The contracts of Solidity `sources` ({source name: text}) that are not under contracts/src, compiled
    with the protocol's settings (cached the same way). A source may import the protocol's files by their
    repository paths ("contracts/src/interfaces/IRecomputeOracle.sol"); only its own contracts are returned.
    For code that is no part of the protocol: a test's or an adversary's helper contract."""
    root = (root or repo_root()).resolve()
    clash = [name for name in sources if name.startswith(SRC_DIR + "/")]
    if clash:
        raise BuildError(f"{clash[0]} lies under {SRC_DIR}: compile the protocol with compile_contracts")
    input_json = {
        "language": "Solidity",
        "sources": {name: {"content": text} for name, text in sources.items()},
        "settings": solc_settings(root, profile),
    }
    return _compile(root, input_json, use_cache=use_cache)


def _compile(root: Path, input_json: dict[str, Any], *, use_cache: bool) -> dict[str, Artifact]:
    key = _cache_key(input_json, _compiler_id(root))
    cache_file = root / CACHE_DIR / f"{key}.json"
    output = _load_cached(root, cache_file) if use_cache else None
    if output is None:
        output = _run_solc(root, input_json)
        imported = sorted(set(output.get("sources", {})) - set(input_json["sources"]))
        entry = {
            "format": _CACHE_FORMAT,
            "imported": {rel: _sha256_file(root / rel) for rel in imported if (root / rel).is_file()},
            "output": {"contracts": output.get("contracts", {}), "sources": output.get("sources", {})},
        }
        write_json_atomically(cache_file, entry, sort_keys=True)
        _prune(cache_file.parent)
    return _artifacts(output, set(input_json["sources"]))


def load_forge_artifact(name: str, source: str | None = None, root: Path | None = None) -> Artifact:
    """Forge's artifact `out/forge/<File>.sol/<Name>.json` (File defaults to Name)."""
    root = (root or repo_root()).resolve()
    file_name = Path(source).name if source else f"{name}.sol"
    path = root / FORGE_OUT / file_name / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BuildError(f"no forge artifact at {path}; run `scripts/forge build` from {root}") from None
    except (OSError, ValueError) as e:
        raise BuildError(f"cannot read forge artifact {path}: {e}") from e
    target = data.get("metadata", {}).get("settings", {}).get("compilationTarget", {})
    src_path = next(iter(target), source or f"{SRC_DIR}/{file_name}")
    return Artifact(
        name=name,
        source=src_path,
        abi=data.get("abi", []),
        bytecode=_hex_bytes(data.get("bytecode", {}).get("object", "0x"), f"{path}"),
        deployed_bytecode=_hex_bytes(data.get("deployedBytecode", {}).get("object", "0x"), f"{path}"),
    )


def load_forge_artifacts(root: Path | None = None, *, src: str = SRC_DIR) -> dict[str, Artifact]:
    """Forge's artifacts of every contract whose source lies under `src`, by contract name."""
    root = (root or repo_root()).resolve()
    found: dict[str, Artifact] = {}
    out = root / FORGE_OUT
    for path in sorted(out.glob("*.sol/*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise BuildError(f"cannot read forge artifact {path}: {e}") from e
        target = data.get("metadata", {}).get("settings", {}).get("compilationTarget", {})
        source = next(iter(target), "")
        if not source.startswith(src.rstrip("/") + "/"):
            continue
        found[path.stem] = load_forge_artifact(path.stem, source, root)
    return found
