// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Binary32} from "./Binary32.sol";
import {Binary64} from "./Binary64.sol";
import {TracePrograms as T} from "./TracePrograms.sol";

/// @title TraceLib
/// @notice The steps of TracePrograms' straight-line programs (docs/game.md 2.9), on binary64 patterns as
///         Binary64 computes them: one step (`step`), a whole program (`evaluate`) and one step of a posted
///         trace recomputed from its operands (`recompute`). Every opcode is total: it returns a value for
///         every operand pattern and never reverts (the log split answers +0 and its argument for a pattern
///         that is not a positive normal; the programs never feed it one, a select guards it).
/// @dev The semantics are trainer/repops/programs.py's `apply`, opcode by opcode.
library TraceLib {
    using Binary64 for uint64;

    uint64 private constant MIN_NORMAL = 0x0010000000000000;

    /// @notice Opcode `op` on operands a, b, c (SELECT: `a != 0 ? b : c`); results are binary64 patterns, the
    ///         comparisons' 1 or 0, F32's the fp32 pattern zero-extended.
    function step(uint256 op, uint64 a, uint64 b, uint64 c) internal pure returns (uint64) {
        if (op == T.OP_MUL) return a.mul(b);
        if (op == T.OP_ADD) return a.add(b);
        if (op == T.OP_SUB) return a.sub(b);
        if (op == T.OP_DIV) return a.div(b);
        if (op == T.OP_SELECT) return a != 0 ? b : c;
        if (op == T.OP_SQRT) return a.sqrt();
        if (op == T.OP_NEG) return a.neg();
        if (op == T.OP_ABS) return a.abs();
        if (op == T.OP_COPYSIGN) return a.copysign(b);
        if (op == T.OP_MIN) return a.min(b);
        if (op == T.OP_MAX) return a.max(b);
        if (op == T.OP_LT) return a.lt(b) ? 1 : 0;
        if (op == T.OP_LE) return a.le(b) ? 1 : 0;
        if (op == T.OP_EQ) return a.eq(b) ? 1 : 0;
        if (op == T.OP_POW2) return Binary64.pow2OfShifted(a);
        if (op == T.OP_LOGK || op == T.OP_LOGM) {
            if (a < MIN_NORMAL || a >= Binary64.INF) return op == T.OP_LOGK ? 0 : a;
            (int256 k, uint64 m) = Binary64.logSplit(a);
            return op == T.OP_LOGK ? Binary64.fromInt(k) : m;
        }
        if (op == T.OP_F32) return a.toBinary32();
        return 0; // no program holds another opcode
    }

    /// @notice The whole trace of function `fn` on fp32 input `x`: one value per step, the last the output.
    /// @dev An unknown `fn` gives an empty trace. One pass over the program, each step reading the tape.
    function evaluate(uint256 fn, uint32 x) internal pure returns (uint64[] memory trace) {
        (bytes memory code, bytes memory consts) = T.program(fn);
        uint256 n = code.length / 4;
        uint256 nc = consts.length / 8;
        uint64[] memory tape = new uint64[](1 + nc + n);
        tape[0] = Binary32.toBinary64(x);
        for (uint256 i; i < nc; ++i) {
            tape[1 + i] = _word8(consts, 8 * i);
        }
        trace = new uint64[](n);
        for (uint256 s; s < n; ++s) {
            uint256 w = _instr(code, s);
            uint64 v = step(w >> 24, tape[(w >> 16) & 0xFF], tape[(w >> 8) & 0xFF], tape[w & 0xFF]);
            tape[1 + nc + s] = v;
            trace[s] = v;
        }
    }

    /// @notice Step `s` of function `fn` recomputed on fp32 input `x` from its operands: x, the constants, and
    ///         the earlier steps' values as `trace` holds them (8 bytes per step, big endian). `s` must be
    ///         below the step count and `trace` that long (the caller checks both).
    function recompute(uint256 fn, uint32 x, bytes calldata trace, uint256 s) internal pure returns (uint64) {
        (bytes memory code, bytes memory consts) = T.program(fn);
        uint256 w = _instr(code, s);
        uint64 a = _operand(consts, x, trace, (w >> 16) & 0xFF);
        uint64 b = _operand(consts, x, trace, (w >> 8) & 0xFF);
        uint64 c = _operand(consts, x, trace, w & 0xFF);
        return step(w >> 24, a, b, c);
    }

    /// @notice The value at tape index `i` (< 1 + constants + s for step s: the programs read only earlier
    ///         entries): f64(x), a constant, or an earlier step's value in `trace`.
    function _operand(bytes memory consts, uint32 x, bytes calldata trace, uint256 i)
        private
        pure
        returns (uint64)
    {
        if (i == 0) return Binary32.toBinary64(x);
        uint256 nc = consts.length / 8;
        if (i <= nc) return _word8(consts, 8 * (i - 1));
        uint256 at = 8 * (i - 1 - nc);
        return uint64(bytes8(trace[at:at + 8]));
    }

    /// @dev Step `s`'s 4 bytes: opcode (top byte), then the three operand indices.
    function _instr(bytes memory code, uint256 s) private pure returns (uint256) {
        return uint32(bytes4(_word(code, 4 * s)));
    }

    /// @dev The 8 bytes at `offset` of `data`, big endian.
    function _word8(bytes memory data, uint256 offset) private pure returns (uint64) {
        return uint64(bytes8(_word(data, offset)));
    }

    /// @dev The 32 bytes at `offset` of `data`: the callers read a step (4 bytes) or a constant (8 bytes)
    ///      that lies within `data` and keep only those top bytes of the word.
    function _word(bytes memory data, uint256 offset) private pure returns (bytes32 w) {
        assembly ("memory-safe") {
            // An unaligned 32-byte read inside the array's memory (no copy): the caller keeps the top bytes.
            w := mload(add(add(data, 32), offset))
        }
    }
}
