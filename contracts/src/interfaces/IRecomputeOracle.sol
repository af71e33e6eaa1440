// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IRandomness} from "./IRandomness.sol";

/// @dev The one output an oracle (or a committee member) posts when it cannot fetch a question's
///      inputs: `answer(q, [ORACLE_UNAVAILABLE])`, outputs hash `sha256(ORACLE_UNAVAILABLE)`.
bytes32 constant ORACLE_UNAVAILABLE = "refereed:inputs-unavailable";

/// @title IRecomputeOracle
/// @notice Bonded oracles answer the last question of a dispute: "what does node `node` of the
///         program `programHash` output on the inputs committed as `inputs`?" (docs/game.md,
///         section "Oracle"). Only the dispute game bound at deployment asks. Every draw (the
///         answering oracle, a committee) uses randomness requested when the draw became due and
///         readable only later (`IRandomness`), over the stake units of oracles registered before
///         that request, each seat sampled independently by stake. A question is assigned only when
///         the draw finds enough distinct eligible oracles for its whole escalation (the answerer, a
///         challenger and a committee); otherwise it waits, for at most `waitLimit()` per draw. Any
///         account may challenge an answer with a bond: a committee commits, then reveals its votes;
///         a majority decides and whoever was wrong is slashed; a round without a majority slashes
///         its silent members and draws a new committee, up to `maxRounds()` rounds.
///         An oracle that cannot fetch a question's inputs answers `[UNAVAILABLE]` instead of staying
///         silent: it is slashed only `silenceSlash()` if a committee majority fetched them and
///         computed an answer. Every question ends within `maxResolutionTime()` of being asked.
/// @dev Funds: `address(this).balance == totalBonds() + totalChallengeBonds() + totalCredits()
///      + totalBurnt()` at all times. Payments are pull-only (`withdraw`).
///      `outputsHash = sha256(outputs[0] || outputs[1] || ...)` (32 bytes each), the same hash the
///      dispute game forms from a trace record's output commitments.
interface IRecomputeOracle {
    /// @notice Life cycle of a question.
    enum QuestionStatus {
        None, // no such question
        Drawing, // the answering oracle is drawn by `draw` once the randomness is readable
        Assigned, // waiting for the assigned oracle's answer until `deadline`
        Answered, // answered; challengeable until `deadline`
        CommitteeDrawing, // challenged; a committee is drawn by `draw` once the randomness is readable
        Voting, // the committee commits until `commitDeadline`, then reveals until `deadline`
        Final, // `outputsHash` is the answer
        Abandoned // no answer could be obtained in time; the asker must decide without one
    }

    /// @notice A question and its progress.
    struct Question {
        bytes32 programHash;
        uint256 node;
        bytes32 inputsHash; // sha256 of the input commitments, concatenated
        address[2] parties; // the two sides of the dispute: never drawn as oracle or committee
        QuestionStatus status;
        uint8 attempts; // answering oracles assigned so far
        uint8 round; // committees seated so far
        bool feePaid;
        address oracle; // the assigned (or answering) oracle
        uint64 deadline; // by status: draw, answer, challenge or reveal deadline
        uint64 commitDeadline; // Voting: end of the commit phase
        uint64 requestBlock; // Drawing, CommitteeDrawing: the block of the pending randomness request
        uint32 slotCount; // stake units that existed at the request: the draw samples among them
        uint256 requestId; // the pending randomness request
        bytes32 outputsHash; // the posted answer, then the final one
        address challenger;
    }

    /// @notice The parameters fixed at deployment.
    struct Params {
        uint256 fee; // paid per final question by the asker's side
        uint256 minBond; // one stake unit; an oracle's draw weight is floor(bond / minBond)
        uint256 challengeBond;
        uint256 silenceSlash; // taken from a silent oracle (or one that wrongly reported UNAVAILABLE)
        uint64 answerWindow;
        uint64 challengeWindow;
        uint64 voteWindow; // the commit phase, and again the reveal phase
        uint64 exitDelay;
        uint64 waitLimit; // how long one draw may wait for enough eligible oracles
        uint8 committeeSize; // odd, at most 15
        uint8 maxAttempts; // answering oracles tried before the question is abandoned
        uint8 maxRounds; // committees drawn before a challenged question is abandoned
    }

