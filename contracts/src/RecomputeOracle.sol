// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRandomness} from "./interfaces/IRandomness.sol";
import {IRecomputeOracle, ORACLE_UNAVAILABLE} from "./interfaces/IRecomputeOracle.sol";
import {
    RecomputeOracleAlreadyCommitted,
    RecomputeOracleAlreadyRevealed,
    RecomputeOracleBondTooSmall,
    RecomputeOracleDeadlineNotPassed,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleExitAlreadyRequested,
    RecomputeOracleExitDelayTooLong,
    RecomputeOracleExitNotRequested,
    RecomputeOracleExitTooEarly,
    RecomputeOracleFeeAlreadyPaid,
    RecomputeOracleGameAlreadyBound,
    RecomputeOracleInvalidCommitteeSize,
    RecomputeOracleNotAssignedOracle,
    RecomputeOracleNotCommitted,
    RecomputeOracleNotCommitteeMember,
    RecomputeOracleNotDeployer,
    RecomputeOracleNotGame,
    RecomputeOracleNotRegistered,
    RecomputeOracleNothingToWithdraw,
    RecomputeOracleOpenDuties,
    RecomputeOracleRandomnessPending,
    RecomputeOracleResolutionTimeTooLong,
    RecomputeOracleRevealMismatch,
    RecomputeOracleRevealTooEarly,
    RecomputeOracleSelfChallenge,
    RecomputeOracleSilenceSlashTooLarge,
    RecomputeOracleTransferFailed,
    RecomputeOracleWrongChallengeBond,
    RecomputeOracleWrongFee,
    RecomputeOracleWrongStatus,
    RecomputeOracleZeroMaxAttempts,
    RecomputeOracleZeroMaxRounds,
    RecomputeOracleZeroMinBond,
    RecomputeOracleZeroWindow
} from "./lib/OracleErrors.sol";

