// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/Test.sol";

import {BatchVerifier} from "../src/BatchVerifier.sol";
import {TaskMarket} from "../src/TaskMarket.sol";
import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {ITaskMarket} from "../src/interfaces/ITaskMarket.sol";
import {TaskMarketProofTooLarge} from "../src/lib/MarketErrors.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {ProofGasLib} from "../src/lib/ProofGasLib.sol";
import {DisputeGameBase} from "./DisputeGame.t.sol";
import {BatchProofs} from "./utils/BatchProofs.sol";
import {Lie, Players, Task} from "./utils/Player.sol";
import {Trees} from "./utils/Trees.sol";

/// @notice `proveBatchInput` without the game: the same external call with the same arguments, and
///         the same call from it to a BatchVerifier with a schedule read from storage. What the game
///         adds (its reads, the record and descriptor checks, the resolution) is measured apart
///         (`test_proveBatchInput_gameOverMimic_succeeds`).
contract BatchProofMimic {
    BatchVerifier internal immutable _verifier = new BatchVerifier();
    BatchVerifier.Schedule internal _schedule;

    function setSchedule(BatchVerifier.Schedule memory s) external {
        _schedule = s;
    }

    function proveBatchInput(uint256, bytes calldata, bytes calldata, IDisputeGame.BatchProof calldata batch)
        external
    {
        _verifier.verify(_schedule, batch);
    }
}

