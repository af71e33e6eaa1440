// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, Vm, console} from "forge-std/Test.sol";

import {CommitmentVerifier} from "../src/CommitmentVerifier.sol";
import {ICommitmentVerifier} from "../src/interfaces/ICommitmentVerifier.sol";
import {
    MerkleCountTooLarge,
    MerkleRootMismatch,
    TensorChunkLength,
    TensorCommitmentMismatch
} from "../src/lib/Errors.sol";
import {Reference} from "./utils/Reference.sol";

contract CommitmentVerifierTest is Test {
    CommitmentVerifier internal verifier;

    /// @dev One element opening of tensors.json, decoded.
    struct Element {
        bytes32 commitment;
        uint8 dtype;
        uint64[] shape;
        uint256 index;
        bytes chunk;
        bytes32[] siblings;
        uint256 valueBits;
    }

    function setUp() public {
        verifier = new CommitmentVerifier();
    }

    // ---------------------------------------------------------------- verifyElement / elementValue

    function test_verifyElement_tensorVectors_succeeds() public {
        string memory json = _vectors("tensors.json");
        uint256 openings;
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            for (uint256 i; vm.keyExistsJson(json, _at(string.concat(c, ".openings"), i)); ++i) {
                Element memory e = _element(json, c, _at(string.concat(c, ".openings"), i));
                vm.expectEmit(true, true, false, true, address(verifier));
                emit ICommitmentVerifier.ElementVerified(address(this), e.commitment, e.index, e.valueBits);
                uint256 got =
                    verifier.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
                assertEq(got, e.valueBits, "verifyElement");
                ++openings;
            }
        }
        assertEq(openings, 16, "element openings");
    }

    function test_elementValue_tensorVectors_succeeds() public view {
        string memory json = _vectors("tensors.json");
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            for (uint256 i; vm.keyExistsJson(json, _at(string.concat(c, ".openings"), i)); ++i) {
                Element memory e = _element(json, c, _at(string.concat(c, ".openings"), i));
                uint256 got =
                    verifier.elementValue(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
                assertEq(got, e.valueBits, "elementValue");
            }
        }
    }

    function test_verifyElement_callerIndexed_succeeds() public {
        Element memory e = _element(_vectors("tensors.json"), ".cases[1]", ".cases[1].openings[0]");
        address caller = makeAddr("referee");
        vm.recordLogs();
        vm.prank(caller);
        verifier.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(logs.length, 1, "one event");
        assertEq(logs[0].topics[0], ICommitmentVerifier.ElementVerified.selector, "topic 0");
        assertEq(logs[0].topics[1], bytes32(uint256(uint160(caller))), "caller");
        assertEq(logs[0].topics[2], e.commitment, "commitment");
        assertEq(logs[0].data, abi.encode(e.index, e.valueBits), "index, valueBits");
        assertEq(e.valueBits, 0xbfc00000, "-1.5 as float32 bits");
    }

    function test_verifyElement_truncatedChunk_reverts() public {
        Element memory e = _element(_vectors("tensors.json"), ".cases[5]", ".cases[5].openings[2]");
        bytes memory chunk = Reference.slice(e.chunk, 0, e.chunk.length - 1);
        vm.expectRevert(
            abi.encodeWithSelector(TensorChunkLength.selector, e.chunk.length - 1, e.chunk.length)
        );
        verifier.verifyElement(e.commitment, e.dtype, e.shape, e.index, chunk, e.siblings);
    }

    function test_elementValue_wrongCommitment_reverts() public {
        Element memory e = _element(_vectors("tensors.json"), ".cases[2]", ".cases[2].openings[1]");
        bytes32 wrong = e.commitment ^ bytes32(uint256(1));
        vm.expectRevert(abi.encodeWithSelector(TensorCommitmentMismatch.selector, e.commitment, wrong));
        verifier.elementValue(wrong, e.dtype, e.shape, e.index, e.chunk, e.siblings);
    }

    // ---------------------------------------------------------------- verifyLeaf / listRoot

    function test_verifyLeaf_merkleVectors_succeeds() public view {
        string memory json = _vectors("merkle.json");
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            uint256 count = vm.parseJsonUint(json, string.concat(c, ".count"));
            bytes32[] memory leaves = vm.parseJsonBytes32Array(json, string.concat(c, ".leaves"));
            bytes32 root = vm.parseJsonBytes32(json, string.concat(c, ".root"));
            for (uint256 i; i < count; ++i) {
                string memory o = _at(string.concat(c, ".openings"), i);
                bytes32[] memory siblings = vm.parseJsonBytes32Array(json, string.concat(o, ".siblings"));
                verifier.verifyLeaf(root, count, i, leaves[i], siblings);
            }
        }
    }

    function test_verifyLeaf_stateVectors_succeeds() public view {
        string memory json = _vectors("state.json");
        uint256 count = vm.parseJsonUint(json, ".count");
        bytes32 root = vm.parseJsonBytes32(json, ".root");
        for (uint256 i; i < count; ++i) {
            string memory e = _at(".entries", i);
            bytes32 leaf = vm.parseJsonBytes32(json, string.concat(e, ".leaf"));
            bytes32[] memory siblings = vm.parseJsonBytes32Array(json, string.concat(e, ".siblings"));
            verifier.verifyLeaf(root, count, i, leaf, siblings);
        }
    }

    function test_verifyLeaf_wrongRoot_reverts() public {
        string memory json = _vectors("merkle.json");
        bytes32 leaf = vm.parseJsonBytes32(json, ".cases[3].leaves[1]");
        bytes32[] memory siblings = vm.parseJsonBytes32Array(json, ".cases[3].openings[1].siblings");
        bytes32 root = vm.parseJsonBytes32(json, ".cases[3].root");
        bytes32 wrong = keccak256("another list");
        vm.expectRevert(abi.encodeWithSelector(MerkleRootMismatch.selector, root, wrong));
        verifier.verifyLeaf(wrong, 4, 1, leaf, siblings);
    }

    function test_listRoot_vectors_succeeds() public view {
        string memory json = _vectors("merkle.json");
        bytes32 leaf = vm.parseJsonBytes32(json, ".cases[0].leaves[0]");
        assertEq(
            verifier.listRoot(1, leaf), vm.parseJsonBytes32(json, ".cases[0].root"), "1 leaf: top = leaf"
        );
        bytes32[] memory leaves = vm.parseJsonBytes32Array(json, ".cases[2].leaves");
        assertEq(
            verifier.listRoot(3, Reference.top(leaves)), vm.parseJsonBytes32(json, ".cases[2].root"), "3"
        );
        string memory tensors = _vectors("tensors.json");
        assertEq(
            verifier.listRoot(0, bytes32(0)), vm.parseJsonBytes32(tensors, ".cases[0].dataRoot"), "empty"
        );
    }

    function testFuzz_listRoot_matchesReference_succeeds(uint64 count, bytes32 top) public view {
        assertEq(verifier.listRoot(count, top), Reference.listRoot(count, top));
    }

    function test_listRoot_countTooLarge_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(MerkleCountTooLarge.selector, uint256(1) << 64));
        verifier.listRoot(uint256(1) << 64, bytes32(0));
    }

    // ---------------------------------------------------------------- gas

    /// @dev Gas of the demo's transaction: the call as executed, and an estimate of the whole
    ///      transaction (21000, calldata at 4/16 gas a byte or the EIP-7623 floor of 10/40).
    function test_verifyElement_gas1MiBMiddle_succeeds() public {
        string memory json = _vectors("tensors.json");
        assertEq(vm.parseJsonString(json, ".cases[6].name"), "w_1mib_f32");
        Element memory e = _element(json, ".cases[6]", ".cases[6].openings[1]");
        bytes memory data = abi.encodeCall(
            ICommitmentVerifier.verifyElement, (e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings)
        );
        uint256 g = gasleft();
        (bool ok, bytes memory ret) = address(verifier).call(data);
        g -= gasleft();
        assertTrue(ok, "verifies");
        assertEq(abi.decode(ret, (uint256)), e.valueBits);
        uint256 tokens;
        for (uint256 i; i < data.length; ++i) {
            tokens += data[i] == 0 ? 1 : 4;
        }
        uint256 standard = 21_000 + 4 * tokens + g;
        uint256 floor = 21_000 + 10 * tokens;
        console.log("gas: CommitmentVerifier.verifyElement call, 1 MiB float32, middle element", g);
        console.log("calldata bytes", data.length);
        console.log(
            "gas: estimated transaction (max of standard and EIP-7623 floor)",
            standard > floor ? standard : floor
        );
        assertLt(g, 20_000, "execution");
    }

    // ---------------------------------------------------------------- helpers

    function _element(string memory json, string memory tensor, string memory opening)
        internal
        pure
        returns (Element memory e)
    {
        e.commitment = vm.parseJsonBytes32(json, string.concat(tensor, ".commitment"));
        e.dtype = uint8(vm.parseJsonUint(json, string.concat(tensor, ".dtype")));
        uint256[] memory dims = vm.parseJsonUintArray(json, string.concat(tensor, ".shape"));
        e.shape = new uint64[](dims.length);
        for (uint256 i; i < dims.length; ++i) {
            e.shape[i] = uint64(dims[i]);
        }
        e.index = vm.parseJsonUint(json, string.concat(opening, ".index"));
        e.chunk = vm.parseJsonBytes(json, string.concat(opening, ".chunk"));
        e.siblings = vm.parseJsonBytes32Array(json, string.concat(opening, ".siblings"));
        e.valueBits = vm.parseJsonUint(json, string.concat(opening, ".valueBits"));
    }

    function _vectors(string memory file) internal view returns (string memory) {
        return vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/", file));
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }
}
