// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {BatchVerifier} from "../../src/BatchVerifier.sol";
import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {MerkleLib} from "../../src/lib/MerkleLib.sol";
import {Reference} from "./Reference.sol";

/// @title BatchProofs
/// @notice Valid batch-input proofs (IDisputeGame.BatchProof) of any size, for measuring their gas:
///         a dataset of `2^datasetDepth` examples of which only the rows of the batch are built (every
///         other example is one filler leaf, so a subtree of fillers is a hash computed once per
///         height), examples of `2^fieldDepth` fields (field 0 the batch field `x`, the rest fillers),
///         and batch tensors of float32 with `ndim` dimensions `[rows, 1, ..., 1, rowElems]`.
/// @dev The schedule is that of docs/data.md: row `j` is example `H("BTCH" || seed || step || j) mod n`.
library BatchProofs {
    uint8 internal constant FLOAT32 = 1;
    bytes32 internal constant FILLER = keccak256("filler example");
    bytes32 internal constant FIELD_FILLER = keccak256("filler field");

    /// @notice What to build.
    struct Shape {
        uint256 rows; // batchSize
        uint256 datasetDepth; // the dataset has 2^datasetDepth examples
        uint256 fieldDepth; // each example has 2^fieldDepth fields
        uint256 rowElems; // float32 elements per row
        uint256 ndim; // dimensions of the batch tensor (>= 2)
        uint256 seed;
        uint256 step;
        bytes32 nameHash; // the batch field's name hash
    }

    /// @notice The proof, and the schedule it proves (its dataset root and batch commitment).
    function build(Shape memory sh)
        internal
        pure
        returns (IDisputeGame.BatchProof memory p, BatchVerifier.Schedule memory s)
    {
        uint256 rows = sh.rows;
        s.datasetSize = uint64(uint256(1) << sh.datasetDepth);
        s.batchSize = uint64(rows);
        s.seed = sh.seed;
        s.step = sh.step;
        s.nameHash = sh.nameHash;

        p.dtype = FLOAT32;
        p.shape = new uint64[](sh.ndim);
        p.shape[0] = uint64(rows);
        for (uint256 k = 1; k + 1 < sh.ndim; ++k) {
            p.shape[k] = 1;
        }
        p.shape[sh.ndim - 1] = uint64(sh.rowElems);
        p.data = new bytes(rows * 4 * sh.rowElems);
        p.exampleRoots = new bytes32[](rows);
        p.fieldCount = uint64(1) << sh.fieldDepth;
        p.fieldIndex = new uint64[](rows);
        p.fieldSiblings = new bytes32[](rows * sh.fieldDepth);
        uint256[] memory idx = new uint256[](rows);
        bytes32[] memory exampleLeaves = new bytes32[](rows);
        bytes32[] memory fieldFill = _fillers(FIELD_FILLER, sh.fieldDepth);
        for (uint256 j; j < rows; ++j) {
            idx[j] = uint256(sha256(abi.encodePacked("BTCH", sh.seed, sh.step, j))) % s.datasetSize;
            exampleLeaves[j] = _row(sh, p, j, idx[j], fieldFill);
        }
        (s.datasetRoot, p.datasetSiblings) = _sparse(idx, exampleLeaves, sh.datasetDepth);
        s.commitment = Reference.commitment(FLOAT32, p.shape, Reference.dataRoot(p.data));
    }

    /// @notice Row `j` (example `index`): its bytes, its example's root and field openings; returns
    ///         the example's EXMP leaf.
    function _row(
        Shape memory sh,
        IDisputeGame.BatchProof memory p,
        uint256 j,
        uint256 index,
        bytes32[] memory fieldFill
    ) private pure returns (bytes32) {
        uint256 rowBytes = 4 * sh.rowElems;
        _fillRow(p.data, j * rowBytes, rowBytes, index);
        uint64[] memory rowShape = new uint64[](sh.ndim - 1);
        for (uint256 k; k < rowShape.length; ++k) {
            rowShape[k] = p.shape[k + 1];
        }
        bytes32 rowCommitment = Reference.commitment(
            FLOAT32, rowShape, Reference.dataRoot(Reference.slice(p.data, j * rowBytes, (j + 1) * rowBytes))
        );
        bytes32 h = Reference.leaf(abi.encodePacked("STEN", sh.nameHash, rowCommitment));
        for (uint256 k; k < sh.fieldDepth; ++k) {
            p.fieldSiblings[j * sh.fieldDepth + k] = fieldFill[k];
            h = Reference.node(h, fieldFill[k]);
        }
        p.exampleRoots[j] = Reference.listRoot(p.fieldCount, h);
        return Reference.leaf(abi.encodePacked("EXMP", index, p.exampleRoots[j]));
    }

    /// @notice `len` pseudo-random bytes of example `index` at `at` of `data`.
    function _fillRow(bytes memory data, uint256 at, uint256 len, uint256 index) private pure {
        for (uint256 k; k < len; k += 32) {
            bytes32 w = keccak256(abi.encode(index, k));
            uint256 end = k + 32 < len ? k + 32 : len;
            for (uint256 b = k; b < end; ++b) {
                data[at + b] = w[b - k];
            }
        }
    }

    /// @notice `f[h]`: the root of a full subtree of height `h` whose leaves are all `leaf0`.
    function _fillers(bytes32 leaf0, uint256 depth) private pure returns (bytes32[] memory f) {
        f = new bytes32[](depth + 1);
        f[0] = leaf0;
        for (uint256 h = 1; h <= depth; ++h) {
            f[h] = Reference.node(f[h - 1], f[h - 1]);
        }
    }

    /// @notice The root of a list of `2^depth` leaves, all `FILLER` but `leaves[j]` at `idx[j]`, and
    ///         the openings of every `idx[j]` (row after row).
    function _sparse(uint256[] memory idx, bytes32[] memory leaves, uint256 depth)
        private
        pure
        returns (bytes32 root, bytes32[] memory siblings)
    {
        bytes32[] memory fill = _fillers(FILLER, depth);
        // Level 0: the distinct positions, sorted, with their leaves.
        uint256[][] memory levelPos = new uint256[][](depth + 1);
        bytes32[][] memory levelHash = new bytes32[][](depth + 1);
        (levelPos[0], levelHash[0]) = _sorted(idx, leaves);
        for (uint256 h; h < depth; ++h) {
            (levelPos[h + 1], levelHash[h + 1]) = _up(levelPos[h], levelHash[h], fill[h]);
        }
        root = Reference.listRoot(uint256(1) << depth, levelHash[depth][0]);
        siblings = new bytes32[](idx.length * depth);
        for (uint256 j; j < idx.length; ++j) {
            for (uint256 h; h < depth; ++h) {
                siblings[j * depth + h] = _find(levelPos[h], levelHash[h], (idx[j] >> h) ^ 1, fill[h]);
            }
        }
    }

    function _sorted(uint256[] memory idx, bytes32[] memory leaves)
        private
        pure
        returns (uint256[] memory pos, bytes32[] memory hs)
    {
        uint256 n = idx.length;
        pos = new uint256[](n);
        hs = new bytes32[](n);
        uint256 m;
        for (uint256 j; j < n; ++j) {
            // Insertion into the sorted prefix, skipping a position already there (the same example).
            uint256 i = m;
            bool dup;
            while (i > 0 && pos[i - 1] >= idx[j]) {
                if (pos[i - 1] == idx[j]) {
                    dup = true;
                    break;
                }
                --i;
            }
            if (dup) continue;
            for (uint256 k = m; k > i; --k) {
                pos[k] = pos[k - 1];
                hs[k] = hs[k - 1];
            }
            pos[i] = idx[j];
            hs[i] = leaves[j];
            ++m;
        }
        assembly ("memory-safe") {
            // Shorten both arrays to the distinct positions.
            mstore(pos, m)
            mstore(hs, m)
        }
    }

    /// @notice The next level up of a sparse level: parents of the present positions.
    function _up(uint256[] memory pos, bytes32[] memory hs, bytes32 fill)
        private
        pure
        returns (uint256[] memory upPos, bytes32[] memory upHash)
    {
        upPos = new uint256[](pos.length);
        upHash = new bytes32[](pos.length);
        uint256 m;
        for (uint256 i; i < pos.length; ++i) {
            uint256 parent = pos[i] >> 1;
            bytes32 left = fill;
            bytes32 right = fill;
            if (pos[i] & 1 == 0) {
                left = hs[i];
                if (i + 1 < pos.length && pos[i + 1] == pos[i] + 1) right = hs[++i];
            } else {
                right = hs[i];
            }
            upPos[m] = parent;
            upHash[m] = MerkleLib.nodeHash(left, right);
            ++m;
        }
        assembly ("memory-safe") {
            // Shorten both arrays to the parents written.
            mstore(upPos, m)
            mstore(upHash, m)
        }
    }

    /// @notice The hash at position `p` of a sparse level, or `fill` where it has none.
    function _find(uint256[] memory pos, bytes32[] memory hs, uint256 p, bytes32 fill)
        private
        pure
        returns (bytes32)
    {
        uint256 lo;
        uint256 hi = pos.length;
        while (lo < hi) {
            uint256 mid = (lo + hi) / 2;
            if (pos[mid] < p) lo = mid + 1;
            else hi = mid;
        }
        return lo < pos.length && pos[lo] == p ? hs[lo] : fill;
    }
}
