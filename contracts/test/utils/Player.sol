// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {MerkleLib} from "../../src/lib/MerkleLib.sol";
import {Reference} from "./Reference.sol";
import {Trees} from "./Trees.sol";

/// @notice A task for the dispute game tests: a tiny but real program, dataset and schedule
///         (docs/program.md sections 4-5, docs/data.md, docs/commitments.md section 4).
/// @dev The state has three entries, by name: `k` (passed through unchanged), `m` and `w`.
///      Node `i` of the program reads three inputs: input 0 is the batch `x` for node 0 and output
///      slot 0 of node `i - 1` otherwise, input 1 the state entry `w`, input 2 the constant `scale`.
///      Every node has one output, but the last one has two: they become the next `m` and `w`.
///      Output commitments are synthetic hashes of (step, node, slot); everything else is real.
struct Task {
    IDisputeGame.Config cfg;
    bytes32[] descHashes; // H(descriptor(i))
    Trees.Tree graph; // NDSC leaves
    Trees.Tree inputs; // PINP leaves
    Trees.Tree outputs; // POUT leaves: k, m, w, loss
    Trees.Tree constants; // STEN leaves: bias, scale
    bytes32[4] programRoots; // graph, inputs, outputs, constants roots
    uint64 rowElems; // field x of an example is float32[rowElems]
    bytes[] exampleX; // the bytes of field x of each example
    Trees.Tree[] examples; // the state tree (x, y) of each example
    Trees.Tree dataset; // EXMP leaves
}

/// @notice How a player departs from the honest computation of step `step` (its claims agree with
///         the honest ones up to the state after `step` steps and differ from `step + 1` on).
enum Lie {
    None, // honest
    Output, // node `node`: same inputs, other outputs (decided by the oracle)
    StateInput, // node `node`: input 1 (state `w`) wrong
    ConstantInput, // node `node`: input 2 (constant `scale`) wrong
    FirstInput, // node `node`: input 0 wrong (the batch for node 0, a node output otherwise)
    PostStateM, // the same trace, but post-state entry `m` wrong
    PostStateK, // the same trace, but post-state entry `k` (a pass-through) wrong
    Raw // node `node`: the record `raw` (and, when set, the descriptor `rawDescriptor`) instead
}

/// @notice A player: its claims follow from the task and its lie; trees are built on first use.
struct Player {
    Task task;
    Lie lie;
    uint64 step; // s*: the isolated step when it meets an honest player
    uint64 node; // d*: the first node of step s* where its trace differs
    bytes raw;
    bytes rawDescriptor;
    Trees.Tree checkpoints;
    bool traced;
    uint64 tracedStep;
    Trees.Tree trace;
}

