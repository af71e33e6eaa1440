// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {
    RecomputeOracleAlreadyVoted,
    RecomputeOracleBondTooSmall,
    RecomputeOracleCommitteeUnavailable,
    RecomputeOracleDeadlineNotPassed,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleExitAlreadyRequested,
    RecomputeOracleExitDelayTooLong,
    RecomputeOracleExitNotRequested,
    RecomputeOracleExitTooEarly,
    RecomputeOracleFeeAlreadyPaid,
    RecomputeOracleInvalidCommitteeSize,
    RecomputeOracleNotAssignedOracle,
    RecomputeOracleNotCommitteeMember,
    RecomputeOracleNotRegistered,
    RecomputeOracleNothingToWithdraw,
    RecomputeOracleOpenDuties,
    RecomputeOracleResolutionTimeTooLong,
    RecomputeOracleSelfChallenge,
    RecomputeOracleSilenceSlashTooLarge,
    RecomputeOracleTransferFailed,
    RecomputeOracleWrongChallengeBond,
    RecomputeOracleWrongFee,
    RecomputeOracleWrongStatus,
    RecomputeOracleZeroMaxAttempts,
    RecomputeOracleZeroMinBond,
    RecomputeOracleZeroWindow
} from "../src/lib/OracleErrors.sol";

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

