// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {RecomputeOracleOpenDuties} from "../src/lib/OracleErrors.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";

/// @notice Weaknesses of the redesigned RecomputeOracle found while testing it, each kept as a
///         regression test of the rule that fixed it.
contract RecomputeOracleFindingsTest is Test {
    uint256 internal constant MIN_BOND = 10 ether;
    uint256 internal constant SILENCE_SLASH = 2 ether;
    uint256 internal constant BOND = MIN_BOND + SILENCE_SLASH;
    uint256 internal constant CHALLENGE_BOND = 3 ether;
    uint64 internal constant ANSWER_WINDOW = 1 hours;
    uint64 internal constant CHALLENGE_WINDOW = 2 hours;
    uint64 internal constant VOTE_WINDOW = 3 hours;
    uint64 internal constant WAIT_LIMIT = 30 minutes;
    uint64 internal constant EXIT_DELAY = 1 days;
    uint256 internal constant NEED = 5; // committee of 3, plus answerer and challenger

    RecomputeOracle internal recompute;
    address internal game = makeAddr("game");
    address internal challenger = makeAddr("challenger");
    address[] internal oracles;

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.roll(1000);
    }

    /// @dev Finding A: a draw that re-requested randomness just before its deadline could succeed two
    ///      blocks after it, past `maxResolutionTime`. A draw past its deadline now only gives up: on
    ///      one-second blocks, with the keeper's last try two seconds before the deadline, the question
    ///      is abandoned at the deadline's next second, within the bound.
    function test_maxResolutionTime_oneSecondBlocks_withinBound_succeeds() public {
        _deploy(EXIT_DELAY, NEED - 1);
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        uint64 deadline = recompute.question(qid).deadline;
        _step(2);
        recompute.draw(qid); // too few: requests again
        _step(deadline - 2 - block.timestamp);
        _join("fifth", 1);
        recompute.draw(qid); // the request predates the fifth: too few, requests again
        _step(deadline + 1 - block.timestamp);
        assertTrue(recompute.drawReady(qid), "readable, but past the deadline");
        recompute.draw(qid);
        assertEq(uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Abandoned));
        assertLe(block.timestamp, askedAt + recompute.maxResolutionTime(), "within the bound");
    }

    /// @dev Finding B: a draw made late (after its deadline) with readable randomness still assigned,
    ///      and a late `reassign` opened a fresh wait. Both are anchored to the question now.
    function test_draw_lateAfterDeadline_abandons_succeeds() public {
        _deploy(EXIT_DELAY, 8);
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        vm.warp(askedAt + recompute.maxResolutionTime() + 1); // nobody drew for a long time
        recompute.draw(qid);
        assertEq(
            uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Abandoned), "abandoned"
        );
    }

    /// @dev Finding C: slots were never removed, and a draw makes at most 96 tries: one capital of 64
    ///      units passed through 20 fresh addresses left 1,280 dead slots beside 8 live ones and every
    ///      question was abandoned. Freed slots are reused now: the list does not grow, and every draw
    ///      is made.
    function test_draw_churnOfExitedOracles_doesNotDilute_succeeds() public {
        _deploy(EXIT_DELAY, 8);
        uint256 capital = 64 * MIN_BOND;
        for (uint256 i; i < 20; ++i) {
            address sybil = makeAddr(string.concat("sybil", vm.toString(i)));
            vm.deal(sybil, capital);
            vm.startPrank(sybil);
            recompute.register{value: capital}();
            recompute.requestExit();
            vm.warp(block.timestamp + EXIT_DELAY);
            recompute.exit();
            recompute.withdraw();
            vm.stopPrank();
            assertEq(sybil.balance, capital, "the capital comes back whole");
        }
        assertEq(recompute.slotCount(), 8 + 64, "freed slots are reused");
        vm.roll(block.number + 1);
        uint256 abandoned; // questions not assigned after four retries
        for (uint256 q; q < 10; ++q) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("dead", q)));
            // A draw that finds too few requests new randomness; the keeper tries again.
            for (uint256 retry; retry < 4 && _status(qid) == IRecomputeOracle.QuestionStatus.Drawing; ++retry) {
                OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("retry", q, retry)));
            }
            if (_status(qid) != IRecomputeOracle.QuestionStatus.Assigned) ++abandoned;
        }
        assertEq(abandoned, 0, "every question is drawn (64 free slots of 72 make a draw retry now and then)");
    }

    /// @dev Finding D: a member's duty ended with its round, so a member of a failed round that revealed
    ///      a wrong value could exit before a later round decided. Revealers stay on duty until the
    ///      question ends: the exit waits, and the liar is slashed when round 2 decides.
    function test_exit_dissenterBetweenRounds_cannotEscape_succeeds() public {
        _deploy(1 hours, 8);
        uint256 qid = _ask();
        OracleSetup.drawNow(recompute, qid);
        _answer(qid, 1);
        OracleSetup.challengeNow(recompute, qid, challenger);
        OracleSetup.drawNow(recompute, qid);
        address[] memory first = OracleSetup.currentRound(recompute, qid);
        address liar = first[1];
        vm.prank(liar);
        recompute.requestExit(); // after the request: it keeps its seat
        _vote(qid, _hash(1), _hash(2), _hash(3)); // no majority; the liar revealed a lie
        vm.warp(block.timestamp + 1 hours);
        recompute.settle(qid);
        vm.expectRevert(abi.encodeWithSelector(RecomputeOracleOpenDuties.selector, liar, 1));
        vm.prank(liar);
        recompute.exit();
        OracleSetup.drawNow(recompute, qid);
        _vote(qid, _hash(1), _hash(1), _hash(1));
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, _hash(1), "round 2 decides against the liar");
        assertEq(recompute.bondOf(liar), 0, "the liar is slashed");
        vm.prank(liar);
        recompute.exit(); // nothing left but it may leave
        assertEq(recompute.creditOf(liar), 0, "nothing to take out");
    }

    /// @dev Finding E: a deposit (even of nothing) re-activated an oracle, so one that read the seed
    ///      could leave the pending draw and force a re-roll of a thin pool (12 majorities of 12 with
    ///      re-rolls). A deposit now neither adds to nor removes from a pending draw: the attacker's
    ///      "leave" changes nothing and its majority rate falls back to the draw's own (about one in
    ///      two in this pool of two honest and two attacker oracles).
    function test_draw_depositAfterSeed_noReroll_succeeds() public {
        _deploy(EXIT_DELAY, 0);
        address[] memory honest = _join("honest", 3); // one of them answers
        address[] memory mine = _join("mine", 2);
        uint256 won;
        for (uint256 q; q < 12; ++q) {
            uint256 qid = _ask();
            vm.roll(block.number + 2);
            for (uint256 i;; ++i) {
                vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("a", q, i)));
                (address[] memory picks,) = OracleSetup.sample(recompute, qid, NEED, new address[](0));
                if (picks[0] == honest[0]) break;
            }
            recompute.draw(qid);
            _answer(qid, 1);
            OracleSetup.challengeNow(recompute, qid, challenger);
            vm.roll(block.number + 2);
            vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("c", q)));
            vm.prank(mine[0]);
            recompute.register(); // the old lever: leave the draw after reading its seed
            vm.prank(mine[1]);
            recompute.register();
            recompute.draw(qid);
            assertEq(
                uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Voting), "no re-roll"
            );
            address[] memory seated = OracleSetup.currentRound(recompute, qid);
            if (OracleSetup.contains(seated, mine[0]) && OracleSetup.contains(seated, mine[1])) ++won;
            vm.warp(recompute.question(qid).deadline + 1); // the round runs out unvoted
            recompute.settle(qid);
            vm.warp(recompute.question(qid).deadline + 1);
            OracleSetup.drawNow(recompute, qid); // round 2 cannot be seated: abandoned, refunded
            for (uint256 i; i < 3; ++i) {
                _topUp(honest[i]);
            }
            _topUp(mine[0]);
            _topUp(mine[1]);
            vm.roll(block.number + 1);
        }
        emit log_named_uint("attacker majorities of 12", won);
        assertLt(won, 12, "no longer every committee");
    }

    // ---------------------------------------------------------------- helpers

    function _deploy(uint64 exitDelay, uint256 n) internal {
        recompute = OracleSetup.deploy(
            IRecomputeOracle.Params({
                fee: 0.1 ether,
                minBond: MIN_BOND,
                challengeBond: CHALLENGE_BOND,
                silenceSlash: SILENCE_SLASH,
                answerWindow: ANSWER_WINDOW,
                challengeWindow: CHALLENGE_WINDOW,
                voteWindow: VOTE_WINDOW,
                exitDelay: exitDelay,
                waitLimit: WAIT_LIMIT,
                committeeSize: 3,
                maxAttempts: 2,
                maxRounds: 2
            })
        );
        recompute.bindGame(game);
        delete oracles;
        _join("oracle", n);
    }

    function _join(string memory prefix, uint256 n) internal returns (address[] memory who) {
        who = new address[](n);
        for (uint256 i; i < n; ++i) {
            who[i] = makeAddr(string.concat(prefix, vm.toString(i)));
            vm.deal(who[i], BOND);
            vm.prank(who[i]);
            recompute.register{value: BOND}();
            oracles.push(who[i]);
        }
        vm.roll(block.number + 1);
    }

    function _status(uint256 qid) internal view returns (IRecomputeOracle.QuestionStatus) {
        return recompute.question(qid).status;
    }

    function _topUp(address o) internal {
        uint256 bond = recompute.bondOf(o);
        if (bond >= BOND) return;
        vm.deal(o, BOND - bond);
        vm.prank(o);
        recompute.register{value: BOND - bond}();
    }

    function _ask() internal returns (uint256) {
        vm.prank(game);
        return recompute.ask(keccak256("program"), 1, new bytes32[](0), [makeAddr("p0"), makeAddr("p1")]);
    }

    function _outputs(uint256 salt) internal pure returns (bytes32[] memory outputs) {
        outputs = new bytes32[](1);
        outputs[0] = keccak256(abi.encode("out", salt));
    }

    function _hash(uint256 salt) internal pure returns (bytes32) {
        return OracleSetup.hashOf(_outputs(salt));
    }

    function _answer(uint256 qid, uint256 salt) internal {
        vm.prank(recompute.question(qid).oracle);
        recompute.answer(qid, _outputs(salt));
    }

    function _vote(uint256 qid, bytes32 a, bytes32 b, bytes32 c) internal {
        bytes32[] memory votes = new bytes32[](3);
        votes[0] = a;
        votes[1] = b;
        votes[2] = c;
        OracleSetup.voteNow(recompute, qid, votes);
    }

    /// @dev One-second blocks: `dt` blocks and `dt` seconds.
    function _step(uint256 dt) internal {
        vm.roll(block.number + dt);
        vm.warp(block.timestamp + dt);
    }
}
