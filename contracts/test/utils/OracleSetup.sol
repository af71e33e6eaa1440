// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {BlockhashRandomness} from "../../src/BlockhashRandomness.sol";
import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {IRecomputeOracle, ORACLE_UNAVAILABLE} from "../../src/interfaces/IRecomputeOracle.sol";

/// @notice Deploys a recompute oracle over block-hash randomness and drives its draws and votes in
///         tests: the randomness of a draw is readable once a block was mined after the request.
library OracleSetup {
    Vm internal constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    function params(
        uint256 fee,
        uint256 minBond,
        uint256 challengeBond,
        uint256 silenceSlash,
        uint64 window,
        uint64 exitDelay,
        uint8 committeeSize,
        uint8 maxAttempts
    ) internal pure returns (IRecomputeOracle.Params memory) {
        return IRecomputeOracle.Params({
            fee: fee,
            minBond: minBond,
            challengeBond: challengeBond,
            silenceSlash: silenceSlash,
            answerWindow: window,
            challengeWindow: window,
            voteWindow: window,
            exitDelay: exitDelay,
            waitLimit: window,
            committeeSize: committeeSize,
            maxAttempts: maxAttempts,
            maxRounds: 2
        });
    }

    /// @notice A fresh oracle (randomness delay 1 block); the caller is its deployer.
    function deploy(IRecomputeOracle.Params memory p) internal returns (RecomputeOracle) {
        return new RecomputeOracle(new BlockhashRandomness(1), p);
    }

    /// @notice Registers `who` with `amount`, and mines a block so that it is eligible at once.
    function register(RecomputeOracle oracle, address who, uint256 amount) internal {
        VM.deal(who, who.balance + amount);
        VM.prank(who);
        oracle.register{value: amount}();
        VM.roll(block.number + 1);
    }

    /// @notice `n` oracles named `prefix-0`, ... with one unit each.
    function registerMany(RecomputeOracle oracle, string memory prefix, uint256 n)
        internal
        returns (address[] memory who)
    {
        who = new address[](n);
        uint256 bond = oracle.minBond();
        for (uint256 i; i < n; ++i) {
            who[i] = VM.addr(uint256(keccak256(abi.encode(prefix, i))));
            VM.label(who[i], string.concat(prefix, "-", VM.toString(i)));
            VM.deal(who[i], who[i].balance + bond);
            VM.prank(who[i]);
            oracle.register{value: bond}();
        }
        VM.roll(block.number + 1);
    }

    /// @notice Mines the block that fixes the pending randomness, then draws.
    function drawNow(RecomputeOracle oracle, uint256 questionId) internal {
        VM.roll(block.number + 2);
        oracle.draw(questionId);
    }

    function answerNow(RecomputeOracle oracle, uint256 questionId, bytes32[] memory outputs) internal {
        if (oracle.question(questionId).status == IRecomputeOracle.QuestionStatus.Drawing) {
            drawNow(oracle, questionId);
        }
        VM.prank(oracle.question(questionId).oracle);
        oracle.answer(questionId, outputs);
    }

    /// @notice The commitment a member posts for `outputsHash`.
    function commitment(uint256 questionId, address member, bytes32 outputsHash, bytes32 salt)
        internal
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(questionId, member, outputsHash, salt));
    }

    /// @notice Every seated member of the current round commits, then reveals, `votes[i]`.
    function voteNow(RecomputeOracle oracle, uint256 questionId, bytes32[] memory votes) internal {
        address[] memory seated = oracle.committeeOf(questionId);
        uint256 start = seated.length - votes.length;
        for (uint256 i; i < votes.length; ++i) {
            address m = seated[start + i];
            VM.prank(m);
            oracle.commitVote(questionId, commitment(questionId, m, votes[i], bytes32(i + 1)));
        }
        for (uint256 i; i < votes.length; ++i) {
            VM.prank(seated[start + i]);
            oracle.revealVote(questionId, votes[i], bytes32(i + 1));
        }
    }

    /// @notice `who` challenges `questionId` with exactly the challenge bond (dealt to it).
    function challengeNow(RecomputeOracle oracle, uint256 questionId, address who) internal {
        uint256 bond = oracle.challengeBond();
        VM.deal(who, who.balance + bond);
        VM.prank(who);
        oracle.challenge{value: bond}(questionId);
    }

    /// @notice `member` commits to `outputsHash` with `salt`.
    function commitNow(
        RecomputeOracle oracle,
        uint256 questionId,
        address member,
        bytes32 outputsHash,
        bytes32 salt
    ) internal {
        VM.prank(member);
        oracle.commitVote(questionId, commitment(questionId, member, outputsHash, salt));
    }

    /// @notice `member` reveals `outputsHash` with `salt`.
    function revealNow(
        RecomputeOracle oracle,
        uint256 questionId,
        address member,
        bytes32 outputsHash,
        bytes32 salt
    ) internal {
        VM.prank(member);
        oracle.revealVote(questionId, outputsHash, salt);
    }

    /// @notice The members of the question's current (last seated) round, in seating order.
    function currentRound(RecomputeOracle oracle, uint256 questionId)
        internal
        view
        returns (address[] memory members)
    {
        address[] memory seated = oracle.committeeOf(questionId);
        uint256 size = oracle.params().committeeSize;
        members = new address[](size);
        for (uint256 i; i < size; ++i) {
            members[i] = seated[seated.length - size + i];
        }
    }

    /// @notice The block whose hash decides the pending draw of `questionId`.
    function targetBlock(RecomputeOracle oracle, uint256 questionId) internal view returns (uint256) {
        return
            oracle.question(questionId).requestBlock
                + BlockhashRandomness(address(oracle.randomness())).delay();
    }

    /// @notice Mines up to the block after the pending draw's target block, gives the target block the
    ///         hash `targetHash` (the chain's choice), and draws.
    function drawWith(RecomputeOracle oracle, uint256 questionId, bytes32 targetHash) internal {
        uint256 target = targetBlock(oracle, questionId);
        if (block.number <= target) VM.roll(target + 1);
        VM.setBlockhash(target, targetHash);
        oracle.draw(questionId);
    }

    /// @notice The seed of the pending draw of `questionId` as `draw` forms it from block-hash randomness
    ///         (readable once the target block is mined).
    function seedOf(RecomputeOracle oracle, uint256 questionId) internal view returns (bytes32) {
        IRecomputeOracle.Question memory q = oracle.question(questionId);
        bytes32 value = keccak256(abi.encode(blockhash(targetBlock(oracle, questionId)), q.requestId));
        return keccak256(abi.encode(value, questionId, q.attempts, q.round));
    }

    /// @notice The draw of docs/game.md re-done off-chain: the first `need` distinct owners met by the
    ///         tries `keccak256(seed, t) % slotCount` (t < 96), skipping free slots, the parties and
    ///         `excluded` (a slash frees the slots a bond no longer covers). Valid while every other slot the
    ///         question counts is eligible (created and activated before the request, no exit
    ///         requested before it).
    function sample(RecomputeOracle oracle, uint256 questionId, uint256 need, address[] memory excluded)
        internal
        view
        returns (address[] memory picks, uint256 found)
    {
        IRecomputeOracle.Question memory q = oracle.question(questionId);
        bytes32 seed = seedOf(oracle, questionId);
        picks = new address[](need);
        if (q.slotCount == 0) return (picks, 0);
        for (uint256 t; t < 96 && found < need; ++t) {
            uint256 slot = uint256(keccak256(abi.encode(seed, t))) % q.slotCount;
            address a = oracle.slotOwner(slot);
            if (a == address(0) || a == q.parties[0] || a == q.parties[1] || contains(excluded, a)) continue;
            bool again;
            for (uint256 j; j < found; ++j) {
                if (picks[j] == a) again = true;
            }
            if (!again) picks[found++] = a;
        }
    }

    function contains(address[] memory list, address a) internal pure returns (bool) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == a) return true;
        }
        return false;
    }

    /// @notice Asserts the funds identity: `balance == totalBonds + totalChallengeBonds + totalCredits
    ///         + totalBurnt`.
    function assertFunds(RecomputeOracle oracle) internal view {
        VM.assertEq(
            address(oracle).balance,
            oracle.totalBonds() + oracle.totalChallengeBonds() + oracle.totalCredits() + oracle.totalBurnt(),
            "balance == bonds + challenge bonds + credits + burnt"
        );
    }

    function hashOf(bytes32[] memory outputs) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(outputs));
    }

    function unavailable() internal pure returns (bytes32[] memory outs) {
        outs = new bytes32[](1);
        outs[0] = ORACLE_UNAVAILABLE;
    }
}
