// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {ElementReferee} from "../../src/ElementReferee.sol";
import {TraceReferee} from "../../src/TraceReferee.sol";
import {SumReferee} from "../../src/SumReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";
import {MerkleLib} from "../../src/lib/MerkleLib.sol";

/// @notice Plays ElementReferee games on the vectors of scripts/element_referee_vectors.py: one case is a
///         node (agreed inputs, the honest output), one lie the liar's output with one element changed.
///         Both players play their own tensor: the honest one wins whatever the liar does.
abstract contract ElementGames is Test {
    uint64 internal constant CLOCK = 1 days;
    uint64 internal constant N = 16;

    ElementReferee internal referee;
    address internal defender = makeAddr("defender");
    address internal challenger = makeAddr("challenger");

    /// @dev One case of the vectors, decoded.
    struct Case {
        string json;
        string key;
        uint256 op;
        uint64[2] scalars;
        bytes32[] inputs;
        uint8 outDtype;
        uint64[] outShape;
        bytes32 honestRoot;
        bytes32 honestCommitment;
        bytes32[] leaves;
        string opName; // a node opened by openNode (Tensor-Scalar, data movement): its operator
        bytes args; // and argument bytes; empty for a node opened with `open`
        uint256 argsMoves; // 1 if its game starts in stage Args (the defender opens the argument bytes)
    }

    /// @dev One lie of a case, decoded.
    struct Lie {
        string key;
        uint256 element;
        uint256 chunkIndex;
        bytes32 commitment;
        bytes32 dataRoot;
        bytes32 leaf;
        bytes honestChunk;
        bytes liarChunk;
        uint64 honestValue;
        uint64 liarValue;
    }

    /// @dev A game and what each side (0 defender, 1 challenger) plays.
    struct Match {
        uint256 id;
        Case c;
        Lie l;
        uint256 honest; // the honest side
        bytes32[][2] leaves;
        bytes32[2] roots;
        bytes[2] chunks;
        IElementReferee.Header[] inputHeaders; // what the defender opens in the header stage
        IElementReferee.InputOpening[] openings; // what the defender opens in the proof stage
        // the last move
        uint256 lastGas;
        bytes lastCalldata;
        IElementReferee.Stage lastStage;
        uint256 lastSide;
    }

    function setUp() public virtual {
        referee = new ElementReferee(address(new TraceReferee()), address(new SumReferee()));
        vm.warp(1_000_000);
    }

    // ---- vectors -------------------------------------------------------------------------

    function _vectors(string memory file) internal view returns (string memory) {
        return vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/", file));
    }

    function _caseCount(string memory json) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, _at(".cases", n))) ++n;
    }

    function _lieCount(string memory json, uint256 i) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, _at(string.concat(_at(".cases", i), ".lies"), n))) ++n;
    }

    function _case(string memory json, uint256 i) internal view returns (Case memory c) {
        c.json = json;
        c.key = _at(".cases", i);
        c.op = vm.parseJsonUint(json, _k(c, ".op"));
        uint256[] memory s = vm.parseJsonUintArray(json, _k(c, ".scalars"));
        c.scalars = [uint64(s[0]), uint64(s[1])];
        uint256 nIn;
        while (vm.keyExistsJson(json, _at(_k(c, ".inputs"), nIn))) ++nIn;
        c.inputs = new bytes32[](nIn);
        for (uint256 k; k < nIn; ++k) {
            c.inputs[k] = vm.parseJsonBytes32(json, string.concat(_at(_k(c, ".inputs"), k), ".commitment"));
        }
        c.outDtype = uint8(vm.parseJsonUint(json, _k(c, ".output.dtype")));
        c.outShape = _shape(json, _k(c, ".output.shape"));
        c.honestRoot = vm.parseJsonBytes32(json, _k(c, ".output.dataRoot"));
        c.honestCommitment = vm.parseJsonBytes32(json, _k(c, ".output.commitment"));
        c.leaves = vm.parseJsonBytes32Array(json, _k(c, ".output.leaves"));
        if (vm.keyExistsJson(json, _k(c, ".args"))) {
            c.opName = vm.parseJsonString(json, _k(c, ".opName"));
            c.args = vm.parseJsonBytes(json, _k(c, ".args"));
            string memory moves = _k(c, ".argsMoves");
            c.argsMoves = vm.keyExistsJson(json, moves) ? vm.parseJsonUint(json, moves) : 1;
        }
    }

    function _lie(Case memory c, uint256 i) internal pure returns (Lie memory l) {
        string memory json = c.json;
        l.key = _at(_k(c, ".lies"), i);
        l.element = vm.parseJsonUint(json, string.concat(l.key, ".element"));
        l.chunkIndex = vm.parseJsonUint(json, string.concat(l.key, ".chunkIndex"));
        l.commitment = vm.parseJsonBytes32(json, string.concat(l.key, ".commitment"));
        l.dataRoot = vm.parseJsonBytes32(json, string.concat(l.key, ".dataRoot"));
        l.leaf = vm.parseJsonBytes32(json, string.concat(l.key, ".leaf"));
        l.honestChunk = vm.parseJsonBytes(json, string.concat(l.key, ".honestChunk"));
        l.liarChunk = vm.parseJsonBytes(json, string.concat(l.key, ".liarChunk"));
        l.honestValue = uint64(vm.parseJsonUint(json, string.concat(l.key, ".honestValue")));
        l.liarValue = uint64(vm.parseJsonUint(json, string.concat(l.key, ".liarValue")));
    }

    function _inputHeaders(Case memory c) internal pure returns (IElementReferee.Header[] memory hs) {
        hs = new IElementReferee.Header[](c.inputs.length);
        for (uint256 k; k < hs.length; ++k) {
            string memory key = _at(_k(c, ".inputs"), k);
            hs[k].dtype = uint8(vm.parseJsonUint(c.json, string.concat(key, ".dtype")));
            hs[k].shape = _shape(c.json, string.concat(key, ".shape"));
            hs[k].dataRoot = vm.parseJsonBytes32(c.json, string.concat(key, ".dataRoot"));
        }
    }

    function _openings(Match memory m) internal view returns (IElementReferee.InputOpening[] memory os) {
        IElementReferee.Header[] memory hs = _inputHeaders(m.c);
        os = new IElementReferee.InputOpening[](hs.length);
        for (uint256 k; k < os.length; ++k) {
            string memory key = _at(string.concat(m.l.key, ".openings"), k);
            os[k].dtype = hs[k].dtype;
            os[k].shape = hs[k].shape;
            os[k].chunk = vm.parseJsonBytes(m.c.json, string.concat(key, ".chunk"));
            os[k].siblings = _bytes32Array(m.c.json, string.concat(key, ".siblings"));
        }
    }

    // ---- games ---------------------------------------------------------------------------

    function _params(Case memory c, bytes32 defenderOutput, bytes32 challengerOutput)
        internal
        view
        returns (IElementReferee.Params memory p)
    {
        p.op = c.op;
        p.inputs = c.inputs;
        p.scalars = c.scalars;
        p.outputs = [defenderOutput, challengerOutput];
        p.players = [defender, challenger];
        p.clocks = [CLOCK, CLOCK];
        p.arity = N;
    }

    /// @notice Opens a game of case `c`, lie `l`, with the honest player as `honest` (0 defender).
    function _newMatch(Case memory c, Lie memory l, uint256 honest) internal returns (Match memory m) {
        m.c = c;
        m.l = l;
        m.honest = honest;
        m.inputHeaders = _inputHeaders(c);
        m.openings = _openings(m);
        uint256 liar = 1 - honest;
        bytes32[] memory liarLeaves = new bytes32[](c.leaves.length);
        for (uint256 i; i < liarLeaves.length; ++i) {
            liarLeaves[i] = c.leaves[i];
        }
        liarLeaves[l.chunkIndex] = l.leaf;
        m.leaves[honest] = c.leaves;
        m.leaves[liar] = liarLeaves;
        m.roots[honest] = c.honestRoot;
        m.roots[liar] = l.dataRoot;
        m.chunks[honest] = l.honestChunk;
        m.chunks[liar] = l.liarChunk;
        bytes32[2] memory outs;
        outs[honest] = c.honestCommitment;
        outs[liar] = l.commitment;
        if (c.args.length == 0) {
            m.id = referee.open(_params(c, outs[0], outs[1]));
        } else {
            // As DisputeGame opens it: the operator's and the arguments' hashes from the node's descriptor.
            m.id = referee.openNode(
                sha256(bytes(c.opName)), sha256(c.args), c.inputs, outs, [defender, challenger], [CLOCK, CLOCK], N
            );
            IElementReferee.Stage first =
                c.argsMoves == 1 ? IElementReferee.Stage.Args : IElementReferee.Stage.Header;
            assertEq(uint256(referee.gameOf(m.id).stage), uint256(first), "the first stage");
        }
    }

    function _view(Match memory m) internal view returns (IElementReferee.GameView memory) {
        return referee.gameOf(m.id);
    }

    /// @notice The calldata of the move of the side to move, as it plays its own tensor.
    function _calldata(Match memory m) internal view returns (bytes memory) {
        IElementReferee.GameView memory v = _view(m);
        uint256 s = uint256(v.toMove);
        if (v.stage == IElementReferee.Stage.Args) return abi.encodeCall(IElementReferee.openArgs, (m.id, m.c.args));
        if (v.stage == IElementReferee.Stage.Header) {
            IElementReferee.Header memory out = IElementReferee.Header(m.c.outDtype, m.c.outShape, m.roots[s]);
            IElementReferee.Header[] memory ins = s == 0 ? m.inputHeaders : new IElementReferee.Header[](0);
            return abi.encodeCall(IElementReferee.openHeaders, (m.id, out, ins));
        }
        if (v.stage == IElementReferee.Stage.ChunkDescent) {
            bytes32[] memory mine = _levelNodes(m.leaves[s], v.height, v.position);
            bytes32[] memory theirs =
                s == 0 ? new bytes32[](0) : _levelNodes(m.leaves[0], v.height, v.position);
            return abi.encodeCall(IElementReferee.descend, (m.id, mine, theirs));
        }
        if (v.stage == IElementReferee.Stage.ElementOpen) {
            return
                abi.encodeCall(
                    IElementReferee.openChunk, (m.id, m.chunks[s], s == 0 ? bytes("") : m.chunks[0])
                );
        }
        return abi.encodeCall(IElementReferee.proveElement, (m.id, m.c.outShape, m.openings));
    }

    /// @notice Sends `cd` from `who`; returns whether it succeeded and its gas.
    function _send(address who, bytes memory cd) internal returns (bool ok, uint256 gas, bytes memory ret) {
        vm.prank(who);
        (ok, ret) = address(referee).call(cd);
        gas = vm.lastCallGas().gasTotalUsed;
    }

    /// @notice Plays the side to move's move; it must succeed.
    function _play(Match memory m) internal {
        IElementReferee.GameView memory v = _view(m);
        bytes memory cd = _calldata(m);
        (bool ok, uint256 gas, bytes memory ret) = _send(v.players[uint256(v.toMove)], cd);
        if (!ok) {
            assembly ("memory-safe") {
                // Bubbles the referee's revert data up.
                revert(add(ret, 0x20), mload(ret))
            }
        }
        m.lastGas = gas;
        m.lastCalldata = cd;
        m.lastStage = v.stage;
        m.lastSide = uint256(v.toMove);
    }

    /// @notice Plays both sides to the end (the liar plays on); returns the number of moves.
    function _playOut(Match memory m) internal returns (uint256 moves) {
        while (_view(m).stage != IElementReferee.Stage.Resolved) {
            _play(m);
            ++moves;
            assertLe(moves, 64, "the game ends");
        }
    }

    /// @notice Plays until `stage` with `side` to move.
    function _playUntil(Match memory m, IElementReferee.Stage stage, uint256 side) internal {
        for (uint256 i;; ++i) {
            IElementReferee.GameView memory v = _view(m);
            if (v.stage == stage && uint256(v.toMove) == side) return;
            assertTrue(v.stage != IElementReferee.Stage.Resolved, "the stage was reached");
            assertLe(i, 64, "the stage is reached");
            _play(m);
        }
    }

    /// @notice Plays every case of `file` and every lie (first, middle, last element; one for a 0-dimensional
    ///         output), the honest side as defender and as challenger, the liar playing on to the end: the
    ///         honest side wins, the isolated element, its chunk and both values are the vectors', and the game
    ///         takes the header, descent, chunk and proof moves plus the case's `openArgs` if its game starts in
    ///         stage Args (a Tensor-Scalar or permute node). Returns the number of cases.
    function _playEveryCaseAndLie(string memory file) internal returns (uint256 n) {
        n = _caseCount(file);
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(file, i);
            uint256 lies = _lieCount(file, i);
            assertEq(lies, c.outShape.length == 0 ? 1 : 3, "lies");
            uint256 depth = MerkleLib.depth(c.leaves.length);
            uint256 levels = depth == 0 ? 1 : (depth + 3) / 4;
            for (uint256 j; j < lies; ++j) {
                Lie memory l = _lie(c, j);
                for (uint256 honest; honest < 2; ++honest) {
                    Match memory m = _newMatch(c, l, honest);
                    uint256 moves = _playOut(m);
                    _honestWon(m);
                    IElementReferee.GameView memory v = _view(m);
                    assertEq(v.element, l.element, "the first differing element");
                    assertEq(v.position, l.chunkIndex, "its chunk");
                    assertEq(v.values[honest], l.honestValue, "honest value");
                    assertEq(v.values[1 - honest], l.liarValue, "liar value");
                    assertEq(moves, c.argsMoves + 2 * (1 + levels + 1) + 1, "moves: headers, levels, chunks, proof");
                }
            }
        }
    }

    /// @notice The defender opens argument vector `args` on game `id` (in stage Args): if `ok`, the referee emits
    ///         `ArgsOpened(id, value)` and goes on to the headers; else the game resolves Inapplicable. Returns
    ///         whether it was refused.
    function _openArgsVector(uint256 id, bytes memory args, bool ok, uint64 value) internal returns (bool refused) {
        if (ok) {
            vm.expectEmit(address(referee));
            emit IElementReferee.ArgsOpened(id, value);
        }
        vm.prank(defender);
        referee.openArgs(id, args);
        IElementReferee.GameView memory v = referee.gameOf(id);
        if (ok) {
            assertEq(uint256(v.stage), uint256(IElementReferee.Stage.Header), "on to the headers");
        } else {
            assertEq(uint256(v.outcome), uint256(IElementReferee.Outcome.Inapplicable), "refused");
        }
        return !ok;
    }

    /// @dev The winning player from the game's outcome (address(0) while it runs or when neither wins).
    function _winner(uint256 id) internal view returns (address) {
        IElementReferee.GameView memory v = referee.gameOf(id);
        if (v.outcome == IElementReferee.Outcome.DefenderWins) return v.players[0];
        if (v.outcome == IElementReferee.Outcome.ChallengerWins) return v.players[1];
        return address(0);
    }

    function _honestWon(Match memory m) internal view {
        IElementReferee.Outcome want =
            m.honest == 0 ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins;
        assertEq(uint256(referee.outcome(m.id)), uint256(want), "the honest side wins");
        assertEq(_winner(m.id), m.honest == 0 ? defender : challenger, "winner");
    }

    // ---- trees ---------------------------------------------------------------------------

    /// @notice The `w` nodes a descent level at (`height`, `position`) posts, of the tree over `leaves`.
    function _levelNodes(bytes32[] memory leaves, uint256 height, uint256 position)
        internal
        pure
        returns (bytes32[] memory nodes)
    {
        uint256 t = height < 4 ? height : 4; // log2 N
        uint256 w = 1 << t;
        nodes = new bytes32[](w);
        for (uint256 i; i < w; ++i) {
            nodes[i] = _node(leaves, height - t, position * w + i);
        }
    }

    /// @notice Node (`h`, `p`) of the padded tree of docs/commitments.md over `leaves`.
    function _node(bytes32[] memory leaves, uint256 h, uint256 p) internal pure returns (bytes32) {
        if ((p << h) >= leaves.length) return MerkleLib.PAD;
        if (h == 0) return leaves[p];
        return MerkleLib.nodeHash(_node(leaves, h - 1, 2 * p), _node(leaves, h - 1, 2 * p + 1));
    }

    // ---- json helpers --------------------------------------------------------------------

    function _k(Case memory c, string memory suffix) internal pure returns (string memory) {
        return string.concat(c.key, suffix);
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }

    function _shape(string memory json, string memory key) internal pure returns (uint64[] memory shape) {
        uint256[] memory dims = vm.parseJsonUintArray(json, key);
        shape = new uint64[](dims.length);
        for (uint256 i; i < dims.length; ++i) {
            shape[i] = uint64(dims[i]);
        }
    }

    /// @dev A JSON array of hashes, which may be empty (a one-chunk input has no siblings).
    function _bytes32Array(string memory json, string memory key) internal view returns (bytes32[] memory a) {
        if (!vm.keyExistsJson(json, string.concat(key, "[0]"))) return new bytes32[](0);
        return vm.parseJsonBytes32Array(json, key);
    }
}
