// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IDisputeGame} from "./IDisputeGame.sol";
import {IRecomputeOracle} from "./IRecomputeOracle.sol";

/// @title ITaskMarket
/// @notice Clients post training tasks with the reward escrowed; trainers join with a bond,
///         train, and submit their whole checkpoint list, whose root the market builds.
///         Submissions are grouped by checkpoint root. Disputes are between two trainers of
///         different groups (`openDispute`), all pairs in parallel; the loser is eliminated and its
///         bond slashed. A group is eliminated when all its members are. `finalize` pays the reward
///         to the members left of the single surviving group, or refunds the client.
///         docs/game.md gives the money rules and why games are between trainers, not groups.
/// @dev Funds: `address(this).balance == totalEscrow() + totalBonds() + totalPools() + totalCredits()
///      + totalBurnt()` at all times. Payments are pull-only (`withdraw`).
interface ITaskMarket {
    /// @notice A task as posted. `steps % checkpointInterval == 0`; the checkpoint list has
    ///         `steps / checkpointInterval + 1` CKPT records: `"CKPT" || u256(i c) || stateRoot`.
    struct TaskSpec {
        bytes32 programHash;
        bytes32 graphRoot;
        bytes32 datasetRoot;
        bytes32 initialStateRoot;
        uint256 seed;
        uint64 datasetSize;
        uint64 steps;
        uint64 checkpointInterval;
        uint64 batchSize;
        uint64 nodeCount;
        uint64 arity; // bisection arity, a power of two in [2, 64]
        uint64 clock; // seconds per side per game
        uint32 slots; // k trainers at most
        uint256 bond; // per trainer, >= minBond(spec)
        uint256 gasPriceCap; // wei per gas the bond sizing assumes
        uint64 joinDeadline;
        uint64 submitDeadline;
        uint64 disputeDeadline; // games open until then; finalize after it at the latest
    }

    enum TaskStatus {
        None,
        Open,
        Finalized
    }

    struct TaskView {
        address client;
        TaskStatus status;
        uint256 reward;
        uint32 joined;
        uint32 submitted;
        uint32 groupCount;
        uint32 liveGroups;
        uint32 activeGames;
    }

    struct GroupView {
        bytes32 checkpointRoot;
        bytes32 finalStateRoot;
        address[] members; // in submission order
        uint32 live; // members not eliminated
        bool eliminated; // every member lost a game (live == 0)
        uint256 pool; // its eliminated members' slashed bonds left to pay compensation and fees from
    }

    struct DisputeView {
        uint256 taskId;
        address defender;
        address challenger;
        uint32 defenderGroup;
        uint32 challengerGroup;
        bool settled;
    }

    struct TrainerView {
        bool joined;
        bool submitted;
        bool eliminated;
        uint32 group;
        uint256 pool; // once eliminated: its slashed bond left to pay compensation and fees from
    }

    event TaskPosted(uint256 indexed taskId, address indexed client, uint256 reward, TaskSpec spec);
    event TrainerJoined(uint256 indexed taskId, address indexed trainer, uint256 bond);
    event ResultSubmitted(
        uint256 indexed taskId,
        address indexed trainer,
        uint32 group,
        bytes32 checkpointRoot,
        bytes32 finalStateRoot
    );
    event DisputeOpened(
        uint256 indexed taskId,
        uint256 indexed gameId,
        uint32 defenderGroup,
        uint32 challengerGroup,
        address defender,
        address challenger
    );
    event DisputeSettled(uint256 indexed taskId, uint256 indexed gameId, IDisputeGame.Outcome outcome);
    event TrainerEliminated(uint256 indexed taskId, address indexed trainer, uint32 group, uint256 slashed);
    event GroupEliminated(uint256 indexed taskId, uint32 indexed group);
    event BondSlashed(uint256 indexed taskId, address indexed trainer, uint256 amount);
    event CompensationPaid(
        uint256 indexed taskId, uint256 indexed gameId, address indexed winner, uint256 amount
    );
    event OracleFeePaid(uint256 indexed taskId, uint256 indexed gameId, uint256 questionId, uint256 amount);
    event TaskFinalized(uint256 indexed taskId, int256 winningGroup, uint256 reward); // -1: client refunded
    event Credited(address indexed account, uint256 amount);
    event Burnt(uint256 indexed taskId, uint256 amount);
    event Withdrawn(address indexed account, uint256 amount);

    /// @notice Posts a task; `msg.value` (> 0) is the escrowed reward. Besides well-formed fields and
    ///         ordered deadlines, the spec must leave time to play (docs/game.md, "Market bounds"):
    ///         joining open `MIN_JOIN_WINDOW` after posting, disputes open `MIN_DISPUTE_WINDOW` after
    ///         the submit deadline, a clock of at least `MIN_MOVE_TIME` per move of the longest game, at
    ///         most `MAX_SLOTS` trainers and `MAX_CHECKPOINTS` checkpoints, and a largest proof that fits
    ///         one transaction (`proofGasBound(spec) <= MAX_PROOF_GAS`).
    function postTask(TaskSpec calldata spec) external payable returns (uint256 taskId);

    /// @notice Joins before `joinDeadline` with at least `bond` (any excess is credited back).
    function join(uint256 taskId) external payable;

