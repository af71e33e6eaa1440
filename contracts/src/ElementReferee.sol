// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.28;

import {IElementReferee} from "./interfaces/IElementReferee.sol";
import {MerkleLib} from "./lib/MerkleLib.sol";
import {TensorLib} from "./lib/TensorLib.sol";
import {RepOpsElement} from "./lib/RepOpsElement.sol";
import {ITraceReferee} from "./interfaces/ITraceReferee.sol";
import {DotReferee} from "./DotReferee.sol";
import {ElementPowExponent} from "./lib/FloatErrors.sol";
import {TensorTooLarge} from "./lib/Errors.sol";
import {
    ElementRefereeUnknown,
    ElementRefereeBadParams,
    ElementRefereeWrongStage,
    ElementRefereeNotPlaying,
    ElementRefereeNotYourTurn,
    ElementRefereeClockExpired,
    ElementRefereeClockRunning,
    ElementRefereeWidth,
    ElementRefereeHeaderMismatch,
    ElementRefereeDtype,
    ElementRefereeShape,
    ElementRefereeHeaderDiffers,
    ElementRefereeNoDifference,
    ElementRefereePaddingNode,
    ElementRefereeFoldMismatch,
    ElementRefereeOpponentMismatch,
    ElementRefereeChunkMismatch,
    ElementRefereeChunkLength,
    ElementRefereeNotOwner,
    ElementRefereeApplicable,
    ElementRefereeNotDot,
    ElementRefereeArgsMismatch
} from "./lib/ElementRefereeErrors.sol";

