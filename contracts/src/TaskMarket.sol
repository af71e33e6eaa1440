// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "./interfaces/IDisputeGame.sol";
import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {IRecomputeOracle} from "./interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "./interfaces/ITaskMarket.sol";
import {
    TaskMarketAlreadyJoined,
    TaskMarketAlreadyPlayed,
    TaskMarketAlreadySubmitted,
    TaskMarketBadArity,
    TaskMarketBadCheckpointInterval,
    TaskMarketBadDeadlines,
    TaskMarketBondBelowMinimum,
    TaskMarketBondTooSmall,
    TaskMarketCheckpointCount,
    TaskMarketClockTooShort,
    TaskMarketDisputeAlreadySettled,
    TaskMarketDisputeClosed,
    TaskMarketDisputeWindowTooShort,
    TaskMarketFinalizeTooEarly,
    TaskMarketGamePending,
    TaskMarketGamesActive,
    TaskMarketInitialStateMismatch,
    TaskMarketTrainerEliminated,
    TaskMarketJoinClosed,
    TaskMarketJoinWindowTooShort,
    TaskMarketNotJoined,
    TaskMarketNothingToWithdraw,
    TaskMarketSameGroup,
    TaskMarketSubmitClosed,
    TaskMarketTaskFull,
    TaskMarketTaskNotOpen,
    TaskMarketTooManyCheckpoints,
    TaskMarketTooManySlots,
    TaskMarketTransferFailed,
    TaskMarketUnknownDispute,
    TaskMarketNotSubmitted,
    TaskMarketProofTooLarge,
    TaskMarketZeroBatchSize,
    TaskMarketZeroClock,
    TaskMarketZeroDatasetSize,
    TaskMarketZeroNodeCount,
    TaskMarketZeroReward,
    TaskMarketZeroSlots,
    TaskMarketZeroSteps,
    TaskMarketAlreadyCommitted,
    TaskMarketNotCommitted,
    TaskMarketRevealMismatch,
    TaskMarketRevealClosed,
    TaskMarketCopiedResult,
    TaskMarketEntryClosed,
    TaskMarketNotFinalized,
    TaskMarketNothingToClaim
} from "./lib/MarketErrors.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {ProofGasLib} from "./lib/ProofGasLib.sol";

