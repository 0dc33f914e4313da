// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title QuirkyWallet
/// @notice A test ERC-1271 wallet with two habits of real wallets that FiatToken v2.2 judges differently
/// from an EOA. A wallet, not the token, defines its signature format: this one takes its signer's
/// ECDSA signature with v as 27/28 or as yParity 0/1, and any s (the ecrecover precompile does), so a
/// client that rewrites v or refuses a high s for it refuses what the token accepts. And when built with
/// `padsWithFf` it answers the magic value followed by 0xff bytes instead of zeros, which FiatToken's
/// SignatureChecker refuses (it compares the whole first 32-byte word).
/// As the EIP-7702 delegate of an EOA its storage is the EOA's, `owner` reads zero, and the EOA's own
/// key signs; `padsWithFf` is immutable, so it lives in the code and holds for the delegated EOA too.
contract QuirkyWallet {
    bytes4 internal constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 internal constant INVALID = 0xffffffff;

    address public owner;
    bool public immutable padsWithFf;

    constructor(address owner_, bool padsWithFf_) {
        owner = owner_;
        padsWithFf = padsWithFf_;
    }

    /// @notice The key that signs for this wallet.
    function signer() public view returns (address) {
        return owner == address(0) ? address(this) : owner;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return INVALID;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 2) v += 27;
        address recovered = ecrecover(hash, v, r, s);
        if (recovered == address(0) || recovered != signer()) return INVALID;
        if (padsWithFf) {
            assembly {
                mstore(0, or(shl(224, 0x1626ba7e), sub(shl(224, 1), 1)))
                return(0, 32)
            }
        }
        return MAGIC_VALUE;
    }
}
