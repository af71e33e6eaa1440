// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {Test, console} from "forge-std/Test.sol";

import {
    MerkleProofLength,
    TensorChunkLength,
    TensorCommitmentMismatch,
    TensorElementOutOfRange,
    TensorTooLarge,
    TensorTooManyDims,
    TensorUnsupportedDtype
} from "../../src/lib/Errors.sol";
import {TensorLib} from "../../src/lib/TensorLib.sol";
import {TensorLibHarness} from "../harness/TensorLibHarness.sol";
import {Reference} from "../utils/Reference.sol";

contract TensorLibTest is Test {
    uint256 internal constant CHUNK = 4096;
    uint256 internal constant MAX_NBYTES = uint256(type(uint64).max) * CHUNK;

    TensorLibHarness internal lib;

    /// @dev One element opening of tensors.json / negative.json, decoded.
    struct Element {
        bytes32 commitment;
        uint8 dtype;
        uint64[] shape;
        uint256 index;
        bytes chunk;
        bytes32[] siblings;
    }

    function setUp() public {
        lib = new TensorLibHarness();
    }

    // ---------------------------------------------------------------- shared vectors

    function test_commitmentOf_tensorVectors_succeeds() public view {
        string memory json = _vectors("tensors.json");
        assertEq(vm.parseJsonUint(json, ".version"), 1, "version");
        assertEq(vm.parseJsonUint(json, ".chunk"), CHUNK, "chunk size");
        uint256 cases;
        for (; vm.keyExistsJson(json, _at(".cases", cases)); ++cases) {
            string memory c = _at(".cases", cases);
            uint8 dtype = uint8(vm.parseJsonUint(json, string.concat(c, ".dtype")));
            uint64[] memory shape = _shape(json, string.concat(c, ".shape"));
            bytes32 dataRoot = vm.parseJsonBytes32(json, string.concat(c, ".dataRoot"));
            bytes32 commitment = vm.parseJsonBytes32(json, string.concat(c, ".commitment"));
            uint256 numel = lib.numel(shape);
            uint256 nbytes = numel * lib.elementSize(dtype);
            assertEq(numel, vm.parseJsonUint(json, string.concat(c, ".numel")), "numel");
            assertEq(nbytes, vm.parseJsonUint(json, string.concat(c, ".nbytes")), "nbytes");
            assertEq(
                (nbytes + CHUNK - 1) / CHUNK,
                vm.parseJsonUint(json, string.concat(c, ".chunkCount")),
                "chunks"
            );
            assertEq(lib.header(dtype, shape), Reference.header(dtype, shape), "header");
            assertEq(lib.commitmentOf(dtype, shape, dataRoot), commitment, "commitmentOf");
            assertEq(Reference.commitment(dtype, shape, dataRoot), commitment, "reference commitment");
        }
        assertEq(cases, 7, "empty, scalar, float32, int64, bool, bfloat16, 1 MiB");
    }

    function test_dataRoot_tensorVectors_succeeds() public view {
        string memory json = _vectors("tensors.json");
        uint256 withData;
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            if (!vm.parseJsonBool(json, string.concat(c, ".hasData"))) continue;
            bytes memory data = vm.parseJsonBytes(json, string.concat(c, ".data"));
            assertEq(data.length, vm.parseJsonUint(json, string.concat(c, ".nbytes")), "data length");
            assertEq(
                Reference.dataRoot(data), vm.parseJsonBytes32(json, string.concat(c, ".dataRoot")), "dataRoot"
            );
            ++withData;
        }
        assertEq(withData, 6, "every case but the 1 MiB one carries its data");
    }

    function test_verifyElement_tensorVectors_succeeds() public view {
        string memory json = _vectors("tensors.json");
        uint256 openings;
        for (uint256 n; vm.keyExistsJson(json, _at(".cases", n)); ++n) {
            string memory c = _at(".cases", n);
            bool hasData = vm.parseJsonBool(json, string.concat(c, ".hasData"));
            bytes memory data = vm.parseJsonBytes(json, string.concat(c, ".data"));
            for (uint256 i; vm.keyExistsJson(json, _at(string.concat(c, ".openings"), i)); ++i) {
                string memory o = _at(string.concat(c, ".openings"), i);
                Element memory e = _element(json, c, o);
                uint256 size = lib.elementSize(e.dtype);
                uint256 j = e.index * size / CHUNK;
                assertEq(vm.parseJsonUint(json, string.concat(o, ".chunkIndex")), j, "chunkIndex");
                uint256 valueBits = vm.parseJsonUint(json, string.concat(o, ".valueBits"));
                assertEq(
                    valueBits, Reference.littleEndian(e.chunk, e.index * size % CHUNK, size), "reference bits"
                );
                if (hasData) {
                    uint256 end = (j + 1) * CHUNK < data.length ? (j + 1) * CHUNK : data.length;
                    assertEq(e.chunk, Reference.slice(data, j * CHUNK, end), "chunk of the data");
                    assertEq(e.siblings, Reference.proof(Reference.chunkLeaves(data), j), "siblings");
                }
                assertEq(
                    lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings), valueBits
                );
                ++openings;
            }
        }
        // empty: none; scalar: 1; the other five: first, middle and last.
        assertEq(openings, 16, "element openings");
    }

    function test_verifyElement_negativeVectors_reverts() public {
        string memory json = _vectors("negative.json");
        uint256 cases;
        for (; vm.keyExistsJson(json, _at(".elements", cases)); ++cases) {
            string memory c = _at(".elements", cases);
            string memory reason = vm.parseJsonString(json, string.concat(c, ".reason"));
            Element memory e = _element(json, c, c);
            (string memory errorName, bytes memory expected) = _expectedElementError(reason, e);
            assertEq(vm.parseJsonString(json, string.concat(c, ".error")), errorName, reason);
            vm.expectRevert(expected);
            lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
        }
        assertEq(cases, 8, "negative element cases");
    }

    /// @dev The error each `reason` of negative.json must raise, with its arguments recomputed here.
    function _expectedElementError(string memory reason, Element memory e)
        internal
        pure
        returns (string memory, bytes memory)
    {
        bytes32 r = keccak256(bytes(reason));
        if (r == keccak256("unsupported_dtype")) {
            return
                ("TensorUnsupportedDtype", abi.encodeWithSelector(TensorUnsupportedDtype.selector, e.dtype));
        }
        uint256 numel = _numel(e.shape);
        if (r == keccak256("element_out_of_range")) {
            return (
                "TensorElementOutOfRange",
                abi.encodeWithSelector(TensorElementOutOfRange.selector, e.index, numel)
            );
        }
        uint256 size = _size(e.dtype);
        uint256 j = e.index * size / CHUNK;
        if (
            r == keccak256("truncated_chunk") || r == keccak256("extended_chunk")
                || r == keccak256("wrong_shape")
        ) {
            uint256 want = numel * size - j * CHUNK < CHUNK ? numel * size - j * CHUNK : CHUNK;
            return
                (
                    "TensorChunkLength",
                    abi.encodeWithSelector(TensorChunkLength.selector, e.chunk.length, want)
                );
        }
        if (
            r == keccak256("wrong_chunk_byte") || r == keccak256("wrong_dtype")
                || r == keccak256("wrong_sibling")
        ) {
            return ("TensorCommitmentMismatch", _mismatch(e));
        }
        revert(string.concat("negative.json: unknown element reason ", reason));
    }

    // ---------------------------------------------------------------- elementSize / header / numel

    function test_elementSize_everyDtype_succeeds() public view {
        uint8[11] memory sizes = [0, 4, 8, 2, 2, 1, 1, 2, 4, 8, 1];
        for (uint8 dtype = 1; dtype <= 10; ++dtype) {
            assertEq(lib.elementSize(dtype), sizes[dtype], vm.toString(dtype));
        }
    }

    function test_elementSize_dtypeZero_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, uint8(0)));
        lib.elementSize(0);
    }

    function test_elementSize_dtypeEleven_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, uint8(11)));
        lib.elementSize(11);
    }

    function testFuzz_elementSize_unknownDtype_reverts(uint8 dtype) public {
        vm.assume(dtype == 0 || dtype > 10);
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, dtype));
        lib.elementSize(dtype);
    }

    function test_header_scalar_succeeds() public view {
        assertEq(lib.header(1, new uint64[](0)), hex"0100");
    }

    function test_header_bigDims_succeeds() public view {
        uint64[] memory shape = new uint64[](3);
        (shape[0], shape[1], shape[2]) = (type(uint64).max, 0x0102030405060708, 0);
        assertEq(lib.header(9, shape), hex"0903ffffffffffffffff01020304050607080000000000000000");
    }

    function testFuzz_header_matchesReference_succeeds(uint8 dtype, uint64[] memory shape) public view {
        dtype = uint8(bound(dtype, 1, 10));
        if (shape.length > 32) {
            assembly ("memory-safe") {
                // Keep the first 32 dims: shorten the array in place.
                mstore(shape, 32)
            }
        }
        assertEq(lib.header(dtype, shape), Reference.header(dtype, shape));
    }

    function test_header_maxDims_succeeds() public view {
        assertEq(lib.header(5, new uint64[](32)).length, 2 + 8 * 32);
    }

    function test_header_tooManyDims_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TensorTooManyDims.selector, 33));
        lib.header(1, new uint64[](33));
    }

    function test_commitmentOf_dtypeZero_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, uint8(0)));
        lib.commitmentOf(0, new uint64[](1), keccak256("root"));
    }

    function test_numel_shapes_succeeds() public view {
        assertEq(lib.numel(new uint64[](0)), 1, "scalar");
        assertEq(lib.numel(_dims(3, 0, 5)), 0, "zero dim");
        assertEq(lib.numel(_dims(3, 4, 5)), 60, "3x4x5");
        uint64 m = type(uint64).max;
        assertEq(lib.numel(_dims(m, m, m)), uint256(m) * m * m, "exact past 2^128");
    }

    function test_numel_overflow_succeeds() public view {
        uint64[] memory shape = new uint64[](5);
        for (uint256 i; i < 5; ++i) {
            shape[i] = type(uint64).max;
        }
        assertEq(lib.numel(shape), type(uint256).max, "saturates");
        shape[4] = 0;
        assertEq(lib.numel(shape), 0, "a zero dim after saturation still gives 0");
    }

    // ---------------------------------------------------------------- verifyElement: rules

    function test_verifyElement_dtypeZero_reverts() public {
        Element memory e = _opening(1, _dims(10, 0, 0), 3, 1);
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, uint8(0)));
        lib.verifyElement(e.commitment, 0, e.shape, e.index, e.chunk, e.siblings);
    }

    function test_verifyElement_dtypeEleven_reverts() public {
        Element memory e = _opening(1, _dims(10, 0, 0), 3, 2);
        vm.expectRevert(abi.encodeWithSelector(TensorUnsupportedDtype.selector, uint8(11)));
        lib.verifyElement(e.commitment, 11, e.shape, e.index, e.chunk, e.siblings);
    }

    function test_verifyElement_tooManyDims_reverts() public {
        Element memory e = _opening(1, _dims(10, 0, 0), 3, 3);
        uint64[] memory shape = new uint64[](33);
        for (uint256 i; i < 33; ++i) {
            shape[i] = 1;
        }
        vm.expectRevert(abi.encodeWithSelector(TensorTooManyDims.selector, 33));
        lib.verifyElement(e.commitment, e.dtype, shape, 0, e.chunk, e.siblings);
    }

    function test_verifyElement_indexEqualsNumel_reverts() public {
        Element memory e = _opening(8, _dims(3, 7, 0), 20, 4);
        vm.expectRevert(abi.encodeWithSelector(TensorElementOutOfRange.selector, 21, 21));
        lib.verifyElement(e.commitment, e.dtype, e.shape, 21, e.chunk, e.siblings);
    }

    function test_verifyElement_emptyTensor_reverts() public {
        uint64[] memory shape = _dims(0, 3, 0);
        bytes32 commitment = Reference.commitment(1, shape, Reference.root(new bytes32[](0)));
        vm.expectRevert(abi.encodeWithSelector(TensorElementOutOfRange.selector, 0, 0));
        lib.verifyElement(commitment, 1, shape, 0, "", new bytes32[](0));
    }

    function test_verifyElement_chunkOneByteShort_reverts() public {
        // 3000 float32s: 12000 bytes, chunks of 4096, 4096, 3808; element 2500 is in the last one.
        Element memory e = _opening(1, _dims(3000, 0, 0), 2500, 5);
        assertEq(e.chunk.length, 3808);
        bytes memory shorter = Reference.slice(e.chunk, 0, 3807);
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, 3807, 3808));
        lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, shorter, e.siblings);
    }

    function test_verifyElement_chunkOneByteLong_reverts() public {
        Element memory e = _opening(1, _dims(3000, 0, 0), 5, 6);
        assertEq(e.chunk.length, CHUNK);
        bytes memory longer = bytes.concat(e.chunk, hex"00");
        vm.expectRevert(abi.encodeWithSelector(TensorChunkLength.selector, CHUNK + 1, CHUNK));
        lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, longer, e.siblings);
    }

    function test_verifyElement_missingSibling_reverts() public {
        Element memory e = _opening(1, _dims(3000, 0, 0), 5, 7);
        assertEq(e.siblings.length, 2);
        bytes32[] memory fewer = new bytes32[](1);
        fewer[0] = e.siblings[0];
        vm.expectRevert(abi.encodeWithSelector(MerkleProofLength.selector, 1, 2));
        lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, fewer);
    }

    function test_verifyElement_otherCommitment_reverts() public {
        Element memory e = _opening(2, _dims(5, 5, 0), 7, 8);
        bytes32 committed = keccak256("some other tensor");
        bytes32 computed = e.commitment;
        e.commitment = committed;
        vm.expectRevert(abi.encodeWithSelector(TensorCommitmentMismatch.selector, computed, committed));
        lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
    }

    function test_verifyElement_scalar_succeeds() public view {
        Element memory e = _opening(9, new uint64[](0), 0, 9);
        assertEq(e.chunk.length, 8);
        assertEq(
            lib.verifyElement(e.commitment, e.dtype, e.shape, 0, e.chunk, e.siblings),
            Reference.littleEndian(e.chunk, 0, 8)
        );
    }

    function test_verifyElement_tooLarge_reverts() public {
        uint64 m = type(uint64).max;
        uint64[] memory shape = _dims(m, 4096, 0); // 4 * 4096 * (2^64 - 1) bytes of float32
        uint256 numel = uint256(m) * 4096;
        vm.expectRevert(abi.encodeWithSelector(TensorTooLarge.selector, numel, MAX_NBYTES / 4));
        lib.verifyElement(bytes32(0), 1, shape, 0, new bytes(CHUNK), new bytes32[](64));
    }

    function test_verifyElement_dimsProductOverflows_reverts() public {
        uint64[] memory shape = new uint64[](5);
        for (uint256 i; i < 5; ++i) {
            shape[i] = type(uint64).max;
        }
        vm.expectRevert(abi.encodeWithSelector(TensorTooLarge.selector, type(uint256).max, MAX_NBYTES / 8));
        lib.verifyElement(bytes32(0), 9, shape, 0, new bytes(CHUNK), new bytes32[](64));
    }

    /// @dev The largest committable tensor (2^64 - 1 full chunks of uint8) gets through every shape
    ///      check and the 64-sibling fold; only the (made-up) commitment is wrong.
    function test_verifyElement_largestTensor_reverts() public {
        uint64[] memory shape = _dims(type(uint64).max, 4096, 0);
        uint256 index = uint256(type(uint64).max) * 4096 - 1; // last element, last chunk
        bytes memory chunk = new bytes(CHUNK);
        bytes32[] memory siblings = new bytes32[](64);
        for (uint256 k; k < 64; ++k) {
            siblings[k] = keccak256(abi.encode(k));
        }
        uint256 count = type(uint64).max;
        bytes32 root = Reference.fold(count, count - 1, Reference.leaf(chunk), siblings);
        bytes32 computed = Reference.commitment(5, shape, root);
        vm.expectRevert(abi.encodeWithSelector(TensorCommitmentMismatch.selector, computed, bytes32(0)));
        lib.verifyElement(bytes32(0), 5, shape, index, chunk, siblings);
    }

    // ---------------------------------------------------------------- fuzz

    function testFuzz_verifyElement_randomTensor_succeeds(
        uint8 dtype,
        uint256 numel,
        uint256 index,
        uint256 seed
    ) public view {
        dtype = uint8(bound(dtype, 1, 10));
        numel = bound(numel, 1, 3000);
        index = bound(index, 0, numel - 1);
        Element memory e = _opening(dtype, _dims(uint64(numel), 0, 0), index, seed);
        uint256 size = _size(dtype);
        assertEq(
            lib.verifyElement(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings),
            Reference.littleEndian(e.chunk, index * size % CHUNK, size)
        );
    }

    function testFuzz_verifyElement_flippedChunkBit_reverts(
        uint256 numel,
        uint256 index,
        uint256 at,
        uint256 seed
    ) public {
        numel = bound(numel, 1, 3000);
        index = bound(index, 0, numel - 1);
        Element memory e = _opening(7, _dims(uint64(numel), 0, 0), index, seed);
        at = bound(at, 0, 8 * e.chunk.length - 1);
        e.chunk[at / 8] ^= bytes1(uint8(1) << uint8(at % 8));
        bytes32 committed = e.commitment;
        vm.expectRevert(_mismatch(e));
        lib.verifyElement(committed, e.dtype, e.shape, e.index, e.chunk, e.siblings);
    }

    // ---------------------------------------------------------------- gas

    function test_verifyElement_gas1MiBMiddle_succeeds() public view {
        string memory json = _vectors("tensors.json");
        string memory c = ".cases[6]";
        assertEq(vm.parseJsonString(json, string.concat(c, ".name")), "w_1mib_f32");
        Element memory e = _element(json, c, string.concat(c, ".openings[1]"));
        assertEq(e.index, 131072, "middle element");
        uint256 g = lib.verifyElementGas(e.commitment, e.dtype, e.shape, e.index, e.chunk, e.siblings);
        console.log("gas: TensorLib.verifyElement, 1 MiB float32, middle element", g);
        assertLt(g, 12_000, "one 4 KiB leaf hash, 8 nodes, a commitment");
    }

    // ---------------------------------------------------------------- helpers

    /// @dev A tensor of `dims` (zero dims dropped) with bytes from `seed`, and its opening at `index`.
    function _opening(uint8 dtype, uint64[] memory dims, uint256 index, uint256 seed)
        internal
        pure
        returns (Element memory e)
    {
        e.dtype = dtype;
        e.shape = dims;
        e.index = index;
        uint256 size = _size(dtype);
        bytes memory data = new bytes(_numel(dims) * size);
        for (uint256 i; i < data.length; i += 32) {
            bytes32 word = keccak256(abi.encode(seed, i));
            for (uint256 k; k < 32 && i + k < data.length; ++k) {
                data[i + k] = word[k];
            }
        }
        bytes32[] memory leaves = Reference.chunkLeaves(data);
        uint256 j = index * size / CHUNK;
        uint256 end = (j + 1) * CHUNK < data.length ? (j + 1) * CHUNK : data.length;
        e.chunk = Reference.slice(data, j * CHUNK, end);
        e.siblings = Reference.proof(leaves, j);
        e.commitment = Reference.commitment(dtype, dims, Reference.root(leaves));
    }

    /// @dev `TensorCommitmentMismatch` with the commitment the opening really implies.
    function _mismatch(Element memory e) internal pure returns (bytes memory) {
        uint256 size = _size(e.dtype);
        uint256 count = (_numel(e.shape) * size + CHUNK - 1) / CHUNK;
        bytes32 root = Reference.fold(count, e.index * size / CHUNK, Reference.leaf(e.chunk), e.siblings);
        bytes32 computed = Reference.commitment(e.dtype, e.shape, root);
        return abi.encodeWithSelector(TensorCommitmentMismatch.selector, computed, e.commitment);
    }

    function _element(string memory json, string memory tensor, string memory opening)
        internal
        pure
        returns (Element memory e)
    {
        e.commitment = vm.parseJsonBytes32(json, string.concat(tensor, ".commitment"));
        e.dtype = uint8(vm.parseJsonUint(json, string.concat(tensor, ".dtype")));
        e.shape = _shape(json, string.concat(tensor, ".shape"));
        e.index = vm.parseJsonUint(json, string.concat(opening, ".index"));
        e.chunk = vm.parseJsonBytes(json, string.concat(opening, ".chunk"));
        e.siblings = vm.parseJsonBytes32Array(json, string.concat(opening, ".siblings"));
    }

    function _shape(string memory json, string memory key) internal pure returns (uint64[] memory shape) {
        uint256[] memory dims = vm.parseJsonUintArray(json, key);
        shape = new uint64[](dims.length);
        for (uint256 i; i < dims.length; ++i) {
            shape[i] = uint64(dims[i]);
        }
    }

    /// @dev A shape of one to three dims: trailing zero arguments are dropped, `a` always kept.
    function _dims(uint64 a, uint64 b, uint64 c) internal pure returns (uint64[] memory shape) {
        shape = new uint64[](c != 0 ? 3 : b != 0 ? 2 : 1);
        shape[0] = a;
        if (shape.length > 1) shape[1] = b;
        if (shape.length > 2) shape[2] = c;
    }

    function _numel(uint64[] memory shape) internal pure returns (uint256 n) {
        n = 1;
        for (uint256 i; i < shape.length; ++i) {
            n *= shape[i];
        }
    }

    function _size(uint8 dtype) internal pure returns (uint256) {
        uint8[11] memory sizes = [0, 4, 8, 2, 2, 1, 1, 2, 4, 8, 1];
        return sizes[dtype];
    }

    function _vectors(string memory file) internal view returns (string memory) {
        return vm.readFile(string.concat(vm.projectRoot(), "/contracts/test/vectors/", file));
    }

    function _at(string memory array, uint256 i) internal pure returns (string memory) {
        return string.concat(array, "[", vm.toString(i), "]");
    }
}
