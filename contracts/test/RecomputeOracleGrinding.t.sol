// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, console} from "forge-std/Test.sol";

import {RecomputeOracle} from "../src/RecomputeOracle.sol";
import {IRecomputeOracle} from "../src/interfaces/IRecomputeOracle.sol";
import {RecomputeOracleRandomnessPending} from "../src/lib/OracleErrors.sol";
import {OracleSetup} from "./utils/OracleSetup.sol";

/// @notice Its oracles fill fewer than a majority of the seats just drawn.
error GrinderNoMajority(uint256 seats);

/// @dev An attacker that owns some oracles and tries to have them fill a committee majority by
///      choosing when `challenge` and `draw` happen, reverting every try that seats too few of them.
contract Grinder {
    RecomputeOracle private immutable _oracle;
    uint256 private immutable _want;
    mapping(address => bool) public owns;

    constructor(RecomputeOracle oracle_, address[] memory mine, uint256 want) {
        _oracle = oracle_;
        _want = want;
        for (uint256 i; i < mine.length; ++i) {
            owns[mine[i]] = true;
        }
    }

    /// @notice Draws, and keeps the draw only if its oracles hold at least `want` seats of the new round.
    function drawIfMajority(uint256 questionId) external {
        _oracle.draw(questionId);
        uint256 seats = seatsOf(questionId);
        if (seats < _want) revert GrinderNoMajority(seats);
    }

    /// @notice Challenges, and keeps the challenge only if the committee it brings is its own: the
    ///         lever of a draw made in the challenging transaction.
    function challengeIfMajority(uint256 questionId) external payable {
        _oracle.challenge{value: msg.value}(questionId);
        try _oracle.draw(questionId) {} catch {}
        uint256 seats = seatsOf(questionId);
        if (seats < _want) revert GrinderNoMajority(seats);
    }

    /// @notice Challenges and reports what can be seen of the committee in the same transaction.
    function challengeAndLook(uint256 questionId)
        external
        payable
        returns (IRecomputeOracle.QuestionStatus status, uint256 seated, bytes memory drawError)
    {
        _oracle.challenge{value: msg.value}(questionId);
        status = _oracle.question(questionId).status;
        seated = _oracle.committeeOf(questionId).length;
        try _oracle.draw(questionId) {}
        catch (bytes memory err) {
            drawError = err;
        }
    }

    /// @notice Its oracles among the seats of the question's last round (none while none is seated).
    function seatsOf(uint256 questionId) public view returns (uint256 seats) {
        address[] memory seated = _oracle.committeeOf(questionId);
        uint256 size = _oracle.params().committeeSize;
        if (seated.length < size) return 0;
        for (uint256 i = seated.length - size; i < seated.length; ++i) {
            if (owns[seated[i]]) ++seats;
        }
    }
}

/// @dev The bound game asking and drawing in one transaction.
contract EagerGame {
    function askAndDraw(RecomputeOracle oracle) external returns (bytes memory drawError) {
        uint256 qid = oracle.ask(keccak256("program"), 1, new bytes32[](0), [address(1), address(2)]);
        try oracle.draw(qid) {}
        catch (bytes memory err) {
            drawError = err;
        }
    }
}

