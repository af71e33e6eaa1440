// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {CheckpointLists} from "../utils/CheckpointLists.sol";
import {Reference} from "../utils/Reference.sol";

/// @title ProtocolModel
/// @notice The world the invariant handlers play in: a small program, its true training run and the
///         lies of cheating trainers, all with real commitments (docs/commitments.md, docs/program.md),
///         so that every move of docs/game.md, proofs included, can be made from them.
/// @dev The program has `M` nodes and a state of `M` entries: node `e` reads state entry `e` and
///      outputs its next value `next(programHash, e, x)`, which is state entry `e` after the step
///      (POUT ref `(4, e, 0)`). A trainer's claims in a task are the true run or a lie: a lying
///      state at step `p` is the true state with the entries of `bugMask` replaced by junk, so
///      every root a liar posts has a tree behind it. The agreed pre-state of an isolated step is
///      always true (two liars never share a junk root), so a side's phase-2 play depends only on
///      whether its post-state is the truth or its lie, and on its trace strategy.
library ProtocolModel {
    bytes4 internal constant STEN = "STEN";
    bytes4 internal constant NODE = "NODE";
    bytes4 internal constant DESC = "DESC";
    bytes4 internal constant NDSC = "NDSC";
    bytes4 internal constant POUT = "POUT";
    bytes4 internal constant PROG = "PROG";

    /// @notice Trace strategies of a side whose post-state is a lie.
    uint8 internal constant TRUE_TRACE = 0; // the true trace: the game goes to the post-state path
    uint8 internal constant WRONG_OUTPUT = 1; // bugged nodes output the lie: the oracle decides
    uint8 internal constant WRONG_INPUT = 2; // bugged nodes read junk: the defender must prove its input
    uint8 internal constant STRATEGIES = 3;

    bytes32 internal constant TYPE_HASH = keccak256("float32[]");
    bytes32 internal constant INPUTS_ROOT = keccak256("model inputs root");
    bytes32 internal constant CONSTANTS_ROOT = keccak256("model constants root");

    /// @notice A task as the model sees it.
    struct Run {
        uint64 steps; // T
        uint64 interval; // c
        uint64 nodes; // M, also the state's entry count
        uint64 arity; // N
        bytes32 salt; // picks the initial state
        bytes32 programHash;
    }

    /// @notice A trainer's claims in one task; the honest trainer's masks are zero.
    struct Claims {
        bytes32 salt; // the trainer's own junk
        uint256 ckptMask; // bit i: checkpoint i is a lie
        uint256 bugMask; // bit e: entry e is wrong in every lying state
    }

    // ---- the program -------------------------------------------------------------------------

    function nameHash(uint256 e) internal pure returns (bytes32) {
        return sha256(abi.encodePacked("w", e));
    }

    /// @notice `"DESC" || H(op) || H(args) || u256(1) || u256(1) || (1, nameHash(i), 0) || typeHash`.
    function descriptor(uint256 i) internal pure returns (bytes memory) {
        return abi.encodePacked(
            DESC,
            sha256("model.next"),
            sha256(abi.encodePacked(i)),
            uint256(1),
            uint256(1),
            uint256(1),
            nameHash(i),
            uint256(0),
            TYPE_HASH
        );
    }

    function graphLeaves(uint256 m) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[](m);
        for (uint256 i; i < m; ++i) {
            leaves[i] = Reference.leaf(abi.encodePacked(NDSC, i, sha256(descriptor(i))));
        }
    }

    /// @notice `leaf("POUT" || u256(1) || H(name_e) || typeHash || (4, e, 0))`.
    function outputLeaf(uint256 e) internal pure returns (bytes32) {
        return
            Reference.leaf(
                abi.encodePacked(POUT, uint256(1), nameHash(e), TYPE_HASH, uint256(4), e, uint256(0))
            );
    }

    function outputLeaves(uint256 m) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[](m);
        for (uint256 e; e < m; ++e) {
            leaves[e] = outputLeaf(e);
        }
    }

    /// @notice `[graphRoot, inputsRoot, outputsRoot, constantsRoot]`.
    function programRoots(uint256 m) internal pure returns (bytes32[4] memory roots) {
        roots[0] = Reference.root(graphLeaves(m));
        roots[1] = INPUTS_ROOT;
        roots[2] = Reference.root(outputLeaves(m));
        roots[3] = CONSTANTS_ROOT;
    }

    function programHash(uint256 m) internal pure returns (bytes32) {
        bytes32[4] memory r = programRoots(m);
        return sha256(abi.encodePacked(PROG, uint256(1), r[0], r[1], r[2], r[3]));
    }

    /// @notice What node `node` outputs on `input`: the recompute oracle's true answer.
    function next(bytes32 program, uint256 node, bytes32 input) internal pure returns (bytes32) {
        return keccak256(abi.encode("next", program, node, input));
    }

    // ---- states --------------------------------------------------------------------------------

    /// @notice The true state entries after `step` steps.
    function trueEntries(Run memory run, uint256 step) internal pure returns (bytes32[] memory x) {
        x = new bytes32[](run.nodes);
        for (uint256 e; e < x.length; ++e) {
            x[e] = keccak256(abi.encode("initial", run.salt, e));
        }
        for (uint256 s; s < step; ++s) {
            for (uint256 e; e < x.length; ++e) {
                x[e] = next(run.programHash, e, x[e]);
            }
        }
    }

    /// @notice The entries a trainer claims after `step` steps: the truth, or (`lie`) its lie.
    function entries(Run memory run, Claims memory c, uint256 step, bool lie)
        internal
        pure
        returns (bytes32[] memory x)
    {
        x = trueEntries(run, step);
        if (!lie) return x;
        for (uint256 e; e < x.length; ++e) {
            if ((c.bugMask >> e) & 1 == 1) x[e] = keccak256(abi.encode("lie", c.salt, run.salt, step, e));
        }
    }

    /// @notice `leaf("STEN" || H(name_e) || x_e)` for every entry.
    function stateLeaves(bytes32[] memory x) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[](x.length);
        for (uint256 e; e < x.length; ++e) {
            leaves[e] = Reference.leaf(abi.encodePacked(STEN, nameHash(e), x[e]));
        }
    }

    function stateRoot(bytes32[] memory x) internal pure returns (bytes32) {
        return Reference.root(stateLeaves(x));
    }

    function trueRoot(Run memory run, uint256 step) internal pure returns (bytes32) {
        return stateRoot(trueEntries(run, step));
    }

    /// @notice The root a trainer claims after `step` steps (step 0 is always the true initial state).
    function claimRoot(Run memory run, Claims memory c, uint256 step, bool lie)
        internal
        pure
        returns (bytes32)
    {
        return stateRoot(entries(run, c, step, lie && step != 0));
    }

    /// @notice Whether checkpoint `i` of the trainer's list is a lie.
    function liesAt(Claims memory c, uint256 i) internal pure returns (bool) {
        return i != 0 && (c.ckptMask >> i) & 1 == 1;
    }

    /// @notice The trainer's checkpoint list.
    function checkpointList(Run memory run, Claims memory c)
        internal
        pure
        returns (CheckpointLists.List memory)
    {
        uint256 k = run.steps / run.interval;
        bytes32[] memory roots = new bytes32[](k + 1);
        for (uint256 i; i <= k; ++i) {
            roots[i] = claimRoot(run, c, i * run.interval, liesAt(c, i));
        }
        return CheckpointLists.build(roots, run.interval);
    }

    // ---- traces --------------------------------------------------------------------------------

    /// @notice `"NODE" || u256(i) || H(descriptor_i) || u256(1) || input || u256(1) || output`.
    function record(uint256 i, bytes32 input, bytes32 output) internal pure returns (bytes memory) {
        return abi.encodePacked(NODE, i, sha256(descriptor(i)), uint256(1), input, uint256(1), output);
    }

    /// @notice The input word of a record of this program.
    function inputOf(bytes memory rec) internal pure returns (bytes32 w) {
        assembly ("memory-safe") {
            // The input is the word at byte 100 of the record's data (32 bytes past the length word).
            w := mload(add(rec, 132))
        }
    }

    /// @notice The output word of a record of this program.
    function outputOf(bytes memory rec) internal pure returns (bytes32 w) {
        assembly ("memory-safe") {
            // The output is the word at byte 164 of the record's data (32 bytes past the length word).
            w := mload(add(rec, 196))
        }
    }

    /// @notice The trace a trainer posts for step `step`, whose post-state it claims is the truth or
    ///         (`postLie`) its lie; the pre-state is the true one.
    function trace(Run memory run, Claims memory c, uint256 step, bool postLie, uint8 strategy)
        internal
        pure
        returns (bytes[] memory records)
    {
        bytes32[] memory pre = trueEntries(run, step);
        bytes32[] memory post = entries(run, c, step + 1, postLie);
        records = new bytes[](pre.length);
        for (uint256 e; e < pre.length; ++e) {
            bytes32 input = pre[e];
            bytes32 output = next(run.programHash, e, input);
            bool bugged = postLie && (c.bugMask >> e) & 1 == 1;
            if (bugged && strategy == WRONG_OUTPUT) {
                output = post[e];
            } else if (bugged && strategy == WRONG_INPUT) {
                input = keccak256(abi.encode("bad input", c.salt, run.salt, step, e));
                output = post[e];
            }
            records[e] = record(e, input, output);
        }
    }

    function leavesOf(bytes[] memory records) internal pure returns (bytes32[] memory leaves) {
        leaves = new bytes32[](records.length);
        for (uint256 i; i < records.length; ++i) {
            leaves[i] = Reference.leaf(records[i]);
        }
    }

    // ---- trees ---------------------------------------------------------------------------------

    /// @notice The `width` nodes at `height` from `position` on; positions past the padded row are PAD.
    function nodesAt(bytes32[][] memory levels, uint256 height, uint256 position, uint256 width)
        internal
        pure
        returns (bytes32[] memory nodes)
    {
        bytes32[] memory row = levels[height];
        nodes = new bytes32[](width);
        for (uint256 i; i < width; ++i) {
            if (position + i < row.length) nodes[i] = row[position + i];
        }
    }

    /// @notice The siblings of leaf `index`, from the leaf level up.
    function opening(bytes32[][] memory levels, uint256 index)
        internal
        pure
        returns (bytes32[] memory siblings)
    {
        siblings = new bytes32[](levels.length - 1);
        for (uint256 k; k < siblings.length; ++k) {
            siblings[k] = levels[k][(index >> k) ^ 1];
        }
    }

    function top(bytes32[][] memory levels) internal pure returns (bytes32) {
        return levels[levels.length - 1][0];
    }

    function log2(uint256 x) internal pure returns (uint256 r) {
        while (x > 1) {
            x >>= 1;
            ++r;
        }
    }
}