/// @notice Finding 5 (issue 12): the batch-input proof had no size bound, so a task could need a
///         proof no transaction can carry. `postTask` now refuses a spec whose `proofGasBound`
///         exceeds `MAX_PROOF_GAS`; these tests check the bound against measured proofs.
/// @dev Every measuring test runs isolated (inline config `isolate = true`): `vm.lastCallGas()` is
///      the whole transaction's gas, 21,000, calldata and the EIP-7623 floor included. Real games
///      use the players of utils/Player.sol (T = 2, c = 1, two nodes; node 0 reads the batch) with a
///      dataset rebuilt here: examples of `2^fieldDepth` fields, field x first.
contract TaskMarketProofGasTest is DisputeGameBase {
    /// @notice The per-transaction gas cap of EIP-7825.
    uint256 internal constant TX_GAS_CAP = 16_777_216;
    /// @notice What the game adds to the mimic's gas for the same proof, at most (measured: about
    ///         18,000, the reads of the game and its config, the record and descriptor checks, the
    ///         resolution; a descriptor of 64 inputs adds about 6,000 more to hash).
    uint256 internal constant GAME_OVER_MIMIC = 30_000;
    /// @notice The largest record and descriptor a proof carries under `ProofGasLib.MAX_NODE_PORTS`.
    uint256 internal constant RECORD_BYTES = 4 + 32 * (4 + 64);
    uint256 internal constant DESCRIPTOR_BYTES = 132 + 96 * 64;

    TaskMarket internal market_;
    BatchProofMimic internal mimic;
    bool internal isolated;

    function setUp() public {
        _deploy();
        _registerOracle(oracleNode);
        vm.warp(1_000_000);
        market_ = new TaskMarket(game, oracle);
        mimic = new BatchProofMimic();
    }

    // ---------------------------------------------------------------- the bound's inputs

    /// @notice The library's copies of the game's and verifier's limits are theirs.
    function test_proofGasLib_constantsMatchGame_succeeds() public {
        assertEq(ProofGasLib.GAME_PROOF_GAS, game.PROOF_GAS(), "DisputeGame.PROOF_GAS");
        assertEq(ProofGasLib.MAX_STATE_ENTRIES, game.MAX_STATE_ENTRIES(), "DisputeGame.MAX_STATE_ENTRIES");
        assertEq(ProofGasLib.MAX_BATCH_BYTES, new BatchVerifier().MAX_BATCH_BYTES(), "MAX_BATCH_BYTES");
        assertLe(2 * market_.MAX_PROOF_GAS(), TX_GAS_CAP, "the budget is under half the cap");
    }

    // ---------------------------------------------------------------- the finding

    /// @notice 1024 rows of a 4096-example dataset: the honest defender's proof (measured here without
    ///         the game's part, float32[1] rows of two-field examples, the cheapest shape) takes more
    ///         than the per-transaction cap, so no honest defender could ever prove; `postTask` refuses
    ///         the spec.
    /// forge-config: default.isolate = true
    function test_postTask_batchProofOverTxCap_reverts() public {
        uint256 gas = _mimicGas(BatchProofs.Shape(1024, 12, 1, 1, 2, 42, 0, Players.NAME_X));
        console.log("1024 rows of 4096 examples: proof gas", gas, "cap", TX_GAS_CAP);
        assertGt(gas, TX_GAS_CAP, "the honest proof does not fit a transaction");

        ITaskMarket.TaskSpec memory s = _spec(1024, 4096, 2);
        uint256 bound = market_.proofGasBound(s);
        vm.expectRevert(
            abi.encodeWithSelector(TaskMarketProofTooLarge.selector, bound, market_.MAX_PROOF_GAS())
        );
        market_.postTask{value: 1 ether}(s);
    }

    // ---------------------------------------------------------------- the largest accepted proofs

    /// @notice The largest batch `postTask` accepts for a 4096-example dataset, proven in a real game
    ///         by the honest defender with the most the bound allows (24 KiB of data, 16 fields per
    ///         example): its gas is under the bound.
    /// forge-config: default.isolate = true
    function test_proveBatchInput_largestAcceptedBatch4096_succeeds() public {
        _largestAccepted("largest_4096", 4096, 12);
    }

    /// @notice The same for a 16-example dataset (shallow openings, so more rows).
    /// forge-config: default.isolate = true
    function test_proveBatchInput_largestAcceptedBatch16_succeeds() public {
        _largestAccepted("largest_16", 16, 4);
    }

    /// @notice The game adds little to the verifier's work: the same proof through the real game and
    ///         through the mimic differ by less than `GAME_OVER_MIMIC`, with many rows or much data.
    /// forge-config: default.isolate = true
    function test_proveBatchInput_gameOverMimic_succeeds() public {
        _gameOverMimic(4096, 128, 2, 4);
        _gameOverMimic(16, 64, 96, 1);
    }

    /// @notice The bound at its worst shapes: for datasets of 1 to 2^40 examples, the largest accepted
    ///         batch of rows of 32 dimensions and 24 KiB in all, 16 fields per example, the largest
    ///         record and descriptor, through the mimic plus what the game adds.
    /// forge-config: default.isolate = true
    function test_proofGasBound_worstShapes_succeeds() public {
        uint256[5] memory depths = [uint256(0), 4, 12, 20, 40];
        for (uint256 i; i < depths.length; ++i) {
            uint64 n = uint64(1) << depths[i];
            uint64 rows = _largestRows(n);
            uint256 b = market_.proofGasBound(_spec(rows, n, 2));
            uint256 elems = ProofGasLib.MAX_BATCH_BYTES / 4 / rows;
            uint256 gas = _mimicGas(BatchProofs.Shape(rows, depths[i], 4, elems, 32, 7, 1, Players.NAME_X));
            console.log("dataset depth", depths[i], "rows", rows);
            console.log("  proof gas (mimic + game)", gas + GAME_OVER_MIMIC, "bound", b);
            assertLe(gas + GAME_OVER_MIMIC, b, "proof gas <= proofGasBound");
        }
        // One row holding all 24 KiB: the EIP-7623 floor is the whole cost.
        uint256 one = _mimicGas(BatchProofs.Shape(1, 0, 4, 6144, 32, 7, 1, Players.NAME_X));
        uint256 oneBound = market_.proofGasBound(_spec(1, 1, 2));
        console.log("one row of 24 KiB: proof gas (mimic + game)", one + GAME_OVER_MIMIC, "bound", oneBound);
        assertLe(one + GAME_OVER_MIMIC, oneBound, "proof gas <= proofGasBound");
    }

    /// @notice The bound covers every batch proof of an accepted spec, whatever its shape: rows,
    ///         dataset depth up to 40, up to 16 fields, rows of any size up to 24 KiB in all, up to 32
    ///         dimensions, the largest record and descriptor. Measured through the mimic plus what the
    ///         game adds.
    /// forge-config: default.isolate = true
    /// forge-config: default.fuzz.runs = 48
    function testFuzz_proofGasBound_coversBatchProof_succeeds(
        uint256 rows,
        uint256 datasetDepth,
        uint256 fieldDepth,
        uint256 rowElems,
        uint256 ndim
    ) public {
        datasetDepth = bound(datasetDepth, 0, 40);
        fieldDepth = bound(fieldDepth, 0, 4);
        ndim = bound(ndim, 2, 32);
        rows = bound(rows, 1, 400);
        ITaskMarket.TaskSpec memory s = _spec(uint64(rows), uint64(1) << datasetDepth, 2);
        uint256 b = market_.proofGasBound(s);
        vm.assume(b <= market_.MAX_PROOF_GAS());
        rowElems = bound(rowElems, 1, ProofGasLib.MAX_BATCH_BYTES / 4 / rows);
        uint256 gas = _mimicGas(
            BatchProofs.Shape(rows, datasetDepth, fieldDepth, rowElems, ndim, 7, 1, Players.NAME_X)
        );
        assertLe(gas + GAME_OVER_MIMIC, b, "proof gas <= proofGasBound");
    }

    // ---------------------------------------------------------------- the other proofs

    /// @notice State, constant, node-input and post-state proofs of a 4096-node program, through the
    ///         real game, stay under `otherProofGas`.
    /// forge-config: default.isolate = true
    function test_otherProofs_underBound_succeeds() public {
        uint64 m = 4096;
        uint256 bound = ProofGasLib.otherProofGas(m);
        Lie[4] memory lies = [Lie.StateInput, Lie.ConstantInput, Lie.FirstInput, Lie.PostStateM];
        string[4] memory names = ["state input", "constant input", "node input", "post-state"];
        for (uint256 i; i < lies.length; ++i) {
            Task memory t = Players.task(2, 1, 16, m, 2, 5, CLOCK, 7);
            Match memory mt = _newMatch(t, lies[i], 0, m - 2, true);
            uint256 gas = _honestProofGas(mt);
            console.log(names[i], gas, "bound", bound);
            assertLe(gas, bound, "proof gas <= otherProofGas");
        }
    }

    // ---------------------------------------------------------------- accepted specs

    /// @notice Every spec `postTask` accepts has a bound that fits one transaction with room to spare,
    ///         and pays its winners for it; every spec it refuses for its proof has a bound above the
    ///         budget. The bound grows with each of the three sizes.
    function testFuzz_postTask_proofGasBound_succeeds(uint64 batchSize, uint64 datasetSize, uint64 nodeCount)
        public
    {
        batchSize = uint64(bound(batchSize, 1, 2048));
        datasetSize = uint64(bound(datasetSize, 1, type(uint64).max));
        nodeCount = uint64(bound(nodeCount, 1, type(uint64).max));
        ITaskMarket.TaskSpec memory s = _spec(batchSize, datasetSize, nodeCount);
        uint256 b = market_.proofGasBound(s);
        assertGe(
            b, market_.proofGasBound(_spec(batchSize - 1 == 0 ? 1 : batchSize - 1, datasetSize, nodeCount))
        );
        assertGe(b, market_.proofGasBound(_spec(batchSize, datasetSize / 2 + 1, nodeCount)));
        assertGe(b, market_.proofGasBound(_spec(batchSize, datasetSize, nodeCount / 2 + 1)));
        if (b > market_.MAX_PROOF_GAS()) {
            vm.expectRevert(
                abi.encodeWithSelector(TaskMarketProofTooLarge.selector, b, market_.MAX_PROOF_GAS())
            );
            market_.postTask{value: 1 ether}(s);
            return;
        }
        market_.postTask{value: 1 ether}(s);
        assertLe(b, TX_GAS_CAP / 2, "an accepted spec's largest proof fits a transaction with room");
        uint256 extra = b > game.PROOF_GAS() ? b - game.PROOF_GAS() : 0;
        assertEq(
            market_.compensation(s),
            (game.honestGasBound(_cfg(s)) + extra) * s.gasPriceCap,
            "compensation pays it"
        );
    }

    // ---------------------------------------------------------------- helpers

    function _gameOverMimic(uint64 n, uint64 rows, uint64 rowElems, uint256 fieldDepth) internal {
        (uint256 real, bytes memory cd, BatchVerifier.Schedule memory s) =
            _realProof(n, rows, rowElems, fieldDepth);
        mimic.setSchedule(s);
        (bool ok,) = address(mimic).call(cd);
        assertTrue(ok, "the mimic verifies the game's proof");
        uint256 alone = vm.lastCallGas().gasTotalUsed;
        console.log("rows", rows, "data bytes", 4 * uint256(rowElems) * rows);
        console.log("  real game", real, "mimic", alone);
        assertGt(real, alone, "the game adds its part");
        assertLe(real - alone, GAME_OVER_MIMIC, "the game adds at most GAME_OVER_MIMIC");
    }

    /// @dev The largest batch size `postTask` accepts for a dataset of `n` examples.
    function _largestRows(uint64 n) internal view returns (uint64 rows) {
        rows = 1;
        while (market_.proofGasBound(_spec(rows + 1, n, 2)) <= market_.MAX_PROOF_GAS()) ++rows;
    }

    /// @dev Finds the largest batch size accepted for a dataset of `n` examples (depth `depth`), plays a
    ///      real game to the batch proof with 24 KiB of data and 16-field examples, and checks its gas.
    function _largestAccepted(string memory name, uint64 n, uint256 depth) internal {
        assertEq(MerkleLib.depth(n), depth, "dataset depth");
        uint64 rows = _largestRows(n);
        uint256 b = market_.proofGasBound(_spec(rows, n, 2));
        ITaskMarket.TaskSpec memory over = _spec(rows + 1, n, 2);
        vm.expectRevert(
            abi.encodeWithSelector(
                TaskMarketProofTooLarge.selector, market_.proofGasBound(over), market_.MAX_PROOF_GAS()
            )
        );
        market_.postTask{value: 1 ether}(over);

        uint64 rowElems = uint64(ProofGasLib.MAX_BATCH_BYTES / 4 / rows);
        (uint256 gas,,) = _realProof(n, rows, rowElems, 4);
        console.log(name, "rows", rows);
        console.log("  row elements", rowElems, "data bytes", 4 * uint256(rowElems) * rows);
        console.log("  proof gas", gas, "bound", b);
        assertLe(gas, b, "the largest accepted proof is under its bound");
        vm.snapshotValue("TaskMarketGas", string.concat(name, "_rows"), rows);
        vm.snapshotValue("TaskMarketGas", string.concat(name, "_proof"), gas);
        vm.snapshotValue("TaskMarketGas", string.concat(name, "_bound"), b);
    }

    /// @dev Plays a real game (the honest player defends) to the batch proof of a task of `rows` rows of
    ///      float32[rowElems] from `n` examples of `2^fieldDepth` fields; sends the honest proof and
    ///      returns its transaction gas, its calldata and the schedule it proves.
    function _realProof(uint64 n, uint64 rows, uint64 rowElems, uint256 fieldDepth)
        internal
        returns (uint256 gas, bytes memory cd, BatchVerifier.Schedule memory s)
    {
        assertTrue(_probeIsolation(), "isolated");
        Task memory t = Players.taskWithRows(2, 1, 2, 2, rows, 1, CLOCK, 42, 1);
        bytes32[] memory exampleRoots = _dataset(t, n, rowElems, fieldDepth);
        Match memory m = _newMatch(t, Lie.FirstInput, 0, 0, true);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.InputProof);
        assertEq(v.position, 0, "node 0");
        assertEq(v.inputIndex, 0, "its batch input");
        IDisputeGame.BatchProof memory p = _batchProof(t, v.lo, exampleRoots, fieldDepth);
        cd = abi.encodeCall(
            IDisputeGame.proveBatchInput,
            (m.id, Players.record(m.players[0], v.lo, 0), Players.descriptorAt(m.players[0], 0), p)
        );
        (bool ok, uint256 g,) = _send(defender, cd);
        assertTrue(ok, "the honest proof");
        assertEq(uint256(game.outcome(m.id)), uint256(IDisputeGame.Outcome.DefenderWins), "the defender wins");
        gas = g;
        s = BatchVerifier.Schedule({
            datasetRoot: t.cfg.datasetRoot,
            datasetSize: n,
            batchSize: rows,
            seed: t.cfg.seed,
            step: v.lo,
            nameHash: Players.NAME_X,
            commitment: Players.batchCommitment(t, v.lo)
        });
    }

    /// @dev The dataset of the real games: `n` examples whose field x is float32[rowElems] (pseudo-random
    ///      words) and `2^fieldDepth - 1` other fields. Keeps only the examples' roots (their field
    ///      trees are built again for the rows of a proof), so that large datasets fit the test's memory.
    function _dataset(Task memory t, uint64 n, uint64 rowElems, uint256 fieldDepth)
        internal
        pure
        returns (bytes32[] memory exampleRoots)
    {
        t.cfg.datasetSize = n;
        t.rowElems = rowElems;
        t.exampleX = new bytes[](n);
        exampleRoots = new bytes32[](n);
        bytes32[] memory exampleLeaves = new bytes32[](n);
        uint256 len = 4 * uint256(rowElems);
        for (uint256 i; i < n; ++i) {
            bytes memory x = new bytes(len);
            assembly ("memory-safe") {
                // Fills x with keccak(i, k) words, allocated above (the last word may run past x's
                // length, into memory not yet allocated; the free memory pointer is left as is).
                let at := add(x, 0x20)
                for { let k := 0 } lt(k, len) { k := add(k, 32) } {
                    mstore(0x00, i)
                    mstore(0x20, k)
                    mstore(add(at, k), keccak256(0x00, 0x40))
                }
            }
            t.exampleX[i] = x;
            uint256 fmp = Players.freeMemory();
            bytes32 root = _exampleTree(x, rowElems, fieldDepth).root;
            Players.resetMemory(fmp);
            exampleRoots[i] = root;
            exampleLeaves[i] = Trees.leaf(abi.encodePacked("EXMP", i, root));
            Players.resetMemory(fmp);
        }
        t.dataset = Trees.build(exampleLeaves);
        t.cfg.datasetRoot = t.dataset.root;
    }

    function _exampleTree(bytes memory x, uint64 rowElems, uint256 fieldDepth)
        internal
        pure
        returns (Trees.Tree memory)
    {
        bytes32[] memory fields = new bytes32[](uint256(1) << fieldDepth);
        fields[0] = Players.sten(Players.NAME_X, Players.tensorCommitment(x, Players.dims(rowElems)));
        for (uint256 k = 1; k < fields.length; ++k) {
            fields[k] = keccak256(abi.encode("field", k));
        }
        return Trees.build(fields);
    }

    function _batchProof(Task memory t, uint256 s, bytes32[] memory exampleRoots, uint256 fieldDepth)
        internal
        pure
        returns (IDisputeGame.BatchProof memory b)
    {
        uint256 rows = t.cfg.batchSize;
        uint256 dd = Trees.height(t.dataset);
        b.dtype = Players.FLOAT32;
        b.shape = Players.batchShape(t);
        b.data = Players.batchData(t, s);
        b.exampleRoots = new bytes32[](rows);
        b.fieldCount = uint64(1) << fieldDepth;
        b.fieldIndex = new uint64[](rows);
        b.datasetSiblings = new bytes32[](rows * dd);
        b.fieldSiblings = new bytes32[](rows * fieldDepth);
        for (uint256 j; j < rows; ++j) {
            uint256 idx = Players.batchIndex(t, s, j);
            b.exampleRoots[j] = exampleRoots[idx];
            bytes32[] memory ds = Trees.opening(t.dataset, idx);
            for (uint256 k; k < dd; ++k) {
                b.datasetSiblings[j * dd + k] = ds[k];
            }
            bytes32[] memory fs = Trees.opening(_exampleTree(t.exampleX[idx], t.rowElems, fieldDepth), 0);
            for (uint256 k; k < fieldDepth; ++k) {
                b.fieldSiblings[j * fieldDepth + k] = fs[k];
            }
        }
    }

    /// @dev The mimic's transaction gas for a proof of `sh`, with the largest record and descriptor.
    function _mimicGas(BatchProofs.Shape memory sh) internal returns (uint256) {
        assertTrue(_probeIsolation(), "isolated");
        (IDisputeGame.BatchProof memory p, BatchVerifier.Schedule memory s) = BatchProofs.build(sh);
        mimic.setSchedule(s);
        bytes memory cd = abi.encodeCall(
            BatchProofMimic.proveBatchInput, (1, _nonZero(RECORD_BYTES), _nonZero(DESCRIPTOR_BYTES), p)
        );
        (bool ok,) = address(mimic).call(cd);
        assertTrue(ok, "the proof verifies");
        return vm.lastCallGas().gasTotalUsed;
    }

    /// @dev Plays the match until the honest defender must prove, sends its proof, returns its gas.
    function _honestProofGas(Match memory m) internal returns (uint256) {
        for (;;) {
            IDisputeGame.GameView memory v = _view(m);
            assertTrue(v.stage != IDisputeGame.Stage.Resolved, "resolved before a proof");
            bool proving =
                v.stage == IDisputeGame.Stage.InputProof || v.stage == IDisputeGame.Stage.PostStateProof;
            _step(m);
            if (proving) {
                assertEq(uint256(game.outcome(m.id)), uint256(IDisputeGame.Outcome.DefenderWins), "proven");
                return m.lastGas;
            }
        }
    }

    function _nonZero(uint256 len) internal pure returns (bytes memory b) {
        b = new bytes(len);
        for (uint256 i; i < len; ++i) {
            b[i] = 0xff;
        }
    }

    /// @dev Whether calls run as their own transactions (then `lastCallGas` includes 21,000).
    function _probeIsolation() internal returns (bool) {
        (bool ok,) = address(game).call(abi.encodeCall(IDisputeGame.gameCount, ()));
        assertTrue(ok, "probe");
        return vm.lastCallGas().gasTotalUsed >= 21_000;
    }

    function _spec(uint64 batchSize, uint64 datasetSize, uint64 nodeCount)
        internal
        view
        returns (ITaskMarket.TaskSpec memory s)
    {
        s = ITaskMarket.TaskSpec({
            programHash: keccak256("program"),
            graphRoot: keccak256("graph"),
            datasetRoot: keccak256("dataset"),
            initialStateRoot: keccak256("initial"),
            seed: 42,
            datasetSize: datasetSize,
            steps: 8,
            checkpointInterval: 2,
            batchSize: batchSize,
            nodeCount: nodeCount,
            arity: 4,
            clock: 1 days,
            slots: 2,
            bond: 0,
            gasPriceCap: 1 gwei,
            joinDeadline: uint64(block.timestamp + 1 days),
            submitDeadline: uint64(block.timestamp + 2 days),
            disputeDeadline: uint64(block.timestamp + 3 days)
        });
        s.bond = market_.minBond(s);
    }

    function _cfg(ITaskMarket.TaskSpec memory s) internal pure returns (IDisputeGame.Config memory) {
        return IDisputeGame.Config({
            programHash: s.programHash,
            graphRoot: s.graphRoot,
            datasetRoot: s.datasetRoot,
            seed: s.seed,
            steps: s.steps,
            checkpointInterval: s.checkpointInterval,
            nodeCount: s.nodeCount,
            datasetSize: s.datasetSize,
            batchSize: s.batchSize,
            arity: s.arity,
            clock: s.clock
        });
    }
}
