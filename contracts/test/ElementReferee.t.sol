// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {MerkleLib} from "../src/lib/MerkleLib.sol";
import {RepOpsElement} from "../src/lib/RepOpsElement.sol";
import {
    MerkleProofLength,
    TensorChunkLength,
    TensorCommitmentMismatch,
    TensorTooLarge
} from "../src/lib/Errors.sol";
import {ElementPowExponent} from "../src/lib/FloatErrors.sol";
import {
    ElementRefereeUnknown,
    ElementRefereeBadParams,
    ElementRefereeWrongStage,
    ElementRefereeNotPlaying,
    ElementRefereeNotYourTurn,
    ElementRefereeClockExpired,
    ElementRefereeClockRunning,
    ElementRefereeWidth,
    ElementRefereeHeaderMismatch,
    ElementRefereeDtype,
    ElementRefereeShape,
    ElementRefereeHeaderDiffers,
    ElementRefereePaddingNode,
    ElementRefereeFoldMismatch,
    ElementRefereeOpponentMismatch,
    ElementRefereeChunkMismatch,
    ElementRefereeChunkLength,
    ElementRefereeApplicable
} from "../src/lib/ElementRefereeErrors.sol";
import {TensorLibHarness} from "./harness/TensorLibHarness.sol";
import {ElementGames} from "./utils/ElementGames.sol";

