// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

import {IPayoutDistributor} from "../../src/interfaces/IPayoutDistributor.sol";

/// @title PayoutVectors
/// @notice Reads the payout vectors that scripts/payout_vectors.py writes (contracts/test/vectors/payout_*.json).
library PayoutVectors {
    Vm internal constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    struct Claim {
        uint256 index;
        address account;
        uint256 amount;
        IPayoutDistributor.ProofStep[] proof;
    }

    function read(string memory file) internal view returns (string memory) {
        return VM.readFile(string.concat(VM.projectRoot(), "/contracts/test/vectors/", file));
    }

    /// @notice The claim at JSON path `at` (an object with index, account, amount, hashes, sums).
    function claimAt(string memory json, string memory at) internal pure returns (Claim memory c) {
        c.index = VM.parseJsonUint(json, string.concat(at, ".index"));
        c.account = VM.parseJsonAddress(json, string.concat(at, ".account"));
        c.amount = VM.parseJsonUint(json, string.concat(at, ".amount"));
        bytes32[] memory hashes = VM.parseJsonBytes32Array(json, string.concat(at, ".hashes"));
        uint256[] memory sums = VM.parseJsonUintArray(json, string.concat(at, ".sums"));
        require(hashes.length == sums.length, "PayoutVectors: hashes and sums differ in length");
        c.proof = new IPayoutDistributor.ProofStep[](hashes.length);
        for (uint256 k; k < hashes.length; ++k) {
            c.proof[k] = IPayoutDistributor.ProofStep(hashes[k], sums[k]);
        }
    }

    function caseAt(uint256 k) internal pure returns (string memory) {
        return string.concat(".cases[", VM.toString(k), "]");
    }

    function proofAt(uint256 k, uint256 j) internal pure returns (string memory) {
        return string.concat(caseAt(k), ".proofs[", VM.toString(j), "]");
    }
}
