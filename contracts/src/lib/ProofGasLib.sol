// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {MerkleLib} from "./MerkleLib.sol";
import {TensorLib} from "./TensorLib.sol";

/// @title ProofGasLib
/// @notice A closed-form upper bound on the gas of the largest decision proof any game of a task can
///         need (docs/game.md, "Market bounds"), from the three sizes of the spec that proofs grow
///         with: `batchSize` (rows of a batch-input proof), `datasetSize` (the depth of each row's
///         dataset opening) and `nodeCount` (the depth of a node-input or post-state opening).
/// @dev A transaction pays `21000 + max(standard calldata + execution, EIP-7623 floor)`; the bound
///      takes every calldata byte as non-zero (16 gas standard, 40 at the floor), the most calldata
///      each proof can carry, and an execution model measured in contracts/test/TaskMarketProofGas.t.sol
///      (through the real game and through BatchVerifier alone, at up to 512 rows and 2^40 examples)
///      with about 25% added to every rate, plus the memory expansion of EVM memory (`3 w + w^2 / 512`
///      for `w` words) of the game's copy of the proof and of the verifier's working memory, in full.
///      Sizes that no spec field fixes are bounded by the verifier's and tensor library's own limits
///      (at most `MAX_BATCH_BYTES` of batch data, `TensorLib.MAX_NDIM` dimensions) or, where the
///      contracts set none, by the assumptions below, which a trainer checks before joining
///      (offchain/agents/task.py): an example has at most `MAX_EXAMPLE_FIELDS` fields and a node at
///      most `MAX_NODE_PORTS` inputs and outputs.
library ProofGasLib {
    /// @notice `BatchVerifier.MAX_BATCH_BYTES`: the most batch data a proof carries.
    uint256 internal constant MAX_BATCH_BYTES = 24 * 1024;
    /// @notice `DisputeGame.MAX_STATE_ENTRIES`: the largest state a post-state descent handles.
    uint256 internal constant MAX_STATE_ENTRIES = 1 << 16;
    /// @notice `DisputeGame.PROOF_GAS`: the game's own allowance for the decision proof in
    ///         `honestGasBound` (contracts/test/TaskMarketProofGas.t.sol checks these three copies).
    uint256 internal constant GAME_PROOF_GAS = 2_000_000;
    /// @notice Fields per dataset example the bound assumes (depth 4 of an example's field list).
    uint256 internal constant MAX_EXAMPLE_FIELDS = 16;
    /// @notice Inputs plus outputs of one program node the bound assumes (the size of a NODE record
    ///         and of a descriptor).
    uint256 internal constant MAX_NODE_PORTS = 64;

    /// @dev Calldata gas per byte: standard (non-zero byte) and the EIP-7623 floor (10 per token, four
    ///      tokens a non-zero byte).
    uint256 private constant CALLDATA_GAS = 16;
    uint256 private constant FLOOR_GAS = 40;
    uint256 private constant TX_BASE = 21_000;

    /// @dev Execution of a batch-input proof: fixed (the game's reads of the game and its config,
    ///      the resolution, the call to the verifier, hashing up to `MAX_BATCH_BYTES` of data twice),
    ///      per byte of record and descriptor, per row, per opening level of a row (dataset and field
    ///      lists), per dimension of the row tensor (its header is built and hashed for every row),
    ///      and the verifier's memory per row.
    uint256 private constant BATCH_FIXED = 200_000;
    uint256 private constant RECORD_BYTE = 16;
    uint256 private constant BATCH_ROW = 13_500;
    uint256 private constant BATCH_LEVEL = 460;
    uint256 private constant BATCH_DIM = 350;
    uint256 private constant BATCH_ROW_MEMORY = 1_536;

    /// @dev Execution of the other proofs (state, constant, node-input, post-state): fixed, and per
    ///      sibling word folded.
    uint256 private constant OTHER_FIXED = 250_000;
    uint256 private constant OTHER_LEVEL = 460;
    /// @dev Deepest opening of a list no spec field sizes (a program's constants or outputs): MerkleLib's
    ///      largest count is 2^64 - 1.
    uint256 private constant MAX_DEPTH = 64;

    /// @notice The bound: the larger of `batchProofGas` and `otherProofGas`.
    function proofGas(uint256 batchSize, uint256 datasetSize, uint256 nodeCount)
        internal
        pure
        returns (uint256)
    {
        uint256 batch = batchProofGas(batchSize, datasetSize);
        uint256 other = otherProofGas(nodeCount);
        return batch > other ? batch : other;
    }

    /// @notice Gas of the largest `proveBatchInput` of a task with batches of `batchSize` rows of a
    ///         dataset of `datasetSize` examples.
    function batchProofGas(uint256 batchSize, uint256 datasetSize) internal pure returns (uint256) {
        uint256 rows = batchSize;
        uint256 levels = MerkleLib.depth(datasetSize) + MerkleLib.depth(MAX_EXAMPLE_FIELDS);
        uint256 ndim = TensorLib.MAX_NDIM;
        uint256 data = MAX_BATCH_BYTES;
        uint256 ports = _recordBytes() + _descriptorBytes();
        // proveBatchInput(gameId, record, descriptor, (dtype, shape, data, exampleRoots, datasetSiblings,
        // fieldCount, fieldIndex, fieldSiblings)): selector, 4 head words, 2 byte strings, the tuple's
        // 8 head words, then its arrays, each with a length word.
        uint256 cd = 4 + 32 * 4 + (32 + ports) + 32 * 8 + 32 * (1 + ndim) + (32 + data) + 32 * 4 + 32 * rows
            * (2 + levels);
        uint256 exec = BATCH_FIXED + RECORD_BYTE * ports + rows
            * (BATCH_ROW + BATCH_LEVEL * levels + BATCH_DIM * ndim) + _memoryGas(cd)
            + _memoryGas(2 * data + rows * BATCH_ROW_MEMORY);
        return _txGas(cd, exec);
    }

    /// @notice Gas of the largest state, constant, node-input or post-state proof of a program of
    ///         `nodeCount` nodes: a superset of their calldata (two NODE records, a descriptor, the
    ///         program roots, a state-entry opening of `MAX_STATE_ENTRIES`, an opening in
    ///         the trace of `depth(nodeCount)` and two of `MAX_DEPTH`).
    function otherProofGas(uint256 nodeCount) internal pure returns (uint256) {
        uint256 siblings = 2 * MerkleLib.depth(MAX_STATE_ENTRIES) + MerkleLib.depth(nodeCount) + 2 * MAX_DEPTH;
        uint256 records = 2 * _recordBytes() + _descriptorBytes();
        // Head words, fixed fields and length words of every proof's arguments: at most 40.
        uint256 cd = 4 + 32 * 40 + 3 * 32 + records + 32 * siblings;
        uint256 exec = OTHER_FIXED + RECORD_BYTE * records + OTHER_LEVEL * siblings + _memoryGas(cd);
        return _txGas(cd, exec);
    }

    /// @dev `21000 + max(standard calldata + execution, floor)`, every calldata byte non-zero.
    function _txGas(uint256 cd, uint256 exec) private pure returns (uint256) {
        uint256 standard = CALLDATA_GAS * cd + exec;
        uint256 floor = FLOOR_GAS * cd;
        return TX_BASE + (standard > floor ? standard : floor);
    }

    /// @dev EVM memory expansion to `bytes_` bytes: `3 w + w^2 / 512`, `w` words.
    function _memoryGas(uint256 bytes_) private pure returns (uint256) {
        uint256 w = (bytes_ + 31) / 32;
        return 3 * w + w * w / 512;
    }

    /// @dev A NODE record of `MAX_NODE_PORTS` inputs and outputs (`"NODE" || u256(i) || H(desc) ||
    ///      u256(nIn) || inputs || u256(nOut) || outputs`), padded to words.
    function _recordBytes() private pure returns (uint256) {
        return 32 * (5 + MAX_NODE_PORTS);
    }

    /// @dev A descriptor of `MAX_NODE_PORTS` inputs (132 bytes and 96 per input; an output takes 32),
    ///      padded to words.
    function _descriptorBytes() private pure returns (uint256) {
        return 32 * (5 + 3 * MAX_NODE_PORTS);
    }
}
