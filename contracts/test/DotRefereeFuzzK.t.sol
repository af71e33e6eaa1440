// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {Binary32} from "../src/lib/Binary32.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {TensorLib} from "../src/lib/TensorLib.sol";
import {DotRuleGames} from "./utils/DotRuleGames.sol";

/// @notice TensorLib.commitmentOf takes a calldata shape: called through this contract from the test.
contract DotFuzzCommitHelper {
    function commitmentOf(uint8 dtype, uint64[] calldata shape, bytes32 dataRoot)
        external
        pure
        returns (bytes32)
    {
        return TensorLib.commitmentOf(dtype, shape, dataRoot);
    }
}

/// @notice Random dot games: K in [1, 4096], A [1, K] and B [K, 1] built here and committed as docs/commitments.md
///         says (4096-byte chunks, padded SHA-256 list), their values integers below 2^14 with one of
///         [2^13, 2^14) in each (so e = 14, p = 14 and the grid integers are the values: S = sum x * w and
///         C = f32(S)); the liar's prefix sums are wrong from a random term on; the honest side defends or
///         challenges; the liar plays on or stops. The honest side always wins, within
///         2 * (ceil(log_N K) + 2) moves (N random in 2 .. 64) and both clocks.
contract DotRefereeFuzzKTest is DotRuleGames {
    DotFuzzCommitHelper internal helper;
    bytes internal aData;
    bytes internal bData;
    bytes32[] internal aLeaves;
    bytes32[] internal bLeaves;
    uint64 internal kk;

    function setUp() public override {
        super.setUp();
        helper = new DotFuzzCommitHelper();
    }

    function _fill(uint256 seed, uint256 k, uint256 w)
        internal
        pure
        returns (bytes memory data, int256[] memory v)
    {
        data = new bytes(4 * k);
        v = new int256[](k);
        for (uint256 x; x < k; ++x) {
            uint256 r = uint256(keccak256(abi.encode(seed, x)));
            int256 val = int256(r % 16_383) - 8191; // |val| <= 8191
            if (r >> 250 == 0) val = 0;
            if (x == w) val = (r & 1 == 0 ? int256(1) : -1) * int256(8192 + (r >> 8) % 8192);
            v[x] = val;
            uint32 bits = _f32(val);
            data[4 * x] = bytes1(uint8(bits));
            data[4 * x + 1] = bytes1(uint8(bits >> 8));
            data[4 * x + 2] = bytes1(uint8(bits >> 16));
            data[4 * x + 3] = bytes1(uint8(bits >> 24));
        }
    }

    /// @dev The binary32 bits of an integer |v| < 2^24 (exact).
    function _f32(int256 v) internal pure returns (uint32) {
        return Binary32.fromScaledInt(v, 0);
    }

    function _leaves(bytes memory data) internal pure returns (bytes32[] memory leaves) {
        uint256 count = (data.length + 4095) / 4096;
        leaves = new bytes32[](count);
        for (uint256 c; c < count; ++c) {
            leaves[c] = MerkleLib.leafHash(_chunk(data, c));
        }
    }

    function _chunk(bytes memory data, uint256 c) internal pure returns (bytes memory ch) {
        uint256 start = c * 4096;
        uint256 end = start + 4096 < data.length ? start + 4096 : data.length;
        ch = new bytes(end - start);
        for (uint256 i; i < ch.length; ++i) {
            ch[i] = data[start + i];
        }
    }

    function _commit(bytes memory data, uint64[] memory shape, bytes32[] memory leaves)
        internal
        returns (bytes32)
    {
        bytes32[] memory tmp = new bytes32[](leaves.length);
        for (uint256 i; i < tmp.length; ++i) {
            tmp[i] = leaves[i];
        }
        data;
        return helper.commitmentOf(1, shape, MerkleLib.rootInPlace(tmp));
    }

    function _siblings(bytes32[] memory leaves, uint256 j) internal pure returns (bytes32[] memory s) {
        uint256 d = MerkleLib.depth(leaves.length);
        s = new bytes32[](d);
        for (uint256 h; h < d; ++h) {
            s[h] = _node(leaves, h, (j >> h) ^ 1);
        }
    }

    function _openIn(bytes memory data, bytes32[] memory leaves, uint64[] memory shape, uint256 index)
        internal
        pure
        returns (IDotReferee.Opening memory o)
    {
        uint256 j = index * 4 / 4096;
        o.shape = shape;
        o.chunk = _chunk(data, j);
        o.siblings = _siblings(leaves, j);
    }

    function _openA(DCase memory, El memory, uint256 at)
        internal
        view
        override
        returns (IDotReferee.Opening memory)
    {
        return _openIn(aData, aLeaves, _sh(1, kk), at);
    }

    function _openB(DCase memory, El memory, uint256 at)
        internal
        view
        override
        returns (IDotReferee.Opening memory)
    {
        return _openIn(bData, bLeaves, _sh(kk, 1), at);
    }

    function _sh(uint64 a, uint64 b) internal pure returns (uint64[] memory s) {
        s = new uint64[](2);
        s[0] = a;
        s[1] = b;
    }

    function _ceilLogN(uint256 k) internal view returns (uint256 r) {
        uint256 x = 1;
        while (x < k) {
            x *= arity;
            ++r;
        }
    }

    /// @dev The tensors of `seed` at K = `k`, committed, and their element (0, 0).
    function _build(uint256 seed, uint64 k) internal returns (DCase memory c, El memory e) {
        kk = k;
        e.rowAt = uint64(uint256(keccak256(abi.encode(seed, "wa"))) % k);
        e.colAt = uint64(uint256(keccak256(abi.encode(seed, "wb"))) % k);
        int256[] memory va;
        int256[] memory vb;
        (aData, va) = _fill(uint256(keccak256(abi.encode(seed, "a"))), k, e.rowAt);
        (bData, vb) = _fill(uint256(keccak256(abi.encode(seed, "b"))), k, e.colAt);
        aLeaves = _leaves(aData);
        bLeaves = _leaves(bData);
        c.k = k;
        c.n = 1;
        c.inputs = new bytes32[](2);
        c.inputs[0] = _commit(aData, _sh(1, k), aLeaves);
        c.inputs[1] = _commit(bData, _sh(k, 1), bLeaves);
        e.rowKey = 164; // 150 + 14
        e.colKey = 164;
        e.prefix = new int256[](k + 1);
        for (uint256 x; x < k; ++x) {
            e.prefix[x + 1] = e.prefix[x] + va[x] * vb[x];
        }
        e.value = _valueOf(c, e, 164, 164, e.prefix[k]);
        assertEq(e.value, Binary32.fromScaledInt(e.prefix[k], 0), "p = e = 14: C = f32(S)");
    }

    /// forge-config: default.fuzz.runs = 64
    function testFuzz_honestSideWins(
        uint256 seed,
        uint64 k,
        uint64 lieAt,
        bool honestDefends,
        bool liarStops,
        uint8 logArity
    ) public {
        arity = uint64(1) << bound(logArity, 1, 6);
        k = uint64(bound(k, 1, 4096));
        lieAt = uint64(bound(lieAt, 1, k));
        (DCase memory c, El memory e) = _build(seed, k);
        _run(c, e, honestDefends ? 0 : 1, lieAt, liarStops);
    }

    function _run(DCase memory c, El memory e, uint256 h, uint64 lieAt, bool liarStops) internal {
        int256[] memory q = _lieFrom(e.prefix, lieAt, int256(1) << 30);
        vm.assume(h == 0 || _valueOf(c, e, 164, 164, q[c.k]) != e.value);
        uint256 t0 = block.timestamp;
        Play memory m = _newPlay(c, e, h, q);
        m.liarStops = liarStops;
        _dplayOut(m);
        _dhonestWon(m);
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        assertLe(v.moves, 2 * (_ceilLogN(c.k) + 2), "moves <= 2 (ceil(log_N K) + 2)");
        assertLe(block.timestamp - t0, 2 * uint256(CLOCK) + 1, "both clocks bound the game's time");
        assertLe(CLOCK - v.clockLeft[h], 60 * v.moves, "the honest side used only its moves' time");
        assertEq(uint256(v.stage), uint256(IDotReferee.Stage.Resolved));
    }
}
