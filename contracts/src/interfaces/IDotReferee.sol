// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "./IElementReferee.sol";

/// @title IDotReferee
/// @notice The element phase of an exact dot product (docs/game.md section 2.8): one output element
///         `C[i, j]` of `mm(A, B)` or `addmm(bias, A, B)` on agreed inputs, disputed between a defender and a
///         challenger whose values there differ, decided on chain without an oracle. RepOps defines
///         `C[i, j] = f32(S * 2^(e_i + e'_j - 2p))` (docs/repops/linalg.md): `e_i` the exponent of row i of A's
///         largest magnitude, `e'_j` that of column j of B, `p = p_dot(K)`, and `S` the exact integer
///         `sum_k qa[i, k] * qb[k, j]` of the two grids; addmm adds the bias element with one binary32 addition.
///         Stages: the defender claims both exponents (each with a witness element opened in the row or
///         column), the integer S (its own value at `C[i, j]` must follow from them) and its first prefix
///         sums; the challenger either refutes an exponent (an element of the row or column with a larger
///         magnitude class) or picks the sub-range of the prefix sums it disputes; the defender splits that
///         range N ways; ... down to one term `k`, which the defender opens (`A[i, k]`, `B[k, j]`) and the
///         contract recomputes: the defender wins if the two prefix sums it claimed around `k` differ by
///         `qa[i, k] * qb[k, j]`, else the challenger wins. A side that lets its clock run out loses.
/// @dev Holds no funds. Anyone may open a game; its opener (`owner`) is the one who should act on its outcome
///      (ElementReferee opens one when the element it isolated belongs to an mm or addmm node, and reads it as
///      the owner). Outcome codes and sides are IElementReferee's.
interface IDotReferee {
    enum Stage {
        None,
        Claim, // defender: claim
        Pick, // challenger: pick (or refute)
        Split, // defender: split
        Term, // defender: proveTerm
        Resolved
    }

    /// @param op 0 mm(A, B); 1 addmm(bias, A, B).
    /// @param inputs The agreed input commitments in argument order: [A, B] or [bias, A, B] (fp32).
    /// @param k The inner dimension K (A is [M, K], B is [K, N]).
    /// @param n The output's column count N: the element `element` is C[element / N, element % N].
    /// @param element The disputed output element (flat, row-major).
    /// @param values The defender's and the challenger's binary32 bits at it (they differ).
    /// @param players The defender and the challenger.
    /// @param clocks Seconds each side has for all its moves (a chess clock).
    /// @param arity The bisection's arity N (a power of two in [2, 64]).
    struct Params {
        uint256 op;
        bytes32[] inputs;
        uint64 k;
        uint64 n;
        uint256 element;
        uint32[2] values;
        address[2] players;
        uint64[2] clocks;
        uint64 arity;
    }

    /// @notice One element of an agreed fp32 input, opened against its commitment (the index is computed by
    ///         the contract from the move: a row or column position, or the bias's broadcast position).
    struct Opening {
        uint64[] shape;
        bytes chunk;
        bytes32[] siblings;
    }

    /// @notice The defender's first move.
    /// @param rowAt Column of A's row i holding the row's largest magnitude class (the witness of e_i).
    /// @param colAt Row of B's column j holding the column's largest magnitude class (the witness of e'_j).
    /// @param row The opening of A[i, rowAt]; `col` of B[colAt, j]; `bias` of the bias element (addmm only;
    ///        its shape broadcasts to [M, N]: trailing dimensions aligned, size 1 or the output's).
    /// @param total The exact integer S = P(K).
    /// @param splits The prefix sums P(x) at the first bisection's interior points (see `splitPoints`).
    struct Claim {
        uint64 rowAt;
        uint64 colAt;
        Opening row;
        Opening col;
        Opening bias;
        int256 total;
        int256[] splits;
    }

    /// @notice What `start` needs beside the claim: the output shape [M, N] (its header must be the element
    ///         game's) and the headers of A ([M, K]) and B ([K, N]), opened against the agreed commitments.
    struct Takeover {
        uint64[] outputShape;
        IElementReferee.Header a;
        IElementReferee.Header b;
    }

    struct GameView {
        address owner;
        address[2] players;
        uint256 elementGame; // the ElementReferee game this one decides (0: standalone)
        Stage stage;
        IElementReferee.Outcome outcome;
        IElementReferee.Side toMove;
        uint256 op;
        uint64[2] clockLeft; // seconds left, not counting the running turn
        uint64 turnStartedAt;
        uint64 k;
        uint64 n;
        uint256 element;
        uint32[2] values;
        uint16[2] keys; // the claimed magnitude classes of row i and column j (after the claim)
        uint64 lo; // the disputed range of prefix sums [lo, hi]: both agree on P(lo), dispute P(hi)
        uint64 hi;
        int256 pLo; // the defender's P(lo) and P(hi)
        int256 pHi;
        uint32 moves;
    }

