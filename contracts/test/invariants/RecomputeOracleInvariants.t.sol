// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {StdInvariant} from "forge-std/StdInvariant.sol";
import {Test} from "forge-std/Test.sol";

import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {OracleHandler} from "./OracleHandler.sol";

/// @title RecomputeOracleInvariantsTest
/// @notice The oracle's money properties under random oracle, question and committee traffic
///         (OracleHandler; PROPERTIES.md).
contract RecomputeOracleInvariantsTest is Test {
    RecomputeOracle internal oracle;
    OracleHandler internal handler;

    function setUp() public {
        oracle = new RecomputeOracle({
            fee_: 0.01 ether,
            minBond_: 1 ether,
            challengeBond_: 0.3 ether + 1, // odd: the upheld challenger's half leaves a remainder
            silenceSlash_: 0.2 ether,
            answerWindow_: 1 hours,
            challengeWindow_: 1 hours,
            voteWindow_: 1 hours,
            exitDelay_: 6 hours,
            committeeSize_: 3,
            maxAttempts_: 3
        });
        handler = new OracleHandler(oracle);
        targetContract(address(handler));
        bytes4[] memory selectors = new bytes4[](13);
        selectors[0] = OracleHandler.register.selector;
        selectors[1] = OracleHandler.requestExit.selector;
        selectors[2] = OracleHandler.exit.selector;
        selectors[3] = OracleHandler.ask.selector;
        selectors[4] = OracleHandler.answer.selector;
        selectors[5] = OracleHandler.reassign.selector;
        selectors[6] = OracleHandler.challenge.selector;
        selectors[7] = OracleHandler.vote.selector;
        selectors[8] = OracleHandler.settle.selector;
        selectors[9] = OracleHandler.payFee.selector;
        selectors[10] = OracleHandler.withdraw.selector;
        selectors[11] = OracleHandler.warp.selector;
        selectors[12] = OracleHandler.register.selector; // twice: an active set worth drawing from
        targetSelector(StdInvariant.FuzzSelector({addr: address(handler), selectors: selectors}));
    }

    /// @notice Every wei the oracle holds is an oracle bond, a challenge bond, a credit or burnt.
    function invariant_oracle_fundsConserved() public view {
        assertEq(
            address(oracle).balance,
            oracle.totalBonds() + oracle.totalChallengeBonds() + oracle.totalCredits() + oracle.totalBurnt(),
            "balance != bonds + challenge bonds + credits + burnt"
        );
    }

    /// @notice The totals are the sums of the accounts: bonds, credits, and one challenge bond per
    ///         question under challenge.
    function invariant_oracle_ledgersMatch() public view {
        address[] memory actors = handler.actors();
        uint256 bonds;
        uint256 credits;
        for (uint256 i; i < actors.length; ++i) {
            bonds += oracle.bondOf(actors[i]);
            credits += oracle.creditOf(actors[i]);
        }
        assertEq(bonds, oracle.totalBonds(), "sum of bonds != totalBonds");
        assertEq(credits, oracle.totalCredits(), "sum of credits != totalCredits");
        uint256[] memory qids = handler.questionIds();
        uint256 challenged;
        for (uint256 i; i < qids.length; ++i) {
            if (oracle.question(qids[i]).status == IRecomputeOracle.QuestionStatus.Challenged) ++challenged;
        }
        assertEq(oracle.totalChallengeBonds(), challenged * oracle.challengeBond(), "challenge bonds");
    }

    /// @notice Every question ends in time, however late it is poked: from `askedAt +
    ///         maxResolutionTime + maxAttempts` on (a deadline is the last second allowed, so each
    ///         attempt can end one second late), it is final or abandoned, or `reassign` and `settle`
    ///         (anyone) make it so; tried on a thrown-away snapshot.
    function invariant_oracle_questionsEnd() public {
        uint256[] memory qids = handler.questionIds();
        uint256 bound = uint256(oracle.maxResolutionTime()) + oracle.maxAttempts();
        for (uint256 i; i < qids.length; ++i) {
            if (block.timestamp < handler.askedAt(qids[i]) + bound || _ended(qids[i])) continue;
            uint256 snapshot = vm.snapshotState();
            for (uint256 k; k < 8 && !_ended(qids[i]); ++k) {
                if (oracle.question(qids[i]).status == IRecomputeOracle.QuestionStatus.Assigned) {
                    try oracle.reassign(qids[i]) {} catch {}
                } else {
                    try oracle.settle(qids[i]) {} catch {}
                }
            }
            bool ended = _ended(qids[i]);
            vm.revertToState(snapshot);
            assertTrue(ended, string.concat("question ", vm.toString(qids[i]), " outlived maxResolutionTime"));
        }
    }

    /// @notice Only bonded oracles are drawn: every active oracle holds at least `minBond`.
    function invariant_oracle_activeBonded() public view {
        address[] memory actors = handler.actors();
        uint256 active;
        for (uint256 i; i < actors.length; ++i) {
            if (!oracle.isActive(actors[i])) continue;
            ++active;
            assertGe(oracle.bondOf(actors[i]), oracle.minBond(), "active oracle below minBond");
        }
        assertEq(active, oracle.activeCount(), "active set size");
    }

    function _ended(uint256 qid) internal view returns (bool) {
        IRecomputeOracle.QuestionStatus status = oracle.question(qid).status;
        return status == IRecomputeOracle.QuestionStatus.Final
            || status == IRecomputeOracle.QuestionStatus.Abandoned;
    }
}
