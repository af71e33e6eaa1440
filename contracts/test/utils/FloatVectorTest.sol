// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";

import {FloatVectors} from "./FloatVectors.sol";

/// @notice What a width's vector suite shares (Binary32Test, Binary64Test): the vector file's
///         groups checked bit for bit, every group of the file named by a test, the most gas per
///         function as a snapshot. A suite says its file, its group names in file order, which of
///         them have a custom check, and how each group's function is called.
abstract contract FloatVectorTest is Test {
    using FloatVectors for FloatVectors.Group;

    /// @notice Most gas one library call may take over its vectors; a game move may spend 100k.
    uint256 internal constant GAS_CAP = 20_000;

    /// @dev The vector file under contracts/test/vectors/.
    function _file() internal pure virtual returns (string memory);

    /// @dev The snapshot group of the gas test.
    function _gasGroup() internal pure virtual returns (string memory);

    /// @dev Every group of `_file()`, in the file's order.
    function _groups() internal pure virtual returns (string[] memory);

    /// @dev Whether group `name` is checked by a test of its own rather than by `_eval` (its
    ///      records do not have the `(a, b) -> out` form).
    function _custom(bytes32 name) internal pure virtual returns (bool) {
        name;
        return false;
    }

    /// @dev The library function group `name` tests, on the record's words `a` and `b`.
    function _eval(bytes32 name, uint256 a, uint256 b) internal pure virtual returns (uint256);

    /// @dev Read per test (memory), not kept in storage: 1 MB of storage would cost more gas
    ///      than the checks themselves.
    function _json() internal view returns (string memory) {
        return FloatVectors.load(_file());
    }

    /// @dev A signed integer result as the 64-bit pattern the vectors store.
    function _pattern(int256 v) internal pure returns (uint256) {
        return uint256(v) & type(uint64).max;
    }

    function _noFunction(bytes32 name) internal pure returns (uint256) {
        revert(string.concat("no function for group ", string(abi.encodePacked(name))));
    }

    /// @dev Checks every record of group `name`; returns the most gas one evaluation took (the
    ///      function and this test's dispatch to it, measured with gasleft).
    function _check(string memory name) internal view returns (uint256 maxGas) {
        FloatVectors.Group memory g = FloatVectors.find(_json(), name);
        bytes32 key = bytes32(bytes(name));
        for (uint256 r; r < g.count; ++r) {
            (uint256 a, uint256 b,, uint256 out) = g.record(r);
            uint256 before = gasleft();
            uint256 got = _eval(key, a, b);
            uint256 used = before - gasleft();
            if (used > maxGas) maxGas = used;
            if (got != out) {
                assertEq(
                    got,
                    out,
                    string.concat(
                        name, " record ", vm.toString(r), ": a=", vm.toString(a), " b=", vm.toString(b)
                    )
                );
            }
        }
        assertGt(g.count, 0, "empty group");
    }

    /// @notice `_check` as an external call (its memory ends with the call).
    function checkGroup(string calldata name) external view returns (uint256) {
        return _check(name);
    }

    function test_vectors_everyGroupNamed_succeeds() public view {
        string[] memory names = _groups();
        string memory json = _json();
        assertEq(
            FloatVectors.groupCount(json), names.length, string.concat("a group of ", _file(), " has no test")
        );
        for (uint256 i; i < names.length; ++i) {
            assertEq(FloatVectors.nameAt(json, i), names[i], "group order");
        }
    }

    /// @notice Every group's records bit for bit, and the most gas each function takes over them
    ///         (snapshot group `_gasGroup()`), each below `GAS_CAP`.
    function test_vectors_everyGroup_succeeds() public {
        string[] memory names = _groups();
        for (uint256 i; i < names.length; ++i) {
            if (_custom(bytes32(bytes(names[i])))) continue;
            // One external call per group, so each group's memory is freed before the next.
            uint256 gas = this.checkGroup(names[i]);
            vm.snapshotValue(_gasGroup(), names[i], gas);
            assertLt(gas, GAS_CAP, names[i]);
        }
    }

    function test_add_vectors_succeeds() public view {
        _check("add");
    }

    function test_sub_vectors_succeeds() public view {
        _check("sub");
    }

    function test_mul_vectors_succeeds() public view {
        _check("mul");
    }

    function test_div_vectors_succeeds() public view {
        _check("div");
    }

    function test_sqrt_vectors_succeeds() public view {
        _check("sqrt");
    }
}
