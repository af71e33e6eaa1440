// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {DisputeGameBase} from "./DisputeGame.t.sol";
import {ElementReferee} from "../src/ElementReferee.sol";
import {TraceReferee} from "../src/TraceReferee.sol";
import {SumReferee} from "../src/SumReferee.sol";
import {IDisputeGame} from "../src/interfaces/IDisputeGame.sol";
import {IElementReferee} from "../src/interfaces/IElementReferee.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {
    DisputeGameElementNotDone,
    DisputeGameNotPlaying,
    DisputeGameRefereeAlreadyBound,
    DisputeGameNotDeployer,
    DisputeGameWrongStage
} from "../src/lib/GameErrors.sol";
import {ElementRefereeNotOwner} from "../src/lib/ElementRefereeErrors.sol";
import {Lie, Task, Players} from "./utils/Player.sol";
import {Reference} from "./utils/Reference.sol";

/// @notice A referee whose table also holds the fixture's operator (`H("aten.mul.Tensor")`, `H("")`, 3
///         inputs) as `where`: the fixture's nodes then go to the element phase. Only the table differs.
contract FixtureTableReferee is ElementReferee {
    constructor(address trace, address sum) ElementReferee(trace, sum) {}

    function elementOp(bytes32 opHash, bytes32 argHash, uint256 nIn) public pure override returns (uint256) {
        if (opHash == Players.OP_MUL && argHash == Players.NO_ARGS && nIn == 3) return 14; // WHERE + 1
        return super.elementOp(opHash, argHash, nIn);
    }
}

