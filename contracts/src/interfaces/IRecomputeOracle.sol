// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

/// @title IRecomputeOracle
/// @notice Bonded oracles answer the last question of a dispute: "what does node `node` of the
///         program `programHash` output on the inputs committed as `inputs`?" (docs/game.md,
///         section "Oracle"). An assigned oracle posts the output commitments within a window; any
///         account may challenge an answer with a bond, which sends the question to a committee of
///         other oracles deciding by majority; whoever was wrong is slashed. A silent oracle is
///         slashed and the question re-assigned; after `maxAttempts` silent oracles, or when no
///         oracle can be drawn, the question is abandoned. Every question therefore ends within
///         `maxResolutionTime()` of being asked.
/// @dev Funds: `address(this).balance == totalBonds() + totalChallengeBonds() + totalCredits()
///      + totalBurnt()` at all times. Payments are pull-only (`withdraw`).
///      `outputsHash = sha256(outputs[0] || outputs[1] || ...)` (32 bytes each), the same hash the
///      dispute game forms from a trace record's output commitments.
interface IRecomputeOracle {
    /// @notice Life cycle of a question.
    enum QuestionStatus {
        None, // no such question
        Assigned, // waiting for the assigned oracle's answer
        Answered, // answered; challengeable until `challengeDeadline`
        Challenged, // a committee is voting until `voteDeadline`
        Final, // `outputsHash` is the answer
        Abandoned // no answer could be obtained; the asker must decide without one
    }

    /// @notice A question and its progress.
    struct Question {
        bytes32 programHash;
        uint256 node;
        bytes32 inputsHash; // sha256 of the input commitments, concatenated
        address asker;
        address[2] parties; // the two sides of the dispute: never drawn as oracle or committee
        QuestionStatus status;
        uint8 attempts; // assignments made so far (1 after `ask`)
        address oracle; // the assigned (or answering) oracle
        uint64 deadline; // answer, challenge or vote deadline, by status
        bytes32 outputsHash; // the posted answer, then the final one
        address challenger;
        bool feePaid;
    }

    /// @notice `oracle` bonded `bond` and joined the active set.
    event OracleRegistered(address indexed oracle, uint256 bond);
    /// @notice `oracle` left the active set; its bond can be taken out at `availableAt`.
    event OracleExitRequested(address indexed oracle, uint256 availableAt);
    /// @notice `oracle` took its remaining `bond` out (credited, then withdrawable).
    event OracleExited(address indexed oracle, uint256 bond);
    /// @notice A question was asked by `asker` (the dispute game).
    event QuestionAsked(
        uint256 indexed questionId, address indexed asker, bytes32 programHash, uint256 node, bytes32[] inputs
    );
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
    /// @notice `challenger` challenged the answer; `committee` votes until `deadline`.
    event AnswerChallenged(
        uint256 indexed questionId, address indexed challenger, address[] committee, uint64 deadline
    );
    /// @notice A committee member voted.
    event CommitteeVoted(uint256 indexed questionId, address indexed member, bytes32 outputsHash);
    /// @notice The question's answer is final.
    event QuestionSettled(uint256 indexed questionId, bytes32 outputsHash);
    /// @notice No answer could be obtained.
    event QuestionAbandoned(uint256 indexed questionId);
    /// @notice `oracle` lost `amount` of its bond over `questionId` (and left the active set).
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

    /// @notice Bonds `msg.value` (at least `minBond()`, added to any bond left) and joins the active set.
    function register() external payable;

    /// @notice Leaves the active set; the bond can be taken out with `exit` after `exitDelay()`
    ///         and once no question assigned to the caller (as oracle or committee member) is open.
    function requestExit() external;

    /// @notice Credits the caller's remaining bond (after `requestExit` and the delay).
    function exit() external;

    // ---- questions -----------------------------------------------------------------------

    /// @notice Asks a question and assigns it to an oracle drawn from the active set (neither party).
    /// @param programHash The task's program hash.
    /// @param node The node index in the program.
    /// @param inputs The node's input tensor commitments, in order.
    /// @param parties The two sides of the dispute; never drawn.
    /// @return questionId A fresh id (1, 2, ...).
    function ask(bytes32 programHash, uint256 node, bytes32[] calldata inputs, address[2] calldata parties)
        external
        returns (uint256 questionId);

    /// @notice The assigned oracle posts the node's output commitments, before the answer deadline.
    function answer(uint256 questionId, bytes32[] calldata outputs) external;

    /// @notice Anyone, after the answer deadline passed unanswered: slashes the silent oracle
    ///         (`silenceSlash()`, burnt) and re-assigns, or abandons after `maxAttempts()` attempts or
    ///         when a whole answer window no longer fits before `askedAt + maxAttempts * (answerWindow + 1) - 1`
    ///         (the deadline prompt re-assignments reach).
    function reassign(uint256 questionId) external;

    /// @notice Anyone but the answering oracle, before the challenge deadline, with exactly
    ///         `challengeBond()`: sends the question to a committee of `committeeSize()` oracles.
    function challenge(uint256 questionId) external payable;

    /// @notice A committee member posts its own output commitments before the vote deadline.
    function vote(uint256 questionId, bytes32[] calldata outputs) external;

    /// @notice Anyone: makes an unchallenged answer final after its challenge deadline, or counts
    ///         the committee's votes after the vote deadline (or once every member voted).
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
    function committeeOf(uint256 questionId) external view returns (address[] memory);
    function isActive(address oracle) external view returns (bool);
    function activeCount() external view returns (uint256);
    function bondOf(address oracle) external view returns (uint256);
    function creditOf(address account) external view returns (uint256);
    function totalBonds() external view returns (uint256);
    function totalChallengeBonds() external view returns (uint256);
    function totalCredits() external view returns (uint256);
    function totalBurnt() external view returns (uint256);
    function fee() external view returns (uint256);
    function minBond() external view returns (uint256);
    function challengeBond() external view returns (uint256);
    function silenceSlash() external view returns (uint256);
    function answerWindow() external view returns (uint64);
    function challengeWindow() external view returns (uint64);
    function voteWindow() external view returns (uint64);
    function exitDelay() external view returns (uint64);
    function committeeSize() external view returns (uint8);
    function maxAttempts() external view returns (uint8);
    /// @notice Longest time from `ask` to `Final` or `Abandoned`:
    ///         `maxAttempts * answerWindow + challengeWindow + voteWindow`.
    function maxResolutionTime() external view returns (uint64);
}
