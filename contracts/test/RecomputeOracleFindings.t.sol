// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";

/// @notice Weaknesses of the redesigned RecomputeOracle found while testing it. Each test pins the
///         current behaviour and says what a fix would change: when the contract is fixed, the test
///         fails and is turned into a rule test.
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

    /// @dev Finding A: `maxResolutionTime` leaves no time for the randomness to become readable. A
    ///      draw that still finds too few oracles at its deadline requests randomness again, readable
    ///      only two blocks later; with one-second blocks and every due call made at the first block
    ///      it is allowed, the slowest path ends `maxAttempts + maxRounds - 2` seconds after the
    ///      bound (with 12-second blocks, about 24 s per draw). A fix counts the randomness latency
    ///      (in seconds) per draw in the bound, or anchors the windows that follow a late draw to its
    ///      deadline.
    function test_maxResolutionTime_oneSecondBlocks_exceedsBound_succeeds() public {
        _deploy(EXIT_DELAY, NEED - 1);
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        _slowDraw(qid, _one("fifth"));
        _step(recompute.question(qid).deadline + 1 - block.timestamp);
        recompute.reassign(qid);
        _slowDraw(qid, _one("sixth"));
        _step(recompute.question(qid).deadline - block.timestamp);
        _answer(qid, 1);
        address[] memory leavers = _leaveAllBut(qid, 2); // the committee pool thinned to 2
        _step(recompute.question(qid).deadline - block.timestamp);
        OracleSetup.challengeNow(recompute, qid, challenger);
        _slowDraw(qid, leavers);
        assertEq(
            uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Voting), "round 1"
        );
        _step(recompute.question(qid).deadline + 1 - block.timestamp);
        recompute.settle(qid);
        _slowDraw(qid, _one("seventh"));
        assertEq(
            uint8(recompute.question(qid).status), uint8(IRecomputeOracle.QuestionStatus.Voting), "round 2"
        );
        _step(recompute.question(qid).deadline + 1 - block.timestamp);
        recompute.settle(qid);
        assertEq(
            uint8(recompute.question(qid).status),
            uint8(IRecomputeOracle.QuestionStatus.Abandoned),
            "abandoned"
        );
        uint256 bound = askedAt + recompute.maxResolutionTime();
        assertEq(block.timestamp, bound + 2 + 2 - 2, "ends maxAttempts + maxRounds - 2 s after the bound");
    }

    /// @dev Finding B: a draw made late (after its deadline) with readable randomness still assigns,
    ///      and a late `reassign` opens a fresh wait: windows follow the calls, not the question (as
    ///      in Findings.t.sol's finding 1 before its fix). The interface states the bound only "if
    ///      every due call is made within a second"; `DisputeGame.timeBound` inherits that proviso.
    function test_draw_lateAfterDeadline_assignsBeyondBound_succeeds() public {
        _deploy(EXIT_DELAY, 8);
        uint256 askedAt = block.timestamp;
        uint256 qid = _ask();
        vm.roll(block.number + 2);
        vm.warp(askedAt + recompute.maxResolutionTime() + 1); // nobody drew for a long time
        recompute.draw(qid);
        IRecomputeOracle.Question memory q = recompute.question(qid);
        assertEq(uint8(q.status), uint8(IRecomputeOracle.QuestionStatus.Assigned), "assigned, not abandoned");
        assertGt(q.deadline, askedAt + recompute.maxResolutionTime(), "open past maxResolutionTime");
    }

    /// @dev Finding C: slots are never removed, and a draw makes at most 96 tries. Stake units of
    ///      oracles that left (or were slashed below them) keep being sampled and skipped, so enough
    ///      of them make every draw find too few oracles: questions wait, then are abandoned. Here one
    ///      capital of 64 units passes through 20 fresh addresses (register, request exit, exit a day
    ///      later) and leaves 1,280 dead slots beside 8 live ones: each try hits a live slot 0.6% of
    ///      the time. Honest churn does the same slowly. A fix lets a returning owner's slots be
    ///      reused by others (a free list), or samples among live slots only (e.g. a sum tree).
    function test_draw_deadSlotsOfExitedOracles_abandon_succeeds() public {
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
        assertEq(recompute.slotCount(), 8 + 20 * 64, "dead slots stay");
        uint256 abandoned;
        for (uint256 q; q < 10; ++q) {
            uint256 qid = _ask();
            OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("dead", q)));
            vm.warp(block.timestamp + WAIT_LIMIT + 1);
            OracleSetup.drawNow(recompute, qid);
            if (recompute.question(qid).status == IRecomputeOracle.QuestionStatus.Abandoned) ++abandoned;
        }
        assertEq(abandoned, 10, "every question is abandoned though 8 oracles are live");
    }

    /// @dev Finding D: a member's duty ends with its round. A member of a failed round that revealed a
    ///      wrong value, and requested its exit when seated, can take its bond out before a later
    ///      round decides, and the slash "of every round's dissenters" finds nothing. Reachable when
    ///      `exitDelay` is shorter than the rounds that follow (here 1 hour against 6.5-hour rounds),
    ///      or when the deciding `settle` comes late. A fix keeps revealers on duty until the question
    ///      is decided, or requires `exitDelay >= maxResolutionTime()`.
    function test_exit_dissenterBetweenRounds_escapesSlash_succeeds() public {
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
        vm.prank(liar);
        recompute.exit(); // its duty ended with round 1
        OracleSetup.drawNow(recompute, qid);
        _vote(qid, _hash(1), _hash(1), _hash(1));
        recompute.settle(qid);
        (, bytes32 result) = recompute.result(qid);
        assertEq(result, _hash(1), "round 2 decides against the liar");
        assertEq(recompute.creditOf(liar), BOND, "the liar took its whole bond out");
        assertEq(recompute.bondOf(first[2]), 0, "round 1's other wrong member, still bonded, is slashed");
    }

    /// @dev Finding E: eligibility is read at draw time, and a deposit (even of nothing) re-activates:
    ///      an oracle that reads the seed before the draw can leave that draw. It only ever removes
    ///      its own seats, but where the eligible pool is within its oracles' count of `need` it
    ///      makes the draw find too few and request fresh randomness: a re-roll, as often as it likes
    ///      until the wait runs out. Here the committee pool is two honest oracles and two of the
    ///      attacker's: one draw in two seats both of the attacker's; with re-rolls, every question.
    ///      A fix: a deposit after the request does not remove a slot from it (and does not add one),
    ///      e.g. remember the activation a deposit replaced.
    function test_draw_selfRemovalRerollsThinPool_succeeds() public {
        _deploy(EXIT_DELAY, 0);
        address[] memory honest = _join("honest", 3); // one of them answers
        address[] memory mine = _join("mine", 2);
        uint256 won;
        uint256 rerolls;
        for (uint256 q; q < 12; ++q) {
            uint256 qid = _ask();
            // The honest answerer, so that the committee pool is 2 honest + 2 attacker oracles.
            vm.roll(block.number + 2);
            for (uint256 i;; ++i) {
                vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("a", q, i)));
                (address[] memory picks,) = OracleSetup.sample(recompute, qid, NEED, new address[](0));
                if (picks[0] == honest[0]) break;
            }
            recompute.draw(qid);
            _answer(qid, 1);
            OracleSetup.challengeNow(recompute, qid, challenger);
            for (uint256 r;; ++r) {
                vm.roll(block.number + 2);
                vm.setBlockhash(OracleSetup.targetBlock(recompute, qid), keccak256(abi.encode("c", q, r)));
                address[] memory excluded = new address[](2);
                excluded[0] = honest[0];
                excluded[1] = challenger;
                (address[] memory picks,) = OracleSetup.sample(recompute, qid, 3, excluded);
                if (OracleSetup.contains(picks, mine[0]) && OracleSetup.contains(picks, mine[1])) {
                    recompute.draw(qid);
                    break;
                }
                // Not its majority: both its oracles leave this draw (a deposit of nothing).
                vm.prank(mine[0]);
                recompute.register();
                vm.prank(mine[1]);
                recompute.register();
                vm.roll(block.number + 1);
                recompute.draw(qid); // finds two: requests again, counting them again
                assertEq(
                    uint8(recompute.question(qid).status),
                    uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing),
                    "re-rolled"
                );
                ++rerolls;
            }
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
        emit log_named_uint("re-rolls for 12 majorities", rerolls);
        assertEq(won, 12, "the attacker holds a majority of every committee");
        assertGt(rerolls, 0, "by re-rolling");
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

    /// @dev The slowest draw on one-second blocks, every call at the first block it is allowed: the
    ///      keeper tries at once and two seconds before the deadline (too few: it requests again),
    ///      `joiners` (re)register a second later, too late for the request the try at the deadline
    ///      reads; that try requests once more, and its randomness is readable two blocks later.
    function _slowDraw(uint256 qid, address[] memory joiners) internal {
        uint64 deadline = recompute.question(qid).deadline;
        _step(2);
        recompute.draw(qid);
        _step(deadline - 2 - block.timestamp);
        recompute.draw(qid);
        _step(1);
        for (uint256 i; i < joiners.length; ++i) {
            uint256 bond = recompute.bondOf(joiners[i]);
            vm.deal(joiners[i], BOND);
            vm.prank(joiners[i]);
            recompute.register{value: bond >= MIN_BOND ? 0 : BOND}();
            if (bond == 0) oracles.push(joiners[i]);
        }
        _step(1);
        assertEq(block.timestamp, deadline, "at the deadline");
        recompute.draw(qid); // reads the request made before the joiners: too few, requests again
        _step(1);
        assertFalse(recompute.drawReady(qid), "pending a second after the deadline");
        _step(1);
        recompute.draw(qid);
    }

    function _one(string memory name) internal returns (address[] memory who) {
        who = new address[](1);
        who[0] = makeAddr(name);
    }

    function _leaveAllBut(uint256 qid, uint256 keep) internal returns (address[] memory leavers) {
        address answering = recompute.question(qid).oracle;
        leavers = new address[](oracles.length - 1 - keep);
        uint256 kept;
        uint256 n;
        for (uint256 i; i < oracles.length; ++i) {
            if (oracles[i] == answering) continue;
            if (kept++ < keep) continue;
            vm.prank(oracles[i]);
            recompute.requestExit();
            leavers[n++] = oracles[i];
        }
        _step(1);
    }
}