    /// @notice A joined trainer submits once, before `submitDeadline`, its whole checkpoint list: the
    ///         `K + 1 = steps / checkpointInterval + 1` state roots after steps `0, c, 2c, ..., steps`, the
    ///         first of them the task's initial state root. The market builds the list's root itself
    ///         (leaves `leaf("CKPT" || u256(i c) || stateRoots[i])`, the padded tree of
    ///         docs/commitments.md section 2), so every submitted root is that of a well-formed list;
    ///         the last entry is the final state root. Submissions with the same root form a group.
    /// @dev At `MAX_CHECKPOINTS` (a list of 4,097 roots) a submit takes 5,259,342 gas, the EIP-7623
    ///      calldata floor (10 gas a token, 40 a non-zero byte) most of it
    ///      (contracts/test/TaskMarketGas.t.sol).
    /// @param stateRoots The state roots at steps `0, c, ..., steps`, in order.
    function submit(uint256 taskId, bytes32[] calldata stateRoots) external;

    /// @notice Anyone, before `disputeDeadline`: opens the game between two trainers of different
    ///         groups, neither eliminated, that have not played each other. Each plays its own side:
    ///         a game decides only about the two who played it.
    function openDispute(uint256 taskId, address defender, address challenger)
        external
        returns (uint256 gameId);

    /// @notice Anyone, once the game has ended: eliminates the loser(s), pays the oracle fee and the
    ///         winner's compensation from the loser's slashed bond.
    function settleDispute(uint256 gameId) external;

    /// @notice Anyone, when no game is running and either the dispute deadline passed or a single
    ///         group is left after the submit deadline (or after every slot submitted).
    function finalize(uint256 taskId) external;

    /// @notice Sends the caller its whole credit.
    function withdraw() external;

    function task(uint256 taskId) external view returns (TaskView memory);
    function specOf(uint256 taskId) external view returns (TaskSpec memory);
    function trainersOf(uint256 taskId) external view returns (address[] memory);
    function groupOf(uint256 taskId, uint32 group) external view returns (GroupView memory);
    function groupOfTrainer(uint256 taskId, address trainer)
        external
        view
        returns (bool submitted, uint32 group);
    function trainerOf(uint256 taskId, address trainer) external view returns (TrainerView memory);
    function disputeOf(uint256 gameId) external view returns (DisputeView memory);
    function taskCount() external view returns (uint256);
    /// @notice `max(1, slots - 1) * (compensation(spec) + oracle fee)`: a trainer's bond covers every
    ///         game it can lose (it can be challenged by every other trainer at once).
    function minBond(TaskSpec calldata spec) external view returns (uint256);
    /// @notice What a game's winner is paid: `(game.honestGasBound(cfg) + extra) * gasPriceCap`, where
    ///         `extra = max(0, proofGasBound(spec) - DisputeGame.PROOF_GAS)` tops up the game's allowance
    ///         for the decision proof when this task's largest proof may cost more.
    function compensation(TaskSpec calldata spec) external view returns (uint256);
    /// @notice An upper bound on the gas of the largest decision proof (batch input, state, constant,
    ///         node input, post-state) any game of `spec` can need, in one transaction, calldata and
    ///         the EIP-7623 floor included (contracts/src/lib/ProofGasLib.sol, docs/game.md "Market
    ///         bounds"). `postTask` refuses a spec whose bound exceeds `MAX_PROOF_GAS`.
    function proofGasBound(TaskSpec calldata spec) external pure returns (uint256);
    function creditOf(address account) external view returns (uint256);
    function totalEscrow() external view returns (uint256);
    function totalBonds() external view returns (uint256);
    function totalPools() external view returns (uint256);
    function totalCredits() external view returns (uint256);
    function totalBurnt() external view returns (uint256);
    function game() external view returns (IDisputeGame);
    /// @notice Most gas `proofGasBound(spec)` may be (8,000,000, under half the 16,777,216 per-transaction
    ///         cap, so that the largest proof fits one transaction with room for the bound's error).
    function MAX_PROOF_GAS() external view returns (uint256);
    /// @notice Most checkpoints after step 0 a task has (`steps / checkpointInterval`, 4096): `submit`
    ///         carries the whole list, 4,097 roots at most, in one transaction.
    function MAX_CHECKPOINTS() external view returns (uint256);
    /// @notice Most trainers a task takes (`slots`, 64): `finalize` pays every one of them in one
    ///         transaction, about 38,200 gas each at worst (every trainer its own group); at 64 trainers
    ///         2,442,335 gas (contracts/test/TaskMarketGas.t.sol), under a sixth of the 16,777,216 cap.
    function MAX_SLOTS() external view returns (uint32);
    /// @notice Least seconds between posting and `joinDeadline` (5 minutes): trainers other than the
    ///         client's own must see the task and join.
    function MIN_JOIN_WINDOW() external view returns (uint256);
    /// @notice Least seconds between `submitDeadline` and `disputeDeadline` (1 hour): a trainer that sees
    ///         a result submitted in the last second still has 300 blocks of 12 s to open a dispute.
    function MIN_DISPUTE_WINDOW() external view returns (uint256);
    /// @notice Least seconds of clock per move (1 minute, 5 blocks of 12 s): `clock` must be at least
    ///         `game.roundBound(cfg) * MIN_MOVE_TIME`, so a side that moves within a minute of its turn
    ///         never runs out of time in the longest game.
    function MIN_MOVE_TIME() external view returns (uint256);
    function oracle() external view returns (IRecomputeOracle);
}
