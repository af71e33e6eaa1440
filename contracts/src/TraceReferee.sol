// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {ITraceReferee} from "./interfaces/ITraceReferee.sol";
import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {TraceLib} from "./lib/TraceLib.sol";
import {TracePrograms} from "./lib/TracePrograms.sol";
import {RepOpsElement} from "./lib/RepOpsElement.sol";
import {
    TraceRefereeUnknown,
    TraceRefereeNoFunction,
    TraceRefereeBadParams,
    TraceRefereeWrongStage,
    TraceRefereeNotPlaying,
    TraceRefereeNotYourTurn,
    TraceRefereeClockExpired,
    TraceRefereeClockRunning,
    TraceRefereeLength,
    TraceRefereeInconsistent,
    TraceRefereeMismatch,
    TraceRefereeStep,
    TraceRefereeNotOwner
} from "./lib/TraceRefereeErrors.sol";

/// @title TraceReferee
/// @notice The element phase of a transcendental function (docs/game.md section 2.9): the defender posts the
///         trace of the function's fixed binary64 program on the agreed input, the challenger names one step,
///         and the contract recomputes that one step. Soundness is argued in ITraceReferee.
/// @dev Holds no funds. Every loop is bounded by a program's length (at most 85 steps).
contract TraceReferee is ITraceReferee {
    uint256 private constant TX_BASE_GAS = 21_000;
    uint256 private constant CALLDATA_GAS_PER_BYTE = 40;
    uint256 private constant METER_GAS = 1_000;

    /// @dev Slot 0 holds what every move writes (stage, turn, clocks, meters, move count) and fn (31 bytes);
    ///      slot 1 what the moves read (owner, x, the values: 32 bytes).
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
        uint8 fn;
        address owner;
        uint32 x;
        uint32 defenderValue;
        uint32 challengerValue;
        address[2] players;
        bytes32 traceHash;
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

    /// @inheritdoc ITraceReferee
    function open(
        uint256 fn,
        uint32 x,
        uint32[2] calldata values,
        address[2] calldata players,
        uint64[2] calldata clocks
    ) external returns (uint256 gameId) {
        if (fn >= TracePrograms.FUNCTIONS) revert TraceRefereeNoFunction(fn);
        address d = players[0];
        address c = players[1];
        if (d == c || d == address(0) || c == address(0)) revert TraceRefereeBadParams(1, uint160(c));
        if (values[0] == values[1]) revert TraceRefereeBadParams(2, values[0]);
        for (uint256 s; s < 2; ++s) {
            if (clocks[s] == 0 || clocks[s] > type(uint40).max) revert TraceRefereeBadParams(3, clocks[s]);
        }
        gameId = ++_count;
        Game storage g = _games[gameId];
        g.stage = Stage.Claim;
        g.turnStartedAt = uint40(block.timestamp);
        g.defenderClock = uint40(clocks[0]);
        g.challengerClock = uint40(clocks[1]);
        g.owner = msg.sender;
        g.fn = uint8(fn);
        g.x = x;
        g.defenderValue = values[0];
        g.challengerValue = values[1];
        g.players = [d, c];
        // Written non-zero now, so that the claim's write is a cheap update.
        g.traceHash = bytes32(uint256(1));
        emit GameOpened(gameId, msg.sender, fn, x, d, c, values[0], values[1]);
    }

    // ---- moves ---------------------------------------------------------------------------

    /// @inheritdoc ITraceReferee
    function claim(uint256 gameId, bytes calldata trace) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Claim);
        uint256 n = TracePrograms.steps(g.fn);
        if (trace.length != 8 * n) revert TraceRefereeLength(trace.length, 8 * n);
        uint64 last = uint64(bytes8(trace[trace.length - 8:]));
        if (last != g.defenderValue) revert TraceRefereeInconsistent(last, g.defenderValue);
        bytes32 h = keccak256(trace);
        g.traceHash = h;
        g.stage = Stage.Refute;
        _pass(g, IElementReferee.Side.Challenger);
        emit Claimed(gameId, h, trace);
    }

    /// @inheritdoc ITraceReferee
    function refute(uint256 gameId, bytes calldata trace, uint256 step) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Refute);
        bytes32 h = keccak256(trace);
        if (h != g.traceHash) revert TraceRefereeMismatch(h, g.traceHash);
        uint256 fn = g.fn;
        uint256 n = TracePrograms.steps(fn);
        if (step >= n) revert TraceRefereeStep(step, n);
        // The hash fixes the length: the claim accepted only 8 * n bytes.
        uint64 computed = TraceLib.recompute(fn, g.x, trace, step);
        uint64 posted = uint64(bytes8(trace[8 * step:8 * step + 8]));
        _pass(g, IElementReferee.Side.Defender);
        emit StepRecomputed(gameId, step, computed, posted);
        _resolve(
            gameId,
            g,
            computed == posted ? IElementReferee.Outcome.DefenderWins : IElementReferee.Outcome.ChallengerWins
        );
    }

    /// @inheritdoc ITraceReferee
    function timeout(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        if (g.stage == Stage.Resolved) revert TraceRefereeNotPlaying(gameId);
        IElementReferee.Side side = g.toMove;
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp <= deadline) revert TraceRefereeClockRunning(gameId, deadline);
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

    /// @inheritdoc ITraceReferee
    function evaluate(uint256 fn, uint32 x) external pure returns (uint64[] memory trace) {
        if (fn >= TracePrograms.FUNCTIONS) revert TraceRefereeNoFunction(fn);
        return TraceLib.evaluate(fn, x);
    }

    /// @inheritdoc ITraceReferee
    function evaluateElement(uint256 op, uint256 a, uint256 b, uint256 c) external pure returns (uint256) {
        return RepOpsElement.evaluate(op, a, b, c);
    }

    /// @inheritdoc ITraceReferee
    function outcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        return _game(gameId).outcome;
    }

    /// @inheritdoc ITraceReferee
    function ownedOutcome(uint256 gameId) external view returns (IElementReferee.Outcome) {
        Game storage g = _game(gameId);
        if (msg.sender != g.owner) revert TraceRefereeNotOwner(gameId, msg.sender, g.owner);
        return g.outcome;
    }

    /// @inheritdoc ITraceReferee
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas) {
        Game storage g = _game(gameId);
        gas = [uint256(g.defenderGas), uint256(g.challengerGas)];
    }

    /// @inheritdoc ITraceReferee
    function gameOf(uint256 gameId) external view returns (GameView memory v) {
        Game storage g = _game(gameId);
        v.owner = g.owner;
        v.players = g.players;
        v.stage = g.stage;
        v.outcome = g.outcome;
        v.toMove = g.toMove;
        v.fn = g.fn;
        v.x = g.x;
        v.values = [g.defenderValue, g.challengerValue];
        v.clockLeft = [uint64(g.defenderClock), uint64(g.challengerClock)];
        v.turnStartedAt = uint64(g.turnStartedAt);
        v.steps = TracePrograms.steps(g.fn);
        v.traceHash = g.stage == Stage.Claim ? bytes32(0) : g.traceHash;
        v.moves = g.moves;
    }

    /// @inheritdoc ITraceReferee
    function gameCount() external view returns (uint256) {
        return _count;
    }

    // ---- internals -----------------------------------------------------------------------

    function _game(uint256 gameId) private view returns (Game storage g) {
        g = _games[gameId];
        if (g.stage == Stage.None) revert TraceRefereeUnknown(gameId);
    }

    function _begin(uint256 gameId, Stage stage) private view returns (Game storage g) {
        g = _game(gameId);
        if (g.stage != stage) revert TraceRefereeWrongStage(gameId, stage, g.stage);
        IElementReferee.Side side = g.toMove;
        address expected = g.players[uint8(side)];
        if (msg.sender != expected) revert TraceRefereeNotYourTurn(gameId, msg.sender, expected);
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp > deadline) revert TraceRefereeClockExpired(gameId, deadline);
    }

    function _clock(Game storage g, IElementReferee.Side side) private view returns (uint64) {
        return side == IElementReferee.Side.Defender ? g.defenderClock : g.challengerClock;
    }

    function _pass(Game storage g, IElementReferee.Side next) private {
        uint40 used = uint40(block.timestamp) - g.turnStartedAt;
        unchecked {
            // _begin checked used <= the mover's clock; moves stay far below 2^16 (two per game).
            if (g.toMove == IElementReferee.Side.Defender) g.defenderClock -= used;
            else g.challengerClock -= used;
            ++g.moves;
        }
        g.turnStartedAt = uint40(block.timestamp);
        g.toMove = next;
    }

    function _meter(uint256 gameId, uint256 gasAtStart) private {
        Game storage g = _games[gameId];
        uint256 used =
            gasAtStart - gasleft() + TX_BASE_GAS + CALLDATA_GAS_PER_BYTE * msg.data.length + METER_GAS;
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
}
