// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDotReferee} from "./interfaces/IDotReferee.sol";
import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {ITraceReferee} from "./interfaces/ITraceReferee.sol";
import {ISumReferee} from "./interfaces/ISumReferee.sol";
import {TensorLib} from "./lib/TensorLib.sol";
import {Binary32} from "./lib/Binary32.sol";
import {GridLib} from "./lib/GridLib.sol";
import {
    DotRefereeUnknown,
    DotRefereeBadParams,
    DotRefereeWrongStage,
    DotRefereeNotPlaying,
    DotRefereeNotYourTurn,
    DotRefereeClockExpired,
    DotRefereeClockRunning,
    DotRefereeWidth,
    DotRefereeShape,
    DotRefereeInconsistent,
    DotRefereeOpponentMismatch,
    DotRefereeNotGreater,
    DotRefereeNotOwner,
    DotRefereeHeader,
    DotRefereeTracePending
} from "./lib/DotRefereeErrors.sol";

/// @title DotReferee
/// @notice The element phase of an exact dot product (docs/game.md section 2.8): one disputed output element of
///         mm or addmm, decided by a claim of both grid exponents with witnesses, an N-ary bisection of the
///         exact integer prefix sums, and one term recomputed on chain.
/// @dev Holds no funds. Every loop is bounded: at most 63 split points per move, 32 dimensions per shape.
contract DotReferee is IDotReferee {
    uint256 private constant MM = 0;
    uint256 private constant ADDMM = 1;
    uint8 private constant F32 = 1;
    uint16 private constant NON_FINITE = GridLib.NON_FINITE;
    uint32 private constant NAN = 0x7FC00000;
    uint256 private constant P_DOT_MAX = 14;
    uint256 private constant MM_CODE = 64; // ElementReferee.MM (ADDMM = 65)
    uint256 private constant TRACE_CODE = 66; // ElementReferee.EXP: codes 66.. are TracePrograms' functions 0..
    uint256 private constant TRACE_LAST = 74;
    uint256 private constant SUM_CODE = 112; // ElementReferee.SUM: codes 112 + variant (ISumReferee.Params)
    uint256 private constant SUM_LAST = 239;

    uint256 private constant TX_BASE_GAS = 21_000;
    uint256 private constant CALLDATA_GAS_PER_BYTE = 40;
    uint256 private constant METER_GAS = 1_000;

    /// @dev The first slot holds what every move writes (stage, turn, clocks, meters, move count).
    struct Game {
        Stage stage;
        IElementReferee.Outcome outcome;
        IElementReferee.Side toMove;
        uint8 op;
        uint16 moves;
        uint40 turnStartedAt;
        uint40 defenderClock;
        uint40 challengerClock;
        uint40 defenderGas;
        uint40 challengerGas;
        address owner;
        uint64 arity;
        address[2] players;
        uint256 elementGame; // the ElementReferee game this one decides (0: a standalone game)
        uint64 k;
        uint64 n;
        uint16 rowKey;
        uint16 colKey;
        uint32 defenderValue;
        uint32 challengerValue;
        uint64 lo;
        uint64 hi;
        uint256 element;
        int256 pLo;
        int256 pHi;
        bytes32 pending; // keccak256 of the defender's last list of prefix sums
        bytes32[3] inputs; // [bias,] A, B
    }

    /// @notice The ElementReferee whose mm and addmm games this referee takes over (`start`); it deployed this one.
    IElementReferee public immutable element;
    /// @inheritdoc IDotReferee
    address public immutable trace;
    /// @inheritdoc IDotReferee
    address public immutable sum;

    /// @dev An element game handed to a trace or sum game: its id there and the defender's gas for the hand-over.
    struct TraceLink {
        uint64 game;
        uint40 startGas;
    }

    uint256 private _count;
    mapping(uint256 gameId => Game) private _games;
    mapping(uint256 elementGame => uint256 gameId) private _taken;
    mapping(uint256 elementGame => TraceLink) private _traces;
    mapping(uint256 elementGame => TraceLink) private _sums;

    /// @dev Charges a player's call to its side's meter; a call that resolved a game taken over from the
    ///      ElementReferee settles that game there (once: no move of a resolved game succeeds).
    modifier metered(uint256 gameId) {
        uint256 start_ = gasleft();
        _;
        _meter(gameId, start_);
        _settle(gameId);
    }

    constructor(address element_, address trace_, address sum_) {
        element = IElementReferee(element_);
        trace = trace_;
        sum = sum_;
    }

    // ---- opening -------------------------------------------------------------------------

    /// @inheritdoc IDotReferee
    function open(Params calldata p) external returns (uint256 gameId) {
        return _open(p, 0);
    }

    /// @dev A standalone game (`elementGame` 0, owned by the caller, its clock starting now) or a takeover
    ///      (owned by the ElementReferee; `start` then sets its turn's start to the element game's).
    function _open(Params memory p, uint256 elementGame) private returns (uint256 gameId) {
        if (p.op > ADDMM) revert DotRefereeBadParams(1, p.op);
        uint256 nIn = p.op == ADDMM ? 3 : 2;
        if (p.inputs.length != nIn) revert DotRefereeBadParams(2, p.inputs.length);
        address d = p.players[0];
        address c = p.players[1];
        if (d == c || d == address(0) || c == address(0)) revert DotRefereeBadParams(3, uint160(c));
        if (p.values[0] == p.values[1]) revert DotRefereeBadParams(4, p.values[0]);
        for (uint256 s; s < 2; ++s) {
            if (p.clocks[s] == 0 || p.clocks[s] > type(uint40).max) revert DotRefereeBadParams(5, p.clocks[s]);
        }
        uint64 a = p.arity;
        if (a < 2 || a > 64 || a & (a - 1) != 0) revert DotRefereeBadParams(6, a);
        if (p.n == 0) revert DotRefereeBadParams(7, 0);
        gameId = ++_count;
        Game storage g = _games[gameId];
        g.stage = Stage.Claim;
        g.op = uint8(p.op);
        g.turnStartedAt = uint40(block.timestamp); // a takeover's: start sets the element game's
        g.defenderClock = uint40(p.clocks[0]);
        g.challengerClock = uint40(p.clocks[1]);
        g.owner = elementGame == 0 ? msg.sender : address(element);
        g.elementGame = elementGame;
        g.arity = a;
        g.players = [d, c];
        g.k = p.k;
        g.n = p.n;
        g.defenderValue = p.values[0];
        g.challengerValue = p.values[1];
        g.element = p.element;
        for (uint256 i; i < nIn; ++i) {
            g.inputs[i] = p.inputs[i];
        }
        // Slots that later moves overwrite start non-zero, so that each move is a cheap update.
        g.pending = bytes32(uint256(1));
        g.pLo = 1;
        g.pHi = 1;
        emit GameOpened(gameId, g.owner, p.op, d, c, p.element, p.values[0], p.values[1]);
    }

    // ---- moves ---------------------------------------------------------------------------

    /// @inheritdoc IDotReferee
    function start(uint256 elementGame, Takeover calldata t, Claim calldata c) external returns (uint256 gameId) {
        uint256 gas0 = gasleft();
        IElementReferee.GameView memory v = element.gameOf(elementGame);
        if (msg.sender != v.players[0]) revert DotRefereeNotYourTurn(elementGame, msg.sender, v.players[0]);
        // Only mm and addmm: a trace op's game has one input, which the takeover's shapes would not find.
        if (v.op != MM_CODE && v.op != MM_CODE + ADDMM) revert DotRefereeBadParams(1, v.op);
        // hand checks the stage (ElementProof) and stops the game's clocks.
        (bytes32 hh, uint64 arity) = element.hand(elementGame, IElementReferee.Outcome.Pending, [uint256(0), 0]);
        gameId = _open(_takeover(elementGame, v, hh, arity, t), elementGame);
        _games[gameId].turnStartedAt = uint40(v.turnStartedAt);
        _taken[elementGame] = gameId;
        // The defender's clock ran on since its turn began in the element game: _claim's _begin checks it.
        _claim(gameId, _begin(gameId, Stage.Claim), c);
        _meter(gameId, gas0);
        _settle(gameId);
    }

    // ---- the transcendental functions: handed to the TraceReferee -----------------------------

    /// @inheritdoc IDotReferee
    function startTrace(uint256 elementGame, IElementReferee.InputOpening calldata input)
        external
        returns (uint256 traceGame)
    {
        uint256 gas0 = gasleft();
        (IElementReferee.GameView memory v, bytes32 hh,, uint64[2] memory clocks) =
            _handOver(elementGame, TRACE_CODE, TRACE_LAST);
        // A unary elementwise node: its input has the output's shape, element e sits at index e.
        bytes32 got = keccak256(abi.encodePacked(F32, input.shape));
        if (got != hh) revert DotRefereeHeader(0, got, hh);
        if (input.dtype != F32) revert DotRefereeShape(1, 2 ** 256 - 2, input.dtype, F32);
        uint32 x = uint32(
            TensorLib.verifyElement(
                element.inputsOf(elementGame)[0], input.dtype, input.shape, v.element, input.chunk, input.siblings
            )
        );
        uint256 fn = v.op - TRACE_CODE;
        traceGame = ITraceReferee(trace).open(fn, x, [uint32(v.values[0]), uint32(v.values[1])], v.players, clocks);
        emit TraceStarted(elementGame, traceGame, fn, x);
        _traces[elementGame] = TraceLink(uint64(traceGame), _used(gas0));
    }

    /// @inheritdoc IDotReferee
    function startSum(uint256 elementGame) external returns (uint256 sumGame) {
        uint256 gas0 = gasleft();
        (, bytes32 hh, uint64 arity, uint64[2] memory clocks) = _handOver(elementGame, SUM_CODE, SUM_LAST);
        sumGame = ISumReferee(sum).take(elementGame, hh, arity, clocks);
        emit SumStarted(elementGame, sumGame);
        _sums[elementGame] = TraceLink(uint64(sumGame), _used(gas0));
    }

    /// @dev The element game `elementGame` handed over (stage Delegated, its clocks stopped) by its defender, on
    ///      its clock, for an op code in [first, last]; returns its view, output header hash, arity and what is
    ///      left of both clocks (at least one second each: the new game's open refuses 0).
    function _handOver(uint256 elementGame, uint256 first, uint256 last)
        private
        returns (IElementReferee.GameView memory v, bytes32 hh, uint64 arity, uint64[2] memory clocks)
    {
        v = element.gameOf(elementGame);
        if (msg.sender != v.players[0]) revert DotRefereeNotYourTurn(elementGame, msg.sender, v.players[0]);
        if (v.op < first || v.op > last) revert DotRefereeBadParams(1, v.op);
        uint256 deadline = uint256(v.turnStartedAt) + v.clockLeft[0];
        if (block.timestamp > deadline) revert DotRefereeClockExpired(elementGame, deadline);
        // hand checks the stage (ElementProof) and stops the element game's clocks.
        (hh, arity) = element.hand(elementGame, IElementReferee.Outcome.Pending, [uint256(0), 0]);
        uint64 left = uint64(deadline - block.timestamp);
        clocks = [left == 0 ? 1 : left, v.clockLeft[1] == 0 ? 1 : v.clockLeft[1]];
    }

    /// @dev The gas of a hand-over since `gas0`, metered as a move (the defender's, added when it settles).
    function _used(uint256 gas0) private view returns (uint40) {
        return uint40(gas0 - gasleft() + TX_BASE_GAS + CALLDATA_GAS_PER_BYTE * msg.data.length + METER_GAS);
    }

    /// @inheritdoc IDotReferee
    function settleTrace(uint256 elementGame) external {
        _settleLinked(elementGame, _traces[elementGame], trace);
    }

    /// @inheritdoc IDotReferee
    function settleSum(uint256 elementGame) external {
        _settleLinked(elementGame, _sums[elementGame], sum);
    }

    /// @dev Hands the outcome and both meters (the defender's hand-over gas added) of the resolved game `l.game` of
    ///      `referee` (a TraceReferee or a SumReferee: the same `ownedOutcome` and `meterOf`) to the element game.
    function _settleLinked(uint256 elementGame, TraceLink memory l, address referee) private {
        if (l.game == 0) revert DotRefereeUnknown(elementGame);
        ITraceReferee t = ITraceReferee(referee);
        IElementReferee.Outcome o = t.ownedOutcome(l.game);
        if (o == IElementReferee.Outcome.Pending) revert DotRefereeTracePending(l.game);
        uint256[2] memory gas = t.meterOf(l.game);
        gas[0] += l.startGas;
        emit TraceSettled(elementGame, l.game, o);
        element.hand(elementGame, o, gas);
    }

    /// @inheritdoc IDotReferee
    function summedBy(uint256 elementGame) external view returns (uint256) {
        return _sums[elementGame].game;
    }

    /// @inheritdoc IDotReferee
    function tracedBy(uint256 elementGame) external view returns (uint256) {
        return _traces[elementGame].game;
    }

    /// @dev The Params of a takeover, from the element game and the opened headers of A, B and the output.
    function _takeover(
        uint256 elementGame,
        IElementReferee.GameView memory v,
        bytes32 hh,
        uint64 arity,
        Takeover calldata t
    )
        private
        view
        returns (Params memory p)
    {
        bytes32[] memory inputs = element.inputsOf(elementGame);
        (uint64 k, uint64 n) = _shapes(t, inputs, hh);
        uint64 left = v.clockLeft[0];
        if (block.timestamp > v.turnStartedAt + left) {
            revert DotRefereeClockExpired(elementGame, v.turnStartedAt + left);
        }
        p = Params({
            op: v.op - MM_CODE,
            inputs: inputs,
            k: k,
            n: n,
            element: v.element,
            values: [uint32(v.values[0]), uint32(v.values[1])],
            players: v.players,
            clocks: [left, v.clockLeft[1] == 0 ? 1 : v.clockLeft[1]],
            arity: arity
        });
    }

    /// @dev K and N from the opened headers of A and B, checked against the agreed commitments and the output.
    function _shapes(Takeover calldata t, bytes32[] memory inputs, bytes32 hh) private pure returns (uint64, uint64) {
        uint64[] calldata out = t.outputShape;
        bytes32 got = keccak256(abi.encodePacked(F32, out));
        if (got != hh) revert DotRefereeHeader(0, got, hh);
        if (out.length != 2) revert DotRefereeShape(3, type(uint256).max, out.length, 2);
        uint256 a = inputs.length - 2;
        _checkHeader(t.a, inputs[a], 1);
        _checkHeader(t.b, inputs[a + 1], 2);
        uint64[] calldata sa = t.a.shape;
        uint64[] calldata sb = t.b.shape;
        if (sa.length != 2) revert DotRefereeShape(1, type(uint256).max, sa.length, 2);
        if (sb.length != 2) revert DotRefereeShape(2, type(uint256).max, sb.length, 2);
        if (sb[0] != sa[1]) revert DotRefereeShape(2, 0, sb[0], sa[1]);
        if (out[0] != sa[0]) revert DotRefereeShape(3, 0, out[0], sa[0]);
        if (out[1] != sb[1]) revert DotRefereeShape(3, 1, out[1], sb[1]);
        return (sa[1], sb[1]);
    }

    function _checkHeader(IElementReferee.Header calldata h, bytes32 commitment, uint256 tensor) private pure {
        if (h.dtype != F32) revert DotRefereeShape(tensor, 2 ** 256 - 2, h.dtype, F32);
        bytes32 c = TensorLib.commitmentOf(h.dtype, h.shape, h.dataRoot);
        if (c != commitment) revert DotRefereeHeader(tensor, c, commitment);
    }

    /// @inheritdoc IDotReferee
    function claim(uint256 gameId, Claim calldata c) external metered(gameId) {
        _claim(gameId, _begin(gameId, Stage.Claim), c);
    }

    function _claim(uint256 gameId, Game storage g, Claim calldata c) private {
        (uint16 rowKey, uint16 colKey) = _checkClaim(g, c);
        g.rowKey = rowKey;
        g.colKey = colKey;
        uint64 k = g.k;
        if (k == 0 || rowKey == NON_FINITE || colKey == NON_FINITE) {
            // The element is determined without any sum (C = +0, or NaN by the non-finite rule, plus the
            // bias): the defender's value is the spec's, so the challenger's differing one is not.
            if (c.splits.length != 0) revert DotRefereeWidth(c.splits.length, 0);
            _pass(g, IElementReferee.Side.Challenger);
            _resolve(gameId, g, IElementReferee.Outcome.DefenderWins);
        } else {
            _post(g, 0, k, c.splits);
            g.lo = 0;
            g.hi = k;
            g.pLo = 0;
            g.pHi = c.total;
            g.stage = Stage.Pick;
            _pass(g, IElementReferee.Side.Challenger);
        }
        emit Claimed(gameId, rowKey, colKey, c.total, c.splits);
    }

    /// @dev The claim's witnesses opened, and the element they and S make checked against the defender's value.
    function _checkClaim(Game storage g, Claim calldata c) private view returns (uint16 rowKey, uint16 colKey) {
        (uint256 i, uint256 j) = _coords(g);
        uint64 k = g.k;
        uint32 mm = 0; // +0: the value of an mm with K = 0
        if (k != 0) {
            if (c.rowAt >= k) revert DotRefereeWidth(c.rowAt, k);
            if (c.colAt >= k) revert DotRefereeWidth(c.colAt, k);
            rowKey = GridLib.key(_openA(g, i, c.rowAt, c.row));
            colKey = GridLib.key(_openB(g, c.colAt, j, c.col));
            if (rowKey == NON_FINITE || colKey == NON_FINITE) {
                mm = NAN;
            } else {
                int256 scale = GridLib.exponent(rowKey) + GridLib.exponent(colKey) - 2 * int256(_pDot(k));
                mm = Binary32.fromScaledInt(c.total, scale);
                // linalg.md: a product that rounds to zero is +0 (an integer sum has no sign).
                if (mm == 0x80000000) mm = 0;
            }
        }
        uint32 y = g.op == ADDMM ? Binary32.add(uint32(_openBias(g, i, j, c.bias)), mm) : mm;
        if (y != g.defenderValue) revert DotRefereeInconsistent(y, g.defenderValue);
    }

    /// @inheritdoc IDotReferee
    function pick(uint256 gameId, int256[] calldata theirs, uint256 m) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Pick);
        bytes32 back = keccak256(abi.encodePacked(theirs));
        if (back != g.pending) revert DotRefereeOpponentMismatch(back, g.pending);
        uint64 lo = g.lo;
        uint64 hi = g.hi;
        uint64[] memory points = splitPoints(lo, hi, g.arity);
        uint256 count = points.length;
        if (theirs.length != count) revert DotRefereeWidth(theirs.length, count);
        if (m > count) revert DotRefereeWidth(m, count + 1);
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

    /// @inheritdoc IDotReferee
    function refute(uint256 gameId, uint256 which, uint64 at, Opening calldata o) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Pick);
        if (which > 1) revert DotRefereeWidth(which, 2);
        if (at >= g.k) revert DotRefereeWidth(at, g.k);
        (uint256 i, uint256 j) = _coords(g);
        uint16 key = GridLib.key(which == 0 ? _openA(g, i, at, o) : _openB(g, at, j, o));
        uint16 claimed = which == 0 ? g.rowKey : g.colKey;
        if (key <= claimed) revert DotRefereeNotGreater(key, claimed);
        _pass(g, IElementReferee.Side.Defender);
        _resolve(gameId, g, IElementReferee.Outcome.ChallengerWins);
        emit Refuted(gameId, which, at, key);
    }

    /// @inheritdoc IDotReferee
    function split(uint256 gameId, int256[] calldata splits) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Split);
        _post(g, g.lo, g.hi, splits);
        g.stage = Stage.Pick;
        _pass(g, IElementReferee.Side.Challenger);
        emit SplitPosted(gameId, g.lo, g.hi, splits);
    }

    /// @inheritdoc IDotReferee
    function proveTerm(uint256 gameId, Opening calldata a, Opening calldata b) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Term);
        (IElementReferee.Outcome o, int256 qa, int256 qb) = _term(g, a, b);
        _pass(g, IElementReferee.Side.Defender);
        _resolve(gameId, g, o);
        emit TermComputed(gameId, g.lo, qa, qb, g.pHi - g.pLo);
    }

    /// @dev A[i, lo] and B[lo, j], opened.
    function _termElements(Game storage g, Opening calldata a, Opening calldata b)
        private
        view
        returns (uint32 x, uint32 w)
    {
        (uint256 i, uint256 j) = _coords(g);
        x = _openA(g, i, g.lo, a);
        w = _openB(g, g.lo, j, b);
    }

    /// @dev Term lo recomputed: its two elements opened, their grid integers, and whether their product is
    ///      the defender's pHi - pLo.
    function _term(Game storage g, Opening calldata a, Opening calldata b)
        private
        view
        returns (IElementReferee.Outcome o, int256 qa, int256 qb)
    {
        (uint32 x, uint32 w) = _termElements(g, a, b);
        o = IElementReferee.Outcome.ChallengerWins;
        // An element of a larger class than the claimed maximum disproves the claim itself.
        if (GridLib.key(x) > g.rowKey || GridLib.key(w) > g.colKey) return (o, 0, 0);
        uint256 p = _pDot(g.k);
        qa = GridLib.grid(x, GridLib.exponent(g.rowKey), p);
        qb = GridLib.grid(w, GridLib.exponent(g.colKey), p);
        int256 prod = qa * qb; // |qa|, |qb| <= 2^14 here
        int256 pLo = g.pLo;
        bool ok;
        unchecked {
            int256 total = pLo + prod;
            // pLo + prod wraps only for a pLo at the end of the int256 range, which no sum of K terms is.
            ok = total == g.pHi && (prod >= 0 ? total >= pLo : total < pLo);
        }
        if (ok) o = IElementReferee.Outcome.DefenderWins;
    }

    /// @inheritdoc IDotReferee
    function timeout(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        if (g.stage == Stage.Resolved) revert DotRefereeNotPlaying(gameId);
        IElementReferee.Side side = g.toMove;
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp <= deadline) revert DotRefereeClockRunning(gameId, deadline);
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

    /// @inheritdoc IDotReferee
    function splitPoints(uint64 lo, uint64 hi, uint64 arity) public pure returns (uint64[] memory) {
        return GridLib.splitPoints(lo, hi, arity);
    }

    /// @inheritdoc IDotReferee
    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        return _game(gameId).outcome;
    }

    /// @inheritdoc IDotReferee
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        Game storage g = _game(gameId);
        if (msg.sender != g.owner) revert DotRefereeNotOwner(gameId, msg.sender, g.owner);
        return g.outcome;
    }

    /// @inheritdoc IDotReferee
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas) {
        Game storage g = _game(gameId);
        gas = [uint256(g.defenderGas), uint256(g.challengerGas)];
    }

    /// @inheritdoc IDotReferee
    function gameOf(uint256 gameId) external view returns (GameView memory v) {
        Game storage g = _game(gameId);
        v.owner = g.owner;
        v.players = g.players;
        v.elementGame = g.elementGame;
        v.stage = g.stage;
        v.outcome = g.outcome;
        v.toMove = g.toMove;
        v.op = g.op;
        v.clockLeft = [uint64(g.defenderClock), uint64(g.challengerClock)];
        v.turnStartedAt = uint64(g.turnStartedAt);
        v.k = g.k;
        v.n = g.n;
        v.element = g.element;
        v.values = [g.defenderValue, g.challengerValue];
        v.keys = [g.rowKey, g.colKey];
        v.lo = g.lo;
        v.hi = g.hi;
        v.pLo = g.pLo;
        v.pHi = g.pHi;
        v.moves = g.moves;
    }

    /// @inheritdoc IDotReferee
    function takenOver(uint256 elementGame) external view returns (uint256) {
        return _taken[elementGame];
    }

    /// @inheritdoc IDotReferee
    function gameCount() external view returns (uint256) {
        return _count;
    }

    // ---- internals -----------------------------------------------------------------------

    function _game(uint256 gameId) private view returns (Game storage g) {
        g = _games[gameId];
        if (g.stage == Stage.None) revert DotRefereeUnknown(gameId);
    }

    function _begin(uint256 gameId, Stage stage) private view returns (Game storage g) {
        g = _game(gameId);
        if (g.stage != stage) revert DotRefereeWrongStage(gameId, stage, g.stage);
        IElementReferee.Side side = g.toMove;
        address expected = g.players[uint8(side)];
        if (msg.sender != expected) revert DotRefereeNotYourTurn(gameId, msg.sender, expected);
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp > deadline) revert DotRefereeClockExpired(gameId, deadline);
    }

    function _clock(Game storage g, IElementReferee.Side side) private view returns (uint64) {
        return side == IElementReferee.Side.Defender ? g.defenderClock : g.challengerClock;
    }

    function _pass(Game storage g, IElementReferee.Side next) private {
        uint40 used = uint40(block.timestamp) - g.turnStartedAt;
        unchecked {
            if (g.toMove == IElementReferee.Side.Defender) g.defenderClock -= used;
            else g.challengerClock -= used;
            ++g.moves;
        }
        g.turnStartedAt = uint40(block.timestamp);
        g.toMove = next;
    }

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

    /// @dev Settles the ElementReferee game a resolved takeover decides.
    function _settle(uint256 gameId) private {
        Game storage g = _games[gameId];
        uint256 eg = g.elementGame;
        if (eg == 0 || g.stage != Stage.Resolved) return;
        element.hand(eg, g.outcome, [uint256(g.defenderGas), uint256(g.challengerGas)]);
    }

    function _resolve(uint256 gameId, Game storage g, IElementReferee.Outcome o) private {
        g.stage = Stage.Resolved;
        g.outcome = o;
        emit GameResolved(gameId, o);
    }

    /// @dev Records the defender's prefix sums at the interior points of [lo, hi].
    function _post(Game storage g, uint64 lo, uint64 hi, int256[] calldata splits) private {
        uint256 count = splitPoints(lo, hi, g.arity).length;
        if (splits.length != count) revert DotRefereeWidth(splits.length, count);
        g.pending = keccak256(abi.encodePacked(splits));
    }

    /// @dev The element's row i and column j (N > 0, checked by open).
    function _coords(Game storage g) private view returns (uint256 i, uint256 j) {
        uint256 n = g.n;
        uint256 e = g.element;
        return (e / n, e % n);
    }

    /// @dev A[i, at], opened against the agreed A (shape [M, K]).
    function _openA(Game storage g, uint256 i, uint256 at, Opening calldata o) private view returns (uint32) {
        uint64[] calldata sh = o.shape;
        if (sh.length != 2) revert DotRefereeShape(1, type(uint256).max, sh.length, 2);
        if (sh[1] != g.k) revert DotRefereeShape(1, 1, sh[1], g.k);
        uint256 a = g.op == ADDMM ? 1 : 0;
        return uint32(TensorLib.verifyElement(g.inputs[a], F32, sh, i * g.k + at, o.chunk, o.siblings));
    }

    /// @dev B[at, j], opened against the agreed B (shape [K, N]).
    function _openB(Game storage g, uint256 at, uint256 j, Opening calldata o) private view returns (uint32) {
        uint64[] calldata sh = o.shape;
        if (sh.length != 2) revert DotRefereeShape(2, type(uint256).max, sh.length, 2);
        if (sh[0] != g.k) revert DotRefereeShape(2, 0, sh[0], g.k);
        if (sh[1] != g.n) revert DotRefereeShape(2, 1, sh[1], g.n);
        uint256 b = g.op == ADDMM ? 2 : 1;
        return uint32(TensorLib.verifyElement(g.inputs[b], F32, sh, at * g.n + j, o.chunk, o.siblings));
    }

    /// @dev The bias element at (i, j)'s broadcast position: a shape of at most 2 dimensions, trailing
    ///      dimensions aligned, each 1 or the output's (row count unknown here: any, if not 1).
    function _openBias(Game storage g, uint256 i, uint256 j, Opening calldata o) private view returns (uint256) {
        uint64[] calldata sh = o.shape;
        uint256 nd = sh.length;
        if (nd > 2) revert DotRefereeShape(0, type(uint256).max, nd, 2);
        uint256 index = 0;
        if (nd >= 1) {
            uint256 cols = sh[nd - 1];
            if (cols != 1 && cols != g.n) revert DotRefereeShape(0, nd - 1, cols, g.n);
            if (cols != 1) index = j;
            if (nd == 2 && sh[0] != 1) index += i * cols;
        }
        return TensorLib.verifyElement(g.inputs[0], F32, sh, index, o.chunk, o.siblings);
    }

    /// @dev p_dot(K) = min(14, floor((53 - ceil(log2 K)) / 2)) for K >= 1.
    function _pDot(uint256 k) private pure returns (uint256) {
        uint256 p = (53 - GridLib.ceilLog2(k)) / 2;
        return p < P_DOT_MAX ? p : P_DOT_MAX;
    }
}
