// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {IDotReferee} from "../src/interfaces/IDotReferee.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {TraceTakeoverGames} from "./utils/TraceTakeoverGames.sol";

/// @notice Gas of the trace takeover (docs/game.md 2.9): `DotReferee.startTrace` (the input element's chunk
///         opening: a full 4096-byte chunk and two siblings for exp and gelu on 4096 elements, a 1200-byte
///         chunk for exp on 300) and `settleTrace`, with the trace game's claim and refutation between them.
/// @dev Each test runs isolated (inline config `isolate = true`): every call is its own transaction (21,000 and
///      calldata or the EIP-7623 floor included, storage cold). Figures go to the console and to the snapshot
///      group `DotRefereeTraceGas`.
contract DotRefereeTraceGasTest is TraceTakeoverGames {
    uint256 internal constant MOVE_TARGET = 100_000;
    uint256 internal constant TX_BASE = 21_000;
    uint256 internal constant START_BOUND = 350_000;

    /// forge-config: default.isolate = true
    function test_gas_exp4096_trace() public {
        _measure("exp_4096", 8, 4096);
    }

    /// forge-config: default.isolate = true
    function test_gas_gelu4096_trace() public {
        _measure("gelu_4096", 9, 4096);
    }

    /// forge-config: default.isolate = true
    function test_gas_exp300_trace() public {
        _measure("exp_300", 0, 1200);
    }

    struct Figures {
        uint256 start;
        uint256 calldataBytes;
        uint256 standard;
        uint256 floor;
        uint256 claim;
        uint256 refute;
        uint256 settle;
    }

    function _measure(string memory name, uint256 ci, uint256 chunkBytes) internal {
        assertTrue(_probeIsolation(), "the gas tests run isolated");
        Figures memory f = _play(ci, chunkBytes);
        console.log(name);
        console.log("  startTrace", f.start, "calldata bytes", f.calldataBytes);
        console.log("    21000 + standard calldata", TX_BASE + f.standard, "21000 + floor", TX_BASE + f.floor);
        console.log("  claim", f.claim, "refute", f.refute);
        console.log("  settleTrace", f.settle);
        assertGe(f.start, TX_BASE + f.floor, "isolated: the EIP-7623 floor is included");
        assertLe(f.settle, MOVE_TARGET, "settleTrace <= 100k");
        assertLe(f.claim, MOVE_TARGET, "claim <= 100k");
        assertLe(f.refute, MOVE_TARGET, "refute <= 100k");
        // startTrace is over the 100k-per-move target: it opens a game. About 240k of execution whatever the chunk
        // (TraceReferee.open 162,879 of it: seven fresh slots, the game counter's first write included), on top
        // of the opening's calldata (21,000 + floor 71,860 for a 1200-byte chunk, 190,760 for 4096 bytes and
        // two siblings). A bound against regressions:
        assertLe(f.start, START_BOUND, "startTrace <= 350k");
        assertGt(f.start, MOVE_TARGET, "startTrace is over the per-move target (docs/game.md 2.9)");
        string memory g = "DotRefereeTraceGas";
        vm.snapshotValue(g, string.concat(name, "_startTrace"), f.start);
        vm.snapshotValue(g, string.concat(name, "_startTraceCalldata"), f.calldataBytes);
        vm.snapshotValue(g, string.concat(name, "_claim"), f.claim);
        vm.snapshotValue(g, string.concat(name, "_refute"), f.refute);
        vm.snapshotValue(g, string.concat(name, "_settleTrace"), f.settle);
    }

    function _play(uint256 ci, uint256 chunkBytes) internal returns (Figures memory f) {
        Match memory mt = _traceGame(ci, 0, 0);
        IElementReferee.InputOpening memory input = _input(mt);
        assertEq(input.chunk.length, chunkBytes);
        bytes memory cd = abi.encodeCall(IDotReferee.startTrace, (mt.id, input));
        f.calldataBytes = cd.length;
        (f.standard, f.floor) = _calldataGas(cd);
        vm.prank(defender);
        uint256 tid = dot.startTrace(mt.id, input);
        f.start = vm.lastCallGas().gasTotalUsed;
        bytes memory posted = _defenderTrace(mt);
        vm.prank(defender);
        trace.claim(tid, posted);
        f.claim = vm.lastCallGas().gasTotalUsed;
        vm.prank(challenger);
        trace.refute(tid, posted, _refuteStep(mt));
        f.refute = vm.lastCallGas().gasTotalUsed;
        dot.settleTrace(mt.id);
        f.settle = vm.lastCallGas().gasTotalUsed;
        _honestWon(mt);
    }

    function _calldataGas(bytes memory cd) internal pure returns (uint256 standard, uint256 floor) {
        uint256 zeros;
        for (uint256 i; i < cd.length; ++i) {
            if (cd[i] == 0) ++zeros;
        }
        uint256 others = cd.length - zeros;
        standard = 4 * zeros + 16 * others;
        floor = 10 * (zeros + 4 * others);
    }

    function _probeIsolation() internal returns (bool) {
        (bool ok,) = address(referee).call(abi.encodeCall(IElementReferee.opSpec, (0)));
        assertTrue(ok, "probe");
        return vm.lastCallGas().gasTotalUsed >= TX_BASE;
    }
}
