// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {DotReferee} from "../../src/DotReferee.sol";
import {IDotReferee} from "../../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";

/// @notice Plays DotReferee games on the vectors of scripts/dot_referee_vectors.py: one case is an mm or addmm
///         node on real committed tensors, its disputed element, the honest value (the RepOps kernel's) and every
///         exact prefix sum. The honest player plays the truth; the liar holds a value one bit off and a prefix
///         list that is right below `lieFrom` and shifted by a constant from there, so that its P(K) is the S its
///         value follows from.
abstract contract DotGames is Test {
    uint64 internal constant CLOCK = 1 days;
    uint64 internal constant N = 16;

    DotReferee internal dot;
    address internal defender = makeAddr("defender");
    address internal challenger = makeAddr("challenger");
    string internal json;

    struct Case {
        string key;
        uint256 op;
        uint64 k;
        uint64 n;
        uint256 element;
        bytes32[] inputs;
        uint32 honestValue;
        uint32 liarValue;
        bool liarCanClaim;
        int256 liarTotal;
        uint64 rowAt;
        uint64 colAt;
        uint16 rowKey;
        uint16 colKey;
        bool decidedAtClaim;
        int256[] prefix;
    }

    /// @dev One game: the case, which side is honest (0 defender, 1 challenger), where the liar's prefix sums
    ///      start to be wrong (1 .. K), and after how many of its own moves the liar stops (0: never).
    struct Match {
        uint256 id;
        Case c;
        uint256 honest;
        uint64 lieFrom;
        uint256 liarStopsAfter;
        uint256 liarMoves;
        uint256[2] gas; // each side's gas, whole transactions (tx base and calldata included)
        uint256[2] maxMove;
        uint256 moves;
    }

    function setUp() public virtual {
        // A standalone DotReferee (its takeovers come from an ElementReferee: DotRefereeTakeover.t.sol).
        dot = new DotReferee(address(0xE1E), address(0x7ACE), address(0x5E5));
        vm.warp(1_000_000);
        json = vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/dot_referee.json"));
    }

    // ---- vectors -------------------------------------------------------------------------

    function _count(string memory list) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, _at(list, n))) ++n;
    }

    function _case(string memory list, uint256 i) internal view returns (Case memory c) {
        c.key = _at(list, i);
        c.op = vm.parseJsonUint(json, _k(c, ".op"));
        c.k = uint64(vm.parseJsonUint(json, _k(c, ".k")));
        c.n = uint64(vm.parseJsonUint(json, _k(c, ".n")));
        c.element = vm.parseJsonUint(json, _k(c, ".element"));
        uint256 nIn = c.op == 1 ? 3 : 2;
        c.inputs = new bytes32[](nIn);
        for (uint256 t; t < nIn; ++t) {
            c.inputs[t] = vm.parseJsonBytes32(json, string.concat(_at(_k(c, ".inputs"), t), ".commitment"));
        }
        c.honestValue = uint32(vm.parseJsonUint(json, _k(c, ".honestValue")));
        c.liarValue = uint32(vm.parseJsonUint(json, _k(c, ".liarValue")));
        string memory lt = vm.parseJsonString(json, _k(c, ".liarTotal"));
        c.liarCanClaim = bytes(lt).length != 0;
        if (c.liarCanClaim) c.liarTotal = vm.parseInt(lt);
        c.rowAt = uint64(vm.parseJsonUint(json, _k(c, ".rowAt")));
        c.colAt = uint64(vm.parseJsonUint(json, _k(c, ".colAt")));
        c.rowKey = uint16(vm.parseJsonUint(json, _k(c, ".rowKey")));
        c.colKey = uint16(vm.parseJsonUint(json, _k(c, ".colKey")));
        c.decidedAtClaim = vm.parseJsonBool(json, _k(c, ".decidedAtClaim"));
        string[] memory p = vm.parseJsonStringArray(json, _k(c, ".prefix"));
        c.prefix = new int256[](p.length);
        for (uint256 x; x < p.length; ++x) {
            c.prefix[x] = vm.parseInt(p[x]);
        }
    }

    /// @dev Input `t` of the case (0 A, 1 B for mm; 0 bias, 1 A, 2 B for addmm) by its role: 0 bias, 1 A, 2 B.
    function _tensor(Case memory c, uint256 role) internal pure returns (string memory) {
        uint256 t = c.op == 1 ? role : role - 1;
        return _at(_k(c, ".inputs"), t);
    }

    /// @dev The opening of element `index` (flat) of the tensor with role `role` (0 bias, 1 A, 2 B).
    function _open(Case memory c, uint256 role, uint256 index)
        internal
        view
        returns (IDotReferee.Opening memory o)
    {
        string memory t = _tensor(c, role);
        uint256[] memory dims = vm.parseJsonUintArray(json, string.concat(t, ".shape"));
        o.shape = new uint64[](dims.length);
        for (uint256 d; d < dims.length; ++d) {
            o.shape[d] = uint64(dims[d]);
        }
        string memory ch = _at(string.concat(t, ".chunks"), index * 4 / 4096);
        o.chunk = vm.parseJsonBytes(json, string.concat(ch, ".bytes"));
        o.siblings = vm.parseJsonBytes32Array(json, string.concat(ch, ".siblings"));
    }

    function _openA(Case memory c, uint256 at) internal view returns (IDotReferee.Opening memory) {
        return _open(c, 1, (c.element / c.n) * c.k + at);
    }

    function _openB(Case memory c, uint256 at) internal view returns (IDotReferee.Opening memory) {
        return _open(c, 2, at * c.n + c.element % c.n);
    }

    function _openBias(Case memory c) internal view returns (IDotReferee.Opening memory o) {
        if (c.op == 0) return o;
        uint256[] memory dims = vm.parseJsonUintArray(json, string.concat(_tensor(c, 0), ".shape"));
        uint256 index;
        if (dims.length >= 1 && dims[dims.length - 1] != 1) index = c.element % c.n;
        if (dims.length == 2 && dims[0] != 1) index += (c.element / c.n) * dims[1];
        return _open(c, 0, index);
    }

    // ---- the players -----------------------------------------------------------------------

    /// @dev P(x) as `side` holds it: the truth for the honest side, the liar's list otherwise.
    function _p(Match memory m, uint256 side, uint256 x) internal pure returns (int256) {
        if (m.c.decidedAtClaim) return 0; // no sum: the claim alone decides
        int256 v = m.c.prefix[x];
        if (side == m.honest || x < m.lieFrom) return v;
        return v + (m.c.liarTotal - m.c.prefix[m.c.k]);
    }

    function _splits(Match memory m, uint256 side, uint64 lo, uint64 hi)
        internal
        view
        returns (int256[] memory s)
    {
        uint64[] memory pts = dot.splitPoints(lo, hi, N);
        s = new int256[](pts.length);
        for (uint256 i; i < pts.length; ++i) {
            s[i] = _p(m, side, pts[i]);
        }
    }

    function _claimOf(Match memory m, uint256 side) internal view returns (IDotReferee.Claim memory cl) {
        Case memory c = m.c;
        cl.rowAt = c.rowAt;
        cl.colAt = c.colAt;
        if (c.k != 0) {
            cl.row = _openA(c, c.rowAt);
            cl.col = _openB(c, c.colAt);
        }
        cl.bias = _openBias(c);
        cl.total = _p(m, side, c.k);
        if (!c.decidedAtClaim) cl.splits = _splits(m, side, 0, c.k);
    }

    function _params(Case memory c, uint32[2] memory values)
        internal
        pure
        returns (IDotReferee.Params memory p)
    {
        p.op = c.op;
        p.inputs = c.inputs;
        p.k = c.k;
        p.n = c.n;
        p.element = c.element;
        p.values = values;
        p.players = [address(0), address(0)];
        p.clocks = [CLOCK, CLOCK];
        p.arity = N;
    }

    function _newMatch(Case memory c, uint256 honest, uint64 lieFrom, uint256 liarStopsAfter)
        internal
        returns (Match memory m)
    {
        m.c = c;
        m.honest = honest;
        m.lieFrom = lieFrom;
        m.liarStopsAfter = liarStopsAfter;
        uint32[2] memory values = honest == 0 ? [c.honestValue, c.liarValue] : [c.liarValue, c.honestValue];
        IDotReferee.Params memory p = _params(c, values);
        p.players = [defender, challenger];
        m.id = dot.open(p);
    }

    /// @dev The calldata of the move due for `side` (it is its turn).
    function _moveData(Match memory m, IDotReferee.GameView memory v, uint256 side)
        internal
        view
        returns (bytes memory)
    {
        if (v.stage == IDotReferee.Stage.Claim) {
            return abi.encodeCall(IDotReferee.claim, (m.id, _claimOf(m, side)));
        }
        if (v.stage == IDotReferee.Stage.Split) {
            return abi.encodeCall(IDotReferee.split, (m.id, _splits(m, side, v.lo, v.hi)));
        }
        if (v.stage == IDotReferee.Stage.Term) {
            return abi.encodeCall(IDotReferee.proveTerm, (m.id, _openA(m.c, v.lo), _openB(m.c, v.lo)));
        }
        // Pick: the defender's list passed back; the honest challenger disputes the first sub-range whose end
        // the defender got wrong, the liar the last one.
        int256[] memory theirs = _splits(m, 0, v.lo, v.hi);
        uint64[] memory pts = dot.splitPoints(v.lo, v.hi, N);
        uint256 pick = pts.length;
        if (side == m.honest) {
            for (uint256 i; i < pts.length; ++i) {
                if (theirs[i] != m.c.prefix[pts[i]]) {
                    pick = i;
                    break;
                }
            }
        }
        return abi.encodeCall(IDotReferee.pick, (m.id, theirs, pick));
    }

    /// @dev Plays the match to the end; each move is a whole transaction whose gas is recorded.
    function _play(Match memory m) internal {
        for (uint256 guard; guard < 200; ++guard) {
            IDotReferee.GameView memory v = dot.gameOf(m.id);
            if (v.stage == IDotReferee.Stage.Resolved) return;
            uint256 side = uint256(v.toMove);
            if (side != m.honest && m.liarStopsAfter != 0 && m.liarMoves >= m.liarStopsAfter) {
                vm.warp(block.timestamp + CLOCK + 1);
                dot.timeout(m.id);
                return;
            }
            if (side != m.honest && v.stage == IDotReferee.Stage.Claim && !m.c.liarCanClaim) {
                // No S gives the liar's value: every claim is refused, and it loses on time.
                vm.prank(defender);
                (bool okClaim,) = address(dot).call(_moveData(m, v, side));
                assertFalse(okClaim, "a claim the liar's value does not follow from");
                vm.warp(block.timestamp + CLOCK + 1);
                dot.timeout(m.id);
                return;
            }
            bytes memory cd = _moveData(m, v, side);
            vm.prank(side == 0 ? defender : challenger);
            (bool ok, bytes memory ret) = address(dot).call(cd);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(ret, 0x20), mload(ret))
                }
            }
            // Under `isolate = true` (the gas tests) the call is its own transaction: 21,000 and calldata (or
            // the EIP-7623 floor) included, storage cold.
            uint256 whole = vm.lastCallGas().gasTotalUsed;
            m.gas[side] += whole;
            if (whole > m.maxMove[side]) m.maxMove[side] = whole;
            ++m.moves;
            if (side != m.honest) ++m.liarMoves;
            vm.warp(block.timestamp + 1);
        }
        revert("the game did not end in 200 moves");
    }

    function _assertHonestWon(Match memory m) internal view {
        IElementReferee.Outcome want =
            m.honest == 0 ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins;
        assertEq(uint256(dot.outcome(m.id)), uint256(want), "the honest side wins");
    }

    // ---- keys ------------------------------------------------------------------------------

    function _k(Case memory c, string memory suffix) internal pure returns (string memory) {
        return string.concat(c.key, suffix);
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }
}
