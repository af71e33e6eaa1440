// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

// Errors of the IEEE-754 libraries and the one-element evaluator (docs/repops/ieee.md).

/// @notice `Binary64.logSplit` takes a positive normal binary64 value; `x` is not one.
error Binary64NotPositiveNormal(uint64 x);

/// @notice `op` is not an operator code of `RepOpsElement` (the table in docs/repops/ieee.md).
error ElementUnknownOp(uint256 op);

/// @notice Argument `index` of the operator, `value`, does not fit its `bits`-bit pattern (an
///         fp32 element above 2^32 - 1, a bool other than 0 or 1, ...).
error ElementArgTooWide(uint256 index, uint256 value, uint256 bits);

/// @notice `aten.pow.Tensor_Scalar` has a RepOps definition for exponents 0, 1, 2, 3, -1, -2, 0.5
///         and -0.5 only; `exponent` (binary64 bits) is none of them.
error ElementPowExponent(uint64 exponent);