/// @title RecomputeOracle
/// @notice Bonded oracles answering the single-operator question that ends a dispute.
/// @dev Draws (docs/game.md, "Oracle draws"). Stake is counted in units of `minBond`: an oracle
///      holds one slot per whole unit of its bond in `_slots`; slots freed by exits and slashes are
///      reused by later registrations, so leaving oracles do not dilute the sample space. A draw samples slots uniformly among the
///      `slotCount` that existed when its randomness was requested, each try `t` at
///      `keccak256(seed, t) % slotCount`, and keeps the first distinct eligible owners. Eligibility is
///      fixed by what happened before the request block `R`: the slot and its owner's (re)activation
///      are older than `R`, no exit was requested before `R`, the bond covers the slot's unit. Nothing
///      a caller does after `R` adds eligibility (slots created after `R` do not count), and the
///      seed is unreadable before block `R + delay`.
///
///      Duties. An oracle is on duty for a question from its assignment (as answering oracle or as
///      committee member) until its part ends: `exit` waits for its duties to end.
///
///      Funds. Every wei held is in exactly one of four totals: oracle bonds, challenge bonds,
///      credits (withdrawable) and burnt (nobody's). Slashes move bonds to credits or burnt.
contract RecomputeOracle is IRecomputeOracle {
    struct OracleAccount {
        uint256 bond;
        uint64 exitAt; // when the bond can be taken out; 0 unless an exit was requested
        uint64 exitBlock; // the block of the exit request; 0 unless one was made
        uint64 activeSince; // the block of the last (re)activation: eligible for requests after it
        uint32 units; // slots owned: floor(bond / minBond), at most MAX_UNITS
        uint32 openDuties; // question parts on which it can still be slashed
    }

    struct Slot {
        address oracle; // address(0): free
        uint64 since; // the block it was (re)assigned in
    }

    struct Ballot {
        bool seated;
        bool committed;
        bool revealed;
        uint8 round;
        bytes32 commitment;
        bytes32 outputsHash;
    }

    /// @dev Bound on every duration: deadlines fit in 64 bits.
    uint256 private constant MAX_DURATION = type(uint32).max;
    /// @dev Most stake units one oracle holds (bounds `register`'s loop).
    uint256 private constant MAX_UNITS = 64;
    /// @dev Largest committee: a draw must be able to seat it in `MAX_DRAW_TRIES`, and a round's
    ///      settlement loops over `maxRounds` committees.
    uint256 private constant MAX_COMMITTEE = 15;
    /// @dev Sampling tries per draw (bounds `draw`'s loop: about 7k gas a try when cold).
    uint256 private constant MAX_DRAW_TRIES = 96;

    IRandomness private immutable _randomness;
    address private immutable _deployer;
    uint256 private immutable _fee;
    uint256 private immutable _minBond;
    uint256 private immutable _challengeBond;
    uint256 private immutable _silenceSlash;
    uint64 private immutable _answerWindow;
    uint64 private immutable _challengeWindow;
    uint64 private immutable _voteWindow;
    uint64 private immutable _exitDelay;
    uint64 private immutable _waitLimit;
    uint8 private immutable _committeeSize;
    uint8 private immutable _maxAttempts;
    uint8 private immutable _maxRounds;
    bytes32 private immutable _unavailableHash;

    address private _game;
    Slot[] private _slots;
    /// @dev Indices of freed slots (of oracles that left or were slashed below a unit), reused first.
    uint256[] private _freeSlots;
    mapping(address => uint256[]) private _slotsOf;
    mapping(address => OracleAccount) private _oracles;

    uint256 private _questionCount;
    mapping(uint256 => Question) private _questions;
    /// @dev Answering oracles already assigned to a question: never drawn to answer it again.
    mapping(uint256 => mapping(address => bool)) private _tried;
    /// @dev Every member seated on a question, round after round.
    mapping(uint256 => address[]) private _committees;
    mapping(uint256 => mapping(address => Ballot)) private _ballots;
    mapping(uint256 => uint256) private _committedCount; // in the current round
    mapping(uint256 => uint256) private _revealedCount; // in the current round
    /// @dev Who shares the fee of an overturned answer; empty means the answering oracle.
    mapping(uint256 => address[]) private _majorityVoters;

    mapping(address => uint256) private _credits;
    uint256 private _totalBonds;
    uint256 private _totalChallengeBonds;
    uint256 private _totalCredits;
    uint256 private _totalBurnt;

    constructor(IRandomness randomness_, Params memory p) {
        if (p.committeeSize == 0 || p.committeeSize % 2 == 0 || p.committeeSize > MAX_COMMITTEE) {
            revert RecomputeOracleInvalidCommitteeSize(p.committeeSize);
        }
        if (p.minBond == 0) revert RecomputeOracleZeroMinBond();
        if (p.silenceSlash > p.minBond) revert RecomputeOracleSilenceSlashTooLarge(p.silenceSlash, p.minBond);
        if (p.answerWindow == 0 || p.challengeWindow == 0 || p.voteWindow == 0) {
            revert RecomputeOracleZeroWindow(p.answerWindow, p.challengeWindow, p.voteWindow);
        }
        if (p.maxAttempts == 0) revert RecomputeOracleZeroMaxAttempts();
        if (p.maxRounds == 0) revert RecomputeOracleZeroMaxRounds();
        uint256 resolutionTime = _resolutionTime(p);
        if (resolutionTime > MAX_DURATION) {
            revert RecomputeOracleResolutionTimeTooLong(resolutionTime, MAX_DURATION);
        }
        if (p.exitDelay > MAX_DURATION) revert RecomputeOracleExitDelayTooLong(p.exitDelay, MAX_DURATION);
        _randomness = randomness_;
        _deployer = msg.sender;
        _fee = p.fee;
        _minBond = p.minBond;
        _challengeBond = p.challengeBond;
        _silenceSlash = p.silenceSlash;
        _answerWindow = p.answerWindow;
        _challengeWindow = p.challengeWindow;
        _voteWindow = p.voteWindow;
        _exitDelay = p.exitDelay;
        _waitLimit = p.waitLimit;
        _committeeSize = p.committeeSize;
        _maxAttempts = p.maxAttempts;
        _maxRounds = p.maxRounds;
        _unavailableHash = sha256(abi.encodePacked(ORACLE_UNAVAILABLE));
    }

    /// @inheritdoc IRecomputeOracle
    function bindGame(address game_) external {
        if (msg.sender != _deployer) revert RecomputeOracleNotDeployer(msg.sender, _deployer);
        if (_game != address(0)) revert RecomputeOracleGameAlreadyBound(_game);
        _game = game_;
        emit GameBound(game_);
    }

    // ---- oracles -----------------------------------------------------------------------------

    /// @inheritdoc IRecomputeOracle
    function register() external payable {
        OracleAccount storage o = _oracles[msg.sender];
        uint256 before = o.bond;
        uint256 bond = before + msg.value;
        // Here before + msg.value < minBond, so minBond - before cannot wrap.
        if (bond < _minBond) revert RecomputeOracleBondTooSmall(msg.value, _minBond - before);
        // An exit is final until done: cancelling it would change the oracle's eligibility for draws
        // already requested, after their seeds may be known.
        if (o.exitAt != 0) revert RecomputeOracleExitAlreadyRequested(msg.sender, o.exitAt);
        o.bond = bond;
        _totalBonds += msg.value;
        if (before < _minBond) {
            // Fresh, refilled or returning: it had no slot; eligible only for draws requested after
            // this block.
            o.activeSince = uint64(block.number);
            o.exitBlock = 0;
        }
        // A top-up of an active oracle adds slots created now: they too count only for later draws.
        uint256 units = bond / _minBond;
        _setUnits(msg.sender, units > MAX_UNITS ? MAX_UNITS : units);
        emit OracleRegistered(msg.sender, bond, o.units);
    }

    /// @inheritdoc IRecomputeOracle
    function requestExit() external {
        OracleAccount storage o = _oracles[msg.sender];
        if (o.bond == 0) revert RecomputeOracleNotRegistered(msg.sender);
        if (o.exitAt != 0) revert RecomputeOracleExitAlreadyRequested(msg.sender, o.exitAt);
        uint64 availableAt = uint64(block.timestamp) + _exitDelay;
        o.exitAt = availableAt;
        o.exitBlock = uint64(block.number);
        emit OracleExitRequested(msg.sender, availableAt);
    }

    /// @inheritdoc IRecomputeOracle
    function exit() external {
        OracleAccount storage o = _oracles[msg.sender];
        uint64 exitAt = o.exitAt;
        if (exitAt == 0) revert RecomputeOracleExitNotRequested(msg.sender);
        if (block.timestamp < exitAt) {
            revert RecomputeOracleExitTooEarly(msg.sender, exitAt, block.timestamp);
        }
        if (o.openDuties != 0) revert RecomputeOracleOpenDuties(msg.sender, o.openDuties);
        uint256 bond = o.bond;
        o.bond = 0;
        o.exitAt = 0;
        _totalBonds -= bond;
        _setUnits(msg.sender, 0);
        emit OracleExited(msg.sender, bond);
        _credit(msg.sender, bond);
    }

    // ---- questions ---------------------------------------------------------------------------

    /// @inheritdoc IRecomputeOracle
    function ask(bytes32 programHash, uint256 node, bytes32[] calldata inputs, address[2] calldata parties)
        external
        returns (uint256 questionId)
    {
        if (msg.sender != _game || msg.sender == address(0)) revert RecomputeOracleNotGame(msg.sender, _game);
        questionId = ++_questionCount;
        Question storage q = _questions[questionId];
        q.programHash = programHash;
        q.node = node;
        q.inputsHash = sha256(abi.encodePacked(inputs));
        q.parties = parties;
        q.status = QuestionStatus.Drawing;
        emit QuestionAsked(questionId, msg.sender, programHash, node, inputs);
        _requestDraw(questionId, q, uint64(block.timestamp) + _waitLimit);
    }

    /// @inheritdoc IRecomputeOracle
    function draw(uint256 questionId) external {
        Question storage q = _questions[questionId];
        QuestionStatus status = q.status;
        if (status != QuestionStatus.Drawing && status != QuestionStatus.CommitteeDrawing) {
            revert RecomputeOracleWrongStatus(questionId, status);
        }
        bool committee = status == QuestionStatus.CommitteeDrawing;
        // Past its deadline a draw only gives up, however late it is poked: the question's time bound
        // does not depend on when anyone calls.
        if (block.timestamp > q.deadline) {
            if (committee) _abandonChallenge(questionId, q);
            else _abandon(questionId, q);
            return;
        }
        IRandomness.RequestStatus rs = _randomness.statusOf(q.requestId);
        if (rs == IRandomness.RequestStatus.Pending) revert RecomputeOracleRandomnessPending(questionId, q.requestId);
        if (rs == IRandomness.RequestStatus.Ready) {
            bytes32 seed = keccak256(abi.encode(_randomness.valueOf(q.requestId), questionId, q.attempts, q.round));
            // The answering oracle's draw also checks that a challenger and a committee could follow.
            uint256 need = committee ? _committeeSize : uint256(_committeeSize) + 2;
            (address[] memory picks, uint256 found) = _sample(questionId, q, seed, need, committee);
            if (found == need) {
                if (committee) _seat(questionId, q, picks);
                else _assign(questionId, q, picks[0]);
                return;
            }
        }
        // Expired randomness, or too few eligible oracles: wait (with fresh randomness, so that oracles
        // registered since count) until the draw's deadline.
        _requestDraw(questionId, q, q.deadline);
    }

    /// @inheritdoc IRecomputeOracle
    function answer(uint256 questionId, bytes32[] calldata outputs) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Assigned) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (msg.sender != q.oracle) {
            revert RecomputeOracleNotAssignedOracle(questionId, msg.sender, q.oracle);
        }
        if (block.timestamp > q.deadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.deadline, block.timestamp);
        }
        bytes32 outputsHash = sha256(abi.encodePacked(outputs));
        uint64 challengeDeadline = uint64(block.timestamp) + _challengeWindow;
        q.status = QuestionStatus.Answered;
        q.outputsHash = outputsHash;
        q.deadline = challengeDeadline;
        emit QuestionAnswered(questionId, msg.sender, outputsHash, outputs, challengeDeadline);
    }

    /// @inheritdoc IRecomputeOracle
    function reassign(uint256 questionId) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Assigned) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp <= q.deadline) {
            revert RecomputeOracleDeadlineNotPassed(questionId, q.deadline, block.timestamp);
        }
        address silent = q.oracle;
        --_oracles[silent].openDuties;
        _burn(_slash(silent, questionId, _silenceSlash));
        if (q.attempts < _maxAttempts) {
            q.status = QuestionStatus.Drawing;
            // Anchored to the missed deadline, not to this call: a late poke does not extend the question.
            _requestDraw(questionId, q, q.deadline + 1 + _waitLimit);
        } else {
            _abandon(questionId, q);
        }
    }

    /// @inheritdoc IRecomputeOracle
    function challenge(uint256 questionId) external payable {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Answered) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp > q.deadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.deadline, block.timestamp);
        }
        if (msg.sender == q.oracle) revert RecomputeOracleSelfChallenge(questionId, msg.sender);
        if (msg.value != _challengeBond) revert RecomputeOracleWrongChallengeBond(msg.value, _challengeBond);
        q.status = QuestionStatus.CommitteeDrawing;
        q.challenger = msg.sender;
        _totalChallengeBonds += msg.value;
        emit AnswerChallenged(questionId, msg.sender);
        _requestDraw(questionId, q, uint64(block.timestamp) + _waitLimit);
    }

    /// @inheritdoc IRecomputeOracle
    function commitVote(uint256 questionId, bytes32 commitment) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Voting) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp > q.commitDeadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.commitDeadline, block.timestamp);
        }
        Ballot storage ballot = _seat(questionId, q.round, msg.sender);
        if (ballot.committed) revert RecomputeOracleAlreadyCommitted(questionId, msg.sender);
        ballot.committed = true;
        ballot.commitment = commitment;
        ++_committedCount[questionId];
        emit VoteCommitted(questionId, msg.sender, commitment);
    }

    /// @inheritdoc IRecomputeOracle
    function revealVote(uint256 questionId, bytes32 outputsHash, bytes32 salt) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Voting) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp > q.deadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.deadline, block.timestamp);
        }
        if (block.timestamp <= q.commitDeadline && _committedCount[questionId] < _committeeSize) {
            revert RecomputeOracleRevealTooEarly(questionId, q.commitDeadline, block.timestamp);
        }
        Ballot storage ballot = _seat(questionId, q.round, msg.sender);
        if (!ballot.committed) revert RecomputeOracleNotCommitted(questionId, msg.sender);
        if (ballot.revealed) revert RecomputeOracleAlreadyRevealed(questionId, msg.sender);
        if (keccak256(abi.encode(questionId, msg.sender, outputsHash, salt)) != ballot.commitment) {
            revert RecomputeOracleRevealMismatch(questionId, msg.sender);
        }
        ballot.revealed = true;
        ballot.outputsHash = outputsHash;
        ++_revealedCount[questionId];
        emit VoteRevealed(questionId, msg.sender, outputsHash);
    }

    /// @inheritdoc IRecomputeOracle
    function settle(uint256 questionId) external {
        Question storage q = _questions[questionId];
        QuestionStatus status = q.status;
        if (status == QuestionStatus.Answered) {
            if (block.timestamp <= q.deadline) {
                revert RecomputeOracleDeadlineNotPassed(questionId, q.deadline, block.timestamp);
            }
            --_oracles[q.oracle].openDuties;
            _finalize(questionId, q, q.outputsHash);
        } else if (status == QuestionStatus.Voting) {
            if (block.timestamp <= q.deadline && _revealedCount[questionId] < _committeeSize) {
                revert RecomputeOracleDeadlineNotPassed(questionId, q.deadline, block.timestamp);
            }
            _settleRound(questionId, q);
        } else {
            revert RecomputeOracleWrongStatus(questionId, status);
        }
    }

    /// @inheritdoc IRecomputeOracle
    /// @dev The fee of an overturned answer is split equally among the majority voters, the
    ///      remainder going to the first of them in seating order.
    function payFee(uint256 questionId) external payable {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Final) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (q.feePaid) revert RecomputeOracleFeeAlreadyPaid(questionId);
        if (msg.value != _fee) revert RecomputeOracleWrongFee(msg.value, _fee);
        q.feePaid = true;
        emit FeePaid(questionId, msg.sender, msg.value);
        address[] storage voters = _majorityVoters[questionId];
        uint256 n = voters.length;
        if (n == 0) {
            _credit(q.oracle, msg.value);
        } else {
            uint256 share = msg.value / n;
            _credit(voters[0], share + msg.value % n);
            for (uint256 i = 1; i < n; ++i) {
                _credit(voters[i], share);
            }
        }
    }

    /// @inheritdoc IRecomputeOracle
    /// @dev The credit is zeroed before the call: a re-entrant `withdraw` finds nothing.
    function withdraw() external {
        uint256 amount = _credits[msg.sender];
        if (amount == 0) revert RecomputeOracleNothingToWithdraw(msg.sender);
        _credits[msg.sender] = 0;
        _totalCredits -= amount;
        emit Withdrawn(msg.sender, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert RecomputeOracleTransferFailed(msg.sender, amount);
    }

    // ---- views -------------------------------------------------------------------------------

    /// @inheritdoc IRecomputeOracle
    function result(uint256 questionId) external view returns (QuestionStatus status, bytes32 outputsHash) {
        Question storage q = _questions[questionId];
        status = q.status;
        if (status == QuestionStatus.Final) outputsHash = q.outputsHash;
    }

    /// @inheritdoc IRecomputeOracle
    function question(uint256 questionId) external view returns (Question memory) {
        return _questions[questionId];
    }

    /// @inheritdoc IRecomputeOracle
    function committeeOf(uint256 questionId) external view returns (address[] memory) {
        return _committees[questionId];
    }

    /// @inheritdoc IRecomputeOracle
    function drawReady(uint256 questionId) external view returns (bool) {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Drawing && q.status != QuestionStatus.CommitteeDrawing) return false;
        return _randomness.statusOf(q.requestId) != IRandomness.RequestStatus.Pending;
    }

    /// @inheritdoc IRecomputeOracle
    function isActive(address oracle) external view returns (bool) {
        OracleAccount storage o = _oracles[oracle];
        return o.bond >= _minBond && o.exitAt == 0 && o.activeSince < block.number;
    }

    /// @inheritdoc IRecomputeOracle
    function slotCount() external view returns (uint256) {
        return _slots.length;
    }

    /// @inheritdoc IRecomputeOracle
    function freeSlotCount() external view returns (uint256) {
        return _freeSlots.length;
    }

    /// @inheritdoc IRecomputeOracle
    function slotOwner(uint256 slot) external view returns (address) {
        return _slots[slot].oracle;
    }

    /// @inheritdoc IRecomputeOracle
    function unitsOf(address oracle) external view returns (uint256) {
        return _oracles[oracle].units;
    }

    /// @inheritdoc IRecomputeOracle
    function bondOf(address oracle) external view returns (uint256) {
        return _oracles[oracle].bond;
    }

    /// @inheritdoc IRecomputeOracle
    function creditOf(address account) external view returns (uint256) {
        return _credits[account];
    }

    /// @inheritdoc IRecomputeOracle
    function totalBonds() external view returns (uint256) {
        return _totalBonds;
    }

    /// @inheritdoc IRecomputeOracle
    function totalChallengeBonds() external view returns (uint256) {
        return _totalChallengeBonds;
    }

    /// @inheritdoc IRecomputeOracle
    function totalCredits() external view returns (uint256) {
        return _totalCredits;
    }

    /// @inheritdoc IRecomputeOracle
    function totalBurnt() external view returns (uint256) {
        return _totalBurnt;
    }

    /// @inheritdoc IRecomputeOracle
    function game() external view returns (address) {
        return _game;
    }

    /// @inheritdoc IRecomputeOracle
    function randomness() external view returns (IRandomness) {
        return _randomness;
    }

    /// @inheritdoc IRecomputeOracle
    function params() public view returns (Params memory) {
        return Params({
            fee: _fee,
            minBond: _minBond,
            challengeBond: _challengeBond,
            silenceSlash: _silenceSlash,
            answerWindow: _answerWindow,
            challengeWindow: _challengeWindow,
            voteWindow: _voteWindow,
            exitDelay: _exitDelay,
            waitLimit: _waitLimit,
            committeeSize: _committeeSize,
            maxAttempts: _maxAttempts,
            maxRounds: _maxRounds
        });
    }

    /// @inheritdoc IRecomputeOracle
    function fee() external view returns (uint256) {
        return _fee;
    }

    /// @inheritdoc IRecomputeOracle
    function minBond() external view returns (uint256) {
        return _minBond;
    }

    /// @inheritdoc IRecomputeOracle
    function challengeBond() external view returns (uint256) {
        return _challengeBond;
    }

    /// @inheritdoc IRecomputeOracle
    function maxAttempts() external view returns (uint8) {
        return _maxAttempts;
    }

    /// @inheritdoc IRecomputeOracle
    function unavailableHash() external view returns (bytes32) {
        return _unavailableHash;
    }

    /// @inheritdoc IRecomputeOracle
    function maxResolutionTime() external view returns (uint64) {
        // Fits: the constructor bounds it by MAX_DURATION.
        return uint64(_resolutionTime(params()));
    }

    // ---- internals ---------------------------------------------------------------------------

    function _resolutionTime(Params memory p) private pure returns (uint256) {
        return uint256(p.maxAttempts) * (uint256(p.waitLimit) + p.answerWindow + 2) + p.challengeWindow + 1
            + uint256(p.maxRounds) * (uint256(p.waitLimit) + 2 * uint256(p.voteWindow) + 2);
    }

    /// @dev Requests the randomness of the next draw of `q`, which may wait until `deadline`. The one
    ///      external call goes to the randomness source fixed at construction (it calls nothing back).
    function _requestDraw(uint256 questionId, Question storage q, uint64 deadline) private {
        uint256 requestId = _randomness.request();
        q.requestId = requestId;
        q.requestBlock = uint64(block.number);
        q.slotCount = uint32(_slots.length);
        q.deadline = deadline;
        emit DrawRequested(questionId, requestId, deadline);
    }

    /// @dev Samples up to `need` distinct eligible oracles for `q` (see the contract's notes); for a
    ///      committee, none that answered, challenged or sat on `q` before; else none already tried.
    function _sample(uint256 questionId, Question storage q, bytes32 seed, uint256 need, bool committee)
        private
        view
        returns (address[] memory picks, uint256 found)
    {
        picks = new address[](need);
        uint256 count = q.slotCount;
        if (count == 0) return (picks, 0);
        uint256 requestBlock = q.requestBlock;
        for (uint256 t; t < MAX_DRAW_TRIES && found < need; ++t) {
            address a = _eligible(uint256(keccak256(abi.encode(seed, t))) % count, requestBlock);
            if (a == address(0) || a == q.parties[0] || a == q.parties[1]) continue;
            if (committee) {
                if (a == q.oracle || a == q.challenger || _ballots[questionId][a].seated) continue;
            } else if (_tried[questionId][a]) {
                continue;
            }
            bool again = false;
            for (uint256 j; j < found; ++j) {
                if (picks[j] == a) again = true;
            }
            if (!again) picks[found++] = a;
        }
    }

    /// @dev The owner of slot `i` if it is eligible for a draw requested in block `requestBlock`.
    function _eligible(uint256 i, uint256 requestBlock) private view returns (address) {
        Slot storage s = _slots[i];
        address a = s.oracle;
        if (a == address(0) || s.since >= requestBlock) return address(0);
        OracleAccount storage o = _oracles[a];
        if (o.activeSince >= requestBlock) return address(0);
        if (o.exitBlock != 0 && o.exitBlock < requestBlock) return address(0);
        return a;
    }

    /// @dev Gives `oracle` exactly `units` slots: new ones (created in this block) reuse freed slots
    ///      before growing the list; surplus ones are freed (owner cleared). At most 64 either way.
    function _setUnits(address oracle, uint256 units) private {
        OracleAccount storage o = _oracles[oracle];
        uint256[] storage owned = _slotsOf[oracle];
        while (owned.length < units) {
            Slot memory fresh = Slot({oracle: oracle, since: uint64(block.number)});
            uint256 n = _freeSlots.length;
            if (n == 0) {
                owned.push(_slots.length);
                _slots.push(fresh);
            } else {
                uint256 i = _freeSlots[n - 1];
                _freeSlots.pop();
                _slots[i] = fresh;
                owned.push(i);
            }
        }
        while (owned.length > units) {
            uint256 i = owned[owned.length - 1];
            owned.pop();
            delete _slots[i];
            _freeSlots.push(i);
        }
        o.units = uint32(units);
    }

    function _assign(uint256 questionId, Question storage q, address oracle) private {
        _tried[questionId][oracle] = true;
        ++_oracles[oracle].openDuties;
        uint64 deadline = uint64(block.timestamp) + _answerWindow;
        q.status = QuestionStatus.Assigned;
        // attempts < maxAttempts <= 255 whenever this runs (reassign checks), so the increment fits.
        ++q.attempts;
        q.oracle = oracle;
        q.deadline = deadline;
        emit QuestionAssigned(questionId, oracle, deadline);
    }

    /// @dev Seats committee round `q.round + 1`.
    function _seat(uint256 questionId, Question storage q, address[] memory members) private {
        uint8 round = ++q.round; // <= maxRounds: _settleRound checks before drawing again
        address[] storage seated = _committees[questionId];
        for (uint256 i; i < members.length; ++i) {
            Ballot storage b = _ballots[questionId][members[i]];
            b.seated = true;
            b.round = round;
            ++_oracles[members[i]].openDuties;
            seated.push(members[i]);
        }
        _committedCount[questionId] = 0;
        _revealedCount[questionId] = 0;
        uint64 commitDeadline = uint64(block.timestamp) + _voteWindow;
        uint64 revealDeadline = commitDeadline + _voteWindow;
        q.status = QuestionStatus.Voting;
        q.commitDeadline = commitDeadline;
        q.deadline = revealDeadline;
        emit CommitteeSeated(questionId, round, members, commitDeadline, revealDeadline);
    }

    /// @dev The caller's ballot, which must be seated in `round`.
    function _seat(uint256 questionId, uint8 round, address member) private view returns (Ballot storage b) {
        b = _ballots[questionId][member];
        if (!b.seated || b.round != round) revert RecomputeOracleNotCommitteeMember(questionId, member);
    }

    /// @dev Ends the current committee round: its silent members are slashed; with a majority the
    ///      question is final and every dissenter of every round slashed, else a new round is drawn.
    function _settleRound(uint256 questionId, Question storage q) private {
        address[] storage seated = _committees[questionId];
        uint256 size = _committeeSize;
        uint256 start = seated.length - size;
        (bytes32 majority, bool decided) = _count(questionId, seated, start);
        // The round's silent members are done (and slashed); those who revealed stay on duty until
        // the question ends, since a later round may find their vote against the final answer.
        for (uint256 i = start; i < start + size; ++i) {
            address member = seated[i];
            if (!_ballots[questionId][member].revealed) {
                --_oracles[member].openDuties;
                _burn(_slash(member, questionId, _silenceSlash));
            }
        }
        if (!decided) {
            emit RoundFailed(questionId, q.round);
            if (q.round < _maxRounds) {
                q.status = QuestionStatus.CommitteeDrawing;
                // Anchored like `reassign`: at the reveal deadline + 1 at the latest.
                uint64 base = q.deadline + 1;
                if (block.timestamp < base) base = uint64(block.timestamp);
                _requestDraw(questionId, q, base + _waitLimit);
            } else {
                _abandonChallenge(questionId, q);
            }
            return;
        }
        address[] storage voters = _majorityVoters[questionId];
        bool overturned = majority != q.outputsHash;
        for (uint256 i; i < seated.length; ++i) {
            address member = seated[i];
            Ballot storage b = _ballots[questionId][member];
            if (!b.revealed) continue;
            --_oracles[member].openDuties;
            if (b.outputsHash == majority) {
                if (overturned) voters.push(member);
            } else {
                uint256 penalty = _penalty(b.outputsHash, majority);
                if (penalty != 0) _burn(_slash(member, questionId, penalty));
            }
        }
        address oracle = q.oracle;
        address challenger = q.challenger;
        uint256 bond = _challengeBond;
        --_oracles[oracle].openDuties;
        _totalChallengeBonds -= bond;
        if (!overturned) {
            emit ChallengerSlashed(challenger, questionId, bond);
            uint256 reward = bond / 2;
            _credit(oracle, reward);
            _burn(bond - reward);
        } else {
            uint256 penalty = _penalty(q.outputsHash, majority);
            uint256 slashed = penalty == 0 ? 0 : _slash(oracle, questionId, penalty);
            uint256 reward = slashed / 2;
            _credit(challenger, reward + bond);
            _burn(slashed - reward);
        }
        _finalize(questionId, q, majority);
    }

    /// @dev What an oracle loses for posting `given` when the final answer is `majority` (they
    ///      differ): reporting UNAVAILABLE when others fetched the inputs costs what silence costs; a
    ///      value the majority could not check (it found the inputs unavailable) costs nothing; a
    ///      wrong value costs the whole bond.
    function _penalty(bytes32 given, bytes32 majority) private view returns (uint256) {
        if (given == _unavailableHash) return _silenceSlash;
        if (majority == _unavailableHash) return 0;
        return type(uint256).max;
    }

    /// @dev The current round's hash revealed by more than half of its seats, if any.
    function _count(uint256 questionId, address[] storage seated, uint256 start)
        private
        view
        returns (bytes32 majority, bool decided)
    {
        uint256 size = _committeeSize;
        // Boyer-Moore: if some hash has a strict majority of the votes revealed, it ends as `majority`.
        uint256 lead;
        for (uint256 i = start; i < start + size; ++i) {
            Ballot storage b = _ballots[questionId][seated[i]];
            if (!b.revealed) continue;
            if (lead == 0) {
                majority = b.outputsHash;
                lead = 1;
            } else if (b.outputsHash == majority) {
                ++lead;
            } else {
                --lead;
            }
        }
        uint256 support;
        for (uint256 i = start; i < start + size; ++i) {
            Ballot storage b = _ballots[questionId][seated[i]];
            if (b.revealed && b.outputsHash == majority) ++support;
        }
        decided = support > size / 2;
    }

    function _finalize(uint256 questionId, Question storage q, bytes32 outputsHash) private {
        q.status = QuestionStatus.Final;
        q.outputsHash = outputsHash;
        emit QuestionSettled(questionId, outputsHash);
    }

    /// @dev A challenged question that could not be decided: the challenger takes its bond back.
    function _abandonChallenge(uint256 questionId, Question storage q) private {
        address[] storage seated = _committees[questionId];
        for (uint256 i; i < seated.length; ++i) {
            if (_ballots[questionId][seated[i]].revealed) --_oracles[seated[i]].openDuties;
        }
        --_oracles[q.oracle].openDuties;
        _totalChallengeBonds -= _challengeBond;
        _credit(q.challenger, _challengeBond);
        _abandon(questionId, q);
    }

    function _abandon(uint256 questionId, Question storage q) private {
        q.status = QuestionStatus.Abandoned;
        emit QuestionAbandoned(questionId);
    }

    /// @dev Takes up to `amount` of `oracle`'s bond; returns what was taken, for the caller to credit
    ///      or burn. The oracle keeps the slots its bond still covers; the others are freed.
    function _slash(address oracle, uint256 questionId, uint256 amount) private returns (uint256 slashed) {
        OracleAccount storage o = _oracles[oracle];
        uint256 bond = o.bond;
        slashed = amount < bond ? amount : bond;
        o.bond = bond - slashed;
        _totalBonds -= slashed;
        uint256 units = o.bond / _minBond;
        if (units < o.units) _setUnits(oracle, units);
        emit OracleSlashed(oracle, questionId, slashed);
    }

    function _credit(address account, uint256 amount) private {
        if (amount == 0) return;
        _credits[account] += amount;
        _totalCredits += amount;
        emit Credited(account, amount);
    }

    function _burn(uint256 amount) private {
        if (amount == 0) return;
        _totalBurnt += amount;
        emit Burnt(amount);
    }
}
