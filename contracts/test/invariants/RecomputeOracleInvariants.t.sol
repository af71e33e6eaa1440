// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {StdInvariant} from "forge-std/StdInvariant.sol";
import {Test, console} from "forge-std/Test.sol";

import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {OracleSetup} from "../utils/OracleSetup.sol";
import {OracleHandler} from "./OracleHandler.sol";

/// @title RecomputeOracleInvariantsTest
/// @notice The oracle's money, honesty and time properties under adversarial oracle, question and
///         committee traffic (OracleHandler; PROPERTIES.md).
contract RecomputeOracleInvariantsTest is Test {
    RecomputeOracle internal oracle;
    OracleHandler internal handler;

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.roll(1000);
        oracle = OracleSetup.deploy(
            IRecomputeOracle.Params({
                fee: 0.01 ether + 1, // split among voters, it leaves a remainder
                minBond: 1 ether,
                challengeBond: 0.3 ether + 1, // odd: the upheld challenger's half leaves a remainder
                silenceSlash: 0.2 ether,
                answerWindow: 1 hours,
                challengeWindow: 1 hours,
                voteWindow: 1 hours,
                exitDelay: 6 hours,
                waitLimit: 30 minutes,
                committeeSize: 3,
                maxAttempts: 2,
                maxRounds: 2
            })
        );
        handler = new OracleHandler(oracle);
        oracle.bindGame(address(handler));
        targetContract(address(handler));
        bytes4[] memory selectors = new bytes4[](21);
        selectors[0] = OracleHandler.register.selector;
        selectors[1] = OracleHandler.requestExit.selector;
        selectors[2] = OracleHandler.exit.selector;
        selectors[3] = OracleHandler.ask.selector;
        selectors[4] = OracleHandler.draw.selector;
        selectors[5] = OracleHandler.answer.selector;
        selectors[6] = OracleHandler.challenge.selector;
        selectors[7] = OracleHandler.watch.selector;
        selectors[8] = OracleHandler.commit.selector;
        selectors[9] = OracleHandler.reveal.selector;
        selectors[10] = OracleHandler.reassign.selector;
        selectors[11] = OracleHandler.settle.selector;
        selectors[12] = OracleHandler.payFee.selector;
        selectors[13] = OracleHandler.withdraw.selector;
        selectors[14] = OracleHandler.warp.selector;
        selectors[15] = OracleHandler.lateWarp.selector;
        // Twice: questions to work on, answers to challenge, votes to count, time to pass.
        selectors[16] = OracleHandler.ask.selector;
        selectors[17] = OracleHandler.answer.selector;
        selectors[18] = OracleHandler.commit.selector;
        selectors[19] = OracleHandler.warp.selector;
        selectors[20] = OracleHandler.warp.selector; // thrice: most of the time the keeper is there
        targetSelector(StdInvariant.FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @notice Every wei the oracle holds is an oracle bond, a challenge bond, a credit or burnt.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_oracle_fundsConserved() public view {
        OracleSetup.assertFunds(oracle);
    }

    /// @notice The totals are the sums of the accounts: bonds, credits, stake units (the slots), and
    ///         one challenge bond per question under challenge.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_oracle_ledgersMatch() public view {
        address[] memory actors = handler.actors();
        uint256 bonds;
        uint256 credits;
        uint256 units;
        for (uint256 i; i < actors.length; ++i) {
            bonds += oracle.bondOf(actors[i]);
            credits += oracle.creditOf(actors[i]);
            units += oracle.unitsOf(actors[i]);
        }
        assertEq(bonds, oracle.totalBonds(), "sum of bonds != totalBonds");
        assertEq(credits, oracle.totalCredits(), "sum of credits != totalCredits");
        assertEq(units + oracle.freeSlotCount(), oracle.slotCount(), "units + free slots != slotCount");
        for (uint256 i; i < actors.length; ++i) {
            uint256 covered = oracle.bondOf(actors[i]) / oracle.minBond();
            assertEq(oracle.unitsOf(actors[i]), covered > 64 ? 64 : covered, "units != whole bonds");
        }
        uint256[] memory qids = handler.questionIds();
        uint256 challenged;
        for (uint256 i; i < qids.length; ++i) {
            IRecomputeOracle.QuestionStatus s = oracle.question(qids[i]).status;
            if (
                s == IRecomputeOracle.QuestionStatus.CommitteeDrawing
                    || s == IRecomputeOracle.QuestionStatus.Voting
            ) {
                ++challenged;
            }
        }
        assertEq(oracle.totalChallengeBonds(), challenged * oracle.challengeBond(), "challenge bonds");
    }

    /// @notice Every question whose due calls were made at the first second allowed is final or
    ///         abandoned by `askedAt + maxResolutionTime()`.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_oracle_questionsEndInTime() public view {
        uint256[] memory qids = handler.questionIds();
        uint256 bound = oracle.maxResolutionTime();
        for (uint256 i; i < qids.length; ++i) {
            if (handler.exempt(qids[i]) || block.timestamp <= handler.askedAt(qids[i]) + bound) continue;
            IRecomputeOracle.QuestionStatus s = oracle.question(qids[i]).status;
            assertTrue(
                s == IRecomputeOracle.QuestionStatus.Final || s == IRecomputeOracle.QuestionStatus.Abandoned,
                string.concat("question ", vm.toString(qids[i]), " outlived maxResolutionTime")
            );
        }
    }

    /// @notice An honest oracle (it answers and votes the truth in time) never loses bond, except
    ///         over a question on which a committee round seated an adversarial majority; and none of
    ///         its calls is ever refused.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_honest_neverLosesBond() public view {
        assertEq(handler.unexcusedLosses(), 0, "an honest oracle lost bond without an adversarial majority");
        assertEq(handler.honestReverts(), 0, "an honest call was refused");
        address[] memory honest = handler.honestOracles();
        for (uint256 i; i < honest.length; ++i) {
            assertGe(
                oracle.bondOf(honest[i]) + handler.excusedLoss(honest[i]),
                handler.honestDeposits(honest[i]),
                "honest bond + excused losses >= deposits"
            );
        }
    }

    /// @notice A final question decided by a committee round that seated an honest majority has the
    ///         true answer; so has one an honest oracle answered unchallenged.
    /// forge-config: default.invariant.fail-on-revert = true
    /// forge-config: ci.invariant.fail-on-revert = true
    function invariant_oracle_honestMajorityDecidesTruth() public view {
        uint256[] memory qids = handler.questionIds();
        for (uint256 i; i < qids.length; ++i) {
            IRecomputeOracle.Question memory q = oracle.question(qids[i]);
            if (q.status != IRecomputeOracle.QuestionStatus.Final) continue;
            bool honestDecides;
            if (q.round == 0) {
                honestDecides = handler.isHonest(q.oracle);
            } else {
                address[] memory m = OracleSetup.currentRound(oracle, qids[i]);
                uint256 honest;
                for (uint256 j; j < m.length; ++j) {
                    if (handler.isHonest(m[j])) ++honest;
                }
                honestDecides = honest * 2 > m.length;
            }
            if (honestDecides) {
                assertEq(q.outputsHash, handler.trueHash(qids[i]), "an honest majority decided a lie");
            }
        }
    }

    /// @notice What the campaign reached (printed with -vv).
    function afterInvariant() public view {
        bytes32[22] memory keys = [
            bytes32("ask"),
            "assigned",
            "draw: waits",
            "answer: honest",
            "answer: true",
            "answer: lie",
            "answer: unavailable",
            "reassign",
            "challenge: adversary",
            "challenge: watcher",
            "seated: round 1",
            "seated: round 2",
            "seated: adversarial majority",
            "round failed",
            "final: unchallenged",
            "final: upheld",
            "final: overturned",
            "final: not the truth",
            "abandoned: draw",
            "abandoned: attempts",
            "abandoned: rounds",
            "honest loss: excused"
        ];
        for (uint256 i; i < keys.length; ++i) {
            console.log(_text(keys[i]), handler.reach(keys[i]));
        }
    }

    function _text(bytes32 key) internal pure returns (string memory) {
        uint256 n;
        while (n < 32 && key[n] != 0) ++n;
        bytes memory b = new bytes(n);
        for (uint256 i; i < n; ++i) {
            b[i] = key[i];
        }
        return string(b);
    }
}