/// @notice DisputeGame's element stage (docs/game.md 2.7): the node whose inputs agree goes to the bound
///         referee instead of the oracle; `resolveElement` reads the referee's outcome of its own game only.
/// @dev The fixture's output commitments are hashes without a tensor behind them, so the element game here
///      ends on time; ElementReferee.t.sol plays element games out on real tensors.
contract DisputeGameElementTest is DisputeGameBase {
    uint64 internal constant T = 16;
    uint64 internal constant C = 8;
    uint64 internal constant N = 4;
    uint64 internal constant M = 6;
    uint64 internal constant STEP = 9;
    uint64 internal constant NODE = 3;

    FixtureTableReferee internal ref;

    function _referee() internal override returns (IElementReferee) {
        ref = new FixtureTableReferee(address(new TraceReferee()), address(new SumReferee()));
        return ref;
    }

    function setUp() public {
        _deploy();
        _registerOracle(oracleNode);
        vm.warp(1_000_000);
    }

    function _task() internal pure returns (Task memory) {
        return Players.task(T, C, N, M, 2, 5, CLOCK, 7);
    }

    function _elementMatch(bool honestDefends) internal returns (Match memory m, IDisputeGame.GameView memory v) {
        m = _newMatch(_task(), Lie.Output, STEP, NODE, honestDefends);
        v = _playUntil(m, IDisputeGame.Stage.Element);
    }

    function test_reveal_coveredNode_opensElementGame_succeeds() public {
        vm.expectCall(address(oracle), abi.encodeWithSelector(IRecomputeOracle.ask.selector), 0);
        (, IDisputeGame.GameView memory v) = _elementMatch(true);
        assertEq(v.questionId, 0, "no oracle question");
        assertEq(v.elementGame, 1, "the element game");
        IElementReferee.GameView memory e = ref.gameOf(v.elementGame);
        assertEq(e.owner, address(game), "the dispute game owns it");
        assertEq(e.players[0], defender, "defender");
        assertEq(e.players[1], challenger, "challenger");
        assertEq(e.op, 13, "where");
        assertEq(e.clockLeft[0], v.clockLeft[0], "the defender's remaining clock");
        assertEq(e.clockLeft[1], v.clockLeft[1], "the challenger's remaining clock");
        assertEq(uint256(e.stage), uint256(IElementReferee.Stage.Header), "header stage");
    }

    function test_resolveElement_defenderTimesOut_challengerWins_succeeds() public {
        (Match memory m, IDisputeGame.GameView memory v) = _elementMatch(false);
        vm.expectRevert(abi.encodeWithSelector(DisputeGameElementNotDone.selector, v.elementGame));
        game.resolveElement(m.id);
        // The defender (the liar) cannot open a header of its output: it runs out of its clock.
        vm.warp(block.timestamp + v.clockLeft[0] + 1);
        ref.timeout(v.elementGame);
        vm.expectEmit(address(game));
        emit IDisputeGame.GameResolved(m.id, IDisputeGame.Outcome.ChallengerWins);
        game.resolveElement(m.id);
        assertEq(uint256(game.outcome(m.id)), uint256(IDisputeGame.Outcome.ChallengerWins), "outcome");
        assertEq(uint256(_view(m).stage), uint256(IDisputeGame.Stage.Resolved), "resolved");
        (uint256[2] memory gas,) = game.meterOf(m.id);
        assertGt(gas[1], 0, "the challenger's moves are metered");
    }

    function test_timeout_duringElement_reverts() public {
        (Match memory m,) = _elementMatch(true);
        vm.warp(block.timestamp + 3 * CLOCK);
        vm.expectRevert(
            abi.encodeWithSelector(DisputeGameNotPlaying.selector, m.id, IDisputeGame.Stage.Element)
        );
        game.timeout(m.id);
    }

    function test_resolveElement_wrongStage_reverts() public {
        Match memory m = _newMatch(_task(), Lie.Output, STEP, NODE, true);
        vm.expectRevert(
            abi.encodeWithSelector(
                DisputeGameWrongStage.selector, m.id, IDisputeGame.Stage.Element, IDisputeGame.Stage.CheckpointDescent
            )
        );
        game.resolveElement(m.id);
    }

    /// @notice Attack: a stranger opens a referee game with the same players and outputs and ends it at
    ///         once (its "defender" times out); before the fix that reads only the game's own element game,
    ///         a resolve reading any finished game would hand the challenger the win. Now nothing changes.
    function test_attack_strangersRefereeGame_cannotResolve_reverts() public {
        (Match memory m, IDisputeGame.GameView memory v) = _elementMatch(true);
        IElementReferee.GameView memory e = ref.gameOf(v.elementGame);
        bytes32[] memory inputs = new bytes32[](3);
        inputs[0] = keccak256("a");
        inputs[1] = keccak256("b");
        inputs[2] = keccak256("c");
        address stranger = makeAddr("stranger");
        vm.prank(stranger);
        uint256 id = ref.open(
            IElementReferee.Params({
                op: 13,
                inputs: inputs,
                scalars: [uint64(0), uint64(0)],
                outputs: [keccak256("d"), keccak256("c2")],
                players: e.players,
                clocks: [uint64(1), uint64(1)],
                arity: 4
            })
        );
        vm.warp(block.timestamp + 2);
        ref.timeout(id);
        assertEq(uint256(ref.outcome(id)), uint256(IElementReferee.Outcome.ChallengerWins));
        // The game reads only its own element game, and only as its owner.
        vm.expectRevert(abi.encodeWithSelector(DisputeGameElementNotDone.selector, v.elementGame));
        game.resolveElement(m.id);
        vm.prank(address(game));
        vm.expectRevert(abi.encodeWithSelector(ElementRefereeNotOwner.selector, id, address(game), stranger));
        ref.ownedOutcome(id);
        assertEq(uint256(_view(m).stage), uint256(IDisputeGame.Stage.Element), "still in the element stage");
    }

    /// @notice A covered operator on inputs of other dtypes (the table keys operators, not dtypes): node 0's
    ///         first input is the fp32 batch where the table's `where` takes a bool, so the defender (to move)
    ///         proves it from the batch's header, the element game is Inapplicable, and `resolveElement`
    ///         asks the oracle on the agreed inputs instead: the node is decided as if it were not covered.
    function test_resolveElement_inapplicable_asksTheOracle_succeeds() public {
        Match memory m = _newMatch(_task(), Lie.Output, STEP, 0, true);
        IDisputeGame.GameView memory v = _playUntil(m, IDisputeGame.Stage.Element);
        bytes32[] memory agreed = ref.inputsOf(v.elementGame);
        Task memory t = _task();
        IElementReferee.Header memory batch =
            IElementReferee.Header(1, Players.batchShape(t), Reference.dataRoot(Players.batchData(t, STEP)));
        assertEq(Reference.commitment(1, batch.shape, batch.dataRoot), agreed[0], "the agreed batch's header");
        vm.prank(defender);
        ref.proveInapplicable(v.elementGame, 0, batch);
        assertEq(uint256(ref.outcome(v.elementGame)), uint256(IElementReferee.Outcome.Inapplicable));
        vm.expectCall(address(oracle), abi.encodeWithSelector(IRecomputeOracle.ask.selector), 1);
        game.resolveElement(m.id);
        IDisputeGame.GameView memory after_ = _view(m);
        assertEq(uint256(after_.stage), uint256(IDisputeGame.Stage.Oracle), "the oracle decides");
        assertGt(after_.questionId, 0, "a question was asked");
        IRecomputeOracle.Question memory q = oracle.question(after_.questionId);
        assertEq(q.node, 0, "node 0");
        assertEq(q.inputsHash, sha256(abi.encodePacked(agreed)), "on the agreed inputs");
    }

    function test_bindReferee_twice_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(DisputeGameRefereeAlreadyBound.selector, address(ref)));
        game.bindReferee(IElementReferee(address(1)));
    }

    function test_bindReferee_notDeployer_reverts() public {
        vm.prank(makeAddr("stranger"));
        vm.expectRevert(abi.encodeWithSelector(DisputeGameNotDeployer.selector, makeAddr("stranger"), address(this)));
        game.bindReferee(IElementReferee(address(1)));
    }

    /// @notice Every game still ends within timeBound: the element game runs on the remaining clocks.
    function test_element_endsWithinTimeBound_succeeds() public {
        uint256 start = block.timestamp;
        (Match memory m, IDisputeGame.GameView memory v) = _elementMatch(false);
        vm.warp(block.timestamp + v.clockLeft[0] + 1);
        ref.timeout(v.elementGame);
        game.resolveElement(m.id);
        assertLe(block.timestamp - start, game.timeBound(_task().cfg), "within timeBound");
    }
}
