// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title MiniEntryPoint
/// @notice A test stand-in for an ERC-4337 v0.7 EntryPoint: same `handleOps(PackedUserOperation[],address)`
/// and `handleAggregatedOps` calldata layouts, and the same events in the same order as the real one
/// (eth-infinitism/account-abstraction EntryPoint.sol, tags v0.6.0 and v0.7.0): a validation phase, then
/// `BeforeExecution`, then per operation its execution, its paymaster's postOp and its
/// `UserOperationEvent` (a failed execution is reverted and reported with success false; the bundle
/// goes on). No signatures, nonces, gas or deposits are checked. Two stand-ins for calls the real one
/// makes: in validation, `initCode` (factory address, then calldata) is called on the factory, as the
/// real one deploys an account; after execution, `paymasterAndData` past its first 20 bytes (the
/// paymaster) is called on the paymaster, as the real one calls `postOp`.
contract MiniEntryPoint {
    struct PackedUserOperation {
        address sender;
        uint256 nonce;
        bytes initCode;
        bytes callData;
        bytes32 accountGasLimits;
        uint256 preVerificationGas;
        bytes32 gasFees;
        bytes paymasterAndData;
        bytes signature;
    }

    struct UserOpsPerAggregator {
        PackedUserOperation[] userOps;
        address aggregator;
        bytes signature;
    }

    event BeforeExecution();
    event SignatureAggregatorChanged(address indexed aggregator);
    event UserOperationEvent(
        bytes32 indexed userOpHash,
        address indexed sender,
        address indexed paymaster,
        uint256 nonce,
        bool success,
        uint256 actualGasCost,
        uint256 actualGasUsed
    );

    function handleOps(PackedUserOperation[] calldata ops, address payable beneficiary) external {
        beneficiary;
        for (uint256 i = 0; i < ops.length; i++) {
            _validate(ops[i]);
        }
        emit BeforeExecution();
        for (uint256 i = 0; i < ops.length; i++) {
            _execute(ops[i]);
        }
    }

    /// @notice Same calldata layout as the v0.7 EntryPoint's; aggregators and their signatures are not checked.
    function handleAggregatedOps(UserOpsPerAggregator[] calldata opsPerAggregator, address payable beneficiary) external {
        beneficiary;
        for (uint256 a = 0; a < opsPerAggregator.length; a++) {
            for (uint256 i = 0; i < opsPerAggregator[a].userOps.length; i++) {
                _validate(opsPerAggregator[a].userOps[i]);
            }
        }
        emit BeforeExecution();
        for (uint256 a = 0; a < opsPerAggregator.length; a++) {
            emit SignatureAggregatorChanged(opsPerAggregator[a].aggregator);
            PackedUserOperation[] calldata ops = opsPerAggregator[a].userOps;
            for (uint256 i = 0; i < ops.length; i++) {
                _execute(ops[i]);
            }
        }
        emit SignatureAggregatorChanged(address(0));
    }

    function _validate(PackedUserOperation calldata op) private {
        if (op.initCode.length <= 20) return;
        (bool ok, ) = address(bytes20(op.initCode[0:20])).call(op.initCode[20:]);
        require(ok, "MiniEntryPoint: initCode failed");
    }

    function _execute(PackedUserOperation calldata op) private {
        (bool success, ) = op.sender.call(op.callData);
        address paymaster = op.paymasterAndData.length >= 20 ? address(bytes20(op.paymasterAndData[0:20])) : address(0);
        if (op.paymasterAndData.length > 20) {
            (bool ok, ) = paymaster.call(op.paymasterAndData[20:]);
            require(ok, "MiniEntryPoint: postOp failed");
        }
        bytes32 userOpHash = keccak256(abi.encode(op.sender, op.nonce, address(this), block.chainid));
        emit UserOperationEvent(userOpHash, op.sender, paymaster, op.nonce, success, 0, 0);
    }
}

/// @title MiniAccount
/// @notice A test smart account that executes whatever its EntryPoint asks (trailing calldata,
/// such as an ERC-8021 suffix, is ignored by the ABI decoder, as in real accounts).
contract MiniAccount {
    function execute(address target, uint256 value, bytes calldata data) external {
        (bool ok, ) = target.call{value: value}(data);
        require(ok, "MiniAccount: call failed");
    }
}
