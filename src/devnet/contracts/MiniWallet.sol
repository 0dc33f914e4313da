// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title MiniWallet
/// @notice A minimal smart-contract wallet for tests and demo traffic: one owner key, ERC-1271 signatures,
/// and `execute` for the owner. Deployed, it belongs to `owner`; as the EIP-7702 delegate of an EOA
/// (code 0xef0100 || this contract's address) its storage is the EOA's, `owner` reads zero, and the
/// EOA's own key signs.
/// A signature is the signer's 65-byte ECDSA signature over the digest (r || s || v, v 27 or 28, low s),
/// optionally followed by wallet data that is not checked: real wallets (passkeys, multisigs) send far
/// more than 65 bytes, and this lets a test exercise the `bytes signature` entry points with such lengths.
contract MiniWallet {
    bytes4 internal constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 internal constant INVALID = 0xffffffff;

    address public owner;

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    /// @notice The key that signs for this wallet.
    function signer() public view returns (address) {
        return owner == address(0) ? address(this) : owner;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length < 65) return INVALID;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) return INVALID;
        if (v != 27 && v != 28) return INVALID;
        address recovered = ecrecover(hash, v, r, s);
        return recovered != address(0) && recovered == signer() ? MAGIC_VALUE : INVALID;
    }

    /// @notice Calls `to` from the wallet; only the signer may.
    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == signer(), "MiniWallet: not the owner");
        (bool success, bytes memory result) = to.call{value: value}(data);
        if (!success) {
            assembly {
                revert(add(result, 0x20), mload(result))
            }
        }
        return result;
    }
}
