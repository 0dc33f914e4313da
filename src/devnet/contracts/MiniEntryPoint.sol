// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title MiniEntryPoint
/// @notice A test stand-in for an ERC-4337 v0.7 EntryPoint: same `handleOps(PackedUserOperation[],address)`
/// and `handleAggregatedOps` calldata layouts, so an indexer sees a real bundle, but no validation, gas accounting or paymasters:
/// each operation's callData is simply called on its sender.
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

    function handleOps(PackedUserOperation[] calldata ops, address payable beneficiary) external {
        beneficiary;
        for (uint256 i = 0; i < ops.length; i++) {
            _execute(ops[i]);
        }
    }

    /// @notice Same calldata layout as the v0.7 EntryPoint's; aggregators and their signatures are not checked.
    function handleAggregatedOps(UserOpsPerAggregator[] calldata opsPerAggregator, address payable beneficiary) external {
        beneficiary;
        for (uint256 a = 0; a < opsPerAggregator.length; a++) {
            PackedUserOperation[] calldata ops = opsPerAggregator[a].userOps;
            for (uint256 i = 0; i < ops.length; i++) {
                _execute(ops[i]);
            }
        }
    }

    function _execute(PackedUserOperation calldata op) private {
        (bool ok, ) = op.sender.call(op.callData);
        require(ok, "MiniEntryPoint: user operation failed");
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
