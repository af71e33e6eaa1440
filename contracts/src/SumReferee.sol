// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ISumReferee} from "./interfaces/ISumReferee.sol";
import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {IDotReferee} from "./interfaces/IDotReferee.sol";
import {TensorLib} from "./lib/TensorLib.sol";
import {Binary32} from "./lib/Binary32.sol";
import {GridLib} from "./lib/GridLib.sol";
import {
    SumRefereeUnknown,
    SumRefereeBadParams,
    SumRefereeWrongStage,
    SumRefereeNotPlaying,
    SumRefereeNotYourTurn,
    SumRefereeClockExpired,
    SumRefereeClockRunning,
    SumRefereeWidth,
    SumRefereeShape,
    SumRefereeHeader,
    SumRefereeInconsistent,
    SumRefereeOpponentMismatch,
    SumRefereeNotGreater,
    SumRefereeWitness,
    SumRefereeNotOwner
} from "./lib/SumRefereeErrors.sol";

/// @title SumReferee
/// @notice The element phase of an exact sum (docs/game.md section 2.10): one disputed output element of
///         `sum.dim_IntList` on an fp32 input, decided by a claim of the slice's grid exponent with a witness, an
///         N-ary bisection of the exact integer prefix sums, and one term recomputed on chain.
/// @dev Holds no funds. Every loop is bounded: at most 63 split points per move, 32 dimensions per shape.
contract SumReferee is ISumReferee {
    uint8 private constant F32 = 1;
    uint16 private constant NON_FINITE = GridLib.NON_FINITE;
    uint32 private constant NAN = 0x7FC00000;
    uint32 private constant SIGN = 0x80000000;
    uint256 private constant P_SUM_MAX = 50;
    uint256 private constant VARIANTS = 128; // 7 bits: keepdim, dims 0 .. 3, -1, -2
    uint256 private constant SUM_BASE = 112; // ElementReferee.SUM: a sum node's op code is SUM_BASE + variant

    uint256 private constant TX_BASE_GAS = 21_000;
    uint256 private constant CALLDATA_GAS_PER_BYTE = 40;
    uint256 private constant METER_GAS = 1_000;

    /// @dev The first slot holds what every move writes (stage, turn, clocks, meters, move count).
    struct Game {
        Stage stage;
        IElementReferee.Outcome outcome;
        IElementReferee.Side toMove;
        uint16 moves;
        uint40 turnStartedAt;
        uint40 defenderClock;
        uint40 challengerClock;
        uint40 defenderGas;
        uint40 challengerGas;
        address owner;
        uint64 arity;
        uint8 variant;
        uint16 key;
        address[2] players;
        bytes32 input;
        bytes32 header;
        uint256 element;
        uint32 defenderValue;
        uint32 challengerValue;
        uint32 witness;
        uint32 reduced;
        uint64 length;
        uint64 lo;
        uint64 hi;
        int256 pLo;
        int256 pHi;
        bytes32 pending; // keccak256 of the defender's last list of prefix sums
    }

    uint256 private _count;
    mapping(uint256 gameId => Game) private _games;

    /// @dev Charges a player's call to its side's meter.
    modifier metered(uint256 gameId) {
        uint256 start_ = gasleft();
        _;
        _meter(gameId, start_);
    }

    // ---- opening -------------------------------------------------------------------------

    /// @inheritdoc ISumReferee
    function open(Params calldata p) external returns (uint256 gameId) {
        return _open(p);
    }

    /// @inheritdoc ISumReferee
    function take(uint256 elementGame, bytes32 header, uint64 arity, uint64[2] calldata clocks)
        external
        returns (uint256 gameId)
    {
        IElementReferee element = IDotReferee(msg.sender).element();
        IElementReferee.GameView memory v = element.gameOf(elementGame);
        return _open(
            Params({
                variant: v.op - SUM_BASE,
                input: element.inputsOf(elementGame)[0],
                header: header,
                element: v.element,
                values: [uint32(v.values[0]), uint32(v.values[1])],
                players: v.players,
                clocks: clocks,
                arity: arity
            })
        );
    }

    function _open(Params memory p) private returns (uint256 gameId) {
        if (p.variant >= VARIANTS) revert SumRefereeBadParams(1, p.variant);
        address d = p.players[0];
        address c = p.players[1];
        if (d == c || d == address(0) || c == address(0)) revert SumRefereeBadParams(3, uint160(c));
        if (p.values[0] == p.values[1]) revert SumRefereeBadParams(4, p.values[0]);
        for (uint256 s; s < 2; ++s) {
            if (p.clocks[s] == 0 || p.clocks[s] > type(uint40).max) revert SumRefereeBadParams(5, p.clocks[s]);
        }
        uint64 a = p.arity;
        if (a < 2 || a > 64 || a & (a - 1) != 0) revert SumRefereeBadParams(6, a);
        gameId = ++_count;
        Game storage g = _games[gameId];
        g.stage = Stage.Claim;
        g.turnStartedAt = uint40(block.timestamp);
        g.defenderClock = uint40(p.clocks[0]);
        g.challengerClock = uint40(p.clocks[1]);
        g.owner = msg.sender;
        g.arity = a;
        g.variant = uint8(p.variant);
        g.players = [d, c];
        g.input = p.input;
        g.header = p.header;
        g.element = p.element;
        g.defenderValue = p.values[0];
        g.challengerValue = p.values[1];
        // Slots that later moves overwrite start non-zero, so that each move is a cheap update.
        g.pending = bytes32(uint256(1));
        g.pLo = 1;
        g.pHi = 1;
        emit GameOpened(gameId, msg.sender, p.variant, d, c, p.element, p.values[0], p.values[1]);
    }

    // ---- moves ---------------------------------------------------------------------------

    /// @inheritdoc ISumReferee
    function claim(uint256 gameId, Claim calldata c) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Claim);
        (uint256 reduced, uint64 length) = _slice(g, c.outputShape, c.input);
        g.reduced = uint32(reduced);
        g.length = length;
        uint32 y = 0; // L = 0: the empty sum, +0
        uint16 k = 0;
        uint32 w = 0;
        Stage next = Stage.Resolved;
        if (length != 0) {
            if (c.at >= length) revert SumRefereeWidth(c.at, length);
            w = _open(g, c.at, c.witness);
            k = GridLib.key(w);
            if (k != NON_FINITE) {
                // A finite claim: e from the witness's class, S the defender's.
                y = Binary32.fromScaledInt(c.total, GridLib.exponent(k) - int256(_pSum(length)));
                // linalg.md: a sum that rounds to zero is +0 (an integer sum has no sign).
                if (y == SIGN) y = 0;
                next = Stage.Pick;
            } else if (w & 0x7FFFFFFF > 0x7F800000) {
                y = NAN; // a NaN in the slice: the sum is NaN whatever else it holds
            } else if (c.second.chunk.length != 0) {
                // Both infinities in the slice: NaN.
                if (c.at2 >= length) revert SumRefereeWidth(c.at2, length);
                uint32 w2 = _open(g, c.at2, c.second);
                if (w2 != w ^ SIGN) revert SumRefereeWitness(w2, w);
                y = NAN;
            } else {
                // An infinity: the sum, unless the slice holds a NaN or the opposite infinity (a refutation).
                y = w;
                next = Stage.Refute;
            }
        }
        if (y != g.defenderValue) revert SumRefereeInconsistent(y, g.defenderValue);
        g.key = k;
        g.witness = w;
        if (next == Stage.Pick) {
            _post(g, 0, length, c.splits);
            g.hi = length;
            g.pLo = 0;
            g.pHi = c.total;
        } else if (c.splits.length != 0) {
            revert SumRefereeWidth(c.splits.length, 0);
        }
        _pass(g, IElementReferee.Side.Challenger);
        if (next == Stage.Resolved) {
            // The element is determined by the claim alone (+0, or NaN): the defender's value is the spec's.
            _resolve(gameId, g, IElementReferee.Outcome.DefenderWins);
        } else {
            g.stage = next;
        }
        emit Claimed(gameId, length, k, w, c.total, c.splits);
    }

    /// @inheritdoc ISumReferee
    function pick(uint256 gameId, int256[] calldata theirs, uint256 m) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Pick);
        bytes32 back = keccak256(abi.encodePacked(theirs));
        if (back != g.pending) revert SumRefereeOpponentMismatch(back, g.pending);
        uint64[] memory points = GridLib.splitPoints(g.lo, g.hi, g.arity);
        uint256 count = points.length;
        if (theirs.length != count) revert SumRefereeWidth(theirs.length, count);
        if (m > count) revert SumRefereeWidth(m, count + 1);
        if (m != 0) {
            g.lo = points[m - 1];
            g.pLo = theirs[m - 1];
        }
        if (m != count) {
            g.hi = points[m];
            g.pHi = theirs[m];
        }
        g.stage = g.hi - g.lo == 1 ? Stage.Term : Stage.Split;
        _pass(g, IElementReferee.Side.Defender);
        emit Picked(gameId, g.lo, g.hi, g.pLo, g.pHi);
    }

    /// @inheritdoc ISumReferee
    function refute(uint256 gameId, uint64 at, IDotReferee.Opening calldata o) external metered(gameId) {
        Game storage g = _game(gameId);
        // A finite claim is refuted in stage Pick, an infinite one in stage Refute.
        Game storage h = _begin(gameId, g.stage == Stage.Refute ? Stage.Refute : Stage.Pick);
        if (at >= h.length) revert SumRefereeWidth(at, h.length);
        uint32 x = _open(h, at, o);
        uint16 claimed = h.key;
        bool nan = x & 0x7FFFFFFF > 0x7F800000;
        // Against a finite claim: any larger class (an infinity or a NaN included). Against an infinity: a NaN
        // or the opposite infinity (another element of class NON_FINITE does not disprove it).
        bool refutes =
            claimed == NON_FINITE ? nan || x == h.witness ^ SIGN : GridLib.key(x) > claimed;
        if (!refutes) revert SumRefereeNotGreater(x, claimed);
        _pass(h, IElementReferee.Side.Defender);
        _resolve(gameId, h, IElementReferee.Outcome.ChallengerWins);
        emit Refuted(gameId, at, x);
    }

    /// @inheritdoc ISumReferee
    function split(uint256 gameId, int256[] calldata splits) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Split);
        _post(g, g.lo, g.hi, splits);
        g.stage = Stage.Pick;
        _pass(g, IElementReferee.Side.Challenger);
        emit SplitPosted(gameId, g.lo, g.hi, splits);
    }

    /// @inheritdoc ISumReferee
    function proveTerm(uint256 gameId, IDotReferee.Opening calldata o) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Term);
        uint64 at = g.lo;
        uint32 x = _open(g, at, o);
        IElementReferee.Outcome result = IElementReferee.Outcome.ChallengerWins;
        int256 q = 0;
        int256 claimed = g.pHi - g.pLo; // both within the int256 range a sum of L grid integers never leaves
        // An element of a larger class than the claimed maximum disproves the claim itself.
        if (GridLib.key(x) <= g.key) {
            q = GridLib.grid(x, GridLib.exponent(g.key), _pSum(g.length));
            if (q == claimed) result = IElementReferee.Outcome.DefenderWins;
        }
        _pass(g, IElementReferee.Side.Defender);
        _resolve(gameId, g, result);
        emit TermComputed(gameId, at, q, claimed);
    }

    /// @inheritdoc ISumReferee
    function timeout(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        if (g.stage == Stage.Resolved) revert SumRefereeNotPlaying(gameId);
        IElementReferee.Side side = g.toMove;
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp <= deadline) revert SumRefereeClockRunning(gameId, deadline);
        if (side == IElementReferee.Side.Defender) g.defenderClock = 0;
        else g.challengerClock = 0;
        _resolve(
            gameId,
            g,
            side == IElementReferee.Side.Defender
                ? IElementReferee.Outcome.ChallengerWins
                : IElementReferee.Outcome.DefenderWins
        );
    }

    // ---- views ---------------------------------------------------------------------------

    /// @inheritdoc ISumReferee
    function inputIndex(uint256 element, uint256 k, uint64[] calldata shape, uint256 reduced)
        public
        pure
        returns (uint256 index)
    {
        uint256 stride = 1;
        for (uint256 r = shape.length; r > 0;) {
            unchecked {
                --r; // r > 0
            }
            uint256 s = shape[r];
            if (s == 0) return 0; // an empty input: nothing to open (verifyElement refuses every index)
            uint256 c;
            if ((reduced >> r) & 1 == 1) {
                c = k % s;
                k /= s;
            } else {
                c = element % s;
                element /= s;
            }
            index += c * stride;
            stride *= s;
        }
    }

    /// @inheritdoc ISumReferee
    function splitPoints(uint64 lo, uint64 hi, uint64 arity) external pure returns (uint64[] memory) {
        return GridLib.splitPoints(lo, hi, arity);
    }

    /// @inheritdoc ISumReferee
    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        return _game(gameId).outcome;
    }

    /// @inheritdoc ISumReferee
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        Game storage g = _game(gameId);
        if (msg.sender != g.owner) revert SumRefereeNotOwner(gameId, msg.sender, g.owner);
        return g.outcome;
    }

    /// @inheritdoc ISumReferee
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas) {
        Game storage g = _game(gameId);
        gas = [uint256(g.defenderGas), uint256(g.challengerGas)];
    }

    /// @inheritdoc ISumReferee
    function gameOf(uint256 gameId) external view returns (GameView memory v) {
        Game storage g = _game(gameId);
        v.owner = g.owner;
        v.players = g.players;
        v.stage = g.stage;
        v.outcome = g.outcome;
        v.toMove = g.toMove;
        v.variant = g.variant;
        v.clockLeft = [uint64(g.defenderClock), uint64(g.challengerClock)];
        v.turnStartedAt = uint64(g.turnStartedAt);
        v.input = g.input;
        v.element = g.element;
        v.values = [g.defenderValue, g.challengerValue];
        v.key = g.key;
        v.witness = g.witness;
        v.length = g.length;
        v.reduced = g.reduced;
        v.lo = g.lo;
        v.hi = g.hi;
        v.pLo = g.pLo;
        v.pHi = g.pHi;
        v.moves = g.moves;
    }

    /// @inheritdoc ISumReferee
    function gameCount() external view returns (uint256) {
        return _count;
    }

    // ---- internals -----------------------------------------------------------------------

    /// @dev The slice of the game's element: the output shape checked against the game's header, the input header
    ///      against the agreed commitment, and the output shape against the input's summed over the node's dims.
    ///      Returns the reduced dims (a bit each) and L. A 0-dimensional input is one value: L = 1, output [].
    function _slice(Game storage g, uint64[] calldata out, IElementReferee.Header calldata input)
        private
        view
        returns (uint256 reduced, uint64 length)
    {
        bytes32 got = keccak256(abi.encodePacked(F32, out));
        if (got != g.header) revert SumRefereeHeader(0, got, g.header);
        if (input.dtype != F32) revert SumRefereeHeader(1, 0, bytes32(uint256(input.dtype)));
        got = TensorLib.commitmentOf(input.dtype, input.shape, input.dataRoot);
        if (got != g.input) revert SumRefereeHeader(1, got, g.input);
        uint256 v = g.variant;
        uint256 n = input.shape.length;
        if (n == 0) {
            // The kernel sums a 0-dimensional input as one value: dim 0 or -1, or every dim.
            if ((v >> 1) & ~uint256(17) != 0) revert SumRefereeShape(type(uint256).max - 1, 0, 1);
            if (out.length != 0) revert SumRefereeShape(type(uint256).max, out.length, 0);
            length = 1;
        } else {
            reduced = _reducedDims(v, n);
            length = _summedShape(input.shape, reduced, v & 1 == 1, out);
        }
        uint256 numel = TensorLib.numel(out);
        if (g.element >= numel) revert SumRefereeWidth(g.element, numel);
    }

    /// @dev The dims a sum of `variant` reduces on an input of `n` >= 1 dimensions, a bit each (`variant`: bit 0
    ///      keepdim, bits 1 .. 4 dims 0 .. 3, bit 5 dim -1, bit 6 dim -2; no dim bit: every dim).
    function _reducedDims(uint256 v, uint256 n) private pure returns (uint256 dims) {
        dims = (v >> 1) & 15; // dims 0 .. 3
        if (v & 32 != 0) dims |= 1 << (n - 1); // -1
        if (v & 64 != 0) {
            if (n < 2) revert SumRefereeShape(type(uint256).max - 1, n, 2);
            dims |= 1 << (n - 2); // -2
        }
        if (dims >> n != 0) revert SumRefereeShape(type(uint256).max - 1, n, n + 1);
        if (v >> 1 == 0) dims = (1 << n) - 1; // no dim: every dim
    }

    /// @dev Checks that `out` is `sh` summed over `reduced` (those dims dropped, or 1 with `keep`); returns L, the
    ///      product of the reduced sizes (checked: a header whose slice passes 2^64 values reverts; a committed
    ///      tensor holds at most 2^26).
    function _summedShape(uint64[] calldata sh, uint256 reduced, bool keep, uint64[] calldata out)
        private
        pure
        returns (uint64 length)
    {
        length = 1;
        uint256 o = 0; // the next output dimension
        for (uint256 d; d < sh.length; ++d) {
            bool r = (reduced >> d) & 1 == 1;
            if (r) length *= sh[d];
            if (r && !keep) continue;
            uint256 want = r ? 1 : sh[d];
            if (o >= out.length) revert SumRefereeShape(type(uint256).max, out.length, o + 1);
            if (out[o] != want) revert SumRefereeShape(o, out[o], want);
            ++o;
        }
        if (o != out.length) revert SumRefereeShape(type(uint256).max, out.length, o);
    }

    /// @dev Term `at` of the game's slice, opened against the agreed input (fp32).
    function _open(Game storage g, uint64 at, IDotReferee.Opening calldata o) private view returns (uint32) {
        uint256 index = inputIndex(g.element, at, o.shape, g.reduced);
        return uint32(TensorLib.verifyElement(g.input, F32, o.shape, index, o.chunk, o.siblings));
    }

    /// @dev p_sum(L) = min(50, 53 - ceil(log2 L)) for L >= 1.
    function _pSum(uint256 length) private pure returns (uint256) {
        uint256 p = 53 - GridLib.ceilLog2(length);
        return p < P_SUM_MAX ? p : P_SUM_MAX;
    }

    function _game(uint256 gameId) private view returns (Game storage g) {
        g = _games[gameId];
        if (g.stage == Stage.None) revert SumRefereeUnknown(gameId);
    }

    function _begin(uint256 gameId, Stage stage) private view returns (Game storage g) {
        g = _game(gameId);
        if (g.stage != stage) revert SumRefereeWrongStage(gameId, stage, g.stage);
        IElementReferee.Side side = g.toMove;
        address expected = g.players[uint8(side)];
        if (msg.sender != expected) revert SumRefereeNotYourTurn(gameId, msg.sender, expected);
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp > deadline) revert SumRefereeClockExpired(gameId, deadline);
    }

    function _clock(Game storage g, IElementReferee.Side side) private view returns (uint64) {
        return side == IElementReferee.Side.Defender ? g.defenderClock : g.challengerClock;
    }

    function _pass(Game storage g, IElementReferee.Side next) private {
        uint40 used = uint40(block.timestamp) - g.turnStartedAt;
        // _begin checked block.timestamp <= turnStartedAt + the mover's clock: no underflow.
        unchecked {
            if (g.toMove == IElementReferee.Side.Defender) g.defenderClock -= used;
            else g.challengerClock -= used;
            ++g.moves;
        }
        g.turnStartedAt = uint40(block.timestamp);
        g.toMove = next;
    }

    /// @dev Adds the gas used since `gasAtStart` (plus the transaction's base and calldata cost and the meter's
    ///      own) to the caller's side, if it is a player.
    function _meter(uint256 gameId, uint256 gasAtStart) private {
        Game storage g = _games[gameId];
        uint256 used = gasAtStart - gasleft() + TX_BASE_GAS + CALLDATA_GAS_PER_BYTE * msg.data.length + METER_GAS;
        uint256 s = g.toMove == IElementReferee.Side.Defender ? 1 : 0;
        if (msg.sender != g.players[s]) {
            s = 1 - s;
            if (msg.sender != g.players[s]) return;
        }
        if (s == 0) g.defenderGas += uint40(used);
        else g.challengerGas += uint40(used);
    }

    function _resolve(uint256 gameId, Game storage g, IElementReferee.Outcome o) private {
        g.stage = Stage.Resolved;
        g.outcome = o;
        emit GameResolved(gameId, o);
    }

    /// @dev Records the defender's prefix sums at the interior points of [lo, hi].
    function _post(Game storage g, uint64 lo, uint64 hi, int256[] calldata splits) private {
        uint256 count = GridLib.splitPoints(lo, hi, g.arity).length;
        if (splits.length != count) revert SumRefereeWidth(splits.length, count);
        g.pending = keccak256(abi.encodePacked(splits));
    }
}
