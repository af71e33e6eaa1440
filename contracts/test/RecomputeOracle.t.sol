// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {BlockhashRandomness} from "../src/BlockhashRandomness.sol";
import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {IRandomness} from "../src/interfaces/IRandomness.sol";
import {IRecomputeOracle, ORACLE_UNAVAILABLE} from "../src/interfaces/IRecomputeOracle.sol";
import {
    RecomputeOracleAlreadyCommitted,
    RecomputeOracleAlreadyRevealed,
    RecomputeOracleBondTooSmall,
    RecomputeOracleDeadlineNotPassed,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleExitAlreadyRequested,
    RecomputeOracleExitDelayTooLong,
    RecomputeOracleExitNotRequested,
    RecomputeOracleExitTooEarly,
    RecomputeOracleFeeAlreadyPaid,
    RecomputeOracleGameAlreadyBound,
    RecomputeOracleInvalidCommitteeSize,
    RecomputeOracleNotAssignedOracle,
    RecomputeOracleNotCommitted,
    RecomputeOracleNotCommitteeMember,
    RecomputeOracleNotDeployer,
    RecomputeOracleNotGame,
    RecomputeOracleNotRegistered,
    RecomputeOracleNothingToWithdraw,
    RecomputeOracleOpenDuties,
    RecomputeOracleRandomnessPending,
    RecomputeOracleResolutionTimeTooLong,
    RecomputeOracleRevealMismatch,
    RecomputeOracleRevealTooEarly,
    RecomputeOracleSelfChallenge,
    RecomputeOracleSilenceSlashTooLarge,
    RecomputeOracleTransferFailed,
    RecomputeOracleWrongChallengeBond,
    RecomputeOracleWrongFee,
    RecomputeOracleWrongStatus,
    RecomputeOracleZeroMaxAttempts,
    RecomputeOracleZeroMaxRounds,
    RecomputeOracleZeroMinBond,
    RecomputeOracleZeroWindow
} from "../src/lib/OracleErrors.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";

/// @dev An account that takes its credit out of the oracle through `withdraw` and, on receiving
///      it, re-enters `withdraw` (letting the inner revert through, or catching it), or refuses it.
contract Withdrawer {
    enum Mode {
        Reenter,
        ReenterAndCatch,
        Refuse
    }

    RecomputeOracle private immutable _target;
    Mode private immutable _mode;
    uint256 public received;
    bool public reentered;
    bytes public reentryError;

    constructor(RecomputeOracle target, Mode mode) {
        _target = target;
        _mode = mode;
    }

    function join() external payable {
        _target.register{value: msg.value}();
    }

    function leave() external {
        _target.requestExit();
    }

    function cashOut() external {
        _target.exit();
    }

    function withdraw() external {
        _target.withdraw();
    }

    receive() external payable {
        if (_mode == Mode.Refuse) revert();
        received += msg.value;
        if (reentered) return;
        reentered = true;
        if (_mode == Mode.Reenter) {
            _target.withdraw();
        } else {
            try _target.withdraw() {}
            catch (bytes memory err) {
                reentryError = err;
            }
        }
    }
}

