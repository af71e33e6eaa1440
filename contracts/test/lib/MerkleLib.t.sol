// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, console} from "forge-std/Test.sol";

import {
    MerkleCountTooLarge,
    MerkleIndexOutOfRange,
    MerklePaddingLeaf,
    MerkleProofLength,
    MerkleRootMismatch
} from "../../src/lib/Errors.sol";
import {MerkleLib} from "../../src/lib/MerkleLib.sol";
import {MerkleLibHarness} from "../harness/MerkleLibHarness.sol";
import {Reference} from "../utils/Reference.sol";

contract MerkleLibTest is Test {
    bytes32 internal constant PAD = bytes32(0);

    MerkleLibHarness internal lib;

    function setUp() public {
        lib = new MerkleLibHarness();
    }

    // ---------------------------------------------------------------- shared vectors

    function test_computeRoot_merkleVectors_succeeds() public view {
        string memory json = _vectors("merkle.json");
        assertEq(vm.parseJsonUint(json, ".version"), 1, "version");
        uint256 cases;
        for (; vm.keyExistsJson(json, _at(".cases", cases)); ++cases) {
            string memory c = _at(".cases", cases);
            uint256 count = vm.parseJsonUint(json, string.concat(c, ".count"));
            bytes[] memory records = vm.parseJsonBytesArray(json, string.concat(c, ".records"));
            bytes32[] memory leaves = vm.parseJsonBytes32Array(json, string.concat(c, ".leaves"));
            bytes32 root = vm.parseJsonBytes32(json, string.concat(c, ".root"));
            assertEq(records.length, count, "records");
            assertEq(leaves.length, count, "leaves");
            assertEq(lib.depth(count), vm.parseJsonUint(json, string.concat(c, ".depth")), "depth");
            assertEq(lib.depth(count), Reference.depth(count), "reference depth");
            for (uint256 i; i < count; ++i) {
                assertEq(lib.leafHash(records[i]), leaves[i], "leafHash(record)");
                assertEq(lib.leafHashCalldata(records[i]), leaves[i], "leafHashCalldata(record)");
                assertEq(Reference.leaf(records[i]), leaves[i], "reference leaf");
            }
            assertEq(Reference.root(leaves), root, "reference tree root");
            assertEq(lib.rootInPlace(leaves), root, "rootInPlace(leaves)");
            assertEq(lib.listRoot(count, Reference.top(leaves)), root, "listRoot(count, top)");
        }
        assertEq(cases, 11, "list sizes 1, 2, 3, 4, 5, 8, 9, 16, 17, 64, 65");
    }

    function test_verify_merkleVectors_succeeds() public view {
        string memory json = _vectors("merkle.json");
        uint256 openings;
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            uint256 count = vm.parseJsonUint(json, string.concat(c, ".count"));
            bytes32[] memory leaves = vm.parseJsonBytes32Array(json, string.concat(c, ".leaves"));
            bytes32 root = vm.parseJsonBytes32(json, string.concat(c, ".root"));
            for (uint256 i; vm.keyExistsJson(json, _at(string.concat(c, ".openings"), i)); ++i) {
                string memory o = _at(string.concat(c, ".openings"), i);
                uint256 index = vm.parseJsonUint(json, string.concat(o, ".index"));
                bytes32[] memory siblings = vm.parseJsonBytes32Array(json, string.concat(o, ".siblings"));
                assertEq(index, i, "openings in index order");
                assertEq(siblings, Reference.proof(leaves, index), "siblings of the reference tree");
                lib.verify(root, count, index, leaves[index], siblings);
                assertEq(lib.computeRoot(count, index, leaves[index], siblings), root, "computeRoot");
                ++openings;
            }
        }
        assertEq(openings, 1 + 2 + 3 + 4 + 5 + 8 + 9 + 16 + 17 + 64 + 65, "an opening of every leaf");
    }

    function test_verify_stateVectors_succeeds() public view {
        string memory json = _vectors("state.json");
        assertEq(vm.parseJsonUint(json, ".version"), 1, "version");
        uint256 count = vm.parseJsonUint(json, ".count");
        bytes32 root = vm.parseJsonBytes32(json, ".root");
        bytes32[] memory leaves = new bytes32[](count);
        bytes memory previous;
        for (uint256 i; i < count; ++i) {
            string memory e = _at(".entries", i);
            bytes memory name = bytes(vm.parseJsonString(json, string.concat(e, ".name")));
            bytes32 nameHash = vm.parseJsonBytes32(json, string.concat(e, ".nameHash"));
            bytes32 commitment = vm.parseJsonBytes32(json, string.concat(e, ".commitment"));
            bytes memory record = vm.parseJsonBytes(json, string.concat(e, ".record"));
            leaves[i] = vm.parseJsonBytes32(json, string.concat(e, ".leaf"));
            assertGt(name.length, 0, "names are non-empty");
            if (i > 0) assertTrue(_bytesLess(previous, name), "entries sorted by UTF-8 name bytes");
            previous = name;
            assertEq(nameHash, sha256(name), "nameHash = H(utf8 name)");
            assertEq(record, abi.encodePacked(bytes4("STEN"), nameHash, commitment), "STEN record");
            assertEq(lib.leafHash(record), leaves[i], "leaf = leaf(record)");
        }
        assertFalse(vm.keyExistsJson(json, _at(".entries", count)), "count covers every entry");
        assertEq(Reference.root(leaves), root, "reference state root");
        for (uint256 i; i < count; ++i) {
            bytes32[] memory siblings =
                vm.parseJsonBytes32Array(json, string.concat(_at(".entries", i), ".siblings"));
            assertEq(siblings, Reference.proof(leaves, i), "siblings of the reference tree");
            lib.verify(root, count, i, leaves[i], siblings);
        }
    }

    function test_verify_negativeVectors_reverts() public {
        string memory json = _vectors("negative.json");
        assertEq(vm.parseJsonUint(json, ".version"), 1, "version");
        uint256 cases;
        for (; vm.keyExistsJson(json, _at(".merkle", cases)); ++cases) {
            string memory c = _at(".merkle", cases);
            string memory reason = vm.parseJsonString(json, string.concat(c, ".reason"));
            bytes32 root = vm.parseJsonBytes32(json, string.concat(c, ".root"));
            uint256 count = vm.parseJsonUint(json, string.concat(c, ".count"));
            uint256 index = vm.parseJsonUint(json, string.concat(c, ".index"));
            bytes32 leaf = vm.parseJsonBytes32(json, string.concat(c, ".leaf"));
            bytes32[] memory siblings = vm.parseJsonBytes32Array(json, string.concat(c, ".siblings"));

            (string memory errorName, bytes memory expected) =
                _expectedMerkleError(reason, root, count, index, leaf, siblings);
            assertEq(vm.parseJsonString(json, string.concat(c, ".error")), errorName, reason);
            vm.expectRevert(expected);
            lib.verify(root, count, index, leaf, siblings);
        }
        assertEq(cases, 9, "negative Merkle cases");
    }

    /// @dev The error each `reason` of negative.json must raise, with its arguments recomputed here.
    function _expectedMerkleError(
        string memory reason,
        bytes32 root,
        uint256 count,
        uint256 index,
        bytes32 leaf,
        bytes32[] memory siblings
    ) internal pure returns (string memory, bytes memory) {
        bytes32 r = keccak256(bytes(reason));
        if (
            r == keccak256("wrong_sibling") || r == keccak256("wrong_index") || r == keccak256("wrong_leaf")
                || r == keccak256("wrong_count")
        ) {
            bytes32 computed = Reference.fold(count, index, leaf, siblings);
            return ("MerkleRootMismatch", abi.encodeWithSelector(MerkleRootMismatch.selector, computed, root));
        }
        if (r == keccak256("missing_sibling") || r == keccak256("extra_sibling")) {
            return (
                "MerkleProofLength",
                abi.encodeWithSelector(MerkleProofLength.selector, siblings.length, Reference.depth(count))
            );
        }
        if (r == keccak256("index_out_of_range") || r == keccak256("padding_position")) {
            return
                (
                    "MerkleIndexOutOfRange",
                    abi.encodeWithSelector(MerkleIndexOutOfRange.selector, index, count)
                );
        }
        if (r == keccak256("padding_leaf")) {
            return ("MerklePaddingLeaf", abi.encodeWithSelector(MerklePaddingLeaf.selector));
        }
        revert(string.concat("negative.json: unknown Merkle reason ", reason));
    }

    // ---------------------------------------------------------------- hashes

    function test_nodeHash_knownInputs_succeeds() public view {
        bytes32 a = keccak256("a");
        bytes32 b = keccak256("b");
        assertEq(lib.nodeHash(a, b), sha256(abi.encodePacked(bytes1(0x01), a, b)));
        assertEq(lib.nodeHash(PAD, PAD), sha256(abi.encodePacked(bytes1(0x01), PAD, PAD)));
        assertTrue(lib.nodeHash(a, b) != lib.nodeHash(b, a), "order matters");
    }

    function testFuzz_nodeHash_matchesReference_succeeds(bytes32 left, bytes32 right) public view {
        assertEq(lib.nodeHash(left, right), Reference.node(left, right));
    }

    function test_nodeHash_freeMemoryPointer_succeeds() public pure {
        bytes memory before = abi.encodePacked(keccak256("kept"));
        uint256 fmp;
        assembly ("memory-safe") {
            // Read the free memory pointer to compare after the hash.
            fmp := mload(0x40)
        }
        MerkleLib.nodeHash(keccak256("l"), keccak256("r"));
        uint256 fmpAfter;
        assembly ("memory-safe") {
            // Read the free memory pointer again.
            fmpAfter := mload(0x40)
        }
        assertEq(fmpAfter, fmp, "free memory pointer restored");
        assertEq(before, abi.encodePacked(keccak256("kept")), "allocated memory untouched");
    }

    function test_rootInPlace_freeMemoryPointer_succeeds() public pure {
        (bytes32[] memory leaves, bytes32 root) = _list(5, 1);
        bytes memory after_ = abi.encodePacked(keccak256("kept"));
        uint256 fmp;
        assembly ("memory-safe") {
            // Read the free memory pointer to compare after the fold.
            fmp := mload(0x40)
        }
        bytes32 got = MerkleLib.rootInPlace(leaves);
        uint256 fmpAfter;
        assembly ("memory-safe") {
            // Read the free memory pointer again.
            fmpAfter := mload(0x40)
        }
        assertEq(fmpAfter, fmp, "free memory pointer restored");
        assertEq(after_, abi.encodePacked(keccak256("kept")), "memory after the array untouched");
        assertEq(got, root, "root");
    }

    function testFuzz_leafHash_matchesReference_succeeds(bytes memory data) public view {
        assertEq(lib.leafHash(data), Reference.leaf(data));
        assertEq(lib.leafHashCalldata(data), Reference.leaf(data));
    }

    function test_listRoot_emptyList_succeeds() public view {
        assertEq(lib.listRoot(0, PAD), sha256(abi.encodePacked(bytes1(0x02), bytes8(0), PAD)));
    }

    function testFuzz_listRoot_matchesReference_succeeds(uint64 count, bytes32 top) public view {
        assertEq(lib.listRoot(count, top), Reference.listRoot(count, top));
    }

    function test_listRoot_countTooLarge_reverts() public {
        uint256 count = uint256(type(uint64).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(MerkleCountTooLarge.selector, count));
        lib.listRoot(count, keccak256("top"));
    }

    // ---------------------------------------------------------------- depth

    function test_depth_knownCounts_succeeds() public view {
        uint256[13] memory counts = [uint256(0), 1, 2, 3, 4, 5, 8, 9, 64, 65, 1 << 32, (1 << 32) + 1, 1 << 63];
        uint256[13] memory depths = [uint256(0), 0, 1, 2, 2, 3, 3, 4, 6, 7, 32, 33, 63];
        for (uint256 i; i < counts.length; ++i) {
            assertEq(lib.depth(counts[i]), depths[i], vm.toString(counts[i]));
        }
        assertEq(lib.depth((1 << 63) + 1), 64);
        assertEq(lib.depth(type(uint64).max), 64);
    }

    function testFuzz_depth_matchesReference_succeeds(uint64 count) public view {
        assertEq(lib.depth(count), Reference.depth(count));
    }

    function test_depth_countTooLarge_reverts() public {
        uint256 count = uint256(type(uint64).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(MerkleCountTooLarge.selector, count));
        lib.depth(count);
    }

    // ---------------------------------------------------------------- computeRoot / verify: rules

    function test_computeRoot_singleLeaf_succeeds() public view {
        bytes32 leaf = keccak256("only");
        assertEq(lib.computeRoot(1, 0, leaf, new bytes32[](0)), Reference.listRoot(1, leaf));
    }

    function test_computeRoot_indexEqualsCount_reverts() public {
        (bytes32[] memory leaves,) = _list(5, 1);
        bytes32[] memory siblings = Reference.proof(leaves, 4);
        vm.expectRevert(abi.encodeWithSelector(MerkleIndexOutOfRange.selector, 5, 5));
        lib.computeRoot(5, 5, leaves[4], siblings);
    }

    function test_computeRoot_emptyList_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(MerkleIndexOutOfRange.selector, 0, 0));
        lib.computeRoot(0, 0, keccak256("leaf"), new bytes32[](0));
    }

    function test_computeRoot_paddingLeaf_reverts() public {
        (bytes32[] memory leaves,) = _list(5, 2);
        bytes32[] memory siblings = Reference.proof(leaves, 1);
        vm.expectRevert(abi.encodeWithSelector(MerklePaddingLeaf.selector));
        lib.computeRoot(5, 1, PAD, siblings);
    }

    function test_computeRoot_tooManySiblings_reverts() public {
        (bytes32[] memory leaves,) = _list(5, 3);
        bytes32[] memory siblings = _append(Reference.proof(leaves, 2), keccak256("extra"));
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, 4, 3));
        lib.computeRoot(5, 2, leaves[2], siblings);
    }

    function test_computeRoot_tooFewSiblings_reverts() public {
        (bytes32[] memory leaves,) = _list(5, 4);
        bytes32[] memory siblings = Reference.proof(leaves, 2);
        assembly ("memory-safe") {
            // Drop the last sibling by shortening the array in place.
            mstore(siblings, 2)
        }
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, 2, 3));
        lib.computeRoot(5, 2, leaves[2], siblings);
    }

    function test_computeRoot_singleLeafWithSibling_reverts() public {
        bytes32[] memory siblings = new bytes32[](1);
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, 1, 0));
        lib.computeRoot(1, 0, keccak256("only"), siblings);
    }

    function test_computeRoot_countTooLarge_reverts() public {
        uint256 count = uint256(type(uint64).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(MerkleCountTooLarge.selector, count));
        lib.computeRoot(count, 0, keccak256("leaf"), new bytes32[](64));
    }

    function test_verify_wrongCountSameDepth_reverts() public {
        (bytes32[] memory leaves, bytes32 root) = _list(5, 5);
        bytes32[] memory siblings = Reference.proof(leaves, 2);
        bytes32 computed = Reference.fold(6, 2, leaves[2], siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, root));
        lib.verify(root, 6, 2, leaves[2], siblings);
    }

    /// @dev Second-preimage attempt: an inner node offered as a leaf of a shorter list.
    function test_verify_innerNodeAsLeaf_reverts() public {
        (bytes32[] memory leaves, bytes32 root) = _list(4, 6);
        bytes32 inner = Reference.node(leaves[0], leaves[1]);
        bytes32[] memory siblings = new bytes32[](1);
        siblings[0] = Reference.node(leaves[2], leaves[3]);
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, 1, 2));
        lib.verify(root, 4, 0, inner, siblings);
        bytes32 computed = Reference.fold(2, 0, inner, siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, root));
        lib.verify(root, 2, 0, inner, siblings);
    }

    // ---------------------------------------------------------------- fuzz

    function testFuzz_verify_builtProof_succeeds(uint256 count, uint256 seed, uint256 index) public view {
        count = bound(count, 1, 300);
        index = bound(index, 0, count - 1);
        (bytes32[] memory leaves, bytes32 root) = _list(count, seed);
        bytes32[] memory siblings = Reference.proof(leaves, index);
        lib.verify(root, count, index, leaves[index], siblings);
        assertEq(lib.computeRoot(count, index, leaves[index], siblings), root);
    }

    function testFuzz_rootInPlace_matchesReference_succeeds(uint256 count, uint256 seed) public view {
        count = bound(count, 1, 300);
        (bytes32[] memory leaves, bytes32 root) = _list(count, seed);
        assertEq(lib.rootInPlace(leaves), root);
    }

    function test_rootInPlace_emptyList_succeeds() public view {
        assertEq(lib.rootInPlace(new bytes32[](0)), Reference.listRoot(0, PAD));
    }

    function testFuzz_verify_flippedBit_reverts(
        uint256 count,
        uint256 seed,
        uint256 index,
        uint256 at,
        uint8 bit
    ) public {
        count = bound(count, 1, 300);
        index = bound(index, 0, count - 1);
        (bytes32[] memory leaves, bytes32 root) = _list(count, seed);
        bytes32[] memory siblings = Reference.proof(leaves, index);
        bytes32 leaf = leaves[index];
        bytes32 mask = bytes32(uint256(1) << bit);
        at = bound(at, 0, siblings.length); // siblings.length: the leaf itself
        if (at == siblings.length) leaf ^= mask;
        else siblings[at] ^= mask;
        vm.assume(leaf != PAD);
        bytes32 computed = Reference.fold(count, index, leaf, siblings);
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, root));
        lib.verify(root, count, index, leaf, siblings);
    }

    function testFuzz_verify_otherIndex_reverts(uint256 count, uint256 seed, uint256 index, uint256 other)
        public
    {
        count = bound(count, 1, 300);
        index = bound(index, 0, count - 1);
        other = bound(other, 0, 2 * count);
        vm.assume(other != index);
        (bytes32[] memory leaves, bytes32 root) = _list(count, seed);
        bytes32[] memory siblings = Reference.proof(leaves, index);
        if (other >= count) {
            vm.expectRevert(abi.encodeWithSelector(MerkleIndexOutOfRange.selector, other, count));
        } else {
            bytes32 computed = Reference.fold(count, other, leaves[index], siblings);
            vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, computed, root));
        }
        lib.verify(root, count, other, leaves[index], siblings);
    }

    // ---------------------------------------------------------------- gas

    function test_nodeHash_gas_succeeds() public view {
        bytes32 a = keccak256("a");
        bytes32 b = keccak256("b");
        uint256 g = gasleft();
        bytes32 h = MerkleLib.nodeHash(a, b);
        g -= gasleft();
        uint256 gRef = gasleft();
        bytes32 hRef = Reference.node(a, b);
        gRef -= gasleft();
        assertEq(h, hRef);
        console.log("gas: MerkleLib.nodeHash", g);
        console.log("gas: sha256(abi.encodePacked(0x01, l, r))", gRef);
        assertLt(g, 400, "nodeHash stays near the precompile's 100 + 96");
    }

    function test_verify_depth8Gas_succeeds() public view {
        (bytes32[] memory leaves, bytes32 root) = _list(256, 7);
        bytes32[] memory siblings = Reference.proof(leaves, 137);
        assertEq(siblings.length, 8);
        uint256 g = lib.verifyGas(root, 256, 137, leaves[137], siblings);
        console.log("gas: MerkleLib.verify, depth 8", g);
        assertLt(g, 4000, "8 nodes and a list root");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev `count` distinct non-PAD leaves from `seed`, and their reference root.
    function _list(uint256 count, uint256 seed)
        internal
        pure
        returns (bytes32[] memory leaves, bytes32 root)
    {
        leaves = new bytes32[](count);
        for (uint256 i; i < count; ++i) {
            leaves[i] = keccak256(abi.encode(seed, i));
        }
        root = Reference.root(leaves);
    }

    function _append(bytes32[] memory xs, bytes32 x) internal pure returns (bytes32[] memory ys) {
        ys = new bytes32[](xs.length + 1);
        for (uint256 i; i < xs.length; ++i) {
            ys[i] = xs[i];
        }
        ys[xs.length] = x;
    }

    function _bytesLess(bytes memory a, bytes memory b) internal pure returns (bool) {
        for (uint256 i; i < a.length && i < b.length; ++i) {
            if (a[i] != b[i]) return a[i] < b[i];
        }
        return a.length < b.length;
    }

    function _vectors(string memory file) internal view returns (string memory) {
        return vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/", file));
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }
}