contract RecomputeOracleTest is Test {
    uint256 internal constant FEE = 0.1 ether + 1; // odd: a split leaves a remainder
    uint256 internal constant MIN_BOND = 10 ether;
    uint256 internal constant ORACLE_BOND = MIN_BOND + 1; // what setUp's oracles deposit; odd
    uint256 internal constant CHALLENGE_BOND = 3 ether + 1; // odd: halving rounds
    uint256 internal constant SILENCE_SLASH = 2 ether;
    uint64 internal constant ANSWER_WINDOW = 1 hours;
    uint64 internal constant CHALLENGE_WINDOW = 2 hours;
    uint64 internal constant VOTE_WINDOW = 3 hours;
    uint64 internal constant EXIT_DELAY = 1 days;
    uint8 internal constant COMMITTEE_SIZE = 3;
    uint8 internal constant MAX_ATTEMPTS = 2;
    uint256 internal constant ORACLES = 6;

    bytes32 internal constant PROGRAM = keccak256("program");
    uint256 internal constant NODE = 7;

    RecomputeOracle internal recompute;
    address internal game = makeAddr("game");
    address internal alice = makeAddr("alice");
    address internal bob = makeAddr("bob");
    address internal challenger = makeAddr("challenger");
    address internal payer = makeAddr("payer");
    /// @dev Registered oracles, in the order they joined the active set.
    address[] internal oracles;

    /// @dev Checks the funds identity after the test body.
    modifier balanced() {
        _;
        _assertBalanced();
    }

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.roll(1000);
        recompute = _deploy(SILENCE_SLASH);
        for (uint256 i; i < ORACLES; ++i) {
            address o = makeAddr(string.concat("oracle", vm.toString(i)));
            _register(o, ORACLE_BOND);
            oracles.push(o);
        }
    }

    // ---------------------------------------------------------------- constructor

    function test_constructor_parameters_succeeds() public view {
        assertEq(recompute.fee(), FEE, "fee");
        assertEq(recompute.minBond(), MIN_BOND, "minBond");
        assertEq(recompute.challengeBond(), CHALLENGE_BOND, "challengeBond");
        assertEq(recompute.silenceSlash(), SILENCE_SLASH, "silenceSlash");
        assertEq(recompute.answerWindow(), ANSWER_WINDOW, "answerWindow");
        assertEq(recompute.challengeWindow(), CHALLENGE_WINDOW, "challengeWindow");
        assertEq(recompute.voteWindow(), VOTE_WINDOW, "voteWindow");
        assertEq(recompute.exitDelay(), EXIT_DELAY, "exitDelay");
        assertEq(recompute.committeeSize(), COMMITTEE_SIZE, "committeeSize");
        assertEq(recompute.maxAttempts(), MAX_ATTEMPTS, "maxAttempts");
    }

    function test_maxResolutionTime_parameters_succeeds() public view {
        assertEq(recompute.maxResolutionTime(), 2 * 1 hours + 2 hours + 3 hours);
    }

    function test_constructor_evenCommittee_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleInvalidCommitteeSize.selector, uint8(2)));
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, 1, 1, 1, 1, 2, 1);
    }

    function test_constructor_zeroCommittee_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleInvalidCommitteeSize.selector, uint8(0)));
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, 1, 1, 1, 1, 0, 1);
    }

    function test_constructor_zeroMinBond_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleZeroMinBond.selector));
        new RecomputeOracle(FEE, 0, CHALLENGE_BOND, 0, 1, 1, 1, 1, 1, 1);
    }

    function test_constructor_silenceSlashAboveMinBond_reverts() public {
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleSilenceSlashTooLarge.selector, MIN_BOND + 1, MIN_BOND)
        );
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, MIN_BOND + 1, 1, 1, 1, 1, 1, 1);
    }

    function test_constructor_zeroWindow_reverts() public {
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleZeroWindow.selector, uint64(1), uint64(0), uint64(1))
        );
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, 1, 0, 1, 1, 1, 1);
    }

    function test_constructor_zeroMaxAttempts_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleZeroMaxAttempts.selector));
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, 1, 1, 1, 1, 1, 0);
    }

    function test_constructor_resolutionTimeTooLong_reverts() public {
        uint64 w = type(uint32).max / 2; // 255 * w + 2 overflows 32 bits, not 64
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleResolutionTimeTooLong.selector, uint256(255) * w + 2, uint256(type(uint32).max)
            )
        );
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, w, 1, 1, 1, 1, 255);
    }

    function test_constructor_exitDelayTooLong_reverts() public {
        uint64 delay = uint64(type(uint32).max) + 1;
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleExitDelayTooLong.selector, delay, uint256(type(uint32).max))
        );
        new RecomputeOracle(FEE, MIN_BOND, CHALLENGE_BOND, SILENCE_SLASH, 1, 1, 1, delay, 1, 1);
    }

    // ---------------------------------------------------------------- register

    function test_register_minBond_succeeds() public balanced {
        address o = makeAddr("newcomer");
        vm.deal(o, MIN_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleRegistered(o, MIN_BOND);
        vm.prank(o);
        recompute.register{value: MIN_BOND}();
        assertTrue(recompute.isActive(o), "active");
        assertEq(recompute.activeCount(), ORACLES + 1, "activeCount");
        assertEq(recompute.bondOf(o), MIN_BOND, "bond");
        assertEq(recompute.totalBonds(), ORACLES * ORACLE_BOND + MIN_BOND, "totalBonds");
    }

    function test_register_belowMinBond_reverts() public balanced {
        address o = makeAddr("newcomer");
        vm.deal(o, MIN_BOND);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleBondTooSmall.selector, MIN_BOND - 1, MIN_BOND));
        vm.prank(o);
        recompute.register{value: MIN_BOND - 1}();
    }

    function test_register_again_succeeds() public balanced {
        vm.deal(oracles[0], 1 ether);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleRegistered(oracles[0], ORACLE_BOND + 1 ether);
        vm.prank(oracles[0]);
        recompute.register{value: 1 ether}();
        assertEq(recompute.bondOf(oracles[0]), ORACLE_BOND + 1 ether, "bond");
        assertEq(recompute.activeCount(), ORACLES, "no second entry");
    }

    function test_register_slashedBelowMinBond_reverts() public balanced {
        address silent = _silenceFirstOracle();
        uint256 bond = ORACLE_BOND - SILENCE_SLASH;
        vm.deal(silent, MIN_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleBondTooSmall.selector, 1 ether, MIN_BOND - bond)
        );
        vm.prank(silent);
        recompute.register{value: 1 ether}();
    }

    function test_register_topUpAfterSlash_succeeds() public balanced {
        address silent = _silenceFirstOracle();
        assertFalse(recompute.isActive(silent), "inactive after slash");
        uint256 missing = MIN_BOND - (ORACLE_BOND - SILENCE_SLASH);
        vm.deal(silent, missing);
        vm.prank(silent);
        recompute.register{value: missing}();
        assertTrue(recompute.isActive(silent), "active again");
        assertEq(recompute.bondOf(silent), MIN_BOND, "bond");
    }

    function test_register_afterRequestExit_succeeds() public balanced {
        vm.prank(oracles[2]);
        recompute.requestExit();
        vm.prank(oracles[2]);
        recompute.register();
        assertTrue(recompute.isActive(oracles[2]), "active again");
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleExitNotRequested.selector, oracles[2]));
        vm.prank(oracles[2]);
        recompute.exit();
    }

    // ---------------------------------------------------------------- requestExit / exit

    function test_requestExit_active_succeeds() public balanced {
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.OracleExitRequested(oracles[1], block.timestamp + EXIT_DELAY);
        vm.prank(oracles[1]);
        recompute.requestExit();
        assertFalse(recompute.isActive(oracles[1]), "left");
        assertEq(recompute.activeCount(), ORACLES - 1, "activeCount");
        for (uint256 i; i < ORACLES; ++i) {
            if (i != 1) assertTrue(recompute.isActive(oracles[i]), "others stay");
        }
        // The last oracle took the leaver's slot: removing it next must still work.
        vm.prank(oracles[ORACLES - 1]);
        recompute.requestExit();
        assertEq(recompute.activeCount(), ORACLES - 2, "activeCount after second exit");
        assertTrue(recompute.isActive(oracles[0]) && recompute.isActive(oracles[2]), "others stay");
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
        uint256 qid = _ask();
        address assigned = _assigned(qid);
        vm.prank(assigned);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, assigned, 1));
        vm.prank(assigned);
        recompute.exit();
        // Having left the active set, it may still answer; its duty ends with the question.
        vm.warp(block.timestamp - EXIT_DELAY);
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + EXIT_DELAY);
        recompute.settle(qid);
        vm.prank(assigned);
        recompute.exit();
        assertEq(recompute.creditOf(assigned), ORACLE_BOND, "bond credited");
    }

    function test_exit_committeeMember_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        _challenge(qid);
        address member = recompute.committeeOf(qid)[0];
        _vote(qid, member, _outputs(1));
        vm.prank(member);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, member, 1));
        vm.prank(member);
        recompute.exit();
        recompute.settle(qid);
        vm.prank(member);
        recompute.exit();
        assertEq(recompute.creditOf(member), ORACLE_BOND, "bond credited");
    }

    // ---------------------------------------------------------------- ask

    function test_ask_assignsOracle_succeeds() public balanced {
        bytes32[] memory inputs = _outputs(42);
        address expected = _expectedDraw(1, 1, _activeNow(), game, [alice, bob]);
        uint64 deadline = uint64(block.timestamp) + ANSWER_WINDOW;
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAsked(1, game, PROGRAM, NODE, inputs);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAssigned(1, expected, deadline);
        vm.prank(game);
        uint256 qid = recompute.ask(PROGRAM, NODE, inputs, [alice, bob]);
        assertEq(qid, 1, "first id");
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(q.programHash, PROGRAM, "programHash");
        assertEq(q.node, NODE, "node");
        assertEq(q.inputsHash, sha256(abi.encodePacked(inputs)), "inputsHash");
        assertEq(q.asker, game, "asker");
        assertEq(q.parties[0], alice, "party 0");
        assertEq(q.parties[1], bob, "party 1");
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Assigned), "status");
        assertEq(q.attempts, 1, "attempts");
        assertEq(q.oracle, expected, "oracle");
        assertEq(q.deadline, deadline, "deadline");
        assertEq(_ask(), 2, "second id");
    }

    function testFuzz_ask_drawFollowsSeed_succeeds(uint256 randao, uint256 blockNumber) public balanced {
        vm.roll(bound(blockNumber, 1, type(uint64).max));
        vm.prevrandao(bytes32(randao));
        uint256 qid = _ask();
        assertEq(_assigned(qid), _expectedDraw(qid, 1, _activeNow(), game, [alice, bob]), "drawn oracle");
    }

    function test_ask_excludesPartiesAndAsker_succeeds() public balanced {
        // Only oracles[0] stays eligible: the rest leave, the asker and both parties join.
        for (uint256 i = 1; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        _register(game, MIN_BOND);
        _register(alice, MIN_BOND);
        _register(bob, MIN_BOND);
        for (uint256 r; r < 16; ++r) {
            vm.prevrandao(bytes32(r));
            assertEq(_assigned(_ask()), oracles[0], "only eligible oracle");
        }
    }

    function test_ask_noOracle_succeeds() public balanced {
        for (uint256 i; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(1);
        uint256 qid = _ask();
        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "status");
        assertEq(outputsHash, bytes32(0), "no answer");
        assertEq(recompute.question(qid).attempts, 0, "attempts");
    }

    function test_ask_onlyPartiesActive_succeeds() public balanced {
        for (uint256 i; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        _register(alice, MIN_BOND);
        _register(bob, MIN_BOND);
        uint256 qid = _ask();
        assertEq(uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Abandoned));
    }

    // ---------------------------------------------------------------- answer

    function test_answer_assignedOracle_succeeds() public balanced {
        uint256 qid = _ask();
        address assigned = _assigned(qid);
        bytes32[] memory outputs = _outputs(1);
        uint64 challengeDeadline = uint64(block.timestamp + ANSWER_WINDOW) + CHALLENGE_WINDOW;
        vm.warp(block.timestamp + ANSWER_WINDOW); // the deadline itself is still in time
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAnswered(qid, assigned, _hash(outputs), outputs, challengeDeadline);
        vm.prank(assigned);
        recompute.answer(qid, outputs);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Answered), "status");
        assertEq(q.outputsHash, _hash(outputs), "outputsHash");
        assertEq(q.deadline, challengeDeadline, "challenge deadline");
    }

    function test_answer_notAssignedOracle_reverts() public balanced {
        uint256 qid = _ask();
        address other = _otherOracle(_assigned(qid));
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleNotAssignedOracle.selector, qid, other, _assigned(qid))
        );
        vm.prank(other);
        recompute.answer(qid, _outputs(1));
    }

    function test_answer_afterDeadline_reverts() public balanced {
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        address assigned = _assigned(qid);
        vm.warp(deadline + 1);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlinePassed.selector, qid, deadline, deadline + 1)
        );
        vm.prank(assigned);
        recompute.answer(qid, _outputs(1));
    }

    function test_answer_alreadyAnswered_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        address assigned = _assigned(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(assigned);
        recompute.answer(qid, _outputs(2));
    }

    function test_answer_unknownQuestion_reverts() public balanced {
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, 99, IRecomputeOracle.QuestionStatus.None
            )
        );
        recompute.answer(99, _outputs(1));
    }

    // ---------------------------------------------------------------- reassign

    function test_reassign_silentOracle_succeeds() public balanced {
        uint256 qid = _ask();
        address silent = _assigned(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(silent, qid, SILENCE_SLASH);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(SILENCE_SLASH);
        recompute.reassign(qid);

        IRecomputeOracle.Question memory q = recompute.question(qid);
        address second = q.oracle;
        assertTrue(second != silent && second != address(0), "another oracle");
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Assigned), "status");
        assertEq(q.attempts, 2, "attempts");
        assertEq(q.deadline, block.timestamp + ANSWER_WINDOW, "new deadline");
        assertEq(recompute.bondOf(silent), ORACLE_BOND - SILENCE_SLASH, "slashed bond");
        assertFalse(recompute.isActive(silent), "silent oracle left");
        assertEq(recompute.totalBurnt(), SILENCE_SLASH, "burnt");
        assertEq(recompute.totalBonds(), ORACLES * ORACLE_BOND - SILENCE_SLASH, "totalBonds");

        bytes32[] memory outputs = _outputs(1);
        _answer(qid, outputs);
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(outputsHash, _hash(outputs), "second oracle's answer");
    }

    function test_reassign_beforeDeadline_reverts() public balanced {
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, deadline)
        );
        recompute.reassign(qid);
    }

    function test_reassign_answered_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        recompute.reassign(qid);
    }

    function test_reassign_maxAttempts_succeeds() public balanced {
        uint256 qid = _ask();
        address first = _assigned(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        address second = _assigned(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(second, qid, SILENCE_SLASH);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(SILENCE_SLASH);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.reassign(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(q.attempts, MAX_ATTEMPTS, "attempts");
        assertEq(recompute.bondOf(first), ORACLE_BOND - SILENCE_SLASH, "first slashed");
        assertEq(recompute.bondOf(second), ORACLE_BOND - SILENCE_SLASH, "second slashed");
        assertEq(recompute.totalBurnt(), 2 * SILENCE_SLASH, "burnt");
        // Both silent oracles' duties ended: they can leave.
        vm.prank(first);
        recompute.requestExit();
        vm.warp(block.timestamp + EXIT_DELAY);
        vm.prank(first);
        recompute.exit();
    }

    function test_reassign_noOracleLeft_succeeds() public balanced {
        for (uint256 i = 1; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        uint256 qid = _ask();
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(q.attempts, 1, "one attempt");
    }

    function test_reassign_triedOracleRejoined_succeeds() public {
        // Three attempts, two oracles: the first silent one tops up and rejoins before the second
        // falls silent; it has been tried on this question, so the question is abandoned.
        recompute = new RecomputeOracle(
            FEE,
            MIN_BOND,
            CHALLENGE_BOND,
            SILENCE_SLASH,
            ANSWER_WINDOW,
            CHALLENGE_WINDOW,
            VOTE_WINDOW,
            EXIT_DELAY,
            COMMITTEE_SIZE,
            3
        );
        _register(oracles[0], MIN_BOND);
        _register(oracles[1], MIN_BOND);
        uint256 qid = _ask();
        address first = _assigned(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        _register(first, SILENCE_SLASH);
        assertTrue(recompute.isActive(first), "rejoined");
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(q.attempts, 2, "not drawn again");
        _assertBalanced();
    }

    function test_reassign_bondBelowSlash_succeeds() public {
        // silenceSlash == minBond: a second silence finds nothing left to take.
        recompute = _deploy(MIN_BOND);
        address o = makeAddr("lonely");
        _register(o, MIN_BOND);
        uint256 q1 = _ask();
        uint256 q2 = _ask();
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(q1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(o, q2, 0);
        recompute.reassign(q2);
        assertEq(recompute.bondOf(o), 0, "bond");
        assertEq(recompute.totalBurnt(), MIN_BOND, "burnt once");
        _assertBalanced();
    }

    // ---------------------------------------------------------------- challenge

    function test_challenge_drawsCommittee_succeeds() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        uint64 voteDeadline = uint64(block.timestamp) + VOTE_WINDOW;
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectEmit(true, true, false, false, address(recompute));
        emit IRecomputeOracle.AnswerChallenged(qid, challenger, new address[](0), voteDeadline);
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);

        address[] memory committee = recompute.committeeOf(qid);
        assertEq(committee.length, COMMITTEE_SIZE, "size");
        address answering = _assigned(qid);
        for (uint256 i; i < committee.length; ++i) {
            assertTrue(committee[i] != answering, "not the answering oracle");
            assertTrue(recompute.isActive(committee[i]), "active");
            for (uint256 j; j < i; ++j) {
                assertTrue(committee[i] != committee[j], "distinct");
            }
        }
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Challenged), "status");
        assertEq(q.challenger, challenger, "challenger");
        assertEq(q.deadline, voteDeadline, "vote deadline");
        assertEq(recompute.totalChallengeBonds(), CHALLENGE_BOND, "challenge bonds");
    }

    function test_challenge_excludesParticipants_succeeds() public balanced {
        // Four eligible-looking oracles besides the asker, the parties and the challenger: the
        // committee is the three that did not answer, whatever the seed.
        for (uint256 i = 4; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        _register(game, MIN_BOND);
        _register(alice, MIN_BOND);
        _register(bob, MIN_BOND);
        _register(challenger, MIN_BOND);
        for (uint256 r; r < 8; ++r) {
            vm.prevrandao(bytes32(r));
            uint256 qid = _ask();
            _answer(qid, _outputs(1));
            // The challenger, an oracle too, may have been drawn to answer; someone else challenges.
            address by = _assigned(qid) == challenger ? payer : challenger;
            vm.deal(by, CHALLENGE_BOND);
            vm.prank(by);
            recompute.challenge{value: CHALLENGE_BOND}(qid);
            address[] memory committee = recompute.committeeOf(qid);
            for (uint256 i; i < committee.length; ++i) {
                bool amongFirstFour;
                for (uint256 j; j < 4; ++j) {
                    amongFirstFour = amongFirstFour || committee[i] == oracles[j];
                }
                assertTrue(amongFirstFour && committee[i] != _assigned(qid), "eligible member");
            }
        }
    }

    function test_challenge_wrongBond_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongChallengeBond.selector, CHALLENGE_BOND - 1, CHALLENGE_BOND
            )
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND - 1}(qid);
    }

    function test_challenge_afterDeadline_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
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
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        address answering = _assigned(qid);
        vm.deal(answering, CHALLENGE_BOND);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleSelfChallenge.selector, qid, answering));
        vm.prank(answering);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function test_challenge_notAnswered_reverts() public balanced {
        uint256 qid = _ask();
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Assigned
            )
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function test_challenge_tooFewOracles_reverts() public balanced {
        for (uint256 i = 3; i < ORACLES; ++i) {
            vm.prank(oracles[i]);
            recompute.requestExit();
        }
        uint256 qid = _ask();
        bytes32[] memory outputs = _outputs(1);
        _answer(qid, outputs);
        vm.deal(challenger, CHALLENGE_BOND);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleCommitteeUnavailable.selector, qid, 2, COMMITTEE_SIZE)
        );
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
        // The answer stands.
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
        (, bytes32 outputsHash) = recompute.result(qid);
        assertEq(outputsHash, _hash(outputs), "answer stands");
    }

    // ---------------------------------------------------------------- vote

    function test_vote_member_succeeds() public balanced {
        uint256 qid = _challenged();
        address member = recompute.committeeOf(qid)[1];
        bytes32[] memory outputs = _outputs(2);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.CommitteeVoted(qid, member, _hash(outputs));
        vm.prank(member);
        recompute.vote(qid, outputs);
    }

    function test_vote_nonMember_reverts() public balanced {
        uint256 qid = _challenged();
        address answering = _assigned(qid);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleNotCommitteeMember.selector, qid, answering));
        vm.prank(answering);
        recompute.vote(qid, _outputs(1));
    }

    function test_vote_twice_reverts() public balanced {
        uint256 qid = _challenged();
        address member = recompute.committeeOf(qid)[0];
        _vote(qid, member, _outputs(1));
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleAlreadyVoted.selector, qid, member));
        vm.prank(member);
        recompute.vote(qid, _outputs(2));
    }

    function test_vote_afterDeadline_reverts() public balanced {
        uint256 qid = _challenged();
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline + 1);
        address member = recompute.committeeOf(qid)[0];
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlinePassed.selector, qid, deadline, deadline + 1)
        );
        vm.prank(member);
        recompute.vote(qid, _outputs(1));
    }

    function test_vote_notChallenged_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(oracles[0]);
        recompute.vote(qid, _outputs(1));
    }

    // ---------------------------------------------------------------- settle

    function test_settle_unchallenged_succeeds() public balanced {
        uint256 qid = _ask();
        bytes32[] memory outputs = _outputs(1);
        _answer(qid, outputs);
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, _hash(outputs));
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(outputsHash, _hash(outputs), "answer");
    }

    function test_settle_beforeChallengeDeadline_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        uint64 deadline = recompute.question(qid).deadline;
        vm.warp(deadline);
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, deadline)
        );
        recompute.settle(qid);
    }

    function test_settle_votingOpen_reverts() public balanced {
        uint256 qid = _challenged();
        address[] memory committee = recompute.committeeOf(qid);
        _vote(qid, committee[0], _outputs(1));
        _vote(qid, committee[1], _outputs(1));
        uint64 deadline = recompute.question(qid).deadline;
        vm.expectRevert(
            abi.encodeWithSelector(RecomputeOracleDeadlineNotPassed.selector, qid, deadline, block.timestamp)
        );
        recompute.settle(qid);
    }

    function test_settle_assigned_reverts() public balanced {
        uint256 qid = _ask();
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Assigned
            )
        );
        recompute.settle(qid);
    }

    function test_settle_twice_reverts() public balanced {
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Final
            )
        );
        recompute.settle(qid);
    }

    function test_settle_challengeUpheld_succeeds() public balanced {
        uint256 qid = _challenged();
        address answering = _assigned(qid);
        address[] memory committee = recompute.committeeOf(qid);
        bytes32[] memory outputs = _outputs(1);
        for (uint256 i; i < committee.length; ++i) {
            _vote(qid, committee[i], outputs);
        }
        uint256 reward = CHALLENGE_BOND / 2; // 1.5 ether
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.ChallengerSlashed(challenger, qid, CHALLENGE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(answering, reward);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(CHALLENGE_BOND - reward);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, _hash(outputs));
        recompute.settle(qid); // every member voted: no need to wait

        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(outputsHash, _hash(outputs), "answer upheld");
        assertEq(recompute.creditOf(answering), 1.5 ether, "answering oracle's reward");
        assertEq(recompute.creditOf(challenger), 0, "challenger's bond lost");
        assertEq(recompute.totalBurnt(), 1.5 ether + 1, "burnt");
        assertEq(recompute.totalChallengeBonds(), 0, "challenge bonds");
        assertEq(recompute.totalBonds(), ORACLES * ORACLE_BOND, "no oracle slashed");
        assertEq(recompute.activeCount(), ORACLES, "all still active");

        _payFee(qid);
        assertEq(recompute.creditOf(answering), 1.5 ether + FEE, "fee to the answering oracle");
        _withdraw(answering);
        assertEq(answering.balance, 1.5 ether + FEE, "paid to the wei");
    }

    function test_settle_challengeOverturned_succeeds() public balanced {
        uint256 qid = _challenged();
        address answering = _assigned(qid);
        address[] memory committee = recompute.committeeOf(qid);
        bytes32[] memory truth = _outputs(2);
        _vote(qid, committee[0], truth);
        _vote(qid, committee[1], _outputs(1)); // sides with the wrong answer
        _vote(qid, committee[2], truth);
        uint256 half = ORACLE_BOND / 2; // 5 ether
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(committee[1], qid, ORACLE_BOND);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(answering, qid, ORACLE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, half + CHALLENGE_BOND);
        vm.expectEmit(false, false, false, true, address(recompute));
        emit IRecomputeOracle.Burnt(ORACLE_BOND - half);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionSettled(qid, _hash(truth));
        recompute.settle(qid);

        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Final), "final");
        assertEq(outputsHash, _hash(truth), "majority answer");
        assertEq(recompute.bondOf(answering), 0, "answering oracle lost its bond");
        assertEq(recompute.bondOf(committee[1]), 0, "wrong voter lost its bond");
        assertEq(recompute.bondOf(committee[0]), ORACLE_BOND, "majority voter kept its bond");
        assertFalse(recompute.isActive(answering), "answering oracle left");
        assertFalse(recompute.isActive(committee[1]), "wrong voter left");
        assertEq(recompute.activeCount(), ORACLES - 2, "activeCount");
        assertEq(
            recompute.creditOf(challenger), 5 ether + 3 ether + 1, "half the bond and the challenge bond"
        );
        assertEq(recompute.totalBurnt(), (5 ether + 1) + (10 ether + 1), "burnt");
        assertEq(recompute.totalBonds(), (ORACLES - 2) * ORACLE_BOND, "totalBonds");
        assertEq(recompute.totalChallengeBonds(), 0, "challenge bonds");

        _payFee(qid);
        assertEq(recompute.creditOf(committee[0]), FEE / 2 + 1, "first majority voter takes the remainder");
        assertEq(recompute.creditOf(committee[2]), FEE / 2, "second majority voter");
        assertEq(recompute.creditOf(committee[1]), 0, "wrong voter");
        assertEq(recompute.creditOf(answering), 0, "answering oracle");
        _withdraw(challenger);
        assertEq(challenger.balance, 8 ether + 1, "challenger paid to the wei");
    }

    function test_settle_nonVoterSlashed_succeeds() public balanced {
        uint256 qid = _challenged();
        address[] memory committee = recompute.committeeOf(qid);
        _vote(qid, committee[0], _outputs(1));
        _vote(qid, committee[1], _outputs(1));
        vm.warp(recompute.question(qid).deadline + 1);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.OracleSlashed(committee[2], qid, SILENCE_SLASH);
        recompute.settle(qid);
        assertEq(recompute.bondOf(committee[2]), ORACLE_BOND - SILENCE_SLASH, "non-voter slashed");
        assertFalse(recompute.isActive(committee[2]), "non-voter left");
        assertEq(recompute.totalBurnt(), SILENCE_SLASH + (CHALLENGE_BOND - CHALLENGE_BOND / 2), "burnt");
        assertEq(uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Final));
    }

    function test_settle_noMajority_succeeds() public balanced {
        uint256 qid = _challenged();
        address answering = _assigned(qid);
        address[] memory committee = recompute.committeeOf(qid);
        for (uint256 i; i < committee.length; ++i) {
            _vote(qid, committee[i], _outputs(10 + i));
        }
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(challenger, CHALLENGE_BOND);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.QuestionAbandoned(qid);
        recompute.settle(qid);
        (IRecomputeOracle.QuestionStatus status, bytes32 outputsHash) = recompute.result(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned");
        assertEq(outputsHash, bytes32(0), "no answer");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "challenge bond back");
        assertEq(recompute.creditOf(answering), 0, "nothing to the answering oracle");
        assertEq(recompute.totalBonds(), ORACLES * ORACLE_BOND, "voters not slashed");
        assertEq(recompute.totalBurnt(), 0, "nothing burnt");
        assertEq(recompute.totalChallengeBonds(), 0, "challenge bonds");
    }

    function test_settle_noMajoritySilentMembers_succeeds() public balanced {
        uint256 qid = _challenged();
        address[] memory committee = recompute.committeeOf(qid);
        _vote(qid, committee[1], _outputs(2));
        vm.warp(recompute.question(qid).deadline + 1);
        recompute.settle(qid);
        assertEq(uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Abandoned));
        assertEq(recompute.bondOf(committee[0]), ORACLE_BOND - SILENCE_SLASH, "non-voter slashed");
        assertEq(recompute.bondOf(committee[2]), ORACLE_BOND - SILENCE_SLASH, "non-voter slashed");
        assertEq(recompute.bondOf(committee[1]), ORACLE_BOND, "voter kept its bond");
        assertEq(recompute.totalBurnt(), 2 * SILENCE_SLASH, "burnt");
        assertEq(recompute.creditOf(challenger), CHALLENGE_BOND, "challenge bond back");
    }

    // ---------------------------------------------------------------- payFee

    function test_payFee_final_succeeds() public balanced {
        uint256 qid = _final();
        address answering = _assigned(qid);
        vm.deal(payer, FEE);
        vm.expectEmit(true, true, false, true, address(recompute));
        emit IRecomputeOracle.FeePaid(qid, payer, FEE);
        vm.expectEmit(true, false, false, true, address(recompute));
        emit IRecomputeOracle.Credited(answering, FEE);
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
        assertTrue(recompute.question(qid).feePaid, "paid");
        assertEq(recompute.creditOf(answering), FEE, "credit");
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
        uint256 qid = _ask();
        _answer(qid, _outputs(1));
        vm.deal(payer, FEE);
        vm.expectRevert(
            abi.encodeWithSelector(
                RecomputeOracleWrongStatus.selector, qid, IRecomputeOracle.QuestionStatus.Answered
            )
        );
        vm.prank(payer);
        recompute.payFee{value: FEE}(qid);
    }

    // ---------------------------------------------------------------- withdraw

    function test_withdraw_fullPath_succeeds() public balanced {
        // ask -> answer -> settle -> payFee -> withdraw
        uint256 qid = _ask();
        address answering = _assigned(qid);
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
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

    // ---------------------------------------------------------------- funds identity, fuzzed

    /// @dev Random calls by random accounts at random times; the identity holds after each.
    function testFuzz_randomCalls_balanceIdentity_succeeds(uint256 seed) public {
        address[4] memory others = [alice, bob, challenger, payer];
        uint256 asked;
        for (uint256 step; step < 64; ++step) {
            seed = uint256(keccak256(abi.encode(seed, step)));
            uint256 qid = 1 + (seed >> 8) % (asked + 1);
            address who = (seed >> 16) % 3 == 0 ? others[(seed >> 24) % 4] : oracles[(seed >> 24) % ORACLES];
            bytes32[] memory outputs = _outputs((seed >> 32) % 2);
            uint256 op = seed % 12;
            if (op == 0) {
                vm.prank(game);
                recompute.ask(PROGRAM, NODE, outputs, [alice, bob]);
                ++asked;
            } else if (op == 1 || op == 2) {
                address assigned = recompute.question(qid).oracle;
                vm.prank(assigned);
                try recompute.answer(qid, outputs) {} catch {}
            } else if (op == 3) {
                try recompute.reassign(qid) {} catch {}
            } else if (op == 4) {
                vm.deal(who, CHALLENGE_BOND);
                vm.prank(who);
                try recompute.challenge{value: CHALLENGE_BOND}(qid) {} catch {}
            } else if (op == 5) {
                address[] memory committee = recompute.committeeOf(qid);
                if (committee.length != 0) {
                    vm.prank(committee[(seed >> 40) % committee.length]);
                    try recompute.vote(qid, outputs) {} catch {}
                }
            } else if (op == 6) {
                try recompute.settle(qid) {} catch {}
            } else if (op == 7) {
                vm.deal(payer, FEE);
                vm.prank(payer);
                try recompute.payFee{value: FEE}(qid) {} catch {}
            } else if (op == 8) {
                vm.prank(who);
                try recompute.withdraw() {} catch {}
            } else if (op == 9) {
                uint256 amount = (seed >> 48) % (2 * MIN_BOND);
                vm.deal(who, amount);
                vm.prank(who);
                try recompute.register{value: amount}() {} catch {}
            } else if (op == 10) {
                vm.prank(who);
                try recompute.requestExit() {} catch {}
                vm.prank(who);
                try recompute.exit() {} catch {}
            } else {
                // Mostly within the windows, sometimes past an exit delay.
                vm.warp(block.timestamp + (seed >> 56) % ((seed >> 64) % 8 == 0 ? 2 * EXIT_DELAY : 4 hours));
            }
            _assertBalanced();
            for (uint256 i; i < ORACLES; ++i) {
                if (recompute.isActive(oracles[i])) {
                    assertGe(recompute.bondOf(oracles[i]), MIN_BOND, "active => bonded");
                }
            }
        }
    }

    // ---------------------------------------------------------------- helpers

    function _deploy(uint256 silenceSlash_) internal returns (RecomputeOracle) {
        return new RecomputeOracle(
            FEE,
            MIN_BOND,
            CHALLENGE_BOND,
            silenceSlash_,
            ANSWER_WINDOW,
            CHALLENGE_WINDOW,
            VOTE_WINDOW,
            EXIT_DELAY,
            COMMITTEE_SIZE,
            MAX_ATTEMPTS
        );
    }

    function _assertBalanced() internal view {
        assertEq(
            address(recompute).balance,
            recompute.totalBonds() + recompute.totalChallengeBonds() + recompute.totalCredits()
                + recompute.totalBurnt(),
            "balance == bonds + challenge bonds + credits + burnt"
        );
    }

    function _register(address who, uint256 amount) internal {
        vm.deal(who, amount);
        vm.prank(who);
        recompute.register{value: amount}();
    }

    function _ask() internal returns (uint256) {
        vm.prank(game);
        return recompute.ask(PROGRAM, NODE, _outputs(42), [alice, bob]);
    }

    function _assigned(uint256 qid) internal view returns (address) {
        return recompute.question(qid).oracle;
    }

    function _answer(uint256 qid, bytes32[] memory outputs) internal {
        vm.prank(_assigned(qid));
        recompute.answer(qid, outputs);
    }

    function _challenge(uint256 qid) internal {
        vm.deal(challenger, CHALLENGE_BOND);
        vm.prank(challenger);
        recompute.challenge{value: CHALLENGE_BOND}(qid);
    }

    function _vote(uint256 qid, address member, bytes32[] memory outputs) internal {
        vm.prank(member);
        recompute.vote(qid, outputs);
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

    /// @dev A question answered with `_outputs(1)` and challenged by `challenger`.
    function _challenged() internal returns (uint256 qid) {
        qid = _ask();
        _answer(qid, _outputs(1));
        _challenge(qid);
    }

    /// @dev A question answered with `_outputs(1)`, unchallenged, settled.
    function _final() internal returns (uint256 qid) {
        qid = _ask();
        _answer(qid, _outputs(1));
        vm.warp(block.timestamp + CHALLENGE_WINDOW + 1);
        recompute.settle(qid);
    }

    /// @dev Lets the first assigned oracle stay silent and has it slashed; returns it.
    function _silenceFirstOracle() internal returns (address silent) {
        uint256 qid = _ask();
        silent = _assigned(qid);
        vm.warp(block.timestamp + ANSWER_WINDOW + 1);
        recompute.reassign(qid);
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

    function _otherOracle(address o) internal view returns (address) {
        return o == oracles[0] ? oracles[1] : oracles[0];
    }

    /// @dev Two distinct 32-byte commitments derived from `salt`.
    function _outputs(uint256 salt) internal pure returns (bytes32[] memory outputs) {
        outputs = new bytes32[](2);
        outputs[0] = keccak256(abi.encode("out", salt, 0));
        outputs[1] = keccak256(abi.encode("out", salt, 1));
    }

    function _hash(bytes32[] memory outputs) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(outputs));
    }

    /// @dev The active set as the contract holds it, while no oracle has left it.
    function _activeNow() internal view returns (address[] memory) {
        assertEq(recompute.activeCount(), oracles.length, "no departures");
        return oracles;
    }

    /// @dev The draw of docs: the first eligible oracle from `seed % n`, wrapping around.
    function _expectedDraw(
        uint256 qid,
        uint256 attempt,
        address[] memory active,
        address asker,
        address[2] memory parties
    ) internal view returns (address) {
        uint256 seed = uint256(
            keccak256(abi.encode(block.prevrandao, blockhash(block.number - 1), qid, attempt))
        );
        uint256 n = active.length;
        for (uint256 i; i < n; ++i) {
            address c = active[(seed % n + i) % n];
            if (c != asker && c != parties[0] && c != parties[1]) return c;
        }
        return address(0);
    }
}
