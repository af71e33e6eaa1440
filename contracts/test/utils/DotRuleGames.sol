// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {DotReferee} from "../../src/DotReferee.sol";
import {IDotReferee} from "../../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";
import {Binary32} from "../../src/lib/Binary32.sol";
import {ElementGames} from "./ElementGames.sol";

/// @notice Plays DotReferee games on the vectors of scripts/dot_rule_vectors.py: a case is one mm or addmm
///         node (agreed inputs with the chunks the games open), an element its honest value, witnesses and
///         prefix sums P(0..K). Each side plays its own prefix sums: the honest one P, a liar P changed from
///         some position on; a side's claim follows from its own list.
abstract contract DotRuleGames is ElementGames {
    uint64 internal constant ARITY = 16;
    /// @notice The arity the games open with (ARITY unless a test sets another).
    uint64 internal arity = ARITY;
    uint16 internal constant NON_FINITE = 0xFFFF;

    /// @notice The DotReferee the ElementReferee deployed (standalone games are opened on it too).
    DotReferee internal dot;

    /// @dev One case of the vectors.
    struct DCase {
        string json;
        string key;
        uint256 op;
        uint64 k;
        uint64 n;
        bytes32[] inputs;
    }

    /// @dev One played element of a case.
    struct El {
        uint256 element;
        uint64 rowAt;
        uint64 colAt;
        uint16 rowKey;
        uint16 colKey;
        uint32 value;
        bool decided;
        int256[] prefix;
    }

    /// @dev A game and what each side (0 defender, 1 challenger) plays.
    struct Play {
        uint256 id;
        DCase c;
        El e;
        int256[][2] prefix; // each side's P(0..K)
        uint64 rowAt; // the defender's witnesses (a liar may claim a smaller one)
        uint64 colAt;
        uint32[2] values;
        uint256 honest;
        bool liarStops; // the liar stops moving at its first move after the claim
        uint256 lastGas;
        uint256 lastSide;
        IDotReferee.Stage lastStage;
        bytes lastCalldata;
    }

    function setUp() public virtual override {
        super.setUp();
        dot = DotReferee(referee.dot());
    }

    // ---- vectors -------------------------------------------------------------------------

    function _dcase(string memory json, string memory key) internal pure returns (DCase memory c) {
        c.json = json;
        c.key = key;
        c.op = vm.parseJsonUint(json, string.concat(key, ".op"));
        c.k = uint64(vm.parseJsonUint(json, string.concat(key, ".k")));
        c.n = uint64(vm.parseJsonUint(json, string.concat(key, ".n")));
        uint256 nIn = c.op == 1 ? 3 : 2;
        c.inputs = new bytes32[](nIn);
        for (uint256 t; t < nIn; ++t) {
            c.inputs[t] = vm.parseJsonBytes32(json, string.concat(_in(c, t), ".commitment"));
        }
    }

    function _dcase(string memory json, uint256 i) internal pure returns (DCase memory) {
        return _dcase(json, _at(".cases", i));
    }

    function _el(DCase memory c, uint256 i) internal pure returns (El memory e) {
        string memory key = _at(string.concat(c.key, ".elements"), i);
        string memory json = c.json;
        e.element = vm.parseJsonUint(json, string.concat(key, ".element"));
        e.rowAt = uint64(vm.parseJsonUint(json, string.concat(key, ".rowAt")));
        e.colAt = uint64(vm.parseJsonUint(json, string.concat(key, ".colAt")));
        e.rowKey = uint16(vm.parseJsonUint(json, string.concat(key, ".rowKey")));
        e.colKey = uint16(vm.parseJsonUint(json, string.concat(key, ".colKey")));
        e.value = uint32(vm.parseJsonUint(json, string.concat(key, ".value")));
        e.decided = vm.parseJsonBool(json, string.concat(key, ".decided"));
        e.prefix = vm.parseJsonIntArray(json, string.concat(key, ".prefix"));
    }

    /// @notice The played element whose flat index is `element`.
    function _elAt(DCase memory c, uint256 element) internal view returns (El memory) {
        for (uint256 i;; ++i) {
            string memory key = _at(string.concat(c.key, ".elements"), i);
            require(vm.keyExistsJson(c.json, key), "element not in the vectors");
            if (vm.parseJsonUint(c.json, string.concat(key, ".element")) == element) return _el(c, i);
        }
    }

    /// @notice Input `t` ([bias,] A, B) key.
    function _in(DCase memory c, uint256 t) internal pure returns (string memory) {
        return _at(string.concat(c.key, ".inputs"), t);
    }

    function _shapeOf(DCase memory c, uint256 t) internal pure returns (uint64[] memory shape) {
        uint256[] memory dims = vm.parseJsonUintArray(c.json, string.concat(_in(c, t), ".shape"));
        shape = new uint64[](dims.length);
        for (uint256 d; d < dims.length; ++d) {
            shape[d] = uint64(dims[d]);
        }
    }

    /// @notice The opening of flat element `index` of input `t` ([bias,] A, B) from the vectors' chunks.
    function _open(DCase memory c, uint256 t, uint256 index)
        internal
        view
        returns (IDotReferee.Opening memory o)
    {
        o.shape = _shapeOf(c, t);
        uint256 chunk = index * 4 / 4096;
        string memory chunks = string.concat(_in(c, t), ".chunks");
        for (uint256 i;; ++i) {
            string memory key = _at(chunks, i);
            require(vm.keyExistsJson(c.json, key), "chunk not in the vectors");
            if (vm.parseJsonUint(c.json, string.concat(key, ".index")) != chunk) continue;
            o.chunk = vm.parseJsonBytes(c.json, string.concat(key, ".chunk"));
            string memory sk = string.concat(key, ".siblings");
            if (vm.keyExistsJson(c.json, string.concat(sk, "[0]"))) {
                o.siblings = vm.parseJsonBytes32Array(c.json, sk);
            }
            return o;
        }
    }

    function _aIndex(DCase memory c) internal pure returns (uint256) {
        return c.op == 1 ? 1 : 0;
    }

    /// @notice A[i, at] of the element.
    function _openA(DCase memory c, El memory e, uint256 at)
        internal
        view
        virtual
        returns (IDotReferee.Opening memory)
    {
        return _open(c, _aIndex(c), (e.element / c.n) * c.k + at);
    }

    /// @notice B[at, j] of the element.
    function _openB(DCase memory c, El memory e, uint256 at)
        internal
        view
        virtual
        returns (IDotReferee.Opening memory)
    {
        return _open(c, _aIndex(c) + 1, at * c.n + e.element % c.n);
    }

    /// @notice The bias element at the element's broadcast position (addmm), or an empty opening.
    function _openBias(DCase memory c, El memory e) internal view returns (IDotReferee.Opening memory o) {
        if (c.op != 1) return o;
        uint64[] memory sh = _shapeOf(c, 0);
        uint256 index;
        uint256 i = e.element / c.n;
        uint256 j = e.element % c.n;
        if (sh.length >= 1) {
            uint256 cols = sh[sh.length - 1];
            if (cols != 1) index = j;
            if (sh.length == 2 && sh[0] != 1) index += i * cols;
        }
        return _open(c, 0, index);
    }

    function _biasBits(DCase memory c, El memory e) internal view returns (uint32) {
        IDotReferee.Opening memory o = _openBias(c, e);
        uint64[] memory sh = o.shape;
        uint256 index;
        if (sh.length >= 1) {
            uint256 cols = sh[sh.length - 1];
            if (cols != 1) index = e.element % c.n;
            if (sh.length == 2 && sh[0] != 1) index += (e.element / c.n) * cols;
        }
        uint256 at = index * 4 % 4096;
        bytes memory ch = o.chunk;
        return uint32(uint8(ch[at])) | uint32(uint8(ch[at + 1])) << 8 | uint32(uint8(ch[at + 2])) << 16
            | uint32(uint8(ch[at + 3])) << 24;
    }

    // ---- the arithmetic of a claim -------------------------------------------------------

    function _pDot(uint256 k) internal pure returns (uint256) {
        uint256 c;
        while ((uint256(1) << c) < k) ++c;
        uint256 p = (53 - c) / 2;
        return p < 14 ? p : 14;
    }

    function _exp(uint16 key) internal pure returns (int256) {
        return key == 0 ? int256(1) : int256(uint256(key)) - 150;
    }

    /// @notice The value a claim of classes (rowKey, colKey) and S makes (the contract's rule, for the liar).
    function _valueOf(DCase memory c, El memory e, uint16 rowKey, uint16 colKey, int256 s)
        internal
        view
        returns (uint32 y)
    {
        if (rowKey == NON_FINITE || colKey == NON_FINITE) {
            y = 0x7FC00000;
        } else {
            y = Binary32.fromScaledInt(s, _exp(rowKey) + _exp(colKey) - 2 * int256(_pDot(c.k)));
            if (y == 0x80000000) y = 0;
        }
        if (c.op == 1) y = Binary32.add(_biasBits(c, e), y);
    }

    // ---- games ---------------------------------------------------------------------------

    function _dparams(DCase memory c, uint256 element, uint32[2] memory values)
        internal
        view
        returns (IDotReferee.Params memory p)
    {
        p.op = c.op;
        p.inputs = c.inputs;
        p.k = c.k;
        p.n = c.n;
        p.element = element;
        p.values = values;
        p.players = [defender, challenger];
        p.clocks = [CLOCK, CLOCK];
        p.arity = arity;
    }

    /// @notice A copy of `p` with the terms from `at` on changed (P(x) + delta * x for x >= at, delta != 0).
    function _lieFrom(int256[] memory p, uint256 at, int256 delta) internal pure returns (int256[] memory q) {
        q = new int256[](p.length);
        for (uint256 x; x < p.length; ++x) {
            q[x] = x >= at ? p[x] + delta * int256(x + 1) : p[x];
        }
    }

    /// @notice A game of element `e`, the honest side `honest`, the liar's prefix sums `liar` (its value follows
    ///         from them when it defends; a liar challenger keeps the honest value's last bit flipped).
    function _newPlay(DCase memory c, El memory e, uint256 honest, int256[] memory liar)
        internal
        returns (Play memory m)
    {
        m.c = c;
        m.e = e;
        m.honest = honest;
        uint256 l = 1 - honest;
        m.prefix[honest] = e.prefix;
        m.prefix[l] = liar;
        m.rowAt = e.rowAt;
        m.colAt = e.colAt;
        m.values[honest] = e.value;
        m.values[l] = l == 0 ? _valueOf(c, e, e.rowKey, e.colKey, liar[liar.length - 1]) : e.value ^ 1;
        require(m.values[0] != m.values[1], "the liar's value differs");
        m.id = dot.open(_dparams(c, e.element, m.values));
    }

    function _claimOf(Play memory m) internal view returns (IDotReferee.Claim memory cl) {
        DCase memory c = m.c;
        cl.rowAt = m.rowAt;
        cl.colAt = m.colAt;
        cl.row = _openA(c, m.e, cl.rowAt);
        cl.col = _openB(c, m.e, cl.colAt);
        cl.bias = _openBias(c, m.e);
        int256[] memory mine = m.prefix[0];
        cl.total = mine[mine.length - 1];
        if (!m.e.decided) cl.splits = _splits(mine, 0, c.k);
    }

    function _splits(int256[] memory mine, uint64 lo, uint64 hi) internal view returns (int256[] memory s) {
        uint64[] memory pts = dot.splitPoints(lo, hi, arity);
        s = new int256[](pts.length);
        for (uint256 x; x < pts.length; ++x) {
            s[x] = mine[pts[x]];
        }
    }

    /// @notice The defender's last posted list (what the challenger passes back): from its own prefix sums.
    function _theirs(Play memory m) internal view returns (int256[] memory) {
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        return _splits(m.prefix[0], v.lo, v.hi);
    }

    /// @notice The first sub-range whose end the challenger (with its own prefix sums) disputes.
    function _pickIndex(Play memory m) internal view returns (uint256) {
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        uint64[] memory pts = dot.splitPoints(v.lo, v.hi, arity);
        int256[] memory theirs = _theirs(m);
        for (uint256 x; x < pts.length; ++x) {
            if (theirs[x] != m.prefix[1][pts[x]]) return x;
        }
        return pts.length;
    }

    /// @notice The calldata of the side to move, as it plays its own prefix sums.
    function _calldata(Play memory m) internal view returns (bytes memory) {
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        if (v.stage == IDotReferee.Stage.Claim) {
            return abi.encodeCall(IDotReferee.claim, (m.id, _claimOf(m)));
        }
        if (v.stage == IDotReferee.Stage.Pick) {
            // A challenger with a larger witness than the defender's claim refutes.
            // (only a lying defender claims a smaller class than the true witness's)
            if (v.keys[0] < m.e.rowKey) {
                return abi.encodeCall(IDotReferee.refute, (m.id, 0, m.e.rowAt, _openA(m.c, m.e, m.e.rowAt)));
            }
            if (v.keys[1] < m.e.colKey) {
                return abi.encodeCall(IDotReferee.refute, (m.id, 1, m.e.colAt, _openB(m.c, m.e, m.e.colAt)));
            }
            return abi.encodeCall(IDotReferee.pick, (m.id, _theirs(m), _pickIndex(m)));
        }
        if (v.stage == IDotReferee.Stage.Split) {
            return abi.encodeCall(IDotReferee.split, (m.id, _splits(m.prefix[0], v.lo, v.hi)));
        }
        return abi.encodeCall(IDotReferee.proveTerm, (m.id, _openA(m.c, m.e, v.lo), _openB(m.c, m.e, v.lo)));
    }

    function _dsend(address who, bytes memory cd) internal returns (bool ok, uint256 gas, bytes memory ret) {
        vm.prank(who);
        (ok, ret) = address(dot).call(cd);
        gas = vm.lastCallGas().gasTotalUsed;
    }

    /// @notice Plays the side to move's move; it must succeed.
    function _dplay(Play memory m) internal {
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        bytes memory cd = _calldata(m);
        (bool ok, uint256 gas, bytes memory ret) = _dsend(v.players[uint256(v.toMove)], cd);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 0x20), mload(ret))
            }
        }
        m.lastGas = gas;
        m.lastCalldata = cd;
        m.lastStage = v.stage;
        m.lastSide = uint256(v.toMove);
    }

    /// @notice Plays both sides to the end; a stopping liar is timed out at its first turn after the claim.
    function _dplayOut(Play memory m) internal returns (uint256 moves) {
        for (;;) {
            IDotReferee.GameView memory v = dot.gameOf(m.id);
            if (v.stage == IDotReferee.Stage.Resolved) return moves;
            if (m.liarStops && uint256(v.toMove) != m.honest && v.moves > 0) {
                vm.warp(block.timestamp + v.clockLeft[uint256(v.toMove)] + 1);
                dot.timeout(m.id);
                return moves;
            }
            vm.warp(block.timestamp + 60);
            _dplay(m);
            ++moves;
            assertLe(moves, 64, "the game ends");
        }
    }

    function _dhonestWon(Play memory m) internal view {
        IElementReferee.Outcome want =
            m.honest == 0 ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins;
        assertEq(uint256(dot.outcome(m.id)), uint256(want), "the honest side wins");
    }
}
