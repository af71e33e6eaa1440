// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "./IElementReferee.sol";
import {IDotReferee} from "./IDotReferee.sol";

/// @title ISumReferee
/// @notice The element phase of an exact sum (docs/game.md section 2.10): one output element of
///         `aten.sum.dim_IntList` on an agreed fp32 input, disputed between a defender and a challenger whose
///         values there differ, decided on chain without an oracle. RepOps defines the element as
///         `f32(S * 2^(e - p))` (docs/repops/linalg.md, "Sums and means"): the slice is the L input values that
///         share the element's kept coordinates, `e` the exponent of its largest magnitude, `p = p_sum(L) =
///         min(50, 53 - ceil(log2 L))`, `S` the exact integer `sum_k q_k` of the grid integers
///         `q_k = RN(x_k * 2^(p - e))`; +0 when S = 0 or L = 0; a slice holding a NaN, or both infinities, gives
///         NaN, else one holding an infinity gives that infinity.
///         Stages, as the dot phase's (section 2.8) with one operand: the defender claims the slice's largest
///         magnitude class with a witness element, S (its own value must follow from them) and its first prefix
///         sums; the challenger either refutes the claim with an element of a larger class (or, against an
///         infinite claim, a NaN or the opposite infinity) or picks the sub-range of the prefix sums it
///         disputes; the defender splits that range N ways; ... down to one term `k`, which the defender opens
///         and the contract recomputes: the defender wins if the two prefix sums it claimed around `k` differ
///         by `q_k`, else the challenger wins. A NaN witness, or two opposite infinities, or L = 0, decides the
///         claim at once; an infinite witness leaves the challenger only a refutation. A side that lets its clock
///         run out loses.
/// @dev Holds no funds. Anyone may open a game; its opener (`owner`) is the one who should act on its outcome
///      (the DotReferee opens one when ElementReferee isolated an element of a sum node, and reads it as the
///      owner). Outcome codes and sides are IElementReferee's.
interface ISumReferee {
    enum Stage {
        None,
        Claim, // defender: claim
        Pick, // challenger: pick (or refute)
        Split, // defender: split
        Term, // defender: proveTerm
        Refute, // challenger: refute an infinite claim (nothing else: a true claim wins on time)
        Resolved
    }

    /// @param variant The node's reduced dims and keepdim, ElementReferee's op code less `SUM_BASE`: bit 0
    ///        keepdim; bits 1 .. 4 the dims 0 .. 3, bit 5 the dim -1, bit 6 the dim -2; no dim bit: every dim.
    /// @param input The agreed fp32 input's commitment.
    /// @param header keccak256(u8(1) || u64 dims) of the output's dtype (fp32) and shape, as ElementReferee
    ///        hashes an output header.
    /// @param element The disputed output element (flat, row-major).
    /// @param values The defender's and the challenger's binary32 bits at it (they differ).
    /// @param players The defender and the challenger.
    /// @param clocks Seconds each side has for all its moves (a chess clock).
    /// @param arity The bisection's arity N (a power of two in [2, 64]).
    struct Params {
        uint256 variant;
        bytes32 input;
        bytes32 header;
        uint256 element;
        uint32[2] values;
        address[2] players;
        uint64[2] clocks;
        uint64 arity;
    }

    /// @notice The defender's first move.
    /// @param outputShape The output's shape (its header must hash to the game's `header`).
    /// @param input The input's header, opened against the agreed commitment (fp32): its shape and the node's
    ///        dims give the slice (L values) and must give the output shape.
    /// @param at The term index (0 .. L - 1) of the witness, an element of the slice's largest magnitude class;
    ///        `witness` its opening (IDotReferee.Opening: the input's shape, the chunk, the siblings).
    /// @param at2 With an infinite witness, the term index of the opposite infinity (`second`'s opening) when the
    ///        defender claims NaN from the two; ignored when `second` has an empty chunk.
    /// @param total The exact integer S = P(L).
    /// @param splits The prefix sums P(x) at the first bisection's interior points (see `splitPoints`).
    struct Claim {
        uint64[] outputShape;
        IElementReferee.Header input;
        uint64 at;
        IDotReferee.Opening witness;
        uint64 at2;
        IDotReferee.Opening second;
        int256 total;
        int256[] splits;
    }

    struct GameView {
        address owner;
        address[2] players;
        Stage stage;
        IElementReferee.Outcome outcome;
        IElementReferee.Side toMove;
        uint256 variant;
        uint64[2] clockLeft; // seconds left, not counting the running turn
        uint64 turnStartedAt;
        bytes32 input;
        uint256 element;
        uint32[2] values;
        uint16 key; // the claimed magnitude class (after the claim; NON_FINITE 65535 for an infinite claim)
        uint32 witness; // the claimed witness's bits
        uint64 length; // L (after the claim)
        uint256 reduced; // the reduced dims, bit d for dim d (after the claim)
        uint64 lo; // the disputed range of prefix sums [lo, hi]: both agree on P(lo), dispute P(hi)
        uint64 hi;
        int256 pLo; // the defender's P(lo) and P(hi)
        int256 pHi;
        uint32 moves;
    }