    event GameOpened(
        uint256 indexed gameId,
        address indexed owner,
        uint256 op,
        address defender,
        address challenger,
        uint256 element,
        uint32 defenderValue,
        uint32 challengerValue
    );
    /// @notice The defender's claim: the magnitude classes of row i and column j (docs/game.md 2.8:
    ///         0 a zero row, 150 + e a finite one, 65535 a non-finite one), S and the first prefix sums.
    event Claimed(uint256 indexed gameId, uint16 rowKey, uint16 colKey, int256 total, int256[] splits);
    /// @notice The challenger opened an element of the row (`which` 0) or column (1) at `at` whose class
    ///         `key` exceeds the defender's claim: the defender's exponent was wrong.
    event Refuted(uint256 indexed gameId, uint256 which, uint64 at, uint16 key);
    /// @notice The disputed range is now [lo, hi], the defender's prefix sums there pLo and pHi.
    event Picked(uint256 indexed gameId, uint64 lo, uint64 hi, int256 pLo, int256 pHi);
    /// @notice The defender's prefix sums at the interior points of [lo, hi] (the challenger passes them back).
    event SplitPosted(uint256 indexed gameId, uint64 lo, uint64 hi, int256[] splits);
    /// @notice The contract recomputed term `at`: the grid integers of A[i, at] and B[at, j] and their product.
    event TermComputed(uint256 indexed gameId, uint64 at, int256 qa, int256 qb, int256 claimed);
    event GameResolved(uint256 indexed gameId, IElementReferee.Outcome outcome);

    /// @notice Opens a game; the caller is its owner. The defender moves first (`claim`).
    /// @dev Reverts `DotRefereeBadParams` (op, input count, players, equal values, clocks, arity).
    function open(Params calldata p) external returns (uint256 gameId);

    /// @notice Takes over ElementReferee game `elementGame` (an mm or addmm node whose first differing element
    ///         is isolated, stage ElementProof) and makes its defender's claim in the same move: only that
    ///         game's defender may call, on its element-game clock. The element game waits (stage Delegated)
    ///         and is settled with this game's outcome and metered gas when this one resolves.
    /// @dev Reverts `DotRefereeNotYourTurn`, `DotRefereeHeader` (an output shape or input header that is not
    ///      the game's), `DotRefereeShape` (not [M, K] x [K, N] -> [M, N]), `DotRefereeClockExpired`,
    ///      ElementReferee's stage errors, and as `claim`.
    function start(uint256 elementGame, Takeover calldata t, Claim calldata c) external returns (uint256 gameId);

    /// @notice The game that took over ElementReferee game `elementGame` (0: none).
    function takenOver(uint256 elementGame) external view returns (uint256);

    /// @notice The TraceReferee game `traceGame` now decides ElementReferee game `elementGame` (a transcendental
    ///         function `fn` of TracePrograms on the agreed fp32 input `x`).
    event TraceStarted(uint256 indexed elementGame, uint256 indexed traceGame, uint256 fn, uint32 x);
    /// @notice The trace game's (or, from `settleSum`, the sum game's) outcome and meters were handed back to the
    ///         element game.
    event TraceSettled(uint256 indexed elementGame, uint256 indexed traceGame, IElementReferee.Outcome outcome);
    /// @notice The SumReferee game `sumGame` now decides ElementReferee game `elementGame` (a sum node).
    event SumStarted(uint256 indexed elementGame, uint256 indexed sumGame);

    /// @notice The TraceReferee that decides the transcendental functions' elements (docs/game.md 2.9).
    function trace() external view returns (address);

    /// @notice Hands ElementReferee game `elementGame` (a transcendental function's node, ElementReferee codes
    ///         from 66 on, its first differing element isolated: stage ElementProof) to a TraceReferee game
    ///         owned by this referee. Only the element game's defender may call, on its element-game clock; it
    ///         opens `input`, the element of the node's one input at the output's index (the same shape,
    ///         fp32), against the agreed input commitment. The trace game's clocks are what is left of the
    ///         element game's; the defender's next move is `TraceReferee.claim` there. Returns its id.
    /// @dev Reverts `DotRefereeNotYourTurn`, `DotRefereeBadParams(1, op)` (not a trace op, codes 66 .. 74),
    ///      `DotRefereeClockExpired`, `DotRefereeHeader` (a shape that is not the output's),
    ///      `DotRefereeShape` (not fp32), TensorLib's opening errors and ElementReferee's stage errors.
    function startTrace(uint256 elementGame, IElementReferee.InputOpening calldata input)
        external
        returns (uint256 traceGame);