contract ElementRefereeTest is ElementGames {
    uint256 internal constant ADD_CASE = 0; // add, [3, 1500] + [1500]: 5 chunks, the last one short
    uint256 internal constant MIDDLE = 1; // the lie at the middle element
    IElementReferee.Stage internal constant HEADER = IElementReferee.Stage.Header;
    IElementReferee.Stage internal constant DESCENT = IElementReferee.Stage.ChunkDescent;
    IElementReferee.Stage internal constant OPEN = IElementReferee.Stage.ElementOpen;
    IElementReferee.Stage internal constant PROOF = IElementReferee.Stage.ElementProof;

    string internal json;
    TensorLibHarness internal tensors;

    function setUp() public override {
        super.setUp();
        json = _vectors("element_referee.json");
        tensors = new TensorLibHarness();
    }

    /// @notice The add case with its middle lie; `honest` 0: the honest side defends.
    function _addMatch(uint256 honest) internal returns (Match memory) {
        Case memory c = _case(json, ADD_CASE);
        return _newMatch(c, _lie(c, MIDDLE), honest);
    }

    /// @notice Every case and lie (first, middle, last element), the honest side as defender and as
    ///         challenger, the liar playing on to the end: the contract's element decides for the honest side.
    function test_everyCaseEveryLie_honestWins_succeeds() public {
        assertEq(_playEveryCaseAndLie(json), 9, "cases");
    }

    // ---- open ------------------------------------------------------------------------------

    function test_open_badParams_reverts() public {
        Case memory c = _case(json, ADD_CASE);
        bytes32 other = keccak256("other");
        IElementReferee.Params memory p = _params(c, c.honestCommitment, other);
        p.op = RepOpsElement.OP_COUNT;
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 1, RepOpsElement.OP_COUNT));
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.inputs = new bytes32[](1);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 2, 1));
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.players[1] = defender;
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 3, uint160(defender)));
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.players[1] = address(0);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 3, 0));
        referee.open(p);
        p = _params(c, c.honestCommitment, c.honestCommitment);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeBadParams.selector, 4, uint256(c.honestCommitment))
        );
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.clocks[1] = 0;
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 5, 0));
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.arity = 12;
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 6, 12));
        referee.open(p);
        p.arity = 128;
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 6, 128));
        referee.open(p);
        p = _params(c, c.honestCommitment, other);
        p.scalars[0] = 1; // add takes no scalar
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeBadParams.selector, 7, 1));
        referee.open(p);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeUnknown.selector, 1));
        referee.gameOf(1); // nothing opened
    }

    function test_open_powExponentUndefined_reverts() public {
        Case memory c = _case(json, 3); // relu: one f32 input
        IElementReferee.Params memory p = _params(c, c.honestCommitment, keccak256("other"));
        p.op = RepOpsElement.POW;
        p.scalars[0] = 0x4010000000000000; // 4.0: pow has no RepOps definition for it
        vm.expectRevert(abi.encodeWithSelector(ElementPowExponent.selector, uint64(0x4010000000000000)));
        referee.open(p);
        // Every exponent RepOpsElement defines opens a game.
        uint64[9] memory defined = [
            uint64(0),
            0x8000000000000000,
            0x3FF0000000000000,
            0x4000000000000000,
            0x4008000000000000,
            0xBFF0000000000000,
            0xC000000000000000,
            0x3FE0000000000000,
            0xBFE0000000000000
        ];
        uint256 last;
        for (uint256 i; i < defined.length; ++i) {
            p.scalars[0] = defined[i];
            RepOpsElement.evaluate(RepOpsElement.POW, 0x40400000, defined[i], 0);
            last = referee.open(p);
        }
        assertEq(last, 9, "opened");
    }

    function test_open_recordsTheGame_succeeds() public {
        Match memory m = _addMatch(0);
        IElementReferee.GameView memory v = _view(m);
        assertEq(v.owner, address(this), "owner");
        assertEq(v.players[0], defender, "defender");
        assertEq(uint256(v.stage), uint256(HEADER), "header stage");
        assertEq(uint256(v.toMove), 0, "the defender moves first");
        assertEq(v.clockLeft[0], CLOCK, "clock");
        assertEq(_winner(m.id), address(0), "no winner yet");
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeUnknown.selector, 99));
        referee.gameOf(99);
    }

    // ---- header stage ------------------------------------------------------------------------

    function test_header_wrongOutputRoot_reverts() public {
        Match memory m = _addMatch(0);
        IElementReferee.Header memory out = IElementReferee.Header(m.c.outDtype, m.c.outShape, m.l.dataRoot);
        bytes32 computed = tensors.commitmentOf(m.c.outDtype, m.c.outShape, m.l.dataRoot);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeHeaderMismatch.selector, 0, computed, m.c.honestCommitment)
        );
        vm.prank(defender);
        referee.openHeaders(m.id, out, _inputHeaders(m.c));
    }

    function test_header_wrongInputHeader_reverts() public {
        Match memory m = _addMatch(0);
        IElementReferee.Header memory out = IElementReferee.Header(m.c.outDtype, m.c.outShape, m.roots[0]);
        IElementReferee.Header[] memory ins = _inputHeaders(m.c);
        ins[1].shape = new uint64[](0);
        bytes32 computed = tensors.commitmentOf(ins[1].dtype, ins[1].shape, ins[1].dataRoot);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeHeaderMismatch.selector, 2, computed, m.c.inputs[1])
        );
        vm.prank(defender);
        referee.openHeaders(m.id, out, ins);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 1, 2));
        vm.prank(defender);
        referee.openHeaders(m.id, out, new IElementReferee.Header[](1));
    }

    /// @notice An op code whose dtypes the agreed tensors do not have: the defender cannot open, so a game
    ///         opened with a wrong op code is lost by the defender on time (the wiring must route right).
    function test_header_opDtypes_reverts() public {
        Case memory c = _case(json, ADD_CASE);
        IElementReferee.Params memory p = _params(c, c.honestCommitment, keccak256("other"));
        p.op = RepOpsElement.LT; // gives bool, the output is f32
        uint256 id = referee.open(p);
        IElementReferee.Header memory out = IElementReferee.Header(c.outDtype, c.outShape, c.honestRoot);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeDtype.selector, 0, uint8(1), uint8(10)));
        vm.prank(defender);
        referee.openHeaders(id, out, _inputHeaders(c));
        c = _case(json, 3); // relu: f32 -> f32
        p = _params(c, c.honestCommitment, keccak256("other"));
        p.op = RepOpsElement.I64_TO_F32; // takes an int64 input
        id = referee.open(p);
        out = IElementReferee.Header(c.outDtype, c.outShape, c.honestRoot);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeDtype.selector, 1, uint8(1), uint8(9)));
        vm.prank(defender);
        referee.openHeaders(id, out, _inputHeaders(c));
    }

    /// @notice An add whose agreed second input is int64 (the table keys operators, not dtypes, and an honest
    ///         defender could not open it): the side to move proves the input's dtype from its header and
    ///         the game resolves Inapplicable, for its owner to decide another way; an input of the spec's
    ///         dtype, a header that is not the agreed input's, an index past the inputs and a player not to
    ///         move are refused, and nothing moves after it.
    function test_proveInapplicable_int64Input_succeeds() public {
        Case memory c = _case(json, ADD_CASE);
        IElementReferee.Params memory p = _params(c, c.honestCommitment, keccak256("other"));
        uint64[] memory shape = new uint64[](1);
        shape[0] = 1500;
        bytes32 root = keccak256("int64 data");
        p.inputs = _copy(p.inputs);
        p.inputs[1] = tensors.commitmentOf(9, shape, root);
        uint256 id = referee.open(p);
        IElementReferee.Header[] memory ins = _inputHeaders(c);
        IElementReferee.Header memory wide = IElementReferee.Header(9, shape, root);

        vm.startPrank(defender);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeApplicable.selector, 1, uint8(1)));
        referee.proveInapplicable(id, 0, ins[0]);
        bytes32 wrong = tensors.commitmentOf(9, shape, keccak256("other data"));
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeHeaderMismatch.selector, 2, wrong, p.inputs[1]));
        referee.proveInapplicable(id, 1, IElementReferee.Header(9, shape, keccak256("other data")));
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 2, 2));
        referee.proveInapplicable(id, 2, wide);
        vm.stopPrank();
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotYourTurn.selector, id, challenger, defender));
        vm.prank(challenger);
        referee.proveInapplicable(id, 1, wide);

        vm.expectEmit(true, false, false, true, address(referee));
        emit IElementReferee.GameResolved(id, IElementReferee.Outcome.Inapplicable);
        vm.prank(defender);
        referee.proveInapplicable(id, 1, wide);
        assertEq(uint8(referee.outcome(id)), uint8(IElementReferee.Outcome.Inapplicable));
        assertEq(_winner(id), address(0));
        bytes32[] memory agreed = referee.inputsOf(id);
        assertEq(agreed.length, 2);
        assertEq(agreed[0], p.inputs[0]);
        assertEq(agreed[1], p.inputs[1]);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector, id, HEADER, IElementReferee.Stage.Resolved
            )
        );
        vm.prank(defender);
        referee.proveInapplicable(id, 1, wide);
    }

    /// @notice Each side's calls are metered in gas on its own side (what the market repays the winner at the
    ///         task's gas price cap): every move of a played game counts, at least its base and calldata
    ///         cost; a stranger's timeout counts for nobody; a clock too long for the meter's slot is refused.
    function test_meter_countsEachSidesCalls_succeeds() public {
        Match memory m = _addMatch(0);
        uint256[2] memory none = referee.meterOf(m.id);
        assertEq(none[0], 0, "nothing before a move");
        assertEq(none[1], 0, "nothing before a move");
        IElementReferee.Header memory out = IElementReferee.Header(m.c.outDtype, m.c.outShape, m.roots[0]);
        IElementReferee.Header[] memory ins = _inputHeaders(m.c);
        vm.prank(defender);
        uint256 start = gasleft();
        referee.openHeaders(m.id, out, ins);
        uint256 measured = start - gasleft();
        uint256[2] memory one = referee.meterOf(m.id);
        // The meter adds the base cost and calldata to the call's own gas (what the test saw, less the call).
        assertGt(one[0], 21_000 + measured / 2, "base cost, calldata and the move itself");
        assertLt(one[0], 21_000 + measured + 40 * 2_000 + 10_000, "no more than that");
        assertEq(one[1], 0, "the challenger has not moved");
        _playOut(m);
        _honestWon(m);
        uint256[2] memory played = referee.meterOf(m.id);
        assertGt(played[0], one[0], "the defender's later moves");
        assertGt(played[1], 3 * 21_000, "the challenger's header, descent and chunk moves");

        // A stranger's call is not metered: the silent defender of another game is timed out by a stranger.
        Match memory quiet = _addMatch(0);
        vm.warp(block.timestamp + CLOCK + 1);
        vm.prank(makeAddr("stranger"));
        referee.timeout(quiet.id);
        uint256[2] memory after_ = referee.meterOf(quiet.id);
        assertEq(after_[0] + after_[1], 0, "a stranger's timeout counts for nobody");

        IElementReferee.Params memory p = _params(m.c, m.c.honestCommitment, keccak256("other"));
        p.clocks[1] = uint64(type(uint40).max) + 1;
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeBadParams.selector, 5, uint256(type(uint40).max) + 1)
        );
        referee.open(p);
    }

    /// @notice A defender whose output has a shape that is not the inputs' broadcast cannot open its header.
    function test_header_defenderShapeNotBroadcast_reverts() public {
        Case memory c = _case(json, ADD_CASE); // [3, 1500] + [1500]
        uint64[] memory flat = new uint64[](1);
        flat[0] = 4500;
        uint64[] memory swapped = new uint64[](2);
        (swapped[0], swapped[1]) = (1500, 3);
        IElementReferee.Header[] memory ins = _inputHeaders(c);
        for (uint256 i; i < 2; ++i) {
            uint64[] memory shape = i == 0 ? flat : swapped;
            bytes32 liar = tensors.commitmentOf(c.outDtype, shape, c.honestRoot);
            uint256 id = referee.open(_params(c, liar, c.honestCommitment));
            if (i == 0) {
                vm.expectRevert(
                    abi.encodeWithSelector(ElementRefereeShape.selector, 1, type(uint256).max, 2, 1)
                );
            } else {
                vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 0, 0, 1500, 3));
            }
            vm.prank(defender);
            referee.openHeaders(id, IElementReferee.Header(c.outDtype, shape, c.honestRoot), ins);
            // The liar cannot move: the honest challenger wins on time.
            vm.warp(block.timestamp + CLOCK + 1);
            referee.timeout(id);
            assertEq(_winner(id), challenger, "the honest challenger wins");
        }
    }

    /// @notice Input shapes that do not broadcast together.
    function test_header_inputsDoNotBroadcast_reverts() public {
        Case memory c = _case(json, 2); // div: [4, 1, 700] / [1, 3, 700] -> [4, 3, 700]
        uint256 id = referee.open(_params(c, c.honestCommitment, keccak256("other")));
        IElementReferee.Header[] memory ins = _inputHeaders(c);
        // The opened shapes are bound to the agreed commitments, so an unbroadcastable pair needs other
        // agreed inputs: b of shape [3, 700] against a [2, 700] output.
        uint64[] memory shapeA = new uint64[](2);
        (shapeA[0], shapeA[1]) = (2, 700);
        IElementReferee.Params memory p = _params(c, c.honestCommitment, keccak256("other"));
        ins[0].shape = shapeA;
        ins[1].shape = new uint64[](2);
        (ins[1].shape[0], ins[1].shape[1]) = (3, 700);
        p.inputs[0] = tensors.commitmentOf(1, ins[0].shape, ins[0].dataRoot);
        p.inputs[1] = tensors.commitmentOf(1, ins[1].shape, ins[1].dataRoot);
        p.outputs[0] = tensors.commitmentOf(1, shapeA, c.honestRoot);
        id = referee.open(p);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeShape.selector, 2, 0, 3, 2));
        vm.prank(defender);
        referee.openHeaders(id, IElementReferee.Header(1, shapeA, c.honestRoot), ins);
    }

    /// @notice A shape too large to commit (its product of dims past 2^256) is refused with a clear error,
    ///         not an arithmetic panic.
    function test_header_uncommittableShape_reverts() public {
        Case memory c = _case(json, 3); // relu: one f32 input, same shape out
        uint64[] memory huge = new uint64[](5);
        for (uint256 i; i < 5; ++i) {
            huge[i] = uint64(1) << 63;
        }
        IElementReferee.Params memory p =
            _params(c, tensors.commitmentOf(1, huge, c.honestRoot), keccak256("x"));
        p.inputs[0] = tensors.commitmentOf(1, huge, c.honestRoot);
        uint256 id = referee.open(p);
        IElementReferee.Header[] memory ins = new IElementReferee.Header[](1);
        ins[0] = IElementReferee.Header(1, huge, c.honestRoot);
        vm.expectRevert(
            abi.encodeWithSelector(
                TensorTooLarge.selector, type(uint256).max, uint256(type(uint64).max) * 1024
            )
        );
        vm.prank(defender);
        referee.openHeaders(id, IElementReferee.Header(1, huge, c.honestRoot), ins);
    }

    function test_header_challenger_reverts() public {
        Match memory m = _addMatch(0);
        _play(m); // the defender's header
        uint64[] memory swapped = new uint64[](2);
        (swapped[0], swapped[1]) = (1500, 3);
        IElementReferee.Header memory out = IElementReferee.Header(m.c.outDtype, m.c.outShape, m.roots[1]);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 2, 0));
        vm.prank(challenger);
        referee.openHeaders(m.id, out, _inputHeaders(m.c));
        // A challenger whose output has another shape (same bytes) cannot open.
        bytes32 liar = tensors.commitmentOf(m.c.outDtype, swapped, m.l.dataRoot);
        uint256 id = referee.open(_params(m.c, m.c.honestCommitment, liar));
        vm.prank(defender);
        referee.openHeaders(
            id, IElementReferee.Header(m.c.outDtype, m.c.outShape, m.c.honestRoot), _inputHeaders(m.c)
        );
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeHeaderDiffers.selector,
                keccak256(abi.encodePacked(m.c.outDtype, swapped)),
                keccak256(abi.encodePacked(m.c.outDtype, m.c.outShape))
            )
        );
        vm.prank(challenger);
        referee.openHeaders(
            id, IElementReferee.Header(m.c.outDtype, swapped, m.l.dataRoot), new IElementReferee.Header[](0)
        );
    }

    // ---- chunk descent -----------------------------------------------------------------------

    function test_descend_badNodes_reverts() public {
        Match memory m = _addMatch(0);
        _playUntil(m, DESCENT, 0);
        IElementReferee.GameView memory v = _view(m);
        assertEq(v.chunkCount, 5, "5 chunks");
        assertEq(v.height, 3, "depth 3");
        bytes32[] memory mine = _levelNodes(m.leaves[0], v.height, v.position);
        assertEq(mine.length, 8, "one level of 8");
        bytes32[] memory none = new bytes32[](0);
        // Wrong width.
        bytes32[] memory short = new bytes32[](7);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 7, 8));
        vm.prank(defender);
        referee.descend(m.id, short, none);
        // A padding position (chunk 5 of 5: out of range) holding a node.
        bytes32[] memory bad = _copy(mine);
        bad[5] = mine[0];
        vm.expectRevert(abi.encodeWithSelector(ElementRefereePaddingNode.selector, 5));
        vm.prank(defender);
        referee.descend(m.id, bad, none);
        // A wrong node.
        bad = _copy(mine);
        bad[2] = keccak256("wrong");
        vm.expectPartialRevert(ElementRefereeFoldMismatch.selector);
        vm.prank(defender);
        referee.descend(m.id, bad, none);
        // The defender sends no list of the opponent's.
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 8, 0));
        vm.prank(defender);
        referee.descend(m.id, mine, mine);
        _play(m);
        // The challenger passes a wrong list back, or none.
        bytes32[] memory theirs = _levelNodes(m.leaves[1], v.height, v.position); // its own, not the defender's
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeOpponentMismatch.selector,
                keccak256(abi.encodePacked(theirs)),
                keccak256(abi.encodePacked(mine))
            )
        );
        vm.prank(challenger);
        referee.descend(m.id, theirs, theirs);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 0, 8));
        vm.prank(challenger);
        referee.descend(m.id, theirs, none);
        // The challenger posts the defender's nodes as its own.
        vm.expectPartialRevert(ElementRefereeFoldMismatch.selector);
        vm.prank(challenger);
        referee.descend(m.id, mine, mine);
        _playOut(m);
        _honestWon(m);
    }

    // ---- element opening ---------------------------------------------------------------------

    function test_openChunk_badChunks_reverts() public {
        Match memory m = _addMatch(1); // the liar defends
        _playUntil(m, OPEN, 0);
        bytes memory liarChunk = m.chunks[0];
        bytes memory honestChunk = m.chunks[1];
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeChunkLength.selector, 4095, 4096));
        vm.prank(defender);
        referee.openChunk(m.id, _cut(liarChunk, 4095), "");
        // The liar cannot open the honest chunk as its own.
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeChunkMismatch.selector, MerkleLib.leafHash(honestChunk), m.l.leaf
            )
        );
        vm.prank(defender);
        referee.openChunk(m.id, honestChunk, "");
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 4096, 0));
        vm.prank(defender);
        referee.openChunk(m.id, liarChunk, liarChunk);
        _play(m);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeOpponentMismatch.selector, MerkleLib.leafHash(honestChunk), m.l.leaf
            )
        );
        vm.prank(challenger);
        referee.openChunk(m.id, honestChunk, honestChunk);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeChunkLength.selector, 0, 4096));
        vm.prank(challenger);
        referee.openChunk(m.id, honestChunk, "");
        _playOut(m);
        _honestWon(m);
    }

    /// @notice The last chunk of the add case is short (18000 - 4 * 4096 = 1616 bytes).
    function test_openChunk_shortLastChunk_succeeds() public {
        Case memory c = _case(json, ADD_CASE);
        Match memory m = _newMatch(c, _lie(c, 2), 0); // the last element
        _playUntil(m, OPEN, 0);
        assertEq(_view(m).position, 4, "the last chunk");
        assertEq(m.chunks[0].length, 1616, "short");
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeChunkLength.selector, 4096, 1616));
        vm.prank(defender);
        referee.openChunk(m.id, new bytes(4096), "");
        _playOut(m);
        _honestWon(m);
        assertEq(_view(m).element, 4499, "the last element");
    }

    // ---- proof -------------------------------------------------------------------------------

    function test_proveElement_badOpenings_reverts() public {
        Match memory m = _addMatch(0);
        _playUntil(m, PROOF, 0);
        IElementReferee.InputOpening[] memory os = _openings(m);
        bytes32 sib = os[0].siblings[0];
        os[0].siblings[0] = keccak256("wrong");
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, os);
        os[0].siblings[0] = sib;
        bytes32[] memory full = os[1].siblings;
        os[1].siblings = new bytes32[](full.length - 1);
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, full.length - 1, full.length));
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, os);
        os[1].siblings = full;
        bytes memory chunk = os[1].chunk;
        os[1].chunk = _cut(chunk, 100);
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, 100, chunk.length));
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, os);
        os[1].chunk = chunk;
        // A changed input element: the chunk no longer hashes to the agreed input.
        os[0].chunk = _copyBytes(os[0].chunk);
        os[0].chunk[0] ^= 0x01;
        vm.expectPartialRevert(TensorCommitmentMismatch.selector);
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, os);
        os = _openings(m);
        // The output shape must be the opened one.
        uint64[] memory flat = new uint64[](1);
        flat[0] = 4500;
        vm.expectPartialRevert(ElementRefereeHeaderDiffers.selector);
        vm.prank(defender);
        referee.proveElement(m.id, flat, os);
        IElementReferee.InputOpening[] memory one = new IElementReferee.InputOpening[](1);
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWidth.selector, 1, 2));
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, one);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotYourTurn.selector, m.id, challenger, defender)
        );
        vm.prank(challenger);
        referee.proveElement(m.id, m.c.outShape, os);
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, os);
        _honestWon(m);
    }

    /// @notice Both sides wrong at the same element, differently: neither equals the computed element.
    function test_proveElement_bothWrong_bothLose() public {
        Case memory c = _case(json, ADD_CASE);
        Lie memory l = _lie(c, MIDDLE);
        Match memory m = _newMatch(c, l, 0);
        // The "honest" side's tensor replaced by a second lie at the same element (another bit).
        bytes memory chunk = _copyBytes(l.honestChunk);
        chunk[(l.element * 4) % 4096] ^= 0x02;
        bytes32[] memory leaves = _copyLeaves(c.leaves);
        leaves[l.chunkIndex] = MerkleLib.leafHash(chunk);
        m.leaves[0] = leaves;
        m.chunks[0] = chunk;
        m.roots[0] = MerkleLib.rootInPlace(_copyLeaves(leaves));
        IElementReferee.Params memory p =
            _params(c, tensors.commitmentOf(c.outDtype, c.outShape, m.roots[0]), l.commitment);
        m.id = referee.open(p);
        _playOut(m);
        assertEq(uint256(referee.outcome(m.id)), uint256(IElementReferee.Outcome.BothLose), "both lose");
        assertEq(_winner(m.id), address(0), "no winner");
    }

    // ---- turns, stages and clocks ------------------------------------------------------------

    function test_turns_repeatedMoveAndWrongStage_reverts() public {
        Match memory m = _addMatch(0);
        bytes memory cd = _calldata(m);
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotYourTurn.selector, m.id, challenger, defender)
        );
        vm.prank(challenger);
        referee.openHeaders(
            m.id, IElementReferee.Header(1, m.c.outShape, m.roots[1]), new IElementReferee.Header[](0)
        );
        _play(m);
        // The same move again: it is the challenger's turn now.
        (bool ok,, bytes memory ret) = _send(defender, cd);
        assertFalse(ok, "a repeated move");
        assertEq(ret, abi.encodeWithSelector(ElementRefereeNotYourTurn.selector, m.id, defender, challenger));
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWrongStage.selector, m.id, DESCENT, HEADER));
        vm.prank(challenger);
        referee.descend(m.id, new bytes32[](0), new bytes32[](0));
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeWrongStage.selector, m.id, OPEN, HEADER));
        vm.prank(challenger);
        referee.openChunk(m.id, "", "");
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeUnknown.selector, 42));
        referee.timeout(42);
        _playOut(m);
        vm.expectRevert(
            abi.encodeWithSelector(
                ElementRefereeWrongStage.selector, m.id, PROOF, IElementReferee.Stage.Resolved
            )
        );
        vm.prank(defender);
        referee.proveElement(m.id, m.c.outShape, _openings(m));
        vm.expectRevert(
            abi.encodeWithSelector(ElementRefereeNotPlaying.selector, m.id, IElementReferee.Stage.Resolved)
        );
        referee.timeout(m.id);
    }

    /// @notice At every stage, for each side to move: before the deadline `timeout` reverts, a move after
    ///         it reverts, and `timeout` then ends the game for the other side.
    function test_timeout_everyStage_succeeds() public {
        IElementReferee.Stage[4] memory stages = [HEADER, DESCENT, OPEN, PROOF];
        for (uint256 i; i < 4; ++i) {
            for (uint256 side; side < 2; ++side) {
                if (stages[i] == PROOF && side == 1) continue; // the proof is the defender's
                // The side that stops is the liar.
                Match memory m = _addMatch(1 - side);
                _playUntil(m, stages[i], side);
                IElementReferee.GameView memory v = _view(m);
                uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[side];
                vm.warp(deadline);
                vm.expectRevert(abi.encodeWithSelector(ElementRefereeClockRunning.selector, m.id, deadline));
                referee.timeout(m.id);
                vm.warp(deadline + 1);
                (bool ok,, bytes memory ret) = _send(v.players[side], _calldata(m));
                assertFalse(ok, "a late move");
                assertEq(ret, abi.encodeWithSelector(ElementRefereeClockExpired.selector, m.id, deadline));
                referee.timeout(m.id);
                _honestWon(m);
                assertEq(_view(m).clockLeft[side], 0, "the clock ran out");
            }
        }
    }

    /// @notice Each move charges its mover's clock with the time it took; the other's is untouched.
    function test_clocks_chargeTheMover_succeeds() public {
        Match memory m = _addMatch(0);
        vm.warp(block.timestamp + 100);
        _play(m);
        vm.warp(block.timestamp + 250);
        _play(m);
        IElementReferee.GameView memory v = _view(m);
        assertEq(v.clockLeft[0], CLOCK - 100, "defender");
        assertEq(v.clockLeft[1], CLOCK - 250, "challenger");
        assertEq(v.moves, 2, "moves");
    }

    /// @notice The rounds per side are 1 (header) + ceil(log_N K) (descent) + 1 (chunk) + 1 (proof, the
    ///         defender's): at most ceil(log_N K) + 3 moves, within the ceil(log_N K) + 4 of issue 17.
    function test_rounds_bound_succeeds() public {
        uint256 n = _caseCount(json);
        for (uint256 i; i < n; ++i) {
            Case memory c = _case(json, i);
            Match memory m = _newMatch(c, _lie(c, 0), 0);
            uint256 moves = _playOut(m);
            uint256 depth = MerkleLib.depth(c.leaves.length);
            uint256 levels = depth == 0 ? 1 : (depth + 3) / 4;
            assertEq(moves, 2 * (1 + levels + 1) + 1, "moves");
        }
    }

    // ---- helpers -----------------------------------------------------------------------------

    function _copy(bytes32[] memory a) internal pure returns (bytes32[] memory b) {
        b = new bytes32[](a.length);
        for (uint256 i; i < a.length; ++i) {
            b[i] = a[i];
        }
    }

    function _copyLeaves(bytes32[] memory a) internal pure returns (bytes32[] memory) {
        return _copy(a);
    }

    function _copyBytes(bytes memory a) internal pure returns (bytes memory b) {
        b = new bytes(a.length);
        for (uint256 i; i < a.length; ++i) {
            b[i] = a[i];
        }
    }

    function _cut(bytes memory a, uint256 n) internal pure returns (bytes memory b) {
        b = new bytes(n);
        for (uint256 i; i < n; ++i) {
            b[i] = a[i];
        }
    }
}
