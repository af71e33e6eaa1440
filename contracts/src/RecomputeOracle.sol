// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRecomputeOracle} from "./interfaces/IRecomputeOracle.sol";
import {
    RecomputeOracleAlreadyVoted,
    RecomputeOracleBondTooSmall,
    RecomputeOracleCommitteeUnavailable,
    RecomputeOracleDeadlineNotPassed,
    RecomputeOracleDeadlinePassed,
    RecomputeOracleExitAlreadyRequested,
    RecomputeOracleExitDelayTooLong,
    RecomputeOracleExitNotRequested,
    RecomputeOracleExitTooEarly,
    RecomputeOracleFeeAlreadyPaid,
    RecomputeOracleInvalidCommitteeSize,
    RecomputeOracleNotAssignedOracle,
    RecomputeOracleNotCommitteeMember,
    RecomputeOracleNotRegistered,
    RecomputeOracleNothingToWithdraw,
    RecomputeOracleOpenDuties,
    RecomputeOracleResolutionTimeTooLong,
    RecomputeOracleSelfChallenge,
    RecomputeOracleSilenceSlashTooLarge,
    RecomputeOracleTransferFailed,
    RecomputeOracleWrongChallengeBond,
    RecomputeOracleWrongFee,
    RecomputeOracleWrongStatus,
    RecomputeOracleZeroMaxAttempts,
    RecomputeOracleZeroMinBond,
    RecomputeOracleZeroWindow
} from "./lib/OracleErrors.sol";

