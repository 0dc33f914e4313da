// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title MiniEntryPoint
/// @notice A test stand-in for an ERC-4337 v0.7 EntryPoint: same `handleOps(PackedUserOperation[],address)`
/// calldata layout, so an indexer sees a real bundle, but no validation, gas accounting or paymasters:
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

    function handleOps(PackedUserOperation[] calldata ops, address payable beneficiary) external {
        beneficiary;
        for (uint256 i = 0; i < ops.length; i++) {
            (bool ok, ) = ops[i].sender.call(ops[i].callData);
            require(ok, "MiniEntryPoint: user operation failed");
        }
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