/// @notice Nobody can steer a draw by choosing when it is made: the seed is the hash of the block
///         after the request (BlockhashRandomness), unknown when the request is made and the same
///         whenever the draw is made. An attacker holding a stake share `f` fills a majority of a
///         3-seat committee about as often as independent draws give, `3 f^2 - 2 f^3`.
contract RecomputeOracleGrindingTest is Test {
    uint256 internal constant MIN_BOND = 1 ether;
    uint256 internal constant HONEST = 12;
    uint256 internal constant ATTACKER = 4; // f = 4 / 16 = 0.25
    uint256 internal constant QUESTIONS = 200;
    /// @dev Blocks at which the attacker tries its draw, per question.
    uint256 internal constant TRIES = 6;

    RecomputeOracle internal recompute;
    Grinder internal grinder;
    address internal game = makeAddr("game");
    address[] internal honest;
    address[] internal mine;

    function setUp() public {
        vm.warp(1_700_000_000);
        vm.roll(1000);
        recompute =
            OracleSetup.deploy(OracleSetup.params(0, MIN_BOND, 0.1 ether, 0.1 ether, 1 hours, 1 days, 3, 2));
        recompute.bindGame(game);
        honest = OracleSetup.registerMany(recompute, "honest", HONEST);
        mine = OracleSetup.registerMany(recompute, "attacker", ATTACKER);
        grinder = new Grinder(recompute, mine, 2);
        vm.deal(address(grinder), 1000 ether);
    }

    /// @dev The committee of one challenged question is the same whatever block, prevrandao, parent
    ///      hash and time the draw is made with; the attacker's try either succeeds at every block or
    ///      at none.
    function test_draw_committeeIndependentOfDrawBlock_succeeds() public {
        for (uint256 q; q < 8; ++q) {
            uint256 qid = _challenged(q);
            uint256 target = OracleSetup.targetBlock(recompute, qid);
            vm.roll(target + 1);
            vm.setBlockhash(target, keccak256(abi.encode("target", q)));
            uint256 snapshot = vm.snapshotState();
            recompute.draw(qid);
            address[] memory keeperCommittee = recompute.committeeOf(qid);
            bool majority = grinder.seatsOf(qid) >= 2;
            for (uint256 k = 1; k <= 24; ++k) {
                vm.revertToState(snapshot);
                _moveTo(target, k);
                vm.setBlockhash(target, keccak256(abi.encode("target", q))); // the chain's, unchanged
                try grinder.drawIfMajority(qid) {
                    assertTrue(majority, "the attacker's try succeeds only where the first draw did");
                } catch (bytes memory err) {
                    assertFalse(majority, "the attacker's try fails only where the first draw did");
                    assertEq(bytes4(err), GrinderNoMajority.selector, "refused for its seats");
                    recompute.draw(qid);
                }
                assertEq(recompute.committeeOf(qid), keeperCommittee, "same committee whenever drawn");
            }
            vm.revertToState(snapshot);
            vm.setBlockhash(target, keccak256(abi.encode("target", q)));
            recompute.draw(qid);
        }
    }

    function testFuzz_draw_committeeIndependentOfDrawBlock_succeeds(
        bytes32 targetHash,
        uint8 later,
        bytes32 randao,
        bytes32 parent
    ) public {
        uint256 qid = _challenged(0);
        uint256 target = OracleSetup.targetBlock(recompute, qid);
        vm.roll(target + 1);
        vm.setBlockhash(target, targetHash);
        uint256 snapshot = vm.snapshotState();
        recompute.draw(qid);
        address[] memory keeperCommittee = recompute.committeeOf(qid);
        vm.revertToState(snapshot);
        vm.roll(target + 1 + uint256(later) % 250);
        vm.setBlockhash(target, targetHash);
        vm.prevrandao(randao);
        if (block.number - 1 > target) vm.setBlockhash(block.number - 1, parent);
        vm.warp(block.timestamp + uint256(later) * 12);
        recompute.draw(qid);
        assertEq(recompute.committeeOf(qid), keeperCommittee, "same committee whenever drawn");
    }

    /// @dev The target hash decides: different hashes seat different committees.
    function test_draw_targetHashDecides_succeeds() public {
        uint256 qid = _challenged(0);
        uint256 target = OracleSetup.targetBlock(recompute, qid);
        vm.roll(target + 1);
        uint256 snapshot = vm.snapshotState();
        vm.setBlockhash(target, keccak256("one"));
        recompute.draw(qid);
        address[] memory first = recompute.committeeOf(qid);
        uint256 differ;
        for (uint256 k; k < 8; ++k) {
            vm.revertToState(snapshot);
            vm.setBlockhash(target, keccak256(abi.encode("other", k)));
            recompute.draw(qid);
            if (keccak256(abi.encode(recompute.committeeOf(qid))) != keccak256(abi.encode(first))) ++differ;
        }
        assertGe(differ, 6, "the committee follows the target hash");
    }

    /// @dev Over 200 questions with pseudo-random target hashes, the attacker (f = 0.25) tries to draw
    ///      at 6 blocks each (other prevrandao, parent hashes, times) and keeps only draws that seat 2
    ///      or 3 of its oracles. It gets its majority at the rate a single honest draw gives: about
    ///      0.136 here (distinct seats; the answering oracle, sometimes its own, is excluded), below
    ///      the independent-seat figure 3f^2 - 2f^3 = 0.156; the test allows up to 0.25 (4.7 sd).
    function test_grind_majorityRate_withinBound_succeeds() public {
        uint256 majorities;
        uint256 grindWins;
        for (uint256 q; q < QUESTIONS; ++q) {
            uint256 qid = _challenged(q);
            uint256 target = OracleSetup.targetBlock(recompute, qid);
            vm.roll(target + 1);
            vm.setBlockhash(target, keccak256(abi.encode("grind", q)));
            // The committee an honest keeper would draw at the first block it can.
            uint256 snapshot = vm.snapshotState();
            recompute.draw(qid);
            address[] memory keeperCommittee = recompute.committeeOf(qid);
            vm.revertToState(snapshot);
            bool won;
            for (uint256 k; k < TRIES && !won; ++k) {
                if (k > 0) _moveTo(target, k);
                try grinder.drawIfMajority(qid) {
                    won = true;
                } catch {}
            }
            if (!won) recompute.draw(qid); // the keeper
            else ++grindWins;
            assertEq(recompute.committeeOf(qid), keeperCommittee, "grinding changes nothing");
            if (grinder.seatsOf(qid) >= 2) ++majorities;
        }
        assertEq(grindWins, majorities, "the attacker wins exactly where the keeper's draw favours it");
        console.log(
            "attacker majorities (per mille) over", QUESTIONS, "questions:", majorities * 1000 / QUESTIONS
        );
        assertLt(majorities * 100, QUESTIONS * 25, "majority rate < 0.25 (3f^2 - 2f^3 = 0.156)");
        assertGt(majorities * 100, QUESTIONS * 5, "and the attacker is drawn at all (rate > 0.05)");
    }

    /// @dev The old lever is gone: challenging and reading the committee in one transaction finds
    ///      none, and the draw reverts until a later block.
    function test_challenge_sameTransaction_noCommittee_succeeds() public {
        uint256 qid = _answered(0);
        uint256 requestId = recompute.question(qid).requestId + 1;
        (IRecomputeOracle.QuestionStatus status, uint256 seated, bytes memory drawError) =
            grinder.challengeAndLook{value: 0.1 ether}(qid);
        assertEq(uint8(status), uint8(IRecomputeOracle.QuestionStatus.CommitteeDrawing), "no committee yet");
        assertEq(seated, 0, "nobody seated");
        assertEq(
            drawError,
            abi.encodeWithSelector(RecomputeOracleRandomnessPending.selector, qid, requestId),
            "draw reverts: randomness pending"
        );
    }

    /// @dev A challenge kept only if it brings the attacker's committee is never kept, whatever block
    ///      it is tried in: the committee does not exist in the challenging transaction.
    function test_challenge_keptOnlyIfMajority_reverts() public {
        uint256 qid = _answered(0);
        for (uint256 k; k < 32; ++k) {
            vm.roll(block.number + 1);
            vm.prevrandao(keccak256(abi.encode("randao", k)));
            vm.expectRevert(abi.encodeWithSelector(GrinderNoMajority.selector, 0));
            grinder.challengeIfMajority{value: 0.1 ether}(qid);
        }
        assertEq(
            uint8(recompute.question(qid).status),
            uint8(IRecomputeOracle.QuestionStatus.Answered),
            "unchallenged"
        );
    }

    function test_ask_sameTransactionDraw_reverts() public {
        RecomputeOracle o =
            OracleSetup.deploy(OracleSetup.params(0, MIN_BOND, 0.1 ether, 0.1 ether, 1 hours, 1 days, 3, 2));
        EagerGame eager = new EagerGame();
        o.bindGame(address(eager));
        OracleSetup.registerMany(o, "o", 5);
        bytes memory err = eager.askAndDraw(o);
        assertEq(err, abi.encodeWithSelector(RecomputeOracleRandomnessPending.selector, 1, 1), "pending");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev The `k`-th block the attacker may pick after the target block: other prevrandao, parent
    ///      hash (never the target's) and time.
    function _moveTo(uint256 target, uint256 k) internal {
        vm.roll(target + 1 + k * 7);
        vm.prevrandao(keccak256(abi.encode("randao", target, k)));
        vm.setBlockhash(block.number - 1, keccak256(abi.encode("parent", target, k)));
        vm.warp(block.timestamp + k * 12);
    }

    /// @dev A question answered by its drawn oracle (target hash set pseudo-randomly).
    function _answered(uint256 q) internal returns (uint256 qid) {
        vm.prank(game);
        qid = recompute.ask(keccak256("program"), q, new bytes32[](0), [makeAddr("p0"), makeAddr("p1")]);
        OracleSetup.drawWith(recompute, qid, keccak256(abi.encode("answerer", q)));
        address answering = recompute.question(qid).oracle;
        vm.prank(answering);
        recompute.answer(qid, new bytes32[](1));
    }

    /// @dev A question answered and challenged by the attacker (its committee draw pending).
    function _challenged(uint256 q) internal returns (uint256 qid) {
        qid = _answered(q);
        vm.prank(address(grinder));
        recompute.challenge{value: 0.1 ether}(qid);
    }
}