    /// @notice Once the trace game of `elementGame` is resolved (`DotRefereeTracePending` before), hands its
    ///         outcome and metered gas (the defender's `startTrace` included) to the element game; anyone may
    ///         call, once (ElementReferee's stage error after).
    function settleTrace(uint256 elementGame) external;

    /// @notice The trace game that decides ElementReferee game `elementGame` (0: none).
    function tracedBy(uint256 elementGame) external view returns (uint256);

    /// @notice The SumReferee that decides the sums' elements (docs/game.md 2.10).
    function sum() external view returns (address);

    /// @notice The ElementReferee whose mm, addmm, transcendental and sum games this referee takes over.
    function element() external view returns (IElementReferee);

    /// @notice Hands ElementReferee game `elementGame` (a `sum.dim_IntList` node, ElementReferee codes SUM .. SUM +
    ///         127, its first differing element isolated: stage ElementProof) to a SumReferee game owned by this
    ///         referee (`SumReferee.take`: the agreed input, the output header, the element, both values and
    ///         players, what is left of both clocks and the element game's arity). Only the element game's defender may call, on its
    ///         element-game clock; its next move is `SumReferee.claim` there. Returns the sum game's id.
    /// @dev Reverts `DotRefereeNotYourTurn`, `DotRefereeBadParams(1, op)` (not a sum op), `DotRefereeClockExpired`
    ///      and ElementReferee's stage errors.
    function startSum(uint256 elementGame) external returns (uint256 sumGame);

    /// @notice Once the sum game of `elementGame` is resolved (`DotRefereeTracePending` before), hands its outcome
    ///         and metered gas (the defender's `startSum` included) to the element game (event `TraceSettled`);
    ///         anyone may call, once (ElementReferee's stage error after; `DotRefereeUnknown` with no sum game).
    function settleSum(uint256 elementGame) external;

    /// @notice The sum game that decides ElementReferee game `elementGame` (0: none).
    function summedBy(uint256 elementGame) external view returns (uint256);

    /// @notice The defender's claim. Its exponents follow from the witnesses, and `f32(S * 2^(e_i + e'_j -
    ///         2p))` (plus the bias for addmm; NaN when a witness is NaN or infinite) must be its own value
    ///         at the element (`DotRefereeInconsistent` otherwise). A non-finite witness, or K = 0 (C = +0,
    ///         or the bias), decides the game for the defender at once; otherwise the challenger moves next.
    /// @dev The openings revert as `TensorLib.verifyElement`; wrong shapes `DotRefereeShape`; a wrong count
    ///      of splits `DotRefereeWidth`.
    function claim(uint256 gameId, Claim calldata c) external;

    /// @notice The challenger's bisection move: the defender's last prefix sums passed back (`theirs`) and
    ///         the index `m` of the sub-range it disputes (0 .. splits): the range from interior point m - 1
    ///         (or lo) to point m (or hi). A sub-range of one term sends the game to `proveTerm`.
    /// @dev `DotRefereeOpponentMismatch` (not the defender's list), `DotRefereeWidth` (m out of range).
    function pick(uint256 gameId, int256[] calldata theirs, uint256 m) external;

    /// @notice The challenger, instead of `pick`: an element of row i of A (`which` 0, at column `at`) or of
    ///         column j of B (`which` 1, at row `at`) whose magnitude class exceeds the defender's claim. The
    ///         challenger wins.
    /// @dev `DotRefereeNotGreater` when its class does not exceed the claim.
    function refute(uint256 gameId, uint256 which, uint64 at, Opening calldata o) external;

    /// @notice The defender's prefix sums at the interior points of the disputed range (`splitPoints`).
    function split(uint256 gameId, int256[] calldata splits) external;

    /// @notice The defender opens A[i, lo] and B[lo, j] of the one-term range [lo, lo + 1]; the contract
    ///         computes `qa * qb` on the claimed grids and decides: the defender wins if it equals
    ///         `pHi - pLo`; the challenger wins otherwise, or when an opened element's class exceeds the
    ///         claimed exponent (the claim was wrong).
    function proveTerm(uint256 gameId, Opening calldata a, Opening calldata b) external;

    /// @notice Ends the game against the side to move once its clock ran out (anyone may call).
    function timeout(uint256 gameId) external;

    /// @notice The interior points of the range [lo, hi] at arity `arity`: lo + s, lo + 2s, ... below hi,
    ///         with s = ceil((hi - lo) / arity).
    function splitPoints(uint64 lo, uint64 hi, uint64 arity) external pure returns (uint64[] memory points);

    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice The outcome, for the game's owner only (`DotRefereeNotOwner` otherwise).
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice Each side's metered gas on the game, as ElementReferee's `meterOf`.
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas);

    function gameOf(uint256 gameId) external view returns (GameView memory);

    function gameCount() external view returns (uint256);
}
