// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "./interfaces/IDisputeGame.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {TensorLib} from "./lib/TensorLib.sol";
import {
    DisputeGameWidth,
    DisputeGameMalformed,
    DisputeGameValueMismatch,
    DisputeGameBatchTooLarge
} from "./lib/GameErrors.sol";

/// @title BatchVerifier
/// @notice Checks that a tensor commitment is the batch the schedule of docs/data.md gives for a
///         step: every row is the named field of the scheduled example, opened in the dataset.
/// @dev Stateless; created by DisputeGame in its constructor (a separate contract only to keep the
///      game under the code size limit). Reverts with the game's errors and MerkleLib's.
contract BatchVerifier {
    /// @notice Largest batch tensor (bytes) a batch-input proof may carry: 24 KiB, so that the largest
    ///      proof (about 1.5M gas, most of it the EIP-7623 calldata floor), the honest side's moves and
    ///      opening the game stay under 3M gas together.
    uint256 public constant MAX_BATCH_BYTES = 24 * 1024;

    bytes4 private constant EXMP = "EXMP";
    bytes4 private constant STEN = "STEN";
    bytes4 private constant BTCH = "BTCH";

    /// @notice What the batch must be: field `nameHash` of the scheduled examples of `step`.
    struct Schedule {
        bytes32 datasetRoot;
        uint64 datasetSize;
        uint64 batchSize;
        uint256 seed;
        uint256 step;
        bytes32 nameHash;
        bytes32 commitment; // the claimed batch tensor commitment
    }

    /// @dev Sizes of a batch proof, kept together to spare the stack.
    struct Dims {
        uint256 rowBytes;
        uint256 datasetDepth;
        uint256 fieldDepth;
    }

    /// @notice Returns iff `p` proves that `s.commitment` is the batch of `s.step`.
    /// @dev Row `j` is example `idx_j = H("BTCH" || u256(seed) || u256(step) || u256(j)) mod datasetSize`:
    ///      `leaf("EXMP" || u256(idx_j) || exampleRoots[j])` opens at `idx_j` of the dataset root and
    ///      `leaf("STEN" || nameHash || rowCommitment_j)` at `fieldIndex[j]` of `exampleRoots[j]`.
    function verify(Schedule calldata s, IDisputeGame.BatchProof calldata p) external pure {
        uint256 rows = s.batchSize;
        if (p.shape.length == 0 || p.shape[0] != rows) revert DisputeGameMalformed(4, p.shape.length);
        if (p.data.length > MAX_BATCH_BYTES) revert DisputeGameBatchTooLarge(p.data.length, MAX_BATCH_BYTES);
        uint256 rowElems = TensorLib.numel(p.shape[1:]);
        if (rowElems > MAX_BATCH_BYTES) revert DisputeGameBatchTooLarge(rowElems, MAX_BATCH_BYTES);
        Dims memory d = Dims({
            rowBytes: rowElems * TensorLib.elementSize(p.dtype),
            datasetDepth: MerkleLib.depth(s.datasetSize),
            fieldDepth: MerkleLib.depth(p.fieldCount)
        });
        if (d.rowBytes * rows != p.data.length) revert DisputeGameMalformed(2, p.data.length);
        if (p.exampleRoots.length != rows) revert DisputeGameWidth(p.exampleRoots.length, rows);
        if (p.fieldIndex.length != rows) revert DisputeGameWidth(p.fieldIndex.length, rows);
        if (p.datasetSiblings.length != rows * d.datasetDepth) {
            revert DisputeGameWidth(p.datasetSiblings.length, rows * d.datasetDepth);
        }
        if (p.fieldSiblings.length != rows * d.fieldDepth) {
            revert DisputeGameWidth(p.fieldSiblings.length, rows * d.fieldDepth);
        }
        bytes32 whole = TensorLib.commitmentOf(p.dtype, p.shape, chunkRoot(p.data));
        if (whole != s.commitment) revert DisputeGameValueMismatch(whole, s.commitment);
        for (uint256 j; j < rows; ++j) {
            _verifyRow(s, p, d, j);
        }
    }

    /// @notice The data root of docs/commitments.md section 3: the list root over 4096-byte chunk leaves.
    function chunkRoot(bytes calldata data) public pure returns (bytes32) {
        uint256 size = TensorLib.CHUNK;
        uint256 n = (data.length + size - 1) / size;
        bytes32[] memory level = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            uint256 end = (i + 1) * size;
            if (end > data.length) end = data.length;
            level[i] = MerkleLib.leafHashCalldata(data[i * size:end]);
        }
        uint256 width = n;
        while (width > 1) {
            uint256 half = (width + 1) / 2;
            for (uint256 i; i < half; ++i) {
                bytes32 right = 2 * i + 1 < width ? level[2 * i + 1] : MerkleLib.PAD;
                level[i] = MerkleLib.nodeHash(level[2 * i], right);
            }
            width = half;
        }
        return MerkleLib.listRoot(n, n == 0 ? MerkleLib.PAD : level[0]);
    }

    /// @dev Row `j` of the batch is field `nameHash` of the scheduled example.
    function _verifyRow(Schedule calldata s, IDisputeGame.BatchProof calldata p, Dims memory d, uint256 j)
        private
        pure
    {
        uint256 n = s.datasetSize;
        uint256 idx = uint256(sha256(abi.encodePacked(BTCH, s.seed, s.step, j))) % n;
        uint256 dd = d.datasetDepth;
        MerkleLib.verify(
            s.datasetRoot,
            n,
            idx,
            MerkleLib.leafHash(abi.encodePacked(EXMP, idx, p.exampleRoots[j])),
            p.datasetSiblings[j * dd:(j + 1) * dd]
        );
        uint256 rb = d.rowBytes;
        bytes32 row = TensorLib.commitmentOf(p.dtype, p.shape[1:], chunkRoot(p.data[j * rb:(j + 1) * rb]));
        uint256 df = d.fieldDepth;
        MerkleLib.verify(
            p.exampleRoots[j],
            p.fieldCount,
            p.fieldIndex[j],
            MerkleLib.leafHash(abi.encodePacked(STEN, s.nameHash, row)),
            p.fieldSiblings[j * df:(j + 1) * df]
        );
    }
}