/// @notice The rules of RecomputeOracle, one test per rule (docs/game.md section 3). Draws use
///         block-hash randomness with a one-block delay: a draw requested in block `R` is decided by
///         the hash of block `R + 1` and can be made from block `R + 2` on.
contract RecomputeOracleTest is Test {
    uint256 internal constant FEE = 0.1 ether + 1; // split three ways, it leaves a remainder
    uint256 internal constant MIN_BOND = 10 ether;
    uint256 internal constant SILENCE_SLASH = 2 ether;
    uint256 internal constant ORACLE_BOND = MIN_BOND + SILENCE_SLASH; // one silence still leaves a unit
    uint256 internal constant CHALLENGE_BOND = 3 ether + 1; // odd: halving rounds
    uint64 internal constant ANSWER_WINDOW = 1 hours;
    uint64 internal constant CHALLENGE_WINDOW = 2 hours;
    uint64 internal constant VOTE_WINDOW = 3 hours;
    uint64 internal constant EXIT_DELAY = 1 days;
    uint64 internal constant WAIT_LIMIT = 30 minutes;
    uint8 internal constant COMMITTEE_SIZE = 3;
    uint8 internal constant MAX_ATTEMPTS = 2;
    uint8 internal constant MAX_ROUNDS = 2;
    uint256 internal constant ORACLES = 8;
    /// @dev The answering oracle's draw needs the answerer, a challenger and a committee.
    uint256 internal constant NEED = COMMITTEE_SIZE + 2;

    bytes32 internal constant PROGRAM = keccak256("program");
    uint256 internal constant NODE = 7;

    RecomputeOracle internal recompute;
    address internal game = makeAddr("game");
    address internal alice = makeAddr("alice"); // party
    address internal bob = makeAddr("bob"); // party
    address internal challenger = makeAddr("challenger");
    address internal payer = makeAddr("payer");
    address[] internal oracles;

    bytes32 internal truth; // the outputs hash of _outputs(1): what honest oracles post
    bytes32 internal lie; // _outputs(2)
    bytes32 internal other; // _outputs(3)
    bytes32 internal unavailable; // sha256(ORACLE_UNAVAILABLE)

    /// @dev Checks the funds identity after the test body.
    modifier balanced() {
        _;
        OracleSetup.assertFunds(recompute);
    }

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.roll(1000);
        truth = OracleSetup.hashOf(_outputs(1));
        lie = OracleSetup.hashOf(_outputs(2));
        other = OracleSetup.hashOf(_outputs(3));
        unavailable = sha256(abi.encodePacked(ORACLE_UNAVAILABLE));
        _reset(ORACLES);
    }

    // ---------------------------------------------------------------- constructor

    function test_constructor_parameters_succeeds() public view {
        IRecomputeOracle.Params memory p = recompute.params();
        assertEq(p.fee, FEE, "fee");
        assertEq(p.minBond, MIN_BOND, "minBond");
        assertEq(p.challengeBond, CHALLENGE_BOND, "challengeBond");
        assertEq(p.silenceSlash, SILENCE_SLASH, "silenceSlash");
        assertEq(p.answerWindow, ANSWER_WINDOW, "answerWindow");
        assertEq(p.challengeWindow, CHALLENGE_WINDOW, "challengeWindow");
        assertEq(p.voteWindow, VOTE_WINDOW, "voteWindow");
        assertEq(p.exitDelay, EXIT_DELAY, "exitDelay");
        assertEq(p.waitLimit, WAIT_LIMIT, "waitLimit");
        assertEq(p.committeeSize, COMMITTEE_SIZE, "committeeSize");
        assertEq(p.maxAttempts, MAX_ATTEMPTS, "maxAttempts");
        assertEq(p.maxRounds, MAX_ROUNDS, "maxRounds");
        assertEq(recompute.fee(), FEE, "fee()");
        assertEq(recompute.minBond(), MIN_BOND, "minBond()");
        assertEq(recompute.challengeBond(), CHALLENGE_BOND, "challengeBond()");
        assertEq(recompute.maxAttempts(), MAX_ATTEMPTS, "maxAttempts()");
        assertEq(recompute.unavailableHash(), unavailable, "unavailableHash");
        assertEq(recompute.game(), game, "game");
        assertEq(BlockhashRandomness(address(recompute.randomness())).delay(), 1, "randomness delay");
    }

    function test_maxResolutionTime_parameters_succeeds() public view {
        uint256 expected = uint256(MAX_ATTEMPTS) * (WAIT_LIMIT + ANSWER_WINDOW + 2) + CHALLENGE_WINDOW + 1
            + uint256(MAX_ROUNDS) * (WAIT_LIMIT + 2 * uint256(VOTE_WINDOW) + 2);
        assertEq(recompute.maxResolutionTime(), expected);
        assertEq(expected, 64_809, "the figure");
    }

    function test_constructor_evenCommittee_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.committeeSize = 2;
        IRandomness r = recompute.randomness();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleInvalidCommitteeSize.selector, uint8(2)));
        new RecomputeOracle(r, p);
    }

    function test_constructor_zeroCommittee_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.committeeSize = 0;
        IRandomness r = recompute.randomness();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleInvalidCommitteeSize.selector, uint8(0)));
        new RecomputeOracle(r, p);
    }

    function test_constructor_zeroMinBond_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.minBond = 0;
        p.silenceSlash = 0;
        IRandomness r = recompute.randomness();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleZeroMinBond.selector));
        new RecomputeOracle(r, p);
    }

    function test_constructor_silenceSlashAboveMinBond_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.silenceSlash = MIN_BOND + 1;
        IRandomness r = recompute.randomness();
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleSilenceSlashTooLarge.selector, MIN_BOND + 1, MIN_BOND)
        );
        new RecomputeOracle(r, p);
    }

    function test_constructor_zeroWindow_reverts() public {
        IRandomness r = recompute.randomness();
        for (uint256 w; w < 3; ++w) {
            IRecomputeOracle.Params memory p = _params();
            if (w == 0) p.answerWindow = 0;
            if (w == 1) p.challengeWindow = 0;
            if (w == 2) p.voteWindow = 0;
            vm.expectRevert(
                abi.encodeWithSelector(
                    RecomputeOracleZeroWindow.selector, p.answerWindow, p.challengeWindow, p.voteWindow
                )
            );
            new RecomputeOracle(r, p);
        }
    }

    function test_constructor_zeroWaitLimit_succeeds() public {
        IRecomputeOracle.Params memory p = _params();
        p.waitLimit = 0; // a draw that finds too few oracles gives up at once
        RecomputeOracle o = new RecomputeOracle(recompute.randomness(), p);
        assertEq(o.params().waitLimit, 0);
    }

    function test_constructor_zeroMaxAttempts_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.maxAttempts = 0;
        IRandomness r = recompute.randomness();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleZeroMaxAttempts.selector));
        new RecomputeOracle(r, p);
    }

    function test_constructor_zeroMaxRounds_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.maxRounds = 0;
        IRandomness r = recompute.randomness();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleZeroMaxRounds.selector));
        new RecomputeOracle(r, p);
    }

    function test_constructor_resolutionTimeTooLong_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.answerWindow = type(uint32).max / 2; // two attempts overflow 32 bits, not 64
        uint256 expected = 2 * (uint256(WAIT_LIMIT) + p.answerWindow + 2) + CHALLENGE_WINDOW + 1 + 2
            * (uint256(WAIT_LIMIT) + 2 * uint256(VOTE_WINDOW) + 2);
        IRandomness r = recompute.randomness();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleResolutionTimeTooLong.selector, expected, uint256(type(uint32).max)
            )
        );
        new RecomputeOracle(r, p);
    }

    function test_constructor_exitDelayTooLong_reverts() public {
        IRecomputeOracle.Params memory p = _params();
        p.exitDelay = uint64(type(uint32).max) + 1;
        IRandomness r = recompute.randomness();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleExitDelayTooLong.selector, p.exitDelay, uint256(type(uint32).max)
            )
        );
        new RecomputeOracle(r, p);
    }

    // ---------------------------------------------------------------- bindGame

    function test_bindGame_deployer_succeeds() public {
        RecomputeOracle o = OracleSetup.deploy(_params());
        assertEq(o.game(), address(0), "unbound");
        vm.expectEmit(true, false, false, true, address(o));
        emit IRecomputeOracle.GameBound(game);
        o.bindGame(game);
        assertEq(o.game(), game, "bound");
    }

    function test_bindGame_notDeployer_reverts() public {
        RecomputeOracle o = OracleSetup.deploy(_params());
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotDeployer.selector, alice, address(this)));
        vm.prank(alice);
        o.bindGame(alice);
    }

    function test_bindGame_twice_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleGameAlreadyBound.selector, game));
        recompute.bindGame(alice);
        assertEq(recompute.game(), game, "first binding kept");
    }

    // ---------------------------------------------------------------- register

    function test_register_minBond_succeeds() public balanced {
        address o = makeAddr("newcomer");
        uint256 slots = recompute.slotCount();
        vm.deal(o, MIN_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleRegistered(o, MIN_BOND, 1);
        vm.prank(o);
        recompute.register{value: MIN_BOND}();
        assertEq(recompute.bondOf(o), MIN_BOND, "bond");
        assertEq(recompute.unitsOf(o), 1, "units");
        assertEq(recompute.slotCount(), slots + 1, "one slot");
        assertEq(recompute.slotOwner(slots), o, "slot owner");
        assertEq(recompute.totalBonds(), ORACLES * ORACLE_BOND + MIN_BOND, "totalBonds");
        assertFalse(recompute.isActive(o), "not active in its registration block");
        vm.roll(block.number + 1);
        assertTrue(recompute.isActive(o), "active from the next block");
    }

    function test_register_units_succeeds() public balanced {
        address o = makeAddr("whale");
        uint256 slots = recompute.slotCount();
        _register(o, 3 * MIN_BOND + MIN_BOND / 2);
        assertEq(recompute.unitsOf(o), 3, "one unit per whole minBond");
        assertEq(recompute.slotCount(), slots + 3, "three slots");
        for (uint256 i; i < 3; ++i) {
            assertEq(recompute.slotOwner(slots + i), o, "slot owner");
        }
    }

    function test_register_maxUnits_succeeds() public balanced {
        address o = makeAddr("whale");
        uint256 slots = recompute.slotCount();
        vm.deal(o, 100 * MIN_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleRegistered(o, 100 * MIN_BOND, 64);
        vm.prank(o);
        recompute.register{value: 100 * MIN_BOND}();
        assertEq(recompute.unitsOf(o), 64, "capped at 64 units");
        assertEq(recompute.slotCount(), slots + 64, "64 slots");
        assertEq(recompute.bondOf(o), 100 * MIN_BOND, "whole bond kept");
    }

    function test_register_belowMinBond_reverts() public balanced {
        address o = makeAddr("newcomer");
        vm.deal(o, MIN_BOND);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleBondTooSmall.selector, MIN_BOND - 1, MIN_BOND));
        vm.prank(o);
        recompute.register{value: MIN_BOND - 1}();
    }

    function test_register_topUp_addsUnits_succeeds() public balanced {
        address o = oracles[0];
        uint256 slots = recompute.slotCount();
        vm.deal(o, 2 * MIN_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleRegistered(o, ORACLE_BOND + 2 * MIN_BOND, 3);
        vm.prank(o);
        recompute.register{value: 2 * MIN_BOND}();
        assertEq(recompute.unitsOf(o), 3, "units");
        assertEq(recompute.slotCount(), slots + 2, "two new slots");
        assertEq(recompute.slotOwner(slots), o, "new slot");
        assertEq(recompute.slotOwner(slots + 1), o, "new slot");
        assertTrue(recompute.isActive(o), "a top-up does not re-activate: its old slot still counts");
    }

    function test_register_topUpWithoutNewUnit_succeeds() public balanced {
        uint256 slots = recompute.slotCount();
        vm.deal(oracles[0], 1 ether);
        vm.prank(oracles[0]);
        recompute.register{value: 1 ether}();
        assertEq(recompute.unitsOf(oracles[0]), 1, "units");
        assertEq(recompute.slotCount(), slots, "no new slot");
        assertEq(recompute.bondOf(oracles[0]), ORACLE_BOND + 1 ether, "bond");
    }

    function test_register_slashedBelowMinBond_reverts() public balanced {
        address o = _silenceOnce(_silenceOnce(address(0))); // twice silent: 8 ether left
        uint256 bond = ORACLE_BOND - 2 * SILENCE_SLASH;
        assertEq(recompute.bondOf(o), bond, "bond");
        assertFalse(recompute.isActive(o), "below a unit");
        vm.deal(o, 1 ether);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleBondTooSmall.selector, 1 ether, MIN_BOND - bond)
        );
        vm.prank(o);
        recompute.register{value: 1 ether}();
    }

    function test_register_topUpAfterSlash_succeeds() public balanced {
        address o = _silenceOnce(_silenceOnce(address(0)));
        uint256 missing = MIN_BOND - recompute.bondOf(o);
        _register(o, missing);
        assertEq(recompute.bondOf(o), MIN_BOND, "bond");
        assertEq(recompute.unitsOf(o), 1, "its slot is reused");
        assertTrue(recompute.isActive(o), "active again");
    }

    /// @notice An exit is final until done: cancelling it (the old `register` after `requestExit`) would
    ///         change the oracle's eligibility for draws already requested.
    function test_register_afterRequestExit_reverts() public balanced {
        vm.prank(oracles[2]);
        recompute.requestExit();
        assertFalse(recompute.isActive(oracles[2]), "left");
        uint64 exitAt = uint64(block.timestamp) + EXIT_DELAY;
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleExitAlreadyRequested.selector, oracles[2], exitAt));
        vm.prank(oracles[2]);
        recompute.register();
    }

    function test_register_afterExit_reusesSlots_succeeds() public balanced {
        address o = oracles[1];
        _exit(o);
        assertEq(recompute.bondOf(o), 0, "bond out");
        assertFalse(recompute.isActive(o), "gone");
        uint256 slots = recompute.slotCount();
        _register(o, MIN_BOND);
        assertEq(recompute.slotCount(), slots, "no new slot: its old one is reused");
        assertEq(recompute.unitsOf(o), 1, "units");
        assertTrue(recompute.isActive(o), "back");
    }

    // ---------------------------------------------------------------- requestExit / exit

    function test_requestExit_registered_succeeds() public balanced {
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleExitRequested(oracles[1], block.timestamp + EXIT_DELAY);
        vm.prank(oracles[1]);
        recompute.requestExit();
        assertFalse(recompute.isActive(oracles[1]), "left");
        assertEq(recompute.bondOf(oracles[1]), ORACLE_BOND, "bond stays until exit");
        for (uint256 i; i < ORACLES; ++i) {
            if (i != 1) assertTrue(recompute.isActive(oracles[i]), "others stay");
        }
    }

    function test_requestExit_unregistered_reverts() public balanced {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotRegistered.selector, alice));
        vm.prank(alice);
        recompute.requestExit();
    }

    function test_requestExit_twice_reverts() public balanced {
        vm.prank(oracles[0]);
        recompute.requestExit();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleExitAlreadyRequested.selector, oracles[0], block.timestamp + EXIT_DELAY
            )
        );
        vm.prank(oracles[0]);
        recompute.requestExit();
    }

    function test_exit_afterDelay_succeeds() public balanced {
        address o = oracles[3];
        vm.prank(o);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleExited(o, ORACLE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(o, ORACLE_BOND);
        vm.prank(o);
        recompute.exit();
        assertEq(recompute.bondOf(o), 0, "bond");
        assertEq(recompute.creditOf(o), ORACLE_BOND, "credit");
        assertEq(recompute.totalBonds(), (ORACLES - 1) * ORACLE_BOND, "totalBonds");
        _withdraw(o);
        assertEq(o.balance, ORACLE_BOND, "paid");
    }

    function test_exit_notRequested_reverts() public balanced {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleExitNotRequested.selector, oracles[0]));
        vm.prank(oracles[0]);
        recompute.exit();
    }

    function test_exit_beforeDelay_reverts() public balanced {
        vm.prank(oracles[0]);
        recompute.requestExit();
        uint256 availableAt = block.timestamp + EXIT_DELAY;
        vm.warp(availableAt - 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleExitTooEarly.selector, oracles[0], availableAt, availableAt - 1
            )
        );
        vm.prank(oracles[0]);
        recompute.exit();
    }

    function test_exit_assignedOracle_reverts() public balanced {
        uint256 qid = _assigned();
        address assigned = _oracleOf(qid);
        vm.prank(assigned);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, assigned, 1));
        vm.prank(assigned);
        recompute.exit();
        // Having left future draws, it still answers; its duty ends with the question.
        vm.warp(block.timestamp - EXIT_DELAY);
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + EXIT_DELAY);
        recompute.settle(qid);
        vm.prank(assigned);
        recompute.exit();
        assertEq(recompute.creditOf(assigned), ORACLE_BOND, "bond credited");
    }

    function test_exit_answererUnderChallenge_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address answering = _oracleOf(qid);
        vm.prank(answering);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, answering, 1));
        vm.prank(answering);
        recompute.exit();
    }

    function test_exit_committeeMember_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[0];
        vm.prank(member);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, member, 1));
        vm.prank(member);
        recompute.exit();
        recompute.settle(qid); // its silence is slashed, its duty ends
        vm.prank(member);
        recompute.exit();
        assertEq(recompute.creditOf(member), ORACLE_BOND - SILENCE_SLASH, "rest of the bond credited");
    }

    // ---------------------------------------------------------------- ask

    function test_ask_boundGame_succeeds() public balanced {
        bytes32[] memory inputs = _outputs(42);
        uint64 deadline = uint64(block.timestamp) + WAIT_LIMIT;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAsked(1, game, PROGRAM, NODE, inputs);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(1, 1, deadline);
        vm.prank(game);
        uint256 qid = recompute.ask(PROGRAM, NODE, inputs, [alice, bob]);
        assertEq(qid, 1, "first id");
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(q.programHash, PROGRAM, "programHash");
        assertEq(q.node, NODE, "node");
        assertEq(q.inputsHash, sha256(abi.encodePacked(inputs)), "inputsHash");
        assertEq(q.parties[0], alice, "party 0");
        assertEq(q.parties[1], bob, "party 1");
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "status");
        assertEq(q.attempts, 0, "attempts");
        assertEq(q.round, 0, "round");
        assertEq(q.oracle, address(0), "no oracle yet");
        assertEq(q.deadline, deadline, "draw deadline");
        assertEq(q.requestBlock, block.number, "request block");
        assertEq(q.requestId, 1, "request id");
        assertEq(q.slotCount, ORACLES, "slots counted");
        assertFalse(recompute.drawReady(qid), "randomness not readable yet");
        assertEq(_ask(), 2, "second id");
    }

    function test_ask_notGame_reverts() public balanced {
        bytes32[] memory inputs = _outputs(42);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotGame.selector, address(this), game));
        recompute.ask(PROGRAM, NODE, inputs, [alice, bob]);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotGame.selector, oracles[0], game));
        vm.prank(oracles[0]);
        recompute.ask(PROGRAM, NODE, inputs, [alice, bob]);
    }

    function test_ask_unbound_reverts() public {
        RecomputeOracle o = OracleSetup.deploy(_params());
        bytes32[] memory inputs = _outputs(42);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotGame.selector, game, address(0)));
        vm.prank(game);
        o.ask(PROGRAM, NODE, inputs, [alice, bob]);
    }

    // ---------------------------------------------------------------- draw: randomness

    function test_draw_randomnessPending_reverts() public balanced {
        uint256 qid = _ask();
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRandomnessPending.selector, qid, 1));
        recompute.draw(qid);
        vm.roll(block.number + 1); // the target block: its hash is not known inside it
        assertFalse(recompute.drawReady(qid), "pending in the target block");
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRandomnessPending.selector, qid, 1));
        recompute.draw(qid);
        vm.roll(block.number + 1);
        assertTrue(recompute.drawReady(qid), "readable after the target block");
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "assigned");
    }

    function test_draw_assignsOracle_succeeds() public balanced {
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        (address[] memory picks, uint256 found) = OracleSetup.sample(recompute, qid, NEED, new address[](0));
        assertEq(found, NEED, "enough oracles");
        uint64 deadline = uint64(block.timestamp) + ANSWER_WINDOW;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAssigned(qid, picks[0], deadline);
        recompute.draw(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Assigned), "status");
        assertEq(q.oracle, picks[0], "the first pick answers");
        assertEq(q.attempts, 1, "attempts");
        assertEq(q.deadline, deadline, "answer deadline");
        assertFalse(recompute.drawReady(qid), "no draw pending");
    }

    /// @dev The answering oracle and the committee are what the documented sampler gives for the
    ///      target block's hash, whatever it is.
    function testFuzz_draw_followsSeed_succeeds(bytes32 answererHash, bytes32 committeeHash) public balanced {
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), answererHash);
        (address[] memory picks,) = OracleSetup.sample(recompute, qid, NEED, new address[](0));
        recompute.draw(qid);
        assertEq(_oracleOf(qid), picks[0], "answering oracle");
        _answer(qid, _outputs(1));
        _challenge(qid);
        vm.roll(block.number + 2);
        vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), committeeHash);
        address[] memory excluded = new address[](2);
        excluded[0] = _oracleOf(qid);
        excluded[1] = challenger;
        (address[] memory members, uint256 found) =
            OracleSetup.sample(recompute, qid, COMMITTEE_SIZE, excluded);
        assertEq(found, COMMITTEE_SIZE, "found");
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.CommitteeSeated(
            qid, 1, members, uint64(block.timestamp) + VOTE_WINDOW, uint64(block.timestamp) + 2 * VOTE_WINDOW
        );
        recompute.draw(qid);
        assertEq(recompute.committeeOf(qid), members, "committee");
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Voting), "voting");
        assertEq(q.round, 1, "round");
        assertEq(q.commitDeadline, block.timestamp + VOTE_WINDOW, "commit deadline");
        assertEq(q.deadline, block.timestamp + 2 * VOTE_WINDOW, "reveal deadline");
    }

    function test_draw_sameSeedAnyBlock_succeeds() public balanced {
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256("chain"));
        uint256 snapshot = vm.snapshotState();
        recompute.draw(qid);
        address first = _oracleOf(qid);
        for (uint256 k = 1; k < 40; ++k) {
            vm.revertToState(snapshot);
            vm.roll(block.number + k * 6); // within the 256 blocks the hash stays readable
            vm.prevrandao(keccak256(abi.encode("randao", k)));
            vm.setBlockhash(block.number - 1, keccak256(abi.encode("parent", k)));
            vm.warp(block.timestamp + k);
            recompute.draw(qid);
            assertEq(_oracleOf(qid), first, "the draw does not depend on when it is made");
        }
    }

    function test_draw_expiredRandomness_requestsAgain_succeeds() public balanced {
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        vm.roll(block.number + 2 + 256); // the target block's hash is forgotten
        assertEq(
            uint8(recompute.randomness().statusOf(1)), uint8(IRandomness.RequestStatus.Expired), "expired"
        );
        assertTrue(recompute.drawReady(qid), "ready to be requested again");
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, 2, deadline);
        recompute.draw(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "still drawing");
        assertEq(q.requestId, 2, "new request");
        assertEq(q.requestBlock, block.number, "new request block");
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "assigned");
    }

    function test_draw_expiredAfterDeadline_abandons_succeeds() public balanced {
        uint256 qid = _ask();
        vm.roll(block.number + 2 + 256);
        vm.warp(block.timestamp + WAIT_LIMIT + 1);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
    }

    function test_draw_wrongStatus_reverts() public balanced {
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, 1, IRecomputeOracle.QuestionStatus.None
            )
        );
        recompute.draw(1);
        uint256 qid = _assigned();
        vm.roll(block.number + 2);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Assigned
            )
        );
        recompute.draw(qid);
    }

    // ---------------------------------------------------------------- draw: who is eligible

    function test_draw_registeredInRequestBlock_notDrawn_succeeds() public balanced {
        _reset(NEED - 1);
        address late = makeAddr("late");
        vm.deal(late, MIN_BOND);
        vm.prank(late);
        recompute.register{value: MIN_BOND}(); // in the block of the request, before it
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "too few without it");
        // Counted for the draw requested again, a block after it registered.
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "counted now");
    }

    function test_draw_registeredAfterRequest_notDrawn_succeeds() public balanced {
        _reset(NEED - 1);
        uint256 qid = _ask();
        vm.roll(block.number + 1);
        _register(makeAddr("late"), MIN_BOND); // between the request and the draw
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "not counted");
    }

    /// @dev An oracle holding 24 of 32 stake units, registered (or re-activated by a deposit) in or
    ///      after the request block of a question, is never drawn for it; it would be drawn 3 times
    ///      in 4 if it counted, as it is for the next question.
    function test_draw_lateWhale_neverDrawn_succeeds() public balanced {
        uint256 drawnLater;
        for (uint256 i; i < 12; ++i) {
            address whale = makeAddr(string.concat("whale", vm.toString(i)));
            vm.deal(whale, 24 * MIN_BOND);
            uint256 qid;
            if (i % 2 == 0) {
                vm.prank(whale);
                recompute.register{value: 24 * MIN_BOND}();
                qid = _ask(); // same block
            } else {
                qid = _ask();
                vm.roll(block.number + 1);
                vm.prank(whale);
                recompute.register{value: 24 * MIN_BOND}();
            }
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("late", i)));
            assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "drawn");
            assertTrue(_oracleOf(qid) != whale, "a late registrant is never drawn");
            // The next question, asked a block later, counts it.
            uint256 next = _ask();
            OracleSetup.drawWith(recompute, next, keccak256(abi.encode("next", i)));
            if (_oracleOf(next) == whale) ++drawnLater;
        }
        assertGe(drawnLater, 3, "counted once registered before the request");
    }

    function test_draw_exitRequestedBeforeRequest_excluded_succeeds() public balanced {
        _reset(NEED);
        vm.prank(oracles[0]);
        recompute.requestExit();
        vm.roll(block.number + 1);
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "too few without it");
    }

    function test_draw_exitRequestedAfterRequest_counted_succeeds() public balanced {
        _reset(NEED);
        uint256 qid = _ask();
        vm.prank(oracles[0]);
        recompute.requestExit(); // same block, after the request
        vm.roll(block.number + 1);
        vm.prank(oracles[1]);
        recompute.requestExit(); // a block later
        vm.roll(block.number + 1);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "both still counted");
    }

    /// @notice A top-up after the request neither adds to nor removes from the pending draw: the old
    ///         slot still counts (no self-removal to force a re-roll), the new one does not.
    function test_draw_topUpAfterRequest_unchanged_succeeds() public balanced {
        _reset(NEED);
        uint256 qid = _ask();
        vm.roll(block.number + 1);
        vm.deal(oracles[0], MIN_BOND);
        vm.prank(oracles[0]);
        recompute.register{value: MIN_BOND}();
        assertEq(recompute.question(qid).slotCount, NEED, "the draw samples the slots of its request");
        assertEq(recompute.slotCount(), NEED + 1, "a new slot");
        vm.roll(block.number + 1);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "still counted");
    }

    function test_draw_topUpReactivates_succeeds() public balanced {
        _reset(NEED);
        // Twice silent: below a unit.
        address o = _silenceOnce(_silenceOnce(address(0)));
        assertLt(recompute.bondOf(o), MIN_BOND, "below a unit");
        uint256 qid = _ask();
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "not counted");
        _register(o, MIN_BOND - recompute.bondOf(o));
        assertTrue(recompute.isActive(o), "active");
        OracleSetup.drawNow(recompute, qid); // the request made by the last draw predates the top-up
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "not for that request");
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "counted again");
    }

    function test_draw_tooFewOracles_waits_succeeds() public balanced {
        _reset(NEED - 1);
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        vm.roll(block.number + 2);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, 2, deadline);
        recompute.draw(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "status");
        assertEq(q.deadline, deadline, "the deadline does not move");
        assertEq(q.attempts, 0, "no attempt spent");
        // Until its deadline it keeps waiting...
        vm.warp(deadline);
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "waits at the deadline");
        // ... and one more oracle makes the draw succeed.
        _register(makeAddr("fifth"), MIN_BOND);
        OracleSetup.drawNow(recompute, qid); // requested in the block it registered in: not counted
        vm.warp(deadline); // time stands still while blocks are mined
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "assigned");
    }

    function test_draw_tooFewAfterDeadline_abandons_succeeds() public balanced {
        _reset(NEED - 1);
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline + 1);
        vm.roll(block.number + 2);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.draw(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "status");
        assertEq(outputsHash, bytes32(0), "no answer");
    }

    function test_draw_noOracles_abandons_succeeds() public balanced {
        RecomputeOracle o = OracleSetup.deploy(_params());
        o.bindGame(game);
        recompute = o;
        uint256 qid = _ask();
        assertEq(recompute.question(qid).slotCount, 0, "no slots");
        vm.warp(block.timestamp + WAIT_LIMIT + 1);
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
    }

    function test_draw_partiesNeverDrawn_succeeds() public balanced {
        _register(alice, 8 * MIN_BOND); // the parties hold two thirds of the stake
        _register(bob, 8 * MIN_BOND);
        for (uint256 i; i < 20; ++i) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("parties", i)));
            address answering = _oracleOf(qid);
            assertTrue(answering != alice && answering != bob, "a party never answers");
            _answer(qid, _outputs(1));
            _challenge(qid);
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("committee", i)));
            address[] memory members = recompute.committeeOf(qid);
            for (uint256 j; j < members.length; ++j) {
                assertTrue(members[j] != alice && members[j] != bob, "a party never votes");
                assertTrue(members[j] != answering, "the answering oracle never votes");
            }
        }
    }

    function test_draw_onlyPartiesBesidesTooFew_waits_succeeds() public balanced {
        _reset(NEED - 1);
        _register(alice, MIN_BOND);
        _register(bob, MIN_BOND);
        uint256 qid = _ask();
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Drawing), "parties do not count");
    }

    function test_draw_challengerNeverSeated_succeeds() public balanced {
        for (uint256 i; i < 12; ++i) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("a", i)));
            _answer(qid, _outputs(1));
            address c =
                oracles[i % ORACLES] == _oracleOf(qid) ? oracles[(i + 1) % ORACLES] : oracles[i % ORACLES];
            OracleSetup.challengeNow(recompute, qid, c); // an oracle challenges
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("c", i)));
            assertFalse(OracleSetup.contains(recompute.committeeOf(qid), c), "the challenger never votes");
        }
    }

    /// @dev An oracle with 3 stake units is drawn about 3 times as often as one with 1: over 300
    ///      questions with pseudo-random target hashes, 3/7 of the draws (128.6, sd 8.6) against 1/7
    ///      (42.9, sd 6.1) for each of the four 1-unit oracles.
    function test_draw_stakeWeighted_succeeds() public balanced {
        _reset(NEED - 1);
        address heavy = makeAddr("heavy");
        _register(heavy, 3 * MIN_BOND);
        assertEq(recompute.unitsOf(heavy), 3, "three units");
        uint256 heavyCount;
        uint256[] memory lightCount = new uint256[](NEED - 1);
        for (uint256 i; i < 300; ++i) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("stake", i)));
            address a = _oracleOf(qid);
            if (a == heavy) ++heavyCount;
            for (uint256 j; j < oracles.length; ++j) {
                if (a == oracles[j]) ++lightCount[j];
            }
        }
        uint256 light;
        for (uint256 j; j < lightCount.length; ++j) {
            assertGe(lightCount[j], 20, "a 1-unit oracle is drawn about 43 times");
            assertLe(lightCount[j], 70, "a 1-unit oracle is drawn about 43 times");
            light += lightCount[j];
        }
        assertEq(heavyCount + light, 300, "every draw is one of them");
        assertGe(heavyCount, 100, "the 3-unit oracle is drawn about 129 times");
        assertLe(heavyCount, 160, "the 3-unit oracle is drawn about 129 times");
        // Per unit held, the same rate: heavy / 3 against the mean light oracle (ratio 1, sd 0.13).
        assertGe(heavyCount * 4 * 10, light * 3 * 6, "heavy per unit >= 0.6 light");
        assertLe(heavyCount * 4 * 10, light * 3 * 15, "heavy per unit <= 1.5 light");
    }

    /// @dev A slot counts only while its owner's bond covers its unit: an oracle with 2 units slashed
    ///      below 2 * minBond is drawn at its 1-unit rate.
    function test_draw_uncoveredUnit_notDrawn_succeeds() public balanced {
        _reset(NEED);
        address o = oracles[0];
        vm.deal(o, MIN_BOND - SILENCE_SLASH);
        vm.prank(o);
        recompute.register{value: MIN_BOND - SILENCE_SLASH}(); // 2 * minBond: two units
        vm.roll(block.number + 1);
        assertEq(recompute.unitsOf(o), 2, "two units");
        // One silence: the bond covers one unit; the oracle still counts (for the whole draw).
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        uint256 tries;
        while (true) {
            vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("o", tries++)));
            (address[] memory picks,) = OracleSetup.sample(recompute, qid, NEED, new address[](0));
            if (picks[0] == o) break;
        }
        recompute.draw(qid);
        assertEq(_oracleOf(qid), o, "drawn");
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        assertEq(recompute.bondOf(o), 2 * MIN_BOND - SILENCE_SLASH, "slashed");
        assertTrue(recompute.isActive(o), "still active");
        // A draw whose first try hits its second slot (index 5) skips it: another oracle answers.
        uint256 next = _ask();
        vm.roll(block.number + 2);
        address[] memory expected;
        for (uint256 i;; ++i) {
            vm.setBlockhash(OracleSetup.targetBlock(recompute, next), keccak256(abi.encode("n", i)));
            bytes32 seed = OracleSetup.seedOf(recompute, next);
            if (uint256(keccak256(abi.encode(seed, uint256(0)))) % 6 != 5) continue;
            (expected,) = OracleSetup.sample(recompute, next, NEED, new address[](0));
            if (expected[0] != o) break; // counting slot 5, the first try would have drawn o
        }
        recompute.draw(next);
        assertEq(_oracleOf(next), expected[0], "the sampler's pick");
        assertTrue(_oracleOf(next) != o, "the uncovered slot does not count");
    }

    // ---------------------------------------------------------------- answer

    function test_answer_assignedOracle_succeeds() public balanced {
        uint256 qid = _assigned();
        address assigned = _oracleOf(qid);
        bytes32[] memory outputs = _outputs(1);
        uint64 challengeDeadline = uint64(block.timestamp) + CHALLENGE_WINDOW;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAnswered(qid, assigned, truth, outputs, challengeDeadline);
        vm.prank(assigned);
        recompute.answer(qid, outputs);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Answered), "status");
        assertEq(q.outputsHash, truth, "outputsHash");
        assertEq(q.deadline, challengeDeadline, "challenge deadline");
        (IRecomputeOracle.QuestionStatus status, bytes32 result) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Answered), "result status");
        assertEq(result, bytes32(0), "not final yet");
    }

    function test_answer_atDeadline_succeeds() public balanced {
        uint256 qid = _assigned();
        vm.warp(recompute.question(qid).deadline);
        _answer(qid, _outputs(1));
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Answered), "answered");
    }

    function test_answer_notAssignedOracle_reverts() public balanced {
        uint256 qid = _assigned();
        address assigned = _oracleOf(qid);
        bytes32[] memory outputs = _outputs(1);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleNotAssignedOracle.selector, qid, alice, assigned)
        );
        vm.prank(alice);
        recompute.answer(qid, outputs);
    }

    function test_answer_afterDeadline_reverts() public balanced {
        uint256 qid = _assigned();
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline + 1);
        bytes32[] memory outputs = _outputs(1);
        address assigned = _oracleOf(qid);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlinePassed.selector, qid, deadline, deadline + 1)
        );
        vm.prank(assigned);
        recompute.answer(qid, outputs);
    }

    function test_answer_drawing_reverts() public balanced {
        uint256 qid = _ask();
        bytes32[] memory outputs = _outputs(1);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Drawing
            )
        );
        vm.prank(oracles[0]);
        recompute.answer(qid, outputs);
    }

    function test_answer_twice_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        bytes32[] memory outputs = _outputs(2);
        address assigned = _oracleOf(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(assigned);
        recompute.answer(qid, outputs);
    }

    function test_answer_unavailable_succeeds() public balanced {
        uint256 qid = _answered(OracleSetup.unavailable());
        assertEq(recompute.question(qid).outputsHash, unavailable, "UNAVAILABLE posted");
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 result) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(result, unavailable, "unchallenged, UNAVAILABLE is the final answer");
    }

    // ---------------------------------------------------------------- reassign

    function test_reassign_silentOracle_succeeds() public balanced {
        uint256 qid = _assigned();
        address silent = _oracleOf(qid);
        vm.warp(recompute.question(qid).deadline + 1);
        uint256 requestId = recompute.question(qid).requestId;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(silent, qid, SILENCE_SLASH);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(SILENCE_SLASH);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, requestId + 1, uint64(block.timestamp) + WAIT_LIMIT);
        vm.prank(alice); // anyone
        recompute.reassign(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Drawing), "drawing again");
        assertEq(q.attempts, 1, "one attempt spent");
        assertEq(recompute.bondOf(silent), ORACLE_BOND - SILENCE_SLASH, "slashed");
        assertEq(recompute.totalBurnt(), SILENCE_SLASH, "burnt");
        assertTrue(recompute.isActive(silent), "still covers a unit: stays eligible");
        OracleSetup.drawNow(recompute, qid);
        q = recompute.question(qid);
        assertEq(q.attempts, 2, "second attempt");
        assertTrue(q.oracle != silent, "another oracle");
        // Its duty ended: it can leave once the delay passed.
        vm.prank(silent);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.prank(silent);
        recompute.exit();
    }

    function test_reassign_triedOracleNotDrawnAgain_succeeds() public balanced {
        for (uint256 i; i < 10; ++i) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("first", i)));
            address silent = _oracleOf(qid);
            vm.warp(block.timestamp + ANSWER_WINDOW + 1);
            recompute.reassign(qid);
            vm.roll(block.number + 2);
            vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("second", i)));
            address[] memory tried = new address[](1);
            tried[0] = silent;
            (address[] memory picks,) = OracleSetup.sample(recompute, qid, NEED, tried);
            recompute.draw(qid);
            assertEq(_oracleOf(qid), picks[0], "the sampler skips the tried oracle");
            assertTrue(_oracleOf(qid) != silent, "not drawn again");
            _register(silent, SILENCE_SLASH); // keep its unit covered
        }
    }

    function test_reassign_triedOracleLeavesTooFew_waits_succeeds() public balanced {
        _reset(NEED);
        uint256 qid = _assigned();
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        OracleSetup.drawNow(recompute, qid);
        assertEq(
            uint8(_status(qid)),
            uint8(IRecomputeOracle.QuestionStatus.Drawing),
            "4 untried oracles are too few"
        );
    }

    function test_reassign_silentStaysEligible_succeeds() public balanced {
        _reset(NEED + 1);
        uint256 qid = _assigned();
        address silent = _oracleOf(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        // One other oracle leaves: the next question can be drawn only if the slashed one counts.
        address leaver = oracles[0] == silent ? oracles[1] : oracles[0];
        vm.prank(leaver);
        recompute.requestExit();
        vm.roll(block.number + 1);
        uint256 next = _ask();
        OracleSetup.drawNow(recompute, next);
        assertEq(
            uint8(_status(next)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "the slashed oracle counts"
        );
    }

    function test_reassign_beforeDeadline_reverts() public balanced {
        uint256 qid = _assigned();
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, deadline)
        );
        recompute.reassign(qid);
    }

    function test_reassign_notAssigned_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        recompute.reassign(qid);
        uint256 drawing = _ask();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, drawing, IRecomputeOracle.QuestionStatus.Drawing
            )
        );
        recompute.reassign(drawing);
    }

    function test_reassign_maxAttempts_abandons_succeeds() public balanced {
        uint256 qid = _assigned();
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        OracleSetup.drawNow(recompute, qid);
        address second = _oracleOf(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(second, qid, SILENCE_SLASH);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.reassign(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(q.attempts, MAX_ATTEMPTS, "attempts");
        assertEq(recompute.totalBurnt(), 2 * SILENCE_SLASH, "both silences burnt");
    }

    // ---------------------------------------------------------------- challenge

    function test_challenge_answered_succeeds() public balanced {
        uint256 qid = _answered(_outputs(1));
        uint256 requestId = recompute.question(qid).requestId;
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.AnswerChallenged(qid, challenger);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, requestId + 1, uint64(block.timestamp) + WAIT_LIMIT);
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "status");
        assertEq(q.challenger, challenger, "challenger");
        assertEq(recompute.totalChallengeBonds(), CHALLENGE_BOND, "challenge bond held");
        assertEq(recompute.committeeOf(qid).length, 0, "no committee before the draw");
        OracleSetup.drawNow(recompute, qid);
        assertEq(recompute.committeeOf(qid).length, COMMITTEE_SIZE, "seated");
    }

    function test_challenge_atDeadline_succeeds() public balanced {
        uint256 qid = _answered(_outputs(1));
        vm.warp(recompute.question(qid).deadline);
        _challenge(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "challenged");
    }

    function test_challenge_wrongBond_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        vm.deal(challenger, 2 * CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongChallengeBond.selector, CHALLENGE_BOND - 1, CHALLENGE_BOND
            )
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND - 1}(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongChallengeBond.selector, CHALLENGE_BOND + 1, CHALLENGE_BOND
            )
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND + 1}(qid);
    }

    function test_challenge_afterDeadline_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline + 1);
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlinePassed.selector, qid, deadline, deadline + 1)
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function test_challenge_answeringOracle_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        address answering = _oracleOf(qid);
        vm.deal(answering, CHALLENGE_BOND);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleSelfChallenge.selector, qid, answering));
        vm.prank(answering);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function test_challenge_notAnswered_reverts() public balanced {
        uint256 qid = _assigned();
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Assigned
            )
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
        _answer(qid, _outputs(1));
        _challenge(qid);
        vm.deal(alice, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.CommitteeDrawing
            )
        );
        vm.prank(alice);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function test_draw_committeeTooFew_waits_succeeds() public balanced {
        _reset(NEED);
        uint256 qid = _answered(_outputs(1));
        _leaveAllBut(qid, 2); // two oracles besides the answering one stay
        _challenge(qid);
        uint64 deadline = recompute.question(qid).deadline;
        uint256 requestId = recompute.question(qid).requestId;
        vm.roll(block.number + 2);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, requestId + 1, deadline);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "waits");
        _register(makeAddr("third"), MIN_BOND);
        OracleSetup.drawNow(recompute, qid);
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Voting), "seated once enough");
    }

    function test_draw_committeeTooFewAfterDeadline_abandonsRefunds_succeeds() public balanced {
        _reset(NEED);
        uint256 qid = _answered(_outputs(1));
        address answering = _oracleOf(qid);
        _leaveAllBut(qid, 2);
        _challenge(qid);
        vm.warp(recompute.question(qid).deadline + 1);
        vm.roll(block.number + 2);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, CHALLENGE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "challenge bond refunded");
        assertEq(recompute.totalChallengeBonds(), 0, "no challenge bond held");
        assertEq(recompute.bondOf(answering), ORACLE_BOND, "the answering oracle keeps its bond");
        _exitNow(answering); // its duty ended
    }

    // ---------------------------------------------------------------- commitVote

    function test_commitVote_member_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[1];
        bytes32 c = OracleSetup.commitment(qid, member, truth, "salt");
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.VoteCommitted(qid, member, c);
        vm.prank(member);
        recompute.commitVote(qid, c);
    }

    function test_commitVote_atCommitDeadline_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        vm.warp(recompute.question(qid).commitDeadline);
        OracleSetup.commitNow(recompute, qid, _round(qid)[0], truth, "salt");
    }

    function test_commitVote_notSeated_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address answering = _oracleOf(qid);
        address outsider = _notSeated(qid);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, outsider));
        vm.prank(outsider);
        recompute.commitVote(qid, bytes32("c"));
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, answering));
        vm.prank(answering);
        recompute.commitVote(qid, bytes32("c"));
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, challenger));
        vm.prank(challenger);
        recompute.commitVote(qid, bytes32("c"));
    }

    function test_commitVote_twice_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[0];
        OracleSetup.commitNow(recompute, qid, member, truth, "salt");
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleAlreadyCommitted.selector, qid, member));
        vm.prank(member);
        recompute.commitVote(qid, bytes32("again"));
    }

    function test_commitVote_afterCommitDeadline_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        uint64 commitDeadline = recompute.question(qid).commitDeadline;
        vm.warp(commitDeadline + 1);
        address member = _round(qid)[0];
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleDeadlinePassed.selector, qid, commitDeadline, commitDeadline + 1
            )
        );
        vm.prank(member);
        recompute.commitVote(qid, bytes32("late"));
    }

    function test_commitVote_notVoting_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        _challenge(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.CommitteeDrawing
            )
        );
        vm.prank(oracles[0]);
        recompute.commitVote(qid, bytes32("c"));
    }

    function test_commitVote_earlierRoundMember_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address first = _round(qid)[0];
        _vote3(qid, truth, lie, other); // no majority
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        assertEq(recompute.question(qid).round, 2, "round 2");
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, first));
        vm.prank(first);
        recompute.commitVote(qid, bytes32("c"));
    }

    // ---------------------------------------------------------------- revealVote

    function test_revealVote_afterCommitPhase_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[0];
        OracleSetup.commitNow(recompute, qid, member, truth, "salt");
        vm.warp(recompute.question(qid).commitDeadline + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.VoteRevealed(qid, member, truth);
        OracleSetup.revealNow(recompute, qid, member, truth, "salt");
    }

    function test_revealVote_allCommitted_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        for (uint256 i; i < m.length; ++i) {
            OracleSetup.commitNow(recompute, qid, m[i], truth, bytes32(i));
        }
        OracleSetup.revealNow(recompute, qid, m[0], truth, bytes32(0)); // at once: nothing left to copy
    }

    function test_revealVote_tooEarly_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        OracleSetup.commitNow(recompute, qid, m[0], truth, "salt");
        OracleSetup.commitNow(recompute, qid, m[1], truth, "salt");
        uint64 commitDeadline = recompute.question(qid).commitDeadline;
        vm.warp(commitDeadline);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleRevealTooEarly.selector, qid, commitDeadline, commitDeadline
            )
        );
        vm.prank(m[0]);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_mismatch_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        OracleSetup.commitNow(recompute, qid, m[0], truth, "salt");
        vm.warp(recompute.question(qid).commitDeadline + 1);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRevealMismatch.selector, qid, m[0]));
        vm.prank(m[0]);
        recompute.revealVote(qid, lie, "salt"); // another vote
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRevealMismatch.selector, qid, m[0]));
        vm.prank(m[0]);
        recompute.revealVote(qid, truth, "pepper"); // another salt
    }

    function test_revealVote_copiedCommitment_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        bytes32 c = OracleSetup.commitment(qid, m[0], truth, "salt");
        vm.prank(m[0]);
        recompute.commitVote(qid, c);
        vm.prank(m[1]);
        recompute.commitVote(qid, c); // copied
        vm.warp(recompute.question(qid).commitDeadline + 1);
        OracleSetup.revealNow(recompute, qid, m[0], truth, "salt");
        // Even knowing the vote and the salt, the copier cannot open a commitment bound to m[0].
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleRevealMismatch.selector, qid, m[1]));
        vm.prank(m[1]);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_notCommitted_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[2];
        vm.warp(recompute.question(qid).commitDeadline + 1);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitted.selector, qid, member));
        vm.prank(member);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_twice_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[0];
        OracleSetup.commitNow(recompute, qid, member, truth, "salt");
        vm.warp(recompute.question(qid).commitDeadline + 1);
        OracleSetup.revealNow(recompute, qid, member, truth, "salt");
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleAlreadyRevealed.selector, qid, member));
        vm.prank(member);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_notSeated_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address outsider = _notSeated(qid);
        vm.warp(recompute.question(qid).commitDeadline + 1);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, outsider));
        vm.prank(outsider);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_afterDeadline_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address member = _round(qid)[0];
        OracleSetup.commitNow(recompute, qid, member, truth, "salt");
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline + 1);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlinePassed.selector, qid, deadline, deadline + 1)
        );
        vm.prank(member);
        recompute.revealVote(qid, truth, "salt");
    }

    function test_revealVote_notVoting_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(oracles[0]);
        recompute.revealVote(qid, truth, "salt");
    }

    // ---------------------------------------------------------------- settle: unchallenged

    function test_settle_unchallenged_succeeds() public balanced {
        uint256 qid = _answered(_outputs(1));
        address answering = _oracleOf(qid);
        vm.warp(recompute.question(qid).deadline + 1);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, truth);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 result) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(result, truth, "the answer is final");
        assertEq(recompute.bondOf(answering), ORACLE_BOND, "bond untouched");
        _exitNow(answering); // its duty ended
    }

    function test_settle_beforeChallengeDeadline_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, deadline)
        );
        recompute.settle(qid);
    }

    function test_settle_votingBeforeDeadline_reverts() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        OracleSetup.commitNow(recompute, qid, m[0], truth, "s");
        OracleSetup.commitNow(recompute, qid, m[1], truth, "s");
        vm.warp(recompute.question(qid).commitDeadline + 1);
        OracleSetup.revealNow(recompute, qid, m[0], truth, "s");
        OracleSetup.revealNow(recompute, qid, m[1], truth, "s"); // a majority, not everyone
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, deadline)
        );
        recompute.settle(qid);
        vm.warp(deadline + 1);
        recompute.settle(qid);
        assertEq(
            uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Final), "final after the deadline"
        );
    }

    function test_settle_allRevealed_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        _vote3(qid, truth, truth, truth);
        recompute.settle(qid); // before any deadline
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
    }

    function test_settle_wrongStatus_reverts() public balanced {
        uint256 qid = _ask();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Drawing
            )
        );
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Assigned
            )
        );
        recompute.settle(qid);
        _answer(qid, _outputs(1));
        _challenge(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.CommitteeDrawing
            )
        );
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        _vote3(qid, truth, truth, truth);
        recompute.settle(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Final
            )
        );
        recompute.settle(qid);
    }

    // ---------------------------------------------------------------- settle: challenged

    function test_settle_challengeUpheld_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address answering = _oracleOf(qid);
        address[] memory m = _round(qid);
        _vote3(qid, truth, truth, truth);
        uint256 reward = CHALLENGE_BOND / 2;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.ChallengerSlashed(challenger, qid, CHALLENGE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(answering, reward);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(CHALLENGE_BOND - reward);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, truth);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 result) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(result, truth, "upheld");
        assertEq(recompute.creditOf(answering), reward, "half the challenge bond to the oracle");
        assertEq(recompute.creditOf(challenger), 0, "the challenger loses its bond");
        assertEq(recompute.totalBurnt(), CHALLENGE_BOND - reward, "the other half burnt");
        assertEq(recompute.totalChallengeBonds(), 0, "no challenge bond held");
        assertEq(recompute.bondOf(answering), ORACLE_BOND, "answering bond untouched");
        for (uint256 i; i < m.length; ++i) {
            assertEq(recompute.bondOf(m[i]), ORACLE_BOND, "agreeing members untouched");
            _exitNow(m[i]); // their duties ended
        }
        _payFee(qid);
        assertEq(recompute.creditOf(answering), reward + FEE, "the fee goes to the answering oracle");
    }

    function test_settle_challengeOverturned_succeeds() public balanced {
        uint256 qid = _seated(_outputs(2)); // a lie
        address answering = _oracleOf(qid);
        address[] memory m = _round(qid);
        _vote3(qid, truth, truth, truth);
        uint256 reward = ORACLE_BOND / 2;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(answering, qid, ORACLE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, reward + CHALLENGE_BOND);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(ORACLE_BOND - reward);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, truth);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "the majority's answer is final");
        assertEq(recompute.bondOf(answering), 0, "the whole bond slashed");
        assertFalse(recompute.isActive(answering), "no unit left");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND + reward, "bond back plus half the slash");
        assertEq(recompute.totalBurnt(), ORACLE_BOND - reward, "the other half burnt");
        // The fee is split among the three majority voters, the remainder to the first seated.
        vm.deal(payer, FEE);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.FeePaid(qid, payer, FEE);
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
        assertEq(recompute.creditOf(m[0]), FEE / 3 + FEE % 3, "first voter: share + remainder");
        assertEq(recompute.creditOf(m[1]), FEE / 3, "share");
        assertEq(recompute.creditOf(m[2]), FEE / 3, "share");
        assertGt(FEE % 3, 0, "the split leaves a remainder");
        assertEq(recompute.creditOf(answering), 0, "nothing for the overturned oracle");
    }

    function test_settle_dissenterSlashed_succeeds() public balanced {
        uint256 qid = _seated(_outputs(2));
        address[] memory m = _round(qid);
        _vote3(qid, truth, lie, truth); // m[1] sides with the lie
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(m[1], qid, ORACLE_BOND);
        recompute.settle(qid);
        assertEq(recompute.bondOf(m[1]), 0, "the dissenter loses its whole bond");
        assertEq(recompute.bondOf(m[0]), ORACLE_BOND, "majority untouched");
        assertEq(recompute.bondOf(m[2]), ORACLE_BOND, "majority untouched");
        _payFee(qid);
        assertEq(recompute.creditOf(m[0]), FEE / 2 + FEE % 2, "fee split between the two voters");
        assertEq(recompute.creditOf(m[2]), FEE / 2, "fee split between the two voters");
        assertEq(recompute.creditOf(m[1]), 0, "nothing for the dissenter");
    }

    function test_settle_upheldDissenterSlashed_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        _vote3(qid, lie, truth, truth);
        recompute.settle(qid);
        assertEq(recompute.bondOf(m[0]), 0, "the dissenter loses its whole bond");
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "upheld");
    }

    function test_settle_nonRevealerSlashed_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        for (uint256 i; i < 3; ++i) {
            OracleSetup.commitNow(recompute, qid, m[i], truth, bytes32(i));
        }
        OracleSetup.revealNow(recompute, qid, m[0], truth, bytes32(uint256(0)));
        OracleSetup.revealNow(recompute, qid, m[1], truth, bytes32(uint256(1))); // m[2] never reveals
        vm.warp(recompute.question(qid).deadline + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(m[2], qid, SILENCE_SLASH);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(SILENCE_SLASH);
        recompute.settle(qid);
        assertEq(recompute.bondOf(m[2]), ORACLE_BOND - SILENCE_SLASH, "silence costs silenceSlash");
        assertTrue(recompute.isActive(m[2]), "its bond still covers a unit: it stays eligible");
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "two of three decide");
        _exitNow(m[2]); // its duty ended
    }

    function test_settle_noMajority_drawsNewRound_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory first = _round(qid);
        _vote3(qid, truth, lie, other);
        uint256 requestId = recompute.question(qid).requestId;
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.RoundFailed(qid, 1);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.DrawRequested(qid, requestId + 1, uint64(block.timestamp) + WAIT_LIMIT);
        recompute.settle(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "a new draw");
        assertEq(recompute.totalChallengeBonds(), CHALLENGE_BOND, "the challenge stands");
        for (uint256 i; i < 3; ++i) {
            assertEq(recompute.bondOf(first[i]), ORACLE_BOND, "no slash while undecided");
        }
        OracleSetup.drawNow(recompute, qid);
        q = recompute.question(qid);
        assertEq(q.round, 2, "round 2");
        assertEq(recompute.committeeOf(qid).length, 2 * COMMITTEE_SIZE, "both rounds listed");
        address[] memory second = _round(qid);
        for (uint256 i; i < 3; ++i) {
            assertFalse(OracleSetup.contains(first, second[i]), "round 2 excludes round 1's members");
            assertTrue(second[i] != q.oracle && second[i] != challenger, "nor the parties to the challenge");
        }
    }

    function test_settle_noMajorityRoundsDisjoint_succeeds() public balanced {
        for (uint256 i; i < 8; ++i) {
            _reset(ORACLES); // each round slashes two liars
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("q", i)));
            _answer(qid, _outputs(1));
            _challenge(qid);
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("r1", i)));
            address[] memory first = _round(qid);
            _vote3(qid, truth, lie, other);
            recompute.settle(qid);
            vm.roll(block.number + 2);
            vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("r2", i)));
            address[] memory excluded = new address[](5);
            excluded[0] = _oracleOf(qid);
            excluded[1] = challenger;
            excluded[2] = first[0];
            excluded[3] = first[1];
            excluded[4] = first[2];
            (address[] memory expected,) = OracleSetup.sample(recompute, qid, COMMITTEE_SIZE, excluded);
            recompute.draw(qid);
            address[] memory second = _round(qid);
            assertEq(second, expected, "round 2 is the sampler's, without earlier members");
            _vote3(qid, truth, truth, truth);
            recompute.settle(qid);
        }
    }

    function test_settle_noMajorityBySilence_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        OracleSetup.commitNow(recompute, qid, m[0], truth, "s");
        OracleSetup.commitNow(recompute, qid, m[1], lie, "s"); // m[2] never commits
        vm.warp(recompute.question(qid).commitDeadline + 1);
        OracleSetup.revealNow(recompute, qid, m[0], truth, "s");
        OracleSetup.revealNow(recompute, qid, m[1], lie, "s");
        vm.warp(recompute.question(qid).deadline + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(m[2], qid, SILENCE_SLASH);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.RoundFailed(qid, 1);
        recompute.settle(qid);
        assertEq(recompute.bondOf(m[2]), ORACLE_BOND - SILENCE_SLASH, "the silent member is slashed at once");
        assertTrue(recompute.isActive(m[2]), "and stays eligible");
        assertEq(recompute.bondOf(m[1]), ORACLE_BOND, "the liar waits for a decision");
    }

    function test_settle_laterRoundSlashesEarlierDissenters_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address[] memory first = _round(qid);
        _vote3(qid, truth, lie, unavailable);
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        address[] memory second = _round(qid);
        _vote3(qid, truth, truth, lie);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(first[1], qid, ORACLE_BOND);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(first[2], qid, SILENCE_SLASH);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(second[2], qid, ORACLE_BOND);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "upheld in round 2");
        assertEq(recompute.bondOf(first[0]), ORACLE_BOND, "round 1's truthful member untouched");
        assertEq(recompute.bondOf(first[1]), 0, "round 1's liar loses its bond");
        assertEq(
            recompute.bondOf(first[2]), ORACLE_BOND - SILENCE_SLASH, "round 1's UNAVAILABLE: silenceSlash"
        );
        assertEq(recompute.bondOf(second[0]), ORACLE_BOND, "majority untouched");
        assertEq(recompute.bondOf(second[2]), 0, "round 2's liar loses its bond");
    }

    function test_settle_laterRoundOverturns_feeToVotersOfEveryRound_succeeds() public balanced {
        uint256 qid = _seated(_outputs(2));
        address answering = _oracleOf(qid);
        address[] memory first = _round(qid);
        _vote3(qid, truth, lie, other);
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        address[] memory second = _round(qid);
        _vote3(qid, truth, other, truth);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "overturned in round 2");
        assertEq(recompute.bondOf(answering), 0, "the liar loses its bond");
        assertEq(recompute.bondOf(first[1]), 0, "round 1's liar too");
        assertEq(recompute.bondOf(first[2]), 0, "and round 1's other wrong value");
        assertEq(recompute.bondOf(second[1]), 0, "and round 2's");
        _payFee(qid);
        assertEq(recompute.creditOf(first[0]), FEE / 3 + FEE % 3, "round 1's truthful member shares the fee");
        assertEq(recompute.creditOf(second[0]), FEE / 3, "share");
        assertEq(recompute.creditOf(second[2]), FEE / 3, "share");
    }

    function test_settle_maxRoundsExhausted_abandonsRefunds_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address answering = _oracleOf(qid);
        address[] memory first = _round(qid);
        _vote3(qid, truth, lie, other);
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        address[] memory second = _round(qid);
        _vote3(qid, other, lie, truth);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.RoundFailed(qid, 2);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, CHALLENGE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 result) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(result, bytes32(0), "no answer");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "the challenger takes its bond back");
        assertEq(recompute.totalChallengeBonds(), 0, "no challenge bond held");
        assertEq(recompute.bondOf(answering), ORACLE_BOND, "nobody was decided wrong");
        for (uint256 i; i < 3; ++i) {
            assertEq(recompute.bondOf(first[i]), ORACLE_BOND, "round 1 untouched");
            assertEq(recompute.bondOf(second[i]), ORACLE_BOND, "round 2 untouched");
        }
        _exitNow(answering); // every duty ended
        _exitNow(second[0]);
    }

    function test_settle_roundTwoTooFew_abandonsRefunds_succeeds() public balanced {
        _reset(NEED + 1); // answerer, round 1 and two more: round 2 cannot be seated
        uint256 qid = _seated(_outputs(1));
        _vote3(qid, truth, lie, other);
        recompute.settle(qid);
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "waits");
        vm.warp(recompute.question(qid).deadline + 1);
        OracleSetup.drawNow(recompute, qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "refunded");
    }

    // ---------------------------------------------------------------- settle: UNAVAILABLE

    function test_settle_unavailableOverturned_silenceSlashOnly_succeeds() public balanced {
        uint256 qid = _seated(OracleSetup.unavailable());
        address answering = _oracleOf(qid);
        _vote3(qid, truth, truth, truth);
        uint256 reward = SILENCE_SLASH / 2;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(answering, qid, SILENCE_SLASH);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, reward + CHALLENGE_BOND);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, truth, "the committee's value is final");
        assertEq(
            recompute.bondOf(answering), ORACLE_BOND - SILENCE_SLASH, "UNAVAILABLE costs what silence costs"
        );
        assertTrue(recompute.isActive(answering), "still covers a unit");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND + reward, "bond back plus half the slash");
    }

    function test_settle_valueWhenMajorityUnavailable_noSlash_succeeds() public balanced {
        uint256 qid = _seated(_outputs(1));
        address answering = _oracleOf(qid);
        address[] memory m = _round(qid);
        _vote3(qid, unavailable, unavailable, unavailable);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, unavailable, "the inputs are unavailable");
        assertEq(recompute.bondOf(answering), ORACLE_BOND, "a value nobody could check costs nothing");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "the challenger is refunded");
        assertEq(recompute.totalBurnt(), 0, "nothing burnt");
        _payFee(qid);
        assertEq(recompute.creditOf(m[0]), FEE / 3 + FEE % 3, "the fee goes to the majority");
    }

    function test_settle_unavailableUpheld_challengerSlashed_succeeds() public balanced {
        uint256 qid = _seated(OracleSetup.unavailable());
        address answering = _oracleOf(qid);
        _vote3(qid, unavailable, unavailable, truth);
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, unavailable, "upheld");
        assertEq(recompute.creditOf(answering), CHALLENGE_BOND / 2, "half the challenge bond");
        assertEq(recompute.creditOf(challenger), 0, "the challenger loses its bond");
    }

    function test_settle_memberUnavailableVotes_succeeds() public balanced {
        // A member voting UNAVAILABLE against a value loses silenceSlash...
        uint256 qid = _seated(_outputs(1));
        address[] memory m = _round(qid);
        _vote3(qid, truth, unavailable, truth);
        recompute.settle(qid);
        assertEq(recompute.bondOf(m[1]), ORACLE_BOND - SILENCE_SLASH, "UNAVAILABLE against a value");
        // ... and one voting a value against an UNAVAILABLE majority loses nothing.
        uint256 next = _seated(_outputs(1));
        address[] memory n = _round(next);
        uint256 before = recompute.bondOf(n[1]);
        _vote3(next, unavailable, truth, unavailable);
        recompute.settle(next);
        assertEq(recompute.bondOf(n[1]), before, "a value against UNAVAILABLE");
    }

    // ---------------------------------------------------------------- payFee

    function test_payFee_final_succeeds() public balanced {
        uint256 qid = _final();
        address answering = _oracleOf(qid);
        vm.deal(payer, FEE);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.FeePaid(qid, payer, FEE);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(answering, FEE);
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
        assertEq(recompute.creditOf(answering), FEE, "credited");
        assertTrue(recompute.question(qid).feePaid, "paid");
    }

    function test_payFee_wrongAmount_reverts() public balanced {
        uint256 qid = _final();
        vm.deal(payer, FEE);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleWrongFee.selector, FEE - 1, FEE));
        vm.prank(payer);
        recompute.payFee{value: FEE - 1}(qid);
    }

    function test_payFee_twice_reverts() public balanced {
        uint256 qid = _final();
        _payFee(qid);
        vm.deal(payer, FEE);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleFeeAlreadyPaid.selector, qid));
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
    }

    function test_payFee_notFinal_reverts() public balanced {
        uint256 qid = _answered(_outputs(1));
        vm.deal(payer, FEE);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
        uint256 abandoned = _assigned();
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(abandoned);
        OracleSetup.drawNow(recompute, abandoned);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(abandoned);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, abandoned, IRecomputeOracle.QuestionStatus.Abandoned
            )
        );
        vm.prank(payer);
        recompute.payFee{value: FEE}(abandoned);
    }

    // ---------------------------------------------------------------- withdraw

    function test_withdraw_fullPath_succeeds() public balanced {
        uint256 qid = _final();
        address answering = _oracleOf(qid);
        _payFee(qid);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Withdrawn(answering, FEE);
        vm.prank(answering);
        recompute.withdraw();
        assertEq(answering.balance, FEE, "paid");
        assertEq(recompute.creditOf(answering), 0, "credit zeroed");
        assertEq(recompute.totalCredits(), 0, "totalCredits");
        assertEq(address(recompute).balance, ORACLES * ORACLE_BOND, "only bonds left");
    }

    function test_withdraw_noCredit_reverts() public balanced {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNothingToWithdraw.selector, alice));
        vm.prank(alice);
        recompute.withdraw();
    }

    function test_withdraw_reentrant_reverts() public balanced {
        Withdrawer attacker = _creditedWithdrawer(Withdrawer.Mode.Reenter);
        // The inner withdraw finds no credit and reverts; so does the receive, hence the transfer.
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleTransferFailed.selector, address(attacker), MIN_BOND)
        );
        attacker.withdraw();
        assertEq(address(attacker).balance, 0, "nothing paid");
        assertEq(recompute.creditOf(address(attacker)), MIN_BOND, "credit kept");
    }

    function test_withdraw_reentrantCaught_succeeds() public balanced {
        Withdrawer attacker = _creditedWithdrawer(Withdrawer.Mode.ReenterAndCatch);
        attacker.withdraw();
        assertEq(address(attacker).balance, MIN_BOND, "paid once");
        assertEq(attacker.received(), MIN_BOND, "received once");
        assertEq(
            attacker.reentryError(),
            abi.encodeWithSelector(RecomputeOracleNothingToWithdraw.selector, address(attacker)),
            "re-entry found no credit"
        );
        assertEq(recompute.creditOf(address(attacker)), 0, "credit zeroed");
        assertEq(recompute.totalCredits(), 0, "totalCredits");
    }

    function test_withdraw_refusingReceiver_reverts() public balanced {
        Withdrawer refuser = _creditedWithdrawer(Withdrawer.Mode.Refuse);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleTransferFailed.selector, address(refuser), MIN_BOND)
        );
        refuser.withdraw();
        assertEq(recompute.creditOf(address(refuser)), MIN_BOND, "credit kept");
    }

    // ---------------------------------------------------------------- maxResolutionTime

    /// @dev The slowest path with every due call made at the first second it is allowed (blocks are
    ///      mined as needed, so randomness requested in a second is readable the next): each draw
    ///      waits its whole `waitLimit` (it finds too few oracles until one registers just before
    ///      the request made at the draw deadline), both answering oracles are tried (the first
    ///      silent, the second answering at its deadline), the answer is challenged at the challenge
    ///      deadline, and both committee rounds end without a majority at their reveal deadlines.
    function test_maxResolutionTime_slowestPath_succeeds() public balanced {
        _reset(NEED - 1);
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        // Attempt 1: four oracles until the draw deadline; a fifth joins meanwhile.
        _slowDraw(qid, _newcomer("fifth"));
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "first oracle");
        vm.warp(recompute.question(qid).deadline + 1);
        recompute.reassign(qid);
        // Attempt 2: four untried oracles; a sixth joins meanwhile.
        _slowDraw(qid, _newcomer("sixth"));
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Assigned), "second oracle");
        vm.warp(recompute.question(qid).deadline);
        _answer(qid, _outputs(1));
        vm.warp(recompute.question(qid).deadline);
        // The committee pool (6 oracles less the answering one) is thinned to 2 by exit requests; a
        // newcomer joins meanwhile.
        _leaveAllBut(qid, 2);
        _challenge(qid);
        _slowDraw(qid, _newcomer("eighth"));
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Voting), "round 1");
        _silentRound(qid);
        // Round 2 needs 3 oracles outside round 1, which seated every eligible one: three join.
        assertEq(
            uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "round 2 drawing"
        );
        address[] memory late = new address[](3);
        (late[0], late[1], late[2]) = (makeAddr("seventh"), makeAddr("ninth"), makeAddr("tenth"));
        _slowDraw(qid, late);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Voting), "round 2");
        _silentRound(qid);
        assertEq(uint8(_status(qid)), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        uint256 bound = askedAt + recompute.maxResolutionTime();
        assertLe(block.timestamp, bound, "ends within maxResolutionTime");
        assertGe(block.timestamp + 10, bound, "and the bound is tight (at most 10 s to spare)");
    }

    // ---------------------------------------------------------------- helpers

    function _params() internal pure returns (IRecomputeOracle.Params memory) {
        return IRecomputeOracle.Params({
            fee: FEE,
            minBond: MIN_BOND,
            challengeBond: CHALLENGE_BOND,
            silenceSlash: SILENCE_SLASH,
            answerWindow: ANSWER_WINDOW,
            challengeWindow: CHALLENGE_WINDOW,
            voteWindow: VOTE_WINDOW,
            exitDelay: EXIT_DELAY,
            waitLimit: WAIT_LIMIT,
            committeeSize: COMMITTEE_SIZE,
            maxAttempts: MAX_ATTEMPTS,
            maxRounds: MAX_ROUNDS
        });
    }

    /// @dev A fresh oracle bound to `game`, with `n` registered oracles of `ORACLE_BOND` (one unit),
    ///      eligible from the next block.
    function _reset(uint256 n) internal {
        recompute = OracleSetup.deploy(_params());
        recompute.bindGame(game);
        delete oracles;
        for (uint256 i; i < n; ++i) {
            address o = makeAddr(string.concat("oracle", vm.toString(i)));
            vm.deal(o, ORACLE_BOND);
            vm.prank(o);
            recompute.register{value: ORACLE_BOND}();
            oracles.push(o);
        }
        vm.roll(block.number + 1);
    }

    /// @dev Registers `who` with `amount` (dealt to it) and mines a block.
    function _register(address who, uint256 amount) internal {
        OracleSetup.register(recompute, who, amount);
    }

    function _ask() internal returns (uint256) {
        vm.prank(game);
        return recompute.ask(PROGRAM, NODE, _outputs(42), [alice, bob]);
    }

    function _status(uint256 qid) internal view returns (IRecomputeOracle.QuestionStatus) {
        return recompute.question(qid).status;
    }

    function _oracleOf(uint256 qid) internal view returns (address) {
        return recompute.question(qid).oracle;
    }

    function _round(uint256 qid) internal view returns (address[] memory) {
        return OracleSetup.currentRound(recompute, qid);
    }

    /// @dev A question with its answering oracle drawn.
    function _assigned() internal returns (uint256 qid) {
        qid = _ask();
        OracleSetup.drawNow(recompute, qid);
    }

    function _answer(uint256 qid, bytes32[] memory outputs) internal {
        vm.prank(_oracleOf(qid));
        recompute.answer(qid, outputs);
    }

    function _answered(bytes32[] memory outputs) internal returns (uint256 qid) {
        qid = _assigned();
        _answer(qid, outputs);
    }

    function _challenge(uint256 qid) internal {
        OracleSetup.challengeNow(recompute, qid, challenger);
    }

    /// @dev A question answered with `outputs`, challenged by `challenger`, its committee seated.
    function _seated(bytes32[] memory outputs) internal returns (uint256 qid) {
        qid = _answered(outputs);
        _challenge(qid);
        OracleSetup.drawNow(recompute, qid);
    }

    /// @dev The current round commits and reveals `a`, `b`, `c` (in seating order).
    function _vote3(uint256 qid, bytes32 a, bytes32 b, bytes32 c) internal {
        bytes32[] memory votes = new bytes32[](3);
        votes[0] = a;
        votes[1] = b;
        votes[2] = c;
        OracleSetup.voteNow(recompute, qid, votes);
    }

    /// @dev A question answered, unchallenged, settled.
    function _final() internal returns (uint256 qid) {
        qid = _answered(_outputs(1));
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
    }

    function _payFee(uint256 qid) internal {
        vm.deal(payer, FEE);
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
    }

    function _withdraw(address who) internal {
        vm.prank(who);
        recompute.withdraw();
    }

    /// @dev `o` requests its exit and takes its bond out after the delay (at most one block later:
    ///      time moves back, so the tests' windows are unaffected).
    function _exitNow(address o) internal {
        uint256 t = block.timestamp;
        vm.prank(o);
        recompute.requestExit();
        vm.warp(t + EXIT_DELAY);
        vm.prank(o);
        recompute.exit();
        vm.warp(t);
    }

    function _exit(address o) internal {
        vm.prank(o);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.prank(o);
        recompute.exit();
        _withdraw(o);
    }

    /// @dev Has an oracle drawn and stay silent once (`o`, or whoever is drawn when `o` is zero,
    ///      re-drawing until it is `o`); returns it.
    function _silenceOnce(address o) internal returns (address silent) {
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        if (o != address(0)) {
            uint256 tries;
            while (true) {
                vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode(o, tries++)));
                (address[] memory picks, uint256 found) =
                    OracleSetup.sample(recompute, qid, NEED, new address[](0));
                if (found == NEED && picks[0] == o) break;
            }
        }
        recompute.draw(qid);
        silent = _oracleOf(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
    }

    /// @dev Has every oracle but `keep` of them (and the answering one) request its exit, a block
    ///      before whatever comes next; returns the leavers.
    function _leaveAllBut(uint256 qid, uint256 keep) internal returns (address[] memory leavers) {
        address answering = _oracleOf(qid);
        leavers = new address[](oracles.length - 1 - keep);
        uint256 kept;
        uint256 n;
        for (uint256 i; i < oracles.length; ++i) {
            if (oracles[i] == answering) continue;
            if (kept < keep) {
                ++kept;
                continue;
            }
            vm.prank(oracles[i]);
            recompute.requestExit();
            leavers[n++] = oracles[i];
        }
        vm.roll(block.number + 1);
    }

    function _notSeated(uint256 qid) internal returns (address) {
        address[] memory seated = recompute.committeeOf(qid);
        for (uint256 i; i < oracles.length; ++i) {
            if (!OracleSetup.contains(seated, oracles[i]) && oracles[i] != _oracleOf(qid)) return oracles[i];
        }
        return makeAddr("outsider");
    }

    /// @dev The slowest successful draw: it finds too few oracles until its deadline, `joiners`
    ///      (re)register after its first try, too late for the request the try at the deadline reads
    ///      (which requests again), and the draw succeeds a second after the deadline.
    function _slowDraw(uint256 qid, address[] memory joiners) internal {
        IRecomputeOracle.QuestionStatus drawing = _status(qid);
        uint64 deadline = recompute.question(qid).deadline;
        vm.roll(block.number + 2);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(drawing), "too few at first");
        for (uint256 i; i < joiners.length; ++i) {
            uint256 bond = recompute.bondOf(joiners[i]);
            _register(joiners[i], bond >= MIN_BOND ? 0 : ORACLE_BOND - bond);
            if (bond == 0) oracles.push(joiners[i]);
        }
        // The request made before they registered does not count them: the next draw finds too few
        // again and requests anew; the draw at the deadline, the last second a draw may succeed, counts
        // them.
        vm.roll(block.number + 2);
        recompute.draw(qid);
        assertEq(uint8(_status(qid)), uint8(drawing), "too few for the old request");
        vm.warp(deadline);
        vm.roll(block.number + 2);
        recompute.draw(qid);
    }

    function _newcomer(string memory name) internal returns (address[] memory who) {
        who = new address[](1);
        who[0] = makeAddr(name);
    }

    /// @dev The current round commits nothing; settled at the first second after its reveal deadline.
    function _silentRound(uint256 qid) internal {
        vm.warp(recompute.question(qid).deadline + 1);
        recompute.settle(qid);
    }

    /// @dev A `Withdrawer` holding a credit of `MIN_BOND` (its exited bond).
    function _creditedWithdrawer(Withdrawer.Mode mode) internal returns (Withdrawer w) {
        w = new Withdrawer(recompute, mode);
        vm.deal(address(this), MIN_BOND);
        w.join{value: MIN_BOND}();
        w.leave();
        vm.warp(block.timestamp + EXIT_DELAY);
        w.cashOut();
        assertEq(recompute.creditOf(address(w)), MIN_BOND, "credited");
    }

    /// @dev Two distinct 32-byte commitments derived from `salt`.
    function _outputs(uint256 salt) internal pure returns (bytes32[] memory outputs) {
        outputs = new bytes32[](2);
        outputs[0] = keccak256(abi.encode("out", salt, 0));
        outputs[1] = keccak256(abi.encode("out", salt, 1));
    }
}
