// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {RecomputeOracle} from "../../src/RecomputeOracle.sol";
import {IRecomputeOracle, ORACLE_UNAVAILABLE} from "../../src/interfaces/IRecomputeOracle.sol";
import {OracleSetup} from "../utils/OracleSetup.sol";

/// @title OracleHandler
/// @notice Drives the recompute oracle alone, as its bound game, through random traffic from an
///         adversary that owns some oracles and plain accounts: it registers, tops up, requests exit
///         and exits, asks (naming any two actors as parties), draws whenever it likes, answers
///         truthfully, wrongly or UNAVAILABLE or stays silent, challenges any answer, commits true,
///         wrong or UNAVAILABLE votes, reveals them or not, reassigns, settles, pays fees, withdraws.
///         Honest oracles always answer and vote the true outputs (known to the handler for every
///         question) before their deadlines; an honest watcher challenges wrong answers when called.
///         Time moves only by `warp` (a keeper makes every due call at the first second allowed) and
///         `lateWarp` (no keeper: the questions it leaves with a due call unmade are exempt from the
///         time bound); both stop at every deadline so that the honest oracles act in time.
/// @dev No call reverts: the adversary's calls are tried and their failures ignored; an honest
///      call that fails is counted (`honestReverts`, which must stay 0: the script is sound).
contract OracleHandler is Test {
    uint256 internal constant HONEST = 6;
    uint256 internal constant ADVERSARIES = 5;
    uint256 internal constant MAX_QUESTIONS = 16;
    uint256 internal constant MAX_STEPS = 48; // clock steps per warp

    RecomputeOracle public immutable oracle;
    address public immutable watcher = makeAddr("watcher");

    address[] internal _honest;
    address[] internal _adversaries;
    address[] internal _actors; // every account that can hold a bond or a credit
    mapping(address => bool) public isHonest;

    uint256[] internal _questionIds;
    mapping(uint256 questionId => uint256) public askedAt;
    mapping(uint256 questionId => bytes32) public trueHash;
    /// @notice Some committee round of the question seated two or more adversarial oracles.
    mapping(uint256 questionId => bool) public adversarialMajority;
    /// @notice Time passed a due call of the question that nobody made (`lateWarp`).
    mapping(uint256 questionId => bool) public exempt;
    /// @dev What the adversary does with the question (see `_adversaryAct`).
    mapping(uint256 questionId => uint256) internal _persona;

    /// @notice What each honest oracle bonded, and lost over questions an adversarial majority sat on.
    mapping(address => uint256) public honestDeposits;
    mapping(address => uint256) public excusedLoss;
    /// @notice Honest bond decreases over questions no adversarial majority sat on (must stay 0).
    uint256 public unexcusedLosses;
    uint256 public honestReverts;
    bytes public lastHonestRevert;

    // Ballots (the oracle does not expose them): a member is seated at most once per question.
    mapping(uint256 => mapping(address => bool)) internal _committed;
    mapping(uint256 => mapping(address => bool)) internal _revealed;
    mapping(uint256 => mapping(address => bytes32)) internal _vote;
    mapping(uint256 => mapping(uint8 => uint256)) internal _commits; // per round
    /// @dev The request the keeper last tried to draw on.
    mapping(uint256 => uint256) internal _triedRequest;

    /// @notice How far the campaign went, by outcome.
    mapping(bytes32 => uint256) public reach;

    constructor(RecomputeOracle oracle_) {
        oracle = oracle_;
        uint256 minBond = oracle_.minBond();
        for (uint256 i; i < HONEST; ++i) {
            address h = makeAddr(string.concat("honest", vm.toString(i)));
            _honest.push(h);
            _actors.push(h);
            isHonest[h] = true;
            honestDeposits[h] = minBond;
            _deposit(h, minBond);
        }
        for (uint256 i; i < ADVERSARIES; ++i) {
            address a = makeAddr(string.concat("adversary", vm.toString(i)));
            _adversaries.push(a);
            _actors.push(a);
            _deposit(a, i < 2 ? 2 * minBond : minBond);
        }
        _actors.push(watcher);
        vm.roll(block.number + 1);
    }

    // ---- the adversary: oracles ----------------------------------------------------------------

    /// @notice An adversarial account bonds or tops up (up to 2 units; a top-up of nothing too).
    function register(uint256 who, uint256 amount) external {
        address a = _adversary(who);
        uint256 bond = oracle.bondOf(a);
        uint256 minBond = oracle.minBond();
        if (bond >= 2 * minBond) amount = 0;
        else amount = _bound(amount, bond >= minBond ? 0 : minBond - bond, 2 * minBond - bond);
        vm.deal(a, a.balance + amount);
        vm.prank(a);
        try oracle.register{value: amount}() {
            ++reach["register"];
        } catch {}
    }

    function requestExit(uint256 who) external {
        vm.prank(_adversary(who));
        try oracle.requestExit() {
            ++reach["requestExit"];
        } catch {}
    }

    function exit(uint256 who) external {
        vm.prank(_adversary(who));
        try oracle.exit() {
            ++reach["exit"];
        } catch {}
    }

    // ---- the adversary: questions --------------------------------------------------------------

    /// @notice The game asks about `node`, the parties any two actors (honest oracles included).
    function ask(uint256 partySeed, uint256 node) external {
        if (_questionIds.length >= MAX_QUESTIONS) return;
        bytes32[] memory inputs = new bytes32[](1 + node % 2);
        for (uint256 i; i < inputs.length; ++i) {
            inputs[i] = keccak256(abi.encode("input", node, i));
        }
        address[2] memory parties = [_actor(partySeed), _actor(partySeed >> 8)];
        uint256 qid = oracle.ask(keccak256("program"), node % 5, inputs, parties);
        _questionIds.push(qid);
        askedAt[qid] = block.timestamp;
        _persona[qid] = uint256(keccak256(abi.encode(partySeed, node)));
        trueHash[qid] = OracleSetup.hashOf(_trueOutputs(qid));
        ++reach["ask"];
    }

    /// @notice The adversary draws whenever it likes (often before the randomness is readable).
    function draw(uint256 q) external {
        uint256 qid = _pick(
            q, IRecomputeOracle.QuestionStatus.Drawing, IRecomputeOracle.QuestionStatus.CommitteeDrawing
        );
        if (qid != 0) _draw(qid);
    }

    /// @notice An adversarial answering oracle answers: the truth, a lie, UNAVAILABLE, or nothing.
    function answer(uint256 q, uint256 mode) external {
        uint256 qid =
            _pick(q, IRecomputeOracle.QuestionStatus.Assigned, IRecomputeOracle.QuestionStatus.Assigned);
        if (qid == 0) return;
        IRecomputeOracle.Question memory question = oracle.question(qid);
        if (question.status != IRecomputeOracle.QuestionStatus.Assigned || isHonest[question.oracle]) return;
        mode %= 4;
        if (mode == 3) return; // silent
        bytes32[] memory outputs = _outputs(qid, mode); // before the prank: it calls the oracle
        vm.prank(question.oracle);
        try oracle.answer(qid, outputs) {
            ++reach[_answerKey(mode)];
        } catch {}
    }

    /// @notice Any adversarial account challenges any answer (true ones too).
    function challenge(uint256 q, uint256 who) external {
        uint256 qid =
            _pick(q, IRecomputeOracle.QuestionStatus.Answered, IRecomputeOracle.QuestionStatus.Answered);
        if (qid == 0) return;
        _challenge(qid, _adversary(who));
    }

    /// @notice The honest watcher challenges an answer that is not the truth.
    function watch(uint256 q) external {
        uint256 qid =
            _pick(q, IRecomputeOracle.QuestionStatus.Answered, IRecomputeOracle.QuestionStatus.Answered);
        if (qid == 0) return;
        IRecomputeOracle.Question memory question = oracle.question(qid);
        if (question.status != IRecomputeOracle.QuestionStatus.Answered) return;
        if (question.outputsHash == trueHash[qid] || block.timestamp > question.deadline) return;
        _challenge(qid, watcher);
    }

    /// @notice An adversarial member of the current round commits the truth, a lie or UNAVAILABLE.
    function commit(uint256 q, uint256 member, uint256 mode) external {
        uint256 qid = _pick(q, IRecomputeOracle.QuestionStatus.Voting, IRecomputeOracle.QuestionStatus.Voting);
        if (qid == 0) return;
        IRecomputeOracle.Question memory question = oracle.question(qid);
        if (question.status != IRecomputeOracle.QuestionStatus.Voting) return;
        address m = OracleSetup.currentRound(oracle, qid)[member % 3];
        if (isHonest[m] || _committed[qid][m]) return;
        _commitAdversary(qid, question.round, m, mode % 3);
    }

    /// @notice An adversarial member reveals its vote (when it chooses to).
    function reveal(uint256 q, uint256 member) external {
        uint256 qid = _pick(q, IRecomputeOracle.QuestionStatus.Voting, IRecomputeOracle.QuestionStatus.Voting);
        if (qid == 0) return;
        if (oracle.question(qid).status != IRecomputeOracle.QuestionStatus.Voting) return;
        address m = OracleSetup.currentRound(oracle, qid)[member % 3];
        if (isHonest[m] || !_committed[qid][m] || _revealed[qid][m]) return;
        _revealAdversary(qid, m);
    }

    function reassign(uint256 q) external {
        uint256 qid = _question(q);
        if (qid != 0) _reassign(qid);
    }

    function settle(uint256 q) external {
        uint256 qid = _question(q);
        if (qid != 0) _settle(qid);
    }

    function payFee(uint256 q) external {
        uint256 qid = _pick(q, IRecomputeOracle.QuestionStatus.Final, IRecomputeOracle.QuestionStatus.Final);
        if (qid == 0) return;
        uint256 fee = oracle.fee();
        vm.deal(watcher, watcher.balance + fee);
        vm.prank(watcher);
        try oracle.payFee{value: fee}(qid) {
            ++reach["payFee"];
        } catch {}
    }

    function withdraw(uint256 who) external {
        vm.prank(_actor(who));
        try oracle.withdraw() {
            ++reach["withdraw"];
        } catch {}
    }

    // ---- time ----------------------------------------------------------------------------------

    /// @notice Time passes with a keeper making every due call at the first second allowed; at each
    ///         step the adversary plays `policy` (see `_adversaryAct`).
    function warp(uint256 dt, uint256 policy) external {
        _advance(_bound(dt, 1, 2 hours), true, policy);
    }

    /// @notice Time passes with nobody making due calls (the honest oracles still do their part).
    function lateWarp(uint256 dt, uint256 policy) external {
        _advance(_bound(dt, 1, 3 hours), false, policy);
    }

    // ---- views for the test --------------------------------------------------------------------

    function questionIds() external view returns (uint256[] memory) {
        return _questionIds;
    }

    function honestOracles() external view returns (address[] memory) {
        return _honest;
    }

    function actors() external view returns (address[] memory) {
        return _actors;
    }

    // ---- internals -----------------------------------------------------------------------------

    function _advance(uint256 dt, bool keeper, uint256 policy) internal {
        uint256 target = block.timestamp + dt;
        for (uint256 k; k < MAX_STEPS; ++k) {
            _adversaryAct(uint256(keccak256(abi.encode(policy, k))));
            _honestAct();
            if (keeper) _keeper();
            else _markLate();
            _honestAct(); // the keeper's draws may have assigned or seated honest oracles
            if (block.timestamp >= target) break;
            vm.warp(_nextEvent(target, keeper));
            vm.roll(block.number + 2); // any randomness requested before is readable
            ++reach["step"];
        }
    }

    /// @dev The adversary online. What it does with a question is fixed by the question's persona
    ///      (drawn at `ask`): its answering oracle answers the truth, a lie or UNAVAILABLE, or stays
    ///      silent (per attempt); it challenges one answer in three (any answer), the watcher half the
    ///      wrong ones; its members commit the truth, a lie or UNAVAILABLE (all alike in half the
    ///      rounds), or nothing, and one in four never reveals. When it acts is left to the bits of
    ///      `policy`: at this step or a later one (the deadline's, or too late).
    function _adversaryAct(uint256 policy) internal {
        for (uint256 i; i < _questionIds.length; ++i) {
            uint256 qid = _questionIds[i];
            uint256 r = uint256(keccak256(abi.encode(policy, qid)));
            if (r % 2 == 0) continue; // not now
            uint256 persona = _persona[qid];
            IRecomputeOracle.Question memory q = oracle.question(qid);
            if (q.status == IRecomputeOracle.QuestionStatus.Assigned) {
                uint256 mode = uint256(keccak256(abi.encode(persona, "answer", q.attempts))) % 4;
                if (isHonest[q.oracle] || mode == 3) continue;
                bytes32[] memory outputs = _outputs(qid, mode);
                vm.prank(q.oracle);
                try oracle.answer(qid, outputs) {
                    ++reach[_answerKey(mode)];
                } catch {}
            } else if (q.status == IRecomputeOracle.QuestionStatus.Answered) {
                if (q.outputsHash != trueHash[qid] && (persona >> 8) % 2 == 0) _challenge(qid, watcher);
                else if ((persona >> 16) % 3 == 0) _challenge(qid, _adversary(persona >> 24));
            } else if (q.status == IRecomputeOracle.QuestionStatus.Voting) {
                uint256 round = uint256(keccak256(abi.encode(persona, "round", q.round)));
                address[] memory m = OracleSetup.currentRound(oracle, qid);
                for (uint256 j; j < m.length; ++j) {
                    if (isHonest[m[j]] || (r >> (8 + j)) % 2 == 0) continue;
                    uint256 rm = uint256(keccak256(abi.encode(persona, m[j])));
                    uint256 mode = round % 2 == 0 ? (round >> 8) % 3 : rm % 4;
                    if (!_committed[qid][m[j]]) {
                        if (mode != 3) _commitAdversary(qid, q.round, m[j], mode);
                    } else if (!_revealed[qid][m[j]] && (rm >> 8) % 4 != 3) {
                        _revealAdversary(qid, m[j]);
                    }
                }
            }
        }
    }

    /// @dev The honest oracles answer what they are assigned, commit when seated, reveal once allowed.
    function _honestAct() internal {
        for (uint256 i; i < _questionIds.length; ++i) {
            uint256 qid = _questionIds[i];
            IRecomputeOracle.Question memory q = oracle.question(qid);
            if (q.status == IRecomputeOracle.QuestionStatus.Assigned) {
                if (!isHonest[q.oracle] || block.timestamp > q.deadline) continue;
                bytes32[] memory outputs = _trueOutputs(qid);
                vm.prank(q.oracle);
                try oracle.answer(qid, outputs) {
                    ++reach["answer: honest"];
                } catch (bytes memory err) {
                    _honestFailed(err);
                }
            } else if (q.status == IRecomputeOracle.QuestionStatus.Voting) {
                address[] memory m = OracleSetup.currentRound(oracle, qid);
                for (uint256 j; j < m.length; ++j) {
                    if (!isHonest[m[j]] || _committed[qid][m[j]] || block.timestamp > q.commitDeadline) {
                        continue;
                    }
                    vm.prank(m[j]);
                    try oracle.commitVote(
                        qid, OracleSetup.commitment(qid, m[j], trueHash[qid], _salt(qid, m[j]))
                    ) {
                        _committed[qid][m[j]] = true;
                        _vote[qid][m[j]] = trueHash[qid];
                        ++_commits[qid][q.round];
                    } catch (bytes memory err) {
                        _honestFailed(err);
                    }
                }
                bool open = block.timestamp > q.commitDeadline || _commits[qid][q.round] == m.length;
                if (!open || block.timestamp > q.deadline) continue;
                for (uint256 j; j < m.length; ++j) {
                    if (!isHonest[m[j]] || !_committed[qid][m[j]] || _revealed[qid][m[j]]) continue;
                    vm.prank(m[j]);
                    try oracle.revealVote(qid, trueHash[qid], _salt(qid, m[j])) {
                        _revealed[qid][m[j]] = true;
                        ++reach["reveal: honest"];
                    } catch (bytes memory err) {
                        _honestFailed(err);
                    }
                }
            }
        }
    }

    /// @dev Every call due now: a draw whose randomness is readable (once per request, and at and
    ///      after its deadline), a reassignment or settlement after its deadline.
    function _keeper() internal {
        for (uint256 i; i < _questionIds.length; ++i) {
            uint256 qid = _questionIds[i];
            IRecomputeOracle.Question memory q = oracle.question(qid);
            IRecomputeOracle.QuestionStatus s = q.status;
            if (
                s == IRecomputeOracle.QuestionStatus.Drawing
                    || s == IRecomputeOracle.QuestionStatus.CommitteeDrawing
            ) {
                if (!oracle.drawReady(qid)) continue;
                if (_triedRequest[qid] == q.requestId && block.timestamp < q.deadline) continue;
                _draw(qid);
                // A draw that waits tries its own new request again only at the deadline.
                _triedRequest[qid] = oracle.question(qid).requestId;
            } else if (s == IRecomputeOracle.QuestionStatus.Assigned) {
                if (block.timestamp > q.deadline) _reassign(qid);
            } else if (
                s == IRecomputeOracle.QuestionStatus.Answered || s == IRecomputeOracle.QuestionStatus.Voting
            ) {
                if (block.timestamp > q.deadline) _settle(qid);
            }
        }
    }

    /// @dev Without a keeper: a question whose due call (at or after a deadline) is not made now is
    ///      exempt from the time bound.
    function _markLate() internal {
        for (uint256 i; i < _questionIds.length; ++i) {
            uint256 qid = _questionIds[i];
            IRecomputeOracle.Question memory q = oracle.question(qid);
            IRecomputeOracle.QuestionStatus s = q.status;
            if (s == IRecomputeOracle.QuestionStatus.Final || s == IRecomputeOracle.QuestionStatus.Abandoned) continue;
            bool drawing = s == IRecomputeOracle.QuestionStatus.Drawing
                || s == IRecomputeOracle.QuestionStatus.CommitteeDrawing;
            if (drawing ? block.timestamp >= q.deadline : block.timestamp > q.deadline) {
                if (!exempt[qid]) ++reach["exempt"];
                exempt[qid] = true;
            }
        }
    }

    /// @dev The next second something is due (a deadline, the second after it, the reveal phase's
    ///      start, with a keeper a draw not tried yet), at most `target`.
    function _nextEvent(uint256 target, bool keeper) internal view returns (uint256 next) {
        next = target;
        uint256 t = block.timestamp;
        for (uint256 i; i < _questionIds.length; ++i) {
            uint256 qid = _questionIds[i];
            IRecomputeOracle.Question memory q = oracle.question(qid);
            IRecomputeOracle.QuestionStatus s = q.status;
            if (s == IRecomputeOracle.QuestionStatus.Final || s == IRecomputeOracle.QuestionStatus.Abandoned) continue;
            if (
                (s == IRecomputeOracle.QuestionStatus.Drawing
                        || s == IRecomputeOracle.QuestionStatus.CommitteeDrawing) && keeper
                    && _triedRequest[qid] != q.requestId
            ) next = _min(next, t + 1);
            if (q.deadline > t) next = _min(next, q.deadline);
            if (uint256(q.deadline) + 1 > t) next = _min(next, uint256(q.deadline) + 1);
            if (s == IRecomputeOracle.QuestionStatus.Voting && uint256(q.commitDeadline) + 1 > t) {
                next = _min(next, uint256(q.commitDeadline) + 1);
            }
        }
    }

    function _draw(uint256 qid) internal {
        IRecomputeOracle.Question memory before = oracle.question(qid);
        try oracle.draw(qid) {}
        catch {
            return;
        }
        IRecomputeOracle.Question memory q = oracle.question(qid);
        if (q.status == IRecomputeOracle.QuestionStatus.Assigned) ++reach["assigned"];
        if (q.status == IRecomputeOracle.QuestionStatus.Abandoned) ++reach["abandoned: draw"];
        if (q.status == before.status && q.requestId != before.requestId) ++reach["draw: waits"];
        if (q.round > before.round) {
            ++reach[q.round == 1 ? bytes32("seated: round 1") : bytes32("seated: round 2")];
            address[] memory m = OracleSetup.currentRound(oracle, qid);
            uint256 adversarial;
            for (uint256 j; j < m.length; ++j) {
                if (!isHonest[m[j]]) ++adversarial;
            }
            if (adversarial * 2 > m.length) {
                adversarialMajority[qid] = true;
                ++reach["seated: adversarial majority"];
            }
        }
    }

    function _reassign(uint256 qid) internal {
        uint256[] memory before = _honestBonds();
        try oracle.reassign(qid) {
            ++reach["reassign"];
            if (oracle.question(qid).status == IRecomputeOracle.QuestionStatus.Abandoned) {
                ++reach["abandoned: attempts"];
            }
        } catch {
            return;
        }
        _accountLosses(qid, before);
    }

    function _settle(uint256 qid) internal {
        uint256[] memory before = _honestBonds();
        IRecomputeOracle.Question memory q = oracle.question(qid);
        try oracle.settle(qid) {}
        catch {
            return;
        }
        IRecomputeOracle.Question memory after_ = oracle.question(qid);
        if (after_.status == IRecomputeOracle.QuestionStatus.Final) {
            if (q.status == IRecomputeOracle.QuestionStatus.Answered) ++reach["final: unchallenged"];
            else if (after_.outputsHash == q.outputsHash) ++reach["final: upheld"];
            else ++reach["final: overturned"];
            if (after_.outputsHash != trueHash[qid]) ++reach["final: not the truth"];
        } else if (after_.status == IRecomputeOracle.QuestionStatus.Abandoned) {
            ++reach["abandoned: rounds"];
        } else {
            ++reach["round failed"];
        }
        _accountLosses(qid, before);
    }

    function _commitAdversary(uint256 qid, uint8 round, address m, uint256 mode) internal {
        bytes32 vote = OracleSetup.hashOf(_outputs(qid, mode % 3));
        bytes32 c = OracleSetup.commitment(qid, m, vote, _salt(qid, m));
        vm.prank(m);
        try oracle.commitVote(qid, c) {
            _committed[qid][m] = true;
            _vote[qid][m] = vote;
            ++_commits[qid][round];
            ++reach["commit: adversary"];
        } catch {}
    }

    function _revealAdversary(uint256 qid, address m) internal {
        vm.prank(m);
        try oracle.revealVote(qid, _vote[qid][m], _salt(qid, m)) {
            _revealed[qid][m] = true;
            ++reach["reveal: adversary"];
        } catch {}
    }

    function _challenge(uint256 qid, address who) internal {
        uint256 bond = oracle.challengeBond();
        vm.deal(who, who.balance + bond);
        vm.prank(who);
        try oracle.challenge{value: bond}(qid) {
            ++reach[who == watcher ? bytes32("challenge: watcher") : bytes32("challenge: adversary")];
        } catch {}
    }

    function _honestBonds() internal view returns (uint256[] memory bonds) {
        bonds = new uint256[](_honest.length);
        for (uint256 i; i < _honest.length; ++i) {
            bonds[i] = oracle.bondOf(_honest[i]);
        }
    }

    /// @dev An honest oracle's bond went down in a call on `qid`: excused if an adversarial majority
    ///      sat on the question, else a violation.
    function _accountLosses(uint256 qid, uint256[] memory before) internal {
        for (uint256 i; i < _honest.length; ++i) {
            uint256 bond = oracle.bondOf(_honest[i]);
            if (bond >= before[i]) continue;
            if (adversarialMajority[qid]) {
                excusedLoss[_honest[i]] += before[i] - bond;
                ++reach["honest loss: excused"];
            } else {
                ++unexcusedLosses;
            }
        }
    }

    function _honestFailed(bytes memory err) internal {
        ++honestReverts;
        lastHonestRevert = err;
    }

    function _deposit(address who, uint256 amount) internal {
        vm.deal(who, who.balance + amount);
        vm.prank(who);
        oracle.register{value: amount}();
    }

    /// @dev The true outputs of a question are a function of what it asks.
    function _trueOutputs(uint256 qid) internal view returns (bytes32[] memory outputs) {
        IRecomputeOracle.Question memory q = oracle.question(qid);
        outputs = new bytes32[](1);
        outputs[0] = keccak256(abi.encode("true", q.programHash, q.node, q.inputsHash));
    }

    /// @dev mode 0: the truth; 1: a lie; 2: UNAVAILABLE.
    function _outputs(uint256 qid, uint256 mode) internal view returns (bytes32[] memory outputs) {
        if (mode == 0) return _trueOutputs(qid);
        outputs = new bytes32[](1);
        outputs[0] = mode == 1 ? keccak256(abi.encode("lie", qid)) : ORACLE_UNAVAILABLE;
    }

    function _answerKey(uint256 mode) internal pure returns (bytes32) {
        if (mode == 0) return "answer: true";
        return mode == 1 ? bytes32("answer: lie") : bytes32("answer: unavailable");
    }

    function _salt(uint256 qid, address member) internal pure returns (bytes32) {
        return keccak256(abi.encode("salt", qid, member));
    }

    function _actor(uint256 seed) internal view returns (address) {
        return _actors[seed % _actors.length];
    }

    function _adversary(uint256 seed) internal view returns (address) {
        return _adversaries[seed % _adversaries.length];
    }

    function _question(uint256 seed) internal view returns (uint256) {
        return _questionIds.length == 0 ? 0 : _questionIds[seed % _questionIds.length];
    }

    /// @dev A question in status `a` or `b`, searched from the one `seed` names; else any question.
    function _pick(uint256 seed, IRecomputeOracle.QuestionStatus a, IRecomputeOracle.QuestionStatus b)
        internal
        view
        returns (uint256)
    {
        uint256 n = _questionIds.length;
        for (uint256 i; i < n; ++i) {
            uint256 qid = _questionIds[(seed % n + i) % n];
            IRecomputeOracle.QuestionStatus s = oracle.question(qid).status;
            if (s == a || s == b) return qid;
        }
        return _question(seed);
    }

    function _min(uint256 a, uint256 b) internal pure returns (uint256) {
        return a < b ? a : b;
    }
}
