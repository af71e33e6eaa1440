// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary64} from "../../src/lib/Binary64.sol";
import {RepOpsElement} from "../../src/lib/RepOpsElement.sol";

/// @notice Exposes the IEEE libraries' reverting functions as external calls (for expectRevert).
contract FloatHarness {
    function logSplit(uint64 x) external pure returns (int256 k, uint64 m) {
        return Binary64.logSplit(x);
    }

    function evaluate(uint256 op, uint256 a, uint256 b, uint256 c) external pure returns (uint256) {
        return RepOpsElement.evaluate(op, a, b, c);
    }
}
