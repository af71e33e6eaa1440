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

    function hashOf(bytes32[] memory outputs) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(outputs));
    }

    function unavailable() internal pure returns (bytes32[] memory outs) {
        outs = new bytes32[](1);
        outs[0] = ORACLE_UNAVAILABLE;
    }
}