    event GameOpened(
        uint256 indexed gameId,
        address indexed owner,
        uint256 variant,
        address defender,
        address challenger,
        uint256 element,
        uint32 defenderValue,
        uint32 challengerValue
    );
    /// @notice The defender's claim: the slice's length, its magnitude class (docs/game.md 2.8: 0 an all-zero
    ///         slice, 150 + e a finite one, 65535 a non-finite one) from the witness `witness`, S and the first
    ///         prefix sums.
    event Claimed(uint256 indexed gameId, uint64 length, uint16 key, uint32 witness, int256 total, int256[] splits);
    /// @notice The challenger opened term `at` of the slice, `bits`, which disproves the defender's claim.
    event Refuted(uint256 indexed gameId, uint64 at, uint32 bits);
    /// @notice The disputed range is now [lo, hi], the defender's prefix sums there pLo and pHi.
    event Picked(uint256 indexed gameId, uint64 lo, uint64 hi, int256 pLo, int256 pHi);
    /// @notice The defender's prefix sums at the interior points of [lo, hi] (the challenger passes them back).
    event SplitPosted(uint256 indexed gameId, uint64 lo, uint64 hi, int256[] splits);
    /// @notice The contract recomputed term `at`: its grid integer `q` against the defender's difference `claimed`.
    event TermComputed(uint256 indexed gameId, uint64 at, int256 q, int256 claimed);
    event GameResolved(uint256 indexed gameId, IElementReferee.Outcome outcome);

    /// @notice Opens a game; the caller is its owner. The defender moves first (`claim`).
    /// @dev Reverts `SumRefereeBadParams` (variant, players, equal values, clocks, arity).
    function open(Params calldata p) external returns (uint256 gameId);

    /// @notice Opens the game that decides ElementReferee game `elementGame` of the caller's ElementReferee
    ///         (`IDotReferee(msg.sender).element()`), a sum node whose element is isolated: its op code less
    ///         `SUM_BASE` (112) as the variant, its one input, element, values and players, with the output header
    ///         hash `header`, `arity` and `clocks` the caller gives (the DotReferee's `startSum`, which handed the
    ///         element game over). The caller is the owner, as with `open`.
    function take(uint256 elementGame, bytes32 header, uint64 arity, uint64[2] calldata clocks)
        external
        returns (uint256 gameId);

    /// @notice The defender's claim. The output shape must be the game's, the input header the agreed one (fp32),
    ///         and the output shape the input's summed over the node's dims (`SumRefereeShape`). With L = 0 the
    ///         element is +0; else the witness at term `at` is opened and gives the claimed class: a NaN makes the
    ///         element NaN, an infinity with the opposite one (`second`) NaN, an infinity alone that infinity,
    ///         a finite value `f32(S * 2^(e - p))` (+0 for a zero result). That must be the defender's own value
    ///         (`SumRefereeInconsistent`). L = 0, a NaN and two infinities decide the game for the defender at
    ///         once; an infinity alone waits for a refutation (stage Refute); a finite claim goes to the bisection
    ///         (stage Pick).
    /// @dev The openings revert as `TensorLib.verifyElement`; `SumRefereeWidth` for a witness at or past L, a
    ///      wrong count of splits, or an element past the output's; `SumRefereeWitness` for a second witness that
    ///      is not the opposite infinity.
    function claim(uint256 gameId, Claim calldata c) external;

    /// @notice The challenger's bisection move: the defender's last prefix sums passed back (`theirs`) and the
    ///         index `m` of the sub-range it disputes (0 .. splits): the range from interior point m - 1 (or lo)
    ///         to point m (or hi). A sub-range of one term sends the game to `proveTerm`.
    /// @dev `SumRefereeOpponentMismatch` (not the defender's list), `SumRefereeWidth` (m out of range).
    function pick(uint256 gameId, int256[] calldata theirs, uint256 m) external;

    /// @notice The challenger, instead of `pick` (stage Pick) or as its only move (stage Refute): term `at` of the
    ///         slice, opened, which disproves the claim: its magnitude class exceeds the claimed one, or against
    ///         an infinite claim it is a NaN or the opposite infinity. The challenger wins.
    /// @dev `SumRefereeNotGreater` when it does not disprove the claim; `SumRefereeWidth` for `at` at or past L.
    function refute(uint256 gameId, uint64 at, IDotReferee.Opening calldata o) external;

    /// @notice The defender's prefix sums at the interior points of the disputed range (`splitPoints`).
    function split(uint256 gameId, int256[] calldata splits) external;

    /// @notice The defender opens term `lo` of the one-term range [lo, lo + 1]; the contract computes its grid
    ///         integer q on the claimed grid and decides: the defender wins if it equals `pHi - pLo`; the
    ///         challenger wins otherwise, or when the opened element's class exceeds the claimed one.
    function proveTerm(uint256 gameId, IDotReferee.Opening calldata o) external;

    /// @notice Ends the game against the side to move once its clock ran out (anyone may call).
    function timeout(uint256 gameId) external;

    /// @notice The input's flat index of term `k` of output element `element`'s slice: the kept coordinates from
    ///         the element (row-major over the kept dims), the reduced ones from k (row-major over the reduced
    ///         dims), `reduced` a bit per reduced dim of `shape`.
    function inputIndex(uint256 element, uint256 k, uint64[] calldata shape, uint256 reduced)
        external
        pure
        returns (uint256);

    /// @notice The interior points of the range [lo, hi] at arity `arity` (as DotReferee's).
    function splitPoints(uint64 lo, uint64 hi, uint64 arity) external pure returns (uint64[] memory points);

    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice The outcome, for the game's owner only (`SumRefereeNotOwner` otherwise).
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome);

    /// @notice Each side's metered gas on the game, as ElementReferee's `meterOf`.
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas);

    function gameOf(uint256 gameId) external view returns (GameView memory);

    function gameCount() external view returns (uint256);
}
