// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {IDisputeGame} from "../../src/interfaces/IDisputeGame.sol";
import {IRecomputeOracle} from "../../src/interfaces/IRecomputeOracle.sol";
import {ITaskMarket} from "../../src/interfaces/ITaskMarket.sol";
import {CheckpointLists} from "../utils/CheckpointLists.sol";
import {Reference} from "../utils/Reference.sol";
import {ProtocolModel} from "./ProtocolModel.sol";

/// @title MarketHandler
/// @notice Drives the task market, its dispute games and the recompute oracle through random but
///         meaningful sequences: tasks of random shapes, honest trainers and cheaters joining,
///         committing and revealing real checkpoint lists (ProtocolModel), a copier, a ring of squatters
///         and an honest outside challenger, disputes between any two live groups, games played move by
///         move down to the proofs and the oracle, timeouts, settlements, finalizations, claims and
///         withdrawals, with the clock advanced by `warp`.
/// @dev Actors and what they assume (PROPERTIES.md):
///      - Honest trainers commit the true list with their join and reveal it as soon as reveals open,
///        and answer every turn of their games at once: `warp` first lets them reveal and move (they
///        are always online), so their reveal windows and clocks never run out.
///      - Cheaters commit a list with some lying checkpoints (at once, later with `commit`, or never),
///        reveal it at the first chance (one in eight never does, and forfeits), lie at random points of the
///        bisection, pick a phase-2 strategy per game (ProtocolModel), stop when they cannot prove, and
///        may stop at any move for good.
///      - The copier never trains: on a slot it commits junk or nothing; once an honest result is
///        revealed it tries to reveal a copy of it (on its slot, or as an outside entrant that
///        commits to the copy in the block of the honest reveal or later). Every copy must be refused.
///      - The squatter ring takes every slot of some tasks at posting, all committed to one fabricated
///        list, and reveals it; it plays its games like a cheater.
///      - The outside challenger is honest: it `enter`s a task whose true result nobody revealed yet
///        (a squatted task above all), reveals the true list, opens its games itself and plays them
///        like an honest trainer.
///      - Oracles answer truthfully or stay silent; committees vote truthfully or stay silent. Silent
///        oracles' questions are reassigned by `oracleStep` at random times, or by a keeper as soon
///        as a window ends (on some `warp`s): the bound on a game's length must hold either way.
///      Every move the handler scripts must be accepted: a revert is counted in `honestMoveFailures`
///      or `scriptedMoveFailures`, which the test asserts to be zero. Transactions pay 0.5 gwei, half
///      the cap of the tasks that have one, so repayments are metered in wei.
contract MarketHandler is Test {
    using CheckpointLists for CheckpointLists.List;

    uint256 internal constant MAX_TASKS = 32;
    /// @dev Actions pick among the newest tasks and games, where the action is.
    uint256 internal constant RECENT_TASKS = 4;
    uint256 internal constant RECENT_GAMES = 12;
    uint256 internal constant MAX_WARP = 12 hours;
    uint256 internal constant NEVER = type(uint256).max;
    uint256 internal constant GAS_PRICE = 0.5 gwei;
    /// @dev The storage slot of `TaskMarket._tasks` and the word of `Task.pools` in a Task
    ///      (`forge inspect TaskMarket storageLayout`).
    uint256 internal constant TASKS_SLOT = 1;
    uint256 internal constant POOLS_WORD = 5;

    /// @notice What the handler remembers of a game.
    struct GameGhost {
        uint256 taskId;
        uint256 openedAt;
        uint256 timeBound;
        uint256 roundBound;
        uint256[2] moves; // successful moves per side, proofs included
        uint256[2] stopAfter; // a cheater makes no move after this many (NEVER: it plays on)
        uint8[2] strategy; // phase-2 trace strategy of a lying side
        bool[2] postLie; // the side's post-state of the isolated step is its lie
        uint256 lieSeed; // which bisection points a cheater lies about
        uint256 rounds; // bisection rounds completed
        bytes32[] pending; // the defender's last nodes or roots, passed back by the challenger
        bytes pendingRecord; // the defender's NODE record, passed back by the challenger
    }

    /// @notice An oracle question one of the games asked.
    struct QuestionGhost {
        bytes32 programHash;
        uint256 node;
        bytes32 input;
    }

    /// @notice An entrant's commitment: when, and to which roots (`committed == false`: none).
    struct CommitGhost {
        bool committed;
        bool revealed;
        uint64 at;
        uint64 blockNumber;
        bool junk; // the copier's: nothing it can reveal
    }

    ITaskMarket public immutable market;
    IDisputeGame public immutable game;
    IRecomputeOracle public immutable oracle;

    address[] internal _trainers; // every actor that bonds: honest, cheaters, copier, challenger, ring
    address[] internal _cheaters;
    address[] internal _ring;
    address[] internal _clients;
    address[] internal _oracles;
    address internal immutable _anyone;
    address internal immutable _copier; // never trains; tries to reveal copies
    address internal immutable _challenger; // honest, enters from outside
    mapping(address => bool) public isHonest;
    mapping(address => bytes32) internal _saltOf;

    uint256[] internal _taskIds;
    mapping(uint256 taskId => ProtocolModel.Run) internal _runs;
    mapping(uint256 taskId => mapping(address trainer => ProtocolModel.Claims)) internal _claims;
    mapping(uint256 taskId => mapping(address trainer => bool)) internal _joined;
    mapping(uint256 taskId => mapping(address trainer => CommitGhost)) internal _commits;
    mapping(uint256 taskId => mapping(bytes32 pair => bool)) internal _played;
    mapping(uint256 taskId => bool) public hasHonestSubmitter;
    mapping(uint256 taskId => bool) public squatted;
    /// @dev A cheater that will never reveal what it committed (it forfeits its bond to the client).
    mapping(uint256 taskId => mapping(address trainer => bool)) internal _silent;
    mapping(address trainer => uint256[]) internal _tasksOf;

    uint256[] internal _gameIds;
    mapping(uint256 gameId => GameGhost) internal _games;
    uint256[] internal _questionIds;
    mapping(uint256 questionId => QuestionGhost) internal _questions;

    /// @notice Ether each actor sent to the market, and took out of it.
    mapping(address => uint256) public deposited;
    mapping(address => uint256) public withdrawn;

    uint256 public honestMoveFailures;
    uint256 public scriptedMoveFailures;
    bytes public lastFailure;
    uint256 public clientViolations;
    /// @notice Finalizations that credited the client other than reward (unless one group is live) +
    ///         forfeited bonds + the division's remainder.
    uint256 public clientCreditMismatches;
    /// @notice Claims that credited other than the bond (+ the share for a winner).
    uint256 public claimMismatches;
    /// @notice Copies of an honest result the market accepted (a reveal of them succeeded).
    uint256 public copiesAccepted;
    mapping(bytes32 => uint256) public calls;
    /// @notice Coverage: moves made per stage, games settled per outcome.
    mapping(IDisputeGame.Stage => uint256) public movesIn;
    mapping(IDisputeGame.Outcome => uint256) public settled;

    /// @dev Every action's transactions pay `GAS_PRICE` (metered by the game and `openDispute`). The
    ///      price is reset after it: the runner settles each call's gas at the price it ends with,
    ///      which must be the one it started with (zero) or ether would be made from nothing.
    modifier priced() {
        vm.txGasPrice(GAS_PRICE);
        _;
        vm.txGasPrice(0);
    }

    constructor(ITaskMarket market_, IDisputeGame game_, IRecomputeOracle oracle_) {
        market = market_;
        game = game_;
        oracle = oracle_;
        _anyone = makeAddr("anyone");
        _trainers.push(makeAddr("honest0"));
        _trainers.push(makeAddr("honest1"));
        for (uint256 i; i < 3; ++i) {
            _cheaters.push(makeAddr(string.concat("cheater", vm.toString(i))));
            _trainers.push(_cheaters[i]);
        }
        _copier = makeAddr("copier");
        _trainers.push(_copier);
        _challenger = makeAddr("challenger");
        _trainers.push(_challenger);
        for (uint256 i; i < 4; ++i) {
            _ring.push(makeAddr(string.concat("squatter", vm.toString(i))));
            _trainers.push(_ring[i]);
        }
        for (uint256 i; i < _trainers.length; ++i) {
            _saltOf[_trainers[i]] = keccak256(abi.encode("trainer", i));
        }
        isHonest[_trainers[0]] = true;
        isHonest[_trainers[1]] = true;
        isHonest[_challenger] = true;
        _clients.push(makeAddr("client0"));
        _clients.push(makeAddr("client1"));
        for (uint256 i; i < 4; ++i) {
            address o = makeAddr(string.concat("oracle", vm.toString(i)));
            _oracles.push(o);
            _register(o);
        }
    }

    // ---- tasks -----------------------------------------------------------------------------------

    /// @notice A client posts a task of a random shape. One time in four the squatter ring takes every
    ///         slot at once; otherwise trainers waiting for work (honest ones, cheaters, the copier) join.
    function postTask(uint256 clientSeed, uint256 shapeSeed, uint256 reward, uint256 deadlineSeed)
        external
        priced
    {
        if (_taskIds.length >= MAX_TASKS || _openTasks() >= RECENT_TASKS) return;
        ++calls["postTask"];
        ProtocolModel.Run memory run = _shape(shapeSeed, _taskIds.length);
        ITaskMarket.TaskSpec memory spec = _spec(run, shapeSeed, deadlineSeed);
        spec.bond = market.minBond(spec) + ((shapeSeed >> 40) % 2) * 1e15;
        reward = _bound(reward, 1, 5 ether);
        address client = _clients[clientSeed % _clients.length];
        vm.deal(client, client.balance + reward);
        vm.prank(client);
        uint256 taskId = market.postTask{value: reward}(spec);
        deposited[client] += reward;
        _runs[taskId] = run;
        _taskIds.push(taskId);
        uint256 waiting = uint256(keccak256(abi.encode(clientSeed, "waiting")));
        if (waiting % 5 == 0) {
            _squat(taskId, spec.slots, waiting);
            return;
        }
        for (uint256 i; i < 6; ++i) {
            if ((waiting >> i) & 1 == 1) {
                _join(taskId, _trainers[i], waiting >> (8 + i * 32), waiting >> (i + 100));
            }
        }
    }

    /// @dev The ring joins every slot, each member committed to the same fabricated list.
    function _squat(uint256 taskId, uint32 slots, uint256 seed) internal {
        ++calls["squat"];
        squatted[taskId] = true;
        ProtocolModel.Run memory run = _runs[taskId];
        uint256 k = run.steps / run.interval;
        ProtocolModel.Claims memory lie = ProtocolModel.Claims({
            salt: keccak256(abi.encode("ring", taskId)),
            ckptMask: ((seed % ((uint256(1) << k) - 1)) + 1) << 1,
            bugMask: ((seed >> 128) % ((uint256(1) << run.nodes) - 1)) + 1
        });
        uint256 bond = market.specOf(taskId).bond;
        for (uint256 i; i < slots; ++i) {
            address m = _ring[i];
            vm.deal(m, m.balance + bond);
            vm.prank(m);
            market.join{value: bond}(taskId);
            deposited[m] += bond;
            _joined[taskId][m] = true;
            _claims[taskId][m] = lie;
            _commitTo(taskId, m);
        }
    }

    /// @notice The trainers of `trainerMask` (honest ones, cheaters, the copier) join a task. An honest
    ///         one commits the true list at once; a cheater picks its lies and commits them at once,
    ///         later (`commit`) or never; the copier commits junk or nothing.
    function join(uint256 trainerMask, uint256 taskSeed, uint256 extra, uint256 maskSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        trainerMask = uint256(keccak256(abi.encode(trainerMask)));
        for (uint256 i; i < 6; ++i) {
            if ((trainerMask >> i) & 1 == 0) continue;
            _join(taskId, _trainers[i], extra >> (i * 32), uint256(keccak256(abi.encode(maskSeed, i))));
        }
    }

    function _join(uint256 taskId, address trainer, uint256 extra, uint256 maskSeed) internal {
        ITaskMarket.TaskSpec memory spec = market.specOf(taskId);
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || block.timestamp > spec.joinDeadline) return;
        if (t.joined >= spec.slots || _joined[taskId][trainer]) return;
        ++calls["join"];
        uint256 value = spec.bond + (extra % 3 == 0 ? (extra >> 8) % 1e15 : 0);
        vm.deal(trainer, trainer.balance + value);
        vm.prank(trainer);
        market.join{value: value}(taskId);
        deposited[trainer] += value;
        _joined[taskId][trainer] = true;
        _tasksOf[trainer].push(taskId);
        if (isHonest[trainer]) {
            _commitTo(taskId, trainer);
            return;
        }
        if (trainer == _copier) {
            // It has nothing to commit to before the deadline: junk, or nothing at all.
            if ((maskSeed >> 120) % 2 == 0) _commitJunk(taskId);
            return;
        }
        ProtocolModel.Run memory run = _runs[taskId];
        uint256 k = run.steps / run.interval;
        _claims[taskId][trainer] = ProtocolModel.Claims({
            salt: _saltOf[trainer],
            ckptMask: ((maskSeed % ((uint256(1) << k) - 1)) + 1) << 1,
            // Half the liars get node 0 wrong: two of them then disagree with the truth on the same
            // node, which the oracle answers with BothLose.
            bugMask: (((maskSeed >> 128) % ((uint256(1) << run.nodes) - 1)) + 1) | ((maskSeed >> 127) & 1)
        });
        _silent[taskId][trainer] = (maskSeed >> 124) % 8 == 0; // never reveals: forfeits its bond
        if ((maskSeed >> 120) % 8 != 0) _commitTo(taskId, trainer);
    }

    /// @notice A cheater that joined and has not committed commits its lying list (before the deadline).
    function commit(uint256 trainerSeed, uint256 taskSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        address trainer = _cheaters[trainerSeed % _cheaters.length];
        if (!_joined[taskId][trainer] || _commits[taskId][trainer].committed) return;
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return;
        if (block.timestamp > market.specOf(taskId).submitDeadline) return;
        ++calls["commit"];
        _commitTo(taskId, trainer);
    }

    /// @notice A cheater or squatter reveals its committed list, if its reveal window is open now (most
    ///         reveal in `warp`, at the first chance; a silent cheater here, late, or never).
    function reveal(uint256 trainerSeed, uint256 taskSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        uint256 i = trainerSeed % (_cheaters.length + _ring.length);
        address trainer = i < _cheaters.length ? _cheaters[i] : _ring[i - _cheaters.length];
        if (!_canRevealNow(taskId, trainer)) return;
        ++calls["reveal"];
        _reveal(taskId, trainer);
    }

    /// @notice The copier tries to pass off an honest revealed result as its own: on its slot it reveals
    ///         the true list with the commitment it has (junk) or without one; off a slot it enters,
    ///         committed to the true list in this block (the honest reveal may be in it), and reveals it
    ///         in the next. Every attempt must revert; the bond it entered with is forfeited.
    function copy(uint256 taskSeed, uint256 seed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || !_trueGroupExists(taskId, t)) return;
        ITaskMarket.TaskSpec memory spec = market.specOf(taskId);
        bytes32[] memory copied = trueList(taskId).stateRoots;
        ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, _copier);
        if (!tr.joined) {
            if (
                block.timestamp > uint256(spec.disputeDeadline) - market.MIN_DISPUTE_WINDOW() || seed % 2 == 0
            ) {
                return;
            }
            ++calls["copy.enter"];
            vm.deal(_copier, _copier.balance + spec.bond);
            bytes32 c = _commitment(taskId, _copier, copied);
            vm.prank(_copier);
            market.enter{value: spec.bond}(taskId, c);
            deposited[_copier] += spec.bond;
            _joined[taskId][_copier] = true;
            _commits[taskId][_copier] = CommitGhost({
                committed: true,
                revealed: false,
                at: uint64(block.timestamp),
                blockNumber: uint64(block.number),
                junk: false
            });
            vm.roll(block.number + 1);
        } else if (tr.submitted) {
            return;
        }
        ++calls["copy.reveal"];
        vm.prank(_copier);
        try market.submit(taskId, copied, _saltOf[_copier]) {
            ++copiesAccepted;
            _commits[taskId][_copier].revealed = true;
        } catch {}
    }

    /// @notice The honest outside challenger enters a task whose true result nobody revealed yet (a
    ///         squatted task first), committed to the true list; it reveals as soon as it may (here if
    ///         reveals are open, else in `warp`) and opens its games itself.
    function challenge(uint256 taskSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _squattedTask(taskSeed);
        ITaskMarket.TaskView memory t = market.task(taskId);
        ITaskMarket.TaskSpec memory spec = market.specOf(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || _joined[taskId][_challenger]) return;
        if (block.timestamp > uint256(spec.disputeDeadline) - market.MIN_DISPUTE_WINDOW()) return;
        // A result already revealed cannot be joined (it would be a copy), and needs no challenger.
        if (_trueGroupExists(taskId, t)) return;
        ++calls["challenge"];
        vm.deal(_challenger, _challenger.balance + spec.bond);
        bytes32 c = _commitment(taskId, _challenger, trueList(taskId).stateRoots); // before the prank
        vm.prank(_challenger);
        market.enter{value: spec.bond}(taskId, c);
        deposited[_challenger] += spec.bond;
        _joined[taskId][_challenger] = true;
        _tasksOf[_challenger].push(taskId);
        _commits[taskId][_challenger] = CommitGhost({
            committed: true,
            revealed: false,
            at: uint64(block.timestamp),
            blockNumber: uint64(block.number),
            junk: false
        });
        if (block.timestamp > spec.submitDeadline) {
            vm.roll(block.number + 1);
            _reveal(taskId, _challenger);
            _disputeAll(taskId, _challenger, uint256(keccak256(abi.encode(taskSeed, "games"))));
        }
    }

    /// @dev The honest entrant `h`, revealed and live, opens a game against every live revealed entrant
    ///      of another group it has not played (it is the opener, or one time in three a watcher: the
    ///      opener's gas is repaid when `h` wins), as the challenger or (a slot trainer, one time in
    ///      two) the defender.
    function _disputeAll(uint256 taskId, address h, uint256 playSeed) internal {
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return;
        if (block.timestamp > market.specOf(taskId).disputeDeadline) return;
        if (!_commits[taskId][h].revealed) return;
        address[] memory entrants = market.trainersOf(taskId);
        for (uint256 i; i < entrants.length; ++i) {
            uint256 seed = uint256(keccak256(abi.encode(playSeed, i)));
            address opener = (seed >> 8) % 3 == 0 ? _anyone : h; // or a watcher does
            if (h != _challenger && seed % 2 == 0) _open(taskId, h, entrants[i], opener, seed);
            else _open(taskId, entrants[i], h, opener, seed);
        }
    }

    /// @notice Anyone (or one of the two players) opens a game between two entrants of different
    ///         groups, neither eliminated, that have not played each other; or (one time in four) every
    ///         such game of the task at once.
    function openDispute(uint256 taskSeed, uint256 a, uint256 b, uint256 playSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return;
        if (block.timestamp > market.specOf(taskId).disputeDeadline) return;
        uint256 n = _trainers.length;
        if (playSeed % 4 != 0) {
            address d = _trainers[a % n];
            address c = _trainers[b % n];
            _open(taskId, d, c, _opener(d, c, playSeed), playSeed);
            return;
        }
        for (uint256 i; i < n; ++i) {
            for (uint256 j; j < n; ++j) {
                uint256 seed = uint256(keccak256(abi.encode(playSeed, i, j)));
                _open(taskId, _trainers[i], _trainers[j], _opener(_trainers[i], _trainers[j], seed), seed);
            }
        }
    }

    /// @dev Who opens a game: a watcher (`_anyone`), the defender or the challenger.
    function _opener(address defender, address challenger, uint256 seed) internal view returns (address) {
        uint256 pick = (seed >> 200) % 3;
        return pick == 0 ? _anyone : pick == 1 ? defender : challenger;
    }

    function _open(uint256 taskId, address defender, address challenger, address opener, uint256 playSeed)
        internal
    {
        ITaskMarket.TrainerView memory d = market.trainerOf(taskId, defender);
        ITaskMarket.TrainerView memory c = market.trainerOf(taskId, challenger);
        if (!d.submitted || !c.submitted || d.eliminated || c.eliminated || d.group == c.group) return;
        bytes32 pair = defender < challenger
            ? keccak256(abi.encode(defender, challenger))
            : keccak256(abi.encode(challenger, defender));
        if (_played[taskId][pair]) return;
        ++calls["openDispute"];
        if (opener != _anyone) ++calls["openDispute.byPlayer"];
        vm.prank(opener);
        uint256 gameId = market.openDispute(taskId, defender, challenger);
        _played[taskId][pair] = true;
        _gameIds.push(gameId);
        GameGhost storage gg = _games[gameId];
        gg.taskId = taskId;
        gg.openedAt = block.timestamp;
        IDisputeGame.Config memory cfg = game.configOf(gameId);
        gg.timeBound = game.timeBound(cfg);
        gg.roundBound = game.roundBound(cfg);
        gg.lieSeed = uint256(keccak256(abi.encode(playSeed, gameId)));
        for (uint256 s; s < 2; ++s) {
            uint256 seed = playSeed >> (s * 64);
            gg.stopAfter[s] = seed % 3 != 0 ? NEVER : (seed >> 8) % 24; // for a cheater
            uint8 strategy = uint8((seed >> 16) % 4); // the oracle's path twice as often
            gg.strategy[s] = strategy == ProtocolModel.STRATEGIES ? ProtocolModel.WRONG_OUTPUT : strategy;
        }
    }

    /// @notice Plays up to `count` moves of a game (one time in four: of every game), each side by
    ///         its script.
    function play(uint256 gameSeed, uint256 count) external priced {
        if (_gameIds.length == 0) return;
        ++calls["play"];
        count = _bound(count, 1, 24);
        if (gameSeed % 4 != 0) {
            _play(_recentGame(gameSeed >> 2), count);
            return;
        }
        for (uint256 i; i < _gameIds.length; ++i) {
            _play(_gameIds[i], count);
        }
    }

    function _play(uint256 gameId, uint256 count) internal {
        for (uint256 i; i < count; ++i) {
            if (!_step(gameId)) break;
        }
        // The oracles are online too: a question the game asked may move on at once.
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Oracle) {
            _oracleStep(v.questionId, uint256(keccak256(abi.encode(gameId, count, block.timestamp))));
        }
    }

    /// @notice Anyone ends a game (one time in two: every game) whose mover ran out of time.
    function timeout(uint256 gameSeed) external priced {
        _forGames(gameSeed, this.timeoutGame.selector);
    }

    /// @notice Anyone ends a game (one time in two: every game) whose oracle question is decided or
    ///         abandoned.
    function resolveOracle(uint256 gameSeed) external priced {
        _forGames(gameSeed, this.resolveOracleGame.selector);
    }

    /// @notice Anyone settles an ended game (one time in two: every ended game).
    function settleDispute(uint256 gameSeed) external priced {
        _forGames(gameSeed, this.settleDisputeGame.selector);
    }

    /// @dev Not a target of the fuzzer (see the test's selectors): `timeout` on one game, called by
    ///      the side that wins by it (metered: it is repaid) or, one time in two, by anyone.
    function timeoutGame(uint256 gameId) external {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Oracle || v.stage == IDisputeGame.Stage.Resolved) return;
        if (block.timestamp <= uint256(v.turnStartedAt) + v.clockLeft[uint8(v.toMove)]) return;
        ++calls["timeout"];
        vm.prank(block.timestamp % 2 == 0 ? v.players[1 - uint8(v.toMove)] : _anyone);
        game.timeout(gameId);
    }

    /// @dev Not a target of the fuzzer: `resolveOracle` on one game.
    function resolveOracleGame(uint256 gameId) external {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage != IDisputeGame.Stage.Oracle) return;
        (IRecomputeOracle.QuestionStatus status,) = oracle.result(v.questionId);
        if (
            status != IRecomputeOracle.QuestionStatus.Final
                && status != IRecomputeOracle.QuestionStatus.Abandoned
        ) {
            return;
        }
        ++calls["resolveOracle"];
        vm.prank(_anyone);
        game.resolveOracle(gameId);
    }

    /// @dev Not a target of the fuzzer: `settleDispute` on one game.
    function settleDisputeGame(uint256 gameId) external {
        if (market.disputeOf(gameId).settled || game.outcome(gameId) == IDisputeGame.Outcome.Pending) return;
        ++calls["settleDispute"];
        ++settled[game.outcome(gameId)];
        vm.prank(_anyone);
        market.settleDispute(gameId);
    }

    /// @dev Calls `selector` (one of the `*Game` functions) on one game, or on every game.
    function _forGames(uint256 gameSeed, bytes4 selector) internal {
        if (_gameIds.length == 0) return;
        if (gameSeed % 2 == 0) {
            _self(selector, _recentGame(gameSeed >> 1));
            return;
        }
        for (uint256 i; i < _gameIds.length; ++i) {
            _self(selector, _gameIds[i]);
        }
    }

    function _self(bytes4 selector, uint256 gameId) internal {
        (bool ok, bytes memory err) = address(this).call(abi.encodeWithSelector(selector, gameId));
        if (!ok) {
            assembly ("memory-safe") {
                // Bubble the revert up unchanged: a refused call is the contract's answer, not ours.
                revert(add(err, 0x20), mload(err))
            }
        }
    }

    /// @notice Anyone finalizes a task once the market allows it (after the dispute deadline, no game
    ///         running); checks the client's outcome and its credit.
    function finalize(uint256 taskSeed) external priced {
        if (_taskIds.length == 0) return;
        uint256 taskId = _recentTask(taskSeed);
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Open || t.activeGames != 0) return;
        if (block.timestamp <= market.specOf(taskId).disputeDeadline) return;
        uint256 before = market.creditOf(t.client);
        uint256 expected = _clientCredit(taskId, t);
        ++calls["finalize"];
        vm.prank(_anyone);
        market.finalize(taskId);
        _checkClient(taskId, t, before);
        if (market.creditOf(t.client) - before != expected) ++clientCreditMismatches;
    }

    /// @dev What finalize owes the client: the forfeited bonds of entrants that never revealed, the
    ///      reward unless exactly one group is live, else the remainder of its division.
    function _clientCredit(uint256 taskId, ITaskMarket.TaskView memory t) internal view returns (uint256) {
        uint256 owed = uint256(t.entrants - t.submitted) * market.specOf(taskId).bond;
        if (t.liveGroups != 1) return owed + t.reward;
        for (uint32 g; g < t.groupCount; ++g) {
            uint256 winners = market.groupOf(taskId, g).live;
            if (winners != 0) return owed + t.reward % winners;
        }
        revert("no live group");
    }

    /// @notice Anyone claims for every live revealed entrant of a finalized task (one time in two: of
    ///         every finalized task); each claim credits the bond, and the share if the group won.
    function claim(uint256 taskSeed) external priced {
        if (_taskIds.length == 0) return;
        if (taskSeed % 2 == 0) {
            _claimAll(_recentTask(taskSeed >> 1));
            return;
        }
        for (uint256 i; i < _taskIds.length; ++i) {
            _claimAll(_taskIds[i]);
        }
    }

    function _claimAll(uint256 taskId) internal {
        ITaskMarket.TaskView memory t = market.task(taskId);
        if (t.status != ITaskMarket.TaskStatus.Finalized) return;
        uint256 bond = market.specOf(taskId).bond;
        address[] memory entrants = market.trainersOf(taskId);
        for (uint256 i; i < entrants.length; ++i) {
            ITaskMarket.TrainerView memory tr = market.trainerOf(taskId, entrants[i]);
            if (!tr.submitted || tr.eliminated || tr.claimed) continue;
            ++calls["claim"];
            uint256 before = market.creditOf(entrants[i]);
            vm.prank(_anyone);
            market.claim(taskId, entrants[i]);
            uint256 owed = bond + (t.won && tr.group == t.winningGroup ? t.share : 0);
            if (market.creditOf(entrants[i]) - before != owed) ++claimMismatches;
        }
    }

    /// @notice An actor takes its credit out of the market.
    function withdraw(uint256 actorSeed) external priced {
        uint256 i = actorSeed % (_trainers.length + _clients.length + 1);
        address actor = i < _trainers.length
            ? _trainers[i]
            : i < _trainers.length + _clients.length ? _clients[i - _trainers.length] : _anyone;
        uint256 credit = market.creditOf(actor);
        if (credit == 0) return;
        ++calls["withdraw"];
        uint256 balance = actor.balance;
        vm.prank(actor);
        market.withdraw();
        withdrawn[actor] += actor.balance - balance;
    }

    // ---- the oracle ------------------------------------------------------------------------------

    /// @notice Moves one of the games' questions on: an answer (true) or silence, a reassignment, a
    ///         challenge by a cheater, committee votes (true) or silence, a settlement.
    function oracleStep(uint256 questionSeed, uint256 seed) external priced {
        if (_questionIds.length == 0) return;
        _oracleStep(_questionIds[questionSeed % _questionIds.length], seed);
    }

    function _oracleStep(uint256 qid, uint256 seed) internal {
        IRecomputeOracle.Question memory q = oracle.question(qid);
        if (q.status == IRecomputeOracle.QuestionStatus.Assigned) {
            if (block.timestamp > q.deadline) {
                ++calls["oracle.reassign"];
                vm.prank(_anyone);
                oracle.reassign(qid);
            } else if (seed % 4 != 0) {
                ++calls["oracle.answer"];
                vm.prank(q.oracle);
                oracle.answer(qid, _truth(qid));
            }
        } else if (q.status == IRecomputeOracle.QuestionStatus.Answered) {
            if (block.timestamp > q.deadline) {
                ++calls["oracle.settle"];
                vm.prank(_anyone);
                oracle.settle(qid);
            } else if (seed % 3 == 0) {
                address challenger = _cheaters[(seed >> 8) % _cheaters.length];
                uint256 bond = oracle.challengeBond();
                vm.deal(challenger, challenger.balance + bond);
                vm.prank(challenger);
                try oracle.challenge{value: bond}(qid) {
                    ++calls["oracle.challenge"];
                } catch {}
            }
        } else if (q.status == IRecomputeOracle.QuestionStatus.Final && !q.feePaid && seed % 5 == 0) {
            // Anyone may pay a fee; the market then pays none when it settles the game.
            uint256 fee = oracle.fee();
            vm.deal(_anyone, _anyone.balance + fee);
            vm.prank(_anyone);
            oracle.payFee{value: fee}(qid);
            ++calls["oracle.payFee"];
        } else if (
            q.status == IRecomputeOracle.QuestionStatus.Drawing
                || q.status == IRecomputeOracle.QuestionStatus.CommitteeDrawing
        ) {
            // The draw's randomness comes from a later block.
            if (!oracle.drawReady(qid)) vm.roll(block.number + 1);
            vm.prank(_anyone);
            try oracle.draw(qid) {
                ++calls["oracle.draw"];
            } catch {}
        } else if (q.status == IRecomputeOracle.QuestionStatus.Voting) {
            address[] memory seated = oracle.committeeOf(qid);
            uint256 size = oracle.params().committeeSize;
            bytes32 truth = sha256(abi.encodePacked(_truth(qid)));
            for (uint256 i = seated.length - size; i < seated.length; ++i) {
                if ((seed >> (16 + 2 * i)) % 4 == 0) continue; // silent
                vm.prank(seated[i]);
                try oracle.commitVote(qid, keccak256(abi.encode(qid, seated[i], truth, bytes32(i)))) {
                    ++calls["oracle.commitVote"];
                } catch {}
                vm.prank(seated[i]);
                try oracle.revealVote(qid, truth, bytes32(i)) {
                    ++calls["oracle.revealVote"];
                } catch {}
            }
            vm.prank(_anyone);
            try oracle.settle(qid) {
                ++calls["oracle.settleChallenge"];
            } catch {}
        }
    }

    /// @notice An oracle that left the active set (slashed) bonds again.
    function oracleRegister(uint256 oracleSeed) external priced {
        address o = _oracles[oracleSeed % _oracles.length];
        if (oracle.isActive(o)) return;
        ++calls["oracle.register"];
        _register(o);
    }

    // ---- time ------------------------------------------------------------------------------------

    /// @notice Advances the clock. Honest players move first (they are always online), and one time in
    ///         two everyone else does too; one time in two a keeper reassigns every silent oracle's
    ///         question at the first second it may.
    /// @notice Advances the clock. Honest players move first (they are always online), and one time in
    ///         two everyone else does too. On the way the clock stops wherever a reveal opens: the honest
    ///         entrants and the ring reveal at the first chance (and cheaters, when everyone is online),
    ///         and the challenger opens its games; one time in two a keeper reassigns every silent
    ///         oracle's question at the first second it may.
    function warp(uint256 dt) external priced {
        ++calls["warp"];
        uint256 target = block.timestamp + _bound(dt, 1, MAX_WARP);
        bool everyone = (dt >> 129) % 2 == 0;
        bool keeper = (dt >> 128) % 2 == 0;
        _catchUp(everyone);
        for (uint256 guard; guard < 64; ++guard) {
            (uint256 qid, uint256 due) = keeper ? _nextReassign(target) : (0, type(uint256).max);
            uint256 revealAt = _nextReveal(target);
            if (qid == 0 && revealAt == type(uint256).max) break;
            if (revealAt <= due) {
                if (revealAt > block.timestamp) vm.warp(revealAt);
                vm.roll(block.number + 1);
                _revealNow();
                continue;
            }
            if (due > block.timestamp) vm.warp(due);
            vm.prank(_anyone);
            oracle.reassign(qid);
        }
        _catchUp(false); // games opened on the way: the honest side moves before the clock jumps
        vm.warp(target);
    }

    /// @dev The first time, no later than `target`, at which an online entrant's pending reveal opens
    ///      and its window is still open (`type(uint256).max`: none).
    function _nextReveal(uint256 target) internal view returns (uint256 at) {
        at = type(uint256).max;
        for (uint256 i; i < _taskIds.length; ++i) {
            uint256 taskId = _taskIds[i];
            if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) continue;
            uint256 deadline = market.specOf(taskId).submitDeadline;
            for (uint256 j; j < _trainers.length; ++j) {
                address e = _trainers[j];
                if (!_revealer(taskId, e)) continue;
                CommitGhost memory c = _commits[taskId][e];
                if (!c.committed || c.revealed || c.junk) continue;
                uint256 opens = (c.at > deadline ? c.at : deadline + 1);
                uint256 closes = (c.at > deadline ? c.at : deadline) + market.REVEAL_WINDOW();
                uint256 when = opens > block.timestamp ? opens : block.timestamp;
                if (when <= target && when <= closes && when < at) at = when;
            }
        }
    }

    /// @dev Every entrant that reveals and whose reveal window is open now reveals (the caller moved a
    ///      block on); then each honest entrant opens its games (it wants the reward) and makes its
    ///      first moves.
    function _revealNow() internal {
        for (uint256 i; i < _taskIds.length; ++i) {
            uint256 taskId = _taskIds[i];
            if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) continue;
            bool revealed;
            for (uint256 j; j < _trainers.length; ++j) {
                address e = _trainers[j];
                if (_revealer(taskId, e) && _canRevealNow(taskId, e)) {
                    _reveal(taskId, e);
                    revealed = true;
                }
            }
            if (!revealed) continue;
            for (uint256 j; j < _trainers.length; ++j) {
                if (isHonest[_trainers[j]]) {
                    _disputeAll(taskId, _trainers[j], uint256(keccak256(abi.encode(i, j, block.number))));
                }
            }
        }
        _catchUp(false);
    }

    /// @dev Who reveals at the first chance: everyone but the copier (it has nothing to reveal) and the
    ///      cheaters that never reveal (a reveal is the others' only way to the reward).
    function _revealer(uint256 taskId, address e) internal view returns (bool) {
        return e != _copier && !_silent[taskId][e];
    }

    // ---- views for the test ----------------------------------------------------------------------

    function gameIds() external view returns (uint256[] memory) {
        return _gameIds;
    }

    function taskIds() external view returns (uint256[] memory) {
        return _taskIds;
    }

    function trainers() external view returns (address[] memory) {
        return _trainers;
    }

    function clients() external view returns (address[] memory) {
        return _clients;
    }

    /// @notice The watcher who opens games, settles and claims for others (it is repaid opening gas).
    function anyone() external view returns (address) {
        return _anyone;
    }

    function tasksOf(address trainer) external view returns (uint256[] memory) {
        return _tasksOf[trainer];
    }

    /// @notice Whether `trainer` committed to task `taskId` (the ghost), and revealed.
    function commitOf(uint256 taskId, address trainer) external view returns (bool committed, bool revealed) {
        CommitGhost storage c = _commits[taskId][trainer];
        return (c.committed, c.revealed);
    }

    /// @notice `Task.pools` of task `taskId`, read from the market's storage (it has no getter).
    function poolsOf(uint256 taskId) public view returns (uint256) {
        bytes32 base = keccak256(abi.encode(taskId, TASKS_SLOT));
        return uint256(vm.load(address(market), bytes32(uint256(base) + POOLS_WORD)));
    }

    /// @notice The true checkpoint list of a task.
    function trueList(uint256 taskId) public view returns (CheckpointLists.List memory) {
        ProtocolModel.Claims memory honest;
        return ProtocolModel.checkpointList(_runs[taskId], honest);
    }

    function ghostOf(uint256 gameId)
        external
        view
        returns (uint256 openedAt, uint256 timeBound, uint256 roundBound, uint256[2] memory moves)
    {
        GameGhost storage gg = _games[gameId];
        return (gg.openedAt, gg.timeBound, gg.roundBound, gg.moves);
    }

    /// @notice The root of the true checkpoint list of a task.
    function trueCheckpointRoot(uint256 taskId) public view returns (bytes32) {
        ProtocolModel.Claims memory honest;
        return ProtocolModel.checkpointList(_runs[taskId], honest).root;
    }

    // ---- moves -----------------------------------------------------------------------------------

    /// @dev One move of the side to move, if its script makes one now.
    function _step(uint256 gameId) internal returns (bool moved) {
        IDisputeGame.GameView memory v = game.gameOf(gameId);
        if (v.stage == IDisputeGame.Stage.Resolved || v.stage == IDisputeGame.Stage.Oracle) return false;
        uint8 side = uint8(v.toMove);
        if (block.timestamp > uint256(v.turnStartedAt) + v.clockLeft[side]) return false;
        GameGhost storage gg = _games[gameId];
        address player = v.players[side];
        if (!isHonest[player] && gg.moves[side] >= gg.stopAfter[side]) return false;
        IDisputeGame.Stage stage = v.stage;
        if (
            stage == IDisputeGame.Stage.CheckpointDescent || stage == IDisputeGame.Stage.TraceDescent
                || stage == IDisputeGame.Stage.PostStateDescent
        ) {
            moved = _descend(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.StepBisection) {
            moved = _bisect(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.PostStateCount) {
            moved = _openCount(gameId, v);
        } else if (stage == IDisputeGame.Stage.NodeReveal) {
            moved = _reveal(gameId, v, side);
        } else if (stage == IDisputeGame.Stage.InputProof) {
            moved = _proveInput(gameId, v);
        } else {
            moved = _provePost(gameId, v);
        }
        if (moved) {
            ++gg.moves[side];
            ++movesIn[stage];
        }
    }

    function _descend(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        bytes32[][] memory levels = _descentTree(gameId, v, side);
        uint256 t = ProtocolModel.log2(run.arity);
        if (t > v.height) t = v.height;
        uint256 w = uint256(1) << t;
        bytes32[] memory mine = ProtocolModel.nodesAt(levels, v.height - t, v.position * w, w);
        bytes32[] memory theirs = side == 0 ? new bytes32[](0) : gg.pending;
        ok = _call(v.players[side], abi.encodeCall(IDisputeGame.descend, (gameId, mine, theirs)));
        if (ok && side == 0) gg.pending = mine;
    }

    /// @dev The tree the side descends in the current stage.
    function _descentTree(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes32[][] memory)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        if (v.stage == IDisputeGame.Stage.CheckpointDescent) {
            return ProtocolModel.checkpointList(run, c).levels;
        }
        if (v.stage == IDisputeGame.Stage.TraceDescent) {
            bytes[] memory records = ProtocolModel.trace(run, c, v.lo, gg.postLie[side], gg.strategy[side]);
            return Reference.levels(ProtocolModel.leavesOf(records));
        }
        return Reference.levels(
            ProtocolModel.stateLeaves(ProtocolModel.entries(run, c, v.lo + 1, gg.postLie[side]))
        );
    }

    function _bisect(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        (bytes32[] memory mine, bytes32[] memory loProof) = _bisectRoots(gameId, v, side);
        bytes32[] memory theirs = side == 0 ? new bytes32[](0) : gg.pending;
        ok = _call(v.players[side], abi.encodeCall(IDisputeGame.bisect, (gameId, mine, theirs, loProof)));
        if (!ok) return false;
        if (side == 0) {
            gg.pending = mine;
            return true;
        }
        ++gg.rounds;
        if (game.gameOf(gameId).stage != IDisputeGame.Stage.TraceDescent) return true;
        // The step is isolated: each side's post-state is its root at the first differing point.
        uint256 w = mine.length - 1;
        uint256 i = 1;
        while (i < w && mine[i] == theirs[i]) ++i;
        bytes32 truth = ProtocolModel.trueRoot(_runs[gg.taskId], v.lo + (i * (v.hi - v.lo)) / w);
        gg.postLie[0] = theirs[i] != truth;
        gg.postLie[1] = mine[i] != truth;
    }

    /// @dev The side's roots at the split points (and, for the defender's first round, the opening
    ///      of its root at lo): the claims of its list at lo and hi, its truth or lie between.
    function _bisectRoots(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes32[] memory mine, bytes32[] memory loProof)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        uint256 span = v.hi - v.lo;
        uint256 w = run.arity < span ? run.arity : span;
        mine = new bytes32[](w + 1);
        if (gg.rounds == 0) {
            CheckpointLists.List memory list = ProtocolModel.checkpointList(run, c);
            mine[0] = list.stateRoots[v.lo / run.interval];
            mine[w] = list.stateRoots[v.hi / run.interval];
            if (side == 0) loProof = list.opening(v.lo / run.interval);
        } else {
            mine[0] = v.agreedRoot;
            mine[w] = v.current[side];
        }
        uint256 lies =
            isHonest[v.players[side]] ? 0 : uint256(keccak256(abi.encode(gg.lieSeed, gg.rounds, side)));
        _fillBetween(run, c, mine, v.lo, span, lies);
    }

    /// @dev Roots at the inner split points: the truth, or the lie where bit `i` of `lies` is set.
    function _fillBetween(
        ProtocolModel.Run memory run,
        ProtocolModel.Claims memory c,
        bytes32[] memory roots,
        uint256 lo,
        uint256 span,
        uint256 lies
    ) internal pure {
        uint256 w = roots.length - 1;
        for (uint256 i = 1; i < w; ++i) {
            roots[i] = ProtocolModel.claimRoot(run, c, lo + (i * span) / w, (lies >> i) & 1 == 1);
        }
    }

    function _openCount(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        ProtocolModel.Run memory run = _runs[_games[gameId].taskId];
        bytes32[] memory pre = ProtocolModel.trueEntries(run, v.lo);
        bytes32 preTop = ProtocolModel.top(Reference.levels(ProtocolModel.stateLeaves(pre)));
        return
            _call(v.players[0], abi.encodeCall(IDisputeGame.openPostStateCount, (gameId, run.nodes, preTop)));
    }

    function _reveal(uint256 gameId, IDisputeGame.GameView memory v, uint8 side) internal returns (bool ok) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        bytes memory rec = _record(gameId, v, side);
        bytes memory desc = ProtocolModel.descriptor(v.position);
        if (side == 0) {
            bytes32[] memory graphProof =
                ProtocolModel.opening(Reference.levels(ProtocolModel.graphLeaves(run.nodes)), v.position);
            ok = _call(
                v.players[0],
                abi.encodeCall(IDisputeGame.revealNode, (gameId, rec, bytes(""), desc, graphProof))
            );
            if (ok) gg.pendingRecord = rec;
            return ok;
        }
        ok = _call(
            v.players[1],
            abi.encodeCall(IDisputeGame.revealNode, (gameId, rec, gg.pendingRecord, desc, new bytes32[](0)))
        );
        if (!ok) return false;
        IDisputeGame.GameView memory after_ = game.gameOf(gameId);
        if (after_.stage == IDisputeGame.Stage.Oracle && after_.questionId != 0) {
            _questionIds.push(after_.questionId);
            _questions[after_.questionId] = QuestionGhost({
                programHash: run.programHash, node: v.position, input: ProtocolModel.inputOf(rec)
            });
        }
    }

    /// @dev The side's NODE record of the node the trace descent isolated.
    function _record(uint256 gameId, IDisputeGame.GameView memory v, uint8 side)
        internal
        view
        returns (bytes memory)
    {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[side]];
        return ProtocolModel.trace(_runs[gg.taskId], c, v.lo, gg.postLie[side], gg.strategy[side])[v.position];
    }

    /// @dev The defender proves its input from the pre-state, if it holds the true one.
    function _proveInput(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        ProtocolModel.Run memory run = _runs[_games[gameId].taskId];
        bytes memory rec = _record(gameId, v, 0);
        bytes32[] memory pre = ProtocolModel.trueEntries(run, v.lo);
        if (ProtocolModel.inputOf(rec) != pre[v.position]) return false; // a lie cannot be proven
        IDisputeGame.EntryProof memory entry = IDisputeGame.EntryProof({
            count: run.nodes,
            index: v.position,
            siblings: ProtocolModel.opening(Reference.levels(ProtocolModel.stateLeaves(pre)), v.position)
        });
        return _call(
            v.players[0],
            abi.encodeCall(
                IDisputeGame.proveStateInput, (gameId, rec, ProtocolModel.descriptor(v.position), entry)
            )
        );
    }

    /// @dev The defender proves its post-state entry from the agreed (true) trace, if it is the truth.
    function _provePost(uint256 gameId, IDisputeGame.GameView memory v) internal returns (bool) {
        GameGhost storage gg = _games[gameId];
        ProtocolModel.Run memory run = _runs[gg.taskId];
        ProtocolModel.Claims memory c = _claims[gg.taskId][v.players[0]];
        uint256 e = v.position;
        bytes32 mine = ProtocolModel.entries(run, c, v.lo + 1, gg.postLie[0])[e];
        if (mine != ProtocolModel.trueEntries(run, v.lo + 1)[e]) return false; // a lie cannot be proven
        return
            _call(
                v.players[0], abi.encodeCall(IDisputeGame.provePostState, (gameId, _postProof(run, v.lo, e)))
            );
    }

    function _postProof(ProtocolModel.Run memory run, uint256 step, uint256 e)
        internal
        pure
        returns (IDisputeGame.PostStateProof memory p)
    {
        bytes32[] memory pre = ProtocolModel.trueEntries(run, step);
        ProtocolModel.Claims memory honest;
        bytes[] memory records = ProtocolModel.trace(run, honest, step, false, ProtocolModel.TRUE_TRACE);
        p.nameHash = ProtocolModel.nameHash(e);
        p.commitment = ProtocolModel.outputOf(records[e]);
        p.preSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.stateLeaves(pre)), e);
        p.preCommitment = pre[e];
        p.programRoots = ProtocolModel.programRoots(run.nodes);
        p.outputCount = run.nodes;
        p.outputIndex = uint64(e);
        p.typeHash = ProtocolModel.TYPE_HASH;
        p.ref = [uint256(4), e, 0];
        p.outputSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.outputLeaves(run.nodes)), e);
        p.sourceRecord = records[e];
        p.sourceSiblings = ProtocolModel.opening(Reference.levels(ProtocolModel.leavesOf(records)), e);
    }

    /// @dev Calls the game as `player`; a revert is a failure of the script (or of the game).
    function _call(address player, bytes memory data) internal returns (bool ok) {
        bytes memory err;
        vm.prank(player);
        (ok, err) = address(game).call(data);
        if (!ok) {
            if (isHonest[player]) ++honestMoveFailures;
            else ++scriptedMoveFailures;
            lastFailure = abi.encodePacked(bytes4(data.length >= 4 ? bytes4(data) : bytes4(0)), err);
        }
    }

    /// @dev Every honest player to move makes its moves now; with `everyone`, so do the cheaters (as
    ///      far as their scripts go), and the oracles of the games' questions take a step.
    function _catchUp(bool everyone) internal {
        for (uint256 i; i < _gameIds.length; ++i) {
            uint256 gameId = _gameIds[i];
            if (everyone) {
                _play(gameId, 24);
                continue;
            }
            for (uint256 k; k < 8; ++k) {
                IDisputeGame.GameView memory v = game.gameOf(gameId);
                if (v.stage == IDisputeGame.Stage.Resolved || v.stage == IDisputeGame.Stage.Oracle) break;
                if (!isHonest[v.players[uint8(v.toMove)]] || !_step(gameId)) break;
            }
        }
    }

    /// @dev The assigned question whose answer window ends first, and the first second it can be
    ///      reassigned, if that is no later than `target`.
    function _nextReassign(uint256 target) internal view returns (uint256 qid, uint256 due) {
        due = type(uint256).max;
        for (uint256 i; i < _questionIds.length; ++i) {
            IRecomputeOracle.Question memory q = oracle.question(_questionIds[i]);
            if (q.status != IRecomputeOracle.QuestionStatus.Assigned) continue;
            uint256 at = uint256(q.deadline) + 1;
            if (at <= target && at < due) (qid, due) = (_questionIds[i], at);
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------

    /// @dev One of the `RECENT_TASKS` newest tasks (the caller checks there is one).
    function _recentTask(uint256 seed) internal view returns (uint256) {
        uint256 n = _taskIds.length;
        return _taskIds[n - 1 - seed % (n < RECENT_TASKS ? n : RECENT_TASKS)];
    }

    /// @dev One of the `RECENT_GAMES` newest games (the caller checks there is one).
    function _recentGame(uint256 seed) internal view returns (uint256) {
        uint256 n = _gameIds.length;
        return _gameIds[n - 1 - seed % (n < RECENT_GAMES ? n : RECENT_GAMES)];
    }

    function _openTasks() internal view returns (uint256 open) {
        for (uint256 i; i < _taskIds.length; ++i) {
            if (market.task(_taskIds[i]).status == ITaskMarket.TaskStatus.Open) ++open;
        }
    }

    /// @dev A squatted task when there is one among the newest (the challenger's first choice).
    function _squattedTask(uint256 seed) internal view returns (uint256) {
        uint256 n = _taskIds.length;
        uint256 recent = n < RECENT_TASKS ? n : RECENT_TASKS;
        for (uint256 i; i < recent; ++i) {
            uint256 taskId = _taskIds[n - 1 - (seed % recent + i) % recent];
            if (squatted[taskId] && market.task(taskId).status == ITaskMarket.TaskStatus.Open) return taskId;
        }
        return _recentTask(seed);
    }

    /// @dev Whether a group holds the true checkpoint root.
    function _trueGroupExists(uint256 taskId, ITaskMarket.TaskView memory t) internal view returns (bool) {
        bytes32 truth = trueCheckpointRoot(taskId);
        for (uint32 g; g < t.groupCount; ++g) {
            if (market.groupOf(taskId, g).checkpointRoot == truth) return true;
        }
        return false;
    }

    /// @dev The list `trainer` commits to: its claims' (the truth for an honest one).
    function _listOf(uint256 taskId, address trainer) internal view returns (CheckpointLists.List memory) {
        return ProtocolModel.checkpointList(_runs[taskId], _claims[taskId][trainer]);
    }

    function _commitment(uint256 taskId, address trainer, bytes32[] memory roots)
        internal
        view
        returns (bytes32)
    {
        return keccak256(abi.encode(taskId, trainer, keccak256(abi.encodePacked(roots)), _saltOf[trainer]));
    }

    /// @dev A slot trainer commits to its list.
    function _commitTo(uint256 taskId, address trainer) internal {
        bytes32 c = _commitment(taskId, trainer, _listOf(taskId, trainer).stateRoots);
        vm.prank(trainer);
        market.commit(taskId, c);
        _commits[taskId][trainer] = CommitGhost({
            committed: true,
            revealed: false,
            at: uint64(block.timestamp),
            blockNumber: uint64(block.number),
            junk: false
        });
    }

    /// @dev The copier commits to nothing it knows.
    function _commitJunk(uint256 taskId) internal {
        vm.prank(_copier);
        market.commit(taskId, keccak256(abi.encode("junk", taskId, block.timestamp)));
        _commits[taskId][_copier] = CommitGhost({
            committed: true,
            revealed: false,
            at: uint64(block.timestamp),
            blockNumber: uint64(block.number),
            junk: true
        });
    }

    /// @dev Whether `trainer` may reveal its committed list now (ITaskMarket.submit's window).
    function _canRevealNow(uint256 taskId, address trainer) internal view returns (bool) {
        CommitGhost memory c = _commits[taskId][trainer];
        if (!c.committed || c.revealed || c.junk || block.number <= c.blockNumber) return false;
        if (market.task(taskId).status != ITaskMarket.TaskStatus.Open) return false;
        uint256 deadline = market.specOf(taskId).submitDeadline;
        uint256 from = c.at > deadline ? c.at : deadline;
        return block.timestamp > deadline && block.timestamp <= from + market.REVEAL_WINDOW();
    }

    /// @dev Reveals `trainer`'s committed list (the caller checked the window).
    function _reveal(uint256 taskId, address trainer) internal {
        bytes32[] memory roots = _listOf(taskId, trainer).stateRoots; // an honest one's claims are the truth
        ++calls["submit"];
        vm.prank(trainer);
        market.submit(taskId, roots, _saltOf[trainer]);
        _commits[taskId][trainer].revealed = true;
        if (isHonest[trainer]) hasHonestSubmitter[taskId] = true;
    }

    /// @dev With an honest submitter, the client gets a correct result (the one live group is the
    ///      true list) or its reward back.
    function _checkClient(uint256 taskId, ITaskMarket.TaskView memory t, uint256 creditBefore) internal {
        if (!hasHonestSubmitter[taskId]) return;
        if (t.liveGroups == 1) {
            for (uint32 g; g < t.groupCount; ++g) {
                ITaskMarket.GroupView memory group = market.groupOf(taskId, g);
                if (group.live != 0 && group.checkpointRoot != trueCheckpointRoot(taskId)) {
                    ++clientViolations;
                }
            }
        } else if (market.creditOf(t.client) < creditBefore + t.reward) {
            ++clientViolations;
        }
    }

    function _truth(uint256 qid) internal view returns (bytes32[] memory outputs) {
        QuestionGhost storage q = _questions[qid];
        outputs = new bytes32[](1);
        outputs[0] = ProtocolModel.next(q.programHash, q.node, q.input);
    }

    function _register(address o) internal {
        uint256 bond = oracle.minBond();
        vm.deal(o, o.balance + bond);
        vm.prank(o);
        oracle.register{value: bond}();
        vm.roll(block.number + 1); // eligible for the draws requested from the next block
    }

    /// @dev A task shape: `(T, c)` from a table, `M` nodes, arity `N`.
    function _shape(uint256 seed, uint256 index) internal pure returns (ProtocolModel.Run memory run) {
        uint64[2][8] memory shapes = [
            [uint64(4), uint64(1)],
            [uint64(4), uint64(2)],
            [uint64(6), uint64(3)],
            [uint64(8), uint64(2)],
            [uint64(8), uint64(4)],
            [uint64(3), uint64(1)],
            [uint64(6), uint64(6)],
            [uint64(8), uint64(8)]
        ];
        uint64[4] memory nodes = [uint64(1), uint64(2), uint64(3), uint64(5)];
        uint64[3] memory arities = [uint64(2), uint64(4), uint64(8)];
        uint64[2] memory shape = shapes[seed % 8];
        run.steps = shape[0];
        run.interval = shape[1];
        run.nodes = nodes[(seed >> 8) % 4];
        run.arity = arities[(seed >> 16) % 3];
        run.salt = keccak256(abi.encode("task", index, seed));
        run.programHash = ProtocolModel.programHash(run.nodes);
    }

    function _spec(ProtocolModel.Run memory run, uint256 seed, uint256 deadlineSeed)
        internal
        view
        returns (ITaskMarket.TaskSpec memory spec)
    {
        uint64[3] memory clocks = [uint64(1 hours), uint64(2 hours), uint64(5 hours)]; // >= roundBound * 1 minute
        spec.programHash = run.programHash;
        spec.graphRoot = Reference.root(ProtocolModel.graphLeaves(run.nodes));
        spec.datasetRoot = keccak256("model dataset");
        spec.initialStateRoot = ProtocolModel.trueRoot(run, 0);
        spec.seed = seed;
        spec.datasetSize = 16;
        spec.steps = run.steps;
        spec.checkpointInterval = run.interval;
        spec.batchSize = 1;
        spec.nodeCount = run.nodes;
        spec.arity = run.arity;
        spec.clock = clocks[(seed >> 24) % 3];
        spec.slots = uint32(1 + (seed >> 32) % 4);
        spec.gasPriceCap = (seed >> 48) % 2 == 0 ? 0 : 1 gwei;
        // Short enough that reveals come within a few warps: games start only after them.
        spec.joinDeadline = uint64(block.timestamp + 5 minutes + deadlineSeed % 1 hours);
        spec.submitDeadline = spec.joinDeadline + uint64((deadlineSeed >> 64) % 1 hours);
        // Reveals (15 minutes), then at least an hour of disputes.
        spec.disputeDeadline = spec.submitDeadline + uint64(75 minutes + (deadlineSeed >> 128) % 8 hours);
    }
}
