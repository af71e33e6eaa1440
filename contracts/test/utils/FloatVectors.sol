// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";

/// @notice Reads the record groups of contracts/test/vectors/ieee_*.json (scripts/ieee_vectors.py):
///         each record is the words of the group's argument columns `args` (0 = a, 1 = b, 2 = c)
///         and then `out`, every word `width` bytes, big-endian.
library FloatVectors {
    Vm private constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    /// @notice One group, decoded.
    struct Group {
        string name;
        uint256 count;
        uint256[] args;
        uint256 width;
        bytes data;
    }

    function load(string memory file) internal view returns (string memory) {
        return VM.readFile(string.concat(VM.projectRoot(), "/contracts/test/vectors/", file));
    }

    /// @notice The group at position `i`, or an empty name past the end.
    function at(string memory json, uint256 i) internal view returns (Group memory g) {
        string memory key = string.concat(".groups[", VM.toString(i), "]");
        if (!VM.keyExistsJson(json, key)) return g;
        g.name = VM.parseJsonString(json, string.concat(key, ".name"));
        g.count = VM.parseJsonUint(json, string.concat(key, ".count"));
        g.args = VM.parseJsonUintArray(json, string.concat(key, ".args"));
        g.width = VM.parseJsonUint(json, string.concat(key, ".width"));
        g.data = VM.parseJsonBytes(json, string.concat(key, ".data"));
        require(g.data.length == g.count * g.width * (g.args.length + 1), "vector data length");
    }

    /// @notice The name of the group at position `i`, or an empty name past the end.
    function nameAt(string memory json, uint256 i) internal view returns (string memory) {
        string memory key = string.concat(".groups[", VM.toString(i), "]");
        if (!VM.keyExistsJson(json, key)) return "";
        return VM.parseJsonString(json, string.concat(key, ".name"));
    }

    /// @notice Number of groups.
    function groupCount(string memory json) internal view returns (uint256 n) {
        while (bytes(nameAt(json, n)).length != 0) ++n;
    }

    /// @notice The first group named `name` (reverts if none).
    function find(string memory json, string memory name) internal view returns (Group memory) {
        for (uint256 i;; ++i) {
            string memory got = nameAt(json, i);
            require(bytes(got).length != 0, string.concat("no vector group ", name));
            if (keccak256(bytes(got)) == keccak256(bytes(name))) return at(json, i);
        }
    }

    /// @notice Record `r`: its arguments (0 where the group leaves a column out) and its output.
    function record(Group memory g, uint256 r)
        internal
        pure
        returns (uint256 a, uint256 b, uint256 c, uint256 out)
    {
        uint256[3] memory v;
        uint256 words = g.args.length + 1;
        uint256 base = r * words * g.width;
        for (uint256 k; k < g.args.length; ++k) {
            v[g.args[k]] = _word(g.data, base + k * g.width, g.width);
        }
        return (v[0], v[1], v[2], _word(g.data, base + g.args.length * g.width, g.width));
    }

    function _word(bytes memory data, uint256 offset, uint256 width) private pure returns (uint256 w) {
        assembly ("memory-safe") {
            // Reads 32 bytes at the offset and keeps the top `width` bytes (the data has them).
            w := shr(sub(256, mul(8, width)), mload(add(add(data, 32), offset)))
        }
    }
}