    /// @notice The dispute game that alone may ask was bound (once, by the deployer).
    event GameBound(address indexed game);
    /// @notice `oracle` bonded up to `bond`; it has `units` stake units, eligible for draws requested
    ///         after this block.
    event OracleRegistered(address indexed oracle, uint256 bond, uint256 units);
    /// @notice `oracle` left future draws; its bond can be taken out at `availableAt`.
    event OracleExitRequested(address indexed oracle, uint256 availableAt);
    /// @notice `oracle` took its remaining `bond` out (credited, then withdrawable).
    event OracleExited(address indexed oracle, uint256 bond);
    /// @notice The game asked a question.
    event QuestionAsked(
        uint256 indexed questionId, address indexed asker, bytes32 programHash, uint256 node, bytes32[] inputs
    );
    /// @notice A draw for `questionId` waits for randomness `requestId` (and, until `deadline`, for
    ///         enough eligible oracles).
    event DrawRequested(uint256 indexed questionId, uint256 requestId, uint64 deadline);
    /// @notice `oracle` must answer `questionId` before `deadline`.
    event QuestionAssigned(uint256 indexed questionId, address indexed oracle, uint64 deadline);
    /// @notice `oracle` answered; the answer can be challenged until `challengeDeadline`.
    event QuestionAnswered(
        uint256 indexed questionId,
        address indexed oracle,
        bytes32 outputsHash,
        bytes32[] outputs,
        uint64 challengeDeadline
    );
    /// @notice `challenger` challenged the answer; a committee will be drawn.
    event AnswerChallenged(uint256 indexed questionId, address indexed challenger);
    /// @notice Committee `round` (1, 2, ...) was seated: it commits until `commitDeadline`, reveals
    ///         until `revealDeadline`.
    event CommitteeSeated(
        uint256 indexed questionId, uint8 round, address[] committee, uint64 commitDeadline, uint64 revealDeadline
    );
    /// @notice A committee member committed to a vote.
    event VoteCommitted(uint256 indexed questionId, address indexed member, bytes32 commitment);
    /// @notice A committee member revealed its vote.
    event VoteRevealed(uint256 indexed questionId, address indexed member, bytes32 outputsHash);
    /// @notice Committee `round` ended without a majority.
    event RoundFailed(uint256 indexed questionId, uint8 round);
    /// @notice The question's answer is final.
    event QuestionSettled(uint256 indexed questionId, bytes32 outputsHash);
    /// @notice No answer could be obtained.
    event QuestionAbandoned(uint256 indexed questionId);
    /// @notice `oracle` lost `amount` of its bond over `questionId`.
    event OracleSlashed(address indexed oracle, uint256 indexed questionId, uint256 amount);
    /// @notice A challenger lost its challenge bond.
    event ChallengerSlashed(address indexed challenger, uint256 indexed questionId, uint256 amount);
    /// @notice The asker's side paid the question's fee.
    event FeePaid(uint256 indexed questionId, address indexed payer, uint256 amount);
    /// @notice `amount` was credited to `account` (withdraw with `withdraw`).
    event Credited(address indexed account, uint256 amount);
    /// @notice `amount` was burnt: it stays in the contract and belongs to nobody.
    event Burnt(uint256 amount);
    /// @notice `account` withdrew `amount`.
    event Withdrawn(address indexed account, uint256 amount);

    // ---- oracles -------------------------------------------------------------------------

    /// @notice The deployer binds the dispute game, once; until then nobody can ask.
    function bindGame(address game) external;

    /// @notice Adds `msg.value` to the caller's bond (the total must reach `minBond()`) and gives it
    ///         one slot per whole `minBond()` of its bond (at most 64), reusing freed slots first. New
    ///         slots, and a fresh, refilled or returning oracle, count only for draws requested after
    ///         this block. A slash frees the slots the bond no longer covers. Reverts
    ///         `RecomputeOracleExitAlreadyRequested` while an exit is pending: an exit is final.
    function register() external payable;

    /// @notice Leaves every draw requested from now on; the bond can be taken out with `exit` after
    ///         `exitDelay()` and once no duty (a question it answers or sits on) is open.
    function requestExit() external;

    /// @notice Credits the caller's remaining bond (after `requestExit` and the delay).
    function exit() external;

    // ---- questions -----------------------------------------------------------------------

    /// @notice The bound game asks; the answering oracle is drawn by `draw` once the randomness
    ///         requested here is readable.
    /// @param programHash The task's program hash.
    /// @param node The node index in the program.
    /// @param inputs The node's input tensor commitments, in order.
    /// @param parties The two sides of the dispute; never drawn.
    /// @return questionId A fresh id (1, 2, ...).
    function ask(bytes32 programHash, uint256 node, bytes32[] calldata inputs, address[2] calldata parties)
        external
        returns (uint256 questionId);

