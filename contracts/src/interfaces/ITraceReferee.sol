// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "./IElementReferee.sol";

/// @title ITraceReferee
/// @notice The element phase of a transcendental function (docs/game.md section 2.9): one output element of
///         exp, log, log1p, rsqrt, tanh, sigmoid, erf, gelu or gelu (tanh form) on an agreed fp32 input `x`,
///         disputed between a defender and a challenger whose values there differ, decided on chain without an
///         oracle. RepOps defines each function as a fixed straight-line program of binary64 steps on
///         `f64(x)` ending in one rounding to fp32 (docs/repops/elementwise.md; the programs are
///         trainer/repops/programs.py, generated into TracePrograms.sol). The defender posts the whole trace
///         (every step's value, 8 bytes each, big endian), whose last step must be its value; the challenger
///         names one step, which the contract recomputes from its operands (x, the program's constants and the
///         trace's earlier values): if the recomputed value differs from the posted one the challenger wins,
///         otherwise the defender wins. A side that lets its clock run out loses.
///
///         Why the honest side wins. x is agreed and the program is fixed and deterministic, every opcode
///         total, so the trace of x is unique: if every step of a posted trace equals its recomputation from
///         the posted earlier values, the trace is (by induction over the steps) that unique trace, and its
///         last step the true output. So a defender whose value is wrong posted at least one step that differs
///         from its recomputation (the first such step has correct operands, and the honest challenger finds
///         it by evaluating the program itself); naming it wins. A defender whose value is right has a trace
///         whose every step recomputes to itself, so whatever step a challenger names, the defender wins. The
///         challenger's own value is not checked (as in the dot phase): a shown-wrong defender loses, whatever
///         the challenger claimed.
/// @dev Holds no funds. Anyone may open a game; its opener (`owner`) is the one who should act on its outcome
///      (ElementReferee does not hand these operators over yet). Outcome codes and sides are IElementReferee's.
interface ITraceReferee {
    enum Stage {
        None,
        Claim, // defender: claim
        Refute, // challenger: refute
        Resolved
    }

    struct GameView {
        address owner;
        address[2] players;
        Stage stage;
        IElementReferee.Outcome outcome;
        IElementReferee.Side toMove;
        uint256 fn;
        uint32 x;
        uint32[2] values; // the defender's and the challenger's fp32 bits
        uint64[2] clockLeft; // seconds left, not counting the running turn
        uint64 turnStartedAt;
        uint256 steps; // the program's step count (the trace is 8 * steps bytes)
        bytes32 traceHash; // keccak256 of the defender's trace (after the claim)
        uint32 moves;
    }

    event GameOpened(
        uint256 indexed gameId,
        address indexed owner,
        uint256 fn,
        uint32 x,
        address defender,
        address challenger,
        uint32 defenderValue,
        uint32 challengerValue
    );
    /// @notice The defender's trace (the challenger passes it back to `refute`) and its hash.
    event Claimed(uint256 indexed gameId, bytes32 traceHash, bytes trace);
    /// @notice The contract recomputed step `step`: `computed` from its operands, `posted` the trace's value.
    event StepRecomputed(uint256 indexed gameId, uint256 step, uint64 computed, uint64 posted);
    event GameResolved(uint256 indexed gameId, IElementReferee.Outcome outcome);

    /// @notice Opens a game about function `fn` (TracePrograms' id) on fp32 input `x`; the caller is its owner.
    ///         `values` are the defender's and the challenger's fp32 bits (they differ), `players` the defender
    ///         and the challenger, `clocks` each side's seconds for all its moves. The defender moves first.
    /// @dev Reverts `TraceRefereeNoFunction` (unknown fn) and `TraceRefereeBadParams` (players equal or zero,
    ///      values equal, a zero or too large clock).
    function open(
        uint256 fn,
        uint32 x,
        uint32[2] calldata values,
        address[2] calldata players,
        uint64[2] calldata clocks
    ) external returns (uint256 gameId);

    /// @notice The defender's trace of `fn` on `x`: 8 bytes per step, big endian, the program's step count of
    ///         them (`TraceRefereeLength`), the last the fp32 output, which must be the defender's value
    ///         (`TraceRefereeInconsistent`). Its keccak256 is stored; the challenger moves next.
    function claim(uint256 gameId, bytes calldata trace) external;

    /// @notice The challenger passes the defender's trace back (`TraceRefereeMismatch` if it does not hash to
    ///         the claimed one) and names step `step` (`TraceRefereeStep` if not below the step count). The
    ///         contract recomputes that step from its operands: the challenger wins if the result differs from
    ///         the trace's value there, the defender wins otherwise.
    function refute(uint256 gameId, bytes calldata trace, uint256 step) external;

    /// @notice Ends the game against the side to move once its clock ran out (anyone may call).
    function timeout(uint256 gameId) external;

    /// @notice The whole trace of `fn` on `x` (every step's value; the last the fp32 output), as the honest
    ///         defender posts it. For tests and for a side's own check; costs a full evaluation.
    /// @dev Reverts `TraceRefereeNoFunction` for an unknown fn.
    function evaluate(uint256 fn, uint32 x) external pure returns (uint64[] memory trace);

    /// @notice One element of a RepOps operator, `RepOpsElement.evaluate(op, a, b, c)` (docs/repops/ieee.md).
    ///         ElementReferee computes its elements here: the binary32 library does not fit in its own bytecode
    ///         beside the element game (EIP-170), and this contract holds the binary64 one already.
    /// @dev Reverts as `RepOpsElement.evaluate` does (`ElementUnknownOp`, `ElementArgTooWide`,
    ///      `ElementPowExponent`); the caller sees the same error.
    function evaluateElement(uint256 op, uint256 a, uint256 b, uint256 c) external pure returns (uint256);

    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice The outcome, for the game's owner only (`TraceRefereeNotOwner` otherwise).
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice Each side's metered gas on the game (execution, 21,000 per call and 40 per calldata byte), as
    ///         DotReferee's `meterOf`.
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas);

    function gameOf(uint256 gameId) external view returns (GameView memory);

    function gameCount() external view returns (uint256);
}
