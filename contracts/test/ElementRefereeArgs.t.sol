// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {
    ElementRefereeArgsMismatch,
    ElementRefereeNotYourTurn,
    ElementRefereeClockExpired,
    ElementRefereeWrongStage
} from "../src/lib/ElementRefereeErrors.sol";
import {ElementGames} from "./utils/ElementGames.sol";

/// @notice The Args stage of a Tensor-Scalar node (docs/game.md 2.7): `openNode`'s second lookup, `openArgs`'s
///         reading of the number against the Python reading (scripts/element_referee_vectors.py writes both),
///         its turn, clock and preimage rules. The games played to the end with these nodes are in
///         ElementReferee.t.sol (`test_everyCaseEveryLie_honestWins_succeeds`, the `*_scalar*` cases).
contract ElementRefereeArgsTest is ElementGames {
    string internal json; // argument bytes
    string internal cases; // Tensor-Scalar nodes
    bytes32 internal constant INPUT = keccak256("input");
    bytes32 internal constant OUT_A = keccak256("defender's output");
    bytes32 internal constant OUT_B = keccak256("challenger's output");

    function setUp() public override {
        super.setUp();
        json = _vectors("element_referee_args.json");
        cases = _vectors("element_referee_scalar.json");
    }

    /// @notice Every Tensor-Scalar case and lie (first, middle, last element), the honest side as defender and as
    ///         challenger, the liar playing on: opened by `openNode`, the number read by `openArgs`, the element
    ///         computed on chain; one move more than a keyed node's game (the arguments).
    function test_scalarCases_everyLie_honestWins_succeeds() public {
        assertEq(_playEveryCaseAndLie(cases), 7, "cases");
    }

    function _openScalar(string memory op, bytes memory args) internal returns (uint256 id) {
        bytes32[] memory inputs = new bytes32[](1);
        inputs[0] = INPUT;
        id = referee.openNode(
            sha256(bytes(op)), sha256(args), inputs, [OUT_A, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
        );
    }

    function _mulHalf() internal pure returns (bytes memory) {
        return hex"82826473656c66f782656f74686572f93800"; // mul.Tensor(x, 0.5)
    }

    /// @notice Every argument vector: the number the referee reads equals the Python reading bit for bit, or
    ///         both refuse it and the game resolves Inapplicable (the dispute game then asks the oracle).
    function test_openArgs_everyVector_matchesPython_succeeds() public {
        uint256 n;
        uint256 refused;
        while (vm.keyExistsJson(json, _at(".args", n))) {
            string memory key = _at(".args", n);
            string memory op = vm.parseJsonString(json, string.concat(key, ".opName"));
            bytes memory args = vm.parseJsonBytes(json, string.concat(key, ".args"));
            bool ok = vm.parseJsonBool(json, string.concat(key, ".ok"));
            uint64 scalar = uint64(vm.parseJsonUint(json, string.concat(key, ".scalar")));
            uint256 id = _openScalar(op, args);
            assertEq(referee.gameOf(id).op, vm.parseJsonUint(json, string.concat(key, ".code")), "op code");
            assertEq(uint256(referee.gameOf(id).stage), uint256(IElementReferee.Stage.Args), "Args stage");
            if (_openArgsVector(id, args, ok, scalar)) ++refused;
            else assertEq(uint256(referee.gameOf(id).toMove), 0, "the defender opens its header next");
            ++n;
        }
        assertEq(n, 67, "vectors");
        assertEq(refused, 19, "refused vectors");
    }

    /// @notice The Tensor-Scalar game's own moves stay below the 100k move bound of docs/game.md 2.5: `openArgs`
    ///         (a SHA-256 of the argument bytes, the reading) and `proveElement` (one opening, two calls to the
    ///         evaluator: the number to fp32, then the operator). Whole transactions, as `vm.lastCallGas` gives.
    function test_gas_argsAndProofMoves_belowMoveBound_succeeds() public {
        uint256 maxArgs;
        uint256 maxProof;
        uint256 n = _caseCount(cases);
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(cases, i);
            Match memory m = _newMatch(c, _lie(c, 1), 0);
            while (_view(m).stage != IElementReferee.Stage.Resolved) {
                _play(m);
                if (m.lastStage == IElementReferee.Stage.Args && m.lastGas > maxArgs) maxArgs = m.lastGas;
                if (m.lastStage == IElementReferee.Stage.ElementProof && m.lastGas > maxProof) maxProof = m.lastGas;
            }
            _honestWon(m);
        }
        emit log_named_uint("openArgs, most gas", maxArgs);
        emit log_named_uint("proveElement (Tensor-Scalar), most gas", maxProof);
        assertLe(maxArgs, 100_000, "openArgs");
        assertLe(maxProof, 100_000, "proveElement");
        assertGt(maxArgs, 0);
    }

    function test_openNode_keyedCallsDoNotWaitForArgs_succeeds() public {
        // mul.Tensor(a, b): keyed by its own arguments, a RepOpsElement game from the header stage.
        bytes32[] memory two = new bytes32[](2);
        two[0] = INPUT;
        two[1] = INPUT;
        bytes memory tensors = hex"82826473656c66f782656f74686572f7";
        uint256 id = referee.openNode(
            sha256("aten.mul.Tensor"), sha256(tensors), two, [OUT_A, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
        );
        assertEq(uint256(referee.gameOf(id).stage), uint256(IElementReferee.Stage.Header));
        assertEq(referee.gameOf(id).op, 4, "MUL");
        // A Tensor-Scalar call of an operator without a scalar entry is not covered: the oracle decides it.
        assertEq(_openScalar("aten.pow.Tensor_Scalar", hex"82826473656c66f7826865786f6e656e74f94000"), 0);
        assertEq(_openScalar("aten.rsub.Scalar", _mulHalf()), 0);
    }

    function test_openArgs_wrongBytes_reverts() public {
        uint256 id = _openScalar("aten.mul.Tensor", _mulHalf());
        bytes memory other = hex"82826473656c66f782656f74686572f93c00"; // 1.0, not the node's 0.5
        bytes memory want =
            abi.encodeWithSelector(ElementRefereeArgsMismatch.selector, id, sha256(other), sha256(_mulHalf()));
        vm.prank(defender);
        vm.expectRevert(want);
        referee.openArgs(id, other);
    }

    function test_openArgs_challenger_reverts() public {
        uint256 id = _openScalar("aten.mul.Tensor", _mulHalf());
        vm.prank(challenger);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotYourTurn.selector, id, challenger, defender));
        referee.openArgs(id, _mulHalf());
    }

    function test_openArgs_twice_reverts() public {
        uint256 id = _openScalar("aten.mul.Tensor", _mulHalf());
        vm.prank(defender);
        referee.openArgs(id, _mulHalf());
        vm.prank(defender);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector, id, IElementReferee.Stage.Args, IElementReferee.Stage.Header
            )
        );
        referee.openArgs(id, _mulHalf());
    }

    /// @notice A defender that does not open the arguments loses on time, like any silent mover; the clock
    ///         it used in the Args stage is charged to it.
    function test_openArgs_silentDefender_timesOut_succeeds() public {
        uint256 id = _openScalar("aten.mul.Tensor", _mulHalf());
        vm.warp(block.timestamp + CLOCK + 1);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeClockExpired.selector, id, block.timestamp - 1));
        referee.openArgs(id, _mulHalf());
        referee.timeout(id);
        assertEq(uint256(referee.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins));
    }

    function test_openArgs_chargesTheDefendersClock_succeeds() public {
        uint256 id = _openScalar("aten.mul.Tensor", _mulHalf());
        vm.warp(block.timestamp + 100);
        vm.prank(defender);
        referee.openArgs(id, _mulHalf());
        IElementReferee.GameView memory v = referee.gameOf(id);
        assertEq(v.clockLeft[0], CLOCK - 100, "defender charged");
        assertEq(v.clockLeft[1], CLOCK, "challenger untouched");
        assertEq(v.moves, 1);
        assertEq(referee.meterOf(id)[0] > 0, true, "metered");
    }
}
