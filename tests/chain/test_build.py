"""py-solc-x builds equal forge's, byte for byte; the build cache notices changed imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from offchain.chain.build import (
    Artifact,
    compile_contracts,
    load_forge_artifact,
    load_forge_artifacts,
    repo_root,
    solc_settings,
    source_files,
)
from offchain.chain.errors import BuildError

ROOT = repo_root()


@pytest.fixture(scope="module")
def forge_artifacts() -> dict[str, Artifact]:
    proc = subprocess.run(
        ["scripts/forge", "build"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"forge build failed:\n{proc.stdout}\n{proc.stderr}"
    return load_forge_artifacts(ROOT)


def test_every_source_contract_has_both_builds(
    artifacts: dict[str, Artifact], forge_artifacts: dict[str, Artifact]
) -> None:
    assert "CommitmentVerifier" in artifacts
    assert sorted(artifacts) == sorted(forge_artifacts)
    for name, art in artifacts.items():
        assert art.source.startswith("contracts/src/"), name
        assert forge_artifacts[name].source == art.source


def test_bytecode_equals_forge(artifacts: dict[str, Artifact], forge_artifacts: dict[str, Artifact]) -> None:
    for name, ours in artifacts.items():
        theirs = forge_artifacts[name]
        assert ours.bytecode == theirs.bytecode, f"{name}: creation code differs from forge's"
        assert ours.deployed_bytecode == theirs.deployed_bytecode, f"{name}: runtime code differs from forge's"
        assert sorted(json.dumps(x, sort_keys=True) for x in ours.abi) == sorted(
            json.dumps(x, sort_keys=True) for x in theirs.abi
        ), name
    assert artifacts["CommitmentVerifier"].deployable
    assert not artifacts["ICommitmentVerifier"].deployable


def test_settings_come_from_foundry_toml() -> None:
    s = solc_settings(ROOT)
    assert s["optimizer"] == {"enabled": True, "runs": 200}
    assert s["evmVersion"] == "osaka"
    assert s["metadata"] == {"bytecodeHash": "none", "appendCBOR": False}
    assert "forge-std/=node_modules/@layerzerolabs/toolbox-foundry/lib/forge-std/" in s["remappings"]
    assert all(not p.startswith("contracts/test") for p in source_files(ROOT))


def test_cached_build_is_fast_and_equal(artifacts: dict[str, Artifact]) -> None:
    t0 = time.perf_counter()
    again = compile_contracts(ROOT)
    assert time.perf_counter() - t0 < 1.0
    assert again == artifacts


def test_forge_artifact_loader_names_missing_build(tmp_path: Path) -> None:
    (tmp_path / "foundry.toml").write_text("")
    with pytest.raises(BuildError, match="forge build"):
        load_forge_artifact("Nope", root=tmp_path)


def _mini_repo(tmp_path: Path, shared_value: int) -> Path:
    """A repository with one contract in src that imports a file outside src."""
    shutil.copy(ROOT / "foundry.toml", tmp_path / "foundry.toml")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "solc", tmp_path / "scripts" / "solc")
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    (tmp_path / "contracts" / "src").mkdir(parents=True)
    (tmp_path / "contracts" / "shared").mkdir()
    (tmp_path / "contracts" / "src" / "A.sol").write_text(
        '// SPDX-License-Identifier: Apache-2.0\npragma solidity ^0.8.28;\nimport {V} from "../shared/B.sol";\n'
        "contract A { function v() external pure returns (uint256) { return V; } }\n"
    )
    _write_shared(tmp_path, shared_value)
    return tmp_path


def _write_shared(root: Path, value: int) -> None:
    (root / "contracts" / "shared" / "B.sol").write_text(
        f"// SPDX-License-Identifier: Apache-2.0\npragma solidity ^0.8.28;\nuint256 constant V = {value};\n"
    )


def test_cache_is_invalidated_by_a_changed_import(tmp_path: Path) -> None:
    root = _mini_repo(tmp_path, 7)
    first = compile_contracts(root)["A"]
    assert list((root / "out" / "pybuild").glob("*.json"))
    assert compile_contracts(root)["A"] == first  # from the cache
    _write_shared(root, 8)
    second = compile_contracts(root)["A"]
    assert second.deployed_bytecode != first.deployed_bytecode


def test_compile_error_is_a_build_error(tmp_path: Path) -> None:
    root = _mini_repo(tmp_path, 1)
    (root / "contracts" / "src" / "Broken.sol").write_text("pragma solidity ^0.8.28; contract Broken { oops }\n")
    with pytest.raises(BuildError, match=r"Broken\.sol"):
        compile_contracts(root)


def test_a_failing_forge_run_fails_the_scripts_that_run_it(tmp_path: Path) -> None:
    """`./scripts/test` must fail when a forge test fails. The npm wrapper node_modules/.bin/forge exits 0
    whatever forge returned (it spawns the binary and drops its status), so the scripts run scripts/forge."""
    (tmp_path / "src").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "foundry.toml").write_text(
        f'[profile.default]\nsrc = "src"\ntest = "test"\nout = "out"\nsolc = "{ROOT / "scripts" / "solc"}"\n'
        "offline = true\nauto_detect_solc = false\n"
    )
    (tmp_path / "test" / "Fails.t.sol").write_text(
        "// SPDX-License-Identifier: MIT\npragma solidity ^0.8.0;\n"
        'contract FailsTest { function test_fails() public pure { revert("fails"); } }\n'
    )

    def forge(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ROOT / "scripts" / "forge"), *args, "--root", str(tmp_path)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip

    run = forge("test")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "test_fails" in run.stdout and "FAIL" in run.stdout
    (tmp_path / "src" / "Broken.sol").write_text("contract Broken { function f( }\n")
    assert forge("build").returncode == 1
    for script in ("test", "setup", "slither"):
        text = (ROOT / "scripts" / script).read_text()
        assert "scripts/forge" in text and ".bin/forge" not in text, f"scripts/{script} runs npm's forge wrapper"
