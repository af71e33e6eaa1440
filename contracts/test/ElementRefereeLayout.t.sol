// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {
    ElementRefereeApplicable,
    ElementRefereeDtype,
    ElementRefereeShape
} from "../src/lib/ElementRefereeErrors.sol";
import {TensorLibHarness} from "./harness/TensorLibHarness.sol";
import {ElementGames} from "./utils/ElementGames.sol";

/// @notice Data movement in the element phase (docs/game.md 2.7, "Data movement"): view, squeeze, unsqueeze and
///         clone (COPY: the same flat index), expand (EXPAND: the broadcast position) and permute (PERMUTE: the
///         permuted position, its dims read by `openArgs`); and creation ops ("Creation ops": scalar_tensor, full,
///         full_like, the element the fill value read by `openArgs`). The nodes are keyed by their operator alone
///         (`openNode`'s second lookup); the games are played on scripts/element_referee_vectors.py's
///         element_referee_layout.json and element_referee_const.json, and the readings of the dims and of the
///         fill values are checked against the Python readings.
contract ElementRefereeLayoutTest is ElementGames {
    string internal json;
    string internal consts; // creation ops
    TensorLibHarness internal tensors;
    bytes32 internal constant OUT_A = keccak256("defender's output");
    bytes32 internal constant OUT_B = keccak256("challenger's output");
    uint8 internal constant F32 = 1;

    function setUp() public override {
        super.setUp();
        json = _vectors("element_referee_layout.json");
        consts = _vectors("element_referee_const.json");
        tensors = new TensorLibHarness();
    }

    /// @notice Every case and lie (first, middle, last element), the honest side as defender and as challenger,
    ///         the liar playing on: the referee opens the input element the data movement reads and compares it
    ///         (fp32, and an int64 unsqueeze and a bool permute: data movement takes any dtype).
    function test_layoutCases_everyLie_honestWins_succeeds() public {
        assertEq(_playEveryCaseAndLie(json), 11, "cases");
    }

    function _open(string memory op, bytes memory args, bytes32 input) internal returns (uint256 id) {
        bytes32[] memory inputs = new bytes32[](1);
        inputs[0] = input;
        id = referee.openNode(
            sha256(bytes(op)), sha256(args), inputs, [OUT_A, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
        );
    }

    /// @notice The operators are keyed whatever their sizes or dims: view, squeeze, unsqueeze, clone and expand
    ///         start at the headers, permute in stage Args; an operator without an entry (transpose.int, t) is
    ///         left to the oracle.
    function test_openNode_keyedByOperator_succeeds() public {
        bytes32 x = keccak256("x");
        uint256 id = _open("aten.view.default", hex"82826473656c66f7826473697a65821902001840", x);
        assertEq(referee.gameOf(id).op, 52, "view: COPY");
        assertEq(uint256(referee.gameOf(id).stage), uint256(IElementReferee.Stage.Header));
        assertEq(referee.gameOf(_open("aten.view.default", hex"00", x)).op, 52, "any view");
        assertEq(referee.gameOf(_open("aten.unsqueeze.default", hex"01", x)).op, 52, "unsqueeze: COPY");
        assertEq(referee.gameOf(_open("aten.squeeze.dims", hex"02", x)).op, 52, "squeeze: COPY");
        assertEq(referee.gameOf(_open("aten.expand.default", hex"03", x)).op, 53, "expand: EXPAND");
        // clone is keyed by its arguments (they do not vary), so a clone with another memory format is not.
        bytes memory contiguous =
            hex"82826473656c66f7826d6d656d6f72795f666f726d617471636f6e746967756f75735f666f726d6174";
        assertEq(referee.gameOf(_open("aten.clone.default", contiguous, x)).op, 52, "clone: COPY");
        assertEq(_open("aten.clone.default", hex"04", x), 0, "clone, another format");
        id = _open("aten.permute.default", hex"82826473656c66f7826464696d73820100", x);
        assertEq(referee.gameOf(id).op, 54, "permute: PERMUTE");
        assertEq(uint256(referee.gameOf(id).stage), uint256(IElementReferee.Stage.Args), "permute: Args first");
        assertEq(_open("aten.transpose.int", hex"05", x), 0, "transpose");
        assertEq(_open("aten.t.default", hex"826473656c66f7", x), 0, "t");
    }

    /// @notice Every permute argument vector: the dims the referee reads equal the Python reading (packed), or
    ///         both refuse them (a repeated, negative or out-of-range dim, 16 dims, other bytes) and the game
    ///         resolves Inapplicable.
    function test_openArgs_permuteVectors_matchPython_succeeds() public {
        uint256 n;
        uint256 refused;
        while (vm.keyExistsJson(json, _at(".args", n))) {
            string memory key = _at(".args", n);
            bytes memory args = vm.parseJsonBytes(json, string.concat(key, ".args"));
            bool ok = vm.parseJsonBool(json, string.concat(key, ".ok"));
            uint64 dims = uint64(vm.parseJsonUint(json, string.concat(key, ".dims")));
            uint256 id = _open("aten.permute.default", args, keccak256("x"));
            if (_openArgsVector(id, args, ok, dims)) ++refused;
            ++n;
        }
        assertEq(n, 15, "vectors");
        assertEq(refused, 9, "refused vectors");
    }

    /// @notice Every move of every data-movement game stays below the 100k move bound of docs/game.md 2.5.
    function test_gas_everyMove_belowMoveBound_succeeds() public {
        uint256 maxArgs;
        uint256 maxProof;
        uint256 maxOther;
        uint256 n = _caseCount(json);
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(json, i);
            Match memory m = _newMatch(c, _lie(c, 1), 0);
            while (_view(m).stage != IElementReferee.Stage.Resolved) {
                _play(m);
                if (m.lastStage == IElementReferee.Stage.Args) maxArgs = _max(maxArgs, m.lastGas);
                else if (m.lastStage == IElementReferee.Stage.ElementProof) maxProof = _max(maxProof, m.lastGas);
                else maxOther = _max(maxOther, m.lastGas);
            }
            _honestWon(m);
        }
        emit log_named_uint("openArgs (permute), most gas", maxArgs);
        emit log_named_uint("proveElement (data movement), most gas", maxProof);
        emit log_named_uint("header, descent and chunk moves, most gas", maxOther);
        assertLe(maxArgs, 100_000, "openArgs");
        assertLe(maxProof, 100_000, "proveElement");
        assertGt(maxArgs, 0);
    }

    function _max(uint256 a, uint256 b) internal pure returns (uint256) {
        return a > b ? a : b;
    }

    // ---- the header rules ----------------------------------------------------------------

    /// @dev A header the defender can open for its own output commitment (any data root).
    function _outputHeader(uint64[] memory shape) internal view returns (IElementReferee.Header memory h, bytes32 c) {
        h = IElementReferee.Header(F32, shape, keccak256("data"));
        c = tensors.commitmentOf(F32, shape, h.dataRoot);
    }

    function _caseNamed(string memory name) internal view returns (Case memory c) {
        uint256 n = _caseCount(json);
        for (uint256 i; i < n; ++i) {
            c = _case(json, i);
            if (keccak256(bytes(vm.parseJsonString(json, _k(c, ".name")))) == keccak256(bytes(name))) return c;
        }
        revert("no such case");
    }

    /// @dev Opens case `name`'s node with the defender's output of `outShape`; returns the game and its headers.
    function _openWithOutput(string memory name, uint64[] memory outShape)
        internal
        returns (uint256 id, IElementReferee.Header memory out, IElementReferee.Header[] memory ins)
    {
        Case memory c = _caseNamed(name);
        bytes32 mine;
        (out, mine) = _outputHeader(outShape);
        id = referee.openNode(
            sha256(bytes(c.opName)), sha256(c.args), c.inputs, [mine, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
        );
        if (c.argsMoves == 1) {
            vm.prank(defender);
            referee.openArgs(id, c.args);
        }
        ins = _inputHeaders(c);
    }

    /// @notice A view whose output does not hold as many elements as its input: the defender cannot open it.
    function test_openHeaders_copyOtherElementCount_reverts() public {
        uint64[] memory shape = new uint64[](1);
        shape[0] = 2401; // the input is 40 x 60
        (uint256 id, IElementReferee.Header memory out, IElementReferee.Header[] memory ins) =
            _openWithOutput("view_flatten", shape);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 1, type(uint256).max, 2400, 2401));
        referee.openHeaders(id, out, ins);
    }

    /// @notice A permute whose output sizes are not the input's in the dims' order (30 x 70, dims (1, 0): the
    ///         output must be 70 x 30), or whose rank is not the dims' count: the defender cannot open it.
    function test_openHeaders_permuteWrongShape_reverts() public {
        uint64[] memory shape = new uint64[](2);
        shape[0] = 30;
        shape[1] = 70;
        (uint256 id, IElementReferee.Header memory out, IElementReferee.Header[] memory ins) =
            _openWithOutput("permute_t", shape);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 0, 0, 30, 70));
        referee.openHeaders(id, out, ins);

        shape = new uint64[](3);
        (shape[0], shape[1], shape[2]) = (70, 30, 1);
        (id, out, ins) = _openWithOutput("permute_t", shape);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 0, type(uint256).max, 3, 2));
        referee.openHeaders(id, out, ins);
    }

    /// @notice An expand whose output is not a broadcast of its input (4 x 1 to 6 x 5 x 64): refused as for any
    ///         broadcasting operator.
    function test_openHeaders_expandNotABroadcast_reverts() public {
        uint64[] memory shape = new uint64[](3);
        (shape[0], shape[1], shape[2]) = (6, 5, 64);
        (uint256 id, IElementReferee.Header memory out, IElementReferee.Header[] memory ins) =
            _openWithOutput("expand", shape);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 0, 1, 5, 4));
        referee.openHeaders(id, out, ins);
    }

    /// @notice Data movement takes every dtype, the input's being the output's: a defender cannot send an int64
    ///         or bool node to the oracle by proving its input's dtype, and the input must have the output's.
    function test_proveInapplicable_dataMovement_reverts() public {
        Case memory c = _caseNamed("unsqueeze_int64");
        Match memory m = _newMatch(c, _lie(c, 1), 0);
        IElementReferee.Header[] memory ins = _inputHeaders(c);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeApplicable.selector, 1, 9));
        referee.proveInapplicable(m.id, 0, ins[0]);

        // An fp32 output header over the int64 input (a view cannot change the dtype): refused.
        uint64[] memory shape = new uint64[](2);
        (shape[0], shape[1]) = (900, 1);
        (uint256 id, IElementReferee.Header memory out,) = _openWithOutput("unsqueeze_int64", shape);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeDtype.selector, 1, 9, 1));
        referee.openHeaders(id, out, ins);
    }

    // ---- creation ops --------------------------------------------------------------------

    /// @notice Every creation case (scalar_tensor of -inf and 0.1, full of 0, of an int that rounds and of 1e-08,
    ///         full_like of 1, 0.5, NaN and 1e-300) and lie, both ways: the referee reads the fill value, rounds it
    ///         to fp32 and compares it with the isolated element, wherever it is.
    function test_constCases_everyLie_honestWins_succeeds() public {
        assertEq(_playEveryCaseAndLie(consts), 9, "cases");
    }

    /// @notice Every creation argument vector: the fill value the referee reads equals the Python reading bit for
    ///         bit, or both refuse the bytes (another dtype, a bool, no dtype, a negative size, an int of 2^53, bytes
    ///         cut short or trailing) and the game resolves Inapplicable.
    function test_openArgs_constVectors_matchPython_succeeds() public {
        uint256 n;
        uint256 refused;
        while (vm.keyExistsJson(consts, _at(".args", n))) {
            string memory key = _at(".args", n);
            string memory op = vm.parseJsonString(consts, string.concat(key, ".opName"));
            uint256 nIn = vm.parseJsonUint(consts, string.concat(key, ".nIn"));
            bytes memory args = vm.parseJsonBytes(consts, string.concat(key, ".args"));
            bool ok = vm.parseJsonBool(consts, string.concat(key, ".ok"));
            uint64 value = uint64(vm.parseJsonUint(consts, string.concat(key, ".scalar")));
            bytes32[] memory inputs = new bytes32[](nIn);
            if (nIn == 1) inputs[0] = keccak256("x");
            uint256 id = referee.openNode(
                sha256(bytes(op)), sha256(args), inputs, [OUT_A, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
            );
            assertEq(referee.gameOf(id).op, vm.parseJsonUint(consts, string.concat(key, ".code")), "op code");
            assertEq(uint256(referee.gameOf(id).stage), uint256(IElementReferee.Stage.Args), "Args first");
            if (_openArgsVector(id, args, ok, value)) ++refused;
            ++n;
        }
        assertEq(n, 16, "vectors");
        assertEq(refused, 11, "refused vectors");
    }

    /// @notice Every move of every creation game stays below the 100k move bound of docs/game.md 2.5.
    function test_gas_constMoves_belowMoveBound_succeeds() public {
        uint256 most;
        uint256 n = _caseCount(consts);
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(consts, i);
            Match memory m = _newMatch(c, _lie(c, 0), 1);
            while (_view(m).stage != IElementReferee.Stage.Resolved) {
                _play(m);
                most = _max(most, m.lastGas);
            }
            _honestWon(m);
        }
        emit log_named_uint("creation ops, most gas of a move", most);
        assertLe(most, 100_000);
    }

    /// @notice full_like's input is fp32 (its dtype None makes the output the input's): of another dtype, the
    ///         defender proves it and the oracle decides; scalar_tensor and full have no input to prove.
    function test_proveInapplicable_fullLikeInt64_succeeds() public {
        Case memory c = _case(consts, 5); // full_like_one: one fp32 input
        Match memory m = _newMatch(c, _lie(c, 0), 0);
        _play(m); // openArgs
        uint64[] memory shape = _shape(c.json, string.concat(_at(_k(c, ".inputs"), 0), ".shape"));
        IElementReferee.Header memory h = IElementReferee.Header(9, shape, keccak256("int64 data"));
        bytes32 commitment = tensors.commitmentOf(9, h.shape, h.dataRoot);
        bytes32[] memory inputs = new bytes32[](1);
        inputs[0] = commitment;
        uint256 id = referee.openNode(
            sha256(bytes(c.opName)), sha256(c.args), inputs, [OUT_A, OUT_B], [defender, challenger], [CLOCK, CLOCK], N
        );
        vm.prank(defender);
        referee.openArgs(id, c.args);
        vm.prank(defender);
        referee.proveInapplicable(id, 0, h);
        assertEq(uint256(referee.gameOf(id).outcome), uint256(IElementReferee.Outcome.Inapplicable));
        // An fp32 input is the operator's: nothing to prove.
        IElementReferee.Header[] memory fp32 = _inputHeaders(c);
        vm.prank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeApplicable.selector, 1, 1));
        referee.proveInapplicable(m.id, 0, fp32[0]);
    }
}
