// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";

/// @title OracleHandler
/// @notice Drives the recompute oracle alone through random sequences of register / requestExit /
///         exit / ask / answer (true or a lie) / reassign / challenge / vote (true or a lie) / settle /
///         payFee / withdraw, with the clock advanced by `warp`. Every actor may be an oracle, an asker,
///         a party, a challenger and a fee payer, so the exclusion rules of the draws are exercised.
/// @dev Calls are aimed at what can succeed (the right oracle, the right status), but deadlines and
///      roles are left to chance, so some calls revert; the invariant runs with `fail_on_revert` off.
contract OracleHandler is Test {
    IRecomputeOracle public immutable oracle;

    address[] internal _actors;
    uint256[] internal _questionIds;

    /// @notice When each question was asked.
    mapping(uint256 questionId => uint256) public askedAt;
    /// @notice Ether each actor sent to the oracle, and took out of it.
    mapping(address => uint256) public deposited;
    mapping(address => uint256) public withdrawn;
    mapping(bytes32 => uint256) public calls;

    constructor(IRecomputeOracle oracle_) {
        oracle = oracle_;
        for (uint256 i; i < 8; ++i) {
            _actors.push(makeAddr(string.concat("actor", vm.toString(i))));
        }
    }

    // ---- oracles -------------------------------------------------------------------------------

    function register(uint256 actorSeed, uint256 amount) external {
        address a = _actor(actorSeed);
        uint256 bond = oracle.bondOf(a);
        uint256 minBond = oracle.minBond();
        amount = _bound(amount, 0, 3 * minBond);
        if (bond + amount < minBond) amount = minBond - bond;
        ++calls["register"];
        _pay(a, amount);
        vm.prank(a);
        oracle.register{value: amount}();
    }

    function requestExit(uint256 actorSeed) external {
        ++calls["requestExit"];
        vm.prank(_actor(actorSeed));
        oracle.requestExit();
    }

    function exit(uint256 actorSeed) external {
        ++calls["exit"];
        vm.prank(_actor(actorSeed));
        oracle.exit();
    }

    // ---- questions -----------------------------------------------------------------------------

    /// @notice An actor asks about node `node` for two parties (any actors, possibly oracles).
    function ask(uint256 askerSeed, uint256 partySeed, uint256 node) external {
        if (_questionIds.length >= 24) return;
        ++calls["ask"];
        bytes32[] memory inputs = new bytes32[](1 + node % 3);
        for (uint256 i; i < inputs.length; ++i) {
            inputs[i] = keccak256(abi.encode(node, i));
        }
        address[2] memory parties = [_actor(partySeed), _actor(partySeed >> 8)];
        vm.prank(_actor(askerSeed));
        uint256 qid = oracle.ask(keccak256("program"), node % 7, inputs, parties);
        _questionIds.push(qid);
        askedAt[qid] = block.timestamp;
    }

    /// @notice The assigned oracle answers, truthfully or not.
    function answer(uint256 questionSeed, bool truthful) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0) return;
        IRecomputeOracle.Question memory q = oracle.question(qid);
        if (q.status != IRecomputeOracle.QuestionStatus.Assigned) return;
        ++calls["answer"];
        vm.prank(q.oracle);
        oracle.answer(qid, _outputs(qid, truthful));
    }

    function reassign(uint256 questionSeed) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0) return;
        ++calls["reassign"];
        vm.prank(_actor(questionSeed >> 128));
        oracle.reassign(qid);
    }

    /// @notice Any actor (the answering oracle too, which reverts) challenges with the exact bond.
    function challenge(uint256 questionSeed, uint256 actorSeed) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0 || oracle.question(qid).status != IRecomputeOracle.QuestionStatus.Answered) return;
        ++calls["challenge"];
        address a = _actor(actorSeed);
        uint256 bond = oracle.challengeBond();
        _pay(a, bond);
        vm.prank(a);
        oracle.challenge{value: bond}(qid);
    }

    /// @notice A committee member votes, truthfully or not.
    function vote(uint256 questionSeed, uint256 memberSeed, bool truthful) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0) return;
        address[] memory committee = oracle.committeeOf(qid);
        if (committee.length == 0) return;
        ++calls["vote"];
        vm.prank(committee[memberSeed % committee.length]);
        oracle.vote(qid, _outputs(qid, truthful));
    }

    function settle(uint256 questionSeed) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0) return;
        ++calls["settle"];
        vm.prank(_actor(questionSeed >> 128));
        oracle.settle(qid);
    }

    /// @notice Anyone pays the fee of a final question (the market does it when it settles a game).
    function payFee(uint256 questionSeed, uint256 actorSeed) external {
        uint256 qid = _question(questionSeed);
        if (qid == 0) return;
        IRecomputeOracle.Question memory q = oracle.question(qid);
        if (q.status != IRecomputeOracle.QuestionStatus.Final || q.feePaid) return;
        ++calls["payFee"];
        address a = _actor(actorSeed);
        uint256 fee = oracle.fee();
        _pay(a, fee);
        vm.prank(a);
        oracle.payFee{value: fee}(qid);
    }

    function withdraw(uint256 actorSeed) external {
        address a = _actor(actorSeed);
        if (oracle.creditOf(a) == 0) return;
        ++calls["withdraw"];
        uint256 balance = a.balance;
        vm.prank(a);
        oracle.withdraw();
        withdrawn[a] += a.balance - balance;
    }

    function warp(uint256 dt) external {
        ++calls["warp"];
        vm.warp(block.timestamp + _bound(dt, 1, 3 hours));
    }

    // ---- views for the test ----------------------------------------------------------------------

    function actors() external view returns (address[] memory) {
        return _actors;
    }

    function questionIds() external view returns (uint256[] memory) {
        return _questionIds;
    }

    // ---- helpers ---------------------------------------------------------------------------------

    function _actor(uint256 seed) internal view returns (address) {
        return _actors[seed % _actors.length];
    }

    function _question(uint256 seed) internal view returns (uint256) {
        return _questionIds.length == 0 ? 0 : _questionIds[seed % _questionIds.length];
    }

    /// @dev The true outputs of a question are a function of what it asks; a lie is anything else.
    function _outputs(uint256 qid, bool truthful) internal view returns (bytes32[] memory outputs) {
        IRecomputeOracle.Question memory q = oracle.question(qid);
        outputs = new bytes32[](1);
        outputs[0] = keccak256(abi.encode(truthful ? "true" : "lie", q.programHash, q.node, q.inputsHash));
    }

    function _pay(address a, uint256 amount) internal {
        vm.deal(a, a.balance + amount);
        deposited[a] += amount;
    }
}
