// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IPayoutDistributor} from "./interfaces/IPayoutDistributor.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {PayoutTreeLib} from "./lib/PayoutTreeLib.sol";
import "./lib/LedgerErrors.sol";

/// @title TrainingLedger
/// @notice Ledgers of docs/ledger.md: a client escrows a pool; bonded contributors commit and reveal per
///         step; the client reveals validation batch commitments against its validation root; bonded
///         builders post interval block roots (a quorum of `quorum` equal posts; any disagreement freezes
///         payout); a Merkle-sum payout root (total = pool - builder fee) agreed by `quorum` equal posts
///         of bonded builders (a different post freezes) is paid by pull claims once the settle window
///         is over with no disagreement; the builder fee is split among the agreeing builders.
/// @dev Disagreement is not resolved here (the game of docs/ledger.md section 8 is not built): a frozen or
///      abandoned ledger returns its pool to the client at `endTime + settleWindow`; bonds always return.
contract TrainingLedger {
    /// @notice Parameters a client posts.
    struct Params {
        bytes32 genesis;
        bytes32 validationRoot;
        uint32 steps;
        uint32 intervalSteps;
        uint32 commitWindow;
        uint32 revealWindow;
        uint32 maxContributors;
        uint32 quorum;
        uint32 settleWindow;
        uint32 claimWindow;
        uint96 contributorBond;
        uint96 builderBond;
        uint96 builderFee;
    }

    /// @dev Ten slots: `p` five, then (client, start), then one slot a claim and a builder's post read for
    ///      everything but roots: (pool, settleEnd, payoutLeaves, intervalsAgreed, payoutVotes, frozen,
    ///      refunded), then the payout root, the payout candidate, and the fees paid.
    struct Ledger {
        Params p;
        address client;
        uint64 start;
        uint96 pool;
        uint64 settleEnd; // endTime + settleWindow: roots are posted before it, claims open at it
        uint32 payoutLeaves;
        uint32 intervalsAgreed;
        uint16 payoutVotes; // posts of the candidate (saturating)
        bool frozen;
        bool refunded;
        bytes32 payoutRoot; // set when `quorum` builders posted the same candidate
        bytes32 payoutCandidate; // the first payout post's root
        uint96 feesPaid;
    }

    /// @notice A ledger's record as `ledger(id)` returns it (the stored fields, unpacked, and what was paid out).
    struct LedgerView {
        Params p;
        address client;
        uint64 start;
        uint96 pool;
        bool frozen;
        bool refunded;
        uint32 intervalsAgreed;
        bytes32 payoutRoot; // agreed by `quorum` equal posts (0: none); kept after a refund, which closes claims
        uint64 payoutLeaves;
        uint32 payoutVotes;
        bytes32 payoutCandidate;
        uint256 paid; // claims and fee parts paid; the whole pool once refunded (`paidOut`)
        uint64 settleEnd;
        uint96 feesPaid;
    }

    /// @notice Largest pool (payout sums are 96-bit).
    uint256 public constant MAX_POOL = PayoutTreeLib.MAX_SUM;
    /// @notice Largest payout tree.
    uint256 public constant MAX_LEAVES = 1 << 16;
    /// @notice Largest quorum (the fee is split among this many builders at most).
    uint256 public constant MAX_QUORUM = 256;

    /// @dev A member's word: its bond (bits 0-95), the builder role (bit 96), the payout vote (bit 97), the
    ///      number of intervals it posted (bits 128-159: a builder posts intervals in order), its fee part due
    ///      (bits 160-255). One slot, written fresh at bond: a builder's posts rewrite it (no fresh slot).
    uint256 internal constant BOND_MASK = (uint256(1) << 96) - 1;
    uint256 internal constant BUILDER = uint256(1) << 96;
    uint256 internal constant VOTED = uint256(1) << 97;
    uint256 internal constant POSTED_SHIFT = 128;
    uint256 internal constant POSTED_MASK = uint256(0xffffffff) << 128;
    uint256 internal constant FEE_SHIFT = 160;
    /// @dev Claim words, as PayoutDistributor's: the low 160 bits of word `w` are the unclaimed flags of leaves
    ///      `160 w .. 160 w + 159` (set for every leaf when the payout root is agreed, so no claim writes a
    ///      fresh word), the high 96 bits the sum those leaves have been paid.
    uint256 internal constant LEAVES_PER_WORD = 160;
    uint256 internal constant FLAGS = (uint256(1) << 160) - 1;

    uint256 public ledgerCount;
    mapping(uint256 => Ledger) internal _ledgers;
    mapping(uint256 => mapping(address => uint256)) internal _member;
    mapping(uint256 => mapping(uint256 => uint256)) internal _words;
    mapping(uint256 => mapping(uint256 => mapping(address => bytes32))) public commitOf;
    mapping(uint256 => mapping(uint256 => mapping(address => bool))) public revealed;
    mapping(uint256 => mapping(uint256 => uint256)) public commitCount;
    mapping(uint256 => mapping(uint256 => bytes32)) public validationCommitment;
    mapping(uint256 => mapping(uint256 => bytes32)) public intervalRoot;
    mapping(uint256 => mapping(uint256 => uint256)) public intervalVotes;

    event LedgerPosted(uint256 indexed id, address indexed client, bytes32 genesis, uint256 pool);
    event Bonded(uint256 indexed id, address indexed who, bool builder, uint256 amount);
    event Committed(uint256 indexed id, uint256 indexed t, address indexed who, bytes32 commit);
    event ValidationRevealed(uint256 indexed id, uint256 indexed t, bytes32 commitment);
    event Revealed(
        uint256 indexed id,
        uint256 indexed t,
        address indexed who,
        bytes32 batchCommitment,
        bytes32 gradientCommitment,
        bytes32 salt
    );
    event IntervalPosted(uint256 indexed id, uint256 indexed i, address indexed builder, bytes32 root);
    event Frozen(uint256 indexed id, uint256 indexed i, bytes32 first, bytes32 other);
    event PayoutVoted(uint256 indexed id, address indexed builder, bytes32 root, uint256 votes);
    event PayoutFrozen(uint256 indexed id, address indexed builder, bytes32 candidate, bytes32 other);
    event PayoutPosted(uint256 indexed id, bytes32 root, uint256 leaves, uint256 total);
    event Claimed(uint256 indexed id, uint256 indexed index, address indexed account, uint256 amount);
    event Refunded(uint256 indexed id, address indexed to, uint256 amount);
    event BondWithdrawn(uint256 indexed id, address indexed who, uint256 amount);

    // ---- post and bond -----------------------------------------------------------------------------

    /// @notice Posts a ledger escrowing `msg.value` as its pool; returns its id.
    function postLedger(Params calldata p) external payable returns (uint256 id) {
        if (msg.value == 0 || msg.value > MAX_POOL) revert LedgerBadParam("pool");
        if (p.steps == 0 || p.steps > 1 << 20) revert LedgerBadParam("steps");
        if (p.intervalSteps == 0 || p.steps % p.intervalSteps != 0) revert LedgerBadParam("intervalSteps");
        if (p.commitWindow == 0 || p.revealWindow < 2) revert LedgerBadParam("windows");
        if (p.maxContributors == 0 || p.maxContributors > 256) revert LedgerBadParam("maxContributors");
        if (p.quorum < 2 || p.quorum > MAX_QUORUM) revert LedgerBadParam("quorum");
        if (p.settleWindow == 0 || p.claimWindow == 0) revert LedgerBadParam("settle");
        if (p.builderFee > msg.value) revert LedgerBadParam("builderFee");
        if (p.validationRoot == bytes32(0) || p.genesis == bytes32(0)) revert LedgerBadParam("roots");
        id = ledgerCount++;
        Ledger storage l = _ledgers[id];
        l.p = p;
        l.client = msg.sender;
        l.start = uint64(block.timestamp);
        l.pool = uint96(msg.value);
        l.settleEnd = uint64(endTime(id) + p.settleWindow); // < 2^54: start < 2^64 is a timestamp, steps <= 2^20, windows 32-bit
        emit LedgerPosted(id, msg.sender, p.genesis, msg.value);
    }

    /// @notice Bonds the caller as a contributor (`builder == false`) or builder; one bond per address.
    function bond(uint256 id, bool builder) external payable {
        Ledger storage l = _get(id);
        uint256 expected = builder ? l.p.builderBond : l.p.contributorBond;
        if (msg.value != expected || expected == 0) revert LedgerBadBond(msg.value, expected);
        if (_member[id][msg.sender] != 0) revert LedgerAlreadyBonded(msg.sender);
        uint256 end = endTime(id);
        if (block.timestamp >= end) revert LedgerOutsideWindow(block.timestamp, l.start, end);
        _member[id][msg.sender] = msg.value | (builder ? BUILDER : 0);
        emit Bonded(id, msg.sender, builder, msg.value);
    }

    // ---- steps -------------------------------------------------------------------------------------

    /// @notice The commit of `abi.encode(id, t, contributor, batchCommitment, gradientCommitment, salt)`.
    function commitHash(
        uint256 id,
        uint256 t,
        address contributor,
        bytes32 batchCommitment,
        bytes32 gradientCommitment,
        bytes32 salt
    ) public pure returns (bytes32) {
        return keccak256(abi.encode(id, t, contributor, batchCommitment, gradientCommitment, salt));
    }

    /// @notice Step `t`'s window (steps are 1 .. T, as blocks are): commits in `[open, commitDeadline)`, reveals in `[commitDeadline, revealDeadline)`.
    function stepWindow(uint256 id, uint256 t)
        public
        view
        returns (uint256 open, uint256 commitDeadline, uint256 revealDeadline)
    {
        Ledger storage l = _get(id);
        if (t == 0 || t > l.p.steps) revert LedgerBadStep(t, l.p.steps);
        uint256 period = uint256(l.p.commitWindow) + l.p.revealWindow;
        open = l.start + (t - 1) * period;
        commitDeadline = open + l.p.commitWindow;
        revealDeadline = commitDeadline + l.p.revealWindow;
    }

    /// @notice End of the last step's reveal window.
    function endTime(uint256 id) public view returns (uint256) {
        Ledger storage l = _get(id);
        return l.start + uint256(l.p.steps) * (uint256(l.p.commitWindow) + l.p.revealWindow);
    }

    /// @notice Commits the caller's (batch, gradient) for step `t`.
    function commit(uint256 id, uint256 t, bytes32 c) external {
        (uint256 open, uint256 cd,) = stepWindow(id, t);
        if (block.timestamp < open || block.timestamp >= cd) {
            revert LedgerOutsideWindow(block.timestamp, open, cd);
        }
        uint256 m = _member[id][msg.sender];
        if (m & BOND_MASK == 0 || m & BUILDER != 0) revert LedgerNotBonded(msg.sender);
        if (commitOf[id][t][msg.sender] != 0) revert LedgerAlreadyCommitted(t, msg.sender);
        uint256 n = commitCount[id][t];
        uint256 max = _ledgers[id].p.maxContributors;
        if (n >= max) revert LedgerStepFull(t, max);
        commitCount[id][t] = n + 1;
        commitOf[id][t][msg.sender] = c;
        emit Committed(id, t, msg.sender, c);
    }

    /// @notice The client reveals validation batch `t`'s commitment, opening `leaf("LVAL" || u256(t) || c)`
    ///         at index `t - 1` of its validation root (a list of `steps` leaves, steps 1 .. T).
    function revealValidation(uint256 id, uint256 t, bytes32 c, bytes32[] calldata siblings) external {
        Ledger storage l = _get(id);
        if (msg.sender != l.client) revert LedgerNotClient(msg.sender);
        (, uint256 cd, uint256 rd) = stepWindow(id, t);
        if (block.timestamp < cd || block.timestamp >= rd) {
            revert LedgerOutsideWindow(block.timestamp, cd, rd);
        }
        if (validationCommitment[id][t] != 0) revert LedgerValidationAlreadyRevealed(t);
        bytes32 leaf = MerkleLib.leafHash(abi.encodePacked("LVAL", t, c));
        MerkleLib.verify(l.p.validationRoot, l.p.steps, t - 1, leaf, siblings);
        validationCommitment[id][t] = c;
        emit ValidationRevealed(id, t, c);
    }

    /// @notice Reveals the caller's step-`t` commit, after validation batch `t` is revealed. The event
    /// carries the salt (a builder finds the contribution's record under it), so a reveal sent through
    /// another contract can be read from the logs alone.
    function reveal(uint256 id, uint256 t, bytes32 batchCommitment, bytes32 gradientCommitment, bytes32 salt)
        external
    {
        (, uint256 cd, uint256 rd) = stepWindow(id, t);
        if (block.timestamp < cd || block.timestamp >= rd) {
            revert LedgerOutsideWindow(block.timestamp, cd, rd);
        }
        if (validationCommitment[id][t] == 0) revert LedgerValidationNotRevealed(t);
        if (revealed[id][t][msg.sender]) revert LedgerAlreadyRevealed(t, msg.sender);
        bytes32 c = commitOf[id][t][msg.sender];
        if (c == 0 || c != commitHash(id, t, msg.sender, batchCommitment, gradientCommitment, salt)) {
            revert LedgerRevealMismatch(t, msg.sender);
        }
        revealed[id][t][msg.sender] = true;
        emit Revealed(id, t, msg.sender, batchCommitment, gradientCommitment, salt);
    }

    // ---- builders ----------------------------------------------------------------------------------

    /// @notice A bonded builder posts interval `i`'s block root (not zero), after the interval's last reveal
    ///         deadline and before `endTime + settleWindow`; each builder posts intervals once each, in order
    ///         (0, 1, ...). The first post sets the root; a different root freezes the ledger for good.
    function postIntervalRoot(uint256 id, uint256 i, bytes32 root) external {
        Ledger storage l = _get(id);
        uint256 m = _member[id][msg.sender];
        if (m & BUILDER == 0 || m & BOND_MASK == 0) revert LedgerNotBonded(msg.sender);
        uint256 k = l.p.intervalSteps;
        uint256 count = l.p.steps / k;
        if (i >= count) revert LedgerBadInterval(i, count);
        if (root == 0) revert LedgerBadParam("root");
        (,, uint256 rd) = stepWindow(id, (i + 1) * k);
        uint256 until = l.settleEnd;
        if (block.timestamp < rd || block.timestamp >= until) {
            revert LedgerOutsideWindow(block.timestamp, rd, until);
        }
        uint256 next = (m & POSTED_MASK) >> POSTED_SHIFT;
        if (i < next) revert LedgerAlreadyPosted(i, msg.sender);
        if (i > next) revert LedgerIntervalOrder(i, next);
        _member[id][msg.sender] = m + (uint256(1) << POSTED_SHIFT); // i + 1 < 2^20: no carry out
        emit IntervalPosted(id, i, msg.sender, root);
        bytes32 first = intervalRoot[id][i];
        if (first == 0) {
            intervalRoot[id][i] = root;
        } else if (first != root) {
            if (!l.frozen) {
                l.frozen = true;
                emit Frozen(id, i, first, root);
            }
            return;
        }
        uint256 v = ++intervalVotes[id][i];
        if (v == l.p.quorum) ++l.intervalsAgreed;
    }

    /// @notice A bonded builder posts (votes for) the payout root, once, when every interval has its quorum
    ///         and no builder disagreed, before `endTime + settleWindow`; the total must be the pool minus the
    ///         builder fee. The first post sets the candidate; a post of a different root freezes the ledger
    ///         for good (also after the quorum: claims open only once the settle window is over, so every
    ///         bonded builder can object before anything is paid); when `quorum` builders posted the
    ///         candidate it is the payout root, and those `quorum` builders share the fee.
    /// @dev The post reaching the quorum sets every leaf's claim flag: `ceil(leaves / 160)` fresh words, at
    ///      most 410 (about 9.2M gas at `MAX_LEAVES`), so that no claim writes a fresh slot.
    function postPayoutRoot(uint256 id, bytes32 topHash, uint64 leaves, uint256 total) external {
        Ledger storage l = _get(id);
        uint256 m = _member[id][msg.sender];
        if (m & BUILDER == 0) revert LedgerNotBonded(msg.sender);
        if (l.frozen) revert LedgerFrozen(id); // before the bond: a frozen ledger says so to every builder
        if (m & BOND_MASK == 0) revert LedgerNotBonded(msg.sender);
        if (l.intervalsAgreed != l.p.steps / l.p.intervalSteps) revert LedgerIntervalsIncomplete(id);
        if (l.refunded) revert LedgerPayoutAlreadyPosted(id);
        uint256 until = l.settleEnd;
        if (block.timestamp >= until) revert LedgerOutsideWindow(block.timestamp, 0, until);
        uint256 expected = l.pool - l.p.builderFee;
        if (total != expected) revert LedgerPayoutTotal(total, expected);
        if (leaves == 0 || leaves > MAX_LEAVES || topHash == 0) revert LedgerBadParam("payout");
        if (m & VOTED != 0) revert LedgerPayoutAlreadyVoted(id, msg.sender);
        m |= VOTED;
        bytes32 root = PayoutTreeLib.rootOf(topHash, leaves, total);
        bytes32 candidate = l.payoutCandidate;
        if (candidate == 0) {
            l.payoutCandidate = root;
            l.payoutLeaves = uint32(leaves); // the root commits to the leaf count: equal roots, equal counts
        } else if (candidate != root) {
            _member[id][msg.sender] = m;
            l.frozen = true;
            emit PayoutFrozen(id, msg.sender, candidate, root);
            return;
        }
        uint256 v = uint256(l.payoutVotes) + 1;
        if (v <= type(uint16).max) l.payoutVotes = uint16(v);
        emit PayoutVoted(id, msg.sender, root, v);
        uint256 q = l.p.quorum;
        if (v <= q) {
            uint256 fee = l.p.builderFee;
            uint256 share = fee / q;
            m |= (v == 1 ? share + fee % q : share) << FEE_SHIFT; // fee < 2^96
        }
        _member[id][msg.sender] = m;
        if (v == q) {
            l.payoutRoot = root;
            mapping(uint256 => uint256) storage words = _words[id];
            uint256 full = leaves / LEAVES_PER_WORD;
            // At most 409 full words (MAX_LEAVES / 160), then one partial word.
            for (uint256 w; w < full; ++w) {
                words[w] = FLAGS;
            }
            uint256 rest = leaves % LEAVES_PER_WORD;
            if (rest != 0) words[full] = (uint256(1) << rest) - 1;
            emit PayoutPosted(id, root, leaves, total);
        }
    }

    // ---- payments (pull) ---------------------------------------------------------------------------

    /// @notice Pays leaf `index` of the payout tree to `account`; once per leaf, once the payout root is
    ///         agreed and the settle window is over with the ledger not frozen, until the refund.
    /// @dev Reads the payout root, the ledger's packed slot and one claim word, and rewrites that word.
    function claim(
        uint256 id,
        uint256 index,
        address account,
        uint256 amount,
        IPayoutDistributor.ProofStep[] calldata proof
    ) external {
        Ledger storage l = _ledgers[id];
        bytes32 root = l.payoutRoot;
        if (root == 0) revert LedgerNoPayout(id);
        uint256 count = _claimsOpen(id, l);
        if (index >= count) revert LedgerBadClaim(id, index);
        mapping(uint256 => uint256) storage words = _words[id];
        uint256 word = words[index / LEAVES_PER_WORD];
        uint256 flag = uint256(1) << (index % LEAVES_PER_WORD);
        if (word & flag == 0) revert LedgerBadClaim(id, index);
        bytes32 computed = PayoutTreeLib.computeRoot(count, index, account, amount, proof);
        if (computed != root) revert LedgerPayoutMismatch(computed, root);
        unchecked {
            // The root binds the proof's sum to the total (below 2^96), so the word's paid sum plus amount
            // stays in the word's high 96 bits.
            words[index / LEAVES_PER_WORD] = (word & ~flag) + (amount << 160);
        }
        emit Claimed(id, index, account, amount);
        _send(account, amount);
    }

    /// @notice Pays the caller its part of the builder fee (it is one of the `quorum` builders whose payout
    ///         posts agreed), under the same conditions as `claim`; once.
    function claimFee(uint256 id) external {
        Ledger storage l = _get(id);
        if (l.payoutRoot == 0) revert LedgerNoPayout(id);
        _claimsOpen(id, l);
        uint256 m = _member[id][msg.sender];
        uint256 fee = m >> FEE_SHIFT;
        if (fee == 0) revert LedgerNothingDue(id, msg.sender);
        _member[id][msg.sender] = m & ((uint256(1) << FEE_SHIFT) - 1);
        l.feesPaid += uint96(fee); // the parts sum to the fee, below 2^96
        emit Claimed(id, type(uint256).max, msg.sender, fee);
        _send(msg.sender, fee);
    }

    /// @notice After `endTime + settleWindow` with no payout root (frozen, incomplete or abandoned), or
    ///         after `endTime + settleWindow + claimWindow` for what is unclaimed, returns the rest to the client.
    /// @dev With a payout root, sums the paid amounts of its claim words (at most 410).
    function refund(uint256 id) external {
        Ledger storage l = _get(id);
        uint256 settle = l.settleEnd;
        bool paying = l.payoutRoot != 0 && !l.frozen;
        uint256 due = paying ? settle + l.p.claimWindow : settle;
        if (block.timestamp < due) revert LedgerNotOver(id);
        if (l.refunded) revert LedgerNothingDue(id, l.client);
        l.refunded = true;
        uint256 amount = l.pool - (paying ? _paid(id, l) : 0);
        emit Refunded(id, l.client, amount);
        if (amount != 0) _send(l.client, amount);
    }

    /// @notice Returns the caller's bond once the ledger has ended (no slashing is built).
    function withdrawBond(uint256 id) external {
        if (block.timestamp < endTime(id)) revert LedgerNotOver(id);
        uint256 m = _member[id][msg.sender];
        uint256 b = m & BOND_MASK;
        if (b == 0) revert LedgerNothingDue(id, msg.sender);
        _member[id][msg.sender] = m & ~BOND_MASK;
        emit BondWithdrawn(id, msg.sender, b);
        _send(msg.sender, b);
    }

    // ---- views -------------------------------------------------------------------------------------

    /// @notice End of the settle window: roots are posted before it; claims open at it.
    function settleEnd(uint256 id) external view returns (uint256) {
        return _get(id).settleEnd;
    }

    /// @notice The bond `who` holds on ledger `id` (0 once withdrawn).
    function bondOf(uint256 id, address who) external view returns (uint256) {
        return _member[id][who] & BOND_MASK;
    }

    /// @notice Whether `who` bonded as a builder on ledger `id`.
    function isBuilder(uint256 id, address who) external view returns (bool) {
        return _member[id][who] & BUILDER != 0;
    }

    /// @notice Whether builder `who` posted interval `i`'s root.
    function posted(uint256 id, uint256 i, address who) external view returns (bool) {
        return i < (_member[id][who] & POSTED_MASK) >> POSTED_SHIFT;
    }

    /// @notice Whether builder `who` posted the payout root.
    function payoutVoted(uint256 id, address who) external view returns (bool) {
        return _member[id][who] & VOTED != 0;
    }

    /// @notice The builder fee part still owed to `who` (one of the `quorum` agreeing builders).
    function feeDue(uint256 id, address who) external view returns (uint256) {
        return _member[id][who] >> FEE_SHIFT;
    }

    /// @notice Whether payout leaf `index` was claimed (false before the payout root is agreed).
    function claimed(uint256 id, uint256 index) external view returns (bool) {
        Ledger storage l = _ledgers[id];
        if (l.payoutRoot == 0 || index >= l.payoutLeaves) return false;
        return _words[id][index / LEAVES_PER_WORD] & (uint256(1) << (index % LEAVES_PER_WORD)) == 0;
    }

    /// @notice What left the pool: claims and fee parts paid, or the whole pool once refunded.
    function paidOut(uint256 id) public view returns (uint256) {
        Ledger storage l = _get(id);
        if (l.refunded) return l.pool;
        return l.payoutRoot == 0 ? 0 : _paid(id, l);
    }

    /// @notice The ledger record.
    function ledger(uint256 id) external view returns (LedgerView memory v) {
        Ledger storage l = _get(id);
        v.p = l.p;
        (v.client, v.start, v.pool) = (l.client, l.start, l.pool);
        (v.frozen, v.refunded, v.intervalsAgreed) = (l.frozen, l.refunded, l.intervalsAgreed);
        (v.payoutRoot, v.payoutLeaves, v.payoutVotes) = (l.payoutRoot, l.payoutLeaves, l.payoutVotes);
        v.payoutCandidate = l.payoutCandidate;
        v.paid = paidOut(id);
        (v.settleEnd, v.feesPaid) = (l.settleEnd, l.feesPaid);
    }

    function _get(uint256 id) private view returns (Ledger storage l) {
        l = _ledgers[id];
        if (l.client == address(0)) revert LedgerUnknown(id);
    }

    /// Claims need the ledger not frozen, not refunded, and its settle window over; returns the payout's leaf
    /// count. Reads the packed slot once (slot 6 of the struct: pool 0-95, settleEnd 96-159, payoutLeaves
    /// 160-191, intervalsAgreed 192-223, payoutVotes 224-239, frozen 240-247, refunded 248-255); the tests of
    /// frozen, refunded and early claims check these offsets against the compiler's layout.
    function _claimsOpen(uint256 id, Ledger storage l) private view returns (uint256 leaves) {
        uint256 w;
        assembly ("memory-safe") {
            w := sload(add(l.slot, 6))
        }
        if ((w >> 240) & 0xff != 0) revert LedgerFrozen(id);
        if (w >> 248 != 0) revert LedgerNoPayout(id);
        uint256 opens = (w >> 96) & 0xffffffffffffffff;
        if (block.timestamp < opens) revert LedgerClaimsNotOpen(id, opens);
        leaves = (w >> 160) & 0xffffffff;
    }

    /// The fee parts paid plus the sums paid of the payout's claim words (at most 410).
    function _paid(uint256 id, Ledger storage l) private view returns (uint256 sum) {
        sum = l.feesPaid;
        mapping(uint256 => uint256) storage words = _words[id];
        uint256 n = (uint256(l.payoutLeaves) + LEAVES_PER_WORD - 1) / LEAVES_PER_WORD;
        for (uint256 w; w < n; ++w) {
            sum += words[w] >> 160;
        }
    }

    function _send(address to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert LedgerTransferFailed(to, amount);
    }
}
