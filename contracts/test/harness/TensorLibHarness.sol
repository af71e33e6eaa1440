// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {TensorLib} from "../../src/lib/TensorLib.sol";

/// @notice Exposes TensorLib's internal functions as external calls, plus a gas probe.
contract TensorLibHarness {
    function elementSize(uint8 dtype) external pure returns (uint256) {
        return TensorLib.elementSize(dtype);
    }

    function header(uint8 dtype, uint64[] calldata shape) external pure returns (bytes memory) {
        return TensorLib.header(dtype, shape);
    }

    function commitmentOf(uint8 dtype, uint64[] calldata shape, bytes32 dataRoot)
        external
        pure
        returns (bytes32)
    {
        return TensorLib.commitmentOf(dtype, shape, dataRoot);
    }

    function numel(uint64[] calldata shape) external pure returns (uint256) {
        return TensorLib.numel(shape);
    }

    function verifyElement(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external pure returns (uint256) {
        return TensorLib.verifyElement(commitment, dtype, shape, index, chunk, siblings);
    }

    /// @notice Gas of one `TensorLib.verifyElement` call, arguments already decoded.
    function verifyElementGas(
        bytes32 commitment,
        uint8 dtype,
        uint64[] calldata shape,
        uint256 index,
        bytes calldata chunk,
        bytes32[] calldata siblings
    ) external view returns (uint256 gasUsed) {
        gasUsed = gasleft();
        TensorLib.verifyElement(commitment, dtype, shape, index, chunk, siblings);
        gasUsed -= gasleft();
    }
}
