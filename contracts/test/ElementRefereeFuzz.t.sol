// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {RepOpsElement} from "../src/lib/RepOpsElement.sol";
import {TensorLibHarness} from "./harness/TensorLibHarness.sol";
import {ElementGames} from "./utils/ElementGames.sol";

/// @notice Random games: an fp32 input of random length and values (built and committed here, with the
///         commitment format of docs/commitments.md), the op neg or relu, the liar's output wrong first at
///         a random element (and maybe later ones too), the honest side random, the liar stopping at a
///         random move or playing on: the honest side always wins, within the round bound.
contract ElementRefereeFuzzTest is ElementGames {
    uint256 internal constant CHUNK = 4096;
    TensorLibHarness internal tensors;

    function setUp() public override {
        super.setUp();
        tensors = new TensorLibHarness();
    }

    /// @dev The fuzzed choices of one game.
    struct Draw {
        uint256 seed;
        uint16 numel;
        uint16 firstWrong;
        uint8 bit;
        bool honestDefends;
        bool relu;
        bool alsoLater;
        uint8 stopAt;
    }

    function testFuzz_randomFirstWrongElement_honestWins(Draw memory d) public {
        uint256 n = bound(d.numel, 1, 2600); // up to 3 chunks
        uint256 e = bound(d.firstWrong, 0, n - 1);
        uint256 op = d.relu ? RepOpsElement.RELU : RepOpsElement.NEG;
        (bytes memory x, bytes memory y) = _tensors(d.seed, n, op);
        bytes memory lie = _copyBytes(y);
        _put(lie, e, _get(y, e) ^ uint32(1 << (d.bit % 32)));
        if (d.alsoLater && e + 1 < n) _put(lie, n - 1, _get(y, n - 1) ^ 1); // wrong later too
        Match memory m = _build(op, x, y, lie, e, d.honestDefends ? 0 : 1);
        (uint256 moves, bool played) = _run(m, d.stopAt % 16);
        _honestWon(m);
        // K <= 3 chunks: one descent level; header, descent, chunk per side, and the defender's proof.
        assertLe(moves, 7, "round bound");
        if (played) assertEq(_view(m).element, e, "the first wrong element");
    }

    /// @dev A random fp32 input of `n` elements and the operator's output, as little-endian bytes.
    function _tensors(uint256 seed, uint256 n, uint256 op)
        internal
        pure
        returns (bytes memory x, bytes memory y)
    {
        x = new bytes(4 * n);
        y = new bytes(4 * n);
        for (uint256 i; i < n; ++i) {
            uint32 xi = uint32(uint256(keccak256(abi.encode(seed, i))));
            _put(x, i, xi);
            _put(y, i, uint32(RepOpsElement.evaluate(op, xi, 0, 0)));
        }
    }

    function _build(uint256 op, bytes memory x, bytes memory y, bytes memory lie, uint256 e, uint256 honest)
        internal
        returns (Match memory m)
    {
        uint64[] memory shape = new uint64[](1);
        shape[0] = uint64(x.length / 4);
        m.honest = honest;
        uint256 liar = 1 - honest;
        m.c.op = op;
        m.c.outDtype = 1;
        m.c.outShape = shape;
        (bytes32[] memory xLeaves, bytes32 xRoot) = _tree(x);
        m.c.inputs = new bytes32[](1);
        m.c.inputs[0] = tensors.commitmentOf(1, shape, xRoot);
        (m.leaves[honest], m.roots[honest]) = _tree(y);
        (m.leaves[liar], m.roots[liar]) = _tree(lie);
        uint256 j = 4 * e / CHUNK;
        m.chunks[honest] = _slice(y, j);
        m.chunks[liar] = _slice(lie, j);
        m.inputHeaders = new IElementReferee.Header[](1);
        m.inputHeaders[0] = IElementReferee.Header(1, shape, xRoot);
        m.openings = new IElementReferee.InputOpening[](1);
        m.openings[0] = IElementReferee.InputOpening(1, shape, _slice(x, j), _siblings(xLeaves, j));
        m.id = referee.open(
            _params(
                m.c, tensors.commitmentOf(1, shape, m.roots[0]), tensors.commitmentOf(1, shape, m.roots[1])
            )
        );
    }

    /// @dev Plays the game; the liar stops before its move number `stop` (it plays on if it has fewer).
    function _run(Match memory m, uint256 stop) internal returns (uint256 moves, bool played) {
        uint256 liar = 1 - m.honest;
        uint256 liarMoves;
        while (_view(m).stage != IElementReferee.Stage.Resolved) {
            IElementReferee.GameView memory v = _view(m);
            if (uint256(v.toMove) == liar && liarMoves == stop) {
                vm.warp(uint256(v.turnStartedAt) + v.clockLeft[liar] + 1);
                referee.timeout(m.id);
                return (moves, false);
            }
            if (uint256(v.toMove) == liar) ++liarMoves;
            _play(m);
            ++moves;
        }
        played = true;
    }

    function _tree(bytes memory data) internal pure returns (bytes32[] memory leaves, bytes32 root) {
        uint256 k = (data.length + CHUNK - 1) / CHUNK;
        leaves = new bytes32[](k);
        for (uint256 j; j < k; ++j) {
            leaves[j] = MerkleLib.leafHash(_slice(data, j));
        }
        bytes32[] memory work = new bytes32[](k);
        for (uint256 j; j < k; ++j) {
            work[j] = leaves[j];
        }
        root = MerkleLib.rootInPlace(work);
    }

    function _siblings(bytes32[] memory leaves, uint256 j) internal pure returns (bytes32[] memory s) {
        s = new bytes32[](MerkleLib.depth(leaves.length));
        for (uint256 h; h < s.length; ++h) {
            s[h] = _node(leaves, h, (j >> h) ^ 1);
        }
    }

    function _slice(bytes memory data, uint256 j) internal pure returns (bytes memory c) {
        uint256 start = j * CHUNK;
        uint256 len = data.length - start < CHUNK ? data.length - start : CHUNK;
        c = new bytes(len);
        for (uint256 i; i < len; ++i) {
            c[i] = data[start + i];
        }
    }

    function _put(bytes memory data, uint256 i, uint32 v) internal pure {
        for (uint256 b; b < 4; ++b) {
            data[4 * i + b] = bytes1(uint8(v >> (8 * b)));
        }
    }

    function _get(bytes memory data, uint256 i) internal pure returns (uint32 v) {
        for (uint256 b; b < 4; ++b) {
            v |= uint32(uint8(data[4 * i + b])) << uint32(8 * b);
        }
    }

    function _copyBytes(bytes memory a) internal pure returns (bytes memory b) {
        b = new bytes(a.length);
        for (uint256 i; i < a.length; ++i) {
            b[i] = a[i];
        }
    }
}
