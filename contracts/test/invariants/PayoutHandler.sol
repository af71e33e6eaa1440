// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {PayoutDistributor} from "../../src/PayoutDistributor.sol";
import {IPayoutDistributor} from "../../src/interfaces/IPayoutDistributor.sol";
import {PayoutTrees} from "../utils/PayoutTrees.sol";

/// @title PayoutHandler
/// @notice Drives a PayoutDistributor with random distributions (one in eight escrowing a value its
///         tree does not add up to), honest claims by random senders, forged claims, time and sweeps,
///         and keeps the ghost ledger the invariants compare the contract with. Every leaf account and
///         every refund address is fresh and used once, so their balances are exactly what they were paid.
contract PayoutHandler is Test {
    using PayoutTrees for PayoutTrees.Tree;

    uint256 internal constant MAX_N = 12;
    /// @notice Distributions a run creates at most (later `create` calls do nothing): bounds the checks.
    uint256 internal constant MAX_DISTRIBUTIONS = 8;

    struct Dist {
        address[] accounts;
        uint256[] amounts;
        uint256 value; // escrowed
        bool matches; // the tree adds up to the escrow
        address refundTo;
        uint64 deadline;
    }

    PayoutDistributor public immutable distributor;
    address internal immutable creator;

    uint256[] public ids;
    mapping(uint256 id => Dist) internal _dists;
    mapping(uint256 id => mapping(uint256 index => uint256)) public paidCount;
    mapping(uint256 id => uint256) public paidSum;
    mapping(uint256 id => bool) public swept;
    mapping(uint256 id => uint256) public sweptAmount;

    /// @notice A forged or out-of-rule call that the contract accepted (must stay 0).
    uint256 public acceptedForgeries;
    /// @notice An allowed call that the contract refused (must stay 0).
    uint256 public refusedHonest;
    uint256 public claims;
    uint256 public sweeps;
    uint256 public forgeriesTried;
    uint256 internal _nonce;

    constructor(PayoutDistributor d) {
        distributor = d;
        creator = makeAddr("payout creator");
        vm.deal(creator, type(uint128).max);
    }

    // ---------------------------------------------------------------- views for the invariants

    function idCount() external view returns (uint256) {
        return ids.length;
    }

    function dist(uint256 id)
        external
        view
        returns (
            address[] memory accounts,
            uint256[] memory amounts,
            uint256 value,
            bool matches,
            address refundTo
        )
    {
        Dist storage d = _dists[id];
        return (d.accounts, d.amounts, d.value, d.matches, d.refundTo);
    }

    // ---------------------------------------------------------------- actions

    function create(uint256 seed, uint256 n, uint256 period, uint8 mode) external {
        if (ids.length >= MAX_DISTRIBUTIONS) return;
        n = bound(n, 1, MAX_N);
        period = bound(period, distributor.MIN_CLAIM_PERIOD(), 20 days);
        ++_nonce;
        address[] memory accounts = new address[](n);
        uint256[] memory amounts = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            accounts[i] = makeAddr(string.concat("payout leaf ", vm.toString(_nonce), "/", vm.toString(i)));
            amounts[i] = 1 + uint256(keccak256(abi.encode(seed, i))) % 1e20;
        }
        PayoutTrees.Tree memory t = PayoutTrees.build(accounts, amounts);
        uint256 value = t.total();
        bool matches = mode % 8 != 0;
        if (!matches) {
            // Over the tree's sum, or under it (1 .. total - 1; total + 1 when the tree holds 1 wei).
            value = mode % 2 == 0 || value == 1 ? value + 1 + seed % 1e18 : 1 + seed % (value - 1);
        }
        address refundTo = makeAddr(string.concat("payout refund ", vm.toString(_nonce)));
        uint64 deadline = uint64(block.timestamp + period);
        vm.prank(creator);
        uint256 id = distributor.createDistribution{value: value}(t.top(), uint64(n), refundTo, deadline);
        ids.push(id);
        Dist storage d = _dists[id];
        d.accounts = accounts;
        d.amounts = amounts;
        d.value = value;
        d.matches = matches;
        d.refundTo = refundTo;
        d.deadline = deadline;
    }

    /// @notice An honest claim by a random sender: accepted iff the tree matches its escrow, the leaf is
    ///         unclaimed and the deadline has not passed.
    function claim(uint256 idSeed, uint256 indexSeed, address sender) external {
        if (ids.length == 0) return;
        uint256 id = ids[idSeed % ids.length];
        Dist storage d = _dists[id];
        uint256 i = indexSeed % d.accounts.length;
        PayoutTrees.Tree memory t = PayoutTrees.build(d.accounts, d.amounts);
        bool allowed = d.matches && paidCount[id][i] == 0 && block.timestamp < d.deadline;
        vm.prank(sender);
        try distributor.claim(id, i, d.accounts[i], d.amounts[i], t.proof(i)) {
            if (!allowed) ++acceptedForgeries;
            ++paidCount[id][i];
            paidSum[id] += d.amounts[i];
            ++claims;
        } catch {
            if (allowed) ++refusedHonest;
        }
    }

    /// @notice A forged claim (wrong amount, account, index, step hash or sum, a padding index, a thief as
    ///         the account): always refused.
    function forge(uint256 idSeed, uint256 indexSeed, uint8 kind, uint256 delta) external {
        if (ids.length == 0) return;
        uint256 id = ids[idSeed % ids.length];
        Dist storage d = _dists[id];
        uint256 n = d.accounts.length;
        uint256 i = indexSeed % n;
        PayoutTrees.Tree memory t = PayoutTrees.build(d.accounts, d.amounts);
        IPayoutDistributor.ProofStep[] memory p = t.proof(i);
        address account = d.accounts[i];
        uint256 amount = d.amounts[i];
        uint256 index = i;
        delta = bound(delta, 1, 1e18);
        kind = kind % 6;
        if (kind == 0) {
            amount += delta;
        } else if (kind == 1) {
            account = makeAddr("payout thief");
        } else if (kind == 2) {
            if (n == 1) return;
            index = (i + 1 + delta % (n - 1)) % n;
        } else if (kind == 3) {
            if (p.length == 0) return;
            p[delta % p.length].hash ^= bytes32(uint256(1));
        } else if (kind == 4) {
            if (p.length == 0) return;
            // Shift wei from a sibling to the claimed leaf: the fold's sum is unchanged.
            uint256 k = delta % p.length;
            uint256 take = p[k].sum < delta ? p[k].sum : delta;
            if (take == 0) return;
            p[k].sum -= take;
            amount += take;
        } else {
            index = n + delta % 16; // a padding position or past the tree
        }
        ++forgeriesTried;
        try distributor.claim(id, index, account, amount, p) {
            ++acceptedForgeries;
        } catch {}
    }

    /// @notice A sweep by anyone: accepted iff the deadline has passed and it was not swept.
    function sweep(uint256 idSeed) external {
        if (ids.length == 0) return;
        uint256 id = ids[idSeed % ids.length];
        Dist storage d = _dists[id];
        bool allowed = !swept[id] && block.timestamp >= d.deadline;
        uint256 before = d.refundTo.balance;
        try distributor.sweep(id) {
            if (!allowed) ++acceptedForgeries;
            swept[id] = true;
            sweptAmount[id] = d.refundTo.balance - before;
            ++sweeps;
        } catch {
            if (allowed) ++refusedHonest;
        }
    }

    function warp(uint256 dt) external {
        vm.warp(block.timestamp + bound(dt, 0, 5 days));
    }
}