/// @title TaskMarket
/// @notice Escrow, bonds and payouts of refereed training tasks; the dispute game referees, the
///         recompute oracle answers its last question.
/// @dev Every trainer of a task locks the same bond (`spec.bond`). A trainer's bond moves to its pool
///      when it loses a game; pools pay oracle fees and winners' compensation, and whatever is left
///      of them when the task is finalized is burnt. Task ids start at 1, so a zero `taskId` in a
///      stored dispute means "no such dispute".
contract TaskMarket is ITaskMarket {
    /// @inheritdoc ITaskMarket
    uint256 public constant MAX_PROOF_GAS = 8_000_000;
    /// @inheritdoc ITaskMarket
    uint256 public constant MAX_CHECKPOINTS = 4096;
    /// @inheritdoc ITaskMarket
    uint32 public constant MAX_SLOTS = 64;
    /// @inheritdoc ITaskMarket
    uint256 public constant MIN_JOIN_WINDOW = 5 minutes;
    /// @inheritdoc ITaskMarket
    uint256 public constant MIN_DISPUTE_WINDOW = 1 hours;
    /// @inheritdoc ITaskMarket
    uint256 public constant MIN_MOVE_TIME = 1 minutes;
    /// @inheritdoc ITaskMarket
    uint256 public constant REVEAL_WINDOW = 15 minutes;
    /// @inheritdoc ITaskMarket
    uint256 public constant OPEN_GAS_BOUND = 1_000_000;
    /// @dev Gas charged to `openDispute` besides what it measures: the transaction's base cost, and the
    ///      dispute record written after the measurement (five fresh slots, 22,100 gas each).
    uint256 private constant OPEN_OVERHEAD_GAS = 21_000 + 5 * 22_100;

    /// @dev The first five bytes of a checkpoint leaf's hash input: the leaf prefix 0x00, then the tag of
    ///      a checkpoint-list record `"CKPT" || u256(step) || stateRoot`.
    uint256 private constant CKPT_LEAF_PREFIX = 0x00434b5054;

    /// @dev A task's progress; the spec is stored apart (`_specs`).
    struct Task {
        address client;
        TaskStatus status;
        uint32 joined; // on slots
        uint32 entrants; // on slots and outside challengers
        uint32 submitted; // revealed
        uint32 groupCount;
        uint32 liveGroups;
        uint32 activeGames;
        uint32 liveXor; // XOR of the live groups' indices: the live group when liveGroups == 1
        bool won;
        uint32 winningGroup;
        uint256 reward;
        uint256 compensation; // compensation(spec), fixed at posting (honestGasBound is pure)
        uint256 share; // once won: each live winner's share of the reward
        uint256 pools; // this task's part of the pools' total
    }

    struct Trainer {
        bool joined;
        bool submitted;
        bool eliminated;
        bool challenger;
        bool claimed;
        uint32 group;
        uint64 committedBlock; // 0: no commitment
        uint64 committedAt;
        bytes32 commitment;
        uint256 pool; // once eliminated: what is left of its slashed bond
    }

    struct Group {
        bytes32 checkpointRoot;
        bytes32 finalStateRoot;
        address[] members;
        uint32 live; // members not eliminated
        uint64 createdBlock;
    }

    struct Dispute {
        uint256 taskId; // 0: not a dispute of this market
        address defender;
        address challenger;
        bool settled;
        address opener;
        uint256 openCost; // wei: the opener's metered gas at min(its gas price, gasPriceCap)
    }

    IDisputeGame private immutable _game;
    IRecomputeOracle private immutable _oracle;

    uint256 private _taskCount;
    mapping(uint256 taskId => Task) private _tasks;
    mapping(uint256 taskId => TaskSpec) private _specs;
    mapping(uint256 taskId => address[]) private _trainerList;
    mapping(uint256 taskId => mapping(address trainer => Trainer)) private _trainers;
    mapping(uint256 taskId => mapping(uint32 group => Group)) private _groups;
    /// @dev Group index + 1 of a checkpoint root (0: no group yet).
    mapping(uint256 taskId => mapping(bytes32 checkpointRoot => uint32)) private _groupByRoot;
    /// @dev Pairs of trainers that played, keyed by `_pairKey` (order-free).
    mapping(uint256 taskId => mapping(bytes32 pair => bool)) private _played;
    mapping(uint256 gameId => Dispute) private _disputes;

    mapping(address account => uint256) private _credits;
    uint256 private _totalEscrow;
    uint256 private _totalBonds;
    uint256 private _totalPools;
    uint256 private _totalCredits;
    uint256 private _totalBurnt;

    constructor(IDisputeGame game_, IRecomputeOracle oracle_) {
        _game = game_;
        _oracle = oracle_;
    }

    // ---- tasks -----------------------------------------------------------------------------------

    /// @inheritdoc ITaskMarket
    function postTask(TaskSpec calldata spec) external payable returns (uint256 taskId) {
        if (msg.value == 0) revert TaskMarketZeroReward();
        _validate(spec);
        uint256 comp = compensation(spec);
        uint256 required = _minBond(spec.slots, comp, spec.gasPriceCap);
        if (spec.bond < required) revert TaskMarketBondBelowMinimum(spec.bond, required);

        taskId = ++_taskCount;
        Task storage t = _tasks[taskId];
        t.client = msg.sender;
        t.status = TaskStatus.Open;
        t.reward = msg.value;
        t.compensation = comp;
        _specs[taskId] = spec;
        _totalEscrow += msg.value;
        emit TaskPosted(taskId, msg.sender, msg.value, spec);
    }

    /// @inheritdoc ITaskMarket
    function join(uint256 taskId) external payable {
        Task storage t = _openTask(taskId);
        TaskSpec storage s = _specs[taskId];
        if (block.timestamp > s.joinDeadline) {
            revert TaskMarketJoinClosed(taskId, s.joinDeadline, block.timestamp);
        }
        Trainer storage tr = _trainers[taskId][msg.sender];
        if (tr.joined) revert TaskMarketAlreadyJoined(taskId, msg.sender);
        if (t.joined >= s.slots) revert TaskMarketTaskFull(taskId, s.slots);
        uint256 bond = s.bond;
        if (msg.value < bond) revert TaskMarketBondTooSmall(msg.value, bond);

        tr.joined = true;
        ++t.joined;
        ++t.entrants;
        _trainerList[taskId].push(msg.sender);
        _totalBonds += bond;
        emit TrainerJoined(taskId, msg.sender, bond);
        _credit(msg.sender, msg.value - bond);
    }

    /// @inheritdoc ITaskMarket
    function commit(uint256 taskId, bytes32 commitment) external {
        _openTask(taskId);
        Trainer storage tr = _trainers[taskId][msg.sender];
        if (!tr.joined || tr.challenger) revert TaskMarketNotJoined(taskId, msg.sender);
        TaskSpec storage s = _specs[taskId];
        if (block.timestamp > s.submitDeadline) {
            revert TaskMarketSubmitClosed(taskId, s.submitDeadline, block.timestamp);
        }
        if (tr.committedBlock != 0) revert TaskMarketAlreadyCommitted(taskId, msg.sender);
        _commit(taskId, tr, commitment);
    }

    /// @inheritdoc ITaskMarket
    function enter(uint256 taskId, bytes32 commitment) external payable {
        Task storage t = _openTask(taskId);
        TaskSpec storage s = _specs[taskId];
        uint256 closesAt = uint256(s.disputeDeadline) - MIN_DISPUTE_WINDOW;
        if (block.timestamp > closesAt) revert TaskMarketEntryClosed(taskId, closesAt, block.timestamp);
        Trainer storage tr = _trainers[taskId][msg.sender];
        if (tr.joined) revert TaskMarketAlreadyJoined(taskId, msg.sender);
        uint256 bond = s.bond;
        if (msg.value < bond) revert TaskMarketBondTooSmall(msg.value, bond);

        tr.joined = true;
        tr.challenger = true;
        ++t.entrants;
        _trainerList[taskId].push(msg.sender);
        _totalBonds += bond;
        emit ChallengerEntered(taskId, msg.sender, bond, commitment);
        _commit(taskId, tr, commitment);
        _credit(msg.sender, msg.value - bond);
    }

    /// @inheritdoc ITaskMarket
    function submit(uint256 taskId, bytes32[] calldata stateRoots, bytes32 salt) external {
        Task storage t = _openTask(taskId);
        Trainer storage tr = _trainers[taskId][msg.sender];
        if (tr.committedBlock == 0) revert TaskMarketNotCommitted(taskId, msg.sender);
        if (tr.submitted) revert TaskMarketAlreadySubmitted(taskId, msg.sender, tr.group);
        TaskSpec storage s = _specs[taskId];
        uint256 opensAfter = s.submitDeadline;
        uint256 closesAt = (tr.committedAt > opensAfter ? tr.committedAt : opensAfter) + REVEAL_WINDOW;
        // A reveal comes in a later block than its commit, so nobody commits to a result it reads from a
        // pending reveal and reveals it in the same block.
        if (block.timestamp <= opensAfter || block.timestamp > closesAt || block.number <= tr.committedBlock)
        {
            revert TaskMarketRevealClosed(taskId, opensAfter, closesAt, block.timestamp);
        }
        bytes32 expected =
            keccak256(abi.encode(taskId, msg.sender, keccak256(abi.encodePacked(stateRoots)), salt));
        if (expected != tr.commitment) revert TaskMarketRevealMismatch(taskId, msg.sender);
        (bytes32 checkpointRoot, bytes32 finalStateRoot) = _checkpointRoot(taskId, s, stateRoots);

        uint32 g = _groupFor(taskId, t, checkpointRoot, finalStateRoot);
        Group storage group = _groups[taskId][g];
        // Copying: a result seen revealed before this entrant committed is not its own work.
        if (group.createdBlock <= tr.committedBlock) {
            revert TaskMarketCopiedResult(taskId, g, group.createdBlock, tr.committedBlock);
        }
        group.members.push(msg.sender);
        // A group whose members all lost their games is live again with a fresh member: games
        // decide about the trainers who played them, not about a result.
        if (group.live++ == 0) {
            ++t.liveGroups;
            t.liveXor ^= g;
        }
        tr.submitted = true;
        tr.group = g;
        ++t.submitted;
        emit ResultSubmitted(taskId, msg.sender, g, checkpointRoot, finalStateRoot);
    }

    // ---- disputes --------------------------------------------------------------------------------

    /// @inheritdoc ITaskMarket
    /// @dev Games are between trainers, not groups: if any member could move for a group, a sybil
    ///      that copied the honest group's public root could move first and commit it to junk in the
    ///      bisection; if only one member played for a group, a sybil that submitted the honest root
    ///      first could throw the game. Either way honest members would be slashed for moves they
    ///      did not make. Here each trainer answers only for its own moves.
    function openDispute(uint256 taskId, address defender, address challenger)
        external
        returns (uint256 gameId)
    {
        uint256 start = gasleft();
        Task storage t = _openTask(taskId);
        TaskSpec storage s = _specs[taskId];
        if (block.timestamp > s.disputeDeadline) {
            revert TaskMarketDisputeClosed(taskId, s.disputeDeadline, block.timestamp);
        }
        Trainer storage d = _player(taskId, defender);
        Trainer storage c = _player(taskId, challenger);
        if (d.group == c.group) revert TaskMarketSameGroup(taskId, d.group);
        bytes32 pair = _pairKey(defender, challenger);
        if (_played[taskId][pair]) revert TaskMarketAlreadyPlayed(taskId, defender, challenger);

        _played[taskId][pair] = true;
        ++t.activeGames;
        gameId = _openGame(taskId, defender, d.group, challenger, c.group);
        emit DisputeOpened(taskId, gameId, d.group, c.group, defender, challenger);
        uint256 gas = start - gasleft() + OPEN_OVERHEAD_GAS + 40 * msg.data.length;
        if (gas > OPEN_GAS_BOUND) gas = OPEN_GAS_BOUND;
        _disputes[gameId] = Dispute({
            taskId: taskId,
            defender: defender,
            challenger: challenger,
            settled: false,
            opener: msg.sender,
            openCost: gas * _price(s.gasPriceCap)
        });
    }

    /// @inheritdoc ITaskMarket
    /// @dev Checks (including the oracle's fee status) first, then every effect, then the one
    ///      interaction: `payFee` on the oracle.
    function settleDispute(uint256 gameId) external {
        Dispute storage dispute = _disputes[gameId];
        uint256 taskId = dispute.taskId;
        if (taskId == 0) revert TaskMarketUnknownDispute(gameId);
        if (dispute.settled) revert TaskMarketDisputeAlreadySettled(gameId);
        IDisputeGame.Outcome outcome = _game.outcome(gameId);
        if (outcome == IDisputeGame.Outcome.Pending) revert TaskMarketGamePending(gameId);
        (uint256 questionId, uint256 fee) =
            outcome == IDisputeGame.Outcome.NoDecision ? (0, 0) : _unpaidOracleFee(gameId);

        dispute.settled = true;
        Task storage t = _tasks[taskId];
        --t.activeGames;
        emit DisputeSettled(taskId, gameId, outcome);

        address defender = dispute.defender;
        address challenger = dispute.challenger;
        if (outcome == IDisputeGame.Outcome.DefenderWins) {
            fee = _defeat(taskId, gameId, challenger, defender, 0, fee);
        } else if (outcome == IDisputeGame.Outcome.ChallengerWins) {
            fee = _defeat(taskId, gameId, defender, challenger, 1, fee);
        } else if (outcome == IDisputeGame.Outcome.BothLose) {
            Trainer storage a = _eliminate(taskId, defender);
            Trainer storage b = _eliminate(taskId, challenger);
            if (fee != 0 && !_takeFromPool(taskId, a, fee) && !_takeFromPool(taskId, b, fee)) fee = 0;
        }

        if (fee != 0) {
            // The oracle is trusted (fixed at construction); all state above is final.
            _oracle.payFee{value: fee}(questionId);
            emit OracleFeePaid(taskId, gameId, questionId, fee);
        }
    }

    /// @inheritdoc ITaskMarket
    /// @dev Entrants that never revealed forfeit their bonds to the client. With one live group its
    ///      live members share the reward (`claim`; the remainder of the division goes to the client);
    ///      otherwise the client takes the reward back and every live entrant its bond. What is left
    ///      of eliminated trainers' bonds is burnt: it stays in this contract and belongs to nobody.
    ///      Compensation and oracle fees repay what honest parties spent; any surplus paid out would be
    ///      a prize for losing: if it went to a winner, a trainer could beat its own sybil and collect
    ///      the sybil's bond; if it went to the client, a client could plant sybils in its own task and
    ///      recover what they lose. Loops over nothing: payouts are claimed.
    function finalize(uint256 taskId) external {
        Task storage t = _openTask(taskId);
        if (t.activeGames != 0) revert TaskMarketGamesActive(taskId, t.activeGames);
        TaskSpec storage s = _specs[taskId];
        uint32 live = t.liveGroups;
        if (block.timestamp <= s.disputeDeadline) {
            revert TaskMarketFinalizeTooEarly(taskId, block.timestamp, s.disputeDeadline, live);
        }

        t.status = TaskStatus.Finalized;
        uint256 bond = s.bond;
        uint256 reward = t.reward;
        uint256 unrevealed = t.entrants - t.submitted;
        uint256 toClient = unrevealed * bond;
        _totalBonds -= toClient;
        if (unrevealed != 0) emit BondsForfeited(taskId, unrevealed, toClient);
        int256 winningGroup = -1;
        uint256 shares = 0; // the winners' shares stay escrowed until claimed
        if (live == 1) {
            uint32 g = t.liveXor;
            uint256 winners = _groups[taskId][g].live;
            uint256 share = reward / winners;
            t.won = true;
            t.winningGroup = g;
            t.share = share;
            shares = share * winners;
            winningGroup = int256(uint256(g));
        }
        _totalEscrow -= reward - shares;
        toClient += reward - shares;
        _credit(t.client, toClient);
        uint256 burnt = t.pools;
        if (burnt != 0) {
            t.pools = 0;
            _totalPools -= burnt;
            _totalBurnt += burnt;
            emit Burnt(taskId, burnt);
        }
        emit TaskFinalized(taskId, winningGroup, reward);
    }

    /// @inheritdoc ITaskMarket
    function claim(uint256 taskId, address trainer) external {
        Task storage t = _tasks[taskId];
        if (t.status != TaskStatus.Finalized) revert TaskMarketNotFinalized(taskId);
        Trainer storage tr = _trainers[taskId][trainer];
        if (!tr.submitted || tr.eliminated || tr.claimed) revert TaskMarketNothingToClaim(taskId, trainer);
        tr.claimed = true;
        uint256 bond = _specs[taskId].bond;
        uint256 amount = bond;
        if (t.won && tr.group == t.winningGroup) {
            amount += t.share;
            _totalEscrow -= t.share;
        }
        _totalBonds -= bond;
        emit Claimed(taskId, trainer, amount);
        _credit(trainer, amount);
    }

    // ---- payments --------------------------------------------------------------------------------

    /// @inheritdoc ITaskMarket
    function withdraw() external {
        uint256 amount = _credits[msg.sender];
        if (amount == 0) revert TaskMarketNothingToWithdraw(msg.sender);
        _credits[msg.sender] = 0;
        _totalCredits -= amount;
        emit Withdrawn(msg.sender, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TaskMarketTransferFailed(msg.sender, amount);
    }

    // ---- views -----------------------------------------------------------------------------------

    /// @inheritdoc ITaskMarket
    function task(uint256 taskId) external view returns (TaskView memory) {
        Task storage t = _tasks[taskId];
        return TaskView({
            client: t.client,
            status: t.status,
            reward: t.reward,
            joined: t.joined,
            submitted: t.submitted,
            groupCount: t.groupCount,
            liveGroups: t.liveGroups,
            activeGames: t.activeGames,
            entrants: t.entrants,
            won: t.won,
            winningGroup: t.winningGroup,
            share: t.share
        });
    }

    /// @inheritdoc ITaskMarket
    function specOf(uint256 taskId) external view returns (TaskSpec memory) {
        return _specs[taskId];
    }

    /// @inheritdoc ITaskMarket
    function trainersOf(uint256 taskId) external view returns (address[] memory) {
        return _trainerList[taskId];
    }

    /// @inheritdoc ITaskMarket
    function groupOf(uint256 taskId, uint32 group) external view returns (GroupView memory) {
        Group storage g = _groups[taskId][group];
        address[] memory members = g.members;
        uint256 pool;
        for (uint256 i; i < members.length; ++i) {
            pool += _trainers[taskId][members[i]].pool;
        }
        return GroupView({
            checkpointRoot: g.checkpointRoot,
            finalStateRoot: g.finalStateRoot,
            members: members,
            live: g.live,
            eliminated: members.length != 0 && g.live == 0,
            pool: pool
        });
    }

    /// @inheritdoc ITaskMarket
    function groupOfTrainer(uint256 taskId, address trainer)
        external
        view
        returns (bool submitted, uint32 group)
    {
        Trainer storage tr = _trainers[taskId][trainer];
        return (tr.submitted, tr.group);
    }

    /// @inheritdoc ITaskMarket
    function disputeOf(uint256 gameId) external view returns (DisputeView memory) {
        Dispute storage d = _disputes[gameId];
        return DisputeView({
            taskId: d.taskId,
            defender: d.defender,
            challenger: d.challenger,
            defenderGroup: _trainers[d.taskId][d.defender].group,
            challengerGroup: _trainers[d.taskId][d.challenger].group,
            settled: d.settled
        });
    }

    /// @inheritdoc ITaskMarket
    function taskCount() external view returns (uint256) {
        return _taskCount;
    }

    /// @inheritdoc ITaskMarket
    function minBond(TaskSpec calldata spec) external view returns (uint256) {
        return _minBond(spec.slots, compensation(spec), spec.gasPriceCap);
    }

    /// @inheritdoc ITaskMarket
    /// @dev The game's bound allows `DisputeGame.PROOF_GAS` (`ProofGasLib.GAME_PROOF_GAS`) for the
    ///      decision proof; a task whose largest proof may cost more adds the difference.
    function compensation(TaskSpec calldata spec) public view returns (uint256) {
        uint256 proofGas = proofGasBound(spec);
        uint256 allowance = ProofGasLib.GAME_PROOF_GAS;
        uint256 extra = proofGas > allowance ? proofGas - allowance : 0;
        return (_game.honestGasBound(_config(spec)) + extra) * spec.gasPriceCap;
    }

    /// @inheritdoc ITaskMarket
    function proofGasBound(TaskSpec calldata spec) public pure returns (uint256) {
        return ProofGasLib.proofGas(spec.batchSize, spec.datasetSize, spec.nodeCount);
    }

    /// @inheritdoc ITaskMarket
    function creditOf(address account) external view returns (uint256) {
        return _credits[account];
    }

    /// @inheritdoc ITaskMarket
    function totalEscrow() external view returns (uint256) {
        return _totalEscrow;
    }

    /// @inheritdoc ITaskMarket
    function totalBonds() external view returns (uint256) {
        return _totalBonds;
    }

    /// @inheritdoc ITaskMarket
    function totalPools() external view returns (uint256) {
        return _totalPools;
    }

    /// @inheritdoc ITaskMarket
    function totalCredits() external view returns (uint256) {
        return _totalCredits;
    }

    /// @inheritdoc ITaskMarket
    function totalBurnt() external view returns (uint256) {
        return _totalBurnt;
    }

    /// @inheritdoc ITaskMarket
    function game() external view returns (IDisputeGame) {
        return _game;
    }

    /// @inheritdoc ITaskMarket
    function oracle() external view returns (IRecomputeOracle) {
        return _oracle;
    }

    /// @inheritdoc ITaskMarket
    function trainerOf(uint256 taskId, address trainer) external view returns (TrainerView memory) {
        Trainer storage tr = _trainers[taskId][trainer];
        return TrainerView({
            joined: tr.joined,
            submitted: tr.submitted,
            eliminated: tr.eliminated,
            group: tr.group,
            pool: tr.pool,
            challenger: tr.challenger,
            committed: tr.committedBlock != 0,
            claimed: tr.claimed
        });
    }

    // ---- internals -------------------------------------------------------------------------------

    /// @dev Reverts unless the spec's fields make a well-formed game, its deadlines are ordered, and it
    ///      is within the market bounds (docs/game.md section 4b): windows and clock that leave time to
    ///      play, at most `MAX_SLOTS` trainers and `MAX_CHECKPOINTS` checkpoints, a largest proof under
    ///      `MAX_PROOF_GAS`.
    function _validate(TaskSpec calldata spec) private view {
        if (spec.steps == 0) revert TaskMarketZeroSteps();
        if (spec.checkpointInterval == 0 || spec.steps % spec.checkpointInterval != 0) {
            revert TaskMarketBadCheckpointInterval(spec.steps, spec.checkpointInterval);
        }
        uint256 checkpoints = spec.steps / spec.checkpointInterval;
        if (checkpoints > MAX_CHECKPOINTS) revert TaskMarketTooManyCheckpoints(checkpoints, MAX_CHECKPOINTS);
        if (spec.nodeCount == 0) revert TaskMarketZeroNodeCount();
        if (spec.datasetSize == 0) revert TaskMarketZeroDatasetSize();
        if (spec.batchSize == 0) revert TaskMarketZeroBatchSize();
        uint64 arity = spec.arity;
        if (arity < 2 || arity > 64 || arity & (arity - 1) != 0) revert TaskMarketBadArity(arity);
        if (spec.clock == 0) revert TaskMarketZeroClock();
        if (spec.slots == 0) revert TaskMarketZeroSlots();
        if (spec.slots > MAX_SLOTS) revert TaskMarketTooManySlots(spec.slots, MAX_SLOTS);
        if (
            block.timestamp >= spec.joinDeadline || spec.joinDeadline > spec.submitDeadline
                || spec.submitDeadline > spec.disputeDeadline
        ) {
            revert TaskMarketBadDeadlines(
                block.timestamp, spec.joinDeadline, spec.submitDeadline, spec.disputeDeadline
            );
        }
        // Cannot underflow: the deadlines are ordered and the join deadline is in the future (above).
        unchecked {
            uint256 joinWindow = spec.joinDeadline - block.timestamp;
            if (joinWindow < MIN_JOIN_WINDOW) {
                revert TaskMarketJoinWindowTooShort(joinWindow, MIN_JOIN_WINDOW);
            }
            // The reveals come first; then disputes must stay open long enough to be opened.
            uint256 disputeWindow = spec.disputeDeadline - spec.submitDeadline;
            if (disputeWindow < REVEAL_WINDOW + MIN_DISPUTE_WINDOW) {
                revert TaskMarketDisputeWindowTooShort(disputeWindow, REVEAL_WINDOW + MIN_DISPUTE_WINDOW);
            }
        }
        uint256 minClock = _game.roundBound(_config(spec)) * MIN_MOVE_TIME;
        if (spec.clock < minClock) revert TaskMarketClockTooShort(spec.clock, minClock);
        uint256 proofGas = proofGasBound(spec);
        if (proofGas > MAX_PROOF_GAS) revert TaskMarketProofTooLarge(proofGas, MAX_PROOF_GAS);
    }

    /// @dev `max(1, slots - 1) * (comp + fee + OPEN_GAS_BOUND * cap)`: a trainer can be challenged by
    ///      each of the other `slots - 1` trainers at once, and its pool pays, for each game it loses,
    ///      one fee, the opener's gas and the winner's (each repayment within its bound). Outside
    ///      challengers can add games beyond these; their repayments are paid while the pool lasts.
    function _minBond(uint32 slots, uint256 comp, uint256 cap) private view returns (uint256) {
        uint256 games = slots <= 1 ? 1 : slots - 1;
        return games * (comp + _oracle.fee() + OPEN_GAS_BOUND * cap);
    }

    /// @dev The price at which gas is repaid: what this transaction pays, at most the task's cap.
    function _price(uint256 cap) private view returns (uint256) {
        return tx.gasprice < cap ? tx.gasprice : cap;
    }

    /// @dev Records a commitment of `tr`.
    function _commit(uint256 taskId, Trainer storage tr, bytes32 commitment) private {
        tr.commitment = commitment;
        tr.committedBlock = uint64(block.number);
        tr.committedAt = uint64(block.timestamp);
        emit ResultCommitted(taskId, msg.sender, commitment);
    }

    /// @dev The task, which must be Open.
    function _openTask(uint256 taskId) private view returns (Task storage t) {
        t = _tasks[taskId];
        if (t.status != TaskStatus.Open) revert TaskMarketTaskNotOpen(taskId, t.status);
    }

    /// @dev Opens the game between two trainers on their groups' checkpoint roots. The one external
    ///      call before the dispute is stored: the id comes from it, and the game is the referee fixed
    ///      at construction (it calls nothing back).
    function _openGame(uint256 taskId, address defender, uint32 dg, address challenger, uint32 cg)
        private
        returns (uint256)
    {
        return _game.open(
            _storedConfig(_specs[taskId]),
            defender,
            _groups[taskId][dg].checkpointRoot,
            challenger,
            _groups[taskId][cg].checkpointRoot
        );
    }

    /// @dev A trainer of the task that submitted and is not eliminated.
    function _player(uint256 taskId, address trainer) private view returns (Trainer storage tr) {
        tr = _trainers[taskId][trainer];
        if (!tr.submitted) revert TaskMarketNotSubmitted(taskId, trainer);
        if (tr.eliminated) revert TaskMarketTrainerEliminated(taskId, trainer);
    }

    /// @dev The game's oracle question and the fee this market owes on it: non-zero only when the
    ///      question is Final and its fee unpaid.
    function _unpaidOracleFee(uint256 gameId) private view returns (uint256 questionId, uint256 fee) {
        questionId = _game.gameOf(gameId).questionId;
        if (questionId == 0) return (0, 0);
        IRecomputeOracle.Question memory q = _oracle.question(questionId);
        if (q.status != IRecomputeOracle.QuestionStatus.Final || q.feePaid) return (0, 0);
        return (questionId, _oracle.fee());
    }

    /// @dev The checkpoint-list root and final state root of `stateRoots`, the states at steps
    ///      `0, c, ..., steps`: reverts unless there are `K + 1 = steps / c + 1` of them, the first the
    ///      task's initial state. The root is built here, so it is always that of a well-formed list
    ///      (nothing hidden in padding, no leaf that is not a CKPT record).
    function _checkpointRoot(uint256 taskId, TaskSpec storage s, bytes32[] calldata stateRoots)
        private
        view
        returns (bytes32 checkpointRoot, bytes32 finalStateRoot)
    {
        uint256 interval = s.checkpointInterval;
        uint256 expected = s.steps / interval + 1;
        if (stateRoots.length != expected) {
            revert TaskMarketCheckpointCount(taskId, stateRoots.length, expected);
        }
        bytes32 initial = s.initialStateRoot;
        if (stateRoots[0] != initial) revert TaskMarketInitialStateMismatch(taskId, stateRoots[0], initial);
        checkpointRoot = MerkleLib.rootInPlace(_ckptLeaves(stateRoots, interval));
        finalStateRoot = stateRoots[expected - 1];
    }

    /// @dev `leaf("CKPT" || u256(i c) || stateRoots[i])` for every `i`.
    function _ckptLeaves(bytes32[] calldata stateRoots, uint256 interval)
        private
        view
        returns (bytes32[] memory leaves)
    {
        uint256 n = stateRoots.length;
        leaves = new bytes32[](n);
        assembly ("memory-safe") {
            // One 69-byte input `0x00 || "CKPT" || u256(step) || root`, rewritten in place for every record
            // in scratch memory past the free memory pointer, hashed by the SHA-256 precompile.
            let buf := mload(0x40)
            mstore(buf, shl(216, CKPT_LEAF_PREFIX))
            let roots := stateRoots.offset
            let out := add(leaves, 0x20)
            for { let i := 0 } lt(i, n) { i := add(i, 1) } {
                mstore(add(buf, 5), mul(i, interval))
                mstore(add(buf, 37), calldataload(add(roots, shl(5, i))))
                if iszero(staticcall(gas(), 0x02, buf, 69, add(out, shl(5, i)), 0x20)) {
                    revert(0x00, 0x00)
                }
            }
        }
    }

    /// @dev The group of `checkpointRoot`, numbered by first appearance; created (live) if new.
    function _groupFor(uint256 taskId, Task storage t, bytes32 checkpointRoot, bytes32 finalStateRoot)
        private
        returns (uint32 g)
    {
        uint32 indexPlusOne = _groupByRoot[taskId][checkpointRoot];
        if (indexPlusOne != 0) {
            // Cannot underflow: a stored index + 1 is at least 1.
            unchecked {
                return indexPlusOne - 1;
            }
        }
        g = t.groupCount++;
        _groupByRoot[taskId][checkpointRoot] = g + 1;
        Group storage fresh = _groups[taskId][g];
        fresh.checkpointRoot = checkpointRoot;
        fresh.finalStateRoot = finalStateRoot;
        fresh.createdBlock = uint64(block.number);
    }

    /// @dev Eliminates `trainer` if it is not yet: its bond moves to its pool; its group falls with
    ///      its last live member.
    function _eliminate(uint256 taskId, address trainer) private returns (Trainer storage tr) {
        tr = _trainers[taskId][trainer];
        if (tr.eliminated) return tr;
        tr.eliminated = true;
        uint256 bond = _specs[taskId].bond;
        tr.pool = bond;
        _totalBonds -= bond;
        _totalPools += bond;
        Task storage t = _tasks[taskId];
        t.pools += bond;
        emit BondSlashed(taskId, trainer, bond);
        emit TrainerEliminated(taskId, trainer, tr.group, bond);
        if (--_groups[taskId][tr.group].live == 0) {
            --t.liveGroups;
            t.liveXor ^= tr.group;
            emit GroupEliminated(taskId, tr.group);
        }
    }

    /// @dev `loser` lost game `gameId` to `winner` (side `winnerSide` of the game): eliminates it, takes
    ///      from its pool the oracle fee (returned, or 0 if its pool lacks it), then, as far as the pool
    ///      goes, the opener's gas and the winner's metered gas, each at `min(price paid, cap)` and
    ///      within its bound (`OPEN_GAS_BOUND`, `compensation`).
    function _defeat(
        uint256 taskId,
        uint256 gameId,
        address loser,
        address winner,
        uint256 winnerSide,
        uint256 fee
    ) private returns (uint256) {
        Trainer storage lost = _eliminate(taskId, loser);
        if (fee != 0 && !_takeFromPool(taskId, lost, fee)) fee = 0;
        Dispute storage d = _disputes[gameId];
        uint256 repaid = _payFromPool(taskId, lost, d.opener, d.openCost);
        if (repaid != 0) emit OpenerRepaid(taskId, gameId, d.opener, repaid);
        uint256 paid = _payFromPool(taskId, lost, winner, _winnerCost(taskId, gameId, winnerSide));
        if (paid != 0) emit CompensationPaid(taskId, gameId, winner, paid);
        return fee;
    }

    /// @dev The winner's metered gas at `min(price paid, cap)` (its element moves at the cap), within
    ///      `compensation`.
    function _winnerCost(uint256 taskId, uint256 gameId, uint256 side) private view returns (uint256) {
        (uint256[2] memory gas, uint256[2] memory weiSpent) = _game.meterOf(gameId);
        uint256 cap = _specs[taskId].gasPriceCap;
        uint256 atCap = gas[side] * cap;
        uint256 spent = weiSpent[side] < atCap ? weiSpent[side] : atCap;
        // A node decided in the element phase: the side's moves on the referee, metered there in gas, at the cap.
        uint256 element = _game.gameOf(gameId).elementGame;
        if (element != 0) spent += IElementReferee(_game.referee()).meterOf(element)[side] * cap;
        uint256 owed = _tasks[taskId].compensation;
        return spent < owed ? spent : owed;
    }

    /// @dev Credits `to` up to `amount` out of `tr`'s pool; returns what was paid.
    function _payFromPool(uint256 taskId, Trainer storage tr, address to, uint256 amount)
        private
        returns (uint256 paid)
    {
        uint256 pool = tr.pool;
        paid = pool < amount ? pool : amount;
        if (paid == 0) return 0;
        // Cannot underflow: paid <= pool, and pool is part of the task's and the pools' totals.
        unchecked {
            tr.pool = pool - paid;
            _tasks[taskId].pools -= paid;
            _totalPools -= paid;
        }
        _credit(to, paid);
    }

    /// @dev Takes `amount` out of the trainer's pool (and the pools' total) if the pool holds it.
    function _takeFromPool(uint256 taskId, Trainer storage tr, uint256 amount) private returns (bool taken) {
        uint256 pool = tr.pool;
        if (pool < amount) return false;
        // Cannot underflow: amount <= pool, and pool is part of the task's and the pools' totals.
        unchecked {
            tr.pool = pool - amount;
            _tasks[taskId].pools -= amount;
            _totalPools -= amount;
        }
        return true;
    }

    function _credit(address account, uint256 amount) private {
        if (amount == 0) return;
        _credits[account] += amount;
        _totalCredits += amount;
        emit Credited(account, amount);
    }

    /// @dev An order-free key of a pair of trainers.
    function _pairKey(address a, address b) private pure returns (bytes32) {
        return a < b ? keccak256(abi.encodePacked(a, b)) : keccak256(abi.encodePacked(b, a));
    }

    function _config(TaskSpec calldata s) private pure returns (IDisputeGame.Config memory) {
        return IDisputeGame.Config({
            programHash: s.programHash,
            graphRoot: s.graphRoot,
            datasetRoot: s.datasetRoot,
            seed: s.seed,
            steps: s.steps,
            checkpointInterval: s.checkpointInterval,
            nodeCount: s.nodeCount,
            datasetSize: s.datasetSize,
            batchSize: s.batchSize,
            arity: s.arity,
            clock: s.clock
        });
    }

    /// @dev `_config` of a stored spec, reading only the slots the game needs.
    function _storedConfig(TaskSpec storage s) private view returns (IDisputeGame.Config memory) {
        return IDisputeGame.Config({
            programHash: s.programHash,
            graphRoot: s.graphRoot,
            datasetRoot: s.datasetRoot,
            seed: s.seed,
            steps: s.steps,
            checkpointInterval: s.checkpointInterval,
            nodeCount: s.nodeCount,
            datasetSize: s.datasetSize,
            batchSize: s.batchSize,
            arity: s.arity,
            clock: s.clock
        });
    }
}
