// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {SumReferee} from "../../src/SumReferee.sol";
import {ISumReferee} from "../../src/interfaces/ISumReferee.sol";
import {IDotReferee} from "../../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../../src/interfaces/IElementReferee.sol";

/// @notice Plays SumReferee games on the vectors of scripts/sum_referee_vectors.py: one case is a sum node on a real
///         committed fp32 tensor, its disputed element, the honest value (the RepOps kernel's), the witness(es) and
///         every exact prefix sum. The honest player plays the truth; the liar holds a value one bit off and a prefix
///         list that is right below `lieFrom` and shifted by a constant from there, so that its P(L) is the S its
///         value follows from.
abstract contract SumGames is Test {
    uint64 internal constant CLOCK = 1 days;
    uint64 internal constant N = 16;
    uint16 internal constant NON_FINITE = 0xFFFF;

    SumReferee internal sum;
    address internal defender = makeAddr("defender");
    address internal challenger = makeAddr("challenger");
    string internal json;

    struct Case {
        string path;
        uint256 variant;
        bytes32 input;
        bytes32 dataRoot;
        uint64[] shape;
        uint64[] outShape;
        uint256 element;
        uint32 honestValue;
        uint32 liarValue;
        bool liarCanClaim;
        int256 liarTotal;
        uint64 at;
        int256 at2;
        uint16 key;
        uint32 witness;
        uint64 length;
        uint256 reduced;
        bool decidedAtClaim;
        int256[] prefix;
    }

    /// @dev One game: the case, which side is honest (0 defender, 1 challenger), where the liar's prefix sums
    ///      start to be wrong (1 .. L), and after how many of its own moves the liar stops (0: never).
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
        uint64 arity;
    }

    function setUp() public virtual {
        sum = new SumReferee();
        vm.warp(1_000_000);
        json = vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/sum_referee.json"));
    }

    function _count(string memory list) internal view returns (uint256 n) {
        while (vm.keyExistsJson(json, _at(list, n))) ++n;
    }

    function _case(string memory list, uint256 i) internal view returns (Case memory c) {
        c.path = _at(list, i);
        c.variant = vm.parseJsonUint(json, _k(c, ".variant"));
        c.input = vm.parseJsonBytes32(json, _k(c, ".input.commitment"));
        c.dataRoot = vm.parseJsonBytes32(json, _k(c, ".input.dataRoot"));
        c.shape = _u64s(vm.parseJsonUintArray(json, _k(c, ".input.shape")));
        c.outShape = _u64s(vm.parseJsonUintArray(json, _k(c, ".outShape")));
        c.element = vm.parseJsonUint(json, _k(c, ".element"));
        c.honestValue = uint32(vm.parseJsonUint(json, _k(c, ".honestValue")));
        c.liarValue = uint32(vm.parseJsonUint(json, _k(c, ".liarValue")));
        string memory lt = vm.parseJsonString(json, _k(c, ".liarTotal"));
        c.liarCanClaim = bytes(lt).length != 0;
        if (c.liarCanClaim) c.liarTotal = vm.parseInt(lt);
        c.at = uint64(vm.parseJsonUint(json, _k(c, ".at")));
        c.at2 = vm.parseJsonInt(json, _k(c, ".at2"));
        c.key = uint16(vm.parseJsonUint(json, _k(c, ".key")));
        c.witness = uint32(vm.parseJsonUint(json, _k(c, ".witness")));
        c.length = uint64(vm.parseJsonUint(json, _k(c, ".length")));
        c.reduced = vm.parseJsonUint(json, _k(c, ".reduced"));
        c.decidedAtClaim = vm.parseJsonBool(json, _k(c, ".decidedAtClaim"));
        string[] memory p = vm.parseJsonStringArray(json, _k(c, ".prefix"));
        c.prefix = new int256[](p.length);
        for (uint256 x; x < p.length; ++x) {
            c.prefix[x] = vm.parseInt(p[x]);
        }
    }

    function _u64s(uint256[] memory a) internal pure returns (uint64[] memory b) {
        b = new uint64[](a.length);
        for (uint256 i; i < a.length; ++i) {
            b[i] = uint64(a[i]);
        }
    }

    /// @dev Term `k` of the case's slice, opened (its index from the referee's own `inputIndex`).
    function _open(Case memory c, uint256 k) internal view returns (IDotReferee.Opening memory o) {
        uint256 index = sum.inputIndex(c.element, k, c.shape, c.reduced);
        o.shape = c.shape;
        string memory ch = _at(_k(c, ".input.chunks"), index * 4 / 4096);
        o.chunk = vm.parseJsonBytes(json, string.concat(ch, ".bytes"));
        o.siblings = vm.parseJsonBytes32Array(json, string.concat(ch, ".siblings"));
    }

    /// @dev The bits of term `k` (from its opening's chunk).
    function _termBits(Case memory c, uint256 k) internal view returns (uint32 x) {
        uint256 index = sum.inputIndex(c.element, k, c.shape, c.reduced);
        bytes memory chunk = _open(c, k).chunk;
        uint256 at = (index * 4) % 4096;
        x = uint32(uint8(chunk[at])) | uint32(uint8(chunk[at + 1])) << 8 | uint32(uint8(chunk[at + 2])) << 16
            | uint32(uint8(chunk[at + 3])) << 24;
    }

    function _header(uint64[] memory outShape) internal pure returns (bytes32) {
        return keccak256(abi.encodePacked(uint8(1), outShape));
    }

    function _params(Case memory c, uint32[2] memory values) internal pure returns (ISumReferee.Params memory p) {
        p.variant = c.variant;
        p.input = c.input;
        p.header = _header(c.outShape);
        p.element = c.element;
        p.values = values;
        p.players = [address(0), address(0)];
        p.clocks = [CLOCK, CLOCK];
        p.arity = N;
    }

    function _newMatch(Case memory c, uint256 honest, uint64 lieFrom, uint256 liarStopsAfter, uint64 arity)
        internal
        returns (Match memory m)
    {
        m.c = c;
        m.honest = honest;
        m.lieFrom = lieFrom;
        m.liarStopsAfter = liarStopsAfter;
        m.arity = arity;
        uint32[2] memory values = honest == 0 ? [c.honestValue, c.liarValue] : [c.liarValue, c.honestValue];
        ISumReferee.Params memory p = _params(c, values);
        p.players = [defender, challenger];
        p.arity = arity;
        m.id = sum.open(p);
    }

    function _p(Match memory m, uint256 side, uint256 x) internal pure returns (int256) {
        if (m.c.decidedAtClaim || m.c.key == NON_FINITE) return 0; // no sum: the claim alone decides
        int256 v = m.c.prefix[x];
        if (side == m.honest || x < m.lieFrom) return v;
        return v + (m.c.liarTotal - m.c.prefix[m.c.length]);
    }

    function _splits(Match memory m, uint256 side, uint64 lo, uint64 hi) internal view returns (int256[] memory s) {
        uint64[] memory pts = sum.splitPoints(lo, hi, m.arity);
        s = new int256[](pts.length);
        for (uint256 i; i < pts.length; ++i) {
            s[i] = _p(m, side, pts[i]);
        }
    }

    function _claimOf(Match memory m, uint256 side) internal view returns (ISumReferee.Claim memory cl) {
        Case memory c = m.c;
        cl.outputShape = c.outShape;
        cl.input = IElementReferee.Header(1, c.shape, c.dataRoot);
        cl.at = c.at;
        if (c.length != 0) cl.witness = _open(c, c.at);
        if (c.at2 >= 0) {
            cl.at2 = uint64(uint256(c.at2));
            cl.second = _open(c, cl.at2);
        }
        cl.total = _p(m, side, c.length);
        if (!c.decidedAtClaim && c.key != NON_FINITE) cl.splits = _splits(m, side, 0, c.length);
    }

    /// @dev A term of the slice that disproves the claimed class (and witness), or L when there is none: read from
    ///      the case (its largest class, its NaN or its infinities), not from every term.
    function _refutation(Case memory c, uint16 key, uint32 witness) internal pure returns (uint64) {
        if (key != NON_FINITE) return c.key > key ? c.at : c.length;
        if (!c.decidedAtClaim) return c.length; // one infinity (of one sign): nothing disproves it
        if (c.at2 < 0) return c.at; // a NaN
        return c.witness == witness ? uint64(uint256(c.at2)) : c.at; // the opposite infinity
    }

    function _classOf(uint32 x) internal pure returns (uint16) {
        uint32 mag = x & 0x7FFFFFFF;
        if (mag == 0) return 0;
        uint32 biased = mag >> 23;
        if (biased == 0xFF) return NON_FINITE;
        if (biased != 0) return uint16(biased + 24);
        uint16 bits;
        while (mag != 0) {
            mag >>= 1;
            ++bits;
        }
        return bits + 1;
    }

    /// @dev The calldata of the move due for `side` (it is its turn); empty when it has none (a liar facing a true
    ///      infinite claim).
    function _moveData(Match memory m, ISumReferee.GameView memory v, uint256 side)
        internal
        view
        returns (bytes memory)
    {
        if (v.stage == ISumReferee.Stage.Claim) return abi.encodeCall(ISumReferee.claim, (m.id, _claimOf(m, side)));
        if (v.stage == ISumReferee.Stage.Split) {
            return abi.encodeCall(ISumReferee.split, (m.id, _splits(m, side, v.lo, v.hi)));
        }
        if (v.stage == ISumReferee.Stage.Term) return abi.encodeCall(ISumReferee.proveTerm, (m.id, _open(m.c, v.lo)));
        // Pick or Refute: a refutation where one exists, else (Pick) the honest challenger disputes the first
        // sub-range whose end the defender got wrong, the liar the last one.
        uint64 r = _refutation(m.c, v.key, v.witness);
        if (r < m.c.length) return abi.encodeCall(ISumReferee.refute, (m.id, r, _open(m.c, r)));
        if (v.stage == ISumReferee.Stage.Refute) return "";
        int256[] memory theirs = _splits(m, 0, v.lo, v.hi);
        uint64[] memory pts = sum.splitPoints(v.lo, v.hi, m.arity);
        uint256 pick = pts.length;
        if (side == m.honest) {
            for (uint256 i; i < pts.length; ++i) {
                if (theirs[i] != m.c.prefix[pts[i]]) {
                    pick = i;
                    break;
                }
            }
        }
        return abi.encodeCall(ISumReferee.pick, (m.id, theirs, pick));
    }

    /// @dev Plays the match to the end; each move is a whole transaction whose gas is recorded.
    function _play(Match memory m) internal {
        for (uint256 guard; guard < 200; ++guard) {
            ISumReferee.GameView memory v = sum.gameOf(m.id);
            if (v.stage == ISumReferee.Stage.Resolved) return;
            uint256 side = uint256(v.toMove);
            bool stops = side != m.honest && m.liarStopsAfter != 0 && m.liarMoves >= m.liarStopsAfter;
            if (!stops && side != m.honest && v.stage == ISumReferee.Stage.Claim && !m.c.liarCanClaim) {
                // No S gives the liar's value: every claim is refused, and it loses on time.
                vm.prank(defender);
                (bool okClaim,) = address(sum).call(_moveData(m, v, side));
                assertFalse(okClaim, "a claim the liar's value does not follow from");
                stops = true;
            }
            bytes memory cd = stops ? bytes("") : _moveData(m, v, side);
            if (cd.length == 0) {
                vm.warp(block.timestamp + CLOCK + 1);
                sum.timeout(m.id);
                return;
            }
            vm.prank(side == 0 ? defender : challenger);
            (bool ok, bytes memory ret) = address(sum).call(cd);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(ret, 0x20), mload(ret))
                }
            }
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
        assertEq(uint256(sum.outcome(m.id)), uint256(want), "the honest side wins");
    }

    function _k(Case memory c, string memory suffix) internal pure returns (string memory) {
        return string.concat(c.path, suffix);
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }
}