/// @title RecomputeOracle
/// @notice Bonded oracles answering the single-operator question that ends a dispute.
/// @dev Draws. Oracle `attempt` (1, 2, ...) of question `q`, and its committee (`attempt` 0), start
///      at `seed % activeCount()` with `seed = keccak256(abi.encode(block.prevrandao,
///      blockhash(block.number - 1), q, attempt))` and take the next eligible oracles of the active
///      set, wrapping around. The scan visits at most `activeCount()` entries and passes over at
///      most `maxAttempts() + 2` (oracle: the asker, two parties, earlier attempts) or 5
///      (committee: also the answering oracle and the challenger) ineligible ones.
///      The draw is as good as `prevrandao`: a block proposer can bias it.
///
///      Duties. An oracle is on duty for a question from its assignment (as oracle or as committee
///      member) until the question is settled or abandoned, or it is replaced as silent: until
///      then it can still be slashed, so `exit` waits for its duties to end.
///
///      Funds. Every wei held is in exactly one of four totals: oracle bonds, challenge bonds,
///      credits (withdrawable) and burnt (nobody's). Slashes move bonds to credits or burnt.
contract RecomputeOracle is IRecomputeOracle {
    /// @dev An oracle's bond and bookkeeping.
    struct OracleAccount {
        uint256 bond;
        uint64 exitAt; // when the bond can be taken out; 0 unless an exit was requested
        uint64 openDuties; // questions on which it can still be slashed
        uint64 activeSlot; // 1 + its index in `_active`; 0 when inactive
    }

    /// @dev A committee member's seat on one question.
    struct Ballot {
        bool seated;
        bool cast;
        bytes32 outputsHash;
    }

    /// @dev Bound on `maxResolutionTime` and `exitDelay` (136 years): deadlines fit in 64 bits.
    uint256 private constant MAX_DURATION = type(uint32).max;
    /// @dev The `attempt` of committee draws in the seed; oracle draws use 1, 2, ...
    uint256 private constant COMMITTEE_DRAW = 0;

    uint256 private immutable _fee;
    uint256 private immutable _minBond;
    uint256 private immutable _challengeBond;
    uint256 private immutable _silenceSlash;
    uint64 private immutable _answerWindow;
    uint64 private immutable _challengeWindow;
    uint64 private immutable _voteWindow;
    uint64 private immutable _exitDelay;
    uint8 private immutable _committeeSize;
    uint8 private immutable _maxAttempts;

    /// @dev The active set; `OracleAccount.activeSlot` indexes it (swap-and-pop removal).
    address[] private _active;
    mapping(address => OracleAccount) private _oracles;

    uint256 private _questionCount;
    mapping(uint256 => Question) private _questions;
    /// @dev Oracles already assigned to a question: never drawn for it again.
    mapping(uint256 => mapping(address => bool)) private _tried;
    mapping(uint256 => address[]) private _committees;
    /// @dev When each question was asked: every answer window ends by `askedAt + maxAttempts * answerWindow`.
    mapping(uint256 => uint64) private _askedAt;
    mapping(uint256 => mapping(address => Ballot)) private _ballots;
    mapping(uint256 => uint256) private _votesCast;
    /// @dev Who shares the fee of an overturned answer; empty means the answering oracle.
    mapping(uint256 => address[]) private _majorityVoters;

    mapping(address => uint256) private _credits;
    uint256 private _totalBonds;
    uint256 private _totalChallengeBonds;
    uint256 private _totalCredits;
    uint256 private _totalBurnt;

    constructor(
        uint256 fee_,
        uint256 minBond_,
        uint256 challengeBond_,
        uint256 silenceSlash_,
        uint64 answerWindow_,
        uint64 challengeWindow_,
        uint64 voteWindow_,
        uint64 exitDelay_,
        uint8 committeeSize_,
        uint8 maxAttempts_
    ) {
        if (committeeSize_ == 0 || committeeSize_ % 2 == 0) {
            revert RecomputeOracleInvalidCommitteeSize(committeeSize_);
        }
        if (minBond_ == 0) revert RecomputeOracleZeroMinBond();
        if (silenceSlash_ > minBond_) revert RecomputeOracleSilenceSlashTooLarge(silenceSlash_, minBond_);
        if (answerWindow_ == 0 || challengeWindow_ == 0 || voteWindow_ == 0) {
            revert RecomputeOracleZeroWindow(answerWindow_, challengeWindow_, voteWindow_);
        }
        if (maxAttempts_ == 0) revert RecomputeOracleZeroMaxAttempts();
        uint256 resolutionTime = uint256(maxAttempts_) * answerWindow_ + challengeWindow_ + voteWindow_;
        if (resolutionTime > MAX_DURATION) {
            revert RecomputeOracleResolutionTimeTooLong(resolutionTime, MAX_DURATION);
        }
        if (exitDelay_ > MAX_DURATION) revert RecomputeOracleExitDelayTooLong(exitDelay_, MAX_DURATION);
        _fee = fee_;
        _minBond = minBond_;
        _challengeBond = challengeBond_;
        _silenceSlash = silenceSlash_;
        _answerWindow = answerWindow_;
        _challengeWindow = challengeWindow_;
        _voteWindow = voteWindow_;
        _exitDelay = exitDelay_;
        _committeeSize = committeeSize_;
        _maxAttempts = maxAttempts_;
    }

    // ---- oracles -----------------------------------------------------------------------------

    /// @inheritdoc IRecomputeOracle
    /// @dev Also cancels a pending exit. Emits the oracle's whole bond after the deposit.
    function register() external payable {
        OracleAccount storage o = _oracles[msg.sender];
        uint256 bond = o.bond + msg.value;
        // Here o.bond + msg.value < minBond, so minBond - o.bond cannot wrap.
        if (bond < _minBond) revert RecomputeOracleBondTooSmall(msg.value, _minBond - o.bond);
        o.bond = bond;
        o.exitAt = 0;
        _totalBonds += msg.value;
        if (o.activeSlot == 0) {
            _active.push(msg.sender);
            o.activeSlot = uint64(_active.length);
        }
        emit OracleRegistered(msg.sender, bond);
    }

    /// @inheritdoc IRecomputeOracle
    function requestExit() external {
        OracleAccount storage o = _oracles[msg.sender];
        if (o.bond == 0) revert RecomputeOracleNotRegistered(msg.sender);
        if (o.exitAt != 0) revert RecomputeOracleExitAlreadyRequested(msg.sender, o.exitAt);
        _deactivate(msg.sender);
        uint64 availableAt = uint64(block.timestamp) + _exitDelay;
        o.exitAt = availableAt;
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
        emit OracleExited(msg.sender, bond);
        _credit(msg.sender, bond);
    }

    // ---- questions ---------------------------------------------------------------------------

    /// @inheritdoc IRecomputeOracle
    /// @dev Never reverts for want of an oracle: the question is then `Abandoned` at once.
    function ask(bytes32 programHash, uint256 node, bytes32[] calldata inputs, address[2] calldata parties)
        external
        returns (uint256 questionId)
    {
        questionId = ++_questionCount;
        Question storage q = _questions[questionId];
        q.programHash = programHash;
        q.node = node;
        q.inputsHash = sha256(abi.encodePacked(inputs));
        q.asker = msg.sender;
        q.parties = parties;
        _askedAt[questionId] = uint64(block.timestamp);
        emit QuestionAsked(questionId, msg.sender, programHash, node, inputs);
        _assign(questionId, q);
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
    /// @dev The silent oracle leaves the active set whatever bond it has left.
    function reassign(uint256 questionId) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Assigned) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp <= q.deadline) {
            revert RecomputeOracleDeadlineNotPassed(questionId, q.deadline, block.timestamp);
        }
        address silent = q.oracle;
        --_oracles[silent].openDuties;
        _burn(_slash(silent, questionId, _silenceSlash));
        // Windows are anchored to the question, not to this call: an attempt is only made while a
        // whole answer window still fits before the last deadline that prompt re-assignments reach
        // (each one second after the previous deadline), so a question nobody pokes for a while
        // still ends in time.
        uint256 lastDeadline =
            uint256(_askedAt[questionId]) + uint256(_maxAttempts) * (uint256(_answerWindow) + 1) - 1;
        if (q.attempts < _maxAttempts && block.timestamp + _answerWindow <= lastDeadline) {
            _assign(questionId, q);
        } else {
            _abandon(questionId, q);
        }
    }

    /// @inheritdoc IRecomputeOracle
    /// @dev Reverts `RecomputeOracleCommitteeUnavailable` when too few oracles are eligible; the
    ///      answer then stands.
    function challenge(uint256 questionId) external payable {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Answered) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp > q.deadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.deadline, block.timestamp);
        }
        if (msg.sender == q.oracle) revert RecomputeOracleSelfChallenge(questionId, msg.sender);
        if (msg.value != _challengeBond) revert RecomputeOracleWrongChallengeBond(msg.value, _challengeBond);
        address[] memory committee = _drawCommittee(questionId, q, msg.sender);
        _committees[questionId] = committee;
        for (uint256 i; i < committee.length; ++i) {
            _ballots[questionId][committee[i]].seated = true;
            ++_oracles[committee[i]].openDuties;
        }
        uint64 voteDeadline = uint64(block.timestamp) + _voteWindow;
        q.status = QuestionStatus.Challenged;
        q.challenger = msg.sender;
        q.deadline = voteDeadline;
        _totalChallengeBonds += msg.value;
        emit AnswerChallenged(questionId, msg.sender, committee, voteDeadline);
    }

    /// @inheritdoc IRecomputeOracle
    function vote(uint256 questionId, bytes32[] calldata outputs) external {
        Question storage q = _questions[questionId];
        if (q.status != QuestionStatus.Challenged) revert RecomputeOracleWrongStatus(questionId, q.status);
        if (block.timestamp > q.deadline) {
            revert RecomputeOracleDeadlinePassed(questionId, q.deadline, block.timestamp);
        }
        Ballot storage ballot = _ballots[questionId][msg.sender];
        if (!ballot.seated) revert RecomputeOracleNotCommitteeMember(questionId, msg.sender);
        if (ballot.cast) revert RecomputeOracleAlreadyVoted(questionId, msg.sender);
        bytes32 outputsHash = sha256(abi.encodePacked(outputs));
        ballot.cast = true;
        ballot.outputsHash = outputsHash;
        ++_votesCast[questionId];
        emit CommitteeVoted(questionId, msg.sender, outputsHash);
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
        } else if (status == QuestionStatus.Challenged) {
            if (block.timestamp <= q.deadline && _votesCast[questionId] < _committeeSize) {
                revert RecomputeOracleDeadlineNotPassed(questionId, q.deadline, block.timestamp);
            }
            _settleChallenge(questionId, q);
        } else {
            revert RecomputeOracleWrongStatus(questionId, status);
        }
    }

    /// @inheritdoc IRecomputeOracle
    /// @dev The fee of an overturned answer is split equally among the majority voters, the
    ///      remainder going to the first of them in committee order.
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
    function isActive(address oracle) external view returns (bool) {
        return _oracles[oracle].activeSlot != 0;
    }

    /// @inheritdoc IRecomputeOracle
    function activeCount() external view returns (uint256) {
        return _active.length;
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
    function silenceSlash() external view returns (uint256) {
        return _silenceSlash;
    }

    /// @inheritdoc IRecomputeOracle
    function answerWindow() external view returns (uint64) {
        return _answerWindow;
    }

    /// @inheritdoc IRecomputeOracle
    function challengeWindow() external view returns (uint64) {
        return _challengeWindow;
    }

    /// @inheritdoc IRecomputeOracle
    function voteWindow() external view returns (uint64) {
        return _voteWindow;
    }

    /// @inheritdoc IRecomputeOracle
    function exitDelay() external view returns (uint64) {
        return _exitDelay;
    }

    /// @inheritdoc IRecomputeOracle
    function committeeSize() external view returns (uint8) {
        return _committeeSize;
    }

    /// @inheritdoc IRecomputeOracle
    function maxAttempts() external view returns (uint8) {
        return _maxAttempts;
    }

    /// @inheritdoc IRecomputeOracle
    function maxResolutionTime() external view returns (uint64) {
        // Fits: the constructor bounds it by MAX_DURATION.
        return uint64(_maxAttempts) * _answerWindow + _challengeWindow + _voteWindow;
    }

    // ---- internals ---------------------------------------------------------------------------

    /// @dev Draws the next oracle for `q` and assigns it, or abandons `q` when none is eligible.
    function _assign(uint256 questionId, Question storage q) private {
        // attempts < maxAttempts <= 255 whenever this runs, so the increment fits.
        uint8 attempt = q.attempts + 1;
        address oracle = _drawOracle(questionId, q, attempt);
        if (oracle == address(0)) {
            _abandon(questionId, q);
            return;
        }
        _tried[questionId][oracle] = true;
        ++_oracles[oracle].openDuties;
        uint64 deadline = uint64(block.timestamp) + _answerWindow;
        q.status = QuestionStatus.Assigned;
        q.attempts = attempt;
        q.oracle = oracle;
        q.deadline = deadline;
        emit QuestionAssigned(questionId, oracle, deadline);
    }

    /// @dev The first active oracle from the seeded start that is neither the asker, nor a party,
    ///      nor already tried on `questionId`; `address(0)` if there is none.
    function _drawOracle(uint256 questionId, Question storage q, uint256 attempt)
        private
        view
        returns (address)
    {
        uint256 n = _active.length;
        if (n == 0) return address(0);
        address asker = q.asker;
        address party0 = q.parties[0];
        address party1 = q.parties[1];
        uint256 start = _seed(questionId, attempt) % n;
        for (uint256 i; i < n; ++i) {
            address candidate = _active[(start + i) % n];
            if (
                candidate != asker && candidate != party0 && candidate != party1
                    && !_tried[questionId][candidate]
            ) return candidate;
        }
        return address(0);
    }

    /// @dev `committeeSize` distinct active oracles, none of them the answering oracle, the
    ///      challenger, the asker or a party; reverts if there are not enough.
    function _drawCommittee(uint256 questionId, Question storage q, address challenger)
        private
        view
        returns (address[] memory committee)
    {
        uint256 size = _committeeSize;
        committee = new address[](size);
        uint256 drawn;
        uint256 n = _active.length;
        if (n != 0) {
            address[5] memory excluded = [q.oracle, challenger, q.asker, q.parties[0], q.parties[1]];
            uint256 start = _seed(questionId, COMMITTEE_DRAW) % n;
            for (uint256 i; i < n && drawn < size; ++i) {
                address candidate = _active[(start + i) % n];
                if (!_isExcluded(candidate, excluded)) committee[drawn++] = candidate;
            }
        }
        if (drawn < size) revert RecomputeOracleCommitteeUnavailable(questionId, drawn, size);
    }

    function _isExcluded(address candidate, address[5] memory excluded) private pure returns (bool) {
        for (uint256 j; j < 5; ++j) {
            if (candidate == excluded[j]) return true;
        }
        return false;
    }

    function _seed(uint256 questionId, uint256 attempt) private view returns (uint256) {
        return
            uint256(keccak256(abi.encode(block.prevrandao, blockhash(block.number - 1), questionId, attempt)));
    }

    /// @dev Counts the committee's votes and settles a challenged question: slashes the members
    ///      that did not vote or voted against the majority, then the losing side.
    function _settleChallenge(uint256 questionId, Question storage q) private {
        address[] memory committee = _committees[questionId];
        (bool[] memory cast, bytes32[] memory votes, bytes32 majority, bool decided) =
            _count(questionId, committee);
        for (uint256 i; i < committee.length; ++i) {
            address member = committee[i];
            --_oracles[member].openDuties;
            if (!cast[i]) _burn(_slash(member, questionId, _silenceSlash));
            else if (decided && votes[i] != majority) _burn(_slash(member, questionId, type(uint256).max));
        }

        address oracle = q.oracle;
        address challenger = q.challenger;
        uint256 bond = _challengeBond;
        --_oracles[oracle].openDuties;
        _totalChallengeBonds -= bond;
        if (!decided) {
            _credit(challenger, bond);
            _abandon(questionId, q);
        } else if (majority == q.outputsHash) {
            emit ChallengerSlashed(challenger, questionId, bond);
            uint256 reward = bond / 2;
            _credit(oracle, reward);
            _burn(bond - reward);
            _finalize(questionId, q, majority);
        } else {
            uint256 slashed = _slash(oracle, questionId, type(uint256).max);
            uint256 reward = slashed / 2;
            _credit(challenger, reward + bond);
            _burn(slashed - reward);
            address[] storage voters = _majorityVoters[questionId];
            for (uint256 i; i < committee.length; ++i) {
                if (cast[i] && votes[i] == majority) voters.push(committee[i]);
            }
            _finalize(questionId, q, majority);
        }
    }

    /// @dev The committee's ballots, and the hash voted by more than half of the seats if any.
    function _count(uint256 questionId, address[] memory committee)
        private
        view
        returns (bool[] memory cast, bytes32[] memory votes, bytes32 majority, bool decided)
    {
        uint256 size = committee.length;
        cast = new bool[](size);
        votes = new bytes32[](size);
        // Boyer-Moore: if some hash has a strict majority of the votes cast, it ends as `majority`.
        uint256 lead;
        for (uint256 i; i < size; ++i) {
            Ballot storage ballot = _ballots[questionId][committee[i]];
            if (!ballot.cast) continue;
            cast[i] = true;
            votes[i] = ballot.outputsHash;
            if (lead == 0) {
                majority = votes[i];
                lead = 1;
            } else if (votes[i] == majority) {
                ++lead;
            } else {
                --lead;
            }
        }
        uint256 support;
        for (uint256 i; i < size; ++i) {
            if (cast[i] && votes[i] == majority) ++support;
        }
        decided = support > size / 2;
    }

    function _finalize(uint256 questionId, Question storage q, bytes32 outputsHash) private {
        q.status = QuestionStatus.Final;
        q.outputsHash = outputsHash;
        emit QuestionSettled(questionId, outputsHash);
    }

    function _abandon(uint256 questionId, Question storage q) private {
        q.status = QuestionStatus.Abandoned;
        emit QuestionAbandoned(questionId);
    }

    /// @dev Takes up to `amount` of `oracle`'s bond and removes it from the active set; returns
    ///      what was taken, for the caller to credit or burn.
    function _slash(address oracle, uint256 questionId, uint256 amount) private returns (uint256 slashed) {
        OracleAccount storage o = _oracles[oracle];
        uint256 bond = o.bond;
        slashed = amount < bond ? amount : bond;
        o.bond = bond - slashed;
        _totalBonds -= slashed;
        _deactivate(oracle);
        emit OracleSlashed(oracle, questionId, slashed);
    }

    /// @dev Swap-and-pop removal from the active set; nothing if `oracle` is not in it.
    function _deactivate(address oracle) private {
        OracleAccount storage o = _oracles[oracle];
        uint256 slot = o.activeSlot;
        if (slot == 0) return;
        uint256 last = _active.length;
        if (slot != last) {
            address moved = _active[last - 1];
            _active[slot - 1] = moved;
            _oracles[moved].activeSlot = uint64(slot);
        }
        _active.pop();
        o.activeSlot = 0;
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
