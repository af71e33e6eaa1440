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
        uint32 joined; // trainers on slots
        uint32 submitted; // entrants that revealed a result
        uint32 groupCount;
        uint32 liveGroups;
        uint32 activeGames;
        uint32 entrants; // trainers on slots and outside challengers
        bool won; // finalized with one live group, `winningGroup`
        uint32 winningGroup;
        uint256 share; // the reward share of each live member of the winning group
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
        bool joined; // bonded: on a slot, or as an outside challenger
        bool submitted; // revealed its result
        bool eliminated;
        uint32 group;
        uint256 pool; // once eliminated: its slashed bond left to pay compensation and fees from
        bool challenger; // entered with `enter`, not on a slot
        bool committed;
        bool claimed;
    }

    event TaskPosted(uint256 indexed taskId, address indexed client, uint256 reward, TaskSpec spec);
    event TrainerJoined(uint256 indexed taskId, address indexed trainer, uint256 bond);
    /// @notice An outside challenger bonded and committed (no slot needed).
    event ChallengerEntered(uint256 indexed taskId, address indexed challenger, uint256 bond, bytes32 commitment);
    /// @notice A result was committed; it is revealed with `submit`.
    event ResultCommitted(uint256 indexed taskId, address indexed trainer, bytes32 commitment);
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
    /// @notice Whoever opened game `gameId` was repaid its gas (the game ended with a winner).
    event OpenerRepaid(uint256 indexed taskId, uint256 indexed gameId, address indexed opener, uint256 amount);
    /// @notice `count` entrants never revealed: their bonds went to the client.
    event BondsForfeited(uint256 indexed taskId, uint256 count, uint256 amount);
    event TaskFinalized(uint256 indexed taskId, int256 winningGroup, uint256 reward); // -1: client refunded
    /// @notice A live entrant's bond (and share of the reward) was credited.
    event Claimed(uint256 indexed taskId, address indexed trainer, uint256 amount);
    event Credited(address indexed account, uint256 amount);
    event Burnt(uint256 indexed taskId, uint256 amount);
    event Withdrawn(address indexed account, uint256 amount);

    /// @notice Posts a task; `msg.value` (> 0) is the escrowed reward. Besides well-formed fields and
    ///         ordered deadlines, the spec must leave time to play (docs/game.md, "Market bounds"):
    ///         joining open `MIN_JOIN_WINDOW` after posting, disputes open `REVEAL_WINDOW +
    ///         MIN_DISPUTE_WINDOW` after the submit deadline, a clock of at least `MIN_MOVE_TIME` per move of the longest game, at
    ///         most `MAX_SLOTS` trainers and `MAX_CHECKPOINTS` checkpoints, and a largest proof that fits
    ///         one transaction (`proofGasBound(spec) <= MAX_PROOF_GAS`).
    function postTask(TaskSpec calldata spec) external payable returns (uint256 taskId);

    /// @notice Joins a slot before `joinDeadline` with at least `bond` (any excess is credited back).
    function join(uint256 taskId) external payable;

    /// @notice A joined trainer commits to its result before `submitDeadline`:
    ///         `commitment = keccak256(abi.encode(taskId, trainer, keccak256(abi.encodePacked(stateRoots)), salt))`.
    ///         Nobody can copy a result it has not seen, and nobody sees one before the deadline.
    function commit(uint256 taskId, bytes32 commitment) external;

    /// @notice An outside challenger, without a slot: bonds `bond` (any excess credited back) and commits
    ///         a result, until `MIN_DISPUTE_WINDOW` before the dispute deadline. It reveals with `submit`
    ///         and plays games like any trainer, so a task whose slots were squatted can still be
    ///         disputed; if its group is the one left, it shares the reward.
    function enter(uint256 taskId, bytes32 commitment) external payable;

    /// @notice Reveals a committed result: the whole checkpoint list, the `K + 1 = steps /
    ///         checkpointInterval + 1` state roots after steps `0, c, 2c, ..., steps`, the first of them
    ///         the task's initial state root, and the commitment's salt. Allowed after the submit
    ///         deadline (and after the commit's block), until `REVEAL_WINDOW` after the later of the
    ///         submit deadline and the commit. The market builds the list's root itself (leaves
    ///         `leaf("CKPT" || u256(i c) || stateRoots[i])`, the padded tree of docs/commitments.md
    ///         section 2); the last entry is the final state root. Results with the same root form a
    ///         group; a result may join a group only if the group was created after its commit (else it
    ///         is a copy: `TaskMarketCopiedResult`). An entrant that never reveals forfeits its bond to
    ///         the client.
    /// @dev At `MAX_CHECKPOINTS` (a list of 4,097 roots) a submit takes about 5.3M gas, the EIP-7623
    ///      calldata floor (10 gas a token, 40 a non-zero byte) most of it
    ///      (contracts/test/TaskMarketGas.t.sol).
    /// @param stateRoots The state roots at steps `0, c, ..., steps`, in order.
    /// @param salt The commitment's salt.
    function submit(uint256 taskId, bytes32[] calldata stateRoots, bytes32 salt) external;

    /// @notice Anyone, before `disputeDeadline`: opens the game between two entrants of different
    ///         groups, neither eliminated, that have not played each other. Each plays its own side:
    ///         a game decides only about the two who played it. The caller's gas is repaid from the
    ///         loser's pool if the game ends with a winner.
    function openDispute(uint256 taskId, address defender, address challenger)
        external
        returns (uint256 gameId);

    /// @notice Anyone, once the game has ended: eliminates the loser(s), pays from the loser's slashed
    ///         bond the oracle fee, the opener's gas and the winner's metered gas, each at
    ///         `min(price paid, gasPriceCap)` and within its bound.
    function settleDispute(uint256 gameId) external;

    /// @notice Anyone, after the dispute deadline and once no game is running (never earlier: an
    ///         outside challenger may still come). Credits the client the forfeited bonds of entrants
    ///         that never revealed and, unless exactly one group is live, the reward; burns what is
    ///         left of the eliminated trainers' pools. Live entrants then `claim`.
    function finalize(uint256 taskId) external;

    /// @notice Anyone, for a live entrant of a finalized task that revealed: credits it its bond and,
    ///         if its group won, its share of the reward. Pull-based, so finalizing loops over nothing.
    function claim(uint256 taskId, address trainer) external;

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
    /// @notice `max(1, slots - 1) * (compensation(spec) + oracle fee + OPEN_GAS_BOUND * gasPriceCap)`: a
    ///         trainer's bond covers every repayment of each game it can lose against the other slots
    ///         (the fee, the opener's gas, the winner's metered gas); games against outside challengers
    ///         beyond those are repaid as far as its pool goes.
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
    /// @notice Most trainers on slots a task takes (`slots`, 64): the bond covers `slots - 1` games.
    ///         `finalize` loops over nothing (entrants `claim`), so neither slots nor outside challengers
    ///         can lock a task's funds (contracts/test/TaskMarketGas.t.sol).
    function MAX_SLOTS() external view returns (uint32);
    /// @notice Least seconds between posting and `joinDeadline` (5 minutes): trainers other than the
    ///         client's own must see the task and join.
    function MIN_JOIN_WINDOW() external view returns (uint256);
    /// @notice Least seconds disputes stay open after the reveals (1 hour): `disputeDeadline` is at least
    ///         `REVEAL_WINDOW + MIN_DISPUTE_WINDOW` after `submitDeadline`, so a trainer that sees a result
    ///         revealed in the last second still has 300 blocks of 12 s to open a dispute; outside
    ///         challengers enter until `MIN_DISPUTE_WINDOW` before the deadline.
    function MIN_DISPUTE_WINDOW() external view returns (uint256);
    /// @notice Seconds an entrant has to reveal its committed result (15 minutes): after the submit
    ///         deadline, or after its commit if it entered later.
    function REVEAL_WINDOW() external view returns (uint256);
    /// @notice Gas allowance of `openDispute` for the opener's repayment and the bond (1,000,000).
    function OPEN_GAS_BOUND() external view returns (uint256);
    /// @notice Least seconds of clock per move (1 minute, 5 blocks of 12 s): `clock` must be at least
    ///         `game.roundBound(cfg) * MIN_MOVE_TIME`, so a side that moves within a minute of its turn
    ///         never runs out of time in the longest game.
    function MIN_MOVE_TIME() external view returns (uint256);
    function oracle() external view returns (IRecomputeOracle);
}