    /// @notice Anyone, once the pending randomness is readable (`Drawing` or `CommitteeDrawing`):
    ///         draws the answering oracle (checking that the whole escalation can be seated) or the
    ///         committee. Too few eligible oracles: requests new randomness and waits, until the draw's
    ///         deadline; after it the question is abandoned (a challenge bond is returned). Expired
    ///         randomness is requested again.
    function draw(uint256 questionId) external;

    /// @notice The assigned oracle posts the node's output commitments before the answer deadline,
    ///         or `[UNAVAILABLE]` when it cannot fetch the inputs.
    function answer(uint256 questionId, bytes32[] calldata outputs) external;

    /// @notice Anyone, after the answer deadline passed unanswered: slashes the silent oracle
    ///         `silenceSlash()` (burnt; it stays eligible while its bond covers a unit) and draws
    ///         another, or abandons after `maxAttempts()` attempts.
    function reassign(uint256 questionId) external;

    /// @notice Anyone but the answering oracle, before the challenge deadline, with exactly
    ///         `challengeBond()`: a committee of `committeeSize()` oracles will be drawn.
    function challenge(uint256 questionId) external payable;

    /// @notice A seated member of the current committee commits
    ///         `keccak256(abi.encode(questionId, member, outputsHash, salt))` before `commitDeadline`.
    function commitVote(uint256 questionId, bytes32 commitment) external;

    /// @notice A member that committed reveals its vote, after the commit phase (or once every
    ///         member committed) and before the reveal deadline.
    function revealVote(uint256 questionId, bytes32 outputsHash, bytes32 salt) external;

    /// @notice Anyone: makes an unchallenged answer final after its challenge deadline, or counts
    ///         the committee's revealed votes after the reveal deadline (or once every member revealed).
    function settle(uint256 questionId) external;

    /// @notice Pays the fee of a final question (exactly `fee()`), credited to whoever gave the
    ///         final answer.
    function payFee(uint256 questionId) external payable;

    /// @notice Sends the caller its whole credit.
    function withdraw() external;

    // ---- views ---------------------------------------------------------------------------

    /// @notice The status of a question and, when `Final`, its answer.
    function result(uint256 questionId) external view returns (QuestionStatus status, bytes32 outputsHash);
    function question(uint256 questionId) external view returns (Question memory);
    /// @notice Every member seated on the question, round after round (`committeeSize()` per round).
    function committeeOf(uint256 questionId) external view returns (address[] memory);
    /// @notice Whether the pending randomness of a drawing question is readable now.
    function drawReady(uint256 questionId) external view returns (bool);
    /// @notice Whether `oracle` would be eligible for a draw requested now (bond covers a unit, no exit
    ///         requested, registered before this block).
    function isActive(address oracle) external view returns (bool);
    /// @notice Slots in the list, free ones included (the draws' sample space).
    function slotCount() external view returns (uint256);
    /// @notice Slots freed and not yet reused.
    function freeSlotCount() external view returns (uint256);
    /// @notice The owner of slot `slot` (`address(0)`: free).
    function slotOwner(uint256 slot) external view returns (address);
    function unitsOf(address oracle) external view returns (uint256);
    function bondOf(address oracle) external view returns (uint256);
    function creditOf(address account) external view returns (uint256);
    function totalBonds() external view returns (uint256);
    function totalChallengeBonds() external view returns (uint256);
    function totalCredits() external view returns (uint256);
    function totalBurnt() external view returns (uint256);
    function game() external view returns (address);
    function randomness() external view returns (IRandomness);
    function params() external view returns (Params memory);
    function fee() external view returns (uint256);
    function minBond() external view returns (uint256);
    function challengeBond() external view returns (uint256);
    function maxAttempts() external view returns (uint8);
    /// @notice `sha256(UNAVAILABLE)`: the outputs hash of the answer "the inputs could not be fetched".
    function unavailableHash() external view returns (bytes32);
    /// @notice Longest time from `ask` to `Final` or `Abandoned`, if every due call is made within a
    ///         second: `maxAttempts * (waitLimit + answerWindow + 2) + challengeWindow + 1
    ///         + maxRounds * (waitLimit + 2 * voteWindow + 2)`.
    function maxResolutionTime() external view returns (uint64);
}
