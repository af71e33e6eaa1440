// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {DotRuleGames} from "./utils/DotRuleGames.sol";

/// @notice The gas DotRefereeGas.t.sol (main's suite) does not measure: the open and the term move alone, in
///         an honest defender's game with K = 4096 (A [4, 4096], B [4096, 256], arity 16: three bisection
///         levels), mm and addmm, the first wrong prefix sum at 2345 (vectors: dot_rules_gas.json); and the
///         takeover's `start` (open and claim in one transaction) against a standalone open and claim.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction, so storage
///      starts cold and `vm.lastCallGas()` is the transaction's gas, 21,000 and calldata (or the EIP-7623
///      floor) included. Every move's figure goes to the console; the open, the term and the takeover's to the
///      snapshot group `DotRefereeMoveGas` (the claim, pick, split and totals are DotRefereeGas's).
contract DotRefereeMoveGasTest is DotRuleGames {
    uint256 internal constant TX_BASE = 21_000;
    /// @notice Issue 17's per-move target (not met by a move that carries a 4096-byte chunk).
    uint256 internal constant MOVE_TARGET = 100_000;
    /// @notice Issue 17's bound on the honest side's extra gas.
    uint256 internal constant TOTAL_TARGET = 1_500_000;

    struct Figures {
        uint256 open;
        uint256 claim;
        uint256 maxPick;
        uint256 maxSplit;
        uint256 term;
        uint256[2] total;
        uint256[2] moves;
    }

    string internal json;

    function setUp() public override {
        super.setUp();
        json = _vectors("dot_rules_gas.json");
    }

    /// forge-config: default.isolate = true
    function test_gas_mm4096_openAndTerm_succeeds() public {
        _measure("mm_4096_defender", 0, 0);
    }

    /// forge-config: default.isolate = true
    function test_gas_addmm4096_openAndTerm_succeeds() public {
        _measure("addmm_4096_defender", 1, 0);
    }

    /// @notice The takeover's first move: `start` (the dot game's open and the claim in one transaction) on
    ///         the mm node of dot_takeover.json (K = 300, A and B of one and two chunks), against the
    ///         standalone claim of the same element.
    /// forge-config: default.isolate = true
    function test_gas_takeoverStart_succeeds() public {
        string memory tj = _vectors("dot_takeover.json");
        Case memory c = _case(tj, 0);
        Match memory mt = _newMatch(c, _lie(c, 0), 0);
        _playUntil(mt, IElementReferee.Stage.ElementProof, 0);
        Play memory p;
        p.c = _dcase(tj, string.concat(c.key, ".dot"));
        p.e = _elAt(p.c, mt.l.element);
        p.rowAt = p.e.rowAt;
        p.colAt = p.e.colAt;
        p.prefix[0] = p.e.prefix;
        IDotReferee.Takeover memory t;
        t.outputShape = c.outShape;
        t.a = mt.inputHeaders[0];
        t.b = mt.inputHeaders[1];
        bytes memory cd = abi.encodeCall(IDotReferee.start, (mt.id, t, _claimOf(p)));
        (bool ok, uint256 gas,) = _dsend(defender, cd);
        assertTrue(ok, "start");
        vm.snapshotValue("DotRefereeMoveGas", "takeover_mm_k300_start", gas);
        (, uint256 floor) = _calldataGas(cd);
        console.log("start gas", gas, "calldata bytes", cd.length);
        console.log("  21000+floor", TX_BASE + floor);
        uint256 id = dot.takenOver(mt.id);
        assertEq(uint256(dot.gameOf(id).stage), uint256(IDotReferee.Stage.Pick));
        // the same claim in a standalone game
        uint256 sid = dot.open(_dparams(p.c, p.e.element, [p.e.value, p.e.value ^ 1]));
        uint256 openGas = vm.lastCallGas().gasTotalUsed;
        p.id = sid;
        (ok, gas,) = _dsend(defender, abi.encodeCall(IDotReferee.claim, (sid, _claimOf(p))));
        assertTrue(ok, "claim");
        console.log("standalone open", openGas, "claim", gas);
        vm.snapshotValue("DotRefereeMoveGas", "standalone_mm_k300_open", openGas);
        vm.snapshotValue("DotRefereeMoveGas", "standalone_mm_k300_claim", gas);
    }

    function _measure(string memory name, uint256 ci, uint256 honest) internal returns (Figures memory f) {
        DCase memory c = _dcase(json, ci);
        assertEq(c.k, 4096);
        El memory e = _el(c, 0);
        uint256 lieAt = vm.parseJsonUint(json, string.concat(c.key, ".lieAt"));
        Play memory m = _newPlay(c, e, honest, _lieFrom(e.prefix, lieAt, int256(1) << 20));
        f.open = vm.lastCallGas().gasTotalUsed;
        assertGe(f.open, TX_BASE, "isolated");
        console.log("case", name);
        console.log("  side  stage  gas  calldata-bytes  21000+floor");
        while (dot.gameOf(m.id).stage != IDotReferee.Stage.Resolved) {
            vm.warp(block.timestamp + 60);
            _dplay(m);
            _account(f, m);
        }
        _dhonestWon(m);
        IDotReferee.GameView memory v = dot.gameOf(m.id);
        assertEq(v.lo, lieAt - 1, "the term played");
        uint256 liar = 1 - honest;
        console.log("  open", f.open);
        console.log("  honest total", f.total[honest], "moves", f.moves[honest]);
        console.log("  liar total", f.total[liar], "moves", f.moves[liar]);
        // ceil(log_16 4096) = 3 levels: claim, 2 splits, proveTerm; 3 picks
        assertEq(f.moves[0], 4, "defender: claim, 2 splits, term");
        assertEq(f.moves[1], 3, "challenger: 3 picks");
        assertLe(v.moves, 3 + 4, "rounds <= ceil(log_N K) + 4");
        assertLe(f.maxPick, MOVE_TARGET, "pick <= 100k");
        assertLe(f.maxSplit, MOVE_TARGET, "split <= 100k");
        assertLe(f.total[honest], TOTAL_TARGET, "the honest side's total <= 1.5M");
        uint256[2] memory meter = dot.meterOf(m.id);
        console.log("  meter defender", meter[0], "challenger", meter[1]);
        string memory g = "DotRefereeMoveGas";
        vm.snapshotValue(g, string.concat(name, "_open"), f.open);
        vm.snapshotValue(g, string.concat(name, "_proveTerm"), f.term);
    }

    function _account(Figures memory f, Play memory m) internal view {
        uint256 gas = m.lastGas;
        (, uint256 floor) = _calldataGas(m.lastCalldata);
        assertGe(gas, TX_BASE + floor, "isolated: the EIP-7623 floor is included");
        uint256 s = m.lastSide;
        IDotReferee.Stage st = m.lastStage;
        f.total[s] += gas;
        ++f.moves[s];
        string memory stage;
        if (st == IDotReferee.Stage.Claim) {
            f.claim = gas;
            stage = "claim";
        } else if (st == IDotReferee.Stage.Pick) {
            if (gas > f.maxPick) f.maxPick = gas;
            stage = "pick";
        } else if (st == IDotReferee.Stage.Split) {
            if (gas > f.maxSplit) f.maxSplit = gas;
            stage = "split";
        } else {
            f.term = gas;
            stage = "proveTerm";
        }
        console.log(
            string.concat(
                "  ",
                s == m.honest ? "honest" : "liar",
                "  ",
                stage,
                "  ",
                vm.toString(gas),
                "  ",
                vm.toString(m.lastCalldata.length),
                "  ",
                vm.toString(TX_BASE + floor)
            )
        );
    }

    /// @notice Calldata gas: 4 per zero byte, 16 per other byte; and the EIP-7623 floor, 10 per token.
    function _calldataGas(bytes memory cd) internal pure returns (uint256 standard, uint256 floor) {
        uint256 zeros;
        for (uint256 i; i < cd.length; ++i) {
            if (cd[i] == 0) ++zeros;
        }
        uint256 others = cd.length - zeros;
        standard = 4 * zeros + 16 * others;
        floor = 10 * (zeros + 4 * others);
    }
}
