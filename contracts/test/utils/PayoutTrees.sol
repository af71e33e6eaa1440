// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IPayoutDistributor} from "../../src/interfaces/IPayoutDistributor.sol";

/// @title PayoutTrees
/// @notice A second, deliberately plain implementation of the payout trees of docs/commitments.md
///         ("Payout trees") for the tests: builtin `sha256(abi.encodePacked(...))`, whole padded trees
///         built level by level. PayoutTreeLib and the Python builder must agree with it bit for bit.
library PayoutTrees {
    struct Tree {
        bytes32[][] hashes; // hashes[0] is the leaf row (padded to even length below the top)
        uint256[][] sums;
        address[] accounts;
        uint256[] amounts;
    }

    function leaf(address account, uint256 amount) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x10), account, amount));
    }

    function node(bytes32 lh, uint256 ls, bytes32 rh, uint256 rs) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x11), lh, ls, rh, rs));
    }

    function root(bytes32 topHash, uint256 n, uint256 sum) internal pure returns (bytes32) {
        return sha256(abi.encodePacked(bytes1(0x12), uint64(n), topHash, sum));
    }

    /// @notice Bit length of n - 1, by counting (0 for n <= 1).
    function depth(uint256 n) internal pure returns (uint256 d) {
        while (n > (uint256(1) << d)) ++d;
    }

    function build(address[] memory accounts, uint256[] memory amounts)
        internal
        pure
        returns (Tree memory t)
    {
        require(accounts.length == amounts.length && accounts.length > 0, "PayoutTrees: bad leaves");
        uint256 d = depth(accounts.length);
        t.hashes = new bytes32[][](d + 1);
        t.sums = new uint256[][](d + 1);
        t.accounts = accounts;
        t.amounts = amounts;
        uint256 width = accounts.length;
        bytes32[] memory h = new bytes32[](width + (width % 2 == 1 && d > 0 ? 1 : 0));
        uint256[] memory s = new uint256[](h.length);
        for (uint256 i; i < width; ++i) {
            h[i] = leaf(accounts[i], amounts[i]);
            s[i] = amounts[i];
        }
        for (uint256 k; k <= d; ++k) {
            t.hashes[k] = h;
            t.sums[k] = s;
            if (k == d) break;
            uint256 up = h.length / 2;
            uint256 len = up + (up % 2 == 1 && k + 1 < d ? 1 : 0);
            bytes32[] memory nh = new bytes32[](len);
            uint256[] memory ns = new uint256[](len);
            for (uint256 i; i < up; ++i) {
                nh[i] = node(h[2 * i], s[2 * i], h[2 * i + 1], s[2 * i + 1]);
                ns[i] = s[2 * i] + s[2 * i + 1];
            }
            (h, s) = (nh, ns);
        }
    }

    function top(Tree memory t) internal pure returns (bytes32) {
        return t.hashes[t.hashes.length - 1][0];
    }

    function total(Tree memory t) internal pure returns (uint256) {
        return t.sums[t.sums.length - 1][0];
    }

    function count(Tree memory t) internal pure returns (uint256) {
        return t.accounts.length;
    }

    function rootOf(Tree memory t) internal pure returns (bytes32) {
        return root(top(t), t.accounts.length, total(t));
    }

    function proof(Tree memory t, uint256 index)
        internal
        pure
        returns (IPayoutDistributor.ProofStep[] memory p)
    {
        p = new IPayoutDistributor.ProofStep[](t.hashes.length - 1);
        uint256 i = index;
        for (uint256 k; k < p.length; ++k) {
            p[k] = IPayoutDistributor.ProofStep(t.hashes[k][i ^ 1], t.sums[k][i ^ 1]);
            i >>= 1;
        }
    }

    /// @notice The root a claim folds to (no checks): what the contract compares with its stored root.
    function fold(
        uint256 n,
        uint256 index,
        address account,
        uint256 amount,
        IPayoutDistributor.ProofStep[] memory p
    ) internal pure returns (bytes32) {
        bytes32 h = leaf(account, amount);
        uint256 s = amount;
        for (uint256 k; k < p.length; ++k) {
            h = (index >> k) & 1 == 0 ? node(h, s, p[k].hash, p[k].sum) : node(p[k].hash, p[k].sum, h, s);
            s += p[k].sum;
        }
        return root(h, n, s);
    }

    /// @notice `n` distinct non-zero accounts and amounts in 1 .. 2^64, derived from `seed`.
    function random(uint256 seed, uint256 n) internal pure returns (Tree memory) {
        address[] memory accounts = new address[](n);
        uint256[] memory amounts = new uint256[](n);
        for (uint256 i; i < n; ++i) {
            uint256 r = uint256(keccak256(abi.encode(seed, i)));
            accounts[i] = address(uint160(uint256(keccak256(abi.encode("payout account", seed, i)))));
            amounts[i] = 1 + (r % (uint256(1) << 64));
        }
        return build(accounts, amounts);
    }
}