/// @title Players
/// @notice Builds tasks and computes every move of an honest or a lying player from the game's view.
library Players {
    uint256 internal constant STATE_ENTRIES = 3;
    uint256 internal constant FIELD_X = 0; // index of field x in an example (x < y)
    uint256 internal constant ENTRY_K = 0;
    uint256 internal constant ENTRY_M = 1;
    uint256 internal constant ENTRY_W = 2;
    uint8 internal constant FLOAT32 = 1;

    // Hashes the hot paths use as constants (DisputeGame.t.sol checks each against sha256).
    bytes32 internal constant NAME_K = 0x8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a; // H("k")
    bytes32 internal constant NAME_M = 0x62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a; // H("m")
    bytes32 internal constant NAME_W = 0x50e721e49c013f00c62cf59f2163542a9d8df02464efeb615d31051b0fddc326; // H("w")
    bytes32 internal constant NAME_X = 0x2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881; // H("x")
    bytes32 internal constant NAME_SCALE = 0xf469802a31447f90d6a033d43f18db7ebfbee7cc3c378024bcc0f1573d3feef8; // H("scale")
    bytes32 internal constant OP_MUL = 0xfcfa2297cc72bdcd0bbdc1de26a6ca8273297d5aeffb74978363e6f130383c34; // H("aten.mul.Tensor")
    bytes32 internal constant OP_SPLIT = 0xa707e81448d0aafbc8a1cfb4b959e84c6d57d557b697c01ef22f448aa164e272; // H("aten.split.Tensor")
    bytes32 internal constant NO_ARGS = 0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855; // H("")
    bytes32 internal constant TYPE_F32_2 = 0xc0ddac4c5614c901ccb1ee0087df6cc0f04fe60fa02c61afd374dba4a949972a; // H(header(float32[2]))
    bytes32 internal constant SCALE = 0x47ec6a1d8cf4ceff7ba397569ad28fc4493ad61d3d5aef26a863923a8d48208d; // H("const scale")
    bytes32 internal constant BIAS = 0xd178446728b1372a069f5d1960d8bf97a4f906ab85df60764f0a8e4412ddd63c; // H("const bias")
    bytes32 internal constant STATE_K = 0x060bc8b622a10f25c558f02da1b891d312560c8f5b66962887ee2fff62775d57; // H("state k")
    bytes32 internal constant STATE_M0 = 0x4aa86c3eee806444bd700919f840ab23e04bb5e4f89ec2d610f1f8a181935099; // H("state m")
    bytes32 internal constant STATE_W0 = 0xf2b9213b81b45c216111d62a5514684ce2404a6de54f8dd03b727c43614fe737; // H("state w")
    bytes32 internal constant LIE_M = 0x078c9b48899f5147e289f44d0fcd90f32c9e7d121ad9d6a747b2fcac8f993011; // H("lie m")
    bytes32 internal constant LIE_K = 0xa8053e448923d6709253afa5500b6b8fc1db7a1271ccd48be6e23205db951051; // H("lie k")
    bytes32 internal constant LIE_W = 0xbd8e655d9c1c3e02170b8f728c7557e866146e56a73c376b56cb3dd5e01657b1; // H("lie w")
    bytes32 internal constant LIE_SCALE = 0xf2ce007b9c0c0d8163bc9b7b2e431fdd19d12b9edb6025cac37d2e6022b34043; // H("lie scale")
    bytes32 internal constant LIE_INPUT0 = 0xdfbfd93e034b22bedc90efe49424d108d27ab8c1e95c8d17290e13a39891ecb4; // H("lie input 0")

    // ---- the task ----------------------------------------------------------------------------

    /// @notice A task of `steps` steps, checkpoint interval `interval`, arity `arity`, `nodeCount`
    ///         program nodes, batches of `batchSize` rows of a dataset of `datasetSize` examples.
    function task(
        uint64 steps,
        uint64 interval,
        uint64 arity,
        uint64 nodeCount,
        uint64 batchSize,
        uint64 datasetSize,
        uint64 clock,
        uint256 seed
    ) internal pure returns (Task memory t) {
        return taskWithRows(steps, interval, arity, nodeCount, batchSize, datasetSize, clock, seed, 2);
    }

    /// @notice `task`, with examples whose field x is float32[rowElems] (a batch is float32[B, rowElems]).
    function taskWithRows(
        uint64 steps,
        uint64 interval,
        uint64 arity,
        uint64 nodeCount,
        uint64 batchSize,
        uint64 datasetSize,
        uint64 clock,
        uint256 seed,
        uint64 rowElems
    ) internal pure returns (Task memory t) {
        t.rowElems = rowElems;
        t.cfg.steps = steps;
        t.cfg.checkpointInterval = interval;
        t.cfg.arity = arity;
        t.cfg.nodeCount = nodeCount;
        t.cfg.batchSize = batchSize;
        t.cfg.datasetSize = datasetSize;
        t.cfg.clock = clock;
        t.cfg.seed = seed;

        buildProgram(t);
        buildDataset(t);
    }

    /// @notice The program: descriptors, graph, inputs, outputs and constants roots, program hash.
    function buildProgram(Task memory t) internal pure {
        uint256 nodeCount = t.cfg.nodeCount;
        t.descHashes = new bytes32[](nodeCount);
        bytes32[] memory graphLeaves = new bytes32[](nodeCount);
        for (uint256 i; i < nodeCount; ++i) {
            uint256 fmp = freeMemory();
            bytes32 dh = sha256(descriptor(nodeCount, i));
            t.descHashes[i] = dh;
            graphLeaves[i] = Trees.leaf(abi.encodePacked("NDSC", i, dh));
            resetMemory(fmp);
        }
        t.graph = Trees.build(graphLeaves);

        bytes32 th = typeHash();
        bytes32[] memory inputLeaves = new bytes32[](4);
        inputLeaves[0] = Trees.leaf(abi.encodePacked("PINP", uint256(1), NAME_K, th));
        inputLeaves[1] = Trees.leaf(abi.encodePacked("PINP", uint256(1), NAME_M, th));
        inputLeaves[2] = Trees.leaf(abi.encodePacked("PINP", uint256(1), NAME_W, th));
        inputLeaves[3] = Trees.leaf(abi.encodePacked("PINP", uint256(2), NAME_X, th));
        t.inputs = Trees.build(inputLeaves);

        bytes32[] memory outputLeaves = new bytes32[](4);
        for (uint256 e; e < STATE_ENTRIES; ++e) {
            outputLeaves[e] = Trees.leaf(poutRecord(nodeCount, e));
        }
        outputLeaves[3] = Trees.leaf(
            abi.encodePacked("POUT", uint256(2), name("loss"), th, uint256(4), nodeCount - 1, uint256(0))
        );
        t.outputs = Trees.build(outputLeaves);

        bytes32[] memory constantLeaves = new bytes32[](2);
        constantLeaves[0] = sten(name("bias"), bias());
        constantLeaves[1] = sten(NAME_SCALE, scale());
        t.constants = Trees.build(constantLeaves);

        t.programRoots = [t.graph.root, t.inputs.root, t.outputs.root, t.constants.root];
        t.cfg.graphRoot = t.graph.root;
        t.cfg.programHash = sha256(abi.encodePacked("PROG", uint256(1), t.programRoots));
    }

    /// @notice The dataset: examples with fields x (float32[rowElems]) and y (float32[1]).
    function buildDataset(Task memory t) internal pure {
        uint256 n = t.cfg.datasetSize;
        t.exampleX = new bytes[](n);
        t.examples = new Trees.Tree[](n);
        bytes32[] memory exampleLeaves = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            bytes memory x = exampleBytes(i, 4 * uint256(t.rowElems));
            bytes memory y = abi.encodePacked(bytes4(keccak256(abi.encode("y", i))));
            t.exampleX[i] = x;
            bytes32[] memory fields = new bytes32[](2);
            fields[0] = sten(NAME_X, tensorCommitment(x, dims(t.rowElems)));
            fields[1] = sten(name("y"), tensorCommitment(y, dims(1)));
            t.examples[i] = Trees.build(fields);
            exampleLeaves[i] = Trees.leaf(abi.encodePacked("EXMP", i, t.examples[i].root));
        }
        t.dataset = Trees.build(exampleLeaves);
        t.cfg.datasetRoot = t.dataset.root;
    }

    /// @notice `len` bytes of field x of example `i`.
    function exampleBytes(uint256 i, uint256 len) internal pure returns (bytes memory x) {
        x = new bytes(len);
        for (uint256 k; k < len; ++k) {
            x[k] = keccak256(abi.encode("x", i, k / 32))[k % 32];
        }
    }

    /// @notice `H(utf8(s))`.
    function name(string memory s) internal pure returns (bytes32) {
        return sha256(bytes(s));
    }

    /// @notice `typeHash(float32[2]) = H(header)`.
    function typeHash() internal pure returns (bytes32) {
        return TYPE_F32_2;
    }

    function scale() internal pure returns (bytes32) {
        return SCALE;
    }

    function bias() internal pure returns (bytes32) {
        return BIAS;
    }

    function sten(bytes32 nameHash, bytes32 commitment) internal pure returns (bytes32) {
        return leaf3("STEN", nameHash, commitment);
    }

    /// @notice `leaf(tag || a || b)`, hashed in the scratch memory past the free pointer (no
    ///         allocation: the checkpoint lists of the fuzz and gas tests hash thousands of these).
    function leaf3(bytes4 tag, bytes32 a, bytes32 b) internal pure returns (bytes32) {
        return _asPure(_leaf3)(tag, a, b);
    }

    /// @notice `H(tag || a || b || c)`, as `leaf3` (no allocation).
    function hash4(bytes4 tag, uint256 a, uint256 b, uint256 c) internal pure returns (bytes32) {
        return _asPure(_hash4)(tag, bytes32(a), bytes32(b), bytes32(c));
    }

    function _leaf3(bytes4 tag, bytes32 a, bytes32 b) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // 0x00 || tag || a || b (69 bytes) at the free pointer, which is not moved.
            let ptr := mload(0x40)
            mstore(ptr, 0)
            mstore(add(ptr, 1), tag)
            mstore(add(ptr, 5), a)
            mstore(add(ptr, 37), b)
            if iszero(staticcall(gas(), 0x02, ptr, 69, 0x00, 0x20)) { revert(0x00, 0x00) }
            h := mload(0x00)
        }
    }

    function _hash4(bytes4 tag, bytes32 a, bytes32 b, bytes32 c) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // tag || a || b || c (100 bytes) at the free pointer, which is not moved.
            let ptr := mload(0x40)
            mstore(ptr, tag)
            mstore(add(ptr, 4), a)
            mstore(add(ptr, 36), b)
            mstore(add(ptr, 68), c)
            if iszero(staticcall(gas(), 0x02, ptr, 100, 0x00, 0x20)) { revert(0x00, 0x00) }
            h := mload(0x00)
        }
    }

    /// @dev Retypes a precompile-backed hash as `pure` (SHA-256 reads no state), as MerkleLib does.
    function _asPure(function(bytes4, bytes32, bytes32) view returns (bytes32) f)
        private
        pure
        returns (function(bytes4, bytes32, bytes32) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, other declared mutability.
            g := f
        }
    }

    function _asPure(function(bytes4, bytes32, bytes32, bytes32) view returns (bytes32) f)
        private
        pure
        returns (function(bytes4, bytes32, bytes32, bytes32) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, other declared mutability.
            g := f
        }
    }

    function dims(uint64 a) internal pure returns (uint64[] memory s) {
        s = new uint64[](1);
        s[0] = a;
    }

    /// @notice The float32 tensor commitment of `data` with `shape`.
    function tensorCommitment(bytes memory data, uint64[] memory shape) internal pure returns (bytes32) {
        return Reference.commitment(FLOAT32, shape, Reference.dataRoot(data));
    }

    /// @notice The name hash of state entry `e` (names sorted: k, m, w).
    function entryName(uint256 e) internal pure returns (bytes32) {
        return e == ENTRY_K ? NAME_K : e == ENTRY_M ? NAME_M : NAME_W;
    }

    /// @notice The POUT record of state entry `e`: `k` passes through, `m` and `w` are the last node's
    ///         outputs 0 and 1.
    function poutRecord(uint256 nodeCount, uint256 e) internal pure returns (bytes memory) {
        return abi.encodePacked("POUT", uint256(1), entryName(e), typeHash(), poutRef(nodeCount, e));
    }

    function poutRef(uint256 nodeCount, uint256 e) internal pure returns (uint256[3] memory ref) {
        ref = e == ENTRY_K ? [uint256(1), uint256(NAME_K), 0] : [uint256(4), nodeCount - 1, e - 1];
    }

    /// @notice Outputs of node `i` of a program of `nodeCount` nodes.
    function outputCount(uint256 nodeCount, uint256 i) internal pure returns (uint256) {
        return i + 1 == nodeCount ? 2 : 1;
    }

    /// @notice The DESC record of node `i` (one allocation: it is built for every node of big programs).
    function descriptor(uint256 nodeCount, uint256 i) internal pure returns (bytes memory) {
        bool last = i + 1 == nodeCount;
        (uint256 kind0, uint256 a0) = i == 0 ? (uint256(2), uint256(NAME_X)) : (uint256(4), i - 1);
        bytes memory head = abi.encodePacked(
            "DESC",
            last ? OP_SPLIT : OP_MUL,
            NO_ARGS,
            uint256(3),
            outputCount(nodeCount, i),
            kind0,
            a0,
            uint256(0),
            uint256(1),
            NAME_W,
            uint256(0),
            uint256(3),
            NAME_SCALE,
            uint256(0),
            TYPE_F32_2
        );
        return last ? abi.encodePacked(head, TYPE_F32_2) : head;
    }

    /// @notice Rows of step `step`'s batch: `idx_j = H("BTCH" || seed || step || j) mod n`.
    function batchIndex(Task memory t, uint256 step, uint256 j) internal pure returns (uint256) {
        return uint256(sha256(abi.encodePacked("BTCH", t.cfg.seed, step, j))) % t.cfg.datasetSize;
    }

    /// @notice Step `step`'s batch tensor x (float32[B, 2]).
    function batchData(Task memory t, uint256 step) internal pure returns (bytes memory data) {
        for (uint256 j; j < t.cfg.batchSize; ++j) {
            data = abi.encodePacked(data, t.exampleX[batchIndex(t, step, j)]);
        }
    }

    function batchShape(Task memory t) internal pure returns (uint64[] memory shape) {
        shape = new uint64[](2);
        shape[0] = t.cfg.batchSize;
        shape[1] = t.rowElems;
    }

    function batchCommitment(Task memory t, uint256 step) internal pure returns (bytes32) {
        return tensorCommitment(batchData(t, step), batchShape(t));
    }

    /// @notice The honest output commitment of output `slot` of node `i` at step `step`.
    function honestOutput(uint256 step, uint256 i, uint256 slot) internal pure returns (bytes32) {
        return hash4("OUTP", step, i, slot);
    }

    /// @notice A lying output commitment.
    function lieOutput(uint256 step, uint256 i, uint256 slot) internal pure returns (bytes32) {
        return hash4("LIEO", step, i, slot);
    }

    // ---- a player's claims --------------------------------------------------------------------

    function player(Task memory t, Lie lie, uint64 step, uint64 node)
        internal
        pure
        returns (Player memory p)
    {
        p.task = t;
        p.lie = lie;
        p.step = step;
        p.node = node;
    }

    function honest(Task memory t) internal pure returns (Player memory) {
        return player(t, Lie.None, 0, 0);
    }

    function lies(Player memory p) internal pure returns (bool) {
        return p.lie != Lie.None;
    }

    /// @notice Whether its trace of step `p.step` differs from the honest one.
    function liesInTrace(Player memory p) internal pure returns (bool) {
        return p.lie != Lie.None && p.lie != Lie.PostStateM && p.lie != Lie.PostStateK;
    }

    /// @notice Its output `slot` of node `i` at step `s`.
    function output(Player memory p, uint256 s, uint256 i, uint256 slot) internal pure returns (bytes32) {
        if (!lies(p) || s < p.step) return honestOutput(s, i, slot);
        if (s > p.step) return lieOutput(s, i, slot);
        if (liesInTrace(p) && p.lie != Lie.Raw && i >= p.node) return lieOutput(s, i, slot);
        return honestOutput(s, i, slot);
    }

    /// @notice Its state entries `[k, m, w]` after `s` steps.
    function entries(Player memory p, uint256 s) internal pure returns (bytes32[3] memory e) {
        e[ENTRY_K] = STATE_K;
        if (s == 0) {
            e[ENTRY_M] = STATE_M0;
            e[ENTRY_W] = STATE_W0;
            return e;
        }
        uint256 last = p.task.cfg.nodeCount - 1;
        e[ENTRY_M] = output(p, s - 1, last, 0);
        e[ENTRY_W] = output(p, s - 1, last, 1);
        if (!lies(p) || s != p.step + 1) return e;
        if (p.lie == Lie.PostStateM || p.lie == Lie.Raw) e[ENTRY_M] = LIE_M;
        else if (p.lie == Lie.PostStateK) e[ENTRY_K] = LIE_K;
    }

    /// @notice The STEN tree of its state after `s` steps.
    function stateTree(Player memory p, uint256 s) internal pure returns (Trees.Tree memory) {
        bytes32[3] memory e = entries(p, s);
        bytes32[] memory leaves = new bytes32[](STATE_ENTRIES);
        for (uint256 i; i < STATE_ENTRIES; ++i) {
            leaves[i] = sten(entryName(i), e[i]);
        }
        return Trees.build(leaves);
    }

    /// @notice Its state root after `s` steps: the root of `stateTree` (built without the tree), but
    ///         for a liar past the first wrong state a bare hash: those roots are only ever compared
    ///         (the game opens the pre-state and the post-states of the isolated step alone).
    function stateRoot(Player memory p, uint256 s) internal pure returns (bytes32) {
        if (lies(p) && s > p.step + 1) return hash4("LIES", s, 0, 0);
        bytes32[3] memory e = entries(p, s);
        return _asPure(_stateRoot)(e[ENTRY_K], e[ENTRY_M], e[ENTRY_W]);
    }

    /// @dev `listRoot(3, node(node(sten(k), sten(m)), node(sten(w), PAD)))` in one go, in the scratch
    ///      memory past the free pointer.
    function _stateRoot(bytes32 k, bytes32 m, bytes32 w) private view returns (bytes32 h) {
        assembly ("memory-safe") {
            // STEN leaf of (name, value) into `to`: 0x00 || "STEN" || name || value at ptr (69 bytes).
            function sten(ptr, name, value, to) {
                mstore(ptr, 0)
                mstore(add(ptr, 1), shl(224, 0x5354454e))
                mstore(add(ptr, 5), name)
                mstore(add(ptr, 37), value)
                if iszero(staticcall(gas(), 0x02, ptr, 69, to, 0x20)) { revert(0x00, 0x00) }
            }
            // node(l, r) into `to`: 0x01 || l || r at ptr (65 bytes).
            function node(ptr, l, r, to) {
                mstore8(ptr, 0x01)
                mstore(add(ptr, 1), l)
                mstore(add(ptr, 33), r)
                if iszero(staticcall(gas(), 0x02, ptr, 65, to, 0x20)) { revert(0x00, 0x00) }
            }
            let ptr := mload(0x40)
            let out := add(ptr, 0x80)
            sten(ptr, 0x8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a, k, out)
            sten(ptr, 0x62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a, m, add(out, 0x20))
            sten(ptr, 0x50e721e49c013f00c62cf59f2163542a9d8df02464efeb615d31051b0fddc326, w, add(out, 0x40))
            node(ptr, mload(out), mload(add(out, 0x20)), out)
            node(ptr, mload(add(out, 0x40)), 0, add(out, 0x20))
            node(ptr, mload(out), mload(add(out, 0x20)), out)
            // listRoot(3, top): 0x02 || u64(3) || top (41 bytes).
            mstore(ptr, or(shl(248, 0x02), shl(184, 3)))
            mstore(add(ptr, 9), mload(out))
            if iszero(staticcall(gas(), 0x02, ptr, 41, 0x00, 0x20)) { revert(0x00, 0x00) }
            h := mload(0x00)
        }
    }

    function _asPure(function(bytes32, bytes32, bytes32) view returns (bytes32) f)
        private
        pure
        returns (function(bytes32, bytes32, bytes32) pure returns (bytes32) g)
    {
        assembly ("memory-safe") {
            // Same function pointer, other declared mutability.
            g := f
        }
    }

    /// @notice Its checkpoint list: `leaf("CKPT" || u256(i c) || root(i c))`, `i = 0 .. T / c`.
    function checkpoints(Player memory p) internal pure returns (Trees.Tree memory) {
        if (p.checkpoints.rows.length == 0) {
            uint256 c = p.task.cfg.checkpointInterval;
            uint256 n = p.task.cfg.steps / c + 1;
            bytes32[] memory leaves = new bytes32[](n);
            for (uint256 i; i < n; ++i) {
                uint256 fmp = freeMemory();
                leaves[i] = ckptLeaf(i * c, stateRoot(p, i * c));
                resetMemory(fmp);
            }
            p.checkpoints = Trees.build(leaves);
        }
        return p.checkpoints;
    }

    /// @notice Its checkpoint list, sharing the honest leaves `base` up to its first lie (for speed).
    function checkpointsFrom(Player memory p, Trees.Tree memory base)
        internal
        pure
        returns (Trees.Tree memory)
    {
        uint256 c = p.task.cfg.checkpointInterval;
        uint256 n = p.task.cfg.steps / c + 1;
        bytes32[] memory leaves = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            uint256 fmp = freeMemory();
            leaves[i] = i * c <= p.step ? base.rows[0][i] : ckptLeaf(i * c, stateRoot(p, i * c));
            resetMemory(fmp);
        }
        p.checkpoints = Trees.build(leaves);
        return p.checkpoints;
    }

    function ckptLeaf(uint256 step, bytes32 root) internal pure returns (bytes32) {
        return leaf3("CKPT", bytes32(step), root);
    }

    /// @notice Its input commitments of node `i` at step `s`.
    function nodeInputs(Player memory p, uint256 s, uint256 i) internal pure returns (bytes32[3] memory in_) {
        in_[0] = i == 0 ? batchCommitment(p.task, s) : output(p, s, i - 1, 0);
        in_[1] = s == 0 ? STATE_W0 : output(p, s - 1, p.task.cfg.nodeCount - 1, 1);
        in_[2] = scale();
        if (!lies(p) || s != p.step || i != p.node) return in_;
        if (p.lie == Lie.StateInput) in_[1] = LIE_W;
        else if (p.lie == Lie.ConstantInput) in_[2] = LIE_SCALE;
        else if (p.lie == Lie.FirstInput) in_[0] = LIE_INPUT0;
    }

    /// @notice Its NODE record of node `i` at step `s`.
    function record(Player memory p, uint256 s, uint256 i) internal pure returns (bytes memory) {
        if (p.lie == Lie.Raw && s == p.step && i == p.node) return p.raw;
        return honestShapedRecord(p, s, i);
    }

    function honestShapedRecord(Player memory p, uint256 s, uint256 i) internal pure returns (bytes memory) {
        bytes32[3] memory in_ = nodeInputs(p, s, i);
        bytes32 dh = p.task.descHashes[i];
        if (i + 1 < p.task.cfg.nodeCount) {
            return abi.encodePacked(
                "NODE", i, dh, uint256(3), in_[0], in_[1], in_[2], uint256(1), output(p, s, i, 0)
            );
        }
        return abi.encodePacked(
            "NODE",
            i,
            dh,
            uint256(3),
            in_[0],
            in_[1],
            in_[2],
            uint256(2),
            output(p, s, i, 0),
            output(p, s, i, 1)
        );
    }

    /// @notice The output commitments of `record` (a well-formed NODE record with `nIn` inputs).
    function outputsOf(bytes memory rec) internal pure returns (bytes32[] memory outs) {
        uint256 nIn = uint256(wordAt(rec, 68));
        uint256 at = 100 + 32 * nIn;
        uint256 nOut = uint256(wordAt(rec, at));
        outs = new bytes32[](nOut);
        for (uint256 o; o < nOut; ++o) {
            outs[o] = wordAt(rec, at + 32 + 32 * o);
        }
    }

    /// @notice The free memory pointer.
    function freeMemory() internal pure returns (uint256 fmp) {
        assembly ("memory-safe") {
            // Reads the free memory pointer.
            fmp := mload(0x40)
        }
    }

    /// @notice Frees what was allocated since `freeMemory()` returned `fmp`: the hot loops build a
    ///         record or a state tree per leaf and keep only its hash.
    function resetMemory(uint256 fmp) internal pure {
        assembly ("memory-safe") {
            // Nothing allocated since fmp is referenced any more (the callers keep only hashes).
            mstore(0x40, fmp)
        }
    }

    function wordAt(bytes memory data, uint256 at) internal pure returns (bytes32 w) {
        assembly ("memory-safe") {
            // Reads 32 bytes at `at` of `data`'s contents; the callers stay in bounds.
            w := mload(add(add(data, 0x20), at))
        }
    }

    /// @notice The tree of its trace of step `s` (cached for the last step asked).
    function traceTree(Player memory p, uint256 s) internal pure returns (Trees.Tree memory) {
        if (!p.traced || p.tracedStep != s) {
            uint256 m = p.task.cfg.nodeCount;
            bytes32[] memory leaves = new bytes32[](m);
            for (uint256 i; i < m; ++i) {
                uint256 fmp = freeMemory();
                leaves[i] = Trees.leaf(record(p, s, i));
                resetMemory(fmp);
            }
            p.trace = Trees.build(leaves);
            p.traced = true;
            p.tracedStep = uint64(s);
        }
        return p.trace;
    }

    // ---- moves ---------------------------------------------------------------------------------

    /// @notice Its nodes for a descent move at the view's current node.
    function descendNodes(Player memory p, IDisputeGame.GameView memory v)
        internal
        pure
        returns (bytes32[] memory)
    {
        Trees.Tree memory t;
        if (v.stage == IDisputeGame.Stage.CheckpointDescent) t = checkpoints(p);
        else if (v.stage == IDisputeGame.Stage.TraceDescent) t = traceTree(p, v.lo);
        else t = stateTree(p, v.lo + 1);
        return Trees.descent(t, v.height, v.position, p.task.cfg.arity);
    }

    /// @notice Its roots at the split points of `lo..hi`, and (defender, first round) the opening of
    ///         checkpoint `hi / c - 1`.
    function bisectRoots(Player memory p, IDisputeGame.GameView memory v, bool defender)
        internal
        pure
        returns (bytes32[] memory roots, bytes32[] memory loProof)
    {
        uint256 span = v.hi - v.lo;
        uint256 w = p.task.cfg.arity < span ? p.task.cfg.arity : span;
        roots = new bytes32[](w + 1);
        for (uint256 i; i <= w; ++i) {
            roots[i] = stateRoot(p, v.lo + (i * span) / w);
        }
        uint256 c = p.task.cfg.checkpointInterval;
        if (defender && span == c) loProof = Trees.opening(checkpoints(p), v.hi / c - 1);
    }

    /// @notice Its record, descriptor and (defender) graph opening of the isolated node.
    function reveal(Player memory p, IDisputeGame.GameView memory v, bool defender)
        internal
        pure
        returns (bytes memory rec, bytes memory desc, bytes32[] memory graphProof)
    {
        rec = record(p, v.lo, v.position);
        desc = descriptorAt(p, v.position);
        if (defender) graphProof = Trees.opening(p.task.graph, v.position);
    }

    function descriptorAt(Player memory p, uint256 i) internal pure returns (bytes memory) {
        if (p.lie == Lie.Raw && i == p.node && p.rawDescriptor.length != 0) return p.rawDescriptor;
        return descriptor(p.task.cfg.nodeCount, i);
    }

    /// @notice The kind of reference of input `k` of node `i` (1 state, 2 batch, 3 constant, 4 node).
    function refKind(uint256 i, uint256 k) internal pure returns (uint256) {
        if (k == 0) return i == 0 ? 2 : 4;
        return k == 1 ? 1 : 3;
    }

    /// @notice The opening of the state input (`w`) in the pre-state of step `s`.
    function stateEntryProof(Player memory p, uint256 s)
        internal
        pure
        returns (IDisputeGame.EntryProof memory e)
    {
        e.count = uint64(STATE_ENTRIES);
        e.index = uint64(ENTRY_W);
        e.siblings = Trees.opening(stateTree(p, s), ENTRY_W);
    }

    /// @notice The opening of the constant `scale` in the constants root.
    function constantEntryProof(Player memory p) internal pure returns (IDisputeGame.EntryProof memory e) {
        e.count = 2;
        e.index = 1;
        e.siblings = Trees.opening(p.task.constants, 1);
    }

    /// @notice Record `d - 1` of its trace of step `s` and its opening (input 0 of node `d > 0`).
    function sourceOf(Player memory p, uint256 s, uint256 d)
        internal
        pure
        returns (bytes memory rec, bytes32[] memory proof)
    {
        rec = record(p, s, d - 1);
        proof = Trees.opening(traceTree(p, s), d - 1);
    }

    /// @notice The batch proof of step `s`.
    function batchProof(Player memory p, uint256 s) internal pure returns (IDisputeGame.BatchProof memory b) {
        Task memory t = p.task;
        uint256 rows = t.cfg.batchSize;
        b.dtype = FLOAT32;
        b.shape = batchShape(t);
        b.data = batchData(t, s);
        b.exampleRoots = new bytes32[](rows);
        b.fieldCount = 2;
        b.fieldIndex = new uint64[](rows);
        uint256 dd = Trees.height(t.dataset);
        b.datasetSiblings = new bytes32[](rows * dd);
        b.fieldSiblings = new bytes32[](rows);
        for (uint256 j; j < rows; ++j) {
            uint256 idx = batchIndex(t, s, j);
            b.exampleRoots[j] = t.examples[idx].root;
            b.fieldIndex[j] = uint64(FIELD_X);
            bytes32[] memory ds = Trees.opening(t.dataset, idx);
            for (uint256 k; k < dd; ++k) {
                b.datasetSiblings[j * dd + k] = ds[k];
            }
            b.fieldSiblings[j] = Trees.opening(t.examples[idx], FIELD_X)[0];
        }
    }

    /// @notice The pre-state's top (for `openPostStateCount`) at step `s`.
    function preTop(Player memory p, uint256 s) internal pure returns (bytes32) {
        return Trees.top(stateTree(p, s));
    }

    /// @notice The proof that its post-state entry `e` of step `s` follows from the trace.
    function postStateProof(Player memory p, uint256 s, uint256 e)
        internal
        pure
        returns (IDisputeGame.PostStateProof memory q)
    {
        Task memory t = p.task;
        uint256 m = t.cfg.nodeCount;
        Trees.Tree memory pre = stateTree(p, s);
        q.nameHash = entryName(e);
        q.commitment = entries(p, s + 1)[e];
        q.preSiblings = Trees.opening(pre, e);
        q.preCommitment = entries(p, s)[e];
        q.programRoots = t.programRoots;
        q.outputCount = 4;
        q.outputIndex = uint64(e);
        q.typeHash = typeHash();
        q.ref = poutRef(m, e);
        q.outputSiblings = Trees.opening(t.outputs, e);
        if (e == ENTRY_K) {
            q.sourceEntry.count = uint64(STATE_ENTRIES);
            q.sourceEntry.index = uint64(ENTRY_K);
            q.sourceEntry.siblings = Trees.opening(pre, ENTRY_K);
        } else {
            q.sourceRecord = record(p, s, m - 1);
            q.sourceSiblings = Trees.opening(traceTree(p, s), m - 1);
        }
    }
}