/// @title ElementReferee
/// @notice The element phase for elementwise fp32 operators (docs/game.md section 2.7): a disagreement
///         about one node's output, under agreed inputs, narrowed to one output element and decided by
///         computing that element on chain.
/// @dev Holds no funds; every loop is bounded (at most 3 inputs, 32 dimensions, 64 descent nodes,
///      128 words of a chunk, 32 bytes of a word).
contract ElementReferee is IElementReferee {
    uint256 private constant CHUNK = TensorLib.CHUNK;
    uint8 private constant F32 = 1;
    // The dtypes of the casts F32_TO_F64 .. F32_TO_BOOL (docs/commitments.md codes: f32 1, f64 2, u8 5, i8 6,
    // i16 7, i32 8, i64 9, bool 10), (input | output << 8) per code, 16 bits each from the low end.
    uint256 private constant CASTS = 0x000a0105010601070108010901010a010901020201;
    uint8 private constant BOOL = 10;
    /// @notice The op codes after RepOpsElement's: mm and addmm, whose element the dot phase decides
    ///         (docs/game.md 2.8). This contract isolates their first differing element; `dot` takes over.
    uint256 public constant MM = 64;
    uint256 public constant ADDMM = 65;
    /// @notice The first code of the transcendental functions (exp, log, log1p, rsqrt, tanh, sigmoid, erf, gelu,
    ///         gelu tanh: TracePrograms' order), whose element the trace game decides (docs/game.md 2.9).
    uint256 public constant EXP = 66;
    uint256 private constant TRACE_LAST = 74;
    /// @notice The first code of the sums (docs/game.md 2.10): `sum.dim_IntList` keyed by its argument bytes to
    ///         SUM + variant (the reduced dims and keepdim, ISumReferee.Params), whose element the sum game decides.
    uint256 private constant SUM = 112;
    uint256 private constant SUM_LAST = 239;
    /// @notice The Tensor-Scalar codes (docs/game.md 2.7): an fp32 tensor and a Python number, `mul.Tensor(x, s)`
    ///         (48), `div.Tensor(x, s)` (49), `add.Tensor(x, s)` (50), `sub.Tensor(x, s)` (51), both with alpha 1.
    ///         The number is read from the node's argument bytes (`openArgs`) as a binary64 pattern, and the
    ///         element is `RepOpsElement` MUL, DIV, ADD or SUB of the input element and `scalarToF32(s)`.
    uint256 public constant MUL_SCALAR = 48;
    uint256 private constant SCALAR_LAST = 51;
    // Their RepOpsElement codes, a byte each from MUL_SCALAR on: MUL 4, DIV 5, ADD 0, SUB 2.
    uint256 private constant SCALAR_BASE = 0x02000504;
    // The argument bytes of those calls (canonical CBOR, docs/program.md): a map-free list of pairs,
    // [["self", undefined], ["other", s]] for mul and div, and ["alpha", 1] after for add and sub.
    bytes14 private constant ARGS_SELF_OTHER = hex"826473656c66f782656f74686572";
    bytes8 private constant ARGS_ALPHA_ONE = hex"8265616c70686101";
    /// @notice The data-movement codes (docs/game.md 2.7, "Data movement"): the output element is one element of
    ///         the input, copied (any dtype: the input's is the output's). COPY (52): at the same flat index (view,
    ///         squeeze, unsqueeze, clone: the input and the output hold the same elements in the same order);
    ///         EXPAND (53): at its broadcast position (expand); PERMUTE (54): at its permuted position, the dims read
    ///         from the node's argument bytes (`openArgs`).
    uint256 public constant COPY = 52;
    uint256 private constant EXPAND = 53;
    uint256 private constant PERMUTE = 54;
    // permute's argument bytes up to the dims' list: [["self", undefined], ["dims", [d0, d1, ..]]].
    bytes14 private constant ARGS_SELF_DIMS = hex"82826473656c66f7826464696d73";
    /// @notice The creation codes (docs/game.md 2.7, "Creation ops"): the output element is the call's fill value
    ///         rounded to fp32 (`scalarToF32`, the kernel's rounding), read from the argument bytes (`openArgs`).
    ///         CONST0 (55): no tensor input, `scalar_tensor(s, dtype=float32)` and `full(size, v, dtype=float32)`;
    ///         CONST1 (56): one fp32 input giving the shape, `full_like(x, v, dtype=None, memory_format=..)`.
    uint256 private constant CONST0 = 55;
    uint256 private constant CONST1 = 56;
    // Their templates around the fill value (canonical CBOR): [["s", v], ...; [["size", [..]], ...;
    // ["fill_value", ...; ["dtype", "float32"]]; [["self", undefined], ["fill_value", ...
    bytes4 private constant ARGS_S = hex"82826173";
    bytes7 private constant ARGS_SIZE = hex"83826473697a65";
    bytes12 private constant ARGS_FILL = hex"826a66696c6c5f76616c7565";
    bytes32 private constant ARGS_F32_TAIL = keccak256(hex"8265647479706567666c6f61743332");
    bytes20 private constant ARGS_SELF_FILL = hex"84826473656c66f7826a66696c6c5f76616c7565";
    // full_like's after the value: ["dtype", None], ["memory_format", preserve_format]] or [.., None]].
    bytes32 private constant ARGS_PRESERVE_TAIL =
        keccak256(hex"82656474797065f6826d6d656d6f72795f666f726d61746f70726573657276655f666f726d6174");
    bytes32 private constant ARGS_NONE_TAIL = keccak256(hex"82656474797065f6826d6d656d6f72795f666f726d6174f6");

    /// @notice The DotReferee this referee hands mm and addmm elements to (deployed by the constructor).
    address public immutable dot;
    /// @dev The TraceReferee, which also computes this referee's elements (`evaluateElement`).
    ITraceReferee private immutable _unit;

    /// @dev The first slot holds what every move writes (turn, clocks, move count).
    struct Game {
        Stage stage;
        Outcome outcome;
        Side toMove;
        uint8 op;
        uint8 nIn;
        uint16 moves;
        uint40 turnStartedAt;
        uint40 defenderClock; // seconds left, not counting the running turn
        uint40 challengerClock;
        uint40 defenderGas; // each side's metered gas (in the slot every move writes: the meter is cheap)
        uint40 challengerGas;
        address owner;
        uint64 arity;
        address[2] players;
        uint64 chunkCount;
        uint64 height;
        uint64 position;
        uint8 outDtype;
        uint64[2] scalars;
        uint128 element; // e < numel <= MAX_NBYTES < 2^77
        uint64 defenderValue; // element e of each side's output
        uint64 challengerValue;
        bytes32 headerHash; // keccak256(u8(dtype) || u64 dims) of the output
        bytes32 pending; // keccak256 of the defender's last descent list
        bytes32[2] current;
        bytes32[2] outputs;
        bytes32[3] inputs;
        uint256 nbytes; // of the output
    }

    // The meter of docs/game.md section 4, as DisputeGame's, in gas only: the base cost of a transaction,
    // calldata at 40 gas a byte (an upper bound of its cost, floor pricing included), and the meter's own
    // update (a slot the move already wrote) and the call's return.
    uint256 private constant TX_BASE_GAS = 21_000;
    uint256 private constant CALLDATA_GAS_PER_BYTE = 40;
    uint256 private constant METER_GAS = 1_000;

    uint256 private _count;
    mapping(uint256 gameId => Game) private _games;

    /// @dev Charges a player's call to its side's meter.
    modifier metered(uint256 gameId) {
        uint256 start = gasleft();
        _;
        _meter(gameId, start);
    }

    /// @param trace The TraceReferee that decides the transcendental functions' elements (codes EXP.. ; the
    ///              DotReferee hands them to it, docs/game.md 2.9).
    /// @param sum The SumReferee that decides the sums' elements (codes SUM..; the DotReferee hands them to it,
    ///            docs/game.md 2.10).
    constructor(address trace, address sum) {
        dot = address(new DotReferee(address(this), trace, sum));
        _unit = ITraceReferee(trace);
    }

    // ---- opening -------------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function open(Params calldata p) external returns (uint256 gameId) {
        return _open(p);
    }

    /// @inheritdoc IElementReferee
    function openNode(
        bytes32 opHash,
        bytes32 argHash,
        bytes32[] calldata inputs,
        bytes32[2] calldata outputs,
        address[2] calldata players,
        uint64[2] calldata clocks,
        uint64 arity
    ) external returns (uint256 gameId) {
        uint256 code = elementOp(opHash, argHash, inputs.length);
        // Not keyed with its arguments: a Tensor-Scalar call (its number varies), a data-movement call (its sizes
        // and dims vary) or a creation call (its fill value varies) is keyed with argHash 0.
        bool byOp = code == 0;
        if (byOp) code = elementOp(opHash, 0, inputs.length);
        if (code == 0) return 0;
        gameId = _open(
            Params({
                op: code - 1,
                inputs: inputs,
                scalars: [uint64(0), uint64(0)],
                outputs: outputs,
                players: players,
                clocks: clocks,
                arity: arity
            })
        );
        if (byOp && code != COPY + 1 && code != EXPAND + 1) {
            // The referee reads a number, a fill value or the dims: the defender first opens the argument bytes
            // (openArgs), checked against argHash.
            Game storage g = _games[gameId];
            g.stage = Stage.Args;
            g.pending = argHash;
        }
    }

    /// @inheritdoc IElementReferee
    function openArgs(uint256 gameId, bytes calldata args) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Args);
        bytes32 h = sha256(args);
        if (h != g.pending) revert ElementRefereeArgsMismatch(gameId, h, g.pending);
        uint256 op = g.op;
        (bool ok, uint64 s) = op == PERMUTE
            ? _permuteArg(args)
            : op == CONST0 || op == CONST1 ? _constArg(op, args) : _scalarArg(op, args);
        _pass(g, Side.Defender);
        if (!ok) return _resolve(gameId, g, Outcome.Inapplicable);
        g.scalars[0] = s;
        g.stage = Stage.Header;
        emit ArgsOpened(gameId, s);
    }

    // The table of docs/game.md 2.7, written by `python -m offchain.game.element_table` and checked against it
    // by tests/game/test_element_table.py: per entry the first 12 bytes of
    // keccak256(abi.encode(H(op), H(argBytes), nIn)), then the game's op code + 1 (one byte); the
    // Tensor-Scalar, data-movement and creation entries are keyed with argHash 0 (openNode's second lookup). A node
    // another entry's key would take needs a 96-bit second preimage (about 2^92 hashes for the table).
    //   1 aten.add.Tensor
    //   3 aten.sub.Tensor
    //   5 aten.mul.Tensor
    //   6 aten.div.Tensor
    //   7 aten.neg.default
    //   8 aten.reciprocal.default
    //   9 aten.sqrt.default
    //  10 aten.rsqrt.default
    //  11 aten.abs.default
    //  13 aten.relu.default
    //  14 aten.where.self
    //  65 aten.mm.default
    //  66 aten.addmm.default
    //  67 aten.exp.default
    //  68 aten.log.default
    //  69 aten.log1p.default
    //  71 aten.tanh.default
    //  72 aten.sigmoid.default
    //  73 aten.erf.default
    //  74 aten.gelu.default
    //  75 aten.gelu.default
    //  53 aten.clone.default
    //  53 aten.clone.default
    //  27 aten._to_copy.default
    //  49 aten.mul.Tensor (Tensor-Scalar)
    //  50 aten.div.Tensor (Tensor-Scalar)
    //  51 aten.add.Tensor (Tensor-Scalar)
    //  52 aten.sub.Tensor (Tensor-Scalar)
    //  53 aten.view.default (any arguments)
    //  53 aten._unsafe_view.default (any arguments)
    //  53 aten.squeeze.dims (any arguments)
    //  53 aten.squeeze.dim (any arguments)
    //  53 aten.unsqueeze.default (any arguments)
    //  54 aten.expand.default (any arguments)
    //  55 aten.permute.default (any arguments)
    //  56 aten.scalar_tensor.default (any fill value)
    //  56 aten.full.default (any fill value)
    //  57 aten.full_like.default (any fill value)
    // 113 aten.sum.dim_IntList dim=[] keepdim=False
    // 115 aten.sum.dim_IntList dim=[0] keepdim=False
    // 117 aten.sum.dim_IntList dim=[1] keepdim=False
    // 121 aten.sum.dim_IntList dim=[2] keepdim=False
    // 145 aten.sum.dim_IntList dim=[-1] keepdim=False
    // 119 aten.sum.dim_IntList dim=[0, 1] keepdim=False
    // 114 aten.sum.dim_IntList dim=[] keepdim=True
    // 116 aten.sum.dim_IntList dim=[0] keepdim=True
    // 118 aten.sum.dim_IntList dim=[1] keepdim=True
    // 122 aten.sum.dim_IntList dim=[2] keepdim=True
    // 146 aten.sum.dim_IntList dim=[-1] keepdim=True
    // 120 aten.sum.dim_IntList dim=[0, 1] keepdim=True
    bytes private constant TABLE = hex"c751f4a942d431ff1b206154011a8c3d4095d2660482805c9e0313690de099f4327b492265630563f348343fd6862ba5892f920662c071fe9f137c4472b8c955075e51654529e996d12545b2d70831fa46769e8d8cba339bd86b091330e8a2cdc1afb00fee46890aee11884bac8066154a149c860b8a738994fd7761d1aeef2e520d9dc792d539b269d3b7526c2e0e49aa1f20a8be43f3d023eece41af29544aa9c3dbecc2ea1fe3423c58eadafd4808a7396640a14334dcaa024f08c4aeac865b4544f9b653eba8178c12b06870e84592d917256242be0072ddc83e4706662eae7ab8be0f278c2469484db1649eb748c9fdbbd9ff4549cd14c4c5ac638658b5aad7ec4a936674c8414a305b871765c94bd422ecbaec6c70634d01922f35a5d402b5d8c1e2e5625fe73b3563990b8abd96cd91e39d11a71b5403490f94aa5f75f5b76a7b3164c657b7df5c81cafbf08dc03246dbe1c44474fee91fbfdbde33030361a3f25da7a031cc74d4346de44e3fe0d94f9955f48352355ea300e3296dd82f0a1abd2b35987bd09d91996fb5cafbce8435bdc71eb6ee707cd4bf18b937358e5db3243b53ee0a748b300d3597b44b45e7e9b5166a86459936dfae60fe3fd21785cc2d7fd43706524ece4f8411cf322f5bd038fe99e7565e810897b2bf21f3387254cc040b08d1af8a90ca84398c5272bbc6121001cc9b88357194de4a46c0ea6e93d5f8502873919db5cd4fe673e7a24c44d2752c721220ee283c3e676a5bcb7936e985afed7f3d32abb5999791811c712a5bbebd3559d7a3957701a7782724eb3627394679ca723383f853a506723fc5ff1e27744046601a826096834249463a76095247a7e9c0e883403c93e77a3174b0bb5817412873a9ddb7925294a553a903e87b62e6746378";

    /// @inheritdoc IElementReferee
    function elementOp(bytes32 opHash, bytes32 argHash, uint256 nIn) public pure virtual returns (uint256) {
        bytes12 k = bytes12(keccak256(abi.encode(opHash, argHash, nIn)));
        bytes memory t = TABLE;
        for (uint256 i; i < t.length; i += 13) {
            bytes32 w;
            assembly ("memory-safe") {
                w := mload(add(add(t, 32), i))
            }
            if (bytes12(w) == k) return uint8(w[12]);
        }
        return 0;
    }

    function _open(Params memory p) private returns (uint256 gameId) {
        (uint256 nIn, uint256 nScalars,,) = opSpec(p.op);
        if (p.inputs.length != nIn) revert ElementRefereeBadParams(2, p.inputs.length);
        address d = p.players[0];
        address c = p.players[1];
        if (d == c || d == address(0) || c == address(0)) revert ElementRefereeBadParams(3, uint160(c));
        if (p.outputs[0] == p.outputs[1]) revert ElementRefereeBadParams(4, uint256(p.outputs[0]));
        if (p.clocks[0] == 0 || p.clocks[1] == 0) revert ElementRefereeBadParams(5, 0);
        if (p.clocks[0] > type(uint40).max) revert ElementRefereeBadParams(5, p.clocks[0]);
        if (p.clocks[1] > type(uint40).max) revert ElementRefereeBadParams(5, p.clocks[1]);
        uint64 n = p.arity;
        if (n < 2 || n > 64 || n & (n - 1) != 0) revert ElementRefereeBadParams(6, n);
        for (uint256 i = nScalars; i < 2; ++i) {
            if (p.scalars[i] != 0) revert ElementRefereeBadParams(7, p.scalars[i]);
        }
        // pow's exponent is the one scalar that can make every evaluation revert: refuse it now.
        if (p.op == RepOpsElement.POW && !_powDefined(p.scalars[0])) revert ElementPowExponent(p.scalars[0]);
        gameId = ++_count;
        Game storage g = _games[gameId];
        g.stage = Stage.Header;
        g.op = uint8(p.op);
        g.nIn = uint8(nIn);
        g.turnStartedAt = uint40(block.timestamp);
        g.defenderClock = uint40(p.clocks[0]);
        g.challengerClock = uint40(p.clocks[1]);
        g.owner = msg.sender;
        g.arity = n;
        g.players = [d, c];
        g.scalars = p.scalars;
        g.outputs = p.outputs;
        for (uint256 k; k < nIn; ++k) {
            g.inputs[k] = p.inputs[k];
        }
        // Slots that moves overwrite start non-zero, so that every move is a cheap update (nothing reads
        // these values before a move sets them: the opener pays their first write).
        bytes32 preset = bytes32(uint256(1));
        g.pending = preset;
        g.current = [preset, preset];
        g.headerHash = preset;
        g.nbytes = 1;
        g.chunkCount = 1;
        g.element = 1;
        emit GameOpened(gameId, msg.sender, p.op, d, c, p.outputs[0], p.outputs[1]);
    }

    // ---- header stage --------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function openHeaders(uint256 gameId, Header calldata output, Header[] calldata inputs)
        external
        metered(gameId)
    {
        _openHeaders(gameId, output, inputs);
    }

    function _openHeaders(uint256 gameId, Header calldata output, Header[] calldata inputs) private {
        Game storage g = _begin(gameId, Stage.Header);
        Side side = g.toMove;
        uint256 s = uint8(side);
        bytes32 computed = TensorLib.commitmentOf(output.dtype, output.shape, output.dataRoot);
        if (computed != g.outputs[s]) revert ElementRefereeHeaderMismatch(0, computed, g.outputs[s]);
        bytes32 hh = keccak256(abi.encodePacked(output.dtype, output.shape));
        if (side == Side.Defender) {
            _checkInputs(g, output, inputs);
            uint256 size = TensorLib.elementSize(output.dtype);
            uint256 n = TensorLib.numel(output.shape); // saturated at 2^256 - 1
            uint256 maxNumel = TensorLib.MAX_NBYTES / size;
            if (n > maxNumel) revert TensorTooLarge(n, maxNumel);
            uint256 nbytes = n * size;
            uint64 k = uint64((nbytes + CHUNK - 1) / CHUNK);
            g.headerHash = hh;
            g.outDtype = output.dtype;
            g.nbytes = nbytes;
            g.chunkCount = k;
            g.current[0] = output.dataRoot;
            _pass(g, Side.Challenger);
            emit HeaderOpened(gameId, side, output.dataRoot, k);
            return;
        }
        if (inputs.length != 0) revert ElementRefereeWidth(inputs.length, 0);
        if (hh != g.headerHash) revert ElementRefereeHeaderDiffers(hh, g.headerHash);
        // Equal headers and equal data roots would be equal commitments, which open refused.
        if (output.dataRoot == g.current[0]) revert ElementRefereeNoDifference(gameId);
        g.current[1] = output.dataRoot;
        g.stage = Stage.ChunkDescent;
        g.height = uint64(MerkleLib.depth(g.chunkCount));
        _pass(g, Side.Defender);
        emit HeaderOpened(gameId, side, output.dataRoot, g.chunkCount);
    }

    /// @inheritdoc IElementReferee
    function proveInapplicable(uint256 gameId, uint256 k, Header calldata input) external metered(gameId) {
        Game storage g = _begin(gameId, Stage.Header);
        if (k >= g.nIn) revert ElementRefereeWidth(k, g.nIn);
        bytes32 c = TensorLib.commitmentOf(input.dtype, input.shape, input.dataRoot);
        if (c != g.inputs[k]) revert ElementRefereeHeaderMismatch(1 + k, c, g.inputs[k]);
        (,, uint256 inDtypes,) = opSpec(g.op);
        uint8 want = uint8(inDtypes >> (8 * k));
        // Data movement (dtype 0) takes every dtype: nothing to prove.
        if (want == 0 || input.dtype == want) revert ElementRefereeApplicable(1 + k, input.dtype);
        _pass(g, g.toMove);
        _resolve(gameId, g, Outcome.Inapplicable);
    }

    /// @dev The defender's input headers: commitments, dtypes, and the output shape as their broadcast.
    function _checkInputs(Game storage g, Header calldata output, Header[] calldata inputs) private view {
        uint256 op = g.op;
        (uint256 nIn,, uint256 inDtypes, uint8 outDtype) = opSpec(op);
        if (inputs.length != nIn) revert ElementRefereeWidth(inputs.length, nIn);
        // Dtype 0 in the spec: any, the output's (data movement).
        if (outDtype != 0 && output.dtype != outDtype) revert ElementRefereeDtype(0, output.dtype, outDtype);
        uint256 ndim = output.shape.length;
        for (uint256 k; k < nIn; ++k) {
            Header calldata h = inputs[k];
            bytes32 c = TensorLib.commitmentOf(h.dtype, h.shape, h.dataRoot);
            if (c != g.inputs[k]) revert ElementRefereeHeaderMismatch(1 + k, c, g.inputs[k]);
            uint8 want = uint8(inDtypes >> (8 * k));
            if (want == 0) want = output.dtype;
            if (h.dtype != want) revert ElementRefereeDtype(1 + k, h.dtype, want);
            if (h.shape.length > ndim && op != COPY && op < SUM) {
                revert ElementRefereeShape(1 + k, type(uint256).max, h.shape.length, ndim);
            }
        }
        // mm and addmm: DotReferee checks the output shape against A's and B's when it takes over; a sum's,
        // SumReferee against the input's and the dims.
        if (op >= MM || op == CONST0) return; // CONST0: no input, and the element does not depend on the shape
        if (op == COPY) {
            // The same elements in the same order: as many of them.
            uint256 n = TensorLib.numel(inputs[0].shape);
            uint256 m = TensorLib.numel(output.shape);
            if (n != m) revert ElementRefereeShape(1, type(uint256).max, n, m);
            return;
        }
        if (op == PERMUTE) {
            // Output dimension i is input dimension dims[i]: as many dimensions as dims has, and their sizes.
            uint64[] calldata sh = inputs[0].shape;
            uint256 s = g.scalars[0];
            if (ndim != s & 15) revert ElementRefereeShape(0, type(uint256).max, ndim, s & 15);
            if (sh.length != ndim) revert ElementRefereeShape(1, type(uint256).max, sh.length, ndim);
            for (uint256 i; i < ndim; ++i) {
                uint256 d = (s >> (4 + 4 * i)) & 15;
                if (output.shape[i] != sh[d]) revert ElementRefereeShape(0, i, output.shape[i], sh[d]);
            }
            return;
        }
        // Broadcasting (trailing dimensions aligned): at each output dimension, every input that has it
        // has size 1 or the common size, which the output must have (1 if all are 1 or absent); expand's output
        // may have any size where its input has 1 or nothing.
        for (uint256 i; i < ndim; ++i) {
            uint256 size = 1;
            for (uint256 k; k < nIn; ++k) {
                uint64[] calldata sh = inputs[k].shape;
                uint256 lead = ndim - sh.length;
                if (i < lead) continue;
                uint256 dim = sh[i - lead];
                if (dim == 1) continue;
                if (size != 1 && dim != size) revert ElementRefereeShape(1 + k, i - lead, dim, size);
                size = dim;
            }
            if (output.shape[i] != size && (op != EXPAND || size != 1)) {
                revert ElementRefereeShape(0, i, output.shape[i], size);
            }
        }
    }

    // ---- chunk descent -------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function descend(uint256 gameId, bytes32[] calldata mine, bytes32[] calldata theirs)
        external
        metered(gameId)
    {
        _descend(gameId, mine, theirs);
    }

    function _descend(uint256 gameId, bytes32[] calldata mine, bytes32[] calldata theirs) private {
        Game storage g = _begin(gameId, Stage.ChunkDescent);
        Side side = g.toMove;
        uint256 h = g.height;
        uint256 t = _log2(g.arity);
        if (t > h) t = h;
        uint256 w = 1 << t;
        if (mine.length != w) revert ElementRefereeWidth(mine.length, w);
        uint256 count = g.chunkCount;
        bytes32 folded = _fold(mine, h - t, g.position * w, count);
        if (h == MerkleLib.depth(count)) folded = MerkleLib.listRoot(count, folded);
        bytes32 want = g.current[uint8(side)];
        if (folded != want) revert ElementRefereeFoldMismatch(folded, want);
        if (side == Side.Defender) {
            if (theirs.length != 0) revert ElementRefereeWidth(theirs.length, 0);
            g.pending = keccak256(abi.encodePacked(mine));
            _pass(g, Side.Challenger);
            emit NodesPosted(gameId, uint64(h), g.position, mine);
            return;
        }
        _narrow(gameId, g, mine, theirs, h - t);
    }

    /// @dev The challenger's half of a descent level: the defender's list passed back, the first
    ///      index where the two differ becomes the position of both at `height`.
    function _narrow(
        uint256 gameId,
        Game storage g,
        bytes32[] calldata mine,
        bytes32[] calldata theirs,
        uint256 height
    ) private {
        uint256 w = mine.length;
        if (theirs.length != w) revert ElementRefereeWidth(theirs.length, w);
        bytes32 back = keccak256(abi.encodePacked(theirs));
        if (back != g.pending) revert ElementRefereeOpponentMismatch(back, g.pending);
        uint256 i;
        while (i < w && mine[i] == theirs[i]) ++i;
        // Equal lists under differing nodes would be a hash collision.
        if (i == w) revert ElementRefereeNoDifference(gameId);
        uint64 position = uint64(g.position * w + i);
        g.current = [theirs[i], mine[i]];
        g.height = uint64(height);
        g.position = position;
        if (height == 0) g.stage = Stage.ElementOpen;
        _pass(g, Side.Defender);
        emit DescentNarrowed(gameId, uint64(height), position);
    }

    // ---- element opening -----------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function openChunk(uint256 gameId, bytes calldata mine, bytes calldata theirs) external metered(gameId) {
        _openChunk(gameId, mine, theirs);
    }

    function _openChunk(uint256 gameId, bytes calldata mine, bytes calldata theirs) private {
        Game storage g = _begin(gameId, Stage.ElementOpen);
        Side side = g.toMove;
        uint256 j = g.position;
        uint256 rest = g.nbytes - j * CHUNK;
        uint256 len = rest < CHUNK ? rest : CHUNK;
        if (mine.length != len) revert ElementRefereeChunkLength(mine.length, len);
        bytes32 leaf = MerkleLib.leafHashCalldata(mine);
        bytes32 want = g.current[uint8(side)];
        if (leaf != want) revert ElementRefereeChunkMismatch(leaf, want);
        if (side == Side.Defender) {
            if (theirs.length != 0) revert ElementRefereeWidth(theirs.length, 0);
            _pass(g, Side.Challenger);
            emit ChunkOpened(gameId, side, uint64(j));
            return;
        }
        _isolate(gameId, g, mine, theirs, j);
    }

    /// @dev The challenger's half of the element opening: the defender's chunk passed back, and the first
    ///      element where the two chunks differ.
    function _isolate(uint256 gameId, Game storage g, bytes calldata mine, bytes calldata theirs, uint256 j)
        private
    {
        uint256 len = mine.length;
        if (theirs.length != len) revert ElementRefereeChunkLength(theirs.length, len);
        bytes32 back = MerkleLib.leafHashCalldata(theirs);
        if (back != g.current[0]) revert ElementRefereeOpponentMismatch(back, g.current[0]);
        uint256 at = _firstDifference(theirs, mine);
        // Two chunks with different leaf hashes differ somewhere (else a SHA-256 collision).
        if (at == len) revert ElementRefereeNoDifference(gameId);
        uint256 size = TensorLib.elementSize(g.outDtype);
        at -= at % size;
        uint64[2] memory v = [_readLE(theirs, at, size), _readLE(mine, at, size)];
        uint256 e = (j * CHUNK + at) / size;
        g.element = uint128(e);
        g.defenderValue = v[0];
        g.challengerValue = v[1];
        g.stage = Stage.ElementProof;
        _pass(g, Side.Defender);
        emit ChunkOpened(gameId, Side.Challenger, uint64(j));
        emit ElementIsolated(gameId, e, v[0], v[1]);
    }

    // ---- decision ------------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function proveElement(uint256 gameId, uint64[] calldata outputShape, InputOpening[] calldata openings)
        external
        metered(gameId)
    {
        _proveElement(gameId, outputShape, openings);
    }

    function _proveElement(uint256 gameId, uint64[] calldata outputShape, InputOpening[] calldata openings)
        private
    {
        Game storage g = _begin(gameId, Stage.ElementProof);
        bytes32 hh = keccak256(abi.encodePacked(g.outDtype, outputShape));
        if (hh != g.headerHash) revert ElementRefereeHeaderDiffers(hh, g.headerHash);
        uint256 nIn = g.nIn;
        if (openings.length != nIn) revert ElementRefereeWidth(openings.length, nIn);
        uint256 e = g.element;
        uint256 op = g.op;
        uint256[3] memory args = [uint256(0), 0, 0];
        for (uint256 k; k < nIn; ++k) {
            InputOpening calldata o = openings[k];
            uint256 index;
            if (op == COPY) index = e;
            else if (op == PERMUTE) index = _permuteIndex(e, outputShape, o.shape, g.scalars[0]);
            else index = _broadcastIndex(e, outputShape, o.shape, 1 + k);
            args[k] = TensorLib.verifyElement(g.inputs[k], o.dtype, o.shape, index, o.chunk, o.siblings);
        }
        // The scalars fill the slots after the tensor inputs; open checked that unused ones are 0.
        for (uint256 k = nIn; k < 3; ++k) {
            args[k] = k - nIn < 2 ? g.scalars[k - nIn] : 0;
        }
        uint256 y = args[0]; // data movement: the input element itself
        if (op == CONST0 || op == CONST1) {
            // Creation: the fill value rounded to fp32, whatever the element (CONST1's input only gave the shape).
            y = _unit.evaluateElement(RepOpsElement.F64_TO_F32, g.scalars[0], 0, 0);
        } else if (op < COPY || op > PERMUTE) {
            if (op >= MUL_SCALAR && op <= SCALAR_LAST) {
                // Tensor-Scalar: the number rounded to fp32 as the kernel's promotion does, then the binary op.
                args[1] = _unit.evaluateElement(RepOpsElement.F64_TO_F32, args[1], 0, 0);
                op = uint8(SCALAR_BASE >> (8 * (op - MUL_SCALAR)));
            }
            y = _unit.evaluateElement(op, args[0], args[1], args[2]);
        }
        Outcome result;
        if (y == g.defenderValue) result = Outcome.DefenderWins;
        else if (y == g.challengerValue) result = Outcome.ChallengerWins;
        else result = Outcome.BothLose;
        _pass(g, Side.Defender);
        _resolve(gameId, g, result);
        emit ElementComputed(gameId, e, args, y);
    }

    /// @inheritdoc IElementReferee
    function timeout(uint256 gameId) external metered(gameId) {
        Game storage g = _game(gameId);
        // Resolved, or Delegated (the dot game's clocks run): nobody to time out here.
        if (g.stage == Stage.Resolved || g.stage == Stage.Delegated) revert ElementRefereeNotPlaying(gameId, g.stage);
        Side side = g.toMove;
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp <= deadline) revert ElementRefereeClockRunning(gameId, deadline);
        if (side == Side.Defender) g.defenderClock = 0;
        else g.challengerClock = 0;
        _resolve(gameId, g, side == Side.Defender ? Outcome.ChallengerWins : Outcome.DefenderWins);
    }

    // ---- the dot phase ---------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function hand(uint256 gameId, Outcome o, uint256[2] calldata gas) external returns (bytes32, uint64) {
        Game storage g = _game(gameId);
        if (msg.sender != dot) revert ElementRefereeNotDot(msg.sender);
        if (o == Outcome.Pending) {
            // The takeover: an mm or addmm game whose element is isolated stops its clocks here.
            if (g.stage != Stage.ElementProof || g.op < MM) {
                revert ElementRefereeWrongStage(gameId, Stage.ElementProof, g.stage);
            }
            g.stage = Stage.Delegated;
            return (g.headerHash, g.arity);
        }
        if (g.stage != Stage.Delegated) revert ElementRefereeWrongStage(gameId, Stage.Delegated, g.stage);
        g.defenderGas += uint40(gas[0]);
        g.challengerGas += uint40(gas[1]);
        _resolve(gameId, g, o);
        return (0, 0);
    }

    // ---- views ---------------------------------------------------------------------------

    /// @inheritdoc IElementReferee
    function outcome(uint256 gameId) external view returns (Outcome) {
        return _game(gameId).outcome;
    }

    /// @inheritdoc IElementReferee
    function ownedOutcome(uint256 gameId) external view returns (Outcome) {
        Game storage g = _game(gameId);
        if (msg.sender != g.owner) revert ElementRefereeNotOwner(gameId, msg.sender, g.owner);
        return g.outcome;
    }

    /// @inheritdoc IElementReferee
    function gameOf(uint256 gameId) external view returns (GameView memory v) {
        Game storage g = _game(gameId);
        v.owner = g.owner;
        v.players = g.players;
        v.stage = g.stage;
        v.outcome = g.outcome;
        v.toMove = g.toMove;
        v.op = g.op;
        v.clockLeft = [uint64(g.defenderClock), uint64(g.challengerClock)];
        v.turnStartedAt = uint64(g.turnStartedAt);
        v.chunkCount = g.chunkCount;
        v.height = g.height;
        v.position = g.position;
        v.current = g.current;
        v.element = g.element;
        v.values = [g.defenderValue, g.challengerValue];
        v.moves = g.moves;
    }

    /// @inheritdoc IElementReferee
    function inputsOf(uint256 gameId) external view returns (bytes32[] memory inputs) {
        Game storage g = _game(gameId);
        inputs = new bytes32[](g.nIn);
        for (uint256 k; k < inputs.length; ++k) {
            inputs[k] = g.inputs[k];
        }
    }

    /// @inheritdoc IElementReferee
    function meterOf(uint256 gameId) external view returns (uint256[2] memory gas) {
        Game storage g = _game(gameId);
        gas = [uint256(g.defenderGas), uint256(g.challengerGas)];
    }

    /// @inheritdoc IElementReferee
    function opSpec(uint256 op)
        public
        pure
        returns (uint256 nIn, uint256 nScalars, uint256 inDtypes, uint8 outDtype)
    {
        uint256 ff = uint256(F32) | uint256(F32) << 8;
        if (op <= RepOpsElement.DIV) {
            // add, sub, mul, div; add and sub with alpha take it as a scalar.
            bool alpha = op == RepOpsElement.ADD_ALPHA || op == RepOpsElement.SUB_ALPHA;
            return (2, alpha ? 1 : 0, ff, F32);
        }
        if (op <= RepOpsElement.RELU) {
            // neg, reciprocal, sqrt, rsqrt, abs, pow (exponent scalar), relu.
            return (1, op == RepOpsElement.POW ? 1 : 0, F32, F32);
        }
        if (op == RepOpsElement.WHERE) return (3, 0, uint256(BOOL) | ff << 8, F32);
        if (op == RepOpsElement.CLAMP) return (1, 2, F32, F32);
        if (op <= RepOpsElement.CLAMP_MAX) return (1, 1, F32, F32);
        if (op == RepOpsElement.THRESHOLD_BACKWARD) return (2, 1, ff, F32);
        if (op <= RepOpsElement.GE) return (2, 0, ff, BOOL);
        if (op <= RepOpsElement.F32_TO_BOOL) {
            // The casts, (input dtype, output dtype) per code from F32_TO_F64 on, 16 bits each: f32 -> f64,
            // f64 -> f32, i64 -> f32, bool -> f32, f32 -> i64, i32, i16, i8, u8, bool.
            uint256 pair = CASTS >> (16 * (op - RepOpsElement.F32_TO_F64));
            return (1, 0, uint8(pair), uint8(pair >> 8));
        }
        if (op >= MUL_SCALAR && op <= SCALAR_LAST) return (1, 1, F32, F32);
        if (op >= COPY && op <= PERMUTE) return (1, 0, 0, 0); // any dtype, the output's
        if (op == CONST0) return (0, 0, 0, F32);
        if (op == CONST1) return (1, 0, F32, F32);
        if (op == MM) return (2, 0, ff, F32);
        if (op == ADDMM) return (3, 0, ff | uint256(F32) << 16, F32);
        if ((op >= EXP && op <= TRACE_LAST) || (op >= SUM && op <= SUM_LAST)) return (1, 0, F32, F32);
        revert ElementRefereeBadParams(1, op);
    }

    // ---- internals -----------------------------------------------------------------------

    function _game(uint256 gameId) private view returns (Game storage g) {
        g = _games[gameId];
        if (g.stage == Stage.None) revert ElementRefereeUnknown(gameId);
    }

    /// @dev The game, checked to be in `stage` with the caller to move inside its clock.
    function _begin(uint256 gameId, Stage stage) private view returns (Game storage g) {
        g = _game(gameId);
        if (g.stage != stage) revert ElementRefereeWrongStage(gameId, stage, g.stage);
        Side side = g.toMove;
        address expected = g.players[uint8(side)];
        if (msg.sender != expected) revert ElementRefereeNotYourTurn(gameId, msg.sender, expected);
        uint256 deadline = uint256(g.turnStartedAt) + _clock(g, side);
        if (block.timestamp > deadline) revert ElementRefereeClockExpired(gameId, deadline);
    }

    function _clock(Game storage g, Side side) private view returns (uint64) {
        return side == Side.Defender ? g.defenderClock : g.challengerClock;
    }

    /// @dev Charges the mover's clock and hands the turn to `next` (one slot written).
    function _pass(Game storage g, Side next) private {
        uint40 used = uint40(block.timestamp) - g.turnStartedAt;
        // _begin checked block.timestamp <= turnStartedAt + the mover's clock: no underflow.
        unchecked {
            if (g.toMove == Side.Defender) g.defenderClock -= used;
            else g.challengerClock -= used;
            ++g.moves;
        }
        g.turnStartedAt = uint40(block.timestamp);
        g.toMove = next;
    }

    /// @dev Adds the gas used since `start` (plus the transaction's base and calldata cost and the meter's
    ///      own) to the caller's side, if it is a player (2^40 gas, about 10^12, is far beyond any game).
    function _meter(uint256 gameId, uint256 start) private {
        Game storage g = _games[gameId];
        uint256 used = start - gasleft() + TX_BASE_GAS + CALLDATA_GAS_PER_BYTE * msg.data.length + METER_GAS;
        // The mover of a move that passed the turn is the side not to move now: its address is the one the
        // move already read (warm), so it is compared first.
        uint256 s = g.toMove == Side.Defender ? 1 : 0;
        if (msg.sender != g.players[s]) {
            s = 1 - s;
            if (msg.sender != g.players[s]) return;
        }
        if (s == 0) g.defenderGas += uint40(used);
        else g.challengerGas += uint40(used);
    }

    function _resolve(uint256 gameId, Game storage g, Outcome o) private {
        g.stage = Stage.Resolved;
        g.outcome = o;
        emit GameResolved(gameId, o);
    }

    /// @dev Folds `nodes` (at height `baseHeight`, positions from `basePos`) up to one node with the
    ///      padding rule of docs/commitments.md: a position whose subtree holds no leaf is PAD.
    function _fold(bytes32[] calldata nodes, uint256 baseHeight, uint256 basePos, uint256 n)
        private
        pure
        returns (bytes32)
    {
        uint256 w = nodes.length;
        bytes32[] memory level = new bytes32[](w);
        for (uint256 i; i < w; ++i) {
            bytes32 x = nodes[i];
            if (((basePos + i) << baseHeight) >= n && x != MerkleLib.PAD) {
                revert ElementRefereePaddingNode(i);
            }
            level[i] = x;
        }
        uint256 height = baseHeight;
        uint256 pos = basePos;
        while (w > 1) {
            w >>= 1;
            ++height;
            pos >>= 1;
            for (uint256 i; i < w; ++i) {
                level[i] = ((pos + i) << height) >= n
                    ? MerkleLib.PAD
                    : MerkleLib.nodeHash(level[2 * i], level[2 * i + 1]);
            }
        }
        return level[0];
    }

    /// @dev The first byte offset where `a` and `b` (of equal length) differ, or their length if none.
    ///      At most 128 words of 32 bytes, then at most 32 bytes of the differing word.
    function _firstDifference(bytes calldata a, bytes calldata b) private pure returns (uint256 at) {
        uint256 len = a.length;
        uint256 diff;
        assembly ("memory-safe") {
            for { at := 0 } lt(at, len) { at := add(at, 0x20) } {
                diff := xor(calldataload(add(a.offset, at)), calldataload(add(b.offset, at)))
                let rest := sub(len, at)
                if lt(rest, 0x20) {
                    // Past the end calldataload reads what follows the bytes: keep only `rest` bytes.
                    diff := and(diff, not(shr(shl(3, rest), not(0))))
                }
                if diff { break }
            }
        }
        if (diff == 0) return len;
        uint256 i;
        while (uint8(bytes32(diff)[i]) == 0) ++i;
        return at + i;
    }

    /// @dev The `size` bytes at `off` of `data`, little-endian.
    function _readLE(bytes calldata data, uint256 off, uint256 size) private pure returns (uint64 v) {
        for (uint256 i; i < size; ++i) {
            v |= uint64(uint8(data[off + i])) << uint64(8 * i);
        }
    }

    /// @dev The flat index in an input of `shape` of the output element `e` (output of `outShape`):
    ///      trailing dimensions aligned, a dimension of size 1 taken at coordinate 0.
    function _broadcastIndex(uint256 e, uint64[] calldata outShape, uint64[] calldata shape, uint256 tensor)
        private
        pure
        returns (uint256 index)
    {
        uint256 ndim = outShape.length;
        uint256 m = shape.length;
        if (m > ndim) revert ElementRefereeShape(tensor, type(uint256).max, m, ndim);
        uint256 stride = 1;
        for (uint256 r; r < ndim; ++r) {
            // Dimension ndim - 1 - r of the output, from the last.
            uint256 od = outShape[ndim - 1 - r];
            uint256 coord = e % od;
            e /= od;
            if (r >= m) continue;
            uint256 dim = shape[m - 1 - r];
            if (dim != 1) {
                if (dim != od) revert ElementRefereeShape(tensor, m - 1 - r, dim, od);
                index += coord * stride;
            }
            stride *= dim;
        }
    }

    /// @dev The flat index in the input (of `shape`) of output element `e` of `permute(input, dims)`: output
    ///      dimension i is input dimension dims[i] (`s`: the count in its low 4 bits, then 4 bits a dim).
    function _permuteIndex(uint256 e, uint64[] calldata outShape, uint64[] calldata shape, uint256 s)
        private
        pure
        returns (uint256 index)
    {
        uint256 n = outShape.length;
        if (shape.length != n) revert ElementRefereeShape(1, type(uint256).max, shape.length, n);
        for (uint256 r; r < n; ++r) {
            uint256 i = n - 1 - r;
            uint256 od = outShape[i];
            uint256 coord = e % od;
            e /= od;
            uint256 stride = 1;
            for (uint256 j = ((s >> (4 + 4 * i)) & 15) + 1; j < n; ++j) {
                stride *= shape[j];
            }
            index += coord * stride;
        }
    }

    /// @dev permute's dims from its argument bytes, packed (the count in the low 4 bits, then 4 bits a dim, the
    ///      first lowest); false if they are not the call's template or not a permutation of 0 .. n - 1 with
    ///      n <= 15 (negative dims too: the oracle decides those).
    function _permuteArg(bytes calldata a) private pure returns (bool, uint64) {
        if (a.length < 15 || bytes14(a[0:14]) != ARGS_SELF_DIMS) return (false, 0);
        uint256 head = uint8(a[14]);
        if (head < 0x80) return (false, 0);
        uint256 n = head - 0x80; // a list of n items: 0x80 + n, n < 24
        if (n > 15 || a.length != 15 + n) return (false, 0);
        uint256 s = n;
        uint256 seen = 0; // a bit per dim seen
        for (uint256 i; i < n; ++i) {
            uint256 d = uint8(a[15 + i]); // an int below 24 is its own head
            if (d >= n || seen & (1 << d) != 0) return (false, 0);
            seen |= 1 << d;
            s |= d << (4 + 4 * i);
        }
        return (true, uint64(s));
    }

    /// @dev The Python number of a Tensor-Scalar call (code `op`) as a binary64 pattern, from its argument bytes;
    ///      false if they are not the call's template or the number is not a float or an int of magnitude below
    ///      2^53 (a bool, a larger int: the oracle decides those). CBOR floats of 16, 32 and 64 bits, ints of
    ///      every head width (RFC 8949 section 3).
    function _scalarArg(uint256 op, bytes calldata a) private pure returns (bool, uint64) {
        uint256 end = a.length;
        if (op >= MUL_SCALAR + 2) {
            // add, sub: ["alpha", 1] after the number, and a list of three pairs.
            if (end < 24 || bytes8(a[end - 8:end]) != ARGS_ALPHA_ONE || uint8(a[0]) != 0x83) return (false, 0);
            end -= 8;
        } else if (end < 16 || uint8(a[0]) != 0x82) {
            return (false, 0);
        }
        if (bytes14(a[1:15]) != ARGS_SELF_OTHER) return (false, 0);
        (bool ok, uint64 bits, uint256 next) = _number(a, 15);
        return (ok && next == end, bits);
    }

    /// @dev A creation call's fill value (CONST0: scalar_tensor or full with dtype float32; CONST1: full_like with
    ///      dtype None) as a binary64 pattern; false if the bytes are not one of those templates or the value not a
    ///      number `_number` reads.
    function _constArg(uint256 op, bytes calldata a) private pure returns (bool, uint64) {
        uint256 at;
        if (op == CONST1) {
            if (a.length < 20 || bytes20(a[0:20]) != ARGS_SELF_FILL) return (false, 0);
            at = 20;
        } else if (a.length >= 4 && bytes4(a[0:4]) == ARGS_S) {
            at = 4;
        } else if (a.length >= 8 && bytes7(a[0:7]) == ARGS_SIZE) {
            // full: the sizes, a list of fewer than 24 CBOR unsigned ints, then ["fill_value", ...
            uint256 head = uint8(a[7]);
            if (head < 0x80 || head >= 0x98) return (false, 0);
            at = 8;
            for (uint256 i = head - 0x80; i > 0; --i) {
                if (at >= a.length) return (false, 0);
                uint256 h = uint8(a[at]);
                if (h > 0x1B) return (false, 0);
                at += 1 + (h < 24 ? 0 : 1 << (h - 24));
            }
            if (a.length < at + 12 || bytes12(a[at:at + 12]) != ARGS_FILL) return (false, 0);
            at += 12;
        } else {
            return (false, 0);
        }
        (bool ok, uint64 bits, uint256 next) = _number(a, at);
        if (!ok) return (false, 0);
        bytes32 h = keccak256(a[next:]);
        if (op == CONST1) return (h == ARGS_PRESERVE_TAIL || h == ARGS_NONE_TAIL, bits);
        return (h == ARGS_F32_TAIL, bits);
    }

    /// @dev The CBOR number at `a[at]` as a binary64 pattern, and the offset after it: a float of 16, 32 or 64 bits
    ///      widened exactly, or an int of magnitude below 2^53 (RFC 8949 section 3); false for anything else (a
    ///      bool, null, a larger int, bytes cut short).
    function _number(bytes calldata a, uint256 at) private pure returns (bool, uint64, uint256) {
        if (at >= a.length) return (false, 0, 0);
        uint256 head = uint8(a[at]);
        uint256 info = head & 31;
        uint256 v = info;
        uint256 next = at + 1;
        if (info >= 24) {
            if (info > 27) return (false, 0, 0);
            uint256 size = 1 << (info - 24);
            next += size;
            if (next > a.length) return (false, 0, 0);
            v = uint256(bytes32(a[at + 1:next])) >> (256 - 8 * size);
        }
        uint256 major = head >> 5;
        if (major == 7) {
            if (info == 25) return (true, _widen(v, 5, 10), next); // binary16
            if (info == 26) return (true, _widen(v, 8, 23), next); // binary32
            return (info == 27, uint64(v), next); // binary64; simple values (true, null, ...) are not numbers
        }
        if (major > 1) return (false, 0, 0);
        // An int: 0 (major 0, v) or 1 (-1 - v); exact in binary64 below 2^53.
        uint256 m = v + major;
        if (m >= 1 << 53) return (false, 0, 0);
        if (m == 0) return (true, 0, next);
        return (true, uint64(major << 63 | _norm(m, 1075, 52)), next);
    }

    /// @dev A binary16 or binary32 pattern (`eb` exponent bits, `mb` fraction bits) widened to binary64, exactly.
    function _widen(uint256 v, uint256 eb, uint256 mb) private pure returns (uint64) {
        uint256 sign = (v >> (eb + mb)) << 63;
        uint256 emax = (1 << eb) - 1;
        uint256 e = (v >> mb) & emax;
        uint256 m = v & ((1 << mb) - 1);
        if (e == emax) return uint64(sign | 0x7FF << 52 | m << (52 - mb)); // infinities, NaNs (payload kept)
        if (e != 0) return uint64(sign | (e + 1023 - (emax >> 1)) << 52 | m << (52 - mb));
        if (m == 0) return uint64(sign);
        return uint64(sign | _norm(m, 1024 - (emax >> 1), mb)); // subnormal: normal in binary64
    }

    /// @dev Exponent and fraction fields of binary64 for m * 2^(e - 1023 - mb), 0 < m < 2^(mb + 1): the leading
    ///      one shifted to bit mb (each shift one less in the exponent), then dropped.
    function _norm(uint256 m, uint256 e, uint256 mb) private pure returns (uint256) {
        while (m >> mb == 0) {
            m <<= 1;
            --e;
        }
        return e << 52 | (m & ((1 << mb) - 1)) << (52 - mb);
    }

    /// @dev Whether pow has a RepOps definition for `e` (binary64 bits): 0, -0, 1, 2, 3, -1, -2, 0.5, -0.5
    ///      (docs/repops/elementwise.md, the list `RepOpsElement._pow` computes).
    function _powDefined(uint64 e) private pure returns (bool) {
        return e == 0 || e == 0x8000000000000000 || e == 0x3FF0000000000000 || e == 0x4000000000000000
            || e == 0x4008000000000000 || e == 0xBFF0000000000000 || e == 0xC000000000000000
            || e == 0x3FE0000000000000 || e == 0xBFE0000000000000;
    }

    /// @dev log2 of a power of two in [2, 64] (checked by open).
    function _log2(uint256 x) private pure returns (uint256 r) {
        while (x > 1) {
            x >>= 1;
            ++r;
        }
    }
}
